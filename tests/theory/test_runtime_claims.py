"""The runtimes' claims (theory/related_runtimes.py): each holds on generated instances; the tightness of
Fast-dLLM Theorem 1 at ``eps = 1/(n+1)``: just beyond it the same table meets the marginal condition with the
argmax moved; the first reveals of LLaDA's low-confidence rule (exact, and proximity bias found false for the rule
under the oracle); the random-order sampler at ``N = L`` exact with ``L`` calls (AATU's anchor)."""

from __future__ import annotations

import numpy as np
import pytest

import theory.related  # noqa: F401  (fill the registry)
from numerics.exact.divergences import law_divergences
from numerics.exact.dp import dp_output_law
from numerics.languages.hmm import NGram
from numerics.schedules import make_schedule
from theory import check, get
from theory.related_runtimes import _JUMP, _llada_top1, adjacent_second_reveal, one_at_a_time_law


@pytest.mark.parametrize("cid", ["DUS.1", "IG.1", "FastdLLM.1.tight", "Prox.1", "AATU.1", "AATU.1.calls"])
def test_holds_on_generated_instances(cid):
    c = get(cid)
    assert any(t in c.paper for t in ("[D]", "[V]", "[R]", "[M]"))
    rng = np.random.default_rng([5, sum(map(ord, cid))])
    done = 0
    for _ in range(12):
        r = check(c, c.generate(rng))
        assert r.holds, (cid, r)
        done += 1
    assert done == 12


def test_dus_identity_is_not_trivial():
    c = get("DUS.1")
    vals = [check(c, c.generate(np.random.default_rng(s))).lhs for s in range(6)]
    assert max(vals) > 0.05  # a positive KL: the identity compares numbers, not zeros


def test_fast_dllm_condition_is_tight():
    c = get("FastdLLM.1.tight")
    n = 3
    eps = 1 / (n + 1)
    margin, closed = c.evaluate({"n": n, "b": eps - 1e-9})
    assert 0 < margin < 1e-8 and margin == pytest.approx(closed, abs=1e-15)
    beyond, _ = c.evaluate({"n": n, "b": eps + 0.01})  # hypothesis met for any eps > b: the argmax moved
    assert beyond < 0
    with pytest.raises(ValueError, match=r"1/\(n\+1\)"):
        check(c, {"n": n, "b": eps + 0.01})


def test_first_reveal_law_against_brute_force():
    """Prox.1's two sides against a third count: every draw of every position, the winner by hand (max score on the
    grid, ties by llada's tie order), on the pinned chain and on a chain where every draw ties."""
    from numerics.exact.joint_table import joint_table
    from numerics.sampling.adaptive import on_grid

    lang = get("Prox.2").counterexamples[0]["language"]
    L = 3
    q = joint_table(lang, L)
    prio = _llada_top1(L).priority(L)
    marg = [q.sum(axis=tuple(a for a in range(L) if a != j)) for j in range(L)]
    want = np.zeros(L)
    for y in np.ndindex(*(2,) * L):
        w = np.prod([marg[j][y[j]] for j in range(L)])
        scores = [(int(on_grid(marg[j][y[j]])), -prio[j]) for j in range(L)]  # ties: the lower rank first
        want[scores.index(max(scores))] += w
    c = get("Prox.1")
    for i in range(L):
        lhs, rhs = c.evaluate({"language": lang, "L": L, "i": i})
        assert lhs == pytest.approx(want[i], abs=1e-15) and rhs == pytest.approx(want[i], abs=1e-15)
    assert want[0] == 1.0  # x_1 is certain (score 1): revealed first
    flat = NGram(2, np.array([0.5, 0.5]), np.array([[0.75, 0.25], [0.25, 0.75]]))  # every marginal (1/2, 1/2)
    first = int(np.argmin(_llada_top1(L).priority(L)))  # llada's default tie order (its tie seed)
    for i in range(L):  # every draw ties: the tie order decides, in both sides
        lhs, rhs = c.evaluate({"language": flat, "L": L, "i": i})
        assert lhs == rhs == (1.0 if i == first else 0.0)


def test_proximity_bias_is_false_for_the_rule_under_the_oracle():
    """The pinned chain: after x_1, position 2's draw scores 3/4 with probability 3/4 and beats position 1's 1/2;
    so P(adjacent) = 1/4 exactly, by the DP's step and by the closed form, against random order's 2/3."""
    assert adjacent_second_reveal(_JUMP, 3) == pytest.approx(0.25, abs=1e-15)
    assert adjacent_second_reveal(_JUMP, 3, engine=False) == pytest.approx(0.25, abs=1e-15)
    r = check(get("Prox.2"), {"language": _JUMP, "L": 3, "i": 0})
    assert not r.holds and r.rhs == pytest.approx(2 / 3)
    c = get("Prox.2")  # not one odd table: random bigrams break it often, and meet it often
    rng = np.random.default_rng(7)
    held = [check(c, c.generate(rng)).holds for _ in range(16)]
    assert 0 < sum(held) < 16


def test_one_at_a_time_is_exact_with_l_calls_and_iid_reveal_is_not():
    """AATU.1's anchor: the one-a-step order at N = L is exact with E[calls] = L exactly; the paper's i.i.d.-reveal
    sampler at N = L (linear schedule) is not (collisions), so the claim picks the sampler that is."""
    c = get("AATU.1")
    inst = c.generate(np.random.default_rng(3))
    L = int(inst["L"])
    d = one_at_a_time_law(inst["language"], L)
    assert d.expected_calls.value == L and d.divergences.tv.value <= 1e-14
    iid = law_divergences(dp_output_law(inst["language"], L, make_schedule("linear", L))).tv.value
    assert iid > 1e-3
