"""The layouts of a language as the message kernels read them: one NamedTuple per kind.

The dense HMM and the two n-gram layouts are built by :func:`~numerics.languages.arrays.kernel_arrays`
(:class:`~numerics.languages.arrays.HMMArrays`, :class:`~numerics.languages.arrays.NGramArrays`,
:class:`~numerics.languages.arrays.SparseNGramArrays`); the adaptive kernels read a 2-gram as a
first-order token chain from its powers (:class:`ChainArrays`) and the interval language by its
interval length (:class:`IntervalArrays`), both built by
:func:`~numerics.sampling._adaptive_paths.path_arrays`. :func:`~numerics.messages.dispatch.by_kind`
chooses a step's version by these types.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics.languages.arrays import HMMArrays, NGramArrays, SparseNGramArrays

__all__ = ["ChainArrays", "IntervalArrays", "PathArrays", "HMMArrays", "NGramArrays", "SparseNGramArrays"]


class ChainArrays(NamedTuple):
    """A first-order token chain (a 2-gram with ``P`` = its ``conditional``) for the chain path.

    The virtual token ``V`` stands for "no revealed neighbour" on that side.

    Attributes
    ----------
    powers : (L+1, V+1, V) float64
        ``powers[d, w] = P^d[w]`` (``d = 0..L``); ``powers[d, V] = mu P^{d-1}`` (``d >= 1``).
    powers_t : (L+1, V+1, V) float64
        ``powers_t[d, w, v] = P^d[v, w]`` (the right factor read contiguously); ``powers_t[d, V] = 1``.
    """

    powers: np.ndarray
    powers_t: np.ndarray


class IntervalArrays(NamedTuple):
    """The interval language (Example C.7) for the interval path.

    Attributes
    ----------
    interval_length : int
        ``l``: positions ``[m l, (m+1) l)`` form one interval.
    """

    interval_length: int


PathArrays = ChainArrays | IntervalArrays | HMMArrays | NGramArrays
