"""Smoke tests of ``mdm-theory train``, ``evaluate`` and ``bench sampling`` with tiny sizes."""

from __future__ import annotations

import json

import numpy as np
import torch
from click.testing import CliRunner

from numerics.languages.hmm import NGram
from validation.cli import main

torch.set_num_threads(1)


def test_train_evaluate_bench_end_to_end(tmp_path):
    lang = NGram(2, np.array([0.5, 0.3, 0.2]), np.array([[0.7, 0.3, 0.0], [0.2, 0.3, 0.5], [0.5, 0.25, 0.25]]))
    path = tmp_path / "tiny.npz"
    lang.save(path)
    runner = CliRunner()
    runs = {}
    for kind in ("mdm", "ar"):
        out = tmp_path / kind
        res = runner.invoke(main, ["train", "--language", str(path), "--model", kind, "--config", "tiny",
                                   "--train-steps", "6", "--out", str(out), "--no-progress", "--json"])
        assert res.exit_code == 0, res.output
        summary = json.loads(res.output.strip().splitlines()[-1])
        assert summary["complete"] and summary["step"] == 6 and summary["final"]["final"]
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["config"]["model"]["kind"] == kind and metrics["provenance"]["versions"]["torch"]
        runs[kind] = out / "checkpoint.pt"

    res = runner.invoke(main, ["evaluate", str(runs["mdm"]), "--steps", "2,8", "--samples", "16",
                               "--eps-sequences", "8", "--oracle", "--json", "--out", str(tmp_path / "ev.json")])
    assert res.exit_code == 0, res.output
    ev = json.loads(res.output)
    assert [(r["denoiser"], r["n_steps"]) for r in ev["rows"]] == [("model", 2), ("oracle", 2), ("model", 8), ("oracle", 8)]
    for r in ev["rows"]:
        assert 1 <= r["nfe"] <= r["n_steps"] and 0 <= r["ser"] <= 1 and r["samples"] == 16
    assert ev["reference"]["true_samples"]["ser"] == 0.0
    assert ev["eps_learning"]["mean"] >= 0 and ev["eps_learning"]["positions"] > 0
    assert json.loads((tmp_path / "ev.json").read_text())["rows"] == ev["rows"]

    res = runner.invoke(main, ["evaluate", str(runs["ar"]), "--samples", "16", "--json"])
    assert res.exit_code == 0, res.output
    ar = json.loads(res.output)
    assert ar["rows"][0]["sampler"] == "ar-kv-cache" and ar["rows"][0]["nfe"] == 8

    res = runner.invoke(main, ["bench", "sampling", "--mdm", str(runs["mdm"]), "--ar", str(runs["ar"]),
                               "--batch", "2", "--steps", "4,8", "--repeats", "2", "--json"])
    assert res.exit_code == 0, res.output
    bench = json.loads(res.output)
    assert bench["ar"]["nfe"] == 8 and [r["n_steps"] for r in bench["mdm"]] == [4, 8]
    assert set(bench["speedup_vs_ar"]) == {"4", "8"}

    res = runner.invoke(main, ["bench", "sampling", "--config", "tiny", "--vocab", "3", "--batch", "2",
                               "--steps", "4", "--repeats", "1", "--warmup", "0"])
    assert res.exit_code == 0, res.output and "untrained" in res.output

    bad = runner.invoke(main, ["evaluate", str(runs["mdm"]), "--steps", "0,4"])
    assert bad.exit_code != 0 and "integers >= 1" in bad.output
    (tmp_path / "broken.pt").write_bytes(b"not a checkpoint")
    bad = runner.invoke(main, ["evaluate", str(tmp_path / "broken.pt")])
    assert bad.exit_code != 0 and "corrupt" in bad.output and "Traceback" not in bad.output


def test_train_overrides_are_stored_and_a_different_config_is_named(tmp_path):
    lang = NGram(2, np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]))
    path = tmp_path / "two.npz"
    lang.save(path)
    out = tmp_path / "run"
    base = ["train", "--language", str(path), "--config", "tiny", "--out", str(out), "--no-progress", "--json",
            "--threads", "1"]
    runner = CliRunner()
    res = runner.invoke(main, base + ["-L", "6", "--width", "16", "--depth", "1", "--heads", "2", "--lr", "0.01",
                                      "--train-steps", "3", "--batch-size", "8"])
    assert res.exit_code == 0, res.output
    cfg = json.loads(res.output.strip().splitlines()[-1])["config"]
    assert (cfg["model"]["length"], cfg["model"]["width"], cfg["model"]["n_layers"], cfg["model"]["n_heads"]) == (6, 16, 1, 2)
    assert (cfg["train"]["lr"], cfg["train"]["train_steps"], cfg["train"]["batch_size"]) == (0.01, 3, 8)
    assert json.loads((out / "metrics.json").read_text())["config"] == cfg
    same = ["-L", "6", "--width", "16", "--depth", "1", "--heads", "2", "--train-steps", "3", "--batch-size", "8"]
    bad = runner.invoke(main, base + same + ["--lr", "0.02"])
    assert bad.exit_code != 0 and "train.lr: 0.01 in the run, 0.02 asked" in bad.output
    assert "Traceback" not in bad.output and "'model':" not in bad.output  # no config dicts dumped
    longer = runner.invoke(main, base + same[:-4] + ["--train-steps", "5", "--batch-size", "8", "--lr", "0.01"])
    assert longer.exit_code == 0, longer.output
    summary = json.loads(longer.output.strip().splitlines()[-1])
    assert summary["step"] == 5 and summary["complete"] and summary["config"]["train"]["train_steps"] == 5


def test_evaluate_runs_a_decoder_with_the_learned_and_the_oracle_denoiser(tmp_path):
    lang = NGram(2, np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.2, 0.8]]))
    path = tmp_path / "two.npz"
    lang.save(path)
    runner = CliRunner()
    out = tmp_path / "mdm"
    res = runner.invoke(main, ["train", "--language", str(path), "--model", "mdm", "--config", "tiny",
                               "--train-steps", "2", "--out", str(out), "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    ck = out / "checkpoint.pt"
    res = runner.invoke(main, ["evaluate", str(ck), "--steps", "4", "--samples", "8", "--eps-sequences", "2",
                               "--oracle", "--sampler", "llada", "--block-length", "4", "--temperature", "0.5",
                               "--tie-seed", "5", "--json"])
    assert res.exit_code == 0, res.output
    ev = json.loads(res.output)
    L = ev["length"]
    assert [(r["denoiser"], r["n_steps"]) for r in ev["rows"]] == [("model", 4), ("oracle", 4)]
    for r in ev["rows"]:
        assert r["sampler"] == "llada" and r["calls"] == r["n_steps"] and r["samples"] == 8
        assert r["sampler_parameters"] == {"sampler": "llada", "block_length": 4, "temperature": 0.5, "tie_seed": 5,
                                           "steps": r["n_steps"], "remasking": "low-confidence"}
    assert L % 4 == 0
    for extra, pattern in ((["--sampler", "llada", "--block-length", "3"], "does not divide the length"),
                           (["--sampler", "llada", "--learning"], "--learning measures the factorized"),
                           (["--block-length", "2"], "apply to the decoders")):
        bad = runner.invoke(main, ["evaluate", str(ck), "--steps", "4", "--out", str(tmp_path / "e.json"), *extra])
        assert bad.exit_code == 2 and pattern in bad.output and not (tmp_path / "e.json").exists()
