"""Example C.7: the interval language, and p_e = 1/2 - 2 (1/16)^2 = 63/128 for eps_learning < 1/128.

Derived (docs/derivations.md): under Assumption 4.1 with ``eps_learning = eps``, Pinsker bounds every bit
marginal of the model within ``delta <= sqrt(eps/2)`` of 1/2; two positions of a fresh pair
sampled in one step disagree with probability ``1/2 - 2 delta_j delta_k >= 1/2 - eps``, so
``p_e = 1/2 - eps > 63/128`` for ``eps < 1/128`` (the paper's value ``1/2 - 2 (1/16)^2``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp
from scipy.special import softmax

from . import symbols as S
from .claims import Claim, probability_vector, register, require
from .information import kl

__all__ = ["EPS_MAX", "P_E_PAPER", "p_e"]

EPS_MAX = Fraction(1, 128)  # Theorem 4.4's hypothesis eps_learning < 1/128
P_E_PAPER = Fraction(1, 2) - 2 * Fraction(1, 16) ** 2  # = 63/128: 1/2 - 2 (sqrt(EPS_MAX/2))^2


def p_e(eps_learning: float) -> float:
    """``p_e = 1/2 - eps_learning``: collision error probability of Example C.7 (module docstring)."""
    require(0 <= eps_learning < 0.5, f"need 0 <= eps_learning < 1/2, got {eps_learning!r}")
    return 0.5 - eps_learning



def _c7_sides(inst):
    l_ = int(inst["l"])
    M = 2 ** (l_ - 1)
    Pj = np.asarray(inst["Pj"], dtype=np.float64)
    Pk = np.asarray(inst["Pk"], dtype=np.float64)
    U = np.full(M, 1.0 / M)
    eps_j, eps_k = kl(U, Pj), kl(U, Pk)
    tokens = np.arange(M)
    pj = float(Pj[(tokens >> int(inst["bit_j"])) & 1 == 1].sum())
    pk = float(Pk[(tokens >> int(inst["bit_k"])) & 1 == 1].sum())
    disagree = pj * (1 - pk) + pk * (1 - pj)
    return {"disagree": disagree, "eps": max(eps_j, eps_k), "eps_j": eps_j, "eps_k": eps_k, "pj": pj, "pk": pk}


def _c7_domain(inst):
    l_ = inst["l"]
    require(int(l_) == l_ and l_ >= 2, f"need an integer l >= 2, got {l_!r}")
    M = 2 ** (int(l_) - 1)
    for name in ("Pj", "Pk"):
        P = probability_vector(name, inst[name])
        require(P.shape == (M,), f"{name} must be a probability vector over the 2^(l-1) = {M} tokens")
    for name in ("bit_j", "bit_k"):
        require(0 <= int(inst[name]) < l_ - 1, f"{name} must index one of the l-1 bits")
    sides = _c7_sides(inst)
    require(sides["eps"] < float(EPS_MAX), f"Theorem 4.4 assumes eps_learning < 1/128; this model has {sides['eps']:.6g}")


def _tilted(rng, M: int, target: float, bit: int, sign: float) -> np.ndarray:
    """A model marginal with KL(uniform || P) = target, tilted towards one value of ``bit`` plus noise."""
    tokens = np.arange(M)
    g = sign * (((tokens >> bit) & 1) * 2.0 - 1.0) + 0.3 * rng.normal(size=M)
    lo, hi = 0.0, 1.0
    U = np.full(M, 1.0 / M)
    while kl(U, softmax(hi * g)) < target:
        hi *= 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if kl(U, softmax(mid * g)) < target else (lo, mid)
    return softmax(lo * g)


def _gen_c7(rng: np.random.Generator) -> dict:
    l_ = int(rng.integers(2, 7))
    M = 2 ** (l_ - 1)
    bj, bk = int(rng.integers(0, l_ - 1)), int(rng.integers(0, l_ - 1))
    sign = float(rng.choice([-1.0, 1.0]))
    eps_target = float(EPS_MAX) * float(rng.uniform(0.01, 0.999))
    return {
        "l": l_,
        "Pj": _tilted(rng, M, eps_target, bj, sign),
        "Pk": _tilted(rng, M, eps_target * float(rng.uniform(0.2, 1.0)), bk, sign if rng.random() < 0.8 else -sign),
        "bit_j": bj,
        "bit_k": bk,
    }


_C7_DOC = (
    "Two positions j, k of an interval, neither revealed, sampled in one step: each bit of their pair "
    "is uniform under q; the model's token marginals Pj, Pk (over 2^(l-1) tokens) satisfy "
    "KL(q_j || Pj) < 1/128 (Assumption 4.1; q_j uniform: the fresh case). Disagreement probability "
    "pj (1 - pk) + pk (1 - pj) from the explicit marginals."
)
_c7_params = {"l": "interval length", "Pj": "model marginal of x_j", "Pk": "model marginal of x_k", "bit_j": "bit of x_j for k", "bit_k": "bit of x_k for j"}

register(
    Claim(
        id="C.7",
        paper="Example C.7",
        title="A collision of a fresh pair is an error with probability >= p_e = 1/2 - 2 (1/16)^2 = 63/128",
        lhs=S.tex(r"P(\mathrm{disagree})"),
        rhs=sp.Rational(1, 2) - 2 * sp.Rational(1, 16) ** 2,
        relation=">=",
        evaluate=lambda inst: (_c7_sides(inst)["disagree"], float(P_E_PAPER)),
        domain=_c7_domain,
        generate=_gen_c7,
        doc=_C7_DOC,
        steps=("C.7.pinsker", "C.7.pair"),
        free={},
        parameters=_c7_params,
    )
)
register(
    Claim(
        id="C.7.pinsker",
        paper="proof of Example C.7 (Pinsker step)",
        title="|P_theta(bit = 1) - 1/2| <= sqrt(eps_learning / 2) < 1/16",
        lhs=sp.Abs(S.tex("p_j") - sp.Rational(1, 2)),
        rhs=sp.sqrt(S.eps_l / 2),
        relation="<=",
        evaluate=lambda inst: (abs(_c7_sides(inst)["pj"] - 0.5), math.sqrt(_c7_sides(inst)["eps_j"] / 2)),
        domain=_c7_domain,
        generate=_gen_c7,
        doc=_C7_DOC,
        parameters=_c7_params,
    )
)
register(
    Claim(
        id="C.7.pair",
        paper="proof of Example C.7 (derived, sharper)",
        title="P(disagree) = 1/2 - 2 delta_j delta_k >= 1/2 - sqrt(eps_j eps_k) >= 1/2 - eps_learning",
        lhs=S.tex(r"P(\mathrm{disagree})"),
        rhs=sp.Rational(1, 2) - S.eps_l,
        relation=">=",
        evaluate=lambda inst: (_c7_sides(inst)["disagree"], 0.5 - _c7_sides(inst)["eps"]),
        domain=_c7_domain,
        generate=_gen_c7,
        doc=_C7_DOC,
        parameters=_c7_params,
    )
)

