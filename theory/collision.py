"""Collisions of positions in one step: Lemmas C.1, C.5, C.6 and their proof steps.

Positions choose steps i.i.d. with probabilities ``pi_1..pi_N``. For ``m`` positions and a
weight ``w`` on the multiplicity of each step,

``E[prod_i w(m_i)] = m! [x^m] prod_i sum_j w(j) (pi_i x)^j / j!``

(``m_i`` = number of the ``m`` positions at step ``i``). With ``w(j) = 1{j <= 1}`` this is the
probability that all ``m`` positions are at distinct steps, ``m! e_m(pi)`` (``e_m`` the
elementary symmetric polynomial); with ``w(j) = 2^{-j(j-1)/2}`` it is ``E[2^{-c}]``, the oracle's
validity of one interval of Example C.7 (``c`` = number of pairs sharing a step).

The recursion is run on ``h_m = m! [x^m] F`` (``h'_m = sum_j C(m, j) w(j) pi_i^j h_{m-j}``), whose
entries stay in ``[0, 1]``: no factorials, no overflow. Fractions give exact rationals.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from fractions import Fraction
from math import comb
from typing import Any

from .claims import show

__all__ = [
    "multiplicity_expectation",
    "distinct_probability",
    "collision_probability",
    "interval_validity",
    "enumerate_distinct_probability",
]


def _egf_product(a: list, b: list, binom: list) -> list:
    """Product of two generating functions in ``h`` form (``h_m = m! [x^m]``): binomial convolution."""
    return [sum(binom[m][j] * a[j] * b[m - j] for j in range(m + 1)) for m in range(len(a))]


def multiplicity_expectation(pi, m: int, weight: Callable[[int], Any]):
    """``E[prod_i w(m_i)]`` for ``m`` positions (module docstring). Exact if ``pi`` holds Fractions.

    Steps with equal ``pi_i`` share one factor raised to its multiplicity by repeated squaring, so
    the uniform schedule costs ``O(m^2 log N)`` instead of ``O(N m^2)``.
    """
    if int(m) != m or m < 0:
        raise ValueError(f"m must be an integer >= 0, got {show(m)}")
    exact = any(isinstance(p, Fraction) for p in pi)
    one = Fraction(1) if exact else 1.0
    w = [weight(j) if not exact else Fraction(weight(j)) for j in range(m + 1)]
    binom = [[comb(a, b) for b in range(m + 1)] for a in range(m + 1)]
    counts: dict = {}
    for p in pi:
        p = Fraction(p) if exact else float(p)
        counts[p] = counts.get(p, 0) + 1
    h = [one] + [one * 0] * m
    for p, count in counts.items():
        factor = [w[j] * p**j for j in range(m + 1)]  # one step: h_j = w(j) p^j
        while count:  # h <- h * factor^count
            if count & 1:
                h = _egf_product(h, factor, binom)
            count >>= 1
            if count:
                factor = _egf_product(factor, factor, binom)
    return h[m]


def distinct_probability(pi, m: int):
    """``m! e_m(pi)``: probability that ``m`` positions are revealed at ``m`` different steps."""
    return multiplicity_expectation(pi, m, lambda j: 1 if j <= 1 else 0)


def collision_probability(pi, L: int):
    """``1 - L! e_L(pi)``: probability that some two of ``L`` positions share a step (Lemma C.1's exact value)."""
    return 1 - distinct_probability(pi, L)


def interval_validity(pi, l: int):
    """``E[2^{-c}]`` for one interval of ``l`` positions: the oracle's validity in Example C.7."""
    return multiplicity_expectation(pi, l, lambda j: Fraction(1, 2 ** (j * (j - 1) // 2)))


def enumerate_distinct_probability(pi, m: int):
    """Brute-force oracle of :func:`distinct_probability`: all ``N^m`` step assignments."""
    total = 0 * pi[0]
    for steps in itertools.product(range(len(pi)), repeat=m):
        if len(set(steps)) == m:
            w = 1 + 0 * pi[0]
            for s in steps:
                w *= pi[s]
            total += w
    return total

