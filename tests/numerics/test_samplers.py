"""The factorized samplers against independent oracles.

* The empirical law of the sampler against the exact output law ``p`` of part B's brute-force
  enumeration (chi-squared goodness of fit), and a hand-derived one-step case.
* The fast oracle path against the generic path (same random stream): identical samples, which
  implies equality in law; plus the chain-rule check of the scoring kernel against the forward pass.
* The AR limit (one position per step): SER 0 and exactly the data law.
* Realized network calls against the ``ddpm_cache`` formula and against a counting denoiser.

Statistical tests go through :mod:`tests.gof` (one chi-squared test, one suite-wide false-failure
budget, "underpowered" raised instead of a pass); the seeds are fixed.
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.draws import draw_inverse_cdf
from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.joint_table import joint_table
from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.generators import random_rows
from numerics.languages.hmm import HMM, NGram
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.oracle import reveal_score
from numerics.sampling.samplers import (
    sample_factorized,
    sample_one_at_a_time,
    sample_oracle,
)
from numerics.schedules import from_u, linear
from tests.gof import assert_gof, law_bins, within_z
from tests.tolerances import RTOL_EXACT


def _languages():
    rng = np.random.default_rng(7)
    return {
        "2gram": NGram(2, random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3)),
        "3gram": NGram(3, random_rows(rng, (4,)), random_rows(rng, (4, 2), zero_fraction=0.25)),
        "4gram": NGram(4, random_rows(rng, (8,)), random_rows(rng, (8, 2), zero_fraction=0.2)),
        "hmm": HMM(random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3), random_rows(rng, (3, 3), zero_fraction=0.3)),
    }


LANGS = _languages()


def test_one_step_sampler_hand_law():
    """N = 1: every position from its unconditional marginal, so p = q_1 x q_2 (derived by hand).

    The chain x_1 ~ (1/2, 1/2), P = [[0, 1], [1/2, 1/2]] has q = [[0, 1/2], [1/4, 1/4]],
    marginals q_1 = (1/2, 1/2), q_2 = (1/4, 3/4): p = [[1/8, 3/8], [1/8, 3/8]], SER = p(0,0) = 1/8.
    """
    chain = NGram(2, np.array([0.5, 0.5]), np.array([[0.0, 1.0], [0.5, 0.5]]))
    res = sample_oracle(chain, linear(1), 40_000, 2, np.random.default_rng(0))
    idx = res.tokens[:, 0] * 2 + res.tokens[:, 1]
    counts = np.bincount(idx, minlength=4)
    assert_gof(counts, np.array([1, 3, 1, 3]) / 8)
    exact = enumerate_output_law(chain, 2, linear(1)).law
    np.testing.assert_allclose(exact.p.ravel(), np.array([1, 3, 1, 3]) / 8, rtol=1e-12)
    assert exact.undefined_mass == 0.0


@pytest.mark.parametrize("name,L,N", [("2gram", 3, 2), ("3gram", 4, 3), ("4gram", 4, 2), ("hmm", 3, 3)])
def test_fast_sampler_law_matches_enumeration(name, L, N):
    lang = LANGS[name]
    schedule = from_u(np.cumsum(np.r_[0.0, np.arange(1, N + 1)]) / (N * (N + 1) / 2), "ramp")  # unequal pi
    exact = enumerate_output_law(lang, L, schedule).law
    res = sample_oracle(lang, schedule, 30_000, L, np.random.default_rng(1))
    counts, probs = law_bins(res.tokens, exact.q, exact.p, exact.undefined_mass)
    assert_gof(counts, probs)


def test_generic_sampler_law_matches_enumeration():
    """The generic loop with the NumPy-reference oracle (no compiled code) on a pruned 2-gram."""
    lang, L, schedule = LANGS["2gram"], 3, linear(2)
    exact = enumerate_output_law(lang, L, schedule).law
    den = OracleDenoiser(lang, backend="numpy", strict=False)
    res = sample_factorized(den, schedule, 3000, L, np.random.default_rng(2), path="generic")
    assert res.path == "generic"
    counts, probs = law_bins(res.tokens, exact.q, exact.p, exact.undefined_mass)
    assert_gof(counts, probs)


@pytest.mark.parametrize("name", sorted(LANGS))
@pytest.mark.parametrize("N", [1, 3, 9, 60])
def test_fast_path_equals_generic_path_sample_by_sample(name, N):
    """Same random stream, same inverse-CDF draws: the two paths give the same samples.

    A mismatch could only come from a uniform within float64 round-off (~1e-15) of a CDF
    boundary: probability ~1e-12 over these draws. Pruned languages make some sequences leave
    the support (exercising the undefined-posterior convention of both paths).
    """
    lang = LANGS[name]
    L, n = 9, 150
    den = OracleDenoiser(lang, strict=False)
    a = sample_factorized(den, linear(N), n, L, np.random.default_rng(3), path="generic", batch_size=50)
    b = sample_factorized(den, linear(N), n, L, np.random.default_rng(3), batch_size=50)
    assert b.path.startswith("oracle")
    np.testing.assert_array_equal(a.reveal_steps, b.reveal_steps)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.nfe, b.nfe)


def test_pruned_case_leaves_support_and_paths_agree_there():
    """The equality above must cover sequences outside supp q (the dead-branch code)."""
    lang = LANGS["3gram"]
    den = OracleDenoiser(lang, strict=False)
    a = sample_factorized(den, linear(2), 300, 9, np.random.default_rng(4), path="generic")
    b = sample_oracle(lang, linear(2), 300, 9, np.random.default_rng(4))
    ll = masked_forward_backward(lang, a.tokens, np.zeros(a.tokens.shape, bool)).loglik
    assert 0 < np.count_nonzero(ll == -np.inf) < 300
    np.testing.assert_array_equal(a.tokens, b.tokens)


@pytest.mark.parametrize("name", sorted(LANGS))
def test_score_kernel_chain_rule_equals_forward_pass(name):
    """Along any reveal order the chain-rule factors multiply to q(x); the Jensen term skips single steps exactly."""
    lang = LANGS[name]
    rng = np.random.default_rng(5)
    x = lang.sample(200, 11, rng)
    steps = linear(4).sample_steps(rng, (200, 11))
    full = reveal_score(lang, steps, x, chain=True)
    ll = masked_forward_backward(lang, x, np.zeros(x.shape, bool), backend="numpy").loglik
    np.testing.assert_allclose(full.log_q, ll, rtol=RTOL_EXACT)
    np.testing.assert_allclose(full.log_q - full.log_p, full.jensen, rtol=1e-9, atol=1e-12)
    fast = reveal_score(lang, steps, x)
    np.testing.assert_allclose(fast.jensen, full.jensen, rtol=RTOL_EXACT, atol=1e-13)
    assert np.all(np.isnan(fast.log_p)) and np.all(np.isnan(fast.log_q))


@pytest.mark.parametrize("name", sorted(LANGS))
def test_one_at_a_time_has_ser_zero_and_the_data_law(name):
    lang = LANGS[name]
    L = 3
    q = joint_table(lang, L)
    res = sample_one_at_a_time(OracleDenoiser(lang), 20_000, L, np.random.default_rng(6))
    assert res.path == "one-at-a-time-oracle"
    assert np.all(np.sort(res.reveal_steps, axis=1) == np.arange(1, L + 1))  # one position per step
    counts = np.bincount(np.ravel_multi_index(res.tokens.T, q.shape), minlength=q.size)
    assert counts[q.ravel() == 0].sum() == 0  # SER exactly 0
    assert_gof(counts[q.ravel() > 0].astype(float), q.ravel()[q.ravel() > 0])


def test_one_at_a_time_generic_equals_fast():
    lang = LANGS["hmm"]
    a = sample_one_at_a_time(OracleDenoiser(lang, strict=False), 200, 7, np.random.default_rng(8), path="generic", batch_size=20)
    b = sample_one_at_a_time(OracleDenoiser(lang), 200, 7, np.random.default_rng(8), batch_size=20)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert np.all(a.nfe == 7) and np.all(b.nfe == 7)


class CountingDenoiser:
    """Context-free marginals ``probs`` at every position; counts its calls."""

    def __init__(self, probs):
        self.probs = np.asarray(probs, dtype=np.float64)
        self.vocab_size = self.probs.size
        self.calls = 0

    def __call__(self, tokens, mask):
        self.calls += 1
        return np.broadcast_to(self.probs, tokens.shape + (self.vocab_size,)).copy()


def test_realized_nfe_matches_formula_and_call_count():
    """Mean realized ddpm_cache NFE per batch vs 1 + sum_{i<N} (1 - (1 - pi_i)^(B L)).

    4000 batches; |mean - E| within the suite's normal-approximation bound (:func:`tests.gof.within_z`).
    """
    den = CountingDenoiser([0.5, 0.5])
    schedule = from_u([0.0, 0.05, 0.1, 0.3, 0.35, 0.9, 1.0], "uneven")
    B, L = 2, 3
    res = sample_factorized(den, schedule, 8000, L, np.random.default_rng(9), batch_size=B, path="generic")
    assert den.calls == res.nfe.sum()
    expected = schedule.expected_nfe(L, batch=B)
    se = res.nfe.std(ddof=1) / np.sqrt(res.nfe.size)
    assert within_z(res.nfe.mean(), expected, se)
    den.calls = 0
    res = sample_factorized(den, schedule, 10, L, np.random.default_rng(9), batch_size=5, cache=False, path="generic")
    assert den.calls == 12 and np.all(res.nfe == 6)


def test_oracle_nfe_is_the_ddpm_cache_count_of_its_steps():
    res = sample_oracle(LANGS["2gram"], linear(50), 300, 4, np.random.default_rng(10), batch_size=3)
    for b in range(res.nfe.size):
        s = res.reveal_steps[3 * b: 3 * b + 3]
        assert res.nfe[b] == 1 + len({int(i) for i in s.ravel() if i < 50})


def test_float32_gumbel_draw_has_the_right_law_at_few_steps():
    """MDLM's float32 Gumbel-max update: same law as the exact sampler when no weight is tiny.

    Context-free marginals (0.2, 0.3, 0.5): tokens i.i.d. whatever the steps; reveal steps i.i.d.
    from pi (the per-step reveal probability pi_i / (1 - u_{i-1}) composes to pi).
    """
    den = CountingDenoiser([0.2, 0.3, 0.5])
    schedule = linear(3)
    res = sample_factorized(den, schedule, 20_000, 2, np.random.default_rng(11), draw="float32", batch_size=1000)
    assert res.draw == "float32"
    tok = np.bincount(res.tokens.ravel(), minlength=3)
    assert_gof(tok.astype(float), np.array([0.2, 0.3, 0.5]))
    st = np.bincount(res.reveal_steps.ravel() - 1, minlength=3)
    assert_gof(st.astype(float), schedule.pi)


def test_draw_inverse_cdf_edges():
    p = np.array([[0.0, 0.5, 0.0, 0.5], [np.nan, 0, 0, 0], [0, 0, 0, 0], [1.0, 0.0, 0.0, 0.0]])
    u = np.array([0.5, 0.99, 0.0, 0.999999])
    np.testing.assert_array_equal(draw_inverse_cdf(p, u), [3, 3, 0, 0])  # undefined rows are uniform
    # zero-probability tokens are never drawn, whatever the uniform
    grid = np.linspace(0, 1, 1001, endpoint=False)
    d = draw_inverse_cdf(np.tile([0.0, 0.25, 0.0, 0.75, 0.0], (grid.size, 1)), grid)
    assert set(np.unique(d)) == {1, 3}
    with pytest.raises(ValueError, match="negative"):
        draw_inverse_cdf(np.array([[1.5, -0.5]]), np.array([0.3]))


def test_argument_errors():
    lang = LANGS["2gram"]
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="draw"):
        sample_factorized(OracleDenoiser(lang), linear(2), 2, 3, rng, draw="float16")
    with pytest.raises(ValueError, match="OracleDenoiser"):
        sample_factorized(CountingDenoiser([1.0, 0, 0]), linear(2), 2, 3, rng, path="oracle")
    with pytest.raises(ValueError, match="batch_size"):
        sample_factorized(OracleDenoiser(lang), linear(2), 2, 3, rng, batch_size=0)
    with pytest.raises(TypeError, match="Generator"):
        sample_oracle(lang, linear(2), 2, 3, 0)

    class Bad(CountingDenoiser):
        def __call__(self, tokens, mask):
            return np.ones(tokens.shape + (2,))

    with pytest.raises(ValueError, match=r"\(B, L, V\)"):
        sample_factorized(Bad([0.5, 0.2, 0.3]), linear(2), 2, 3, rng)


def test_steps_follow_pi_per_position():
    """Reveal steps i.i.d. from pi (the oracle path uses Schedule.sample_steps; chi-squared)."""
    schedule = from_u([0.0, 0.1, 0.15, 0.6, 1.0], "s")
    res = sample_oracle(LANGS["2gram"], schedule, 5000, 4, np.random.default_rng(12))
    for j in range(4):
        counts = np.bincount(res.reveal_steps[:, j] - 1, minlength=4).astype(float)
        assert_gof(counts, schedule.pi)
    pairs = np.bincount((res.reveal_steps[:, 0] - 1) * 4 + res.reveal_steps[:, 1] - 1, minlength=16).astype(float)
    assert_gof(pairs, np.outer(schedule.pi, schedule.pi).ravel())  # independent positions


@pytest.mark.parametrize("name", ["3gram", "4gram", "hmm"])
def test_fast_path_with_chained_powers_equals_generic(name, monkeypatch):
    """Long masked runs are crossed with powers P^m chained in chunks of M; force M tiny to exercise it."""
    from numerics.messages import powers

    S = LANGS[name].n_states
    monkeypatch.setattr(powers, "POWERS_BYTES", 3 * 2 * 8 * S * S)  # M = 2 (two layouts of the powers, both kinds)
    monkeypatch.setattr(powers, "POWERS_CACHE", powers.PowersCache())
    L = 14
    for N in (2, 5, 30):
        den = OracleDenoiser(LANGS[name], strict=False)
        a = sample_factorized(den, linear(N), 120, L, np.random.default_rng(13), path="generic")
        b = sample_oracle(LANGS[name], linear(N), 120, L, np.random.default_rng(13))
        np.testing.assert_array_equal(a.tokens, b.tokens)
        x = LANGS[name].sample(100, L, np.random.default_rng(14))
        steps = linear(N).sample_steps(np.random.default_rng(15), (100, L))
        ll = masked_forward_backward(LANGS[name], x, np.zeros(x.shape, bool)).loglik
        np.testing.assert_allclose(reveal_score(LANGS[name], steps, x, chain=True).log_q, ll, rtol=RTOL_EXACT)
    assert powers.language_powers(LANGS[name], L).max_power == 2


def _large_ngrams():
    """5-grams over 4 tokens: S = 256 windows, the size from which the n-gram crossings read only the windows the
    evidence allows, walks start from observed stops and the powers are stored as token blocks (CROSS_MIN_STATES)."""
    rng = np.random.default_rng(41)
    return {
        "full": NGram(5, random_rows(rng, (256,)), random_rows(rng, (256, 4))),
        "zeros": NGram(5, random_rows(rng, (256,)), random_rows(rng, (256, 4), zero_fraction=0.3)),
    }


LARGE = _large_ngrams()


@pytest.mark.parametrize("kind", sorted(LARGE))
@pytest.mark.parametrize("max_power", [None, 2])
def test_large_ngram_fast_path_equals_generic(kind, max_power, monkeypatch):
    """The large n-gram path (token blocks, walks from nothing, dot-form backward jumps; with ``max_power = 2``
    the chained ones too) samples the generic path's tokens and scores ``log q`` by the chain rule exactly."""
    from numerics.messages import powers

    lang = LARGE[kind]
    S = lang.n_states
    assert S >= powers.CROSS_MIN_STATES
    monkeypatch.setattr(powers, "POWERS_CACHE", powers.PowersCache())
    if max_power is not None:
        monkeypatch.setattr(powers, "POWERS_BYTES", (max_power + 1) * 8 * S * S)  # one layout: the blocks
    L = 24
    for N in (2, 6, 40):
        den = OracleDenoiser(lang, strict=False)
        a = sample_factorized(den, linear(N), 60, L, np.random.default_rng(43), path="generic")
        b = sample_oracle(lang, linear(N), 60, L, np.random.default_rng(43))
        np.testing.assert_array_equal(a.tokens, b.tokens)
        x = lang.sample(60, L, np.random.default_rng(44))
        steps = linear(N).sample_steps(np.random.default_rng(45), (60, L))
        ll = masked_forward_backward(lang, x, np.zeros(x.shape, bool)).loglik
        np.testing.assert_allclose(reveal_score(lang, steps, x, chain=True).log_q, ll, rtol=RTOL_EXACT)
    assert powers.language_powers(lang, L).max_power == (L if max_power is None else max_power)


def _full_support_languages():
    rng = np.random.default_rng(17)
    return {
        "2gram": NGram(2, random_rows(rng, (3,)), random_rows(rng, (3, 3))),
        "4gram": NGram(4, random_rows(rng, (8,)), random_rows(rng, (8, 2))),
        "hmm": HMM(random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3), random_rows(rng, (3, 3))),
    }


FULL = _full_support_languages()


@pytest.mark.parametrize("name", sorted(FULL))
@pytest.mark.parametrize("N", [3, 40])
def test_full_support_sampling_without_chain_rule_equals_generic(name, N):
    """A language with q(x) > 0 everywhere samples without alpha_new and the chain rule; same samples as the generic path.

    L = 16 with a 4-gram at 3 and 40 steps: separators (3 observed in a row) come and go, so the
    messages kept across them (invalidation up to a separator) are exercised too.
    """
    from numerics.languages.arrays import kernel_arrays
    from numerics.sampling.oracle.driver import full_support

    lang = FULL[name]
    assert full_support(kernel_arrays(lang)) and not full_support(kernel_arrays(LANGS[name]))
    den = OracleDenoiser(lang)
    a = sample_factorized(den, linear(N), 150, 16, np.random.default_rng(23), path="generic", batch_size=50)
    b = sample_factorized(den, linear(N), 150, 16, np.random.default_rng(23), batch_size=50)
    assert b.path.startswith("oracle")
    np.testing.assert_array_equal(a.tokens, b.tokens)


def test_reveal_sample_reads_the_interval_language_as_its_hmm():
    """The interval language samples as its dense HMM (kernel_language); a non-language is a TypeError naming it."""
    from numerics.languages.interval import IntervalLanguage
    from numerics.sampling.oracle import reveal_sample

    lang = IntervalLanguage(3)
    rng = np.random.default_rng(29)
    steps = linear(3).sample_steps(rng, (40, 7))
    U = rng.random((40, 7))
    x = reveal_sample(lang, steps, U)
    np.testing.assert_array_equal(x, reveal_sample(lang.kernel_language(), steps, U))
    den = OracleDenoiser(lang.kernel_language(), strict=False)
    a = sample_factorized(den, linear(3), 60, 7, np.random.default_rng(31), path="generic")
    b = sample_oracle(lang, linear(3), 60, 7, np.random.default_rng(31))
    np.testing.assert_array_equal(a.tokens, b.tokens)
    with pytest.raises(TypeError, match="dict"):
        reveal_sample({"transition": np.eye(2)}, steps, U)
