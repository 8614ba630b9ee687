"""Lemma C.5: P_distinct = l! e_l(pi) <= (1 - 1/N)^(l-1), its (false) Jensen step and the repair."""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, closed_form, register, require
from .collision import distinct_probability
from .instances import _gen_pi, _gen_pi_exact, _pi


def jensen_f(x, l: int):
    """``f(x) = x (1 - x)^{l-1}``, the function of C.5's Jensen step."""
    return x * (1 - x) ** (l - 1)


def _c5_domain(inst):
    _pi(inst)
    l_ = inst["l"]
    require(int(l_) == l_ and l_ >= 1, f"interval length l must be an integer >= 1, got {l_!r}")


def _gen_c5(rng):
    exact = rng.random() < 0.3
    return {"l": int(rng.integers(1, 8)), "pi": _gen_pi_exact(rng) if exact else _gen_pi(rng, 30)}


def _c5_sides(inst, exact=False):
    if exact:
        pi = [Fraction(p) for p in inst["pi"]]
    else:
        pi = [float(p) for p in _pi(inst)]
    l_ = int(inst["l"])
    N = len(pi)
    one = Fraction(1) if exact else 1.0
    distinct = distinct_probability(pi, l_)
    first = sum(p * (1 - p) ** (l_ - 1) for p in pi)
    jensen = (1 - one / N) ** (l_ - 1)
    product = one
    for j in range(1, l_):
        product *= max(1 - one * j / N, 0 * one)
    return {"distinct": distinct, "first": first, "jensen": jensen, "product": product}


def _pair(a, b):
    return lambda inst, exact=False: (_c5_sides(inst, exact)[a], _c5_sides(inst, exact)[b])


_C5_DOC = "Exact P_distinct = l! e_l(pi) by the multiplicity recursion; exact rationals for Fraction pi."
_c5_params = {"l": "interval length", "pi": "step probabilities (or --N for the linear schedule)"}
_f_expr = S.x * (1 - S.x) ** (S.l - 1)


def _c5_build(**kw):
    return {"l": kw["l"], "pi": kw["pi"]}


register(
    Claim(
        id="C.5",
        atol=ATOL_CANCEL,
        paper="Lemma C.5",
        title="P_distinct = l! e_l(pi) <= (1 - 1/N)^(l-1)",
        lhs=sp.factorial(S.l) * sp.Function("e_l")(S.pi),
        rhs=(1 - 1 / S.N) ** (S.l - 1),
        relation="<=",
        evaluate=_pair("distinct", "jensen"),
        exact=lambda inst: _pair("distinct", "jensen")(inst, True),
        domain=_c5_domain,
        generate=_gen_c5,
        doc=_C5_DOC + " The statement holds (via C.5.maclaurin) although the paper's Jensen step is false.",
        steps=("C.5.first-position", "C.5.jensen", "C.5.concavity", "C.5.maclaurin", "C.5.product"),
        free={"pi": "simplex"},
        parameters=_c5_params,
        build=_c5_build,
    )
)
register(
    Claim(
        id="C.5.first-position",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.5",
        title="P_distinct <= sum_i pi_i (1 - pi_i)^(l-1) (no other position shares the first one's step)",
        lhs=sp.factorial(S.l) * sp.Function("e_l")(S.pi),
        rhs=S.step_sum(S.pi[S.i] * (1 - S.pi[S.i]) ** (S.l - 1)),
        relation="<=",
        evaluate=_pair("distinct", "first"),
        exact=lambda inst: _pair("distinct", "first")(inst, True),
        domain=_c5_domain,
        generate=_gen_c5,
        doc=_C5_DOC,
        free={"pi": "simplex"},
        parameters=_c5_params,
        build=_c5_build,
    )
)
register(
    Claim(
        id="C.5.jensen",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.5",
        title="Jensen step: sum_i pi_i (1 - pi_i)^(l-1) <= N f(1/N) = (1 - 1/N)^(l-1)",
        lhs=S.step_sum(S.pi[S.i] * (1 - S.pi[S.i]) ** (S.l - 1)),
        rhs=(1 - 1 / S.N) ** (S.l - 1),
        relation="<=",
        evaluate=_pair("first", "jensen"),
        exact=lambda inst: _pair("first", "jensen")(inst, True),
        domain=_c5_domain,
        generate=_gen_c5,
        doc=(
            "FALSE in general: f(x) = x(1-x)^(l-1) is concave only on [0, 2/l], not on [0, 1]. "
            "Counterexample: N = 2, l = 5, pi = (3/10, 7/10): 0.0777 > 1/16 (docs/findings.md). "
            "It holds when every pi_i <= 2/l."
        ),
        free={"pi": "simplex"},
        expect="false",
        parameters=_c5_params,
        build=_c5_build,
    )
)
_fpp = sp.diff(_f_expr, S.x, 2)
_fpp_factored = (S.l - 1) * (1 - S.x) ** (S.l - 3) * (S.l * S.x - 2)
_fpp_f = closed_form(_fpp_factored, (S.l, S.x))
register(
    Claim(
        id="C.5.concavity",
        paper="proof of Lemma C.5",
        title="f(x) = x (1-x)^(l-1) is concave on [0, 1]: f''(x) = (l-1)(1-x)^(l-3)(l x - 2) <= 0",
        lhs=_fpp_factored,
        rhs=sp.Integer(0),
        relation="<=",
        evaluate=lambda inst: (_fpp_f(inst), 0.0),
        exact=lambda inst: (
            (inst["l"] - 1) * (1 - Fraction(inst["x"])) ** (inst["l"] - 3) * (inst["l"] * Fraction(inst["x"]) - 2),
            Fraction(0),
        ),
        domain=lambda inst: (
            require(int(inst["l"]) == inst["l"] and inst["l"] >= 2, "need an integer l >= 2"),
            require(0 <= inst["x"] < 1, "need 0 <= x < 1"),
        ) and None,
        generate=lambda rng: {"l": int(rng.integers(2, 9)), "x": float(rng.random() * 0.999)},
        doc="Closed form; false for x > 2/l (e.g. l = 5, x = 1/2: f'' = 1/2 > 0).",
        free={"x": "unit"},
        expect="false",
        parameters={"l": "interval length", "x": "point in [0, 1)"},
        build=lambda **kw: {"l": kw["l"], "x": kw["x"]},
    )
)
register(
    Claim(
        id="C.5.maclaurin",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.5 (derived repair)",
        title="l! e_l(pi) <= prod_{j<l} (1 - j/N) (Maclaurin / Schur-concavity: uniform pi maximizes e_l)",
        lhs=sp.factorial(S.l) * sp.Function("e_l")(S.pi),
        rhs=sp.Product(1 - S.i / S.N, (S.i, 1, S.l - 1)),
        relation="<=",
        evaluate=_pair("distinct", "product"),
        exact=lambda inst: _pair("distinct", "product")(inst, True),
        domain=_c5_domain,
        generate=_gen_c5,
        doc=_C5_DOC + " Maclaurin: (e_l / C(N,l))^(1/l) <= e_1 / N = 1/N.",
        free={"pi": "simplex"},
        parameters=_c5_params,
        build=_c5_build,
    )
)
register(
    Claim(
        id="C.5.product",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.5 (derived repair)",
        title="prod_{j<l} (1 - j/N) <= (1 - 1/N)^(l-1)",
        lhs=sp.Product(1 - S.i / S.N, (S.i, 1, S.l - 1)),
        rhs=(1 - 1 / S.N) ** (S.l - 1),
        relation="<=",
        evaluate=_pair("product", "jensen"),
        exact=lambda inst: _pair("product", "jensen")(inst, True),
        domain=_c5_domain,
        generate=_gen_c5,
        doc="Termwise 1 - j/N <= 1 - 1/N.",
        parameters=_c5_params,
        build=_c5_build,
    )
)

