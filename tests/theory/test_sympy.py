"""Symbolic statements against their fast numeric forms on grids; exact rationals where the math is exact."""

import itertools
from fractions import Fraction as F
from math import comb

import numpy as np
import pytest
import sympy as sp

from theory import get
from theory import symbols as S
from theory.a2_chernoff import _lo_mgf_f, _lo_rhs, _up_mgf_f, _up_rhs
from theory.b11_dependencies import _b11, _pair, b11_bound, pair_bound
from theory.c5_distinct_steps import _fpp_f
from theory.c6_interval_errors import c6_bound
from theory.claims import latex
from theory.collision import distinct_probability, interval_validity
from theory.thm44_ser_lower import c9_bound

RTOL_SYMBOLIC = 1e-12  # lambdified float64 against sympy's exact evaluation (evalf, 30 digits)


def _exact(expr, values):
    return float(sp.N(expr.subs({k: sp.nsimplify(v) for k, v in values.items()}), 30))


@pytest.mark.parametrize("d,mu", list(itertools.product([0, 0.1, 0.5, 1, 3, 10], [0.5, 2, 10, 50])))
def test_chernoff_closed_forms(d, mu):
    vals = {"d": d, "mu": mu}
    assert _up_rhs(vals) == pytest.approx(_exact(get("A.2").rhs, {S.d: d, S.mu: mu}), rel=RTOL_SYMBOLIC)
    assert _up_mgf_f(vals) == pytest.approx(_exact(get("A.2.mgf-upper").rhs, {S.d: d, S.mu: mu}), rel=RTOL_SYMBOLIC)
    if 0 < d < 1:
        assert _lo_rhs(vals) == pytest.approx(_exact(get("A.2.lower").rhs, {S.d: d, S.mu: mu}), rel=RTOL_SYMBOLIC)
        assert _lo_mgf_f(vals) == pytest.approx(_exact(get("A.2.mgf-lower").rhs, {S.d: d, S.mu: mu}), rel=RTOL_SYMBOLIC)


def test_chernoff_simplification_is_an_identity_of_exponents():
    """(e^d/(1+d)^(1+d))^mu <= exp(-d^2 mu/(2+d)) iff g(d) = (1+d) log(1+d) - d - d^2/(2+d) >= 0:
    g(0) = 0, its series starts with d^3/12 > 0, and g'(d) >= 0 on a fine grid of [0, 50]."""
    d = S.d
    g = (1 + d) * sp.log(1 + d) - d - d**2 / (2 + d)
    assert g.subs(d, 0) == 0
    assert sp.series(g, d, 0, 4).removeO() == d**3 / 12
    gp = sp.lambdify(d, sp.diff(g, d))
    grid = np.linspace(0, 50, 5001)
    assert np.all(gp(grid) >= -1e-15)


@pytest.mark.parametrize("L,n,a,b", [(12, 2, F(1, 3), F(1, 10)), (30, 3, F(1, 2), F(1, 20)), (60, 4, F(9, 10), F(1, 50))])
def test_b11_closed_forms(L, n, a, b):
    mu_s, mu_t = L * a ** (n - 1) / (n - 1), L * b
    assert b11_bound(L, n, float(a), float(b)) == pytest.approx(
        _exact(get("B.11").rhs, {S.mu_S: mu_s, S.mu_T: mu_t}), rel=RTOL_SYMBOLIC)
    assert _b11({"mu_S": float(mu_s), "mu_T": float(mu_t)}) == pytest.approx(b11_bound(L, n, float(a), float(b)), rel=RTOL_SYMBOLIC)
    # the pair bound is rational: sympy exact equals the Fraction formula, and the float form
    exact = get("B.11.pairs").rhs.subs({S.L: L, S.n: n, S.u_prev: sp.Rational(a.numerator, a.denominator),
                                        S.pi_i: sp.Rational(b.numerator, b.denominator)})
    frac = L * b**2 * ((n - 1) / a ** (n - 1) + n - 2)
    assert exact == sp.Rational(frac.numerator, frac.denominator)
    assert pair_bound(L, n, float(a), float(b)) == pytest.approx(float(frac), rel=RTOL_SYMBOLIC)
    assert _pair({"L": L, "n": n, "u_prev": float(a), "pi_i": float(b)}) == pytest.approx(float(frac), rel=RTOL_SYMBOLIC)


@pytest.mark.parametrize("l", [2, 3, 5, 8])
def test_concavity_closed_form_on_a_grid(l):
    f2 = sp.diff(S.x * (1 - S.x) ** (l - 1), S.x, 2)
    for x in [F(k, 20) for k in range(0, 20)]:
        assert _fpp_f({"l": l, "x": float(x)}) == pytest.approx(float(f2.subs(S.x, sp.Rational(x.numerator, x.denominator))), rel=RTOL_SYMBOLIC, abs=1e-15)


@pytest.mark.parametrize("N,L,l", [(1, 10, 5), (7, 35, 5), (64, 640, 5), (3, 12, 3)])
def test_lemma_c6_bound_closed_form(N, L, l):
    expr = get("C.6").rhs.subs({S.N: N, S.L: L, S.l: l, S.p_e: sp.Rational(1, 2)})
    assert c6_bound(N, L, l, 0.5) == pytest.approx(float(expr), rel=RTOL_SYMBOLIC)
    expr = get("4.4.argument").lhs.subs({S.N: N, S.L: L, S.l: l, S.p_e: sp.Rational(63, 128)})
    assert c9_bound(N, L, l, 63 / 128) == pytest.approx(float(expr), rel=RTOL_SYMBOLIC)


def test_union_bound_sum_over_indexed_pi():
    pi = [F(1, 6), F(1, 3), F(1, 2)]
    expr = get("C.1").rhs.subs(S.N, len(pi)).doit()
    expr = expr.subs({S.pi[i + 1]: sp.Rational(p.numerator, p.denominator) for i, p in enumerate(pi)}).subs(S.L, 4)
    assert expr == sp.Rational(comb(4, 2)) * sum(sp.Rational(p.numerator, p.denominator) ** 2 for p in pi)


def test_elementary_symmetric_exact_and_float():
    pi = [F(1, 7), F(2, 7), F(4, 7)]
    # l! e_l by hand: e_2 = (2 + 4 + 8)/49 = 14/49 -> 2! e_2 = 4/7; e_3 = 8/343 -> 3! e_3 = 48/343
    assert distinct_probability(pi, 2) == F(4, 7)
    assert distinct_probability(pi, 3) == F(48, 343)
    assert distinct_probability([float(p) for p in pi], 3) == pytest.approx(48 / 343, rel=RTOL_SYMBOLIC)
    # interval validity of l = 2: no collision (prob 4/7) or a collision worth 1/2: 4/7 + 3/14 = 11/14
    assert interval_validity(pi, 2) == F(11, 14)


def test_latex_uses_project_names():
    text = latex(get("B.11").statement)
    assert r"\mu_S" in text and r"\mu_T" in text
    assert r"|\mathcal{V}|" in latex(get("A.1").statement)
