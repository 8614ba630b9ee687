"""The lossless decoders on the command line: `lossless` (MC and exact), `bench lossless`, and the lossless
points of `calibrate --lossless` and `steps-needed --lossless`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from validation.cli import main


def _run(args):
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_lossless_exact_on_a_tiny_case_is_lossless():
    out = _run(["lossless", "--language", "2gram-pruned", "-L", "3", "--decoder", "assd", "-k", "2",
                "--method", "exact"])
    assert out["max_abs_p_minus_q"] < 1e-15
    assert sum(c["probability"] for c in out["cost_law"]) == pytest.approx(1.0, rel=1e-12)
    assert max(c["calls"] for c in out["cost_law"]) <= 3  # ASSD's calls never exceed L


def test_lossless_monte_carlo_point_has_errors_and_counts():
    out = _run(["lossless", "--language", "2gram-pruned", "-L", "16", "--decoder", "autospec", "--samples", "20"])
    assert out["rounds"]["samples"] == 20 and out["rounds"]["stderr"] > 0
    assert out["ser"]["value"] == 0.0 and 1 <= out["rounds_quantiles"]["min"] <= out["rounds_quantiles"]["max"] <= 17


def test_calibrate_says_when_a_lossless_decoder_is_cheapest():
    """On the interval language at L = 10 the factorized sampler needs many steps for SER <= 0.1 (exact; with
    the cache its calls approach L = 10); ASSD meets it (SER = 0) with about 7.6 calls: the cheapest way, and
    the calibrate output says so. The front ends with it (cheaper random settings miss the target)."""
    r = CliRunner().invoke(main, ["calibrate", "--language", "interval", "-L", "10", "--metric", "ser", "--target",
                                  "0.1", "--lossless", "assd", "--samples", "50"])
    assert r.exit_code == 0, r.output
    assert "a lossless decoder (assd) is the cheapest way to meet the target" in r.output
    out = _run(["calibrate", "--language", "interval", "-L", "10", "--metric", "ser", "--target", "0.1",
                "--lossless", "assd", "--samples", "50"])
    assert out["setting"]["family"] == "assd" and out["front"][-1]["family"] == "assd"
    assert out["setting"]["calls"]["value"] < 10


def test_calibrate_searches_the_draft_length_and_reports_the_one_of_fewest_calls():
    """``calibrate --lossless assd``: the draft lengths 1, 2, 4, ... evaluated (k = 1 and 2 cost L = 10 calls
    exactly: every round of 2 calls commits 2 tokens), the chosen one the fewest E[calls] among them, in the
    grid and as the cheapest setting's ``draft_length``."""
    out = _run(["calibrate", "--language", "interval", "-L", "10", "--metric", "ser", "--target", "0.1",
                "--lossless", "assd", "--samples", "50"])
    fam = next(f for f in out["families"] if f["family"] == "assd")
    ks = fam["grid"]["draft_lengths"]
    assert ks[:3] == [1, 2, 4] and [s["draft_length"] for s in fam["settings"]] == ks
    calls = {s["draft_length"]: s["calls"]["value"] for s in fam["settings"]}
    assert calls[1] == calls[2] == 10.0
    assert fam["grid"]["chosen"] == min(ks, key=lambda k: (calls[k], k)) == fam["cheapest"]["draft_length"]
    assert calls[fam["grid"]["chosen"]] < 10 and out["setting"]["draft_length"] == fam["grid"]["chosen"]


@pytest.mark.parametrize("calls, searched", [
    ({1: 16, 2: 16, 4: 9, 8: 5, 16: 4.99}, [1, 2, 4, 8, 16]),  # 8 -> 16 saves less than 2 standard errors: stop
    ({1: 16, 2: 16, 4: 9, 8: 5, 16: 3}, [1, 2, 4, 8, 16]),  # still falling at 16 = L: the grid's end
    ({1: 16, 2: 16, 4: 15.9, 8: 1}, [1, 2, 4]),  # 2 -> 4 within the noise: stop (k = 2 is never judged)
])
def test_the_draft_length_search_doubles_until_the_calls_stop_falling(calls, searched, monkeypatch):
    import validation.lossless as vl
    from numerics.estimate import Estimate

    def point(language, length, name, options, **kw):
        k = options["draft_length"]
        return vl.LosslessPoint(language, length, name, f"k={k}", Estimate(0.0, 0.0, "mc", 2),
                                Estimate(calls[k], 0.05, "mc", 2), {}, {}, Estimate(0.0, 0.0, "mc", 2), 0.0)

    monkeypatch.setattr(vl, "lossless_point", point)
    assert [k for k, _ in vl.draft_length_search("x", 16, "assd")] == searched


def test_steps_needed_reports_the_lossless_points_beside_the_answer():
    out = _run(["steps-needed", "--language", "interval", "-L", "10", "--metric", "ser", "--target", "0.1",
                "--lossless", "assd,autospec", "--samples", "20"])
    assert [r["decoder"] for r in out["lossless"]] == ["assd", "autospec"]
    assert all(r["metric"]["value"] == 0.0 and r["status"] == "meets" for r in out["lossless"])


def test_bench_lossless_measures_random_and_each_decoder_in_one_run():
    out = _run(["bench", "lossless", "-L", "16", "--samples", "8", "-N", "4", "--decoders", "assd"])
    assert set(out["seconds"]) == {"random", "assd"} and out["target_ratio"] == 5.0


def test_the_python_steps_needed_reports_the_lossless_points_as_the_cli_does():
    """``validation.api.steps_needed(..., lossless=...)``: the command line's option, name and defaults
    (samples, seed): the same rows, number for number, as ``steps-needed --lossless``."""
    from validation.api import steps_needed

    args = ["steps-needed", "--language", "interval", "-L", "10", "--metric", "ser", "--target", "0.1",
            "--samples", "20"]
    cli = _run([*args, "--lossless", "assd,autospec"])
    found = steps_needed("interval", 10, "ser", 0.1, samples=20, lossless="assd,autospec")
    assert found.n_steps == cli["n_steps"]
    assert [r.family for r in found.lossless] == [r["decoder"] for r in cli["lossless"]]
    assert [r.calls.value for r in found.lossless] == [r["calls"]["value"] for r in cli["lossless"]]
    assert all(r.metric.value == 0.0 and r.status == "meets" for r in found.lossless)
    assert steps_needed("interval", 10, "ser", 0.1, samples=20).lossless == ()  # the default: none


@pytest.mark.parametrize("lossless, words", [("assd,nope", "unknown lossless decoder 'nope'"),
                                             (["spiffy"], "spiffy's output law is its base sampler's")])
def test_the_python_steps_needed_refuses_a_bad_lossless_name_before_searching(lossless, words, monkeypatch):
    import validation.steps_needed as sn

    monkeypatch.setattr(sn, "_search", lambda *a, **k: pytest.fail("searched before refusing"))
    with pytest.raises(ValueError, match=words):
        sn.steps_needed("interval", 10, "ser", 0.1, lossless=lossless)


def test_spiffy_over_llada_exact_on_the_command_line_is_its_base():
    out = _run(["lossless", "--language", "2gram-pruned", "-L", "3", "--decoder", "spiffy", "--base", "llada",
                "-N", "3", "-k", "2", "--method", "exact"])
    assert out["max_abs_p_minus_base"] < 1e-15 and out["max_abs_p_minus_q"] > 1e-3  # its base's law, not q
    assert sum(c["probability"] for c in out["cost_law"]) == pytest.approx(1.0, rel=1e-12)


def test_spiffy_over_fast_dllm_without_options_takes_the_registrys_preset():
    """``--base fast-dllm`` alone: the registry's default preset (threshold 0.9), not a refusal."""
    out = _run(["lossless", "--language", "2gram-pruned", "-L", "4", "--decoder", "spiffy", "--base", "fast-dllm",
                "-k", "2", "--samples", "10"])
    assert "threshold=0.9" in out["label"] and out["ser"]["value"] == 0.0
