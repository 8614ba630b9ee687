"""Masked forward-backward: the oracle denoiser of an HMM language.

Given token sequences of which some positions are masked (unobserved), computes per sequence

* ``loglik[b] = log q(x_obs)``, the log-probability of the observed tokens (``-inf`` when they
  are impossible, never NaN), and
* ``marginals[b, j, v] = q(x_j = v | x_obs)``, the exact posterior marginal at every position
  (one-hot at observed positions; NaN for every position of an impossible sequence, where the
  conditional law is undefined).

This module holds the public entry points, :func:`masked_forward_backward` and the forward-only
:func:`log_likelihood`, and the plain NumPy reference (:func:`forward_backward_numpy`). The compiled
kernels live in :mod:`numerics.inference._dense` (blocked matrix-matrix kernel for an HMM) and
:mod:`numerics.inference._ngram` (sparse kernel for an n-gram) and are tested against the reference
and against brute-force enumeration.
"""

from __future__ import annotations

import numpy as np

from numerics.inference._dense import forward_backward_dense, loglik_dense
from numerics.inference._ngram import forward_backward_ngram, loglik_ngram
from numerics.inference.posterior import Posterior, check_observations
from numerics.languages.hmm import HMM, Language, NGram
from numerics.languages.interval import IntervalLanguage, SparseHMM

__all__ = ["masked_forward_backward", "log_likelihood", "log_q", "forward_backward_numpy"]


def forward_backward_numpy(language: Language, tokens: np.ndarray, mask: np.ndarray) -> Posterior:
    """Plain NumPy reference of the masked forward-backward (scaled recursions, one sequence at a time).

    Dense over the HMM's states (an :class:`NGram` is expanded with :meth:`NGram.to_hmm`). Slow
    and obviously correct: the twin against which the compiled kernels are tested.

    Recursions (``e_j(s) = emission[s, x_j]`` if ``j`` observed, else 1):
    ``alpha_1 = initial * e_1``, ``alpha_{j+1} = (alpha_j @ transition) * e_{j+1}``, each
    normalized by its sum ``c_j``; ``log q(x_obs) = sum_j log c_j``;
    ``beta_L = 1``, ``beta_j = transition @ (e_{j+1} * beta_{j+1}) / c_{j+1}``;
    ``gamma_j = alpha_j * beta_j``; ``marginals_j = gamma_j @ emission / sum(gamma_j)`` at masked
    positions (``sum(gamma_j) = 1`` up to round-off).

    ``beta_j(s)`` enters only through ``gamma_j(s) = alpha_j(s) beta_j(s)`` and through
    ``beta_{j-1}(t)`` of states ``t`` that reach ``s``; both vanish unless ``alpha_j(s) > 0``. So
    ``beta_j`` is zeroed where ``alpha_j = 0`` before it is used: exact, and it stops ``beta`` of
    unreachable states (which can grow like ``exp(L)``) from overflowing into ``0 * inf = NaN``.
    """
    tokens, mask = check_observations(language, tokens, mask)
    hmm: HMM = language.to_hmm()
    A, E, mu = hmm.transition, hmm.emission, hmm.initial
    B, L = tokens.shape
    V = hmm.vocab_size
    loglik = np.empty(B)
    marginals = np.empty((B, L, V))
    for b in range(B):
        ev = np.where(mask[b][:, None], 1.0, E[:, tokens[b]].T)  # (L, S) evidence
        alpha = np.empty_like(ev)
        c = np.empty(L)
        a = mu * ev[0]
        ok = True
        for j in range(L):
            if j:
                a = (alpha[j - 1] @ A) * ev[j]
            c[j] = a.sum()
            if c[j] == 0.0:
                ok = False
                break
            alpha[j] = a / c[j]
        if not ok:
            loglik[b] = -np.inf
            marginals[b] = np.nan
            continue
        loglik[b] = np.log(c).sum()
        beta = np.ones(hmm.n_states)
        for j in range(L - 1, -1, -1):
            if j < L - 1:
                beta = A @ np.where(alpha[j + 1] > 0, ev[j + 1] * beta, 0.0) / c[j + 1]
            gamma = np.where(alpha[j] > 0, alpha[j] * beta, 0.0)
            if mask[b, j]:
                marginals[b, j] = gamma @ E / gamma.sum()
            else:
                marginals[b, j] = 0.0
                marginals[b, j, tokens[b, j]] = 1.0
    return Posterior(loglik, marginals)


def masked_forward_backward(
    language: Language, tokens: np.ndarray, mask: np.ndarray, *, backend: str = "auto"
) -> Posterior:
    """Exact ``log q(x_obs)`` and posterior marginals ``q(x_j = v | x_obs)`` for a batch.

    Parameters
    ----------
    language : HMM or NGram
    tokens : (B, L) int array
        Token ids; values at masked positions are ignored.
    mask : (B, L) bool array
        True where the position is masked (unobserved). Any pattern, including all or none.
    backend : {"auto", "numba", "numpy"}
        ``"auto"`` and ``"numba"`` run the compiled kernels (:mod:`~numerics.inference._dense`,
        :mod:`~numerics.inference._ngram`): the sparse
        n-gram kernel for an :class:`NGram` (cost ``O(V^n)`` per position), the blocked
        matrix-matrix kernel for an :class:`HMM`. ``"numpy"`` is the slow reference.
    """
    _check_backend(backend)
    if backend == "numpy":
        return forward_backward_numpy(language, tokens, mask)

    obs = check_observations(language, tokens, mask)
    if isinstance(language, NGram):
        return forward_backward_ngram(language, obs)
    return forward_backward_dense(language, obs)


def log_likelihood(
    language: Language, tokens: np.ndarray, mask: np.ndarray | None = None, *, backend: str = "auto"
) -> np.ndarray:
    """``log q(x_obs)`` per sequence (``(B,)`` float64, ``-inf`` when impossible): the forward pass only.

    Much cheaper than :func:`masked_forward_backward` (no backward pass, no stored alphas, no
    marginals); ``mask=None`` means fully observed, so ``log_likelihood(lang, x) == -inf`` is the
    exact support check ``q(x) = 0`` and ``-log_likelihood(lang, x).mean() / L`` the per-token
    negative log-likelihood of samples ``x``. Same scaled recursion as the full pass, so the
    values agree with ``masked_forward_backward(...).loglik`` to round-off.
    """
    _check_backend(backend)
    tokens = np.asarray(tokens)
    if mask is None:
        mask = np.zeros(tokens.shape, dtype=np.bool_)
    if backend == "numpy":
        return forward_backward_numpy(language, tokens, mask).loglik

    obs = check_observations(language, tokens, mask)
    if isinstance(language, NGram):
        return loglik_ngram(language, obs)
    return loglik_dense(language, obs)


def log_q(language: Language | IntervalLanguage | SparseHMM, tokens: np.ndarray) -> np.ndarray:
    """Exact ``log q(x)`` of complete sequences ``tokens`` ``(B, L)``: ``(B,)`` float64, ``-inf`` outside the support.

    The one home of this number in the engine: the forward pass (:func:`log_likelihood`, nothing
    masked) for an :class:`HMM` or :class:`NGram`; the interval language and its sparse HMM form
    use their own exact ``log_prob``. ``log q(x) = -inf`` is the exact support check of SER.
    """
    if isinstance(language, (IntervalLanguage, SparseHMM)):
        return language.log_prob(tokens)
    return log_likelihood(language, np.asarray(tokens))


def _check_backend(backend: str) -> None:
    if backend not in ("auto", "numba", "numpy"):
        raise ValueError(f"unknown backend {backend!r}; choose 'auto', 'numba' or 'numpy'")
