"""Corrupt, truncated and foreign checkpoints: every command that reads one names the damage.

Files that hold a consistent but unusable run (NaN weights of a diverged run, shapes of another
config) are written with checksums that match their tensors, as a program would write them, so
that the check after the checksum is the one exercised; a flipped bit is a file whose tensor no
longer matches the checksum written with it.

One tiny model is trained once (``--config tiny --steps 1``, a second or two); every damaged file is
derived from its checkpoint. Each case runs a command that loads the file and must refuse it
before computing anything (:func:`tests.bad_inputs._helpers.refused`).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from neural.train import CHECKPOINT_NAME, CheckpointError, _checksums, load_checkpoint
from tests.bad_inputs._helpers import invoke, refused

TRAIN = ["train", "--language", "2gram", "--config", "tiny", "--train-steps", "1", "--no-progress"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """``{name: path}``: the good checkpoint of a tiny run and damaged or foreign files made from it."""
    d = tmp_path_factory.mktemp("checkpoints")
    r = invoke([*TRAIN, "--out", d / "run", "--json"])
    assert r.exit_code == 0, r.output
    good = d / "run" / CHECKPOINT_NAME
    data = good.read_bytes()
    raw = torch.load(good, weights_only=True)
    out = {"good": good}

    def write(name: str, payload: bytes) -> None:
        out[name] = d / f"{name}.pt"
        out[name].write_bytes(payload)

    def save(name: str, obj) -> None:
        out[name] = d / f"{name}.pt"
        if isinstance(obj, dict) and "checksums" in obj:  # consistent: the checksums of the tensors it holds
            obj = {**obj, "checksums": _checksums(obj)}
        torch.save(obj, out[name])

    write("random_bytes", np.random.default_rng(0).bytes(4096))
    write("truncated", data[: len(data) // 2])
    write("empty", b"")
    np.savez(d / "language.npz", initial=np.ones(2) / 2, transition=np.eye(2), emission=np.eye(2))
    out["language_npz"] = d / "language.npz"
    save("tensor", torch.zeros(3))
    save("no_format", {"model": raw["model"], "step": 1})
    save("bad_config", {**raw, "config": {"model": {"length": -1}}})
    save("bad_step", {**raw, "step": "ten"})
    narrow = {k: v[..., :1].clone() for k, v in raw["model"].items()}
    save("wrong_shapes", {**raw, "model": narrow, "ema": narrow})
    extra = {**raw["model"], "extra.weight": torch.zeros(1)}
    save("extra_weights", {**raw, "model": extra, "ema": extra})
    nan = {k: v.clone() for k, v in raw["model"].items()}
    first = next(k for k, v in nan.items() if v.is_floating_point())
    nan[first].view(-1)[0] = float("nan")
    save("nan_weights", {**raw, "model": nan, "ema": nan})
    inf_ema = {k: v.clone() for k, v in raw["ema"].items()}
    inf_ema[first].view(-1)[-1] = float("inf")
    save("inf_ema", {**raw, "ema": inf_ema})
    save("malicious", {**raw, "payload": _Payload()})  # a pickled object whose loading would run code
    flipped = {k: v.clone() for k, v in raw["ema"].items()}
    cond = next(k for k, v in flipped.items() if v.is_floating_point() and v.abs().max() > 0)
    bits = flipped[cond].view(-1)[:1].view(torch.int32)
    bits ^= 1 << 29  # one exponent bit: a weight stays finite (0.05 -> ~1e18 or so), the network is another one
    assert torch.isfinite(flipped[cond]).all()
    out["flipped_bit"] = d / "flipped_bit.pt"
    torch.save({**raw, "ema": flipped}, out["flipped_bit"])  # the checksums written with the good tensor
    huge = {**raw, "config": {**raw["config"], "model": {**raw["config"]["model"], "length": 10**9}}}
    save("huge_length", huge)
    out["no_checksums"] = d / "no_checksums.pt"
    torch.save({k: v for k, v in raw.items() if k != "checksums"}, out["no_checksums"])  # before checksums existed
    (d / "empty_run").mkdir()
    out["empty_run"] = d / "empty_run"
    return out


class _Payload:
    """An object a full unpickler would rebuild by calling ``print`` (stand-in for any code)."""

    def __reduce__(self):
        return print, ("this ran while loading a checkpoint",)


def _run_folder(checkpoints, tmp_path, name: str):
    """A run folder holding checkpoint ``name`` as its ``checkpoint.pt`` (for train to resume from)."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(checkpoints[name], run / CHECKPOINT_NAME)
    return run


EVALUATE = ["--steps", "2", "--samples", "4", "--eps-sequences", "4"]


DAMAGED = [
    ("random_bytes", r"checkpoint .*random_bytes\.pt' is corrupt or truncated"),
    ("truncated", r"truncated\.pt' is corrupt or truncated \((?!.*delete it)"),
    ("empty", r"empty\.pt' is corrupt or truncated"),
    ("language_npz", r"language\.npz' is corrupt or truncated"),
    ("tensor", r"tensor\.pt' is not an mdm-theory checkpoint"),
    ("no_format", r"no_format\.pt' is not an mdm-theory checkpoint"),
    ("bad_config", r"bad_config\.pt' is incomplete or malformed: not a valid run config"),
    ("bad_step", r"bad_step\.pt' is incomplete or malformed"),
    ("wrong_shapes", r"wrong_shapes\.pt' holds weights that do not fit its config: .*size mismatch"),
    ("extra_weights", r"extra_weights\.pt' holds weights that do not fit its config: .*Unexpected key"),
    ("empty_run", r"no checkpoint at .*empty_run/checkpoint\.pt"),
    ("nan_weights", r"nan_weights\.pt' holds non-finite weights: .* has 1 NaN/inf entry"),
    ("inf_ema", r"inf_ema\.pt' holds non-finite EMA weights"),
    ("malicious", r"malicious\.pt' holds Python objects that a weights-only load refuses .*nothing in it was run"),
    ("flipped_bit", r"flipped_bit\.pt': tensor ema\.\S+ does not match its checksum"),
    ("huge_length", r"the network of checkpoint .*huge_length\.pt' \(L = 1000000000, .*needs about .* of memory"),
]


@pytest.mark.parametrize("name, pattern", DAMAGED, ids=[name for name, _ in DAMAGED])
def test_evaluate_refuses_a_damaged_or_foreign_checkpoint(checkpoints, name, pattern):
    error = refused(["evaluate", checkpoints[name], *EVALUATE], pattern)
    assert "delete it" not in error["message"]  # training's advice, not evaluation's: the file is the user's model


@pytest.mark.parametrize("name, args, pattern", [
    ("truncated", [], r"checkpoint\.pt' is corrupt or truncated .*delete it \(or use another --out\) to start the run"),
    ("wrong_shapes", [], r"checkpoint\.pt' holds weights that do not fit its config"),
    ("good", ["--seed", "1"], r"belongs to a run with another config"),
    ("nan_weights", [], r"checkpoint\.pt' holds non-finite weights.*delete it"),
], ids=["truncated", "weights that do not fit", "another run's config", "NaN weights"])
def test_train_refuses_to_resume_from_a_damaged_or_foreign_checkpoint(checkpoints, tmp_path, name, args, pattern):
    run = _run_folder(checkpoints, tmp_path, name)
    before = (run / CHECKPOINT_NAME).read_bytes()
    refused([*TRAIN, *args, "--out", run], pattern)
    assert (run / CHECKPOINT_NAME).read_bytes() == before  # never overwritten


@pytest.mark.parametrize("name, args, pattern", [
    ("truncated", [], r"is corrupt or truncated"),
    ("good", ["--language", "3gram"], r"--language 3gram is not the language the checkpoint was trained on \(2gram\)"),
    ("good", ["-L", "9"], r"--length 9 differs from the checkpoint's sequence length 8"),
    ("good", ["--method", "dp"], r"a learned model has no exact method"),
    ("nan_weights", [], r"holds non-finite weights"),
], ids=["truncated", "another language", "another length", "an exact method", "NaN weights"])
def test_steps_needed_refuses_a_checkpoint_that_does_not_fit(checkpoints, name, args, pattern):
    refused(["steps-needed", "--checkpoint", checkpoints[name], "--metric", "ser", "--target", "0.5", *args], pattern)


def test_report_and_bench_refuse_a_damaged_or_mismatched_checkpoint(checkpoints, tmp_path):
    refused(["report", "--tiny", "--only", "learned", "--out", tmp_path / "report", "--checkpoint",
             checkpoints["truncated"]], r"is corrupt or truncated")
    refused(["bench", "sampling", "--ar", checkpoints["good"]], r"holds a mdm model")
    refused(["bench", "sampling", "--mdm", checkpoints["nan_weights"]], r"holds non-finite weights")
    refused(["report", "--tiny", "--only", "learned", "--out", tmp_path / "report2", "--checkpoint",
             checkpoints["nan_weights"]], r"holds non-finite weights")


def test_a_checkpoint_without_checksums_loads_with_a_warning_and_a_flipped_bit_never_loads(checkpoints):
    with pytest.warns(UserWarning, match=r"no_checksums\.pt' carries no checksums of its tensors"):
        old = load_checkpoint(checkpoints["no_checksums"])
    good = load_checkpoint(checkpoints["good"])
    assert all(torch.equal(good.ema_state[k], v) for k, v in old.ema_state.items())
    with pytest.raises(CheckpointError, match=r"does not match its checksum"):
        load_checkpoint(checkpoints["flipped_bit"])
