"""A per-position store of forward and backward messages that stay valid between reveals (numba).

The posterior at a masked position ``p`` needs ``alpha_p`` and ``beta_p`` under the current
evidence (``docs/methods/sampling.md``). Instead of a full forward-backward per query, messages
are kept per position with a validity flag: revealing position ``j`` invalidates at most ``alpha``
at positions ``>= j`` and ``beta`` at positions ``< j`` (the caller clears the flags with
:func:`invalidate`), and a query recomputes from the nearest valid message: :func:`alpha_query` forward from the left,
:func:`beta_query` backward from the right. For an n-gram a separator (the last ``n-1``
positions observed) fixes the window, so a query restarts there instead of running to the
sequence's end. Runs of masked positions are crossed by one matrix-power jump when that is
cheaper (:mod:`numerics.sampling.oracle.jumps`).

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

Every function here takes the language's arrays (:func:`~numerics.languages.arrays.kernel_arrays`),
its :class:`~numerics.sampling.oracle.jumps.Powers`, an :class:`~numerics.sampling.oracle.steps.Evidence`,
the :class:`Messages` of the sequence and a :class:`Scratch` of vectors; build the last two
with :func:`new_messages` and :func:`new_scratch` (inside or outside numba).
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from numerics.sampling.oracle.jumps import backward_jump_pays, forward_jump_pays, jump_backward, jump_forward
from numerics.sampling.oracle.steps import (
    apply_evidence,
    backward_step,
    forward_step,
    observed,
    restart_at_separator,
    window_known,
    window_span,
)

__all__ = [
    "Messages", "Scratch", "new_messages", "new_scratch", "advance", "alpha_query", "alpha_between", "beta_query",
    "invalidate", "invalidate_alpha", "invalidate_beta",
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


@nb.njit(cache=True)
def new_messages(length, n_states):
    """Empty :class:`Messages` for ``length`` positions and ``n_states`` states (nothing valid)."""
    return Messages(
        np.empty((length, n_states)),
        np.empty((length, n_states)),
        np.zeros(length, dtype=np.bool_),
        np.zeros(length, dtype=np.bool_),
    )


@nb.njit(cache=True)
def new_scratch(n_states):
    """A :class:`Scratch` for ``n_states`` states."""
    return Scratch(np.empty(n_states), np.empty(n_states), np.empty(n_states))


@nb.njit(cache=True)
def advance(lang, powers, ev, msgs, scratch, vec, start, p, store):  # noqa: PLR0917 -- a numba kernel: its arrays and scratch, positional on the hot path
    """Bring ``vec`` (= ``alpha`` at ``start`` under ``ev``; ``start = -1``: nothing yet) to ``alpha`` at ``p``.

    Restarts from the rightmost separator in ``(start, p)`` when there is one. A run of masked
    positions followed by an observed one (or by ``p``) is crossed by one jump when that is
    cheaper than single steps. With ``store`` the messages at the positions ``< p`` where the
    walk stops (observed positions, separators) are written to ``msgs`` and flagged valid.
    """
    tmp, tmp2, acc = scratch.tmp, scratch.tmp2, scratch.acc  # unpacked once: a tuple field read inside a
    alpha, valid = msgs.alpha, msgs.alpha_valid  # branch costs numba a reference count every time
    tokens = ev.tokens
    lo = restart_at_separator(lang, ev, vec, start, p)
    if store and lo != start:
        alpha[lo, :] = vec
        valid[lo] = True
    cur = lo
    if cur == -1:  # alpha_0 from the initial law
        forward_step(lang, ev, vec, tmp, 0)
        vec[:] = tmp
        cur = 0
        if store and cur < p:
            alpha[cur, :] = vec
            valid[cur] = True
    while cur < p:
        q = cur + 1
        while q < p and not observed(ev, q):
            q += 1
        m = q - cur
        landing = observed(ev, q)
        if m > 1 and forward_jump_pays(lang, vec, m, landing):
            vfix = tokens[q] if landing else -1
            jump_forward(lang, powers, vec, tmp, m, vfix, tmp2, acc)
            vec[:] = tmp
        else:
            for r in range(cur + 1, q + 1):
                forward_step(lang, ev, vec, tmp, r)
                vec[:] = tmp
        cur = q
        if store and cur < p:
            alpha[cur, :] = vec
            valid[cur] = True


@nb.njit(cache=True)
def alpha_query(lang, powers, ev, msgs, scratch, vec, p):
    """``vec = alpha_p`` under ``ev`` (``ev.hidden = -1``), from the nearest valid message or separator to the left.

    The result is also stored in ``msgs`` and flagged valid.
    """
    start = -1
    for q in range(p - 1, -1, -1):
        if msgs.alpha_valid[q]:
            start = q
            break
        if window_known(lang, ev, q, -1):
            break  # advance restarts here
    if start >= 0:
        vec[:] = msgs.alpha[start]
    advance(lang, powers, ev, msgs, scratch, vec, start, p, True)
    msgs.alpha[p, :] = vec
    msgs.alpha_valid[p] = True


@nb.njit(cache=True)
def alpha_between(lang, powers, ev, msgs, scratch, vec, prev, p):
    """Bring ``vec`` (= ``alpha`` at ``prev`` under ``ev``, ``prev < p``) to ``alpha_p``; returns whether a
    separator or a valid message in ``(prev, p)`` was used.

    Starts from the nearest valid message in ``(prev, p)`` unless a separator comes first (then
    :func:`advance` restarts there), else from ``vec``. When one was found, ``alpha_p`` does not depend on
    the evidence at ``<= prev`` (a known window lies in between), and the messages the walk
    stops at are stored.
    """
    valid = msgs.alpha_valid
    start = prev
    shielded = False
    for q in range(p - 1, prev, -1):
        if valid[q]:
            vec[:] = msgs.alpha[q]
            start = q
            shielded = True
            break
        if window_known(lang, ev, q, prev):
            shielded = True
            break  # advance restarts here
    advance(lang, powers, ev, msgs, scratch, vec, start, p, shielded)
    return shielded


@nb.njit(cache=True)
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


@nb.njit(cache=True)
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


@nb.njit(cache=True)
def invalidate(lang, ev, msgs, j):
    """:func:`invalidate_alpha` and :func:`invalidate_beta`: every flag that revealing ``j`` changes."""
    invalidate_alpha(lang, ev, msgs, j)
    invalidate_beta(lang, ev, msgs, j)


@nb.njit(cache=True)
def beta_query(lang, powers, ev, msgs, scratch, p):
    """Make ``msgs.beta[p]`` valid under ``ev`` (``ev.hidden = -1``), from the nearest valid message or separator to the right.

    Runs of masked positions are crossed by a jump when cheaper (as in :func:`advance`).
    """
    beta, valid = msgs.beta, msgs.beta_valid
    tmp, tmp2 = scratch.tmp, scratch.tmp2
    tokens = ev.tokens
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
    if not valid[start]:
        beta[start, :] = 1.0
        valid[start] = True
    M = powers.matrices.shape[0] - 1
    cur = start
    while cur > p:
        k = cur - 1
        while k > p and not observed(ev, k):
            k -= 1
        m = cur - k
        rows_observed = observed(ev, k)
        landing = observed(ev, cur)
        if m > 1 and backward_jump_pays(lang, m, rows_observed, landing):
            tmp[:] = beta[cur]  # evidence at cur times beta_cur
            if landing:
                apply_evidence(lang, tmp, tokens[cur])
            rowfix = tokens[k] if rows_observed else -1
            wfix = tokens[cur] if (m <= M and landing) else -1
            jump_backward(lang, powers, tmp, beta[k], m, rowfix, wfix, tmp2)
        else:
            for r in range(cur - 1, k - 1, -1):
                backward_step(lang, ev, beta[r + 1], beta[r], r, tmp)
        cur = k
        valid[cur] = True
