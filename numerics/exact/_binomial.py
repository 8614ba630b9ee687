"""Binomial pmf / upper tail over arrays, safe at success probabilities below the normal float64 range.

scipy's (Boost) binomial raises ``OverflowError`` for ``p`` near the smallest normal float
(e.g. a schedule with ``u_1 = 2.2e-308``). For ``p < TINY_P`` the exact values are, in float64,
``pmf(0) = 1``, ``pmf(1) = n p``, ``pmf(k >= 2) = 0`` (``p^2`` underflows) and ``P(X >= 2) = 0``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["binom_pmf", "binom_sf1"]

TINY_P = 1e-150  # below this p^2 < 1e-300: every term with k >= 2 is 0 in float64


def binom_pmf(k: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``P(Bin(n, p) = k)`` broadcast over ``k, n, p``."""
    k, n, p = np.broadcast_arrays(np.asarray(k), np.asarray(n), np.asarray(p, dtype=np.float64))
    tiny = p < TINY_P
    from scipy.stats import binom  # here, not at import (seconds)

    out = binom.pmf(k, n, np.where(tiny, 0.5, p))
    return np.where(tiny, np.where(k == 0, 1.0, np.where(k == 1, n * p, 0.0)) * (k <= n), out)


def binom_sf1(n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``P(Bin(n, p) >= 2)`` broadcast over ``n, p``."""
    n, p = np.broadcast_arrays(np.asarray(n), np.asarray(p, dtype=np.float64))
    tiny = p < TINY_P
    from scipy.stats import binom

    return np.where(tiny, 0.0, binom.sf(1, n, np.where(tiny, 0.5, p)))
