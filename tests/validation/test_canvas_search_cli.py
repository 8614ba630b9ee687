"""``steps-needed`` and ``calibrate`` with the revising decoders and ``--noise uniform`` (issue 31): the answers
checked against the library's exact chains (themselves checked against brute force in tests/numerics)."""

from __future__ import annotations

import json

from numerics.exact.revisers import reviser_exact
from numerics.exact.uniform_noise import uniform_noise_metrics
from numerics.languages.presets import load_language
from numerics.sampling.revisers import Reviser
from numerics.schedules import make_schedule
from tests.bad_inputs._helpers import invoke
from tests.tolerances import RTOL_EXACT

LANG = ["--language", "2gram-pruned", "-L", "2"]


def _json(*args) -> dict:
    r = invoke([*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_steps_needed_of_a_reviser_searches_its_threshold():
    """llada21 takes no steps: its reveal threshold is searched (n_steps null), at its own options."""
    out = _json("steps-needed", *LANG, "--metric", "ser", "--target", "0.05", "--sampler", "llada21", "--edit-cap", "2",
                "--grid", "3", "--refine", "2")
    assert out["n_steps"] is None and out["parameter"] == "threshold" and out["met"]
    assert out["options"] == {"edit_cap": 2} and out["sampler_parameters"]["edit_cap"] == 2
    lang = load_language("2gram-pruned")
    for ev in out["evaluations"]:  # every setting is the exact chain's SER at its threshold
        ser = reviser_exact(Reviser("llada21", threshold=ev["threshold"], edit_cap=2), lang, 2).ser
        assert abs(ev["estimate"]["value"] - ser) <= RTOL_EXACT * ser and ev["meets"] == (ser <= 0.05)
    meeting = sorted((e for e in out["evaluations"] if e["meets"]), key=lambda e: e["calls"]["value"])
    assert out["threshold"] == meeting[0]["threshold"]


def test_steps_needed_under_uniform_noise_searches_n_of_the_factorized_sampler():
    out = _json("steps-needed", *LANG, "--metric", "ser", "--target", "0.05", "--noise", "uniform")
    lang = load_language("2gram-pruned")
    n = out["n_steps"]
    assert out["noise"] == "uniform" and out["exact"] and n is not None
    ser = lambda k: uniform_noise_metrics(lang, 2, make_schedule("linear", k)).ser.value  # noqa: E731
    assert ser(n) <= 0.05 < ser(n - 1)
    assert abs(out["at_n"]["estimate"]["value"] - ser(n)) <= RTOL_EXACT * ser(n)


def test_the_python_steps_needed_searches_n_under_uniform_noise_and_refuses_what_the_cli_refuses():
    """validation.api.steps_needed(noise="uniform"): the exact chain's smallest N (kl this time), and the named
    refusals of a decoder and an unknown noise."""
    import pytest

    from validation.api import steps_needed

    found = steps_needed("2gram-pruned", 2, "kl", 0.05, noise="uniform")
    lang = load_language("2gram-pruned")
    kl = lambda k: uniform_noise_metrics(lang, 2, make_schedule("linear", k)).kl.value  # noqa: E731
    n = found.n_steps
    assert n is not None and n > 1 and kl(n) <= 0.05 < kl(n - 1)
    with pytest.raises(ValueError, match="noise='uniform' searches the steps of sampler='random'"):
        steps_needed("2gram-pruned", 2, "kl", 0.05, sampler="topk", noise="uniform")
    with pytest.raises(ValueError, match="noise must be 'mask' or 'uniform', got 'gaussian'"):
        steps_needed("2gram-pruned", 2, "kl", 0.05, noise="gaussian")


def test_calibrate_puts_the_revisers_on_the_front_and_says_when_one_is_cheapest():
    out = _json("calibrate", *LANG, "--metric", "ser", "--target", "0.05", "--sampler", "llada",
                "--revisers", "llada21,wino", "--grid", "3", "--refine", "2", "--step-cap", "3")
    fams = {f["family"]: f for f in out["families"]}
    assert fams["wino"]["grid"]["revises"] and "revises" not in fams["llada"]["grid"]
    assert fams["wino"]["grid"]["options"] == {"step_cap": 3}
    assert "--sampler llada21 does not take --step-cap" in fams["llada21"]["error"]  # wino's option: inapplicable
    lang = load_language("2gram-pruned")
    for s in fams["wino"]["settings"]:
        ex = reviser_exact(Reviser("wino", threshold=s["threshold"], step_cap=3), lang, 2)
        assert abs(s["calls"]["value"] - ex.expected_calls.value) <= RTOL_EXACT * ex.expected_calls.value
    cheapest = min((s for f in out["families"] for s in f["settings"] if s["status"] == "meets"),
                   key=lambda s: (s["calls"]["value"], s["metric"]["value"]))
    assert out["setting"] == cheapest
    assert out["cheapest_class"] == ("reviser" if cheapest["family"] in ("llada21", "wino") else "monotone")
    text = invoke(["calibrate", *LANG, "--metric", "ser", "--target", "0.05", "--sampler", "llada", "--revisers", "wino",
                   "--grid", "3", "--refine", "2"]).stdout
    assert ("a revising decoder (wino) is the cheapest way" in text) == (out["cheapest_class"] == "reviser")



def test_bench_revisers_times_each_reviser_against_the_random_point():
    out = _json("bench", "revisers", "--language", "2gram-pruned", "-L", "4", "-N", "2", "--samples", "4")
    assert set(out["ratio_to_random"]) == {"llada21", "wino"} and out["target_ratio"] == 5.0
    for name in ("llada21", "wino"):
        assert out["ratio_to_random"][name] == out["seconds"][name] / out["seconds"]["random"]
        assert out["within_target"][name] == (out["ratio_to_random"][name] <= 5.0) and out["calls"][name] >= 1
