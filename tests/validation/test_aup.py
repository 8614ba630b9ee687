"""AUP (d3LLM's accuracy under parallelism) from calibrate's Pareto front: the formula by hand, and the record.

By hand: points ``(rho, y)`` = (1, 90), (2, 88), (4, 80), (3, 86): sorted by ``rho``, ``y_1 = 90`` keeps
``y >= 85`` (drops (4, 80)), ``y_max = 90``, ``W(88) = exp(-3 (1 - 88/90))``, ``W(86) = exp(-3 (1 - 86/90))``.
"""

from __future__ import annotations

import math

import pytest

from numerics.estimate import Estimate
from validation.calibrate import Setting, aup, calibrate, family_aup


def test_aup_by_hand():
    W = lambda y: math.exp(-3 * (1 - y / 90))  # noqa: E731
    want = 1 * 90 + (2 - 1) * (88 * W(88) + 90) / 2 + (3 - 2) * (86 * W(86) + 88 * W(88)) / 2
    assert aup([(1, 90), (2, 88), (4, 80), (3, 86)]) == pytest.approx(want, rel=1e-14)
    assert aup([(5, 0.0)]) == 0.0
    with pytest.raises(ValueError):
        aup([])


def _s(calls, ser, q="ser"):
    return Setting("f", "steps", calls, "", Estimate(calls, 0.0, "dp"), Estimate(ser, 0.0, "dp"), q, "meets")


def test_family_aup_reads_the_front_only():
    """A dominated setting (more calls, higher SER) does not enter: L = 4, front (2 calls, .1), (4 calls, .05)."""
    got = family_aup([_s(2, 0.1), _s(4, 0.05), _s(3, 0.2)], 4)
    assert got == pytest.approx(aup([(2.0, 90.0), (1.0, 95.0)]), rel=1e-14)
    assert family_aup([_s(2, 0.1, "ter")], 4) is None


def test_calibrate_reports_aup_per_family():
    c = calibrate("2gram-pruned", 4, "ser", 0.2, ("random", "topk"), method="dp", grid=4, refine=0)
    for fs in c.searches:
        assert fs.settings, fs.error
        assert c.aup[fs.family] == pytest.approx(family_aup(fs.settings, 4), rel=1e-14)
        assert c.aup[fs.family] > 0
