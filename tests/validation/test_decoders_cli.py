"""``mdm-theory exact`` / ``sweep --sampler llada|fast-dllm|eb|remdm``: rows carry every parameter, bad input exits 2.

Both go through :class:`validation.sweep.PointConfig` and :func:`numerics.metrics.point_metrics`;
a decoder's options enter a sweep row's config (and hash) only when set, so the other samplers'
tables keep their hashes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from numerics.exact.decoders import decoder_exact
from numerics.languages.presets import load_language
from numerics.sampling.decoders import Llada
from tests.bad_inputs._helpers import invoke, refused
from tests.strict_json import strict_json
from tests.tolerances import RTOL_EXACT

#: config hashes of two points computed by main before the decoder options existed (commit dba4e4f)
OLD_HASHES = {"random": "ab8899132533e5c5", "topk": "a47aaf3b22fbefe3"}

BASE = ["exact", "--language", "2gram-pruned", "-L", "4", "-N", "2"]


@pytest.fixture
def pruned_file(tmp_path):
    path = tmp_path / "pruned.npz"
    np.savez(path, order=np.int64(2), initial=np.array([0.6, 0.4]), conditional=np.array([[0.7, 0.3], [0.0, 1.0]]))
    return str(path)


def test_exact_decoder_row_carries_every_parameter_and_matches_numerics(pruned_file):
    r = invoke(["exact", "--language", pruned_file, "-L", "4", "-N", "2", "--sampler", "llada", "--block-length", "2", "--temperature", "0.5", "--tie-seed", "7",
                "--method", "enumerate", "--json"])
    assert r.exit_code == 0, r.output
    row = strict_json(r.stdout)
    want = {"sampler": "llada", "block_length": 2, "temperature": 0.5, "tie_seed": 7, "steps": 2,
            "remasking": "low-confidence"}
    assert {k: row["sampler_parameters"][k] for k in want} == want
    assert {k: row["inputs"][k] for k in ("sampler", "block_length", "temperature", "tie_seed", "steps")} == {
        "sampler": "llada", "block_length": 2, "temperature": 0.5, "tie_seed": 7, "steps": 2}
    assert "remasking" not in row["inputs"]  # not given: not in the config (nor its hash)
    ref = decoder_exact(load_language(pruned_file), 4, Llada(steps=2, block_length=2, temperature=0.5, tie_seed=7),
                        "dp")
    assert row["method"] == "enumerate"
    assert row["tv"]["value"] == pytest.approx(ref.divergences.tv.value, rel=1e-12)
    assert row["ser"]["value"] == pytest.approx(ref.metrics.ser.value, rel=1e-12)
    assert row["reverse_kl"]["value"] is None and "inf" in row["reverse_kl"]["null_reason"]["value"]
    assert row["calls"]["value"] == 2


def test_exact_decoder_mc_labels_unavailable_metrics():
    r = invoke(["exact", "--language", "2gram", "-L", "12", "-N", "4", "--sampler", "remdm", "--eta", "0.2",
                "--samples", "50", "--method", "mc", "--json"])
    assert r.exit_code == 0, r.output
    row = strict_json(r.stdout)
    params = row["sampler_parameters"]
    assert params["variant"] == "cap" and params["eta"] == 0.2 and params["tie_seed"] == 0
    assert row["tv"]["value"] is None and "exact law" in row["tv"]["null_reason"]["value"]
    assert row["reverse_kl"]["value"] is None and "mixture" in row["reverse_kl"]["null_reason"]["value"]
    assert row["calls"]["value"] == 4 and row["ser"]["samples"] == 50
    assert row["ter_data"]["exact"] and row["ter_data"]["method"] == "ngram-chain-rule"  # found from the object


def test_exact_eb_mc_reverse_kl_is_an_estimate():
    r = invoke(["exact", "--language", "2gram", "-L", "12", "-N", "4", "--sampler", "eb", "--gamma", "1.0",
                "--temperature", "0.8", "--samples", "40", "--method", "mc", "--json"])
    row = strict_json(r.stdout)
    rkl = row["reverse_kl"]
    assert rkl["samples"] == 40 and math.isfinite(rkl["value"]) and rkl["value"] > 0 and not rkl["exact"]


@pytest.mark.parametrize("extra, pattern", [
    (["--sampler", "llada", "--block-length", "3"], r"block_length 3 does not divide the length L = 4"),
    (["--sampler", "llada", "--block-length", "1"], r"steps N = 2 is not divisible by the number of blocks L/B = 4"),
    (["--sampler", "llada", "--temperature", "-0.5"], r"temperature must be a finite number >= 0"),
    (["--sampler", "fast-dllm", "--threshold", "0"], r"threshold tau must be in \(0, 1\]"),
    (["--sampler", "fast-dllm", "--factor", "-1"], r"factor f must be a finite number > 0"),
    (["--sampler", "fast-dllm"], r"exactly one of threshold"),
    (["--sampler", "llada", "--remasking", "lowest"], r"'lowest' is not one of 'low-confidence', 'random'"),
    (["--sampler", "eb"], r"eb needs gamma"),
    (["--sampler", "remdm", "--eta", "1.5"], r"eta must be in \[0, 1\]"),
    (["--sampler", "llada", "--factor", "0.9"], r"llada decoder does not take factor"),
    (["--sampler", "llada", "--remasking", "random", "--threshold", "0.9"], r"threshold floor .* needs remasking low"),
    (["--sampler", "random", "--block-length", "2"], r"--block-length apply to the decoders"),
    (["--sampler", "topk", "--block-length", "1"], r"steps N = 2 is not divisible by the number of blocks L/B = 4"),
    (["--sampler", "threshold", "--gamma", "0.5", "--block-length", "3"], r"block_length 3 does not divide"),
    (["--sampler", "llada", "--method", "closed-form"], r"a decoder is computed by one of"),
    (["--sampler", "llada", "--confidence", "margin"], r"--confidence margin applies to topk and threshold"),
    (["--sampler", "llada", "--gamma", "0.5"], r"--gamma applies to eb"),
])
def test_bad_decoder_input_is_named_exit_2(extra, pattern):
    error = refused([*BASE, *extra], pattern)
    assert error["exit_code"] == 2


def test_exact_adaptive_rule_with_blocks():
    """``--block-length`` on an adaptive rule: carried in the inputs, the same numbers as the exact DP of the
    sampler with blocks (the law itself is tested in tests/numerics/test_decoder_kernels.py)."""
    from numerics.exact.adaptive import adaptive_dp
    from numerics.sampling.adaptive import AdaptiveSampler
    from numerics.schedules import linear

    r = invoke(["exact", "--language", "2gram", "-L", "4", "-N", "2", "--sampler", "topk", "--block-length", "2",
                "--method", "dp", "--json"])
    row = strict_json(r.stdout)
    assert row["inputs"]["block_length"] == 2 and "blocks B = 2" in row["sampler_name"]
    ref = adaptive_dp(load_language("2gram"), 4, AdaptiveSampler("topk", schedule=linear(2), block_length=2))
    assert row["kl"]["value"] == pytest.approx(ref.metrics.kl.value, rel=RTOL_EXACT)


def test_exact_refuses_a_size_beyond_the_limit_before_work():
    r = invoke(["exact", "--language", "2gram", "-L", "12", "-N", "4", "--sampler", "llada", "--method", "dp",
                "--json"])
    assert r.exit_code == 1
    assert "beyond the limit" in strict_json(r.stdout)["error"]["message"]


SWEEP = ["sweep", "--languages", "2gram-pruned", "--lengths", "4", "-N", "2,4", "--samples", "20"]


def test_sweep_decoder_rows_carry_parameters_and_equal_exact(tmp_path, pruned_file):
    out = tmp_path / "t.jsonl"
    r = invoke(["sweep", "--languages", pruned_file, "--lengths", "4", "-N", "2,4", "--sampler", "llada", "--block-length", "2", "--remasking", "random", "--tie-seed", "3",
                "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        cfg, res = row["config"], row["result"]
        assert cfg["block_length"] == 2 and cfg["remasking"] == "random" and cfg["tie_seed"] == 3
        assert "temperature" not in cfg and "eta" not in cfg  # unset options stay out of the hash
        assert res["sampler_parameters"] == {"sampler": "llada", "block_length": 2, "temperature": 1.0,
                                             "tie_seed": 3, "steps": cfg["steps"], "remasking": "random"}
        assert res["method"] == "dp"  # auto; checked against the enumeration
        ref = decoder_exact(load_language(pruned_file), 4,
                            Llada(steps=cfg["steps"], block_length=2, remasking="random", tie_seed=3), "enumerate")
        assert res["tv"]["value"] == pytest.approx(ref.divergences.tv.value, rel=RTOL_EXACT)
        assert res["ser"]["value"] == pytest.approx(ref.metrics.ser.value, rel=RTOL_EXACT)
    flat = (tmp_path / "t.csv").read_text().splitlines()[0].split(",")
    assert {"block_length", "remasking", "tv_value", "reverse_kl_value", "calls_value"} <= set(flat)


def test_sweep_rows_of_the_other_samplers_keep_their_hashes():
    from numerics.provenance import config_hash
    from validation.sweep import PointConfig

    # hashes of rows written before the decoder options existed (main at dba4e4f)
    assert config_hash(PointConfig("2gram", 8, 4).as_dict()) == OLD_HASHES["random"]
    assert config_hash(PointConfig("2gram", 8, 4, sampler="topk", tie_seed=2).as_dict()) == OLD_HASHES["topk"]


def test_steps_needed_llada_searches_multiples_of_the_blocks(pruned_file):
    # L = 4, B = 2: N in {2, 4, ...}; the enumerated SER is 0.205 at N = 2 and 0 at N = 4 (one token per call)
    r = invoke(["steps-needed", "--language", pruned_file, "-L", "4", "--metric", "ser", "--target", "0.1",
                "--sampler", "llada", "--block-length", "2", "--remasking", "random", "--json"])
    assert r.exit_code == 0, r.output
    out = strict_json(r.stdout)
    assert out["n_steps"] == 4 and out["exact"] and out["sampler_parameters"]["block_length"] == 2
    lang = load_language(pruned_file)
    for key, N in (("at_n", 4), ("at_n_minus_1", 2)):
        ref = decoder_exact(lang, 4, Llada(steps=N, block_length=2, remasking="random"), "enumerate").metrics.ser
        assert out[key]["n_steps"] == N
        assert out[key]["estimate"]["value"] == pytest.approx(ref.value, rel=RTOL_EXACT, abs=1e-15)
    assert out["at_n_minus_1"]["estimate"]["value"] > 0.2


def test_bench_decoders_times_every_decoder_by_default():
    """``bench decoders`` with no ``--decoders``: the full table (every decoder of BENCH_DECODERS), wall
    and CPU ratios; an unknown decoder is named, exit code 2."""
    from validation.commands.bench_decoders import BENCH_DECODERS

    r = invoke(["bench", "decoders", "-L", "16", "-N", "4", "--samples", "8", "--json"])
    assert r.exit_code == 0, r.output
    row = strict_json(r.stdout)
    names = list(BENCH_DECODERS)
    assert list(row["ratio_to_random"]) == names and list(row["cpu_ratio_to_random"]) == names
    assert set(row["decoders"]) == set(names) and row["threads"] >= 1
    assert all(row["seconds"][n] > 0 for n in ["random", *names])
    error = refused(["bench", "decoders", "--decoders", "llada,greedy"], r"unknown decoder\(s\) \['greedy'\]")
    assert error["exit_code"] == 2


@pytest.mark.parametrize("sampler", ["llada", "llada2", "dream", "sdar", "remdm", "topk"])
def test_exact_refuses_a_steps_sampler_without_n(sampler):
    # every sampler whose registry entry needs steps or a schedule (once a hand list of four, so llada2, dream
    # and sdar ran silently at N = 1 when -N was left out)
    error = refused(["exact", "--language", "2gram-pruned", "-L", "3", "--sampler", sampler],
                    rf"-N / --n-steps is required with --sampler {sampler}")
    assert error["exit_code"] == 2
