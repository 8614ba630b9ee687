"""Definitions B.4/B.5 (separators, dependencies) and their exact laws: worked examples, transfer
matrix against enumeration of every class assignment (exact rationals), the interleaving identity."""

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import step_instances
from tests.tolerances import RTOL_EXACT
from theory.separators import (
    enumerate_joint_law,
    expected_dependency_gap,
    expected_gap_per_step,
    expected_same_group_pairs,
    joint_law,
    step_stats,
)


# Worked examples (by hand). Step i = 2: positions at step 1 are "earlier" (E), at step 2 "new" (T),
# at step 3 still masked (M).
def test_worked_example_trigram():
    # positions 1..10:  E E T M E T E E E T ;  n = 3: a separator is a run of 2 earlier positions
    steps = [1, 1, 2, 3, 1, 2, 1, 1, 1, 2]
    st_ = step_stats(steps, 2, 3)
    # runs (1, 2) -> 1 separator, (5, 1) -> 0, (7, 3) -> 1: S = 2
    assert st_.runs == ((1, 2), (5, 1), (7, 3))
    assert st_.separators == 2
    # new positions 3, 6, 10: between 3 and 6 only the run of length 1 (no separator) -> one group;
    # between 6 and 10 the run of length 3 separates -> D = 2
    assert st_.groups == ((3, 6), (10,))
    assert (st_.new, st_.dependencies) == (3, 2)


def test_worked_example_bigram_masked_positions_do_not_separate():
    # T E T T M T, n = 2: every earlier position is a separator; masked ones are not
    st_ = step_stats([2, 1, 2, 2, 3, 2], 2, 2)
    assert st_.separators == 1
    assert st_.groups == ((1,), (3, 4, 6))
    assert st_.dependencies == 2


def test_worked_example_long_run_holds_several_separators():
    # n = 4: a run of 6 earlier positions holds floor(6/3) = 2 separators, which cut only once
    st_ = step_stats([2, 1, 1, 1, 1, 1, 1, 2, 2], 2, 4)
    assert st_.separators == 2
    assert st_.groups == ((1,), (8, 9))
    # a run of 5 holds 1 separator, a run of 2 none
    assert step_stats([1] * 5 + [2] + [1] * 2 + [2], 2, 4).separators == 1
    assert step_stats([1] * 5 + [2] + [1] * 2 + [2], 2, 4).dependencies == 1


def test_step_one_has_no_separators_and_one_group():
    st_ = step_stats([1, 1, 2, 1], 1, 2)
    assert st_.separators == 0 and st_.dependencies == 1 and st_.new == 3


def test_step_stats_rejects_bad_input():
    with pytest.raises(ValueError, match="n-gram order"):
        step_stats([1, 2], 2, 1)
    with pytest.raises(ValueError, match="start at 1"):
        step_stats([0, 2], 2, 2)
    with pytest.raises(ValueError, match="step i"):
        step_stats([1, 2], 0, 2)


@pytest.mark.parametrize("L,n", [(1, 2), (4, 2), (5, 3), (6, 3), (6, 4), (7, 4), (5, 6)])
@pytest.mark.parametrize("a,b", [(F(1, 3), F(1, 4)), (F(1, 2), F(1, 2)), (F(0), F(1, 5)), (F(3, 4), F(0))])
def test_joint_law_equals_enumeration_exactly(L, n, a, b):
    dp = joint_law(L, n, a, b)
    brute = enumerate_joint_law(L, n, a, b)
    assert (dp.prob == brute.prob).all()
    assert (dp.gap_moment == brute.gap_moment).all()
    assert (dp.dep_moment == brute.dep_moment).all()
    assert sum(dp.prob.ravel()) == 1
    assert expected_dependency_gap(L, n, a, b) == sum(dp.gap_moment.ravel())


@pytest.mark.parametrize("L,n", [(6, 2), (7, 3), (6, 4)])
def test_float_forms_agree_with_exact(L, n):
    a, b = F(2, 7), F(3, 11)
    exact = joint_law(L, n, a, b)
    fl = joint_law(L, n, float(a), float(b))
    np.testing.assert_allclose(fl.prob, exact.prob.astype(float), rtol=RTOL_EXACT, atol=1e-300)
    np.testing.assert_allclose(fl.gap_moment, exact.gap_moment.astype(float), rtol=RTOL_EXACT, atol=1e-300)
    assert expected_dependency_gap(L, n, float(a), float(b)) == pytest.approx(
        float(expected_dependency_gap(L, n, a, b)), rel=RTOL_EXACT)
    assert expected_same_group_pairs(L, n, float(a), float(b)) == pytest.approx(
        float(expected_same_group_pairs(L, n, a, b)), rel=RTOL_EXACT)


def test_same_group_pairs_by_enumeration():
    # E[#pairs of new positions with no run of >= n-1 earlier positions between them], all 3^L classes
    import itertools

    L, n, a, b = 6, 3, F(2, 5), F(1, 5)
    w = {1: a, 2: b, 3: 1 - a - b}
    total = F(0)
    for cls in itertools.product((1, 2, 3), repeat=L):
        p = F(1)
        for c in cls:
            p *= w[c]
        st_ = step_stats(cls, 2, n)
        total += p * sum(len(g) * (len(g) - 1) // 2 for g in st_.groups)
    assert expected_same_group_pairs(L, n, a, b) == total


def test_per_step_vectorized_matches_single_step():
    u = np.array([0.0, 0.1, 0.3, 0.35, 0.8, 1.0])
    for n in (2, 3, 5):
        vec = expected_gap_per_step(17, n, u)
        one = [expected_dependency_gap(17, n, u[i - 1], u[i] - u[i - 1]) for i in range(1, 6)]
        np.testing.assert_allclose(vec, one, rtol=RTOL_EXACT)


@given(st.integers(1, 9), st.integers(2, 4), st.integers(1, 6), st.integers(0, 6))
def test_interleaving_identity_is_exact(L, n, a10, b10):
    """E[|tau_i| - D_i | S_i = s, |tau_i| = k] = k(k-1)/(s+k) in every cell of positive probability."""
    a, b = F(a10, 10), F(min(b10, 10 - a10), 10)
    law = joint_law(L, n, a, b)
    cond = law.conditional_gap()
    for s in range(cond.shape[0]):
        for k in range(cond.shape[1]):
            if law.prob[s, k] > 0:
                assert cond[s, k] == (F(k * (k - 1), s + k) if s + k else 0)


@given(step_instances(max_L=30, divisible=False))
def test_gap_is_between_zero_and_pair_count(inst):
    L, n, a, b = inst["L"], inst["n"], inst["u_prev"], inst["pi_i"]
    gap = expected_dependency_gap(L, n, a, b)
    pairs = expected_same_group_pairs(L, n, a, b)
    assert -RTOL_EXACT <= gap <= pairs * (1 + RTOL_EXACT) + 1e-300
    assert gap <= L * b * (1 + RTOL_EXACT)
