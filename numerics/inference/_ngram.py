"""Compiled masked forward-backward of an n-gram over its sparse successor layout (numba).

The successor structure ``successor(s, v) = (s % W) V + v`` (``W = V^(n-2)``) replaces the dense
product, so a step costs at most ``S V = V^n`` multiply-adds, never ``S^2``. Only the windows
consistent with the observed tokens among the last ``n - 1`` positions are visited
(``V^(free digits)`` of them, e.g. the ``W`` windows ending in ``x_j`` when ``x_j`` is observed),
and an observed ``x_j`` also leaves one successor per window. Sequences run in parallel chunks
(``prange``; :mod:`numerics._threads`). Same recursions, scaling and semantics as the dense
kernel (:mod:`numerics.inference._dense`; ``docs/methods/inference.md``): ``beta_j(s)`` is
computed only where ``alpha_j(s) > 0`` and is 0 elsewhere; an impossible sequence gets
``loglik = -inf`` and NaN marginals. No epsilon, no ``fastmath``. A window's row of the conditional
is read by the row primitives of :mod:`numerics.messages.steps` (``entry``, ``push_row``, ``dot_row``),
the ones the single-position steps use.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange, uint64

from numerics._jit import jit
from numerics._threads import CHUNKS_PER_THREAD, kernel_threads
from numerics.inference._scaling import check_stable, fold_scale, new_buffers
from numerics.inference.posterior import Observations, Posterior
from numerics.languages.arrays import kernel_arrays
from numerics.languages.hmm import NGram
from numerics.messages.steps import dot_row, entry, push_row, vocab

__all__ = ["forward_backward_ngram", "loglik_ngram"]


@jit
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


@jit
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


@jit
def _forward_sequence(lang, obs, b, alpha, supp, nsupp, c, store):
    """Scaled forward of sequence ``b`` over the window supports; returns ``log q(x_obs)``
    (``-inf`` if impossible).

    ``alpha``/``supp`` are ``(L, S)`` when ``store`` (``c``, ``nsupp`` ``(L,)``), else ``(2, S)``.
    ``alpha_j(succ[s] + v) += alpha_{j-1}(s) cond[s, v]`` for ``s`` in the support at ``j - 1``
    and ``v = x_j`` (observed) or every ``v`` (masked); entries outside the support are never read.
    """
    initial, succ, order = lang.initial, lang.successor, lang.order
    tokens, mask = obs.tokens, obs.mask
    L = tokens.shape[1]
    V = vocab(lang)
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
                    cur[succ[s] + xu] += prev[s] * entry(lang, s, xu)
            else:
                for i in range(nsupp[kp]):
                    s = sp[i]
                    w = prev[s]
                    if w != 0.0:
                        push_row(lang, w, cur, s)
        tot = _sum_at(cur, sj, n)
        if store:
            c[j] = tot
        if not tot > 0.0:
            return -np.inf
        inv = 1.0 / tot
        for i in range(n):
            cur[sj[i]] *= inv
        logc, prod = fold_scale(tot, logc, prod)
    return logc + math.log(prod)


@jit(parallel=True)
def _forward_backward(lang, obs, chunk, out):
    succ = lang.successor
    tokens, mask = obs.tokens, obs.mask
    loglik, marginals, unstable = out.loglik, out.marginals, out.unstable
    B, L = tokens.shape
    S = lang.initial.shape[0]
    V = vocab(lang)
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
            ll = _forward_sequence(lang, obs, b, alpha, supp, nsupp, c, True)
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
                            beta[s] = dot_row(lang, s, nxt) * inv
                        else:
                            beta[s] = 0.0
                else:
                    inv = 1.0 / c[j + 1]
                    x1 = uint64(tokens[b, j + 1])
                    for i in range(n):
                        s = sj[i]
                        beta[s] = entry(lang, s, x1) * nxt[succ[s] + x1] * inv if aj[s] > 0.0 else 0.0
                if mask[b, j]:  # q(x_j = v | obs) = sum_{s % V = v} alpha_j(s) beta_j(s), normalized
                    for v in range(V):
                        acc[v] = 0.0
                    tot = 0.0
                    for i in range(n):
                        s = sj[i]
                        g = aj[s] * beta[s]
                        acc[emit[s]] += g
                        tot += g
                    if not (tot > 0.0 and tot < np.inf):
                        unstable[b] = True
                    inv = 1.0 / tot
                    for v in range(V):
                        marginals[b, j, v] = acc[v] * inv
                else:
                    for v in range(V):
                        marginals[b, j, v] = 0.0
                    marginals[b, j, tokens[b, j]] = 1.0
                beta, nxt = nxt, beta


@jit(parallel=True)
def _loglik(lang, obs, chunk, loglik):
    B, L = obs.tokens.shape
    S = lang.initial.shape[0]
    nchunks = (B + chunk - 1) // chunk
    for k in prange(nchunks):
        alpha = np.empty((2, S))
        supp = np.empty((2, S), dtype=np.int64)
        nsupp = np.empty(2, dtype=np.int64)
        c = np.empty(1)
        for b in range(k * chunk, min(B, (k + 1) * chunk)):
            loglik[b] = _forward_sequence(lang, obs, b, alpha, supp, nsupp, c, False)


def _chunk(batch: int) -> int:
    """Sequences per parallel chunk (:data:`numerics._threads.CHUNKS_PER_THREAD` chunks per thread)."""
    return max(1, -(-batch // (CHUNKS_PER_THREAD * kernel_threads())))


def _observations(obs: Observations) -> Observations:
    """As the kernels read them (C-contiguous int64 tokens, bool mask); no copy of what already is."""
    return Observations(np.ascontiguousarray(obs.tokens, dtype=np.int64), np.ascontiguousarray(obs.mask, dtype=np.bool_))


def forward_backward_ngram(ngram: NGram, obs: Observations, layout: str = "auto") -> Posterior:
    """Masked forward-backward of an n-gram over its sparse successor structure; a
    :class:`~numerics.inference.posterior.Posterior`. ``layout``: of the conditional
    (:func:`~numerics.languages.arrays.kernel_arrays`; ``auto``: only the non-zeros when it is mostly zeros)."""
    B, L = obs.tokens.shape
    out = new_buffers(B, L, ngram.vocab_size)
    _forward_backward(kernel_arrays(ngram, layout), _observations(obs), _chunk(B), out)
    check_stable(out)
    return Posterior(out.loglik, out.marginals)


def loglik_ngram(ngram: NGram, obs: Observations, layout: str = "auto") -> np.ndarray:
    """Forward pass only: ``log q(x_obs)`` per sequence of an n-gram (``layout`` as in :func:`forward_backward_ngram`)."""
    loglik = np.empty(obs.tokens.shape[0])
    _loglik(kernel_arrays(ngram, layout), _observations(obs), _chunk(obs.tokens.shape[0]), loglik)
    return loglik
