"""The typed result every metric returns: a value with how it was obtained."""

from __future__ import annotations

from dataclasses import dataclass

from scipy import stats

__all__ = ["Estimate", "CONFIDENCE", "clopper_pearson"]

CONFIDENCE = 0.95  # two-sided confidence of every interval the engine reports


@dataclass(frozen=True)
class Estimate:
    """A number together with how it was obtained.

    Attributes
    ----------
    value : float
    stderr : float
        Standard error of a Monte Carlo estimate; 0.0 for an exact value.
    method : str
        E.g. ``"enumerate"``, ``"dp"``, ``"markov-chain-rule"``, ``"mc"``, ``"closed-form"``.
    samples : int
        Monte Carlo sample count (0 for exact values).
    """

    value: float
    stderr: float
    method: str
    samples: int = 0

    @property
    def exact(self) -> bool:
        return self.samples == 0 and self.stderr == 0.0


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson (exact) two-sided interval for a binomial proportion ``k / n``.

    ``[B(a/2; k, n-k+1), B(1-a/2; k+1, n-k)]`` with ``B`` the Beta quantile and ``a = 1 - confidence``;
    the lower end is 0 when ``k = 0`` and the upper end 1 when ``k = n``.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    a = 1.0 - confidence
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi
