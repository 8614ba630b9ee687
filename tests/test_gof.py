"""The suite's goodness-of-fit test (tests/gof.py) can fail, refuses to pass without power, and has its stated level."""

import numpy as np
import pytest

from tests import gof


def test_a_wrong_law_fails_and_the_right_one_passes():
    rng = np.random.default_rng(0)
    counts = np.bincount(rng.choice(4, size=4000, p=[0.1, 0.2, 0.3, 0.4]), minlength=4)
    assert gof.chi2_gof(counts, [0.1, 0.2, 0.3, 0.4]).pvalue > gof.ALPHA
    with pytest.raises(AssertionError, match="do not follow the exact law"):
        gof.assert_gof(counts, [0.25, 0.25, 0.25, 0.25])


def test_underpowered_is_an_error_not_a_pass():
    with pytest.raises(gof.Underpowered):
        gof.chi2_gof([3, 0, 1], [0.5, 0.25, 0.25])  # 4 samples: no cell reaches 5 expected
    with pytest.raises(gof.Underpowered):  # one dominant cell: the merged tail joins it, one cell left
        gof.chi2_gof([9998, 1, 1], [0.9998, 0.0001, 0.0001])


def test_samples_on_a_cell_of_probability_zero_fail_and_bad_laws_are_refused():
    with pytest.raises(AssertionError, match="probability 0"):
        gof.chi2_gof([50, 50, 1], [0.5, 0.5, 0.0])
    with pytest.raises(ValueError, match="sum to"):
        gof.chi2_gof([50, 50], [0.5, 0.4])


def test_small_cells_are_merged_and_the_level_is_the_budget_split():
    res = gof.chi2_gof([500, 480, 10, 6, 4], [0.5, 0.48, 0.01, 0.006, 0.004])  # the 0.004 cell (4 expected) is merged
    assert res.cells == 4 and res.samples == 1000
    assert gof.ALPHA * gof.MAX_STATISTICAL_TESTS == pytest.approx(gof.SUITE_FALSE_FAILURE_BUDGET, rel=1e-15)
    assert gof.within_z(1.0 + gof.Z_BOUND * 0.999, 1.0, 1.0) and not gof.within_z(1.0 + gof.Z_BOUND * 1.001, 1.0, 1.0)
