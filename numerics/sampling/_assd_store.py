"""ASSD in a random order on the per-position message store (numba): the draft, verify and commit passes.

Any-subset speculative decoding in a random order (:class:`numerics.sampling.lossless.Assd`) asks, per
round and sequence, for the posterior ``q(x_j | x_S)`` at the ``w`` window positions (the draft) and
for ``q(x_{w_m} | x_S, y_<m)`` at window position ``m = 1 .. w-1`` given the drafts before it (the
verify). A masked forward-backward per canvas costs ``O(L)`` per query, ``O(L^2)`` per sequence.
Here each sequence keeps the message store of :mod:`numerics.messages.store` across rounds, under an
:class:`~numerics.messages.steps.Evidence` whose ``reveal_steps`` is the *rank* of each position in
the sequence's order (``rank[sigma_t] = t``): the committed positions are those of rank ``< pos``,
and canvas ``m`` of the verify is the threshold ``pos + m`` (the window's position ``m`` has rank
``pos + m``). A query recomputes messages only from the nearest valid one or separator (for an
n-gram the nearest observed window: a few positions), so a round costs about what its queries touch.

Per round, for the rows of a batch (the Python loop in :meth:`Assd.sample` draws the uniforms
between the passes, in the same order and shapes as with the forward-backward):

* :func:`assd_draft`: the draft marginals under the committed evidence;
* :func:`assd_verify`: draft ``y_{m-1}`` is written and revealed (its messages invalidated), then the
  conditional at ``w_m`` is queried, for ``m = 1 .. w-1``; the store ends valid under canvas ``w-1``;
* :func:`assd_commit`: the drafts not committed (from the rejected one on) are un-revealed, their
  invalidations taken under canvas ``w-1`` (where they are observed: the union of what depends on
  any of them); the committed tokens are written (the residual's at the rejection) and the last one
  revealed under the new evidence.

A canvas whose drafts are jointly impossible (``q(x_S, y_<m) = 0``) gets the uniform law where its
messages vanish (the convention of :func:`numerics.sampling.lossless._marginals`); it lies past the
first rejection (a drafted token of conditional probability 0 is rejected), so its values are never
read. The messages are the forward-backward's up to round-off (the same tokens sample by sample:
``tests/numerics/test_lossless.py``).

Each pass is a ``nogil`` kernel over a chunk of rows (:func:`numerics._threads.run_chunks`) that
allocates its vectors and calls the per-row loop, which for the dense HMM and the dense n-gram is
compiled without reference counts (:func:`~numerics.messages.dispatch.by_kind`, as the oracle
driver's ``reveal_sequence``): faster, and the message walks it calls are then compiled as the
driver's are (a first compile of the three passes after the driver's: 15 CPU-s on the hmm kind
against 35). A numba function called from both kinds of per-row loop with the same argument types
would be compiled once, under the flags of its first caller, and then take or drop counts wrongly in
the other (it corrupted memory): the loops call only functions whose types include the language's
arrays (:func:`_posterior`, the store's walks), and build their :class:`~numerics.messages.store.Messages`
in place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics.messages.dispatch import by_kind
from numerics.messages.steps import Evidence, token_marginal
from numerics.messages.store import Messages, Scratch, alpha_query, beta_query, invalidate, new_scratch

__all__ = ["AssdStores", "assd_commit", "assd_draft", "assd_verify", "new_stores", "store_bytes"]


class AssdStores(NamedTuple):
    """The message stores of ``n`` sequences and their evidence.

    Attributes
    ----------
    rank : (n, L) int64
        Each position's rank in its sequence's order (the evidence's ``reveal_steps``).
    tokens : (n, L) int64
        Committed tokens (and drafts, read only where observed).
    alpha, beta : (n, L, S) float64
    alpha_valid, beta_valid : (n, L) bool
    """

    rank: np.ndarray
    tokens: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    alpha_valid: np.ndarray
    beta_valid: np.ndarray


def store_bytes(n: int, length: int, n_states: int) -> int:
    """Bytes of :func:`new_stores` for ``n`` sequences of ``length`` positions and ``n_states`` states."""
    return int(n) * int(length) * (2 * int(n_states) * 8 + 2 * 8 + 2)


def new_stores(order: np.ndarray, n_states: int) -> AssdStores:
    """Empty stores (nothing valid, nothing committed) for the orders ``order`` ``(n, L)`` of the sequences."""
    n, L = order.shape
    rank = np.empty((n, L), dtype=np.int64)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(L), (n, L)), axis=1)
    return AssdStores(rank, np.zeros((n, L), dtype=np.int64), np.empty((n, L, n_states)), np.empty((n, L, n_states)),
                      np.zeros((n, L), dtype=np.bool_), np.zeros((n, L), dtype=np.bool_))


class _Vectors(NamedTuple):
    """The vectors of one thread: the store's :class:`~numerics.messages.store.Scratch`, ``alpha`` at the query
    (``va``), the walk's kept ``alpha`` (``keep``, passed as the oracle driver passes it) and a token posterior ``m``."""

    scratch: Scratch
    va: np.ndarray
    keep: np.ndarray
    m: np.ndarray


@jit
def _vectors(n_states, vocab_size):
    return _Vectors(new_scratch(n_states), np.empty(n_states), np.empty(n_states), np.empty(vocab_size))


@jit
def _posterior(lang, powers, ev, msgs, vec, p, out):  # noqa: PLR0917 -- a numba kernel
    """``out[v] = q(x_p = v | ev)`` at a masked position ``p`` (uniform where the evidence is impossible)."""
    beta_query(lang, powers, ev, msgs, vec.scratch, p)
    alpha_query(lang, powers, ev, msgs, vec.scratch, vec.va, p, vec.keep)
    m = vec.m
    total = token_marginal(lang, vec.va, msgs.beta[p], m)
    V = out.shape[0]
    if total > 0.0:
        for v in range(V):
            out[v] = m[v] / total
    else:
        for v in range(V):
            out[v] = 1.0 / V


def _draft_rows(lang, powers, st, rows, pos, win, width, marg, vec, lo, hi):  # noqa: PLR0917 -- a numba kernel
    for i in range(lo, hi):
        b = rows[i]
        msgs = Messages(st.alpha[b], st.beta[b], st.alpha_valid[b], st.beta_valid[b])
        ev = Evidence(st.rank[b], st.tokens[b], pos[i], -1)
        w = width[i]
        for k in range(w):
            _posterior(lang, powers, ev, msgs, vec, win[i, k], marg[i, k])
        for k in range(w, marg.shape[1]):
            for v in range(marg.shape[2]):
                marg[i, k, v] = marg[i, w - 1, v]


def _verify_rows(lang, powers, st, rows, pos, win, width, drafts, cond, vec, lo, hi):  # noqa: PLR0917 -- a numba kernel
    for i in range(lo, hi):
        b = rows[i]
        msgs = Messages(st.alpha[b], st.beta[b], st.alpha_valid[b], st.beta_valid[b])
        x = st.tokens[b]
        for k in range(1, width[i]):
            prev = win[i, k - 1]
            x[prev] = drafts[i, k - 1]
            ev = Evidence(st.rank[b], x, pos[i] + k, -1)
            invalidate(lang, ev, msgs, prev)
            _posterior(lang, powers, ev, msgs, vec, win[i, k], cond[i, k])


def _commit_rows(lang, st, rows, pos, win, width, tokens, count, lo, hi):  # noqa: PLR0917 -- a numba kernel
    for i in range(lo, hi):
        b = rows[i]
        msgs = Messages(st.alpha[b], st.beta[b], st.alpha_valid[b], st.beta_valid[b])
        x = st.tokens[b]
        w, c = width[i], count[i]
        if w > 1:  # the store is valid under canvas w - 1: un-reveal the drafts from the first one not kept as drafted
            spec = Evidence(st.rank[b], x, pos[i] + w - 1, -1)
            first = c - 1 if c < w else w - 1  # a rejection at c - 1 changed that token
            for k in range(first, w - 1):
                invalidate(lang, spec, msgs, win[i, k])
        for k in range(c):
            x[win[i, k]] = tokens[i, k]
        invalidate(lang, Evidence(st.rank[b], x, pos[i] + c, -1), msgs, win[i, c - 1])


# the dense HMM and dense n-gram versions without reference counts, as the oracle driver's (they allocate nothing)
_draft_rows_nrt_free = jit(nrt=False)(_draft_rows)
_verify_rows_nrt_free = jit(nrt=False)(_verify_rows)
_commit_rows_nrt_free = jit(nrt=False)(_commit_rows)
draft_rows = by_kind(_draft_rows_nrt_free, _draft_rows_nrt_free, jit(_draft_rows))
verify_rows = by_kind(_verify_rows_nrt_free, _verify_rows_nrt_free, jit(_verify_rows))
commit_rows = by_kind(_commit_rows_nrt_free, _commit_rows_nrt_free, jit(_commit_rows))


@jit(nogil=True)
def assd_draft(lang, powers, st, rows, pos, win, width, marg, lo, hi):  # noqa: PLR0917 -- a numba kernel
    """Rows ``i = lo..hi-1``: ``marg[i, k] = q(x_{win[i, k]} | committed)`` for ``k < width[i]``; the rows past
    the width repeat the last one (never read)."""
    draft_rows(lang, powers, st, rows, pos, win, width, marg, _vectors(st.alpha.shape[2], marg.shape[2]), lo, hi)


@jit(nogil=True)
def assd_verify(lang, powers, st, rows, pos, win, width, drafts, cond, lo, hi):  # noqa: PLR0917 -- a numba kernel
    """Rows ``i = lo..hi-1``: ``cond[i, k] = q(x_{win[i, k]} | committed, drafts[i, <k])`` for ``1 <= k < width[i]``
    (module docstring); ``cond[i, 0]`` and the rows past the width are left to the caller."""
    verify_rows(lang, powers, st, rows, pos, win, width, drafts, cond, _vectors(st.alpha.shape[2], cond.shape[2]),
                lo, hi)


@jit(nogil=True)
def assd_commit(lang, st, rows, pos, win, width, tokens, count, lo, hi):  # noqa: PLR0917 -- a numba kernel
    """Rows ``i = lo..hi-1``: commit ``tokens[i, :count[i]]`` at ``win[i, :count[i]]`` after :func:`assd_verify`
    (module docstring); the caller then advances ``pos`` by ``count``."""
    commit_rows(lang, st, rows, pos, win, width, tokens, count, lo, hi)
