"""calibrate's grid search without an assumed monotonicity, and the cases of issue 33 that the bisection got wrong.

Each expected value comes from an independent computation: the exact point of the setting named in
the issue (``point_metrics`` with the DP, not the search), an entropy summed over a brute-force joint
table, or the decoder's own refusal.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from numerics.languages.hmm import HMM
from numerics.languages.presets import load_language
from numerics.metrics import point_metrics
from tests.tolerances import RTOL_EXACT
from validation.calibrate import build_sampler, calibrate, family
from validation.cli import main
from validation.sweep import PointConfig


def run(*args):
    r = CliRunner().invoke(main, [*args, "--json"])

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return r.exit_code, json.loads(r.stdout, parse_constant=refuse)


def exact_point(spec: str, L: int, name: str, value: float, options=None):
    """(SER, KL, calls) of one family setting by the DP, outside the search."""
    s = build_sampler(family(name, options), PointConfig(spec, L, 1), value)
    m = point_metrics(load_language(spec), L, s, method="dp", only=("ser", "kl", "calls"))
    return m.ser.value, m.kl.value, m.calls.value


def test_threshold_finds_the_cheap_region_the_bisection_skipped():
    """2gram-pruned, L = 3, SER <= 0.1: gamma 0.23 meets at 2.0 calls (SER 0.078), 0.25 misses, 0.28 meets at
    2.39 calls; the old bisection answered 0.28125. The search answers <= 2.0 calls and says the metric was not
    monotone on its grid."""
    ser, _, calls = exact_point("2gram-pruned", 3, "threshold", 0.23)
    assert ser == pytest.approx(0.0779927, rel=1e-5) and calls == pytest.approx(2.0, rel=RTOL_EXACT)
    assert exact_point("2gram-pruned", 3, "threshold", 0.25)[0] > 0.1  # the non-monotone step
    code, out = run("calibrate", "--language", "2gram-pruned", "-L", "3", "--metric", "ser", "--target", "0.1",
                    "--sampler", "threshold")
    assert code == 0 and out["met"]
    s = out["setting"]
    assert s["parameter"] == "gamma" and s["gamma"] == s["value"]
    assert s["calls"]["value"] <= 2.0 * (1 + RTOL_EXACT) and s["metric"]["value"] <= 0.1
    assert exact_point("2gram-pruned", 3, "threshold", s["value"])[0] == pytest.approx(s["metric"]["value"],
                                                                                         rel=RTOL_EXACT)
    fam = out["families"][0]
    assert fam["monotone"] is False and fam["grid"]["kind"] == "uniform" and fam["grid"]["points"] == 65
    assert (fam["grid"]["low"], fam["grid"]["high"]) == (0.0, 1.0)


def test_fast_dllm_factor_is_met_where_the_dear_end_misses():
    """hmm-pruned, L = 3, KL <= 0.3: f = 2^-10 misses (the old search gave up there); f in about [2.86, 3.09]
    meets (f = 2.97: KL 0.2819 at 2.0 calls, by the DP)."""
    kl, _ = exact_point("hmm-pruned", 3, "fast-dllm-factor", 2.97)[1:]
    assert kl == pytest.approx(0.2819, abs=5e-5)
    assert exact_point("hmm-pruned", 3, "fast-dllm-factor", 2.0**-10)[1] > 0.3
    c = calibrate("hmm-pruned", 3, "kl", 0.3, ["fast-dllm-factor"])
    assert c.met and c.cheapest.parameter == "factor" and 2.86 <= c.cheapest.value <= 3.09
    assert c.cheapest.metric.value <= 0.3 and c.searches[0].monotone is False


@pytest.fixture(scope="module")
def copy_pairs(tmp_path_factory):
    """Pairs of copies of a fair bit: x_1 = x_2, x_3 = x_4, ... (an HMM with a first and a second state per bit)."""
    T = np.zeros((4, 4))
    T[0, 1] = T[2, 3] = 1.0
    T[1, [0, 2]] = T[3, [0, 2]] = 0.5
    E = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    path = tmp_path_factory.mktemp("lang") / "copy-pairs.npz"
    HMM(np.array([0.5, 0.0, 0.5, 0.0]), T, E).save(path)
    return str(path)


def test_a_family_that_cannot_run_does_not_take_the_others_down(copy_pairs):
    code, out = run("calibrate", "--language", copy_pairs, "-L", "8", "--metric", "ser", "--target", "0.1",
                    "--sampler", "llada,llada-b32")
    assert code == 0 and out["met"] and out["setting"]["family"] == "llada"
    llada, b32 = out["families"]
    assert llada["applicable"] and llada["cheapest"] is not None
    assert not b32["applicable"] and "does not divide" in b32["error"] and b32["settings"] == []
    # the answer's steps are the label's steps (no per-block value), and N - 1 steps miss (by the DP)
    N = out["setting"]["steps"]
    assert f"steps={N}" in out["setting"]["label"] and out["setting"]["value"] == N
    assert exact_point(copy_pairs, 8, "llada", N)[0] <= 0.1 < exact_point(copy_pairs, 8, "llada", N - 1)[0]
    # the one family asked for cannot run: a usage error (exit 2), as docs/cli.md says, with the reason
    code, out = run("calibrate", "--language", copy_pairs, "-L", "12", "--metric", "ser", "--target", "0.1",
                    "--sampler", "llada-b8")
    assert code == 2 and "does not divide" in out["error"]["message"]


def test_a_family_no_method_can_compute_is_reported_beside_the_others():
    """--method dp: llada's exact law at L = 4, V = 8 is beyond the DP's limit; threshold's answer stands."""
    c = calibrate("2gram-pruned", 4, "ser", 0.1, ["threshold", "llada", "llada2:steps"], method="dp", grid=9,
                  refine=1)
    th, ll, l2 = c.searches
    assert c.met and c.cheapest.family == "threshold" and th.error is None
    assert ll.settings == () and "beyond the limit" in ll.error and l2.settings == ()
    assert family("llada2").build(PointConfig("2gram-pruned", 4, 1), 0.5).n_steps == 4  # its threshold at N = L


def test_any_block_length_and_fast_dllm_with_blocks():
    """llada-b16 and --block-length on fast-dllm (refused or impossible before); the JSON names the knob."""
    code, out = run("calibrate", "--language", "2gram-pruned", "-L", "4", "--metric", "ser", "--target", "0.2",
                    "--sampler", "fast-dllm,llada-b2", "--block-length", "2", "--grid", "9", "--refine", "1")
    assert code == 0, out
    fd, ll = out["families"]
    assert fd["parameter"] == "threshold" and fd["grid"]["options"] == {"block_length": 2}
    assert all(s["parameter"] == "threshold" and "gamma" not in s for s in fd["settings"])
    assert ll["parameter"] == "steps" and ll["grid"]["unit"] == 2 and all(s["steps"] % 2 == 0 for s in ll["settings"])
    assert family("llada-b16").space(64, 8, 4096).unit == 4


def hmm_entropy(lang: HMM, L: int) -> float:
    """H(X_1..X_L) by summing the HMM's forward recursion over every sequence (brute force, independent)."""
    H = 0.0
    for x in itertools.product(range(lang.vocab_size), repeat=L):
        a = lang.initial * lang.emission[:, x[0]]
        for t in x[1:]:
            a = (a @ lang.transition) * lang.emission[:, t]
        p = a.sum()
        H -= p * math.log(p) if p > 0 else 0.0
    return H


def test_relative_ter_uses_the_exact_entropy_of_the_joint_table():
    """A general HMM has no chain-rule entropy; at L = 3 its joint table gives H(q) exactly (as exact reports
    TER(q)), so --relative is answered, the target being (1 + t) TER(q) of the brute-force entropy."""
    lang = load_language("hmm-pruned")
    c = calibrate("hmm-pruned", 3, "ter", 0.2, ["eb"], relative=True, grid=5, refine=0)
    assert c.target == pytest.approx(1.2 * math.exp(hmm_entropy(lang, 3) / 3), rel=RTOL_EXACT)
    assert all(s.quantity == "ter" for s in c.searches[0].settings)


def test_steps_needed_takes_topk_blocks_and_shares_calibrates_options():
    code, out = run("steps-needed", "--language", "2gram-pruned", "-L", "6", "--metric", "ser", "--target", "0.2",
                    "--sampler", "topk", "--block-length", "3")
    assert code == 0 and out["met"] and out["n_steps"] % 2 == 0 and out["options"] == {"block_length": 3}
    N = out["n_steps"]
    assert out["at_n_minus_1"]["n_steps"] == N - 2 and not out["at_n_minus_1"]["meets"]
    from validation.commands.calibrate import calibrate_command
    from validation.commands.steps_needed import steps_needed_cmd

    def params(cmd):
        return {p.name: (p.default, p.help) for p in cmd.params}

    a, b = params(calibrate_command), params(steps_needed_cmd)
    for name in ("method", "samples", "confidence", "max_steps", "seed", "tie_seed", "grid", "refine",
                 "block_length", "temperature"):
        assert a[name] == b[name], name


def test_temperature_near_zero_is_computed_in_log_space():
    """LLaDA with one step at T = 0.002 on 2gram-pruned, L = 3: every position is drawn from its tempered marginal
    r_j = q_j^(1/T) / sum, most of whose entries underflow in linear space (the old DP raised). By hand in log
    space, log p(x) = sum_j log r_j(x_j): the DP's KL and SER equal it, finite; steps-needed answers."""
    from scipy.special import logsumexp

    from numerics.exact.decoders import decoder_exact
    from numerics.exact.joint_table import joint_table
    from numerics.sampling.decoders import make_decoder

    T, L = 0.002, 3
    lang = load_language("2gram-pruned")
    q = joint_table(lang, L)
    logr = []
    for j in range(L):
        with np.errstate(divide="ignore"):  # a token never at position j: log 0 = -inf, weight 0
            z = np.log(q.sum(axis=tuple(i for i in range(L) if i != j))) / T
        logr.append(z - logsumexp(z))
    log_p = logr[0][:, None, None] + logr[1][None, :, None] + logr[2][None, None, :]
    on = q > 0
    kl = float(np.sum(q[on] * (np.log(q[on]) - log_p[on])))
    with np.errstate(under="ignore"):
        ser = float(np.exp(log_p[~on]).sum())
    r = decoder_exact(lang, L, make_decoder("llada", steps=1, temperature=T), "dp")
    assert np.any(r.law.p[on] == 0)  # the linear law underflows on the support
    assert math.isfinite(r.metrics.kl.value) and r.metrics.kl.value == pytest.approx(kl, rel=RTOL_EXACT)
    assert r.metrics.ser.value == pytest.approx(ser, rel=RTOL_EXACT, abs=1e-300)
    code, out = run("steps-needed", "--language", "2gram-pruned", "-L", "3", "--metric", "kl", "--target", "2000",
                    "--sampler", "llada", "--temperature", "0.002")
    assert code == 0 and out["met"] and math.isfinite(out["at_n"]["estimate"]["value"])
