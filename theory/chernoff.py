"""Lemma A.2 (Chernoff bounds) and Lemma B.10 (Chernoff on separators and new positions).

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
from scipy.stats import binom

from . import symbols as S
from .claims import Claim, closed_form, register, require
from .separators import joint_law

__all__ = [
    "poisson_binomial_pmf",
    "upper_tail",
    "lower_tail",
    "separator_pmf",
    "B10_D_SEPARATORS",
    "B10_D_NEW",
]

THRESHOLD_RTOL = 1e-12  # a threshold (1 +- d) mu equal to an integer up to round-off counts as that integer

B10_D_SEPARATORS = sp.Rational(1, 2)  # the paper's case threshold S_i < mu_S / 2
B10_D_NEW = sp.Integer(1)  # the paper's case threshold |tau_i| > 2 mu_T


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


# ---------------------------------------------------------------------------------------------
# Lemma B.10


def step_domain(inst: Mapping[str, Any], divisible: bool = True) -> tuple[int, int, float, float]:
    """Domain shared by B.10/B.11: integers ``L >= 1``, ``n >= 2``, ``0 < u_{i-1}``, ``0 < pi_i``,
    ``u_{i-1} + pi_i <= 1`` and (``divisible``) ``n - 1`` divides ``L``."""
    L, n = inst["L"], inst["n"]
    require(int(L) == L and L >= 1, f"L must be an integer >= 1, got {L!r}")
    require(int(n) == n and n >= 2, f"n must be an integer >= 2, got {n!r}")
    a, b = float(inst["u_prev"]), float(inst["pi_i"])
    require(0 < a and 0 < b and a + b <= 1, f"need u_(i-1) = {a!r} > 0, pi_i = {b!r} > 0, u_(i-1) + pi_i <= 1 (step i >= 2)")
    if divisible:
        require(int(L) % (int(n) - 1) == 0, f"Lemma B.10 assumes n-1 divides L; got L = {L}, n = {n}")
    return int(L), int(n), a, b


def step_build(**kw) -> dict:
    """A step instance from ``mdm-theory bounds`` options (``--L --n --u-prev --pi-i [--d]``)."""
    inst = {k: kw[k] for k in ("L", "n", "u_prev", "pi_i")}
    if kw.get("d") is not None:
        inst["d"] = kw["d"]
    return inst


def step_means(L: int, n: int, a: float, b: float) -> dict:
    """``mu_S = L u_{i-1}^{n-1} / (n-1)`` and ``mu_T = L pi_i``."""
    return {"mu_S": L * a ** (n - 1) / (n - 1), "mu_T": L * b}


def separator_pmf(L: int, n: int, a: float, b: float) -> np.ndarray:
    """Exact ``P(S_i = s)`` (marginal of :func:`theory.separators.joint_law`)."""
    return joint_law(L, n, a, b).prob.sum(axis=1).astype(np.float64)


def gen_step(rng: np.random.Generator, max_L: int = 96) -> dict:
    """A random step instance ``(L, n, u_{i-1}, pi_i)`` with ``n - 1 | L``."""
    n = int(rng.integers(2, 5))
    L = int(rng.integers(1, max_L // (n - 1) + 1)) * (n - 1)
    a = float(rng.uniform(0.02, 0.98))
    b = float(rng.uniform(0.0, 1.0 - a)) * float(rng.choice([0.05, 0.3, 1.0]))
    b = max(b, 1e-3 * (1 - a))
    return {"L": L, "n": n, "u_prev": a, "pi_i": b, "d": float(rng.uniform(0.01, 0.99))}


def _b10_sep(inst, d=None):
    L, n, a, b = step_domain(inst)
    d = float(inst["d"]) if d is None else d
    mu_s = step_means(L, n, a, b)["mu_S"]
    pmf = separator_pmf(L, n, a, b)
    # P(S < (1-d) mu_S): strict
    t = (1 - d) * mu_s
    c = _ceil(t)
    return float(pmf[: max(c, 0)].sum()), math.exp(-(d**2) * mu_s / 2)


def _b10_new(inst, d=None):
    L, n, a, b = step_domain(inst)
    d = float(inst["d"]) if d is None else d
    mu_t = L * b
    t = _ceil((1 + d) * mu_t)
    return float(binom.sf(t - 1, L, b)), math.exp(-(d**2) * mu_t / (2 + d))


def _b10_new_strict(inst):
    """``P(|tau_i| > 2 mu_T)`` (the case-2 event) against ``exp(-mu_T / 3)``."""
    L, n, a, b = step_domain(inst)
    mu_t = L * b
    t = _floor(2 * mu_t)
    return float(binom.sf(t, L, b)), math.exp(-mu_t / 3)


def _b10_main(inst):
    s_l, s_r = _b10_sep(inst, d=0.5)
    t_l, t_r = _b10_new_strict(inst)
    return s_l + t_l, s_r + t_r


def _b10_dominance(inst):
    """``P(S_i <= t)`` and ``P(Bin(L/(n-1), u^(n-1)) <= t)`` at the ``t`` where the difference is largest."""
    L, n, a, b = step_domain(inst)
    pmf = separator_pmf(L, n, a, b)
    blocks = L // (n - 1)
    cdf_s = np.cumsum(pmf)
    cdf_b = binom.cdf(np.arange(pmf.size), blocks, a ** (n - 1))
    t = int(np.argmax(cdf_s - cdf_b))
    return float(cdf_s[t]), float(cdf_b[t])


_B10_DOC = (
    "Exact law of S_i from the (run length mod n-1, group flag) transfer matrix over positions "
    "(theory.separators.joint_law); |tau_i| ~ Binomial(L, pi_i) exactly. mu_S = L u_{i-1}^(n-1)/(n-1), "
    "mu_T = L pi_i."
)
_step_params = {"L": "sequence length", "n": "n-gram order", "u_prev": "u_{i-1}", "pi_i": "pi_i"}
Sfn, Kfn = S.tex("S_i"), S.tex(r"|\tau_i|")

register(
    Claim(
        id="B.10",
        paper="Lemma B.10",
        title="Few separators and many new positions are exponentially rare (paper's d = 1/2 and d = 1)",
        lhs=Pr(sp.StrictLessThan(Sfn, S.mu_S / 2)) + Pr(sp.StrictGreaterThan(Kfn, 2 * S.mu_T)),
        rhs=sp.exp(-S.mu_S / 8) + sp.exp(-S.mu_T / 3),
        relation="<=",
        evaluate=_b10_main,
        domain=lambda inst: step_domain(inst) and None,
        generate=gen_step,
        doc=_B10_DOC,
        steps=("B.10.separators", "B.10.new", "B.10.dominance"),
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=step_build,
    )
)
register(
    Claim(
        id="B.10.separators",
        paper="proof of Lemma B.10",
        title="P(S_i < (1-d) mu_S) <= exp(-d^2 mu_S / 2), 0 < d < 1",
        lhs=Pr(sp.StrictLessThan(Sfn, (1 - S.d) * S.mu_S)),
        rhs=sp.exp(-S.d**2 * S.mu_S / 2),
        relation="<=",
        evaluate=_b10_sep,
        domain=lambda inst: (step_domain(inst), require(0 < float(inst["d"]) < 1, "need 0 < d < 1")) and None,
        generate=gen_step,
        doc=_B10_DOC,
        free={"u_prev": "unit", "pi_i": "unit", "d": "unit"},
        parameters={**_step_params, "d": "deviation"},
        build=step_build,
    )
)
register(
    Claim(
        id="B.10.new",
        paper="proof of Lemma B.10",
        title="P(|tau_i| >= (1+d) mu_T) <= exp(-d^2 mu_T / (2+d)), d >= 0",
        lhs=Pr(sp.Ge(Kfn, (1 + S.d) * S.mu_T)),
        rhs=sp.exp(-S.d**2 * S.mu_T / (2 + S.d)),
        relation="<=",
        evaluate=_b10_new,
        domain=lambda inst: (step_domain(inst), require(float(inst["d"]) >= 0, "need d >= 0")) and None,
        generate=gen_step,
        doc=_B10_DOC,
        free={"u_prev": "unit", "pi_i": "unit", "d": "positive"},
        parameters={**_step_params, "d": "deviation"},
        build=step_build,
    )
)
register(
    Claim(
        id="B.10.dominance",
        paper="proof of Lemma B.10",
        title="S_i stochastically dominates Binomial(L/(n-1), u_{i-1}^(n-1)) (full aligned blocks)",
        lhs=Pr(sp.Le(Sfn, S.s)),
        rhs=Pr(sp.Le(S.tex("B"), S.s)),
        relation="<=",
        evaluate=_b10_dominance,
        domain=lambda inst: step_domain(inst) and None,
        generate=gen_step,
        doc="Both CDFs exact, compared at the s where P(S_i <= s) - P(Bin <= s) is largest (dominance: <= everywhere).",
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=step_build,
    )
)
