"""The compile settings of every numba kernel in :mod:`numerics`, declared once (as stumpy's ``config``).

Every kernel is declared with :func:`jit`, never with ``numba.njit`` directly, so the settings below
hold everywhere and a change to them is made here:

* **cache** (:data:`CACHE`): every kernel is cached on disk (``NUMBA_CACHE_DIR``); only the first
  run on a machine compiles.
* **reference counting** (``jit(nrt=False)``): a kernel that allocates nothing may be compiled
  without numba's runtime (numba's private ``_nrt`` option). A function that calls others takes
  and drops a count on each array it reads, two atomic operations each, which dominated the
  small per-position kernels (18-20% of an hmm pass, 15% of a 4gram pass).
  :func:`~numerics.messages.dispatch.by_kind` compiles such a version without counts inside its
  callers too (:data:`INHERITED`). ``_nrt`` is private to numba: ``tests/numerics/test_jit.py``
  checks that numba still honours it (no ``NRT_incref`` in the code, an allocation refused).
* **FMA** (``jit(fma=True)``, :data:`FMA`): the dense HMM steps and jumps may fuse a product and
  the sum it enters into one fused multiply-add (LLVM's ``contract`` flag, nothing else of
  ``fastmath``). This is the one exception to the house rule "no fastmath" (``STYLE.md``), kept on
  purpose, for three reasons. (1) ``contract`` changes rounding only: ``a b + c`` is rounded once
  instead of twice; for the non-negative products and sums of the dense messages that is never
  less accurate. (2) It allows nothing the rule guards against: no reassociation (the order of
  every sum stays as written), no flush of subnormals, no assumption that values are finite, so
  ``-inf``, NaN and zero messages behave exactly as without it. (3) It bought about 3.5% of an hmm
  pass. Its cost is reproducibility in the last bits across machines (one without FMA rounds
  differently), which the project already has through OpenBLAS's kernels, so the tests compare
  scores at ``RTOL_EXACT``, never bit patterns (``docs/performance.md``, "Pass 2026-11-27
  (house)"). The n-gram kernels, forward-backward (:mod:`numerics.inference`) and the exact DP do
  not use it.
* **inlining** (``jit(inline=True)``, numba's ``inline="always"``): a helper inlined at numba's IR
  level into every caller. It saves a call's overhead and reference counts, but each site is
  compiled again: the dense ``_vecmat_dense``, inlined at nine sites with its helpers, makes a first
  hmm sample compile for 126 s of CPU against 41 s as a plain call, which runs the warm passes
  about 7% slower (``docs/performance.md``). Use it where a measurement says it pays.

With ``NUMBA_DISABLE_JIT=1`` :func:`jit` returns a plain Python function (with the ``py_func`` and
``targetoptions`` a numba dispatcher has), so every kernel runs as Python: slowly, but the same
algorithm, which a test checks on small cases (``tests/numerics/test_jit.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numba as nb
import numpy as np
from numba.core import config

__all__ = ["CACHE", "FMA", "INHERITED", "PURE_PYTHON", "jit", "inherited_options", "trailing_zeros"]

#: numba's on-disk cache for every kernel.
CACHE = True
#: The one ``fastmath`` flag a kernel may take: ``contract`` (fused multiply-add), see the module docstring.
FMA = frozenset({"contract"})
#: The options :func:`~numerics.messages.dispatch.by_kind` compiles a version with inside its callers too.
INHERITED = ("_nrt", "fastmath")
#: True under ``NUMBA_DISABLE_JIT=1``: :func:`jit` returns Python functions.
PURE_PYTHON = bool(config.DISABLE_JIT)


def jit(fn: Callable | None = None, *, nrt: bool = True, fma: bool = False, inline: bool = False,
        parallel: bool = False, nogil: bool = False, cache: bool = CACHE) -> Callable:
    """Compile ``fn`` with numba under the settings of this module (``@jit`` or ``@jit(...)``).

    Parameters
    ----------
    nrt : bool
        ``False``: compiled without reference counting (the kernel must allocate nothing).
    fma : bool
        ``True``: a product and a sum may be fused (:data:`FMA`; the dense HMM kernels only).
    inline : bool
        ``True``: inlined at numba's IR level into every numba caller.
    parallel, nogil : bool
        numba's ``parallel`` (``prange`` loops) and ``nogil`` (callable from threads without the GIL).
    cache : bool
        :data:`CACHE`; ``False`` only where a test reads the compiled code (numba hides a cached kernel's).
    """
    options: dict = {"cache": cache}
    if not nrt:
        options["_nrt"] = False
    if fma:
        options["fastmath"] = set(FMA)
    if inline:
        options["inline"] = "always"
    if parallel:
        options["parallel"] = True
    if nogil:
        options["nogil"] = True

    def decorate(f: Callable) -> Callable:
        if PURE_PYTHON:
            return _python_kernel(f, options)
        return nb.njit(**options)(f)

    return decorate if fn is None else decorate(fn)


def _python_kernel(f: Callable, options: dict) -> Callable:
    """``f`` itself under ``NUMBA_DISABLE_JIT``, as a new function carrying a dispatcher's ``py_func`` and
    ``targetoptions`` (one Python function may be compiled twice with different options).

    It runs with NumPy's overflow warning off, as compiled code runs: unsigned integers wrap (the
    decoders' counter-based stream multiplies ``uint64`` modulo ``2^64``) and a float overflow is
    ``inf``, silently, in numba.
    """

    @functools.wraps(f)
    def kernel(*args):
        with np.errstate(over="ignore"):
            return f(*args)

    kernel.py_func = f
    kernel.targetoptions = dict(options)
    return kernel


def inherited_options(kernel: Callable) -> dict:
    """The options of ``kernel`` (a :func:`jit` function) that hold inside its numba callers (:data:`INHERITED`)."""
    return {k: kernel.targetoptions[k] for k in INHERITED if k in kernel.targetoptions}


if PURE_PYTHON:
    def trailing_zeros(mask):
        """The number of trailing zero bits of a non-zero integer (numba's intrinsic, in Python)."""
        m = int(mask)
        return (m & -m).bit_length() - 1
else:
    from numba.cpython.unsafe.numbers import trailing_zeros
