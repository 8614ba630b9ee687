"""Lemma C.1: ``P(two of L positions share a step) = 1 - L! e_L(pi) <= C(L,2) sum_i pi_i^2``.

Positions choose their reveal steps i.i.d. with probabilities ``pi_1..pi_N``; all ``L`` are at
distinct steps with probability ``L! e_L(pi)`` (``e_L`` the elementary symmetric polynomial), and
the union bound over the ``C(L,2)`` pairs gives the right side, which tends to 0 as
``max_i pi_i -> 0``. The exact value comes from the multiplicity recursion of
:mod:`theory.collision` (exact rationals for Fraction ``pi``) and is checked against enumeration of
all ``N^L`` assignments.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import sympy as sp

from . import symbols as S
from .claims import ATOL_CANCEL, require, show
from .collision import (
    collision_probability,
    distinct_probability,
    enumerate_distinct_probability,
)
from .family import ClaimFamily
from .instances import gen_pi, gen_pi_exact, pi_vector

MAX_ENUMERATED = 1 << 14  # N^L step assignments enumerated at most by C.1.exact


def _domain(inst) -> None:
    pi_vector(inst)
    L = inst["L"]
    require(int(L) == L and L >= 2, f"L must be an integer >= 2, got {show(L)}")


def _enumerable_domain(inst) -> None:
    _domain(inst)
    require(len(inst["pi"]) ** inst["L"] <= MAX_ENUMERATED, f"N^L too large to enumerate (at most {MAX_ENUMERATED})")


def _gen(rng: np.random.Generator) -> dict:
    exact = rng.random() < 0.3
    # short lengths too: the union bound C(L,2) sum pi_i^2 is below 1 (informative) only when L^2 << N
    L = int(rng.integers(2, 8)) if exact else int(rng.integers(2, int(rng.choice([6, 40]))))
    return {"L": L, "pi": gen_pi_exact(rng) if exact else gen_pi(rng)}


def _sides(inst, exact: bool = False) -> dict:
    """The collision probability, its union bound, ``L! e_L(pi)`` and its enumeration (Fractions if ``exact``)."""
    pi = [Fraction(p) for p in inst["pi"]] if exact else pi_vector(inst)
    L = int(inst["L"])
    return {"collision": collision_probability(pi, L), "union": comb(L, 2) * sum(p * p for p in pi)}


def _distinct_sides(inst, exact: bool = False) -> dict:
    pi = [Fraction(p) for p in inst["pi"]] if exact else pi_vector(inst)
    L = int(inst["L"])
    return {"distinct": distinct_probability(pi, L), "enumerated": enumerate_distinct_probability(list(pi), L)}


_distinct = sp.factorial(S.L) * sp.Function("e_L")(S.pi)
_PARAMS = {"L": "sequence length", "pi": "step probabilities (or -N steps of --schedule)"}

c1 = ClaimFamily("C.1", "Lemma C.1", sides=_sides, exact_sides=True, domain=_domain, generate=_gen, atol=ATOL_CANCEL,
                 free={"pi": "simplex"})
c1.statement(
    "P(two positions share a step) = 1 - L! e_L(pi) <= C(L,2) sum_i pi_i^2", 1 - _distinct, "<=",
    sp.binomial(S.L, 2) * S.step_sum(S.pi[S.i] ** 2), sides=("collision", "union"), steps=("C.1.exact",),
    vacuous_at=1,
    doc=("Exact collision probability from the multiplicity recursion (exact rationals for Fraction pi); "
         "union bound over the C(L,2) pairs on the right. Tends to 0 as max_i pi_i -> 0."),
    parameters=_PARAMS,
)
c1.variant(sides=_distinct_sides).step(
    "exact", "P(all L positions at distinct steps) = L! e_L(pi), against enumeration of all N^L assignments",
    _distinct, "==", sp.Function("P_enum")(S.L, S.pi), sides=("distinct", "enumerated"),
    paper="proof of Lemma C.1 (exact value)", doc="Both sides exact rationals.", parameters=_PARAMS,
    domain=_enumerable_domain,
    generate=lambda rng: {"L": int(rng.integers(2, 5)), "pi": gen_pi_exact(rng, 6)},
)
