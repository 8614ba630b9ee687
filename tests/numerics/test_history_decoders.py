"""The runtimes' rules with a history or conditional queries (KLASS, CreditDecoding, Prophet, information gain)
and dInfer's hierarchy decoder.

* Every ``history`` row of the shared table (tests/decoder_cases.py): the DP over
  ``(state, block, step, history)`` against the per-output path enumeration (they share only the
  rule's ``plan``), on a language with zeros and on a full-support one; ``point_metrics`` reads the
  same law. dInfer's rows run through tests/numerics/test_decoders.py (the block decoders' DP).
* Limits where two rules coincide (same exact law): ``credit`` with ``credit_alpha = 0`` at ``T = 0``
  and ``fast-dllm --threshold`` at ``T = 0``; ``prophet`` with an unreachable gap and ``llada`` at
  ``T = 0``; ``klass`` with ``threshold = 1`` (nothing is ready) and ``llada`` at ``T = 0``; ``dinfer``
  with both thresholds 1 and ``llada`` with one position a step, ties left to right, at any ``T``.
* By hand: the information-gain score on two positions is ``I(X_1; X_2) - H(X_i)``; Prophet with
  ``gap = 0`` is one call, every position its marginal's argmax; KLASS has no history at its first call.
* The generic sampler against the exact law (chi-squared and the mean calls, tests/gof.py budget: 6 assertions).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from numerics import point_metrics
from numerics.exact.decoders import decoder_exact
from numerics.exact.history import history_exact
from numerics.languages.hmm import NGram
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.history_decoders import InfoGain, View, normalized
from numerics.sampling.registry import spec
from tests.decoder_cases import decoders_at
from tests.gof import assert_gof, within_z
from tests.tolerances import ATOL_PROB, RTOL_EXACT

PRUNED = NGram(2, [0.6, 0.4], [[0.7, 0.3], [0.0, 1.0]])  # x = 1 0 is impossible: SER > 0 for parallel decoders
FULL3 = NGram(2, [0.5, 0.3, 0.2], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])

CASES = [(PRUNED, 4, d) for d in decoders_at(4, "history")] + [(FULL3, 3, d) for d in decoders_at(3, "history")]


def _build(name, options, steps=None, L=4):
    return spec(name).build(options, steps=steps, length=L)


@pytest.mark.parametrize("language, L, decoder", CASES, ids=[f"V{c[0].vocab_size}-{c[2].label}" for c in CASES])
def test_dp_matches_the_path_enumeration(language, L, decoder):
    a = history_exact(language, L, decoder, "dp")
    b = history_exact(language, L, decoder, "enumerate")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert a.law.p.sum() == pytest.approx(1.0, abs=1e-12)
    assert a.expected_calls.value == pytest.approx(b.expected_calls.value, rel=RTOL_EXACT)
    m = point_metrics(language, L, decoder, method="dp")
    assert m.ser.value == pytest.approx(b.metrics.ser.value, rel=RTOL_EXACT, abs=ATOL_PROB)
    assert m.calls.value == pytest.approx(b.expected_calls.value, rel=RTOL_EXACT)


def test_the_rows_have_an_effect():
    """Not every row is a one-sequence greedy law: some have SER > 0 and random calls."""
    sers = [history_exact(PRUNED, 4, d, "dp").metrics.ser.value for d in decoders_at(4, "history")]
    assert sum(s > 0.01 for s in sers) >= 3


def test_the_block_decoders_dp_refuses_a_history_rule():
    with pytest.raises(TypeError, match="numerics.exact.history"):
        decoder_exact(PRUNED, 4, _build("klass", {}, steps=4), "dp")


@pytest.mark.parametrize("T", [0.0])
def test_credit_without_credit_is_fast_dllm_threshold(T):
    a = history_exact(FULL3, 3, _build("credit", {"credit_alpha": 0.0, "threshold": 0.5, "temperature": T}, L=3))
    b = decoder_exact(FULL3, 3, _build("fast-dllm", {"threshold": 0.5, "temperature": T}, L=3), "dp")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert a.expected_calls.value == pytest.approx(b.expected_calls.value, rel=RTOL_EXACT)
    c = history_exact(FULL3, 3, _build("credit", {"threshold": 0.5, "temperature": T}, L=3))
    assert c.expected_calls.value < b.expected_calls.value  # the credit speeds the threshold rule up here


@pytest.mark.parametrize("B", [None, 2])
def test_prophet_without_commit_is_llada_and_klass_without_ready_is_llada(B):
    opts = {"temperature": 0.0, "block_length": B}
    ref = decoder_exact(PRUNED, 4, _build("llada", {**opts}, steps=4), "dp")
    for name, extra in [("prophet", {"gap": 1e6}), ("klass", {"threshold": 1.0})]:
        got = history_exact(PRUNED, 4, _build(name, {**opts, **extra}, steps=4))
        np.testing.assert_allclose(got.law.p, ref.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB, err_msg=name)
        assert got.expected_calls.value == ref.expected_calls.value


@pytest.mark.parametrize("T", [1.0, 0.5])
def test_dinfer_with_unreachable_thresholds_is_llada_one_a_step(T):
    a = decoder_exact(FULL3, 3, _build("dinfer", {"threshold": 1.0, "run_threshold": 1.0, "temperature": T}, L=3))
    b = decoder_exact(FULL3, 3, spec("llada").build({"temperature": T}, steps=3, tie_seed=None, length=3))
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)


def test_dinfer_reveals_the_best_of_each_run_by_hand():
    """Candidates at positions 0, 1, 3 (2 revealed): runs {0, 1} and {3}. Scores .7, .65, .63 (low .62, high
    .92): the best of run {0, 1} is 0, of {3} is 3; 1 is not the best of its run and not above .92."""
    from numerics.sampling.block_decoder import step_rows

    d = _build("dinfer", {"temperature": 0.0})
    rows = step_rows(np.array([[0.7, 0.3], [0.65, 0.35], [0.63, 0.37]]), 0.0)
    chosen = d.select(rows, np.zeros(3, dtype=np.int64), None, np.array([0, 1, 3]), 0, None)
    assert chosen.tolist() == [0, 2]


def test_info_gain_score_on_two_positions_by_hand():
    """Two positions, joint q: ``score_i = I(X_1; X_2) - H(X_i)`` from the empty state."""
    q = np.array([[0.5, 0.1], [0.1, 0.3]])
    p1, p2 = q.sum(1), q.sum(0)
    H = lambda p: -float(np.sum(p * np.log(p)))  # noqa: E731
    mi = float(np.sum(q * np.log(q / np.outer(p1, p2))))
    probs = np.stack([p1, p2])[None]

    def cond(i):
        j = int(i[0])
        rows = q / (p1[:, None] if j == 0 else p2[None, :])
        return np.stack([normalized(np.stack([np.eye(2)[v], rows[v]]) if j == 0 else
                                    np.stack([rows[:, v], np.eye(2)[v]])) for v in range(2)])[None]

    view = View(probs, np.ones((1, 2), dtype=bool), np.array([0]), np.array([0]), cond)
    s = InfoGain(steps=2).scores(view)[0]
    np.testing.assert_allclose(s, [mi - H(p1), mi - H(p2)], rtol=1e-12)
    assert mi > 0.05


def test_prophet_gap_zero_is_one_call_of_argmaxes():
    r = history_exact(PRUNED, 4, _build("prophet", {"gap": 0.0, "temperature": 1.0}, steps=4))
    assert r.expected_calls.value == 1.0 and np.count_nonzero(r.law.p) == 1
    assert r.metrics.kl.value == math.inf  # the commit is greedy at any T


def test_klass_has_no_history_at_its_first_call():
    """On a language of independent positions every marginal is constant, so with ``kl_steps = 1`` every
    confident position is ready from the second call on, never at the first (no earlier marginal)."""
    q = np.multiply.outer(np.multiply.outer([0.95, 0.05], [0.95, 0.05]), [0.95, 0.05])
    r = _build("klass", {"threshold": 0.9, "kl_steps": 1, "temperature": 0.0}, steps=3, L=3)
    assert history_exact(q, None, r).expected_calls.value == 2.0  # call 1: top one; call 2: the other two


def _counts(tokens, V, L):
    return np.bincount(np.ravel_multi_index(tokens.T, (V,) * L), minlength=V**L)


@pytest.mark.parametrize("name, options, steps", [
    ("klass", {"threshold": 0.5, "kl": 0.05, "temperature": 0.5}, 4),
    ("credit", {"threshold": 0.7, "temperature": 1.0}, None),
    ("info-gain", {"block_length": 2, "temperature": 1.0}, 4),
    ("prophet", {"gap": 1.0, "block_length": 2, "temperature": 0.7}, 4),
], ids=lambda x: str(x))
def test_sampler_follows_the_exact_law(name, options, steps):
    d = _build(name, options, steps=steps)
    ex = history_exact(PRUNED, 4, d, "dp")
    run = d.sample(OracleDenoiser(PRUNED, strict=False), 3000, 4, np.random.default_rng(5), batch_size=1000)
    assert_gof(_counts(run.tokens, 2, 4), ex.law.p.ravel(), d.label)
    assert run.path == f"{name}-generic"


def test_dinfer_sampler_follows_the_exact_law():
    d = _build("dinfer", {"run_threshold": 0.5, "threshold": 0.8, "temperature": 1.0})
    ex = decoder_exact(PRUNED, 4, d, "dp")
    run = d.sample(OracleDenoiser(PRUNED, strict=False), 3000, 4, np.random.default_rng(9), batch_size=1000)
    assert_gof(_counts(run.tokens, 2, 4), ex.law.p.ravel(), d.label)
    se = float(run.calls.std(ddof=1)) / np.sqrt(run.calls.size)
    assert se > 0 and within_z(float(run.calls.mean()), ex.expected_calls.value, se)
