"""Example C.7: the interval language, and ``p_e = 1/2 - 2 (1/16)^2 = 63/128`` for ``eps_learning < 1/128``.

The language (Definition C.4 with interval length ``l``): tokens take values in
``{0, .., 2^{l-1} - 1}``, read as ``l-1`` bits. Inside an interval each pair of positions
``(j, k)`` shares one uniformly random bit, written once in ``x_j`` (its bit for partner ``k``) and
once in ``x_k`` (its bit for partner ``j``); all pair bits are independent, and a sequence is valid
iff every pair agrees (:class:`numerics.languages.interval.IntervalLanguage`). Sampling both
positions of a pair in one step when neither is known makes them disagree with probability 1/2
under the oracle.

Derived (docs/derivations.md, Example C.7): under Assumption 4.1 with ``eps_learning = eps``, Pinsker
(Lemma A.3) bounds every bit marginal of the model within ``delta <= sqrt(eps/2)`` of 1/2; two
positions of a fresh pair sampled in one step disagree with probability
``1/2 - 2 delta_j delta_k >= 1/2 - eps``, so ``p_e = 1/2 - eps > 63/128`` for ``eps < 1/128`` (the
paper's value ``1/2 - 2 (1/16)^2``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp
from scipy.special import softmax

from . import symbols as S
from .claims import probability_vector, require, show
from .family import ClaimFamily
from .information import kl

__all__ = ["EPS_MAX", "P_E_PAPER", "p_e"]

EPS_MAX = Fraction(1, 128)  # Theorem 4.4's hypothesis eps_learning < 1/128
P_E_PAPER = Fraction(1, 2) - 2 * Fraction(1, 16) ** 2  # = 63/128: 1/2 - 2 (sqrt(EPS_MAX/2))^2


def p_e(eps_learning: float) -> float:
    """``p_e = 1/2 - eps_learning``: collision error probability of Example C.7 (module docstring)."""
    require(0 <= eps_learning < 0.5, f"need 0 <= eps_learning < 1/2, got {show(eps_learning)}")
    return 0.5 - eps_learning


def _sides(inst) -> dict:
    """The model's bit marginals ``pj``, ``pk``, their KLs to uniform and every side of C.7's chain."""
    l_ = int(inst["l"])
    M = 2 ** (l_ - 1)
    Pj = np.asarray(inst["Pj"], dtype=np.float64)
    Pk = np.asarray(inst["Pk"], dtype=np.float64)
    U = np.full(M, 1.0 / M)
    eps_j, eps_k = kl(U, Pj), kl(U, Pk)
    tokens = np.arange(M)
    pj = float(Pj[(tokens >> int(inst["bit_j"])) & 1 == 1].sum())
    pk = float(Pk[(tokens >> int(inst["bit_k"])) & 1 == 1].sum())
    eps = max(eps_j, eps_k)
    return {"disagree": pj * (1 - pk) + pk * (1 - pj), "eps": eps, "eps_j": eps_j, "eps_k": eps_k, "pj": pj, "pk": pk,
            "p_e": float(P_E_PAPER), "bit_bias": abs(pj - 0.5), "pinsker": math.sqrt(eps_j / 2),
            "half_minus_eps": 0.5 - eps}


def _domain(inst):
    l_ = inst["l"]
    require(int(l_) == l_ and l_ >= 2, f"need an integer l >= 2, got {show(l_)}")
    M = 2 ** (int(l_) - 1)
    for name in ("Pj", "Pk"):
        P = probability_vector(name, inst[name])
        require(P.shape == (M,), f"{name} must be a probability vector over the 2^(l-1) = {M} tokens")
    for name in ("bit_j", "bit_k"):
        require(0 <= int(inst[name]) < l_ - 1, f"{name} must index one of the l-1 bits")
    eps = _sides(inst)["eps"]
    require(eps < float(EPS_MAX), f"Theorem 4.4 assumes eps_learning < 1/128; this model has {eps:.6g}")


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


def _gen(rng: np.random.Generator) -> dict:
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


_DOC = (
    "Two positions j, k of an interval, neither revealed, sampled in one step: each bit of their pair "
    "is uniform under q; the model's token marginals Pj, Pk (over 2^(l-1) tokens) satisfy "
    "KL(q_j || Pj) < 1/128 (Assumption 4.1; q_j uniform: the fresh case). Disagreement probability "
    "pj (1 - pk) + pk (1 - pj) from the explicit marginals."
)
_disagree = S.tex(r"P(\mathrm{disagree})")

c7 = ClaimFamily("C.7", "Example C.7", sides=_sides, domain=_domain, generate=_gen, doc=_DOC,
                 parameters={"l": "interval length", "Pj": "model marginal of x_j", "Pk": "model marginal of x_k",
                             "bit_j": "bit of x_j for k", "bit_k": "bit of x_k for j"})
c7.statement("A collision of a fresh pair is an error with probability >= p_e = 1/2 - 2 (1/16)^2 = 63/128",
             _disagree, ">=", sp.Rational(1, 2) - 2 * sp.Rational(1, 16) ** 2, sides=("disagree", "p_e"),
             steps=("C.7.pinsker", "C.7.pair"))
c7.step("pinsker", "|P_theta(bit = 1) - 1/2| <= sqrt(eps_learning / 2) < 1/16", sp.Abs(S.tex("p_j") - sp.Rational(1, 2)),
        "<=", sp.sqrt(S.eps_l / 2), sides=("bit_bias", "pinsker"), paper="proof of Example C.7 (Pinsker step)",
        vacuous_at=0.5)
c7.step("pair", "P(disagree) = 1/2 - 2 delta_j delta_k >= 1/2 - sqrt(eps_j eps_k) >= 1/2 - eps_learning", _disagree,
        ">=", sp.Rational(1, 2) - S.eps_l, sides=("disagree", "half_minus_eps"),
        paper="proof of Example C.7 (derived, sharper)")
