"""A per-position store of forward and backward messages that stay valid between reveals (numba).

The posterior at a masked position ``p`` needs ``alpha_p`` and ``beta_p`` under the current
evidence (``docs/methods/sampling.md``). Instead of a full forward-backward per query, messages
are kept per position with a validity flag: revealing position ``j`` invalidates at most ``alpha``
at positions ``>= j`` and ``beta`` at positions ``< j`` (the caller clears the flags with
:func:`invalidate`), and a query recomputes from the nearest valid message: :func:`alpha_query` forward from the left,
:func:`beta_query` backward from the right. For an n-gram a separator (the last ``n-1``
positions observed) fixes the window, so a query restarts there instead of running to the
sequence's end. Runs of masked positions are crossed by one matrix-power jump when that is
cheaper (:mod:`numerics.messages.jumps`).

Revealing position ``j`` changes ``alpha`` at ``q >= j`` only up to the first separator after
``j`` (the window there is known, whatever came before) and ``beta`` at ``q < j`` only down to
the last separator before ``j``: :func:`invalidate` clears exactly those flags, so messages beyond
a separator stay valid across reveals (a dense HMM has no separators: everything on that side).
A message recomputed along another path is the same vector up to rounding (the messages are
normalized), so results can differ from a recomputation in the last bits (measured against the
store that cleared everything on that side: the same tokens, scores within 3e-13 absolute on
the four presets, L = 512). Within a step, :func:`alpha_between` starts from such a message (or a
separator) between two new positions; then the new token on the left does not matter and the
driver's chain-rule vector is the old one.

A run of masked positions between two stops of a walk is crossed by :func:`cross_forward` /
:func:`cross_backward`. For an n-gram of at least :data:`CROSS_MIN_STATES` windows (smaller
ones, a dense HMM and a sparse n-gram take the generic crossing written out in place, see
:func:`crosses_by_windows`) they read and write only the windows the evidence allows
(those ending in an observed token; the others hold exact zeros, so sums and normalizations over
the rest give the same floats), cross runs of at most :data:`STEP_RUNS` positions by single steps
(a jump reads a ``64 x 64`` block of the 256 MB power table, slower than the steps' few thousand
operations on the cache-resident conditional at ``S = 512``), and compute a backward message at an
observed position ``k`` only on the windows consistent with the run of observed positions ending
at ``k`` (:func:`~numerics.messages.steps.consistent_windows`): the other rows are never read under this or any later evidence
(the next step left drops them, or ``alpha`` is 0 there), so they are left 0. Both change the
floats only by round-off (normalizing over fewer rows; steps instead of a jump): the same tokens,
scores within 3e-13 absolute of the previous kernels on the four presets and their pruned twins,
``L = 512``, ``N = 8 .. 2048``.

A walk's ends and starts avoid the dense products (n-grams; the same messages up to round-off,
checked as above): a forward walk from nothing observed takes its first stop from the
precomputed laws ``initial P^q`` (:func:`~numerics.messages.jumps.forward_from_nothing`); a
backward message with nothing observed after it is ``P^m 1 = 1``, normalized; and with
:func:`crosses_by_windows`, a walk does not start from the (dense) message at a masked new position
of the step but from the observed position next to it (:func:`beta_query`: the next one to the right
when its message is valid; :func:`alpha_between`: the last one before it, whose ``alpha`` the previous
walk kept), so that the masked position is crossed inside a jump between observed positions
(``64 x 64`` at ``S = 512``) instead of being its dense end (``512 x 64``, or ``512 x 512`` between two
masked positions).

Every function here takes the language's arrays (:func:`~numerics.languages.arrays.kernel_arrays`),
its :class:`~numerics.messages.powers.Powers`, an :class:`~numerics.messages.steps.Evidence`,
the :class:`Messages` of the sequence and a :class:`Scratch` of vectors; build the last two
with :func:`new_messages` and :func:`new_scratch` (inside or outside numba).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics.messages.dispatch import by_kind
from numerics.messages.jumps import (
    CROSS_MIN_STATES,
    _blocks_backward,
    _blocks_forward,
    backward_jump_pays,
    forward_from_nothing,
    forward_jump_pays,
    jump_backward,
    jump_forward,
    max_power,
)
from numerics.messages.steps import (
    apply_evidence,
    backward_step,
    consistent_windows,
    copy_into,
    forward_step,
    normalize,
    normalize_class,
    observed,
    restart_at_separator,
    window_known,
    window_span,
)

STEP_RUNS = 3  # n-gram: runs of at most this many positions are crossed by single steps (module docstring)

__all__ = [
    "Messages", "Scratch", "new_messages", "new_scratch", "advance", "alpha_query", "alpha_between", "beta_query",
    "invalidate", "invalidate_alpha", "invalidate_beta", "cross_forward", "cross_backward", "crosses_by_windows",
]


class Messages(NamedTuple):
    """Forward and backward messages of one sequence, each with a validity flag per position.

    Attributes
    ----------
    alpha, beta : (L, S) float64
        ``alpha[p]`` (evidence at ``<= p``) and ``beta[p]`` (evidence at ``> p``), each normalized to sum 1.
    alpha_valid, beta_valid : (L,) bool
        Whether the row holds the message under the current evidence.
    """

    alpha: np.ndarray
    beta: np.ndarray
    alpha_valid: np.ndarray
    beta_valid: np.ndarray


class Scratch(NamedTuple):
    """Scratch vectors of the steps and jumps of one query, each ``(S,)`` float64."""

    tmp: np.ndarray
    tmp2: np.ndarray
    acc: np.ndarray


@jit
def new_messages(length, n_states):
    """Empty :class:`Messages` for ``length`` positions and ``n_states`` states (nothing valid)."""
    return Messages(
        np.empty((length, n_states)),
        np.empty((length, n_states)),
        np.zeros(length, dtype=np.bool_),
        np.zeros(length, dtype=np.bool_),
    )


@jit
def new_scratch(n_states):
    """A :class:`Scratch` for ``n_states`` states."""
    return Scratch(np.empty(n_states), np.empty(n_states), np.empty(n_states))


@jit
def _crosses_by_windows_dense(lang):
    """Whether :func:`advance` and :func:`beta_query` call :func:`cross_forward` / :func:`cross_backward`
    (the n-gram crossings, dense layout) rather than the generic crossing written out in place.

    Only an n-gram of at least :data:`CROSS_MIN_STATES` windows: below, the call per run costs
    more than it saves (paired, ``N = 512``: the ``S = 64`` 3gram 0.75x, the ``S = 32`` hmm 0.65x
    through the call; the ``S = 512`` 4gram 1.16x).
    """
    return False


@jit(nrt=False)
def _crosses_by_windows_ngram(lang):
    return lang.initial.shape[0] >= CROSS_MIN_STATES


@jit
def _crosses_by_windows_sparse(lang):
    return False


crosses_by_windows = by_kind(_crosses_by_windows_dense, _crosses_by_windows_ngram, _crosses_by_windows_sparse)


@jit(inline=True)  # inlined into advance (the generic crossing: see crosses_by_windows)
def _cross_forward_dense(lang, powers, ev, vec, scratch, cur, q):
    """Bring ``vec`` (= ``alpha`` at ``cur >= 0`` under ``ev``) to ``alpha`` at ``q > cur``; the positions in between are masked.

    One jump when that is cheaper than ``q - cur`` single steps (:func:`~numerics.messages.jumps.forward_jump_pays`),
    else single steps. n-gram: the product restricted to the windows consistent with the evidence
    at ``cur`` and ``q`` (those ending in the observed token: the others hold exact zeros), over the
    blocks of :attr:`~numerics.messages.powers.NGramPowers.blocks` (the generic jump's product up to
    round-off); runs longer than ``M`` take the generic path.
    """
    tmp, tmp2, acc = scratch.tmp, scratch.tmp2, scratch.acc
    m = q - cur
    landing = observed(ev, q)
    if m > 1 and forward_jump_pays(lang, vec, m, landing):
        vfix = ev.tokens[q] if landing else -1
        jump_forward(lang, powers, vec, tmp, m, vfix, tmp2, acc)
        copy_into(tmp, vec)
    else:
        for r in range(cur + 1, q + 1):
            forward_step(lang, ev, vec, tmp, r)
            copy_into(tmp, vec)


@jit(nrt=False)
def _cross_forward_ngram(lang, powers, ev, vec, scratch, cur, q):
    cond = lang.conditional
    S = vec.shape[0]
    V = cond.shape[1]
    C = S // V
    W = S // V
    m = q - cur
    if m > powers.blocks.shape[0] - 1:  # a chained jump (rare): the generic path
        _cross_forward_dense(lang, powers, ev, vec, scratch, cur, q)
        return
    tokens = ev.tokens
    landing = observed(ev, q)
    vfix = tokens[q] if landing else -1
    # vec is non-zero only on the windows ending in x_cur when cur is observed: s = off + k stride, k < cnt
    if observed(ev, cur):
        off, stride, cnt = tokens[cur], V, C
        u0, u1 = off, off + 1
    else:
        off, stride, cnt = 0, 1, S
        u0, u1 = 0, V
    tmp, acc = scratch.tmp, scratch.acc
    if m > 1:
        nz = 0
        for k in range(cnt):
            if vec[off + k * stride] != 0.0:
                nz += 1
        jump_cost = nz * (C if landing else S)  # forward_jump_pays
        step_cost = nz * V + (m - 1) * S * V
        if m <= STEP_RUNS or jump_cost >= step_cost:
            for r in range(cur + 1, q + 1):
                forward_step(lang, ev, vec, tmp, r)
                copy_into(tmp, vec)
            return
    if landing:  # only the windows ending in vfix: acc[c] is the window c V + vfix
        for c in range(C):
            acc[c] = 0.0
        if m == 1:  # the push form of the n-gram forward step: window s = a W + b goes to b V + vfix
            for k in range(cnt):
                s = off + k * stride
                pa = vec[s]
                if pa != 0.0:
                    acc[s % W] += pa * cond[s, vfix]
        else:  # the blocks of the rows ending in x_cur (or all) and the columns ending in vfix
            _blocks_forward(powers.blocks, m, vec, acc, u0, u1, vfix, vfix + 1, tmp)  # acc[c V + vfix]
            for c in range(C):
                acc[c] = acc[c * V + vfix]
        for t in range(S):
            vec[t] = 0.0
        for c in range(C):
            vec[c * V + vfix] = acc[c]
        normalize_class(vec, vfix, V, C)
        return
    for t in range(S):
        tmp[t] = 0.0
    if m == 1:
        for k in range(cnt):
            s = off + k * stride
            pa = vec[s]
            if pa != 0.0:
                o = (s % W) * V
                for v in range(V):
                    tmp[o + v] += pa * cond[s, v]
    else:
        _blocks_forward(powers.blocks, m, vec, tmp, u0, u1, 0, V, acc)
    normalize_class(tmp, 0, 1, S)
    copy_into(tmp, vec)


cross_forward = by_kind(_cross_forward_dense, _cross_forward_ngram, _cross_forward_dense)


@jit(inline=True)  # inlined into beta_query (the generic crossing: see crosses_by_windows)
def _cross_backward_dense(lang, powers, ev, beta, scratch, cur, k):
    """Make ``beta[k]`` the backward message at ``k < cur`` from ``beta[cur]`` (valid under ``ev``); the positions in between are masked.

    One jump when cheaper (:func:`~numerics.messages.jumps.backward_jump_pays`), else single
    steps (which also write ``beta`` at the positions in between). n-gram: the jump reads
    ``beta[cur]`` only on the windows ending in ``x_cur`` (the evidence there) and computes only the
    rows consistent with the observed run ending at ``k``, over the transposed blocks
    (:attr:`~numerics.messages.powers.NGramPowers.blocks`, in dot form; runs longer than ``M`` chain them), and
    with nothing observed after ``k`` it is ``P^m 1 = 1``, normalized (no product).
    """
    tmp, tmp2 = scratch.tmp, scratch.tmp2
    tokens = ev.tokens
    M = max_power(lang, powers)
    m = cur - k
    rows_observed = observed(ev, k)
    landing = observed(ev, cur)
    if m > 1 and backward_jump_pays(lang, m, rows_observed, landing):
        copy_into(beta[cur], tmp)  # evidence at cur times beta_cur
        if landing:
            apply_evidence(lang, tmp, tokens[cur])
        rowfix = tokens[k] if rows_observed else -1
        wfix = tokens[cur] if (m <= M and landing) else -1
        jump_backward(lang, powers, tmp, beta[k], m, rowfix, wfix, tmp2)
    else:
        for r in range(cur - 1, k - 1, -1):
            backward_step(lang, ev, beta[r + 1], beta[r], r, tmp)


@jit(nrt=False)
def _cross_backward_ngram(lang, powers, ev, beta, scratch, cur, k):
    m = cur - k
    M = powers.blocks.shape[0] - 1
    rows_observed = observed(ev, k)
    landing = observed(ev, cur)
    L = beta.shape[0]
    if cur == L - 1 and not landing:  # nothing observed after k: beta_k = P^m 1 = 1 (P is stochastic), normalized
        _uniform_rows(lang, ev, beta[k], k, rows_observed)
        return
    if m <= STEP_RUNS or not backward_jump_pays(lang, m, rows_observed, landing):
        tmp = scratch.tmp
        for r in range(cur - 1, k - 1, -1):
            backward_step(lang, ev, beta[r + 1], beta[r], r, tmp)
        return
    S = beta.shape[1]
    V = lang.conditional.shape[1]
    tokens = ev.tokens
    w = beta[cur]
    out = beta[k]
    acc = scratch.acc
    blocks = powers.blocks
    if rows_observed:  # only the windows consistent with the observed run ending at k (module docstring)
        r0, rstep, nrows = consistent_windows(lang, ev, k)
        for t in range(S):
            out[t] = 0.0
    else:
        r0, rstep, nrows = 0, 1, S
    v0, v1 = (tokens[cur], tokens[cur] + 1) if landing else (0, V)  # w times the evidence at cur: the columns ending in x_cur
    if m > M:  # chained in chunks of M (normalized after each), the first one reading w only where the evidence at cur allows
        tmp, tmp2 = scratch.tmp, scratch.tmp2
        _blocks_backward(blocks, M, w, tmp, 0, 1, S, v0, v1, acc)
        normalize(tmp)
        m -= M
        while m > M:
            _blocks_backward(blocks, M, tmp, tmp2, 0, 1, S, 0, V, acc)
            normalize(tmp2)
            copy_into(tmp2, tmp)
            m -= M
        _blocks_backward(blocks, m, tmp, out, r0, rstep, nrows, 0, V, acc)
    else:
        _blocks_backward(blocks, m, w, out, r0, rstep, nrows, v0, v1, acc)
    normalize_class(out, r0, rstep, nrows)


@jit
def _uniform_rows(lang, ev, out, k, rows_observed):
    """``out`` = the normalized ones on the rows a backward message at ``k`` computes (only those consistent with
    the observed run ending at ``k`` when ``rows_observed``, the others 0), as :func:`cross_backward` writes them."""
    S = out.shape[0]
    if rows_observed:
        r0, rstep, nrows = consistent_windows(lang, ev, k)
        for t in range(S):
            out[t] = 0.0
    else:
        r0, rstep, nrows = 0, 1, S
    for i in range(nrows):
        out[r0 + i * rstep] = 1.0
    normalize_class(out, r0, rstep, nrows)


cross_backward = by_kind(_cross_backward_dense, _cross_backward_ngram, _cross_backward_dense)


@jit
def advance(lang, powers, ev, msgs, scratch, vec, start, p, store, keep=None):  # noqa: PLR0917 -- a numba kernel: its arrays and scratch, positional on the hot path
    """Bring ``vec`` (= ``alpha`` at ``start`` under ``ev``; ``start = -1``: nothing yet) to ``alpha`` at ``p``.

    Restarts from the rightmost separator in ``(start, p)`` when there is one. From nothing, the
    walk's first stop comes from :func:`~numerics.messages.jumps.forward_from_nothing`. A run of
    masked positions followed by an observed one (or by ``p``) is crossed by one jump when that is
    cheaper than single steps. With ``store`` the messages at the positions ``< p`` where the
    walk stops (observed positions, separators) are written to ``msgs`` and flagged valid.

    Returns the last observed position before ``p`` when the walk knows it (:func:`alpha_between`):
    the stop the last crossing starts from when it is observed (n-gram of :func:`crosses_by_windows`
    with ``keep``, an ``(S,)`` vector: its ``alpha`` is copied there), ``-1`` when the walk started
    from nothing and met no observed position before ``p``, else ``-2`` (unknown).
    """
    tmp = scratch.tmp
    alpha, valid = msgs.alpha, msgs.alpha_valid  # unpacked once: a tuple field read inside a branch costs numba a reference count every time
    lo = restart_at_separator(lang, ev, vec, start, p)
    if store and lo != start:
        copy_into(vec, alpha[lo])
        valid[lo] = True
    cur = lo
    last = -2
    if cur == -1:  # the first stop from the initial law
        cur = forward_from_nothing(lang, powers, ev, vec, tmp, p)
        last = -1
        if store and cur < p:
            copy_into(vec, alpha[cur])
            valid[cur] = True
    while cur < p:
        q = cur + 1
        while q < p and not observed(ev, q):
            q += 1
        if q == p:
            last = -2
            if keep is not None and crosses_by_windows(lang) and observed(ev, cur):
                copy_into(vec, keep)
                last = cur
        if crosses_by_windows(lang):
            cross_forward(lang, powers, ev, vec, scratch, cur, q)
        else:  # the generic crossing, inlined: a call per run costs the small presets ~1.3-1.5x
            _cross_forward_dense(lang, powers, ev, vec, scratch, cur, q)
        cur = q
        if store and cur < p:
            copy_into(vec, alpha[cur])
            valid[cur] = True
    return last


@jit
def alpha_query(lang, powers, ev, msgs, scratch, vec, p, keep=None):
    """``vec = alpha_p`` under ``ev`` (``ev.hidden = -1``), from the nearest valid message or separator to the left.

    The result is also stored in ``msgs`` and flagged valid. Returns :func:`advance`'s last
    observed position before ``p`` (its ``alpha`` in ``keep``; for :func:`alpha_between`).
    """
    start = -1
    for q in range(p - 1, -1, -1):
        if msgs.alpha_valid[q]:
            start = q
            break
        if window_known(lang, ev, q, -1):
            break  # advance restarts here
    if start >= 0:
        copy_into(msgs.alpha[start], vec)
    last = advance(lang, powers, ev, msgs, scratch, vec, start, p, True, keep)
    copy_into(vec, msgs.alpha[p])
    msgs.alpha_valid[p] = True
    return last


@jit
def alpha_between(lang, powers, ev, msgs, scratch, vec, prev, p, stop, keep):  # noqa: PLR0917 -- a numba kernel
    """Bring ``vec`` (= ``alpha`` at ``prev`` under ``ev``, ``prev < p``) to ``alpha_p``; returns whether a
    separator or a valid message in ``(prev, p)`` was used, and the last observed position before ``p``.

    Starts from the nearest valid message in ``(prev, p)`` unless a separator comes first (then
    :func:`advance` restarts there), else from ``vec``. When one was found, ``alpha_p`` does not depend on
    the evidence at ``<= prev`` (a known window lies in between), and the messages the walk
    stops at are stored.

    ``stop`` is the last observed position ``< prev`` (``-1``: none, ``-2``: unknown) and ``keep``
    its ``alpha`` under ``ev``, as the previous call (or :func:`alpha_query`) returned them. For an n-gram of
    :func:`crosses_by_windows` whose ``prev`` is masked, a walk that finds nothing in ``(prev, p)`` starts
    from there (or from nothing) instead of from ``vec``: ``prev`` is then crossed inside a jump from an
    observed position (a ``64 x 64`` block at ``S = 512`` where one from the masked ``prev`` reads
    ``512`` rows). The same message up to round-off.
    """
    valid = msgs.alpha_valid
    start = prev
    shielded = False
    for q in range(p - 1, prev, -1):
        if valid[q]:
            copy_into(msgs.alpha[q], vec)
            start = q
            shielded = True
            break
        if window_known(lang, ev, q, prev):
            shielded = True
            break  # advance restarts here
    if not shielded and stop >= -1 and crosses_by_windows(lang) and not observed(ev, prev):
        start = stop
        if stop >= 0:
            copy_into(keep, vec)
    last = advance(lang, powers, ev, msgs, scratch, vec, start, p, shielded, keep)
    return shielded, last


@jit
def invalidate_alpha(lang, ev, msgs, j):
    """Clear the flags of the forward messages that revealing position ``j`` changes (module docstring).

    ``ev`` is the evidence with ``j`` observed (only which positions are observed is read): ``alpha``
    at ``q = j, j+1, ..`` up to the first ``q`` whose window is known and lies after ``j``.
    """
    aval = msgs.alpha_valid
    for q in range(j, aval.shape[0]):
        if window_known(lang, ev, q, j):
            break
        aval[q] = False


@jit
def invalidate_beta(lang, ev, msgs, j):
    """Clear the flags of the backward messages that revealing position ``j`` changes: ``beta`` at
    ``q = j-1, j-2, ..`` down to the first ``q`` with a known window in ``(q, j)`` (``ev`` as in
    :func:`invalidate_alpha`)."""
    bval = msgs.beta_valid
    span = window_span(lang)
    for q in range(j - 1, -1, -1):
        if span > 0 and q + span <= j - 1 and window_known(lang, ev, q + span, q):
            break
        bval[q] = False


@jit
def invalidate(lang, ev, msgs, j):
    """:func:`invalidate_alpha` and :func:`invalidate_beta`: every flag that revealing ``j`` changes."""
    invalidate_alpha(lang, ev, msgs, j)
    invalidate_beta(lang, ev, msgs, j)


@jit
def beta_query(lang, powers, ev, msgs, scratch, p):
    """Make ``msgs.beta[p]`` valid under ``ev`` (``ev.hidden = -1``), from the nearest valid message or separator to the right.

    Runs of masked positions are crossed by a jump when cheaper (as in :func:`advance`).
    """
    beta, valid = msgs.beta, msgs.beta_valid
    L = beta.shape[0]
    if valid[p]:
        return
    start = L - 1
    for q in range(p + 1, L):
        if valid[q]:
            start = q
            break
        if window_known(lang, ev, q, p):
            start = q
            break
    if crosses_by_windows(lang) and valid[start] and not observed(ev, start):
        # a valid message at a masked position (a new position's, dense): start instead from the next
        # observed position when its message is valid, or from the end when there is none, so that
        # the masked one is crossed inside a jump between observed positions (module docstring)
        o = start + 1
        while o < L and not observed(ev, o):
            o += 1
        if o == L:
            start = L - 1
        elif valid[o]:
            start = o
    if not valid[start]:
        beta[start, :] = 1.0
        valid[start] = True
    cur = start
    while cur > p:
        k = cur - 1
        while k > p and not observed(ev, k):
            k -= 1
        if crosses_by_windows(lang):
            cross_backward(lang, powers, ev, beta, scratch, cur, k)
        else:  # the generic crossing, inlined (as in advance)
            _cross_backward_dense(lang, powers, ev, beta, scratch, cur, k)
        cur = k
        valid[cur] = True
