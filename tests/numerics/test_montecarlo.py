"""Monte Carlo metrics against exact values (part B's enumeration and the Markov chain rule).

Each comparison accepts ``|estimate - exact| <= Z_BOUND * stderr`` (:func:`tests.gof.within_z`: a
normal-approximation test at the suite's per-assertion level, which the sample sizes here make
accurate); the seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.estimate import Estimate, clopper_pearson
from numerics.exact.enumerate import enumerate_metrics
from numerics.exact.markov import jensen_bound_markov
from numerics.languages.generators import random_rows
from numerics.languages.hmm import HMM, NGram
from numerics.sampling.montecarlo import (
    IntervalEstimate,
    gen_ppl_data,
    gen_ppl_from_loglik,
    gen_ppl_mc,
    kl_jensen_bound_mc,
    nfe_comparison,
    ser_from_loglik,
    ser_mc,
)
from numerics.sampling.samplers import sample_oracle
from numerics.schedules import from_u, linear
from tests.gof import within_z


def _cases():
    rng = np.random.default_rng(21)
    return {
        "2gram-pruned": NGram(2, random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3)),
        "3gram": NGram(3, random_rows(rng, (4,)), random_rows(rng, (4, 2))),
        "3gram-pruned": NGram(3, random_rows(rng, (9,)), random_rows(rng, (9, 3), zero_fraction=0.3)),
        "hmm": HMM(random_rows(rng, (3,)), random_rows(rng, (3, 3)), random_rows(rng, (3, 2))),
        # state 0 alone emits token 0 and never follows itself: "0 0" is invalid (SER > 0)
        "hmm-pruned": HMM(np.array([0.5, 0.3, 0.2]), np.array([[0, 0.5, 0.5], [0.4, 0.3, 0.3], [0.2, 0.5, 0.3]]),
                          np.array([[1.0, 0, 0], [0, 0.5, 0.5], [0, 0.3, 0.7]])),
    }


CASES = _cases()
SCHEDULES = {"linear3": linear(3), "uneven": from_u([0.0, 0.5, 0.6, 1.0], "uneven")}


def within(est: Estimate, exact: float) -> bool:
    return within_z(est.value, exact, est.stderr)


@pytest.mark.parametrize("name", ["2gram-pruned", "3gram-pruned", "hmm-pruned"])
@pytest.mark.parametrize("sched", sorted(SCHEDULES))
def test_ser_mc_within_interval_of_exact(name, sched):
    lang, schedule, L = CASES[name], SCHEDULES[sched], 4
    exact = enumerate_metrics(lang, L, schedule)
    est = ser_mc(lang, sample_oracle(lang, schedule, 20_000, L, np.random.default_rng(1)))
    assert est.samples == 20_000 and isinstance(est, IntervalEstimate)
    assert exact.ser.value > 0.01  # the case is not trivial
    assert within(est, exact.ser.value), (est, exact.ser)
    # SER certificate (docs/methods/exact.md) on the exact numbers: SER <= 1 - exp(-KL(q || p))
    assert exact.ser.value <= 1.0 - math.exp(-exact.kl.value) + 1e-15
    # and the two KLs are kept apart and ordered (Lemma B.2)
    assert exact.kl.value <= exact.kl_jensen_bound.value + 1e-12


@pytest.mark.parametrize("name", ["3gram", "hmm"])
def test_gen_ppl_mc_within_interval_of_exact(name):
    lang, schedule, L = CASES[name], SCHEDULES["uneven"], 4
    exact = enumerate_metrics(lang, L, schedule)
    est = gen_ppl_mc(lang, sample_oracle(lang, schedule, 20_000, L, np.random.default_rng(2)))
    assert within(est, exact.gen_ppl.value), (est, exact.gen_ppl)
    assert est.ci_low < est.value < est.ci_high
    data = gen_ppl_data(lang, L, 20_000, np.random.default_rng(3))
    assert within(data, exact.gen_ppl_data.value), (data, exact.gen_ppl_data)


@pytest.mark.parametrize("name", ["3gram", "hmm", "3gram-pruned", "hmm-pruned"])
@pytest.mark.parametrize("sched", sorted(SCHEDULES))
def test_jensen_bound_mc_within_interval_of_enumeration(name, sched):
    lang, schedule, L = CASES[name], SCHEDULES[sched], 5
    exact = enumerate_metrics(lang, L, schedule).kl_jensen_bound.value
    est = kl_jensen_bound_mc(lang, schedule, L, 20_000, np.random.default_rng(4))
    assert est.stderr > 0 and within(est, exact), (est, exact)


def test_jensen_bound_mc_matches_markov_chain_rule_at_larger_length():
    """2-gram at L = 64: the exact chain-rule closed form (part B) vs Monte Carlo over (x, tau)."""
    rng = np.random.default_rng(5)
    chain = NGram(2, random_rows(rng, (4,)), random_rows(rng, (4, 4)))
    for schedule in (linear(8), linear(40)):
        exact = jensen_bound_markov(chain, 64, schedule).total.value
        est = kl_jensen_bound_mc(chain, schedule, 64, 4000, np.random.default_rng(6))
        assert within(est, exact), (schedule, est, exact)


def test_binomial_interval_known_values():
    lo, hi = clopper_pearson(0, 100, 0.95)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 100), rel=1e-12)
    lo, hi = clopper_pearson(100, 100, 0.95)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 100), rel=1e-12)
    lo, hi = clopper_pearson(30, 100)
    assert lo < 0.3 < hi
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_ser_and_gen_ppl_from_loglik():
    ll = np.array([-1.0, -np.inf, -2.0, -3.0])
    s = ser_from_loglik(ll)
    assert s.value == 0.25 and s.samples == 4 and s.ci_low < 0.25 < s.ci_high
    g = gen_ppl_from_loglik(ll, 2)
    assert math.isinf(g.value) and "outside supp q" in g.method
    g = gen_ppl_from_loglik(np.array([-2.0, -4.0]), 2)
    assert g.value == pytest.approx(math.exp(1.5))
    assert g.stderr == pytest.approx(math.exp(1.5) * 0.5)  # -ll/L = (1, 2): std 1/sqrt(2), over sqrt(2)
    with pytest.raises(ValueError):
        ser_from_loglik(np.array([np.nan, 0.0]))


def test_jensen_rejects_tokens_outside_support():
    lang = CASES["2gram-pruned"]
    from numerics.sampling.montecarlo import kl_jensen_bound_from_tokens

    q0 = lang.conditional
    bad = np.argwhere(q0 == 0)[0]  # a transition of probability 0
    x = np.tile(np.array([bad[0], bad[1], bad[1]]), (3, 1))
    with pytest.raises(ValueError, match="outside supp q"):
        kl_jensen_bound_from_tokens(lang, np.ones((3, 3), dtype=np.int64), x)


def test_nfe_comparison():
    schedule = linear(16)
    res = sample_oracle(CASES["3gram"], schedule, 4000, 6, np.random.default_rng(7), batch_size=2)
    cmp = nfe_comparison(res, schedule)
    assert cmp.batch_size == 2 and cmp.expected == schedule.expected_nfe(6, batch=2)
    assert within_z(cmp.realized.value, cmp.expected, cmp.realized.stderr)
    res = sample_oracle(CASES["3gram"], schedule, 5, 6, np.random.default_rng(7), batch_size=2)
    with pytest.raises(ValueError, match="different sizes"):
        nfe_comparison(res, schedule)
