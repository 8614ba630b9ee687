"""Badges that mean what the legend says (issue 33): counts, a family-wise Monte Carlo budget, missed targets.

The expected numbers come from outside the code under test: normal quantiles from scipy, the
threshold rule's exact SER and calls on ``2gram-pruned`` at ``L = 3`` as an independent audit
reproduced them (SER 0.0780 at gamma 0.23 with 2.0 calls, 0.1455 at 0.25 with 2.025 calls).
"""

from __future__ import annotations

import pytest
from scipy.stats import norm

from validation.experiments import thresholds
from validation.experiments._base import (
    STATUS_LEGEND,
    Z95,
    ExperimentResult,
    beyond_budget,
    family_wise_z,
)
from validation.report import _badges


def test_badges_show_their_counts():
    r = ExperimentResult("x", "X", {})
    r.add_vacuous("SER certificate: vacuous at 2 of 173 points", 2, 173)
    r.add_finding("nothing violated", 0, 21)  # counted, no badge
    assert r.badges() == ["vacuous"] and r.badge_label("vacuous") == "vacuous 2/173"
    assert ">vacuous 2/173<" in _badges(r) and "finding" not in _badges(r)
    r.add_finding(["claim A violated", "claim B violated"], 2, 5)
    assert r.badges() == ["finding", "vacuous"] and r.badge_label("finding") == "finding 2/26"
    with pytest.raises(ValueError, match="not a count"):
        r.add_vacuous("?", 3, 2)


def test_a_missed_target_is_partial_with_its_reason():
    r = ExperimentResult("x", "X", {})
    r.add_missed_target("validation target not reached by lee-char-2gram MDM (1.21 against 1.03)")
    assert r.badges()[0] == "partial" and "1.21 against 1.03" in r.missing[0]


@pytest.mark.parametrize("m", [1, 2, 21, 173])
def test_family_wise_z_is_the_bonferroni_quantile(m):
    assert family_wise_z(m) == pytest.approx(norm.ppf(1 - 0.05 / m), rel=1e-9)


def test_one_of_21_outside_its_own_interval_is_chance():
    """A learned SER whose 95% interval [0.903, 0.926] ends below the oracle's 0.930: beyond a single one-sided
    95% comparison (z = 2.56 > 1.645), not beyond the budget of 21 comparisons (2.56 < 2.82)."""
    value, lo, hi, ref = 0.9145, 0.903, 0.926, 0.930
    z = (ref - value) / ((hi - lo) / (2 * Z95))
    assert norm.ppf(0.95) < z < norm.ppf(1 - 0.05 / 21)
    assert beyond_budget(value, lo, hi, ref, 1, "below")
    assert not beyond_budget(value, lo, hi, ref, 21, "below")
    assert not beyond_budget(value, lo, hi, ref, 1, "above")


def test_the_legend_says_what_the_badges_count():
    assert "n/m" in STATUS_LEGEND["vacuous"] and "n/m" in STATUS_LEGEND["finding"]
    assert "Bonferroni" in STATUS_LEGEND["finding"] and "validation target" in STATUS_LEGEND["partial"]
    assert "validation target" in STATUS_LEGEND["ok"]


def test_threshold_experiment_shows_the_rise_the_audit_found():
    r = thresholds.run(thresholds.Config.tiny(), strict=True)
    assert r.status == "ok" and r.tables["points"]
    by = {p["gamma"]: p for p in r.tables["points"]}
    a, b = by[0.234375], by[0.25]
    assert a["ser"] == pytest.approx(0.0779927, rel=1e-5) and a["calls"] == pytest.approx(2.0, rel=1e-12)
    assert b["ser"] == pytest.approx(0.145502, rel=1e-5) and b["calls"] == pytest.approx(2.025, rel=1e-3)
    assert thresholds.rises(r.tables["points"]) == [(a, b)]
    assert "rises at 1 of the 32 steps" in r.notes[0]
    plots = thresholds.plot(r)
    assert [p.name for p in plots] == ["threshold_curves"]
