"""Compiled masked forward-backward of a dense HMM: blocked matrix-matrix recursions (numba + BLAS).

Sequences are advanced in blocks of ``nb`` rows, so every step is one product
``(nb, S) @ (S, S)`` (BLAS ``dgemm`` through :func:`numerics.inference._blas.gemm_rows`) and the
rest of the step is a few passes over ``nb x S`` numbers. Blocks run in
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
from typing import NamedTuple

import numpy as np
from numba import prange

from numerics._jit import jit
from numerics._threads import blas_single_thread, kernel_threads
from numerics.inference._blas import gemm_rows
from numerics.inference._scaling import check_stable, fold_scale, new_buffers
from numerics.inference.posterior import Observations, Posterior
from numerics.languages.arrays import contiguous, kernel_arrays
from numerics.languages.hmm import HMM

__all__ = ["DenseInputs", "forward_backward_dense", "loglik_dense", "block_rows", "gemm_probe_seconds"]

# Rows per block. A step touches four (nb, S) float64 arrays (alpha_j, beta, e * beta / c, gamma);
# kept within about 32 KiB (a core's L1 data cache) they are not refetched between the passes of a
# step, which measured ~10% faster at S = 32 than 100-row blocks. dgemm wants a few dozen rows, so
# blocks have between _MIN_BLOCK and _MAX_BLOCK rows whatever S is.
_STEP_BYTES = 32 * 2**10
_MIN_BLOCK = 24
_MAX_BLOCK = 128
_DENSE_BLOCK_BYTES = 48 * 2**20  # the stored alphas of a block: long sequences use smaller blocks


def block_rows(batch: int, states: int, length: int, store: bool) -> int:
    """Rows per block: enough blocks for every thread (a multiple of the thread count), the step's
    arrays within ``_STEP_BYTES`` (but ``_MIN_BLOCK .. _MAX_BLOCK`` rows), and (when the alphas are
    stored) at most ``_DENSE_BLOCK_BYTES`` of them."""
    threads = kernel_threads()
    cap = min(_MAX_BLOCK, max(_MIN_BLOCK, _STEP_BYTES // (4 * 8 * states)))
    if store:
        cap = min(cap, max(1, _DENSE_BLOCK_BYTES // (8 * states * length)))
    nblocks = max(threads, -(-batch // cap))
    nblocks = -(-nblocks // threads) * threads
    return max(1, -(-batch // nblocks))


class DenseInputs(NamedTuple):
    """What the dense kernels read: the HMM's arrays and the observations, evidence made uniform.

    Attributes
    ----------
    initial, transition, transition_t : as in :class:`~numerics.languages.arrays.HMMArrays`
    evidence : (V + 1, S) float64
        ``evidence[v, s] = E[s, v]`` for a token ``v``, and ``evidence[V] = 1``: the evidence of a
        masked position. Every position multiplies by a row, so no step branches on the mask
        (a product by 1.0 is exact).
    emission_1 : (S, V + 1) float64
        ``[E | 1]``: ``gamma @ emission_1`` gives ``gamma @ E`` and ``sum(gamma)`` in one product.
    tokens, mask : (B, L) int64, bool
        The observations (:class:`~numerics.inference.posterior.Observations`); the evidence row of
        a position is ``x_j`` where it is observed and ``V`` where it is masked.
    """

    initial: np.ndarray
    transition: np.ndarray
    transition_t: np.ndarray
    evidence: np.ndarray
    emission_1: np.ndarray
    tokens: np.ndarray
    mask: np.ndarray


def _inputs(hmm: HMM, obs: Observations) -> DenseInputs:
    lang = kernel_arrays(hmm)
    S = hmm.n_states
    evidence = contiguous(np.vstack([lang.emission_t, np.ones((1, S))]))
    emission_1 = contiguous(np.hstack([hmm.emission, np.ones((S, 1))]))
    return DenseInputs(lang.initial, lang.transition, lang.transition_t, evidence, emission_1, obs.tokens, obs.mask)


@jit
def _forward_block(inp, b0, alpha, c, dead, store):
    """Scaled forward over rows ``b0 .. b0 + nb - 1``; returns ``log prod_j c_j`` per row.

    ``alpha`` is ``(L nb, S)``, row ``j nb + i`` holding ``alpha_j`` of row ``i``, when ``store``
    (every step kept, ``c`` is ``(L, nb)``); else ``(2 nb, S)``, steps alternating. A row whose
    ``c_j`` is 0 is impossible: ``dead`` is set and the row stays 0. Per row and step one pass sums
    the products with the evidence (eight running partial sums, a fixed order; no ``fastmath``)
    without storing them, and a second, vectorized pass writes the normalized products.
    """
    initial, A, ev, tokens, mask = inp.initial, inp.transition, inp.evidence, inp.tokens, inp.mask
    nb, S = c.shape[1], alpha.shape[1]
    L = tokens.shape[1]
    V = ev.shape[0] - 1
    S8 = S - S % 8
    logc = np.zeros(nb)
    prod = np.ones(nb)
    for j in range(L):
        r0 = (j if store else j % 2) * nb  # first row of alpha_j
        if j == 0:
            for i in range(nb):
                for s in range(S):
                    alpha[i, s] = initial[s]
        else:
            gemm_rows(alpha, ((j - 1) if store else (j - 1) % 2) * nb, A, alpha, r0, nb)
        for i in range(nb):
            r = r0 + i
            x = tokens[b0 + i, j] + V * mask[b0 + i, j]  # branch-free (a masked token is 0): no mispredictions
            t0 = t1 = t2 = t3 = t4 = t5 = t6 = t7 = 0.0
            for s in range(0, S8, 8):  # the sum of (alpha_{j-1} A) * e_j; loads only
                t0 += alpha[r, s] * ev[x, s]
                t1 += alpha[r, s + 1] * ev[x, s + 1]
                t2 += alpha[r, s + 2] * ev[x, s + 2]
                t3 += alpha[r, s + 3] * ev[x, s + 3]
                t4 += alpha[r, s + 4] * ev[x, s + 4]
                t5 += alpha[r, s + 5] * ev[x, s + 5]
                t6 += alpha[r, s + 6] * ev[x, s + 6]
                t7 += alpha[r, s + 7] * ev[x, s + 7]
            for s in range(S8, S):
                t0 += alpha[r, s] * ev[x, s]
            tot = ((t0 + t1) + (t2 + t3)) + ((t4 + t5) + (t6 + t7))
            if tot > 0.0:
                inv = 1.0 / tot
                for s in range(S):  # one vectorized pass writes the product and divides by the sum
                    alpha[r, s] = (alpha[r, s] * ev[x, s]) * inv
                logc[i], prod[i] = fold_scale(tot, logc[i], prod[i])
            elif not dead[i]:  # impossible from here on; the row stays exactly 0 (0 @ A = 0)
                dead[i] = True
                for s in range(S):
                    alpha[r, s] = 0.0
            if store:
                c[j, i] = tot
    for i in range(nb):
        logc[i] += math.log(prod[i])
    return logc


@jit(parallel=True)
def _forward_backward(inp, block, out):
    """Blocked forward-backward into ``out`` (module docstring)."""
    AT, ev, E1, tokens, mask = inp.transition_t, inp.evidence, inp.emission_1, inp.tokens, inp.mask
    loglik, marginals, unstable = out.loglik, out.marginals, out.unstable
    B, L = tokens.shape
    S = AT.shape[0]
    V = E1.shape[1] - 1
    nblocks = (B + block - 1) // block
    for k in prange(nblocks):
        b0 = k * block
        nb = min(B, b0 + block) - b0
        alpha = np.empty((L * nb, S))
        c = np.empty((L, nb))
        dead = np.zeros(nb, dtype=np.bool_)
        logc = _forward_block(inp, b0, alpha, c, dead, True)
        beta = np.ones((nb, S))
        tmp = np.empty((nb, S))  # e_j * beta_j / c_j on reachable states: beta_{j-1} = tmp @ A^T
        G = np.empty((nb, S))  # gamma_j = alpha_j * beta_j of the masked rows
        M = np.empty((nb, V + 1))  # G @ E1
        masked = np.empty(nb, dtype=np.int64)  # rows masked at j (alive)
        observed = np.empty(nb, dtype=np.int64)  # rows observed at j (alive)
        for j in range(L - 1, -1, -1):
            if j < L - 1:
                gemm_rows(tmp, 0, AT, beta, 0, nb)
            r0 = j * nb
            # the mask is random: the rows are sorted into masked and observed lists without a branch
            # (a mispredicted branch per row costs more than the row's arithmetic)
            m = 0
            o = 0
            for i in range(nb):
                b = b0 + i
                mk = np.int64(mask[b, j])
                x = tokens[b, j] + V * mk
                alive = np.int64(1) - np.int64(dead[i])
                inv = 1.0 / c[j, i] if (j > 0 and alive == 1) else 0.0  # a dead row's tmp is 0
                r = r0 + i
                for s in range(S):  # tmp = e_j * beta_j / c_j where alpha_j > 0, else 0
                    tmp[i, s] = ev[x, s] * beta[i, s] * inv if alpha[r, s] > 0.0 else 0.0
                masked[m] = i
                observed[o] = i
                m += mk * alive
                o += (np.int64(1) - mk) * alive
            for q in range(o):  # one-hot marginals
                b = b0 + observed[q]
                for v in range(V):
                    marginals[b, j, v] = 0.0
                marginals[b, j, tokens[b, j]] = 1.0
            for q in range(m):  # gamma_j = alpha_j * beta_j into G
                i = masked[q]
                r = r0 + i
                for s in range(S):
                    a = alpha[r, s]
                    G[q, s] = a * beta[i, s] if a > 0.0 else 0.0
            if m > 0:
                gemm_rows(G, 0, E1, M, 0, m)
                for q in range(m):
                    b = b0 + masked[q]
                    tot = M[q, V]
                    if not (tot > 0.0 and tot < np.inf):
                        unstable[b] = True
                    inv = 1.0 / tot
                    for v in range(V):
                        marginals[b, j, v] = M[q, v] * inv
        for i in range(nb):
            b = b0 + i
            if dead[i]:
                loglik[b] = -np.inf
                marginals[b] = np.nan
            else:
                loglik[b] = logc[i]


@jit(parallel=True)
def _loglik(inp, block, loglik):
    B = inp.tokens.shape[0]
    S = inp.initial.shape[0]
    nblocks = (B + block - 1) // block
    for k in prange(nblocks):
        b0 = k * block
        nb = min(B, b0 + block) - b0
        alpha = np.empty((2 * nb, S))
        c = np.empty((1, nb))
        dead = np.zeros(nb, dtype=np.bool_)
        logc = _forward_block(inp, b0, alpha, c, dead, False)
        for i in range(nb):
            loglik[b0 + i] = -np.inf if dead[i] else logc[i]


def forward_backward_dense(hmm: HMM, obs: Observations) -> Posterior:
    """Masked forward-backward of a dense HMM; ``obs`` as from :func:`~numerics.inference.posterior.check_observations`
    (the kernel relies on its contract: tokens in ``0..V-1``, and 0 at masked positions)."""
    hmm = hmm.to_hmm()
    B, L = obs.tokens.shape
    out = new_buffers(B, L, hmm.vocab_size)
    block = block_rows(B, hmm.n_states, L, store=True)
    with blas_single_thread():
        _forward_backward(_inputs(hmm, obs), block, out)
    check_stable(out)
    return Posterior(out.loglik, out.marginals)


def loglik_dense(hmm: HMM, obs: Observations) -> np.ndarray:
    """Forward pass only: ``log q(x_obs)`` per sequence of a dense HMM."""
    hmm = hmm.to_hmm()
    B, L = obs.tokens.shape
    loglik = np.empty(B)
    block = block_rows(B, hmm.n_states, L, store=False)
    with blas_single_thread():
        _loglik(_inputs(hmm, obs), block, loglik)
    return loglik


@jit(parallel=True)
def _gemm_probe(A, length, batch, block):
    """Only the products of a forward pass, ``length`` steps of ``(nb, S) @ (S, S)`` per block, with
    the same blocking and threads as the kernels: the matrix-multiply rate they could reach."""
    S = A.shape[0]
    nblocks = (batch + block - 1) // block
    for k in prange(nblocks):
        nb = min(batch, (k + 1) * block) - k * block
        buf = np.full((2 * nb, S), 1.0 / S)
        for j in range(length):
            gemm_rows(buf, (j % 2) * nb, A, buf, ((j + 1) % 2) * nb, nb)


def gemm_probe_seconds(A: np.ndarray, length: int, batch: int, block: int) -> float:
    """Wall time of :func:`_gemm_probe` (``2 * S^2 * length * batch`` flops), BLAS at one thread."""
    A = contiguous(A)
    with blas_single_thread():
        t = time.perf_counter()
        _gemm_probe(A, length, batch, block)
        return time.perf_counter() - t

