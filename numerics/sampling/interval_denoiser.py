"""The interval language's exact marginals for a whole batch at once (a fast :class:`Denoiser`).

The same function as :class:`numerics.sampling.adaptive.IntervalOracle` (Example C.7; intervals
independent, a masked token uniform over the tokens whose pair bits agree with its revealed
partners, revealed rows one-hot, a sequence whose revealed tokens disagree on a pair bit gets NaN
rows), computed with array operations over the batch: ``O(L l)`` vector operations of size
``(B, V)`` instead of a Python loop per sequence and position. The generic decoders of
:mod:`numerics.sampling.decoders` call it once per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numerics.languages.interval import IntervalLanguage

__all__ = ["BatchIntervalOracle"]


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
