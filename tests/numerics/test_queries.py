"""The oracle's left-to-right conditionals and joint densities (numerics.inference.queries) against
brute-force enumeration of tiny languages (tests/oracles.py), and the predictive filter against its
reference from the public forward pass."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from numerics.inference.queries import (
    OracleError,
    PrefixOracle,
    log_joint,
    prefix_conditionals,
    prefix_conditionals_reference,
)
from numerics.languages.interval import IntervalLanguage
from tests.oracles import hmm_law, ngram_law
from tests.strategies import small_hmms, small_ngrams
from tests.tolerances import ATOL_PROB, RTOL_EXACT

L = 4


def _interval_law(lang: IntervalLanguage, length: int):
    xs = np.array(list(product(range(lang.vocab_size), repeat=length)))
    return xs, np.exp(lang.log_prob(xs))


def _law(language, length):
    if isinstance(language, IntervalLanguage):
        return _interval_law(language, length)
    return (hmm_law if language.kind == "hmm" else ngram_law)(language, length)


def _brute_conditionals(xs, q, tokens, V):
    """``q(x_i = v | x_<i)`` by summing the law over the completions of each prefix."""
    Lx = xs.shape[1]
    out = np.full((len(tokens), Lx, V), np.nan)
    for b, t in enumerate(tokens):
        for i in range(Lx):
            pre = np.all(xs[:, :i] == t[:i], axis=1)
            den = q[pre].sum()
            if den > 0:
                out[b, i] = [q[pre & (xs[:, i] == v)].sum() / den for v in range(V)]
    return out


def _brute_log_joint(xs, q, tokens, observed):
    out = []
    for t, o in zip(tokens, observed):
        s = q[np.all((xs == t) | ~o, axis=1)].sum()
        out.append(np.log(s) if s > 0 else -np.inf)
    return np.array(out)


def _representable(language) -> None:
    """``assume`` every positive parameter >= 1e-60, so the brute-force products over ``L`` positions
    stay normal float64 (hypothesis draws entries like 1e-117, whose 4th power underflows to 0)."""
    for a in language.to_hmm().arrays().values():
        assume(not np.any((a > 0) & (a < 1e-60)))


def _check(language, seed):
    rng = np.random.default_rng(seed)
    xs, q = _law(language, L)
    V = language.vocab_size
    on = xs[q > 0]
    tokens = np.concatenate([on[rng.integers(len(on), size=3)], rng.integers(V, size=(2, L))])
    want = _brute_conditionals(xs, q, tokens, V)
    for got in (prefix_conditionals(language, tokens), prefix_conditionals_reference(language, tokens)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=RTOL_EXACT, atol=ATOL_PROB)
    observed = rng.random(tokens.shape) < 0.6
    lj, lj_want = log_joint(language, tokens, observed), _brute_log_joint(xs, q, tokens, observed)
    np.testing.assert_array_equal(np.isinf(lj), np.isinf(lj_want))
    np.testing.assert_allclose(lj[np.isfinite(lj)], lj_want[np.isfinite(lj_want)], rtol=RTOL_EXACT, atol=1e-14)


@settings(max_examples=15, deadline=None)
@given(small_hmms(max_states=3, max_vocab=3), st.integers(0, 2**16))
def test_hmm_conditionals_and_joint_match_enumeration(hmm, seed):
    _representable(hmm)
    _check(hmm, seed)


@settings(max_examples=15, deadline=None)
@given(small_ngrams(max_order=3, max_vocab=3), st.integers(0, 2**16))
def test_ngram_conditionals_and_joint_match_enumeration(ng, seed):
    _representable(ng)
    _check(ng, seed)


@pytest.mark.parametrize("l", [2, 3])
def test_interval_conditionals_and_joint_match_enumeration(l):
    _check(IntervalLanguage(l), l)


def test_filter_advances_like_the_conditionals():
    """Sampling token by token from ``law`` / ``advance`` follows ``along``'s conditionals."""
    from numerics.languages.presets import load_language

    o = PrefixOracle.of(load_language("2gram"))
    rng = np.random.default_rng(1)
    x = rng.integers(o.vocab_size, size=(3, 6))
    f = o.start(3)
    cond, ok = o.along(f, x)
    for m in range(6):
        np.testing.assert_allclose(o.law(f), cond[:, m], rtol=RTOL_EXACT, atol=ATOL_PROB)
        f, step_ok = o.advance(f, x[:, m])
        assert np.all(ok[:, m] | ~step_ok)


def test_a_language_without_a_dense_hmm_form_is_a_named_error():
    with pytest.raises(OracleError, match="cannot evaluate the joint density"):
        PrefixOracle.of(IntervalLanguage(7))
    with pytest.raises(OracleError, match="no HMM form"):
        log_joint(object(), np.zeros((1, 2), dtype=np.int64))
