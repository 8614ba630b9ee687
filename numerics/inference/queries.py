"""The oracle's left-to-right conditionals and joint densities, as first-class queries.

A lossless decoder (``docs/methods/lossless.md``, DECODERS.md section 11) asks the oracle two things
a factorized sampler never does:

* the **left-to-right conditionals** ``q(x_i = v | x_<i)`` along a (drafted) sequence, which a causal
  verification pass computes for every position of a window at once, and
* the **joint density** ``log q(x_S)`` of an observed subset ``S`` (any pattern), with which any-subset
  speculative decoding accepts or rejects a draft.

Both are the masked forward recursion of the language's HMM form (``numerics/inference``): the joint
density is :func:`numerics.inference.log_likelihood` with the unobserved positions masked (called here,
not re-implemented); the conditionals are the *predictive filter* ``f_i(s) = q(z_i = s | x_<i)``,
``q(x_i = v | x_<i) = sum_s f_i(s) emission[s, v]`` and
``f_{i+1} = normalize(f_i * emission[:, x_i]) @ transition`` (:class:`PrefixOracle`, batched over
sequences, used by the decoders of :mod:`numerics.sampling.lossless`). The filter is checked against
:func:`prefix_conditionals_reference` (ratios of the public forward pass's likelihoods of prefixes)
and both against brute-force enumeration (``tests/numerics/test_queries.py``).

Languages: :class:`~numerics.languages.hmm.HMM`, :class:`~numerics.languages.hmm.NGram` (its
``V^(n-1)``-state HMM) and the interval language (its dense minimal HMM); a language without a dense
HMM form within :data:`MAX_ORACLE_STATES` is an :class:`OracleError` (the interval language at
``l >= 6``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from numerics.inference.forward_backward import log_likelihood
from numerics.languages.hmm import HMM, NGram

__all__ = [
    "MAX_ORACLE_STATES",
    "OracleError",
    "PrefixOracle",
    "log_joint",
    "prefix_conditionals",
    "prefix_conditionals_reference",
]

#: A transition with at most this share of non-zeros is multiplied as a sparse (CSR) matrix.
SPARSE_TRANSITION_DENSITY = 0.05
#: Most hidden states the prefix oracle holds dense (a filter step costs ``S^2`` per sequence).
MAX_ORACLE_STATES = 4096


class OracleError(ValueError):
    """The language's joint density / conditionals cannot be evaluated by the oracle (named cause)."""


def _kernel_hmm(language) -> HMM | NGram:
    """The HMM or n-gram the public forward pass reads (the interval language's dense minimal HMM)."""
    if isinstance(language, (HMM, NGram)):
        return language
    kernel = getattr(language, "kernel_language", None)
    if kernel is None:
        raise OracleError(f"the oracle cannot evaluate the joint density of a {type(language).__name__}: "
                          "it has no HMM form (kernel_language)")
    try:
        return kernel()
    except ValueError as e:
        raise OracleError(f"the oracle cannot evaluate the joint density of {getattr(language, 'kind', '?')} "
                          f"language {language!r}: {e}") from None


@dataclass(frozen=True)
class PrefixOracle:
    """The predictive filter of a language's dense HMM form: left-to-right conditionals, batched.

    A *filter* is a ``(B, S)`` array, row ``b`` the law ``q(z_p = s | x_<p)`` of the hidden state at
    the next position ``p`` of sequence ``b`` given its committed prefix.

    Attributes
    ----------
    initial : (S,) float64
    transition : (S, S) float64, dense or ``scipy.sparse.csr_array`` (:data:`SPARSE_TRANSITION_DENSITY`)
    emission : (S, V) float64
    """

    initial: np.ndarray
    transition: np.ndarray
    emission: np.ndarray

    @classmethod
    def of(cls, language) -> PrefixOracle:
        """The oracle of ``language`` (HMM, n-gram, interval); :class:`OracleError` when it has no dense
        HMM form of at most :data:`MAX_ORACLE_STATES` states."""
        hmm_form = _kernel_hmm(language)
        S = hmm_form.n_states
        if S > MAX_ORACLE_STATES:
            raise OracleError(f"the prefix oracle holds at most {MAX_ORACLE_STATES} hidden states dense; this "
                              f"language has {S}")
        h = hmm_form.to_hmm()
        A = h.transition
        if np.count_nonzero(A) <= SPARSE_TRANSITION_DENSITY * A.size:  # the interval language: ~1% non-zeros
            A = scipy.sparse.csr_array(A)
        return cls(h.initial, A, h.emission)

    @property
    def vocab_size(self) -> int:
        return self.emission.shape[1]

    @functools.cached_property
    def _emission_rows(self) -> np.ndarray:
        """``emission.T`` contiguous: row ``v`` is the evidence ``emission[:, v]`` of token ``v``."""
        return np.ascontiguousarray(self.emission.T)

    def start(self, batch: int) -> np.ndarray:
        """The filter of the empty prefix for ``batch`` sequences: ``(B, S)`` copies of ``initial``."""
        return np.tile(self.initial, (batch, 1))

    def law(self, f: np.ndarray) -> np.ndarray:
        """``q(x_p = v | x_<p)``: ``(B, V)``."""
        return f @ self.emission

    def advance(self, f: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The filter after committing ``tokens`` ``(B,)`` at position ``p``, and ``ok`` ``(B,)``.

        ``ok[b]`` is False where ``q(x_p = tokens[b] | x_<p) = 0`` (an impossible token); that row moves
        on as if position ``p`` were masked (``f @ transition``: the law given the prefix with ``p``
        unobserved), never NaN. A speculation past an impossible token so keeps predicting from what
        is known; the conditional given the impossible prefix itself is undefined.
        """
        w = f * self._emission_rows[tokens]
        c = w.sum(axis=1)
        ok = c > 0
        if ok.all():
            w /= c[:, None]
        else:
            w = np.where(ok[:, None], w / np.where(ok, c, 1.0)[:, None], f)
        return w @ self.transition, ok

    def ahead(self, f: np.ndarray, width: int) -> np.ndarray:
        """``q(x_{p+m} = v | x_<p)`` for ``m = 0 .. width-1``: ``(B, width, V)`` (the marginals of a draft)."""
        out = np.empty((f.shape[0], width, self.vocab_size))
        g = f
        for m in range(width):
            out[:, m] = g @ self.emission
            g = g @ self.transition
        return out

    def along(self, f: np.ndarray, drafted: np.ndarray, filters: bool = False) -> tuple[np.ndarray, ...]:
        """Causal verification: ``q(x_{p+m} = v | x_<p, y_p .. y_{p+m-1})`` along drafts ``y`` ``(B, w)``.

        Returns the conditionals ``(B, w, V)`` and ``ok`` ``(B, w)``: ``ok[b, m]`` False once a drafted
        token before ``p + m`` had probability 0 (those rows are not a conditional law; a verifier
        has rejected before reaching them). With ``filters``, also the filter at each position,
        ``(w, B, S)`` (``[m]``: given ``x_<p, y_p .. y_{p+m-1}``), from which a verifier commits.
        """
        B, w = drafted.shape
        out = np.empty((w, B, self.vocab_size))
        ok = np.ones((w, B), dtype=np.bool_)
        kept = np.empty((w, *f.shape)) if filters else None
        g, alive = f, np.ones(B, dtype=np.bool_)
        for m in range(w):
            if filters:
                kept[m] = g
            np.matmul(g, self.emission, out=out[m])
            ok[m] = alive
            if m + 1 < w:
                g, step_ok = self.advance(g, drafted[:, m])
                alive &= step_ok
        if filters:
            return out.transpose(1, 0, 2), ok.T, kept
        return out.transpose(1, 0, 2), ok.T


def prefix_conditionals(language, tokens: np.ndarray) -> np.ndarray:
    """``q(x_i = v | x_<i)`` at every position ``i`` of complete sequences ``tokens`` ``(B, L)``: ``(B, L, V)``.

    Rows after an impossible prefix (``q(x_<i) = 0``) are NaN (the conditional is undefined there).
    """
    tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
    oracle = PrefixOracle.of(language)
    cond, ok = oracle.along(oracle.start(tokens.shape[0]), tokens)
    cond[~ok] = np.nan
    return cond


def prefix_conditionals_reference(language, tokens: np.ndarray) -> np.ndarray:
    """The same as :func:`prefix_conditionals` from the public forward pass (slow reference).

    ``q(x_i = v | x_<i) = exp(log q(x_<i, x_i = v) - log q(x_<i))``, both numbers from
    :func:`numerics.inference.log_likelihood` with the positions after ``i`` masked: ``L (V + 1)``
    likelihoods per sequence.
    """
    tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
    lang = _kernel_hmm(language)
    B, L = tokens.shape
    V = lang.vocab_size
    out = np.empty((B, L, V))
    pos = np.arange(L)
    for i in range(L):
        mask = np.broadcast_to(pos >= i, (B, L))
        den = log_likelihood(lang, tokens, mask.copy()) if i else np.zeros(B)
        num_tokens = np.repeat(tokens, V, axis=0)
        num_tokens[:, i] = np.tile(np.arange(V), B)
        num = log_likelihood(lang, num_tokens, np.broadcast_to(pos > i, (B * V, L)).copy()).reshape(B, V)
        with np.errstate(invalid="ignore"):  # -inf - -inf: an impossible prefix, NaN as documented
            out[:, i] = np.exp(num - den[:, None])
    return out


def log_joint(language, tokens: np.ndarray, observed: np.ndarray | None = None) -> np.ndarray:
    """``log q(x_S)``: the log-probability of the observed positions ``S`` of each sequence: ``(B,)``.

    ``observed`` ``(B, L)`` bool, True where observed (``None``: all). The public forward pass
    (:func:`numerics.inference.log_likelihood`) on the language's HMM form, the unobserved positions
    masked; ``-inf`` where impossible.
    """
    tokens = np.atleast_2d(np.asarray(tokens))
    observed = np.ones(tokens.shape, dtype=np.bool_) if observed is None else np.atleast_2d(np.asarray(observed))
    return log_likelihood(_kernel_hmm(language), tokens, ~observed)
