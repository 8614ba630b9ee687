"""The compiled oracle paths of the decoders and the adaptive rules' blocks.

* Decoders (numerics.sampling._decoder_numba): the compiled path gives the same samples as the
  generic path (the reference, NumPy on the denoiser's marginals), sequence by sequence, on the
  chain path (2-grams, with zeros: sequences leave supp q), the message path (a 3-gram, an HMM) and
  the interval path, for every decoder and variant; ``path_log_prob`` replayed in the kernel equals
  the generic replay; the numba stream equals :func:`stream_uniform` bit for bit.
* Adaptive rules with ``block_length``: compiled equals generic with blocks; ``B = L`` is the rule
  without blocks (same samples, same exact law); the exact DP equals the brute-force enumeration
  with blocks at ``RTOL_EXACT``; Monte Carlo follows the exact law (chi-squared, 1 assertion of the
  tests/gof.py budget); bad block lengths are named.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from numerics.exact.adaptive import adaptive_dp, adaptive_enumerate
from numerics.inference import log_q
from numerics.languages.generators import random_rows
from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling._decoder_numba import stream_u
from numerics.sampling.adaptive import AdaptiveSampler, IntervalOracle
from numerics.sampling.decoders import EntropyBound, FastDllm, Llada, stream_uniform
from numerics.sampling.denoiser import OracleDenoiser
from numerics.schedules import cosine, linear
from tests.decoder_cases import decoders_at
from tests.gof import assert_gof
from tests.tolerances import ATOL_LOG, RTOL_EXACT

# one xdist worker compiles these numba kernels once for the group (pytest runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("decoder-kernels")


def _languages():
    rng = np.random.default_rng(11)
    return {
        "2gram": NGram(2, random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3)),
        "3gram": NGram(3, random_rows(rng, (4,)), random_rows(rng, (4, 2), zero_fraction=0.25)),
        "hmm": HMM(random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3),
                   random_rows(rng, (3, 3), zero_fraction=0.3)),
        "interval": IntervalLanguage(3),
    }


LANGS = _languages()
L = 12
#: the shared table (tests/decoder_cases.py): every row that fits L = 12 and has a compiled path (dream: generic only)
DECODERS = [d for d in decoders_at(L) if d.compiled(L)]


def _oracle(lang):
    return IntervalOracle(lang) if isinstance(lang, IntervalLanguage) else OracleDenoiser(lang, strict=False)


def _same_run(a, b) -> None:
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.reveal_steps, b.reveal_steps)
    np.testing.assert_array_equal(a.calls, b.calls)
    np.testing.assert_array_equal(a.nfe, b.nfe)


@pytest.mark.parametrize("name", list(LANGS))
def test_compiled_decoders_equal_the_generic_path_sample_by_sample(name):
    den = _oracle(LANGS[name])
    for d in DECODERS:
        fast = d.sample(den, 20, L, np.random.default_rng(3), batch_size=7)
        slow = d.sample(den, 20, L, np.random.default_rng(3), batch_size=7, path="generic")
        assert fast.path.startswith(f"{d.name}-oracle-") and slow.path == f"{d.name}-generic", d.label
        _same_run(fast, slow)


def test_compiled_path_leaves_the_support_like_the_generic_path():
    """A pruned 2-gram: parallel reveals leave supp q (every later row uniform) in both paths alike."""
    lang = LANGS["2gram"]
    den = OracleDenoiser(lang, strict=False)
    d = Llada(steps=2, temperature=1.0)
    fast = d.sample(den, 200, L, np.random.default_rng(9))
    _same_run(fast, d.sample(den, 200, L, np.random.default_rng(9), path="generic"))
    assert np.any(np.isneginf(log_q(lang, fast.tokens)))  # the case is exercised


@pytest.mark.parametrize("name", ["2gram", "3gram", "interval"])
def test_compiled_path_log_prob_equals_the_generic_replay(name):
    lang = LANGS[name]
    den = _oracle(lang)
    for d in (Llada(steps=4, temperature=0, tie_seed=3), FastDllm(factor=0.5, temperature=0),
              EntropyBound(gamma=0.7, block_length=6), EntropyBound(gamma=0.3, temperature=2.0)):
        x = np.concatenate([lang.sample(15, L, np.random.default_rng(4)),
                            d.sample(den, 15, L, np.random.default_rng(5)).tokens])
        fast, slow = d.path_log_prob(den, x), d.path_log_prob(den, x, path="generic")
        np.testing.assert_array_equal(np.isneginf(fast.log_p), np.isneginf(slow.log_p))
        ok = np.isfinite(slow.log_p)
        np.testing.assert_allclose(fast.log_p[ok], slow.log_p[ok], rtol=RTOL_EXACT, atol=ATOL_LOG)
        np.testing.assert_array_equal(fast.calls, slow.calls)


@pytest.mark.parametrize("name", ["2gram", "3gram", "interval"])
def test_sampling_run_carries_log_p_of_its_samples(name):
    """The compiled sampling run's ``log_p`` is the replay's ``log p(x)`` along its own samples (the
    reverse KL of a Monte Carlo point takes it instead of a second kernel run); ``None`` where the
    decoder is not path-deterministic or the path is generic. The run's (I1) term is ``log q(x) - log p(x)``."""
    from numerics.sampling._decoder_numba import decoder_run

    lang = LANGS[name]
    den = _oracle(lang)
    for d in (Llada(steps=4, temperature=0, tie_seed=3), FastDllm(factor=0.5, temperature=0),
              EntropyBound(gamma=0.7, block_length=6), EntropyBound(gamma=0.3, temperature=2.0)):
        run = d.sample(den, 30, L, np.random.default_rng(5))
        replay = d.path_log_prob(den, run.tokens)
        np.testing.assert_array_equal(run.log_p, replay.log_p)  # the same kernel, the same sums
        slow = d.path_log_prob(den, run.tokens, path="generic").log_p
        np.testing.assert_allclose(run.log_p, slow, rtol=RTOL_EXACT, atol=ATOL_LOG)
        assert d.sample(den, 5, L, np.random.default_rng(5), path="generic").log_p is None
        x = lang.sample(30, L, np.random.default_rng(6))
        scored = decoder_run(lang, d.kernel_rule(L), np.zeros(30, dtype=np.uint64), x.copy(), sample=False)
        finite = np.isfinite(scored.log_p)
        np.testing.assert_allclose(scored.chain_rule[finite], (log_q(lang, x) - scored.log_p)[finite],
                                   rtol=RTOL_EXACT, atol=ATOL_LOG)
        assert np.all(np.isposinf(scored.chain_rule[~finite]))  # p(x) = 0 < q(x)
    for d in (Llada(steps=6), FastDllm(factor=1.0), Llada(steps=6, remasking="random")):
        assert d.sample(den, 5, L, np.random.default_rng(5)).log_p is None


@pytest.mark.parametrize("name", ["2gram", "3gram", "interval"])
def test_adaptive_run_log_p_is_log_q_minus_the_chain_rule_term(name):
    """The adaptive kernel's ``log_p`` (``sum log q(x_j | x_S)`` over the reveals) and its (I1) term add
    up to ``log q(x)`` along true sequences, with blocks and without."""
    from numerics.sampling._adaptive_numba import adaptive_run

    lang = LANGS[name]
    x = lang.sample(40, L, np.random.default_rng(8))
    for sampler in (AdaptiveSampler("threshold", gamma=0.6), AdaptiveSampler("entropy-sum", gamma=0.8, block_length=6),
                    AdaptiveSampler("topk", schedule=linear(4))):
        run = adaptive_run(lang, sampler.kernel_rule(L), x.copy(), np.zeros(x.shape), sample=False)
        np.testing.assert_allclose(run.chain_rule + run.log_p, log_q(lang, x), rtol=RTOL_EXACT, atol=ATOL_LOG)


def test_numba_stream_is_the_numpy_stream_bit_for_bit():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, np.iinfo(np.uint64).max, size=50, dtype=np.uint64, endpoint=True)
    calls, positions = rng.integers(1, 1000, 50), rng.integers(0, 5000, 50)
    for stream in range(4):
        ref = stream_uniform(keys, calls, positions, stream)
        ours = np.array([stream_u(k, int(c), int(p), stream) for k, c, p in zip(keys, calls, positions)])
        np.testing.assert_array_equal(ours, ref)


def test_oracle_path_is_refused_without_a_compiled_path():
    d = Llada(steps=4, remasking="random")
    with pytest.raises(ValueError, match="path='oracle'"):
        d.sample(OracleDenoiser(LANGS["2gram"], strict=False), 2, 2048, np.random.default_rng(0), path="oracle")


# ----- the adaptive rules with blocks -------------------------------------------------------------

BLOCK_SAMPLERS = [
    AdaptiveSampler("topk", schedule=linear(6), block_length=4),
    AdaptiveSampler("topk", schedule=cosine(4), confidence="margin", block_length=6, tie_seed=None),
    AdaptiveSampler("threshold", gamma=0.6, block_length=3),
    AdaptiveSampler("entropy-sum", gamma=0.8, block_length=4),
]


@pytest.mark.parametrize("name", list(LANGS))
def test_adaptive_blocks_compiled_equal_generic(name):
    den = _oracle(LANGS[name])
    for s in BLOCK_SAMPLERS:
        fast = s.sample(den, 20, L, np.random.default_rng(6))
        slow = s.sample(den, 20, L, np.random.default_rng(6), path="generic")
        assert "generic" not in fast.path
        _same_run(fast, slow)
        B = s.block_of(L)
        first = np.min(np.where((np.arange(L) // B)[None, :] == 1, fast.reveal_steps, np.inf), axis=1)
        last = np.max(np.where((np.arange(L) // B)[None, :] == 0, fast.reveal_steps, -np.inf), axis=1)
        assert np.all(first > last)  # block 0 is done before block 1 starts


def test_one_block_is_the_rule_without_blocks():
    lang = LANGS["3gram"]
    den = OracleDenoiser(lang, strict=False)
    for kw in (dict(rule="topk", schedule=linear(5)), dict(rule="threshold", gamma=0.5),
               dict(rule="entropy-sum", gamma=0.6)):
        a, b = AdaptiveSampler(**kw), AdaptiveSampler(**kw, block_length=L)
        _same_run(a.sample(den, 20, L, np.random.default_rng(1)), b.sample(den, 20, L, np.random.default_rng(1)))
        np.testing.assert_array_equal(adaptive_dp(lang, 5, a).law.p, adaptive_dp(lang, 5, AdaptiveSampler(**kw, block_length=5)).law.p)


PAIRS = NGram(2, [0.6, 0.4], [[0.7, 0.3], [0.0, 1.0]])  # V = 2 with a zero: L = 6 stays cheap to enumerate


@pytest.mark.parametrize("sampler", [AdaptiveSampler("topk", schedule=linear(4), block_length=2),
                                     AdaptiveSampler("topk", schedule=linear(2), block_length=2, confidence="margin"),
                                     AdaptiveSampler("threshold", gamma=0.5, block_length=2),
                                     AdaptiveSampler("entropy-sum", gamma=0.9, block_length=2)], ids=lambda s: s.label)
def test_adaptive_blocks_dp_equals_brute_force(sampler):
    for lang, Lx, s in ((LANGS["2gram"], 4, sampler), (LANGS["hmm"], 4, sampler),
                        (PAIRS, 6, dataclasses.replace(sampler, block_length=3))):
        dp, en = adaptive_dp(lang, Lx, s), adaptive_enumerate(lang, Lx, s)
        np.testing.assert_allclose(dp.law.p, en.law.p, rtol=RTOL_EXACT, atol=1e-300)
        assert dp.expected_nfe.value == pytest.approx(en.expected_nfe.value, rel=RTOL_EXACT)
        assert dp.kl_chain_rule.value == pytest.approx(dp.metrics.kl.value, rel=1e-10, abs=ATOL_LOG)


def test_adaptive_blocks_follow_the_exact_law():
    lang, Lx, n = LANGS["2gram"], 4, 4000
    s = AdaptiveSampler("topk", schedule=linear(4), block_length=2)
    p = adaptive_dp(lang, Lx, s).law.p
    run = s.sample(OracleDenoiser(lang, strict=False), n, Lx, np.random.default_rng(12))
    counts = np.bincount(np.ravel_multi_index(run.tokens.T, (3,) * Lx), minlength=3**Lx)
    assert_gof(counts, p.ravel(), s.label)


@pytest.mark.parametrize("kw, match", [(dict(rule="topk", schedule=linear(5), block_length=4), "not divisible"),
                                       (dict(rule="threshold", gamma=0.5, block_length=5), "does not divide"),
                                       (dict(rule="entropy-sum", gamma=0.5, block_length=0), "block_length")])
def test_bad_block_lengths_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        AdaptiveSampler(**kw).sample(OracleDenoiser(LANGS["2gram"], strict=False), 2, L, np.random.default_rng(0))
