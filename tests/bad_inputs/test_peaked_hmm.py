"""A peaked HMM at L = 4096: the log-likelihood stays finite and nothing turns into NaN.

Softmax rows at temperature 40 put almost all mass on one entry and leave others near 1e-47:
an unscaled forward pass underflows to 0 within a few positions, and a careless scaled one divides
0 by 0. Every path of the engine must give the log-space oracle's value
(:func:`tests.oracles.logspace_forward_backward`) on a likely sequence and on a uniformly random
one whose log-probability is about ``-3e4`` nats, and finite posteriors at the masked positions;
fully observed, the compiled kernels agree with the plain NumPy reference (itself pinned to the
oracle here when masked).
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.inference import (
    forward_backward_numpy,
    log_likelihood,
    log_q,
    masked_forward_backward,
)
from numerics.languages.presets import random_hmm
from tests.oracles import logspace_forward_backward

L = 4096
RTOL_LONG = 1e-10  # a sum of 4096 per-position logs: float64 round-off grows with L (~L * 1e-16 relative)
ATOL_MARGINAL = 1e-8  # the oracle's exp(la + lb - ll) carries the round-off of |la| ~ 3e4 nats over 4096 steps (1.4e-9 seen)


@pytest.fixture(scope="module")
def peaked():
    hmm = random_hmm(states=6, vocab=4, temperature=40.0, seed=7)
    rng = np.random.default_rng(11)
    tokens = np.vstack([hmm.sample(1, L, rng), rng.integers(0, hmm.vocab_size, (1, L))])  # likely, uniform
    mask = rng.random(tokens.shape) < 0.5
    oracle = [logspace_forward_backward(hmm, t, m) for t, m in zip(tokens, mask)]
    return hmm, tokens, mask, oracle


def test_the_hmm_is_peaked_and_the_sequences_span_a_huge_range(peaked):
    hmm, tokens, _, _ = peaked
    assert hmm.transition.min() < 1e-40 and hmm.emission.min() < 1e-40
    assert log_q(hmm, tokens)[1] < -1e4  # the uniform sequence: q(x) far below float64's range


def test_log_likelihood_is_finite_and_every_path_agrees(peaked):
    hmm, tokens, mask, _ = peaked
    full = np.zeros_like(mask)
    reference = forward_backward_numpy(hmm, tokens, full).loglik
    assert np.all(np.isfinite(reference)) and reference[1] < -1e4
    for ll in (log_q(hmm, tokens), log_likelihood(hmm, tokens, full),
               masked_forward_backward(hmm, tokens, full).loglik):
        assert np.all(np.isfinite(ll))
        np.testing.assert_allclose(ll, reference, rtol=RTOL_LONG)


@pytest.mark.parametrize("backend", ["engine", "numpy"])
def test_masked_posteriors_have_no_nan(peaked, backend):
    hmm, tokens, mask, oracle = peaked
    fb = masked_forward_backward if backend == "engine" else forward_backward_numpy
    post = fb(hmm, tokens, mask)
    assert np.all(np.isfinite(post.loglik)) and not np.isnan(post.marginals).any()
    np.testing.assert_allclose(post.loglik, [o[0] for o in oracle], rtol=RTOL_LONG)
    for b, (_, marginals) in enumerate(oracle):
        np.testing.assert_allclose(post.marginals[b][mask[b]], marginals[mask[b]], rtol=0, atol=ATOL_MARGINAL)
        np.testing.assert_allclose(post.marginals[b].sum(axis=1), 1.0, rtol=0, atol=ATOL_MARGINAL)
