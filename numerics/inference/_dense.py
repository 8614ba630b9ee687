"""Compiled masked forward-backward of a dense HMM: blocked matrix-matrix recursions (numba + BLAS).

Sequences are advanced in blocks of ``nb`` rows, so every step is one product
``(nb, S) @ (S, S)`` (``np.dot`` on 2-D contiguous float64 arrays, which numba hands to BLAS
``dgemm``) and the rest of the step is a few passes over ``nb x S`` numbers. Blocks run in
parallel (``prange``, the thread policy of :mod:`numerics._threads`); BLAS is held at one thread
meanwhile. Same recursions and semantics as the NumPy twin
(:func:`numerics.inference.forward_backward.forward_backward_numpy`; ``docs/methods/inference.md``):

* forward: ``alpha_j = (alpha_{j-1} A) * e_j / c_j``, ``c_j`` the sum, ``log q(x_obs) = sum_j log c_j``;
* backward: ``beta_{j-1} = A (e_j * beta_j) / c_j`` on the states with ``alpha_{j-1} > 0``, 0
  elsewhere (exact, and it keeps ``beta`` of unreachable states, which can grow like ``exp(L)``,
  from overflowing into ``0 * inf = NaN``);
* marginals at masked positions: ``gamma_j @ E / sum(gamma_j)`` with ``gamma_j = alpha_j beta_j``,
  both from one product ``gamma_j @ [E | 1]``; one-hot at observed positions.

An impossible sequence (some ``c_j = 0``) gets ``loglik = -inf`` and NaN marginals. No epsilon
anywhere, and no ``fastmath``.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit, prange

from numerics._threads import blas_single_thread, kernel_threads
from numerics.inference._scaling import check_stable, fold_scale, new_buffers
from numerics.inference.posterior import Observations, Posterior
from numerics.languages.arrays import contiguous, kernel_arrays
from numerics.languages.hmm import HMM

__all__ = ["forward_backward_dense", "loglik_dense", "block_rows", "gemm_probe_seconds"]

# Per-block working set (the stored alphas): bounded so long sequences use smaller blocks.
_DENSE_BLOCK_BYTES = 48 * 2**20
_MAX_BLOCK = 128  # rows per block; dgemm is efficient from a few dozen rows on


def block_rows(batch: int, states: int, length: int, store: bool) -> int:
    """Rows per block: enough blocks for every thread (a multiple of the thread count), at most
    ``_MAX_BLOCK`` rows, and (when the alphas are stored) at most ``_DENSE_BLOCK_BYTES`` of them."""
    threads = kernel_threads()
    cap = _MAX_BLOCK
    if store:
        cap = min(cap, max(1, _DENSE_BLOCK_BYTES // (8 * states * length)))
    nblocks = max(threads, -(-batch // cap))
    nblocks = -(-nblocks // threads) * threads
    return max(1, -(-batch // nblocks))


@njit(cache=True)
def _row_sum(a, i):
    """``sum_s a[i, s]`` in four running partial sums (a fixed order)."""
    S = a.shape[1]
    t0 = 0.0
    t1 = 0.0
    t2 = 0.0
    t3 = 0.0
    s = 0
    while s + 4 <= S:
        t0 += a[i, s]
        t1 += a[i, s + 1]
        t2 += a[i, s + 2]
        t3 += a[i, s + 3]
        s += 4
    while s < S:
        t0 += a[i, s]
        s += 1
    return (t0 + t1) + (t2 + t3)


@njit(cache=True)
def _forward_block(lang, obs, b0, alpha, c, dead, store):
    """Scaled forward over rows ``b0 .. b0 + nb - 1``; returns ``log prod_j c_j`` per row.

    ``alpha`` is ``(L, nb, S)`` when ``store`` (every step kept, ``c`` is ``(L, nb)``), else
    ``(2, nb, S)``. A row whose ``c_j`` is 0 is impossible: ``dead`` is set and the row stays 0.
    """
    initial, A, ET = lang.initial, lang.transition, lang.emission_t
    tokens, mask = obs.tokens, obs.mask
    nb, S = alpha.shape[1], alpha.shape[2]
    L = tokens.shape[1]
    logc = np.zeros(nb)
    prod = np.ones(nb)
    for j in range(L):
        cur = alpha[j] if store else alpha[j % 2]
        if j == 0:
            for i in range(nb):
                for s in range(S):
                    cur[i, s] = initial[s]
        else:
            np.dot(alpha[j - 1] if store else alpha[(j - 1) % 2], A, cur)
        for i in range(nb):
            b = b0 + i
            if not mask[b, j]:
                x = tokens[b, j]
                for s in range(S):
                    cur[i, s] *= ET[x, s]
            tot = _row_sum(cur, i)
            if tot > 0.0:
                inv = 1.0 / tot
                for s in range(S):
                    cur[i, s] *= inv
                logc[i], prod[i] = fold_scale(tot, logc[i], prod[i])
            elif not dead[i]:  # impossible from here on; the row stays exactly 0 (0 @ A = 0)
                dead[i] = True
                for s in range(S):
                    cur[i, s] = 0.0
            if store:
                c[j, i] = tot
    for i in range(nb):
        logc[i] += math.log(prod[i])
    return logc


@njit(cache=True, parallel=True)
def _forward_backward(lang, E1, obs, block, out):
    """Blocked forward-backward into ``out``; ``E1 = [emission | 1]`` so one product gives ``gamma @ E`` and ``sum gamma``."""
    AT, ET = lang.transition_t, lang.emission_t
    tokens, mask = obs.tokens, obs.mask
    loglik, marginals, unstable = out.loglik, out.marginals, out.unstable
    B, L = tokens.shape
    S = AT.shape[0]
    V = E1.shape[1] - 1
    nblocks = (B + block - 1) // block
    for k in prange(nblocks):
        b0 = k * block
        nb = min(B, b0 + block) - b0
        alpha = np.empty((L, nb, S))
        c = np.empty((L, nb))
        dead = np.zeros(nb, dtype=np.bool_)
        logc = _forward_block(lang, obs, b0, alpha, c, dead, True)
        beta = np.ones((nb, S))
        tmp = np.empty((nb, S))  # e_j * beta_j / c_j on reachable states: beta_{j-1} = tmp @ A^T
        G = np.empty((nb, S))  # gamma_j = alpha_j * beta_j of the masked rows
        M = np.empty((nb, V + 1))  # G @ E1
        rows = np.empty(nb, dtype=np.int64)
        for j in range(L - 1, -1, -1):
            if j < L - 1:
                np.dot(tmp, AT, beta)
            aj = alpha[j]
            m = 0
            for i in range(nb):
                b = b0 + i
                if dead[i]:
                    for s in range(S):
                        tmp[i, s] = 0.0
                    continue
                x = tokens[b, j]
                inv = 1.0 / c[j, i] if j > 0 else 0.0
                if mask[b, j]:  # gamma_j into G; tmp = beta_j / c_j (reachable states only)
                    for s in range(S):
                        a = aj[i, s]
                        y = beta[i, s]
                        G[m, s] = a * y if a > 0.0 else 0.0
                        tmp[i, s] = y * inv if a > 0.0 else 0.0
                    rows[m] = i
                    m += 1
                else:  # one-hot marginal; tmp = e_j * beta_j / c_j (reachable states only)
                    for v in range(V):
                        marginals[b, j, v] = 0.0
                    marginals[b, j, x] = 1.0
                    for s in range(S):
                        tmp[i, s] = ET[x, s] * beta[i, s] * inv if aj[i, s] > 0.0 else 0.0
            if m > 0:
                np.dot(G[:m], E1, M[:m])
                for r in range(m):
                    b = b0 + rows[r]
                    tot = M[r, V]
                    if not (tot > 0.0 and tot < np.inf):
                        unstable[b] = True
                    inv = 1.0 / tot
                    for v in range(V):
                        marginals[b, j, v] = M[r, v] * inv
        for i in range(nb):
            b = b0 + i
            if dead[i]:
                loglik[b] = -np.inf
                marginals[b] = np.nan
            else:
                loglik[b] = logc[i]


@njit(cache=True, parallel=True)
def _loglik(lang, obs, block, loglik):
    B = obs.tokens.shape[0]
    S = lang.initial.shape[0]
    nblocks = (B + block - 1) // block
    for k in prange(nblocks):
        b0 = k * block
        nb = min(B, b0 + block) - b0
        alpha = np.empty((2, nb, S))
        c = np.empty((1, nb))
        dead = np.zeros(nb, dtype=np.bool_)
        logc = _forward_block(lang, obs, b0, alpha, c, dead, False)
        for i in range(nb):
            loglik[b0 + i] = -np.inf if dead[i] else logc[i]


def _observations(obs: Observations) -> Observations:
    return Observations(contiguous(obs.tokens, np.int64), contiguous(obs.mask, np.bool_))


def forward_backward_dense(hmm: HMM, obs: Observations) -> Posterior:
    """Masked forward-backward of a dense HMM; ``obs`` as from :func:`~numerics.inference.posterior.check_observations`."""
    hmm = hmm.to_hmm()
    B, L = obs.tokens.shape
    lang = kernel_arrays(hmm)
    E1 = contiguous(np.hstack([hmm.emission, np.ones((hmm.n_states, 1))]))
    out = new_buffers(B, L, hmm.vocab_size)
    block = block_rows(B, hmm.n_states, L, store=True)
    with blas_single_thread():
        _forward_backward(lang, E1, _observations(obs), block, out)
    check_stable(out)
    return Posterior(out.loglik, out.marginals)


def loglik_dense(hmm: HMM, obs: Observations) -> np.ndarray:
    """Forward pass only: ``log q(x_obs)`` per sequence of a dense HMM."""
    hmm = hmm.to_hmm()
    B, L = obs.tokens.shape
    loglik = np.empty(B)
    block = block_rows(B, hmm.n_states, L, store=False)
    with blas_single_thread():
        _loglik(kernel_arrays(hmm), _observations(obs), block, loglik)
    return loglik


@njit(cache=True, parallel=True)
def _gemm_probe(A, length, batch, block):
    """Only the products of a forward pass, ``length`` steps of ``(nb, S) @ (S, S)`` per block, with
    the same blocking and threads as the kernels: the matrix-multiply rate they could reach."""
    S = A.shape[0]
    nblocks = (batch + block - 1) // block
    for k in prange(nblocks):
        nb = min(batch, (k + 1) * block) - k * block
        buf = np.full((2, nb, S), 1.0 / S)
        for j in range(length):
            np.dot(buf[j % 2], A, buf[(j + 1) % 2])


def gemm_probe_seconds(A: np.ndarray, length: int, batch: int, block: int) -> float:
    """Wall time of :func:`_gemm_probe` (``2 * S^2 * length * batch`` flops), BLAS at one thread."""
    A = contiguous(A)
    with blas_single_thread():
        t = time.perf_counter()
        _gemm_probe(A, length, batch, block)
        return time.perf_counter() - t

