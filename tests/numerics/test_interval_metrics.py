"""The interval language's closed forms (KL, TER, SER, gen. perplexity, Jensen bound) against
enumeration of every instance and against the DP, on tiny cases."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.exact.dp import dp_metrics
from numerics.exact.enumerate import enumerate_metrics
from numerics.exact.information_curve import (
    information_curve_table,
    jensen_bound_from_curve,
)
from numerics.exact.interval import interval_ser
from numerics.exact.interval_metrics import (
    interval_jensen_bound,
    interval_metrics,
    interval_pairs,
)
from numerics.languages.interval import IntervalLanguage
from numerics.schedules import cosine, linear
from tests.strategies import schedules
from tests.tolerances import ATOL_ZERO, RTOL_EXACT

FIELDS = ("kl", "log_ter_gap", "ter", "ter_data", "ser", "ser_kl_certificate", "gen_ppl", "gen_ppl_data",
          "kl_jensen_bound")


def _same(a: float, b: float) -> None:
    assert a == b if math.isinf(a) or math.isinf(b) else a == pytest.approx(b, rel=RTOL_EXACT, abs=ATOL_ZERO)


@pytest.mark.parametrize("l, length, schedule", [
    (2, 2, linear(2)), (2, 4, linear(3)), (2, 4, cosine(2)), (3, 3, linear(3)), (3, 6, linear(2)), (4, 4, cosine(3)),
])
def test_closed_form_equals_enumeration_and_dp(l, length, schedule):
    hmm = IntervalLanguage(l).minimal_hmm().to_hmm()
    closed = interval_metrics(schedule, length, l)
    for brute in (enumerate_metrics(hmm, length, schedule), dp_metrics(hmm, length, schedule)):
        for field in FIELDS:
            _same(getattr(closed, field).value, getattr(brute, field).value)
    assert closed.ser.value == pytest.approx(interval_ser(schedule, length, l).probability, rel=RTOL_EXACT)
    assert closed.ser_kl_certificate.value == pytest.approx(closed.ser.value, rel=RTOL_EXACT)  # tight here


@settings(max_examples=15)
@given(schedule=schedules(max_steps=4), l=st.integers(2, 3), extra=st.integers(0, 2))
def test_jensen_bound_equals_the_information_curve_for_any_length(schedule, l, extra):
    """The Jensen bound holds for a partial last interval too; independent method: the exact information curve."""
    length = l + extra
    hmm = IntervalLanguage(l).minimal_hmm().to_hmm()
    expected = jensen_bound_from_curve(information_curve_table(hmm, length), schedule)
    closed = interval_jensen_bound(schedule, length, l)
    assert closed.total.value == pytest.approx(expected.total.value, rel=RTOL_EXACT, abs=ATOL_ZERO)
    assert closed.per_step == pytest.approx(expected.per_step, rel=RTOL_EXACT, abs=ATOL_ZERO)


def test_pairs_and_bad_input():
    assert interval_pairs(10, 5) == 20 and interval_pairs(7, 5) == 10 + 1 and interval_pairs(1, 3) == 0
    with pytest.raises(ValueError, match="not a multiple"):
        interval_metrics(linear(4), 7, 5)
    with pytest.raises(ValueError, match="length must be"):
        interval_pairs(0, 5)
