"""The reveal process of the oracle factorized sampler, sequence by sequence: sampling and scoring.

One pass over a sequence processes its reveal steps in order (``docs/methods/sampling.md``). At
step ``i`` the new positions ``j_1 < .. < j_k`` (``tau_i``) need the posterior marginals
``q(x_j | x_{tau_<i})``: the forward and backward messages under the *old* evidence (positions
revealed at steps ``< i``), from the message store of :mod:`numerics.sampling.oracle.messages`.
The new positions are swept left to right with two forward vectors: ``alpha_old`` (old evidence;
gives the sampler's marginal ``q(x_j | x_{tau_<i})``) and ``alpha_new`` (old evidence plus the
new tokens to the left; gives the chain-rule factor ``q(x_j | x_{tau_<i}, x_{j_1..j_{m-1}})``).
Hence per sequence (:class:`RevealScores`)

* ``log p(x | tau) = sum_i sum_{j in tau_i} log q(x_j | x_{tau_<i})`` (the factorized law of the
  instance; ``-inf`` outside its support),
* ``log q(x) = sum_i sum_m log q(x_{j_m} | x_{tau_<i}, x_{j_<m})`` (chain rule, a check), and
* ``log q(x) - log p(x | tau) = sum_i [log q(x_{tau_i} | x_{tau_<i}) - sum_{j in tau_i} log q(x_j | x_{tau_<i})]``
  accumulated term by term (no cancellation of two large numbers; steps revealing one position
  contribute exactly 0): the per-sample term of the Jensen bound ``E_tau KL(q || p(.|tau))``.

A sampled step whose new tokens are jointly impossible (a chain-rule factor 0) leaves the
sequence outside ``supp q``; from the next step on it draws uniformly, the convention of
:mod:`numerics.sampling.samplers`.

The plain reference is the generic sampler with the NumPy masked forward-backward; the tests
compare the two sample by sample. Sequences run in parallel chunks (:mod:`numerics._threads`).
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from numerics._threads import run_chunks
from numerics.draws import inverse_cdf
from numerics.languages.arrays import SparseNGramArrays, kernel_arrays
from numerics.languages.hmm import Language
from numerics.sampling.oracle.jumps import language_powers, no_powers
from numerics.sampling.oracle.messages import (
    advance,
    alpha_query,
    beta_query,
    new_messages,
    new_scratch,
)
from numerics.sampling.oracle.steps import Evidence, observe, token_marginal

__all__ = ["RevealScores", "reveal_sample", "reveal_score"]


class RevealScores(NamedTuple):
    """Per-sequence scores of tokens ``x`` under reveal steps ``tau`` (module docstring).

    Attributes
    ----------
    log_p : (B,) float64
        ``log p(x | tau)``, the factorized law of the instance (NaN when single-reveal steps were skipped).
    log_q : (B,) float64
        ``log q(x)`` by the chain rule along the reveal order; ``-inf`` outside ``supp q`` (NaN when skipped).
    jensen : (B,) float64
        ``log q(x) - log p(x | tau)`` accumulated step by step: the Jensen-bound term.
    """

    log_p: np.ndarray
    log_q: np.ndarray
    jensen: np.ndarray


class SequenceScore(NamedTuple):
    """The three scores of one sequence (fields as in :class:`RevealScores`)."""

    log_p: float
    log_q: float
    jensen: float


class RevealVectors(NamedTuple):
    """The vectors of the reveal loop of :func:`reveal_sequence`.

    Attributes
    ----------
    alpha_old, alpha_new : (S,) float64
        Forward messages under the old evidence, and under the old evidence plus the new tokens
        to the left (module docstring).
    marginal : (V,) float64
        An unnormalized token posterior.
    uniform : (V,) float64
        ``1 / V`` everywhere: the draw of an undefined posterior.
    """

    alpha_old: np.ndarray
    alpha_new: np.ndarray
    marginal: np.ndarray
    uniform: np.ndarray


@nb.njit(cache=True)
def reveal_sequence(lang, powers, sample, skip_single, reveal_steps, order_idx, x, U, msgs, scratch, vectors):  # noqa: PLR0917 -- a numba kernel: its arrays and scratch, positional on the hot path
    """Run the reveal steps of one sequence; returns its :class:`SequenceScore`.

    ``order_idx`` lists the positions by (step, position); ``x`` is written when ``sample`` (the
    token at ``j`` is the inverse CDF at ``U[j]`` of its marginal), else read. With
    ``skip_single`` a step revealing one position only invalidates messages (its Jensen term is
    exactly 0) and ``log_p``, ``log_q`` are NaN. ``msgs`` and ``scratch`` as in
    :mod:`~numerics.sampling.oracle.messages`; ``vectors`` are the loop's own :class:`RevealVectors`.
    """
    L = reveal_steps.shape[0]
    V = vectors.marginal.shape[0]
    va, vn, m = vectors.alpha_old, vectors.alpha_new, vectors.marginal
    aval, bval = msgs.alpha_valid, msgs.beta_valid
    aval[:] = False
    bval[:] = False
    dead = False
    log_p_tau = np.nan if skip_single else 0.0
    log_q = np.nan if skip_single else 0.0
    jensen = 0.0
    ptr = 0
    while ptr < L:
        i = reveal_steps[order_idx[ptr]]
        end = ptr
        while end < L and reveal_steps[order_idx[end]] == i:
            end += 1
        if skip_single and end - ptr == 1:  # contributes exactly 0 to the Jensen term: only invalidate
            j = order_idx[ptr]
            aval[j:] = False
            bval[:j] = False
            ptr = end
            continue
        if dead:  # uniform draws (the samplers' convention for an undefined posterior)
            for r in range(ptr, end):
                j = order_idx[r]
                if sample:
                    x[j] = inverse_cdf(vectors.uniform, U[j])
                log_p_tau += np.log(1.0 / V)
            ptr = end
            continue
        old = Evidence(reveal_steps, x, i, -1)
        # backward messages (old evidence) at every new position, right to left
        for r in range(end - 1, ptr - 1, -1):
            beta_query(lang, powers, old, msgs, scratch, order_idx[r])
        j1 = order_idx[ptr]
        alpha_query(lang, powers, old, msgs, scratch, va, j1)
        aval[j1:] = False
        prev = -1
        step_dead = False
        for r in range(ptr, end):
            j = order_idx[r]
            if r == ptr:
                vn[:] = va
            else:
                advance(lang, powers, old, msgs, scratch, va, prev, j, False)
                if not step_dead:
                    advance(lang, powers, Evidence(reveal_steps, x, i + 1, j), msgs, scratch, vn, prev, j, True)
            prev = j
            tot_old = token_marginal(lang, va, msgs.beta[j], m)  # q(x_j = . | x_{tau_<i}), unnormalized
            if sample:
                x[j] = inverse_cdf(m, U[j])
            xj = x[j]
            lo = np.log(m[xj] / tot_old) if m[xj] > 0.0 else -np.inf
            log_p_tau += lo
            if step_dead:
                continue
            if r > ptr:  # chain-rule factor q(x_j | x_{tau_<i}, new tokens to the left)
                tot_new = token_marginal(lang, vn, msgs.beta[j], m)
                ln = np.log(m[xj] / tot_new) if (tot_new > 0.0 and m[xj] > 0.0) else -np.inf
            else:
                ln = lo
            if ln == -np.inf:
                step_dead = True
                continue
            log_q += ln
            jensen += ln - lo
            observe(lang, vn, xj)
            msgs.alpha[j, :] = vn
            aval[j] = True
        jl = order_idx[end - 1]
        bval[:jl] = False
        if step_dead:  # the revealed tokens are jointly impossible: outside supp q from here on
            dead = True
            log_q = -np.inf
            jensen = np.nan
            aval[j1:] = False
        ptr = end
    return SequenceScore(log_p_tau, log_q, jensen)


@nb.njit(cache=True, nogil=True)
def _reveal_chunk(lang, powers, sample, skip_single, reveal_steps, x, U, scores, vocab_size, lo, hi):  # noqa: PLR0917 -- a numba kernel: its arrays and scratch, positional on the hot path
    """Sequences ``lo..hi-1`` of the batch into ``scores``; releases the GIL so threads run chunks in parallel."""
    L = reveal_steps.shape[1]
    S = lang.initial.shape[0]
    msgs = new_messages(L, S)
    scratch = new_scratch(S)
    uniform = np.empty(vocab_size)
    for v in range(vocab_size):
        uniform[v] = 1.0 / vocab_size
    vectors = RevealVectors(np.empty(S), np.empty(S), np.empty(vocab_size), uniform)
    for b in range(lo, hi):
        order_idx = np.argsort(reveal_steps[b] * L + np.arange(L))
        out = reveal_sequence(lang, powers, sample, skip_single, reveal_steps[b], order_idx, x[b], U[b], msgs, scratch, vectors)
        scores.log_p[b] = out.log_p
        scores.log_q[b] = out.log_q
        scores.jensen[b] = out.jensen


def _run(language: Language, sample: bool, skip_single: bool, reveal_steps: np.ndarray, x: np.ndarray, U: np.ndarray,
         layout: str) -> RevealScores:
    B = reveal_steps.shape[0]
    scores = RevealScores(np.empty(B), np.empty(B), np.empty(B))
    lang = kernel_arrays(language, layout)
    powers = no_powers() if isinstance(lang, SparseNGramArrays) else language_powers(language, reveal_steps.shape[1])
    args = (lang, powers, sample, skip_single, reveal_steps, x, U, scores, language.vocab_size)
    run_chunks(_reveal_chunk, B, args)
    return scores


def _check_steps(reveal_steps: np.ndarray) -> np.ndarray:
    reveal_steps = np.ascontiguousarray(reveal_steps, dtype=np.int64)
    if reveal_steps.ndim != 2 or reveal_steps.shape[1] < 1:
        raise ValueError(f"reveal_steps must be (B, L) with L >= 1, got shape {reveal_steps.shape}")
    if reveal_steps.size and reveal_steps.min() < 1:
        raise ValueError("reveal steps must be >= 1")
    return reveal_steps


def reveal_sample(language: Language, reveal_steps: np.ndarray, uniforms: np.ndarray, *, layout: str = "auto") -> np.ndarray:
    """Tokens of the oracle factorized sampler for given ``reveal_steps`` and token ``uniforms`` (both ``(B, L)``).

    Position ``j`` (revealed at step ``reveal_steps[b, j]``) gets the float64 inverse CDF at
    ``uniforms[b, j]`` of ``q(x_j | x_{tau_<i})``; see the module docstring. ``layout``: the
    n-gram layout of :func:`~numerics.languages.arrays.kernel_arrays` (``auto``: sparse when the
    conditional is mostly zeros).
    """
    reveal_steps = _check_steps(reveal_steps)
    U = np.ascontiguousarray(uniforms, dtype=np.float64)
    if U.shape != reveal_steps.shape:
        raise ValueError(f"uniforms {U.shape} and reveal_steps {reveal_steps.shape} differ in shape")
    x = np.zeros(reveal_steps.shape, dtype=np.int64)
    _run(language, True, False, reveal_steps, x, U, layout)
    return x


def reveal_score(language: Language, reveal_steps: np.ndarray, tokens: np.ndarray, *, chain: bool = False,
                 layout: str = "auto") -> RevealScores:
    """Per sequence ``log p(x | tau)``, ``log q(x)`` and the Jensen term ``log q(x) - log p(x | tau)``.

    ``tokens`` ``x`` are given (e.g. ``x ~ q`` for the Jensen bound); ``reveal_steps`` is the
    instance ``tau``. Steps revealing a single position contribute exactly 0 to the Jensen term;
    unless ``chain=True`` they are skipped (only their invalidations are kept), which makes the
    cost scale with the number of multi-position steps, and ``log_p``, ``log_q`` are then NaN.
    ``log q(x)`` comes from the chain rule along the reveal order and is ``-inf`` for ``x``
    outside ``supp q``. ``layout`` as in :func:`reveal_sample`.
    """
    reveal_steps = _check_steps(reveal_steps)
    x = np.ascontiguousarray(tokens, dtype=np.int64)
    if x.shape != reveal_steps.shape:
        raise ValueError(f"tokens {x.shape} and reveal_steps {reveal_steps.shape} differ in shape")
    V = language.vocab_size
    if np.any((x < 0) | (x >= V)):
        raise ValueError(f"tokens must be in 0..{V - 1}")
    return _run(language, False, not chain, reveal_steps, x.copy(), np.zeros(reveal_steps.shape), layout)
