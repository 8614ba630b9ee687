"""Other papers' bounds (theory.related): registration, hand-checked fixtures, the plain functions,
the pinned Fast-dLLM finding, and the brute-force entropy-sum law."""

import math
from fractions import Fraction as F

import numpy as np
import pytest

from numerics.exact.joint_table import joint_table
from numerics.exact.markov import MarkovChain
from numerics.languages.hmm import NGram
from tests.tolerances import RTOL_EXACT
from theory import REGISTRY, check, claims, get
from theory.related import (
    cai_li_iteration_bound,
    ccl_dtc_factor,
    ccl_geometric_sizes,
    ccl_steps_bound,
    ccl_tc_factor,
    dyadic_ceiling,
    eb_certificate,
    entropy_sum_law,
    fast_dllm_kl_bound,
    fast_dllm_tv_bound,
    iid_mi_bound,
    informations,
    li_cai_bound,
    ordering_bound,
    ser_certificate,
)
from theory.search import search_counterexamples

FAMILIES = ("LiCai.1", "CCL.1", "CCL.2", "CCL.3", "LZ.1", "FastdLLM.1", "EB.1", "CaiLi.1", "SER.1")


def _hb(e):
    return -e * math.log(e) - (1 - e) * math.log(1 - e)


def test_every_family_is_registered_with_its_steps_and_source():
    for cid in FAMILIES:
        c = get(cid)
        assert c.top_level and c.doc and c.title and c.statement_latex
        assert any(tag in c.paper for tag in ("[R]", "[V]", "[D]", "[M]")), c.paper
        for step in c.steps:
            assert step in REGISTRY and any(t in get(step).paper for t in ("[R]", "[V]", "[D]", "[M]"))
    false = [c.id for c in claims() if c.expect == "false" and c.id.split(".")[0] in {f.split(".")[0] for f in FAMILIES}]
    assert false == ["FastdLLM.1.kl"]


def _binary_copy_chain(flip):
    """X_1 uniform on {0, 1}, X_2 = X_1 flipped with probability ``flip``: I(X_1; X_2) = ln 2 - H_b(flip)."""
    return MarkovChain(np.array([0.5, 0.5]), np.array([[1 - flip, flip], [flip, 1 - flip]]))


def test_li_cai_is_tight_for_two_positions_revealed_together():
    """L = 2, one block: E KL = TC = I(X_1; X_2); Li-Cai: (2^1 - 1)/2 * 2 I = I. By hand, flip = 0.1."""
    inst = {"language": _binary_copy_chain(0.1), "L": 2, "sizes": (2,)}
    I = math.log(2) - _hb(0.1)
    for cid in ("LiCai.1", "LiCai.1.ordering", "CCL.2"):
        res = check(get(cid), inst)
        assert res.lhs == pytest.approx(I, rel=RTOL_EXACT) and res.rhs == pytest.approx(I, rel=RTOL_EXACT), cid
    assert check(get("CCL.1"), inst).lhs == pytest.approx(I, rel=RTOL_EXACT)  # enumeration


def test_dyadic_ceiling_and_the_exact_middle_inequality():
    assert [dyadic_ceiling(s) for s in range(1, 10)] == [1, 2, 4, 4, 8, 8, 8, 8, 16]
    assert dyadic_ceiling(2**40) == 2**40 and dyadic_ceiling(2**40 + 1) == 2**41
    res = check(get("LiCai.1.dyadic"), {"s_max": 5}, exact=True)
    assert (res.lhs, res.rhs, res.holds) == (F(4), F(7), True)
    with pytest.raises(ValueError, match="s_max"):
        dyadic_ceiling(0)


def test_informations_agree_between_markov_closed_form_and_table():
    chain = MarkovChain(np.array([0.2, 0.5, 0.3]), np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]))
    a, b = informations(chain, 5), informations(chain.to_hmm(), 5)
    for f in ("entropy", "tc", "dtc", "sum_mi"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=RTOL_EXACT)
    assert a.sum_mi == pytest.approx(a.tc + a.dtc, rel=RTOL_EXACT)


def test_plain_bounds_and_their_vacuity():
    b = li_cai_bound(sum_mi=2.0, length=8, s_max=3, tc=10.0)
    assert b.value == pytest.approx(3 / 8 * 2.0) and not b.vacuous and "[R]" in b.source
    assert li_cai_bound(2.0, 8, 8, tc=1.0).vacuous  # 7/8 * 2 = 1.75 >= TC = 1: says nothing
    assert ordering_bound(2.0, 8, 3).value == pytest.approx(2 / 8 * 2.0)
    assert iid_mi_bound(2.0, [0.25, 0.5, 0.25]).value == pytest.approx(1.0)
    assert ser_certificate(math.log(2)).value == pytest.approx(0.5, rel=RTOL_EXACT)
    assert ser_certificate(0.0).value == 0.0 and not ser_certificate(0.0).vacuous
    with pytest.raises(ValueError, match="KL divergence"):
        ser_certificate(-1e-3)
    assert fast_dllm_tv_bound(3, 0.3).vacuous  # (3*3 - 1) * 0.3 / 2 = 1.2 >= 1
    assert eb_certificate([0.1, 0.5, 0.2]).value == pytest.approx(0.3)
    assert cai_li_iteration_bound(2.0, 0.5, 0.5).value == pytest.approx(6.0)
    assert ccl_dtc_factor([1, 1, 2, 4]) == pytest.approx(max(1 / 3, 3 / 5))
    assert ccl_tc_factor([4, 2, 1, 1]) == pytest.approx(max(3 / 7, 1 / 3))


def test_ccl_geometric_schedules_meet_their_factor_and_step_bounds():
    """Exhaustive small grid: factor <= eps and len(sizes) <= ccl_steps_bound (docs/theory-related.md)."""
    for kind, factor in (("dtc", ccl_dtc_factor), ("tc", ccl_tc_factor)):
        for L in list(range(1, 70)) + [512, 2048]:
            for eps in (1.0, 0.7, 0.5, 0.3, 0.1, 0.05, 0.01):
                k = ccl_geometric_sizes(eps, L, kind)
                assert k.sum() == L and k.min() >= 1
                assert factor(k) <= eps and len(k) <= ccl_steps_bound(eps, L, kind), (kind, L, eps)


def test_ser_certificate_is_tight_on_a_copy_language():
    """q uniform on {00, 11}, one step: p uniform on {0,1}^2, SER = 1/2, KL = ln 2, 1 - e^-KL = 1/2."""
    copy = NGram(2, np.array([0.5, 0.5]), np.eye(2))
    res = check(get("SER.1"), {"language": copy, "L": 2, "pi": [1.0]})
    assert res.lhs == pytest.approx(0.5, rel=RTOL_EXACT) and res.rhs == pytest.approx(0.5, rel=RTOL_EXACT)


def test_eb_certificate_is_tight_on_a_copy_table():
    res = check(get("EB.1"), {"P": [0.5, 0.0, 0.0, 0.5], "n": 2, "V": 2})
    assert res.lhs == pytest.approx(math.log(2), rel=RTOL_EXACT) and res.rhs == pytest.approx(math.log(2), rel=RTOL_EXACT)


def test_fast_dllm_kl_bound_is_false_beyond_one_minus_one_over_v():
    """Finding (docs/findings.md): n = 2, |V| = 2, P uniform on {00, 11}, eps = 0.6 satisfies the
    hypothesis (marginals 1/2 > 0.4) but KL = ln 2 = 0.6931 > H_b(0.6) = 0.6730."""
    inst = {"P": [0.5, 0.0, 0.0, 0.5], "n": 2, "V": 2, "eps": 0.6}
    res = check(get("FastdLLM.1.kl"), inst)
    assert res.lhs == pytest.approx(math.log(2), rel=RTOL_EXACT)
    assert res.rhs == pytest.approx(_hb(0.6), rel=RTOL_EXACT)
    assert not res.holds
    with pytest.raises(ValueError, match="1 - 1/"):
        check(get("FastdLLM.1.kl-fano"), inst)
    with pytest.raises(ValueError, match="1 - 1/"):
        fast_dllm_kl_bound(2, 0.6, 2)
    # at eps = 1/2 = 1 - 1/|V| the bound is ln 2 = (n-1) log|V|: vacuous, outside the domain
    with pytest.raises(ValueError, match="vacuous"):
        check(get("FastdLLM.1.kl-fano"), {**inst, "P": [0.6, 0.0, 0.0, 0.4], "eps": 0.5})
    found, least = search_counterexamples(get("FastdLLM.1.kl"), 30, np.random.default_rng(0))
    assert found and least < 0


def test_fast_dllm_greedy_needs_its_hypothesis():
    """Tightness of part (1): eps = 0.36 > 1/3 with P(00) = 0.3, P(01) = P(10) = 0.35: every marginal at
    0 is 0.65 > 1 - eps, yet the joint's argmax is 01. The claim's domain refuses it."""
    inst = {"P": [0.3, 0.35, 0.35, 0.0], "n": 2, "V": 2, "eps": 0.36}
    with pytest.raises(ValueError, match=r"\(n \+ 1\) eps <= 1"):
        check(get("FastdLLM.1"), inst)
    P = np.array(inst["P"]).reshape(2, 2)
    assert P.sum(axis=1)[0] > 1 - inst["eps"] and P.sum(axis=0)[0] > 1 - inst["eps"]
    assert np.unravel_index(P.argmax(), P.shape) != (0, 0)
    ok = {"P": [0.76, 0.1, 0.1, 0.04], "n": 2, "V": 2, "eps": 0.3}
    assert check(get("FastdLLM.1"), ok).holds


def test_entropy_sum_law_stay_rule_has_no_bound_of_the_crossing_form():
    """Three independent Bernoulli(0.3) tokens (H_b(0.3) = 0.611 each), gamma = 0.95: 'stay' reveals one
    per step (two sum to 1.22 > gamma), T = 3 > 1 + 3 * 0.611 / 0.95 = 2.93; 'cross' takes two, then one."""
    q = np.einsum("i,j,k->ijk", *([np.array([0.7, 0.3])] * 3))
    stay, cross = entropy_sum_law(q, 0.95, "stay"), entropy_sum_law(q, 0.95, "cross")
    H = 3 * _hb(0.3)
    assert np.all(stay.iterations == 3) and np.all(cross.iterations == 2)
    assert stay.expected_iterations_data > 1 + H / 0.95 >= cross.expected_iterations_data
    assert stay.kl == pytest.approx(0.0, abs=1e-15) and cross.max_step_tc == pytest.approx(0.0, abs=1e-15)
    assert check(get("CaiLi.1"), {"language": NGram(2, np.array([0.7, 0.3]), np.array([[0.7, 0.3]] * 2)),
                                  "L": 3, "gamma": 0.95, "rule": "cross"}).holds
    with pytest.raises(ValueError, match="crossing"):
        check(get("CaiLi.1"), {"language": NGram(2, np.array([0.7, 0.3]), np.array([[0.7, 0.3]] * 2)),
                               "L": 3, "gamma": 0.95, "rule": "stay"})


def test_entropy_sum_law_is_a_probability_law_matching_the_chain_rule():
    chain = MarkovChain(np.array([0.6, 0.4]), np.array([[0.9, 0.1], [0.2, 0.8]]))
    q = joint_table(chain.to_hmm(), 4)
    for rule in ("cross", "stay"):
        law = entropy_sum_law(q, 0.5, rule)
        assert law.p.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
        assert law.kl == pytest.approx(law.chain_rule_kl, rel=1e-10)  # (I1) for an adaptive rule
        assert 1 <= law.expected_iterations_sampler <= 4 and law.max_step_tc <= 0.5
    with pytest.raises(ValueError, match="full support"):
        entropy_sum_law(joint_table(NGram(2, np.array([0.5, 0.5]), np.eye(2)), 2), 0.5, "cross")
