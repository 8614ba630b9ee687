"""The adaptive samplers (numerics.sampling.adaptive) against their twins and against hand-derived cases.

* The fast oracle kernels (chain / segment / interval paths) against the generic path through
  ``denoiser(tokens, mask)`` calls on the same random stream: identical samples, steps and calls.
* The selection rules on hand-made confidence rows (ties by the seeded priority, the grid).
* The ``random`` sampler through the :class:`Sampler` abstraction gives exactly today's numbers.
* A learned-style denoiser (any object with ``vocab_size`` and ``__call__``) runs through the same
  samplers and its calls are counted.
"""

from __future__ import annotations

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


# The configurations the kernels were once pinned on by sha256 / float.hex (issue 18; the pins broke
# on an OpenBLAS kernel change, issue 29): each is now checked against its twins instead -- the
# fast oracle kernel against the generic path sample by sample (on the toy languages, the interval
# language and the preset 2-gram at L = 40, whose chain path has matrix powers), and the kernel's
# scoring mode (chain_rule_terms) on every path it has: the chain path against the segment path
# and the dense HMM form, the interval closed form against its minimal HMM, and all of them
# against enumeration of the rule at L = 5.
PIN_SAMPLERS = [
    AdaptiveSampler("topk", schedule=cosine(4), confidence="margin"),
    AdaptiveSampler("threshold", gamma=0.6, tie_seed=3),
    AdaptiveSampler("threshold", gamma=-0.5, confidence="neg-entropy"),
    AdaptiveSampler("entropy-sum", gamma=0.8, tie_seed=None),
    AdaptiveSampler("threshold", gamma=0.3),
    AdaptiveSampler("entropy-sum", gamma=3.0),
]
PIN_LANGS = {**LANGS, "interval": IntervalLanguage(3), "preset-2gram": load_language("2gram")}


def _pin_case(name):
    lang = PIN_LANGS[name]
    return lang, (40 if name == "preset-2gram" else 13), (IntervalOracle(lang) if name == "interval"
                                                          else OracleDenoiser(lang, strict=False))


@pytest.mark.parametrize("name", list(PIN_LANGS))
@pytest.mark.parametrize("i", range(len(PIN_SAMPLERS)))
def test_fast_kernel_equals_generic_path_on_the_once_pinned_configurations(name, i):
    lang, L, den = _pin_case(name)
    s = PIN_SAMPLERS[i]
    fast = s.sample(den, 24, L, np.random.default_rng(7))
    slow = s.sample(den, 24, L, np.random.default_rng(7), path="generic")
    assert fast.path.endswith(("oracle-hmm", "oracle-ngram", "oracle-interval")) and slow.path.endswith("generic")
    for a, b in ((fast.tokens, slow.tokens), (fast.reveal_steps, slow.reveal_steps), (fast.nfe_sequence, slow.nfe_sequence)):
        np.testing.assert_array_equal(a, b)


def _scoring_twins(name, lang):
    """The other computations of ``lang``'s scoring: its message path and dense HMM form (a 2-gram's
    chain path), its minimal HMM (the interval closed form), its dense HMM form (another n-gram)."""
    if name == "interval":
        return [(lang.minimal_hmm().to_hmm(), "auto")]
    twins = [(lang.to_hmm(), "auto")] if isinstance(lang, NGram) else []
    return twins + ([(lang, "segment")] if isinstance(lang, NGram) and lang.order == 2 else [])


@pytest.mark.parametrize("name", list(PIN_LANGS))
@pytest.mark.parametrize("i", range(len(PIN_SAMPLERS)))
def test_scoring_mode_agrees_on_every_path_of_the_once_pinned_configurations(name, i):
    lang, L, _ = _pin_case(name)
    s = PIN_SAMPLERS[i]
    x = lang.sample(24, L, np.random.default_rng(8))
    score = chain_rule_terms(s, lang, x)
    assert np.isfinite(score.terms).all()
    for other, path in _scoring_twins(name, lang):
        run = adaptive_run(other, s.kernel_rule(L), x.copy(), np.zeros(x.shape), sample=False, path=path)
        np.testing.assert_array_equal(run.calls, score.calls)
        np.testing.assert_allclose(run.chain_rule, score.terms, rtol=RTOL_EXACT, atol=ATOL_LOG)


@pytest.mark.parametrize("name", ["2gram", "3gram", "hmm", "interval"])
@pytest.mark.parametrize("i", range(len(PIN_SAMPLERS)))
def test_scoring_mode_equals_enumeration_of_the_rule(name, i):
    from numerics.exact.adaptive import adaptive_enumerate

    lang, s, L = PIN_LANGS[name], PIN_SAMPLERS[i], 5
    en = adaptive_enumerate(lang, L, s)
    on = en.law.q.ravel() > 0
    score = chain_rule_terms(s, lang, all_sequences(lang.vocab_size, L)[on])
    np.testing.assert_array_equal(score.calls, en.calls.ravel()[on])
    np.testing.assert_allclose(score.terms, en.chain_terms.ravel()[on], rtol=RTOL_EXACT, atol=ATOL_LOG)


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
