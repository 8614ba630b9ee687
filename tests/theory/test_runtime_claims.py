"""The runtimes' claims (theory/related_runtimes.py): each holds on generated instances; the tightness of
Fast-dLLM Theorem 1 at ``eps = 1/(n+1)``: just beyond it the same table meets the marginal condition with the
argmax moved."""

from __future__ import annotations

import numpy as np
import pytest

import theory.related  # noqa: F401  (fill the registry)
from theory import check, get


@pytest.mark.parametrize("cid", ["DUS.1", "IG.1", "FastdLLM.1.tight"])
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
