"""The factorized uniform-noise reverse process with the oracle: exact law, Monte Carlo, and the paper's question.

Independent methods: the reverse step against Bayes' rule written with the forward noise matrices;
the whole chain against one built from posteriors by enumeration of the joint table (no forward-backward);
``N = 1`` against the product of ``q``'s marginals; Monte Carlo against the exact law (chi-squared)
and the path KL's estimator against its exact value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.exact.joint_table import all_sequences, joint_table
from numerics.exact.uniform_noise import (
    interval_uniform_ser,
    uniform_noise_metrics,
    uniform_noise_output_law,
    uniform_noise_path_kl,
)
from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling.uniform_noise import path_kl_terms, reverse_kernel, sample_uniform_noise
from numerics.schedules import from_u, make_schedule
from tests.gof import assert_gof, law_bins, within_z
from tests.tolerances import ATOL_PROB, RTOL_EXACT

NG = NGram(2, np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.0, 1.0]]))  # "1 0" is impossible: SER > 0
HMM2 = HMM(np.array([0.7, 0.3]), np.array([[0.9, 0.1], [0.4, 0.6]]), np.array([[0.6, 0.3, 0.1], [0.0, 0.2, 0.8]]))


def _Q(a, V):
    return a * np.eye(V) + (1 - a) / V


def _brute_law(lang, L, schedule):
    """The chain with posteriors by enumeration and the reverse step by Bayes' rule on noise matrices."""
    V = lang.vocab_size
    xs = all_sequences(V, L)
    q = joint_table(lang, L).ravel()
    law = np.full(len(xs), V ** -float(L))
    u = schedule.u
    for i in range(1, len(u)):
        a, a2 = u[i - 1], u[i]
        if a2 <= a or a >= 1:
            continue
        Qa, Qa2 = _Q(a, V), _Q(a2, V)
        R = _Q(a / a2, V)  # the forward step from level a2 down to a
        T = np.empty((len(xs), len(xs)))
        for c, y in enumerate(xs):
            post = q * np.prod(Qa[xs, y], axis=1)  # q(x | y) up to its sum
            post /= post.sum()
            m = np.array([[post[xs[:, j] == v].sum() for v in range(V)] for j in range(L)])
            k = np.array([[sum(m[j, x] * Qa2[x, w] * R[w, y[j]] / Qa[x, y[j]] for x in range(V)) for w in range(V)]
                          for j in range(L)])
            T[c] = np.prod(k[np.arange(L), xs], axis=1)
        law = law @ T
    return law.reshape((V,) * L)


@pytest.mark.parametrize("lang", [NG, HMM2], ids=["2gram", "hmm"])
@pytest.mark.parametrize("schedule", [make_schedule("linear", 3), make_schedule("cosine", 5),
                                      from_u([0.0, 0.3, 0.3, 0.9, 1.0])], ids=["linear3", "cosine5", "custom"])
def test_exact_law_against_brute_force(lang, schedule):
    L = 3
    law = uniform_noise_output_law(lang, L, schedule)
    np.testing.assert_allclose(law.p, _brute_law(lang, L, schedule), rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert law.p.sum() == pytest.approx(1.0, rel=RTOL_EXACT)


def test_reverse_kernel_endpoints():
    """``a = 0``: ``a' m + (1 - a')/V``; ``a' = 1``: the marginal itself; ``a = 1``: the canvas kept."""
    rng = np.random.default_rng(0)
    m = rng.dirichlet(np.ones(4), size=5)
    y = rng.integers(0, 4, size=5)
    np.testing.assert_allclose(reverse_kernel(m, y, 0.0, 0.3), 0.3 * m + 0.7 / 4, rtol=RTOL_EXACT)
    np.testing.assert_allclose(reverse_kernel(m, y, 0.4, 1.0), m, rtol=RTOL_EXACT)
    np.testing.assert_array_equal(reverse_kernel(m, y, 1.0, 1.0), np.eye(4)[y])
    k = reverse_kernel(m, y, 0.25, 0.6)
    np.testing.assert_allclose(k.sum(1), 1.0, rtol=RTOL_EXACT)


def test_one_step_is_the_product_of_marginals():
    L = 4
    q = joint_table(NG, L)
    marg = [q.sum(axis=tuple(k for k in range(L) if k != j)) for j in range(L)]
    prod = marg[0]
    for m in marg[1:]:
        prod = np.multiply.outer(prod, m)
    m1 = uniform_noise_metrics(NG, L, make_schedule("linear", 1))
    np.testing.assert_allclose(uniform_noise_output_law(NG, L, make_schedule("linear", 1)).p, prod, rtol=RTOL_EXACT)
    # one step: the path is (uniform canvas, x_0), so the path KL is the KL itself
    assert uniform_noise_path_kl(NG, L, make_schedule("linear", 1)) == pytest.approx(m1.kl.value, rel=RTOL_EXACT)


def test_path_kl_bounds_the_kl_and_more_steps_help():
    L = 4
    kls, paths, sers = [], [], []
    for N in (2, 4, 8, 16):
        s = make_schedule("linear", N)
        m = uniform_noise_metrics(NG, L, s)
        kls.append(m.kl.value)
        sers.append(m.ser.value)
        paths.append(uniform_noise_path_kl(NG, L, s))
    assert all(p > k for p, k in zip(paths, kls))  # data processing, strict here
    assert np.all(np.diff(kls) < 0) and np.all(np.diff(sers) < 0) and np.all(np.diff(paths) < 0)


def test_monte_carlo_against_the_exact_law():
    L, n = 3, 20000
    s = make_schedule("linear", 4)
    law = uniform_noise_output_law(NG, L, s)
    out = sample_uniform_noise(NG, s, n, L, np.random.default_rng(1))
    assert out.calls == 4
    counts, probs = law_bins(out.tokens, law.q, law.p, 0.0)
    assert_gof(counts, probs, "uniform-noise samples")
    terms = path_kl_terms(NG, s, n, L, np.random.default_rng(2))
    assert within_z(terms.mean(), uniform_noise_path_kl(NG, L, s), terms.std(ddof=1) / math.sqrt(n))


def test_interval_law_is_the_product_over_intervals():
    """Intervals are independent under q, the noise and the oracle: the law at L = 2 l is the square."""
    lang = IntervalLanguage(2)
    s = make_schedule("cosine", 3)
    one = uniform_noise_output_law(lang, 2, s).p
    two = uniform_noise_output_law(lang, 4, s).p
    np.testing.assert_allclose(two, np.multiply.outer(one, one), rtol=RTOL_EXACT, atol=ATOL_PROB)
    s1, ser4 = interval_uniform_ser(2, s, 4)
    assert uniform_noise_metrics(lang, 4, s).ser.value == pytest.approx(ser4, rel=RTOL_EXACT)
    assert s1 == pytest.approx(uniform_noise_metrics(lang, 2, s).ser.value, rel=RTOL_EXACT)


def _steps_for_half_ser(L, l=3):
    lo, hi = 1, 4 * L
    while lo < hi:
        mid = (lo + hi) // 2
        if interval_uniform_ser(l, make_schedule("linear", mid), L)[1] <= 0.5:
            hi = mid
        else:
            lo = mid + 1
    return lo


def test_finding_theorem_4_4_carries_over_to_uniform_noise():
    """FINDING. Under uniform noise with the oracle, the interval language (l = 3) still needs a number of
    steps linear in L: the one-interval SER s(N) is exactly > 0 at every N and N s(N) tends to a constant
    (about 1.2 on the linear schedule), so SER(L) = 1 - (1 - s)^(L/3) -> 1 at any fixed N, and the fewest
    steps with SER <= 1/2 grows like 0.6 L (exact: 21 at L = 30, 40 at 60, 75 at 120)."""
    ns = [64, 128, 256]
    s = [interval_uniform_ser(3, make_schedule("linear", N))[0] for N in ns]
    scaled = [N * v for N, v in zip(ns, s)]
    assert all(v > 0 for v in s) and 1.1 < min(scaled) and max(scaled) < 1.35
    assert abs(scaled[2] - scaled[1]) < abs(scaled[1] - scaled[0])  # converging
    assert interval_uniform_ser(3, make_schedule("linear", 64), 3 * 1000)[1] > 0.999  # fixed N, growing L
    need = [_steps_for_half_ser(L) for L in (30, 60, 120)]
    assert need == [21, 40, 75]
    ratios = [n / L for n, L in zip(need, (30, 60, 120))]
    assert 0.55 < ratios[-1] < ratios[0] < 0.75  # linear in L, the ratio settling near 1.2 / (3 ln 2) = 0.59


def test_finding_theorem_4_2_carries_over_to_uniform_noise():
    """FINDING. On a 2-gram, the exact per-token KL at a fixed number of steps stays bounded as L grows:
    KL(L) is affine in L up to a geometric remainder (its increments converge), so a per-token TER gap
    is reached with a number of steps independent of L, as Theorem 4.2 says for masking; it falls
    roughly like N^-2 (0.0125 at N = 4, 0.00075 at N = 16 per token at L = 9)."""
    lang = NGram(2, np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.3, 0.7]]))
    per_token = {}
    for N in (4, 16):
        s = make_schedule("linear", N)
        kl = np.array([uniform_noise_metrics(lang, L, s).kl.value for L in range(5, 10)])
        inc = np.diff(kl)
        assert np.all(np.abs(np.diff(inc)) < 0.05 * inc[-1])  # increments converge: KL(L) ~ a + b L
        assert kl[-1] / 9 < inc[-1] * 1.01  # per token below the limiting increment: bounded in L
        per_token[N] = kl[-1] / 9
    assert 10 < per_token[4] / per_token[16] < 25  # about N^-2
