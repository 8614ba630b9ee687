"""The adaptive samplers (numerics.sampling.adaptive) against their twins and against hand-derived cases.

* The fast oracle kernels (chain / segment / interval paths) against the generic path through
  ``denoiser(tokens, mask)`` calls on the same random stream: identical samples, steps and calls.
* The selection rules on hand-made confidence rows (ties by the seeded priority, the grid).
* The ``random`` sampler through the :class:`Sampler` abstraction gives exactly today's numbers.
* A learned-style denoiser (any object with ``vocab_size`` and ``__call__``) runs through the same
  samplers and its calls are counted.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from numerics.exact.joint_table import all_sequences, joint_table
from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.generators import random_rows
from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from numerics.languages.presets import load_language
from numerics.sampling._adaptive_numba import adaptive_run
from numerics.sampling.adaptive import (
    GRID_SCALE,
    AdaptiveSampler,
    IntervalOracle,
    chain_rule_terms,
    confidence_grid,
    make_sampler,
    nfe_mc,
    on_grid,
    select_positions,
    tie_priority,
    topk_sizes,
)
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.samplers import RandomOrder, Sampler, sample_factorized
from numerics.schedules import cosine, from_u, linear
from tests.tolerances import ATOL_LOG, RTOL_EXACT


def _languages():
    rng = np.random.default_rng(11)
    return {
        "2gram": NGram(2, random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3)),
        "3gram": NGram(3, random_rows(rng, (4,)), random_rows(rng, (4, 2), zero_fraction=0.25)),
        "hmm": HMM(random_rows(rng, (3,)), random_rows(rng, (3, 3), zero_fraction=0.3), random_rows(rng, (3, 3), zero_fraction=0.3)),
    }


LANGS = _languages()
SAMPLERS = [
    AdaptiveSampler("topk", schedule=linear(3)),
    AdaptiveSampler("topk", schedule=cosine(4), confidence="margin", tie_seed=None),
    AdaptiveSampler("threshold", gamma=0.6),
    AdaptiveSampler("threshold", gamma=-0.5, confidence="neg-entropy", tie_seed=3),
    AdaptiveSampler("entropy-sum", gamma=0.8),
]


@pytest.mark.parametrize("name", list(LANGS))
@pytest.mark.parametrize("sampler", SAMPLERS, ids=lambda s: s.label)
def test_fast_kernel_equals_generic_path_sample_by_sample(name, sampler):
    d = OracleDenoiser(LANGS[name], strict=False)
    fast = sampler.sample(d, 40, 9, np.random.default_rng(5), batch_size=16)
    slow = sampler.sample(d, 40, 9, np.random.default_rng(5), batch_size=16, path="generic")
    assert fast.path.endswith("oracle-" + ("hmm" if name == "hmm" else "ngram")) and slow.path.endswith("generic")
    np.testing.assert_array_equal(fast.tokens, slow.tokens)
    np.testing.assert_array_equal(fast.reveal_steps, slow.reveal_steps)
    np.testing.assert_array_equal(fast.nfe_sequence, slow.nfe_sequence)
    np.testing.assert_array_equal(fast.nfe, slow.nfe)
    assert np.all(fast.nfe_sequence == fast.reveal_steps.max(axis=1))


# Regression pin against the kernels *before* their refactor onto NamedTuples (issue 18): the
# sha256 (first 32 hex digits) of the bytes of tokens, reveal steps and calls of 24 sampled
# sequences and of the (I1) terms and calls of 24 scored sequences ``x ~ q``, per (language,
# sampler), computed with main's code at commit 95f339f (the 9-tuple / ``out (B, 3)`` kernels).
# Bit for bit: any change of a sample, a step or the last bit of a term changes the hash.
# The comment after each hash shows the first two terms in float.hex, for a reader.
PIN_SAMPLERS = [
    AdaptiveSampler("topk", schedule=cosine(4), confidence="margin"),
    AdaptiveSampler("threshold", gamma=0.6, tie_seed=3),
    AdaptiveSampler("threshold", gamma=-0.5, confidence="neg-entropy"),
    AdaptiveSampler("entropy-sum", gamma=0.8, tie_seed=None),
    AdaptiveSampler("threshold", gamma=0.3),
    AdaptiveSampler("entropy-sum", gamma=3.0),
]
PINS = {
    ("2gram", 0): "9a24dc112d1824680681b2d2d7bca6f4",  # terms[:2] = ['0x1.3293e07784d06p-2', '-0x1.d9cc2e4354ac8p-2']
    ("2gram", 1): "84ade6670853c66e7e82e28285bf1b2e",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("2gram", 2): "ff66148a8306844248309ee1bc4f4491",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("2gram", 3): "ff66148a8306844248309ee1bc4f4491",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("2gram", 4): "3e0f85642af47a1c0bd078fb97c65794",  # terms[:2] = ['0x1.b934860459240p-3', '0x1.3721085e3b098p+1']
    ("2gram", 5): "ed397c52bf23bbe9a1b37e900143a3c1",  # terms[:2] = ['0x1.1647f4e1512f8p-4', '0x1.db92e5947f5c8p-1']
    ("3gram", 0): "e18708eb1ccb9635fa5643e701a87dbf",  # terms[:2] = ['0x1.5500dd2efda2dp-1', '-0x1.b6be50e058840p-3']
    ("3gram", 1): "98904439a00b9a0310c9d090685989cc",  # terms[:2] = ['-0x1.db30f178a18e0p-4', '-0x1.b96f7d2eb2d5ep-2']
    ("3gram", 2): "e2775ae6fbc97336a444e4d216815cee",  # terms[:2] = ['0x1.8000000000000p-52', '0x1.0000000000000p-52']
    ("3gram", 3): "3fc38a23dacc94fbf8767dc26312c2ef",  # terms[:2] = ['0x1.8000000000000p-52', '0x1.0000000000000p-52']
    ("3gram", 4): "59a439ddeedca9c9c95ca8dd87e5b2fa",  # terms[:2] = ['0x1.4452026f8c6d7p+2', '0x1.38d82937b6edap+2']
    ("3gram", 5): "dd47d00eee36b96e3fb1d9d68a32c694",  # terms[:2] = ['0x1.7128256d9f569p+0', '-0x1.847da41466a90p-3']
    ("hmm", 0): "5b540b565b8fa6623cf1ad7d7510d528",  # terms[:2] = ['0x1.8dab8604d4960p-1', '-0x1.5e00cdf0361bcp-2']
    ("hmm", 1): "39cd049dc6137c130bb091a0c0abd75b",  # terms[:2] = ['0x1.686b6735368c0p-1', '-0x1.b555935dec108p-3']
    ("hmm", 2): "8f31b43e2e4987f2c514c72e356caad0",  # terms[:2] = ['0x1.8000000000000p-50', '0x1.0000000000000p-51']
    ("hmm", 3): "8f31b43e2e4987f2c514c72e356caad0",  # terms[:2] = ['0x1.8000000000000p-50', '0x1.0000000000000p-51']
    ("hmm", 4): "08ecf9548a6c6305d7e6f78c32d41426",  # terms[:2] = ['0x1.c2892dbfe23f0p-1', '-0x1.207a4998c2740p-3']
    ("hmm", 5): "adaf9681c23d014bdec81e5fc78ff460",  # terms[:2] = ['0x1.307aa13abc7d0p-2', '-0x1.9626ae04322d8p-3']
    ("interval", 0): "b84bec02b60f274019e76b99ac71ca93",  # terms[:2] = ['0x1.62e42fefa39f5p-1', '0x1.62e42fefa39f5p-1']
    ("interval", 1): "4a70fd4c425559db3645dd05c6eb3f2e",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("interval", 2): "8f380e7251adf0614e1bc159368a019a",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("interval", 3): "9454e6f4965078ca4a0df60871c638f2",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("interval", 4): "42b971283dcb4bb39190dd1e6bd02dc5",  # terms[:2] = ['0x1.62e42fefa39eep+1', '0x1.62e42fefa39eep+1']
    ("interval", 5): "0dfaadafe7c78acd593a569db7b2d6a8",  # terms[:2] = ['0x1.62e42fefa39eep+1', '0x1.62e42fefa39eep+1']
    ("preset-2gram", 0): "4ee9b72a9fb0547d1e0fba2b76f620ae",  # terms[:2] = ['0x1.368f679d7e55fp+3', '0x1.3195dd5b5f462p+4']
    ("preset-2gram", 1): "88f7be5d2f0a32a21f37144b9ebcf9b6",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("preset-2gram", 2): "88f7be5d2f0a32a21f37144b9ebcf9b6",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("preset-2gram", 3): "88f7be5d2f0a32a21f37144b9ebcf9b6",  # terms[:2] = ['0x0.0p+0', '0x0.0p+0']
    ("preset-2gram", 4): "9b0c20ffffa894ab87a9fcac9492f65b",  # terms[:2] = ['0x1.cb435e641cdf9p+2', '0x1.e17b27f4a06b0p+2']
    ("preset-2gram", 5): "7d44a81da8fd56c470f91f2a4050545c",  # terms[:2] = ['0x1.a53f4bbe9befcp+1', '0x1.d22871ae6a307p+1']
}


@pytest.mark.parametrize("case", list(PINS), ids=lambda c: f"{c[0]}-{c[1]}")
def test_kernels_reproduce_the_pre_refactor_numbers_bit_for_bit(case):
    name, i = case
    lang = {**LANGS, "interval": IntervalLanguage(3), "preset-2gram": load_language("2gram")}[name]
    L = 40 if name == "preset-2gram" else 13
    den = IntervalOracle(lang) if name == "interval" else OracleDenoiser(lang, strict=False)
    s = PIN_SAMPLERS[i]
    run = s.sample(den, 24, L, np.random.default_rng(7))
    score = chain_rule_terms(s, lang, lang.sample(24, L, np.random.default_rng(8)))
    h = hashlib.sha256()
    for a in (run.tokens, run.reveal_steps, run.nfe_sequence, score.terms, score.calls):
        h.update(np.ascontiguousarray(a).tobytes())
    assert h.hexdigest()[:32] == PINS[case]


@pytest.mark.parametrize("sampler", [AdaptiveSampler("topk", schedule=linear(1)), AdaptiveSampler("topk", schedule=from_u([0.0, 0.85, 1.0])),
                                     AdaptiveSampler("entropy-sum", gamma=1000.0), AdaptiveSampler("entropy-sum", gamma=45.0)],
                         ids=lambda s: s.label)
def test_selection_beyond_the_partial_pass(sampler):
    """Steps revealing more than the kernel's 32-key partial selection (the full-order branch) at L = 40."""
    d = OracleDenoiser(LANGS["2gram"], strict=False)
    fast = sampler.sample(d, 6, 40, np.random.default_rng(8))
    slow = sampler.sample(d, 6, 40, np.random.default_rng(8), path="generic")
    np.testing.assert_array_equal(fast.tokens, slow.tokens)
    np.testing.assert_array_equal(fast.reveal_steps, slow.reveal_steps)
    assert np.bincount(fast.reveal_steps[0]).max() > 32  # some step did reveal more than 32 positions


@pytest.mark.parametrize("sampler", SAMPLERS[:3], ids=lambda s: s.label)
def test_chain_path_equals_segment_path_on_a_two_gram(sampler):
    """The 2-gram's power formula against the message path on the same language (and on its dense HMM form)."""
    lang = LANGS["2gram"]
    L, n = 12, 30
    U = np.random.default_rng(2).random((n, L))
    runs = [adaptive_run(language, sampler.kernel_rule(L), np.zeros((n, L), dtype=np.int64), U, sample=True, path=path)
            for language, path in ((lang, "auto"), (lang, "segment"), (lang.to_hmm(), "auto"))]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.tokens, runs[0].tokens)
        np.testing.assert_array_equal(run.steps, runs[0].steps)
        np.testing.assert_array_equal(run.calls, runs[0].calls)
        np.testing.assert_array_equal(run.outside_support, runs[0].outside_support)
        np.testing.assert_allclose(run.chain_rule, runs[0].chain_rule, rtol=RTOL_EXACT, atol=ATOL_LOG)


@pytest.mark.parametrize("sampler", SAMPLERS, ids=lambda s: s.label)
def test_interval_kernel_and_interval_oracle_equal_the_hmm_oracle(sampler):
    """Three computations of the interval language's posterior: the kernel's closed form, the NumPy
    IntervalOracle and the masked forward-backward of its minimal HMM."""
    lang = IntervalLanguage(3)
    dense = OracleDenoiser(lang.minimal_hmm().to_hmm(), strict=False)
    runs = [sampler.sample(IntervalOracle(lang), 30, 7, np.random.default_rng(4)),
            sampler.sample(IntervalOracle(lang), 30, 7, np.random.default_rng(4), path="generic"),
            sampler.sample(dense, 30, 7, np.random.default_rng(4), path="generic")]
    assert runs[0].path.endswith("oracle-interval")
    for r in runs[1:]:
        np.testing.assert_array_equal(r.tokens, runs[0].tokens)
        np.testing.assert_array_equal(r.reveal_steps, runs[0].reveal_steps)


def test_interval_oracle_marginals_equal_forward_backward():
    lang = IntervalLanguage(3)
    rng = np.random.default_rng(0)
    x = lang.sample(20, 7, rng)
    x[:3, 1] ^= 1  # make a few revealed sets inconsistent
    mask = rng.random(x.shape) < 0.5
    ours = IntervalOracle(lang)(x, mask)
    ref = masked_forward_backward(lang.minimal_hmm().to_hmm(), x, mask).marginals
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(ours[ok], ref[ok], rtol=0, atol=1e-14)


def test_pruned_language_leaves_the_support_and_both_paths_agree_there():
    lang = LANGS["2gram"]
    s = AdaptiveSampler("topk", schedule=linear(1))  # everything at once from the unconditional marginals
    d = OracleDenoiser(lang, strict=False)
    fast = s.sample(d, 200, 6, np.random.default_rng(1))
    slow = s.sample(d, 200, 6, np.random.default_rng(1), path="generic")
    np.testing.assert_array_equal(fast.tokens, slow.tokens)
    assert np.any(np.isneginf(masked_forward_backward(lang, fast.tokens, np.zeros((200, 6), bool)).loglik))


def test_selection_rules_by_hand():
    """Confidence rows chosen so the answer is obvious; ties go by the priority rank."""
    rows = np.array([[0.5, 0.5, 0.0],   # maxprob .5, margin 0, H = log 2
                     [0.9, 0.1, 0.0],   # maxprob .9, margin .8
                     [0.0, 1.0, 0.0],   # maxprob 1, H = 0 (position 2)
                     [0.5, 0.5, 0.0],   # a tie with position 0
                     [1 / 3, 1 / 3, 1 / 3]])
    masked = np.array([True, True, True, True, True])
    c = confidence_grid(rows, "maxprob")
    left = tie_priority(5, None)
    assert list(select_positions("topk", masked, c.conf, c.entropy, left, 2, 0)) == [1, 2]
    assert list(select_positions("topk", masked, c.conf, c.entropy, left, 4, 0)) == [0, 1, 2, 3]
    rank = np.array([4, 3, 2, 1, 0])  # position 3 before position 0 among ties
    assert list(select_positions("topk", masked, c.conf, c.entropy, rank, 3, 0)) == [1, 2, 3]
    assert list(select_positions("threshold", masked, c.conf, c.entropy, left, 0, int(on_grid(0.9)))) == [1, 2]
    assert list(select_positions("threshold", masked, c.conf, c.entropy, left, 0, int(on_grid(1.1)))) == [2]
    # entropy order 2 (0), then 0, 3 (log 2) by priority, then 1 (H(.9, .1)), then 4 (log 3)
    h01 = -(0.9 * np.log(0.9) + 0.1 * np.log(0.1))
    assert list(select_positions("entropy-sum", masked, c.conf, c.entropy, left, 0, int(on_grid(0.01)))) == [2]
    assert list(select_positions("entropy-sum", masked, c.conf, c.entropy, left, 0, int(on_grid(h01)))) == [1, 2]
    assert list(select_positions("entropy-sum", masked, c.conf, c.entropy, left, 0,
                                 int(on_grid(h01 + np.log(2) + 1e-6)))) == [0, 1, 2]
    margin = confidence_grid(rows, "margin").conf
    assert list(margin) == list(on_grid([0.0, 0.8, 1.0, 0.0, 0.0]))
    neg = confidence_grid(rows, "neg-entropy").conf
    assert list(neg) == list(on_grid([-np.log(2), -h01, 0.0, -np.log(2), -np.log(3)]))
    # revealed positions are never chosen; an undefined row counts as uniform
    masked[2] = False
    assert 2 not in select_positions("topk", masked, c.conf, c.entropy, left, 4, 0)
    bad = confidence_grid(np.array([[np.nan, 1.0, 0.0], [0.0, 0.0, 0.0]]), "maxprob")
    np.testing.assert_array_equal(bad.probs, np.full((2, 3), 1 / 3))


def test_grid_makes_round_off_a_tie():
    """Marginals that differ by round-off rank as ties (then by priority), real differences do not."""
    rows = np.array([[0.25, 0.75], [0.25 + 1e-15, 0.75 - 1e-15], [0.25 + 5e-9, 0.75 - 5e-9]])
    c = confidence_grid(rows, "maxprob")
    assert c.conf[0] == c.conf[1] > c.conf[2]
    assert GRID_SCALE == 1e9


def test_tie_priority_and_topk_sizes():
    assert list(tie_priority(4, None)) == [0, 1, 2, 3]
    perm = np.random.default_rng(7).permutation(6)
    rank = tie_priority(6, 7)
    assert list(np.argsort(rank)) == list(perm)
    assert list(topk_sizes(linear(4), 10)) == [3, 2, 3, 2]  # c_t = floor(10 t / 4 + 1/2) = 0, 3, 5, 8, 10
    sizes = topk_sizes(from_u([0.0, 0.0, 0.5, 1.0]), 5)
    assert list(sizes) == [0, 3, 2] and sizes.sum() == 5


def test_topk_calls_skip_empty_steps_and_threshold_counts_steps():
    lang = LANGS["2gram"]
    d = OracleDenoiser(lang, strict=False)
    res = AdaptiveSampler("topk", schedule=from_u([0.0, 0.0, 0.5, 1.0])).sample(d, 5, 6, np.random.default_rng(0))
    assert np.all(res.nfe_sequence == 2) and res.n_steps == 2
    assert sorted(np.bincount(res.reveal_steps[0])[1:]) == [3, 3]
    one = AdaptiveSampler("threshold", gamma=1.5).sample(d, 5, 6, np.random.default_rng(0))  # never met: one per step
    assert np.all(one.nfe_sequence == 6)
    est = nfe_mc(one)
    assert est.value == 6.0 and est.stderr == 0.0 and est.samples == 5


class CountingDenoiser:
    """A stand-in for a learned model: the oracle's marginals in float32, with its calls counted."""

    def __init__(self, language):
        self.inner = OracleDenoiser(language, strict=False)
        self.vocab_size = language.vocab_size
        self.calls = 0
        self.rows = 0

    def __call__(self, tokens, mask):
        self.calls += 1
        self.rows += tokens.shape[0]
        return self.inner(tokens, mask).astype(np.float32)


def test_a_learned_denoiser_plugs_in_and_its_calls_are_counted():
    lang = LANGS["hmm"]
    net = CountingDenoiser(lang)
    s = AdaptiveSampler("threshold", gamma=0.5)
    res = s.sample(net, 12, 7, np.random.default_rng(3), batch_size=4)
    assert res.path.endswith("generic")
    assert net.calls == int(res.nfe.sum())  # a batch calls until its slowest sequence is done
    assert net.rows == int(res.nfe_sequence.sum())  # ... and sends only its unfinished sequences


def test_random_sampler_through_the_abstraction_gives_todays_numbers():
    lang = LANGS["3gram"]
    sched = cosine(5)
    r = make_sampler("random", schedule=sched)
    assert isinstance(r, RandomOrder) and isinstance(r, Sampler) and r.label.startswith("random")
    for path in ("auto", "generic"):
        a = r.sample(OracleDenoiser(lang, strict=False), 30, 8, np.random.default_rng(9), batch_size=7, path=path)
        b = sample_factorized(OracleDenoiser(lang, strict=False), sched, 30, 8, np.random.default_rng(9),
                              batch_size=7, path=path)
        np.testing.assert_array_equal(a.tokens, b.tokens)
        np.testing.assert_array_equal(a.reveal_steps, b.reveal_steps)
        np.testing.assert_array_equal(a.nfe, b.nfe)
        assert a.path == b.path and a.nfe_sequence is None


def test_chain_rule_terms_refuse_sequences_outside_the_support():
    lang = LANGS["2gram"]
    s = AdaptiveSampler("topk", schedule=linear(2))
    xs = all_sequences(3, 5)
    bad = xs[joint_table(lang, 5).ravel() == 0][:1]  # the fixture has structural zeros
    ok = lang.sample(3, 5, np.random.default_rng(0))
    assert chain_rule_terms(s, lang, ok).terms.shape == (3,)
    with pytest.raises(ValueError, match="outside supp q"):
        chain_rule_terms(s, lang, bad)
    with pytest.raises(TypeError, match="deterministic adaptive rule"):
        chain_rule_terms(RandomOrder(linear(2)), lang, ok)


def test_argument_errors():
    with pytest.raises(ValueError, match="unknown adaptive rule"):
        AdaptiveSampler("greedy", gamma=1.0)
    with pytest.raises(ValueError, match="needs a schedule"):
        AdaptiveSampler("topk")
    with pytest.raises(ValueError, match="gamma applies"):
        AdaptiveSampler("topk", schedule=linear(2), gamma=0.5)
    with pytest.raises(ValueError, match="needs a finite gamma"):
        AdaptiveSampler("threshold")
    with pytest.raises(ValueError, match=">= 0 nats"):
        AdaptiveSampler("entropy-sum", gamma=-1.0)
    with pytest.raises(ValueError, match="no confidence option"):
        AdaptiveSampler("entropy-sum", gamma=1.0, confidence="margin")
    with pytest.raises(ValueError, match="unknown confidence"):
        AdaptiveSampler("threshold", gamma=0.5, confidence="logit")
    with pytest.raises(ValueError, match="tie_seed"):
        AdaptiveSampler("threshold", gamma=0.5, tie_seed=-1)
    with pytest.raises(ValueError, match="random sampler takes a schedule only"):
        make_sampler("random", schedule=linear(2), gamma=0.3)
    with pytest.raises(ValueError, match="unknown sampler"):
        make_sampler("llada", gamma=0.3)
    s = AdaptiveSampler("threshold", gamma=0.5)
    d = OracleDenoiser(LANGS["2gram"])
    with pytest.raises(ValueError, match="path='oracle' needs"):
        s.sample(CountingDenoiser(LANGS["2gram"]), 2, 3, np.random.default_rng(0), path="oracle")
    with pytest.raises(ValueError, match="batch_size"):
        s.sample(d, 2, 3, np.random.default_rng(0), batch_size=0)
    with pytest.raises(TypeError, match="Generator"):
        s.sample(d, 2, 3, 0)
    with pytest.raises(TypeError, match="Denoiser protocol"):
        s.sample(object(), 2, 3, np.random.default_rng(0))


@pytest.mark.parametrize("sampler", SAMPLERS[::2], ids=lambda s: s.label)
def test_fast_kernel_runs_a_mostly_zero_ngram_and_equals_the_generic_path(sampler):
    """A 3-gram whose conditional is at most SPARSE_DENSITY non-zero gets the sparse layout from
    kernel_arrays by default (the oracle sampler and forward-backward read it so); the adaptive message
    path has no sparse version and must ask for the dense one. Same samples as the generic path."""
    from numerics.languages.arrays import SPARSE_DENSITY, SparseNGramArrays, kernel_arrays
    from numerics.languages.generators import random_sparse_ngram

    lang = random_sparse_ngram(3, 24, nonzeros=300, seed=4)  # 672 of 13824 entries non-zero
    assert np.count_nonzero(lang.conditional) <= SPARSE_DENSITY * lang.conditional.size
    assert isinstance(kernel_arrays(lang), SparseNGramArrays)  # what the other kernels read
    d = OracleDenoiser(lang, strict=False)
    fast = sampler.sample(d, 12, 8, np.random.default_rng(2))
    slow = sampler.sample(d, 12, 8, np.random.default_rng(2), path="generic")
    assert fast.path.endswith("oracle-ngram")
    np.testing.assert_array_equal(fast.tokens, slow.tokens)
    np.testing.assert_array_equal(fast.reveal_steps, slow.reveal_steps)
