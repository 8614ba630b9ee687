"""Interval-language closed forms and step collisions against enumeration of step assignments and
against the brute-force output law of the direct construction (Example C.7)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.exact.dp import dp_output_law
from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.interval import (
    SMALL_N,
    _binomial_mixture_dp,
    _distinct_factor,
    elementary_symmetric,
    interval_ser,
    interval_validity,
    prob_distinct_steps,
    sequence_collision_probability,
)
from numerics.exact.output_law import law_metrics
from numerics.languages.interval import IntervalLanguage
from numerics.schedules import cosine, from_u, linear
from tests.strategies import schedules
from tests.tolerances import RTOL_EXACT

RTOL_METHODS = 1e-11  # the two recursions for n > SMALL_N sum O(N n) scipy binomial terms each


def _by_assignments(schedule, n, event):
    """sum over all N^n step assignments of prod pi * event(counts)."""
    pi = schedule.pi
    total = 0.0
    for steps in itertools.product(range(pi.shape[0]), repeat=n):
        counts = np.bincount(steps, minlength=pi.shape[0])
        total += math.prod(pi[s] for s in steps) * event(counts)
    return total


@given(schedule=schedules(max_steps=4), l=st.integers(1, 5))
def test_against_enumeration_of_step_assignments(schedule, l):
    validity = interval_validity(schedule, l)
    expected = _by_assignments(schedule, l, lambda k: 2.0 ** -(k * (k - 1) // 2).sum())
    assert validity.probability == pytest.approx(expected, rel=RTOL_EXACT)
    assert validity.probability + validity.complement == pytest.approx(1.0, rel=RTOL_EXACT)
    distinct = prob_distinct_steps(schedule, l)
    expected = _by_assignments(schedule, l, lambda k: float(np.all(k <= 1)))
    assert distinct.probability == pytest.approx(expected, rel=RTOL_EXACT, abs=1e-300)
    # the elementary symmetric polynomial directly: l! e_l(pi)
    e_l = sum(math.prod(c) for c in itertools.combinations(schedule.pi, l))
    assert elementary_symmetric(schedule.pi, l) == pytest.approx(e_l, rel=RTOL_EXACT, abs=1e-300)
    assert distinct.probability == pytest.approx(math.factorial(l) * e_l, rel=RTOL_EXACT, abs=1e-300)


def test_hand_values_with_rationals():
    # linear N = 4, l = 3: P(distinct) = 3! e_3(1/4,..) = 6 * 4 / 64 = 3/8.
    # Validity: counts (1,1,1,0)-type: 24/64 with c = 0; (2,1,0,0)-type: 36/64 with c = 1;
    # (3,0,0,0)-type: 4/64 with c = 3 -> E[2^-c] = 24/64 + 18/64 + 0.5/64 = 42.5/64.
    s = linear(4)
    assert prob_distinct_steps(s, 3).probability == pytest.approx(3 / 8, rel=RTOL_EXACT)
    expected = Fraction(24, 64) + Fraction(36, 64) / 2 + Fraction(4, 64) / 8
    assert interval_validity(s, 3).probability == pytest.approx(float(expected), rel=RTOL_EXACT)
    ser = interval_ser(s, 6, 3)
    assert ser.probability == pytest.approx(float(1 - expected**2), rel=RTOL_EXACT)
    assert ser.complement == pytest.approx(float(expected**2), rel=RTOL_EXACT)


@pytest.mark.parametrize("l, length, schedule", [(2, 2, linear(2)), (2, 4, cosine(3)), (3, 3, linear(3)), (3, 6, from_u([0.0, 0.5, 1.0]))])
def test_against_the_output_law_of_the_direct_language(l, length, schedule):
    lang = IntervalLanguage(l)
    law = enumerate_output_law(lang, length, schedule).law
    ser = law_metrics(law).ser.value
    assert interval_ser(schedule, length, l).probability == pytest.approx(ser, rel=RTOL_EXACT)
    # The SER certificate SER <= 1 - exp(-KL) is *tight* here: q is uniform on its support and, by
    # symmetry, so is p restricted to it, so p = p(supp q) q on supp q and KL = -log p(supp q).
    m = law_metrics(law)
    assert m.ser.value == pytest.approx(m.ser_kl_certificate.value, rel=RTOL_EXACT)


def test_against_the_dp_output_law_of_a_longer_sequence():
    lang = IntervalLanguage(3)  # V = 4; L = 6 is (2V+1)^L = 9^6 products per step
    schedule = cosine(4)
    ser = law_metrics(dp_output_law(lang, 6, schedule)).ser.value
    assert interval_ser(schedule, 6, 3).probability == pytest.approx(ser, rel=RTOL_EXACT)


def test_l_must_divide_length():
    with pytest.raises(ValueError, match="not a multiple"):
        interval_ser(linear(4), 7, 3)


def test_sequence_collision_both_recursions_agree_and_match_lemma_c1():
    s = cosine(100)
    n = SMALL_N + 1
    w, c = _binomial_mixture_dp(s, n, _distinct_factor)  # the general O(N n^2) recursion
    big = prob_distinct_steps(s, n)
    assert big.method == "step-dp-first-collision"
    assert big.probability == pytest.approx(w, rel=RTOL_METHODS)
    assert big.complement == pytest.approx(c, rel=RTOL_METHODS)
    collision = sequence_collision_probability(s, n)
    assert collision.probability == big.complement
    # Lemma C.1's bound C(L, 2) sum pi^2 is an upper bound on the exact collision probability
    assert collision.probability <= math.comb(n, 2) * float(np.sum(s.pi**2))


def test_paper_scale_sequence_collision():
    N = 2048
    s = linear(N)
    for n in (16, 512):
        col = sequence_collision_probability(s, n)
        assert col.probability + col.complement == pytest.approx(1.0, rel=RTOL_EXACT)
        # uniform pi: n! e_n(pi) = N! / ((N - n)! N^n), by log-gamma (relative error ~ 1e-13 at these sizes)
        log_distinct = math.lgamma(N + 1) - math.lgamma(N - n + 1) - n * math.log(N)
        assert col.complement == pytest.approx(math.exp(log_distinct), rel=1e-9, abs=1e-300)
    tiny = sequence_collision_probability(linear(2048), 2)  # two positions: P(same step) = sum pi^2 = 1/N
    assert tiny.probability == pytest.approx(1 / 2048, rel=RTOL_EXACT)
