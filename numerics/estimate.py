"""The typed result every metric returns: a value with how it was obtained."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Estimate"]


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
