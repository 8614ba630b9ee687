"""SIGKILL in the middle of a sweep, a report and a training run, and SIGTERM in the middle of a
training run; the resumed run equals an uninterrupted one.

Each run is a real ``python -m validation.cli`` process killed with SIGKILL (no handler runs) as
soon as its first row, cache entry or checkpoint is on disk; the kill must land before the run
finished. SIGTERM (what ``timeout`` and cluster schedulers send) must instead leave a checkpoint of
the step the run was in and exit with status 143. The same command then resumes in this process and its output is compared value for
value (wall-clock fields aside) with the same command run without interruption. Sizes are tiny:
each killed run lives a few seconds, most of it spent importing.
"""

from __future__ import annotations

import signal

import pytest
import torch

from neural.train import CHECKPOINT_NAME, load_checkpoint
from tests.bad_inputs._helpers import (
    REPORT,
    cache_entries,
    cli_process,
    invoke,
    kill_when,
    report_result,
    without_timing,
)
from tests.strict_json import strict_json
from validation.sweep import read_table


def _rows(table) -> dict:
    rows, bad = read_table(table)
    assert not bad, bad
    return {r.config_hash: without_timing(r.result) for r in rows}


def test_a_killed_sweep_resumes_to_the_uninterrupted_table(tmp_path):
    # Monte Carlo points of ~0.2 s each, so the kill lands between rows
    sweep = ["sweep", "--language", "2gram", "-L", "32", "-N", "2,4,8,16", "--method", "mc",
             "--samples", "1000", "--no-progress"]
    killed, log = tmp_path / "killed.jsonl", tmp_path / "sweep.log"
    # one point first, in this process: numba compiles (and caches) the kernels here, so the killed
    # process's first row does not wait on a cold compile that can outlast KILL_WAIT_S on a loaded machine
    assert invoke([*sweep[:6], "2", *sweep[7:], "--out", tmp_path / "warm.jsonl"]).exit_code == 0
    proc = cli_process([*sweep, "--out", killed], log)
    kill_when(proc, lambda: killed.exists() and killed.read_text().count("\n") >= 1, log)
    done = len(_rows(killed))
    assert 1 <= done < 4  # killed mid-sweep; every row on disk is whole

    r = invoke([*sweep, "--out", killed, "--json"])
    assert r.exit_code == 0, r.output
    report = strict_json(r.stdout)
    assert (report["computed"], report["skipped"], report["bad_rows"]) == (4 - done, done, [])
    straight = tmp_path / "straight.jsonl"
    assert invoke([*sweep, "--out", straight, "--json"]).exit_code == 0
    assert _rows(killed) == _rows(straight)


def test_a_killed_report_resumes_to_the_uninterrupted_report(reference, tmp_path):
    _, straight, straight_result = reference
    killed, log = tmp_path / "killed", tmp_path / "report.log"
    proc = cli_process([*REPORT, "--out", killed], log)
    kill_when(proc, lambda: bool(cache_entries(killed)), log)
    assert not (killed / "index.html").exists()  # killed before the report was written
    kept = len(cache_entries(killed))

    r = invoke([*REPORT, "--out", killed])
    assert r.exit_code == 0, r.output
    counts = strict_json(r.stdout)["cache"]
    assert counts["hit"] == kept and counts["corrupt"] == counts["stale"] == 0
    assert counts["hit"] + counts["miss"] == straight["cache"]["miss"]
    assert report_result(killed) == straight_result


@pytest.fixture
def one_torch_thread():
    """The killed process runs with OMP_NUM_THREADS=1; this process matches it (bit-identical float32 sums)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# tiny config: a checkpoint every 10 of 40 steps; the kill lands after the first one
TRAIN = ["train", "--language", "2gram", "--config", "tiny", "--train-steps", "40", "--no-progress"]


@pytest.fixture(scope="module")
def straight_training(tmp_path_factory):
    """The uninterrupted run (one torch thread, as the killed processes): ``(checkpoint, final record)``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        straight = tmp_path_factory.mktemp("straight") / "run"
        s = invoke([*TRAIN, "--out", straight, "--json"])
        assert s.exit_code == 0, s.output
        return load_checkpoint(straight), strict_json(s.stdout)["final"]
    finally:
        torch.set_num_threads(before)


def _resumes_to_the_straight_run(run, straight_training) -> None:
    """Resume ``run`` in this process; its weights, EMA and history equal the uninterrupted run's."""
    r = invoke([*TRAIN, "--out", run, "--json"])
    assert r.exit_code == 0, r.output
    b, final = straight_training
    a = load_checkpoint(run)
    assert a.complete and b.complete and a.step == b.step == 40 and a.config == b.config
    for key in b.model_state:
        assert torch.equal(a.model_state[key], b.model_state[key]), key
    for key in b.ema_state:
        assert torch.equal(a.ema_state[key], b.ema_state[key]), key
    assert without_timing(a.history) == without_timing(b.history)
    assert without_timing(strict_json(r.stdout)["final"]) == without_timing(final)


def test_a_killed_training_run_resumes_to_the_uninterrupted_weights(tmp_path, one_torch_thread, straight_training):
    killed, log = tmp_path / "killed", tmp_path / "train.log"
    proc = cli_process([*TRAIN, "--out", killed], log)
    kill_when(proc, lambda: (killed / CHECKPOINT_NAME).exists(), log)
    partial = load_checkpoint(killed)
    assert not partial.complete and 10 <= partial.step < 40
    _resumes_to_the_straight_run(killed, straight_training)


def test_a_sigterm_checkpoints_the_step_and_resumes_to_the_uninterrupted_weights(tmp_path, one_torch_thread,
                                                                                 straight_training):
    # SIGTERM once the first periodic checkpoint exists: the run saves the step it is in and exits 143
    run, log = tmp_path / "stopped", tmp_path / "train.log"
    proc = cli_process([*TRAIN, "--out", run], log)
    kill_when(proc, lambda: (run / CHECKPOINT_NAME).exists(), log, sig=signal.SIGTERM,
              returncode=128 + signal.SIGTERM)
    partial = load_checkpoint(run)
    text = log.read_text()
    assert not partial.complete and 10 <= partial.step < 40, text
    assert f"stopped at step {partial.step} in " in text and "stopped by SIGTERM" in text, text
    _resumes_to_the_straight_run(run, straight_training)
