"""The runtimes' decoders (numerics.sampling.runtime_decoders): Dream's ``diffusion_generate``.

The shared table (tests/decoder_cases.py) runs every ``dream`` row through the DP-against-enumeration
and point-metrics tests; here:

* ``--alg origin`` is the paper's random-order sampler on Dream's schedule ``u_k = 1 - t_k``
  (``u_N = 1``): the same exact law as :func:`numerics.exact.enumerate.enumerate_output_law`.
* The confidence algorithms' counts by hand (a step may reveal nothing; the calls are ``N``).
* ``alg_temp``: the Plackett-Luce law of the chosen set by hand; a vanishing ``alg_temp`` is the top-``k`` rule.
* A path-deterministic Dream (margin / entropy scores): ``p(x)`` replayed along each ``x`` is the exact law.
* The generic sampler against the exact law (chi-squared, tests/gof.py budget: 2 assertions), origin's
  Bernoulli selection and ``alg_temp``'s Gumbel top-``k`` on draw-dependent scores.
* The command line: exact, sweep, steps-needed, calibrate; bad input named, exit 2.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from numerics.exact.decoders import decoder_exact
from numerics.exact.enumerate import enumerate_output_law
from numerics.exact.joint_table import all_sequences
from numerics.languages.hmm import NGram
from numerics.sampling.block_decoder import FastDllm, step_rows
from numerics.sampling.decoders import make_decoder
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.runtime_decoders import dilated_rounds, dream_counts, dream_fractions, dream_times
from numerics.schedules import from_u
from tests.bad_inputs._helpers import invoke, refused
from tests.gof import assert_gof
from tests.strict_json import strict_json
from tests.tolerances import ATOL_PROB, RTOL_EXACT

PRUNED = NGram(2, [0.6, 0.4], [[0.7, 0.3], [0.0, 1.0]])  # x = 1 0 is impossible: SER > 0 for parallel decoders
FULL3 = NGram(2, [0.5, 0.3, 0.2], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])


def _dream_schedule(N: int):
    """Dream's origin as the paper's schedule: P(still masked after step j) = t_j / t_0 = t_j, 0 after the last."""
    u = 1.0 - dream_times(N)
    u[-1] = 1.0
    return from_u(u, "dream")


@pytest.mark.parametrize("language, L", [(PRUNED, 4), (FULL3, 3)])
@pytest.mark.parametrize("N", [1, 2, 3, 5])
def test_dream_origin_is_the_paper_sampler_on_dreams_schedule(language, L, N):
    """Each masked position is revealed at step ``k`` with probability ``1 - t_{k+1}/t_k`` independently of
    the others and of the draws, so its reveal step is i.i.d. with ``P(after step j) = t_j``: the paper's
    random-order sampler on ``u_j = 1 - t_j``; the values are drawn from the current marginals (T = 1)."""
    got = decoder_exact(language, L, make_decoder("dream", steps=N), "dp")
    ref = enumerate_output_law(language, L, _dream_schedule(N), undefined="uniform")
    np.testing.assert_allclose(got.law.p, ref.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert got.expected_calls.value == N  # Dream calls the network at every step, revealing or not


def test_dream_counts_by_hand_a_step_may_reveal_nothing():
    """``t = (1, .75025, .5005, .25075, .001)`` at ``N = 4``: ``f = (.24975, .33289, .49900, 1)``; from ``m = 4``
    the counts are ``floor(4 f_0) = 0``, ``floor(4 f_1) = 1``, ``floor(3 f_2) = 1``, the rest ``2``."""
    np.testing.assert_allclose(dream_times(4), [1.0, 0.75025, 0.5005, 0.25075, 0.001], rtol=1e-12)
    np.testing.assert_allclose(dream_fractions(4)[:3], [0.24975, 1 - 0.5005 / 0.75025, 1 - 0.25075 / 0.5005],
                               rtol=1e-12)
    np.testing.assert_array_equal(dream_counts(4, 4), [0, 1, 1, 2])
    np.testing.assert_array_equal(dream_counts(4, 2), [1, 3])  # floor(4 * 0.4995) = 1
    for L, N in [(64, 64), (256, 7), (5, 100)]:
        assert dream_counts(L, N).sum() == L
    d = make_decoder("dream", steps=4, alg="entropy", temperature=0)
    res = decoder_exact(PRUNED, 4, d, "dp")
    assert res.expected_calls.value == 4
    run = d.sample(OracleDenoiser(PRUNED, strict=False), 50, 4, np.random.default_rng(0))
    assert np.all(run.calls == 4) and np.all(run.reveal_steps >= 2)  # nothing revealed at the first call


def test_alg_temp_selection_law_is_plackett_luce_by_hand():
    d = make_decoder("dream", steps=2, alg="margin", alg_temp=0.5)
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.5, 0.5]])
    rows = step_rows(probs, 1.0)
    y = np.zeros(3, dtype=np.int64)
    s = np.array([0.8, 0.2, 0.0]) / 0.5  # margins / alg_temp
    w = np.exp(s) / np.exp(s).sum()
    law = {tuple(D): p for D, p in d.selection_law(rows, y, np.arange(3), 0, None)}  # k = floor(3 * .4995) = 1
    assert set(law) == {(0,), (1,), (2,)}
    np.testing.assert_allclose([law[(j,)] for j in range(3)], w, rtol=1e-9)
    law2 = {tuple(D): p for D, p in make_decoder("dream", steps=1, alg="margin", alg_temp=0.5)
            .selection_law(rows, y, np.arange(3), 0, None)}
    assert law2 == {(0, 1, 2): pytest.approx(1.0, rel=1e-12)}  # the last step takes every position
    d3 = make_decoder("dream", steps=3, alg="margin", alg_temp=0.5)  # f_0 = 1 - .667/1 = .333: k = floor(3 f) = 0 or 1
    k = math.floor(3 * dream_fractions(3)[0])
    assert all(len(D) == k for D, _ in d3.selection_law(rows, y, np.arange(3), 0, None))
    five = make_decoder("dream", steps=2, alg="margin", alg_temp=0.5)  # k = floor(5 * .4995) = 2 of 5
    rows5 = step_rows(np.array([[0.9, 0.1], [0.6, 0.4], [0.5, 0.5], [0.7, 0.3], [0.55, 0.45]]), 1.0)
    w5 = np.exp(np.array([0.8, 0.2, 0.0, 0.4, 0.1]) / 0.5)
    law5 = {tuple(D): p for D, p in five.selection_law(rows5, np.zeros(5, dtype=np.int64), np.arange(5), 0, None)}
    W = w5.sum()
    assert len(law5) == 10 and sum(law5.values()) == pytest.approx(1.0, rel=1e-12)
    for a, b in [(0, 1), (2, 4)]:  # first a then b, or first b then a
        pair = w5[a] / W * w5[b] / (W - w5[a]) + w5[b] / W * w5[a] / (W - w5[b])
        assert law5[(a, b)] == pytest.approx(pair, rel=1e-9)


def test_vanishing_alg_temp_is_the_top_k_rule():
    """At ``alg_temp -> 0`` the softmax over scores concentrates on the top ones: the law tends to
    ``alg_temp = 0``'s (scores here differ by >= 0.01 on the grid where it matters)."""
    for alg in ("maskgit-plus", "margin", "entropy"):
        a = decoder_exact(PRUNED, 4, make_decoder("dream", steps=3, alg=alg, alg_temp=1e-4), "dp").law.p
        b = decoder_exact(PRUNED, 4, make_decoder("dream", steps=3, alg=alg, tie_seed=None), "dp").law.p
        hot = decoder_exact(PRUNED, 4, make_decoder("dream", steps=3, alg=alg, alg_temp=1.0), "dp").law.p
        assert np.max(np.abs(hot - b)) > 1e-3, alg  # alg_temp has an effect
        np.testing.assert_allclose(a, b, atol=1e-9, err_msg=alg)


@pytest.mark.parametrize("alg, T", [("margin", 0.5), ("entropy", 1.0), ("entropy", 0.0)])
def test_path_log_prob_replays_the_exact_law(alg, T):
    """Scores that do not depend on the draws: one reveal path per output, ``p(x)`` a product along it."""
    d = make_decoder("dream", steps=3, alg=alg, temperature=T)
    assert d.path_deterministic
    law = decoder_exact(PRUNED, 4, d, "dp").law.p.ravel()
    x = all_sequences(2, 4)
    with np.errstate(under="ignore"):
        replay = np.exp(d.path_log_prob(OracleDenoiser(PRUNED, strict=False), x).log_p)
    np.testing.assert_allclose(replay, law, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert not make_decoder("dream", steps=3, alg=alg, alg_temp=0.3).path_deterministic


def test_dream_runs_on_the_generic_path_only():
    d = make_decoder("dream", steps=2, alg="entropy")
    den = OracleDenoiser(PRUNED, strict=False)
    assert not d.compiled(4) and d.sample(den, 5, 4, np.random.default_rng(0)).path == "dream-generic"
    with pytest.raises(ValueError, match="compiled path"):
        d.sample(den, 5, 4, np.random.default_rng(0), path="oracle")


def _counts(tokens, V, L):
    return np.bincount(np.ravel_multi_index(tokens.T, (V,) * L), minlength=V**L)


@pytest.mark.parametrize("options", [{"alg": "origin"}, {"alg": "maskgit-plus", "alg_temp": 0.5}], ids=str)
def test_sampler_follows_the_exact_law(options):
    d = make_decoder("dream", steps=3, **options)
    p = decoder_exact(PRUNED, 4, d, "dp").law.p
    run = d.sample(OracleDenoiser(PRUNED, strict=False), 4000, 4, np.random.default_rng(7), batch_size=1000)
    assert_gof(_counts(run.tokens, 2, 4), p.ravel(), d.label)
    assert np.all(run.calls == 3)


# ----- the command line ------------------------------------------------------------------------------

@pytest.fixture
def pruned_file(tmp_path):
    path = tmp_path / "pruned.npz"
    np.savez(path, order=np.int64(2), initial=np.array([0.6, 0.4]), conditional=np.array([[0.7, 0.3], [0.0, 1.0]]))
    return str(path)


def test_exact_and_sweep_rows_equal_numerics(pruned_file, tmp_path):
    r = invoke(["exact", "--language", pruned_file, "-L", "4", "-N", "3", "--sampler", "dream", "--alg", "maskgit-plus",
                "--alg-temp", "0.5", "--method", "enumerate", "--json"])
    assert r.exit_code == 0, r.output
    row = strict_json(r.stdout)
    ref = decoder_exact(PRUNED, 4, make_decoder("dream", steps=3, alg="maskgit-plus", alg_temp=0.5), "dp")
    assert row["sampler_parameters"]["alg"] == "maskgit-plus" and row["sampler_parameters"]["alg_temp"] == 0.5
    assert row["ser"]["value"] == pytest.approx(ref.metrics.ser.value, rel=RTOL_EXACT)
    assert row["calls"]["value"] == 3
    out = tmp_path / "t.jsonl"
    r = invoke(["sweep", "--languages", pruned_file, "--lengths", "4", "-N", "2,3", "--sampler", "dream",
                "--alg", "margin,entropy", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((x["config"]["alg"], x["config"]["steps"]) for x in rows) == [
        ("entropy", 2), ("entropy", 3), ("margin", 2), ("margin", 3)]
    for x in rows:
        want = decoder_exact(PRUNED, 4, make_decoder("dream", steps=x["config"]["steps"], alg=x["config"]["alg"]), "dp")
        assert x["result"]["ser"]["value"] == pytest.approx(want.metrics.ser.value, rel=RTOL_EXACT, abs=1e-15)


def test_steps_needed_and_calibrate(pruned_file):
    r = invoke(["steps-needed", "--language", pruned_file, "-L", "4", "--metric", "ser", "--target", "0.1",
                "--sampler", "dream", "--alg", "entropy", "--json"])
    assert r.exit_code == 0, r.output
    row = strict_json(r.stdout)
    ser = {N: decoder_exact(PRUNED, 4, make_decoder("dream", steps=N, alg="entropy"), "dp").metrics.ser.value
           for N in (2, 3)}
    assert ser[2] > 0.1 >= ser[3] and row["n_steps"] == 3
    r = invoke(["calibrate", "--language", pruned_file, "-L", "4", "--metric", "ser", "--target", "0.1",
                "--sampler", "dream", "--alg", "entropy", "--json"])  # a family's options apply as in exact
    assert r.exit_code == 0, r.output
    assert "alg=entropy" in r.stdout and "steps=3" in r.stdout


@pytest.mark.parametrize("extra, pattern", [
    (["--alg", "foo"], r"'foo' is not one of 'origin', 'maskgit-plus', 'margin', 'entropy'"),
    (["--alg", "margin", "--alg-temp", "-1"], r"alg_temp must be a finite number >= 0"),
    (["--alg-temp", "0.5"], r"alg_temp draws positions by their scores: it needs a confidence algorithm"),
    (["--block-length", "2"], r"the dream decoder does not take block_length"),
    (["--threshold", "0.9"], r"the dream decoder does not take threshold"),
])
def test_bad_dream_input_is_named_exit_2(extra, pattern):
    error = refused(["exact", "--language", "2gram-pruned", "-L", "4", "-N", "2", "--sampler", "dream", *extra],
                    pattern)
    assert error["exit_code"] == 2


# ----- DUS -------------------------------------------------------------------------------------------

def test_dus_plan_by_hand():
    """``B = 8``: round 1 reveals offsets {0, 4}, round 2 {2, 6}, round 3 {1, 3, 5, 7}; three calls a block."""
    np.testing.assert_array_equal(dilated_rounds(8), [1, 3, 2, 3, 1, 3, 2, 3])
    np.testing.assert_array_equal(dilated_rounds(2), [1, 1])
    d = make_decoder("dus", block_length=8)
    run = d.sample(OracleDenoiser(PRUNED, strict=False), 5, 16, np.random.default_rng(0))
    plan = np.array([1, 3, 2, 3, 1, 3, 2, 3])
    np.testing.assert_array_equal(run.reveal_steps, np.tile(np.concatenate([plan, plan + 3]), (5, 1)))
    assert np.all(run.calls == 6)  # (L / B) log2 B
    assert decoder_exact(PRUNED, 4, make_decoder("dus", block_length=4), "dp").expected_calls.value == \
        pytest.approx(2.0, rel=RTOL_EXACT)


@pytest.mark.parametrize("T", [1.0, 0.5, 0.0])
def test_dus_with_blocks_of_two_is_a_block_decoder_revealing_each_pair_at_once(T):
    """At ``B = 2`` DUS's one round takes both offsets (multiples of ``B / 2 = 1``): each pair is revealed in
    one call with independent draws given the earlier pairs. LLaDA with ``B = 2`` and one step a block
    (``N = L / 2``, count 2 = the whole block) does the same whatever its scores: the same law, and on the
    same stream (draws keyed by sequence, call, position) the same samples."""
    dus = make_decoder("dus", block_length=2, temperature=T)
    llada = make_decoder("llada", steps=2, block_length=2, temperature=T)
    a, b = decoder_exact(PRUNED, 4, dus, "dp"), decoder_exact(PRUNED, 4, llada, "enumerate")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    den = OracleDenoiser(PRUNED, strict=False)
    ra = dus.sample(den, 200, 4, np.random.default_rng(3))
    rb = llada.sample(den, 200, 4, np.random.default_rng(3), path="generic")
    np.testing.assert_array_equal(ra.tokens, rb.tokens)
    np.testing.assert_array_equal(ra.reveal_steps, rb.reveal_steps)


def test_dus_sampler_follows_the_exact_law():
    d = make_decoder("dus", block_length=4, temperature=0.8)
    p = decoder_exact(PRUNED, 4, d, "dp").law.p
    run = d.sample(OracleDenoiser(PRUNED, strict=False), 4000, 4, np.random.default_rng(5), batch_size=1000)
    assert_gof(_counts(run.tokens, 2, 4), p.ravel(), d.label)
    assert d.path_deterministic
    x = all_sequences(2, 4)
    with np.errstate(under="ignore"):
        replay = np.exp(d.path_log_prob(OracleDenoiser(PRUNED, strict=False), x).log_p)
    np.testing.assert_allclose(replay, p.ravel(), rtol=RTOL_EXACT, atol=ATOL_PROB)


@pytest.mark.parametrize("extra, pattern", [
    (["--block-length", "3", "-L", "6"], r"power of 2 >= 2, got B = 3"),
    (["-L", "6"], r"power of 2 >= 2, got B = 6 \(B = L = 6: give --block-length\)"),
    (["--block-length", "1"], r"power of 2 >= 2, got B = 1"),
    (["--block-length", "2", "--alg", "entropy"], r"the dus decoder does not take alg"),
])
def test_bad_dus_input_is_named_exit_2(extra, pattern):
    args = ["exact", "--language", "2gram-pruned", "-N", "2", "--sampler", "dus"]
    if "-L" not in extra:
        args += ["-L", "4"]
    error = refused([*args, *extra], pattern)
    assert error["exit_code"] == 2


def test_dus_exact_cli(pruned_file):
    r = invoke(["exact", "--language", pruned_file, "-L", "4", "-N", "1", "--sampler", "dus", "--block-length", "2",
                "--method", "dp", "--json"])
    assert r.exit_code == 0, r.output
    row = strict_json(r.stdout)
    ref = decoder_exact(PRUNED, 4, make_decoder("dus", block_length=2), "enumerate")
    assert row["ser"]["value"] == pytest.approx(ref.metrics.ser.value, rel=RTOL_EXACT)
    assert row["calls"]["value"] == pytest.approx(2.0, rel=RTOL_EXACT)


# ----- Fast-dLLM v2 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("T", [1.0, 0.0])
def test_fast_dllm_v2_is_fast_dllm_on_its_sub_blocks(T):
    """Sub-blocks of ``b`` decoded left to right inside blocks of ``B``, the threshold rule inside the current
    one: with the oracle (no cache) the candidates are the current sub-block's masked positions, which is
    ``fast-dllm`` with blocks of ``b``: the same law and, on the compiled and generic paths, the same samples."""
    v2 = make_decoder("fast-dllm-v2", block_length=4, sub_block=2, threshold=0.6, temperature=T)
    v1 = FastDllm(threshold=0.6, block_length=2, temperature=T)
    a, b = decoder_exact(PRUNED, 4, v2, "dp"), decoder_exact(PRUNED, 4, v1, "enumerate")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    assert a.expected_calls.value == pytest.approx(b.expected_calls.value, rel=RTOL_EXACT)
    lang = NGram(2, [0.5, 0.3, 0.2], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.0, 0.3, 0.7]])
    den = OracleDenoiser(lang, strict=False)
    v2, v1 = (make_decoder("fast-dllm-v2", threshold=0.7, temperature=T),  # B = 32, b = 8 (the defaults)
              FastDllm(threshold=0.7, block_length=8, temperature=T))
    for path in ("generic", "auto"):
        ra = v2.sample(den, 40, 64, np.random.default_rng(2), path=path)
        rb = v1.sample(den, 40, 64, np.random.default_rng(2), path=path)
        np.testing.assert_array_equal(ra.tokens, rb.tokens)
        np.testing.assert_array_equal(ra.calls, rb.calls)
    assert ra.path == "fast-dllm-oracle-ngram"  # the compiled path runs it
    assert v2.parameters()["sub_block"] == 8 and "sub_block" not in v1.parameters()


@pytest.mark.parametrize("extra, pattern", [
    (["--sub-block", "3"], r"the sub-block 3 does not divide the block length B = 4"),
    (["--sub-block", "2", "--threshold", "1.5"], r"threshold tau must be in \(0, 1\]"),
    (["--sub-block", "2", "--threshold", "0"], r"threshold tau must be in \(0, 1\]"),
    (["--sub-block", "0"], r"sub_block must be an integer >= 1"),
])
def test_bad_fast_dllm_v2_input_is_named_exit_2(extra, pattern):
    error = refused(["exact", "--language", "2gram-pruned", "-L", "4", "-N", "1", "--sampler", "fast-dllm-v2",
                     "--block-length", "4", *extra], pattern)
    assert error["exit_code"] == 2


def test_sub_block_is_an_option_of_fast_dllm_v2_only():
    error = refused(["exact", "--language", "2gram-pruned", "-L", "4", "-N", "1", "--sampler", "fast-dllm",
                     "--threshold", "0.5", "--sub-block", "2"], r"the fast-dllm decoder does not take sub_block")
    assert error["exit_code"] == 2


# ----- SDAR ----------------------------------------------------------------------------------------------

def test_sdar_is_llada_with_its_floor_and_static_at_threshold_one():
    """``low_confidence_dynamic`` (reveal every draw of confidence > tau if at least ``k`` are, else the top
    ``k``) is LLaDA2.0's floor with SDAR's defaults; at ``tau = 1`` no confidence exceeds it, so the count is
    the scheduled ``k``: ``low_confidence_static``, LLaDA's fixed counts (the same law and samples)."""
    d = make_decoder("sdar", steps=4)
    assert (d.block_length, d.threshold, d.remasking, d.temperature) == (4, 0.85, "low-confidence", 1.0)
    assert d == make_decoder("llada2", steps=4, block_length=4, threshold=0.85)
    static = make_decoder("sdar", steps=4, threshold=1.0, block_length=2)
    llada = make_decoder("llada", steps=4, block_length=2)
    a, b = decoder_exact(PRUNED, 4, static, "dp"), decoder_exact(PRUNED, 4, llada, "enumerate")
    np.testing.assert_allclose(a.law.p, b.law.p, rtol=RTOL_EXACT, atol=ATOL_PROB)
    dyn = decoder_exact(PRUNED, 4, make_decoder("sdar", steps=4, threshold=0.6, block_length=2), "dp")
    assert dyn.expected_calls.value < a.expected_calls.value == 4  # the floor acts here (it saves calls)
    den = OracleDenoiser(PRUNED, strict=False)
    for path in ("generic", "auto"):
        ra = static.sample(den, 200, 4, np.random.default_rng(4), path=path)
        rb = llada.sample(den, 200, 4, np.random.default_rng(4), path=path)
        np.testing.assert_array_equal(ra.tokens, rb.tokens)


@pytest.mark.parametrize("extra, pattern", [
    (["--threshold", "0"], r"threshold tau must be in \(0, 1\]"),
    (["--threshold", "1.2"], r"threshold tau must be in \(0, 1\]"),
    (["--block-length", "3"], r"block_length 3 does not divide the length L = 4"),
    (["--remasking", "random"], r"the sdar decoder does not take remasking"),
])
def test_bad_sdar_input_is_named_exit_2(extra, pattern):
    error = refused(["exact", "--language", "2gram-pruned", "-L", "4", "-N", "4", "--sampler", "sdar", *extra],
                    pattern)
    assert error["exit_code"] == 2


def test_dus_compiled_equals_generic_sample_by_sample():
    """The kernel's ``plan`` score (equal scores ranked by the plan's priority), on a 2-gram with zeros at
    ``L = 32`` and blocks of 8 and 32 (the shared table's rows run it at ``L = 12`` on every language kind)."""
    den = OracleDenoiser(NGram(2, [0.5, 0.3, 0.2], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.0, 0.3, 0.7]]),
                         strict=False)
    for B, T in [(8, 1.0), (32, 0.0), (2, 0.7)]:
        d = make_decoder("dus", block_length=B, temperature=T)
        fast = d.sample(den, 60, 32, np.random.default_rng(1), batch_size=25)
        slow = d.sample(den, 60, 32, np.random.default_rng(1), batch_size=25, path="generic")
        assert fast.path == "dus-oracle-ngram" and slow.path == "dus-generic"
        np.testing.assert_array_equal(fast.tokens, slow.tokens)
        np.testing.assert_array_equal(fast.reveal_steps, slow.reveal_steps)
        np.testing.assert_array_equal(fast.calls, slow.calls)
