"""Exact oracle marginals for a whole batch at once, by array operations (fast :class:`Denoiser` s).

* :class:`BigramOracle` -- a first-order token chain (an :class:`~numerics.languages.hmm.NGram` of
  order 2): the same marginals as ``OracleDenoiser(language, strict=False)`` (masked
  forward-backward) from the nearest revealed neighbours, ``q(x_j = v | x_S) ∝ A^(j-a)[x_a, v]
  A^(b-j)[v, x_b]`` (``a < j < b`` the nearest revealed positions; ``(mu A^(j-1))[v]`` without a
  left one, ``1`` without a right one), with precomputed matrix powers.
* :class:`BatchIntervalOracle` -- the interval language.

:class:`BatchIntervalOracle` computes the same function as :class:`numerics.sampling.adaptive.IntervalOracle` (Example C.7; intervals
independent, a masked token uniform over the tokens whose pair bits agree with its revealed
partners, revealed rows one-hot, a sequence whose revealed tokens disagree on a pair bit gets NaN
rows), computed with array operations over the batch: ``O(L l)`` vector operations of size
``(B, V)`` instead of a Python loop per sequence and position. The generic decoders of
:mod:`numerics.sampling.decoders` call it once per step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from numerics.languages.hmm import NGram
from numerics.languages.interval import IntervalLanguage

__all__ = ["BatchIntervalOracle", "BigramOracle", "fastest_oracle"]


@dataclass(frozen=True, eq=False)
class BatchIntervalOracle:
    """Exact posterior marginals of :class:`IntervalLanguage` ``language``, vectorized over the batch."""

    language: IntervalLanguage

    @property
    def vocab_size(self) -> int:
        return self.language.vocab_size

    def __call__(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        x = np.asarray(tokens, dtype=np.int64)
        mask = np.asarray(mask, dtype=bool)
        B, L = x.shape
        l, V = self.language.l, self.vocab_size
        v = np.arange(V)[None, :]
        ok = np.ones((B, L, V), dtype=bool)
        bad = np.zeros(B, dtype=bool)
        for j in range(L):
            base, r = (j // l) * l, j % l
            for k in range(base, min(base + l, L)):
                if k == j:
                    continue
                kr = k - base
                mine = (v >> (kr if kr < r else kr - 1)) & 1  # (1, V): bit of token v at j shared with k
                theirs = ((x[:, k] >> (r if r < kr else r - 1)) & 1)[:, None]  # (B, 1): k's bit shared with j
                agree = (mine == theirs) | mask[:, k][:, None]
                ok[:, j] &= agree
                if k > j:  # a revealed pair that disagrees makes the sequence impossible
                    bad |= ~mask[:, j] & ~mask[:, k] & ~agree[np.arange(B), x[:, j]]
        out = ok / np.maximum(ok.sum(axis=-1, keepdims=True), 1)
        b, j = np.nonzero(~mask)
        out[b, j] = 0.0
        out[b, j, x[b, j]] = 1.0
        out[bad] = np.nan
        empty = ~ok.any(axis=-1) & mask
        out[empty] = np.nan
        return out


@dataclass(frozen=True, eq=False)
class BigramOracle:
    """Exact posterior marginals of an order-2 :class:`NGram` (module docstring), vectorized over the batch.

    Revealed rows are one-hot; a sequence whose revealed tokens are jointly impossible
    (``q(x_S) = 0``) gets NaN rows, as ``OracleDenoiser(strict=False)``. Matrix powers up to the
    sequence length are computed once per length (``A^k`` in float64; fine for the short chains
    of this engine, whose rows are stochastic so the powers stay bounded).
    """

    language: NGram

    def __post_init__(self) -> None:
        if not isinstance(self.language, NGram) or self.language.order != 2:
            raise ValueError("BigramOracle needs an NGram of order 2 (a first-order token chain)")

    @property
    def vocab_size(self) -> int:
        return self.language.vocab_size

    @functools.lru_cache(maxsize=4)  # noqa: B019 -- one oracle object per language, a few lengths
    def _powers(self, L: int) -> tuple[np.ndarray, np.ndarray]:
        """``(P, mu)``: ``P[k] = A^k`` for ``k <= L`` and ``mu[j]`` the law of ``x_{j+1}``, computed once per length."""
        A = np.asarray(self.language.conditional, dtype=np.float64)
        P = np.empty((L + 1,) + A.shape)
        P[0] = np.eye(A.shape[0])
        for k in range(1, L + 1):
            P[k] = P[k - 1] @ A
        mu = np.asarray(self.language.initial, dtype=np.float64) @ P[:L]  # (L, V): law of x_j
        return P, mu

    def __call__(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        x = np.asarray(tokens, dtype=np.int64)
        mask = np.asarray(mask, dtype=bool)
        B, L = x.shape
        P, mu = self._powers(L)
        idx = np.arange(L)
        shown = ~mask
        left = np.maximum.accumulate(np.where(shown, idx, -1), axis=1)  # nearest revealed <= j
        right = np.minimum.accumulate(np.where(shown, idx, L)[:, ::-1], axis=1)[:, ::-1]  # nearest revealed >= j
        prev = np.concatenate([np.full((B, 1), -1), left[:, :-1]], axis=1)  # nearest revealed < j
        nxt = np.concatenate([right[:, 1:], np.full((B, 1), L)], axis=1)  # nearest revealed > j
        xa = np.take_along_axis(x, np.maximum(prev, 0), axis=1)
        xb = np.take_along_axis(x, np.minimum(nxt, L - 1), axis=1)
        lf = np.where((prev >= 0)[..., None], P[np.maximum(idx[None, :] - prev, 0), xa], mu[None, :, :])
        rf = np.where((nxt < L)[..., None], P[np.maximum(nxt - idx[None, :], 0), :, xb], 1.0)
        w = lf * rf
        out = w / np.where(w.sum(axis=-1, keepdims=True) > 0, w.sum(axis=-1, keepdims=True), np.nan)
        b, j = np.nonzero(shown)
        out[b, j] = 0.0
        out[b, j, x[b, j]] = 1.0
        # q(x_S) = 0: the first revealed token impossible, or two consecutive revealed ones
        first = np.where(shown.any(axis=1), np.argmax(shown, axis=1), 0)
        ok = ~shown.any(axis=1) | (mu[first, x[np.arange(B), first]] > 0)
        nb, nj = np.nonzero(shown & (nxt < L))
        link = P[nxt[nb, nj] - nj, x[nb, nj], x[nb, nxt[nb, nj]]] > 0
        ok &= ~np.bincount(nb[~link], minlength=B).astype(bool)
        out[~ok] = np.nan
        return out


def fastest_oracle(language):
    """The fastest exact oracle :class:`Denoiser` of ``language``: :class:`BigramOracle` for an order-2
    n-gram, :class:`BatchIntervalOracle` for the interval language, else the forward-backward
    ``OracleDenoiser(language, strict=False)``. All give the same marginals (tested)."""
    from numerics.sampling.denoiser import OracleDenoiser

    if isinstance(language, IntervalLanguage):
        return BatchIntervalOracle(language)
    if isinstance(language, NGram) and language.order == 2:
        return BigramOracle(language)
    return OracleDenoiser(language, strict=False)
