"""Sequence entropy: exact chain rule for n-grams vs enumeration; Monte Carlo within its interval."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import entr

from numerics.exact.entropy import (
    data_perplexity,
    entropy_rate,
    ngram_sequence_entropy,
    sequence_entropy,
    sequence_entropy_mc,
)
from numerics.languages.generators import random_ngram
from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from tests.gof import within_z
from tests.strategies import small_ngrams
from tests.tolerances import RTOL_EXACT


def _ngram_law(ng: NGram, L: int) -> np.ndarray:
    """Brute force: q(x) for every x in V^L (row-major), summing over the hidden first window."""
    V, succ = ng.vocab_size, ng.successors()
    law = np.zeros(V**L)
    for i, x in enumerate(itertools.product(range(V), repeat=L)):
        for s in range(ng.n_states):
            if s % V != x[0]:
                continue
            w, state = ng.initial[s], s
            for v in x[1:]:
                w *= ng.conditional[state, v]
                state = succ[state, v]
            law[i] += w
    return law


@pytest.mark.parametrize("n,V", [(2, 2), (2, 3), (3, 2), (3, 3), (4, 2)])
def test_ngram_entropy_equals_enumeration(n, V):
    ng = random_ngram(n, V, 1.0, 0.2, seed=np.random.default_rng(10 * n + V))
    for L in range(1, 6):
        law = _ngram_law(ng, L)
        assert math.isclose(law.sum(), 1.0, rel_tol=RTOL_EXACT)
        assert ngram_sequence_entropy(ng, L) == pytest.approx(entr(law).sum(), rel=RTOL_EXACT)


@given(small_ngrams(max_order=3, max_vocab=3), st.integers(1, 4))
def test_ngram_entropy_property(ng, L):
    exact = entr(_ngram_law(ng, L)).sum()
    assert ngram_sequence_entropy(ng, L) == pytest.approx(exact, rel=RTOL_EXACT, abs=1e-14)


def test_hand_checked_markov_chain():
    # x_1 uniform on {0, 1}; after 0 always 0, after 1 uniform. P(x_j = 1) = 2^-j, and only a 1
    # leaves an uncertain successor: H(X_1..X_L) = log 2 (1 + sum_{j=1}^{L-1} 2^-j) = log 2 (2 - 2^(1-L)).
    ng = NGram(2, np.array([0.5, 0.5]), np.array([[1.0, 0.0], [0.5, 0.5]]))
    for L in (1, 2, 3, 10):
        assert ngram_sequence_entropy(ng, L) == pytest.approx(math.log(2) * (2 - 2.0 ** (1 - L)), rel=RTOL_EXACT)
    H = sequence_entropy(ng, 3)
    assert H.exact and H.method == "ngram-chain-rule" and H.value == pytest.approx(1.75 * math.log(2))
    assert entropy_rate(ng, 3).value == pytest.approx(1.75 * math.log(2) / 3, rel=RTOL_EXACT)
    assert data_perplexity(ng, 3).value == pytest.approx(2 ** (1.75 / 3), rel=RTOL_EXACT)


def test_interval_entropy_equals_enumeration():
    lang = IntervalLanguage(3)
    for L in (3, 4, 5):
        every = np.array(list(itertools.product(range(lang.vocab_size), repeat=L)))
        law = np.exp(lang.log_prob(every))
        assert sequence_entropy(lang, L).value == pytest.approx(entr(law).sum(), rel=RTOL_EXACT)


def test_mc_entropy_of_dense_hmm_within_its_interval_of_the_exact_value():
    ng = random_ngram(3, 3, 1.0, 0.2, seed=np.random.default_rng(5))
    L = 12
    exact = ngram_sequence_entropy(ng, L)
    est = sequence_entropy(ng.to_hmm(), L, samples=3000, rng=np.random.default_rng(11))
    assert est.method == "mc" and est.samples == 3000 and 0 < est.stderr < 0.1
    assert within_z(est.value, exact, est.stderr)
    rate = entropy_rate(ng.to_hmm(), L, samples=3000, rng=11)  # same seed, same draws
    assert rate.value == pytest.approx(est.value / L, rel=RTOL_EXACT)
    assert rate.stderr == pytest.approx(est.stderr / L, rel=RTOL_EXACT)


def test_mc_entropy_of_interval_hmm():
    lang = IntervalLanguage(4)
    hmm = lang.minimal_hmm().to_hmm()
    est = sequence_entropy_mc(hmm, 10, 400, np.random.default_rng(2))
    # uniform on its support: -log q(x) is the same constant for every sample
    assert est.value == pytest.approx(lang.sequence_entropy(10), rel=RTOL_EXACT)
    assert est.stderr < 1e-12


def test_errors():
    hmm = HMM(np.array([1.0]), np.array([[1.0]]), np.array([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="pass rng"):
        sequence_entropy(hmm, 4)
    with pytest.raises(ValueError, match="positive integer"):
        sequence_entropy(hmm, 0, rng=0)
    with pytest.raises(TypeError, match="NGram"):
        ngram_sequence_entropy(hmm, 3)
    # i.i.d. fair coin as a 1-state HMM: every sample has -log q = L log 2 exactly
    assert sequence_entropy(hmm, 5, samples=10, rng=0).value == pytest.approx(5 * math.log(2), rel=RTOL_EXACT)
