"""Schedules: families reduce to the documented u vectors, validation errors, NFE formula, step draws."""

from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from hypothesis import given

from numerics.schedules import (
    Schedule,
    cosine,
    from_u,
    linear,
    loglinear,
    make_schedule,
    polynomial,
)
from tests.gof import assert_gof
from tests.strategies import schedules
from tests.tolerances import RTOL_EXACT


def test_linear_and_loglinear_are_uniform():
    for N in (1, 3, 64):
        np.testing.assert_allclose(linear(N).pi, np.full(N, 1.0 / N), rtol=RTOL_EXACT)
        # log-linear renormalized from alpha(1) = eps: u_i = 1 - t_i exactly (module docstring)
        np.testing.assert_allclose(loglinear(N, eps=1e-3).pi, np.full(N, 1.0 / N), rtol=RTOL_EXACT)


def test_cosine_and_polynomial_closed_forms():
    N = 8
    i = np.arange(N + 1)
    np.testing.assert_allclose(cosine(N).u, np.cos(0.5 * np.pi * (1 - i / N)), rtol=RTOL_EXACT, atol=1e-15)
    np.testing.assert_allclose(polynomial(N, 3.0).u, 1 - (1 - i / N) ** 3, rtol=RTOL_EXACT)


def test_t_min_puts_the_leftover_mass_on_the_last_step():
    s = linear(4, t_min=0.2)  # times 1, .8, .6, .4, .2 -> u = 0, .2, .4, .6, then 1
    np.testing.assert_allclose(s.u, [0.0, 0.2, 0.4, 0.6, 1.0], rtol=RTOL_EXACT)


@pytest.mark.parametrize(
    "u, message",
    [
        ([0.0, 0.6, 0.5, 1.0], "not monotone"),
        ([0.1, 0.5, 1.0], "u_0 must be 0"),
        ([0.0, 0.5, 0.9], "u_N must be 1"),
        ([0.0, np.nan, 1.0], "non-finite"),
        ([0.0], "N >= 1"),
        ([0.0, 1.5, 1.0], "not monotone"),
    ],
)
def test_invalid_schedules_are_rejected_with_a_named_problem(u, message):
    with pytest.raises(ValueError, match=message):
        Schedule(np.array(u))


def test_bad_family_arguments():
    with pytest.raises(ValueError, match="N must be an integer >= 1"):
        linear(0)
    with pytest.raises(ValueError, match="unknown schedule"):
        make_schedule("nope", 4)
    with pytest.raises(ValueError, match="power"):
        polynomial(4, power=-1.0)


def test_from_u_prepends_zero():
    np.testing.assert_array_equal(from_u([0.25, 1.0]).u, [0.0, 0.25, 1.0])


def _nfe_by_enumeration(pi: np.ndarray, positions: int) -> Fraction:
    """E[NFE] by enumerating every step assignment of ``positions`` positions, in exact rationals."""
    pis = [Fraction(p).limit_denominator(10**6) for p in pi]
    N = len(pis)
    total = Fraction(0)
    for steps in product(range(N), repeat=positions):
        weight = Fraction(1)
        for s in steps:
            weight *= pis[s]
        used = {s for s in steps if s < N - 1}  # a non-empty step i < N triggers a new call
        total += weight * (1 + len(used))
    return total


def test_expected_nfe_matches_enumeration():
    u = np.array([0, 1, 3, 4, 8]) / 8  # exact binary fractions
    s = Schedule(u)
    for L in (1, 2, 4):
        assert s.expected_nfe(L) == pytest.approx(float(_nfe_by_enumeration(s.pi, L)), rel=RTOL_EXACT)
    # a batch of B sequences shares the cache: it is one sequence of B L positions
    assert s.expected_nfe(2, batch=2) == pytest.approx(s.expected_nfe(4), rel=RTOL_EXACT)


@given(schedules(max_steps=6))
def test_pi_is_a_distribution(s):
    assert np.all(s.pi >= 0)
    assert s.pi.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
    assert 1.0 <= s.expected_nfe(3) <= s.n_steps


def test_sample_steps_follow_pi():
    s = Schedule(np.array([0.0, 0.1, 0.1, 0.55, 1.0]))  # step 2 has probability 0
    draws = s.sample_steps(np.random.default_rng(1), 200_000)
    counts = np.bincount(draws, minlength=s.n_steps + 1)[1:]
    assert counts[1] == 0  # an empty step is never drawn
    assert_gof(counts, s.pi, "reveal steps")
    with pytest.raises(TypeError, match="Generator"):
        s.sample_steps(np.random.RandomState(0), 3)


def test_mdlm_schedule_is_loglinear_down_to_1e_5_with_the_rest_in_the_last_step():
    """MDLM's sampler: times 1 = t_0 > .. > t_{N-1} = 1 - (N-1)(1 - 1e-5)/N linear, then everything left at step N."""
    from numerics.schedules import MDLM_T_MIN, loglinear, make_schedule

    N = 8
    s = make_schedule("mdlm", N)
    assert s.name == "mdlm(N=8)"
    np.testing.assert_array_equal(s.u, loglinear(N, t_min=1e-5).u)
    t = 1.0 - np.arange(N + 1) * (1.0 - MDLM_T_MIN) / N
    a = 1.0 - (1.0 - 1e-3) * t
    np.testing.assert_allclose(s.u[:-1], ((a - a[0]) / (1.0 - a[0]))[:-1], rtol=1e-15)
    assert s.u[-1] == 1.0 and s.pi[-1] > s.pi[0]  # the last step also takes the mass left at t = 1e-5
