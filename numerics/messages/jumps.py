"""Crossing a run of masked positions in one product: matrix-power jumps (numba).

A run of ``m - 1`` masked positions followed by one more position moves the forward message by
``alpha_{p+m} ∝ (alpha_p P^m) * e_{p+m}`` and the backward message by
``beta_p ∝ P^m (e_{p+m} * beta_{p+m})``, with ``P`` the state transition matrix (for an n-gram
the dense ``S x S`` matrix of its successor layout); ``docs/methods/inference.md``. The powers
``P^m`` for ``m = 0..M`` are computed once per language and length (:func:`~numerics.messages.powers.language_powers`,
``M`` capped by :data:`~numerics.messages.powers.POWERS_BYTES`); a longer run chains them in chunks of ``M``, normalizing
after each chunk.

A jump costs ``S^2`` per vector where ``m`` single steps cost ``m`` times a step (``S^2`` dense,
about ``S V`` for an n-gram), so a dense run always jumps and an n-gram run jumps only when
:func:`forward_jump_pays` / :func:`backward_jump_pays` say so and it is longer than
:data:`~numerics.messages.store.STEP_RUNS` (the n-gram crossings of
:mod:`~numerics.messages.store` compute the same products in place, restricted further). For an n-gram the product is
restricted to the windows that can be non-zero: those ending in the observed token at the
landing position, and to the rows ending in the observed token at the start. From
:data:`CROSS_MIN_STATES` windows on (the n-grams whose crossings these are), ``P^m`` is stored cut
into the blocks of the windows ending in one token, each contiguous (``NGramPowers.blocks``): a forward
jump runs in axpy form over a block's rows, a backward one in dot form over the same rows (a
``64 x 64`` block at ``S = 512`` is ``32 KB`` read in one piece, where rows ``4 KB`` apart made
the backward jump slow). One orientation only, so that ``M`` is twice what two would allow in
:data:`POWERS_BYTES` (``M = 127`` at ``S = 512``): a run longer than ``M`` chains through a dense
``S``-vector, ``8x`` the reads of a block, and was the larger cost (paired, one thread, 4gram:
1.10-1.17x over both orientations with ``M = 63``). A smaller n-gram keeps ``P^m`` whole
(``NGramPowers.matrices``) and its columns by landing token (``NGramPowers.by_token``): its ``8 x 8`` blocks
would cost more in loops than they save.

An n-gram also stores ``initial P^p`` for every position (``NGramPowers.initial_laws``): a forward walk
from nothing observed starts at its first observed position from there
(:func:`forward_from_nothing`) instead of chaining powers over the run before it.

A dense HMM's jumps run in axpy form both ways, over contiguous rows: forward ``vec P^m`` over the
rows of ``P^m``, backward ``P^m w = w (P^m)^T`` over the rows of the stored transpose
(``DensePowers.stacked_t``), skipping the zero entries of the vector (the states the evidence
excludes: most of them in a pruned HMM). Like the dense steps they are compiled without numba's
reference counts (:func:`~numerics.messages.dispatch.by_kind`).

A sparse n-gram (:class:`~numerics.languages.arrays.SparseNGramArrays`) never jumps: ``P^m`` fills
in (``S^2`` entries, 134 MB per power at ``S = 4096``), while its single steps cost the non-zeros;
:func:`no_powers` gives its powers, :class:`NoPowers`, which hold nothing.
"""

from __future__ import annotations

from numerics._jit import jit
from numerics.messages.dispatch import by_kind
from numerics.messages.powers import (
    CROSS_MIN_STATES,
    POWERS_BYTES,
    DensePowers,
    NGramPowers,
    NoPowers,
    Powers,
    language_powers,
    no_powers,
)
from numerics.messages.steps import (
    _evidence_normalize_dense,
    _normalize_dense,
    _vecmat_dense,
    copy_into,
    forward_step,
    normalize,
    normalize_class,
    observed,
)

__all__ = [
    "CROSS_MIN_STATES",
    "Powers",
    "DensePowers",
    "NGramPowers",
    "NoPowers",
    "POWERS_BYTES",
    "language_powers",
    "jump_forward",
    "jump_backward",
    "forward_jump_pays",
    "backward_jump_pays",
    "no_powers",
    "forward_from_nothing",
    "max_power",
]


@jit(nrt=False)
def _max_power_dense(lang, powers):
    """``M`` of the language's powers inside numba (their ``max_power``): longer runs chain ``P^M``. Inlined (a read of
    two shapes)."""
    return powers.stacked.shape[0] // powers.stacked.shape[1] - 1


@jit(nrt=False)
def _max_power_ngram(lang, powers):
    return max(powers.matrices.shape[0], powers.blocks.shape[0]) - 1  # (matrices or blocks: the other a placeholder)


@jit(nrt=False)
def _max_power_sparse(lang, powers):
    return 0


max_power = by_kind(_max_power_dense, _max_power_ngram, _max_power_sparse, inline="always")


@jit
def _blocks_forward(blocks, m, vec, out, u0, u1, v0, v1, acc):  # noqa: PLR0917 -- a numba kernel: positional on the hot path
    """n-gram ``out[c V + v] = sum_{u0 <= u < u1, k} vec[k V + u] P^m[k V + u, c V + v]`` for ``v0 <= v < v1`` (the
    other entries untouched): ``vec`` may be non-zero only on the windows ending in ``u0..u1-1``.

    Block by block (:attr:`NGramPowers.blocks`) in axpy form over the block's contiguous rows, skipping
    zeros of ``vec``; ``acc`` is an ``(S // V,)`` (or longer) scratch vector.
    """
    V = blocks.shape[1]
    C = blocks.shape[3]
    for v in range(v0, v1):
        for c in range(C):
            acc[c] = 0.0
        for u in range(u0, u1):
            for k in range(C):
                a = vec[k * V + u]
                if a != 0.0:
                    for c in range(C):
                        acc[c] += a * blocks[m, v, u, k, c]
        for c in range(C):
            out[c * V + v] = acc[c]


@jit
def _blocks_backward(blocks, m, w, out, r0, rstep, nrows, v0, v1, acc):  # noqa: PLR0917 -- a numba kernel: positional on the hot path
    """n-gram ``out[r] = sum_{v0 <= v < v1, c} P^m[r, c V + v] w[c V + v]`` for the rows ``r = r0 + i rstep``, ``i < nrows``
    (every row: ``(0, 1, S)``; else ``rstep`` a multiple of ``V``), the other entries untouched: ``w`` may
    be non-zero only on the windows ending in ``v0..v1-1``.

    Dot form over the forward blocks (:attr:`NGramPowers.blocks`): for each token ``v`` the entries of ``w`` ending
    in ``v`` are gathered into ``acc`` (an ``(S // V,)`` or longer scratch vector), and the rows take their dot
    products with it over the contiguous rows of ``blocks[m, v, u]``, four rows at a time (four independent sums).
    """
    V = blocks.shape[1]
    C = blocks.shape[3]
    if rstep == 1:
        u0, u1, k0, kstep, nk = 0, V, 0, 1, C
    else:
        u0 = r0 % V
        u1, k0, kstep, nk = u0 + 1, r0 // V, rstep // V, nrows
    for v in range(v0, v1):
        for c in range(C):
            acc[c] = w[c * V + v]
        first = v == v0
        for u in range(u0, u1):
            i = 0
            while i + 4 <= nk:
                k = k0 + i * kstep
                a0 = 0.0
                a1 = 0.0
                a2 = 0.0
                a3 = 0.0
                for c in range(C):
                    g = acc[c]
                    a0 += blocks[m, v, u, k, c] * g
                    a1 += blocks[m, v, u, k + kstep, c] * g
                    a2 += blocks[m, v, u, k + 2 * kstep, c] * g
                    a3 += blocks[m, v, u, k + 3 * kstep, c] * g
                if first:
                    out[k * V + u] = a0
                    out[(k + kstep) * V + u] = a1
                    out[(k + 2 * kstep) * V + u] = a2
                    out[(k + 3 * kstep) * V + u] = a3
                else:
                    out[k * V + u] += a0
                    out[(k + kstep) * V + u] += a1
                    out[(k + 2 * kstep) * V + u] += a2
                    out[(k + 3 * kstep) * V + u] += a3
                i += 4
            while i < nk:
                k = k0 + i * kstep
                a0 = 0.0
                for c in range(C):
                    a0 += blocks[m, v, u, k, c] * acc[c]
                if first:
                    out[k * V + u] = a0
                else:
                    out[k * V + u] += a0
                i += 1


@jit
def _chain_forward_blocks(blocks, tmp, out, m, acc):
    """n-gram: ``tmp <- tmp P^(m - m')`` in chunks of ``M``, normalized after each; returns the ``m' <= M`` left (``m > M`` only)."""
    M = blocks.shape[0] - 1
    V = blocks.shape[1]
    while m > M:
        _blocks_forward(blocks, M, tmp, out, 0, V, 0, V, acc)
        normalize(out)
        copy_into(out, tmp)
        m -= M
    return m


@jit
def _vecmat(vec, M, out):
    """``out = vec @ M`` skipping zero entries of ``vec``."""
    S = out.shape[0]
    for t in range(S):
        out[t] = 0.0
    for s in range(S):
        a = vec[s]
        if a != 0.0:
            for t in range(S):
                out[t] += a * M[s, t]


@jit
def _chain_forward(Pm, tmp, out, m):
    """``tmp <- tmp P^(m - m')`` in chunks of ``M``, normalized after each; returns the ``m' <= M`` left.

    Called only when ``m > M`` (rare), since every call costs numba a reference count per array.
    """
    M = Pm.shape[0] - 1
    while m > M:
        _vecmat(tmp, Pm[M], out)
        normalize(out)
        copy_into(out, tmp)
        m -= M
    return m


@jit(inline=True)
def _power_product_dense(vec, P, m, out, tmp):
    """``out = vec @ Q^m`` for the powers ``Q^0..Q^M`` stacked in ``P`` (``DensePowers.stacked`` or ``stacked_t``),
    skipping zeros of ``vec``; ``m > M`` chains ``Q^M`` in chunks, normalized after each (as
    :func:`_chain_forward`), with ``tmp`` ``(S,)`` as scratch. The dense jumps' product, both ways."""
    S = out.shape[0]
    M = P.shape[0] // S - 1
    src = vec
    while True:  # one inlined site of _vecmat_dense (see its docstring)
        _vecmat_dense(src, P, min(m, M) * S, out)
        if m <= M:
            return
        _normalize_dense(out)
        for t in range(S):
            tmp[t] = out[t]
        src = tmp
        m -= M


@jit(nrt=False, fma=True)  # no reference counts, FMA: see by_kind
def _jump_forward_dense(lang, powers, vec, out, m, vfix, tmp, acc):
    """``out = alpha`` at ``m`` positions after ``vec``'s: ``(vec P^m) * e``, normalized.

    ``e`` is the evidence ``x = vfix`` at the landing position (``vfix = -1``: masked, ``e = 1``).
    Dense: ``vec P^m`` sums to 1 (``P`` is stochastic), so the evidence follows without a
    normalization in between, and one normalization ends the jump.
    n-gram with ``vfix >= 0``: only the windows ending in ``vfix`` are computed, the others are 0.
    ``tmp`` ``(S,)`` and ``acc`` ``(S // V,)`` are scratch vectors.
    """
    _power_product_dense(vec, powers.stacked, m, out, tmp)
    ET = lang.emission_t
    if vfix >= 0:  # vec P^m sums to 1 (P stochastic): the evidence and one normalization follow directly
        _evidence_normalize_dense(out, ET, vfix)
    else:
        _normalize_dense(out)


@jit(nrt=False)
def _jump_forward_ngram(lang, powers, vec, out, m, vfix, tmp, acc):
    if powers.blocks.shape[0] > 1:  # the blocks of a large n-gram (its chained crossings)
        blocks = powers.blocks
        S = out.shape[0]
        V = lang.conditional.shape[1]
        for t in range(S):
            tmp[t] = vec[t]
        if m > blocks.shape[0] - 1:
            m = _chain_forward_blocks(blocks, tmp, out, m, acc)
        if vfix < 0:
            _blocks_forward(blocks, m, tmp, out, 0, V, 0, V, acc)
            normalize(out)
            return
        for t in range(S):
            out[t] = 0.0
        _blocks_forward(blocks, m, tmp, out, 0, V, vfix, vfix + 1, acc)  # only the windows ending in vfix
        normalize_class(out, vfix, V, S // V)
        return
    Pm, by_token = powers.matrices, powers.by_token
    S = out.shape[0]
    V = lang.conditional.shape[1]
    C = S // V
    for t in range(S):
        tmp[t] = vec[t]
    if m > Pm.shape[0] - 1:
        m = _chain_forward(Pm, tmp, out, m)
    if vfix < 0:
        _vecmat(tmp, Pm[m], out)
        normalize(out)
        return
    for t in range(S):
        out[t] = 0.0
    for c in range(C):
        acc[c] = 0.0
    for s2 in range(S):  # by_token[m, vfix, s, c] = P^m[s, c V + vfix], contiguous in c
        a = tmp[s2]
        if a != 0.0:
            for c in range(C):
                acc[c] += a * by_token[m, vfix, s2, c]
    for c in range(C):
        out[c * V + vfix] = acc[c]
    normalize(out)


@jit
def _never_jumps(lang, *args):
    """The jumps of a sparse n-gram (:func:`jump_forward`, :func:`jump_backward`): it has no powers (:func:`no_powers`)
    and never jumps (:func:`forward_jump_pays` and :func:`backward_jump_pays` are always False for it), so this only
    raises; it lets a kernel that calls the jumps compile for the sparse layout."""
    raise ValueError("a sparse n-gram has no precomputed powers: forward_jump_pays and backward_jump_pays are "
                     "always False for it")


jump_forward = by_kind(_jump_forward_dense, _jump_forward_ngram, _never_jumps)


@jit
def _rows_dot(M, w, out, r0, rstep, nrows, w0, wstep):
    """``out[r] = sum_c M[r, c] w[w0 + c wstep]`` for the rows ``r = r0 + k rstep``, ``k < nrows`` (the n-gram backward jumps).

    Each row's terms are added one by one in ascending ``c`` (the plain dot product's order, so
    the same float64 result), four rows at a time: four independent sums keep the adder busy
    where one sum waits on its previous addition (about 3x faster, measured at ``S = 512``).
    """
    ncols = M.shape[1]
    k = 0
    while k + 4 <= nrows:
        r = r0 + k * rstep
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for c in range(ncols):
            wc = w[w0 + c * wstep]
            a0 += M[r, c] * wc
            a1 += M[r + rstep, c] * wc
            a2 += M[r + 2 * rstep, c] * wc
            a3 += M[r + 3 * rstep, c] * wc
        out[r] = a0
        out[r + rstep] = a1
        out[r + 2 * rstep] = a2
        out[r + 3 * rstep] = a3
        k += 4
    while k < nrows:
        r = r0 + k * rstep
        acc = 0.0
        for c in range(ncols):
            acc += M[r, c] * w[w0 + c * wstep]
        out[r] = acc
        k += 1


@jit
def _chain_backward(Pm, tmp, out, m):
    """``tmp <- P^(m - m') tmp`` in chunks of ``M``, normalized after each; returns the ``m' <= M`` left (``m > M`` only)."""
    M = Pm.shape[0] - 1
    while m > M:
        _rows_dot(Pm[M], tmp, out, 0, 1, out.shape[0], 0, 1)
        normalize(out)
        copy_into(out, tmp)
        m -= M
    return m


@jit
def _chain_backward_blocks(blocks, w, out, m, acc):
    """n-gram: ``w <- P^(m - m') w`` in chunks of ``M``, normalized after each (``out`` as scratch); returns the ``m' <= M`` left (``m > M`` only)."""
    M = blocks.shape[0] - 1
    V = blocks.shape[1]
    S = w.shape[0]
    while m > M:
        _blocks_backward(blocks, M, w, out, 0, 1, S, 0, V, acc)
        normalize(out)
        copy_into(out, w)
        m -= M
    return m


@jit(nrt=False, fma=True)  # no reference counts, FMA: see by_kind
def _jump_backward_dense(lang, powers, w, out, m, rowfix, wfix, tmp):
    """``out = P^m w`` (chained in chunks of ``M``), normalized; ``w`` already holds the evidence at its position.

    n-gram with ``rowfix >= 0`` (the token observed at ``out``'s position): only the rows (windows)
    ending in ``rowfix`` are computed, the others are 0; with ``wfix >= 0`` (and ``m <= M``) ``w``
    is non-zero only on the windows ending in ``wfix``. A dense HMM computes every row and ignores both.
    """
    _power_product_dense(w, powers.stacked_t, m, out, tmp)  # P^m w = w (P^m)^T, skipping the zeros the evidence left in w
    _normalize_dense(out)


@jit(nrt=False)
def _jump_backward_ngram(lang, powers, w, out, m, rowfix, wfix, tmp):
    if powers.blocks.shape[0] > 1:  # the blocks of a large n-gram
        blocks = powers.blocks  # w is the caller's scratch copy: the chain works in place there, tmp is the blocks' scratch
        S = out.shape[0]
        V = lang.conditional.shape[1]
        if m > blocks.shape[0] - 1:
            m = _chain_backward_blocks(blocks, w, out, m, tmp)
            wfix = -1
        v0, v1 = (wfix, wfix + 1) if wfix >= 0 else (0, V)  # w lives on the windows ending in wfix
        if rowfix < 0:
            _blocks_backward(blocks, m, w, out, 0, 1, S, v0, v1, tmp)
            normalize(out)
            return
        for s2 in range(S):
            out[s2] = 0.0
        _blocks_backward(blocks, m, w, out, rowfix, V, S // V, v0, v1, tmp)  # only the rows ending in rowfix
        normalize_class(out, rowfix, V, S // V)
        return
    Pm, by_token = powers.matrices, powers.by_token
    S = out.shape[0]
    V = lang.conditional.shape[1]
    C = S // V
    for t in range(S):
        tmp[t] = w[t]
    if m > Pm.shape[0] - 1:
        m = _chain_backward(Pm, tmp, out, m)
    if rowfix < 0:
        if wfix >= 0:  # every row, but only the columns where w can be non-zero (the skipped terms are exact
            _rows_dot(by_token[m, wfix], tmp, out, 0, 1, S, wfix, V)  # zeros: the same float64 sums)
        else:
            _rows_dot(Pm[m], tmp, out, 0, 1, S, 0, 1)
        normalize(out)
        return
    for s2 in range(S):
        out[s2] = 0.0
    if wfix >= 0:  # w lives on the windows ending in wfix: by_token[m, wfix, s, c] = P^m[s, c V + wfix]
        _rows_dot(by_token[m, wfix], tmp, out, rowfix, V, C, wfix, V)
    else:
        _rows_dot(Pm[m], tmp, out, rowfix, V, C, 0, 1)
    normalize(out)


jump_backward = by_kind(_jump_backward_dense, _jump_backward_ngram, _never_jumps)


@jit
def _forward_jump_pays_dense(lang, vec, m, landing_observed):
    """Is one jump over ``m > 1`` positions cheaper than ``m`` forward steps from ``vec``?

    Dense: always (``S^2`` against ``m S^2``). n-gram: a jump costs ``nnz(vec)`` times the columns
    it computes (``S / V`` when the landing token is observed, else ``S``), ``m`` steps about
    ``nnz(vec) V + (m - 1) S V``.
    """
    return True


@jit(nrt=False)
def _forward_jump_pays_ngram(lang, vec, m, landing_observed):
    S = vec.shape[0]
    V = lang.conditional.shape[1]
    nz = 0
    for s in range(S):
        if vec[s] != 0.0:
            nz += 1
    jump_cost = nz * (S // V if landing_observed else S)
    step_cost = nz * V + (m - 1) * S * V
    return jump_cost < step_cost


@jit
def _never_pays(lang, *args):
    """A sparse n-gram's :func:`forward_jump_pays` and :func:`backward_jump_pays`: never (module docstring)."""
    return False


forward_jump_pays = by_kind(_forward_jump_pays_dense, _forward_jump_pays_ngram, _never_pays)


@jit
def _backward_jump_pays_dense(lang, m, rows_observed, landing_observed):
    """Is one backward jump over ``m > 1`` positions cheaper than ``m`` backward steps?

    Dense: always. n-gram: a jump costs (rows computed) x (columns read), ``S / V`` each where the
    token is observed, else ``S``; ``m`` steps about ``m S V``.
    """
    return True


@jit(nrt=False)
def _backward_jump_pays_ngram(lang, m, rows_observed, landing_observed):
    S = lang.conditional.shape[0]
    V = lang.conditional.shape[1]
    rows = S // V if rows_observed else S
    jump_cost = rows * (S // V if landing_observed else S)
    step_cost = m * S * V
    return jump_cost < step_cost


backward_jump_pays = by_kind(_backward_jump_pays_dense, _backward_jump_pays_ngram, _never_pays)


@jit
def _forward_from_nothing_dense(lang, powers, ev, vec, tmp, p):
    """Start a forward walk towards ``p >= 0`` with nothing before it: ``vec = alpha`` at its first stop, returned.

    Dense HMM and sparse n-gram: ``alpha_0`` from the initial law (the stop is 0). n-gram: the
    stop is the first observed position ``q <= p`` (``p`` when there is none), and ``alpha_q`` is
    ``NGramPowers.initial_laws[q]`` times the evidence at ``q``, normalized: the masked positions
    before ``q`` crossed at once, where steps or (chained) jumps from ``alpha_0`` give the same
    vector up to round-off. ``tmp`` is an ``(S,)`` scratch vector.
    """
    forward_step(lang, ev, vec, tmp, 0)
    copy_into(tmp, vec)
    return 0


@jit(nrt=False)
def _forward_from_nothing_ngram(lang, powers, ev, vec, tmp, p):
    laws = powers.initial_laws
    S = vec.shape[0]
    V = lang.conditional.shape[1]
    q = 0
    while q < p and not observed(ev, q):
        q += 1
    if not observed(ev, q):
        for s in range(S):
            vec[s] = laws[q, s]
        return q
    v = ev.tokens[q]
    for s in range(S):
        vec[s] = 0.0
    for c in range(S // V):
        vec[c * V + v] = laws[q, c * V + v]
    normalize_class(vec, v, V, S // V)
    return q


forward_from_nothing = by_kind(_forward_from_nothing_dense, _forward_from_nothing_ngram, _forward_from_nothing_dense)
