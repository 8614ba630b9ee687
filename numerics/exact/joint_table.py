"""The explicit joint law of a tiny language: ``q(x)`` for every ``x`` in ``V^L``, and its marginals.

The brute-force oracles of the exact methods (:mod:`numerics.exact.enumerate`,
:mod:`numerics.exact.dp`, :mod:`numerics.exact.information_curve`) work on the whole table

* ``q[x_1, .., x_L]``, an ``L``-dimensional array of shape ``(V,) * L``;
* the *masked marginal table* ``Q``, shape ``(V+1,) * L``: the index ``V`` on an axis means
  "this position is masked", so ``Q[w] = q(x_R = w_R)`` for the revealed set
  ``R = {j : w_j < V}``. It is ``q`` with every axis extended by its sum;
* the *subset entropies* ``H(X_T)`` for all ``2^L`` sets ``T`` (bit ``j`` of the index = position
  ``j``, 0-based), in nats.

Tables are built exactly: for an HMM by the forward contraction over hidden states
``q(x_1..x_L) = sum_z mu(z_1) e(z_1, x_1) prod_j A(z_{j-1}, z_j) e(z_j, x_j)`` (no masking code
involved, so it is independent of the forward-backward it may be compared with), for any other
language object with a ``log_prob(tokens)`` method (e.g. :class:`~numerics.languages.interval.IntervalLanguage`)
by evaluating it on all ``V^L`` sequences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import entr

from numerics.tolerances import PROB_SUM_ATOL

__all__ = [
    "MAX_TABLE_ENTRIES",
    "joint_table",
    "as_table",
    "all_sequences",
    "masked_marginal_table",
    "subset_entropies",
]

MAX_TABLE_ENTRIES = 1 << 24  # V^L above this (128 MiB of float64) is not a "tiny" case; refuse it


def _check_size(vocab: int, length: int) -> None:
    if int(length) != length or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    if vocab ** length > MAX_TABLE_ENTRIES:
        raise ValueError(
            f"V^L = {vocab}^{length} = {vocab ** length} sequences exceed MAX_TABLE_ENTRIES = "
            f"{MAX_TABLE_ENTRIES}; the brute-force table is for tiny cases only"
        )


def all_sequences(vocab: int, length: int) -> np.ndarray:
    """All ``V^L`` sequences in C (row-major) order of the table axes, ``(V^L, L)`` int64."""
    _check_size(vocab, length)
    grids = np.indices((vocab,) * length).reshape(length, -1)
    return np.ascontiguousarray(grids.T.astype(np.int64))


def joint_table(language: Any, length: int) -> np.ndarray:
    """``q(x)`` for all ``x`` in ``V^L``, an array of shape ``(V,) * L`` (read-only, float64).

    Parameters
    ----------
    language : HMM, NGram, or any object with ``vocab_size`` and ``log_prob(tokens) -> (B,)``
        HMMs and n-grams (via ``to_hmm()``) use the forward contraction over hidden states;
        other objects are evaluated on every sequence.
    length : int
        ``L``; ``V^L`` must not exceed :data:`MAX_TABLE_ENTRIES`.
    """
    V = int(language.vocab_size)
    _check_size(V, length)
    if hasattr(language, "to_hmm"):
        hmm = language.to_hmm()
        A, E = hmm.transition, hmm.emission
        alpha = (hmm.initial[:, None] * E).T  # (V, S): alpha[x_1, z_1]
        for _ in range(1, length - 1):
            # (V^j, S) @ (S, S) -> (V^j, 1, S) * (1, V, S) -> (V^(j+1), S)
            alpha = ((alpha @ A)[:, None, :] * E.T[None, :, :]).reshape(-1, hmm.n_states)
        # the last position summed over z_L at once, (V^(L-1), S) @ (S, V): no (V^L, S) array (S times the table)
        q = (alpha @ A) @ E if length > 1 else alpha.sum(axis=1)
    elif hasattr(language, "log_prob"):
        with np.errstate(under="ignore"):
            q = np.exp(np.asarray(language.log_prob(all_sequences(V, length)), dtype=np.float64))
    else:
        raise TypeError(f"cannot tabulate a {type(language).__name__}: need to_hmm() or log_prob()")
    q = np.ascontiguousarray(q.reshape((V,) * length))
    q.setflags(write=False)
    return q


def as_table(language_or_table: Any, length: int | None = None) -> np.ndarray:
    """A validated joint table: an ndarray ``(V,) * L`` is checked and returned, a language tabulated.

    A given table must be non-negative, finite, of equal axis lengths and sum to 1 within
    ``PROB_SUM_ATOL``; ``length``, if given, must match its number of axes.
    """
    if not isinstance(language_or_table, np.ndarray):
        if length is None:
            raise ValueError("length is required when a language (not a table) is given")
        return joint_table(language_or_table, length)
    q = np.asarray(language_or_table, dtype=np.float64)
    if q.ndim < 1 or len(set(q.shape)) != 1 or q.shape[0] < 1:
        raise ValueError(f"a joint table must have shape (V,) * L, got {q.shape}")
    if length is not None and q.ndim != length:
        raise ValueError(f"table has {q.ndim} axes but length {length} was requested")
    _check_size(q.shape[0], q.ndim)
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError("a joint table must be finite and non-negative")
    if abs(q.sum() - 1.0) > PROB_SUM_ATOL:
        raise ValueError(f"joint table sums to {q.sum()!r}, not 1 (tolerance {PROB_SUM_ATOL})")
    q = np.array(q)  # private copy
    q.setflags(write=False)
    return q


def masked_marginal_table(q: np.ndarray) -> np.ndarray:
    """``Q`` of shape ``(V+1,) * L``: ``Q[w] = q(x_R = w_R)``, index ``V`` = masked (module docstring).

    Built by appending, along each axis in turn, the sum over that axis (the marginal of the
    other positions). ``Q[(V,) * L] = 1`` up to round-off.
    """
    table = np.asarray(q, dtype=np.float64)
    for axis in range(table.ndim):
        table = np.concatenate([table, table.sum(axis=axis, keepdims=True)], axis=axis)
    table = np.ascontiguousarray(table)
    table.setflags(write=False)
    return table


def subset_entropies(q: np.ndarray) -> np.ndarray:
    """``H[T] = H(X_T)`` in nats for all ``2^L`` subsets (bit ``j`` = position ``j``); ``H[0] = 0``.

    ``H(X_T) = -sum_{x_T} q_T(x_T) log q_T(x_T)`` with ``0 log 0 = 0`` (``scipy.special.entr``), each
    marginal read off the masked marginal table (``(V+1)^L`` work in all).
    """
    Q = masked_marginal_table(q)
    V, L = Q.shape[0] - 1, Q.ndim
    out = np.empty(1 << L)
    for mask in range(1 << L):
        block = Q[tuple(slice(0, V) if (mask >> j) & 1 else V for j in range(L))]
        out[mask] = entr(block).sum()
    return out
