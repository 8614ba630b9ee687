"""The calls claims of theory/related_calls.py (ZC.tc, ZC.dtc, B2R.1, FH.1, CCL.dp) against brute force.

Every side is recomputed here by a method that shares nothing with the claim's own code: block
errors by enumerating every reveal order (theory.brute.instance_law), TC/DTC from the joint table,
the per-step joint by summing the table over sequences, and hand-derived values.
"""

import itertools
import math

import numpy as np
import pytest
from scipy.special import entr

import theory  # noqa: F401  (fills the registry)
from numerics.exact.joint_table import joint_table
from numerics.exact.markov import MarkovChain
from numerics.languages.hmm import NGram
from tests.tolerances import ATOL_PROB, RTOL_EXACT
from theory.brute import instance_law, sequence_kl
from theory.claims import check, get
from theory.related_bounds import ccl_geometric_sizes


def _hb(e):
    return -e * math.log(e) - (1 - e) * math.log(1 - e)


def _brute_blocks(q, sizes):
    """E_sigma KL(q || q_sigma) for block sizes ``sizes``: every order of the positions enumerated."""
    L = q.ndim
    block = np.repeat(np.arange(1, len(sizes) + 1), sizes)
    kls = [sequence_kl(q, instance_law(q, block[np.argsort(order)]).p) for order in itertools.permutations(range(L))]
    return float(np.mean(kls))


def _compositions(L, K):
    """Every composition of L into at most K positive parts."""
    for T in range(1, K + 1):
        for cuts in itertools.combinations(range(1, L), T - 1):
            edges = (0, *cuts, L)
            yield tuple(b - a for a, b in zip(edges, edges[1:]))


def _brute_tc_dtc(q):
    L = q.ndim
    H = float(entr(q).sum())
    single = [float(entr(q.sum(axis=tuple(a for a in range(L) if a != i))).sum()) for i in range(L)]
    rest = [float(entr(q.sum(axis=i)).sum()) for i in range(L)]
    return sum(single) - H, H - sum(H - r for r in rest)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_zc_sides_equal_brute_force_over_every_order_and_composition(K):
    """Left: K min over compositions of the enumerated E_sigma KL; right: TC / DTC from the table."""
    chain = MarkovChain(np.array([0.6, 0.4]), np.array([[0.9, 0.1], [0.3, 0.7]]))
    L = 4
    q = joint_table(chain, L)
    best = min(_brute_blocks(q, s) for s in _compositions(L, K))
    tc, dtc = _brute_tc_dtc(q)
    inst = {"language": chain, "L": L, "K": K}
    lhs, rhs = get("ZC.tc").evaluate(inst)
    assert lhs == pytest.approx(K * best, rel=RTOL_EXACT) and rhs == pytest.approx(tc, rel=RTOL_EXACT)
    if K >= 2:
        lhs2, rhs2 = get("ZC.dtc").evaluate(inst)
        assert lhs2 == pytest.approx(K * best, rel=RTOL_EXACT) and rhs2 == pytest.approx(dtc, rel=RTOL_EXACT)


def test_zc_tc_is_tight_at_one_step_and_the_copy_law_defeats_dtc_at_one_step():
    """Two positions, X_2 = X_1 flipped w.p. 0.1 (by hand): one step costs TC = I = ln 2 - H_b(0.1).
    All tokens equal (L = 4, V = 2): TC = 3 ln 2, DTC = ln 2, one step costs TC = 3 DTC."""
    flip = MarkovChain(np.array([0.5, 0.5]), np.array([[0.9, 0.1], [0.1, 0.9]]))
    r = check(get("ZC.tc"), {"language": flip, "L": 2, "K": 1})
    assert r.lhs == pytest.approx(math.log(2) - _hb(0.1), rel=RTOL_EXACT) and r.lhs == pytest.approx(r.rhs, rel=RTOL_EXACT)
    copy = MarkovChain(np.array([0.5, 0.5]), np.eye(2))
    lhs, tc = get("ZC.tc").evaluate({"language": copy, "L": 4, "K": 1})
    assert lhs == pytest.approx(3 * math.log(2), rel=RTOL_EXACT) and tc == pytest.approx(3 * math.log(2), rel=RTOL_EXACT)
    with pytest.raises(ValueError, match="K < L"):
        check(get("ZC.dtc"), {"language": copy, "L": 4, "K": 1})  # K = 1 is outside the DTC claim


def test_zc_dtc_pinned_counterexample_by_brute_force():
    c = get("ZC.dtc")
    inst = c.counterexamples[0]
    q = joint_table(inst["language"], inst["L"])
    # the left side's DP is checked against enumerated orders at L = 4 above (8! orders per composition here);
    # the right side is the table's DTC, so the verdict rests on two independently checked numbers
    tc, dtc = _brute_tc_dtc(q)
    r = check(c, inst)
    assert not r.holds and r.rhs == pytest.approx(dtc, rel=RTOL_EXACT) and r.lhs > 1.5 * dtc


def test_b2r_by_hand_and_against_its_enumeration():
    """Two independent fair bits, 'stay' rule, gamma = 1.5 ln 2: one position per round (ln 2 + ln 2 > gamma),
    so T = 2 on every path, H(p) = 2 ln 2, c = gamma: rhs = 2 ln 2 / (1.5 ln 2) = 4/3."""
    bits = MarkovChain(np.array([0.5, 0.5]), np.full((2, 2), 0.5))
    inst = {"language": bits, "L": 2, "gamma": 1.5 * math.log(2), "rule": "stay"}
    r = check(get("B2R.1"), inst)
    assert r.lhs == pytest.approx(2.0, rel=RTOL_EXACT) and r.rhs == pytest.approx(4 / 3, rel=RTOL_EXACT)
    # 'cross' with gamma = 0.5 ln 2: the first position already crosses, one per round; c = gamma + ln 2
    r = check(get("B2R.1"), {**inst, "gamma": 0.5 * math.log(2), "rule": "cross"})
    assert r.lhs == pytest.approx(2.0, rel=RTOL_EXACT) and r.rhs == pytest.approx(2 / 1.5, rel=RTOL_EXACT)


def _brute_step(q, revealed, D):
    """P(X_D = . | x_S) by summing q over every sequence (no slicing)."""
    V, L = q.shape[0], q.ndim
    out = np.zeros((V,) * len(D))
    for x in itertools.product(range(V), repeat=L):
        if all(x[j] == v for j, v in revealed):
            out[tuple(x[j] for j in D)] += q[x]
    return out / out.sum()


def test_fh_is_tight_by_hand_and_matches_the_brute_joint():
    """q uniform on {00, 01, 10}: c_1 = c_2 = 2/3 at x* = (0, 0), P(00) = 1/3 = 1 - 2 (1 - 2/3): tight."""
    lang = NGram(2, np.array([2 / 3, 1 / 3]), np.array([[0.5, 0.5], [1.0, 0.0]]))
    q = joint_table(lang, 2)
    assert np.allclose(q, [[1 / 3, 1 / 3], [1 / 3, 0.0]], atol=ATOL_PROB, rtol=0)
    r = check(get("FH.1"), {"language": lang, "L": 2, "revealed": (), "D": (0, 1)})
    assert r.lhs == pytest.approx(1 / 3, rel=RTOL_EXACT) and r.rhs == pytest.approx(1 / 3, rel=RTOL_EXACT)
    c = get("FH.1")
    rng = np.random.default_rng(4)
    for _ in range(15):
        inst = c.generate(rng)
        qq = joint_table(inst["language"], inst["L"])
        P = _brute_step(qq, inst["revealed"], inst["D"])
        n = len(inst["D"])
        marg = [P.sum(axis=tuple(b for b in range(n) if b != a)) for a in range(n)]
        x_star = tuple(int(np.argmax(m)) for m in marg)
        lhs, rhs = c.evaluate(inst)
        assert lhs == pytest.approx(P[x_star], rel=RTOL_EXACT, abs=ATOL_PROB)
        assert rhs == pytest.approx(1 - sum(1 - m.max() for m in marg), rel=RTOL_EXACT, abs=ATOL_PROB)


def test_ccl_dp_sides_against_enumerated_orders():
    """Both sides by enumerating every reveal order: the geometric schedule's own error, and the best
    composition with as many blocks."""
    chain = MarkovChain(np.array([0.3, 0.7]), np.array([[0.8, 0.2], [0.4, 0.6]]))
    L = 4
    q = joint_table(chain, L)
    for eps, kind in ((0.5, "dtc"), (0.6, "tc")):
        sizes = ccl_geometric_sizes(eps, L, kind)
        inst = {"language": chain, "L": L, "eps": eps, "kind": kind}
        lhs, rhs = get("CCL.dp").evaluate(inst)
        assert rhs == pytest.approx(_brute_blocks(q, sizes), rel=RTOL_EXACT)
        assert lhs == pytest.approx(min(_brute_blocks(q, s) for s in _compositions(L, len(sizes))), rel=RTOL_EXACT)
        assert lhs <= rhs * (1 + RTOL_EXACT)  # the claim itself, on exact numbers
