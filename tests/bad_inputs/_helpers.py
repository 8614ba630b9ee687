"""Shared by the bad-input suite: a CLI refusal check, real ``mdm-theory`` subprocesses, timing-free results.

A refusal (:func:`refused`) is checked twice, as a script and as a person would meet it: with
``--json`` one strict-JSON error object on stdout naming the problem, without it ``Error: ...`` on
stderr and nothing on stdout; both with a non-zero exit status and no traceback. ``CliRunner``
swallows an uncaught exception into ``result.exception`` instead of printing a traceback, so a
crash is detected there, not only by looking for "Traceback" in the output.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from neural.train import TIMING_FIELDS
from tests.strict_json import strict_json
from validation.cli import main

__all__ = [
    "REPORT",
    "cache_entries",
    "cli_process",
    "invoke",
    "kill_when",
    "refused",
    "report_result",
    "without_timing",
]

KILL_WAIT_S = 180.0  # a loaded 2-core machine: the subprocess imports numpy/numba/torch before its first row


def invoke(args: Sequence[str]) -> Result:
    """``mdm-theory ARGS`` in this process (stdout and stderr kept apart)."""
    return CliRunner().invoke(main, [str(a) for a in args])


def _no_crash(r: Result, args: Sequence[str]) -> None:
    assert r.exit_code != 0, f"{list(args)} was accepted:\n{r.output}"
    assert r.exception is None or isinstance(r.exception, SystemExit), \
        f"{list(args)} crashed with {r.exception!r} instead of a named error"
    assert "Traceback" not in r.output, r.output


def refused(args: Sequence[str], pattern: str) -> dict:
    """Assert that ``mdm-theory ARGS`` is refused with a message matching ``pattern`` (``.`` matches a
    newline); returns the error object."""
    args = [str(a) for a in args]
    r = invoke([*args, "--json"])
    _no_crash(r, args)
    error = strict_json(r.stdout)["error"]
    assert re.search(pattern, error["message"], re.DOTALL), f"{args}: {error['message']!r} does not match {pattern!r}"
    assert error["exit_code"] == r.exit_code
    text = invoke(args)
    _no_crash(text, args)
    assert text.exit_code == r.exit_code and text.stdout == "", text.output
    assert re.search(pattern, text.stderr, re.DOTALL), f"{args}: {text.stderr!r} does not match {pattern!r}"
    return error


def cli_process(args: Sequence[str], log: Path) -> subprocess.Popen:
    """``python -m validation.cli ARGS`` as a real process (one torch/BLAS thread; output to ``log``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    with open(log, "w") as fh:
        return subprocess.Popen([sys.executable, "-m", "validation.cli", *map(str, args)], env=env,
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def kill_when(proc: subprocess.Popen, ready: Callable[[], bool], log: Path, sig: int = signal.SIGKILL,
              returncode: int = -signal.SIGKILL) -> None:
    """Send ``sig`` (SIGKILL) to ``proc`` as soon as ``ready()`` (polled every few milliseconds); it must
    still be running then, and end with ``returncode`` (killed by the signal, or its own exit status)."""
    deadline = time.monotonic() + KILL_WAIT_S
    try:
        while not ready():
            assert proc.poll() is None, f"exited with {proc.returncode} before it could be killed:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"nothing to kill after {KILL_WAIT_S} s:\n{log.read_text()}"
            time.sleep(0.005)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == returncode, f"ended with {proc.returncode}, not {returncode}:\n{log.read_text()}"


#: Wall-clock and CPU-time fields (a sweep row's, a training record's): the only values a resumed run may differ in.
TIMING_KEYS = frozenset({"elapsed_s"}) | TIMING_FIELDS


def without_timing(data: Any) -> Any:
    """``data`` with every timing field (:data:`TIMING_KEYS`) removed, at any depth."""
    if isinstance(data, dict):
        return {k: without_timing(v) for k, v in data.items() if k not in TIMING_KEYS}
    if isinstance(data, list):
        return [without_timing(v) for v in data]
    return data


REPORT = ["report", "--tiny", "--only", "lemmas", "--no-progress", "--json"]


def report_result(out) -> dict:
    """The lemmas experiment's result in ``OUT/results/lemmas.json``, without wall-clock fields."""
    return without_timing(json.loads((out / "results" / "lemmas.json").read_text())["result"])


def cache_entries(out) -> list:
    """The cache files of a report folder (not the locks, not temporary files)."""
    return sorted(p for p in (out / "cache").glob("*/*.json") if not p.name.startswith("."))
