"""``sweep`` with the samplers that act on a canvas (issue 31): the revisers (llada21, wino), gemma-renoise and
the factorized uniform-noise sampler. Each row is checked against the library's exact chain (itself checked
against brute force in tests/numerics), the configs keep every older point's hash."""

from __future__ import annotations

import json

import pytest

from numerics.exact.gemma import renoise_exact
from numerics.exact.revisers import reviser_exact
from numerics.exact.uniform_noise import uniform_noise_metrics
from numerics.languages.presets import load_language
from numerics.provenance import config_hash, to_jsonable
from numerics.sampling.gemma import Renoise
from numerics.sampling.revisers import Reviser
from numerics.schedules import make_schedule
from tests.bad_inputs._helpers import invoke
from tests.tolerances import RTOL_EXACT
from validation.sweep import PointConfig, read_table, run_sweep

LANG = "2gram-pruned"


def _sweep(tmp_path, *args) -> list:
    out = tmp_path / "t.jsonl"
    r = invoke(["sweep", "--language", LANG, "-L", "2", *args, "--out", out, "--json"])
    assert r.exit_code == 0, r.output
    rows, bad = read_table(out)
    assert not bad
    return rows


def _close(got: dict, want: float) -> None:
    assert got["exact"] and abs(got["value"] - want) <= RTOL_EXACT * abs(want), (got, want)


def test_a_reviser_sweep_row_is_its_exact_chain(tmp_path):
    """A threshold list is a grid of llada21 points, each the exact chain's law (SER, KL, calls and their law)."""
    rows = _sweep(tmp_path, "--sampler", "llada21", "--threshold", "0.6,0.9", "--edit-cap", "2")
    lang = load_language(LANG)
    assert sorted(r.config["threshold"] for r in rows) == [0.6, 0.9]
    for row in rows:
        ex = reviser_exact(Reviser("llada21", threshold=row.config["threshold"], edit_cap=2), lang, 2)
        res = row.result
        assert res["method"] == "enumerate" and res["schedule_name"] is None
        assert row.config["edit_cap"] == 2 and "noise" not in row.config
        assert res["ser"]["value"] == ex.ser or abs(res["ser"]["value"] - ex.ser) <= RTOL_EXACT * ex.ser
        _close(res["kl"], ex.metrics.kl.value)
        _close(res["calls"], ex.expected_calls.value)
        assert res["calls_law"] == pytest.approx(list(ex.calls), rel=RTOL_EXACT, abs=0)
    r = invoke(["exact", "--language", LANG, "-L", "2", "--sampler", "llada21", "--threshold", "0.6", "--edit-cap", "2",
                "--json"])
    ex_row = json.loads(r.stdout)
    swept = next(row.result for row in rows if row.config["threshold"] == 0.6)
    assert {k: v for k, v in ex_row.items() if k != "elapsed_s"} == {k: v for k, v in swept.items()
                                                                     if k != "elapsed_s"}  # one computation


def test_gemma_and_uniform_noise_sweep_rows_are_their_exact_chains(tmp_path):
    lang = load_language(LANG)
    (g,) = _sweep(tmp_path / "g", "--sampler", "gemma-renoise", "--noise", "uniform", "--committed", "no",
                  "--step-cap", "6", "--gamma", "0.2")
    ex = renoise_exact(Renoise(False, entropy_bound=0.2, step_cap=6), lang, 2)
    assert g.config["noise"] == "uniform" and g.config["committed"] == "no" and g.config["step_cap"] == 6
    _close(g.result["calls"], ex.expected_calls.value)
    _close(g.result["capped"], ex.capped)
    assert abs(g.result["ser"]["value"] - ex.ser) <= RTOL_EXACT * max(ex.ser, 1e-300)
    rows = _sweep(tmp_path / "u", "-N", "1,2", "--noise", "uniform")
    for row in rows:
        m = uniform_noise_metrics(lang, 2, make_schedule("linear", row.config["steps"]))
        _close(row.result["kl"], m.kl.value)
        assert row.result["inputs"] == row.config


def test_new_fields_enter_the_hash_only_when_set(tmp_path):
    """noise="mask" and unset reviser / gemma options leave a point's hash as before; set, they make a new point;
    a reviser's table resumes."""
    old = PointConfig("2gram", 4, 2)
    assert config_hash(to_jsonable(PointConfig("2gram", 4, 2, noise="mask").as_dict())) == config_hash(
        to_jsonable(old.as_dict()))
    assert PointConfig("2gram", 4, 2, noise="uniform").as_dict()["noise"] == "uniform"
    a = PointConfig(LANG, 2, 1, sampler="wino")
    b = PointConfig(LANG, 2, 1, sampler="wino", step_cap=3)
    assert "step_cap" not in a.as_dict() and b.as_dict()["step_cap"] == 3 and b.step_cap == 3
    assert config_hash(a.as_dict()) != config_hash(b.as_dict())
    assert PointConfig.from_dict(b.as_dict()) == b
    assert a.rng("x").integers(2**62) != b.rng("x").integers(2**62)
    out = tmp_path / "w.jsonl"
    first = run_sweep([b], out)
    again = run_sweep([b], out)
    assert (first.computed, again.computed, again.skipped) == (1, 0, 1)


def test_a_reviser_monte_carlo_row_carries_its_sample_count_and_calls_shares(tmp_path):
    """A reviser's own option takes a comma list (a grid); each Monte Carlo row says its samples and calls' shares."""
    rows = _sweep(tmp_path, "--sampler", "wino", "--method", "mc", "--samples", "30", "--step-cap", "1,3")
    assert sorted(r.config["step_cap"] for r in rows) == [1, 3]
    for row in rows:
        res = row.result
        assert res["method"] == "mc" and res["ser"]["samples"] == 30 and res["calls"]["samples"] == 30
        assert sum(res["calls_law"]) == pytest.approx(1.0, abs=1e-12) and res["kl"]["value"] is None
        assert max(t for t, p in enumerate(res["calls_law"]) if p > 0) <= row.config["step_cap"]  # one block of L
    r = invoke(["exact", "--language", LANG, "-L", "2", "--sampler", "wino", "--method", "mc", "--samples", "30",
                "--step-cap", "3", "--json"])  # exact's Monte Carlo point is the sweep's: the same seeded streams
    swept = next(row.result for row in rows if row.config["step_cap"] == 3)
    ex_row = json.loads(r.stdout)
    assert ex_row["calls_law"] == swept["calls_law"] and ex_row["gen_ppl"] == swept["gen_ppl"]
