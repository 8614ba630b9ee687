"""Exact Jensen bound of Markov chains: closed form == literal chain rule == information curve == enumeration."""

import itertools
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.information_curve import (
    information_curve_table,
    jensen_bound_from_curve,
)
from numerics.exact.joint_table import joint_table, subset_entropies
from numerics.exact.markov import (
    MarkovChain,
    information_curve_markov,
    jensen_bound_markov,
    jensen_step_weights,
    markov_chain_of,
    markov_subset_entropy,
)
from numerics.languages.hmm import HMM, NGram
from numerics.schedules import cosine, from_u, linear
from tests._exact_helpers import assume_representable
from tests.strategies import schedules, small_ngrams, stochastic_rows
from tests.tolerances import ATOL_ENTROPY, RTOL_EXACT

RTOL_LARGE = 1e-10  # L = 512: the information-curve sum cancels terms O(1/pi_i) larger than the result


def _chain(rng, V, power=3.0):
    def rows(*shape):
        w = rng.random(shape) ** power
        return w / w.sum(axis=-1, keepdims=True)

    return MarkovChain(rows(V), rows(V, V))


@st.composite
def markov_chains(draw, max_vocab=3):
    V = draw(st.integers(1, max_vocab))
    return MarkovChain(draw(stochastic_rows(1, V))[0], draw(stochastic_rows(V, V)))


def test_subset_entropy_formula_matches_the_table():
    chain = _chain(np.random.default_rng(0), 3)
    L = 5
    H = subset_entropies(joint_table(chain.to_hmm(), L))
    for mask in range(1 << L):
        positions = [j for j in range(L) if (mask >> j) & 1]
        assert markov_subset_entropy(chain, positions) == pytest.approx(H[mask], rel=RTOL_EXACT, abs=ATOL_ENTROPY)


def test_step_weights_recursion_equals_the_direct_formula():
    # w_d = (a+b)^2 y^(d-1) - (a^2 + 2ab) x^(d-1) + (d-1) a^2 b x^(d-2): no cancellation for b ~ 1/3
    a = np.array([0.0, 0.2, 0.5, 0.3])
    b = np.array([0.4, 0.3, 0.5, 0.7])
    L = 12
    w = jensen_step_weights(a, b, L)
    x, y = 1 - a, 1 - a - b
    for d in range(1, L):
        direct = (a + b) ** 2 * y ** (d - 1) - (a * a + 2 * a * b) * x ** (d - 1)
        if d >= 2:
            direct = direct + (d - 1) * a * a * b * x ** (d - 2)
        np.testing.assert_allclose(w[:, d], direct, rtol=1e-11, atol=1e-16)


def test_closed_form_equals_the_literal_expectation_over_revealed_sets():
    """sum over all disjoint (S, D) of P(S, D) [sum_{j in D} H(X_j|X_S) - H(X_D|X_S)], entropies by the formula."""
    chain = _chain(np.random.default_rng(1), 2)
    L = 5
    schedule = from_u([0.0, 0.25, 0.7, 1.0])
    H = {}
    for mask in range(1 << L):
        H[mask] = markov_subset_entropy(chain, [j for j in range(L) if (mask >> j) & 1])
    literal = np.zeros(schedule.n_steps)
    for i in range(schedule.n_steps):
        a, b, c = schedule.u[i], schedule.pi[i], 1 - schedule.u[i + 1]
        for labels in itertools.product((0, 1, 2), repeat=L):  # 0: in S, 1: in D, 2: later
            S = sum(1 << j for j in range(L) if labels[j] == 0)
            D = [j for j in range(L) if labels[j] == 1]
            prob = a ** labels.count(0) * b ** labels.count(1) * c ** labels.count(2)
            tc = sum(H[S | 1 << j] - H[S] for j in D) - (H[S | sum(1 << j for j in D)] - H[S])
            literal[i] += prob * tc
    closed = jensen_bound_markov(chain, L, schedule).per_step
    np.testing.assert_allclose(closed, literal, rtol=RTOL_EXACT, atol=ATOL_ENTROPY)


@given(chain=st.one_of(markov_chains(), small_ngrams(max_order=2, max_vocab=3)), schedule=schedules(max_steps=4), length=st.integers(1, 5))
def test_four_methods_agree(chain, schedule, length):
    assume_representable(markov_chain_of(chain).to_hmm(), length)
    enum = enumerate_output_law(markov_chain_of(chain).to_hmm(), length, schedule).kl_jensen_bound.value
    closed = jensen_bound_markov(chain, length, schedule).total.value
    curve_table = jensen_bound_from_curve(information_curve_table(markov_chain_of(chain).to_hmm(), length), schedule)
    curve_markov = jensen_bound_from_curve(information_curve_markov(chain, length), schedule)
    for value in (closed, curve_table.total.value, curve_markov.total.value):
        assert value == pytest.approx(enum, rel=RTOL_EXACT, abs=ATOL_ENTROPY)


@given(chain=markov_chains(max_vocab=2), schedule=schedules(max_steps=3))
def test_refining_the_steps_never_increases_the_jensen_bound(chain, schedule):
    """TC(D1 + D2 | S) >= TC(D1 | S) + TC(D2 | S + D1) instance by instance (conditioning reduces entropy)."""
    u = schedule.u
    fine = from_u(np.sort(np.concatenate([u, (u[:-1] + u[1:]) / 2])))
    L = 6
    assert jensen_bound_markov(chain, L, fine).total.value <= jensen_bound_markov(chain, L, schedule).total.value + ATOL_ENTROPY


def test_reductions_to_token_chains():
    rng = np.random.default_rng(2)
    chain = _chain(rng, 2)
    # a 3-gram whose next token depends on the newest token only
    V = 2
    newest = np.arange(V * V) % V
    ngram3 = NGram(3, rng.dirichlet(np.ones(V * V)), chain.transition[newest])
    reduced = markov_chain_of(ngram3)
    L, schedule = 4, cosine(3)
    enum = enumerate_output_law(ngram3, L, schedule).kl_jensen_bound.value
    assert jensen_bound_markov(reduced, L, schedule).total.value == pytest.approx(enum, rel=RTOL_EXACT)
    # an HMM whose states emit tokens one-to-one (a permutation)
    perm = np.array([[0.0, 1.0], [1.0, 0.0]])
    hmm = HMM(chain.initial, chain.transition, perm)
    enum = enumerate_output_law(hmm, L, schedule).kl_jensen_bound.value
    assert jensen_bound_markov(hmm, L, schedule).total.value == pytest.approx(enum, rel=RTOL_EXACT)
    with pytest.raises(ValueError, match="not a first-order Markov chain"):
        markov_chain_of(HMM(chain.initial, chain.transition, np.full((2, 2), 0.5)))


def test_window_chain_is_not_the_token_language():
    """The check the brief asks for: a 3-gram as a Markov chain over windows gives the Jensen bound of
    the *window* language (tokens = windows), which differs from the 3-gram's own."""
    rng = np.random.default_rng(3)
    V = 2
    ngram = NGram(3, rng.dirichlet(np.ones(V * V)), rng.dirichlet(np.ones(V) * 0.5, size=V * V))
    with pytest.raises(ValueError, match="windows"):
        markov_chain_of(ngram)
    hmm = ngram.to_hmm()
    window_chain = MarkovChain(hmm.initial, hmm.transition)
    L, schedule = 4, linear(2)
    on_windows = jensen_bound_markov(window_chain, L, schedule).total.value
    window_language = enumerate_output_law(window_chain.to_hmm(), L, schedule).kl_jensen_bound.value
    token_language = enumerate_output_law(ngram, L, schedule).kl_jensen_bound.value
    assert on_windows == pytest.approx(window_language, rel=RTOL_EXACT)
    assert abs(on_windows - token_language) > 1e-3 * token_language


def test_iid_chain_has_no_factorization_error():
    m = np.array([0.2, 0.3, 0.5])
    chain = MarkovChain(m, np.tile(m, (3, 1)))
    bound = jensen_bound_markov(chain, 50, linear(4))
    assert abs(bound.total.value) < 1e-12


def test_paper_scale_in_seconds_and_the_two_methods_agree():
    rng = np.random.default_rng(4)
    chain = _chain(rng, 8, power=6.0)
    start = time.perf_counter()
    big = jensen_bound_markov(chain, 2048, linear(2048))
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0  # about 0.3 s on an idle core
    assert big.total.value > 0 and big.per_step.shape == (2048,)
    for N in (8, 256):
        a = jensen_bound_markov(chain, 512, cosine(N)).total.value
        b = jensen_bound_from_curve(information_curve_markov(chain, 512), cosine(N)).total.value
        assert b == pytest.approx(a, rel=RTOL_LARGE)


def test_jensen_bound_with_precomputed_informations_is_the_same_number():
    """A curve over N computes the pair informations once (validation/experiments/realtext.py)."""
    from numerics.exact.markov import jensen_bound_markov, markov_chain_of, pair_informations
    from numerics.languages.generators import random_ngram
    from numerics.schedules import make_schedule

    lang = random_ngram(2, 5, 2.0, 0.05, seed=3)
    iota = pair_informations(markov_chain_of(lang), 12)
    for n in (1, 3, 12):
        s = make_schedule("cosine", n)
        assert jensen_bound_markov(lang, 12, s, iota).total.value == jensen_bound_markov(lang, 12, s).total.value
    with pytest.raises(ValueError, match=r"expected \(12,\)"):
        jensen_bound_markov(lang, 12, make_schedule("linear", 2), iota[:-1])
