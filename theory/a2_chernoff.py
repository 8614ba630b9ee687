"""Lemma A.2: Chernoff bounds, checked against the exact Poisson-binomial tail.

``X`` a sum of independent Bernoulli(``p_j``) with mean ``mu = sum_j p_j``:

``P(X >= (1+d) mu) <= exp(-d^2 mu / (2+d))`` for ``d >= 0``, and
``P(X <= (1-d) mu) <= exp(-d^2 mu / 2)`` for ``0 < d < 1``.

The proof bounds each tail by its moment-generating function, ``(e^d / (1+d)^(1+d))^mu`` and
``(e^-d / (1-d)^(1-d))^mu``, then simplifies the exponent (``(1+d) log(1+d) >= d + d^2/(2+d)``,
``(1-d) log(1-d) >= -d + d^2/2``); each of the four steps is a claim. The left sides are the
exact Poisson-binomial tails (a convolution DP).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from . import symbols as S
from .claims import closed_form, require, show
from .family import ClaimFamily

__all__ = ["poisson_binomial_pmf", "upper_tail", "lower_tail", "threshold_ceil", "threshold_floor", "THRESHOLD_RTOL"]

THRESHOLD_RTOL = 1e-12  # a threshold (1 +- d) mu equal to an integer up to round-off counts as that integer


def poisson_binomial_pmf(p) -> np.ndarray:
    """Exact law of a sum of independent Bernoulli(``p_j``): ``pmf[m] = P(X = m)`` (convolution DP)."""
    pmf = np.ones(1)
    for pj in np.asarray(p, dtype=np.float64):
        nxt = np.zeros(pmf.size + 1)
        nxt[:-1] += (1.0 - pj) * pmf
        nxt[1:] += pj * pmf
        pmf = nxt
    return pmf


def threshold_ceil(x: float) -> int:
    """``ceil(x)``, except that ``x`` within ``THRESHOLD_RTOL`` of an integer counts as that integer."""
    r = round(x)
    return int(r) if abs(x - r) <= THRESHOLD_RTOL * max(1.0, abs(x)) else math.ceil(x)


def threshold_floor(x: float) -> int:
    """``floor(x)``, except that ``x`` within ``THRESHOLD_RTOL`` of an integer counts as that integer."""
    r = round(x)
    return int(r) if abs(x - r) <= THRESHOLD_RTOL * max(1.0, abs(x)) else math.floor(x)


def upper_tail(pmf: np.ndarray, x: float) -> float:
    """``P(X >= x)``."""
    return float(pmf[max(threshold_ceil(x), 0):].sum())


def lower_tail(pmf: np.ndarray, x: float) -> float:
    """``P(X <= x)``."""
    t = threshold_floor(x)
    return float(pmf[: t + 1].sum()) if t >= 0 else 0.0


# ----- the claims -----------------------------------------------------------------------------


def _bern(inst: Mapping[str, Any]) -> np.ndarray:
    p = np.asarray(inst["p"], dtype=np.float64).ravel()
    require(p.size >= 1 and bool(np.all((p >= 0) & (p <= 1))), "p must be a non-empty vector of probabilities")
    require(p.sum() > 0, "the mean mu = sum p must be > 0")
    return p


def _domain_upper(inst):
    _bern(inst)
    require(float(inst["d"]) >= 0, f"the upper Chernoff bound needs d >= 0, got {show(inst['d'])}")


def _domain_lower(inst):
    _bern(inst)
    d = float(inst["d"])
    require(0 < d < 1, f"the lower Chernoff bound needs 0 < d < 1, got {show(d)}")


def _gen_bern(rng: np.random.Generator, lower: bool) -> dict:
    m = int(rng.integers(1, 60))
    kind = rng.integers(0, 3)
    if kind == 0:
        p = np.full(m, float(rng.random()))
    elif kind == 1:
        p = rng.random(m) * float(rng.choice([0.05, 0.3, 1.0]))
    else:
        p = rng.beta(0.3, 0.3, m)
    if p.sum() == 0:
        p[0] = 0.5
    d = float(rng.uniform(0.01, 0.99)) if lower else float(rng.choice([rng.uniform(0, 1), rng.uniform(0, 10)]))
    return {"p": p, "d": d}


_up_bound = sp.exp(-S.d**2 * S.mu / (2 + S.d))
_lo_bound = sp.exp(-S.d**2 * S.mu / 2)
_up_mgf = sp.exp(S.d * S.mu) / (1 + S.d) ** ((1 + S.d) * S.mu)
_lo_mgf = sp.exp(-S.d * S.mu) / (1 - S.d) ** ((1 - S.d) * S.mu)
_up_rhs = closed_form(_up_bound, (S.d, S.mu))
_lo_rhs = closed_form(_lo_bound, (S.d, S.mu))
_up_mgf_f = closed_form(_up_mgf, (S.d, S.mu))
_lo_mgf_f = closed_form(_lo_mgf, (S.d, S.mu))


def _upper_sides(inst: Mapping[str, Any]) -> dict:
    """``P(X >= (1+d) mu)`` exactly, its MGF bound and the simplified bound."""
    p = _bern(inst)
    sc = {"d": float(inst["d"]), "mu": float(p.sum())}
    return {"tail": upper_tail(poisson_binomial_pmf(p), (1 + sc["d"]) * sc["mu"]), "mgf": _up_mgf_f(sc),
            "bound": _up_rhs(sc)}


def _lower_sides(inst: Mapping[str, Any]) -> dict:
    """``P(X <= (1-d) mu)`` exactly, its MGF bound and the simplified bound."""
    p = _bern(inst)
    sc = {"d": float(inst["d"]), "mu": float(p.sum())}
    return {"tail": lower_tail(poisson_binomial_pmf(p), (1 - sc["d"]) * sc["mu"]), "mgf": _lo_mgf_f(sc),
            "bound": _lo_rhs(sc)}


_DOC = (
    "X = sum of independent Bernoulli(p_j); the left side is the exact Poisson-binomial tail "
    "(convolution DP), the right side the closed form with mu = sum p_j."
)
_upper_tail = S.Pr(sp.Ge(S.tex("X"), (1 + S.d) * S.mu))
_lower_tail = S.Pr(sp.Le(S.tex("X"), (1 - S.d) * S.mu))

_PARAMS = {"p": "Bernoulli probabilities p_j", "d": "relative deviation d"}
upper = ClaimFamily("A.2", "Lemma A.2", sides=_upper_sides, domain=_domain_upper,
                    generate=lambda rng: _gen_bern(rng, False), doc=_DOC, free={"p": "unitvec", "d": "positive"},
                    parameters=_PARAMS, vacuous_at=1)
lower = upper.variant(sides=_lower_sides, domain=_domain_lower, generate=lambda rng: _gen_bern(rng, True),
                      free={"p": "unitvec", "d": "unit"})

upper.statement("Chernoff upper tail: P(X >= (1+d) mu) <= exp(-d^2 mu / (2+d)), d >= 0", _upper_tail, "<=",
                _up_bound, sides=("tail", "bound"),
                steps=("A.2.lower", "A.2.mgf-upper", "A.2.simplify-upper", "A.2.mgf-lower", "A.2.simplify-lower"),
                parameters=_PARAMS)
lower.step("lower", "Chernoff lower tail: P(X <= (1-d) mu) <= exp(-d^2 mu / 2), 0 < d < 1", _lower_tail, "<=",
           _lo_bound, sides=("tail", "bound"), paper="proof of Lemma A.2 (the lower-tail half of the statement)")
upper.step("mgf-upper", "Moment-generating-function bound: P(X >= (1+d) mu) <= (e^d / (1+d)^(1+d))^mu",
           _upper_tail, "<=", _up_mgf, sides=("tail", "mgf"))
upper.step("simplify-upper", "(e^d / (1+d)^(1+d))^mu <= exp(-d^2 mu / (2+d)): (1+d) log(1+d) >= d + d^2/(2+d)",
           _up_mgf, "<=", _up_bound, sides=("mgf", "bound"), free={"d": "positive"},
           doc="Both sides closed form in (d, mu); an analytic inequality, checked on instances and grids.")
lower.step("mgf-lower", "P(X <= (1-d) mu) <= (e^-d / (1-d)^(1-d))^mu", _lower_tail, "<=", _lo_mgf,
           sides=("tail", "mgf"))
lower.step("simplify-lower", "(e^-d / (1-d)^(1-d))^mu <= exp(-d^2 mu / 2): (1-d) log(1-d) >= -d + d^2/2",
           _lo_mgf, "<=", _lo_bound, sides=("mgf", "bound"), free={"d": "unit"},
           doc="Both sides closed form in (d, mu).")
