"""Masked forward-backward: compiled kernels and NumPy twin against independent oracles.

Oracles: brute-force enumeration of every hidden path and every completion of the masked positions
(tiny sizes), the total probability over all sequences, the chain rule through the forward-only
log-likelihood, hmmlearn's scaled recursions, a log-space twin written here (long sequences), and
closed forms (one state, all masked).
"""

from itertools import product

import numba
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from numerics import (
    HMM,
    NGram,
    forward_backward_numpy,
    log_likelihood,
    masked_forward_backward,
)
from numerics.inference import _dense
from numerics.languages.generators import random_hmm, random_ngram
from tests.oracles import (
    all_masks,
    hmm_law,
    logspace_forward_backward,
    ngram_law,
    posterior_by_enumeration,
)
from tests.strategies import observations, small_hmms, small_ngrams
from tests.tolerances import ATOL_LOG, ATOL_PROB, RTOL_EXACT, RTOL_TWIN
from validation.reference import hmmlearn_forward_backward

ATOL_LOGLIK = 1e-10  # agreement with hmmlearn on log q of sequences of length ~50 (|log q| ~ 100)
RTOL_LOGSPACE = 1e-9  # log-space twin at L = 4096: its log values carry ~L * eps * |log q| error

BACKENDS = ["numba", "numpy"]


# ------------------------------------------------------------------------------------------------
# oracles
# ------------------------------------------------------------------------------------------------


def assert_posterior(post, ll, marg, rtol=RTOL_EXACT, atol=ATOL_PROB):
    np.testing.assert_array_equal(np.isneginf(post.loglik), np.isneginf(ll))
    assert not np.any(np.isnan(post.loglik))
    np.testing.assert_allclose(post.loglik, ll, rtol=rtol, atol=ATOL_LOG)
    np.testing.assert_array_equal(np.isnan(post.marginals), np.isnan(marg))
    np.testing.assert_allclose(post.marginals, marg, rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------------------
# brute force
# ------------------------------------------------------------------------------------------------

HMM_CASES = [
    pytest.param(random_hmm(3, 3, 1.0, seed=0), 4, id="S3-V3"),
    pytest.param(random_hmm(2, 3, 3.0, seed=1), 5, id="S2-V3-peaked"),
    pytest.param(random_hmm(4, 2, 1.0, seed=2, zero_fraction=0.4), 4, id="S4-V2-structural-zeros"),
    pytest.param(random_hmm(1, 3, 1.0, seed=3), 3, id="S1"),
    pytest.param(random_hmm(3, 1, 1.0, seed=4), 3, id="V1"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("hmm,L", HMM_CASES)
def test_dense_matches_enumeration_for_every_mask(hmm, L, backend):
    law = hmm_law(hmm, L)
    rng = np.random.default_rng(L)
    masks = all_masks(L)
    tokens = hmm.sample(len(masks), L, rng)
    tokens[::3] = rng.integers(0, hmm.vocab_size, size=tokens[::3].shape)  # some impossible ones too
    post = masked_forward_backward(hmm, tokens, masks, backend=backend)
    assert_posterior(post, *posterior_by_enumeration(hmm, law, tokens, masks))
    np.testing.assert_allclose(log_likelihood(hmm, tokens, masks, backend=backend), post.loglik, rtol=RTOL_TWIN, atol=ATOL_LOG)


NGRAM_CASES = [
    pytest.param(random_ngram(2, 3, 1.0, seed=0), 4, id="2gram-V3"),
    pytest.param(random_ngram(3, 3, 1.0, seed=1, zero_fraction=0.3), 4, id="3gram-V3-zeros"),
    pytest.param(random_ngram(4, 2, 1.0, seed=2), 5, id="4gram-V2"),
    pytest.param(random_ngram(3, 2, 1.0, seed=3, zero_fraction=0.5), 5, id="3gram-V2-zeros"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ng,L", NGRAM_CASES)
def test_ngram_matches_enumeration_for_every_mask(ng, L, backend):
    law = ngram_law(ng, L)
    rng = np.random.default_rng(L)
    masks = all_masks(L)
    tokens = ng.sample(len(masks), L, rng)
    tokens[::3] = rng.integers(0, ng.vocab_size, size=tokens[::3].shape)
    post = masked_forward_backward(ng, tokens, masks, backend=backend)
    assert_posterior(post, *posterior_by_enumeration(ng, law, tokens, masks))
    np.testing.assert_allclose(log_likelihood(ng, tokens, masks, backend=backend), post.loglik, rtol=RTOL_TWIN, atol=ATOL_LOG)


@pytest.mark.parametrize("language", [random_hmm(3, 2, 1.0, seed=5, zero_fraction=0.3), random_ngram(3, 3, 1.0, seed=6, zero_fraction=0.3)], ids=["hmm", "3gram"])
def test_total_probability_is_one(language):
    L = 5
    xs = np.array(list(product(range(language.vocab_size), repeat=L)))
    ll = log_likelihood(language, xs)
    with np.errstate(under="ignore"):
        total = np.exp(ll).sum()
    assert total == pytest.approx(1.0, rel=RTOL_EXACT)
    np.testing.assert_allclose(masked_forward_backward(language, xs, np.zeros(xs.shape, bool)).loglik, ll, rtol=RTOL_TWIN, atol=ATOL_LOG)
    assert np.isneginf(ll).any()  # the structural zeros make some sequences impossible: -inf, not NaN


@pytest.mark.parametrize("language", [random_hmm(6, 4, 1.0, seed=7, zero_fraction=0.2), random_ngram(3, 4, 1.0, seed=8, zero_fraction=0.3)], ids=["hmm", "3gram"])
def test_chain_rule(language):
    """``q(x_j = v | obs) = exp(ll(obs + {j: v}) - ll(obs))`` via the forward-only log-likelihood."""
    rng = np.random.default_rng(9)
    B, L, V = 6, 12, language.vocab_size
    tokens = language.sample(B, L, rng)
    mask = rng.random((B, L)) < 0.5
    post = masked_forward_backward(language, tokens, mask)
    for b in range(B):
        for j in np.flatnonzero(mask[b]):
            t = np.repeat(tokens[b][None], V, axis=0)
            t[:, j] = np.arange(V)
            m = np.repeat(mask[b][None], V, axis=0)
            m[:, j] = False
            ll = log_likelihood(language, t, m)
            np.testing.assert_allclose(post.marginals[b, j], np.exp(ll - post.loglik[b]), rtol=RTOL_EXACT, atol=0)


# ------------------------------------------------------------------------------------------------
# hmmlearn, the NumPy twin, the dense path
# ------------------------------------------------------------------------------------------------


def test_agrees_with_hmmlearn_on_fully_observed_batch():
    from hmmlearn.hmm import CategoricalHMM

    hmm = random_hmm(7, 5, 1.0, seed=10, zero_fraction=0.2)
    model = CategoricalHMM(n_components=7, n_features=5, implementation="scaling", init_params="", params="")
    model.startprob_, model.transmat_, model.emissionprob_ = hmm.initial, hmm.transition, hmm.emission
    tokens = hmm.sample(12, 50, np.random.default_rng(11))
    ours = log_likelihood(hmm, tokens)
    ref = np.array([model.score(x[:, None]) for x in tokens])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=ATOL_LOGLIK)
    np.testing.assert_allclose(masked_forward_backward(hmm, tokens, np.zeros(tokens.shape, bool)).loglik, ref, rtol=0, atol=ATOL_LOGLIK)


def test_agrees_with_hmmlearn_scaled_recursions_on_masked_batch():

    hmm = random_hmm(9, 4, 1.0, seed=12)
    rng = np.random.default_rng(13)
    tokens = hmm.sample(10, 60, rng)
    mask = rng.random(tokens.shape) < 0.5
    ref = hmmlearn_forward_backward(hmm, tokens, mask)
    post = masked_forward_backward(hmm, tokens, mask)
    np.testing.assert_allclose(post.loglik, ref.loglik, rtol=0, atol=ATOL_LOGLIK)
    np.testing.assert_allclose(post.marginals, ref.marginals, rtol=0, atol=ATOL_LOGLIK)


@pytest.mark.parametrize("S,V,zeros", [(20, 5, 0.0), (33, 3, 0.5), (5, 7, 0.3)])
def test_numba_matches_numpy_twin(S, V, zeros):
    hmm = random_hmm(S, V, 1.0, seed=S, zero_fraction=zeros)
    rng = np.random.default_rng(S)
    tokens = hmm.sample(37, 40, rng)
    tokens[::5, 7] = rng.integers(0, V, size=tokens[::5, 7].shape)  # possibly impossible
    mask = rng.random(tokens.shape) < 0.5
    mask[0] = True
    mask[1] = False
    a = masked_forward_backward(hmm, tokens, mask, backend="numba")
    b = masked_forward_backward(hmm, tokens, mask, backend="numpy")
    assert_posterior(a, b.loglik, b.marginals, rtol=RTOL_TWIN, atol=ATOL_LOG)


@pytest.mark.parametrize("n,V,zeros", [(2, 5, 0.3), (3, 4, 0.0), (4, 3, 0.4), (5, 2, 0.2)])
def test_ngram_sparse_matches_dense_path(n, V, zeros):
    ng = random_ngram(n, V, 1.0, seed=10 * n + V, zero_fraction=zeros)
    rng = np.random.default_rng(n)
    tokens = ng.sample(25, 30, rng)
    tokens[::4, 5] = rng.integers(0, V, size=tokens[::4, 5].shape)
    mask = rng.random(tokens.shape) < 0.6
    mask[0] = True
    mask[1] = False
    sparse = masked_forward_backward(ng, tokens, mask)
    dense = masked_forward_backward(ng.to_hmm(), tokens, mask)
    assert_posterior(sparse, dense.loglik, dense.marginals, rtol=RTOL_TWIN, atol=ATOL_LOG)
    np.testing.assert_allclose(log_likelihood(ng, tokens, mask), dense.loglik, rtol=RTOL_TWIN, atol=ATOL_LOG)


def test_result_does_not_depend_on_blocking_or_threads(monkeypatch):
    hmm = random_hmm(6, 4, 1.0, seed=14, zero_fraction=0.3)
    rng = np.random.default_rng(15)
    tokens = hmm.sample(301, 9, rng)
    mask = rng.random(tokens.shape) < 0.5
    ref = masked_forward_backward(hmm, tokens, mask, backend="numpy")
    def full():
        post = masked_forward_backward(hmm, tokens, mask)
        return post.loglik, post.marginals

    runs = [full(), (log_likelihood(hmm, tokens, mask),)]
    monkeypatch.setattr(_dense, "_DENSE_BLOCK_BYTES", 1)  # one row per block
    monkeypatch.setattr(_dense, "_MAX_BLOCK", 1)
    runs += [full(), (log_likelihood(hmm, tokens, mask),)]
    monkeypatch.undo()
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        runs += [full()]
    finally:
        numba.set_num_threads(threads)
    for r in runs:
        np.testing.assert_allclose(r[0], ref.loglik, rtol=RTOL_TWIN, atol=ATOL_LOG)
        if len(r) > 1:
            np.testing.assert_allclose(r[1], ref.marginals, rtol=RTOL_TWIN, atol=ATOL_PROB)


# ------------------------------------------------------------------------------------------------
# edge cases and closed forms
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_single_state_is_iid(backend):
    hmm = random_hmm(1, 4, 1.0, seed=16)
    rng = np.random.default_rng(17)
    tokens = rng.integers(0, 4, size=(5, 8))
    mask = rng.random(tokens.shape) < 0.5
    post = masked_forward_backward(hmm, tokens, mask, backend=backend)
    e = hmm.emission[0]
    np.testing.assert_allclose(post.loglik, np.where(mask, 0.0, np.log(e[tokens])).sum(axis=1), rtol=RTOL_EXACT)
    np.testing.assert_allclose(post.marginals[mask], np.broadcast_to(e, (mask.sum(), 4)), rtol=RTOL_EXACT)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("language", [random_hmm(5, 3, 1.0, seed=18, zero_fraction=0.3), random_ngram(3, 3, 1.0, seed=19, zero_fraction=0.3)], ids=["hmm", "3gram"])
def test_all_masked_gives_unconditional_marginals(language, backend):
    """All masked: ``log q(nothing) = 0`` and ``q(x_j) = initial A^j E`` (matrix powers)."""
    hmm = language.to_hmm()
    L = 7
    post = masked_forward_backward(language, np.zeros((2, L), np.int64), np.ones((2, L), bool), backend=backend)
    np.testing.assert_allclose(post.loglik, 0.0, rtol=0, atol=1e-14)
    p = hmm.initial
    for j in range(L):
        np.testing.assert_allclose(post.marginals[:, j], np.broadcast_to(p @ hmm.emission, (2, hmm.vocab_size)), rtol=RTOL_EXACT, atol=ATOL_PROB)
        p = p @ hmm.transition


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("language", [random_hmm(4, 3, 1.0, seed=20), random_ngram(4, 2, 1.0, seed=21)], ids=["hmm", "4gram"])
def test_length_one_and_none_masked(language, backend):
    tokens = language.sample(6, 1, np.random.default_rng(22))
    masked = masked_forward_backward(language, tokens, np.ones((6, 1), bool), backend=backend)
    hmm = language.to_hmm()
    np.testing.assert_allclose(masked.marginals[:, 0], np.broadcast_to(hmm.initial @ hmm.emission, (6, hmm.vocab_size)), rtol=RTOL_EXACT)
    observed = masked_forward_backward(language, tokens, np.zeros((6, 1), bool), backend=backend)
    np.testing.assert_allclose(observed.loglik, np.log((hmm.initial @ hmm.emission)[tokens[:, 0]]), rtol=RTOL_EXACT)
    long = language.sample(4, 9, np.random.default_rng(23))
    none = masked_forward_backward(language, long, np.zeros(long.shape, bool), backend=backend)
    np.testing.assert_array_equal(none.marginals, np.eye(hmm.vocab_size)[long])


@pytest.mark.parametrize("backend", BACKENDS)
def test_impossible_observations_give_minus_inf_and_nan_marginals(backend):
    # state 0 emits only token 0 and moves to state 1, which emits only token 1 and stays there
    hmm = HMM(np.array([1.0, 0.0]), np.array([[0.0, 1.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    tokens = np.array([[0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1]])
    mask = np.array([[0, 0, 0, 0], [0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 1]], bool)
    post = masked_forward_backward(hmm, tokens, mask, backend=backend)
    np.testing.assert_array_equal(post.loglik, [0.0, -np.inf, -np.inf, -np.inf, 0.0])
    assert np.all(np.isnan(post.marginals[1:4]))
    np.testing.assert_array_equal(post.marginals[4], np.eye(2)[[0, 1, 1, 1]])
    np.testing.assert_array_equal(log_likelihood(hmm, tokens, mask, backend=backend), post.loglik)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unreachable_component_does_not_overflow_beta(backend):
    """Two disconnected components, the start only in the first; the observations are 9^L times
    likelier under the second, so an unmasked ``beta`` of its states would overflow to inf at
    L ~ 330 and ``0 * inf`` would poison the posteriors."""
    T = np.array([[0.9, 0.1, 0.0, 0.0], [0.1, 0.9, 0.0, 0.0], [0.0, 0.0, 0.9, 0.1], [0.0, 0.0, 0.1, 0.9]])
    E = np.array([[0.1, 0.9], [0.1, 0.9], [0.9, 0.1], [0.9, 0.1]])
    hmm = HMM(np.array([0.5, 0.5, 0.0, 0.0]), T, E)
    L = 1500
    tokens = np.zeros((2, L), np.int64)
    mask = np.zeros((2, L), bool)
    mask[0, ::7] = True
    mask[1, 100:] = True
    post = masked_forward_backward(hmm, tokens, mask, backend=backend)
    for b in range(2):
        ll, marg = logspace_forward_backward(hmm, tokens[b], mask[b])
        assert post.loglik[b] == pytest.approx(ll, rel=RTOL_LOGSPACE)
        np.testing.assert_allclose(post.marginals[b][mask[b]], marg[mask[b]], rtol=RTOL_LOGSPACE, atol=1e-14)


def test_no_underflow_at_length_4096_with_peaked_model():
    hmm = random_hmm(4, 3, 3.0, seed=24)
    rng = np.random.default_rng(25)
    L = 4096
    tokens = hmm.sample(2, L, rng)
    mask = rng.random(tokens.shape) < 0.25
    twin = [logspace_forward_backward(hmm, tokens[b], mask[b]) for b in range(2)]
    for backend in BACKENDS:
        post = masked_forward_backward(hmm, tokens, mask, backend=backend)
        for b, (ll, marg) in enumerate(twin):
            assert ll < -745  # q(x_obs) itself is below the smallest float64: a plain recursion underflows
            assert post.loglik[b] == pytest.approx(ll, rel=RTOL_LOGSPACE)
            np.testing.assert_allclose(post.marginals[b][mask[b]], marg[mask[b]], rtol=RTOL_LOGSPACE, atol=1e-12)
        np.testing.assert_allclose(log_likelihood(hmm, tokens, mask, backend=backend), post.loglik, rtol=RTOL_TWIN)


def test_ngram_long_sequence_matches_dense():
    ng = random_ngram(3, 4, 1.0, seed=26, zero_fraction=0.3)
    rng = np.random.default_rng(27)
    tokens = ng.sample(2, 4096, rng)
    mask = rng.random(tokens.shape) < 0.5
    sparse = masked_forward_backward(ng, tokens, mask)
    assert np.all(sparse.loglik < -745)
    dense = masked_forward_backward(ng.to_hmm(), tokens, mask)
    assert_posterior(sparse, dense.loglik, dense.marginals, rtol=RTOL_TWIN, atol=1e-14)


def test_input_checking():
    hmm = random_hmm(3, 2, 1.0, seed=28)
    tokens = np.zeros((2, 3), np.int64)
    with pytest.raises(ValueError, match="unknown backend"):
        masked_forward_backward(hmm, tokens, np.ones((2, 3), bool), backend="cuda")
    with pytest.raises(ValueError, match="unknown backend"):
        log_likelihood(hmm, tokens, backend="cuda")
    with pytest.raises(ValueError, match="boolean"):
        masked_forward_backward(hmm, tokens, np.ones((2, 3)))
    with pytest.raises(ValueError, match="outside 0..1"):
        log_likelihood(hmm, tokens + 2)
    with pytest.raises(ValueError, match="different shapes"):
        masked_forward_backward(hmm, tokens, np.ones((2, 4), bool))
    # a masked position may hold any value, and mask=None means fully observed
    t = tokens.copy()
    t[:, 1] = 99
    m = np.zeros((2, 3), bool)
    m[:, 1] = True
    np.testing.assert_array_equal(log_likelihood(hmm, t, m), log_likelihood(hmm, tokens, m))
    np.testing.assert_array_equal(log_likelihood(hmm, tokens), log_likelihood(hmm, tokens, np.zeros((2, 3), bool)))


# ------------------------------------------------------------------------------------------------
# properties over random small languages
# ------------------------------------------------------------------------------------------------


@st.composite
def language_and_observations(draw, ngram: bool):
    language = draw(small_ngrams(max_order=3, max_vocab=3) if ngram else small_hmms(max_states=3, max_vocab=3))
    L = draw(st.integers(1, 4))
    B = draw(st.integers(1, 3))
    tokens, mask = draw(observations(language.vocab_size, L, B))
    return language, tokens, mask


MIN_ENUMERABLE = 1e-30  # plain products of <= 2L+1 = 9 such factors stay far above float64's smallest normal


def _smallest_positive_parameter(language) -> float:
    arrays = (language.initial, language.conditional) if isinstance(language, NGram) else (
        language.initial, language.transition, language.emission)
    return min(float(a[a > 0].min()) for a in arrays)


@pytest.mark.parametrize("ngram", [False, True], ids=["hmm", "ngram"])
@given(data=st.data())
def test_property_matches_enumeration_and_twin(ngram, data):
    language, tokens, mask = data.draw(language_and_observations(ngram))
    # the brute-force oracle multiplies raw probabilities and would underflow (e.g. 7e-178 squared)
    # where the scaled kernels are right; keep to parameters it can represent
    assume(_smallest_positive_parameter(language) >= MIN_ENUMERABLE)
    L = tokens.shape[1]
    law = ngram_law(language, L) if ngram else hmm_law(language, L)
    ll, marg = posterior_by_enumeration(language, law, tokens, mask)
    fast = masked_forward_backward(language, tokens, mask)
    assert_posterior(fast, ll, marg)
    assert_posterior(forward_backward_numpy(language, tokens, mask), ll, marg)
    np.testing.assert_allclose(log_likelihood(language, tokens, mask), ll, rtol=RTOL_EXACT, atol=ATOL_LOG)
    if ngram:
        assert_posterior(masked_forward_backward(language.to_hmm(), tokens, mask), ll, marg)


@given(data=st.data())
def test_property_posterior_is_a_distribution(data):
    language = data.draw(st.one_of(small_hmms(max_states=5, max_vocab=4), small_ngrams(max_order=4, max_vocab=3)))
    L = data.draw(st.integers(1, 12))
    tokens, mask = data.draw(observations(language.vocab_size, L, batch=3))
    post = masked_forward_backward(language, tokens, mask)
    ok = np.isfinite(post.loglik)
    assume(ok.any())
    assert np.all(post.loglik[ok] <= 1e-12)
    np.testing.assert_allclose(post.marginals[ok].sum(axis=-1), 1.0, rtol=RTOL_EXACT)
    assert np.all(post.marginals[ok] >= 0.0)
    obs = ~mask & ok[:, None]
    np.testing.assert_array_equal(post.marginals[obs], np.eye(language.vocab_size)[tokens[obs]])


def test_a_kernel_flag_of_broken_round_off_is_a_loud_error():
    """The kernels flag a possible sequence whose posterior normalizer is 0 or not finite; it must raise."""
    from numerics.inference._scaling import check_stable, new_buffers

    out = new_buffers(3, 2, 2)
    out.loglik[:] = -1.0
    check_stable(out)  # nothing flagged
    out.unstable[1] = True
    with pytest.raises(FloatingPointError, match="sequence 1 .* non-finite posterior"):
        check_stable(out)
