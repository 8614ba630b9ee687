"""The decoders in :func:`numerics.metrics.point_metrics` (its ``decoder`` kind) and the divergences' round-off.

* Exact: ``point_metrics(method="dp")`` equals the independent enumeration of
  :mod:`numerics.exact.decoders` at ``RTOL_EXACT`` for every metric the law gives (forward and
  reverse KL, TV, SER, generative perplexity, calls), on a language with zeros and a full-support one.
* Monte Carlo: on a full-support language where ``auto`` would be exact, the ``mc`` point of a
  path-deterministic decoder (``eb``) is within ``Z_BOUND`` standard errors of the exact value for
  forward KL, reverse KL and calls; an adaptive rule's reverse KL by Monte Carlo
  (:func:`numerics.metrics.reverse_kl_adaptive_mc`) likewise (tests/gof.py budget: 4 assertions,
  5 with ReMDM-loop's chi-squared); a draw-dependent decoder's reverse KL is unavailable with the reason.
* ReMDM-loop: its ``alpha`` grid and ``(sigma, reveal)`` by hand, DP vs enumeration, sampler vs exact law.
* Every exact law now carries reverse KL, TV and calls through point_metrics (random order, a rule).
* TV of a law equal to ``q`` up to round-off is reported as 0; a negative TV is an error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.estimate import Unavailable
from numerics.exact.decoders import decoder_exact
from numerics.exact.divergences import TV_ROUNDOFF_ATOL, nonnegative_tv
from numerics.languages.hmm import NGram
from numerics.metrics import point_metrics
from numerics.sampling.adaptive import make_sampler
from numerics.sampling.decoders import EntropyBound, Llada, Remdm
from numerics.schedules import make_schedule
from tests.decoder_cases import decoders_at
from tests.gof import within_z
from tests.tolerances import RTOL_EXACT

# one xdist worker compiles these numba kernels once for the group (pytest runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("decoder-kernels")

PRUNED = NGram(2, [0.6, 0.4], [[0.7, 0.3], [0.0, 1.0]])  # x = 1 0 impossible: SER > 0, reverse KL inf
FULL = NGram(2, [0.5, 0.3, 0.2], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])

#: (language, L, decoder): the shared table's "metrics" rows (tests/decoder_cases.py) on the language with
#: zeros at L = 4, and its "full" rows on a full-support one at L = 3 (V = 3: the enumeration of every draw is
#: the slow side)
CASES = [(PRUNED, 4, d) for d in decoders_at(4, "metrics")] + [(FULL, 3, d) for d in decoders_at(3, "full")]


def _same(a, b) -> None:
    if math.isinf(b):
        assert a == b
    else:
        assert a == pytest.approx(b, rel=RTOL_EXACT, abs=1e-15)


@pytest.mark.parametrize("language, L, decoder", CASES, ids=[f"V{c[0].vocab_size}-{c[2].label}" for c in CASES])
def test_point_metrics_equals_the_enumerated_law(language, L, decoder):
    m = point_metrics(language, L, decoder, method="dp")
    ref = decoder_exact(language, L, decoder, "enumerate")
    assert m.how.method == "dp" and m.how.parameters == decoder.parameters()
    assert m.how.tie_seed == decoder.tie_seed
    for name, want in [("kl", ref.metrics.kl), ("ser", ref.metrics.ser), ("gen_ppl", ref.metrics.gen_ppl),
                       ("ter", ref.metrics.ter), ("reverse_kl", ref.divergences.reverse_kl),
                       ("tv", ref.divergences.tv), ("calls", ref.expected_calls)]:
        got = getattr(m, name)
        assert got.stderr == 0.0 and got.samples == 0, name
        _same(got.value, want.value)
    assert isinstance(m.nfe, Unavailable) and "calls" in m.nfe.reason


def test_mc_point_of_a_path_deterministic_decoder_covers_the_exact_values():
    decoder = EntropyBound(gamma=1.0, temperature=1.0)  # selection by entropy: one reveal path per output
    exact = point_metrics(FULL, 4, decoder, method="dp")
    mc = point_metrics(FULL, 4, decoder, method="mc", samples=3000, rng=11)
    assert exact.reverse_kl.value > 0.05 and exact.kl.value > 0.05  # a biased law (0.059, 0.054): the check has an effect
    for name in ("kl", "reverse_kl", "calls"):
        e, x = getattr(mc, name), getattr(exact, name)
        assert e.samples == 3000 and e.stderr > 0, name
        assert within_z(e.value, x.value, e.stderr), (name, e, x.value)
    assert isinstance(mc.tv, Unavailable) and "exact law" in mc.tv.reason


def test_mc_reverse_kl_of_a_mixture_decoder_is_unavailable_with_the_reason():
    m = point_metrics(FULL, 6, Llada(steps=3), method="mc", samples=20, rng=0)
    assert isinstance(m.reverse_kl, Unavailable) and "mixture" in m.reverse_kl.reason
    assert isinstance(m.kl, Unavailable) and m.calls.value == 3


def test_every_exact_law_carries_reverse_kl_tv_and_calls():
    rnd = point_metrics(PRUNED, 4, make_schedule("linear", 2), method="dp")
    assert rnd.reverse_kl.value == math.inf and rnd.tv.value >= rnd.ser.value > 0
    assert rnd.calls.value == pytest.approx(make_schedule("linear", 2).expected_nfe(4, batch=1), rel=RTOL_EXACT)
    enum = point_metrics(PRUNED, 4, make_schedule("linear", 2), method="enumerate")
    assert enum.tv.value == pytest.approx(rnd.tv.value, rel=RTOL_EXACT)
    rule = point_metrics(FULL, 3, make_sampler("threshold", gamma=0.5), method="dp")
    rule_enum = point_metrics(FULL, 3, make_sampler("threshold", gamma=0.5), method="enumerate")
    assert rule.reverse_kl.value == pytest.approx(rule_enum.reverse_kl.value, rel=RTOL_EXACT, abs=1e-15)
    assert rule.calls.value == rule.nfe.value


def test_reverse_kl_of_a_rule_by_monte_carlo_covers_the_exact_value():
    from numerics.metrics import reverse_kl_adaptive_mc
    from numerics.sampling.denoiser import OracleDenoiser

    rule = make_sampler("topk", schedule=make_schedule("linear", 2))  # two positions per call: biased, 0.181
    exact = point_metrics(FULL, 4, rule, method="dp").reverse_kl
    run = rule.sample(OracleDenoiser(FULL, strict=False), 2000, 4, np.random.default_rng(1))
    e = reverse_kl_adaptive_mc(FULL, rule, run.tokens)
    assert exact.value > 0.1 and e.samples == 2000 and e.stderr > 0
    assert within_z(e.value, exact.value, e.stderr)
    mc = point_metrics(FULL, 6, rule, method="mc", samples=20, rng=0)
    assert isinstance(mc.reverse_kl, Unavailable) and "reverse_kl_adaptive_mc" in mc.reverse_kl.reason


def test_tv_round_off_is_zero_and_a_negative_tv_an_error():
    exact_q = decoder_exact(FULL, 3, Llada(steps=3, remasking="random"), "dp")  # one token per call: p = q
    assert exact_q.divergences.tv.value == 0.0
    assert np.max(np.abs(exact_q.law.p - exact_q.law.q)) > 0  # the float64 laws differ by round-off
    assert nonnegative_tv(TV_ROUNDOFF_ATOL * 10) == TV_ROUNDOFF_ATOL * 10
    with pytest.raises(ValueError, match="never negative"):
        nonnegative_tv(-1e-20)


# ----- ReMDM-loop ------------------------------------------------------------------------------------


def test_remdm_loop_alphas_and_probabilities_by_hand():
    # N = 20: t_i = 1 - i/20; alpha rises to 0.9 at t = 0.55 (i = 9), is held to t = 0.05 (i = 19), then 1
    d = Remdm(schedule=make_schedule("linear", 20), variant="loop", eta=0.05)
    a = d.loop_alphas()
    np.testing.assert_allclose(a[:10], 0.9 * np.arange(10) / 9, rtol=RTOL_EXACT)
    assert np.all(a[9:20] == 0.9) and a[20] == 1.0
    sigma, reveal = d.probabilities()
    held = np.arange(20) >= 9  # steps 10..19 go from a held alpha to a held alpha
    held[19] = False
    np.testing.assert_array_equal(sigma, np.where(held, 0.05, 0.0))
    np.testing.assert_allclose(reveal[held], 0.05 * 0.9 / 0.1, rtol=RTOL_EXACT)  # sigma alpha / (1 - alpha)
    capped = Remdm(schedule=make_schedule("linear", 20), variant="loop", eta=0.5).probabilities()[0]
    np.testing.assert_allclose(capped[held], 0.1 / 0.9, rtol=RTOL_EXACT)  # sigma_max = (1 - alpha) / alpha
    assert reveal[-1] == 1.0 and d.parameters()["alpha_on"] == 0.9


@pytest.mark.parametrize("steps, eta", [(5, 0.1), (8, 0.11)])
def test_remdm_loop_dp_matches_enumeration_and_remasks(steps, eta):
    d = Remdm(schedule=make_schedule("linear", steps), variant="loop", eta=eta)
    a = decoder_exact(PRUNED, 4, d, "dp")
    b = decoder_exact(PRUNED, 4, d, "enumerate")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=1e-15)
    assert a.divergences.tv.value == pytest.approx(b.divergences.tv.value, rel=RTOL_EXACT)
    plain = decoder_exact(PRUNED, 4, Remdm(schedule=make_schedule("linear", steps), variant="loop", eta=0.0), "dp")
    assert np.max(np.abs(a.law.p - plain.law.p)) > 1e-3  # the loop's remasking moves the law


def test_remdm_loop_sampler_follows_the_exact_law():
    from numerics.sampling.denoiser import OracleDenoiser
    from tests.gof import assert_gof

    L, V, n = 4, 2, 4000
    d = Remdm(schedule=make_schedule("linear", 8), variant="loop", eta=0.11)
    p = decoder_exact(PRUNED, L, d, "dp").law.p
    run = d.sample(OracleDenoiser(PRUNED, strict=False), n, L, np.random.default_rng(3), batch_size=1000)
    counts = np.bincount(np.ravel_multi_index(run.tokens.T, (V,) * L), minlength=V**L)
    assert_gof(counts, p.ravel(), d.label)
