"""`exact` takes the best exact method before Monte Carlo, the fastest one under --method auto, and
refuses a method that cannot run at the size asked for, naming it (issues 12, 13)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from numerics.exact.interval import interval_ser
from numerics.languages.presets import load_language
from numerics.methods import choose_method, method_costs
from numerics.schedules import linear
from tests.tolerances import RTOL_EXACT
from validation.cli import main


def _exact(*args):
    r = CliRunner().invoke(main, ["exact", *args, "--json"])
    return r.exit_code, json.loads(r.stdout)


def test_the_interval_language_gets_its_closed_forms_not_monte_carlo():
    """Issue 13: interval L = 40, N = 16 answered SER by Monte Carlo (0.926 +- 0.008); the closed form is 0.92422..."""
    code, d = _exact("--language", "interval", "-L", "40", "-N", "16")
    assert code == 0 and d["method"] == "closed-form"
    assert d["ser"]["value"] == pytest.approx(interval_ser(linear(16), 40, 5).probability, rel=RTOL_EXACT)
    assert d["ser"]["value"] == pytest.approx(0.92422, abs=5e-6)
    for field in ("kl", "ter", "ser", "kl_jensen_bound", "gen_ppl", "ter_data"):
        assert d[field]["exact"] and d[field]["method"].startswith("closed-form"), field
    assert d["gen_ppl"]["value"] is None and d["gen_ppl"]["null_reason"]["value"].startswith("+inf")
    code, big = _exact("--language", "interval", "-L", "160", "-N", "64")  # ran past 150 s by Monte Carlo
    assert code == 0 and big["method"] == "closed-form" and big["elapsed_s"] < 5


def test_without_whole_intervals_the_jensen_bound_and_entropy_stay_exact():
    code, d = _exact("--language", "interval-l3", "-L", "32", "-N", "4", "--samples", "20")
    assert code == 0 and d["method"] == "mc"  # 3 does not divide 32: no closed form for the SER
    assert d["kl_jensen_bound"]["exact"] and d["ter_data"]["exact"]
    assert not d["ser"]["exact"] and d["ser"]["samples"] == 20


def test_ordered_partitions_count():
    from numerics.methods import _ordered_partitions

    assert [_ordered_partitions(L, L) for L in range(1, 6)] == [1, 3, 13, 75, 541]  # Fubini numbers
    assert _ordered_partitions(4, 2) == 1 + 14 and _ordered_partitions(5, 1) == 1


def test_auto_takes_the_fastest_exact_method():
    """Issue 12: at L = 8 auto took enumeration (12.4 s) where the DP gives the same numbers in under a second."""
    schedule = linear(4)
    costs = method_costs(load_language("hmm"), 5, schedule)
    assert costs["dp"].feasible and costs["enumerate"].feasible
    assert costs["dp"].seconds < costs["enumerate"].seconds
    assert choose_method("auto", load_language("hmm"), 5, schedule, 100).method == "dp"
    assert choose_method("auto", load_language("interval-l2"), 8, schedule, 100).method == "closed-form"
    assert choose_method("auto", load_language("2gram"), 256, schedule, 100).method == "mc"
    code, d = _exact("--language", "hmm", "-L", "5", "-N", "4")
    assert code == 0 and d["method"] == "dp" and d["method_choice"]["requested"] == "auto"
    assert set(d["method_choice"]["exact_methods"]) == {"closed-form", "dp", "enumerate"}


@pytest.mark.parametrize("args, says", [
    (["--language", "2gram", "-L", "256", "-N", "16", "--method", "dp"], ["--method dp", "9^256 = 1.9e244 words"]),
    (["--language", "2gram", "-L", "6", "-N", "100", "--method", "enumerate"], ["--method enumerate", "100^6"]),
    (["--language", "2gram", "-L", "8", "-N", "4", "--method", "enumerate"], ["GiB of per-instance laws > 8 GiB"]),
    (["--language", "2gram", "-L", "4", "-N", "2", "--method", "closed-form"], ["--method closed-form", "no closed form"]),
    (["--language", "interval", "-L", "42", "-N", "2", "--method", "closed-form"], ["l = 5 to divide L = 42"]),
    (["--language", "2gram", "-L", "100000", "-N", "2", "--samples", "10000", "--method", "mc"], ["GiB", "--samples"]),
])
def test_a_method_that_cannot_run_is_refused_up_front_by_name(args, says):
    """Issue 12: `--method dp -L 256` answered with a 155-digit count of a "brute-force table"."""
    code, d = _exact(*args)
    assert code == 1
    message = d["error"]["message"]
    assert all(s in message for s in says), message
    assert "brute-force table" not in message and not any(len(w) > 40 for w in message.split())


def test_schedule_help_lists_every_family_and_a_parameter_is_settable():
    """Issue 18: --schedule accepted mdlm but its help listed four; the polynomial power was not settable."""
    from numerics.schedules import SCHEDULES, make_schedule

    for command in ("exact", "sweep", "steps-needed"):
        text = " ".join(CliRunner().invoke(main, [command, "--help"]).output.split())
        assert all(name in text for name in SCHEDULES) and "polynomial:3" in text, command
    code, d = _exact("--language", "2gram", "-L", "3", "-N", "2", "--schedule", "polynomial:3")
    assert code == 0 and d["schedule_name"] == make_schedule("polynomial", 2, power=3.0).name
    code, square = _exact("--language", "2gram", "-L", "3", "-N", "2", "--schedule", "polynomial")
    assert square["kl"]["value"] != d["kl"]["value"]  # the power changed the numbers
    r = CliRunner().invoke(main, ["exact", "--language", "2gram", "-L", "3", "-N", "2", "--schedule", "cosine:2",
                                  "--json"])
    assert r.exit_code == 2 and "takes no parameter" in r.output


def test_the_tie_seed_is_an_option_and_an_output_field():
    """Issue 18: the adaptive rules' tie seed was 0 in exact/sweep and documented nowhere a user looks."""
    args = ("--language", "interval-l2", "-L", "4", "-N", "2", "--sampler", "topk")
    code, default = _exact(*args)
    assert code == 0 and default["tie_seed"] == 0 and "tie_seed" not in default["inputs"]  # hash as before
    code, seeded = _exact(*args, "--tie-seed", "7")
    assert code == 0 and seeded["tie_seed"] == 7 and seeded["inputs"]["tie_seed"] == 7
    code, random = _exact("--language", "2gram", "-L", "3", "-N", "2")
    assert code == 0 and random["tie_seed"] is None  # no ties to break
    r = CliRunner().invoke(main, ["steps-needed", "--language", "interval", "-L", "10", "--metric", "ser",
                                  "--target", "0.5", "--tie-seed", "3", "--json"])
    assert r.exit_code == 0 and "tie_seed" in json.loads(r.stdout)
