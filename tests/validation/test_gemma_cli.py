"""``exact --noise uniform --sampler gemma-renoise``: the command reports the library's exact law and Monte Carlo."""

from __future__ import annotations

import json

from numerics.exact.gemma import renoise_exact
from numerics.languages.presets import load_language
from numerics.sampling.gemma import Renoise
from tests.bad_inputs._helpers import invoke
from tests.tolerances import RTOL_EXACT

GEMMA = ["exact", "--language", "2gram-pruned", "--noise", "uniform", "--sampler", "gemma-renoise", "--json"]


def _run(args):
    r = invoke([*GEMMA, *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_exact_gemma_enumerates():
    out = _run(["-L", "2", "--committed", "yes", "--gamma", "0.2", "--step-cap", "12"])
    ex = renoise_exact(Renoise(True, entropy_bound=0.2, step_cap=12), load_language("2gram-pruned"), 2)
    assert out["method"] == "enumerate" and out["sampler_parameters"]["entropy_bound"] == 0.2
    for key, want in (("ser", ex.ser), ("capped", ex.capped), ("calls", ex.expected_calls.value)):
        assert abs(out[key]["value"] - want) <= RTOL_EXACT * want and out[key]["exact"]
    assert len(out["calls_law"]) == 13


def test_exact_gemma_monte_carlo():
    out = _run(["-L", "8", "--committed", "no", "--samples", "20", "--step-cap", "6"])
    assert out["method"] == "mc" and out["ser"]["samples"] == 20 and out["calls"]["value"] <= 6
    assert abs(sum(out["calls_law"]) - 1) < 1e-12 and out["capped"]["ci_low"] <= out["capped"]["value"]
