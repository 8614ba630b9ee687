"""Languages: validation errors, the n-gram state layout, npz round trips, and the sampling law
(chi-squared against brute-force enumeration)."""

import numpy as np
import pytest

from numerics import HMM, NGram, load_language_file
from numerics.languages.generators import random_hmm, random_ngram
from numerics.tolerances import PROB_SUM_ATOL
from tests.gof import assert_gof
from tests.oracles import hmm_law, ngram_law
from tests.tolerances import RTOL_EXACT


def _hmm_arrays():
    return (
        np.array([0.5, 0.5]),
        np.array([[0.9, 0.1], [0.2, 0.8]]),
        np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]),
    )


# ------------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "which,value,message",
    [
        (0, np.array([[0.5, 0.5]]), "initial must be 1-dimensional"),
        (0, np.array([0.2, 0.2, 0.6]), r"transition has shape \(2, 2\), expected \(3, 3\)"),
        (1, np.array([[0.9, 0.1], [0.3, 0.8]]), "transition row 1 sums to"),
        (1, np.array([[0.9, 0.1], [-0.2, 1.2]]), r"transition has a negative entry -0.2 at index \(1, 0\)"),
        (2, np.array([[0.7, 0.2, np.nan], [0.1, 0.1, 0.8]]), r"emission has a non-finite entry at index \(0, 2\)"),
        (2, np.array([[0.7, 0.3], [0.1, 0.9], [0.5, 0.5]]), "emission has 3 rows, expected 2"),
        (2, np.zeros((2, 0)), "emission is empty"),
        (0, np.array([0.5, 0.6]), "initial sums to"),
    ],
)
def test_hmm_rejects_invalid_arrays_naming_them(which, value, message):
    arrays = list(_hmm_arrays())
    arrays[which] = value
    with pytest.raises(ValueError, match=message):
        HMM(*arrays)


def test_row_sum_tolerance_and_read_only_arrays():
    init, trans, emit = _hmm_arrays()
    off = trans.copy()
    off[0] = [0.9 + PROB_SUM_ATOL / 10, 0.1]
    HMM(init, off, emit)  # within tolerance
    off[0] = [0.9 + PROB_SUM_ATOL * 10, 0.1]
    with pytest.raises(ValueError, match="row 0 sums to"):
        HMM(init, off, emit)
    hmm = HMM(init, trans, emit)
    with pytest.raises(ValueError, match="read-only"):
        hmm.transition[0, 0] = 0.5
    assert hmm.n_states == 2 and hmm.vocab_size == 3 and hmm.to_hmm() is hmm


@pytest.mark.parametrize(
    "order,initial,conditional,message",
    [
        (1, np.ones(2) / 2, np.ones((2, 2)) / 2, "order must be an integer >= 2"),
        (2.5, np.ones(2) / 2, np.ones((2, 2)) / 2, "order must be an integer >= 2"),
        (3, np.ones(4) / 4, np.ones((2, 2)) / 2, r"conditional has 2 rows, expected V\^\(n-1\) = 2\^2 = 4"),
        (2, np.ones(3) / 3, np.ones((2, 2)) / 2, r"initial has shape \(3,\), expected \(2,\)"),
        (2, np.ones(2) / 2, np.array([[0.5, 0.5], [0.7, 0.7]]), "conditional row 1 sums to"),
    ],
)
def test_ngram_rejects_invalid_arrays(order, initial, conditional, message):
    with pytest.raises(ValueError, match=message):
        NGram(order, initial, conditional)


def test_ngram_state_layout():
    """Window ``(a1, a2)`` of a 3-gram over 3 tokens is ``s = 3 a1 + a2``; it emits ``a2`` and on
    token ``v`` moves to ``(a2, v)``."""
    ng = random_ngram(3, 3, 1.0, seed=0)
    succ = ng.successors()
    for a1 in range(3):
        for a2 in range(3):
            s = 3 * a1 + a2
            assert ng.emitted_token()[s] == a2
            for v in range(3):
                assert succ[s, v] == 3 * a2 + v
    hmm = ng.to_hmm()
    assert hmm.n_states == 9 and np.count_nonzero(hmm.transition) <= 27
    for L in (1, 2, 4):
        np.testing.assert_allclose(hmm_law(hmm, L)[1], ngram_law(ng, L)[1], rtol=RTOL_EXACT, atol=1e-17)


# ------------------------------------------------------------------------------------------------
# npz files
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", [random_hmm(4, 3, 1.0, seed=1, zero_fraction=0.3), random_ngram(3, 2, 1.0, seed=2, zero_fraction=0.3)], ids=["hmm", "3gram"])
def test_npz_round_trip(tmp_path, language):
    path = tmp_path / "language.npz"
    language.save(path)
    loaded = load_language_file(path)
    assert type(loaded) is type(language)
    for name in ("initial", "transition", "emission", "conditional", "order"):
        if hasattr(language, name):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(language, name))
    with np.load(path) as data:  # the documented keys, so researchers can write their own files
        expected = {"initial", "transition", "emission"} if isinstance(language, HMM) else {"order", "initial", "conditional"}
        assert set(data.files) == expected


def test_npz_errors(tmp_path):
    with pytest.raises(ValueError, match="cannot read language file"):
        load_language_file(tmp_path / "missing.npz")
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 this is not a zip archive")
    with pytest.raises(ValueError, match="cannot read language file"):
        load_language_file(corrupt)
    truncated = tmp_path / "truncated.npz"
    random_hmm(3, 2, 1.0, seed=3).save(truncated)
    truncated.write_bytes(truncated.read_bytes()[:60])
    with pytest.raises(ValueError, match="cannot read language file"):
        load_language_file(truncated)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, initial=np.ones(2) / 2, weights=np.eye(2))
    with pytest.raises(ValueError, match=r"holds keys \['initial', 'weights'\]"):
        load_language_file(wrong)
    invalid = tmp_path / "invalid.npz"
    init, trans, emit = _hmm_arrays()
    np.savez(invalid, initial=init, transition=trans * 2, emission=emit)
    with pytest.raises(ValueError, match="transition row 0 sums to"):
        load_language_file(invalid)


# ------------------------------------------------------------------------------------------------
# sampling
# ------------------------------------------------------------------------------------------------


def test_sample_argument_checks():
    hmm = random_hmm(2, 2, 1.0, seed=4)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        hmm.sample(3, 2, np.random.RandomState(0))
    with pytest.raises(ValueError, match="length >= 1"):
        random_ngram(2, 2, 1.0, seed=5).sample(3, 0, np.random.default_rng(0))
    out = hmm.sample(0, 3, np.random.default_rng(0))
    assert out.shape == (0, 3) and out.dtype == np.int64


def _counts(samples: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Samples per sequence of ``xs`` (all sequences in lexicographic order)."""
    V = xs.max() + 1
    index = samples @ (V ** np.arange(xs.shape[1] - 1, -1, -1))
    return np.bincount(index, minlength=len(xs))


@pytest.mark.parametrize(
    "language,L",
    [(random_hmm(3, 2, 1.0, seed=6, zero_fraction=0.3), 3), (random_ngram(3, 2, 1.0, seed=7, zero_fraction=0.25), 4), (random_ngram(2, 3, 1.0, seed=8), 3)],
    ids=["hmm", "3gram", "2gram"],
)
def test_sampling_law_matches_enumeration(language, L):
    xs, q = hmm_law(language, L) if isinstance(language, HMM) else ngram_law(language, L)
    assert q.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
    samples = language.sample(40_000, L, np.random.default_rng(9))
    assert_gof(_counts(samples, xs), q, f"{L}-token samples")
