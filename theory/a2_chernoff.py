"""Lemma A.2: Chernoff bounds, checked against the exact Poisson-binomial tail.

A.2 is checked against the exact Poisson-binomial tail (a convolution DP); B.10 against the
exact law of ``S_i`` from the transfer matrix of :mod:`theory.separators` and the exact binomial
law of ``|tau_i|``.

Derived (docs/derivations.md, B.10): for any ``0 < d < 1`` and ``d' >= 0``,
``P(S_i < (1-d) mu_S) <= P(Bin(L/(n-1), u_{i-1}^{n-1}) <= (1-d) mu_S) <= exp(-d^2 mu_S / 2)`` and
``P(|tau_i| >= (1+d') mu_T) <= exp(-d'^2 mu_T / (2+d'))``; the paper's case split of B.11 uses
``d = 1/2`` (``exp(-mu_S/8)``) and ``d' = 1`` (``exp(-mu_T/3)``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import sympy as sp

from . import symbols as S
from .claims import Claim, closed_form, register, require

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


def _ceil(x: float) -> int:
    r = round(x)
    return int(r) if abs(x - r) <= THRESHOLD_RTOL * max(1.0, abs(x)) else math.ceil(x)


def _floor(x: float) -> int:
    r = round(x)
    return int(r) if abs(x - r) <= THRESHOLD_RTOL * max(1.0, abs(x)) else math.floor(x)


def upper_tail(pmf: np.ndarray, x: float) -> float:
    """``P(X >= x)``."""
    return float(pmf[max(_ceil(x), 0):].sum())


def lower_tail(pmf: np.ndarray, x: float) -> float:
    """``P(X <= x)``."""
    t = _floor(x)
    return float(pmf[: t + 1].sum()) if t >= 0 else 0.0


# ---------------------------------------------------------------------------------------------
# Lemma A.2


def _bern(inst: Mapping[str, Any]) -> np.ndarray:
    p = np.asarray(inst["p"], dtype=np.float64).ravel()
    require(p.size >= 1 and bool(np.all((p >= 0) & (p <= 1))), "p must be a non-empty vector of probabilities")
    require(p.sum() > 0, "the mean mu = sum p must be > 0")
    return p


def _domain_upper(inst):
    _bern(inst)
    require(float(inst["d"]) >= 0, f"the upper Chernoff bound needs d >= 0, got {inst['d']!r}")


def _domain_lower(inst):
    _bern(inst)
    d = float(inst["d"])
    require(0 < d < 1, f"the lower Chernoff bound needs 0 < d < 1, got {d!r}")


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


_up_rhs = closed_form(sp.exp(-S.d**2 * S.mu / (2 + S.d)), (S.d, S.mu))
_lo_rhs = closed_form(sp.exp(-S.d**2 * S.mu / 2), (S.d, S.mu))
_up_mgf = sp.exp(S.d * S.mu) / (1 + S.d) ** ((1 + S.d) * S.mu)
_lo_mgf = sp.exp(-S.d * S.mu) / (1 - S.d) ** ((1 - S.d) * S.mu)
_up_mgf_f = closed_form(_up_mgf, (S.d, S.mu))
_lo_mgf_f = closed_form(_lo_mgf, (S.d, S.mu))
Pr = S.fn("P")
Xs = S.tex("X")


def _mu(inst):
    return {"d": float(inst["d"]), "mu": float(_bern(inst).sum())}


def _a2_upper(inst):
    p, sc = _bern(inst), _mu(inst)
    return upper_tail(poisson_binomial_pmf(p), (1 + sc["d"]) * sc["mu"]), _up_rhs(sc)


def _a2_lower(inst):
    p, sc = _bern(inst), _mu(inst)
    return lower_tail(poisson_binomial_pmf(p), (1 - sc["d"]) * sc["mu"]), _lo_rhs(sc)


_A2_DOC = (
    "X = sum of independent Bernoulli(p_j); the left side is the exact Poisson-binomial tail "
    "(convolution DP), the right side the closed form with mu = sum p_j."
)

register(
    Claim(
        id="A.2",
        paper="Lemma A.2",
        title="Chernoff upper tail: P(X >= (1+d) mu) <= exp(-d^2 mu / (2+d)), d >= 0",
        lhs=Pr(sp.Ge(Xs, (1 + S.d) * S.mu)),
        rhs=sp.exp(-S.d**2 * S.mu / (2 + S.d)),
        relation="<=",
        evaluate=_a2_upper,
        domain=_domain_upper,
        generate=lambda rng: _gen_bern(rng, False),
        doc=_A2_DOC,
        steps=("A.2.lower", "A.2.mgf-upper", "A.2.simplify-upper", "A.2.mgf-lower", "A.2.simplify-lower"),
        free={"p": "unitvec", "d": "positive"},
        parameters={"p": "Bernoulli probabilities", "d": "relative deviation"},
    )
)
register(
    Claim(
        id="A.2.lower",
        paper="proof of Lemma A.2 (the lower-tail half of the statement)",
        title="Chernoff lower tail: P(X <= (1-d) mu) <= exp(-d^2 mu / 2), 0 < d < 1",
        lhs=Pr(sp.Le(Xs, (1 - S.d) * S.mu)),
        rhs=sp.exp(-S.d**2 * S.mu / 2),
        relation="<=",
        evaluate=_a2_lower,
        domain=_domain_lower,
        generate=lambda rng: _gen_bern(rng, True),
        doc=_A2_DOC,
        free={"p": "unitvec", "d": "unit"},
    )
)
register(
    Claim(
        id="A.2.mgf-upper",
        paper="proof of Lemma A.2",
        title="Moment-generating-function bound: P(X >= (1+d) mu) <= (e^d / (1+d)^(1+d))^mu",
        lhs=Pr(sp.Ge(Xs, (1 + S.d) * S.mu)),
        rhs=_up_mgf,
        relation="<=",
        evaluate=lambda inst: (_a2_upper(inst)[0], _up_mgf_f(_mu(inst))),
        domain=_domain_upper,
        generate=lambda rng: _gen_bern(rng, False),
        doc=_A2_DOC,
        free={"p": "unitvec", "d": "positive"},
    )
)
register(
    Claim(
        id="A.2.simplify-upper",
        paper="proof of Lemma A.2",
        title="(e^d / (1+d)^(1+d))^mu <= exp(-d^2 mu / (2+d)): (1+d) log(1+d) >= d + d^2/(2+d)",
        lhs=_up_mgf,
        rhs=sp.exp(-S.d**2 * S.mu / (2 + S.d)),
        relation="<=",
        evaluate=lambda inst: (_up_mgf_f(_mu(inst)), _up_rhs(_mu(inst))),
        domain=_domain_upper,
        generate=lambda rng: _gen_bern(rng, False),
        doc="Both sides closed form in (d, mu); an analytic inequality, checked on instances and grids.",
        free={"d": "positive"},
    )
)
register(
    Claim(
        id="A.2.mgf-lower",
        paper="proof of Lemma A.2",
        title="P(X <= (1-d) mu) <= (e^-d / (1-d)^(1-d))^mu",
        lhs=Pr(sp.Le(Xs, (1 - S.d) * S.mu)),
        rhs=_lo_mgf,
        relation="<=",
        evaluate=lambda inst: (_a2_lower(inst)[0], _lo_mgf_f(_mu(inst))),
        domain=_domain_lower,
        generate=lambda rng: _gen_bern(rng, True),
        doc=_A2_DOC,
        free={"p": "unitvec", "d": "unit"},
    )
)
register(
    Claim(
        id="A.2.simplify-lower",
        paper="proof of Lemma A.2",
        title="(e^-d / (1-d)^(1-d))^mu <= exp(-d^2 mu / 2): (1-d) log(1-d) >= -d + d^2/2",
        lhs=_lo_mgf,
        rhs=sp.exp(-S.d**2 * S.mu / 2),
        relation="<=",
        evaluate=lambda inst: (_lo_mgf_f(_mu(inst)), _lo_rhs(_mu(inst))),
        domain=_domain_lower,
        generate=lambda rng: _gen_bern(rng, True),
        doc="Both sides closed form in (d, mu).",
        free={"d": "unit"},
    )
)

