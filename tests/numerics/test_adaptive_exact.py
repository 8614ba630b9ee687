"""Exact laws of the adaptive samplers (numerics.exact.adaptive) against each other, hand-derived cases and Monte Carlo.

* Hand-derived: a symmetric two-token chain and a copy chain at ``L = 2``, the interval language at
  ``L = 3`` (each value derived on paper in the comment next to it).
* Three computations of the same numbers: the DP over reachable states, the per-sequence path
  enumeration, and the chain-rule identity (I1) along q-trajectories; and the kernel's scoring
  mode against the enumeration, sequence by sequence (rtol 1e-12).
* The fast sampler's empirical law, SER and calls against the exact ones (chi-squared / z-tests
  at the suite's per-assertion level, :mod:`tests.gof`; fixed seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.exact.adaptive import (
    MAX_DP_TABLE,
    MAX_ENUMERATE_SEQUENCES,
    adaptive_dp,
    adaptive_enumerate,
    adaptive_metrics,
)
from numerics.exact.joint_table import all_sequences
from numerics.languages.generators import random_rows
from numerics.languages.hmm import NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling.adaptive import AdaptiveSampler, IntervalOracle, chain_rule_terms
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.samplers import RandomOrder
from numerics.schedules import linear
from tests._exact_helpers import assume_representable
from tests.gof import Z_BOUND, assert_gof, count_statistical_test, law_bins, within_z
from tests.strategies import small_hmms, small_ngrams
from tests.tolerances import RTOL_EXACT

ATOL_KL = 1e-13  # KLs are differences of cross-entropies of order 1 (a KL of 0 comes out as ~1e-16)

SYMMETRIC = NGram(2, [0.5, 0.5], [[0.75, 0.25], [0.25, 0.75]])  # q(00) = q(11) = 3/8, q(01) = q(10) = 1/8
COPY = NGram(2, [0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]])  # q(00) = q(11) = 1/2
LEFT = None  # tie_seed: ties broken left to right

RULES = [
    AdaptiveSampler("topk", schedule=linear(2), tie_seed=LEFT),
    AdaptiveSampler("topk", schedule=linear(3), confidence="margin"),
    AdaptiveSampler("threshold", gamma=0.6),
    AdaptiveSampler("threshold", gamma=0.3, confidence="margin", tie_seed=2),
    AdaptiveSampler("entropy-sum", gamma=0.9),
    AdaptiveSampler("entropy-sum", gamma=2.0, tie_seed=LEFT),
]


def test_hand_derived_two_token_chains():
    # all at once from the marginals (1/2, 1/2) each: p = 1/4 everywhere,
    # KL = 2 (3/8) log(3/2) + 2 (1/8) log(1/2) = (3/4) log(3/2) - (1/4) log 2
    once = adaptive_enumerate(SYMMETRIC, 2, AdaptiveSampler("topk", schedule=linear(1)))
    np.testing.assert_allclose(once.law.p, np.full((2, 2), 0.25), rtol=0, atol=1e-16)
    assert once.metrics.kl.value == pytest.approx(0.75 * math.log(1.5) - 0.25 * math.log(2), rel=RTOL_EXACT)
    assert once.expected_nfe.value == 1.0 and once.metrics.ser.value == 0.0
    # threshold 0.6: both marginals are 1/2 < 0.6, so the first by priority (x_1) alone; then
    # q(x_2 | x_1) has max 3/4 >= 0.6: one token per step, p = q, KL = 0, two calls
    seq = adaptive_enumerate(SYMMETRIC, 2, AdaptiveSampler("threshold", gamma=0.6, tie_seed=LEFT))
    np.testing.assert_allclose(seq.law.p, seq.law.q, rtol=RTOL_EXACT)
    assert abs(seq.metrics.kl.value) < ATOL_KL and seq.expected_nfe.value == 2.0
    assert list(seq.calls.ravel()) == [2, 2, 2, 2]
    # entropy-sum: H = log 2 each; gamma 1.4 > 2 log 2 takes both (the one-step law), gamma 0.7 only one
    both = adaptive_dp(SYMMETRIC, 2, AdaptiveSampler("entropy-sum", gamma=1.4))
    assert both.metrics.kl.value == pytest.approx(once.metrics.kl.value, rel=RTOL_EXACT)
    one = adaptive_dp(SYMMETRIC, 2, AdaptiveSampler("entropy-sum", gamma=0.7))
    assert abs(one.metrics.kl.value) < ATOL_KL and one.expected_nfe.value == 2.0
    # the copy chain at once: p = 1/4 everywhere, SER = 1/2, KL = log 2, and the certificate
    # 1 - exp(-KL) = 1/2 is tight (p restricted to the support is proportional to q)
    copy = adaptive_dp(COPY, 2, AdaptiveSampler("topk", schedule=linear(1)))
    assert copy.metrics.ser.value == pytest.approx(0.5, rel=RTOL_EXACT)
    assert copy.metrics.kl.value == pytest.approx(math.log(2), rel=RTOL_EXACT)
    assert copy.metrics.ser_kl_certificate.value == pytest.approx(0.5, rel=RTOL_EXACT)
    # ... and revealed one at a time it is exact
    assert adaptive_dp(COPY, 2, AdaptiveSampler("threshold", gamma=0.9)).metrics.ser.value == 0.0


def test_hand_derived_interval_language():
    lang = IntervalLanguage(3)  # one interval of 3 positions, 3 pair bits, V = 4
    # all at once: each token uniform on 4 values, valid iff the 3 pair bits agree: SER = 1 - 1/8
    once = adaptive_dp(lang, 3, AdaptiveSampler("topk", schedule=linear(1)))
    assert once.metrics.ser.value == pytest.approx(7 / 8, rel=RTOL_EXACT)
    # KL = log(q / p) on the support = log((1/8) / (1/64)) = log 8
    assert once.metrics.kl.value == pytest.approx(math.log(8), rel=RTOL_EXACT)
    # threshold 0.6 with maxprob: uncertain tokens (maxprob <= 1/2) one per step, determined ones
    # (maxprob 1) on their own step: x_1, x_2, then x_3 is determined -> exact, 3 calls
    thr = adaptive_dp(lang, 3, AdaptiveSampler("threshold", gamma=0.6))
    assert thr.metrics.ser.value == 0.0 and abs(thr.metrics.kl.value) < ATOL_KL and thr.expected_nfe.value == 3.0
    # entropy-sum below log 2 at L = 6: one uncertain token per step, and a determined token (H = 0)
    # takes a step of its own, because the next one (H >= log 2) would break the bound: 6 calls, exact
    es = adaptive_dp(lang, 6, AdaptiveSampler("entropy-sum", gamma=0.5))
    assert es.metrics.ser.value == 0.0 and es.expected_nfe.value == 6.0
    # entropy-sum 1.4 >= 2 log 2 at L = 3: x_a alone (H = 2 log 2), then the other two together (H = log 2
    # each) although they share a free bit: SER = 1/2; on the support p = (1/4)(1/2)(1/2) = q / 2, so
    # KL = log 2 and the certificate 1 - exp(-KL) = 1/2 is tight
    two = adaptive_dp(lang, 3, AdaptiveSampler("entropy-sum", gamma=1.4))
    assert two.metrics.ser.value == pytest.approx(0.5, rel=RTOL_EXACT) and two.expected_nfe.value == 2.0
    assert two.metrics.kl.value == pytest.approx(math.log(2), rel=RTOL_EXACT)
    assert two.metrics.ser_kl_certificate.value == pytest.approx(0.5, rel=RTOL_EXACT)


@pytest.mark.parametrize("sampler", RULES, ids=lambda s: s.label)
@given(lang=st.one_of(small_ngrams(max_order=3, max_vocab=3), small_hmms(max_states=3, max_vocab=3)),
       L=st.integers(1, 4))
def test_dp_equals_enumeration_equals_chain_rule(sampler, lang, L):
    assume_representable(lang, L)
    dp = adaptive_dp(lang, L, sampler)
    en = adaptive_enumerate(lang, L, sampler)
    np.testing.assert_allclose(dp.law.p, en.law.p, rtol=RTOL_EXACT, atol=1e-15)
    assert dp.law.p.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
    for a, b in ((dp.metrics.kl.value, en.metrics.kl.value), (dp.kl_chain_rule.value, dp.metrics.kl.value),
                 (en.kl_chain_rule.value, en.metrics.kl.value)):
        assert a == pytest.approx(b, rel=RTOL_EXACT, abs=ATOL_KL)
    assert dp.metrics.ser.value == pytest.approx(en.metrics.ser.value, rel=RTOL_EXACT, abs=1e-15)
    assert dp.expected_nfe.value == pytest.approx(en.expected_nfe.value, rel=RTOL_EXACT)
    assert dp.law.undefined_mass == pytest.approx(en.law.undefined_mass, rel=RTOL_EXACT, abs=1e-15)
    assert dp.metrics.ser.value <= dp.metrics.ser_kl_certificate.value + 1e-12  # (I3)


LANGS = {
    "2gram-pruned": NGram(2, random_rows(np.random.default_rng(1), (3,)),
                          random_rows(np.random.default_rng(2), (3, 3), zero_fraction=0.3)),
    "3gram": NGram(3, random_rows(np.random.default_rng(3), (4,)), random_rows(np.random.default_rng(4), (4, 2))),
    "interval-l3": IntervalLanguage(3),
}


@pytest.mark.parametrize("name", list(LANGS))
@pytest.mark.parametrize("sampler", RULES[::2], ids=lambda s: s.label)
def test_kernel_scoring_equals_enumeration_per_sequence(name, sampler):
    lang = LANGS[name]
    L = 5
    en = adaptive_enumerate(lang, L, sampler)
    xs = all_sequences(lang.vocab_size, L)
    on = en.law.q.ravel() > 0
    score = chain_rule_terms(sampler, lang, xs[on])
    np.testing.assert_allclose(score.terms, en.chain_terms.ravel()[on], rtol=RTOL_EXACT, atol=1e-13)
    np.testing.assert_array_equal(score.calls, en.calls.ravel()[on])


def _oracle(lang):
    return IntervalOracle(lang) if isinstance(lang, IntervalLanguage) else OracleDenoiser(lang, strict=False)


@pytest.mark.parametrize("name,sampler", [("2gram-pruned", RULES[0]), ("interval-l3", RULES[1]), ("3gram", RULES[4])])
def test_sampler_law_matches_exact_law(name, sampler):
    lang, L, n = LANGS[name], 4, 20_000
    ex = adaptive_dp(lang, L, sampler)
    run = sampler.sample(_oracle(lang), n, L, np.random.default_rng(12))
    counts, probs = law_bins(run.tokens, ex.law.q, ex.law.p, 0.0)
    assert_gof(counts, probs)
    # calls: mean per sequence against E[T] (z-test; when T is constant, se = 0 and it must match to round-off)
    calls = run.nfe_sequence.astype(float)
    se = calls.std(ddof=1) / math.sqrt(n)
    count_statistical_test()
    tol = Z_BOUND * se + RTOL_EXACT * ex.expected_nfe.value
    assert abs(calls.mean() - ex.expected_nfe.value) <= tol


def test_monte_carlo_kl_by_the_chain_rule_matches_exact():
    from numerics.sampling.adaptive import kl_chain_rule_mc

    lang, L = LANGS["2gram-pruned"], 5
    s = RULES[0]  # topk in 2 steps: KL > 0
    est = kl_chain_rule_mc(s, lang, L, 20_000, np.random.default_rng(3))
    exact = adaptive_dp(lang, L, s).metrics.kl.value
    assert est.samples == 20_000 and est.stderr > 0 and exact > 10 * est.stderr
    assert within_z(est.value, exact, est.stderr)


def test_size_limits_and_wrong_sampler():
    big = NGram(2, np.full(4, 0.25), np.full((4, 4), 0.25))
    with pytest.raises(ValueError, match="MAX_ENUMERATE_SEQUENCES"):
        adaptive_enumerate(big, 7, RULES[2])
    assert 4**7 > MAX_ENUMERATE_SEQUENCES and 5**10 > MAX_DP_TABLE
    with pytest.raises(ValueError, match="MAX_DP_TABLE"):
        adaptive_dp(big, 10, RULES[2])
    with pytest.raises(TypeError, match="deterministic rule"):
        adaptive_dp(big, 2, RandomOrder(linear(2)))
    with pytest.raises(ValueError, match="unknown method"):
        adaptive_metrics(big, 2, RULES[2], method="mc")


@given(lang=st.one_of(small_ngrams(max_order=2, max_vocab=3, zeros=False), small_hmms(max_states=3, max_vocab=3, zeros=False)),
       L=st.integers(2, 4), gamma=st.sampled_from([0.3, 0.9, 1.7, 3.1]))
def test_entropy_sum_equals_the_theory_registrys_independent_enumeration(lang, L, gamma):
    """theory.related_adaptive enumerates the same rule ("stay": longest prefix <= gamma, ties by
    lower position) with its own marginals and recursion, on full-support tables."""
    from numerics.exact.joint_table import joint_table
    from theory.related_adaptive import entropy_sum_law

    assume_representable(lang, L)
    q = np.asarray(joint_table(lang, L))
    ours = adaptive_enumerate(q, None, AdaptiveSampler("entropy-sum", gamma=gamma, tie_seed=None))
    theirs = entropy_sum_law(q, gamma, "stay")
    np.testing.assert_allclose(ours.law.p, theirs.p, rtol=RTOL_EXACT, atol=1e-15)
    np.testing.assert_array_equal(ours.calls, theirs.iterations)
    assert ours.metrics.kl.value == pytest.approx(theirs.kl, rel=RTOL_EXACT, abs=ATOL_KL)
    assert ours.kl_chain_rule.value == pytest.approx(theirs.chain_rule_kl, rel=RTOL_EXACT, abs=ATOL_KL)
    assert ours.expected_nfe.value == pytest.approx(theirs.expected_iterations_sampler, rel=RTOL_EXACT)
