"""The decoders' counter-based random stream: every uniform a function of ``(key, call, position, stream)``.

Sequence ``b`` of a run gets a 64-bit key ``keys = rng.integers(0, 2**64, size=n, dtype=uint64)``
drawn up front (:func:`sequence_keys`, one call on ``rng`` for the whole run), and every uniform a
decoder uses is

    u(key, call, position, stream) = top 53 bits of splitmix64(splitmix64(splitmix64(key) ^ call)
                                     ^ (4 position + stream)) / 2^53

(:func:`stream_uniform`) with streams ``DRAW = 0`` (the inverse CDF of ``r_j``), ``SCORE = 1``
(``random`` scores), ``REMASK = 2`` and ``UNMASK = 3`` (ReMDM's coins) and ``call`` the 1-based
network call of that sequence. So the draws do not depend on batching, on which positions are
computed or on the order of evaluation: the compiled paths (:mod:`numerics.sampling._decoder_numba`,
whose ``stream_u`` is this function in numba) reproduce the generic path sample by sample with
O(1) memory.
"""

from __future__ import annotations

import numpy as np

__all__ = ["STREAM_DRAW", "STREAM_REMASK", "STREAM_SCORE", "STREAM_UNMASK", "sequence_keys", "splitmix64",
           "stream_uniform"]

STREAM_DRAW, STREAM_SCORE, STREAM_REMASK, STREAM_UNMASK = 0, 1, 2, 3

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer of ``x + golden`` (Steele et al.), elementwise on uint64 (wrapping)."""
    z = np.atleast_1d(np.asarray(x, dtype=np.uint64)) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def stream_uniform(keys: np.ndarray, call: np.ndarray, position: np.ndarray, stream: int) -> np.ndarray:
    """``u(key, call, position, stream)`` in ``[0, 1)`` (module docstring), broadcast over the arguments."""
    k = splitmix64(keys)
    a = splitmix64(k ^ np.atleast_1d(np.asarray(call, dtype=np.uint64)))
    pos = np.atleast_1d(np.asarray(position, dtype=np.uint64)) * np.uint64(4) + np.uint64(stream)
    z = splitmix64(a ^ pos)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def sequence_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    """The per-sequence keys of a run: ``rng.integers(0, 2**64, size=n, dtype=uint64)``."""
    return rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
