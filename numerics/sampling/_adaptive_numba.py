"""Fast exact kernels of the oracle adaptive samplers (numba): the rule's steps, sampling and scoring.

One pass per sequence: at each step the rule (:mod:`numerics.sampling.adaptive`) picks ``D`` from
the grid confidences of the masked positions (``_select``), the tokens of ``D`` are drawn by the
float64 inverse CDF of their marginals at the sequence's uniforms (sampling) or read from the
given sequence (scoring), and :mod:`numerics.sampling._adaptive_paths` updates the marginals that
``D`` can change.

Scoring is the chain-rule identity (I1) of ``docs/methods/adaptive.md``. For a rule that is a
deterministic function of the revealed values, ``p(x) = prod_t prod_{j in D_t} q(x_j | x_{S_t})``
along the unique path of ``x``, hence per sequence

    log q(x) - log p(x) = sum_t [ log q(x_{D_t} | x_{S_t}) - sum_{j in D_t} log q(x_j | x_{S_t}) ],

the joint factor from the chain rule over the new positions (the paths module), accumulated term
by term. A jointly impossible reveal (factor 0) leaves ``supp q``: every later marginal is
uniform (the samplers' convention) and the term is NaN.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from numerics.sampling._adaptive_paths import (
    _KIND_CHAIN,
    _KIND_SEGMENT,
    CONFIDENCE_CODES,
    GRID_SCALE,
    _chain_refresh,
    _initial,
    _interval_refresh,
    _language_arrays,
    _segment_refresh,
    _uniform_all,
)
from numerics.sampling._oracle_numba import _draw, _threads

__all__ = ["adaptive_run", "RULE_CODES", "CONFIDENCE_CODES", "GRID_SCALE"]

RULE_CODES = {"topk": 0, "threshold": 1, "entropy-sum": 2}
_TOPK, _THRESHOLD, _ENTROPY = 0, 1, 2
_PARTIAL = 32  # select up to this many smallest keys by one bounded insertion pass, more by a full argsort


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
def _entropy_prefix(cand, order, count, ent_int, gamma_int, sel):
    """The longest prefix of ``cand[order[:count]]`` with cumulative entropy ``<= gamma`` (at least one) into ``sel``."""
    r = 0
    total = 0
    for i in range(count):
        j = cand[order[i]]
        total += ent_int[j]
        if i > 0 and total > gamma_int:
            break
        sel[r] = j
        r += 1
    return r


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
        r = _entropy_prefix(cand, bufi, first, ent_int, gamma_int, sel)
        if r == first and first < nm:  # the bound admits more than the partial pass found: full order
            r = _entropy_prefix(cand, np.argsort(keys[:nm]), nm, ent_int, gamma_int, sel)
    sel[:r].sort()
    return r


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
