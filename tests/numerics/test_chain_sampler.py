"""The closed-form oracle sampler of a sparse first-order chain (numerics.sampling.oracle.chain): the
same samples as the generic sampler (NumPy forward-backward) and the message-store kernels, with and
without memoized tokens and across its mixing cut-off; its posterior against the forward-backward
posterior and brute-force enumeration; the cut-off's certificate, and the fall-back where a chain
does not mix."""

from __future__ import annotations

import numpy as np
import pytest

from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.generators import random_sparse_ngram
from numerics.languages.hmm import NGram
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.oracle import chain, reveal_sample
from numerics.sampling.oracle.chain import (
    MAX_CUT,
    MIX_RTOL,
    chain_posterior,
    chain_reveal_sample,
    chain_tables,
    mixing_cut,
)
from numerics.sampling.samplers import sample_factorized, sample_oracle
from numerics.schedules import make_schedule
from tests.oracles import ngram_law, posterior_by_enumeration
from tests.tolerances import ATOL_PROB, RTOL_EXACT

# one xdist worker compiles these numba kernels once for the group (pytest runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("sparse-chain-kernels")

MIXING = random_sparse_ngram(2, 80, 300, seed=1)  # 306 non-zeros of 6400 (sparse layout); cut-off D = 28
CYCLE = NGram(2, np.full(60, 1 / 60), np.roll(np.eye(60), 1, axis=1))  # periodic: P^d never mixes


def test_cut_off_is_certified_and_holds_beyond():
    """Every row of P^d for d >= D lies within MIX_RTOL of pi (rows of P^(D+k) are convex combinations
    of rows of P^D): checked on 40 further powers, computed independently by dense products."""
    D, pi = mixing_cut(MIXING, MAX_CUT)
    assert 1 < D < 60
    P = MIXING.conditional
    M = np.linalg.matrix_power(P, D - 1)
    assert not np.all(np.abs(M - pi) <= MIX_RTOL * pi)  # D is the first power that passes
    M = M @ P
    for _ in range(40):
        assert np.all(np.abs(M - pi) <= MIX_RTOL * pi)
        M = M @ P
    assert mixing_cut(CYCLE, MAX_CUT) is None


@pytest.mark.parametrize("memo_bytes", [0, 40 * 80 * 8 * 2 * 28, None])  # none, half the tokens, all
@pytest.mark.parametrize("N", [3, 40])
def test_chain_sampler_equals_generic_sample_by_sample(memo_bytes, N):
    """Same stream, same inverse-CDF draws: a mismatch needs a uniform within ~1e-13 of a CDF boundary
    (probability < 1e-8 over these draws). L = 60 > D: rows and columns beyond the cut-off are the limit;
    the pruned chain sends some sequences outside supp q (their later draws uniform, in both)."""
    schedule = make_schedule("linear", N)
    B, L = 150, 60
    a = sample_factorized(OracleDenoiser(MIXING, strict=False), schedule, B, L, np.random.default_rng(N), path="generic")
    rng = np.random.default_rng(N)
    steps = schedule.sample_steps(rng, (B, L))
    U = rng.random((B, L))
    kw = {} if memo_bytes is None else {"memo_bytes": memo_bytes}
    tables = chain_tables(MIXING, L, **kw)
    assert tables.cut == 28 and tables.rows.shape[1] == {0: 0, None: 80}.get(memo_bytes, 40)
    x = chain_reveal_sample(MIXING, steps, U, **kw)
    np.testing.assert_array_equal(x, a.tokens)
    np.testing.assert_array_equal(reveal_sample(MIXING, steps, U), a.tokens)  # the message-store kernels
    loglik = masked_forward_backward(MIXING, x, np.zeros(x.shape, bool)).loglik
    assert np.count_nonzero(loglik == -np.inf) > 0  # the dead-sequence convention is exercised
    np.testing.assert_array_equal(sample_oracle(MIXING, schedule, B, L, np.random.default_rng(N)).tokens, a.tokens)


def test_no_cut_off_tables_every_distance_or_falls_back(monkeypatch):
    """A periodic chain has no cut-off: for L <= MAX_CUT every distance is tabled (D = L, no limit
    used) and the samples are the message-store sampler's; beyond MAX_CUT there is no plan."""
    rng = np.random.default_rng(5)
    L = 40
    steps = make_schedule("linear", 6).sample_steps(rng, (50, L))
    U = rng.random((50, L))
    assert chain_tables(CYCLE, L, layout="sparse").cut == L
    np.testing.assert_array_equal(chain_reveal_sample(CYCLE, steps, U, layout="sparse"), reveal_sample(CYCLE, steps, U, layout="sparse"))
    assert chain_tables(CYCLE, MAX_CUT + 1, layout="sparse") is None
    assert chain_tables(NGram(2, np.full(3, 1 / 3), np.full((3, 3), 1 / 3)), L) is None  # dense: the n-gram kernels
    assert chain_tables(NGram(3, np.full(4, 0.25), np.full((4, 2), 0.5)), L, layout="sparse") is None  # not first order
    monkeypatch.setattr(chain, "SEARCH_BYTES", 16 * 80**2 - 1)  # the search's two dense powers would not fit
    assert chain_tables(MIXING, L, memo_bytes=12345) is None


def test_chain_posterior_equals_forward_backward_and_enumeration():
    """The closed form f(u) g(u) with the cut-off against the forward-backward posterior (L = 70 > D, memo of
    none and of all tokens), and against summing the law over all completions on a tiny chain."""
    rng = np.random.default_rng(9)
    L = 70
    tokens = MIXING.sample(6, L, rng)
    for memo in (0, 10**9):
        tables = chain_tables(MIXING, L, memo)
        for b in range(6):
            revealed = rng.random(L) < (0.05 if b < 3 else 0.5)
            post = chain_posterior(MIXING, tables, tokens[b], revealed)
            for j in range(L):
                mask = ~revealed
                mask[j] = True
                ref = masked_forward_backward(MIXING, tokens[b:b + 1], mask[None]).marginals[0, j]
                np.testing.assert_allclose(post[j], ref, rtol=RTOL_EXACT, atol=ATOL_PROB)
    tiny = NGram(2, np.array([0.2, 0.5, 0.3]), np.array([[0.0, 0.7, 0.3], [0.5, 0.0, 0.5], [0.25, 0.25, 0.5]]))
    law = ngram_law(tiny, 4)
    x = tiny.sample(20, 4, rng)
    tables = chain_tables(tiny, 4, layout="sparse")
    for b in range(20):
        revealed = rng.random(4) < 0.5
        post = chain_posterior(tiny, tables, x[b], revealed)
        for j in range(4):
            mask = ~revealed
            mask[j] = True
            _, marg = posterior_by_enumeration(tiny, law, x[b:b + 1], mask[None])
            np.testing.assert_allclose(post[j], marg[0, j], rtol=RTOL_EXACT, atol=ATOL_PROB)
