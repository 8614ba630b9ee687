"""One BLAS matrix product on row ranges of 2-D arrays, callable from numba without array views.

``np.dot(a[r:r+m], b, c[s:s+m])`` inside a numba kernel costs, per call, the views' and the
wrapper's reference counting and checks: at ``S = 32`` about a tenth of the dense
forward-backward's time, which calls it three times per position. :func:`gemm_rows` makes the
same ``dgemm`` call (numba's own BLAS entry point ``numba_xxgemm``, the one ``np.dot`` uses, bound
to SciPy's BLAS) on raw row offsets. It does no shape checking: callers pass C-contiguous float64
arrays with ``a.shape[1] == b.shape[0]``, ``b.shape[1] == c.shape[1]`` and the row ranges inside
``a`` and ``c`` (the kernels allocate them so).
"""

from __future__ import annotations

import scipy.linalg.cython_blas  # noqa: F401  (numba_xxgemm binds SciPy's BLAS; make sure it is importable)
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from numerics._jit import PURE_PYTHON

__all__ = ["gemm_rows"]

_CHAR = ir.IntType(8)
_VOID_P = ir.IntType(8).as_pointer()


@intrinsic
def gemm_rows(typingctx, a, a_row, b, c, c_row, m):
    """``c[c_row : c_row + m] = a[a_row : a_row + m] @ b`` by one BLAS ``dgemm`` (float64, C-contiguous, 2-D).

    Row-major ``C = A B`` is column-major ``C^T = B^T A^T``: ``dgemm('n', 'n', n, m, k, 1, B, n, A, k, 0, C, n)``.
    """
    if not all(isinstance(t, types.Array) and t.ndim == 2 and t.layout == "C" and t.dtype == types.float64
               for t in (a, b, c)):
        return None
    sig = types.void(a, a_row, b, c, c_row, m)

    def codegen(context, builder, sig, args):
        a_val, a_row_val, b_val, c_val, c_row_val, m_val = args
        A = make_array(sig.args[0])(context, builder, a_val)
        Bm = make_array(sig.args[2])(context, builder, b_val)
        C = make_array(sig.args[3])(context, builder, c_val)
        intp = context.get_value_type(types.intp)
        k = cgutils.unpack_tuple(builder, A.shape)[1]
        n = cgutils.unpack_tuple(builder, Bm.shape)[1]
        a_ptr = builder.gep(A.data, [builder.mul(a_row_val, k)])
        c_ptr = builder.gep(C.data, [builder.mul(c_row_val, n)])
        fnty = ir.FunctionType(ir.IntType(32), [_CHAR, _CHAR, _CHAR, intp, intp, intp, _VOID_P, _VOID_P, intp,
                                                _VOID_P, intp, _VOID_P, _VOID_P, intp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")
        one = cgutils.alloca_once_value(builder, context.get_constant(types.float64, 1.0))
        zero = cgutils.alloca_once_value(builder, context.get_constant(types.float64, 0.0))
        no_transpose = ir.Constant(_CHAR, ord("n"))
        builder.call(fn, (ir.Constant(_CHAR, ord("d")), no_transpose, no_transpose, n, m_val, k,
                          builder.bitcast(one, _VOID_P), builder.bitcast(Bm.data, _VOID_P), n,
                          builder.bitcast(a_ptr, _VOID_P), k, builder.bitcast(zero, _VOID_P),
                          builder.bitcast(c_ptr, _VOID_P), n))
        return context.get_dummy_value()

    return sig, codegen


if PURE_PYTHON:  # NUMBA_DISABLE_JIT (numerics._jit): the same product in NumPy, an intrinsic cannot run as Python
    def gemm_rows(a, a_row, b, c, c_row, m):  # noqa: F811
        """``c[c_row : c_row + m] = a[a_row : a_row + m] @ b`` (the Python path of the intrinsic above)."""
        c[c_row:c_row + m] = a[a_row:a_row + m] @ b
