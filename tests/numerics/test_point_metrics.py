"""numerics.metrics.point_metrics: every field an estimate or unavailable with its reason, the
closed forms found from the language object (preset or file), labels that do not mislead."""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.estimate import Estimate, Unavailable
from numerics.exact.output_law import OutputLaw, law_metrics, nonnegative_kl
from numerics.languages.hmm import load_language_file
from numerics.languages.interval import IntervalLanguage
from numerics.languages.presets import load_language
from numerics.metrics import PointMetrics, point_metrics
from numerics.provenance import to_jsonable
from numerics.sampling.adaptive import make_sampler
from numerics.schedules import make_schedule
from numerics.tolerances import KL_ROUNDOFF_RTOL
from tests.tolerances import RTOL_EXACT


def _check_fields(m: PointMetrics) -> None:
    for name, value in m.metrics().items():
        assert isinstance(value, (Estimate, Unavailable)), name
        if isinstance(value, Unavailable):
            assert value.reason and to_jsonable(value)["null_reason"]["value"] == value.reason, name


@pytest.mark.parametrize("case", ["closed-form", "dp", "mc", "rule-dp", "rule-mc"])
def test_every_field_is_an_estimate_or_unavailable_with_its_reason(case):
    lin = make_schedule("linear", 3)
    m = {
        "closed-form": lambda: point_metrics(load_language("interval-l3"), 6, lin),
        "dp": lambda: point_metrics(load_language("2gram"), 3, lin),
        "mc": lambda: point_metrics(load_language("2gram"), 12, lin, samples=20, rng=1,
                                    ser_language=load_language("2gram-pruned")),
        "rule-dp": lambda: point_metrics(load_language("2gram"), 3, make_sampler("threshold", gamma=0.5)),
        "rule-mc": lambda: point_metrics(load_language("2gram"), 12, make_sampler("threshold", gamma=0.5),
                                         method="mc", samples=20, rng=1),
    }[case]()
    _check_fields(m)
    assert m.how.method == {"closed-form": "closed-form", "dp": "dp", "mc": "mc", "rule-dp": "dp", "rule-mc": "mc"}[case]
    assert (m.how.tie_seed == 0) == case.startswith("rule")  # the random-order sampler has no ties: None
    if case == "mc":  # the mixture's KL needs the exact law: said so, never replaced by the Jensen bound
        assert isinstance(m.kl, Unavailable) and m.kl_jensen_bound.exact and m.how.ser_choice is not None


def test_a_rule_gives_the_same_kl_by_two_formulas_and_the_seeded_tie_order():
    lang = load_language("2gram")
    m = point_metrics(lang, 3, make_sampler("topk", schedule=make_schedule("linear", 2)))
    assert m.kl.value == pytest.approx(m.kl_chain_rule.value, rel=RTOL_EXACT)
    tied = IntervalLanguage(2)  # uniform marginals: every step is a tie, decided by the tie seed
    a = point_metrics(tied, 4, make_sampler("topk", schedule=make_schedule("linear", 2), tie_seed=0))
    b = point_metrics(tied, 4, make_sampler("topk", schedule=make_schedule("linear", 2), tie_seed=5))
    assert (a.how.tie_seed, b.how.tie_seed) == (0, 5)


@pytest.mark.parametrize("name, L, N", [("interval", 40, 16), ("interval-l3", 9, 4), ("2gram", 3, 2), ("hmm", 3, 2)])
def test_a_language_from_a_file_gets_the_closed_forms_of_its_preset(tmp_path, name, L, N):
    """Issue 18: the interval language given as an .npz got Monte Carlo; its structure travels with the file."""
    preset = load_language(name)
    path = tmp_path / f"{name}.npz"
    preset.save(path)
    loaded = load_language(str(path))
    assert type(loaded) is type(preset) and loaded.kind == preset.kind
    schedule = make_schedule("linear", N)
    a, b = point_metrics(preset, L, schedule), point_metrics(loaded, L, schedule)
    assert a.how.method == b.how.method == ("closed-form" if name.startswith("interval") else "dp")
    for field, x in a.metrics().items():
        y = getattr(b, field)
        assert type(x) is type(y), field
        if isinstance(x, Estimate):
            assert x.method == y.method and (x.value == y.value or x.value == pytest.approx(y.value, rel=RTOL_EXACT))


def test_an_interval_file_loads_as_the_interval_language(tmp_path):
    IntervalLanguage(4).save(tmp_path / "i.npz")
    assert load_language_file(tmp_path / "i.npz") == IntervalLanguage(4)
    np.savez(tmp_path / "bad.npz", interval_l=np.array([4, 5]))
    with pytest.raises(ValueError, match="interval_l .* must be one integer"):
        load_language_file(tmp_path / "bad.npz")
    np.savez(tmp_path / "big.npz", interval_l=np.int64(9))
    with pytest.raises(ValueError, match="interval length l must be an integer in 2..7"):
        load_language_file(tmp_path / "big.npz")


def test_an_exact_kl_of_round_off_size_is_reported_as_zero():
    """A one-token-per-step rule has p = q: its KL summed in float64 came out at -2.2e-16 (2-gram, L = 3)."""
    lang = load_language("2gram")
    m = point_metrics(lang, 3, make_sampler("topk", schedule=make_schedule("linear", 3)))
    assert m.kl.value == 0.0 and m.kl_chain_rule.value == 0.0 and m.ser_kl_certificate.value == 0.0
    assert nonnegative_kl(-2.2e-16, 10.0) == 0.0 and nonnegative_kl(0.25) == 0.25
    assert math.copysign(1.0, nonnegative_kl(-0.0)) == 1.0


def test_a_negative_kl_beyond_round_off_raises():
    tol = KL_ROUNDOFF_RTOL * 10.0
    with pytest.raises(ValueError, match="beyond round-off"):
        nonnegative_kl(-10 * tol, 10.0)
    q = np.array([0.5, 0.5])
    law = OutputLaw(q, 2 * q, 0.0, "test", "none")  # p of total mass 2: KL = -log 2
    with pytest.raises(ValueError, match="not normalized"):
        law_metrics(law)


def test_monte_carlo_terms_that_agree_to_round_off_get_standard_error_zero():
    """The chain-rule terms of a one-token-per-step rule are 0 up to 1e-16: reported as agreeing, not as +- 1e-18."""
    lang = load_language("2gram")
    m = point_metrics(lang, 8, make_sampler("topk", schedule=make_schedule("linear", 8)), method="mc", samples=30,
                      rng=3)
    assert m.kl.stderr == 0.0 and m.kl.value == 0.0 and not m.kl.exact
    record = to_jsonable(m.kl)
    assert record["stderr"] is None and "samples gave the same value" in record["null_reason"]["stderr"]
    varied = point_metrics(lang, 8, make_sampler("topk", schedule=make_schedule("linear", 2)), method="mc",
                           samples=30, rng=3)
    assert varied.kl.stderr > 0  # terms that differ keep their standard error


def test_the_streams_come_from_a_seed_or_a_generator_and_are_reproducible():
    lang, schedule = load_language("2gram"), make_schedule("linear", 3)

    def run(rng):
        return point_metrics(lang, 12, schedule, method="mc", samples=20, rng=rng)

    a, b = run(np.random.default_rng(4)), run(np.random.default_rng(4))
    assert a.ser == b.ser and a.gen_ppl == b.gen_ppl and a.gen_ppl_data == b.gen_ppl_data
    assert run(4).gen_ppl == run(4).gen_ppl and run(4).gen_ppl != run(5).gen_ppl
    with pytest.raises(ValueError, match="seed >= 0"):
        run(-1)
