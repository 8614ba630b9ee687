"""Fast exact kernels of the oracle adaptive samplers (numba): sampling and chain-rule scoring.

An adaptive sampler (:mod:`numerics.sampling.adaptive`) needs, at every step, the oracle
posterior marginal ``q(x_j | x_S)`` of *every* masked position ``j`` (to rank them), where ``S``
is the set revealed so far. Instead of a fresh masked forward-backward per step, one pass per
sequence keeps forward messages ``alpha_j`` (evidence ``<= j``), backward messages ``beta_j``
(evidence ``> j``), the marginals and the confidences of all positions, and after a step
recomputes only what the step's reveals ``D`` can change:

* **segments.** For an n-gram (order ``n``, the HMM over windows of ``n - 1`` tokens) a run of
  ``n - 1`` revealed tokens ending at ``p`` fixes the window at ``p`` (a separator, Definition
  B.4 of ``docs/methods/adaptive.md``'s references): positions on either side are independent
  given it. A new reveal ``d`` changes only the marginals between the nearest separator to its
  left (ending at ``a``) and the nearest separator run to its right (ending at ``e``), both taken
  under the *old* evidence. ``alpha`` restarts at ``a`` from its stored point mass (from the
  initial law when there is none), ``beta`` at ``e`` from ones (the window at ``e`` is known, so
  the right evidence enters only through a scalar). For a 2-gram every revealed token is a
  separator: a reveal touches only the gap between its revealed neighbours. For a general HMM
  (``order = 0``) there are no separators and a step refreshes the whole sequence.
* **interval language** (Example C.7): intervals are independent and a masked token's law is
  uniform over the tokens whose pair bits agree with its revealed partners (``2^-f`` each, ``f``
  the free bits), so a reveal touches only its own interval.

Transitions are pushed along padded successor lists (``succ``, ``sprob``: ``V`` per window for an
n-gram, the non-zeros of each row for a dense HMM). Messages are normalized after every
position (no underflow; a zero vector is never clamped).

Scoring (the chain-rule identity (I1), ``docs/methods/adaptive.md``). For a rule that is a
deterministic function of the revealed values, ``p(x) = prod_t prod_{j in D_t} q(x_j | x_{S_t})``
along the unique path of ``x``, hence per sequence

    log q(x) - log p(x) = sum_t [ log q(x_{D_t} | x_{S_t}) - sum_{j in D_t} log q(x_j | x_{S_t}) ].

Inside a segment the joint factor is the chain rule over the new positions left to right,
``q(x_{j_m} | x_S, x_{j_1..j_{m-1}})``, from the forward message under the new evidence
(predictive, before ``x_{j_m}``) times the *old* backward message at ``j_m``; segments are
independent given the old evidence. The same pass detects a jointly impossible reveal (a
factor 0): the sequence is then outside ``supp q`` and, by the samplers' convention
(:mod:`numerics.sampling.samplers`), every later marginal is uniform.

The NumPy twins are the generic sampler (any denoiser, :mod:`numerics.sampling.adaptive`) and the
exact enumeration (:mod:`numerics.exact.adaptive`); the tests compare all three.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling._oracle_numba import _draw, _normalize, _threads

__all__ = ["adaptive_run", "RULE_CODES", "CONFIDENCE_CODES", "GRID_SCALE"]

RULE_CODES = {"topk": 0, "threshold": 1, "entropy-sum": 2}
CONFIDENCE_CODES = {"maxprob": 0, "margin": 1, "neg-entropy": 2}
GRID_SCALE = 1e9  # confidences and entropies are compared as integers on a 1e-9 grid (module adaptive)

_TOPK, _THRESHOLD, _ENTROPY = 0, 1, 2
_KIND_SEGMENT, _KIND_CHAIN, _KIND_INTERVAL = 0, 1, 2
_MAXPROB, _MARGIN, _NEGENT = 0, 1, 2


_PARTIAL = 32  # select up to this many smallest keys by one bounded insertion pass, more by a full argsort


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


@nb.njit(cache=True)
def _smallest(keys, nm, k, bufk, bufi):
    """Indices of the ``k`` smallest of ``keys[:nm]`` (distinct) into ``bufi[:k]``, ascending."""
    cnt = 0
    for i in range(nm):
        kv = keys[i]
        if cnt == k:
            if kv >= bufk[k - 1]:
                continue
            p = k - 1
        else:
            p = cnt
            cnt += 1
        while p > 0 and bufk[p - 1] > kv:
            bufk[p] = bufk[p - 1]
            bufi[p] = bufi[p - 1]
            p -= 1
        bufk[p] = kv
        bufi[p] = i


@nb.njit(cache=True)
def _select(rule, rev, conf_int, ent_int, prio, k, gamma_int, cand, keys, sel, bufk, bufi):
    """Positions revealed by this step into ``sel`` (sorted by position); returns their number.

    Order: ``(-confidence, priority)`` for top-k and threshold, ``(entropy, priority)`` for the
    entropy-sum rule (lower first); ``priority`` is the seeded tie rank. Keys are distinct.
    """
    L = rev.shape[0]
    nm = 0
    for j in range(L):
        if not rev[j]:
            cand[nm] = j
            if rule == _ENTROPY:
                keys[nm] = ent_int[j] * L + prio[j]
            else:
                keys[nm] = -conf_int[j] * L + prio[j]
            nm += 1
    r = 0
    if rule == _THRESHOLD:
        best = 0
        for i in range(nm):
            if conf_int[cand[i]] >= gamma_int:
                sel[r] = cand[i]
                r += 1
            if keys[i] < keys[best]:
                best = i
        if r == 0:
            sel[0] = cand[best]
            r = 1
    elif rule == _TOPK:
        r = min(k, nm)
        if r <= _PARTIAL:
            _smallest(keys, nm, r, bufk, bufi)
            for i in range(r):
                sel[i] = cand[bufi[i]]
        else:
            order = np.argsort(keys[:nm])
            for i in range(r):
                sel[i] = cand[order[i]]
    else:
        first = min(_PARTIAL, nm)
        _smallest(keys, nm, first, bufk, bufi)
        total = 0
        for i in range(first):
            j = cand[bufi[i]]
            total += ent_int[j]
            if i > 0 and total > gamma_int:
                break
            sel[r] = j
            r += 1
        if r == first and first < nm:  # the bound admits more than the partial pass found: full order
            order = np.argsort(keys[:nm])
            r = 0
            total = 0
            for i in range(nm):
                j = cand[order[i]]
                total += ent_int[j]
                if i > 0 and total > gamma_int:
                    break
                sel[r] = j
                r += 1
    sel[:r].sort()
    return r


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


# ----- one sequence, a batch ---------------------------------------------------------------------


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


@nb.njit(cache=True)
def _sequence(sample, kind, rule, conf_kind, need_ent, sizes, gamma_int, prio, x, U, step_of, order, l, init, succ,
              sprob, E, Pm, PmT, alpha, beta, marg, conf_int, ent_int, rev, newf, cand, keys, sel, pred, m, bufk,
              bufi):
    """Run one sequence; returns ``(calls, log q(x) - log p(x) term, dead)`` (``x`` written when sampling)."""
    L = x.shape[0]
    V = marg.shape[1]
    rev[:] = False
    newf[:] = False
    _initial(kind, x, rev, init, succ, sprob, E, Pm, PmT, l, alpha, beta, marg, conf_kind, need_ent, conf_int,
             ent_int, pred)
    dead = False
    calls = 0
    term = 0.0
    n_rev = 0
    t = 0
    while n_rev < L:
        k = 0
        if rule == _TOPK:
            while sizes[t] == 0:
                t += 1
            k = sizes[t]
            t += 1
        calls += 1
        r = _select(rule, rev, conf_int, ent_int, prio, k, gamma_int, cand, keys, sel, bufk, bufi)
        for i in range(r):
            j = sel[i]
            if sample:
                x[j] = _draw(marg[j], U[j], V)
            pj = marg[j, x[j]]
            term -= np.log(pj) if pj > 0.0 else np.inf
            step_of[j] = calls
            newf[j] = True
        if not dead:
            ok = True
            if kind == _KIND_CHAIN:
                i = 0
                while i < r and ok:
                    i, logj, ok = _chain_refresh(i, sel, r, x, rev, Pm, PmT, marg, conf_kind, need_ent, conf_int,
                                                 ent_int, m)
                    term += logj
            elif kind == _KIND_SEGMENT:
                covered = -1
                for i in range(r):
                    if sel[i] <= covered:
                        continue
                    covered, logj, ok = _segment_refresh(sel[i], x, rev, newf, order, init, succ, sprob, E, alpha,
                                                         beta, marg, conf_kind, need_ent, conf_int, ent_int, pred)
                    term += logj
                    if not ok:
                        break
            else:
                logj, ok = _interval_refresh(sel, r, x, rev, newf, l, marg, conf_kind, need_ent, conf_int, ent_int, m)
                newf[:] = False  # used as the interval path's scratch "known" flags
                term += logj
            dead = not ok
        for i in range(r):
            rev[sel[i]] = True
            newf[sel[i]] = False
        n_rev += r
        if dead:
            term = np.nan
            _uniform_all(rev, marg, conf_kind, need_ent, conf_int, ent_int)
    return calls, term, dead


@nb.njit(cache=True, nogil=True)
def _kernel(sample, kind, rule, conf_kind, need_ent, sizes, gamma_int, prio, x, U, steps, out, order, l, init, succ,
            sprob, E, Pm, PmT, V, lo, hi):
    """Sequences ``lo..hi-1``; releases the GIL so threads run chunks in parallel."""
    L = x.shape[1]
    S = init.shape[0] if kind == _KIND_SEGMENT else 1
    alpha = np.empty((L, S))
    beta = np.empty((L, S))
    marg = np.empty((L, V))
    conf_int = np.empty(L, dtype=np.int64)
    ent_int = np.empty(L, dtype=np.int64)
    rev = np.zeros(L, dtype=np.bool_)
    newf = np.zeros(L, dtype=np.bool_)
    cand = np.empty(L, dtype=np.int64)
    keys = np.empty(L, dtype=np.int64)
    sel = np.empty(L, dtype=np.int64)
    pred = np.empty(S)
    m = np.empty((1, V))
    bufk = np.empty(_PARTIAL, dtype=np.int64)
    bufi = np.empty(_PARTIAL, dtype=np.int64)
    for b in range(lo, hi):
        calls, term, dead = _sequence(sample, kind, rule, conf_kind, need_ent, sizes, gamma_int, prio, x[b], U[b],
                                      steps[b], order, l, init, succ, sprob, E, Pm, PmT, alpha, beta, marg, conf_int,
                                      ent_int, rev, newf, cand, keys, sel, pred, m, bufk, bufi)
        out[b, 0] = calls
        out[b, 1] = term
        out[b, 2] = 1.0 if dead else 0.0


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


def adaptive_run(language, rule: str, confidence: str, sizes: np.ndarray, gamma_int: int, prio: np.ndarray,
                 tokens: np.ndarray, uniforms: np.ndarray, *, sample: bool, path: str = "auto"
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Run the oracle adaptive rule on ``B`` sequences; returns ``(steps (B, L), out (B, 3))``.

    ``sample=True`` draws the tokens (written into ``tokens``) by the float64 inverse CDF at
    ``uniforms``; ``sample=False`` replays the rule along the given ``tokens`` (scoring).
    ``out[b] = (calls, log q(x) - log p(x), dead)``: the term is NaN once the sequence left
    ``supp q`` (``dead = 1``). ``steps[b, j]`` is the step that revealed ``j``.
    """
    if path not in ("auto", "segment"):
        raise ValueError(f"path must be 'auto' or 'segment', got {path!r}")
    x = tokens
    B, L = x.shape
    kind, order, l, init, succ, sprob, E, Pm, PmT = _language_arrays(language, L, path)
    V = int(language.vocab_size)
    steps = np.zeros((B, L), dtype=np.int64)
    out = np.empty((B, 3))
    conf_kind = CONFIDENCE_CODES[confidence]
    need_ent = rule == "entropy-sum" or confidence == "neg-entropy"
    args = (bool(sample), kind, RULE_CODES[rule], conf_kind, need_ent, np.ascontiguousarray(sizes, np.int64),
            np.int64(gamma_int), np.ascontiguousarray(prio, np.int64), x, np.ascontiguousarray(uniforms, np.float64),
            steps, out, order, l, init, succ, sprob, E, Pm, PmT, V)
    workers = min(_threads(), B)
    if workers <= 1:
        _kernel(*args, 0, B)
        return steps, out
    bounds = np.linspace(0, B, 4 * workers + 1).astype(np.int64)
    with ThreadPoolExecutor(workers) as pool:
        jobs = [pool.submit(_kernel, *args, int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
        for job in jobs:
            job.result()
    return steps, out
