"""Issue 35: memory estimated before every allocation, a lock on every writer, no wait without a
deadline, every environment variable parsed once, tracebacks turned into named errors.

Each case fails without its fix: the command would be accepted (and run, allocate, wait or write),
or end in a traceback, or print a wrong number. The size cases set ``MDM_THEORY_MEMORY_GIB`` so the
refusal does not depend on the machine, and use cases whose unrefused run stays small enough for
the test machine; the waits use loopback sockets and a one-second deadline.
"""

from __future__ import annotations

import errno
import io
import os
import socket
import threading
import zipfile

import numpy as np
import pytest

from neural.train import run_lock
from tests.bad_inputs._helpers import invoke, refused
from tests.strict_json import strict_json
from validation import cache as cache_module
from validation.cache import ResultCache

EXACT = ["exact", "--language", "2gram", "-L", "3", "-N", "2"]
TRAIN = ["train", "--language", "2gram", "--config", "tiny", "--train-steps", "1", "--no-progress"]


# --------------------------------------------------------------------------------- environment variables
@pytest.mark.parametrize("name", ["MDM_THEORY_MEMORY_GIB", "MDM_THEORY_MAX_SECONDS", "MDM_THEORY_CONNECT_SECONDS"])
@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-1", "0"])
def test_an_unusable_environment_variable_is_named_before_any_command_runs(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    refused(EXACT, rf"{name}='{value}' is not a finite number > 0: {name} is ")


def test_a_memory_size_no_machine_has_is_refused(monkeypatch):
    monkeypatch.setenv("MDM_THEORY_MEMORY_GIB", "1e-9")
    refused(EXACT, r"MDM_THEORY_MEMORY_GIB='1e-9' is outside \(0\.000976562, 1\.09951e\+12\]")


@pytest.mark.parametrize("value", ["0", "false", "off", "no"])
def test_traceback_zero_means_off(monkeypatch, value):
    monkeypatch.setenv("MDM_THEORY_TRACEBACK", value)  # refused(): no traceback, a named error
    refused(["exact", "--language", "no-such-language", "-L", "3", "-N", "2"], r"no-such-language")


def test_traceback_switch_that_means_nothing_is_named(monkeypatch):
    monkeypatch.setenv("MDM_THEORY_TRACEBACK", "maybe")
    refused(EXACT, r"MDM_THEORY_TRACEBACK='maybe' is not a switch: .*use MDM_THEORY_TRACEBACK=1 \(on\) or "
                   r"MDM_THEORY_TRACEBACK=0 \(off\)")


def test_a_torchrun_variable_that_is_no_rank_is_named(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "0")
    refused(EXACT, r"WORLD_SIZE='0' is not an integer >= 1")


# ------------------------------------------------------------------------------------------- train
@pytest.mark.parametrize("args, pattern", [
    (["--threads", "0"], r"'--threads': 0 is not in the range 1<=x"),
    (["--device", "tpu9"], r"--device 'tpu9' is not a device: use cpu, cuda or cuda:K"),
    (["--max-minutes", "-1"], r"'--max-minutes': -1\.0 is not in the range 0<=x"),
], ids=["threads 0", "device tpu9", "max-minutes -1"])
def test_train_options_that_cannot_run_are_named(tmp_path, args, pattern):
    refused([*TRAIN, "--out", tmp_path / "run", *args], pattern)
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_second_train_into_a_folder_being_trained_is_refused_at_once(tmp_path):
    run = tmp_path / "run"
    with run_lock(run):  # what a first `train --out run` holds from its first read to its last save
        refused([*TRAIN, "--out", run], r"another mdm-theory train is writing the run folder .*run'.*train into "
                                        r"another --out")
    assert not (run / "checkpoint.pt").exists()


# ------------------------------------------------------------------------------------ languages fit
def test_fit_refuses_a_fifo_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "corpus.fifo"
    os.mkfifo(fifo)
    refused(["languages", "fit", fifo, "--level", "char", "--out", tmp_path / "f.npz"],
            r"corpus\.fifo is a FIFO \(named pipe\), not a regular file")
    assert not (tmp_path / "f.npz").exists()


def test_fit_refuses_dev_zero_before_reading_it(tmp_path):
    refused(["languages", "fit", "/dev/zero", "--level", "char", "--out", tmp_path / "f.npz"],
            r"/dev/zero is a character device, not a regular file")


def test_fit_estimates_its_peak_before_the_dense_conditional(tmp_path, monkeypatch):
    monkeypatch.setenv("MDM_THEORY_MEMORY_GIB", "1")  # limit 0.5 GiB; the fit's peak: 3 x 0.27 GiB
    corpus = tmp_path / "words.txt"
    corpus.write_text(" ".join(f"w{i}" for i in range(6000)) + "\n")
    refused(["languages", "fit", corpus, "--level", "word", "--out", tmp_path / "f.npz"],
            r"fitting a 2-gram over V = 6000 tokens \(3 dense conditionals of 0\.268 GiB at the peak\) needs about "
            r"0\.805 GiB of memory, more than this machine's limit of 0\.5 GiB .*lower --vocab-cap or --order")
    assert not (tmp_path / "f.npz").exists()


# ------------------------------------------------------------------------------- exact: auto and named
def test_exact_methods_carry_a_memory_estimate(monkeypatch):
    monkeypatch.setenv("MDM_THEORY_MEMORY_GIB", "1")  # limit 0.5 GiB; enumeration at 8^8 needs about 1.1 GiB
    args = ["exact", "--language", "2gram-pruned", "-L", "8", "-N", "1"]
    refused([*args, "--method", "enumerate"], r"--method enumerate cannot compute 2gram-pruned at L = 8, N = 1: .*"
                                              r"about 1\.12 GiB of memory > this machine's limit 0\.5 GiB")
    r = invoke([*args, "--samples", "16", "--json"])
    assert r.exit_code == 0, r.output
    choice = strict_json(r.stdout)["method_choice"]
    assert choice["method"] == "mc"  # auto passes over the exact method that does not fit
    assert choice["exact_methods"]["enumerate"]["estimated_bytes"] == pytest.approx(1.125 * 2**30)


def test_the_joint_table_peaks_within_its_estimate_and_below_s_tables():
    """calibrate / steps-needed / exact at L = 8 on 2gram-pruned peaked at 2.4 GB: the forward contraction
    held a (V^L, S) array, S = 8 times the table. Here at L = 7 (V^L = 2^21): the peak of building the
    table is within the memory estimate of :func:`numerics.methods.exact_bytes` and below that array."""
    import tracemalloc

    from numerics.exact.joint_table import joint_table
    from numerics.languages.presets import load_language
    from numerics.methods import METRIC_TABLES, exact_bytes

    lang, L = load_language("2gram-pruned"), 7
    tracemalloc.start()
    try:
        q = joint_table(lang, L)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    table = 8 * q.size
    assert peak < lang.n_states * table  # the (V^L, S) array of the old contraction alone
    assert peak <= exact_bytes(lang, L, "enumerate", steps=1) - (METRIC_TABLES + 1) * table  # the build's share


def test_steps_needed_and_calibrate_refuse_a_max_steps_no_schedule_holds():
    for cmd in ("steps-needed", "calibrate"):
        refused([cmd, "--language", "2gram-pruned", "-L", "8", "--metric", "ser", "--target", "0.5",
                 "--max-steps", "1000000000000"], r"'--max-steps': 1000000000000 is not in the range 1<=x<=16777216")


# ----------------------------------------------------------------------------------- language files
def _header_only(z: zipfile.ZipFile, key: str, shape: tuple) -> None:
    """A member whose ``.npy`` header declares ``shape`` (float64) and holds no data."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": shape})
    z.writestr(f"{key}.npy", head.getvalue() + b"\0" * 64)


def _small(z: zipfile.ZipFile, key: str, arr) -> None:
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr))
    z.writestr(f"{key}.npy", buf.getvalue())


def test_a_language_file_is_sized_as_a_whole_and_its_shapes_checked_from_the_headers(tmp_path, monkeypatch):
    monkeypatch.setenv("MDM_THEORY_MEMORY_GIB", "24")  # the machine: limit 12 GiB, 3 x 3 GiB fit
    big = tmp_path / "big_initial.npz"  # 3 GiB of initial beside a 2-state transition (was: read, "sums to 0.0")
    with zipfile.ZipFile(big, "w") as z:
        _header_only(z, "initial", (3 * 2**27,))
        _small(z, "transition", [[0.9, 0.1], [0.2, 0.8]])
        _small(z, "emission", [[0.7, 0.3], [0.4, 0.6]])
    refused(["exact", "--language", big, "-L", "3", "-N", "2"],
            r"big_initial\.npz': transition has shape \(2, 2\), expected \(402653184, 402653184\) from initial "
            r"\(read from the headers; nothing was loaded\)")
    monkeypatch.setenv("MDM_THEORY_MEMORY_GIB", "16")  # limit 8 GiB: each array alone fits, not 3 copies of both
    together = tmp_path / "together.npz"  # 3 GiB of conditional and its initial: 3 copies exceed the limit
    with zipfile.ZipFile(together, "w") as z:
        _small(z, "order", np.int64(2))
        _header_only(z, "initial", (2**14,))
        _header_only(z, "conditional", (2**14, 3 * 2**14))
    refused(["exact", "--language", together, "-L", "3", "-N", "2"],
            r"together\.npz': array 'conditional' declares shape \(16384, 49152\) of float64 \(6 GiB\); loading the "
            r"file .*needs about 18 GiB of memory, more than this machine's limit of 8 GiB.*it was not read")


# ---------------------------------------------------------------------------------- optimal decoder
@pytest.mark.parametrize("calls", ["100000000", "1000000000000"])
def test_optimal_decoder_sizes_its_answer_by_T(calls):
    refused(["optimal-decoder", "--language", "2gram", "-L", "3", "-T", calls, "--metric", "kl"],
            rf"optimal-decoder -T {calls} at L = 3 needs about .* GiB of memory.*every budget beyond -T 3")


def test_optimal_decoder_reports_a_round_off_kl_as_zero_like_exact():
    r = invoke(["optimal-decoder", "--language", "2gram", "-L", "3", "-T", "3", "--metric", "kl", "--json"])
    assert r.exit_code == 0, r.output
    out = strict_json(r.stdout)
    assert out["values_by_budget"][-1] == 0.0 and out["value"]["value"] == 0.0  # was -4.4e-17
    assert min(out["values_by_budget"]) >= 0.0


# ---------------------------------------------------------------------------------------- Dask waits
SWEEP = ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2", "--executor", "dask"]


@pytest.fixture
def silent_listener():
    """A loopback TCP port that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for conn in held:
        conn.close()


def test_a_scheduler_that_never_answers_is_given_up_after_the_deadline(tmp_path, monkeypatch, silent_listener):
    pytest.importorskip("distributed")
    monkeypatch.setenv("MDM_THEORY_CONNECT_SECONDS", "1")
    refused([*SWEEP, "--out", tmp_path / "t.jsonl", "--scheduler", silent_listener],
            rf"--scheduler {silent_listener}: no Dask scheduler answered within 1 s .*MDM_THEORY_CONNECT_SECONDS")
    assert not (tmp_path / "t.jsonl").exists()


def test_an_impossible_scheduler_port_is_refused_at_once(tmp_path):
    pytest.importorskip("distributed")
    refused([*SWEEP, "--out", tmp_path / "t.jsonl", "--scheduler", "tcp://127.0.0.1:99999"],
            r"--scheduler 'tcp://127\.0\.0\.1:99999' is not a scheduler address \(port 99999 is outside 1\.\.65535\)")


# ------------------------------------------------------------------------------- report on a full disk
def test_a_cache_entry_that_cannot_be_stored_leaves_no_lock_file(tmp_path, monkeypatch):
    def full_disk(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(cache_module, "atomic_write_bytes", full_disk)
    cache = ResultCache(tmp_path / "cache")
    for k in range(3):
        with pytest.raises(OSError, match="No space left"):
            cache.get_or_compute("point", {"k": k}, lambda: {"value": 1.0})
    assert not list((tmp_path / "cache").rglob("*.lock"))
    monkeypatch.undo()
    assert cache.get_or_compute("point", {"k": 0}, lambda: {"value": 1.0}) == {"value": 1.0}  # the disk freed
