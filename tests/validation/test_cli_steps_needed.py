"""`mdm-theory steps-needed`: the smallest N meeting a SER / TER / KL target, by bisection (issue 13)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from numerics.estimate import Estimate
from numerics.exact.dp import dp_metrics
from numerics.exact.interval import interval_ser
from numerics.languages.hmm import NGram
from numerics.languages.presets import load_language
from numerics.schedules import linear
from tests.tolerances import RTOL_EXACT
from validation.cli import main
from validation.steps_needed import Evaluation, search_steps

torch.set_num_threads(1)


def run(*args):
    r = CliRunner().invoke(main, ["steps-needed", *args, "--json"])
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return r.exit_code, json.loads(r.stdout, parse_constant=refuse)


@pytest.mark.parametrize("threshold, max_steps", [(1, 64), (2, 64), (37, 64), (64, 64), (1000, 1 << 16), (65, 64)])
def test_search_is_exponential_then_bisection(threshold, max_steps):
    calls = []

    def evaluate(n):
        calls.append(n)
        return Evaluation(n, "ser", Estimate(1.0 / n, 0.0, "exact"), n >= threshold)

    found = search_steps(evaluate, max_steps)
    assert len(calls) == len(set(calls))  # each N once
    if threshold > max_steps:
        assert found.n_steps is None and not found.met and found.at_n.n_steps == max_steps
        return
    assert found.n_steps == threshold and found.at_n.meets
    assert found.at_n_minus_1 is None if threshold == 1 else not found.at_n_minus_1.meets
    assert len(calls) <= 2 * math.ceil(math.log2(threshold)) + 2  # not a grid


def test_interval_ser_target_is_exact_and_matches_the_closed_form():
    code, d = run("--language", "interval", "-L", "40", "--metric", "ser", "--target", "0.1")
    assert code == 0 and d["met"] and d["exact"] and d["confidence"] is None
    n = d["n_steps"]
    assert interval_ser(linear(n), 40, 5).probability <= 0.1 < interval_ser(linear(n - 1), 40, 5).probability
    assert d["at_n"]["estimate"]["value"] == pytest.approx(interval_ser(linear(n), 40, 5).probability, rel=RTOL_EXACT)
    assert d["at_n_minus_1"]["n_steps"] == n - 1 and not d["at_n_minus_1"]["meets"]
    assert d["at_n"]["estimate"]["method"].startswith("closed-form") and len(d["evaluations"]) < 25


def test_kl_target_at_small_length_equals_a_scan_with_the_dp():
    code, d = run("--language", "2gram", "-L", "3", "--metric", "kl", "--target", "0.05")
    assert code == 0 and d["exact"]
    lang = load_language("2gram")
    scan = next(n for n in range(1, 200) if dp_metrics(lang, 3, linear(n)).kl.value <= 0.05)  # independent: a scan
    assert d["n_steps"] == scan


def test_monte_carlo_states_its_confidence_and_the_upper_bound_meets():
    code, d = run("--language", "2gram-pruned", "-L", "32", "--metric", "ser", "--target", "0.3", "--samples", "200",
                  "--method", "mc", "--confidence", "0.9")
    assert code == 0 and d["met"] and not d["exact"] and d["confidence"] == 0.9
    at, before = d["at_n"]["estimate"], d["at_n_minus_1"]["estimate"]
    assert at["ci_high"] <= 0.3 < before["ci_high"] and at["samples"] == 200
    assert at["confidence"] == pytest.approx(0.8)  # two-sided level whose upper end is the one-sided 0.9 bound
    assert any("upper confidence bound" in n for n in d["notes"])


def test_without_the_exact_law_kl_and_ter_go_through_the_jensen_bound():
    code, d = run("--language", "2gram", "-L", "64", "--metric", "kl", "--target", "1.0")
    assert code == 0 and d["met"] and d["at_n"]["quantity"] == "kl_jensen_bound"
    assert d["at_n"]["estimate"]["method"] == "markov-chain-rule" and not d["exact"]
    assert any("suffices" in n for n in d["notes"])
    code, t = run("--language", "2gram", "-L", "64", "--metric", "ter", "--target", "4.5")
    assert code == 0 and t["at_n"]["quantity"] == "ter_jensen_bound" and t["at_n"]["estimate"]["value"] <= 4.5


@pytest.mark.parametrize("args, message", [
    (["--language", "2gram", "-L", "4", "--metric", "ter", "--target", "1.5"], "is the floor"),
    (["--language", "hmm", "-L", "64", "--metric", "ter", "--target", "9"], "no exact entropy"),
    (["--language", "2gram", "-L", "4", "--metric", "ser", "--target", "-1"], ">= 0"),
    (["--language", "2gram", "--metric", "ser", "--target", "0.1"], "--length are required"),
    (["--language", "2gram", "-L", "4", "--metric", "ser", "--target", "0.1", "--sampler", "greedy"], "greedy"),
])
def test_bad_requests_are_refused(args, message):
    code, d = run(*args)
    assert code != 0 and message in d["error"]["message"]


def test_a_target_met_at_one_step_has_no_n_minus_1():
    code, d = run("--language", "2gram", "-L", "3", "--metric", "ser", "--target", "1")
    assert code == 0 and d["n_steps"] == 1 and d["at_n_minus_1"] is None and "smallest" in d["null_reason"]["at_n_minus_1"]
    code, d = run("--language", "interval", "-L", "40", "--metric", "ser", "--target", "0.001", "--max-steps", "64")
    assert code == 0 and not d["met"] and d["n_steps"] is None and "no N <= 64" in d["null_reason"]["n_steps"]


def test_a_learned_model_is_searched_for_ser(tmp_path):
    lang = NGram(2, np.array([0.5, 0.3, 0.2]), np.array([[0.7, 0.3, 0.0], [0.2, 0.3, 0.5], [0.5, 0.25, 0.25]]))
    path = tmp_path / "tiny.npz"
    lang.save(path)
    runner = CliRunner()
    res = runner.invoke(main, ["train", "--language", str(path), "--config", "tiny", "--train-steps", "4", "--out",
                               str(tmp_path / "run"), "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    ckpt = str(tmp_path / "run" / "checkpoint.pt")
    code, d = run("--checkpoint", ckpt, "--metric", "ser", "--target", "1", "--samples", "8")
    assert code == 0 and d["n_steps"] == 1 and d["length"] == 8 and d["at_n"]["estimate"]["samples"] == 8
    code, d = run("--checkpoint", ckpt, "--metric", "ser", "--target", "0.5", "--samples", "16", "--max-steps", "4")
    assert code == 0 and all(not e["estimate"]["exact"] for e in d["evaluations"])
    code, d = run("--checkpoint", ckpt, "--metric", "kl", "--target", "0.5")
    assert code == 2 and "only --metric ser" in d["error"]["message"]
