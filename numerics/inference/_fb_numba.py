"""Compiled (numba) masked forward-backward kernels; the NumPy twin is :func:`forward_backward_numpy`.

Two kernels, same recursions and semantics as the reference (see :mod:`numerics.inference.forward_backward`):

* **dense** (:func:`forward_backward_dense`, any :class:`HMM`): sequences are advanced in blocks of
  ``nb`` rows, so each step is one matrix-matrix product ``(nb, S) @ (S, S)`` (``np.dot`` on 2-D
  contiguous float64 arrays, which numba hands to BLAS ``dgemm``). Blocks run in parallel
  (``prange``); BLAS is held at one thread during the call so the two levels do not oversubscribe.
* **sparse n-gram** (:func:`forward_backward_ngram`, any :class:`NGram`): the successor structure
  ``successor(s, v) = (s % W) * V + v`` (``W = V^(n-2)``) replaces the dense product, so a step costs
  at most ``S * V = V^n`` multiply-adds, never ``S^2``. Only the windows consistent with the
  observed tokens among the last ``n - 1`` positions are visited (``V^(free digits)`` of them, e.g.
  the ``W`` windows ending in ``x_j`` when ``x_j`` is observed), and an observed ``x_j`` also leaves
  one successor per window. Parallel over sequences.

Inputs are copied to fresh C-contiguous arrays (tokens and mask of the dense kernel transposed to
``(L, B)`` so a step reads contiguous memory), so each kernel has one compiled signature.

Scaling (Rabiner): ``alpha_j`` is normalized by ``c_j`` at every step and ``log q(x_obs) =
sum_j log c_j`` (accumulated as a product that is folded into the log before it can underflow);
``beta_{j-1} = A @ (e_j * beta_j) / c_j``, so ``sum_s alpha_j(s) beta_j(s) = 1``. ``beta_j(s)`` is
only ever used where ``alpha_j(s) > 0`` (``gamma = alpha * beta``), and it is set to 0 elsewhere:
this changes nothing in exact arithmetic (``beta_{j-1}(t)`` for a reachable ``t`` only sums over
reachable successors) but keeps ``beta`` of unreachable states, which can grow like
``exp(L)``, from overflowing to ``inf`` and turning ``0 * inf`` into NaN. The posterior
``gamma_j = alpha_j * beta_j`` is divided by its sum (1 up to round-off).

An impossible sequence (some ``c_j == 0``) gets ``loglik = -inf`` and NaN marginals. No epsilon is
added anywhere, and no ``fastmath``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.linalg.cython_blas  # noqa: F401  (numba's np.dot calls this BLAS; load it before threadpoolctl looks)
from numba import njit, prange, uint64
from threadpoolctl import ThreadpoolController

from numerics.inference.posterior import Posterior
from numerics.languages.hmm import HMM, NGram

__all__ = [
    "forward_backward_dense",
    "forward_backward_ngram",
    "loglik_dense",
    "loglik_ngram",
    "block_rows",
]

_BLAS = ThreadpoolController()  # cached: a fresh threadpool_limits() rescans the libraries (~1 ms)

# Per-block working set of the dense forward-backward (the stored alphas): bound it so long
# sequences use smaller blocks instead of gigabytes.
_DENSE_BLOCK_BYTES = 48 * 2**20
_MAX_BLOCK = 128  # rows per dense block; dgemm is efficient from a few dozen rows on
_FOLD = 1e-150  # fold the running product of c_j into the log before it can underflow


def block_rows(batch: int, states: int, length: int, store: bool) -> int:
    """Rows per dense block: enough blocks for every thread, at most ``_MAX_BLOCK`` rows, and (when the
    alphas are stored) at most ``_DENSE_BLOCK_BYTES`` of them per block."""
    threads = numba.get_num_threads()
    cap = _MAX_BLOCK
    if store:
        cap = min(cap, max(1, _DENSE_BLOCK_BYTES // (8 * states * length)))
    nblocks = max(threads, -(-batch // cap))
    nblocks = -(-nblocks // threads) * threads  # a multiple of the thread count balances the load
    return max(1, -(-batch // nblocks))


# --------------------------------------------------------------------------------------------------
# dense HMM
# --------------------------------------------------------------------------------------------------


@njit(cache=True)
def _dense_forward_block(initial, A, ET, tokT, maskT, b0, alpha, c, dead, store):
    """Scaled forward over rows ``b0 .. b0 + nb - 1``; returns ``log prod_j c_j`` per row.

    ``tokT``/``maskT`` are ``(L, B)`` (transposed, so a step reads contiguous memory). ``alpha`` is
    ``(L, nb, S)`` when ``store`` (every step kept, ``c`` is ``(L, nb)``) or ``(2, nb, S)``.
    A row whose ``c_j`` is 0 is impossible: ``dead`` is set and the row stays exactly 0.
    """
    nb, S = alpha.shape[1], alpha.shape[2]
    L = tokT.shape[0]
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
            if not maskT[j, b]:
                x = tokT[j, b]
                for s in range(S):
                    cur[i, s] *= ET[x, s]
            tot = _sum_row(cur, i, S)
            if tot > 0.0:
                inv = 1.0 / tot
                for s in range(S):
                    cur[i, s] *= inv
                if tot < _FOLD:
                    logc[i] += math.log(tot)
                else:
                    prod[i] *= tot
                    if prod[i] < _FOLD:
                        logc[i] += math.log(prod[i])
                        prod[i] = 1.0
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
def _dense_fb(initial, A, AT, E1, ET, tokT, maskT, block, loglik, marginals):
    """Blocked forward-backward; ``E1 = [emission | 1]`` so one product gives ``gamma @ E`` and ``sum gamma``."""
    L, B = tokT.shape
    S = A.shape[0]
    V = E1.shape[1] - 1
    nblocks = (B + block - 1) // block
    for k in prange(nblocks):
        b0 = k * block
        nb = min(B, b0 + block) - b0
        alpha = np.empty((L, nb, S))
        c = np.empty((L, nb))
        dead = np.zeros(nb, dtype=np.bool_)
        logc = _dense_forward_block(initial, A, ET, tokT, maskT, b0, alpha, c, dead, True)
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
                x = tokT[j, b]
                inv = 1.0 / c[j, i] if j > 0 else 0.0
                if maskT[j, b]:  # gamma_j into G; tmp = beta_j / c_j (reachable states only)
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
                    inv = 1.0 / M[r, V]
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
def _dense_ll(initial, A, ET, tokT, maskT, block, loglik):
    L, B = tokT.shape
    S = A.shape[0]
    nblocks = (B + block - 1) // block
    for k in prange(nblocks):
        b0 = k * block
        nb = min(B, b0 + block) - b0
        alpha = np.empty((2, nb, S))
        c = np.empty((1, nb))
        dead = np.zeros(nb, dtype=np.bool_)
        logc = _dense_forward_block(initial, A, ET, tokT, maskT, b0, alpha, c, dead, False)
        for i in range(nb):
            loglik[b0 + i] = -np.inf if dead[i] else logc[i]


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
    import time

    A = _c(A)
    with _BLAS.limit(limits=1, user_api="blas"):
        t = time.perf_counter()
        _gemm_probe(A, length, batch, block)
        return time.perf_counter() - t


def _c(x: np.ndarray, dtype=np.float64) -> np.ndarray:
    """A fresh writable C-contiguous copy: one numba signature per kernel whatever the caller
    passes (read-only language arrays, views, broadcasts), so nothing is compiled twice."""
    return np.array(x, dtype=dtype, order="C", copy=True)


def _dense_arrays(hmm: HMM, tokens: np.ndarray, mask: np.ndarray):
    return _c(hmm.initial), _c(hmm.transition), _c(hmm.emission.T), _c(tokens.T, np.int64), _c(mask.T, np.bool_)


def forward_backward_dense(hmm: HMM, tokens: np.ndarray, mask: np.ndarray):
    """Masked forward-backward of a dense HMM; ``tokens``/``mask`` as from ``check_observations``.

    Returns a :class:`~numerics.inference.posterior.Posterior`.
    """

    hmm = hmm.to_hmm()
    B, L = tokens.shape
    initial, A, ET, tokT, maskT = _dense_arrays(hmm, tokens, mask)
    AT = _c(A.T)
    E1 = _c(np.hstack([hmm.emission, np.ones((hmm.n_states, 1))]))
    loglik = np.empty(B)
    marginals = np.empty((B, L, hmm.vocab_size))
    block = block_rows(B, hmm.n_states, L, store=True)
    with _BLAS.limit(limits=1, user_api="blas"):
        _dense_fb(initial, A, AT, E1, ET, tokT, maskT, block, loglik, marginals)
    _check_finite(loglik, marginals)
    return Posterior(loglik, marginals)


def loglik_dense(hmm: HMM, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Forward pass only: ``log q(x_obs)`` per sequence of a dense HMM."""
    hmm = hmm.to_hmm()
    B, L = tokens.shape
    initial, A, ET, tokT, maskT = _dense_arrays(hmm, tokens, mask)
    loglik = np.empty(B)
    block = block_rows(B, hmm.n_states, L, store=False)
    with _BLAS.limit(limits=1, user_api="blas"):
        _dense_ll(initial, A, ET, tokT, maskT, block, loglik)
    return loglik


# --------------------------------------------------------------------------------------------------
# sparse n-gram
# --------------------------------------------------------------------------------------------------


@njit(cache=True)
def _window_support(tokens, mask, b, j, V, order, out):
    """Write into ``out`` the windows (states) that can hold at position ``j`` of sequence ``b``;
    return how many.

    The window at ``j`` holds the tokens of positions ``j - n + 2 .. j`` (digits of weight
    ``V^(n-2) .. 1``); a digit is fixed to the observed token, or free (``V`` values) where the
    position is masked or before the start. Every other state has ``alpha_j = 0``, so the kernels
    visit only these ``V^(free digits)`` states.
    """
    cnt = 1
    out[0] = 0
    fixed = 0
    weight = 1
    for k in range(order - 1):  # newest digit first
        p = j - k
        if p >= 0 and not mask[b, p]:
            fixed += tokens[b, p] * weight
        else:
            for d in range(1, V):
                off = d * weight
                for i in range(cnt):
                    out[d * cnt + i] = out[i] + off
            cnt *= V
        weight *= V
    for i in range(cnt):
        out[i] += fixed
    return cnt


@njit(cache=True)
def _sum_at(x, idx, n):
    """``sum_i x[idx[i]]`` for ``i < n``, four partial sums (a fixed order; no fastmath needed)."""
    t0 = 0.0
    t1 = 0.0
    t2 = 0.0
    t3 = 0.0
    i = 0
    while i + 4 <= n:
        t0 += x[idx[i]]
        t1 += x[idx[i + 1]]
        t2 += x[idx[i + 2]]
        t3 += x[idx[i + 3]]
        i += 4
    while i < n:
        t0 += x[idx[i]]
        i += 1
    return (t0 + t1) + (t2 + t3)


@njit(cache=True)
def _sum_row(a, r, n):
    """``sum_s a[r, s]`` for ``s < n``, four partial sums."""
    t0 = 0.0
    t1 = 0.0
    t2 = 0.0
    t3 = 0.0
    s = 0
    while s + 4 <= n:
        t0 += a[r, s]
        t1 += a[r, s + 1]
        t2 += a[r, s + 2]
        t3 += a[r, s + 3]
        s += 4
    while s < n:
        t0 += a[r, s]
        s += 1
    return (t0 + t1) + (t2 + t3)


@njit(cache=True)
def _ngram_forward_seq(initial, cond, succ, order, tokens, mask, b, alpha, supp, nsupp, c, store):
    """Scaled forward of sequence ``b`` over the window supports; returns ``log q(x_obs)``
    (``-inf`` if impossible).

    ``alpha``/``supp`` are ``(L, S)`` when ``store`` (``c``, ``nsupp`` ``(L,)``), else ``(2, S)``.
    ``alpha_j(succ[s] + v) += alpha_{j-1}(s) cond[s, v]`` for ``s`` in the support at ``j - 1``
    and ``v = x_j`` (observed) or every ``v`` (masked); entries outside the support are never read.
    """
    L = tokens.shape[1]
    V = cond.shape[1]
    Vu = uint64(V)
    logc = 0.0
    prod = 1.0
    for j in range(L):
        k = j if store else j % 2
        cur = alpha[k]
        sj = supp[k]
        n = _window_support(tokens, mask, b, j, V, order, sj)
        nsupp[k] = n
        obs = not mask[b, j]
        x = tokens[b, j]
        if j == 0:
            for i in range(n):
                cur[sj[i]] = initial[sj[i]]
        else:
            kp = j - 1 if store else (j - 1) % 2
            prev = alpha[kp]
            sp = supp[kp]
            for i in range(n):
                cur[sj[i]] = 0.0
            if obs:
                xu = uint64(x)
                for i in range(nsupp[kp]):
                    s = sp[i]
                    cur[succ[s] + xu] += prev[s] * cond[s, xu]
            else:
                for i in range(nsupp[kp]):
                    s = sp[i]
                    w = prev[s]
                    if w != 0.0:
                        t = succ[s]
                        for v in range(Vu):  # unsigned indices: no wraparound test, so it vectorizes
                            cur[t + v] += w * cond[s, v]
        tot = _sum_at(cur, sj, n)
        if store:
            c[j] = tot
        if not tot > 0.0:
            return -np.inf
        inv = 1.0 / tot
        for i in range(n):
            cur[sj[i]] *= inv
        if tot < _FOLD:
            logc += math.log(tot)
        else:
            prod *= tot
            if prod < _FOLD:
                logc += math.log(prod)
                prod = 1.0
    return logc + math.log(prod)


@njit(cache=True, parallel=True)
def _ngram_fb(initial, cond, succ, order, tokens, mask, chunk, loglik, marginals):
    B, L = tokens.shape
    S, V = cond.shape
    Vu = uint64(V)
    emit = np.arange(S).astype(np.uint64) % Vu
    nchunks = (B + chunk - 1) // chunk
    for k in prange(nchunks):
        alpha = np.empty((L, S))
        supp = np.empty((L, S), dtype=np.int64)
        nsupp = np.empty(L, dtype=np.int64)
        c = np.empty(L)
        beta = np.empty(S)
        nxt = np.empty(S)
        acc = np.empty(V)
        for b in range(k * chunk, min(B, (k + 1) * chunk)):
            ll = _ngram_forward_seq(initial, cond, succ, order, tokens, mask, b, alpha, supp, nsupp, c, True)
            loglik[b] = ll
            if ll == -np.inf:
                marginals[b] = np.nan
                continue
            for j in range(L - 1, -1, -1):
                aj = alpha[j]
                sj = supp[j]
                n = nsupp[j]
                # beta_j(s) = sum_v cond[s, v] e_{j+1}(v) beta_{j+1}(succ[s] + v) / c_{j+1} on the
                # support at j, 0 where alpha_j(s) = 0 (the successors read lie in the support at j + 1)
                if j == L - 1:
                    for i in range(n):
                        s = sj[i]
                        beta[s] = 1.0 if aj[s] > 0.0 else 0.0
                elif mask[b, j + 1]:
                    inv = 1.0 / c[j + 1]
                    for i in range(n):
                        s = sj[i]
                        if aj[s] > 0.0:
                            t = succ[s]
                            y = 0.0
                            for v in range(Vu):
                                y += cond[s, v] * nxt[t + v]
                            beta[s] = y * inv
                        else:
                            beta[s] = 0.0
                else:
                    inv = 1.0 / c[j + 1]
                    x1 = uint64(tokens[b, j + 1])
                    for i in range(n):
                        s = sj[i]
                        beta[s] = cond[s, x1] * nxt[succ[s] + x1] * inv if aj[s] > 0.0 else 0.0
                if mask[b, j]:  # q(x_j = v | obs) = sum_{s % V = v} alpha_j(s) beta_j(s), normalized
                    for v in range(V):
                        acc[v] = 0.0
                    tot = 0.0
                    for i in range(n):
                        s = sj[i]
                        g = aj[s] * beta[s]
                        acc[emit[s]] += g
                        tot += g
                    inv = 1.0 / tot
                    for v in range(V):
                        marginals[b, j, v] = acc[v] * inv
                else:
                    for v in range(V):
                        marginals[b, j, v] = 0.0
                    marginals[b, j, tokens[b, j]] = 1.0
                beta, nxt = nxt, beta


@njit(cache=True, parallel=True)
def _ngram_ll(initial, cond, succ, order, tokens, mask, chunk, loglik):
    B, L = tokens.shape
    S = cond.shape[0]
    nchunks = (B + chunk - 1) // chunk
    for k in prange(nchunks):
        alpha = np.empty((2, S))
        supp = np.empty((2, S), dtype=np.int64)
        nsupp = np.empty(2, dtype=np.int64)
        c = np.empty(1)
        for b in range(k * chunk, min(B, (k + 1) * chunk)):
            loglik[b] = _ngram_forward_seq(initial, cond, succ, order, tokens, mask, b, alpha, supp, nsupp, c, False)


def _chunk(batch: int) -> int:
    """Sequences per parallel chunk of the n-gram kernels (a few chunks per thread for balance)."""
    return max(1, -(-batch // (4 * numba.get_num_threads())))


def _ngram_arrays(ngram: NGram):
    """``(initial, conditional, succ, order)``, ``succ[s] = successor(s, 0) = (s % V^(n-2)) V`` (unsigned)."""
    return _c(ngram.initial), _c(ngram.conditional), _c(ngram.successors()[:, 0], np.uint64), ngram.order


def forward_backward_ngram(ngram: NGram, tokens: np.ndarray, mask: np.ndarray):
    """Masked forward-backward of an n-gram over its sparse successor structure; a
    :class:`~numerics.inference.posterior.Posterior`."""

    B, L = tokens.shape
    loglik = np.empty(B)
    marginals = np.empty((B, L, ngram.vocab_size))
    _ngram_fb(*_ngram_arrays(ngram), _c(tokens, np.int64), _c(mask, np.bool_), _chunk(B), loglik, marginals)
    _check_finite(loglik, marginals)
    return Posterior(loglik, marginals)


def loglik_ngram(ngram: NGram, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Forward pass only: ``log q(x_obs)`` per sequence of an n-gram."""
    loglik = np.empty(tokens.shape[0])
    _ngram_ll(*_ngram_arrays(ngram), _c(tokens, np.int64), _c(mask, np.bool_), _chunk(tokens.shape[0]), loglik)
    return loglik


def _check_finite(loglik: np.ndarray, marginals: np.ndarray) -> None:
    """Fail loudly if round-off broke a possible sequence's posterior (it never should)."""
    ok = np.isfinite(loglik)
    if not np.all(np.isfinite(marginals[ok])):
        b = int(np.flatnonzero(ok & ~np.isfinite(marginals).all(axis=(1, 2)))[0])
        raise FloatingPointError(
            f"sequence {b} has log-likelihood {loglik[b]!r} but non-finite posterior marginals: "
            "the scaled recursion under- or overflowed (an extremely peaked model)"
        )
