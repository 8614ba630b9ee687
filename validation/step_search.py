"""The search over a number of steps ``N`` (or any integer knob) for the smallest value meeting a target.

The primitive both :mod:`validation.steps_needed` (one sampler's steps) and
:mod:`validation.calibrate` (each family's integer knob) use: doubling up to the first ``N`` that
meets the target, then bisection between the last miss and that value. It assumes nothing about
the sampler; the caller's ``evaluate(n)`` says whether ``n`` meets the target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from numerics.estimate import Estimate

__all__ = ["DEFAULT_MAX_STEPS", "Evaluation", "StepsNeeded", "search_steps"]

DEFAULT_MAX_STEPS = 1 << 12  # the search stops here (the paper's sweeps go to N = 2048)


@dataclass(frozen=True)
class Evaluation:
    """The metric at one ``N``.

    Attributes
    ----------
    n_steps : int
    quantity : str
        What was compared with the target: the metric (``"ser"``, ``"kl"``, ``"ter"``) or an
        upper bound on it (``"kl_jensen_bound"``, ``"ter_jensen_bound"``).
    estimate : Estimate
        Its value, method and (Monte Carlo) interval.
    meets : bool
        Exact: ``value <= target``; Monte Carlo: the upper confidence bound ``ci_high <= target``.
    """

    n_steps: int
    quantity: str
    estimate: Estimate
    meets: bool


@dataclass(frozen=True)
class StepsNeeded:
    """The answer of :func:`search_steps`.

    Attributes
    ----------
    n_steps : int or None
        Smallest ``N`` meeting the target; ``None`` when no ``N <= max_steps`` does.
    at_n : Evaluation
        At ``n_steps`` (at ``max_steps`` when not met).
    at_n_minus_1 : Evaluation or None
        At ``n_steps - 1`` (``None`` when ``n_steps`` is 1 or the target was not met).
    evaluations : tuple of Evaluation
        Every ``N`` evaluated, in the order the search visited them.
    max_steps : int
    lossless : tuple of Setting
        Lossless decoders reported beside the answer (:func:`validation.calibrate.lossless_settings`:
        no steps, the metric of their output law, ``E[calls]``); empty unless asked for.
    """

    n_steps: int | None
    at_n: Evaluation
    at_n_minus_1: Evaluation | None
    evaluations: tuple
    max_steps: int
    lossless: tuple = ()

    @property
    def met(self) -> bool:
        return self.n_steps is not None

    @property
    def exact(self) -> bool:
        """Both neighbours were computed exactly (the metric itself, no bound, no Monte Carlo)."""
        pair = [e for e in (self.at_n, self.at_n_minus_1) if e is not None]
        return all(e.estimate.exact and not e.quantity.endswith("_bound") for e in pair)


def search_steps(evaluate: Callable[[int], Evaluation], max_steps: int = DEFAULT_MAX_STEPS) -> StepsNeeded:
    """Smallest ``N`` in ``1..max_steps`` with ``evaluate(N).meets``: exponential search, then bisection.

    ``evaluate`` is called once per ``N`` visited (about ``2 log2 N`` times), never on a grid.
    """
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps must be an integer >= 1, got {max_steps!r}")
    seen: dict[int, Evaluation] = {}
    order: list[Evaluation] = []

    def at(n: int) -> Evaluation:
        if n not in seen:
            seen[n] = evaluate(n)
            order.append(seen[n])
        return seen[n]

    lo, hi = 0, 1  # invariant: lo misses (or is 0), hi is the candidate
    while not at(hi).meets:
        if hi >= max_steps:
            return StepsNeeded(None, at(hi), None, tuple(order), int(max_steps))
        lo, hi = hi, min(2 * hi, int(max_steps))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid).meets:
            hi = mid
        else:
            lo = mid
    return StepsNeeded(hi, at(hi), at(hi - 1) if hi > 1 else None, tuple(order), int(max_steps))
