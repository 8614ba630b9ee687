"""hmmlearn's forward-backward as an independent reference, for the benchmark and the tests.

hmmlearn is an independent, widely used implementation of the scaled forward-backward
(Rabiner). Its compiled recursions (``hmmlearn._hmmc.forward_scaling`` / ``backward_scaling``,
the code behind ``CategoricalHMM.score_samples``) are run one sequence at a time with emission
likelihood 1 at masked positions; posteriors are normalized as hmmlearn does and mapped to
tokens, so the outputs are those of :func:`numerics.masked_forward_backward`. Used by
``mdm-theory bench forward-backward`` (the speed reference) and by the forward-backward tests
(an oracle); it lives here, not in the CLI layer, so that both import it.
"""

from __future__ import annotations

import numpy as np

from numerics.inference.posterior import Posterior
from numerics.languages.hmm import HMM

__all__ = ["hmmlearn_forward_backward"]


def hmmlearn_forward_backward(hmm: HMM, tokens: np.ndarray, mask: np.ndarray) -> Posterior:
    """hmmlearn's scaled forward-backward per sequence: ``log q(x_obs)`` ``(n,)`` and the token marginals ``(n, L, V)``.

    ``tokens``, ``mask`` ``(n, L)`` (mask True = unobserved). Runs on whatever threads hmmlearn's
    BLAS has; wrap in ``threadpoolctl.threadpool_limits(1)`` for a one-thread timing.
    """
    from hmmlearn import _hmmc

    E = hmm.emission
    ET = np.ascontiguousarray(E.T)
    n, L = tokens.shape
    loglik = np.empty(n)
    marginals = np.zeros((n, L, hmm.vocab_size))
    for b in range(n):
        frameprob = ET[tokens[b]]  # (L, S) emission likelihoods; 1 where masked
        frameprob[mask[b]] = 1.0
        ll, fwd, scaling = _hmmc.forward_scaling(hmm.initial, hmm.transition, frameprob)
        bwd = _hmmc.backward_scaling(hmm.initial, hmm.transition, frameprob, scaling)
        post = fwd * bwd
        post /= post.sum(axis=1, keepdims=True)
        loglik[b] = ll
        marginals[b, mask[b]] = post[mask[b]] @ E
        marginals[b, ~mask[b], tokens[b, ~mask[b]]] = 1.0
    return Posterior(loglik, marginals)
