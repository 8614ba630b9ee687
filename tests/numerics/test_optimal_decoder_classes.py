"""The optimal decoder's class stated, the issue-33 counterexamples pinned, and the wider classes' floors.

Brute force here is independent of :mod:`numerics.exact.floors`: conditionals are summed from the
flat list of sequences, the draw law is tempered here, every policy is enumerated, and each
policy's SER / KL comes from its output law.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from numerics.exact.floors import (
    MARGINAL,
    DecoderClass,
    class_floor,
    expected_calls_floor,
)
from numerics.exact.joint_table import all_sequences, joint_table
from numerics.exact.optimal_decoder import optimal_decoder
from numerics.languages.hmm import HMM
from numerics.languages.presets import load_language
from numerics.metrics import point_metrics
from numerics.sampling.adaptive import AdaptiveSampler
from numerics.sampling.decoders import make_decoder
from numerics.schedules import linear
from tests.tolerances import ATOL_METRIC, RTOL_EXACT

# Found by a search over 2-state, 3-token HMMs with zeros (issue 33): LLaDA low-confidence at T = 1 in
# two calls is below the marginal class's two-call floor at L = 3.
DRAW_HMM = HMM(np.array([0.5, 0.5]), np.array([[1.0, 0.0], [0.6, 0.4]]),
               np.array([[0.85, 0.0, 0.15], [0.0, 0.25, 0.75]]))


def _close(a, b):
    return abs(a - b) <= RTOL_EXACT * abs(b) + ATOL_METRIC


def _exact(lang, L, decoder):
    return point_metrics(lang, L, decoder, method="dp", only=("ser", "kl", "calls"))


# --- the counterexamples of issue 33: decoders outside the class go below its floor ------------------

def test_tempered_eb_beats_the_marginal_floor_at_one_call_and_meets_its_own():
    """EB at T = 0.5 reveals both positions of hmm-pruned (L = 2) in one call: SER 0.000657 < 0.0145."""
    lang = load_language("hmm-pruned")
    m = _exact(lang, 2, make_decoder("eb", gamma=2.5, temperature=0.5, tie_seed=3))
    assert m.calls.value == pytest.approx(1.0, rel=RTOL_EXACT) and m.ser.value == pytest.approx(0.000657407, rel=1e-5)
    marginal = optimal_decoder(lang, 2, 1, "ser").values[0]
    assert marginal == pytest.approx(0.0145024, rel=1e-5) and m.ser.value < marginal
    own = class_floor(lang, 2, 1, DecoderClass("fixed", 0.5)).values[0]
    assert _close(own, m.ser.value)  # one call: the class has one policy, the decoder is it


def test_greedy_fast_dllm_is_valid_at_one_call():
    """Fast-dLLM factor 3.5 at T = 0 on hmm-pruned (L = 3): SER 0 in one call against the marginal floor 0.1146."""
    lang = load_language("hmm-pruned")
    m = _exact(lang, 3, make_decoder("fast-dllm", factor=3.5, temperature=0.0))
    assert m.calls.value == pytest.approx(1.0, rel=RTOL_EXACT) and m.ser.value == 0.0 and math.isinf(m.kl.value)
    assert optimal_decoder(lang, 3, 1, "ser").values[0] == pytest.approx(0.114569, rel=1e-5)
    assert class_floor(lang, 3, 1, DecoderClass("draw-then-select", 0.0)).values[0] == 0.0


def test_llada_low_confidence_beats_the_marginal_floor_at_two_calls():
    """On DRAW_HMM (L = 3) LLaDA low-confidence, T = 1, N = 2: SER 0.000425 < the marginal class's 0.00354;
    the draw-then-select floor is 0 (keep a valid pair of draws, then the last position exactly); random
    remasking (a mixture of marginal-class policies) stays above."""
    marginal = optimal_decoder(DRAW_HMM, 3, 2, "ser").values[1]
    low = _exact(DRAW_HMM, 3, make_decoder("llada", steps=2, temperature=1.0))
    rnd = _exact(DRAW_HMM, 3, make_decoder("llada", steps=2, temperature=1.0, remasking="random"))
    assert low.calls.value == 2.0 and low.ser.value == pytest.approx(0.000425, rel=1e-9)
    assert marginal == pytest.approx(0.0035416667, rel=1e-7) and low.ser.value < marginal <= rnd.ser.value
    assert class_floor(DRAW_HMM, 3, 2, DecoderClass("draw-then-select", 1.0)).values[1] == 0.0


# --- brute force over every policy of each class ------------------------------------------------------

def _random_table(V, L, seed, zeros=0.35):
    rng = np.random.default_rng(seed)
    w = rng.random(V**L) * (rng.random(V**L) > zeros)
    return (w / w.sum()).reshape((V,) * L)


def _temper(c, tau):
    if tau == 1:
        return c
    w = np.where(c > 0, c, 0.0) ** (1.0 / tau)
    return w / w.sum()


def _cond(xs, q, S, xS, j, V):
    keep = np.all(xs[:, list(S)] == np.array(xS, dtype=int), axis=1) if S else np.ones(len(xs), bool)
    w = q * keep
    return np.bincount(xs[:, j], weights=w, minlength=V) / w.sum()


def _fixed_policies(xs, q, L, S, xS, t):
    """Every deterministic policy from state (S, x_S) with t calls left, as dict (S, x_S, t) -> D."""
    rest = [j for j in range(L) if j not in S]
    for D in ([tuple(rest)] if t == 1 else [c for k in range(1, len(rest) + 1) for c in itertools.combinations(rest, k)]):
        S2 = tuple(sorted(S + D))
        if len(S2) == L:
            yield {(S, xS, t): D}
            continue
        kids = sorted({tuple(int(x[j]) for j in S2) for x, w in zip(xs, q)
                       if w > 0 and all(x[j] == v for j, v in zip(S, xS))})
        for combo in itertools.product(*[list(_fixed_policies(xs, q, L, S2, c, t - 1)) for c in kids]):
            pol = {(S, xS, t): D}
            for sub in combo:
                pol |= sub
            yield pol


def _fixed_law(xs, q, L, V, pol, T, tau):
    p = np.zeros(len(xs))
    for i, x in enumerate(xs):
        S, t, prob = (), T, 1.0
        while len(S) < L:
            xS = tuple(int(x[j]) for j in S)
            if (S, xS, t) not in pol:  # an impossible x_S: the rest is invalid whatever it is
                prob = 0.0
                break
            D = pol[(S, xS, t)]
            for j in D:
                prob *= _temper(_cond(xs, q, S, xS, j, V), tau)[x[j]]
            S, t = tuple(sorted(S + D)), t - 1
        p[i] = prob
    return p


@pytest.mark.parametrize("V,L,T,seed,tau", [(2, 3, 2, 0, 0.5), (2, 3, 3, 1, 0.5), (2, 3, 2, 2, 2.0),
                                             (3, 2, 2, 0, 0.5), (2, 3, 3, 3, 1.0)])
def test_fixed_class_floor_is_the_minimum_over_every_policy(V, L, T, seed, tau):
    table = _random_table(V, L, seed)
    xs, q = all_sequences(V, L), table.ravel()
    on = q > 0
    best_ser, best_kl = math.inf, math.inf
    for pol in _fixed_policies(xs, q, L, (), (), T):
        p = _fixed_law(xs, q, L, V, pol, T, tau)
        best_ser = min(best_ser, 1.0 - float(p[on].sum()))
        with np.errstate(divide="ignore"):
            best_kl = min(best_kl, float(np.sum(q[on] * (np.log(q[on]) - np.log(p[on])))))
    cls = DecoderClass("fixed", tau)
    assert _close(class_floor(table, None, T, cls, "ser").value, best_ser)
    assert _close(class_floor(table, None, T, cls, "kl").value, best_kl)


def _draw_select_sers(table, tau):
    """SER of every draw-then-select policy at L = 3, T = 2: each of the V^3 first-call draws picks any
    non-empty subset; the second call reveals the rest from the tempered conditionals (literal law)."""
    V, L = table.shape[0], table.ndim
    xs, q = all_sequences(V, L), table.ravel()
    r0 = [_temper(_cond(xs, q, (), (), j, V), tau) for j in range(L)]
    subsets = [c for k in range(1, L + 1) for c in itertools.combinations(range(L), k)]
    weight = np.array([np.prod([r0[j][y[j]] for j in range(L)]) for y in xs])
    cost = np.empty((len(xs), len(subsets)))  # P(invalid | draws y, keep D)
    for a, y in enumerate(xs):
        for b, D in enumerate(subsets):
            yD = tuple(int(y[j]) for j in D)
            if q[np.all(xs[:, list(D)] == np.array(yD), axis=1)].sum() == 0:
                cost[a, b] = 1.0
                continue
            rest = [j for j in range(L) if j not in D]
            laws = [_temper(_cond(xs, q, D, yD, j, V), tau) for j in rest]
            ok = 0.0
            for z in itertools.product(range(V), repeat=len(rest)):
                x = list(y)
                for j, v in zip(rest, z):
                    x[j] = v
                if table[tuple(x)] > 0:
                    ok += np.prod([law[v] for law, v in zip(laws, z)])
            cost[a, b] = 1.0 - ok
    totals = np.zeros(1)
    for a in range(len(xs)):  # every policy: one subset per draw, |subsets|^(V^L) of them
        totals = (totals[:, None] + weight[a] * cost[a][None, :]).ravel()
    return totals


@pytest.mark.parametrize("seed,tau", [(0, 1.0), (4, 1.0), (5, 0.5)])
def test_draw_then_select_floor_is_the_minimum_over_every_policy(seed, tau):
    table = _random_table(2, 3, seed, zeros=0.5)
    sers = _draw_select_sers(table, tau)
    assert sers.size == 7 ** 8
    got = class_floor(table, None, 2, DecoderClass("draw-then-select", tau))
    assert _close(got.value, float(sers.min()))


# --- where the wider classes cannot help --------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_floors_coincide_where_the_wider_class_cannot_help(seed):
    """draw-then-select = fixed at T = 1 (one policy), at tau = 0 (the draws are functions of the state),
    and wherever the fixed floor is 0 (draw-then-select is below it and >= 0); forward KL: tempering
    never helps (the marginals minimize the cross-entropy), so the tempered KL floor is >= the marginal's."""
    table = _random_table(3, 3, seed)
    for tau in (0.0, 0.5, 1.0):
        fixed = class_floor(table, None, 3, DecoderClass("fixed", tau)).values
        draw = class_floor(table, None, 3, DecoderClass("draw-then-select", tau)).values
        assert np.all(draw <= fixed + ATOL_METRIC) and _close(draw[0], fixed[0])
        assert np.all(draw[fixed <= ATOL_METRIC] <= ATOL_METRIC)
        if tau == 0:
            assert np.array_equal(draw, fixed)
        kl = class_floor(table, None, 3, DecoderClass("fixed", tau), "kl").values
        assert np.all(kl >= class_floor(table, None, 3, MARGINAL, "kl").values - ATOL_METRIC)
    assert np.array_equal(class_floor(table, None, 3, MARGINAL, "kl").values, optimal_decoder(table, None, 3, "kl").values)
    assert np.allclose(class_floor(table, None, 3, MARGINAL).values, optimal_decoder(table, None, 3, "ser").values,
                       rtol=RTOL_EXACT, atol=ATOL_METRIC)


def test_draw_then_select_kl_is_refused_and_bad_input():
    with pytest.raises(ValueError, match="not a dynamic program"):
        class_floor(np.array([0.5, 0.5]), None, 1, DecoderClass("draw-then-select"), "kl")
    with pytest.raises(ValueError, match="unknown selection"):
        DecoderClass("greedy")
    with pytest.raises(ValueError, match="temperature"):
        DecoderClass("fixed", -1.0)
    with pytest.raises(ValueError, match="MAX_CLASS_WORK"):
        class_floor(load_language("hmm-pruned"), 7, 7, DecoderClass("draw-then-select"))


# --- every registered decoder against the floor of its own class --------------------------------------

LAMBDAS = (0.0, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 10.0)


def _registered(L):
    """(decoder, its class, exact calls or None when they are random, bounds KL?) for every registered rule."""
    out = []
    for tau in (0.0, 0.5, 1.0):
        for N in range(1, L + 1):
            out.append((make_decoder("llada", steps=N, temperature=tau), DecoderClass("draw-then-select", tau), N, False))
            out.append((make_decoder("llada", steps=N, temperature=tau, remasking="random"),
                        DecoderClass("fixed", tau), N, False))  # a mixture: SER only
        for opt in (dict(threshold=0.5), dict(threshold=0.9), dict(factor=1.0), dict(factor=3.5)):
            out.append((make_decoder("fast-dllm", temperature=tau, **opt), DecoderClass("draw-then-select", tau), None,
                        False))
        for g in (0.1, 2.5):
            out.append((make_decoder("eb", gamma=g, temperature=tau), DecoderClass("fixed", tau), None, tau > 0))
    for N in range(1, L + 1):
        out.append((AdaptiveSampler("topk", schedule=linear(N)), MARGINAL, N, True))
        out.append((linear(N), MARGINAL, N, False))  # the random order: a mixture, SER only
    for g in (0.5, 0.9):
        out.append((AdaptiveSampler("threshold", gamma=g), MARGINAL, None, True))
    for g in (0.2, 1.5):
        out.append((AdaptiveSampler("entropy-sum", gamma=g), MARGINAL, None, True))
    return out


@pytest.mark.parametrize("name,L", [("draw-hmm", 3), ("hmm-pruned", 3), ("2gram-pruned", 3), ("interval-l2", 4)])
def test_every_registered_decoder_is_at_or_above_its_class_floor(name, L):
    """Fixed calls N: the floor at T = N; random calls: max_lam G(lam) - lam E[calls] at T = L."""
    lang = DRAW_HMM if name == "draw-hmm" else load_language(name)
    q = joint_table(lang, L)
    cache: dict = {}

    def floors(cls, metric):
        if (cls, metric) not in cache:
            cache[cls, metric] = ([class_floor(q, None, L, cls, metric).values],
                                  [class_floor(q, None, L, cls, metric, call_cost=lam) for lam in LAMBDAS])
        return cache[cls, metric]

    checked = 0
    for dec, cls, calls, with_kl in _registered(L):
        m = _exact(lang, L, dec)
        for metric in ("ser", "kl") if with_kl else ("ser",):
            value = getattr(m, metric).value
            by_budget, lagrange = floors(cls, metric)
            floor = by_budget[0][calls - 1] if calls is not None else expected_calls_floor(lagrange, m.calls.value)
            assert value >= floor - ATOL_METRIC, (getattr(dec, "label", dec), cls.name, metric, value, floor)
            checked += 1
    assert checked >= 50


def _twin(table, T, tau, draw):
    """A plain recursive twin of the SER recursions (module docstring of numerics.exact.floors): states as
    dicts, conditionals summed from the flat list of sequences, no broadcasting, no masked table."""
    V, L = table.shape[0], table.ndim
    xs, q = all_sequences(V, L), table.ravel()
    memo: dict = {}

    def F(S, xS, t):
        if len(S) == L:
            return float(table[tuple(xS[S.index(j)] for j in range(L))] == 0)
        keep = np.all(xs[:, list(S)] == np.array(xS, dtype=int), axis=1) if S else np.ones(len(xs), bool)
        if q[keep].sum() == 0:
            return 1.0
        key = (S, xS, t)
        if key in memo:
            return memo[key]
        M = [j for j in range(L) if j not in S]
        r = {j: _temper(_cond(xs, q, S, xS, j, V), tau) for j in M}
        sets = [tuple(M)] if t == 1 else [c for k in range(1, len(M) + 1) for c in itertools.combinations(M, k)]

        def after(D, vals):
            pairs = sorted(zip(S + D, xS + vals))
            return F(tuple(p for p, _ in pairs), tuple(v for _, v in pairs), t - 1)

        if draw:
            out = 0.0
            for y in itertools.product(range(V), repeat=len(M)):
                w = math.prod(r[j][v] for j, v in zip(M, y))
                if w > 0:
                    out += w * min(after(D, tuple(y[M.index(j)] for j in D)) for D in sets)
        else:
            out = min(sum(math.prod(r[j][v] for j, v in zip(D, vals)) * after(D, vals)
                          for vals in itertools.product(range(V), repeat=len(D))) for D in sets)
        memo[key] = out
        return out

    return F((), (), T)


@pytest.mark.parametrize("seed,T,tau", [(6, 2, 1.0), (10, 2, 0.5), (2, 2, 2.0), (7, 3, 1.0)])
def test_class_floors_match_a_recursive_twin_at_l4(seed, T, tau):
    table = _random_table(2, 4, seed, zeros=0.5)
    for selection in ("fixed", "draw-then-select"):
        want = _twin(table, T, tau, selection == "draw-then-select")
        assert _close(class_floor(table, None, T, DecoderClass(selection, tau)).value, want), (selection, want)


def test_draw_then_select_hand_checked_on_the_interval_language():
    """interval-l3, L = 3, two calls. The three pair bits' copies are drawn independently, so each pair agrees
    w.p. 1/2 independently. Draw-then-select keeps all three (all agree) or an agreeing pair (the third position
    is then determined), and only when all three pairs disagree (1/8) keeps one position, after which the other
    two share one free bit drawn twice: invalid w.p. 1/2. Floor 1/16, against the marginal class's 1/2
    (docs/findings.md section 9); the twin agrees."""
    table = joint_table(load_language("interval-l3"), 3)
    draw = class_floor(table, None, 2, DecoderClass("draw-then-select", 1.0)).values
    assert _close(draw[1], 1 / 16) and _close(draw[0], 7 / 8)
    assert _close(optimal_decoder(table, None, 2, "ser").values[1], 0.5)
    assert _close(_twin(table, 2, 1.0, True), 1 / 16)
