"""numerics._threads: numba's OpenMP threads start with a passive wait policy, the user's setting wins.

Each case runs in a fresh interpreter: GNU OpenMP reads ``OMP_WAIT_POLICY`` once, when numba
loads it, and ``OMP_DISPLAY_ENV=verbose`` makes it print what it took (to stderr). Its default
(the variable unset) prints as ``PASSIVE`` too but spins 300000 rounds: the spin count tells them apart.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_PROBE = (
    "import os, numba\n"
    "from numerics._threads import kernel_threads\n"
    "kernel_threads()\n"
    "print(numba.threading_layer(), os.environ.get('OMP_WAIT_POLICY'))\n"
)


def _run(policy: str | None) -> tuple[str, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["OMP_DISPLAY_ENV"] = "verbose"
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120, check=True)
    layer, left = done.stdout.split()
    return layer, left, done.stderr


@pytest.mark.parametrize(("policy", "expected"), [(None, "GOMP_SPINCOUNT = '0'"), ("active", "OMP_WAIT_POLICY = 'ACTIVE'")])
def test_openmp_wait_policy(policy, expected):
    layer, left, stderr = _run(policy)
    # the variable is set only while numba starts its threads: other OpenMP runtimes (torch's) never see it
    assert left == str(policy)
    if layer == "omp":  # the layer numba picked reads the variable; tbb and workqueue have no wait policy
        assert expected in stderr
