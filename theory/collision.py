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
from fractions import Fraction
from math import comb
from typing import Any, Callable, Mapping

import numpy as np
import sympy as sp

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, closed_form, probability_vector, register, require

__all__ = [
    "multiplicity_expectation",
    "distinct_probability",
    "collision_probability",
    "interval_validity",
    "enumerate_distinct_probability",
    "jensen_f",
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
        raise ValueError(f"m must be an integer >= 0, got {m!r}")
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


def jensen_f(x, l: int):
    """``f(x) = x (1 - x)^{l-1}``, the function of C.5's Jensen step."""
    return x * (1 - x) ** (l - 1)


# ---------------------------------------------------------------------------------------------
# Lemma C.1


def _pi(inst: Mapping[str, Any]):
    pi = inst["pi"]
    return probability_vector("pi", pi)


def _c1_domain(inst):
    _pi(inst)
    L = inst["L"]
    require(int(L) == L and L >= 2, f"L must be an integer >= 2, got {L!r}")


def _gen_pi(rng: np.random.Generator, max_n: int = 40) -> np.ndarray:
    N = int(rng.integers(1, int(rng.choice([min(3, max_n), min(8, max_n), max_n])) + 1))
    kind = rng.integers(0, 3)
    if kind == 0:
        return np.full(N, 1.0 / N)
    w = rng.dirichlet(np.full(N, float(rng.choice([0.2, 1.0, 10.0]))))
    return w


def _gen_pi_exact(rng: np.random.Generator, max_n: int = 8) -> list[Fraction]:
    N = int(rng.integers(1, max_n + 1))
    w = [int(v) for v in rng.integers(0, 6, N)]
    if sum(w) == 0:
        w[-1] = 1
    return [Fraction(v, sum(w)) for v in w]


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


# ---------------------------------------------------------------------------------------------
# Lemma C.5


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


# ---------------------------------------------------------------------------------------------
# Lemma C.6 (checked on Example C.7 with the oracle, p_e = 1/2)


def c6_bound(N: int, L: int, l: int, p_e) -> float:
    """``1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)``: Lemma C.6's lower bound on SER."""
    return 1 - (1 - p_e * (1 - (1 - 1 / N) ** (l - 1))) ** (L / l)


def _c6_domain(inst):
    _c5_domain(inst)
    L, l_ = inst["L"], inst["l"]
    require(int(L) == L and L >= 1 and L % l_ == 0, f"L must be a positive multiple of l, got L = {L}, l = {l_}")


def _gen_c6(rng):
    inst = _gen_c5(rng)
    inst["l"] = max(inst["l"], 2)
    inst["L"] = inst["l"] * int(rng.integers(1, 40))
    return inst


def _c6(inst, exact=False):
    pi = [Fraction(p) for p in inst["pi"]] if exact else [float(p) for p in _pi(inst)]
    l_, L = int(inst["l"]), int(inst["L"])
    valid = interval_validity(pi, l_)
    ser = 1 - valid ** (L // l_)
    half = Fraction(1, 2) if exact else 0.5
    N = len(pi)
    bound = 1 - (1 - half * (1 - (1 - (Fraction(1) if exact else 1.0) / N) ** (l_ - 1))) ** (L // l_)
    return ser, bound


def _c6_interval(inst, exact=False):
    pi = [Fraction(p) for p in inst["pi"]] if exact else [float(p) for p in _pi(inst)]
    l_ = int(inst["l"])
    half = Fraction(1, 2) if exact else 0.5
    return 1 - interval_validity(pi, l_), half * (1 - distinct_probability(pi, l_))


_ser_sym = S.tex(r"\mathrm{SER}(p)")
register(
    Claim(
        id="C.6",
        atol=ATOL_CANCEL,
        paper="Lemma C.6",
        title="SER(p) >= 1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)",
        lhs=_ser_sym,
        rhs=1 - (1 - S.p_e * (1 - (1 - 1 / S.N) ** (S.l - 1))) ** (S.L / S.l),
        relation=">=",
        evaluate=_c6,
        exact=lambda inst: _c6(inst, True),
        domain=_c6_domain,
        generate=_gen_c6,
        doc=(
            "Checked on Example C.7 with the oracle (eps_learning = 0, p_e = 1/2): the exact SER is "
            "1 - (E[2^{-c}])^(L/l) with E[2^{-c}] from the multiplicity recursion (exact rationals "
            "for Fraction pi)."
        ),
        steps=("C.6.interval", "C.6.model"),
        free={"pi": "simplex"},
        parameters={"L": "length (multiple of l)", "l": "interval length", "pi": "step probabilities (or --N)"},
        build=lambda **kw: {"L": kw["L"], "l": kw["l"], "pi": kw["pi"]},
    )
)
register(
    Claim(
        id="C.6.interval",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.6",
        title="Per interval: P(error) = 1 - E[2^{-c}] >= p_e (1 - P_distinct) with p_e = 1/2",
        lhs=1 - sp.Function("E")(2 ** (-S.tex("c"))),
        rhs=S.p_e * (1 - sp.factorial(S.l) * sp.Function("e_l")(S.pi)),
        relation=">=",
        evaluate=_c6_interval,
        exact=lambda inst: _c6_interval(inst, True),
        domain=_c5_domain,
        generate=_gen_c5,
        doc="Both sides exact (multiplicity recursion).",
        free={"pi": "simplex"},
        parameters=_c5_params,
        build=_c5_build,
    )
)
