"""Property tests: every claim that the engine expects to hold holds on random instances.

Two layers: (1) every registered claim on instances from its own generator, seeded by hypothesis;
(2) the key lemmas on instances drawn from the shared strategies (tests/strategies.py), which
shrink to a minimal failing instance if a claim ever breaks.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.strategies import (
    joint_tables,
    probability_vectors,
    rational_probability_vectors,
    schedules,
    small_hmms,
    small_ngrams,
    step_instances,
)
from theory import check, claims, get

HOLDING = [c.id for c in claims() if c.expect == "holds"]


@pytest.mark.parametrize("cid", HOLDING)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_claim_holds_on_generated_instances(cid, seed):
    claim = get(cid)
    inst = claim.generate(np.random.default_rng(seed))
    res = check(claim, inst)
    assert res.holds, (cid, res, inst)


@given(joint_tables())
def test_a1_total_correlation(P):
    for cid in ("A.1", "A.1.identity", "A.1.joint-entropy", "A.1.entropy-max"):
        assert check(get(cid), {"P": P}).holds


@given(probability_vectors(min_size=2, max_size=6), st.data())
def test_a3_pinsker(P, data):
    Q = data.draw(probability_vectors(min_size=P.size, max_size=P.size, zeros=False))
    event = data.draw(st.lists(st.booleans(), min_size=P.size, max_size=P.size))
    for cid in ("A.3", "A.3.event"):
        assert check(get(cid), {"P": P, "Q": Q, "event": event}).holds


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.floats(0.0, 20.0), st.floats(0.01, 0.99))
def test_a2_chernoff_against_exact_poisson_binomial(p, d_up, d_lo):
    assume(sum(p) > 0)
    for cid, d in (("A.2", d_up), ("A.2.mgf-upper", d_up), ("A.2.lower", d_lo), ("A.2.mgf-lower", d_lo)):
        assert check(get(cid), {"p": p, "d": d}).holds, cid


@settings(max_examples=25)
@given(step_instances(max_L=36))
def test_b10_b11_against_exact_laws(inst):
    for cid in ("B.10", "B.10.separators", "B.10.new", "B.10.dominance", "B.11", "B.11.case1", "B.11.case2",
                "B.11.case3", "B.11.pairs", "B.11.pairs-exact"):
        res = check(get(cid), inst)
        assert res.holds, (cid, res, inst)


@settings(max_examples=15)
@given(small_ngrams(max_order=3, max_vocab=2), schedules(max_steps=3), st.integers(2, 4), st.data())
def test_b_lemmas_on_tiny_ngrams(lang, sched, L, data):
    steps = tuple(data.draw(st.lists(st.integers(1, 3), min_size=L, max_size=L)))
    beta = data.draw(st.sampled_from([1.0, 0.6, 1.5]))
    inst = {"language": lang, "L": L, "pi": sched.pi, "steps": steps, "beta": beta,
            "i": data.draw(st.integers(1, max(steps)))}
    for cid in ("B.2", "B.3", "B.8", "B.8.groups", "B.8.step", "B.9", "B.9.instance-average"):
        res = check(get(cid), inst)
        assert res.holds, (cid, res)


@settings(max_examples=15)
@given(small_hmms(max_states=3, max_vocab=2), schedules(max_steps=3), st.integers(2, 4), st.data())
def test_ser_lemmas_on_tiny_hmms(hmm, sched, L, data):
    order = tuple(int(v) for v in data.draw(st.permutations(list(range(1, L + 1)))))
    beta = data.draw(st.sampled_from([1.0, 0.7, 1.4]))
    inst = {"language": hmm, "L": L, "pi": sched.pi, "order": order, "beta": beta}
    for cid in ("C.2", "4.3", "4.3.exact-delta"):
        res = check(get(cid), inst)
        assert res.holds, (cid, res)


@given(rational_probability_vectors(max_size=6), st.integers(1, 7), st.integers(1, 6))
def test_collision_claims_in_exact_rationals(pi, l, intervals):
    for cid in ("C.5", "C.5.first-position", "C.5.maclaurin", "C.5.product", "C.6.interval"):
        assert check(get(cid), {"l": l, "pi": pi}, exact=True).holds, cid
    assert check(get("C.1"), {"L": l + 1, "pi": pi}, exact=True).holds
    if l >= 2:
        assert check(get("C.6"), {"L": l * intervals, "l": l, "pi": pi}, exact=True).holds


@given(schedules(max_steps=30), st.integers(2, 8))
def test_c5_jensen_step_holds_when_every_pi_is_in_the_concave_region(sched, l):
    """f = x(1-x)^(l-1) is concave on [0, 2/l]: there the Jensen step is valid."""
    assume(np.all(sched.pi <= 2.0 / l))
    assert check(get("C.5.jensen"), {"l": l, "pi": sched.pi}).holds
