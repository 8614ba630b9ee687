"""Training: the loss decreases, checkpoints round-trip and resume exactly, damage is reported, DDP (gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from neural.config import make_config
from neural.data import load_or_make_dataset, make_dataset
from neural.train import (
    CHECKPOINT_NAME,
    TIMING_FIELDS,
    CheckpointError,
    load_checkpoint,
    lr_at,
    train,
)
from numerics.languages.hmm import NGram

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]
ATOL_DDP = 1e-5  # float32: gradients all-reduced (mean of two half-batch means) vs one full-batch mean
ATOL_COMPILE = 1e-5  # float32 weights after six steps: compiled kernels sum in another order


def tiny_language() -> NGram:
    """A 2-gram over 3 tokens with one forbidden transition (0 -> 2)."""
    cond = np.array([[0.7, 0.3, 0.0], [0.2, 0.3, 0.5], [0.5, 0.25, 0.25]])
    return NGram(2, np.array([0.5, 0.3, 0.2]), cond)


def tiny_config(kind="mdm", model=None, **train):
    overrides = {k: v for k, v in (("model", model), ("train", train)) if v}
    return make_config("tiny", language="tiny", kind=kind, vocab_size=3, overrides=overrides or None)


def _run(cfg, out, **kw):
    return train(cfg, out, language=tiny_language(), progress=False, data_root=out.parent / "data", **kw)


def test_lr_schedule_warmup_then_cosine():
    cfg = tiny_config(train_steps=100, lr=1e-3, lr_min=1e-6).train
    lrs = [lr_at(s, cfg) for s in range(100)]
    assert lrs[0] == pytest.approx(1e-6 + (1e-3 - 1e-6) / 10)
    assert lrs[9] == pytest.approx(1e-3)  # end of the 10 % warm-up
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))  # cosine decay
    assert lr_at(100, cfg) == pytest.approx(1e-6)


def test_dataset_is_seeded_split_and_stored(tmp_path):
    lang = tiny_language()
    cfg = tiny_config().data
    a = load_or_make_dataset(lang, 8, cfg, tmp_path)
    files = list(tmp_path.glob("data-*.npz"))
    assert len(files) == 1
    b = load_or_make_dataset(lang, 8, cfg, tmp_path)  # loaded, not redrawn
    assert np.array_equal(a.train, b.train) and np.array_equal(a.val, b.val)
    c = make_dataset(lang, 8, replace(cfg, n_train=cfg.n_train * 2))
    assert np.array_equal(a.val, c.val)  # the validation set does not depend on n_train
    assert not np.array_equal(a.train[:10], make_dataset(lang, 8, replace(cfg, seed=cfg.seed + 1)).train[:10])
    assert np.all(np.isfinite(a.val_loglik))
    files[0].write_bytes(b"garbage")  # a damaged file is drawn again
    assert np.array_equal(load_or_make_dataset(lang, 8, cfg, tmp_path).train, a.train)


@pytest.mark.parametrize("kind", ["mdm", "ar"])
def test_loss_decreases(tmp_path, kind):
    cfg = tiny_config(kind, train_steps=60, eval_every=5, lr=1e-2, ema_decay=0.0)
    res = _run(cfg, tmp_path / "run")
    first, last = res.history[0], res.history[-1]
    assert res.complete and last["final"] and first["step"] == 5
    assert last["val_loss"] < first["val_loss"]
    # the untrained networks predict the uniform law: loss log 3 (MDM: times (1 - eps), its mask rate)
    assert last["val_loss"] < np.log(3) - 0.05


def test_checkpoint_round_trip_and_exact_resume(tmp_path):
    cfg = tiny_config(train_steps=12, checkpoint_every=4, eval_every=6)
    straight = _run(cfg, tmp_path / "a")
    part = _run(cfg, tmp_path / "b", stop_after=5)
    assert not part.complete and part.step == 5
    resumed = _run(cfg, tmp_path / "b")
    assert resumed.complete and resumed.step == 12
    ca, cb = load_checkpoint(tmp_path / "a"), load_checkpoint(tmp_path / "b" / "checkpoint.pt")
    assert ca.config == cfg and cb.config == cfg and ca.complete
    for key in ca.model_state:
        assert torch.equal(ca.model_state[key], cb.model_state[key]), key
    for key in ca.ema_state:
        assert torch.equal(ca.ema_state[key], cb.ema_state[key]), key
    assert straight.history[-1]["val_loss"] == resumed.history[-1]["val_loss"]
    model = ca.build_model()
    x = torch.randint(0, 4, (2, 8))
    again = load_checkpoint(tmp_path / "a").build_model()
    assert torch.equal(model(x), again(x))
    # a finished run is not trained again
    assert _run(cfg, tmp_path / "a").step == 12


def _assert_identical(a, b, where: str) -> None:
    """Tensors bit for bit (same dtype, ``torch.equal``), everything else by ``==``, at any depth."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            _assert_identical(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_identical(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _untimed(history: list[dict]) -> list[dict]:
    assert all(TIMING_FIELDS <= row.keys() for row in history)  # the named fields are the ones logged
    return [{k: v for k, v in row.items() if k not in TIMING_FIELDS} for row in history]


@pytest.mark.parametrize("kind, estimator", [("mdm", "time"), ("mdm", "count"), ("ar", "time")],
                         ids=["mdm-time", "mdm-count", "ar"])
def test_a_run_that_loses_the_work_after_its_checkpoint_resumes_bit_for_bit(tmp_path, kind, estimator):
    """In process, what a SIGKILL leaves: the steps after the last checkpoint are lost and trained again.

    The resumed run's weights, EMA, optimizer state and every logged record except the timing
    fields equal the uninterrupted run's bit for bit (CPU, one torch thread). Dropout is on, so the
    per-step dropout seed is exercised along with the per-step noise and the epoch permutations.
    """
    cfg = tiny_config(kind, model={"dropout": 0.1}, train_steps=12, checkpoint_every=4, eval_every=3,
                      nelbo_estimator=estimator)
    straight = _run(cfg, tmp_path / "straight")
    run = tmp_path / "killed"
    _run(cfg, run, stop_after=4)
    last_checkpoint = (run / CHECKPOINT_NAME).read_bytes()
    _run(cfg, run, stop_after=7)  # trains on past the checkpoint (its step-6 record included) ...
    (run / CHECKPOINT_NAME).write_bytes(last_checkpoint)  # ... and loses it all, as a killed process would
    resumed = _run(cfg, run)
    a, b = load_checkpoint(run), load_checkpoint(straight.checkpoint)
    assert resumed.complete and a.complete and a.step == b.step == 12 and a.ema_updates == b.ema_updates == 12
    for name in ("model_state", "ema_state", "optimizer_state", "segments"):
        _assert_identical(getattr(a, name), getattr(b, name), name)
    assert [row["step"] for row in a.history] == [3, 6, 9, 12]
    assert _untimed(a.history) == _untimed(b.history) == _untimed(resumed.history) == _untimed(straight.history)


def test_damaged_or_foreign_checkpoint_is_a_clear_error(tmp_path):
    cfg = tiny_config(train_steps=3)
    _run(cfg, tmp_path / "run")
    path = tmp_path / "run" / "checkpoint.pt"
    data = path.read_bytes()
    with pytest.raises(CheckpointError, match=r"another config \(train\.lr: 0\.003 in the run, 0\.002 asked\)"):
        _run(tiny_config(train_steps=3, lr=2e-3), tmp_path / "run")
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        _run(cfg, tmp_path / "run")
    torch.save({"weights": torch.zeros(1)}, path)
    with pytest.raises(CheckpointError, match="not an mdm-theory checkpoint"):
        load_checkpoint(path)
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "nowhere.pt")


def test_finished_run_extends_to_more_steps_with_a_new_lr_segment(tmp_path):
    short = _run(tiny_config(train_steps=6, eval_every=100), tmp_path / "run")
    assert short.complete and short.step == 6
    with pytest.raises(CheckpointError, match="can only be extended"):
        _run(tiny_config(train_steps=4, eval_every=100), tmp_path / "run")
    longer = _run(tiny_config(train_steps=10, eval_every=100), tmp_path / "run")
    assert longer.complete and longer.step == 10
    ck = load_checkpoint(tmp_path / "run")
    assert ck.segments == [0, 6] and ck.config.train.train_steps == 10
    assert [h["step"] for h in ck.history if h["final"]] == [6, 10]
    # the added steps follow a fresh warm-up + cosine over steps 6..10
    assert lr_at(6, ck.config.train, 6) == pytest.approx(lr_at(0, tiny_config(train_steps=4).train))
    # a run in progress cannot be stretched
    _run(tiny_config(train_steps=8, eval_every=100), tmp_path / "part", stop_after=3)
    with pytest.raises(CheckpointError, match="in progress at step 3 of 8"):
        _run(tiny_config(train_steps=12, eval_every=100), tmp_path / "part")


def test_vocabulary_mismatch_rejected(tmp_path):
    cfg = make_config("tiny", language="tiny", kind="mdm", vocab_size=4)
    with pytest.raises(ValueError, match="vocab"):
        _run(cfg, tmp_path / "run")


def test_ddp_two_processes_on_gloo_match_one_process(tmp_path):
    lang = tiny_language()
    lang_path = tmp_path / "tiny.npz"
    lang.save(lang_path)
    cfg = make_config("tiny", language=str(lang_path), kind="mdm", vocab_size=3, overrides={"train": {"train_steps": 4}})
    single = train(cfg, tmp_path / "single", language=lang, progress=False)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    ddp = tmp_path / "ddp"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         "-m", "validation.cli", "train", "--language", str(lang_path), "--config", "tiny", "--train-steps", "4",
         "--no-progress", "--out", str(ddp)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = load_checkpoint(single.checkpoint), load_checkpoint(ddp)
    assert b.complete and b.step == 4 and b.config == cfg
    for key in a.model_state:
        assert torch.allclose(a.model_state[key], b.model_state[key], atol=ATOL_DDP), key
    # validation is sharded over the ranks and all-reduced: same figure as one process
    assert b.history[-1]["val_loss"] == pytest.approx(a.history[-1]["val_loss"], rel=1e-5)


def test_time_budget_stops_with_a_resumable_checkpoint(tmp_path):
    cfg = tiny_config(train_steps=8)
    part = _run(cfg, tmp_path / "run", max_minutes=0.0)  # budget spent after the first step
    assert part.step == 1 and not part.complete
    assert load_checkpoint(tmp_path / "run").step == 1
    done = _run(cfg, tmp_path / "run")
    assert done.complete and done.step == 8 and done.history[-1]["final"]


def _compiler_available() -> bool:
    from neural.train import _compile_unavailable

    return _compile_unavailable(torch.device("cpu")) is None


@pytest.mark.skipif(not _compiler_available(), reason="torch.compile needs a C++ compiler on the CPU")
def test_compiled_training_follows_the_eager_run(tmp_path):
    eager = _run(tiny_config(train_steps=6, eval_every=6, ema_decay=0.0), tmp_path / "eager")
    cfg = tiny_config(train_steps=6, eval_every=6, ema_decay=0.0, compile=True)
    compiled = _run(cfg, tmp_path / "compiled")
    metrics = json.loads((tmp_path / "compiled" / "metrics.json").read_text())
    assert metrics["compiled"] is True and metrics["config"]["train"]["compile"] is True
    a = load_checkpoint(tmp_path / "eager" / CHECKPOINT_NAME).model_state
    b = load_checkpoint(tmp_path / "compiled" / CHECKPOINT_NAME).model_state
    for key in a:  # the same six AdamW steps, summed in another order
        assert torch.allclose(a[key], b[key], rtol=0, atol=ATOL_COMPILE), key
    assert compiled.history[-1]["val_loss"] == pytest.approx(eager.history[-1]["val_loss"], rel=1e-5)


def test_a_compile_that_fails_trains_eager_and_says_so(tmp_path, monkeypatch):
    nt = sys.modules["neural.train"]  # the package exports the function train under the same name

    class Broken(torch.nn.Module):  # what torch.compile returns when its first call fails
        def forward(self, *args):
            raise RuntimeError("simulated compiler failure")

    monkeypatch.setattr(nt, "_compile_unavailable", lambda device: None)
    monkeypatch.setattr(nt.torch, "compile", lambda module: Broken())
    eager = _run(tiny_config(train_steps=6, eval_every=6), tmp_path / "eager")
    with pytest.warns(RuntimeWarning, match="simulated compiler failure"):
        fell_back = _run(tiny_config(train_steps=6, eval_every=6, compile=True), tmp_path / "fallback")
    assert json.loads((tmp_path / "fallback" / "metrics.json").read_text())["compiled"] is False
    a = load_checkpoint(tmp_path / "eager" / CHECKPOINT_NAME).model_state
    b = load_checkpoint(tmp_path / "fallback" / CHECKPOINT_NAME).model_state
    assert all(torch.equal(a[k], b[k]) for k in a)  # the failed compiled step changed nothing
    assert fell_back.history[-1]["val_loss"] == eager.history[-1]["val_loss"]


@pytest.mark.parametrize(("requested", "local_rank", "expected"),
                         [("cuda", None, "cuda:0"), ("cuda", "1", "cuda:1"), ("cuda:1", "0", "cuda:1"), (None, "1", "cuda:1")])
def test_plain_cuda_is_the_local_ranks_gpu_with_its_index(monkeypatch, requested, local_rank, expected):
    """torch.cuda.set_device refuses a device without an index (found on an H200 with torch 2.11): pick_device
    gives "cuda" the local rank's index, as its default does (two GPUs faked: this runs on the CPU)."""
    from neural.train import pick_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    if local_rank is None:
        monkeypatch.delenv("LOCAL_RANK", raising=False)
    else:
        monkeypatch.setenv("LOCAL_RANK", local_rank)
    dev = pick_device(requested)
    assert dev == torch.device(expected) and dev.index is not None
