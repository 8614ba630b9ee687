"""DiffusionGemma's renoise sampler (gemma-renoise) with the oracle: exact chain, brute force, Monte Carlo, bad input.

Independent check: every path of the sampler enumerated one by one (:func:`_brute_force`), with the
posterior, the temperature, the entropies, the selection and the halting rule written here from the
rule's definition (``docs/methods/uniform-noise.md``), sharing no code with the engine beyond the
language's parameters; against the chain at ``RTOL_EXACT``. Monte Carlo against the chain: one
chi-squared test on the joint law of (calls, output).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from numerics.exact.gemma import ChainTooLarge, renoise_exact
from numerics.languages.hmm import NGram
from numerics.sampling.gemma import Renoise, sample_renoise
from tests.gof import assert_gof
from tests.tolerances import ATOL_PROB, RTOL_EXACT

NG2 = NGram(2, np.array([0.5, 0.5]), np.array([[0.8, 0.2], [0.0, 1.0]]))  # "1 0" impossible
NG3 = NGram(2, np.array([0.6, 0.3, 0.1]), np.array([[0.7, 0.3, 0.0], [0.0, 0.5, 0.5], [0.9, 0.0, 0.1]]))
GRID = 1e9  # the rule compares entropies on a 1e-9 grid


def _g(x: float) -> int:
    return math.floor(x * GRID + 0.5)


def _q_table(ng: NGram, L: int) -> dict:
    V = ng.vocab_size
    out = {}
    for x in itertools.product(range(V), repeat=L):
        p = ng.initial[x[0]]
        for a, b in zip(x, x[1:]):
            p *= ng.conditional[a, b]
        out[x] = float(p)
    return out


def _brute_force(rn: Renoise, ng: NGram, L: int):
    """``{(calls, output): probability}`` and the capped mass, by enumerating every path."""
    V = ng.vocab_size
    q = _q_table(ng, L)
    result: dict = {}
    capped = [0.0]

    def marginals(canvas, level):
        m = [[0.0] * V for _ in range(L)]
        for x, px in q.items():
            w = px
            for j in range(L):
                w *= level * (x[j] == canvas[j]) + (1 - level) / V
            for j in range(L):
                m[j][x[j]] += w
        return [[v / sum(row) for v in row] for row in m]

    def visit(canvas, kept, prev, t, weight):
        T = rn.t_min + (rn.t_max - rn.t_min) * (rn.step_cap - t) / rn.step_cap
        m = marginals(canvas, rn.alpha * sum(kept) / L)
        r = []
        for row in m:
            w = [v ** (1 / T) for v in row]
            r.append([v / sum(w) for v in w])
        H = [_g(-sum(v * math.log(v) for v in row if v > 0)) for row in r]
        arg = tuple(max(range(V), key=lambda v: (_g(row[v]), -v)) for row in m)
        halted = t >= 1 and sum(H) < L * _g(rn.halt_entropy) and arg == prev
        if halted or t + 1 == rn.step_cap:
            result[(t + 1, arg)] = result.get((t + 1, arg), 0.0) + weight
            capped[0] += 0.0 if halted else weight
            return
        cands = sorted((j for j in range(L) if not (rn.committed and kept[j])), key=lambda j: (H[j], j))
        acc, total = set(), 0
        for j in cands:
            if total <= _g(rn.entropy_bound):
                acc.add(j)
            total += H[j]
        for w in itertools.product(range(V), repeat=L):
            pr = 1.0
            for j in range(L):
                if j in acc:
                    pr *= r[j][w[j]]
                elif rn.committed and kept[j]:
                    pr *= float(w[j] == canvas[j])
                else:
                    pr /= V
            if pr > 0:
                visit(w, tuple(j in acc or (rn.committed and kept[j]) for j in range(L)), arg, t + 1, weight * pr)

    visit((0,) * L, (False,) * L, None, 0, 1.0)
    return result, capped[0]


CASES = [(NG2, 3, Renoise(False, step_cap=5, halt_entropy=0.05, alpha=0.9, entropy_bound=0.3)),
         (NG2, 3, Renoise(True, step_cap=5, halt_entropy=0.05, alpha=0.9)),
         (NG3, 2, Renoise(False, step_cap=4, halt_entropy=0.05, alpha=0.9, entropy_bound=0.3)),
         (NG3, 2, Renoise(True, step_cap=4, halt_entropy=0.05, alpha=0.8, t_max=1.0, t_min=0.5))]


@pytest.mark.parametrize(("ng", "L", "rn"), CASES, ids=["v2-reselect", "v2-committed", "v3-reselect", "v3-committed"])
def test_chain_against_brute_force(ng, L, rn):
    ex = renoise_exact(rn, ng, L)
    bf, capped = _brute_force(rn, ng, L)
    V = ng.vocab_size
    want = np.zeros_like(ex.joint)
    for (t, x), w in bf.items():
        want[t, np.ravel_multi_index(x, (V,) * L)] += w
    np.testing.assert_allclose(ex.joint, want, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert ex.capped == pytest.approx(capped, rel=RTOL_EXACT, abs=ATOL_PROB)
    assert ex.joint.sum() == pytest.approx(1.0, rel=RTOL_EXACT)
    assert 0 < ex.capped < 1  # both ways of stopping occur: the case exercises the halting rule and the cap


def test_one_call_emits_the_argmax_of_the_marginals():
    """Hand check: with a cap of 1 the only call reads the canvas at level 0, so the output is the argmax of
    q's marginals, always, and every run hits the cap. NG2 at L = 2: q(0 0) = 0.4, q(0 1) = 0.1, q(1 1) = 0.5,
    marginals (0.5, 0.5) (tie: token 0) and (0.4, 0.6): the output is "0 1"."""
    ex = renoise_exact(Renoise(False, step_cap=1), NG2, 2)
    assert ex.law.p[0, 1] == 1.0 and ex.capped == 1.0 and ex.calls[1] == 1.0
    assert ex.ser == 0.0 and ex.kl == np.inf and ex.metrics is None  # p vanishes on "0 0" and "1 1"


def test_monte_carlo_against_the_chain():
    rn = CASES[1][2]
    ex = renoise_exact(rn, NG2, 3)
    out = sample_renoise(rn, NG2, 4000, 3, np.random.default_rng(7))
    cells = out.calls * 8 + np.ravel_multi_index(out.tokens.T, (2,) * 3)
    counts = np.bincount(cells, minlength=ex.joint.size)
    assert_gof(counts, ex.joint.ravel(), "gemma-renoise (calls, output)")
    assert np.all(out.calls[out.capped] == rn.step_cap)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"alpha": 1.0}, "oracle alpha must be in \\[0, 1\\)"),
    ({"alpha": -0.1}, "oracle alpha must be in \\[0, 1\\)"),
    ({"entropy_bound": -0.01}, "entropy-bound must be >= 0"),
    ({"entropy_bound": float("nan")}, "entropy-bound must be a finite number"),
    ({"t_min": 0.0}, "0 < t-min <= t-max"),
    ({"t_min": 0.9, "t_max": 0.8}, "0 < t-min <= t-max"),
    ({"halt_entropy": -1.0}, "halt-entropy must be >= 0"),
    ({"step_cap": 0}, "step cap must be an integer >= 1"),
    ({"step_cap": 2.5}, "step cap must be an integer >= 1"),
])
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Renoise(True, **kwargs)


def test_sizes_are_checked_before_allocating():
    with pytest.raises(ChainTooLarge, match="3\\^7 = 2187 canvases exceed"):
        renoise_exact(Renoise(True), NG3, 7)
    with pytest.raises(ValueError, match="need n >= 1 runs"):
        sample_renoise(Renoise(True), NG2, 0, 3, np.random.default_rng(0))
