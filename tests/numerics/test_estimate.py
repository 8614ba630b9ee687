"""The one JSON shape of an estimate: exact values, Monte Carlo intervals, and what is never shown as exact."""

import json
import math

import numpy as np
import pytest

from numerics.estimate import ESTIMATE_FIELDS, Estimate, clopper_pearson, normal_interval, unavailable_record
from numerics.provenance import to_jsonable
from numerics.sampling.montecarlo import gen_ppl_from_loglik, ser_from_loglik


def record(e) -> dict:
    out = to_jsonable(e)
    json.dumps(out, allow_nan=False)  # strict JSON
    return out


def test_an_exact_value_is_its_own_interval():
    r = record(Estimate(0.25, 0.0, "dp"))
    assert tuple(k for k in r) == ESTIMATE_FIELDS
    assert r == {"value": 0.25, "stderr": 0.0, "ci_low": 0.25, "ci_high": 0.25, "confidence": None,
                 "method": "dp", "samples": 0, "exact": True}


def test_a_monte_carlo_estimate_where_every_sample_agrees_is_not_exact():
    """Issue 13: SER 1.0 from 1000 invalid samples read as stderr 0; its uncertainty is the Clopper-Pearson interval."""
    r = record(ser_from_loglik(np.full(1000, -np.inf)))
    assert r["value"] == 1.0 and r["exact"] is False and r["samples"] == 1000
    assert r["stderr"] is None and "same value" in r["null_reason"]["stderr"]
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(clopper_pearson(1000, 1000)) and r["ci_low"] < 0.997
    # no interval from the estimator: a zero-width normal interval is not shown either
    r = record(Estimate(3.0, 0.0, "mc", 10))
    assert r["stderr"] is None and r["ci_low"] is None and r["ci_high"] is None and not r["exact"]
    assert set(r["null_reason"]) == {"stderr", "ci_low", "ci_high"}


def test_a_monte_carlo_estimate_without_its_own_interval_gets_the_normal_one():
    r = record(Estimate(3.0, 0.5, "mc", 10))  # written to 3 decimals: two beyond the standard error's first
    assert (r["ci_low"], r["ci_high"]) == (2.020, 3.980)
    assert normal_interval(3.0, 0.5) == pytest.approx((3.0 - 1.959963984540054 * 0.5, 3.0 + 1.959963984540054 * 0.5))
    assert "null_reason" not in r and r["confidence"] == 0.95
    assert all(math.isnan(end) for end in normal_interval(1.0, math.nan))  # no interval without a stderr


def test_an_infinite_value_is_null_with_the_reason():
    r = record(gen_ppl_from_loglik(np.array([-1.0, -np.inf, -2.0]), 4))
    assert r["value"] is None and r["null_reason"]["value"].startswith("+inf")
    assert r["ci_low"] is None and r["ci_high"] is None and r["stderr"] is None


def test_unavailable_has_the_same_keys():
    r = unavailable_record("needs the exact law")
    assert set(ESTIMATE_FIELDS) <= set(r) and r["value"] is None and r["null_reason"]["value"] == "needs the exact law"


def test_numbers_are_written_at_their_meaningful_precision():
    """Issue 34: no 3.9999999999999982 calls, no 0.8999999999999999, no stderr of 1.7e-18 on a constant."""
    assert record(Estimate(3.9999999999999982, 0.0, "dp"))["value"] == 4.0
    assert record(Estimate(0.8999999999999999, 0.0, "closed-form"))["value"] == 0.9
    exact = 0.5288838454870124  # 16 digits in, 13 out: within RTOL_EXACT of the value
    assert record(Estimate(exact, 0.0, "dp"))["value"] == pytest.approx(exact, rel=1e-12)
    assert record(Estimate(exact, 0.0, "dp"))["value"] == 0.528883845487
    r = record(Estimate(0.123456789, 0.0034567, "mc", 100))
    assert (r["value"], r["stderr"]) == (0.12346, 0.00346)
    r = record(Estimate(2.5, 1.7e-18, "mc", 100))  # a constant up to round-off: no standard error, no interval
    assert r["value"] == 2.5 and r["stderr"] is None and "round-off" in r["null_reason"]["stderr"]
    assert r["ci_low"] is None and not r["exact"]
