"""The uniform-noise oracle (soft-evidence forward-backward) against brute force and the masked posterior.

Brute force: enumerate every sequence ``x`` of the language's law (:mod:`tests.oracles`, no shared code)
and sum ``q(x) prod_j l_j(x_j)``; the noisy-canvas law ``q(y) = sum_x q(x) prod_j q(y_j | x_j)`` is also
checked as a distribution (it sums to 1 over all canvases).
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.inference import masked_forward_backward
from numerics.inference.soft_evidence import (
    evidence_forward_backward,
    leave_one_out,
    masked_evidence,
    uniform_noise_evidence,
    uniform_noise_posterior,
)
from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from tests.oracles import all_masks, hmm_law, ngram_law
from tests.strategies import small_hmms, small_ngrams
from tests.tolerances import ATOL_LOG, ATOL_PROB, RTOL_EXACT, RTOL_TWIN

HMM3 = HMM(np.array([0.6, 0.3, 0.1]), np.array([[0.7, 0.3, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0]]),
           np.array([[0.9, 0.1, 0.0], [0.0, 0.5, 0.5], [0.0, 1.0, 0.0]]))  # zeros: some sequences impossible
NG3 = NGram(3, np.array([0.3, 0.2, 0.1, 0.4]),
            np.array([[0.9, 0.1], [0.0, 1.0], [0.5, 0.5], [0.7, 0.3]]))


def _law(lang, L):
    if isinstance(lang, NGram):
        return ngram_law(lang, L)
    return hmm_law(lang.to_hmm(), L)


def _brute(xs, q, lik):
    """``(loglik, marginals, cavity)`` of one evidence ``lik`` ``(L, V)`` by enumeration."""
    L, V = lik.shape
    w = q * np.prod(lik[np.arange(L), xs], axis=1)
    tot = w.sum()
    marg = np.array([[w[xs[:, j] == v].sum() for v in range(V)] for j in range(L)]) / tot
    cav = np.empty((L, V))
    for j in range(L):
        others = np.prod(np.delete(lik, j, axis=0)[np.arange(L - 1), np.delete(xs, j, axis=1)], axis=1)
        wj = q * others
        cav[j] = [wj[xs[:, j] == v].sum() for v in range(V)]
        cav[j] /= cav[j].sum()
    return np.log(tot), marg, cav


@pytest.mark.parametrize("lang", [HMM3, NG3, NGram(2, np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.3, 0.7]]))],
                         ids=["hmm3", "3gram", "2gram"])
def test_uniform_noise_matches_brute_force(lang):
    L, V = 4, lang.vocab_size
    xs, q = _law(lang, L)
    rng = np.random.default_rng(0)
    canvas = rng.integers(0, V, size=(6, L))
    alpha = rng.random((6, L))
    alpha[0, 1] = 0.0
    alpha[1, 2] = 1.0
    post = uniform_noise_posterior(lang, canvas, alpha)
    lik = uniform_noise_evidence(lang, canvas, alpha).likelihood(V)
    for b in range(6):
        ll, marg, cav = _brute(xs, q, lik[b])
        np.testing.assert_allclose(post.loglik[b], ll, rtol=RTOL_EXACT, atol=ATOL_LOG)
        np.testing.assert_allclose(post.marginals[b], marg, rtol=RTOL_EXACT, atol=ATOL_PROB)
        np.testing.assert_allclose(post.cavity[b], cav, rtol=RTOL_EXACT, atol=ATOL_PROB)


def test_noisy_canvas_law_sums_to_one():
    """``q(y)`` over all ``V^L`` canvases is a probability law, at per-position alphas."""
    L = 3
    alpha = np.array([0.2, 0.9, 0.5])
    canvases = np.array(list(product(range(3), repeat=L)))
    ll = uniform_noise_posterior(HMM3, canvases, alpha).loglik
    assert np.exp(ll).sum() == pytest.approx(1.0, rel=RTOL_EXACT)


@pytest.mark.parametrize("lang", [HMM3, NG3], ids=["hmm3", "3gram"])
def test_masked_is_the_special_case(lang):
    """Masked evidence through the soft recursion is the masked forward-backward; uniform noise at
    alpha in {0, 1} is masking with log q(y) lower by log V per alpha = 0 position."""
    L, V = 5, lang.vocab_size
    masks = np.tile(all_masks(L), (8, 1))
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, V, size=masks.shape)
    ref = masked_forward_backward(lang, tokens, masks)
    soft = evidence_forward_backward(lang, masked_evidence(lang, tokens, masks))
    ok = np.isfinite(ref.loglik)
    assert ok.sum() > 5 and (~ok).sum() > 0  # both possible and impossible observations are exercised
    np.testing.assert_array_equal(soft.loglik == -np.inf, ~ok)
    np.testing.assert_allclose(soft.loglik[ok], ref.loglik[ok], rtol=RTOL_EXACT, atol=ATOL_LOG)
    np.testing.assert_allclose(soft.marginals[ok], ref.marginals[ok], rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert np.isnan(soft.marginals[~ok]).all()
    noisy = uniform_noise_posterior(lang, tokens, (~masks).astype(float))
    np.testing.assert_allclose(noisy.loglik[ok], ref.loglik[ok] - masks[ok].sum(1) * np.log(V), rtol=RTOL_EXACT)
    np.testing.assert_allclose(noisy.marginals[ok], ref.marginals[ok], rtol=RTOL_EXACT, atol=ATOL_PROB)


def test_near_the_limits_the_posterior_is_continuous():
    """alpha -> 1 at the observed positions and -> 0 at the masked ones: the noisy posterior tends to the
    masked one (its distance shrinks with the gap)."""
    tokens = np.array([[0, 1, 1, 2, 0]])
    mask = np.array([[False, True, False, True, True]])
    ref = masked_forward_backward(HMM3, tokens, mask).marginals
    gaps = []
    for eps in (1e-2, 1e-4, 1e-6):
        alpha = np.where(mask, eps, 1 - eps)
        gaps.append(np.abs(uniform_noise_posterior(HMM3, tokens, alpha).marginals - ref).max())
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-4


def test_leave_one_out_of_complete_sequences():
    """``q(x_j | x_{-j})`` by enumeration, including a sequence outside the support (its cavities are
    defined where the other tokens are jointly possible)."""
    L = 4
    xs, q = _law(NG3, L)
    pick = np.r_[np.flatnonzero(q == 0)[:3], np.flatnonzero(q > 0)[:3]]
    seqs = xs[pick]
    loo = leave_one_out(NG3, seqs)
    for b, x in enumerate(seqs):
        for j in range(L):
            others = np.all(np.delete(xs, j, axis=1) == np.delete(x, j), axis=1)
            w = np.array([q[others & (xs[:, j] == v)].sum() for v in range(2)])
            if w.sum() == 0:
                assert np.isnan(loo[b, j]).all()
            else:
                np.testing.assert_allclose(loo[b, j], w / w.sum(), rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert np.isfinite(loo[:3]).any() and np.isnan(loo[:3]).any()  # the impossible ones: some defined, some not


def test_interval_language_posterior_by_enumeration():
    """The interval language (l = 3) read through its HMM form, against its direct support."""
    lang = IntervalLanguage(3)
    sup = lang.interval_support()  # (K, 3), uniform
    L, V = 3, lang.vocab_size
    rng = np.random.default_rng(2)
    canvas = rng.integers(0, V, size=(5, L))
    alpha = rng.random((5, L))
    post = uniform_noise_posterior(lang, canvas, alpha)
    lik = uniform_noise_evidence(lang, canvas, alpha).likelihood(V)
    for b in range(5):
        ll, marg, cav = _brute(sup, np.full(len(sup), 1.0 / len(sup)), lik[b])
        np.testing.assert_allclose(post.loglik[b], ll, rtol=RTOL_EXACT)
        np.testing.assert_allclose(post.marginals[b], marg, rtol=RTOL_EXACT, atol=ATOL_PROB)


@settings(deadline=None, max_examples=25)
@given(lang=st.one_of(small_hmms(), small_ngrams()), seed=st.integers(0, 2**16))
def test_random_languages_against_brute_force(lang, seed):
    L, V = 3, lang.vocab_size
    xs, q = _law(lang, L)
    rng = np.random.default_rng(seed)
    canvas = rng.integers(0, V, size=(3, L))
    alpha = rng.random((3, L))
    post = uniform_noise_posterior(lang, canvas, alpha)
    lik = uniform_noise_evidence(lang, canvas, alpha).likelihood(V)
    for b in range(3):
        ll, marg, _ = _brute(xs, q, lik[b])
        if np.isfinite(ll):
            np.testing.assert_allclose(post.loglik[b], ll, rtol=RTOL_EXACT, atol=ATOL_LOG)
            np.testing.assert_allclose(post.marginals[b], marg, rtol=RTOL_EXACT, atol=ATOL_PROB)
        else:
            assert post.loglik[b] == -np.inf


@pytest.mark.parametrize(("canvas", "alpha", "match"), [
    ([[0, 1, 2]], 1.5, "alpha must lie in \\[0, 1\\]"),
    ([[0, 1, 2]], -0.1, "alpha must lie in \\[0, 1\\]"),
    ([[0, 1, 2]], np.nan, "alpha must lie in \\[0, 1\\]"),
    ([[0, 3, 2]], 0.5, "canvas token 3 at sequence 0, position 1 is outside the vocabulary 0..2"),
    ([[0, -1, 2]], 0.5, "outside the vocabulary"),
    ([[0, 1, 2]], [0.5, 0.5], "does not broadcast"),
])
def test_bad_input_is_named(canvas, alpha, match):
    with pytest.raises(ValueError, match=match):
        uniform_noise_posterior(HMM3, np.array(canvas), alpha)


@pytest.mark.parametrize("lang", [HMM3, IntervalLanguage(3)], ids=["hmm3", "interval"])
def test_compiled_kernel_against_its_numpy_twin(lang):
    """The dense kernel and the NumPy recursion, on noisy canvases and on masked observations (possible
    and impossible ones), at a length where the scaling matters."""
    rng = np.random.default_rng(3)
    B, L, V = 24, 60, lang.vocab_size
    tokens = rng.integers(0, V, size=(B, L))
    for ev in (uniform_noise_evidence(lang, tokens, rng.random((B, L))),
               masked_evidence(lang, tokens, rng.random((B, L)) < 0.8)):
        fast = evidence_forward_backward(lang, ev)
        twin = evidence_forward_backward(lang, ev, backend="numpy")
        np.testing.assert_array_equal(np.isfinite(fast.loglik), np.isfinite(twin.loglik))
        np.testing.assert_allclose(fast.loglik, twin.loglik, rtol=RTOL_TWIN)
        np.testing.assert_allclose(fast.marginals, twin.marginals, rtol=RTOL_TWIN, atol=ATOL_PROB)
        np.testing.assert_allclose(fast.cavity, twin.cavity, rtol=RTOL_TWIN, atol=ATOL_PROB)
    assert np.isinf(fast.loglik).any() and np.isfinite(fast.loglik).any()
