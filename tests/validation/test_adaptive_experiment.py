"""The adaptive samplers through the validation layer: the sweep point, the CLI options, the bench, the experiment.

The experiment's smoke run (tiny config, strict, cached re-run, plots) is in test_experiments.py
with every other experiment; here its numbers are checked against the exact engine, and its
one-sentence answer against hand-made rows.
"""

from __future__ import annotations

import json
import math
import zlib

import numpy as np
import pytest
from click.testing import CliRunner

from numerics.exact.adaptive import adaptive_dp
from numerics.inference import log_q
from numerics.languages.presets import load_language
from numerics.provenance import config_hash
from numerics.sampling import montecarlo as mc
from numerics.sampling.adaptive import AdaptiveSampler
from numerics.sampling.samplers import sample_oracle
from numerics.schedules import linear
from tests.tolerances import RTOL_EXACT
from validation.cli import main
from validation.experiments import adaptive as experiment
from validation.sweep import PointConfig, evaluate_point, grid


def test_exact_point_is_the_exact_engine():
    r = evaluate_point(PointConfig("2gram", 3, 2, sampler="topk"))
    assert r["method"] == "dp" and r["sampler_name"].startswith("topk")
    ex = adaptive_dp(load_language("2gram"), 3, AdaptiveSampler("topk", schedule=linear(2)))
    assert r["kl"]["value"] == pytest.approx(ex.metrics.kl.value, rel=RTOL_EXACT)
    assert r["kl_chain_rule"]["value"] == pytest.approx(r["kl"]["value"], rel=RTOL_EXACT)
    assert r["nfe"]["value"] == pytest.approx(2.0, rel=RTOL_EXACT) and r["nfe"]["stderr"] == 0.0
    assert r["kl_jensen_bound"]["value"] is None
    s = evaluate_point(PointConfig("2gram", 3, 1, sampler="threshold", gamma=0.4, ser_language="2gram-pruned",
                                   method="enumerate"))
    pruned = adaptive_dp(load_language("2gram-pruned"), 3, AdaptiveSampler("threshold", gamma=0.4))
    assert s["method"] == "enumerate" and s["ser"]["value"] == pytest.approx(pruned.metrics.ser.value, rel=RTOL_EXACT)


def test_mc_point_gives_the_true_kl_and_calls():
    r = evaluate_point(PointConfig("2gram-pruned", 24, 4, method="mc", samples=50, sampler="entropy-sum", gamma=4.0))
    assert r["kl"]["samples"] == 50 and r["kl"]["stderr"] > 0 and "(I1)" in r["kl"]["method"]
    half = {k: 0.5 * 10.0 ** (math.floor(math.log10(r[k]["stderr"])) - 2) for k in ("kl", "log_ter_gap", "ser_kl_certificate")}
    # each written to two decimals beyond its standard error (numerics.estimate.meaningful): equal to that precision
    assert r["log_ter_gap"]["value"] == pytest.approx(r["kl"]["value"] / 24, rel=0, abs=half["kl"] / 24 + half["log_ter_gap"])
    assert r["ser_kl_certificate"]["value"] == pytest.approx(-math.expm1(-r["kl"]["value"]), rel=0,
                                                             abs=half["kl"] + half["ser_kl_certificate"])
    assert 1 <= r["nfe"]["value"] <= 24 and r["nfe"]["samples"] == 50
    assert r["ter"]["value"] is None and "unavailable" in r["ter"]["method"]


def test_point_config_checks_sampler_options():
    with pytest.raises(ValueError, match="needs a finite gamma"):
        PointConfig("2gram", 4, 2, sampler="threshold")
    with pytest.raises(ValueError, match="random sampler takes a schedule only"):
        PointConfig("2gram", 4, 2, gamma=0.5)
    with pytest.raises(ValueError, match="unknown sampler"):
        PointConfig("2gram", 4, 2, sampler="greedy")
    cfgs = grid(["2gram"], [4], [2, 3], sampler="topk", confidence="margin")
    assert [c.sampler for c in cfgs] == ["topk", "topk"] and cfgs[0].as_dict()["confidence"] == "margin"
    a, b = PointConfig("2gram", 8, 2, sampler="threshold", gamma=0.5), PointConfig("2gram", 8, 2)
    assert a.rng("sampler").random() != b.rng("sampler").random()  # its own stream


def test_random_point_keeps_its_hash_stream_and_numbers():
    cfg = PointConfig("2gram", 24, 4, method="mc", samples=12)
    old = ("language", "length", "steps", "schedule", "method", "samples", "seed", "ser_language", "batch_size")
    assert tuple(cfg.as_dict()) == old
    assert config_hash(cfg.as_dict()) == config_hash({k: getattr(cfg, "n_steps" if k == "steps" else k) for k in old})
    key = f"{cfg.language}|{cfg.ser_language}|{cfg.length}|{cfg.n_steps}|{cfg.schedule}|sampler"  # the stream as before
    lang = load_language("2gram")
    run = sample_oracle(lang, linear(4), 12, 24, np.random.default_rng([cfg.seed, zlib.crc32(key.encode())]),
                        batch_size=1)
    got = evaluate_point(cfg)
    # the same numbers as written (at their meaningful precision, numerics.estimate.meaningful)
    assert got["ser"]["value"] == mc.ser_from_loglik(log_q(lang, run.tokens)).json_record()["value"]
    assert got["gen_ppl"]["value"] == mc.gen_ppl_mc(lang, run).json_record()["value"]
    assert got["sampler_name"] == "random, linear(N=4)" and got["tie_seed"] is None and got["inputs"] == cfg.as_dict()


def test_cli_exact_and_sweep_take_the_sampler_options(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["exact", "--language", "2gram", "-L", "3", "-N", "1", "--sampler", "entropy-sum",
                               "--gamma", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["inputs"]["sampler"] == "entropy-sum" and d["nfe"]["value"] == pytest.approx(3.0, rel=RTOL_EXACT)
    bad = runner.invoke(main, ["exact", "--language", "2gram", "-L", "3", "-N", "1", "--sampler", "threshold"])
    assert bad.exit_code != 0 and "gamma" in bad.output
    out = tmp_path / "t.jsonl"
    res = runner.invoke(main, ["sweep", "--languages", "2gram", "--lengths", "3", "--steps", "1,3", "--sampler", "topk",
                               "--confidence", "margin", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["config"]["sampler"] for r in rows] == ["topk", "topk"]
    assert rows[1]["result"]["kl"]["value"] == pytest.approx(0.0, abs=1e-13)  # N = L: one token per call


def test_bench_adaptive_smoke():
    res = CliRunner().invoke(main, ["bench", "adaptive", "-L", "16", "-N", "4", "--samples", "8",
                                    "--samplers", "topk,threshold", "--gamma", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert set(d["ratio_to_random"]) == {"topk", "threshold"} and d["target_ratio"] == 3.0
    assert all(v > 0 and math.isfinite(v) for v in d["ratio_to_random"].values())
    assert d["mean_calls"]["topk"] == 4.0
    assert d["samplers"] == {"random": {}, "topk": {}, "threshold": {"gamma": 0.5}} and d["threads"] >= 1
    assert all(len(t) == 1 and d["seconds"][n] == t[0] for n, t in d["seconds_each"].items())
    assert set(d["cpu_ratio_to_random"]) == {"topk", "threshold"} and all(v > 0 for v in d["cpu_seconds"].values())
    bad = CliRunner().invoke(main, ["bench", "adaptive", "--samplers", "topk,greedy", "--json"])
    assert bad.exit_code == 2 and "greedy" in json.loads(bad.output)["error"]["message"]


def test_answer_sentence_from_rows():
    cfg = experiment.Config()
    rows = [{"length": L, "family": "random", "calls_needed": 0.98 * L, "config": "N=?"} for L in (20, 40)]
    rows += [{"length": L, "family": "topk", "calls_needed": 1.0 * L, "config": f"topk({L})"} for L in (20, 40)]
    rows += [{"length": 20, "family": "threshold", "calls_needed": None, "config": None}]
    text = experiment._answer(cfg, rows)
    assert text.startswith("No:") and "40.0 calls" in text and "fitted exponent 1.00" in text
    assert "no saving at all (1.02 times" in text
    cheap = [dict(r, calls_needed=r["calls_needed"] / 2) if r["family"] == "topk" else r for r in rows]
    assert "a saving of a constant factor 0.51" in experiment._answer(cfg, cheap)
    flat = [dict(r, calls_needed=5.0) if r["family"] == "topk" else r for r in rows]
    assert experiment._answer(cfg, flat).startswith("Apparently yes")


def test_experiment_numbers_match_the_exact_engine(tmp_path):
    cfg = experiment.Config.tiny()
    row = experiment._exact_point(cfg, "2gram", 2, "threshold", 0.5)
    ex = adaptive_dp(load_language("2gram"), 2, AdaptiveSampler("threshold", gamma=0.5))
    assert row["kl"] == pytest.approx(ex.metrics.kl.value, rel=RTOL_EXACT)
    assert row["calls"] == pytest.approx(ex.expected_nfe.value, rel=RTOL_EXACT)
    assert row["certificate"] == pytest.approx(-math.expm1(-row["kl"]), rel=RTOL_EXACT, abs=1e-15)
    assert row["certificate_vacuous"] is False
    rnd = experiment._exact_point(cfg, "2gram", 2, "random", 2)
    assert rnd["calls"] == pytest.approx(linear(2).expected_nfe(2, 1), rel=RTOL_EXACT)
