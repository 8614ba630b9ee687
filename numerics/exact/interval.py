"""Closed forms for the Theorem 4.4 language and step collisions (``docs/methods/exact.md``).

All quantities depend only on how ``n`` positions fall on the ``N`` steps: the counts
``(k_1..k_N) ~ Multinomial(n, pi)``.

* Interval validity (Example C.7 with the oracle): a pair of an interval revealed at the same step
  draws its shared bit twice, independently and uniformly, and agrees with probability 1/2; a pair
  revealed at different steps always agrees (the later one sees the earlier one's bit). Given the
  step assignment the pairs are independent, so ``P(interval valid) = E[2^{-c}]`` with
  ``c = sum_i C(k_i, 2)``. Intervals are independent and so are their step assignments, hence
  ``SER = 1 - E[2^{-c}]^{L/l}`` (``l`` must divide ``L``). The oracle being undefined after an
  invalid step does not matter: validity needs every step to agree.
* Distinct steps (Lemma C.5, and Lemma C.1 with ``n = L``): ``P(k_i <= 1 for all i) = n! e_n(pi)``.

DP over steps (conditional form). Let ``w_i(m)`` be the probability that ``m`` positions, given that
all of them fall on steps ``<= i``, satisfy the per-step property; given that, the number at step
``i`` is ``Binomial(m, pi_i / u_i)`` and the rest fall on steps ``< i``:

    w_i(m) = sum_k Bin(k; m, pi_i / u_i) f(k) w_{i-1}(m - k),   w_0(0) = 1,

with ``f(k) = 2^{-C(k,2)}`` (validity) or ``1[k <= 1]`` (distinct steps). Every term is a
probability, so nothing under- or overflows (``n!`` and ``e_n`` separately do for ``n > 170``).
The complement ``1 - w`` is carried by its own positive recursion
``c_i(m) = sum_k Bin(k; m, pi_i/u_i) [c_{i-1}(m-k) + (1 - f(k)) w_{i-1}(m-k)]`` so that small
failure probabilities keep their relative accuracy. For distinct steps and large ``n`` the
recursion for ``w`` has only ``k = 0, 1`` (``O(N n)``) and the collision probability is summed over
the step of the first collision: ``sum_i sum_j P(j positions before step i, all distinct)
P(at least 2 of the other n - j at step i | none before)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from numerics.exact._binomial import binom_pmf, binom_sf1
from numerics.languages.interval import whole_intervals
from numerics.schedules import Schedule

__all__ = [
    "StepEventProbability",
    "interval_validity",
    "interval_ser",
    "interval_ser_from_validity",
    "sequence_log_validity",
    "prob_distinct_steps",
    "sequence_collision_probability",
    "elementary_symmetric",
]

SMALL_N = 64  # up to this many positions the O(N n^2) recursion with its positive complement is used
_CHUNK = 256  # steps per vectorized scipy evaluation in the large-n collision sum


@dataclass(frozen=True)
class StepEventProbability:
    """The probability of an event of the step assignment and of its complement, each computed directly.

    Attributes
    ----------
    probability : float
    complement : float
        ``1 - probability``, by a positive-term recursion (relative accuracy kept when it is small).
    method : str
    """

    probability: float
    complement: float
    method: str


def _split(schedule: Schedule, i: int) -> tuple[float, float]:
    """``(r, s) = (pi_i / u_i, u_{i-1} / u_i)``: a position known to be at a step ``<= i`` is at ``i`` / before.

    ``s`` is computed from ``u_{i-1}``, not as ``1 - r``, so a tiny ``u_{i-1}`` keeps its digits.
    """
    u = schedule.u
    return float(schedule.pi[i] / u[i + 1]), float(u[i] / u[i + 1])


def _binomial_mixture_dp(schedule: Schedule, n: int, factor: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
    """``(w_N(n), c_N(n))`` of the module docstring for the per-step factor ``f(k)``; ``O(N n^2)``."""
    pi = schedule.pi
    w = np.zeros(n + 1)
    c = np.zeros(n + 1)
    w[0] = 1.0
    m = np.arange(n + 1)
    f = factor(m)
    comb = np.array([[math.comb(int(a), int(k)) for k in m] for a in m], dtype=np.float64)  # C(m, k)
    for i in np.flatnonzero(pi > 0):
        r, s = _split(schedule, int(i))
        w_new = np.zeros(n + 1)
        c_new = np.zeros(n + 1)
        for k in range(n + 1):
            pk = comb[k:, k] * r**k * s ** (m[k:] - k)  # Bin(k; m, r) for m = k..n
            w_new[k:] += pk * f[k] * w[: n + 1 - k]
            c_new[k:] += pk * (c[: n + 1 - k] + (1.0 - f[k]) * w[: n + 1 - k])
        w, c = w_new, c_new
    return float(w[n]), float(c[n])


def _pair_factor(k: np.ndarray) -> np.ndarray:
    return np.exp2(-(k * (k - 1) / 2.0))


def _distinct_factor(k: np.ndarray) -> np.ndarray:
    return (k <= 1).astype(np.float64)


def _check_positions(n: int, name: str) -> int:
    if int(n) != n or n < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {n!r}")
    return int(n)


def interval_validity(schedule: Schedule, l: int) -> StepEventProbability:
    """``E[2^{-c}]``: the probability that one interval of length ``l`` comes out valid (module docstring)."""
    l = _check_positions(l, "interval length l")
    w, c = _binomial_mixture_dp(schedule, l, _pair_factor)
    return StepEventProbability(w, c, "step-dp")


def sequence_log_validity(validity: StepEventProbability, length: int, l: int) -> float:
    """``log P(valid) = (L/l) log(1 - P(one interval invalid))`` from one interval's :func:`interval_validity`.

    ``-inf`` when an interval is invalid surely; ``ValueError`` when ``l`` does not divide ``L``.
    This is ``-KL(q || p)`` of the oracle on the interval language (:mod:`numerics.exact.interval_metrics`).
    """
    n_intervals = whole_intervals(length, l)
    return n_intervals * math.log1p(-validity.complement) if validity.complement < 1.0 else -math.inf


def interval_ser_from_validity(validity: StepEventProbability, length: int, l: int) -> StepEventProbability:
    """The SER ``1 - E[2^{-c}]^{L/l}`` at length ``L`` from one interval's validity (which does not
    depend on ``L``: a search over ``L`` computes it once per schedule)."""
    log_valid = sequence_log_validity(validity, length, l)
    return StepEventProbability(-math.expm1(log_valid), math.exp(log_valid), "step-dp")


def interval_ser(schedule: Schedule, length: int, l: int) -> StepEventProbability:
    """Exact SER of the oracle sampler on the interval language: ``1 - E[2^{-c}]^{L/l}``.

    ``probability`` is the SER, ``complement`` the probability of a valid sequence. Raises
    ``ValueError`` (from :func:`numerics.languages.interval.whole_intervals`) when ``l`` does not divide ``L``.
    """
    whole_intervals(length, l)
    return interval_ser_from_validity(interval_validity(schedule, l), length, l)


def prob_distinct_steps(schedule: Schedule, n: int) -> StepEventProbability:
    """``n! e_n(pi)``: probability that ``n`` positions are unmasked at ``n`` distinct steps (Lemma C.5).

    ``complement`` is the collision probability ``1 - n! e_n(pi)``. Small ``n``: the general
    recursion; large ``n``: the ``O(N n)`` recursion and the first-collision sum (module docstring).
    """
    n = _check_positions(n, "number of positions n")
    if n <= SMALL_N:
        w, c = _binomial_mixture_dp(schedule, n, _distinct_factor)
        return StepEventProbability(w, c, "step-dp")
    u, pi = schedule.u, schedule.pi
    m = np.arange(n + 1)
    w = np.zeros(n + 1)  # w[m] = P(m positions distinct | all at steps <= i)
    w[0] = 1.0
    collision = 0.0
    steps = np.flatnonzero(pi > 0)
    for start in range(0, steps.shape[0], _CHUNK):
        idx = steps[start : start + _CHUNK]
        # first collision at step i: j positions before i (all distinct), >= 2 of the other n - j at i
        p_before = binom_pmf(m[None, :], n, u[idx, None])
        p_two = binom_sf1(n - m[None, :], np.minimum(pi[idx] / (1.0 - u[idx]), 1.0)[:, None])
        for row, i in enumerate(idx):
            collision += float((p_before[row] * w) @ p_two[row])
            r, s = _split(schedule, int(i))
            w_new = s**m * w
            w_new[1:] += m[1:] * r * s ** (m[1:] - 1) * w[:-1]
            w = w_new
    return StepEventProbability(float(w[n]), collision, "step-dp-first-collision")


def sequence_collision_probability(schedule: Schedule, length: int) -> StepEventProbability:
    """Lemma C.1 exactly: ``probability`` that two of the ``L`` positions share a step, ``1 - L! e_L(pi)``."""
    distinct = prob_distinct_steps(schedule, length)
    return StepEventProbability(distinct.complement, distinct.probability, distinct.method)


def elementary_symmetric(values: np.ndarray, k: int) -> float:
    """``e_k(values) = sum_{i_1 < .. < i_k} prod values``, by the positive recursion ``e_j += v e_{j-1}``.

    Stable for non-negative values (no subtraction); may underflow for large ``k``, where
    :func:`prob_distinct_steps` gives ``k! e_k(pi)`` directly.
    """
    v = np.asarray(values, dtype=np.float64)
    if np.any(v < 0):
        raise ValueError("elementary_symmetric expects non-negative values (no cancellation-free form otherwise)")
    k = int(k)
    e = np.zeros(k + 1)
    e[0] = 1.0
    for x in v:
        e[1:] = e[1:] + x * e[:-1]
    return float(e[k])
