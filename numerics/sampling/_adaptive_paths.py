"""Exact posterior updates of the oracle adaptive samplers (numba): the marginals of every masked position.

An adaptive sampler (:mod:`numerics.sampling.adaptive`) ranks *all* masked positions at every step
by their oracle marginals ``q(x_j | x_S)``. One pass per sequence keeps the marginals and their grid
values (a :class:`Posterior`) and, after a step reveals ``D``, recomputes only what ``D`` can
change, with the chain-rule factors ``q(x_{j_m} | x_S, x_{j_1..j_{m-1}})`` of the new tokens (left
to right) on the way. The language comes as the arrays of its *path*, resolved once by
:func:`path_arrays`; every function below that differs between paths is written once per path
and joined by :func:`~numerics.messages.dispatch.by_path` (the paths are kinds of
:func:`~numerics.messages.dispatch.by_kind`, chosen at compile time inside numba):

* **first-order token chains** (2-grams, :class:`ChainArrays`): given its nearest revealed
  neighbours ``lb < j < rb``, ``q(x_j = v | x_S) ∝ P^{j-lb}[x_lb, v] P^{rb-j}[v, x_rb]``
  (``(mu P^j)[v]`` with no left neighbour, no right factor with no right neighbour), read from the
  precomputed powers ``P^d``, ``d <= L``. A reveal changes only the gap between its old neighbours.
* **n-grams of higher order and HMMs** (the segment path, on
  :func:`~numerics.languages.arrays.kernel_arrays`' :class:`~numerics.languages.arrays.NGramArrays`
  and :class:`~numerics.languages.arrays.HMMArrays`): forward messages ``alpha_j`` (evidence ``<= j``)
  and backward messages ``beta_j`` (evidence ``> j``). For an n-gram a run of ``n - 1`` revealed
  tokens ending at ``p`` fixes the window at ``p`` (a separator): a reveal ``d`` changes only the
  segment between the nearest separator to its left (ending at ``a``; ``alpha`` restarts from the
  stored point mass there) and the nearest separator run to its right (ending at ``e``; ``beta``
  restarts from ones, since the known window makes the right evidence a scalar), both under the
  *old* evidence. A general HMM has no separators: the whole sequence. The chain factor of a new
  ``j`` is the predictive forward message under the new evidence times the *old* ``beta_j``.
* **the interval language** (Example C.7, :class:`IntervalArrays`): intervals are independent and
  a masked token is uniform over the tokens whose pair bits agree with its revealed partners, so a
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

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics.languages.arrays import kernel_arrays
from numerics.languages.hmm import NGram
from numerics.languages.interval import IntervalLanguage
from numerics.messages.dispatch import by_kind, by_path
from numerics.messages.layouts import ChainArrays, IntervalArrays, PathArrays
from numerics.messages.powers import chain_powers
from numerics.messages.steps import PULL_TWO_PASS_WINDOWS, apply_evidence, propagate, pull, token_marginal
from numerics.messages.steps import normalize as _normalize

__all__ = [
    "CONFIDENCE_CODES",
    "GRID_SCALE",
    "ChainArrays",
    "IntervalArrays",
    "PathArrays",
    "Confidence",
    "Posterior",
    "path_arrays",
    "by_path",
    "new_posterior",
    "new_workspace",
    "initial",
    "refresh",
    "selected_rows",
    "uniform_all",
]

CONFIDENCE_CODES = {"maxprob": 0, "margin": 1, "neg-entropy": 2}
GRID_SCALE = 1e9  # confidences and entropies are compared as integers on a 1e-9 grid (module adaptive)
_MAXPROB, _MARGIN, _NEGENT = 0, 1, 2
_CHAIN_POOL = 1 << 21  # grid values the chain path caches per chunk of sequences (2 x 16 MiB of int64)


class Confidence(NamedTuple):
    """Which grid values a marginal row gets (:func:`set_confidence`).

    Attributes
    ----------
    kind : int
        :data:`CONFIDENCE_CODES`: ``max_v p(v)``, top-1 minus top-2, or ``-H(p)``.
    need_entropy : bool
        Compute ``H(p)`` (the entropy-sum rule, the ``neg-entropy`` confidence); else it is 0.
    """

    kind: int
    need_entropy: bool


class Posterior(NamedTuple):
    """The state of one sequence between steps: the exact marginals of its masked positions.

    Attributes
    ----------
    marginals : (L, V) float64
        ``q(x_j = v | x_S)`` of every masked ``j`` (normalized; uniform once outside ``supp q``).
    confidence : (L,) int64
        The :class:`Confidence` of ``marginals[j]`` on the grid.
    entropy : (L,) int64
        ``H(marginals[j])`` (nats) on the grid, kept only with ``need_entropy`` (else not read, and
        not kept current).
    revealed : (L,) bool
        ``S``: positions revealed at earlier steps.
    new : (L,) bool
        ``D``: positions of the current step (their tokens are set, the marginals not yet updated).
    """

    marginals: np.ndarray
    confidence: np.ndarray
    entropy: np.ndarray
    revealed: np.ndarray
    new: np.ndarray


class ChainWork(NamedTuple):
    """Scratch of the chain path: the grid values of gaps, cached by what they depend on.

    A masked ``j`` between its revealed neighbours ``lb < j < rb`` has the row
    ``q(x_j = v | x_S) ∝ P^d[a, v] P^{g-d}[v, c]`` with ``d = j - lb``, ``g = rb - lb``, ``a = x_lb``
    and ``c = x_rb`` (the virtual token ``V`` where there is no neighbour), so the grid values of a
    whole gap are a function of ``(a, c, g)``: computed once per chunk of sequences and copied
    wherever that gap recurs. With no right neighbour (``c = V``) the row does not depend on ``g``
    (``powers_t[., V] = 1``): one entry ``(a, V, L + 1)`` serves every such gap. A row itself is
    computed only for the positions a step reveals (:func:`selected_rows`).

    Attributes
    ----------
    row : (1, V) float64
        A row being computed.
    left, right : (L,) int64
        ``lb`` and ``rb`` of every masked position (``-1`` and ``L``: none).
    index : (V+1, V+1, L+2) int64
        Where the grid values of the gap ``(a, c, g)`` start in the pools; ``-1``: not computed yet.
    confidence, entropy : (C,) int64
        Pools of grid values: position ``lb + d`` of the gap at ``index[a, c, g] + d - 1``.
    fill : (1,) int64
        Entries of the pools in use; a gap that does not fit is computed in place, uncached.
    """

    row: np.ndarray
    left: np.ndarray
    right: np.ndarray
    index: np.ndarray
    confidence: np.ndarray
    entropy: np.ndarray
    fill: np.ndarray


class SegmentWork(NamedTuple):
    """Scratch of the segment path.

    Attributes
    ----------
    alpha, beta : (L, S) float64
        Forward and backward messages of every position (normalized).
    predictive : (S,) float64
        The forward message being advanced.
    """

    alpha: np.ndarray
    beta: np.ndarray
    predictive: np.ndarray


class IntervalWork(NamedTuple):
    """Scratch of the interval path: ``known`` (L,) bool (old evidence plus new tokens so far), ``row`` (1, V)."""

    known: np.ndarray
    row: np.ndarray


@jit(inline=True)
def _grid(value):
    """``floor(value * GRID_SCALE + 1/2)`` as int64: the value on the comparison grid."""
    return np.int64(np.floor(value * GRID_SCALE + 0.5))


@jit(inline=True)
def grid_values(rows, i, conf):
    """``(confidence, entropy)`` on the grid of the normalized row ``rows[i]`` (entropy 0 unless ``conf.need_entropy``)."""
    top1 = 0.0
    top2 = 0.0
    for v in range(rows.shape[1]):
        p = rows[i, v]
        if p > top1:
            top2 = top1
            top1 = p
        elif p > top2:
            top2 = p
    h = 0.0
    if conf.need_entropy:
        for v in range(rows.shape[1]):
            p = rows[i, v]
            if p > 0.0:
                h -= p * np.log(p)
    if conf.kind == _MAXPROB:
        c = top1
    elif conf.kind == _MARGIN:
        c = top1 - top2
    else:
        c = -h
    return _grid(c), _grid(h)


@jit(inline=True)
def set_confidence(post, conf, j):
    """The grid values (:func:`grid_values`) of ``post.marginals[j]`` into ``post.confidence[j]``, ``post.entropy[j]``."""
    c, h = grid_values(post.marginals, j, conf)
    post.confidence[j] = c
    post.entropy[j] = h


@jit
def uniform_all(post, conf):
    """Every masked marginal becomes uniform (the sequence left ``supp q``)."""
    marg, rev = post.marginals, post.revealed
    V = marg.shape[1]
    for j in range(rev.shape[0]):
        if not rev[j]:
            marg[j, :] = 1.0 / V
            set_confidence(post, conf, j)


@jit
def new_posterior(length, vocab_size):
    """An empty :class:`Posterior` for ``length`` positions and ``vocab_size`` tokens."""
    return Posterior(np.empty((length, vocab_size)), np.empty(length, dtype=np.int64),
                     np.empty(length, dtype=np.int64), np.zeros(length, dtype=np.bool_),
                     np.zeros(length, dtype=np.bool_))


# ----- first-order token chains (2-grams): marginals from powers of P --------------------------


@jit(inline=True)
def _normalize_row(out, row):
    """``out[row] /= sum(out[row])`` (by one reciprocal, as ``_normalize``) unless the sum is 0; returns the sum."""
    total = 0.0
    for v in range(out.shape[1]):
        total += out[row, v]
    if total > 0.0:
        inv = 1.0 / total
        for v in range(out.shape[1]):
            out[row, v] *= inv
    return total


@jit(inline=True)
def _chain_row(lang, a, c, d, d2, out, row):
    """``out[row] ∝ P^d[a, v] P^{d2}[v, c]`` normalized (a neighbour's token, or ``V`` for none, at distance
    ``d`` left and ``d2`` right); returns the total before normalizing.

    From :attr:`ChainArrays.powers` and :attr:`ChainArrays.powers_t`: ``a = V`` gives ``(mu P^{d-1})[v]``,
    ``c = V`` a right factor 1 (any ``d2``). No branch in the loop.
    """
    return _chain_row_of(lang.powers, lang.powers_t, a, c, d, d2, out, row)


@jit(inline=True)
def _chain_row_of(Pm, PmT, a, c, d, d2, out, row):
    """:func:`_chain_row` on the arrays ``lang.powers``, ``lang.powers_t`` (read once before a loop over
    rows: a tuple's field read in the loop is reference-counted at each read)."""
    V = out.shape[1]
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


@jit(inline=True)
def _token_at(x, p, V):
    """``x[p]``, or the virtual token ``V`` outside ``0..L-1`` (no neighbour)."""
    return x[p] if 0 <= p < x.shape[0] else V


@jit(inline=True)
def _gap_values(lang, conf, x, lb, rb, post, work):
    """Grid values and neighbours of the masked positions ``lb < j < rb`` (``ChainWork``'s cache)."""
    L = x.shape[0]
    V = work.row.shape[1]
    a, c = _token_at(x, lb, V), _token_at(x, rb, V)
    g = rb - lb
    key = L + 1 if c == V else g
    n = L if c == V else g - 1
    off = work.index[a, c, key]
    pool_c, pool_h, fill = work.confidence, work.entropy, work.fill
    if off < 0 and fill[0] + n <= pool_c.shape[0]:
        off = fill[0]
        fill[0] += n
        work.index[a, c, key] = off
        for d in range(1, n + 1):
            _chain_row(lang, a, c, d, g - d if c < V else 0, work.row, 0)
            pool_c[off + d - 1], pool_h[off + d - 1] = grid_values(work.row, 0, conf)
    conf_int, ent_int = post.confidence, post.entropy
    m = rb - lb - 1
    if off >= 0:  # slice copies (a loop of scalar copies costs twice as much at L = 512)
        conf_int[lb + 1:rb] = pool_c[off:off + m]
        if conf.need_entropy:  # else not read (Posterior.entropy)
            ent_int[lb + 1:rb] = pool_h[off:off + m]
    else:  # the pools are full: computed in place
        for j in range(lb + 1, rb):
            _chain_row(lang, a, c, j - lb, rb - j, work.row, 0)
            conf_int[j], ent_int[j] = grid_values(work.row, 0, conf)
    work.left[lb + 1:rb] = lb
    work.right[lb + 1:rb] = rb


@jit(inline=True)
def _chain_gap(lang, conf, x, sel, i0, r, post, work):
    """The gap of ``sel[i0]`` between its old revealed neighbours ``a < d < b``: chain factors of its new
    tokens (left to right) and the grid values of its masked positions. Returns ``(next i, log joint, ok)``."""
    row = work.row
    V = row.shape[1]
    d = sel[i0]
    a, b = work.left[d], work.right[d]
    i1 = i0
    while i1 < r and sel[i1] < b:
        i1 += 1
    logj = 0.0
    lb = a
    c = _token_at(x, b, V)
    for i in range(i0, i1):  # q(x_d | x_lb, x_b): new tokens to the left are known, those to the right not yet
        dd = sel[i]
        tot = _chain_row(lang, _token_at(x, lb, V), c, dd - lb, b - dd, row, 0)
        if tot == 0.0 or row[0, x[dd]] == 0.0:
            return i1, -np.inf, False
        logj += np.log(row[0, x[dd]])
        lb = dd
    lb = a
    for i in range(i0, i1):
        _gap_values(lang, conf, x, lb, sel[i], post, work)
        lb = sel[i]
    _gap_values(lang, conf, x, lb, b, post, work)
    return i1, logj, True


@jit
def _refresh_chain(lang, conf, x, sel, r, post, work, term):
    """After the step revealing ``sel[:r]`` (sorted; tokens set, ``post.new`` flagged, ``post.revealed``
    still the old ``S``): add the log chain-rule factors ``log q(x_D | x_S)`` to ``term`` (one
    partial sum per gap, segment or step) and update the marginals and grid values they change.
    Returns ``(term, ok)``; ``ok`` is False when the new tokens are jointly impossible (``term``
    then ``-inf``). :func:`_chain_gap` and :func:`_gap_values` are inlined into it, and it into its
    callers (``refresh`` is a :func:`by_path` with ``inline="always"``): one reveal per call made
    their calls, not their work, the larger cost."""
    i = 0
    ok = True
    while i < r and ok:
        i, logj, ok = _chain_gap(lang, conf, x, sel, i, r, post, work)
        term += logj
    return term, ok


# ----- n-grams of higher order and HMMs: forward/backward messages over segments ----------------


@jit(nrt=False)  # no reference counts: the row views and the call cost more than an n-gram product of S = 64
def _push(lang, alpha, p, out):
    """``out = alpha[p] P``, not normalized (:func:`~numerics.messages.steps.propagate`): the predictive message
    of position ``p + 1`` before its evidence."""
    propagate(lang, alpha[p], out)


@jit(nrt=False)
def _pull_into(lang, beta, p, v, tmp):
    """``beta[p] = P (e_v * beta[p + 1])``, normalized (:func:`~numerics.messages.steps.pull`): ``v`` the token
    revealed at ``p + 1``, or ``-1``; ``tmp`` an ``(S,)`` scratch vector (read by the dense kind only)."""
    pull(lang, beta[p + 1], beta[p], v, tmp)
    _normalize_row(beta, p)


@jit
def _scratch_dense(lang, beta):
    """The scratch of :func:`_pull`: a new ``(S,)`` vector where :func:`~numerics.messages.steps.pull` reads one (dense;
    n-gram from :data:`~numerics.messages.steps.PULL_TWO_PASS_WINDOWS` windows per token), else a row of ``beta``
    (never read), so a 3gram's conditioning allocates nothing per position."""
    return np.empty(beta.shape[1])


@jit
def _scratch_ngram(lang, beta):
    if beta.shape[1] // lang.conditional.shape[1] >= PULL_TWO_PASS_WINDOWS:
        return np.empty(beta.shape[1])
    return beta[0]


_scratch = by_kind(_scratch_dense, _scratch_ngram)


@jit
def _pull(lang, beta, p, v):
    """:func:`_pull_into` with its scratch from :func:`_scratch` (the decoder kernels' conditioning from scratch)."""
    _pull_into(lang, beta, p, v, _scratch(lang, beta))


@jit(nrt=False)
def _marginal(lang, work, j, marg):
    """``marg[j, v] ∝ sum_s alpha[j, s] beta[j, s] P(v | s)``, normalized (:func:`~numerics.messages.steps.token_marginal`);
    returns the total before normalizing."""
    token_marginal(lang, work.alpha[j], work.beta[j], marg[j])
    return _normalize_row(marg, j)


@jit
def _factor_dense(lang, pred, beta, j, v):
    """``(sum_s pred(s) beta[j, s] E[s, v], sum_s pred(s) beta[j, s])``: the chain factor's numerator and denominator."""
    ET = lang.emission_t
    den = 0.0
    num = 0.0
    for s in range(pred.shape[0]):
        w = pred[s] * beta[j, s]
        den += w
        num += w * ET[v, s]
    return num, den


@jit
def _factor_ngram(lang, pred, beta, j, v):
    V = lang.conditional.shape[1]
    den = 0.0
    num = 0.0
    for c in range(pred.shape[0] // V):
        for u in range(V):
            w = pred[c * V + u] * beta[j, c * V + u]
            den += w
            if u == v:
                num += w
    return num, den


_factor = by_kind(_factor_dense, _factor_ngram)


@jit
def _bounds_dense(lang, d, rev):
    """``(a, e)``: the segment ``a < j <= e`` a reveal at ``d`` changes (old evidence ``rev``).

    ``a`` ends the nearest separator to the left of ``d`` (``-1``: none), ``e`` the nearest separator
    run to its right (``L - 1``: none). A dense HMM has no separators: the whole sequence.
    """
    return -1, rev.shape[0] - 1


@jit
def _sep_end(order, p, rev):
    """The window at ``p`` is fixed by revealed tokens ``p-n+2..p`` (old evidence ``rev``)."""
    if order < 2 or p < order - 2:
        return False
    for d in range(order - 1):
        if not rev[p - d]:
            return False
    return True


@jit
def _bounds_ngram(lang, d, rev):
    order = lang.order
    L = rev.shape[0]
    a = -1
    e = L - 1
    if order >= 2:
        for p in range(d - 1, -1, -1):
            if _sep_end(order, p, rev):
                a = p
                break
        for q in range(d + 1, L - order + 2):
            if _sep_end(order, q + order - 2, rev):
                e = q + order - 2
                break
    return a, e


_bounds = by_kind(_bounds_dense, _bounds_ngram)


@jit
def _segment(lang, conf, x, d, post, work):
    """Recompute the segment around the new reveal ``d``; returns ``(its end e, log joint factor, ok)``."""
    rev, newf = post.revealed, post.new
    alpha, beta, pred = work.alpha, work.beta, work.predictive
    initial = lang.initial
    S = alpha.shape[1]
    a, e = _bounds(lang, d, rev)
    logj = 0.0
    for j in range(a + 1, e + 1):
        if j == 0:
            pred[:] = initial
        else:
            _push(lang, alpha, j - 1, pred)
        if newf[j]:  # chain-rule factor q(x_j | old evidence, new tokens left of j)
            num, den = _factor(lang, pred, beta, j, x[j])
            if not num > 0.0:
                return e, -np.inf, False
            logj += np.log(num / den)
        if rev[j] or newf[j]:
            apply_evidence(lang, pred, x[j])
        if _normalize(pred) == 0.0:
            return e, -np.inf, False
        alpha[j] = pred
    beta[e, :] = 1.0 / S
    for j in range(e - 1, a, -1):  # (pred is free: scratch of the backward products)
        v = x[j + 1] if (rev[j + 1] or newf[j + 1]) else -1
        _pull_into(lang, beta, j, v, pred)
    for j in range(a + 1, e + 1):
        if not (rev[j] or newf[j]):
            _marginal(lang, work, j, post.marginals)
            set_confidence(post, conf, j)
    return e, logj, True


@jit
def _refresh_segment(lang, conf, x, sel, r, post, work, term):
    covered = -1
    ok = True
    for i in range(r):
        if sel[i] <= covered:
            continue
        covered, logj, ok = _segment(lang, conf, x, sel[i], post, work)
        term += logj
        if not ok:
            break
    return term, ok


# ----- the interval language ---------------------------------------------------------------------


@jit
def _interval_row(l, x, j, known, out, row):
    """``out[row]`` = law of ``x_j`` given the ``known`` partners in its interval (``l`` positions; uniform
    on the consistent tokens); returns their number (0: the known tokens contradict ``x_j``'s constraints)."""
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


@jit
def _refresh_interval(lang, conf, x, sel, r, post, work, term):
    l = lang.interval_length
    known, m = work.known, work.row
    L = x.shape[0]
    known[:] = post.revealed
    logj = 0.0
    for i in range(r):  # x_j given the old evidence and the new tokens left of j (other intervals: independent)
        j = sel[i]
        count = _interval_row(l, x, j, known, m, 0)
        known[j] = True
        if count == 0 or m[0, x[j]] == 0.0:
            return term + -np.inf, False
        logj += np.log(m[0, x[j]])
    last = -1
    for i in range(r):
        base = (sel[i] // l) * l
        if base == last:
            continue
        last = base
        for j in range(base, min(base + l, L)):
            if not known[j]:
                _interval_row(l, x, j, known, post.marginals, j)
                set_confidence(post, conf, j)
    return term + logj, True


refresh = by_path(_refresh_chain, _refresh_interval, _refresh_segment, inline="always")


@jit
def _selected_rows_chain(lang, x, sel, r, post, work):
    """Make ``post.marginals[j]`` the current row of every position ``j`` in ``sel[:r]`` (before the step's
    reveals). The chain path computes these rows now (it keeps only grid values of the others);
    the other paths keep every row current: nothing to do."""
    V = work.row.shape[1]
    left, right, Pm, PmT, marg = work.left, work.right, lang.powers, lang.powers_t, post.marginals
    for i in range(r):
        j = sel[i]
        lb, rb = left[j], right[j]
        _chain_row_of(Pm, PmT, _token_at(x, lb, V), _token_at(x, rb, V), j - lb, rb - j, marg, j)


@jit
def _selected_rows_other(lang, x, sel, r, post, work):
    pass


selected_rows = by_path(_selected_rows_chain, _selected_rows_other, _selected_rows_other, inline="always")


# ----- the all-masked sequence, scratch, and the arrays of a language --------------------------------


@jit
def _initial_chain(lang, conf, x, post, work):
    """Marginals (the chain path: grid values only) and grid values of the all-masked sequence."""
    _gap_values(lang, conf, x, -1, x.shape[0], post, work)


@jit
def _initial_interval(lang, conf, x, post, work):
    for j in range(x.shape[0]):
        _interval_row(lang.interval_length, x, j, post.revealed, post.marginals, j)
        set_confidence(post, conf, j)


@jit
def _initial_segment(lang, conf, x, post, work):
    alpha, beta, pred = work.alpha, work.beta, work.predictive
    L, S = alpha.shape
    alpha[0] = lang.initial
    _normalize_row(alpha, 0)
    for j in range(1, L):
        _push(lang, alpha, j - 1, pred)
        alpha[j] = pred
        _normalize_row(alpha, j)
    beta[L - 1, :] = 1.0 / S
    for j in range(L - 2, -1, -1):
        _pull_into(lang, beta, j, -1, pred)
    for j in range(L):
        _marginal(lang, work, j, post.marginals)
        set_confidence(post, conf, j)


initial = by_path(_initial_chain, _initial_interval, _initial_segment)


@jit
def _new_workspace_chain(lang, length, vocab_size):
    """The path's scratch (:class:`ChainWork`, :class:`IntervalWork` or :class:`SegmentWork`) for one chunk of sequences."""
    V1 = vocab_size + 1
    entries = V1 * length + V1 * vocab_size * (length * (length + 1) // 2)  # every gap (a, c, g) there can be
    C = min(entries, _CHAIN_POOL)
    return ChainWork(np.empty((1, vocab_size)), np.empty(length, dtype=np.int64), np.empty(length, dtype=np.int64),
                     np.full((V1, V1, length + 2), -1, dtype=np.int64), np.empty(C, dtype=np.int64),
                     np.empty(C, dtype=np.int64), np.zeros(1, dtype=np.int64))


@jit
def _new_workspace_interval(lang, length, vocab_size):
    return IntervalWork(np.zeros(length, dtype=np.bool_), np.empty((1, vocab_size)))


@jit
def _new_workspace_segment(lang, length, vocab_size):
    S = lang.initial.shape[0]
    return SegmentWork(np.empty((length, S)), np.empty((length, S)), np.empty(S))


new_workspace = by_path(_new_workspace_chain, _new_workspace_interval, _new_workspace_segment)


def path_arrays(language, length: int, path: str = "auto") -> PathArrays:
    """The arrays of ``language``'s update path (module docstring), resolved once.

    ``path``: ``"auto"`` (:class:`ChainArrays` for a 2-gram, :func:`~numerics.languages.arrays.kernel_arrays`
    for other n-grams and HMMs, :class:`IntervalArrays` for :class:`IntervalLanguage`) or
    ``"segment"`` (force the message path where there is one; tests).
    """
    if path not in ("auto", "segment"):
        raise ValueError(f"path must be 'auto' or 'segment', got {path!r}")
    if isinstance(language, IntervalLanguage):
        return IntervalArrays(int(language.l))
    if isinstance(language, NGram) and language.order == 2 and path == "auto":
        return chain_powers(language, length)
    try:
        return kernel_arrays(language, layout="dense")  # the adaptive kernels have no sparse n-gram version
    except TypeError:
        raise TypeError("the fast adaptive path needs an NGram, HMM or IntervalLanguage, "
                        f"got {type(language).__name__}") from None
