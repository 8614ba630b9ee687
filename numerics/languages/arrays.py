"""A language's arrays as the compiled kernels read them, with its kind resolved once.

A kernel never asks "is this an n-gram?" at run time. :func:`kernel_arrays` turns a language into
one of two NamedTuples, :class:`HMMArrays` (dense) or :class:`NGramArrays` (sparse successor
layout), and numba compiles a kernel once per NamedTuple *type*. A step that differs between the
two (a forward step, a posterior marginal, ...) is written twice, and :func:`by_kind` joins the
two versions into one function that picks by the type of its first argument: at compile time
inside numba (an ``overload``), by ``isinstance`` when called from Python. The drivers are then
written once, for both kinds (see :mod:`numerics.sampling.oracle`).

Every array is a fresh, writable, C-contiguous copy (float64; integers int64 or uint64), so a
kernel has exactly one compiled signature per kind whatever the caller passed (read-only
language arrays, views). The tuples hold only what the kernels read: numba increments a
reference count per array member at every call that passes a tuple, which is measurable in
kernels whose calls do ``O(S^2)`` work.
"""

from __future__ import annotations

import inspect
from typing import Callable, NamedTuple, Union

import numpy as np
from numba.extending import overload

from numerics.languages.hmm import HMM, Language, NGram

__all__ = ["HMMArrays", "NGramArrays", "KernelArrays", "kernel_arrays", "by_kind", "contiguous"]


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


KernelArrays = Union[HMMArrays, NGramArrays]


def contiguous(x: np.ndarray, dtype=np.float64) -> np.ndarray:
    """A fresh writable C-contiguous copy: one numba signature per kernel whatever the caller passes."""
    return np.array(x, dtype=dtype, order="C", copy=True)


def kernel_arrays(language: Language) -> KernelArrays:
    """The kernels' view of ``language``: :class:`NGramArrays` for an :class:`NGram`, :class:`HMMArrays` for an :class:`HMM`.

    The one place where the kind of a language is decided for the compiled kernels. Any other
    language (the interval language, a sparse HMM) is read through its ``kernel_language()``.
    """
    language = _kernel_language(language)
    if isinstance(language, NGram):
        V, n = language.vocab_size, language.order
        weights = np.ones(max(n - 1, 1), dtype=np.int64)
        for d in range(1, n - 1):
            weights[d] = weights[d - 1] * V
        return NGramArrays(
            contiguous(language.initial),
            contiguous(language.conditional),
            contiguous(language.conditional.T),
            contiguous(language.successors()[:, 0], np.uint64),
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


def by_kind(dense: Callable, ngram: Callable) -> Callable:
    """One function that calls ``dense`` on :class:`HMMArrays` and ``ngram`` on :class:`NGramArrays`.

    ``dense`` and ``ngram`` are numba functions with the same parameters, the first being the
    arrays. Inside a numba function the choice is made at compile time (the kind is part of the
    argument's type, so no run-time branch is left, and the chosen version is compiled in place
    of the call, with no wrapper in between); from Python it is made by ``isinstance``. The
    returned function carries ``dense``'s name (without ``_dense``), signature and docstring,
    which documents both.
    """
    signature = inspect.signature(dense.py_func)
    if list(signature.parameters) != list(inspect.signature(ngram.py_func).parameters):
        raise TypeError(f"{dense.__name__} and {ngram.__name__} must have the same parameters")

    def dispatch(arrays, *args):
        if isinstance(arrays, NGramArrays):
            return ngram(arrays, *args)
        if isinstance(arrays, HMMArrays):
            return dense(arrays, *args)
        raise TypeError(f"expected HMMArrays or NGramArrays, got {type(arrays).__name__}")

    def implementation(*args):  # numba's typing: the Python source of the version for this type
        kind = getattr(args[0], "instance_class", None)
        return dense.py_func if kind is HMMArrays else ngram.py_func if kind is NGramArrays else None

    implementation.__signature__ = signature  # numba matches it against the version's parameters
    overload(dispatch)(implementation)
    dispatch.__name__ = dispatch.__qualname__ = dense.__name__.removesuffix("_dense").lstrip("_")
    dispatch.__doc__ = dense.__doc__
    dispatch.__signature__ = signature
    return dispatch
