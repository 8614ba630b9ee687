"""Single-position message steps, dense and n-gram (numba): the steps every kernel family takes.

The oracle's posterior at a masked position ``p`` given the observed positions is
``q(x_p = v | obs) ∝ sum_s alpha_p(s) beta_p(s) P(v | s)`` with the forward message ``alpha_p``
(evidence at ``<= p``) and the backward message ``beta_p`` (evidence at ``> p``); see
``docs/methods/inference.md``. This module holds one step of each recursion and what is read off
the two messages:

* :func:`propagate` ``alpha P`` and :func:`pull` ``P (e_v * beta)``: the transition products, without
  normalization (what the adaptive and decoder kernels and the closed-form chain sampler read too);
* :func:`forward_step` ``alpha_{p-1} -> alpha_p``, :func:`backward_step` ``beta_{p+1} -> beta_p``;
* :func:`token_marginal` ``m[v] = sum_s alpha(s) beta(s) P(v | s)`` and :func:`observe`
  (multiply a message by the evidence ``x_p = v``);
* for n-grams, one window's row of the successor layout (:func:`entry`, :func:`push_row`,
  :func:`dot_row`; the batched forward-backward of :mod:`numerics.inference._ngram` reads them too),
  :func:`window_known` (the last ``n-1`` positions are observed, so the window is
  known: a separator, Definition B.4) and :func:`restart_at_separator`.

Which positions are observed is an :class:`Evidence`: position ``p`` is observed iff it was
revealed at a step ``< threshold`` and is not the ``hidden`` position. Every function takes the
language's arrays first (:func:`numerics.languages.arrays.kernel_arrays`) and has a dense and an
n-gram version joined by :func:`~numerics.messages.dispatch.by_kind`, so callers never branch on
the kind. Messages are normalized to sum 1 after every step; a zero vector stays zero (never
clamped). Callable from numba and (slowly) from Python.

The sparse n-gram steps (:class:`~numerics.languages.arrays.SparseNGramArrays`) add the same
terms in the same order as the n-gram steps, skipping the zero conditionals: a step costs the
non-zeros of the rows (or the column) it visits plus ``O(S)``.

The dense steps are one product with ``A`` (forward) or with ``A^T`` stored C order (backward),
both in axpy form over contiguous rows, skipping zero entries of the vector
(:func:`_vecmat_dense`). They and the other dense versions are declared ``_nrt=False``: they
allocate nothing, and :func:`~numerics.messages.dispatch.by_kind` compiles them without numba's
reference counts, which otherwise take two atomic operations per array read on every call. So are
the n-gram versions here and in :mod:`~numerics.messages.store` /
:mod:`~numerics.messages.jumps` (they took 15% of a 4gram sampling pass in reference counts).
The dense versions are also compiled with FMA (``jit(fma=True)``, :data:`numerics._jit.FMA`: a product and the sum it
enters may be one FMA, rounded once instead of twice; no reassociation), which moves the scores by
round-off only (the same tokens, scores within 1e-12 of the previous kernels) and the hmm passes by a
few percent.

The n-gram steps never form the dense ``S x S`` product: a forward step pushes only from windows
of non-zero ``alpha`` along their ``V`` successors, a backward step visits ``V`` successors per
window (only the windows consistent with the observed run ending at its position when there is
one): ``O(V^n)`` per position. Sums over a vector that is zero outside the windows ending in one
token read only those (:func:`normalize_class`: the same floats).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import uint64

from numerics._jit import jit, trailing_zeros
from numerics.languages.arrays import sparse_entry
from numerics.messages.dispatch import by_kind

__all__ = [
    "Evidence",
    "propagate",
    "pull",
    "PULL_TWO_PASS_WINDOWS",
    "entry",
    "vocab",
    "push_row",
    "dot_row",
    "observed",
    "normalize",
    "normalize_class",
    "copy_into",
    "forward_step",
    "backward_step",
    "token_marginal",
    "apply_evidence",
    "observe",
    "window_known",
    "window_span",
    "consistent_windows",
    "restart_at_separator",
]


class Evidence(NamedTuple):
    """The observed positions of one sequence under a reveal threshold.

    Attributes
    ----------
    reveal_steps : (L,) int64
        Reveal step of every position.
    tokens : (L,) int64
        Token of every position (read only where observed).
    threshold : int
        Position ``p`` is observed iff ``reveal_steps[p] < threshold`` (revealed before step ``threshold``) ...
    hidden : int
        ... and ``p != hidden`` (``-1``: none hidden).
    """

    reveal_steps: np.ndarray
    tokens: np.ndarray
    threshold: int
    hidden: int


@jit
def observed(ev, p):
    """True when position ``p`` is observed under ``ev`` (``p < 0`` never is)."""
    if p < 0 or p == ev.hidden:  # (no short-circuit `and` around the array read: numba would
        return False  # refcount the array on every call, which costs more than the test itself)
    return ev.reveal_steps[p] < ev.threshold


@jit
def normalize(vec):
    """Divide ``vec`` by its sum in place (a zero vector stays zero); returns the sum."""
    total = 0.0
    for s in range(vec.shape[0]):
        total += vec[s]
    if total > 0.0:
        inv = 1.0 / total
        for s in range(vec.shape[0]):
            vec[s] *= inv
    return total


@jit
def normalize_class(vec, off, stride, count):
    """:func:`normalize` of a vector that is zero outside the entries ``off + k stride``, ``k < count``: the same
    sum (the skipped terms are exact zeros) and the same result, reading only those entries; returns the sum."""
    total = 0.0
    for k in range(count):
        total += vec[off + k * stride]
    if total > 0.0:
        inv = 1.0 / total
        for k in range(count):
            vec[off + k * stride] *= inv
    return total


@jit
def copy_into(src, dst):
    """``dst[:] = src`` for ``(S,)`` vectors by a plain loop (numba's slice assignment costs about 4x more at ``S = 512``)."""
    for s in range(src.shape[0]):
        dst[s] = src[s]


@jit(inline=True)
def _normalize_dense(vec):
    """:func:`normalize` with the sum in four partial sums (four independent additions per cycle, not one
    waiting on the last); the dense steps and jumps' version. Returns the sum."""
    S = vec.shape[0]
    t0 = 0.0
    t1 = 0.0
    t2 = 0.0
    t3 = 0.0
    s = 0
    while s + 4 <= S:
        t0 += vec[s]
        t1 += vec[s + 1]
        t2 += vec[s + 2]
        t3 += vec[s + 3]
        s += 4
    while s < S:
        t0 += vec[s]
        s += 1
    total = (t0 + t1) + (t2 + t3)
    if total > 0.0:
        inv = 1.0 / total
        for s in range(S):
            vec[s] *= inv
    return total


@jit(inline=True)
def _evidence_normalize_dense(vec, ET, v):
    """``vec *= ET[v]`` (the evidence of token ``v``) and :func:`_normalize_dense`; returns the sum.

    (The row view ``ET[v]`` takes no reference count in the dense kernels, compiled without them.)
    """
    e = ET[v]
    for s in range(vec.shape[0]):
        vec[s] *= e[s]
    return _normalize_dense(vec)


@jit(inline=True)
def _add_rows(out, M, r0, vec, s0, s1, s2, s3, first):  # noqa: PLR0917 -- inlined into _vecmat_dense
    """``out[t] (+)= a0 M[r0 + s0, t] + .. + a3 M[r0 + s3, t]`` with ``a_i = vec[s_i]``: written when ``first``, else
    added (``0 + x = x``: the same floats)."""
    a0, a1, a2, a3 = vec[s0], vec[s1], vec[s2], vec[s3]
    if first:
        for t in range(out.shape[0]):
            out[t] = a0 * M[r0 + s0, t] + a1 * M[r0 + s1, t] + a2 * M[r0 + s2, t] + a3 * M[r0 + s3, t]
    else:
        for t in range(out.shape[0]):
            out[t] += a0 * M[r0 + s0, t] + a1 * M[r0 + s1, t] + a2 * M[r0 + s2, t] + a3 * M[r0 + s3, t]


@jit(inline=True)
def _add_row(out, M, r, a, first):
    """``out[t] (+)= a M[r, t]`` (as :func:`_add_rows`)."""
    if first:
        for t in range(out.shape[0]):
            out[t] = a * M[r, t]
    else:
        for t in range(out.shape[0]):
            out[t] += a * M[r, t]


@jit(inline=True)
def _pop_lowest(mask):
    """The lowest set bit's index of a non-zero ``uint64`` mask, and the mask without it."""
    return int(trailing_zeros(mask)), mask & (mask - np.uint64(1))


@jit(inline=True)
def _vecmat_dense(vec, M, r0, out):
    """``out = vec @ M[r0 : r0 + R]`` (``M`` C order, ``R = len(vec)``) in axpy form over rows of ``M``, skipping zeros of ``vec``.

    The crossing of the dense steps and jumps: ``R S`` for a dense ``vec``, ``nnz(vec) S`` after
    sparse evidence. Rows are added four at a time, ``out[t] += a0 M[r0 + s0, t] + .. + a3 M[r0 + s3, t]``,
    so ``out`` is read and written once per four rows; the first rows write ``out`` instead of
    adding to zeros (the same floats, without zeroing ``out`` first: LLVM made that a call to
    ``memset``, about 15% of a step at ``S = 32``). With ``R <= 64`` the non-zero rows are
    marked in a bit mask and taken in ascending order by their trailing zeros (no branch per row,
    which a random zero pattern would mispredict); a ``vec`` without zeros takes the same fours
    as consecutive rows (the same sums). With ``R > 64`` the rows go in consecutive fours,
    skipping the fours that are all zero. The row offset ``r0`` reads a power out of
    :attr:`~numerics.messages.powers.DensePowers.stacked` without making a view.

    Its callers call it at one place each (four expansions in all: the forward and backward steps,
    the chained power product in the two jumps): each place inlines it with its helpers at numba's
    IR level, which costs compile time (nine places took about three times as long to compile;
    ``docs/performance.md``, "Pass 2026-11-27 (house)"), and inlined it runs faster than a call.
    """
    R = vec.shape[0]
    if R <= 64:
        mask = np.uint64(0)
        n = 0
        for s in range(R):
            nz = vec[s] != 0.0
            mask |= np.uint64(nz) << np.uint64(s)
            n += nz
        if n < R:  # the first rows taken write out
            first = True
            while n >= 4:
                s0, mask = _pop_lowest(mask)
                s1, mask = _pop_lowest(mask)
                s2, mask = _pop_lowest(mask)
                s3, mask = _pop_lowest(mask)
                _add_rows(out, M, r0, vec, s0, s1, s2, s3, first)
                first = False
                n -= 4
            while n > 0:
                s0, mask = _pop_lowest(mask)
                _add_row(out, M, r0 + s0, vec[s0], first)
                first = False
                n -= 1
            if first:  # vec = 0
                _add_row(out, M, r0, 0.0, True)
            return
    first = True
    s = 0
    while s + 4 <= R:
        a0, a1, a2, a3 = vec[s], vec[s + 1], vec[s + 2], vec[s + 3]
        if a0 != 0.0 or a1 != 0.0 or a2 != 0.0 or a3 != 0.0:
            _add_rows(out, M, r0, vec, s, s + 1, s + 2, s + 3, first)
            first = False
        s += 4
    while s < R:
        a0 = vec[s]
        if a0 != 0.0:
            _add_row(out, M, r0 + s, a0, first)
            first = False
        s += 1
    if first:  # vec = 0
        _add_row(out, M, r0, 0.0, True)


# ----- one window's row of the successor layout (the n-gram kinds) -------------------------------
# The dense NGramArrays and the SparseNGramArrays versions add the same terms in the same (ascending)
# order; the sparse one skips the exact zeros, so the two layouts give the same float64 results.
# (Used by the n-gram steps here and the batched forward-backward of numerics.inference._ngram.)


@jit(nrt=False)
def _entry_ngram(lang, s, v):
    """``conditional[s, v]``."""
    return lang.conditional[s, v]


entry = by_kind(_entry_ngram, _entry_ngram, sparse_entry)


@jit(nrt=False)
def _vocab_ngram(lang):
    """``V``."""
    return lang.conditional.shape[1]


@jit(nrt=False)
def _vocab_sparse(lang):
    return lang.vocab


vocab = by_kind(_vocab_ngram, _vocab_ngram, _vocab_sparse)


@jit(nrt=False)
def _push_row_ngram(lang, w, cur, s):
    """``cur[successor(s, v)] += w conditional[s, v]`` for every token ``v``."""
    cond = lang.conditional
    t = lang.successor[s]
    for v in range(uint64(cond.shape[1])):  # unsigned indices: no wraparound test, so it vectorizes
        cur[t + v] += w * cond[s, v]


@jit(nrt=False)
def _push_row_sparse(lang, w, cur, s):
    indices, data = lang.indices, lang.data
    t = lang.successor[s]
    for k in range(lang.indptr[s], lang.indptr[s + 1]):
        cur[t + indices[k]] += w * data[k]


push_row = by_kind(_push_row_ngram, _push_row_ngram, _push_row_sparse)


@jit(nrt=False)
def _dot_row_ngram(lang, s, nxt):
    """``sum_v conditional[s, v] nxt[successor(s, v)]``."""
    cond = lang.conditional
    t = lang.successor[s]
    y = 0.0
    for v in range(uint64(cond.shape[1])):
        y += cond[s, v] * nxt[t + v]
    return y


@jit(nrt=False)
def _dot_row_sparse(lang, s, nxt):
    indices, data = lang.indices, lang.data
    t = lang.successor[s]
    y = 0.0
    for k in range(lang.indptr[s], lang.indptr[s + 1]):
        y += data[k] * nxt[t + indices[k]]
    return y


dot_row = by_kind(_dot_row_ngram, _dot_row_ngram, _dot_row_sparse)


# ----- the transition products of a step (no evidence, not normalized) -------------------------


@jit(nrt=False, fma=True, inline=True)  # no reference counts, FMA: see by_kind; inlined: see _vecmat_dense
def _propagate_dense(lang, prev, out):
    """``out = prev P``: the transition product of a forward step, without evidence and not normalized.

    Dense: ``prev A`` (:func:`_vecmat_dense`, skipping zeros of ``prev``). n-gram: each window ``s = a W + b`` of
    non-zero ``prev`` pushes ``prev[s] conditional[s, v]`` to its successor ``b V + v`` (ascending ``s``; the
    sparse layout adds the same terms without its zero ones). The masked branch of :func:`forward_step`, and the
    predictive message of the adaptive kernels.
    """
    _vecmat_dense(prev, lang.transition, 0, out)  # (one inlined site: see _vecmat_dense)


@jit(nrt=False)
def _propagate_ngram(lang, prev, out):
    S = out.shape[0]
    for s in range(S):
        out[s] = 0.0
    for s in range(S):
        pa = prev[s]
        if pa != 0.0:
            _push_row_ngram(lang, pa, out, s)


@jit(nrt=False)
def _propagate_sparse(lang, prev, out):
    for s in range(out.shape[0]):
        out[s] = 0.0
    for s in range(out.shape[0]):
        pa = prev[s]
        if pa != 0.0:
            _push_row_sparse(lang, pa, out, s)


propagate = by_kind(_propagate_dense, _propagate_ngram, _propagate_sparse)


# ----- forward step ------------------------------------------------------------------------------


@jit(nrt=False, fma=True)  # no reference counts, FMA: see by_kind
def _forward_step_dense(lang, ev, prev, out, p):
    """``out = alpha_p`` from ``prev = alpha_{p-1}`` (ignored at ``p = 0``) under the evidence ``ev``, normalized.

    Dense: ``alpha_p = (alpha_{p-1} A) * e_p`` (``alpha_0 = initial * e_0``), ``e_p(s) = E[s, x_p]``
    where ``p`` is observed and 1 elsewhere. n-gram: the same product over the successor layout,
    pushing each window of non-zero ``alpha`` along its successors (only to the windows ending in
    ``x_p`` when ``p`` is observed).
    """
    initial, ET = lang.initial, lang.emission_t  # tuple fields read once, outside
    tokens = ev.tokens  # branches: numba reference-counts a field read inside a branch at every pass
    S = out.shape[0]
    if p == 0:
        for t in range(S):
            out[t] = initial[t]
    else:
        _propagate_dense(lang, prev, out)  # (inlined)
    if observed(ev, p):
        _evidence_normalize_dense(out, ET, tokens[p])
    else:
        _normalize_dense(out)


@jit
def _initial_windows(initial, out, V, vfix):
    """n-gram ``alpha_0``: ``initial`` on the windows ending in ``vfix`` (all where ``vfix = -1``), normalized."""
    for s in range(out.shape[0]):
        out[s] = initial[s] if (vfix < 0 or s % V == vfix) else 0.0
    normalize(out)


@jit(nrt=False)
def _push_to_token_ngram(lang, prev, out, vfix):
    """``out[successor(s, vfix)] += prev[s] conditional[s, vfix]`` for the windows ``s`` of non-zero ``prev``, ascending:
    the forward step's product onto the windows ending in the observed token ``vfix`` (the other entries untouched).

    n-gram: over windows ``s = a W + b``, whose successor is ``b V + vfix``; sparse n-gram: over the windows that can
    emit ``vfix`` (its column), the same terms without the zero ones, in the same order.
    """
    cond = lang.conditional
    V = cond.shape[1]
    W = out.shape[0] // V
    for a in range(V):
        for b in range(W):
            pa = prev[a * W + b]
            if pa != 0.0:
                out[b * V + vfix] += pa * cond[a * W + b, vfix]


@jit(nrt=False)
def _push_to_token_sparse(lang, prev, out, vfix):
    succ = lang.successor
    col_indptr, col_indices, col_data = lang.col_indptr, lang.col_indices, lang.col_data
    vu = np.uint64(vfix)
    for k in range(col_indptr[vfix], col_indptr[vfix + 1]):
        s = col_indices[k]
        pa = prev[s]
        if pa != 0.0:
            out[succ[s] + vu] += pa * col_data[k]


_push_to_token = by_kind(_push_to_token_ngram, _push_to_token_ngram, _push_to_token_sparse, inline="always")


@jit(nrt=False)
def _forward_step_ngram(lang, ev, prev, out, p):
    tokens = ev.tokens
    S = out.shape[0]
    V = vocab(lang)
    vfix = tokens[p] if observed(ev, p) else -1
    if p == 0:
        _initial_windows(lang.initial, out, V, vfix)
        return
    # push form over the windows of non-zero alpha (alpha[s] cond[s, v] goes to the successor of s by v);
    # windows inconsistent with the evidence hold alpha = 0 and are skipped
    if vfix >= 0:
        for s in range(S):
            out[s] = 0.0
        _push_to_token(lang, prev, out, vfix)
        normalize_class(out, vfix, V, S // V)  # the only non-zeros
        return
    propagate(lang, prev, out)
    normalize(out)


forward_step = by_kind(_forward_step_dense, _forward_step_ngram)  # (the n-gram version serves both layouts)


# ----- backward step -----------------------------------------------------------------------------


@jit(nrt=False, fma=True, inline=True)  # no reference counts, FMA: see by_kind; inlined: see _vecmat_dense
def _pull_dense(lang, nxt, out, v, tmp):
    """``out = P (e_v * nxt)``: the transition product of a backward step, not normalized; ``v`` the token observed
    at the next position (``e_v(s) = P(v | s)``), or ``-1`` (masked: ``e = 1``). ``tmp`` is an ``(S,)`` scratch vector,
    read by the dense version and by the n-gram one from :data:`PULL_TWO_PASS_WINDOWS` windows per token.

    Dense: ``A (e_v * nxt)``, in axpy form over the rows of ``A^T`` (:func:`_vecmat_dense`). n-gram:
    ``out[s] = sum_u conditional[s, u] e_v(u) nxt[(s % W) V + u]`` for every window ``s`` (the sparse layout adds the
    same terms without its zero ones). The backward step's product, and the backward messages of the adaptive kernels.
    """
    AT, ET = lang.transition_t, lang.emission_t
    src = nxt
    if v >= 0:
        e = ET[v]
        for t in range(out.shape[0]):
            tmp[t] = nxt[t] * e[t]
        src = tmp
    _vecmat_dense(src, AT, 0, out)  # out = A @ src (one inlined site: see _vecmat_dense)


#: From this many windows per token (``W = S / V``) the n-gram :func:`pull` of a masked position takes two passes
#: (``nxt`` transposed into the scratch, then rows of ``conditional_t`` added over ``W`` contiguous windows), below it
#: one (a dot product per window, no scratch): the same terms in the same order, so the same floats; the one pass
#: is about 12% faster at ``W = 8`` (3gram), the two passes about 10% faster at ``W = 64`` (4gram).
PULL_TWO_PASS_WINDOWS = 32


@jit(nrt=False)
def _pull_ngram(lang, nxt, out, v, tmp):
    cond, condT = lang.conditional, lang.conditional_t
    S, V = cond.shape
    W = S // V
    if v >= 0:  # the other successors' terms are exact zeros
        for a in range(V):
            for b in range(W):
                out[a * W + b] = condT[v, a * W + b] * nxt[b * V + v]
        return
    if W < PULL_TWO_PASS_WINDOWS:  # one pass, window by window (tmp unread)
        for a in range(V):
            for b in range(W):
                s = a * W + b
                o = b * V
                acc = 0.0
                for u in range(V):
                    acc += cond[s, u] * nxt[o + u]
                out[s] = acc
        return
    for b in range(W):  # tmp[u W + b] = nxt[b V + u]
        for u in range(V):
            tmp[u * W + b] = nxt[b * V + u]
    for s in range(S):
        out[s] = 0.0
    for u in range(V):
        for a in range(V):
            o = a * W
            t0 = u * W
            for b in range(W):
                out[o + b] += condT[u, o + b] * tmp[t0 + b]


@jit
def _pull_sparse(lang, nxt, out, v, tmp):
    succ = lang.successor
    col_indptr, col_indices, col_data = lang.col_indptr, lang.col_indices, lang.col_data
    S = out.shape[0]
    if v >= 0:
        for s in range(S):
            out[s] = 0.0
        vu = np.uint64(v)
        for k in range(col_indptr[v], col_indptr[v + 1]):
            s = col_indices[k]
            out[s] = col_data[k] * nxt[succ[s] + vu]
        return
    for s in range(S):
        out[s] = _dot_row_sparse(lang, s, nxt)


pull = by_kind(_pull_dense, _pull_ngram, _pull_sparse)


@jit(nrt=False, fma=True)  # no reference counts, FMA: see by_kind
def _backward_step_dense(lang, ev, nxt, out, p, tmp):
    """``out = beta_p`` from ``nxt = beta_{p+1}`` under ``ev`` (position ``p + 1`` exists), normalized.

    ``beta_p = A (e_{p+1} * beta_{p+1})`` (:func:`pull`). n-gram: computed for every window when ``x_p`` is
    masked (windows the evidence at ``p-1, ..`` excludes meet ``alpha = 0``), only for the windows
    consistent with the run of observed positions ending at ``p`` when ``x_p`` is observed
    (:func:`consistent_windows`; the others are 0: they meet ``alpha = 0`` now and under any later evidence). ``tmp`` is an ``(S,)`` scratch vector.
    ``ev.hidden`` must be ``-1``.
    """
    tokens = ev.tokens
    _pull_dense(lang, nxt, out, tokens[p + 1] if observed(ev, p + 1) else -1, tmp)
    _normalize_dense(out)


@jit
def consistent_windows(lang, ev, k):
    """n-gram: the windows at an observed position ``k`` consistent with the run of observed positions ending there.

    With ``k, k-1, .., k-d+1`` observed (``1 <= d <= n-1``, ``d`` as large as possible) they are
    ``r0 + i rstep``, ``i < nrows``: ``rstep = V^d``, ``r0`` the window's ``d`` newest tokens; returns
    ``(r0, rstep, nrows)``.
    """
    S = lang.initial.shape[0]
    weights = lang.digit_weights
    r0 = 0
    d = 0
    while d < lang.order - 1 and observed(ev, k - d):
        r0 += ev.tokens[k - d] * weights[d]
        d += 1
    rstep = S if d == lang.order - 1 else weights[d]  # V^d
    return r0, rstep, S // rstep


@jit(nrt=False)
def _backward_step_ngram(lang, ev, nxt, out, p, tmp):
    S = out.shape[0]
    cond = lang.conditional
    V = cond.shape[1]
    W = S // V
    q = p + 1
    x = ev.tokens
    obs = observed(ev, q)
    if observed(ev, p):  # x_p observed: only the windows consistent with the observed run ending at p
        r0, rstep, nrows = consistent_windows(lang, ev, p)
        vlo, vhi = (x[q], x[q] + 1) if obs else (0, V)
        for s in range(S):
            out[s] = 0.0
        for i in range(nrows):
            s = r0 + i * rstep
            o = (s % W) * V
            acc = 0.0
            for v in range(vlo, vhi):
                acc += cond[s, v] * nxt[o + v]
            out[s] = acc
        normalize_class(out, r0, rstep, nrows)  # the only non-zeros
        return
    _pull_ngram(lang, nxt, out, x[q] if obs else -1, tmp)
    normalize(out)


@jit
def _backward_step_sparse(lang, ev, nxt, out, p, tmp):
    succ = lang.successor
    indptr, indices, data = lang.indptr, lang.indices, lang.data
    S = out.shape[0]
    V = lang.vocab
    q = p + 1
    x = ev.tokens
    obs = observed(ev, q)
    if not observed(ev, p):
        _pull_sparse(lang, nxt, out, x[q] if obs else -1, tmp)
        normalize(out)
        return
    for s in range(S):  # only the windows ending in x_p
        out[s] = 0.0
    xp = x[p]
    for c in range(S // V):
        s = c * V + xp
        o = succ[s]
        if obs:
            out[s] = sparse_entry(lang, s, x[q]) * nxt[o + np.uint64(x[q])]
        else:
            acc = 0.0
            for k in range(indptr[s], indptr[s + 1]):
                acc += data[k] * nxt[o + indices[k]]
            out[s] = acc
    normalize(out)


backward_step = by_kind(_backward_step_dense, _backward_step_ngram, _backward_step_sparse)


# ----- reading the messages ----------------------------------------------------------------------


@jit(nrt=False, fma=True)  # no reference counts, FMA: see by_kind
def _token_marginal_dense(lang, alpha, beta, m):
    """``m[v] = sum_s alpha(s) beta(s) P(v | s)`` (unnormalized posterior of the token); returns ``sum_v m[v]``.

    Dense: ``P(v | s) = E[s, v]``. n-gram: the window ``s = c V + v`` emits its newest token ``v``.
    """
    V = m.shape[0]
    for v in range(V):
        m[v] = 0.0
    ET = lang.emission_t
    for s in range(alpha.shape[0]):
        w = alpha[s] * beta[s]
        if w != 0.0:
            for v in range(V):
                m[v] += w * ET[v, s]
    total = 0.0
    for v in range(V):
        total += m[v]
    return total


@jit(nrt=False)
def _token_marginal_ngram(lang, alpha, beta, m):
    V = m.shape[0]
    for v in range(V):
        m[v] = 0.0
    for c in range(alpha.shape[0] // V):
        for v in range(V):
            m[v] += alpha[c * V + v] * beta[c * V + v]
    total = 0.0
    for v in range(V):
        total += m[v]
    return total


token_marginal = by_kind(_token_marginal_dense, _token_marginal_ngram)


@jit(nrt=False, fma=True)  # no reference counts, FMA: see by_kind
def _apply_evidence_dense(lang, vec, v):
    """Multiply ``vec`` by the evidence of token ``v`` at its position (not normalized).

    Dense: ``vec(s) *= E[s, v]``. n-gram: the windows not ending in ``v`` are set to 0.
    """
    ET = lang.emission_t
    for s in range(vec.shape[0]):
        vec[s] *= ET[v, s]


@jit(nrt=False)
def _apply_evidence_ngram(lang, vec, v):
    V = lang.conditional.shape[1]
    for c in range(vec.shape[0] // V):
        for w in range(V):
            if w != v:
                vec[c * V + w] = 0.0


@jit
def _apply_evidence_sparse(lang, vec, v):
    V = lang.vocab
    for c in range(vec.shape[0] // V):
        for w in range(V):
            if w != v:
                vec[c * V + w] = 0.0


apply_evidence = by_kind(_apply_evidence_dense, _apply_evidence_ngram, _apply_evidence_sparse)


@jit
def _observe_dense(lang, vec, v):
    """Multiply ``vec`` by the evidence ``x = v`` at its position and normalize; returns the mass kept.

    n-gram: the sum reads only the windows ending in ``v`` (the others are now 0): the same result.
    """
    apply_evidence(lang, vec, v)
    return normalize(vec)


@jit(nrt=False)
def _observe_ngram(lang, vec, v):
    apply_evidence(lang, vec, v)
    V = lang.conditional.shape[1]
    return normalize_class(vec, v, V, vec.shape[0] // V)


@jit
def _observe_sparse(lang, vec, v):
    apply_evidence(lang, vec, v)
    return normalize_class(vec, v, lang.vocab, vec.shape[0] // lang.vocab)


observe = by_kind(_observe_dense, _observe_ngram, _observe_sparse)


# ----- n-gram separators -------------------------------------------------------------------------


@jit
def _window_known_dense(lang, ev, p, after):
    """True when positions ``p-n+2..p`` are all observed and all ``> after``: the n-gram window at ``p`` is known.

    Such a run of ``n-1`` observed tokens is a separator (Definition B.4): the messages restart
    there (``alpha`` from a point mass, ``beta`` from ones). ``after = -1``: any position. A dense
    HMM has no separators (always False).
    """
    return False


@jit(nrt=False)
def _window_known_ngram(lang, ev, p, after):
    order = lang.order
    if p - order + 2 <= after:
        return False
    for d in range(order - 1):
        if not observed(ev, p - d):
            return False
    return True


window_known = by_kind(_window_known_dense, _window_known_ngram)


@jit
def _window_span_dense(lang):
    """The number of observed positions that make a separator: ``n - 1`` for an n-gram, 0 for a dense HMM (none)."""
    return 0


@jit(nrt=False)
def _window_span_ngram(lang):
    return lang.order - 1


window_span = by_kind(_window_span_dense, _window_span_ngram)


@jit
def _restart_at_separator_dense(lang, ev, vec, start, p):
    """Restart the forward message at the rightmost separator in ``(start, p)``; returns its position.

    n-gram: ``vec`` becomes the point mass on the known window at that position ``r`` (the forward
    message there, whatever came before) and ``r`` is returned; ``start`` when there is none
    (``vec`` untouched). A dense HMM has no separators: returns ``start``.
    """
    return start


@jit(nrt=False)
def _restart_at_separator_ngram(lang, ev, vec, start, p):
    for r in range(p - 1, start, -1):
        if _window_known_ngram(lang, ev, r, -1):
            for s in range(vec.shape[0]):
                vec[s] = 0.0
            s = 0
            for d in range(lang.order - 1):
                s += ev.tokens[r - d] * lang.digit_weights[d]
            vec[s] = 1.0
            return r
    return start


restart_at_separator = by_kind(_restart_at_separator_dense, _restart_at_separator_ngram)
