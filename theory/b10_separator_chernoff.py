"""Lemma B.10: few separators and many new positions are exponentially rare (Chernoff, A.2).

Checked against the exact law of ``S_i`` from the transfer matrix of :mod:`theory.separators` and
the exact binomial law of ``|tau_i|``.

Derived (docs/derivations.md, B.10): for any ``0 < d < 1`` and ``d' >= 0``,
``P(S_i < (1-d) mu_S) <= P(Bin(L/(n-1), u_{i-1}^{n-1}) <= (1-d) mu_S) <= exp(-d^2 mu_S / 2)`` and
``P(|tau_i| >= (1+d') mu_T) <= exp(-d'^2 mu_T / (2+d'))``; the paper's case split of B.11 uses
``d = 1/2`` (``exp(-mu_S/8)``) and ``d' = 1`` (``exp(-mu_T/3)``).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from scipy.stats import binom

from . import symbols as S
from .a2_chernoff import threshold_ceil, threshold_floor
from .claims import require, show
from .family import ClaimFamily
from .instances import gen_step, step_domain, step_means
from .separators import joint_law

__all__ = ["separator_pmf"]


def separator_pmf(L: int, n: int, a: float, b: float) -> np.ndarray:
    """Exact ``P(S_i = s)`` (marginal of :func:`theory.separators.joint_law`)."""
    return joint_law(L, n, a, b).prob.sum(axis=1).astype(np.float64)


def _b10_sep(inst, d=None):
    L, n, a, b = step_domain(inst)
    d = float(inst["d"]) if d is None else d
    mu_s = step_means(L, n, a, b)["mu_S"]
    pmf = separator_pmf(L, n, a, b)
    # P(S < (1-d) mu_S): strict
    t = (1 - d) * mu_s
    c = threshold_ceil(t)
    return float(pmf[: max(c, 0)].sum()), math.exp(-(d**2) * mu_s / 2)


def _b10_new(inst, d=None):
    L, n, a, b = step_domain(inst)
    d = float(inst["d"]) if d is None else d
    mu_t = L * b
    t = threshold_ceil((1 + d) * mu_t)
    return float(binom.sf(t - 1, L, b)), math.exp(-(d**2) * mu_t / (2 + d))


def _b10_new_strict(inst):
    """``P(|tau_i| > 2 mu_T)`` (the case-2 event) against ``exp(-mu_T / 3)``."""
    L, n, a, b = step_domain(inst)
    mu_t = L * b
    t = threshold_floor(2 * mu_t)
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


def _domain_d_below_1(inst) -> None:
    step_domain(inst)
    require(0 < float(inst["d"]) < 1, f"need 0 < d < 1, got d = {show(inst['d'])}")


def _domain_d_nonnegative(inst) -> None:
    step_domain(inst)
    require(float(inst["d"]) >= 0, f"need d >= 0, got d = {show(inst['d'])}")


_step_params = {"L": "sequence length", "n": "n-gram order", "u_prev": "u_{i-1}", "pi_i": "pi_i"}
Sfn, Kfn = S.tex("S_i"), S.tex(r"|\tau_i|")

b10 = ClaimFamily(
    "B.10", "Lemma B.10", domain=step_domain, generate=gen_step,
    free={"u_prev": "unit", "pi_i": "unit"}, parameters=_step_params,
    doc=("Exact law of S_i from the (run length mod n-1, group flag) transfer matrix over positions "
         "(theory.separators.joint_law); |tau_i| ~ Binomial(L, pi_i) exactly. mu_S = L u_{i-1}^(n-1)/(n-1), "
         "mu_T = L pi_i."),
)
b10.statement(
    "Few separators and many new positions are exponentially rare (paper's d = 1/2 and d = 1)",
    S.Pr(sp.StrictLessThan(Sfn, S.mu_S / 2)) + S.Pr(sp.StrictGreaterThan(Kfn, 2 * S.mu_T)), "<=",
    sp.exp(-S.mu_S / 8) + sp.exp(-S.mu_T / 3), _b10_main, steps=("B.10.separators", "B.10.new", "B.10.dominance"))
b10.step("separators", "P(S_i < (1-d) mu_S) <= exp(-d^2 mu_S / 2), 0 < d < 1",
         S.Pr(sp.StrictLessThan(Sfn, (1 - S.d) * S.mu_S)), "<=", sp.exp(-S.d**2 * S.mu_S / 2), _b10_sep,
         domain=_domain_d_below_1,
         free={"u_prev": "unit", "pi_i": "unit", "d": "unit"}, parameters={**_step_params, "d": "deviation"},
         vacuous_at=1)
b10.step("new", "P(|tau_i| >= (1+d) mu_T) <= exp(-d^2 mu_T / (2+d)), d >= 0",
         S.Pr(sp.Ge(Kfn, (1 + S.d) * S.mu_T)), "<=", sp.exp(-S.d**2 * S.mu_T / (2 + S.d)), _b10_new,
         domain=_domain_d_nonnegative,
         free={"u_prev": "unit", "pi_i": "unit", "d": "positive"}, parameters={**_step_params, "d": "deviation"},
         vacuous_at=1)
b10.step("dominance", "S_i stochastically dominates Binomial(L/(n-1), u_{i-1}^(n-1)) (full aligned blocks)",
         S.Pr(sp.Le(Sfn, S.s)), "<=", S.Pr(sp.Le(S.tex("B"), S.s)), _b10_dominance, vacuous_at=1,
         doc=("Both CDFs exact, compared at the s where P(S_i <= s) - P(Bin <= s) is largest "
              "(dominance: <= everywhere)."))
