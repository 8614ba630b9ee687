"""The sparse n-gram layout (only the non-zero conditionals): chosen by density in one place, the
same float64 results as the dense n-gram layout, the same samples as the generic sampler, the
posterior of brute-force enumeration; its file form; its generator."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from numerics.inference._ngram import forward_backward_ngram, loglik_ngram
from numerics.inference.posterior import Observations
from numerics.languages.arrays import NGramArrays, SparseNGramArrays, kernel_arrays
from numerics.languages.generators import random_ngram, random_sparse_ngram
from numerics.languages.hmm import SPARSE_KEYS, NGram, load_language_file
from numerics.languages.presets import load_language
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.oracle import reveal_sample, reveal_score
from numerics.sampling.samplers import sample_factorized, sample_oracle
from numerics.schedules import make_schedule
from tests.oracles import ngram_law, posterior_by_enumeration
from tests.tolerances import ATOL_LOG, ATOL_PROB, RTOL_EXACT

# one xdist worker compiles these numba kernels once for the group (pytest runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("sparse-chain-kernels")

SPARSE = {  # mostly zeros (the bigram below SPARSE_DENSITY: its automatic layout is sparse)
    "bigram": random_sparse_ngram(2, 40, 45, seed=1),
    "trigram": random_sparse_ngram(3, 5, 30, seed=2),
}
HALF_ZERO = {  # dense by density, forced into both layouts
    "bigram": random_ngram(2, 6, seed=3, zero_fraction=0.6),
    "trigram": random_ngram(3, 4, seed=4, zero_fraction=0.6),
    "4gram": random_ngram(4, 3, seed=5, zero_fraction=0.5),
}


def test_layout_is_chosen_by_density():
    lang = SPARSE["bigram"]
    assert isinstance(kernel_arrays(lang), SparseNGramArrays)
    assert isinstance(kernel_arrays(lang, "dense"), NGramArrays)
    assert isinstance(kernel_arrays(SPARSE["trigram"]), NGramArrays)  # 20% non-zero: every window keeps one successor
    assert isinstance(kernel_arrays(load_language("4gram-pruned")), NGramArrays)
    assert isinstance(kernel_arrays(HALF_ZERO["bigram"], "sparse"), SparseNGramArrays)
    with pytest.raises(ValueError, match="layout must be one of"):
        kernel_arrays(HALF_ZERO["bigram"], "csr")


@pytest.mark.parametrize("name", sorted(SPARSE))
@pytest.mark.parametrize("N", [2, 5, 40])
def test_sparse_sampler_equals_generic_sample_by_sample(name, N):
    """Same random stream and inverse-CDF draws as the generic sampler (NumPy forward-backward);
    a mismatch needs a uniform within ~1e-15 of a CDF boundary (probability ~1e-12 here)."""
    lang = SPARSE[name]
    schedule = make_schedule("linear", N)
    a = sample_factorized(OracleDenoiser(lang, strict=False), schedule, 120, 9, np.random.default_rng(3), path="generic")
    rng = np.random.default_rng(3)  # the oracle sampler's stream (sample_oracle), one batch
    steps = schedule.sample_steps(rng, (120, 9))
    np.testing.assert_array_equal(steps, a.reveal_steps)
    np.testing.assert_array_equal(reveal_sample(lang, steps, rng.random((120, 9)), layout="sparse"), a.tokens)
    if name == "bigram":
        b = sample_oracle(lang, schedule, 120, 9, np.random.default_rng(3))  # the automatic layout
        np.testing.assert_array_equal(b.tokens, a.tokens)


@pytest.mark.parametrize("name", sorted(HALF_ZERO) + ["sparse-" + k for k in sorted(SPARSE)])
@pytest.mark.parametrize("N", [3, 30])
def test_sparse_layout_equals_dense_layout(name, N):
    """The dense layout jumps over masked runs with matrix powers, the sparse one steps: same samples,
    the same scores to float64 round-off."""
    lang = SPARSE[name[7:]] if name.startswith("sparse-") else HALF_ZERO[name]
    rng = np.random.default_rng(N)
    B, L = 200, 20
    steps = make_schedule("linear", N).sample_steps(rng, (B, L))
    U = rng.random((B, L))
    x = reveal_sample(lang, steps, U, layout="dense")
    np.testing.assert_array_equal(reveal_sample(lang, steps, U, layout="sparse"), x)
    data = lang.sample(B, L, rng)
    for tokens in (x, data):
        d = reveal_score(lang, steps, tokens, chain=True, layout="dense")
        s = reveal_score(lang, steps, tokens, chain=True, layout="sparse")
        for a, b in zip(d, s):
            np.testing.assert_allclose(b, a, rtol=RTOL_EXACT, atol=ATOL_LOG)


@pytest.mark.parametrize("name", sorted(HALF_ZERO) + ["sparse-" + k for k in sorted(SPARSE)])
def test_sparse_forward_backward_equals_dense_and_enumeration(name):
    """Same terms in the same order (the skipped ones are exact zeros): bit for bit the dense layout;
    and the posterior of summing the law over all completions."""
    lang = SPARSE[name[7:]] if name.startswith("sparse-") else HALF_ZERO[name]
    rng = np.random.default_rng(7)
    L = 3 if lang.vocab_size > 8 else 4  # V^L sequences to enumerate
    tokens = lang.sample(60, L, rng)
    tokens[:5] = rng.integers(0, lang.vocab_size, (5, L))  # some impossible sequences
    mask = rng.random((60, L)) < 0.5
    obs = Observations(tokens, mask)
    d = forward_backward_ngram(lang, obs, "dense")
    s = forward_backward_ngram(lang, obs, "sparse")
    np.testing.assert_array_equal(s.loglik, d.loglik)
    np.testing.assert_array_equal(s.marginals, d.marginals)
    np.testing.assert_array_equal(loglik_ngram(lang, obs, "sparse"), d.loglik)
    ll, marg = posterior_by_enumeration(lang, ngram_law(lang, L), tokens, mask)
    np.testing.assert_allclose(s.loglik, ll, rtol=RTOL_EXACT, atol=ATOL_LOG)
    np.testing.assert_allclose(s.marginals, marg, rtol=RTOL_EXACT, atol=ATOL_PROB)


def test_sparse_file_form_round_trips(tmp_path):
    SPARSE["bigram"].save(tmp_path / "auto.npz")  # below SPARSE_DENSITY: the sparse form by default
    with np.load(tmp_path / "auto.npz") as f:
        assert set(f.files) == {"order", "initial", *SPARSE_KEYS}
    np.testing.assert_array_equal(load_language_file(tmp_path / "auto.npz").conditional, SPARSE["bigram"].conditional)
    lang = SPARSE["trigram"]
    lang.save(tmp_path / "s.npz", sparse=True)
    with np.load(tmp_path / "s.npz") as f:
        assert set(f.files) == {"order", "initial", *SPARSE_KEYS}
    back = load_language_file(tmp_path / "s.npz")
    assert back.order == lang.order
    np.testing.assert_array_equal(back.conditional, lang.conditional)
    np.testing.assert_array_equal(back.initial, lang.initial)
    lang.save(tmp_path / "d.npz", sparse=False)
    with np.load(tmp_path / "d.npz") as f:
        assert set(f.files) == {"order", "initial", "conditional"}
    np.testing.assert_array_equal(load_language_file(tmp_path / "d.npz").conditional, lang.conditional)
    via_scipy = NGram(3, lang.initial, scipy.sparse.csr_array(lang.conditional))
    np.testing.assert_array_equal(via_scipy.conditional, lang.conditional)


@pytest.mark.parametrize("change, message", [
    (dict(conditional_indices=np.array([0, 99])), "outside 0..1"),
    (dict(conditional_indptr=np.array([0, 2, 2]), conditional_indices=np.array([1, 1])), "given twice"),
    (dict(conditional_shape=np.array([2**15, 2**14])), "exceeds"),
    (dict(conditional_indptr=np.array([0, 2, 1])), "non-decreasing"),
])
def test_sparse_file_form_bad_input(tmp_path, change, message):
    arrays = dict(order=np.int64(2), initial=np.full(2, 0.5), conditional_shape=np.array([2, 2]),
                  conditional_indptr=np.array([0, 1, 2]), conditional_indices=np.array([0, 1]),
                  conditional_data=np.array([1.0, 1.0]))
    arrays.update(change)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=message):
        load_language_file(tmp_path / "bad.npz")


def test_random_sparse_ngram_is_zipf_like_and_seeded():
    lang = random_sparse_ngram(2, 512, 6000, seed=11)
    nnz_rows = np.count_nonzero(lang.conditional, axis=1)
    w = np.arange(1, 513, dtype=float) ** -1.1  # the documented row sizes: clip(round(6000 w_s / sum w), 1, V)
    np.testing.assert_array_equal(nnz_rows, np.clip(np.rint(6000 * w / w.sum()), 1, 512))
    assert 0.8 * 6000 < nnz_rows.sum() < 1.2 * 6000
    np.testing.assert_allclose(lang.conditional.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(random_sparse_ngram(2, 512, 6000, seed=11).conditional, lang.conditional)
    with pytest.raises(ValueError, match="nonzeros"):
        random_sparse_ngram(2, 8, 0)
