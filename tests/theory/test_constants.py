"""Theorem 4.2 and 4.4 constants, and theory's exact numbers against numerics' independent ones."""

import math
from fractions import Fraction as F

import numpy as np
import pytest

from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.interval import (
    interval_ser,
    prob_distinct_steps,
    sequence_collision_probability,
)
from numerics.exact.interval import interval_validity as numerics_interval_validity
from numerics.languages.hmm import NGram
from numerics.languages.interval import IntervalLanguage
from numerics.schedules import Schedule, from_u, linear
from tests.tolerances import RTOL_EXACT
from theory.b12_explicit_schedule import (
    b12_length_threshold,
    b12_rate,
    b12_schedule,
    b12_solve_eps,
    b12_steps,
    b12_steps_bound,
)
from theory.brute import mixture_law, sequence_kl, table
from theory.c7_interval_language import P_E_PAPER, p_e
from theory.collision import (
    collision_probability,
    distinct_probability,
    interval_validity,
)
from theory.thm42_ter import theorem42_constants
from theory.thm44_ser_lower import (
    arg_constant_l10,
    best_interval_validity,
    c9_argument_constant,
    c9_argument_limit,
    c9_bound,
    oracle_ser,
    true_threshold,
)

# ----- Theorem 4.2 / Lemma B.12 ---------------------------------------------------------------


@pytest.mark.parametrize("eps,n", [(0.5, 2), (0.25, 2), (0.1, 2), (0.5, 3), (0.3, 3), (0.5, 4)])
def test_b12_schedule_is_the_derived_one(eps, n):
    sched = b12_schedule(eps, n)
    assert isinstance(sched, Schedule)
    u, pi = sched.u, sched.pi
    assert u[1] == eps and u[-1] == 1.0
    c = b12_rate(eps, n)
    # every later step reveals at most c u_{i-1}^(n-1) (equality except the capped last one)
    np.testing.assert_allclose(pi[1:-1], c * u[1:-2] ** (n - 1), rtol=RTOL_EXACT)
    assert pi[-1] <= c * u[-2] ** (n - 1) * (1 + RTOL_EXACT)
    assert sched.n_steps == b12_steps(eps, n) <= b12_steps_bound(eps, n)


def test_b12_constants_by_hand():
    # n = 2, eps = 1/2: c = 1/16, u_i = (1/2)(17/16)^(i-1) reaches 1 after ceil(log 2 / log(17/16)) = 12
    # more steps: N = 13; L_0 = max(8 log 4 / (1/2), 6 * 12 / (1/2)) = 144
    assert b12_steps(0.5, 2) == 1 + math.ceil(math.log(2) / math.log(17 / 16)) == 13
    assert b12_length_threshold(0.5, 2) == 144
    k = theorem42_constants(0.5, 2, 4, eps_learning=0.01)
    assert k["ter_gap_bound"] == pytest.approx(4 * 0.5 * math.log(4) + 0.01, rel=RTOL_EXACT)
    # L_0 is a multiple of n - 1
    assert b12_length_threshold(0.3, 3) % 2 == 0


@pytest.mark.parametrize("N,n", [(13, 2), (100, 2), (50, 3), (400, 3)])
def test_solve_eps_inverts_the_step_count(N, n):
    eps = b12_solve_eps(N, n)
    assert b12_steps(eps, n) <= N
    assert b12_steps(eps * (1 - 1e-6), n) > N or eps * (1 - 1e-6) <= 1e-9


def test_solve_eps_rejects_too_few_steps():
    with pytest.raises(ValueError, match="N must be an integer >= 2"):
        b12_solve_eps(1, 2)


# ----- Theorem 4.3 ----------------------------------------------------------------------------


def test_thm43_ser_bound_by_hand():
    from theory import thm43_ser_bound

    # delta_N = 1/4, L = 2, eps_learning = log(2)/2: 1 - (3/4)(1/2) = 5/8
    assert thm43_ser_bound(0.25, 2, math.log(2) / 2) == pytest.approx(5 / 8, rel=RTOL_EXACT)
    assert thm43_ser_bound(0.3, 7, 0.0) == pytest.approx(0.3, rel=RTOL_EXACT)  # the oracle: SER <= delta_N
    assert thm43_ser_bound(0.0, 3, 0.1) == pytest.approx(-math.expm1(-0.3), rel=RTOL_EXACT)
    assert thm43_ser_bound(1.0, 3, 0.1) == 1.0 and thm43_ser_bound(0.2, 3, math.inf) == 1.0  # vacuous


@pytest.mark.parametrize("args,message", [((np.float64(1.1), 4, 0.0), "delta_N is a probability in \\[0, 1\\].*got 1.1$"),
                                          ((0.1, 0, 0.0), "L must be an integer >= 1, got 0"),
                                          ((0.1, 4, np.float64(-0.5)), "eps_learning must be >= 0, got -0.5$")])
def test_thm43_ser_bound_rejects_bad_input_naming_the_number(args, message):
    from theory import thm43_ser_bound

    with pytest.raises(ValueError, match=message):
        thm43_ser_bound(*args)


def test_thm43_ser_bound_is_the_claims_right_side():
    from theory import check, get, thm43_ser_bound
    from theory.instances import gen_ser

    rng = np.random.default_rng(5)
    for _ in range(5):
        inst = gen_ser(rng)
        res = check(get("4.3.exact-delta"), inst)
        q = table(inst["language"], inst["L"])
        mix = mixture_law(q, inst["pi"], inst["beta"], inst["tilt"])
        delta = float(collision_probability(list(inst["pi"]), inst["L"]))
        assert res.rhs == thm43_ser_bound(delta, inst["L"], mix.eps)


# ----- Theorem 4.4 ----------------------------------------------------------------------------


def test_p_e_is_the_papers_value():
    assert P_E_PAPER == F(63, 128)
    assert p_e(1 / 128) == pytest.approx(63 / 128, rel=RTOL_EXACT)


def test_argument_constant():
    # C_arg for all L >= 10 is 1/2, set by L = 10 (N <= 4 gives a bound > 1/2, N = 5 does not)
    assert arg_constant_l10() == pytest.approx(0.5, rel=RTOL_EXACT)
    assert c9_bound(4, 10) > 0.5 >= c9_bound(5, 10)
    th = c9_argument_constant(np.arange(10, 3001, 5))
    assert np.all(np.diff(th.ratio[th.lengths >= 20]) > -0.02)  # close to monotone, rising to the limit
    assert th.ratio[-1] < th.limit == pytest.approx(63 / 128 * 4 / (5 * math.log(2)), rel=RTOL_EXACT)
    assert c9_argument_limit() == pytest.approx(0.56806, abs=1e-5)


def test_true_threshold_linear_schedule():
    th = true_threshold([5, 10, 100, 1000])
    # at L = 5, N = 7 steps still leave SER > 1/2, N = 8 do not
    assert oracle_ser([1 / 7] * 7, 5) > 0.5 >= oracle_ser([1 / 8] * 8, 5)
    assert th.n_max[0] == 7
    assert th.limit == pytest.approx(1 / math.log(2), rel=RTOL_EXACT)
    assert np.all(th.ratio >= th.limit)


def test_uniform_schedule_maximizes_interval_validity_numerically():
    for N in (3, 6):
        best, pi = best_interval_validity(N, 5, restarts=3, seed=N)
        assert best == pytest.approx(float(interval_validity([1 / N] * N, 5)), rel=1e-9)


# ----- cross-checks with numerics -------------------------------------------------------------


def _sched(pi):
    return from_u(np.concatenate([[0.0], np.cumsum(pi)]))


@pytest.mark.parametrize("pi", [[0.2, 0.3, 0.5], [0.5, 0.5], [0.1, 0.0, 0.9]])
def test_interval_closed_forms_match_numerics(pi):
    sched = _sched(pi)
    assert float(interval_validity(list(sched.pi), 5)) == pytest.approx(
        numerics_interval_validity(sched, 5).probability, rel=RTOL_EXACT)
    assert oracle_ser(sched.pi, 20) == pytest.approx(interval_ser(sched, 20, 5).probability, rel=RTOL_EXACT)
    assert float(distinct_probability(list(sched.pi), 3)) == pytest.approx(
        prob_distinct_steps(sched, 3).probability, rel=RTOL_EXACT, abs=1e-300)
    assert float(collision_probability(list(sched.pi), 4)) == pytest.approx(
        sequence_collision_probability(sched, 4).probability, rel=RTOL_EXACT)


def test_interval_validity_against_brute_force_sampler():
    # Example C.7 with l = 3 (V = 4), two intervals, N = 2: the brute-force law of the oracle sampler
    pi = np.array([0.4, 0.6])
    q = table(IntervalLanguage(3), 6)
    mix = mixture_law(q, pi)
    assert 1 - mix.valid == pytest.approx(oracle_ser(pi, 6, 3), rel=RTOL_EXACT)


def test_brute_force_sampler_matches_numerics_enumeration():
    rng = np.random.default_rng(7)
    cond = rng.dirichlet(np.ones(2), size=4)
    cond[0] = [1.0, 0.0]  # a structural zero: invalid sequences exist
    lang = NGram(3, rng.dirichlet(np.ones(4)), cond)
    sched = linear(3)
    ref = enumerate_output_law(lang, 4, sched)
    q = table(lang, 4)
    mine = mixture_law(q, sched.pi)
    np.testing.assert_allclose(mine.p[q > 0], np.asarray(ref.law.p)[q > 0], rtol=RTOL_EXACT)
    assert sequence_kl(q, mine.p) == pytest.approx(sequence_kl(q, np.asarray(ref.law.p)), rel=1e-10)
    assert mine.expected_instance_kl == pytest.approx(ref.kl_jensen_bound.value, rel=1e-10)
    assert mine.eps == 0.0  # the oracle: eps_learning = 0 exactly
