"""The one dispatch of the message kernels: a step written once per language kind, chosen by the arrays' type.

A kernel never asks "is this an n-gram?" at run time. The language comes as one NamedTuple per
kind (:mod:`numerics.messages.layouts`): :class:`~numerics.languages.arrays.HMMArrays` (dense),
:class:`~numerics.languages.arrays.NGramArrays` and :class:`~numerics.languages.arrays.SparseNGramArrays`
(the successor layout, dense or CSR conditional), and the two kinds of the adaptive kernels'
paths, :class:`~numerics.messages.layouts.ChainArrays` (a first-order token chain read from its
powers) and :class:`~numerics.messages.layouts.IntervalArrays`. numba compiles a kernel once per
type, and :func:`by_kind` joins the versions of a step into one function that picks by the type of
its first argument: at compile time inside numba (an ``overload``, so no run-time branch is left),
by the type when called from Python.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from numba.extending import overload

from numerics._jit import inherited_options
from numerics.languages.arrays import HMMArrays, NGramArrays, SparseNGramArrays
from numerics.messages.layouts import ChainArrays, IntervalArrays

__all__ = ["by_kind", "by_path"]


def _implementation(versions: dict, signature: inspect.Signature) -> Callable:
    """numba's typing of a :func:`by_kind` call: the Python source of the version for the arrays' type
    (``None``, no match, for a type that ``versions`` lacks)."""

    def implementation(*args):
        return versions.get(getattr(args[0], "instance_class", None))

    implementation.__signature__ = signature  # numba matches it against the version's parameters
    return implementation


def _same_parameters(signature: inspect.Signature, other: inspect.Signature) -> bool:
    """``other`` has ``signature``'s parameters, or is ``(arrays, *args)`` with the same first name (see :func:`by_kind`)."""
    names, params = list(signature.parameters), list(other.parameters.values())
    if len(params) == 2 and params[1].kind is inspect.Parameter.VAR_POSITIONAL:  # numba's overloads accept a
        return params[0].name == names[0]  # (first, *args) implementation, not a bare (*args)
    return names == [p.name for p in params]


def by_kind(dense: Callable, ngram: Callable, sparse: Callable | None = None, *, chain: Callable | None = None,
            interval: Callable | None = None, inline: str = "never") -> Callable:
    """One function that calls ``dense`` on :class:`~numerics.languages.arrays.HMMArrays`, ``ngram`` on
    :class:`~numerics.languages.arrays.NGramArrays`, ``sparse`` on
    :class:`~numerics.languages.arrays.SparseNGramArrays`, and (when given) ``chain`` on
    :class:`~numerics.messages.layouts.ChainArrays` and ``interval`` on
    :class:`~numerics.messages.layouts.IntervalArrays`.

    The versions are numba functions with the same parameters, the first being the arrays;
    ``sparse = None``: the ``ngram`` version serves both n-gram layouts (it must then read only
    the fields they share: ``initial``, ``successor``, ``digit_weights``, ``order``, or call
    :func:`by_kind` functions for the rest). A version may also take the arrays (the same name)
    and ``*args``: one function for a kind that never runs the step, which only raises (the
    sparse n-gram's jumps in :mod:`numerics.messages.jumps`), shared by steps of
    different parameters. Inside a
    numba function the choice is made at compile time (the kind is part of the argument's type,
    so no run-time branch is left, and the chosen version is compiled in place of the call, with
    no wrapper in between); from Python it is made by the type. The returned function carries
    the first version's name (without ``_dense`` / ``_segment``), signature and docstring, which
    documents all.

    A version declared ``@jit(nrt=False)`` (it allocates nothing, :mod:`numerics._jit`) is compiled without numba's
    reference counting in place of the call as well: a function that calls others takes and drops
    a count on each array it reads (two atomic operations each, which numba's pruning leaves when
    there are calls and branches in between), a cost that dominates a small per-position kernel.
    Its FMA flag (``jit(fma=True)``: a product and a sum may be fused) applies there as well
    (:data:`numerics._jit.INHERITED`). ``inline="always"`` inlines the chosen version into its numba
    callers at numba's IR level (a per-step function whose call, reference-counting every array of its
    tuple arguments on entry and exit, costs more than its work; inlining costs compile time).
    """
    sparse = ngram if sparse is None else sparse
    kinds = {HMMArrays: dense, NGramArrays: ngram, SparseNGramArrays: sparse}
    if chain is not None:
        kinds[ChainArrays] = chain
    if interval is not None:
        kinds[IntervalArrays] = interval
    signature = inspect.signature(dense.py_func)
    for other in kinds.values():
        if not _same_parameters(signature, inspect.signature(other.py_func)):
            raise TypeError(f"{dense.__name__} and {other.__name__} must have the same parameters")

    def dispatch(arrays, *args):
        version = kinds.get(type(arrays))
        if version is None:
            raise TypeError(f"expected one of {', '.join(k.__name__ for k in kinds)}, got {type(arrays).__name__}")
        return version(arrays, *args)

    # one overload per set of versions compiled alike: a version declared ``@jit(nrt=False)``
    # (or ``fma=True``) is compiled so inside numba functions too (see the docstring)
    groups: dict = {}
    for kind, version in kinds.items():
        options = inherited_options(version)
        key = tuple(sorted((k, frozenset(v) if isinstance(v, set) else v) for k, v in options.items()))
        groups.setdefault(key, (options, {}))[1][kind] = version.py_func
    for options, versions in groups.values():
        overload(dispatch, jit_options=options, inline=inline)(_implementation(versions, signature))
    name = dense.__name__
    for suffix in ("_dense", "_segment"):
        name = name.removesuffix(suffix)
    dispatch.__name__ = dispatch.__qualname__ = name.lstrip("_")
    dispatch.__doc__ = dense.__doc__
    dispatch.__signature__ = signature
    return dispatch


def by_path(chain: Callable, interval: Callable, segment: Callable, *, inline: str = "never") -> Callable:
    """:func:`by_kind` of the adaptive kernels' paths: ``segment`` on the dense HMM and n-gram arrays (their
    forward/backward messages), ``chain`` on :class:`~numerics.messages.layouts.ChainArrays`, ``interval`` on
    :class:`~numerics.messages.layouts.IntervalArrays`. The returned function carries ``chain``'s docstring."""
    dispatch = by_kind(segment, segment, chain=chain, interval=interval, inline=inline)
    dispatch.__name__ = dispatch.__qualname__ = chain.__name__.removeprefix("_").removesuffix("_chain")
    dispatch.__doc__ = chain.__doc__
    return dispatch
