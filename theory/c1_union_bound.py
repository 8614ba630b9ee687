"""Lemma C.1: P(two of L positions share a step) = 1 - L! e_L(pi) <= C(L,2) sum_i pi_i^2."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import sympy as sp

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, register, require
from .collision import collision_probability, distinct_probability, enumerate_distinct_probability
from .instances import _gen_pi, _gen_pi_exact, _pi


def _c1_domain(inst):
    _pi(inst)
    L = inst["L"]
    require(int(L) == L and L >= 2, f"L must be an integer >= 2, got {L!r}")




def _gen_c1(rng):
    exact = rng.random() < 0.3
    return {"L": int(rng.integers(2, 8 if exact else 40)), "pi": _gen_pi_exact(rng) if exact else _gen_pi(rng)}


def _c1(inst, exact=False):
    pi = list(inst["pi"]) if exact else _pi(inst)
    if exact:
        pi = [Fraction(p) for p in pi]
    L = int(inst["L"])
    rhs = comb(L, 2) * sum(p * p for p in pi)
    return collision_probability(pi, L), rhs


register(
    Claim(
        id="C.1",
        atol=ATOL_CANCEL,
        paper="Lemma C.1",
        title="P(two positions share a step) = 1 - L! e_L(pi) <= C(L,2) sum_i pi_i^2",
        lhs=1 - sp.factorial(S.L) * sp.Function("e_L")(S.pi),
        rhs=sp.binomial(S.L, 2) * S.step_sum(S.pi[S.i] ** 2),
        relation="<=",
        evaluate=_c1,
        exact=lambda inst: _c1(inst, exact=True),
        domain=_c1_domain,
        generate=_gen_c1,
        doc=(
            "Exact collision probability from the multiplicity recursion (exact rationals for Fraction pi); "
            "union bound over the C(L,2) pairs on the right. Tends to 0 as max_i pi_i -> 0."
        ),
        steps=("C.1.exact",),
        free={"pi": "simplex"},
        parameters={"L": "sequence length", "pi": "step probabilities (or --N for the linear schedule)"},
        build=lambda **kw: {"L": kw["L"], "pi": kw["pi"]},
    )
)
register(
    Claim(
        id="C.1.exact",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.1 (exact value)",
        title="P(all L positions at distinct steps) = L! e_L(pi), against enumeration of all N^L assignments",
        lhs=sp.factorial(S.L) * sp.Function("e_L")(S.pi),
        rhs=sp.Function("P_enum")(S.L, S.pi),
        relation="==",
        evaluate=lambda inst: (distinct_probability(_pi(inst), int(inst["L"])), enumerate_distinct_probability(list(_pi(inst)), int(inst["L"]))),
        exact=lambda inst: (
            distinct_probability([Fraction(p) for p in inst["pi"]], int(inst["L"])),
            enumerate_distinct_probability([Fraction(p) for p in inst["pi"]], int(inst["L"])),
        ),
        domain=lambda inst: (_c1_domain(inst), require(len(inst["pi"]) ** inst["L"] <= 1 << 14, "N^L too large to enumerate")) and None,
        generate=lambda rng: {"L": int(rng.integers(2, 5)), "pi": _gen_pi_exact(rng, 6)},
        doc="Both sides exact rationals.",
        free={"pi": "simplex"},
    )
)

