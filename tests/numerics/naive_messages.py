"""NumPy twins of the message primitives of :mod:`numerics.messages` (stumpy's ``tests/naive.py`` pattern).

Each twin computes what its primitive computes, from the language's dense matrices (``P`` the state
transition matrix, ``E`` the ``(S, V)`` emission: an n-gram's window emits its newest token), by the
formula of ``docs/methods/inference.md`` and nothing else: no layouts, no skipping of zeros, no
blocking. ``tests/numerics/test_messages.py`` compares every primitive with its twin.
"""

from __future__ import annotations

import numpy as np

from numerics.languages.hmm import NGram


def matrices(language) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(initial, P, E)`` of ``language`` as a dense HMM."""
    hmm = language.to_hmm()
    return np.asarray(hmm.initial, float), np.asarray(hmm.transition, float), np.asarray(hmm.emission, float)


def evidence_vector(E: np.ndarray, v: int) -> np.ndarray:
    """``e_v(s) = P(v | s)``, or ones for ``v = -1`` (a masked position)."""
    return np.ones(E.shape[0]) if v < 0 else E[:, v].copy()


def normalized(vec: np.ndarray) -> np.ndarray:
    """``vec / sum(vec)``; a zero vector stays zero."""
    total = vec.sum()
    return vec / total if total > 0 else vec.copy()


def observed(reveal_steps: np.ndarray, threshold: int, hidden: int, p: int) -> bool:
    """Position ``p`` is observed: revealed before ``threshold`` and not ``hidden``."""
    return 0 <= p != hidden and reveal_steps[p] < threshold


def propagate(language, prev: np.ndarray) -> np.ndarray:
    """``prev P``."""
    return prev @ matrices(language)[1]


def pull(language, nxt: np.ndarray, v: int) -> np.ndarray:
    """``P (e_v * nxt)``."""
    _, P, E = matrices(language)
    return P @ (evidence_vector(E, v) * nxt)


def forward_step(language, reveal_steps, tokens, threshold, hidden, prev, p) -> np.ndarray:
    """``alpha_p = normalize((alpha_{p-1} P) * e_p)``, ``alpha_0 = normalize(initial * e_0)``."""
    initial, P, E = matrices(language)
    v = tokens[p] if observed(reveal_steps, threshold, hidden, p) else -1
    base = initial if p == 0 else prev @ P
    return normalized(base * evidence_vector(E, v))


def consistent(language, reveal_steps, tokens, threshold, p: int, *, run: int) -> np.ndarray:
    """1 on the n-gram windows at ``p`` whose ``run`` newest tokens agree with the observed positions ``p, p-1, ..``
    (as many as are observed in a row, at most ``run``), 0 elsewhere; ones for a dense HMM."""
    S = language.n_states
    mask = np.ones(S)
    if not isinstance(language, NGram):
        return mask
    V = language.vocab_size
    s = np.arange(S)
    for d in range(run):
        if not observed(reveal_steps, threshold, -1, p - d):
            break
        mask *= (s // V**d) % V == tokens[p - d]
    return mask


def backward_step(language, reveal_steps, tokens, threshold, nxt, p, *, run: int) -> np.ndarray:
    """``beta_p = normalize(P (e_{p+1} * beta_{p+1}))``, an n-gram's restricted to the windows consistent with the
    observed run ending at ``p`` (``run``: how many of its tokens the layout checks, ``n - 1`` or 1)."""
    v = tokens[p + 1] if observed(reveal_steps, threshold, -1, p + 1) else -1
    return normalized(pull(language, nxt, v) * consistent(language, reveal_steps, tokens, threshold, p, run=run))


def token_marginal(language, alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, float]:
    """``m[v] = sum_s alpha(s) beta(s) E[s, v]`` and its sum."""
    m = (alpha * beta) @ matrices(language)[2]
    return m, float(m.sum())


def observe(language, vec: np.ndarray, v: int) -> tuple[np.ndarray, float]:
    """``vec * e_v`` normalized, and the sum before normalizing."""
    w = vec * evidence_vector(matrices(language)[2], v)
    return normalized(w), float(w.sum())


def jump_forward(language, vec: np.ndarray, m: int, vfix: int) -> np.ndarray:
    """``normalize((vec P^m) * e_vfix)`` (``vfix = -1``: no evidence at the landing position)."""
    _, P, E = matrices(language)
    return normalized(vec @ np.linalg.matrix_power(P, m) * evidence_vector(E, vfix))


def jump_backward(language, w: np.ndarray, m: int, rowfix: int) -> np.ndarray:
    """``normalize(P^m w)`` (``w`` holds its evidence), an n-gram's restricted to the windows ending in ``rowfix``
    (``-1``: every window)."""
    _, P, E = matrices(language)
    rows = np.ones(P.shape[0]) if rowfix < 0 or not isinstance(language, NGram) else E[:, rowfix]
    return normalized(np.linalg.matrix_power(P, m) @ w * rows)
