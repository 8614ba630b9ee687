"""The revising decoders on the command line and at numerics' top level (``exact --sampler llada21|wino``).

Independent oracles: a one-call reviser (threshold 0 reveals every position at the first call, no editing
or remasking after it) outputs the product of the oracle's marginals, whose SER and KL are computed here
from the joint table alone; the Monte Carlo point's calls and SER against the exact chain's
(chi-squared on the calls, a z-test on SER).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import numerics
from numerics.exact.joint_table import joint_table
from numerics.languages.presets import load_language
from numerics.sampling.registry import REVISERS, reviser_spec
from tests.gof import assert_gof, within_z
from tests.tolerances import ATOL_PROB, RTOL_EXACT
from validation.cli import main


def _exact_json(*args: str) -> dict:
    r = CliRunner().invoke(main, ["exact", "--language", "2gram-pruned", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _product_of_marginals(q: np.ndarray) -> np.ndarray:
    L = q.ndim
    marg = [q.sum(axis=tuple(k for k in range(L) if k != j)) for j in range(L)]
    p = marg[0]
    for m in marg[1:]:
        p = np.multiply.outer(p, m)
    return p


@pytest.mark.parametrize("flags", [["--sampler", "llada21", "--threshold", "0", "--edit-cap", "0"],
                                   ["--sampler", "wino", "--threshold", "0"]], ids=["llada21", "wino"])
def test_one_call_reviser_is_the_product_of_marginals(flags):
    """Threshold 0: every masked position is revealed at call 1 (confidence > 0 / >= 0), the block is full and
    nothing revises after it (llada21 with cap 0; wino ends a full block), so ``p = prod_j q(x_j)``."""
    out = _exact_json("-L", "3", *flags)
    q = joint_table(load_language("2gram-pruned"), 3)
    p = _product_of_marginals(q)
    on = q > 0
    assert out["method"] == "enumerate" and out["calls_law"] == pytest.approx([0.0, 1.0], abs=ATOL_PROB)
    assert out["ser"]["value"] == pytest.approx(float(p[~on].sum()), rel=RTOL_EXACT)
    assert out["kl"]["value"] == pytest.approx(float(np.sum(q[on] * np.log(q[on] / p[on]))), rel=RTOL_EXACT)
    assert out["calls"]["value"] == 1.0 and out["calls"]["exact"]
    assert out["sampler_parameters"]["sampler"] == flags[1] and out["sampler_parameters"]["threshold"] == 0.0


def test_options_reach_the_rule_and_every_metric_is_there():
    """The flags build the rule (editing at cap 1 makes exactly 2 calls); every metric of point_metrics is a
    record, the chain's calls_law sums to 1 and its mean is calls."""
    out = _exact_json("-L", "3", "--sampler", "llada21", "--threshold", "0", "--edit-threshold", "0.5",
                      "--edit-cap", "1")
    assert out["sampler_parameters"] == {"sampler": "llada21", "block_length": None, "temperature": 1.0,
                                         "threshold": 0.0, "edit_threshold": 0.5, "edit_cap": 1}
    law = np.array(out["calls_law"])
    assert law.sum() == pytest.approx(1.0, rel=RTOL_EXACT) and law[2] == pytest.approx(1.0, rel=RTOL_EXACT)
    assert float(np.arange(len(law)) @ law) == pytest.approx(out["calls"]["value"], rel=RTOL_EXACT)
    for k in numerics.PointMetrics.metric_names():
        assert k in out
    assert out["kl"]["value"] > 0 and out["ter"]["value"] > out["ter_data"]["value"]  # KL > 0 <=> TER(p) > TER(q)
    assert out["tv"]["value"] >= out["ser"]["value"] > 0


def test_monte_carlo_point_against_the_chain():
    """``--method mc`` on a case the chain also solves (SER 0.119, 2 or 3 calls): the calls' shares (chi-squared)
    and SER (z-test, n SER ~ 180)."""
    flags = ["-L", "3", "--sampler", "llada21", "--threshold", "0", "--edit-threshold", "0.5", "--edit-cap", "2"]
    ex = _exact_json(*flags)
    n = 1500
    mc = _exact_json(*flags, "--method", "mc", "--samples", str(n), "--seed", "3")
    assert mc["method"] == "mc" and mc["kl"]["value"] is None and mc["calls"]["samples"] == n
    counts = np.round(np.array(mc["calls_law"]) * n)
    probs = np.zeros(max(len(counts), len(ex["calls_law"])))
    probs[:len(ex["calls_law"])] = ex["calls_law"]
    assert_gof(np.pad(counts, (0, len(probs) - len(counts))), probs, "llada21 calls")
    assert within_z(mc["ser"]["value"], ex["ser"]["value"], math.sqrt(ex["ser"]["value"] * (1 - ex["ser"]["value"]) / n))


def test_greedy_reviser_has_infinite_kl_exactly():
    out = _exact_json("-L", "2", "--sampler", "wino", "--temperature", "0")
    assert out["kl"]["value"] is None and "inf" in json.dumps(out["kl"])  # strict JSON: +inf is a null with reason
    assert out["ser"]["exact"]


def test_top_level_python():
    """``numerics.Reviser`` through ``numerics.point_metrics``; the registry's specs carry the references' defaults."""
    assert reviser_spec("wino").build().threshold == 0.6 and REVISERS["llada21"].build().edit_cap == 16
    m = numerics.point_metrics(load_language("2gram-pruned"), 2, numerics.Reviser("llada21", threshold=0.0,
                                                                                edit_cap=0))
    ex = numerics.reviser_exact(numerics.Reviser("llada21", threshold=0.0, edit_cap=0), load_language("2gram-pruned"), 2)
    assert m.how.method == "enumerate" and m.ser.value == ex.ser and m.how.calls_law == (0.0, 1.0)
    with pytest.raises(ValueError, match="unknown revising decoder"):
        reviser_spec("remdm")
