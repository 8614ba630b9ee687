"""Every primitive of the message floor (:mod:`numerics.messages`) against its NumPy twin (``naive_messages``).

Small random languages of each kind (a dense HMM with zeros, n-grams in the dense and sparse layouts, a
5-gram large enough for the block layout of the powers), random messages with zeros, random evidence.
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.languages.arrays import kernel_arrays
from numerics.languages.generators import random_hmm, random_ngram
from numerics.messages import jumps, powers, steps
from tests.numerics import naive_messages as naive
from tests.tolerances import ATOL_PROB, RTOL_TWIN

L = 7
KINDS = {
    "hmm": (random_hmm(6, 3, seed=1, zero_fraction=0.3), "dense"),
    "3gram": (random_ngram(3, 3, seed=2, zero_fraction=0.3), "dense"),
    "3gram-sparse": (random_ngram(3, 3, seed=2, zero_fraction=0.3), "sparse"),
    "2gram": (random_ngram(2, 4, seed=3), "dense"),
    "5gram-blocks": (random_ngram(5, 4, seed=4, zero_fraction=0.2), "dense"),  # S = 256: the block layout
}


def _close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=RTOL_TWIN, atol=ATOL_PROB)


def _case(name, seed):
    language, layout = KINDS[name]
    rng = np.random.default_rng(seed)
    S, V = language.n_states, language.vocab_size
    vec = rng.random(S) * (rng.random(S) > 0.3)
    vec /= vec.sum()
    tokens = language.sample(1, L, rng)[0]
    reveal_steps = rng.integers(1, 4, size=L)
    return language, kernel_arrays(language, layout), rng, vec, tokens, reveal_steps, S, V


@pytest.mark.parametrize("name", sorted(KINDS))
def test_transition_products_equal_their_twins(name):
    language, lang, rng, vec, _, _, S, V = _case(name, 10)
    out = np.empty(S)
    steps.propagate(lang, vec, out)
    _close(out, naive.propagate(language, vec))
    for v in (-1, int(rng.integers(V))):
        steps.pull(lang, vec, out, v, np.empty(S))
        _close(out, naive.pull(language, vec, v))


@pytest.mark.parametrize("name", [n for n in sorted(KINDS) if n != "hmm"])
def test_rows_of_the_successor_layout_equal_their_twins(name):
    """One window's row: ``P[s]`` pushed with a weight, ``(P nxt)[s]``, ``conditional[s, v]``, in either layout."""
    language, lang, rng, vec, _, _, S, V = _case(name, 14)
    _, P, _ = naive.matrices(language)
    assert steps.vocab(lang) == V
    for s in rng.integers(S, size=3):
        out = vec.copy()
        steps.push_row(lang, 0.5, out, s)
        _close(out, vec + 0.5 * P[s])
        assert steps.dot_row(lang, s, vec) == pytest.approx(naive.pull(language, vec, -1)[s], rel=RTOL_TWIN, abs=ATOL_PROB)
        for v in range(V):
            assert steps.entry(lang, s, np.uint64(v)) == language.conditional[s, v]


@pytest.mark.parametrize("name", sorted(KINDS))
@pytest.mark.parametrize("hidden", [-1, 3])
def test_steps_equal_their_twins(name, hidden):
    language, lang, rng, vec, tokens, reveal_steps, S, V = _case(name, 11 + hidden)
    run = 1 if name.endswith("sparse") else getattr(language, "order", 2) - 1  # the observed run a layout checks
    for threshold in (1, 2, 4):
        ev = steps.Evidence(reveal_steps, tokens, threshold, hidden)
        out = np.empty(S)
        for p in range(L):
            steps.forward_step(lang, ev, vec, out, p)
            _close(out, naive.forward_step(language, reveal_steps, tokens, threshold, hidden, vec, p))
        if hidden >= 0:
            continue  # the backward step is defined without a hidden position
        for p in range(L - 1):
            steps.backward_step(lang, ev, vec, out, p, np.empty(S))
            _close(out, naive.backward_step(language, reveal_steps, tokens, threshold, vec, p, run=run))


@pytest.mark.parametrize("name", sorted(KINDS))
def test_reading_the_messages_equals_the_twins(name):
    language, lang, rng, vec, _, _, S, V = _case(name, 12)
    beta = rng.random(S)
    m = np.empty(V)
    total = steps.token_marginal(lang, vec, beta, m)
    m_twin, total_twin = naive.token_marginal(language, vec, beta)
    _close(m, m_twin)
    assert total == pytest.approx(total_twin, rel=RTOL_TWIN)
    for v in range(V):
        w = vec.copy()
        mass = steps.observe(lang, w, v)
        w_twin, mass_twin = naive.observe(language, vec, v)
        _close(w, w_twin)
        assert mass == pytest.approx(mass_twin, rel=RTOL_TWIN, abs=ATOL_PROB)


@pytest.mark.parametrize("name", [n for n in sorted(KINDS) if not n.endswith("sparse")])
def test_jumps_equal_their_twins(name):
    """A jump over ``m`` positions (powers up to ``M = 6``, so ``m = 9`` chains them) is ``m`` transition products."""
    language, lang, rng, vec, _, _, S, V = _case(name, 13)
    powers = jumps.language_powers(language, 6)
    out = np.empty(S)
    for m in (1, 2, 6, 9):
        for vfix in (-1, int(rng.integers(V))):
            jumps.jump_forward(lang, powers, vec, out, m, vfix, np.empty(S), np.empty(S))
            _close(out, naive.jump_forward(language, vec, m, vfix))
        for rowfix in (-1, int(rng.integers(V))):
            w = vec.copy()
            jumps.jump_backward(lang, powers, w, out, m, rowfix, -1, np.empty(S))
            _close(out, naive.jump_backward(language, vec, m, rowfix))


def test_chain_powers_are_the_matrix_powers():
    """A 2-gram's chain-path tables: ``P^d`` rows and columns, ``mu P^(d-1)`` for no left neighbour, ones for none right."""
    language = KINDS["2gram"][0]
    arrays = powers.chain_powers(language, 5)
    _, P, _ = naive.matrices(language)
    V = P.shape[0]
    for d in range(6):
        Pd = np.linalg.matrix_power(P, d)
        _close(arrays.powers[d, :V], Pd)
        _close(arrays.powers_t[d, :V], Pd.T)
        np.testing.assert_array_equal(arrays.powers_t[d, V], np.ones(V))
        if d >= 1:
            _close(arrays.powers[d, V], language.initial @ np.linalg.matrix_power(P, d - 1))
    assert powers.chain_powers(language, 5) is arrays  # built once per language and length
    assert powers.chain_powers(language, 6).powers.shape[0] == 7


def test_powers_cache_keeps_the_last_entries_by_identity():
    cache = powers.PowersCache(entries=2)
    a, b, c = random_ngram(2, 3, seed=5), random_ngram(2, 3, seed=5), random_ngram(2, 3, seed=6)
    assert cache.put(a, "jumps", 1) == 1
    assert cache.get(a, "jumps") == 1
    assert cache.get(b, "jumps") is None  # an equal language, another object
    assert cache.get(a, "chain") is None
    assert cache.get(a, "jumps", lambda table: table > 1) is None
    cache.put(b, "jumps", 2)
    cache.put(c, "jumps", 3)  # full: a's entry, the oldest, leaves
    assert cache.get(a, "jumps") is None
    assert (cache.get(b, "jumps"), cache.get(c, "jumps")) == (2, 3)
    cache.clear()
    assert cache.get(c, "jumps") is None


def test_powers_are_typed_by_kind_and_the_sparse_ngram_never_jumps():
    """One powers type per kind (the n-gram's holds both layouts, module ``powers``); a sparse n-gram has none: its
    jumps never pay, and a jump called anyway refuses instead of reading powers it does not have."""
    for name, kind in (("hmm", powers.DensePowers), ("3gram", powers.NGramPowers), ("5gram-blocks", powers.NGramPowers)):
        language, lang, *_ = _case(name, 15)
        table = jumps.language_powers(language, 6)
        assert type(table) is kind
        assert table.max_power == jumps.max_power(lang, table) == 6
    _, lang, _, vec, _, _, S, _ = _case("3gram-sparse", 16)
    none = jumps.no_powers()
    assert none.max_power == jumps.max_power(lang, none) == 0
    assert not jumps.forward_jump_pays(lang, vec, 5, True)
    assert not jumps.backward_jump_pays(lang, 5, True, True)
    with pytest.raises(ValueError, match="no precomputed powers"):
        jumps.jump_forward(lang, none, vec, np.empty(S), 5, -1, np.empty(S), np.empty(S))


def test_by_kind_takes_a_version_for_any_arguments_with_the_arrays_named_alike():
    """``(arrays, *args)`` serves steps of any parameters (numba's overloads accept it); a bare ``*args`` or another
    first name is refused, as are other parameters."""
    from numerics._jit import jit
    from numerics.messages.dispatch import by_kind

    @jit
    def dense(lang, vec, m):
        return m

    @jit
    def refuse(lang, *args):
        return -1

    @jit
    def bare(*args):
        return -1

    @jit
    def renamed(arrays, *args):
        return -1

    @jit
    def other(lang, vec):
        return 0

    assert by_kind(dense, dense, refuse).__name__ == "dense"
    for wrong in (bare, renamed, other):
        with pytest.raises(TypeError, match="must have the same parameters"):
            by_kind(dense, dense, wrong)
