"""Exact posterior updates of the oracle adaptive samplers (numba): the marginals of every masked position.

An adaptive sampler (:mod:`numerics.sampling.adaptive`) ranks *all* masked positions at every step
by their oracle marginals ``q(x_j | x_S)``. One pass per sequence keeps the marginals and their grid
confidences and, after a step reveals ``D``, recomputes only what ``D`` can change, with the
chain-rule factors ``q(x_{j_m} | x_S, x_{j_1..j_{m-1}})`` of the new tokens (left to right) on the way:

* **first-order token chains** (2-grams, ``_KIND_CHAIN``): given its nearest revealed neighbours
  ``lb < j < rb``, ``q(x_j = v | x_S) ∝ P^{j-lb}[x_lb, v] P^{rb-j}[v, x_rb]`` (``(mu P^j)[v]`` with no
  left neighbour, no right factor with no right neighbour), read from the precomputed powers
  ``P^d``, ``d <= L``. A reveal changes only the gap between its old neighbours.
* **n-grams of higher order and HMMs** (``_KIND_SEGMENT``): forward messages ``alpha_j`` (evidence
  ``<= j``) and backward messages ``beta_j`` (evidence ``> j``) along padded successor lists. For an
  n-gram a run of ``n - 1`` revealed tokens ending at ``p`` fixes the window at ``p`` (a separator):
  a reveal ``d`` changes only the segment between the nearest separator to its left (ending at
  ``a``; ``alpha`` restarts from the stored point mass there) and the nearest separator run to its
  right (ending at ``e``; ``beta`` restarts from ones, since the known window makes the right evidence a
  scalar), both under the *old* evidence. A general HMM has no separators: the whole sequence.
  The chain factor of a new ``j`` is the predictive forward message under the new evidence times
  the *old* ``beta_j``.
* **the interval language** (Example C.7, ``_KIND_INTERVAL``): intervals are independent and a
  masked token is uniform over the tokens whose pair bits agree with its revealed partners, so a
  reveal touches only its interval.

A factor 0 means the new tokens are jointly impossible: the sequence left ``supp q`` and the caller
makes every later marginal uniform (the samplers' convention). Messages and rows are normalized
after every position (no underflow; a zero vector is never clamped). Rows are passed to helpers as
``(array, index)``, never as views: creating a view across a call costs more than the row.

Confidences are compared on the integer grid ``floor(value * GRID_SCALE + 1/2)``
(:mod:`numerics.sampling.adaptive`). The NumPy twins are the generic sampler and
:mod:`numerics.exact.adaptive`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling._oracle_numba import _normalize

__all__ = ["CONFIDENCE_CODES", "GRID_SCALE"]

CONFIDENCE_CODES = {"maxprob": 0, "margin": 1, "neg-entropy": 2}
GRID_SCALE = 1e9  # confidences and entropies are compared as integers on a 1e-9 grid (module adaptive)
_KIND_SEGMENT, _KIND_CHAIN, _KIND_INTERVAL = 0, 1, 2  # which update path a language takes
_MAXPROB, _MARGIN, _NEGENT = 0, 1, 2


@nb.njit(cache=True, inline="always")
def _grid(value):
    """``floor(value * GRID_SCALE + 1/2)`` as int64: the value on the comparison grid."""
    return np.int64(np.floor(value * GRID_SCALE + 0.5))


@nb.njit(cache=True, inline="always")
def _set_confidence(j, marg, conf_kind, need_ent, conf_int, ent_int):
    """Grid confidence of the normalized row ``marg[j]``, and its entropy when ``need_ent`` (else 0)."""
    top1 = 0.0
    top2 = 0.0
    for v in range(marg.shape[1]):
        p = marg[j, v]
        if p > top1:
            top2 = top1
            top1 = p
        elif p > top2:
            top2 = p
    h = 0.0
    if need_ent:
        for v in range(marg.shape[1]):
            p = marg[j, v]
            if p > 0.0:
                h -= p * np.log(p)
    if conf_kind == _MAXPROB:
        c = top1
    elif conf_kind == _MARGIN:
        c = top1 - top2
    else:
        c = -h
    conf_int[j] = _grid(c)
    ent_int[j] = _grid(h)


@nb.njit(cache=True)
def _uniform_all(rev, marg, conf_kind, need_ent, conf_int, ent_int):
    """Every masked marginal becomes uniform (the sequence left ``supp q``)."""
    V = marg.shape[1]
    for j in range(rev.shape[0]):
        if not rev[j]:
            marg[j, :] = 1.0 / V
            _set_confidence(j, marg, conf_kind, need_ent, conf_int, ent_int)


# ----- first-order token chains (2-grams): marginals from powers of P --------------------------


@nb.njit(cache=True, inline="always")
def _normalize_row(out, row):
    """``out[row] /= sum(out[row])`` (by one reciprocal, as ``_normalize``) unless the sum is 0; returns the sum.

    Rows are passed as ``(array, index)``, never as views: a view across a call costs more than the row.
    """
    total = 0.0
    for v in range(out.shape[1]):
        total += out[row, v]
    if total > 0.0:
        inv = 1.0 / total
        for v in range(out.shape[1]):
            out[row, v] *= inv
    return total


@nb.njit(cache=True, inline="always")
def _chain_row(j, lb, rb, x, Pm, PmT, out, row):
    """``out[row] = q(x_j | x_lb, x_rb)`` normalized (``lb = -1``: no left token, ``rb = L``: none right); the total.

    ``out[row, v] ∝ P^{j-lb}[x_lb, v] P^{rb-j}[v, x_rb]``; the virtual token ``V`` stands for "no
    token": ``Pm[d, V] = mu P^{d-1}`` (so ``lb = -1`` gives ``(mu P^j)[v]``) and ``PmT[d, V] = 1``
    (``PmT[d, w, v] = P^d[v, w]``, the right factor read contiguously). No branch in the loop.
    """
    L = x.shape[0]
    V = out.shape[1]
    a = x[lb] if lb >= 0 else V
    c = x[rb] if rb < L else V
    d, d2 = j - lb, rb - j
    total = 0.0
    for v in range(V):
        w = Pm[d, a, v] * PmT[d2, c, v]
        out[row, v] = w
        total += w
    if total > 0.0:
        inv = 1.0 / total
        for v in range(V):
            out[row, v] *= inv
    return total


@nb.njit(cache=True)
def _chain_refresh(i0, sel, r, x, rev, Pm, PmT, marg, conf_kind, need_ent, conf_int, ent_int, m):
    """The gap of ``sel[i0]`` between its old revealed neighbours ``a < d < b``: chain factors of its new
    tokens (left to right) and the marginals of its masked positions. Returns ``(next i, log joint, ok)``."""
    L = x.shape[0]
    d = sel[i0]
    a = d - 1
    while a >= 0 and not rev[a]:
        a -= 1
    b = d + 1
    while b < L and not rev[b]:
        b += 1
    i1 = i0
    while i1 < r and sel[i1] < b:
        i1 += 1
    logj = 0.0
    lb = a
    for i in range(i0, i1):  # q(x_d | x_lb, x_b): new tokens to the left are known, those to the right not yet
        dd = sel[i]
        tot = _chain_row(dd, lb, b, x, Pm, PmT, m, 0)
        if tot == 0.0 or m[0, x[dd]] == 0.0:
            return i1, -np.inf, False
        logj += np.log(m[0, x[dd]])
        lb = dd
    lb = a
    i = i0
    for j in range(a + 1, b):
        if i < i1 and sel[i] == j:
            lb = j
            i += 1
            continue
        rb = sel[i] if i < i1 else b
        _chain_row(j, lb, rb, x, Pm, PmT, marg, j)
        _set_confidence(j, marg, conf_kind, need_ent, conf_int, ent_int)
    return i1, logj, True


# ----- n-grams of higher order and HMMs: forward/backward messages over segments ----------------


@nb.njit(cache=True)
def _push(alpha, p, out, succ, sprob):
    """``out = alpha[p] @ A`` along the successor lists, skipping zero entries of ``alpha[p]``."""
    out[:] = 0.0
    S, K = succ.shape
    for s in range(S):
        a = alpha[p, s]
        if a != 0.0:
            for k in range(K):
                out[succ[s, k]] += a * sprob[s, k]


@nb.njit(cache=True)
def _pull(beta, p, v, succ, sprob, E):
    """``beta[p, s] = sum_t A[s, t] e(t) beta[p+1, t]``, ``e(t) = E[t, v]`` (``v < 0``: 1), normalized."""
    S, K = succ.shape
    for s in range(S):
        acc = 0.0
        for k in range(K):
            t = succ[s, k]
            w = sprob[s, k] * beta[p + 1, t]
            if v >= 0:
                w *= E[t, v]
            acc += w
        beta[p, s] = acc
    _normalize_row(beta, p)


@nb.njit(cache=True)
def _marginal(alpha, beta, j, E, marg):
    """``marg[j, v] ∝ sum_s alpha[j, s] beta[j, s] E[s, v]``, normalized; returns the total before normalizing."""
    S, V = E.shape
    marg[j, :] = 0.0
    for s in range(S):
        w = alpha[j, s] * beta[j, s]
        if w != 0.0:
            for v in range(V):
                marg[j, v] += w * E[s, v]
    return _normalize_row(marg, j)


@nb.njit(cache=True)
def _sep_end(p, order, rev):
    """The window at ``p`` is fixed by revealed tokens ``p-n+2..p`` (old evidence ``rev``)."""
    if order < 2 or p < order - 2:
        return False
    for d in range(order - 1):
        if not rev[p - d]:
            return False
    return True


@nb.njit(cache=True)
def _segment_refresh(d, x, rev, newf, order, init, succ, sprob, E, alpha, beta, marg, conf_kind, need_ent, conf_int,
                     ent_int, pred):
    """Recompute the segment around the new reveal ``d``; returns ``(its end e, log joint factor, ok)``."""
    L, S = alpha.shape
    a = -1
    e = L - 1
    if order >= 2:
        for p in range(d - 1, -1, -1):
            if _sep_end(p, order, rev):
                a = p
                break
        for q in range(d + 1, L - order + 2):
            if _sep_end(q + order - 2, order, rev):
                e = q + order - 2
                break
    logj = 0.0
    for j in range(a + 1, e + 1):
        if j == 0:
            pred[:] = init
        else:
            _push(alpha, j - 1, pred, succ, sprob)
        if newf[j]:  # chain-rule factor q(x_j | old evidence, new tokens left of j)
            den = 0.0
            num = 0.0
            for s in range(S):
                w = pred[s] * beta[j, s]
                den += w
                num += w * E[s, x[j]]
            if not num > 0.0:
                return e, -np.inf, False
            logj += np.log(num / den)
        if rev[j] or newf[j]:
            for s in range(S):
                pred[s] *= E[s, x[j]]
        if _normalize(pred) == 0.0:
            return e, -np.inf, False
        alpha[j] = pred
    beta[e, :] = 1.0 / S
    for j in range(e - 1, a, -1):
        v = x[j + 1] if (rev[j + 1] or newf[j + 1]) else -1
        _pull(beta, j, v, succ, sprob, E)
    for j in range(a + 1, e + 1):
        if not (rev[j] or newf[j]):
            _marginal(alpha, beta, j, E, marg)
            _set_confidence(j, marg, conf_kind, need_ent, conf_int, ent_int)
    return e, logj, True


# ----- the interval language ---------------------------------------------------------------------


@nb.njit(cache=True)
def _interval_row(j, x, known, l, out, row):
    """``out[row]`` = law of ``x_j`` given the ``known`` partners in its interval (uniform on the
    consistent tokens); returns their number (0: the known tokens contradict ``x_j``'s constraints)."""
    L = x.shape[0]
    V = out.shape[1]
    base = (j // l) * l
    r = j - base
    count = 0
    for v in range(V):
        ok = True
        for kk in range(base, min(base + l, L)):
            if kk == j or not known[kk]:
                continue
            kr = kk - base
            bit_j = kr if kr < r else kr - 1  # x_j's bit for partner kk
            bit_k = r if r < kr else r - 1  # x_kk's bit for partner j
            if ((v >> bit_j) & 1) != ((x[kk] >> bit_k) & 1):
                ok = False
                break
        out[row, v] = 1.0 if ok else 0.0
        if ok:
            count += 1
    if count > 0:
        for v in range(V):
            out[row, v] /= count
    return count


@nb.njit(cache=True)
def _interval_refresh(sel, r, x, rev, known, l, marg, conf_kind, need_ent, conf_int, ent_int, m):
    """Chain factors of the new tokens (left to right) and the marginals of the touched intervals."""
    L = x.shape[0]
    known[:] = rev
    logj = 0.0
    for i in range(r):  # x_j given the old evidence and the new tokens left of j (other intervals: independent)
        j = sel[i]
        count = _interval_row(j, x, known, l, m, 0)
        known[j] = True
        if count == 0 or m[0, x[j]] == 0.0:
            return -np.inf, False
        logj += np.log(m[0, x[j]])
    last = -1
    for i in range(r):
        base = (sel[i] // l) * l
        if base == last:
            continue
        last = base
        for j in range(base, min(base + l, L)):
            if not known[j]:
                _interval_row(j, x, known, l, marg, j)
                _set_confidence(j, marg, conf_kind, need_ent, conf_int, ent_int)
    return logj, True


# ----- the all-masked sequence, and the kernel arguments of a language -------------------------------


@nb.njit(cache=True)
def _initial(kind, x, rev, init, succ, sprob, E, Pm, PmT, l, alpha, beta, marg, conf_kind, need_ent, conf_int,
             ent_int, pred):
    """Marginals and confidences of the all-masked sequence."""
    L = x.shape[0]
    if kind == _KIND_SEGMENT:
        S = alpha.shape[1]
        alpha[0] = init
        _normalize_row(alpha, 0)
        for j in range(1, L):
            _push(alpha, j - 1, pred, succ, sprob)
            alpha[j] = pred
            _normalize_row(alpha, j)
        beta[L - 1, :] = 1.0 / S
        for j in range(L - 2, -1, -1):
            _pull(beta, j, -1, succ, sprob, E)
    for j in range(L):
        if kind == _KIND_SEGMENT:
            _marginal(alpha, beta, j, E, marg)
        elif kind == _KIND_CHAIN:
            _chain_row(j, -1, L, x, Pm, PmT, marg, j)
        else:
            _interval_row(j, x, rev, l, marg, j)
        _set_confidence(j, marg, conf_kind, need_ent, conf_int, ent_int)


def _chain_powers(language: NGram, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``Pm[d, w] = P^d[w]`` and ``PmT[d, w, v] = P^d[v, w]`` (``d = 0..L``) of a 2-gram (``P`` = ``conditional``),
    each with the virtual token ``V``: ``Pm[d, V] = mu P^{d-1}`` (``d >= 1``), ``PmT[d, V] = 1``."""
    P = np.asarray(language.conditional)
    V = P.shape[0]
    powers = np.empty((length + 1, V, V))
    powers[0] = np.eye(V)
    for d in range(1, length + 1):
        np.matmul(powers[d - 1], P, out=powers[d])
    Pm = np.zeros((length + 1, V + 1, V))
    Pm[:, :V] = powers
    Pm[1:, V] = np.asarray(language.initial) @ powers[:length]  # (L, V): rows mu P^(d-1)
    PmT = np.ones((length + 1, V + 1, V))
    PmT[:, :V] = powers.transpose(0, 2, 1)
    return Pm, PmT


def _language_arrays(language, length: int, path: str):
    """Kernel arguments ``(kind, order, l, init, succ, sprob, E, Pm, PmT)`` of a language.

    ``path``: ``"auto"`` (the chain path for a 2-gram, segments for other n-grams and HMMs, the
    interval path for :class:`IntervalLanguage`) or ``"segment"`` (force the message path; tests).
    """
    d2, d3 = np.zeros((1, 1)), np.zeros((1, 1, 1))
    i2 = np.zeros((1, 1), dtype=np.int64)
    if isinstance(language, IntervalLanguage):
        return _KIND_INTERVAL, 0, language.l, np.ones(1), i2, d2, d2, d3, d3
    if isinstance(language, NGram):
        if language.order == 2 and path == "auto":
            Pm, PmT = _chain_powers(language, length)
            return _KIND_CHAIN, 2, 0, np.ones(1), i2, d2, d2, Pm, PmT
        emission = np.zeros((language.n_states, language.vocab_size))
        emission[np.arange(language.n_states), language.emitted_token()] = 1.0
        return (_KIND_SEGMENT, language.order, 0, np.array(language.initial),
                np.ascontiguousarray(language.successors()), np.array(language.conditional), emission, d3, d3)
    if isinstance(language, HMM):
        A = language.transition
        nz = A > 0
        K = max(int(nz.sum(axis=1).max()), 1)
        succ = np.zeros((A.shape[0], K), dtype=np.int64)
        sprob = np.zeros((A.shape[0], K))
        for s in range(A.shape[0]):
            cols = np.flatnonzero(nz[s])
            succ[s, : cols.size] = cols
            sprob[s, : cols.size] = A[s, cols]
        return _KIND_SEGMENT, 0, 0, np.array(language.initial), succ, sprob, np.array(language.emission), d3, d3
    raise TypeError(f"the fast adaptive path needs an NGram, HMM or IntervalLanguage, got {type(language).__name__}")
