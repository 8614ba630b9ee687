"""Lossless decoders (numerics.sampling.lossless) against their exact laws (numerics.exact.lossless).

* exactness: the output law of assd and autospec is ``q`` (the brute-force table), that of spiffy its
  base sampler's exact law (``random``: numerics.exact.enumerate; a block decoder of the registry:
  the decoders' DP, numerics.exact.decoders), that of self-spec the greedy
  left-to-right point mass, also as the engine's exact law of ``llada`` with one position a block at
  T = 0 (numerics.exact.decoders);
* Monte Carlo: one chi-squared goodness of fit per decoder of the joint law of (output, rounds,
  calls) (tests/gof.py budget);
* invariants: ASSD's calls never exceed L (Guo & Ermon's guarantee), spiffy with D = 1 is its base
  (N calls), autospec's rounds at most L + 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.draws import inverse_cdf_rows
from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.lossless import assd_law, autospec_law, self_spec_law, spiffy_law
from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling.lossless import (
    SPIFFY_BASES,
    Assd,
    Autospec,
    BlockChain,
    LosslessError,
    SelfSpec,
    Spiffy,
    greedy_left_to_right,
    inverse_cdf_numpy,
    inverse_cdf_vec,
)
from numerics.schedules import make_schedule
from tests.gof import assert_gof
from tests.tolerances import ATOL_PROB, RTOL_EXACT

L = 4


def _rows(rng, a, b, floor=0.05):
    w = rng.random((a, b)) + floor
    return w / w.sum(axis=1, keepdims=True)


def _languages():
    rng = np.random.default_rng(7)
    hmm = HMM(_rows(rng, 1, 3)[0], _rows(rng, 3, 3), _rows(rng, 3, 2))
    cond = _rows(rng, 4, 2)
    cond[1] = [1.0, 0.0]  # structural zeros: a support smaller than V^L
    ngram = NGram(3, _rows(rng, 1, 4)[0], cond)
    return {"hmm": hmm, "3gram-zeros": ngram, "interval-l2": IntervalLanguage(2)}


LANGS = _languages()


@pytest.mark.parametrize("name", list(LANGS))
@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("order", ["random", "left-to-right"])
def test_assd_output_law_is_q_and_calls_never_exceed_L(name, k, order):
    law = assd_law(LANGS[name], L, k, order)
    np.testing.assert_allclose(law.p, law.q, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert max(c for _, c in law.cost) <= L
    assert sum(law.cost.values()) == pytest.approx(1.0, rel=RTOL_EXACT)


def _sparse_bigram():
    """A 2-gram of V = 40 with two successors per token: the sparse n-gram layout (numerics.languages.arrays)."""
    rng = np.random.default_rng(3)
    V = 40
    cond = np.zeros((V, V))
    for v in range(V):
        cond[v, rng.choice(V, 2, replace=False)] = _rows(rng, 1, 2)[0]
    return NGram(2, _rows(rng, 1, V)[0], cond)


@pytest.mark.parametrize("name", [*LANGS, "sparse-2gram"])
def test_assd_random_order_on_the_message_store_draws_the_forward_backwards_sequences(name):
    """The message-store path (numerics.sampling._assd_store) against a masked forward-backward per canvas,
    sample by sample from one seed: the same tokens and rounds (the posteriors agree up to round-off, so
    no inverse CDF or acceptance falls the other way here). Lengths past the exact laws' L = 4, with draft
    lengths that leave a short last window."""
    from numerics.languages.arrays import SparseNGramArrays, kernel_arrays

    lang = _sparse_bigram() if name == "sparse-2gram" else LANGS[name]
    if name == "sparse-2gram":
        assert isinstance(kernel_arrays(lang), SparseNGramArrays)
    for length, k in ((11, 3), (9, 4)):
        store = Assd(k).sample(lang, length, 60, np.random.default_rng(5))
        fb = Assd(k).sample_forward_backward(lang, length, 60, np.random.default_rng(5))
        np.testing.assert_array_equal(store.tokens, fb.tokens)
        np.testing.assert_array_equal(store.rounds, fb.rounds)


def test_assd_random_order_above_the_store_cap_takes_the_forward_backward(monkeypatch):
    import numerics.sampling.lossless as lossless

    lang = LANGS["hmm"]
    want = Assd(3).sample_forward_backward(lang, 7, 20, np.random.default_rng(2))
    monkeypatch.setattr(lossless, "ASSD_STORE_BYTES", 0)
    monkeypatch.setattr(Assd, "_sample_store", lambda *a: pytest.fail("the store path above its cap"))
    got = Assd(3).sample(lang, 7, 20, np.random.default_rng(2))
    np.testing.assert_array_equal(got.tokens, want.tokens)


@pytest.mark.parametrize("name", ["hmm", "3gram-zeros", "interval-l2"])
@pytest.mark.parametrize("order", ["random", "left-to-right"])
def test_assd_expected_rounds_at_L_3_k_3_by_the_total_variation_formula(name, order):
    """At L = k = 3 a round drafts the whole window: the first drafted token is always accepted, the second
    with probability ``1 - TV(q(x_b | x_a), q(x_b))`` (``a, b`` the order's first two positions), and a
    rejection there costs one more round of 1 call, else none: ``E[rounds] = 2 + E_{x_a} TV``, averaged over
    the 3! orders for ``random``. Computed here from pair marginals of the joint table, not by the recursion."""
    from itertools import permutations

    from numerics.exact.joint_table import joint_table

    q = joint_table(LANGS[name], 3)
    orders = list(permutations(range(3))) if order == "random" else [(0, 1, 2)]
    tv = 0.0
    for a, b, _ in orders:
        pair = np.moveaxis(q, (a, b), (0, 1)).sum(axis=2)  # q(x_a, x_b)
        tv += 0.5 * np.abs(pair - np.outer(pair.sum(axis=1), pair.sum(axis=0))).sum() / len(orders)
    law = assd_law(LANGS[name], 3, 3, order)
    assert law.expected("rounds") == pytest.approx(2.0 + tv, rel=RTOL_EXACT)
    assert law.expected("calls") == law.expected("rounds")


@pytest.mark.parametrize("name", list(LANGS))
def test_autospec_output_law_is_q(name):
    law = autospec_law(LANGS[name], L)
    np.testing.assert_allclose(law.p, law.q, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert max(r for r, _ in law.cost) <= L + 1


def test_self_spec_is_greedy_left_to_right_as_the_engine_computes_it():
    """The point mass of self-spec is the greedy left-to-right sequence: from the table, from the
    prefix oracle, and as the engine's exact law of llada with blocks of one at T = 0."""
    from numerics.exact.decoders import decoder_exact
    from numerics.sampling.decoders import make_decoder

    lang = LANGS["hmm"]
    law = self_spec_law(lang, L, 3)
    (x, r, c), = law.joint
    assert tuple(greedy_left_to_right(lang, L)) == x
    llada = decoder_exact(lang, L, make_decoder("llada", steps=L, block_length=1, temperature=0))
    np.testing.assert_allclose(law.p, llada.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    run = SelfSpec(3).sample(lang, L, 5, np.random.default_rng(0))
    assert np.all(run.tokens == np.array(x)) and np.all(run.calls == c) and np.all(run.rounds == r)


@pytest.mark.parametrize("name", ["hmm", "3gram-zeros"])
@pytest.mark.parametrize("D", [1, 2, 3])
def test_spiffy_output_law_is_its_base_samplers(name, D):
    lang, schedule = LANGS[name], make_schedule("linear", 3)
    law = spiffy_law(lang, 3, Spiffy(schedule, D))
    base = enumerate_output_law(lang, 3, schedule, undefined="uniform").law
    np.testing.assert_allclose(law.p, base.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    if D == 1:  # no speculation: the base sampler, one call per step
        assert law.cost == pytest.approx({(3, 3): 1.0})


#: Spiffy's block bases on a tiny case: (registry name, options, steps N or None).
BLOCK_BASES = [
    ("llada", (("block_length", 2),), 2),  # low-confidence at T = 1: the revealed set depends on the draws
    ("llada", (("remasking", "random"),), 2),  # random scores: a uniform subset
    ("fast-dllm", (("threshold", 0.6),), None),  # a random number of steps
    ("eb", (("gamma", 0.5),), None),
    ("llada2", (("block_length", 2),), 4),
    ("dream", (), 3),  # origin: Dream's own selection law
    ("dus", (("block_length", 4),), None),
    ("sdar", (), 2),
    ("dinfer", (("block_length", 4),), None),
]


@pytest.mark.parametrize("base, options, N", BLOCK_BASES, ids=[f"{b}-{dict(o)}" for b, o, _ in BLOCK_BASES])
def test_spiffy_over_a_block_decoder_keeps_its_exact_law(base, options, N):
    """Spiffy's output law (its every draft, accept and residual enumerated from the joint table) is the
    base decoder's law as the engine's DP computes it (numerics.exact.decoders), at D = 2 and 3."""
    from numerics.exact.decoders import decoder_exact

    lang = LANGS["3gram-zeros"]
    for D in (2, 3):
        dec = Spiffy(None if N is None else make_schedule("linear", N), D, base, options)
        law = spiffy_law(lang, L, dec)
        np.testing.assert_allclose(law.p, decoder_exact(lang, L, dec.base_sampler).law.p, rtol=RTOL_EXACT,
                                   atol=ATOL_PROB)
        assert sum(law.cost.values()) == pytest.approx(1.0, rel=RTOL_EXACT)


def test_spiffy_bases_are_the_registrys_random_and_block_decoders():
    from numerics.sampling.block_decoder import BlockDecoder
    from numerics.sampling.history_decoders import HistoryDecoder
    from numerics.sampling.registry import DECODERS
    from numerics.sampling.remdm import Remdm

    assert SPIFFY_BASES[0] == "random"
    for name in SPIFFY_BASES[1:]:
        cls = DECODERS[name].cls
        assert issubclass(cls, BlockDecoder) and not issubclass(cls, (Remdm, HistoryDecoder)), name
    assert {b for b, _, _ in BLOCK_BASES} == set(SPIFFY_BASES[1:])  # each base tested above


def _joint_counts(run, law):
    keys = list(law.joint)
    index = {k: i for i, k in enumerate(keys)}
    counts = np.zeros(len(keys))
    for x, r, c in zip(map(tuple, run.tokens), run.rounds, run.calls):
        k = (x, int(r), int(c))
        assert k in index, f"a sample outside the exact law's support: {k}"
        counts[index[k]] += 1
    return counts, np.array([law.joint[k] for k in keys])


@pytest.mark.parametrize("decoder, law_of", [
    (Assd(3), lambda lang: assd_law(lang, L, 3)),  # the random order (the default)
    (Assd(2, "left-to-right"), lambda lang: assd_law(lang, L, 2, "left-to-right")),
    (Autospec(), lambda lang: autospec_law(lang, L)),
])
def test_monte_carlo_fits_the_exact_joint_law_of_output_rounds_and_calls(decoder, law_of):
    lang = LANGS["3gram-zeros"]
    run = decoder.sample(lang, L, 4000, np.random.default_rng(11))
    assert_gof(*_joint_counts(run, law_of(lang)), what=decoder.label)


def test_spiffy_monte_carlo_fits_its_exact_joint_law():
    lang, dec = LANGS["hmm"], Spiffy(make_schedule("linear", 3), 2)
    run = dec.sample(lang, 3, 1500, np.random.default_rng(12))
    assert_gof(*_joint_counts(run, spiffy_law(lang, 3, dec)), what=dec.label)


def test_spiffy_over_fast_dllm_monte_carlo_fits_its_exact_joint_law():
    lang, dec = LANGS["3gram-zeros"], Spiffy(None, 2, "fast-dllm", (("threshold", 0.6),))
    run = dec.sample(lang, L, 1000, np.random.default_rng(13))
    assert_gof(*_joint_counts(run, spiffy_law(lang, L, dec)), what=dec.label)


def test_vectorized_inverse_cdf_is_the_engines():
    rng = np.random.default_rng(0)
    w = rng.random((500, 5)) * (rng.random((500, 5)) > 0.3)
    w[:, 2] += 0.1
    u = rng.random(500)
    u[:5] = np.nextafter(1.0, 0.0)
    np.testing.assert_array_equal(inverse_cdf_vec(w, u), inverse_cdf_rows(w, u))
    np.testing.assert_array_equal(inverse_cdf_numpy(w, u), inverse_cdf_rows(w, u))  # the NumPy twin
    np.testing.assert_array_equal(inverse_cdf_vec(w.reshape(50, 10, 5), u.reshape(50, 10)), inverse_cdf_rows(w, u).reshape(50, 10))


@pytest.mark.parametrize("base, given, want", [
    ("fast-dllm", {}, {"threshold": 0.9}),  # the registry's default preset
    ("fast-dllm", {"block_length": 2}, {"block_length": 2, "threshold": 0.9}),  # no knob given: the preset too
    ("fast-dllm", {"factor": 1.5}, {"factor": 1.5}),  # a knob given replaces the preset's
    ("eb", {}, {"gamma": 1.0}),
    ("llada", {}, {}),  # its default preset is empty: the options' defaults
])
def test_spiffy_takes_its_bases_default_preset_when_no_knob_is_given(base, given, want):
    from numerics.sampling.registry import spec

    N = None if base != "llada" else make_schedule("linear", 4)
    dec = Spiffy(N, 2, base, tuple(given.items()))
    assert dec.resolved_base_options == want
    assert dec.base_sampler == spec(base).build(want, steps=None if N is None else 4, schedule=N, tie_seed=0)


@pytest.mark.parametrize("make, words", [
    (lambda: Assd(0).sample(LANGS["hmm"], L, 1, np.random.default_rng(0)), "draft length 0"),
    (lambda: Assd(2, "right-to-left"), "assd: unknown order 'right-to-left'"),
    (lambda: SelfSpec(L + 1).sample(LANGS["hmm"], L, 1, np.random.default_rng(0)), "draft length 5"),
    (lambda: Spiffy(make_schedule("linear", 3), 2, base="nope"), "unknown base sampler 'nope'"),
    (lambda: Spiffy(None, 2, base="llada").base_sampler, "spiffy needs the base sampler's steps N"),
    (lambda: Spiffy(make_schedule("linear", 3), 2, base="fast-dllm").base_sampler, "fast-dllm takes no steps N"),
    (lambda: Spiffy(None, 2, base="fast-dllm", base_options=(("gamma", 1.0),)).base_sampler,
     "base sampler fast-dllm: the fast-dllm decoder does not take gamma"),
    (lambda: Spiffy(None, 2, base="fast-dllm", base_options=(("factor", 1.0), ("threshold", 0.5))).base_sampler,
     r"exactly one of threshold \(tau\) and factor \(f\) \(its options by --base-option NAME=VALUE, NAME one of "
     r"\('block_length', 'temperature', 'threshold', 'factor'\)\)"),
    (lambda: BlockChain(Spiffy(None, 2, "eb", (("block_length", 16), ("gamma", 1.0))).base_sampler, 16, 2),
     "V\\^B = 2\\^16 draws of a step, beyond 4096: its acceptance ratio is the law of the step's next canvas.*"
     "V\\^B <= 4096 \\(here B <= 12: --base-option block_length=B\\)"),
    (lambda: Spiffy(make_schedule("linear", 3), 4).sample(LANGS["hmm"], L, 1, np.random.default_rng(0)),
     "draft length 4"),
])
def test_bad_parameters_are_named(make, words):
    with pytest.raises(LosslessError, match=words):
        make()
