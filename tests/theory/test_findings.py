"""Pinned results (docs/findings.md): false proof steps with their counterexamples, and the places where
the engine shows a step the paper calls heuristic to be exact or a hypothesis to be unnecessary."""

from dataclasses import replace
from fractions import Fraction as F

import numpy as np
import pytest
import sympy as sp

from theory import check, claims, get
from theory import symbols as S
from theory.b12_explicit_schedule import (
    b12_length_threshold,
    b12_u,
    expected_dependencies,
)
from theory.c5_distinct_steps import jensen_f
from theory.collision import distinct_probability
from theory.separators import joint_law


def test_c5_jensen_step_is_false_counterexample():
    """Finding 1: sum_i pi_i (1 - pi_i)^(l-1) <= (1 - 1/N)^(l-1) fails at N = 2, l = 5, pi = (3/10, 7/10)."""
    inst = {"l": 5, "pi": [F(3, 10), F(7, 10)]}
    res = check(get("C.5.jensen"), inst, exact=True)
    assert res.lhs == F(777, 10000)  # 3/10 (7/10)^4 + 7/10 (3/10)^4, by hand
    assert res.rhs == F(1, 16)
    assert not res.holds
    # ... while Lemma C.5 itself holds there (pigeonhole: 5 positions cannot use 2 steps distinctly)
    assert check(get("C.5"), inst, exact=True).holds
    assert distinct_probability(inst["pi"], 5) == 0


def test_c5_concavity_claim_is_false():
    """f(x) = x (1-x)^(l-1) has f'' = (l-1)(1-x)^(l-3)(l x - 2): positive for x > 2/l."""
    f2 = sp.diff(jensen_f(S.x, S.l), S.x, 2)
    factored = (S.l - 1) * (1 - S.x) ** (S.l - 3) * (S.l * S.x - 2)
    for l in range(3, 12):  # a polynomial identity in x for each integer l
        assert sp.cancel(f2.subs(S.l, l) - factored.subs(S.l, l)) == 0
    res = check(get("C.5.concavity"), {"l": 5, "x": F(1, 2)}, exact=True)
    assert res.lhs == F(1, 2) and not res.holds
    assert check(get("C.5.concavity"), {"l": 5, "x": F(2, 5)}, exact=True).holds  # inflection at 2/l


def test_interleaving_step_is_exact_not_heuristic():
    """Finding 2: E[|tau_i| - D_i | S_i = s, |tau_i| = k] = k(k-1)/(s+k) exactly (renewal argument)."""
    law = joint_law(12, 3, F(1, 2), F(1, 5))
    cond = law.conditional_gap()
    cells = [(s, k) for s in range(cond.shape[0]) for k in range(cond.shape[1]) if law.prob[s, k] > 0]
    assert len(cells) > 30
    for s, k in cells:
        assert cond[s, k] == (F(k * (k - 1), s + k) if s + k else 0)


@pytest.mark.parametrize("eps,n", [(0.5, 2), (0.25, 2), (0.5, 3)])
def test_theorem42_needs_no_length_threshold(eps, n):
    """Finding 3: with the B.12 schedule E[sum_i (|tau_i| - D_i)] <= (5/4) eps L for every L, also
    far below L_0 (the B.11 tails of the paper's proof are an artifact of its case split)."""
    u = b12_u(eps, n)
    L0 = b12_length_threshold(eps, n)
    for L in [(n - 1) * m for m in (1, 2, 5, 17, 60)] + [L0]:
        gap = float(expected_dependencies(L, n, u).sum())
        assert gap <= 1.25 * eps * L
        res = check(get("B.12.no-threshold"), {"eps": eps, "n": n, "L": L, "V": 2, "eps_learning": 0.0})
        assert res.holds


def test_theorem44_argument_gives_nothing_for_one_interval():
    """Finding 4: at L = l = 5 Lemma C.6's bound is p_e = 63/128 < 1/2 for every N (no C works),
    while the true SER of the oracle at N = 1 is 1 - 2^-10."""
    from theory.c7_interval_language import P_E_PAPER
    from theory.thm44_ser_lower import c9_bound, oracle_ser

    assert c9_bound(1, 5) == pytest.approx(float(P_E_PAPER), rel=1e-15) and c9_bound(1, 5) < 0.5
    assert oracle_ser([1.0], 5) == pytest.approx(1 - 2.0**-10, rel=1e-15)


def test_pinned_counterexample_is_found_by_the_search():
    from theory.search import search_counterexamples

    found, least = search_counterexamples(get("C.5.jensen"), 40, np.random.default_rng(3))
    assert found and least < 0


@pytest.mark.parametrize("cid", [c.id for c in claims() if c.expect == "false"])
def test_every_claim_found_false_pins_counterexamples_that_violate_it(cid):
    claim = get(cid)
    assert claim.counterexamples
    for inst in claim.counterexamples:
        assert not check(claim, inst).holds
        if claim.exact is not None:
            assert not check(claim, inst, exact=True).holds


def test_check_never_reports_no_violation_for_a_claim_pinned_false():
    """`check` runs the pinned counterexamples first: even one generated instance cannot hide them."""
    from theory.search import run_claim

    for cid in ("C.5.jensen", "C.5.concavity"):
        row = run_claim(get(cid), 1, np.random.default_rng(0))
        assert row.pinned == 1 and row.instances == 2 and row.violations >= 1 and row.exact_checks >= 1


def test_a_claim_that_holds_pins_nothing():
    with pytest.raises(ValueError, match="pins its counterexamples"):
        replace(get("C.5"), counterexamples=({"l": 5, "pi": (F(1, 2), F(1, 2))},))
    with pytest.raises(ValueError, match="pins its counterexamples"):
        replace(get("C.5.jensen"), counterexamples=())
