"""Structural floors at any length (issue 33): interleaved plans on n-grams, the interval language's product rule.

Checks: each plan's whole partition replayed on the joint table (every call's factorized draw from
the exact conditionals, SER from the law: independent of the plan's forward pass and of the claim
that the later calls are exact); plan >= the optimal decoder's DP where both run, equal at T = 1;
the product rule = the DP; at L = 128 the first call's SER against a seeded Monte Carlo whose
validity test is a plain reachability pass; the CLI beyond the DP.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from numerics.exact.floors_structural import (
    dp_limit_text,
    dp_max_length,
    fill_calls,
    fill_order,
    interval_floor,
    ngram_plan,
    ngram_structural_floor,
)
from numerics.exact.joint_table import joint_table
from numerics.exact.optimal_decoder import check_decoder_size, optimal_decoder
from numerics.languages.hmm import NGram
from numerics.languages.presets import load_language
from tests.tolerances import ATOL_METRIC, RTOL_EXACT
from validation.cli import main

Z_MAX = 4.5  # |z| of a seeded Monte Carlo comparison: false-failure budget ~7e-6 per comparison


def _sparse_bigram():
    """A 4-token first-order chain whose P^2 and P^3 have zeros (a cycle 0 -> 1 -> 2 -> 3 -> 0 with a shortcut)."""
    P = np.array([[0.0, 0.7, 0.0, 0.3], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.2, 0.8], [1.0, 0.0, 0.0, 0.0]])
    return NGram(2, np.full(4, 0.25), P)


def _language(name):
    return _sparse_bigram() if name == "sparse-bigram" else load_language(name)


def _partition_law(table, partition):
    """The output law on ``supp q`` of a fixed ordered partition, each call drawing its positions independently
    from the exact conditionals ``q(x_j | x_S)`` (summed from the table here)."""
    L = table.ndim

    def marg(R):
        return table.sum(axis=tuple(j for j in range(L) if j not in R), keepdims=True)

    p = np.ones(table.shape)
    S: set = set()
    for D in partition:
        den = marg(S)
        for j in D:
            num = marg(S | {j})
            p = p * np.divide(num, den, out=np.zeros(np.broadcast_shapes(num.shape, den.shape)), where=den > 0)
        S |= set(D)
    return p


def _partition_ser(table, partition):
    return 1.0 - float(_partition_law(table, partition)[table > 0].sum())


def _partition_kl(table, partition):
    p, on = _partition_law(table, partition), table > 0
    return float(np.sum(table[on] * (np.log(table[on]) - np.log(p[on]))))


@pytest.mark.parametrize("name,L", [("2gram-pruned", 5), ("3gram-pruned", 6), ("sparse-bigram", 7),
                                    ("3gram-pruned", 4)])
def test_plan_ser_is_its_partition_replayed(name, L):
    lang = _language(name)
    table = joint_table(lang, L)
    nonzero = 0
    for g in range(0, L - lang.order + 2):
        plan = ngram_plan(lang, L, g)
        part = plan.partition()
        assert sorted(p for D in part for p in D) == list(range(L)) and len(part) == plan.calls
        want = _partition_ser(table, part)
        assert abs(plan.ser - want) <= RTOL_EXACT * want + ATOL_METRIC, (g, plan.ser, want)
        want = _partition_kl(table, part)
        assert abs(plan.kl - want) <= RTOL_EXACT * want + ATOL_METRIC, (g, plan.kl, want)
        nonzero += plan.ser > 0 and g > 0
    if name == "sparse-bigram":
        assert nonzero >= 2  # zeros of P^d make plans with gaps err, and the forward pass sees it


@pytest.mark.parametrize("name,L", [("2gram-pruned", 5), ("3gram-pruned", 5), ("sparse-bigram", 6),
                                    ("sparse-bigram", 7)])
def test_structural_floor_is_above_the_dp_and_equal_at_one_call(name, L):
    lang = _language(name)
    T = min(L, 4)
    for metric in ("ser", "kl"):
        dp = optimal_decoder(lang, L, T, metric).values
        st = ngram_structural_floor(lang, L, T, metric).values
        assert np.all(st >= dp - ATOL_METRIC)
        assert abs(st[0] - dp[0]) <= RTOL_EXACT * dp[0] + ATOL_METRIC
        assert np.all(np.diff(st) <= ATOL_METRIC)


def test_fill_calls_and_order():
    for g in range(0, 40):
        assert fill_calls(g, 1) == math.ceil(math.log2(g + 1))
        for k in (1, 2, 3):
            calls = fill_order(list(range(g)), k)
            assert len(calls) == fill_calls(g, k) and sorted(p for c in calls for p in c) == list(range(g))
    assert [fill_calls(g, 2) for g in range(8)] == [0, 1, 2, 3, 3, 4, 4, 5]


@pytest.mark.parametrize("name,l", [("interval-l2", 2), ("interval-l3", 3)])
def test_interval_product_rule_is_the_dp(name, l):
    lang = load_language(name)
    for L in range(l, 7):
        T = min(L, l + 1)
        for metric in ("ser", "kl"):
            dp = optimal_decoder(lang, L, T, metric).values
            got = interval_floor(lang, L, T, metric).values
            assert np.allclose(got, dp, rtol=RTOL_EXACT, atol=ATOL_METRIC), (L, metric, got, dp)
    far = interval_floor(lang, 3000, l).values
    assert far[-1] == 0.0 and far[0] == 1.0  # l calls: one position of every interval per call


def test_two_calls_suffice_on_2gram_pruned_at_any_length():
    """Every two-step transition of 2gram-pruned is possible (checked on P^2 directly), so revealing every
    other position and then the rest gives SER 0 at L = 128 and 1024; one call is hopeless."""
    lang = load_language("2gram-pruned")
    P = np.asarray(lang.conditional)
    assert np.all(P @ P > 0)
    for L in (128, 1024):
        st = ngram_structural_floor(lang, L, 4)
        assert st.values[1] == 0.0 and st.plans[1].calls == 2 and st.values[0] > 1 - 1e-12


def _first_call_mc(lang, L, runs, n, rng):
    """Monte Carlo SER of the first call: draws from the token marginals, validity by a reachability pass."""
    cond = np.asarray(lang.conditional)
    S, V = cond.shape
    W = S // V
    law = np.asarray(lang.initial, dtype=np.float64)
    marg, laws = [], []
    for _ in range(L):
        laws.append(law)
        marg.append(law.reshape(W, V).sum(axis=0))
        nxt = np.zeros(S)
        for s in range(S):
            for v in range(V):
                nxt[(s % W) * V + v] += law[s] * cond[s, v]
        law = nxt
    step = np.zeros((S, S))
    for s in range(S):
        for v in range(V):
            step[s, (s % W) * V + v] = cond[s, v] > 0
    revealed = {p for b, e in runs for p in range(b, e + 1)}
    draws = {j: rng.choice(V, size=n, p=marg[j]) for j in sorted(revealed)}
    alive = np.tile(laws[0] > 0, (n, 1))
    newest = np.arange(S) % V
    for j in range(L):
        if j > 0:
            alive = (alive.astype(np.float64) @ step) > 0
        if j in draws:
            alive &= newest[None, :] == draws[j][:, None]
    return 1.0 - alive.any(axis=1).mean()


@pytest.mark.parametrize("name,g", [("3gram-pruned", 1), ("sparse-bigram", 4)])
def test_plan_at_l128_against_monte_carlo(name, g):
    lang = _language(name)
    plan = ngram_plan(lang, 128, g)
    n = 4000
    mc = _first_call_mc(lang, 128, plan.first_call, n, np.random.default_rng(33))
    se = math.sqrt(max(plan.ser * (1 - plan.ser), 1e-6) / n)
    assert 0.05 < plan.ser < 0.95 and abs(mc - plan.ser) / se < Z_MAX, (plan.ser, mc)


def test_dp_limit_in_plain_numbers():
    assert dp_limit_text(8, 16) == "L <= 5 at V = 8 (T = 16)"
    for V, T in ((8, 16), (8, 2), (2, 16), (4, 4)):
        L = dp_max_length(V, T)
        check_decoder_size(V, L, T)
        with pytest.raises(ValueError):
            check_decoder_size(V, L + 1, T)


def _run(*args):
    r = CliRunner().invoke(main, ["optimal-decoder", *args, "--json"])
    return r.exit_code, json.loads(r.stdout)


def test_cli_states_the_class_and_goes_beyond_the_dp():
    code, out = _run("--language", "2gram-pruned", "-L", "128", "--calls", "16", "--metric", "ser")
    assert code == 0 and out["method"] == "structural" and out["values_by_budget"][1] == 0.0
    assert out["dp_limit"] == "L <= 5 at V = 8 (T = 16)" and out["kind"].startswith("upper bound")
    assert "drawn independently from its oracle marginal" in out["decoder_class"]
    code, out = _run("--language", "hmm-pruned", "-L", "3", "--calls", "2", "--metric", "ser", "--temperature", "0")
    assert code == 0 and out["method"] == "dp" and "choose which positions" in out["decoder_class"]
    wider = {w["class"]: w for w in out["wider_classes"]}
    assert wider["draw-then-select@T=0"]["values_by_budget"][0] == 0.0 < out["values_by_budget"][0]
    assert wider["draw-then-select@T=0"]["bounds"] == ["ser"]
    code, out = _run("--language", "hmm-pruned", "-L", "12", "--calls", "2", "--metric", "ser")
    assert code == 2 and "L <= 6 at V = 8 (T = 2)" in out["error"]["message"]


def test_cli_refuses_what_no_floor_reaches():
    code, out = _run("--language", "interval", "-L", "100", "--calls", "5", "--metric", "ser")
    assert code == 2 and "one interval of l = 5 positions" in out["error"]["message"]
    code, out = _run("--language", "hmm-pruned", "-L", "128", "--calls", "16", "--metric", "kl")
    assert code == 2 and "L <= 5 at V = 8 (T = 16)" in out["error"]["message"]
    code, out = _run("--language", "hmm-pruned", "-L", "2", "--calls", "1", "--metric", "ser", "--temperature", "inf")
    assert code == 2 and "--temperature" in out["error"]["message"]


def _random_ngram(order, V, seed, start=None):
    """A random n-gram over V tokens with zeros (every window keeps at least one successor); ``start``: the
    initial window is that one (so windows the chain cannot reach early have probability 0)."""
    rng = np.random.default_rng(seed)
    S = V ** (order - 1)
    cond = rng.random((S, V)) * (rng.random((S, V)) > 0.35)
    cond[np.arange(S), rng.integers(0, V, S)] += 0.5
    initial = rng.dirichlet(np.ones(S)) if start is None else np.eye(S)[start]
    return NGram(order, initial, cond / cond.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("order,V,seed,start", [(2, 3, 0, None), (3, 2, 1, None), (4, 2, 2, None), (3, 3, 3, None),
                                                (2, 3, 4, 0), (3, 2, 5, 1)])
def test_every_plan_at_every_short_length_is_its_partition(order, V, seed, start):
    """Edge cases of the block layout (a block at the start, a merged start, short L) on random n-grams, and
    windows of probability 0 (a one-window start)."""
    lang = _random_ngram(order, V, seed, start)
    for L in range(order - 1, 8 if V == 2 else 6):
        table = joint_table(lang, L)
        for g in range(0, L - order + 3):
            plan = ngram_plan(lang, L, g)
            part = plan.partition()
            assert len(part) == plan.calls and sorted(p for D in part for p in D) == list(range(L))
            for got, want in ((plan.ser, _partition_ser(table, part)), (plan.kl, _partition_kl(table, part))):
                assert abs(got - want) <= RTOL_EXACT * abs(want) + ATOL_METRIC, (L, g, got, want)
