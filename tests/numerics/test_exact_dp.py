"""The dynamic program over revealed words equals the brute-force enumeration of step assignments."""

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.exact.dp import MAX_DP_WORDS, dp_metrics, dp_output_law
from numerics.exact.enumerate import enumerate_metrics, enumerate_output_law
from numerics.exact.output_law import law_metrics
from numerics.languages.generators import random_hmm
from numerics.languages.hmm import HMM
from numerics.schedules import cosine, linear
from tests._exact_helpers import assume_representable
from tests.strategies import schedules, small_hmms, small_ngrams
from tests.tolerances import ATOL_METRIC, ATOL_ZERO, RTOL_EXACT


def _assert_same_law(a, b):
    np.testing.assert_allclose(a.p, b.p, rtol=RTOL_EXACT, atol=ATOL_ZERO)
    assert a.undefined_mass == pytest.approx(b.undefined_mass, rel=RTOL_EXACT, abs=ATOL_ZERO)


@given(
    lang=st.one_of(small_hmms(max_states=3, max_vocab=3), small_ngrams(max_order=3, max_vocab=2)),
    schedule=schedules(max_steps=4),
    length=st.integers(1, 4),
)
def test_dp_equals_enumeration(lang, schedule, length):
    assume_representable(lang, length)
    enum = enumerate_output_law(lang, length, schedule)
    dp = dp_output_law(lang, length, schedule)
    _assert_same_law(dp, enum.law)
    m_dp, m_en = law_metrics(dp), law_metrics(enum.law)
    for name in ("kl", "ser", "ter", "gen_ppl"):
        a, b = getattr(m_dp, name).value, getattr(m_en, name).value
        assert a == pytest.approx(b, rel=RTOL_EXACT, abs=ATOL_METRIC), name
    # SER certificate (docs/methods/exact.md) on every exact case
    assert m_dp.ser.value <= m_dp.ser_kl_certificate.value + ATOL_ZERO
    assert m_dp.kl.method == "dp"


def test_compiled_kernel_equals_its_python_run():
    rng = np.random.default_rng(3)
    hmm = random_hmm(3, 2, 1.0, seed=rng)
    q = np.zeros((2, 2, 2))
    q[0, 0, 0] = q[1, 1, 1] = 0.5  # exercises the undefined branches
    for lang, L in ((hmm, 4), (q, None)):
        for schedule in (linear(1), cosine(3)):
            _assert_same_law(dp_output_law(lang, L, schedule), dp_output_law(lang, L, schedule, compiled=False))


def test_thread_split_does_not_change_the_law():
    rng = np.random.default_rng(6)
    hmm = random_hmm(3, 3, 1.0, seed=rng)
    one = dp_output_law(hmm, 5, cosine(4), threads=1)
    for threads in (2, 3):
        _assert_same_law(dp_output_law(hmm, 5, cosine(4), threads=threads), one)
    with pytest.raises(ValueError, match="threads"):
        dp_output_law(hmm, 5, cosine(4), threads=0)


def test_hand_fixture_undefined_mass():
    # q uniform on {000, 111}, N = 2 linear: derivation in test_exact_enumerate.py
    q = np.zeros((2, 2, 2))
    q[0, 0, 0] = q[1, 1, 1] = 0.5
    law = dp_output_law(q, None, linear(2))
    assert law.undefined_mass == pytest.approx(3 / 16, rel=RTOL_EXACT)
    assert law.p[0, 0, 0] == pytest.approx(10 / 32, rel=RTOL_EXACT)


def test_dp_metrics_carry_the_jensen_bound_of_the_enumeration():
    rng = np.random.default_rng(4)
    hmm = random_hmm(3, 2, 1.0, seed=rng)
    schedule = cosine(3)
    a, b = dp_metrics(hmm, 5, schedule), enumerate_metrics(hmm, 5, schedule)
    assert a.kl_jensen_bound.value == pytest.approx(b.kl_jensen_bound.value, rel=RTOL_EXACT)
    assert a.kl_jensen_bound.method == "information-curve-table"
    assert a.kl.value <= a.kl_jensen_bound.value


@pytest.mark.slow
def test_reaches_length_ten_in_seconds():
    rng = np.random.default_rng(5)
    hmm = random_hmm(4, 2, 1.0, seed=rng)
    start = time.perf_counter()
    law = dp_output_law(hmm, 10, linear(6))
    elapsed = time.perf_counter() - start
    assert law.p.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
    m = law_metrics(law)
    assert 0 < m.kl.value < math.inf and m.ser.value == 0.0
    assert elapsed < 30.0  # about 1 s on one idle core; generous for a loaded CI machine


def test_refuses_too_large():
    hmm = HMM(np.ones(1), np.ones((1, 1)), np.full((1, 3), 1 / 3))
    L = int(math.log(MAX_DP_WORDS, 4)) + 1
    with pytest.raises(ValueError, match="MAX_DP_WORDS"):
        dp_output_law(hmm, L, linear(2))


@given(
    lang=st.one_of(small_hmms(max_states=3, max_vocab=2), small_ngrams(max_order=3, max_vocab=2)),
    schedule=schedules(max_steps=3),
)
def test_uniform_convention_for_undefined_branches(lang, schedule):
    """The sampler's convention (undefined posterior -> uniform tokens): same in both methods, sums to 1,
    same metrics as the default convention."""
    L = 3
    assume_representable(lang, L)
    dp = dp_output_law(lang, L, schedule, undefined="uniform")
    enum = enumerate_output_law(lang, L, schedule, undefined="uniform").law
    _assert_same_law(dp, enum)
    assert dp.p.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
    dropped = dp_output_law(lang, L, schedule)
    np.testing.assert_array_equal(dp.p[dp.q > 0], dropped.p[dropped.q > 0])
    assert law_metrics(dp).ser.value == pytest.approx(law_metrics(dropped).ser.value, rel=RTOL_EXACT, abs=ATOL_ZERO)
