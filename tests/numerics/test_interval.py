"""The Theorem 4.4 interval language: direct law, validity, both HMM forms, sampling, truncation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.interval import (
    DENSE_MAX_STATES,
    IntervalLanguage,
    whole_intervals,
)
from tests.gof import assert_gof
from tests.tolerances import RTOL_EXACT


def _dense_loglik(hmm, tokens: np.ndarray) -> np.ndarray:
    """Independent oracle: a batched dense scaled forward pass (HMM arrays only), -inf when impossible."""
    A, E = hmm.transition, hmm.emission
    alpha = hmm.initial[None, :] * E[:, tokens[:, 0]].T
    ll = np.zeros(tokens.shape[0])
    for j in range(tokens.shape[1]):
        if j:
            alpha = (alpha @ A) * E[:, tokens[:, j]].T
        c = alpha.sum(axis=1)
        with np.errstate(divide="ignore"):
            ll += np.log(c)
        alpha = alpha / np.where(c > 0, c, 1.0)[:, None]
    return ll


def _support(lang: IntervalLanguage, length: int) -> np.ndarray:
    """Every sequence of positive probability: all values of the pair bits the sequence shows."""
    l, pairs = lang.l, lang.pairs
    n_int, m = -(-length // l), length % l
    free = [(i, p) for i in range(n_int) for p, (j, _) in enumerate(pairs) if i < n_int - 1 or m == 0 or j < m]
    assert len(free) == lang.n_free_bits(length)
    codes = np.arange(2 ** len(free), dtype=np.int64)
    bits = np.zeros((codes.size, n_int, len(pairs)), dtype=np.int64)
    for t, (i, p) in enumerate(free):
        bits[:, i, p] = (codes >> t) & 1
    return lang.tokens_from_bits(bits).reshape(codes.size, n_int * l)[:, :length]


def test_token_layout_matches_note_c8_by_hand():
    # l = 3, pair bits b01 = 1, b02 = 0, b12 = 1 (order of lang.pairs: (0,1), (0,2), (1,2)).
    # x_0 shows partners (1, 2): bits (b01, b02) = (1, 0) -> 1; x_1 shows (0, 2): (b01, b12) = (1, 1) -> 3;
    # x_2 shows (0, 1): (b02, b12) = (0, 1) -> 2  (bit i = i-th partner in increasing order).
    lang = IntervalLanguage(3)
    assert lang.pairs == [(0, 1), (0, 2), (1, 2)]
    np.testing.assert_array_equal(lang.tokens_from_bits([1, 0, 1]), [1, 3, 2])
    assert lang.is_valid([[1, 3, 2]])[0] and not lang.is_valid([[1, 3, 0]])[0]


@pytest.mark.parametrize("l", [2, 3, 4, 5])
def test_support_and_validity_by_enumeration(l):
    lang = IntervalLanguage(l)
    support = lang.interval_support()
    P = l * (l - 1) // 2
    assert support.shape == (2**P, l) and lang.vocab_size == 2 ** (l - 1)
    assert len({tuple(r) for r in support}) == 2**P  # the bit-to-token map is injective
    assert lang.is_valid(support).all()
    if lang.vocab_size**l <= 5000:
        every = np.array(list(itertools.product(range(lang.vocab_size), repeat=l)))
        assert lang.is_valid(every).sum() == 2**P  # validity holds exactly on the enumerated support
    lp = lang.log_prob(support)
    np.testing.assert_allclose(lp, -P * math.log(2.0), rtol=RTOL_EXACT)
    assert math.isclose(np.exp(lp).sum(), 1.0, rel_tol=RTOL_EXACT)


def test_is_valid_agrees_with_interval_membership_on_random_tokens():
    lang, rng = IntervalLanguage(4), np.random.default_rng(0)
    valid_set = {tuple(r) for r in lang.interval_support()}
    x = rng.integers(0, lang.vocab_size, size=(3000, 8))
    x[:1500] = lang.sample(1500, 8, rng)  # half of them valid
    rng.shuffle(x)
    expected = [all(tuple(row[i : i + 4]) in valid_set for i in (0, 4)) for row in x]
    np.testing.assert_array_equal(lang.is_valid(x), expected)


@pytest.mark.parametrize("l", [2, 3, 4])
def test_both_hmms_define_the_direct_law(l):
    lang = IntervalLanguage(l)
    paper, minimal = lang.paper_hmm(), lang.minimal_hmm()
    assert (paper.n_states, minimal.n_states) == (lang.state_count("paper"), lang.n_states)
    dense = {"paper": paper.to_hmm(), "minimal": minimal.to_hmm()}
    for L in range(1, 2 * l + 1):
        if lang.vocab_size**L <= 5_000:  # every sequence, the impossible ones included
            x = np.array(list(itertools.product(range(lang.vocab_size), repeat=L)))
        else:  # the whole support: total mass 1 on it leaves 0 for every other sequence
            x = _support(lang, L)
        direct = lang.log_prob(x)
        assert math.isclose(np.exp(direct).sum(), 1.0, rel_tol=RTOL_EXACT)
        assert np.isfinite(direct).sum() == 2 ** lang.n_free_bits(L)
        for got in (paper.log_prob(x), minimal.log_prob(x), _dense_loglik(dense["paper"], x),
                    _dense_loglik(dense["minimal"], x)):
            np.testing.assert_array_equal(np.isneginf(got), np.isneginf(direct))
            np.testing.assert_allclose(got[np.isfinite(direct)], direct[np.isfinite(direct)], rtol=RTOL_EXACT)


def test_paper_and_minimal_hmm_for_l5():
    lang = IntervalLanguage(5)
    paper, minimal = lang.paper_hmm(), lang.minimal_hmm()
    assert (paper.n_states, minimal.n_states) == (2704, 544)
    x = _support(lang, 5)  # one whole interval: total mass 1 on the 2^10 valid ones
    direct = lang.log_prob(x)
    assert math.isclose(np.exp(direct).sum(), 1.0, rel_tol=RTOL_EXACT)
    y = lang.sample(300, 12, np.random.default_rng(3))  # two intervals and a partial third
    bad = y.copy()
    bad[:, 6] ^= 1  # flips x_6's bit for partner 5: pair (5, 6) disagrees
    for hmm in (paper, minimal):
        np.testing.assert_allclose(hmm.log_prob(x), direct, rtol=RTOL_EXACT)
        np.testing.assert_allclose(hmm.log_prob(y), lang.log_prob(y), rtol=RTOL_EXACT)
        assert np.isneginf(hmm.log_prob(bad)).all()
    assert not lang.is_valid(bad).any()


def test_public_forward_backward_gives_the_direct_posterior():
    # q(x_j = v | observed) of the dense minimal HMM (through masked_forward_backward) against the
    # conditional law of the direct construction, by enumeration over all completions.
    lang = IntervalLanguage(3)
    hmm = lang.minimal_hmm().to_hmm()
    L, V = 5, lang.vocab_size
    every = np.array(list(itertools.product(range(V), repeat=L)))
    prob = np.exp(lang.log_prob(every))
    rng = np.random.default_rng(1)
    x = lang.sample(40, L, rng)
    mask = rng.random((40, L)) < 0.5
    post = masked_forward_backward(hmm, x, mask)
    for b in range(40):
        agree = np.all((every == x[b]) | mask[b], axis=1)
        w = prob * agree
        np.testing.assert_allclose(np.exp(post.loglik[b]), w.sum(), rtol=RTOL_EXACT)
        for j in np.flatnonzero(mask[b]):
            cond = np.bincount(every[:, j], weights=w, minlength=V) / w.sum()
            np.testing.assert_allclose(post.marginals[b, j], cond, rtol=RTOL_EXACT, atol=1e-15)


def test_truncation_is_the_marginal_of_the_longer_language():
    # L not a multiple of l: the language of length L is the first L tokens of ceil(L/l) intervals.
    lang = IntervalLanguage(3)
    V = lang.vocab_size
    full = np.array(list(itertools.product(range(V), repeat=6)))
    p_full = np.exp(lang.log_prob(full))
    for L in (4, 5):
        short = np.array(list(itertools.product(range(V), repeat=L)))
        index = (full[:, :L] * V ** np.arange(L - 1, -1, -1)).sum(axis=1)
        marginal = np.bincount(index, weights=p_full, minlength=V**L)
        np.testing.assert_allclose(np.exp(lang.log_prob(short)), marginal, rtol=RTOL_EXACT, atol=0)


def _chi2_check(samples: np.ndarray, support: np.ndarray, prob: float) -> None:
    """The samples are uniform on ``support`` (each sequence of probability ``prob``), and never outside it."""
    index = {tuple(r): i for i, r in enumerate(support)}
    cells = [index.get(tuple(r), -1) for r in samples]
    assert min(cells) >= 0, "a sample lies outside the support"
    assert_gof(np.bincount(cells, minlength=len(support)), np.full(len(support), prob), "interval samples")


@pytest.mark.parametrize("sampler", ["direct", "paper", "minimal", "dense-minimal"])
def test_sampling_matches_the_law(sampler):
    lang = IntervalLanguage(3)
    L, n = 4, 16_000  # 2^5 = 32 equally likely sequences, 500 expected per cell
    draw = {
        "direct": lang.sample,
        "paper": lang.paper_hmm().sample,
        "minimal": lang.minimal_hmm().sample,
        "dense-minimal": lang.minimal_hmm().to_hmm().sample,
    }[sampler]
    support = _support(lang, L)
    _chi2_check(draw(n, L, np.random.default_rng(7)), support, 2.0 ** -lang.n_free_bits(L))


def test_whole_intervals_and_errors():
    assert whole_intervals(20, 5) == 4
    with pytest.raises(ValueError, match="not a multiple of the interval length l = 5"):
        whole_intervals(21, 5)
    for bad in (1, 8, 2.5):
        with pytest.raises(ValueError, match="interval length"):
            IntervalLanguage(bad)
    lang = IntervalLanguage(3)
    with pytest.raises(ValueError, match="outside 0..3"):
        lang.is_valid([[0, 4, 1]])
    with pytest.raises(ValueError, match="states"):
        IntervalLanguage(6).minimal_hmm().to_hmm()  # 5184 > DENSE_MAX_STATES
    assert IntervalLanguage(6).n_states > DENSE_MAX_STATES
    with pytest.raises(ValueError, match="states"):
        IntervalLanguage(6).kernel_language()  # what the kernels read: refused the same way
    assert lang.sequence_entropy(4) == pytest.approx(lang.n_free_bits(4) * math.log(2.0), rel=RTOL_EXACT)
