"""Lemma C.6: ``SER(p) >= 1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)`` in the interval setting.

Definition C.4: ``1..L`` is cut into ``L/l`` intervals of length ``l`` whose tokens are independent
across intervals. If a collision inside an interval (two of its positions revealed at one step)
causes an unrecoverable error with probability at least ``p_e``, each interval fails with
probability at least ``p_e (1 - P_distinct) >= p_e (1 - (1 - 1/N)^(l-1))`` (Lemma C.5), and the
intervals fail independently.

Checked on Example C.7 (:mod:`theory.c7_interval_language`): with the oracle (``p_e = 1/2``) the
exact SER is ``1 - E[2^{-c}]^(L/l)`` (:func:`theory.collision.interval_validity`, exact rationals for
Fraction ``pi``); with tilted models (``p_e = 1/2 - eps_learning``) by brute force at ``l = 3``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp

from numerics.languages.interval import IntervalLanguage

from . import symbols as S
from .brute import mixture_law, table
from .claims import ATOL_CANCEL, probability_vector, require, show
from .collision import distinct_probability, interval_validity
from .family import ClaimFamily
from .instances import INTERVAL_PARAMS, gen_interval, interval_domain, pi_vector

__all__ = ["c6_bound", "TILT_SPREAD_MAX"]

TILT_SPREAD_MAX = 0.5  # max(tilt) - min(tilt) < 1/2 bounds every per-token KL by 1/2, so p_e = 1/2 - eps > 0
MAX_ENUMERATED = 1 << 10  # N^L instances enumerated at most by C.6.model


def c6_bound(N: int, L: int, l: int, p_e):
    """``1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)``: Lemma C.6's lower bound on SER (``l`` divides ``L``).

    Exact rational when ``p_e`` is a ``Fraction``. In float64 both ``1 - (1 - 1/N)^(l-1)`` and the
    outer ``1 - (1 - x)^(L/l)`` are formed with ``expm1``/``log1p``, so the bound keeps its relative
    precision when it is small (large ``N``, one interval) instead of losing digits to ``1 - x``.
    """
    if isinstance(p_e, Fraction):
        return 1 - (1 - p_e * (1 - (1 - Fraction(1, N)) ** (l - 1))) ** (L // l)
    if N == 1:  # every position at the one step: a collision whenever the interval has two positions
        collide = 1.0 if l > 1 else 0.0
    else:
        collide = -math.expm1((l - 1) * math.log1p(-1.0 / N))
    fail = p_e * collide  # Lemma C.6's bound on one interval's error probability
    return -math.expm1((L // l) * math.log1p(-fail)) if fail < 1 else 1.0


def _domain(inst) -> None:
    interval_domain(inst)
    L, l_ = inst["L"], inst["l"]
    require(int(L) == L and L >= 1 and L % l_ == 0, f"L must be a positive multiple of l, got L = {show(L)}, l = {show(l_)}")


def _gen(rng: np.random.Generator) -> dict:
    inst = gen_interval(rng)
    inst["l"] = max(inst["l"], 2)
    inst["L"] = inst["l"] * int(rng.integers(1, 40))
    return inst


def _sides(inst, exact: bool = False) -> dict:
    """The oracle's exact SER on Example C.7 and Lemma C.6 with ``p_e = 1/2`` (Fractions if ``exact``)."""
    pi = [Fraction(p) for p in inst["pi"]] if exact else [float(p) for p in pi_vector(inst)]
    l_, L = int(inst["l"]), int(inst["L"])
    half = Fraction(1, 2) if exact else 0.5
    return {"ser": 1 - interval_validity(pi, l_) ** (L // l_), "bound": c6_bound(len(pi), L, l_, half)}


def _interval_sides(inst, exact: bool = False) -> dict:
    """One interval: the oracle's error probability ``1 - E[2^{-c}]`` and ``p_e (1 - P_distinct)``."""
    pi = [Fraction(p) for p in inst["pi"]] if exact else [float(p) for p in pi_vector(inst)]
    l_ = int(inst["l"])
    half = Fraction(1, 2) if exact else 0.5
    return {"error": 1 - interval_validity(pi, l_), "bound": half * (1 - distinct_probability(pi, l_))}


def _model_domain(inst) -> None:
    probability_vector("pi", inst["pi"])
    l_, L = int(inst["l"]), int(inst["L"])
    require(l_ == 3 and L in (3, 6), "C.6.model is brute force on Example C.7 with l = 3 and L in (3, 6)")
    require(len(inst["pi"]) ** L <= MAX_ENUMERATED, "N^L too large to enumerate")
    tilt = np.asarray(inst["tilt"], dtype=np.float64)
    require(tilt.shape == (4,) and float(tilt.max() - tilt.min()) < TILT_SPREAD_MAX,
            f"tilt must be 4 numbers with spread < {TILT_SPREAD_MAX} (eps_learning < 1/2)")


def _model(inst):
    l_, L = int(inst["l"]), int(inst["L"])
    pi = np.asarray(inst["pi"], dtype=np.float64)
    mix = mixture_law(table(IntervalLanguage(l_), L), pi, 1.0, inst["tilt"])
    return 1 - mix.valid, c6_bound(pi.size, L, l_, 0.5 - mix.eps)


def _gen_model(rng: np.random.Generator) -> dict:
    L = int(rng.choice([3, 3, 6]))
    N = int(rng.integers(1, 4 if L == 6 else 6))
    return {"l": 3, "L": L, "pi": rng.dirichlet(np.ones(N)),
            "tilt": rng.uniform(0, TILT_SPREAD_MAX * float(rng.uniform(0.05, 0.999)), 4)}


_ser = S.tex(r"\mathrm{SER}(p)")

c6 = ClaimFamily("C.6", "Lemma C.6", atol=ATOL_CANCEL, free={"pi": "simplex"}, vacuous_at=0)
c6.variant(sides=_sides, exact_sides=True, domain=_domain, generate=_gen).statement(
    "SER(p) >= 1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)", _ser, ">=",
    1 - (1 - S.p_e * (1 - (1 - 1 / S.N) ** (S.l - 1))) ** (S.L / S.l), sides=("ser", "bound"),
    steps=("C.6.interval", "C.6.model"),
    doc=("Checked on Example C.7 with the oracle (eps_learning = 0, p_e = 1/2): the exact SER is "
         "1 - (E[2^{-c}])^(L/l) with E[2^{-c}] from the multiplicity recursion (exact rationals "
         "for Fraction pi)."),
    parameters={"L": "length (multiple of l)", "l": "interval length",
                "pi": "step probabilities (or -N steps of --schedule)"},
)
c6.variant(sides=_interval_sides, exact_sides=True, domain=interval_domain, generate=gen_interval).step(
    "interval", "Per interval: P(error) = 1 - E[2^{-c}] >= p_e (1 - P_distinct) with p_e = 1/2",
    1 - sp.Function("E")(2 ** (-S.tex("c"))), ">=", S.p_e * (1 - sp.factorial(S.l) * sp.Function("e_l")(S.pi)),
    sides=("error", "bound"), parameters=INTERVAL_PARAMS,
    doc="Both sides exact (multiplicity recursion).",
)
c6.step(
    "model", "Example C.7 (l = 3), tilted models: SER(p) >= 1 - (1 - (1/2 - eps)(1 - (1 - 1/N)^(l-1)))^(L/l)",
    _ser, ">=", 1 - (1 - (sp.Rational(1, 2) - S.eps_l) * (1 - (1 - 1 / S.N) ** (S.l - 1))) ** (S.L / S.l), _model,
    paper="proof of Lemma C.6 (imperfect models, p_e = 1/2 - eps_learning)", domain=_model_domain,
    generate=_gen_model, free={"pi": "simplex", "tilt": "unitvec"},
    parameters={"l": "3", "L": "3 or 6", "pi": "step probabilities", "tilt": "token tilt (4 numbers)"},
    doc=("Brute force on Example C.7 with l = 3 (V = 4) at L = 3, 6: the model is the oracle tilted by "
         "exp(tilt[token]) (theory.brute), eps_learning its exact max per-token KL; Lemma C.6 with "
         "Example C.7's p_e = 1/2 - eps_learning against the exact SER of the model's mixture law."),
)
