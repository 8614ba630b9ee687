"""The compile settings of :mod:`numerics._jit`: what numba does with them, and the pure-Python path.

* ``jit(nrt=False)`` relies on numba's private ``_nrt`` option: a numba upgrade that drops or
  renames it would silently bring the reference counts back (18-20% of an hmm pass). The
  compiled code of a function that reads arrays out of a tuple and passes them to another holds
  ``NRT_incref`` calls with the default settings and none with ``nrt=False``; an allocation is
  refused without the runtime.
* ``jit(fma=True)`` is ``contract`` and nothing else of ``fastmath`` (no ``fast``, ``nnan``,
  ``ninf``, ``reassoc``): read off the LLVM instructions.
* ``NUMBA_DISABLE_JIT=1``: every kernel family runs as plain Python and passes its twin tests
  against the generic NumPy paths (a subprocess running a few of those tests, seconds long).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from numerics._jit import FMA, PURE_PYTHON, inherited_options, jit

pytestmark = pytest.mark.skipif(PURE_PYTHON, reason="inspects compiled code; the pure-Python run is below")

ROOT = Path(__file__).resolve().parents[2]


class _Pair(NamedTuple):
    a: np.ndarray
    b: np.ndarray


@jit
def _total(x):
    t = 0.0
    for i in range(x.shape[0]):
        t += x[i]
    return t


def _reads_tuple(pair):
    return _total(pair.a) + _total(pair.b)


def _fused(x, y):
    t = 0.0
    for i in range(x.shape[0]):
        t += x[i] * y[i]
    return t


def _allocates(n):
    return np.zeros(n)


def _llvm(kernel, *args) -> str:  # kernel compiled with cache=False: numba hides a cached kernel's code
    kernel(*args)
    return "\n".join(kernel.inspect_llvm().values())


def test_nrt_false_compiles_without_reference_counts():
    pair = _Pair(np.ones(3), np.ones(4))
    counted = _llvm(jit(cache=False)(_reads_tuple), pair)
    uncounted = _llvm(jit(nrt=False, cache=False)(_reads_tuple), pair)
    assert "NRT_incref" in counted  # the case is exercised: numba counts here by default
    assert "NRT_incref" not in uncounted and "NRT_decref" not in uncounted
    assert jit(nrt=False, cache=False)(_reads_tuple)(pair) == 7.0


def test_nrt_false_refuses_an_allocation():
    from numba.core.errors import TypingError

    assert jit(cache=False)(_allocates)(3).shape == (3,)
    with pytest.raises(TypingError, match="Only accept returning of array passed into the function"):
        jit(nrt=False, cache=False)(_allocates)(3)


def test_fma_is_contract_and_nothing_else():
    x = np.arange(8.0)
    fused = _llvm(jit(fma=True, cache=False)(_fused), x, x)
    plain = _llvm(jit(cache=False)(_fused), x, x)
    flags = set(re.findall(r"= f(?:mul|add) ((?:[a-z]+ )*)double", fused))
    assert flags and all(f.split() == ["contract"] for f in flags), flags
    assert FMA == {"contract"}
    assert re.search(r"= f(?:mul|add) double", plain) and not re.search(r"= f(?:mul|add) (?!double)", plain)  # no flag without fma=True
    assert inherited_options(jit(nrt=False, fma=True)(_fused)) == {"_nrt": False, "fastmath": {"contract"}}


#: Twin tests (compiled against the generic NumPy path, or against enumeration) covering every kernel
#: family: reveal kernels (n-gram, sparse, dense), the adaptive rules, the decoders (on a 2-gram: the chain path),
#: forward-backward (dense and n-gram) and the exact DP's step.
PURE_PYTHON_TESTS = [
    "tests/numerics/test_samplers.py::test_fast_path_equals_generic_path_sample_by_sample[9-hmm]",
    "tests/numerics/test_samplers.py::test_fast_path_equals_generic_path_sample_by_sample[9-3gram]",
    "tests/numerics/test_sparse_ngram.py::test_sparse_sampler_equals_generic_sample_by_sample[2-bigram]",
    "tests/numerics/test_decoder_kernels.py::test_compiled_decoders_equal_the_generic_path_sample_by_sample[2gram]",
    "tests/numerics/test_decoder_kernels.py::test_adaptive_blocks_compiled_equal_generic[hmm]",
    "tests/numerics/test_decoder_kernels.py::test_compiled_path_log_prob_equals_the_generic_replay[interval]",
    "tests/numerics/test_forward_backward.py::test_numba_matches_numpy_twin",
    "tests/numerics/test_forward_backward.py::test_ngram_sparse_matches_dense_path",
    "tests/numerics/test_exact_dp.py::test_dp_equals_enumeration",
]


def test_every_kernel_family_runs_as_plain_python():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *PURE_PYTHON_TESTS],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", run.stdout) and "skipped" not in run.stdout, run.stdout[-1000:]
