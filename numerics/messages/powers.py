"""Precomputed powers of a language's transition matrix ``P``: one builder per use, one cache, one memory cap.

Three kernels read powers ``P^m`` computed once per language and sequence length:

* the jumps across masked runs (:mod:`numerics.messages.jumps`) read :data:`Powers`
  (:func:`language_powers`): ``P^m`` for ``m <= M``, ``M`` capped so that the tables fit in
  :data:`POWERS_BYTES`, in the layout the language's jumps read (module :mod:`~numerics.messages.jumps`);
* the adaptive kernels' chain path reads a 2-gram's :class:`~numerics.messages.layouts.ChainArrays`
  (:func:`chain_powers`): every ``P^d``, ``d <= L``, rows and columns, with the initial law's;
* the closed-form sampler of a large first-order chain (:func:`numerics.sampling.oracle.chain.chain_tables`)
  reads memoized rows and columns of ``P^d`` up to its cut-off.

The jumps' powers are one typed object per language kind (the kernels are compiled once per kind
already, so a kind's own type adds no specialisation): :class:`DensePowers` for an HMM,
:class:`NGramPowers` for an n-gram, :class:`NoPowers` (empty) for a sparse n-gram, which never jumps.
One kind keeps placeholder arrays: an n-gram stores its powers either whole (``matrices``,
``by_token``: fewer than :data:`CROSS_MIN_STATES` windows) or in token blocks (``blocks``: more),
and :class:`NGramPowers` holds both layouts, the unused one as ``(1, ..., 1)`` arrays never read.
The layout is chosen at run time from the number of windows
(:func:`~numerics.messages.store.crosses_by_windows`, ``blocks.shape[0] > 1`` in the jumps) inside
kernels compiled once for every :class:`~numerics.languages.arrays.NGramArrays`; two types would
compile every reveal kernel (and its crossings, jumps and queries) a second time for the
``NGramArrays`` of the other layout, the largest compile of the package, whenever one process
samples a small and a large n-gram (the ``3gram`` and ``4gram`` presets, a sweep over both).
Splitting them would need the layout in the arrays' type as well (a second n-gram arrays type),
with the same cost.

Each is kept in :data:`POWERS_CACHE` (a :class:`PowersCache`), the one cache of them: the tables of the
last few languages, so that repeated calls on one language (a sweep's points, a Monte Carlo run's
batches) build them once. Languages are immutable, so a table stays valid while its language lives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from numerics.languages.hmm import Language, NGram
from numerics.messages.layouts import ChainArrays

__all__ = ["POWERS_BYTES", "CROSS_MIN_STATES", "POWERS_CACHE", "PowersCache", "Powers", "DensePowers", "NGramPowers",
           "NoPowers", "language_powers", "chain_powers", "no_powers"]

POWERS_BYTES = 256 * 2**20  # memory for the precomputed jump powers of one language (language_powers)
CROSS_MIN_STATES = 256  # n-grams with fewer windows take the generic crossing and jumps (store.crosses_by_windows)


class PowersCache:
    """The tables of powers of the last ``entries`` (language, use) pairs, by the language object's identity.

    A table is found again only for the same language object (it holds a reference to it, so the
    identity cannot be reused) and the same use (``"jumps"``, ``"chain"``, ``"chain-tables"``); the caller
    decides whether what is stored covers what it needs (a longer length, other options).
    """

    def __init__(self, entries: int = 5):
        self.entries = entries
        self._tables: dict = {}

    def get(self, language, use: str, accept: Callable[[object], bool] | None = None):
        """The table stored for ``language`` and ``use`` (``None``: none, or one ``accept`` refuses)."""
        hit = self._tables.get((id(language), use))
        if hit is None or hit[0] is not language or (accept is not None and not accept(hit[1])):
            return None
        return hit[1]

    def put(self, language, use: str, table):
        """Store ``table`` for ``language`` and ``use`` (the oldest entry leaves when full); returns ``table``."""
        key = (id(language), use)
        self._tables.pop(key, None)
        while len(self._tables) >= self.entries:
            self._tables.pop(next(iter(self._tables)))
        self._tables[key] = (language, table)
        return table

    def clear(self) -> None:
        """Forget every table."""
        self._tables.clear()


POWERS_CACHE = PowersCache()




class DensePowers(NamedTuple):
    """Precomputed powers ``P^0 .. P^M`` of a dense HMM's transition matrix (its jumps', :mod:`~numerics.messages.jumps`).

    Attributes
    ----------
    stacked, stacked_t : ((M + 1) S, S) float64
        ``stacked[m S + s] = P^m[s]`` and ``stacked_t[m S + t] = (P^m)^T[t]``, the columns of ``P^m`` as rows, so
        a backward jump ``P^m w = w (P^m)^T`` runs in axpy form over contiguous rows, like a forward jump. The
        jumps index them with a row offset instead of taking a view of one power, whose reference count numba
        would take and drop on every crossing.
    """

    stacked: np.ndarray
    stacked_t: np.ndarray

    @property
    def max_power(self) -> int:
        """``M``: longer runs chain ``P^M``."""
        return self.stacked.shape[0] // self.stacked.shape[1] - 1


class NGramPowers(NamedTuple):
    """Precomputed powers ``P^0 .. P^M`` of an n-gram's window transition matrix, in one of two layouts.

    An n-gram of fewer than :data:`CROSS_MIN_STATES` windows keeps ``matrices`` and ``by_token`` (its generic
    jumps); a larger one keeps ``blocks`` (its crossings, :func:`~numerics.messages.store.cross_forward`), and
    the other layout's fields are ``(1, ..., 1)`` placeholders, never read. They stay because the layout is
    chosen at run time, by the number of windows, inside kernels compiled once for every
    :class:`~numerics.languages.arrays.NGramArrays` (module docstring).

    Attributes
    ----------
    matrices : (M + 1, S, S) float64
        ``matrices[m] = P^m`` (fewer than :data:`CROSS_MIN_STATES` windows; else a ``(1, 1, 1)`` placeholder).
    by_token : (M + 1, V, S, S // V) float64
        ``by_token[m, v, s, c] = P^m[s, c V + v]``, the columns of the windows ending in ``v``, contiguous (fewer
        than :data:`CROSS_MIN_STATES` windows; else a ``(1, 1, 1, 1)`` placeholder).
    blocks : (M + 1, V, V, S // V, S // V) float64
        At least :data:`CROSS_MIN_STATES` windows: ``P^m`` cut into the ``V x V`` blocks of the windows ending in
        one token (rows ``k V + u``, columns ``c V + v``), each contiguous: ``blocks[m, v, u, k, c] = P^m[k V + u,
        c V + v]``. A forward jump from an observed token ``u`` to an observed ``v`` reads the one ``(S/V) x (S/V)``
        block ``blocks[m, v, u]`` in axpy form over its rows, a backward jump the same block in dot form over its
        rows (:func:`~numerics.messages.jumps._blocks_backward`); a masked end takes every block of that side.
        Otherwise a ``(1, 1, 1, 1, 1)`` placeholder: on ``S = 64`` windows the generic jumps over ``matrices`` /
        ``by_token`` are faster (blocks of ``8 x 8``).
    initial_laws : (length, S) float64
        ``initial_laws[p] = normalize(initial P^p)``, the law of the window at position ``p`` with nothing
        observed before it (a forward walk from nothing starts at its first observed position from this row,
        :func:`~numerics.messages.jumps.forward_from_nothing`).
    """

    matrices: np.ndarray
    by_token: np.ndarray
    blocks: np.ndarray
    initial_laws: np.ndarray

    @property
    def max_power(self) -> int:
        """``M``: longer runs chain ``P^M``."""
        return max(self.matrices.shape[0], self.blocks.shape[0]) - 1


class NoPowers(NamedTuple):
    """The powers of a sparse n-gram: none (``P^m`` fills in; it never jumps, :mod:`~numerics.messages.jumps`)."""

    @property
    def max_power(self) -> int:
        """``M = 0``."""
        return 0


#: The powers of one language kind: :class:`DensePowers` (HMM), :class:`NGramPowers`, :class:`NoPowers` (sparse n-gram).
Powers = DensePowers | NGramPowers | NoPowers


def language_powers(language: Language, length: int) -> DensePowers | NGramPowers:
    """``P^m`` for ``m = 0..M``, ``M = min(length, memory cap)``, cached per language object (languages are immutable).

    The cap: ``M + 1`` matrices in each layout fit in :data:`POWERS_BYTES` (at least ``M = 1``).
    A language that is neither an :class:`~numerics.languages.hmm.HMM` nor an n-gram (the interval
    language) is read through its ``kernel_language()``, as :func:`~numerics.languages.arrays.kernel_arrays` does.
    """
    resolve = getattr(language, "kernel_language", None)
    if resolve is None:
        raise TypeError(f"language_powers needs a language (HMM, NGram or one with kernel_language()), "
                        f"got {type(language).__name__}")
    language = resolve()
    if isinstance(language, NGram):
        S, V = language.n_states, language.vocab_size
        P = np.zeros((S, S))
        np.put_along_axis(P, language.successors(), language.conditional, axis=1)
        layouts = 1 if S >= CROSS_MIN_STATES else 2
    else:
        P = np.array(language.transition)
        S, V = P.shape[0], 1
        layouts = 2
    M = int(max(1, min(length, POWERS_BYTES // (layouts * 8 * S * S) - 1)))
    hit = POWERS_CACHE.get(language, "jumps",
                           lambda p: p.max_power >= M and (V == 1 or p.initial_laws.shape[0] >= length))
    if hit is not None:
        return hit
    if V == 1:  # dense HMM
        Pm = _matrix_powers(P, M)
        stacked_t = np.ascontiguousarray(Pm.transpose(0, 2, 1)).reshape((M + 1) * S, S)
        return POWERS_CACHE.put(language, "jumps", DensePowers(Pm.reshape((M + 1) * S, S), stacked_t))
    laws = _initial_laws(np.asarray(language.initial), P, length)
    if S >= CROSS_MIN_STATES:
        table = NGramPowers(np.zeros((1, 1, 1)), np.zeros((1, 1, 1, 1)), _power_blocks(P, M, V), laws)
    else:
        Pm = _matrix_powers(P, M)
        by_token = np.ascontiguousarray(Pm.reshape(M + 1, S, S // V, V).transpose(0, 3, 1, 2))
        table = NGramPowers(Pm, by_token, np.zeros((1, 1, 1, 1, 1)), laws)
    return POWERS_CACHE.put(language, "jumps", table)


def _matrix_powers(P: np.ndarray, M: int) -> np.ndarray:
    """``(M + 1, S, S)``: ``P^0 .. P^M``."""
    Pm = np.empty((M + 1,) + P.shape)
    Pm[0] = np.eye(P.shape[0])
    for m in range(1, M + 1):
        np.matmul(Pm[m - 1], P, out=Pm[m])
    return Pm


def _power_blocks(P: np.ndarray, M: int, V: int) -> np.ndarray:
    """``Powers.blocks`` of ``P^0 .. P^M`` (one power in memory at a time)."""
    S = P.shape[0]
    C = S // V
    blocks = np.empty((M + 1, V, V, C, C))
    power, nxt = np.eye(S), np.empty((S, S))
    for m in range(M + 1):
        if m > 0:
            np.matmul(power, P, out=nxt)
            power, nxt = nxt, power
        cut = power.reshape(C, V, C, V)  # cut[k, u, c, v] = P^m[k V + u, c V + v]
        blocks[m] = cut.transpose(3, 1, 0, 2)
    return blocks


def _initial_laws(initial: np.ndarray, P: np.ndarray, length: int) -> np.ndarray:
    """``Powers.initial_laws``: ``normalize(initial P^p)`` for ``p < length``, one step at a time (``P`` is
    stochastic: the normalizations only remove round-off)."""
    laws = np.empty((length, P.shape[0]))
    laws[0] = initial / initial.sum()
    for p in range(1, length):
        np.matmul(laws[p - 1], P, out=laws[p])
        laws[p] /= laws[p].sum()
    return laws


def no_powers() -> NoPowers:
    """The powers of a sparse n-gram (it never jumps)."""
    return NoPowers()


def chain_powers(language: NGram, length: int) -> ChainArrays:
    """:class:`~numerics.messages.layouts.ChainArrays` of a 2-gram for sequences of ``length`` positions (cached).

    ``powers[d, w] = P^d[w]``, ``powers[d, V] = mu P^{d-1}``; ``powers_t[d, w, v] = P^d[v, w]``, ``powers_t[d, V] = 1``.
    """
    hit = POWERS_CACHE.get(language, "chain", lambda arrays: arrays.powers.shape[0] == length + 1)
    if hit is not None:
        return hit
    P = np.asarray(language.conditional)
    V = P.shape[0]
    powers = _matrix_powers(P, length)
    Pm = np.zeros((length + 1, V + 1, V))
    Pm[:, :V] = powers
    Pm[1:, V] = np.asarray(language.initial) @ powers[:length]  # (L, V): rows mu P^(d-1)
    PmT = np.ones((length + 1, V + 1, V))
    PmT[:, :V] = powers.transpose(0, 2, 1)
    return POWERS_CACHE.put(language, "chain", ChainArrays(Pm, PmT))
