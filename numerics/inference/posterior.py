"""The typed result of the masked forward-backward and the validation of its inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics.languages.hmm import Language

__all__ = ["Posterior", "Observations", "check_observations"]


@dataclass(frozen=True)
class Posterior:
    """Result of the masked forward-backward.

    Attributes
    ----------
    loglik : (B,) float64
        ``log q(x_obs)`` (natural log); ``-inf`` when the observed tokens are impossible.
    marginals : (B, L, V) float64
        ``q(x_j = v | x_obs)``; one-hot at observed positions; NaN rows for impossible sequences.
    """

    loglik: np.ndarray
    marginals: np.ndarray


class Observations(NamedTuple):
    """Partially observed sequences, as the kernels read them.

    Attributes
    ----------
    tokens : (B, L) int64
        Token ids; 0 at masked positions.
    mask : (B, L) bool
        True where the position is masked (unobserved).
    """

    tokens: np.ndarray
    mask: np.ndarray


def check_observations(language: Language, tokens: np.ndarray, mask: np.ndarray) -> Observations:
    """Validate and normalize ``tokens`` (int, ``(B, L)``) and ``mask`` (bool, ``(B, L)``, True = masked).

    Tokens at masked positions are ignored (and replaced by 0). Raises ``ValueError`` on shape
    mismatch, an empty length, or an observed token outside ``0..V-1``.
    """
    tokens = np.asarray(tokens)
    mask = np.asarray(mask)
    if tokens.ndim == 1:
        tokens = tokens[None, :]
    if mask.ndim == 1:
        mask = mask[None, :]
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = masked), got dtype {mask.dtype}")
    if not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens must be integers, got dtype {tokens.dtype}")
    mask = np.broadcast_to(mask, tokens.shape) if mask.shape != tokens.shape and mask.shape[0] == 1 else mask
    if tokens.shape != mask.shape:
        raise ValueError(f"tokens {tokens.shape} and mask {mask.shape} have different shapes")
    if tokens.shape[1] < 1:
        raise ValueError("sequences must have length >= 1")
    V = language.vocab_size
    tokens = np.ascontiguousarray(tokens, dtype=np.int64)
    mask = np.ascontiguousarray(mask)
    clean = np.empty(tokens.shape, dtype=np.int64)
    bad = _clean_tokens(tokens, mask, V, clean)
    if bad >= 0:
        b, j = divmod(bad, tokens.shape[1])
        raise ValueError(f"observed token {int(tokens[b, j])} at sequence {b}, position {j} is outside 0..{V - 1}")
    return Observations(clean, mask)


@jit
def _clean_tokens(tokens, mask, V, clean):
    """``clean = tokens`` where observed, 0 where masked; returns the flat index of the first observed
    token outside ``0..V-1``, or -1. The pass over the batch has no branch on the (random) mask: a
    select and an OR-ed error flag, which vectorize, instead of a mispredicted branch per position."""
    B, L = tokens.shape
    err = False
    for b in range(B):
        for j in range(L):
            m = mask[b, j]
            x = tokens[b, j]
            clean[b, j] = 0 if m else x
            err |= (not m) & ((x < 0) | (x >= V))
    if err:  # the first bad position, only on error
        for b in range(B):
            for j in range(L):
                if not mask[b, j] and (tokens[b, j] < 0 or tokens[b, j] >= V):
                    return b * L + j
    return -1
