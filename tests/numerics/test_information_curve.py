"""The information curve Z and the Jensen bound it gives, against enumeration and the literal multinomial sum."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.information_curve import (
    information_curve_table,
    jensen_bound_from_curve,
)
from numerics.exact.joint_table import joint_table, subset_entropies
from tests._exact_helpers import assume_representable
from tests.strategies import schedules, small_hmms, small_ngrams
from tests.tolerances import ATOL_ENTROPY, RTOL_EXACT


def _z_by_orders(q):
    """Z_j straight from its definition: the mean over all L! orders of I(X_sigma(j); X_sigma(<j))."""
    L = q.ndim
    H = subset_entropies(q)
    z = np.zeros(L)
    orders = list(itertools.permutations(range(L)))
    for order in orders:
        before = 0
        for j, pos in enumerate(order):
            bit = 1 << pos
            z[j] += H[bit] + H[before] - H[before | bit]  # I(X_pos ; X_before)
            before |= bit
    return z / len(orders)


@given(lang=st.one_of(small_hmms(max_states=3, max_vocab=3), small_ngrams(max_order=3, max_vocab=2)), length=st.integers(1, 4))
def test_curve_from_subset_sums_equals_the_definition(lang, length):
    q = joint_table(lang, length)
    curve = information_curve_table(q)
    np.testing.assert_allclose(curve.z, _z_by_orders(q), rtol=RTOL_EXACT, atol=ATOL_ENTROPY)
    assert curve.z[0] == 0.0
    assert np.all(np.diff(curve.z) >= -ATOL_ENTROPY)  # non-decreasing
    H = subset_entropies(q)
    tc = sum(H[1 << j] for j in range(length)) - H[-1]
    assert curve.total_correlation == pytest.approx(tc, rel=RTOL_EXACT, abs=ATOL_ENTROPY)


@given(lang=st.one_of(small_hmms(max_states=3, max_vocab=2), small_ngrams(max_order=3, max_vocab=2)), schedule=schedules(max_steps=3), length=st.integers(1, 4))
def test_jensen_bound_from_curve_equals_enumeration(lang, schedule, length):
    assume_representable(lang, length)
    enum = enumerate_output_law(lang, length, schedule).kl_jensen_bound.value
    curve = jensen_bound_from_curve(information_curve_table(lang, length), schedule)
    assert curve.total.value == pytest.approx(enum, rel=RTOL_EXACT, abs=ATOL_ENTROPY)
    assert curve.total.method == "information-curve-table" and curve.total.stderr == 0.0


@given(lang=small_hmms(max_states=3, max_vocab=2), schedule=schedules(max_steps=4))
def test_reduced_sum_equals_the_literal_multinomial_sum(lang, schedule):
    """sum_i sum_{s,b} Mult(s, b) sum_{m<b} (Z_{s+m+1} - Z_{s+1}), the formula as docs/methods/exact.md states it."""
    L = 5
    curve = information_curve_table(lang, L)
    z = np.concatenate([curve.z, [np.nan]])  # z[k] = Z_{k+1}; Z_{L+1} never used with b >= 1
    literal = np.zeros(schedule.n_steps)
    for i in range(schedule.n_steps):
        a, b_, c = schedule.u[i], schedule.pi[i], 1 - schedule.u[i + 1]
        for s in range(L + 1):
            for b in range(1, L - s + 1):
                prob = math.factorial(L) / (math.factorial(s) * math.factorial(b) * math.factorial(L - s - b))
                prob *= a**s * b_**b * c ** (L - s - b)
                literal[i] += prob * sum(z[s + m] - z[s] for m in range(b))
    reduced = jensen_bound_from_curve(curve, schedule).per_step
    np.testing.assert_allclose(reduced, literal, rtol=RTOL_EXACT, atol=ATOL_ENTROPY)
