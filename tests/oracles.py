"""Independent oracles the tests compare the engine against.

Brute-force laws of tiny languages (enumerate every hidden path / window history), posteriors by
enumeration, and the log-space forward-backward twin. None of these shares code with the kernels
under test.
"""

from __future__ import annotations

from itertools import product

import numpy as np
from scipy.special import logsumexp

from numerics.languages.hmm import HMM, NGram


def hmm_law(hmm: HMM, L: int) -> tuple[np.ndarray, np.ndarray]:
    """All ``V^L`` sequences and ``q(x) = sum_z q(z) prod_j E[z_j, x_j]`` over all ``S^L`` paths."""
    S, V = hmm.n_states, hmm.vocab_size
    zs = np.array(list(product(range(S), repeat=L)))  # (S^L, L)
    xs = np.array(list(product(range(V), repeat=L)))  # (V^L, L)
    pz = hmm.initial[zs[:, 0]] * np.prod(hmm.transition[zs[:, :-1], zs[:, 1:]], axis=1)
    em = np.prod(hmm.emission[zs[:, None, :], xs[None, :, :]], axis=2)  # (S^L, V^L)
    return xs, pz @ em


def ngram_law(ng: NGram, L: int) -> tuple[np.ndarray, np.ndarray]:
    """All sequences and their n-gram probability from the definition: a window ``s0`` ending in
    ``x_1`` drawn from ``initial``, then ``x_{j+1} ~ conditional[s_j]``, ``s_{j+1} = (s_j % V^(n-2)) V + x_{j+1}``."""
    V, S = ng.vocab_size, ng.n_states
    W = S // V
    xs = np.array(list(product(range(V), repeat=L)))
    q = np.zeros(len(xs))
    for k, x in enumerate(xs):
        for s0 in range(x[0], S, V):
            p, s = ng.initial[s0], s0
            for j in range(1, L):
                p *= ng.conditional[s, x[j]]
                s = (s % W) * V + x[j]
            q[k] += p
    return xs, q


def law_posterior(xs: np.ndarray, q: np.ndarray, tokens: np.ndarray, mask: np.ndarray, V: int):
    """``(loglik, marginals)`` of one observed sequence by summing the law over its completions."""
    L = xs.shape[1]
    consistent = np.all((xs == tokens) | mask, axis=1)
    q_obs = q[consistent].sum()
    marg = np.full((L, V), np.nan)
    if q_obs == 0.0:
        return -np.inf, marg
    for j in range(L):
        for v in range(V):
            marg[j, v] = q[consistent & (xs[:, j] == v)].sum() / q_obs
    return np.log(q_obs), marg


def posterior_by_enumeration(language, law, tokens, mask):
    xs, q = law
    out = [law_posterior(xs, q, t, m, language.vocab_size) for t, m in zip(tokens, mask)]
    return np.array([o[0] for o in out]), np.stack([o[1] for o in out])


def logspace_forward_backward(hmm: HMM, tokens: np.ndarray, mask: np.ndarray):
    """Independent log-space twin (``logsumexp`` recursions) for one sequence: ``(loglik, marginals)``."""
    with np.errstate(divide="ignore"):  # log 0 = -inf is the intended value of a structural zero
        lA, lE, lmu = np.log(hmm.transition), np.log(hmm.emission), np.log(hmm.initial)
    L, S = len(tokens), hmm.n_states
    le = np.where(mask[:, None], 0.0, lE[:, tokens].T)  # (L, S)
    la = np.empty((L, S))
    la[0] = lmu + le[0]
    for j in range(1, L):
        la[j] = logsumexp(la[j - 1][:, None] + lA, axis=0) + le[j]
    lb = np.zeros((L, S))
    for j in range(L - 2, -1, -1):
        lb[j] = logsumexp(lA + (le[j + 1] + lb[j + 1])[None, :], axis=1)
    ll = logsumexp(la[-1])
    post = np.exp(la + lb - ll)
    return ll, post @ hmm.emission


def all_masks(L):
    return np.array(list(product([False, True], repeat=L)))
