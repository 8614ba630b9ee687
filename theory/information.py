"""Information quantities of explicit finite distributions: entropy, KL, TV, total correlation.

Natural logs throughout. A joint law of ``k`` tokens over ``V`` symbols is a ``(V,) * k`` array.
"""

from __future__ import annotations

import numpy as np
from scipy.special import entr, xlog1py

__all__ = ["entropy", "kl", "total_correlation", "marginals", "tv"]


def entropy(p: np.ndarray) -> float:
    """``H(p) = -sum p log p`` in nats (``0 log 0 = 0``)."""
    return float(entr(np.asarray(p, dtype=np.float64)).sum())


_SERIES_T = 1e-2  # |t| below this: phi(t) by its series (8 terms, truncation error < t^10 / 90)


def _phi(t: np.ndarray) -> np.ndarray:
    """``phi(t) = (1 + t) log(1 + t) - t >= 0``, to full relative precision also for tiny ``|t|``.

    For ``|t| < _SERIES_T`` the series ``sum_{k>=2} (-1)^k t^k / (k (k-1))``; else the closed form.
    """
    out = np.empty_like(t)
    small = np.abs(t) < _SERIES_T
    ts = t[small]
    acc = np.zeros_like(ts)
    power = ts * ts
    for k in range(2, 10):
        acc += (-1) ** k * power / (k * (k - 1))
        power = power * ts
    out[small] = acc
    tl = t[~small]
    out[~small] = xlog1py(1 + tl, tl) - tl  # 0 log 0 = 0 at t = -1 (p = 0): phi(-1) = 1
    return out


def kl(p: np.ndarray, q: np.ndarray) -> float:
    """``KL(p || q) = sum p log(p / q)`` in nats; ``inf`` when ``p`` charges a zero of ``q``.

    Summed as ``sum_x q phi((p - q)/q)`` with ``phi(t) = (1+t) log(1+t) - t >= 0`` (this equals
    ``sum p log(p/q) - p + q``, the same total for probability vectors): every term is ``>= 0``, so
    there is no cancellation between terms, and ``phi`` is evaluated to full relative precision
    (series for small ``t``), so ``KL`` stays accurate when ``q`` is close to ``p`` (``KL ~ |p - q|^2``),
    where the plain sum of ``p log(p/q)`` is pure round-off.
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64).ravel()
    if np.any((p > 0) & (q == 0)):
        return float("inf")
    pos = q > 0
    return float(np.sum(q[pos] * _phi((p[pos] - q[pos]) / q[pos])))


def tv(p: np.ndarray, q: np.ndarray) -> float:
    """``TV(p, q) = (1/2) sum |p - q|``."""
    return 0.5 * float(np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum())


def marginals(P: np.ndarray) -> list[np.ndarray]:
    """The ``k`` one-dimensional marginals of a joint table ``P`` of shape ``(V,) * k``."""
    P = np.asarray(P, dtype=np.float64)
    return [P.sum(axis=tuple(a for a in range(P.ndim) if a != j)) for j in range(P.ndim)]


def product_of_marginals(P: np.ndarray) -> np.ndarray:
    """``prod_j P_j`` as a ``(V,) * k`` table: the law of independent tokens with ``P``'s marginals."""
    out = np.ones(())
    for m in marginals(P):
        out = np.multiply.outer(out, m)
    return out


def total_correlation(P: np.ndarray) -> float:
    """``sum_j H(X_j) - H(X)`` (Lemma A.1's identity; nats)."""
    return sum(entropy(m) for m in marginals(P)) - entropy(P)

