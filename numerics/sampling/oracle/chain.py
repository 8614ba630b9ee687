"""The oracle factorized sampler of a sparse first-order chain (a bigram) by the closed-form posterior.

For a first-order Markov chain ``q(x) = initial[x_0] prod_p P[x_p, x_{p+1}]`` the oracle posterior
of a masked position ``j`` given the revealed positions is

    ``q(x_j = u | x_revealed)  ∝  f(u) g(u)``,
    ``f = e_{x_a} P^(j-a)``   (``a`` the nearest revealed position left of ``j``; ``f = initial P^j`` when none),
    ``g = P^(b-j) e_{x_b}``   (``b`` the nearest revealed position right of ``j``; ``g = 1`` when none),

the forward and backward messages of ``docs/methods/inference.md`` written as rows and columns of
matrix powers (the evidence between ``a`` and ``b`` is nothing but the masked run). The factorized
sampler draws every position of step ``i`` from this posterior under the evidence of steps ``< i``
(``docs/methods/sampling.md``), so one step needs, per gap between revealed positions, one row of
``P^d`` per new position from the left end and one column from the right end.

Three things make that cheap (:func:`chain_tables`, computed once per language and length):

* **mixing cut-off** ``D``: the dense powers ``P^d`` are computed until every entry is within a
  relative :data:`MIX_RTOL` of the row ``pi = initial P^D`` (``|P^D[v, u] - pi[u]| <= MIX_RTOL pi[u]``
  for every ``v, u``; ``pi[u] = 0`` demands an exact 0). Every row of ``P^(D+k)`` is a convex
  combination of rows of ``P^D``, so the bound then holds for every ``d >= D`` (and for
  ``initial P^d``): beyond ``D`` a row is ``pi`` and a column is the constant ``pi[x_b]`` (a
  factor that the normalization removes) to ``MIX_RTOL``, far below the ``1e-12`` at which the
  posterior is checked. When no ``d <= min(L - 1, MAX_CUT)`` passes, ``D = L`` for ``L <= MAX_CUT``
  (every distance is tabled or stepped: no cut-off at all) and otherwise there is no plan (the
  message-store sampler of :mod:`numerics.sampling.oracle.driver` runs).
* **memo of the frequent tokens**: ``e_v P^d`` and ``P^d e_v`` for ``d < D`` and the tokens ``v``
  of largest ``pi`` (Zipf: a few tokens hold most of the mass), within :data:`MEMO_BYTES`;
  read-only, shared by the threads;
* **gap-local stepping** for the other tokens: a running vector from the gap's end across only
  the distances its new positions need (sparse products, ``O(nnz)`` each).

A sampled step whose new tokens are jointly impossible leaves the sequence outside ``supp q`` and
from the next step on it draws uniformly, as in the message-store sampler: for a chain the step's
tokens are jointly possible iff every two consecutive new positions ``j < j'`` of one gap have
``P^(j'-j)[x_j, x_j'] > 0`` (each token was drawn with positive ``f g``, so the gap's ends agree).

The draws are the message-store sampler's (same ``reveal_steps`` and uniforms, the same float64
inverse CDF of a posterior that agrees to round-off): the same samples but for a uniform within
~``1e-13`` of a CDF boundary; the tests compare the two sample by sample.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics._threads import run_chunks
from numerics.draws import inverse_cdf
from numerics.languages.arrays import SparseNGramArrays, kernel_arrays
from numerics.languages.hmm import Language, NGram
from numerics.messages.powers import POWERS_CACHE
from numerics.messages.steps import propagate, pull

__all__ = ["MAX_CUT", "MEMO_BYTES", "MIX_RTOL", "SEARCH_BYTES", "ChainTables", "chain_posterior", "chain_reveal_sample", "chain_tables",
           "mixing_cut"]

MIX_RTOL = 1e-13  # relative distance of P^D to its limit: the round-off that the powers themselves carry (on the fitted
# word-level chain, V = 4096, the computed initial P^d drifts ~1e-13 from the exactly stationary initial by d ~ 100
# and the rows settle at ~2e-14 of it); the posterior is checked at 1e-12
MAX_CUT = 128  # the powers searched for the cut-off (each a sparse-times-dense V x V product)
MEMO_BYTES = 512 << 20  # the memo of frequent tokens' rows and columns of P^d, d < D
SEARCH_BYTES = 1 << 30  # the two dense V x V powers of the cut-off search (V <= 8192); larger: no plan


class ChainTables(NamedTuple):
    """The precomputed powers of a first-order chain for :func:`chain_reveal_sample` (module docstring).

    Attributes
    ----------
    cut : int
        ``D``: rows of ``P^d`` for ``d >= D`` are ``limit`` and columns are constant, to :data:`MIX_RTOL`.
    limit : (V,) float64
        ``pi = initial P^D``.
    initial_rows : (D, V) float64
        ``initial P^d``, the law of position ``d`` (no revealed position to its left).
    row_slot, col_slot : (V,) int64
        Index of token ``v`` in ``rows`` / ``cols``, or ``-1`` (not memoized).
    rows : (D, K, V) float64
        ``rows[d, row_slot[v]] = e_v P^d``.
    cols : (D, K, V) float64
        ``cols[d, col_slot[v]] = P^d e_v`` (a column, stored as a row).
    """

    cut: int
    limit: np.ndarray
    initial_rows: np.ndarray
    row_slot: np.ndarray
    rows: np.ndarray
    col_slot: np.ndarray
    cols: np.ndarray


class ChainScratch(NamedTuple):
    """The vectors of one thread: ``buf`` ``(L, V)`` (the posteriors of one step's new positions),
    ``cur``, ``nxt`` ``(V,)`` (a running row or column), ``uniform_cdf`` ``(V,)`` (the running sums of
    ``1 / V``, left to right: the cumulative sums :func:`~numerics.draws.inverse_cdf` forms)."""

    buf: np.ndarray
    cur: np.ndarray
    nxt: np.ndarray
    uniform_cdf: np.ndarray


class Gap(NamedTuple):
    """The new positions ``order_idx[lo..hi-1]`` of one step that lie between the old evidence's
    revealed positions ``a`` (``-1``: none) and ``b`` (``L``: none); their posteriors go to
    ``buf[t - base]`` (``base``: the step's first index in ``order_idx``)."""

    lo: int
    hi: int
    a: int
    b: int
    base: int


@jit
def _uniform_draw(cdf, u):
    """:func:`~numerics.draws.inverse_cdf` of the uniform weights at ``u`` in ``O(log V)``: the number of
    running sums ``<= u * total`` (they are non-decreasing), the same float64 sums in the same order."""
    K = cdf.shape[0]
    idx = np.searchsorted(cdf, u * cdf[K - 1], side="right")
    return min(idx, K - 1)


# ----- the tables --------------------------------------------------------------------------------


def _first_order_sparse(language: Language, layout: str = "auto") -> SparseNGramArrays | None:
    if not isinstance(language, NGram) or language.order != 2 or layout == "dense":
        return None
    lang = kernel_arrays(language, layout)
    return lang if isinstance(lang, SparseNGramArrays) else None


def mixing_cut(language: NGram, max_cut: int, rtol: float = MIX_RTOL) -> tuple[int, np.ndarray] | None:
    """``(D, pi)``: the first ``D <= max_cut`` with ``|P^D[v, u] - pi[u]| <= rtol pi[u]`` for all ``v, u``
    (``pi = initial P^D``), or ``None``. Dense ``V x V`` powers (module docstring)."""
    import scipy.sparse

    PT = scipy.sparse.csr_array(language.conditional.T)
    indptr, indices, data = PT.indptr.astype(np.int64), PT.indices.astype(np.int64), PT.data.astype(np.float64)
    MT = np.ascontiguousarray(language.conditional.T)  # (P^d)^T: row v of P^d is column v of MT
    nxt = np.empty_like(MT)
    for d in range(1, max_cut + 1):
        pi = MT @ language.initial  # initial P^d
        if _within(MT, pi, rtol):
            return d, pi
        if d < max_cut:
            run_chunks(_csr_times_dense, MT.shape[0], (indptr, indices, data, MT, nxt))  # (P^(d+1))^T = P^T (P^d)^T
            MT, nxt = nxt, MT
    return None


@jit(nogil=True)
def _csr_times_dense(indptr, indices, data, M, out, lo, hi):
    """Rows ``lo..hi-1`` of ``out = A M`` (``A`` in CSR, ``M`` dense, C order): row axpys."""
    for r in range(lo, hi):
        o = out[r]
        o[:] = 0.0
        for k in range(indptr[r], indptr[r + 1]):
            w = data[k]
            row = M[indices[k]]
            for c in range(o.shape[0]):
                o[c] += w * row[c]


def _within(MT: np.ndarray, pi: np.ndarray, rtol: float, block: int = 256) -> bool:
    """``|MT[u, v] - pi[u]| <= rtol pi[u]`` everywhere, ``block`` rows at a time (bounded temporaries)."""
    for lo in range(0, MT.shape[0], block):
        p = pi[lo:lo + block, None]
        if not np.all(np.abs(MT[lo:lo + block] - p) <= rtol * p):
            return False
    return True


def chain_tables(language: Language, length: int, memo_bytes: int = MEMO_BYTES, layout: str = "auto",
                 ) -> ChainTables | None:
    """The :class:`ChainTables` of ``language`` for sequences of ``length``, or ``None`` when the
    closed form does not apply: not an order-2 n-gram in the sparse layout (``layout`` as in
    :func:`~numerics.languages.arrays.kernel_arrays`; ``"sparse"`` forces it on a small chain),
    or no cut-off while ``length > MAX_CUT`` (module docstring), or ``V`` so large that the two dense
    powers of the search exceed :data:`SEARCH_BYTES`. Kept in :data:`~numerics.messages.powers.POWERS_CACHE`."""
    key = (length, memo_bytes, layout)
    hit = POWERS_CACHE.get(language, "chain-tables", lambda stored: stored[0] == key)
    if hit is not None:
        return hit[1]
    if _first_order_sparse(language, layout) is None or 16 * language.vocab_size**2 > SEARCH_BYTES:
        return None
    import scipy.sparse

    V = language.vocab_size
    found = mixing_cut(language, min(length - 1, MAX_CUT)) if length > 1 else None
    if found is None and length > MAX_CUT:
        return None
    D, limit = found if found is not None else (length, np.zeros(V))
    P = scipy.sparse.csr_array(language.conditional)
    PT = P.T.tocsr()
    K = int(min(V, memo_bytes // (2 * 8 * V * D)))
    top = np.argsort(-language.initial, kind="stable")[:K]
    slot = np.full(V, -1, dtype=np.int64)
    slot[top] = np.arange(K)
    rows, cols = np.empty((D, K, V)), np.empty((D, K, V))
    initial_rows = np.empty((D, V))
    r = np.zeros((V, K))
    r[top, np.arange(K)] = 1.0  # columns of the identity: r = rows^T, c = columns
    c = r.copy()
    ini = language.initial.astype(np.float64)
    for d in range(D):
        rows[d] = r.T
        cols[d] = c.T
        initial_rows[d] = ini
        if d + 1 < D:
            r = PT @ r  # (P^T)^(d+1) E: the rows e_v P^(d+1), transposed
            c = P @ c  # P^(d+1) E: the columns
            ini = PT @ ini
    tables = ChainTables(int(D), np.ascontiguousarray(limit), initial_rows, slot, rows, slot.copy(), cols)
    return POWERS_CACHE.put(language, "chain-tables", (key, tables))[1]


# ----- the kernel --------------------------------------------------------------------------------


@jit
def _point(vec, v):
    vec[:] = 0.0
    vec[v] = 1.0


@jit
def _gap_backward(lang, tab, x, order_idx, gap, work):
    """``work.buf[t - base] = P^(b - j_t) e_{x_b}`` (ones beyond the cut or with no ``b``), ``t = hi-1..lo``."""
    D = tab.cut
    buf, cur, nxt = work.buf, work.cur, work.nxt
    r0, g, b, base, L = gap.lo, gap.hi, gap.b, gap.base, x.shape[0]
    w = x[b] if b < L else -1
    slot = tab.col_slot[w] if w >= 0 else -1
    dist = 0
    if w >= 0 and slot < 0:
        _point(cur, w)
    for t in range(g - 1, r0 - 1, -1):
        e = b - order_idx[t]
        row = buf[t - base]
        if w < 0 or e >= D:
            row[:] = 1.0
        elif slot >= 0:
            row[:] = tab.cols[e, slot]
        else:
            while dist < e:
                pull(lang, cur, nxt, -1, nxt)  # out = P cur (the sparse layout takes no scratch)
                cur[:] = nxt
                dist += 1
            row[:] = cur


@jit
def _gap_forward(lang, tab, x, order_idx, gap, work):
    """``work.buf[t - base] *= e_{x_a} P^(j_t - a)`` (``initial P^(j_t)`` with no ``a``; ``pi`` beyond the cut)."""
    D = tab.cut
    buf, cur, nxt = work.buf, work.cur, work.nxt
    r0, g, a, base = gap.lo, gap.hi, gap.a, gap.base
    v = x[a] if a >= 0 else -1
    slot = tab.row_slot[v] if v >= 0 else -1
    dist = 0
    if v >= 0 and slot < 0:
        _point(cur, v)
    for t in range(r0, g):
        j = order_idx[t]
        row = buf[t - base]
        if v < 0:
            f = tab.initial_rows[j] if j < D else tab.limit
            row *= f
            continue
        d = j - a
        if d >= D:
            row *= tab.limit
        elif slot >= 0:
            row *= tab.rows[d, slot]
        else:
            while dist < d:
                propagate(lang, cur, nxt)
                cur[:] = nxt
                dist += 1
            row *= cur


@jit
def _power_positive(lang, tab, y, z, d, work):
    """``P^d[y, z] > 0`` (``d >= 1``): the limit beyond the cut, a memo or one running row."""
    D = tab.cut
    if d >= D:
        return tab.limit[z] > 0.0
    if tab.row_slot[y] >= 0:
        return tab.rows[d, tab.row_slot[y], z] > 0.0
    if tab.col_slot[z] >= 0:
        return tab.cols[d, tab.col_slot[z], y] > 0.0
    cur, nxt = work.cur, work.nxt
    _point(cur, y)
    for _ in range(d):
        propagate(lang, cur, nxt)
        cur[:] = nxt
    return cur[z] > 0.0


@jit
def chain_sequence(lang, tab, steps, order_idx, x, U, work):  # noqa: PLR0917 -- a numba kernel: its arrays and scratch
    """Sample one sequence in place (``x``) for its reveal ``steps``; ``order_idx`` lists the positions
    by (step, position). Module docstring for the posterior, the cut-off and the dead convention."""
    L = steps.shape[0]
    dead = False
    ptr = 0
    while ptr < L:
        i = steps[order_idx[ptr]]
        end = ptr
        while end < L and steps[order_idx[end]] == i:
            end += 1
        if dead:  # uniform draws (the samplers' convention for an undefined posterior)
            for r in range(ptr, end):
                x[order_idx[r]] = _uniform_draw(work.uniform_cdf, U[order_idx[r]])
            ptr = end
            continue
        step_dead = False
        r0 = ptr
        while r0 < end:  # one gap (a, b) of the old evidence at a time
            j = order_idx[r0]
            a = j - 1
            while a >= 0 and steps[a] >= i:
                a -= 1
            b = j + 1
            while b < L and steps[b] >= i:
                b += 1
            g = r0
            while g < end and order_idx[g] < b:
                g += 1
            gap = Gap(r0, g, a, b, ptr)
            _gap_backward(lang, tab, x, order_idx, gap, work)
            _gap_forward(lang, tab, x, order_idx, gap, work)
            for t in range(r0, g):
                jt = order_idx[t]
                x[jt] = inverse_cdf(work.buf[t - ptr], U[jt])
            for t in range(r0, g - 1):
                if not step_dead:
                    j1, j2 = order_idx[t], order_idx[t + 1]
                    if not _power_positive(lang, tab, x[j1], x[j2], j2 - j1, work):
                        step_dead = True
            r0 = g
        dead = step_dead
        ptr = end


@jit(nogil=True)
def _chain_chunk(lang, tab, reveal_steps, x, U, lo, hi):
    """Sequences ``lo..hi-1``; releases the GIL so threads run chunks in parallel."""
    L = reveal_steps.shape[1]
    V = tab.limit.shape[0]
    cdf = np.empty(V)
    c = 0.0
    for v in range(V):
        c += 1.0 / V
        cdf[v] = c
    work = ChainScratch(np.empty((L, V)), np.empty(V), np.empty(V), cdf)
    for b in range(lo, hi):
        order_idx = np.argsort(reveal_steps[b] * L + np.arange(L))
        chain_sequence(lang, tab, reveal_steps[b], order_idx, x[b], U[b], work)


def chain_reveal_sample(language: Language, reveal_steps: np.ndarray, uniforms: np.ndarray,
                        memo_bytes: int = MEMO_BYTES, layout: str = "auto") -> np.ndarray | None:
    """Tokens of the oracle factorized sampler of a sparse first-order chain, or ``None`` where the
    closed form does not apply (:func:`chain_tables`); arguments as
    :func:`numerics.sampling.oracle.driver.reveal_sample` (validated there)."""
    tables = chain_tables(language, reveal_steps.shape[1], memo_bytes, layout)
    if tables is None:
        return None
    lang = kernel_arrays(language, "sparse")
    steps = np.ascontiguousarray(reveal_steps, dtype=np.int64)
    U = np.ascontiguousarray(uniforms, dtype=np.float64)
    x = np.zeros(steps.shape, dtype=np.int64)
    run_chunks(_chain_chunk, steps.shape[0], (lang, tables, steps, x, U))
    return x


def chain_posterior(language: NGram, tables: ChainTables, tokens: np.ndarray, revealed: np.ndarray) -> np.ndarray:
    """``(L, V)``: the posterior ``q(x_j | x_revealed)`` of every position of one sequence by the closed
    form with the tables' cut-off (module docstring), normalized; rows of revealed positions too
    (their posterior given the others). For tests against the forward-backward posterior."""
    lang = kernel_arrays(language, "sparse")
    L = tokens.shape[0]
    V = language.vocab_size
    steps = np.where(revealed, 1, 2).astype(np.int64)
    out = np.empty((L, V))
    work = ChainScratch(np.empty((1, V)), np.empty(V), np.empty(V), np.cumsum(np.full(V, 1.0 / V)))
    x = np.ascontiguousarray(tokens, dtype=np.int64)
    for j in range(L):
        s = steps.copy()
        s[j] = 2
        idx = np.array([j], dtype=np.int64)
        a = max((p for p in range(j) if s[p] == 1), default=-1)
        b = min((p for p in range(j + 1, L) if s[p] == 1), default=L)
        _gap_backward(lang, tables, x, idx, Gap(0, 1, a, b, 0), work)
        _gap_forward(lang, tables, x, idx, Gap(0, 1, a, b, 0), work)
        out[j] = work.buf[0] / work.buf[0].sum()
    return out
