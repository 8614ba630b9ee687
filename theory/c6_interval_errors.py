"""Lemma C.6: SER(p) >= 1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l), on Example C.7 (oracle and tilted models)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from . import symbols as S
from .brute import mixture_law, table
from .c5_distinct_steps import _c5_build, _c5_domain, _c5_params, _gen_c5
from .claims import ATOL_CANCEL, Claim, probability_vector, register, require
from .collision import distinct_probability, interval_validity
from .instances import _pi


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


TILT_SPREAD_MAX = 0.5  # max(tilt) - min(tilt) < 1/2 bounds every per-token KL by 1/2, so p_e = 1/2 - eps > 0


def _c6_model_domain(inst) -> None:
    probability_vector("pi", inst["pi"])
    l_, L = int(inst["l"]), int(inst["L"])
    require(l_ == 3 and L in (3, 6), "C.6.model is brute force on Example C.7 with l = 3 and L in (3, 6)")
    require(len(inst["pi"]) ** L <= 1 << 10, "N^L too large to enumerate")
    tilt = np.asarray(inst["tilt"], dtype=np.float64)
    require(tilt.shape == (4,) and float(tilt.max() - tilt.min()) < TILT_SPREAD_MAX,
            f"tilt must be 4 numbers with spread < {TILT_SPREAD_MAX} (eps_learning < 1/2)")


def _c6_model(inst):
    from numerics.languages.interval import IntervalLanguage

    l_, L = int(inst["l"]), int(inst["L"])
    pi = np.asarray(inst["pi"], dtype=np.float64)
    q = table(IntervalLanguage(l_), L)
    mix = mixture_law(q, pi, 1.0, inst["tilt"])
    N = pi.size
    pe = 0.5 - mix.eps
    bound = 1 - (1 - pe * (1 - (1 - 1 / N) ** (l_ - 1))) ** (L // l_)
    return 1 - mix.valid, bound


def _gen_c6_model(rng: np.random.Generator) -> dict:
    L = int(rng.choice([3, 3, 6]))
    N = int(rng.integers(1, 4 if L == 6 else 6))
    return {"l": 3, "L": L, "pi": rng.dirichlet(np.ones(N)),
            "tilt": rng.uniform(0, TILT_SPREAD_MAX * float(rng.uniform(0.05, 0.999)), 4)}


register(
    Claim(
        id="C.6.model",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.6 (imperfect models, p_e = 1/2 - eps_learning)",
        title="Example C.7 (l = 3), tilted models: SER(p) >= 1 - (1 - (1/2 - eps)(1 - (1 - 1/N)^(l-1)))^(L/l)",
        lhs=S.tex(r"\mathrm{SER}(p)"),
        rhs=1 - (1 - (sp.Rational(1, 2) - S.eps_l) * (1 - (1 - 1 / S.N) ** (S.l - 1))) ** (S.L / S.l),
        relation=">=",
        evaluate=_c6_model,
        domain=_c6_model_domain,
        generate=_gen_c6_model,
        doc=(
            "Brute force on Example C.7 with l = 3 (V = 4) at L = 3, 6: the model is the oracle tilted by "
            "exp(tilt[token]) (theory.brute), eps_learning its exact max per-token KL; Lemma C.6 with "
            "Example C.7's p_e = 1/2 - eps_learning against the exact SER of the model's mixture law."
        ),
        free={"pi": "simplex", "tilt": "unitvec"},
        parameters={"l": "3", "L": "3 or 6", "pi": "step probabilities", "tilt": "token tilt (4 numbers)"},
    )
)
