"""The exact optimal decoder against brute force over every policy, and against every implemented sampler.

Brute force (independent of the module: no masked marginal table, no DP): every deterministic
policy ``(S, x_S, calls left) -> D`` on the states with ``q(x_S) > 0`` is enumerated; its output law
``p(x)`` is the product of the oracle conditionals along ``x``'s own path, each summed from the
flat list of sequences (at an impossible ``x_S`` the rest is revealed at once, uniformly, so ``p``
sums to 1); then ``KL(q || p)`` and ``1 - p(supp q)`` from the law itself, not from (I1).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.exact.adaptive import adaptive_dp, adaptive_enumerate
from numerics.exact.dp import dp_metrics
from numerics.exact.joint_table import all_sequences, joint_table
from numerics.exact.optimal_decoder import (
    MAX_STATES,
    check_decoder_size,
    optimal_decoder,
    policy_law,
)
from numerics.languages.hmm import HMM
from numerics.languages.presets import load_language
from numerics.sampling.adaptive import CONFIDENCES, AdaptiveSampler
from numerics.schedules import linear
from tests.strategies import joint_tables
from tests.tolerances import ATOL_METRIC, RTOL_EXACT


def _marginals(xs, q, consistent, j, V):
    w = q[consistent]
    return np.bincount(xs[consistent, j], weights=w, minlength=V) / w.sum()


def _states(xs, q, L, V):
    """Every (S, x_S) with q(x_S) > 0 and S not full, as (S tuple, values tuple)."""
    out = []
    for k in range(L):
        for S in itertools.combinations(range(L), k):
            vals = {tuple(x[list(S)]) for x, w in zip(xs, q) if w > 0}
            out += [(S, v) for v in sorted(vals)]
    return out


def _all_policies(xs, q, L, V, T):
    """Every policy as a dict (S, x_S, t) -> D over the states it can reach (recursive enumeration)."""

    def expand(S, vals, t):
        rest = tuple(j for j in range(L) if j not in S)
        choices = [rest] if t == 1 else [D for k in range(1, len(rest) + 1) for D in itertools.combinations(rest, k)]
        for D in choices:
            S2 = tuple(sorted(S + D))
            children = sorted({tuple(x[list(S2)]) for x, w in zip(xs, q)
                               if w > 0 and tuple(x[list(S)]) == vals})
            if len(S2) == L:
                yield {(S, vals, t): D}
                continue
            for combo in itertools.product(*[list(expand(S2, c, t - 1)) for c in children]):
                pol = {(S, vals, t): D}
                for sub in combo:
                    pol.update(sub)
                yield pol

    return list(expand((), (), T))


def _law(xs, q, L, V, pol, T):
    p = np.ones(len(xs))
    for i, x in enumerate(xs):
        S, t = (), T
        consistent = np.ones(len(xs), dtype=bool)
        while len(S) < L:
            if q[consistent].sum() == 0:  # impossible x_S: reveal the rest uniformly
                p[i] *= V ** -(L - len(S))
                break
            D = pol[(S, tuple(x[list(S)]), t)]
            for j in D:
                p[i] *= _marginals(xs, q, consistent, j, V)[x[j]]
            consistent &= np.all(xs[:, list(D)] == x[list(D)], axis=1)
            S, t = tuple(sorted(S + D)), t - 1
    return p


def _brute(table, T):
    V, L = table.shape[0], table.ndim
    xs = all_sequences(V, L)
    q = table.ravel()
    best_kl, best_ser = math.inf, math.inf
    for pol in _all_policies(xs, q, L, V, T):
        p = _law(xs, q, L, V, pol, T)
        assert abs(p.sum() - 1.0) < 1e-12
        on = q > 0
        best_kl = min(best_kl, float(np.sum(q[on] * (np.log(q[on]) - np.log(p[on])))))
        best_ser = min(best_ser, 1.0 - float(p[on].sum()))
    return best_kl, best_ser


def _close(a, b):
    return abs(a - b) <= RTOL_EXACT * abs(b) + ATOL_METRIC


def _check_against_brute(table, T):
    kl, ser = _brute(table, T)
    r_kl = optimal_decoder(table, None, T, "kl")
    r_ser = optimal_decoder(table, None, T, "ser")
    assert _close(r_kl.value.value, kl), (r_kl.value.value, kl)
    assert _close(r_ser.value.value, ser), (r_ser.value.value, ser)


def _random_table(V, L, seed, zeros=0.3):
    rng = np.random.default_rng(seed)
    w = rng.random(V**L) * (rng.random(V**L) > zeros)
    return (w / w.sum()).reshape((V,) * L)


@pytest.mark.parametrize("V,L,T,seed", [(2, 3, 2, 0), (2, 3, 3, 1), (3, 3, 2, 0), (3, 3, 3, 1), (2, 4, 2, 1),
                                         (2, 4, 3, 0)])
def test_floor_is_the_minimum_over_all_policies(V, L, T, seed):
    _check_against_brute(_random_table(V, L, seed), T)


@settings(max_examples=8)
@given(table=joint_tables(max_k=3, max_vocab=3), T=st.integers(1, 3))
def test_floor_matches_brute_force_on_random_tables(table, T):
    _check_against_brute(table, T)


def test_hand_checked_copy_pair():
    """Two copies of a fair bit, ``q(00) = q(11) = 1/2``: one call draws the two bits independently, so
    KL = log 2 and SER = 1/2 (by hand); two calls are exact (0, 0)."""
    table = np.array([[0.5, 0.0], [0.0, 0.5]])
    for metric, one in (("kl", math.log(2)), ("ser", 0.5)):
        r = optimal_decoder(table, None, 2, metric)
        assert _close(r.values[0], one) and _close(r.values[1], 0.0)
        assert r.policy[0].reveal in ((0,), (1,))  # the two-call policy reveals one bit first


@pytest.mark.parametrize("spec,L,T", [("interval-l3", 6, 2), ("2gram-pruned", 4, 2), ("interval-l2", 6, 3)])
@pytest.mark.parametrize("metric", ["kl", "ser"])
def test_policy_replay_reaches_the_value(spec, L, T, metric):
    """The returned policy, replayed by :func:`policy_law`, has the reported KL / SER (law, not (I1))."""
    lang = load_language(spec)
    q = joint_table(lang, L)
    r = optimal_decoder(lang, L, T, metric)
    p = policy_law(q, None, r.policy)
    on = q > 0
    got = float(np.sum(q[on] * (np.log(q[on]) - np.log(p[on])))) if metric == "kl" else 1.0 - float(p[on].sum())
    assert _close(got, r.value.value)
    assert np.all(np.diff(r.values) <= ATOL_METRIC)  # a larger budget never hurts
    assert 1.0 <= r.expected_calls <= T + 1e-12


def _max_calls(sampler, q):
    ex = adaptive_enumerate(q, None, sampler)
    return int(ex.calls[ex.law.p > 0].max()), ex.metrics


SMALL_HMM = HMM(np.array([0.6, 0.4]), np.array([[0.7, 0.3], [0.2, 0.8]]),
                np.array([[0.5, 0.5, 0.0], [0.0, 0.3, 0.7]]))


def _samplers(L, full):
    out = [AdaptiveSampler("topk", schedule=linear(N), confidence=c) for N in range(1, L + 1)
           for c in (CONFIDENCES if full else ("maxprob",))]
    out += [AdaptiveSampler("threshold", gamma=g, confidence=c) for g in ((0.3, 0.5, 0.7, 0.9) if full else (0.5, 0.9))
            for c in (("maxprob", "margin") if full else ("maxprob",))]
    out += [AdaptiveSampler("entropy-sum", gamma=g) for g in ((0.0, 0.2, 0.7, 1.5, 10.0) if full else (0.7, 3.0))]
    return out


# adaptive_enumerate (the per-path calls) is quadratic in V^L: the wide sweep runs on the smallest tables
@pytest.mark.parametrize("spec,L,full", [("interval-l2", 6, True), ("small-hmm", 4, False), ("interval-l3", 3, False)])
def test_no_implemented_sampler_beats_the_floor(spec, L, full):
    """topk, threshold and entropy-sum at every setting tried, with T = their longest path's calls, and
    the random-order sampler with N <= T steps (SER of its law; KL as E_D KL(q || q_D), each fixed
    partition being a decoder) are never below the floor."""
    lang = SMALL_HMM if spec == "small-hmm" else load_language(spec)
    q = joint_table(lang, L)
    floors = {m: optimal_decoder(q, None, L, m).values for m in ("kl", "ser")}

    def check(kl, ser, T):
        assert kl >= floors["kl"][T - 1] - ATOL_METRIC, (kl, floors["kl"][T - 1], T)
        assert ser >= floors["ser"][T - 1] - ATOL_METRIC, (ser, floors["ser"][T - 1], T)

    for s in _samplers(L, full):
        T, m = _max_calls(s, q)
        check(m.kl.value, m.ser.value, T)
    for N in range(1, L + 1):
        m = dp_metrics(q, None, linear(N))
        check(m.kl_jensen_bound.value, m.ser.value, N)


def test_state_space_refused_up_front():
    # (V+1)^L <= 2^20 and min(T, L) (2V+1)^L <= 2^27: 17^4 = 83521 < 17^5; 8 * 7^8 = 46118408 < 9 * 7^9
    with pytest.raises(ValueError, match=r"reaches L <= 4 at V = 16 with T = 2 calls .* L = 8 is beyond it"):
        optimal_decoder(load_language("interval"), 8, 2, "ser")
    with pytest.raises(ValueError, match=r"reaches L <= 8 at V = 3 with T = 10 calls"):
        check_decoder_size(3, 10, 10)
    with pytest.raises(ValueError, match="budget T"):
        optimal_decoder(np.array([0.5, 0.5]), None, 0, "kl")
    with pytest.raises(ValueError, match="unknown metric"):
        optimal_decoder(np.array([0.5, 0.5]), None, 1, "ter")
    assert (3 + 1) ** 8 <= MAX_STATES  # the advertised tiny cases fit


def test_svete_sabharwal_interval_finding():
    """docs/findings.md section 9: the optimal decoder reaches SER = 0 on the interval language in l
    calls at every L tried (sub-linear), while topk, threshold and entropy-sum need more at L = 6."""
    for L in (2, 4, 6, 8):
        r = optimal_decoder(load_language("interval-l2"), L, 2, "ser")
        assert _close(r.values[0], 1.0 - 2.0 ** (-L / 2))  # one call: each interval's two bits agree w.p. 1/2
        assert _close(r.values[1], 0.0)
    for L, two_calls in ((3, 0.5), (6, 0.75)):
        r = optimal_decoder(load_language("interval-l3"), L, 3, "ser")
        assert _close(r.values[1], two_calls) and _close(r.values[2], 0.0)
    q = joint_table(load_language("interval-l3"), 6)
    for s in (AdaptiveSampler("threshold", gamma=0.9), AdaptiveSampler("entropy-sum", gamma=0.7)):
        ex = adaptive_dp(q, None, s)
        # E[calls] = 6 = L with at most L calls per path: one position per call on every path
        assert ex.metrics.ser.value <= 0.5 and ex.expected_nfe.value == pytest.approx(6.0, rel=RTOL_EXACT)
    topk3 = adaptive_dp(q, None, AdaptiveSampler("topk", schedule=linear(3)))
    assert topk3.metrics.ser.value > 0.5  # three calls suffice for the optimal decoder, not for topk


@pytest.mark.parametrize("claim_id", ["PB.2", "PB.1.ccl", "OPT.ser", "OPT.plan", "OPT.draw"])
def test_floor_claims_hold_on_generated_instances(claim_id):
    """The registered claims of theory/related_calls.py on 12 generated tiny languages (none violated)."""
    import theory  # noqa: F401  (fills the registry)
    from theory.claims import check, get

    claim = get(claim_id)
    rng = np.random.default_rng(21)
    for _ in range(12):
        inst = claim.generate(rng)
        r = check(claim, inst)
        assert r.holds, (claim_id, inst["L"], inst["T"], r.lhs, r.rhs)
