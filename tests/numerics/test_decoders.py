"""The decoders (numerics.sampling.decoders) and their exact laws (numerics.exact.decoders).

* The two exact methods (forward DP over states with the masked marginal table; per-output
  recursion with every draw enumerated and flat-table marginals) agree at ``RTOL_EXACT`` for every
  decoder, on a language with zeros and on a full-support one.
* Closed forms derived by hand: LLaDA with ``random`` remasking is the random order with fixed
  counts; on a language of independent pairs each pair is co-revealed with probability
  ``s = sum_t k_t (k_t - 1) / (B (B - 1))`` (a uniformly random ordered partition of the block),
  and then drawn independently, so its law is ``(1 - s) q_pair + s q_1 (x) q_2``.
* ReMDM with ``eta = 0`` is MDLM's ancestral sampler: the random-order law of the same schedule.
* Reverse KL and TV on a hand-checkable case (sympy ``Rational``).
* The generic sampler against the exact law (chi-squared, tests/gof.py budget: 5 assertions).
* The counter-based stream: samples do not depend on the batch size.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from numerics.exact.decoders import MAX_REMDM_STATES, decoder_exact
from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.joint_table import joint_table
from numerics.languages.hmm import NGram
from numerics.sampling.adaptive import on_grid
from numerics.sampling.decoders import (
    EntropyBound,
    FastDllm,
    Llada,
    Remdm,
    llada_counts,
    make_decoder,
    splitmix64,
    stream_uniform,
)
from numerics.sampling.denoiser import OracleDenoiser
from numerics.schedules import make_schedule
from tests.decoder_cases import decoders_at
from tests.gof import assert_gof
from tests.tolerances import ATOL_PROB, RTOL_EXACT

PRUNED = NGram(2, [0.6, 0.4], [[0.7, 0.3], [0.0, 1.0]])  # x = 1 0 is impossible: SER > 0 for parallel decoders
FULL3 = NGram(2, [0.5, 0.3, 0.2], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])

DECODERS = decoders_at(4)  # the shared table (tests/decoder_cases.py): every row that fits L = 4


@pytest.mark.parametrize("decoder", DECODERS, ids=lambda d: d.label)
def test_dp_matches_enumeration(decoder):
    a = decoder_exact(PRUNED, 4, decoder, "dp")
    b = decoder_exact(PRUNED, 4, decoder, "enumerate")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert a.law.p.sum() == pytest.approx(1.0, abs=1e-12)
    assert a.expected_calls.value == pytest.approx(b.expected_calls.value, rel=RTOL_EXACT)
    assert a.metrics.ser.value == pytest.approx(b.metrics.ser.value, rel=RTOL_EXACT, abs=ATOL_PROB)


@pytest.mark.parametrize("decoder", [Llada(steps=3, temperature=1.0), FastDllm(factor=2.0), EntropyBound(gamma=1.0),
                                     Remdm(schedule=make_schedule("linear", 2), eta=0.4)], ids=lambda d: d.name)
def test_dp_matches_enumeration_three_tokens(decoder):
    a = decoder_exact(FULL3, 3, decoder, "dp")
    b = decoder_exact(FULL3, 3, decoder, "enumerate")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert a.divergences.reverse_kl.value == pytest.approx(b.divergences.reverse_kl.value, rel=1e-10)


def _pairs_table(c: float, pairs: int) -> np.ndarray:
    pair = np.array([[c / 2, (1 - c) / 2], [(1 - c) / 2, c / 2]])
    q = pair
    for _ in range(pairs - 1):
        q = np.multiply.outer(q, pair)
    return q


@pytest.mark.parametrize("c", [0.9, 0.6])  # full support: no undefined-posterior convention enters
@pytest.mark.parametrize("block, steps", [(2, 2), (2, 4), (4, 1), (4, 2), (4, 3), (2, 6)])
def test_llada_random_is_random_order_with_fixed_counts(c, block, steps):
    L = 4
    q = _pairs_table(c, 2)
    counts = llada_counts(block, steps // (L // block))
    s = float(np.sum(counts * (counts - 1))) / (block * (block - 1))  # P(a pair's two positions share a step)
    res = decoder_exact(q, None, Llada(steps=steps, block_length=block, remasking="random"), "dp")
    first_pair = res.law.p.sum(axis=(2, 3))
    expected = (1 - s) * q.sum(axis=(2, 3)) + s * 0.25
    np.testing.assert_allclose(first_pair, expected, rtol=RTOL_EXACT)
    assert res.expected_calls.value == steps


def test_remdm_without_remasking_is_the_random_order_sampler():
    schedule = make_schedule("cosine", 3)
    exact = decoder_exact(PRUNED, 4, Remdm(schedule=schedule, eta=0.0), "dp")
    ref = enumerate_output_law(PRUNED, 4, schedule, undefined="uniform")
    np.testing.assert_allclose(exact.law.p, ref.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)


def test_remdm_remasking_changes_the_law():
    schedule = make_schedule("linear", 3)
    a = decoder_exact(PRUNED, 4, Remdm(schedule=schedule, eta=0.0), "dp").law.p
    b = decoder_exact(PRUNED, 4, Remdm(schedule=schedule, eta=0.5), "dp").law.p
    assert np.max(np.abs(a - b)) > 1e-3


def test_reverse_kl_and_tv_by_hand():
    """Two positions, q(00) = q(11) = 3/8, q(01) = q(10) = 1/8; one LLaDA step reveals both from
    their marginals (1/2, 1/2): p = 1/4 everywhere, TV = 1/4, KL(p||q) = 1/2 log 4/3, KL(q||p) = 3/4 log 3/2 + 1/4 log 1/2."""
    q = np.array([[3 / 8, 1 / 8], [1 / 8, 3 / 8]])
    res = decoder_exact(q, None, Llada(steps=1), "dp")
    R = sp.Rational
    tv = R(1, 2) * (2 * abs(R(3, 8) - R(1, 4)) + 2 * abs(R(1, 8) - R(1, 4)))
    rkl = 2 * R(1, 4) * sp.log(R(1, 4) / R(3, 8)) + 2 * R(1, 4) * sp.log(R(1, 4) / R(1, 8))
    fkl = 2 * R(3, 8) * sp.log(R(3, 8) / R(1, 4)) + 2 * R(1, 8) * sp.log(R(1, 8) / R(1, 4))
    assert sp.simplify(rkl - R(1, 2) * sp.log(R(4, 3))) == 0
    assert res.divergences.tv.value == pytest.approx(float(tv), rel=RTOL_EXACT)
    assert res.divergences.reverse_kl.value == pytest.approx(float(rkl), rel=RTOL_EXACT)
    assert res.metrics.kl.value == pytest.approx(float(fkl), rel=RTOL_EXACT)


def test_reverse_kl_infinite_and_tv_at_least_ser_with_zeros():
    res = decoder_exact(PRUNED, 4, Llada(steps=1), "dp")
    assert res.metrics.ser.value > 0
    assert res.divergences.reverse_kl.value == math.inf
    assert res.divergences.tv.value >= res.metrics.ser.value


def test_greedy_is_one_sequence():
    res = decoder_exact(PRUNED, 4, Llada(steps=2, temperature=0), "dp")
    assert np.count_nonzero(res.law.p) == 1
    assert res.metrics.kl.value == math.inf
    assert res.metrics.ser.value in (0.0, 1.0)


def test_low_confidence_at_t1_is_biased_from_the_marginals():
    """LLaDA low-confidence at T = 1, one step revealing 1 of 2 positions: the revealed value is the
    draw with the larger p_j(x0_j), not a marginal draw; its law differs from q (exact, by hand below)."""
    q = np.array([[0.5, 0.0], [0.1, 0.4]])  # marginals: x1 ~ (0.5, 0.5), x2 ~ (0.6, 0.4)
    law = decoder_exact(q, None, Llada(steps=2, tie_seed=None), "dp").law.p
    # first step: draws y1 ~ (.5,.5), y2 ~ (.6,.4); scores .5 vs .6/.4; reveal position 2 unless y2 = 1 (.4 < .5)
    # P(reveal x2 = 0) = .6, P(reveal x1 = y1) = .4 (each value .2); then the other from its exact conditional
    expected = np.array([[0.6 * 5 / 6 + 0.2 * 1.0, 0.0], [0.6 * 1 / 6 + 0.2 * 0.2, 0.2 * 0.8]])
    np.testing.assert_allclose(law, expected, rtol=RTOL_EXACT)
    assert np.max(np.abs(law - q)) > 0.05


def test_fast_dllm_factor_rule_reveals_the_stated_prefix():
    d = FastDllm(factor=1.0)
    from numerics.sampling.adaptive import on_grid

    # thresholds 1 - 1/(j+1): j=2: 2/3, j=3: 3/4, j=4: 4/5; only the last fails -> the stated rule stops before it
    scores = on_grid(np.array([0.99, 0.9, 0.8, 0.7]))
    assert d.count(scores, 0, None) == 3
    assert FastDllm(threshold=0.85).count(scores, 0, None) == 2
    assert FastDllm(threshold=0.999).count(scores, 0, None) == 1


def _counts(tokens, V, L):
    return np.bincount(np.ravel_multi_index(tokens.T, (V,) * L), minlength=V**L)


@pytest.mark.parametrize("decoder", [Llada(steps=2, temperature=1.0), FastDllm(factor=1.5, block_length=2),
                                     EntropyBound(gamma=0.4, temperature=0.7),
                                     Remdm(schedule=make_schedule("linear", 3), eta=0.4),
                                     make_decoder("llada2", steps=2, threshold=0.6)], ids=lambda d: d.label)
def test_sampler_follows_the_exact_law(decoder):
    L, V, n = 4, 2, 4000
    p = decoder_exact(PRUNED, L, decoder, "dp").law.p
    run = decoder.sample(OracleDenoiser(PRUNED, strict=False), n, L, np.random.default_rng(11), batch_size=1000)
    assert_gof(_counts(run.tokens, V, L), p.ravel(), decoder.label)
    exact_calls = decoder_exact(PRUNED, L, decoder, "dp").expected_calls.value
    if decoder.name == "remdm" or (decoder.name == "llada" and not decoder.stops_when_empty):
        assert np.all(run.nfe_sequence == exact_calls)  # N calls (llada2's floor ends a block early: random)


def test_samples_do_not_depend_on_batching():
    den = OracleDenoiser(PRUNED, strict=False)
    for d in (Llada(steps=4, block_length=2), FastDllm(threshold=0.7), Remdm(schedule=make_schedule("linear", 4), eta=0.3)):
        a = d.sample(den, 12, 4, np.random.default_rng(5), batch_size=12)
        b = d.sample(den, 12, 4, np.random.default_rng(5), batch_size=5)
        np.testing.assert_array_equal(a.tokens, b.tokens)
        np.testing.assert_array_equal(a.nfe_sequence, b.nfe_sequence)


def test_stream_is_counter_based():
    keys = np.array([1, 2], dtype=np.uint64)
    u = stream_uniform(keys[:, None], np.uint64(3), np.arange(4)[None, :], 0)
    assert u.shape == (2, 4) and np.all((u >= 0) & (u < 1))
    assert stream_uniform(keys[1:], np.uint64(3), np.array([2]), 0)[0] == u[1, 2]
    assert stream_uniform(keys[1:], np.uint64(3), np.array([2]), 1)[0] != u[1, 2]
    assert splitmix64(np.array([0], dtype=np.uint64))[0] == np.uint64(0xE220A8397B1DCDAF)  # splitmix64 reference value


@pytest.mark.parametrize("make, match", [
    (lambda: Llada(steps=4, block_length=3).fixed_steps(4), "does not divide"),
    (lambda: Llada(steps=3, block_length=2).fixed_steps(4), "not divisible by the number of blocks"),
    (lambda: Llada(steps=2, temperature=-1.0), "temperature"),
    (lambda: Llada(steps=2, remasking="lowconf"), "unknown remasking"),
    (lambda: FastDllm(threshold=1.5), "threshold"),
    (lambda: FastDllm(factor=0.0), "factor"),
    (lambda: FastDllm(threshold=0.5, factor=1.0), "exactly one"),
    (lambda: EntropyBound(gamma=-0.1), "gamma"),
    (lambda: Remdm(schedule=make_schedule("linear", 2), eta=2.0), "eta"),
    (lambda: Remdm(schedule=make_schedule("linear", 2), variant="conf"), "variant"),  # conf: not implemented
    (lambda: Llada(steps=2, tie_seed=-1), "tie_seed"),
])
def test_bad_parameters_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_exact_refuses_large_sizes_up_front():
    big = NGram(2, np.full(3, 1 / 3), np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="beyond the limit"):
        decoder_exact(big, 10, Llada(steps=10), "enumerate")
    with pytest.raises(ValueError, match=str(MAX_REMDM_STATES)):
        decoder_exact(big, 8, Remdm(schedule=make_schedule("linear", 2), eta=0.1), "dp")


def test_joint_table_of_pruned_has_zeros():
    assert np.any(joint_table(PRUNED, 4) == 0)


@pytest.mark.parametrize("decoder", [EntropyBound(gamma=0.4, temperature=0.7), EntropyBound(gamma=0.9, block_length=2),
                                     Llada(steps=2, temperature=0), FastDllm(threshold=0.6, temperature=0)],
                         ids=lambda d: d.label)
def test_path_log_prob_is_the_exact_law(decoder):
    from numerics.exact.joint_table import all_sequences

    p = decoder_exact(PRUNED, 4, decoder, "dp").law.p.ravel()
    xs = all_sequences(2, 4)
    score = decoder.path_log_prob(OracleDenoiser(PRUNED, strict=False), xs)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(score.log_p, np.log(p), rtol=1e-12, atol=1e-14)


def test_path_log_prob_refuses_mixtures():
    with pytest.raises(ValueError, match="sum over reveal paths"):
        Llada(steps=2).path_log_prob(OracleDenoiser(PRUNED, strict=False), np.zeros((2, 4), dtype=np.int64))


class _LearnedStyle:
    """Any object with vocab_size and __call__: a fixed factorized 'network' (position-dependent logits)."""

    vocab_size = 3

    def __call__(self, tokens, mask):
        B, L = tokens.shape
        p = np.tile(np.array([0.5, 0.3, 0.2]), (B, L, 1))
        p[:, ::2] = [0.2, 0.2, 0.6]
        return p


def test_any_denoiser_runs_and_calls_are_counted():
    den = _LearnedStyle()
    run = Llada(steps=4, block_length=2).sample(den, 50, 4, np.random.default_rng(0))
    assert run.tokens.shape == (50, 4) and np.all(run.nfe_sequence == 4)
    run = FastDllm(threshold=0.65).sample(den, 50, 4, np.random.default_rng(0))
    assert np.all(run.nfe_sequence == 4)  # no score reaches 0.65 (max 0.6) after the first: one position per call
    run = Remdm(schedule=make_schedule("linear", 5), eta=0.2).sample(den, 50, 4, np.random.default_rng(0))
    assert np.all(run.nfe_sequence == 5)


def test_batch_interval_oracle_equals_forward_backward():
    """The interval row rule (written once, in BatchIntervalOracle; IntervalOracle is the same class)
    against the masked forward-backward of the minimal HMM, junk under the masks, some impossible sequences."""
    from numerics.inference.forward_backward import masked_forward_backward
    from numerics.languages.interval import IntervalLanguage
    from numerics.sampling.batch_oracles import BatchIntervalOracle

    rng = np.random.default_rng(0)
    for l, L in ((3, 7), (4, 8)):
        lang = IntervalLanguage(l)
        x = lang.sample(30, L, rng)
        x[:5] = rng.integers(0, lang.vocab_size, (5, L))  # some impossible sequences
        mask = rng.random((30, L)) < 0.5
        x = np.where(mask, rng.integers(0, lang.vocab_size, x.shape), x)  # masked tokens carry junk
        ours = BatchIntervalOracle(lang)(x, mask)
        ref = masked_forward_backward(lang.minimal_hmm().to_hmm(), x, mask).marginals
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
        ok = ~np.isnan(ref)
        np.testing.assert_allclose(ours[ok], ref[ok], rtol=0, atol=1e-14)


def test_eb_reveals_one_more_than_entropy_sum():
    """EB's ``- max`` term: on entropies sorted ascending the EB prefix is the entropy-sum prefix plus one
    (while positions remain), checked against numerics.sampling.adaptive's entropy-sum rule."""
    from numerics.sampling.adaptive import on_grid, select_positions

    H = np.array([0.1, 0.2, 0.3, 0.5, 0.9])
    for gamma in (0.05, 0.25, 0.6, 1.1, 5.0):
        Hg = on_grid(H)
        es = select_positions("entropy-sum", np.ones(5, dtype=bool), np.zeros(5, np.int64), Hg, np.arange(5), 0,
                              int(on_grid(gamma))).size
        eb = int(EntropyBound(gamma=gamma).count(-Hg.astype(float), 0, None))
        assert eb == min(5, es + 1) if np.cumsum(H)[0] <= gamma else eb == 1


def test_bigram_oracle_equals_the_forward_backward_oracle():
    from numerics.sampling.batch_oracles import BigramOracle

    rng = np.random.default_rng(1)
    for lang, L in ((PRUNED, 6), (FULL3, 9)):
        x = lang.sample(40, L, rng)
        x[:6] = rng.integers(0, lang.vocab_size, (6, L))  # some impossible sequences
        mask = rng.random((40, L)) < 0.6
        mask[0] = True
        a, b = BigramOracle(lang)(x, mask), OracleDenoiser(lang, strict=False)(x, mask)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-12, atol=1e-15)


def test_make_decoder_names_a_misplaced_or_unknown_option():
    """Options are checked by name: each decoder builds from its own, another's or an unknown one is named."""
    assert make_decoder("eb", gamma=0.5, block_length=4, temperature=0.0).gamma == 0.5
    assert make_decoder("llada", steps=4).remasking == "low-confidence"
    with pytest.raises(ValueError, match="the eb decoder does not take threshold"):
        make_decoder("eb", gamma=0.5, threshold=0.9)
    with pytest.raises(ValueError, match=r"unknown decoder option\(s\) treshold"):
        make_decoder("fast-dllm", treshold=0.9)
    with pytest.raises(ValueError, match="unknown decoder 'greedy'"):
        make_decoder("greedy")


@pytest.mark.parametrize("temperature, block", [(1.0, None), (0.5, 2), (0.0, None)])
def test_llada2_with_one_step_per_position_is_fast_dllm_threshold(temperature, block):
    """LLaDA2.0 with ``k_t = 1`` (``N = L``: ``n = B`` steps a block) reveals ``max(1, #{c > tau})``;
    Fast-dLLM's threshold ``max(1, #{c >= tau})`` on the same draws, scores and end of block
    (docs/methods/decoders.md, llada2). On the grid ``c > tau`` is ``c >= tau + 1e-9``: one law,
    the same samples and calls."""
    tau = 0.6
    assert on_grid(tau + 1e-9) == on_grid(tau) + 1
    a = make_decoder("llada2", steps=4, threshold=tau, temperature=temperature, block_length=block)
    b = FastDllm(threshold=tau + 1e-9, temperature=temperature, block_length=block)
    ea, eb = decoder_exact(PRUNED, 4, a, "dp"), decoder_exact(PRUNED, 4, b, "enumerate")
    np.testing.assert_allclose(ea.law.p, eb.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert ea.expected_calls.value == pytest.approx(eb.expected_calls.value, rel=RTOL_EXACT)
    assert ea.expected_calls.value < 4  # the floor saves calls here: the case is exercised
    den = OracleDenoiser(PRUNED, strict=False)
    for path in ("generic", "auto"):
        ra = a.sample(den, 300, 4, np.random.default_rng(5), path=path)
        rb = b.sample(den, 300, 4, np.random.default_rng(5), path=path)
        np.testing.assert_array_equal(ra.tokens, rb.tokens)
        np.testing.assert_array_equal(ra.nfe_sequence, rb.nfe_sequence)


def test_llada2_strict_threshold_differs_where_a_score_equals_tau():
    """``q(x_1 = 0) = 0.6`` on the pruned 2-gram: at ``tau = 0.6`` Fast-dLLM (``>=``) reveals that
    position at the first step, LLaDA2.0 (``>``) not, and the greedy outputs differ."""
    a = make_decoder("llada2", steps=4, threshold=0.6, temperature=0)
    b = FastDllm(threshold=0.6, temperature=0)
    pa, pb = np.ravel(decoder_exact(PRUNED, 4, a, "dp").law.p), np.ravel(decoder_exact(PRUNED, 4, b, "dp").law.p)
    # by hand: maxprobs 0.6, 0.58, 0.706, 0.794 at the start; Fast-dLLM reveals x4 = x3 = 1 and x1 = 0, then
    # x2 = 1 (0.3 > 0.21): 0111; LLaDA2.0 reveals x4 = x3 = 1 only, then x1 = 1 (0.4 > 0.306), then x2 = 1: 1111
    assert pb[0b0111] == pytest.approx(1.0, abs=1e-12) and pa[0b1111] == pytest.approx(1.0, abs=1e-12)


def test_llada2_floor_reveals_all_above_tau_else_the_scheduled_count():
    """The count by hand: scheduled ``k``, scores sorted descending (``-inf``: not a candidate)."""
    d = make_decoder("llada2", steps=2, threshold=0.8)
    s = on_grid(np.array([[0.95, 0.9, 0.85, 0.5], [0.95, 0.5, 0.4, 0.3], [0.7, 0.6, 0.5, 0.4]])).astype(np.float64)
    s[1, 3] = -np.inf
    np.testing.assert_array_equal(d.count(s, np.zeros(3, dtype=np.int64), np.array([2, 2])), [3, 2, 2])
    assert make_decoder("llada2", steps=2).threshold == 0.95 and make_decoder("llada2", steps=2).remasking == "low-confidence"
    with pytest.raises(ValueError, match="needs remasking low-confidence"):
        Llada(steps=2, threshold=0.9, remasking="random")
    with pytest.raises(ValueError, match=r"threshold tau must be in \(0, 1\]"):
        make_decoder("llada2", steps=2, threshold=1.5)
