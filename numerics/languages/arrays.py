"""A language's arrays as the compiled kernels read them, with its kind resolved once.

A kernel never asks "is this an n-gram?" at run time. :func:`kernel_arrays` turns a language into
one of three NamedTuples, :class:`HMMArrays` (dense), :class:`NGramArrays` (successor layout,
the ``(S, V)`` conditional dense) or :class:`SparseNGramArrays` (successor layout, only the
non-zero conditionals, CSR and CSC), and numba compiles a kernel once per NamedTuple *type*. A
step that differs between the kinds (a forward step, a posterior marginal, ...) is written once
per kind, and :func:`~numerics.messages.dispatch.by_kind` joins the versions into one function that
picks by the type of its first argument: at compile time inside numba (an ``overload``), by the type
when called from Python. The drivers are then written once, for every kind (see :mod:`numerics.messages`).

The sparse layout is chosen in one place, :func:`kernel_arrays`: an n-gram whose conditional has
at most :data:`SPARSE_DENSITY` of its ``S V`` entries non-zero (a fitted word-level bigram: tens of
thousands of non-zeros out of ``V^2 = 16.7M``) gets :class:`SparseNGramArrays`, whose steps cost
the non-zeros they visit instead of ``S V``.

Every array is a fresh, writable, C-contiguous copy (float64; integers int64 or uint64), so a
kernel has exactly one compiled signature per kind whatever the caller passed (read-only
language arrays, views). The tuples hold only what the kernels read: numba increments a
reference count per array member at every call that passes a tuple, which is measurable in
kernels whose calls do ``O(S^2)`` work.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics.languages.hmm import HMM, SPARSE_DENSITY, Language, NGram

__all__ = [
    "HMMArrays", "NGramArrays", "SparseNGramArrays", "KernelArrays", "SPARSE_DENSITY", "LAYOUTS", "kernel_arrays",
    "contiguous", "sparse_entry",
]

LAYOUTS = ("auto", "dense", "sparse")


class HMMArrays(NamedTuple):
    """A dense HMM (``S`` states, ``V`` tokens) for the kernels; ``docs/methods/languages.md``.

    Attributes
    ----------
    initial : (S,) float64
        ``q(z_1 = s)``.
    transition : (S, S) float64
        ``A[s, t] = q(z_{j+1} = t | z_j = s)``; a forward step is ``alpha @ A``.
    transition_t : (S, S) float64
        ``A^T`` in C order, so that a backward step ``A @ w`` reads rows.
    emission_t : (V, S) float64
        ``E^T`` with ``E[s, v] = q(x_j = v | z_j = s)``: the evidence of an observed token ``v``,
        ``e(s) = E[s, v]``, is the contiguous row ``emission_t[v]``.
    """

    initial: np.ndarray
    transition: np.ndarray
    transition_t: np.ndarray
    emission_t: np.ndarray


class NGramArrays(NamedTuple):
    """An n-gram (order ``n``, ``V`` tokens, ``S = V^(n-1)`` windows) for the kernels.

    The window ``s = a W + b`` (``W = V^(n-2)``, ``a`` its oldest token, ``b`` the rest) emits its
    newest token ``s % V`` and moves on token ``v`` to ``successor(s, v) = b V + v``
    (:class:`~numerics.languages.hmm.NGram`; ``docs/methods/languages.md``).

    Attributes
    ----------
    initial : (S,) float64
        Law of the window at the first position.
    conditional : (S, V) float64
        ``conditional[s, v] = q(next token = v | window s)``.
    conditional_t : (V, S) float64
        ``conditional`` transposed, C order.
    successor : (S,) uint64
        ``successor(s, 0) = (s % W) V``; ``successor(s, v) = successor[s] + v`` (unsigned, so loops
        over ``v`` carry no wraparound test and vectorize).
    digit_weights : (max(n-1, 1),) int64
        ``V^d`` for ``d = 0..n-2``: the window of the last ``n-1`` tokens ``x_p, x_{p-1}, ..`` is
        ``sum_d x_{p-d} V^d``.
    order : int
        ``n``.
    """

    initial: np.ndarray
    conditional: np.ndarray
    conditional_t: np.ndarray
    successor: np.ndarray
    digit_weights: np.ndarray
    order: int


class SparseNGramArrays(NamedTuple):
    """An n-gram as :class:`NGramArrays`, with only the non-zero conditionals (CSR by window, CSC by token).

    Row ``s`` of the conditional holds ``data[indptr[s]:indptr[s + 1]]`` at the tokens
    ``indices[indptr[s]:indptr[s + 1]]`` (ascending); column ``v`` holds ``col_data[col_indptr[v]:col_indptr[v + 1]]``
    at the windows ``col_indices[...]`` (ascending). A kernel visits non-zeros in ascending order,
    the order in which the dense n-gram kernels add the same terms (the skipped ones are exact zeros).

    Attributes
    ----------
    initial : (S,) float64
        Law of the window at the first position.
    indptr : (S + 1,) int64
    indices : (nnz,) uint64
    data : (nnz,) float64
        CSR of ``conditional[s, v]``.
    col_indptr : (V + 1,) int64
    col_indices : (nnz,) int64
    col_data : (nnz,) float64
        CSC of the same matrix.
    successor, digit_weights, order
        As in :class:`NGramArrays`.
    vocab : int
        ``V``.
    """

    initial: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    col_indptr: np.ndarray
    col_indices: np.ndarray
    col_data: np.ndarray
    successor: np.ndarray
    digit_weights: np.ndarray
    order: int
    vocab: int


KernelArrays = HMMArrays | NGramArrays | SparseNGramArrays


@jit
def sparse_entry(lang, s, v):
    """``conditional[s, v]`` of a :class:`SparseNGramArrays` (binary search in the ascending tokens of row ``s``)."""
    indices = lang.indices
    lo = lang.indptr[s]
    end = lang.indptr[s + 1]
    hi = end
    vu = np.uint64(v)
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < vu:
            lo = mid + 1
        else:
            hi = mid
    return lang.data[lo] if (lo < end and indices[lo] == vu) else 0.0


def contiguous(x: np.ndarray, dtype=np.float64) -> np.ndarray:
    """A fresh writable C-contiguous copy: one numba signature per kernel whatever the caller passes."""
    return np.array(x, dtype=dtype, order="C", copy=True)


def kernel_arrays(language: Language, layout: str = "auto") -> KernelArrays:
    """The kernels' view of ``language``: :class:`NGramArrays` or :class:`SparseNGramArrays` for an
    :class:`NGram`, :class:`HMMArrays` for an :class:`HMM`.

    The one place where the kind of a language is decided for the compiled kernels. ``layout``
    (n-grams only): ``"auto"`` picks the sparse layout when at most :data:`SPARSE_DENSITY` of the
    conditional's entries are non-zero (module docstring); ``"dense"`` / ``"sparse"`` force one
    (tests compare the two on the same language). Any other language (the interval language, a
    sparse HMM) is read through its ``kernel_language()``.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    language = _kernel_language(language)
    if isinstance(language, NGram):
        V, n = language.vocab_size, language.order
        weights = np.ones(max(n - 1, 1), dtype=np.int64)
        for d in range(1, n - 1):
            weights[d] = weights[d - 1] * V
        S = language.n_states
        successor = contiguous((np.arange(S) % (S // V)) * V, np.uint64)  # successors()[:, 0], without the (S, V) table
        cond = language.conditional
        if layout == "sparse" or (layout == "auto" and np.count_nonzero(cond) <= SPARSE_DENSITY * cond.size):
            rows, cols = np.nonzero(cond)  # row-major: ascending v within each row
            vals = cond[rows, cols]
            indptr = np.zeros(cond.shape[0] + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=cond.shape[0]), out=indptr[1:])
            by_col = np.lexsort((rows, cols))  # column-major: ascending s within each column
            col_indptr = np.zeros(V + 1, dtype=np.int64)
            np.cumsum(np.bincount(cols, minlength=V), out=col_indptr[1:])
            return SparseNGramArrays(
                contiguous(language.initial), indptr, contiguous(cols, np.uint64), contiguous(vals),
                col_indptr, contiguous(rows[by_col], np.int64), contiguous(vals[by_col]),
                successor, weights, int(n), int(V),
            )
        return NGramArrays(
            contiguous(language.initial),
            contiguous(cond),
            contiguous(cond.T),
            successor,
            weights,
            int(n),
        )
    if isinstance(language, HMM):
        return HMMArrays(
            contiguous(language.initial),
            contiguous(language.transition),
            contiguous(language.transition.T),
            contiguous(language.emission.T),
        )
    raise TypeError(f"language must be an HMM or NGram, got {type(language).__name__}")


def _kernel_language(language: Language):
    resolve = getattr(language, "kernel_language", None)
    if resolve is None:
        raise TypeError(f"not a language (no kernel_language()): {type(language).__name__}")
    return resolve()
