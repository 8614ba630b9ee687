"""Lemma C.5: ``P_distinct = l! e_l(pi) <= (1 - 1/N)^(l-1)``, its (false) Jensen step and the repair.

``P_distinct`` is the probability that the ``l`` positions of an interval are revealed at ``l``
different steps. The paper's proof: the first position's step is shared by none of the others,
``P_distinct <= sum_i pi_i (1 - pi_i)^(l-1)``, then Jensen with ``f(x) = x (1-x)^(l-1)``. That step is
false: ``f''(x) = (l-1)(1-x)^(l-3)(l x - 2)`` is positive for ``x > 2/l`` (docs/findings.md). The
statement holds anyway by Maclaurin's inequality,
``l! e_l(pi) <= l! C(N,l) / N^l = prod_{j<l} (1 - j/N) <= (1 - 1/N)^(l-1)`` (docs/derivations.md, C.5).
Every side is exact (rationals for Fraction ``pi``).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from . import symbols as S
from .claims import ATOL_CANCEL, closed_form, require
from .collision import distinct_probability
from .family import ClaimFamily
from .instances import INTERVAL_PARAMS, gen_interval, interval_domain, pi_vector

__all__ = ["jensen_f"]


def jensen_f(x, l: int):
    """``f(x) = x (1 - x)^{l-1}``, the function of C.5's Jensen step."""
    return x * (1 - x) ** (l - 1)


def _sides(inst, exact: bool = False) -> dict:
    """``l! e_l(pi)``, the first-position bound, ``prod_{j<l} (1 - j/N)`` and ``(1 - 1/N)^(l-1)``."""
    pi = [Fraction(p) for p in inst["pi"]] if exact else [float(p) for p in pi_vector(inst)]
    l_ = int(inst["l"])
    N = len(pi)
    one = Fraction(1) if exact else 1.0
    product = one
    for j in range(1, l_):
        product *= max(1 - one * j / N, 0 * one)
    return {"distinct": distinct_probability(pi, l_), "first": sum(p * (1 - p) ** (l_ - 1) for p in pi),
            "jensen": (1 - one / N) ** (l_ - 1), "product": product}


_fpp_factored = (S.l - 1) * (1 - S.x) ** (S.l - 3) * (S.l * S.x - 2)
_fpp_f = closed_form(_fpp_factored, (S.l, S.x))


def _concavity_exact(inst):
    l_, x = inst["l"], Fraction(inst["x"])
    return (l_ - 1) * (1 - x) ** (l_ - 3) * (l_ * x - 2), Fraction(0)


def _concavity_domain(inst) -> None:
    require(int(inst["l"]) == inst["l"] and inst["l"] >= 2, "need an integer l >= 2")
    require(0 <= inst["x"] < 1, "need 0 <= x < 1")


_DOC = "Exact P_distinct = l! e_l(pi) by the multiplicity recursion; exact rationals for Fraction pi."
_distinct = sp.factorial(S.l) * sp.Function("e_l")(S.pi)
_first = S.step_sum(S.pi[S.i] * (1 - S.pi[S.i]) ** (S.l - 1))
_jensen = (1 - 1 / S.N) ** (S.l - 1)
_product = sp.Product(1 - S.i / S.N, (S.i, 1, S.l - 1))
_REPAIR = "proof of Lemma C.5 (derived repair)"

c5 = ClaimFamily("C.5", "Lemma C.5", sides=_sides, exact_sides=True, domain=interval_domain, generate=gen_interval,
                 atol=ATOL_CANCEL, doc=_DOC, free={"pi": "simplex"}, parameters=INTERVAL_PARAMS, vacuous_at=1)
c5.statement("P_distinct = l! e_l(pi) <= (1 - 1/N)^(l-1)", _distinct, "<=", _jensen, sides=("distinct", "jensen"),
             doc=_DOC + " The statement holds (via C.5.maclaurin) although the paper's Jensen step is false.",
             steps=("C.5.first-position", "C.5.jensen", "C.5.concavity", "C.5.maclaurin", "C.5.product"))
c5.step("first-position",
        "P_distinct <= sum_i pi_i (1 - pi_i)^(l-1) (no other position shares the first one's step)",
        _distinct, "<=", _first, sides=("distinct", "first"))
c5.step("jensen", "Jensen step: sum_i pi_i (1 - pi_i)^(l-1) <= N f(1/N) = (1 - 1/N)^(l-1)", _first, "<=", _jensen,
        sides=("first", "jensen"), expect="false", counterexamples=({"l": 5, "pi": (Fraction(3, 10), Fraction(7, 10))},),
        doc=("FALSE in general: f(x) = x(1-x)^(l-1) is concave only on [0, 2/l], not on [0, 1]. "
             "Counterexample: N = 2, l = 5, pi = (3/10, 7/10): 0.0777 > 1/16 (docs/findings.md). "
             "It holds when every pi_i <= 2/l."))
c5.step("concavity", "f(x) = x (1-x)^(l-1) is concave on [0, 1]: f''(x) = (l-1)(1-x)^(l-3)(l x - 2) <= 0",
        _fpp_factored, "<=", sp.Integer(0), lambda inst: (_fpp_f(inst), 0.0), exact=_concavity_exact,
        domain=_concavity_domain, generate=lambda rng: {"l": int(rng.integers(2, 9)), "x": float(rng.random() * 0.999)},
        atol=0.0, free={"x": "unit"}, expect="false", counterexamples=({"l": 5, "x": Fraction(1, 2)},),
        vacuous_at=None, parameters={"l": "interval length", "x": "point in [0, 1)"},
        doc="Closed form; false for x > 2/l (e.g. l = 5, x = 1/2: f'' = 1/2 > 0).")
c5.step("maclaurin",
        "l! e_l(pi) <= prod_{j<l} (1 - j/N) (Maclaurin / Schur-concavity: uniform pi maximizes e_l)",
        _distinct, "<=", _product, sides=("distinct", "product"), paper=_REPAIR,
        doc=_DOC + " Maclaurin: (e_l / C(N,l))^(1/l) <= e_1 / N = 1/N.")
c5.step("product", "prod_{j<l} (1 - j/N) <= (1 - 1/N)^(l-1)", _product, "<=", _jensen, sides=("product", "jensen"),
        paper=_REPAIR, free={}, vacuous_at=None, doc="Termwise 1 - j/N <= 1 - 1/N.")
