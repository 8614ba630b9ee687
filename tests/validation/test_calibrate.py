"""`mdm-theory calibrate`, `optimal-decoder` and `--schedule optimal` (issue 21)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from numerics.estimate import Estimate
from numerics.exact.interval import interval_ser
from numerics.exact.optimal_decoder import optimal_decoder
from numerics.exact.schedule_opt import (
    block_error,
    information_curve,
    optimal_blocks,
    optimal_schedule,
)
from numerics.languages.presets import load_language
from numerics.schedules import linear
from tests.tolerances import ATOL_PROB, RTOL_EXACT
from validation.calibrate import _status, calibrate, pareto_front
from validation.cli import main


def run(*args):
    r = CliRunner().invoke(main, [*args, "--json"])

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return r.exit_code, json.loads(r.stdout, parse_constant=refuse)


def test_random_family_answer_is_the_first_n_of_an_independent_grid():
    """Interval language l = 3, L = 6, SER <= 0.3: the search's N is the first N of the closed-form SER grid."""
    c = calibrate("interval-l3", 6, "ser", 0.3, ["random"])
    grid = [interval_ser(linear(n), 6, 3).probability for n in range(1, 200)]
    first = 1 + next(i for i, v in enumerate(grid) if v <= 0.3)
    assert c.met and c.cheapest.value == first
    assert grid[first - 2] > 0.3  # N - 1 misses
    assert c.cheapest.calls.value == pytest.approx(linear(first).expected_nfe(6), rel=RTOL_EXACT)
    assert len(c.searches[0].settings) < first  # bisection, not a grid


def test_front_is_non_dominated_and_cheapest_meets():
    c = calibrate("interval-l3", 6, "ser", 0.1, ["random", "topk"])
    assert c.met and c.cheapest.family == "topk" and c.cheapest.value == 4 and c.cheapest.calls.value == 4
    every = [s for fs in c.searches for s in fs.settings]
    for s in c.front:
        assert not any(o.calls.value < s.calls.value and o.metric.value < s.metric.value for o in every)
    calls = [s.calls.value for s in c.front]
    assert calls == sorted(calls)
    # the optimal decoder's floor at the cheapest setting's calls is at most its SER (no sampler beats it)
    floor = optimal_decoder(load_language("interval-l3"), 6, 4, "ser").value.value
    assert floor <= c.cheapest.metric.value


def test_pareto_front_by_hand():
    from validation.calibrate import Setting

    def s(calls, m):
        e = Estimate(m, 0.0, "exact")
        return Setting("x", "steps", calls, "x", Estimate(calls, 0.0, "exact"), e, "ser", "misses")

    front = pareto_front([s(1, 0.9), s(2, 0.95), s(3, 0.5), s(3, 0.4), s(5, 0.4), s(6, 0.1)])
    assert [(f.calls.value, f.metric.value) for f in front] == [(1, 0.9), (3, 0.4), (6, 0.1)]


def test_monte_carlo_meets_only_by_the_upper_end():
    mc = lambda hi: Estimate(0.05, 0.02, "mc", 1000, 0.02, hi, 0.9)
    assert _status(mc(0.12), 0.1) == "may meet"
    assert _status(mc(0.09), 0.1) == "meets"
    assert _status(Estimate(0.2, 0.02, "mc", 1000, 0.15, 0.25, 0.9), 0.1) == "misses"
    assert _status(Estimate(0.1, 0.0, "dp"), 0.1) == "meets"


def test_cli_calibrate_json_and_not_met():
    code, out = run("calibrate", "--language", "interval-l3", "-L", "6", "--metric", "ser", "--target", "0.1",
                    "--sampler", "random,topk")
    assert code == 0 and out["met"] is True and out["setting"]["label"].startswith("topk")
    assert out["calls"]["value"] == 4 and out["calls"]["exact"] and out["front"]
    code, out = run("calibrate", "--language", "interval-l3", "-L", "6", "--metric", "ser", "--target", "0",
                    "--max-steps", "4")
    assert code == 0 and out["met"] is False and out["setting"] is None and out["best"]["value"] == 4


@pytest.mark.parametrize("args, needle", [
    (("--metric", "ser", "--target", "1.5"), "outside [0, 1]"),
    (("--metric", "ter", "--target", "1.0"), "floor of every sampler"),
    (("--metric", "ser", "--target", "0.1", "--sampler", " , "), "at least one sampler"),
    (("--metric", "ser", "--target", "0.1", "--sampler", "bogus"), "unknown sampler family"),
])
def test_cli_calibrate_bad_input(args, needle):
    code, out = run("calibrate", "--language", "interval-l3", "-L", "6", *args)
    assert code == 2 and needle in out["error"]["message"]


def test_cli_optimal_decoder():
    code, out = run("optimal-decoder", "--language", "interval-l3", "-L", "6", "--calls", "2", "--metric", "ser")
    assert code == 0 and out["metric"] == "ser" and out["value"]["value"] == pytest.approx(0.75, rel=RTOL_EXACT)
    assert out["policy"][0]["revealed"] == {} and out["policy"][0]["calls_left"] == 2
    code, out = run("optimal-decoder", "--language", "interval", "-L", "8", "--calls", "3", "--metric", "kl")
    assert code == 2 and "state space" in out["error"]["message"]


def test_optimal_schedule_is_the_dp_and_refused_without_a_curve():
    lang = load_language("2gram")
    for N in (2, 5, 9):
        sched = optimal_schedule(lang, 12, N)
        sizes = np.diff(np.rint(sched.u * 12).astype(int))
        curve = information_curve(lang, 12)
        assert block_error(curve, sizes).total.value == pytest.approx(optimal_blocks(curve, N).error(N).value,
                                                                      rel=RTOL_EXACT)
    np.testing.assert_allclose(optimal_schedule(lang, 12, 20).u, linear(20).u, rtol=RTOL_EXACT, atol=ATOL_PROB)
    code, out = run("exact", "--language", "hmm", "-L", "64", "-N", "4", "--schedule", "optimal")
    assert code == 2 and "information curve" in out["error"]["message"]
    code, out = run("steps-needed", "--language", "2gram", "-L", "16", "--metric", "kl", "--target", "1",
                    "--schedule", "optimal")
    assert code == 0 and out["met"] and out["schedule"] == "optimal"


def test_steps_needed_for_every_sampler():
    code, out = run("steps-needed", "--language", "interval-l3", "-L", "6", "--metric", "ser", "--target", "0.1",
                    "--sampler", "topk")
    assert code == 0 and out["n_steps"] == 4 and out["at_n_minus_1"]["n_steps"] == 3
    code, out = run("steps-needed", "--language", "interval-l3", "-L", "6", "--metric", "ser", "--target", "0.1",
                    "--sampler", "entropy-sum")
    assert code == 0 and out["met"] and out["n_steps"] is None and out["gamma"] is not None


@pytest.mark.parametrize("sampler_name", ["random", "threshold"])
def test_point_metrics_only_gives_the_full_points_numbers(sampler_name):
    """point_metrics(only=...) (what calibrate asks for) equals the full point on the fields asked for, draw
    for draw (Monte Carlo at L = 24 on 2gram), and leaves the others unavailable."""
    from numerics.estimate import Unavailable
    from numerics.metrics import point_metrics
    from numerics.sampling.adaptive import make_sampler

    lang = load_language("2gram")
    sampler = make_sampler(sampler_name, schedule=linear(4) if sampler_name == "random" else None,
                           gamma=0.6 if sampler_name == "threshold" else None)
    full = point_metrics(lang, 24, sampler, method="mc", samples=40, rng=3)
    for only in (("ser", "nfe"), ("kl", "kl_jensen_bound", "ter_data", "nfe")):
        part = point_metrics(lang, 24, sampler, method="mc", samples=40, rng=3, only=only)
        for name in full.metric_names():
            if name in only:
                assert getattr(part, name) == getattr(full, name), name
            else:
                assert isinstance(getattr(part, name), Unavailable) and "not requested" in getattr(part, name).reason
    with pytest.raises(ValueError, match="unknown"):
        point_metrics(lang, 24, sampler, method="mc", samples=40, rng=3, only=("sre",))


def test_evaluate_setting_takes_any_sampler_and_maps_ter_through_kl():
    """A rule's Monte Carlo TER is TER(q) exp(KL / L) with the interval's ends mapped the same way; a topk
    sampler built by hand (not through a family) is accepted."""
    import math

    from numerics.metrics import exact_entropy, point_metrics
    from numerics.sampling.adaptive import AdaptiveSampler
    from validation.calibrate import evaluate_setting

    lang = load_language("2gram")
    s = AdaptiveSampler("topk", schedule=linear(6))
    e, quantity, calls = evaluate_setting(s, "ter", lang, 24, method="mc", samples=50, rng=1, confidence=0.975)
    kl = point_metrics(lang, 24, s, method="mc", samples=50, rng=1).kl  # two-sided 95% = one-sided 97.5%
    ter_q = math.exp(exact_entropy(lang, 24).value / 24)
    assert quantity == "ter" and e.value == pytest.approx(ter_q * math.exp(kl.value / 24), rel=RTOL_EXACT)
    lo, hi = kl.interval()
    assert e.interval()[1] == pytest.approx(ter_q * math.exp(hi / 24), rel=RTOL_EXACT)
    assert calls.value == pytest.approx(6.0, rel=RTOL_EXACT)  # topk with 6 steps: 6 calls on every path
