"""The claim registry, check(), domain errors, and the mdm-theory bounds/check/counterexamples commands."""

import json
from fractions import Fraction as F

import click
import numpy as np
import pytest
from click.testing import CliRunner

from theory import REGISTRY, check, claims, get
from theory.claims import Claim
from validation.cli import main

PAPER_ITEMS = ["A.1", "A.2", "A.3", "B.2", "B.3", "B.8", "B.9", "B.10", "B.11", "B.12", "C.1", "C.2", "C.5",
               "C.6", "C.7", "4.2", "4.3", "4.4"]


def test_registry_holds_every_lemma_and_theorem_with_steps():
    ids = {c.id for c in claims()}
    assert set(PAPER_ITEMS) <= ids
    for cid in PAPER_ITEMS:
        c = get(cid)
        assert c.statement_latex and c.title and c.doc and c.paper
        for step in c.steps:
            assert step in REGISTRY, f"{cid} lists unknown step {step}"
    # the key proof steps named in the brief are separate claims
    for step in ["C.5.first-position", "C.5.jensen", "B.11.case1", "B.11.case2", "B.11.case3",
                 "B.11.interleaving", "B.10.separators", "B.10.new", "C.7.pinsker"]:
        assert step in ids


def test_top_level_and_prefix_selection():
    top = {c.id for c in claims(top_level=True)}
    assert "C.5" in top and "C.5.jensen" not in top
    assert [c.id for c in claims("C.5")][0] == "C.5"
    assert all(c.id == "C.5" or c.id.startswith("C.5.") for c in claims("C.5"))


def test_unknown_claim_lists_known_ids():
    with pytest.raises(ValueError, match="unknown claim 'Z.9'.*A.1"):
        get("Z.9")


def test_an_instance_missing_a_field_gets_the_claims_fields_named():
    from theory.claims import MissingFieldError

    with pytest.raises(MissingFieldError, match=r"claim 4.4 needs the field 'pi'.*it takes L .*pi .*given: L, N") as err:
        get("4.4").evaluate({"L": 40, "N": 16})
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)  # old and new ways to catch it
    with pytest.raises(MissingFieldError, match="claim 4.4 needs the field .C.*given: L, N"):
        get("4.4")({"L": 40, "N": 16})  # check() too


def test_claim_rejects_bad_relation():
    c = get("A.1")
    with pytest.raises(ValueError, match="relation"):
        Claim(**{**c.__dict__, "relation": "<"})


def test_check_result_fields_on_a_hand_computed_case():
    # C.1 with L = 2, pi = (1/2, 1/2): collision probability 1/2 = C(2,2) * (1/4 + 1/4): tight
    res = check(get("C.1"), {"L": 2, "pi": [F(1, 2), F(1, 2)]}, exact=True)
    assert (res.lhs, res.rhs, res.holds, res.slack, res.tightness) == (F(1, 2), F(1, 2), True, 0.0, 1.0)
    assert res.exact


@pytest.mark.parametrize(
    "cid,instance,message",
    [
        ("C.5", {"l": 5, "pi": [0.5, 0.6]}, "sum to 1"),
        ("C.5", {"l": 0, "pi": [1.0]}, "interval length"),
        ("B.11", {"L": 5, "n": 3, "u_prev": 0.5, "pi_i": 0.1}, "n-1 divides L"),
        ("B.11", {"L": 6, "n": 3, "u_prev": 0.0, "pi_i": 0.1}, "step i >= 2"),
        ("A.2.lower", {"p": [0.5], "d": 1.5}, "0 < d < 1"),
        ("B.12", {"eps": 0.5, "n": 2, "L": 10, "V": 4, "eps_learning": 0.0}, "L >= L_0"),
        ("4.4", {"L": 10, "l": 5, "pi": [0.1] * 10, "C": 0.5}, "N <= C L"),
        ("C.6", {"L": 7, "l": 5, "pi": [1.0]}, "multiple of l"),
    ],
)
def test_domain_violations_raise_clear_errors(cid, instance, message):
    with pytest.raises(ValueError, match=message):
        check(get(cid), instance)


def test_c7_domain_enforces_the_learning_error_hypothesis():
    M = 16
    peaked = np.full(M, 0.2 / (M - 1))
    peaked[0] = 0.8
    inst = {"l": 5, "Pj": peaked, "Pk": np.full(M, 1 / M), "bit_j": 0, "bit_k": 0}
    with pytest.raises(ValueError, match="1/128"):
        check(get("C.7"), inst)


def test_exact_check_needs_an_exact_form():
    with pytest.raises(ValueError, match="no exact rational form"):
        check(get("A.3"), {"P": [0.5, 0.5], "Q": [0.4, 0.6], "event": [True, False]}, exact=True)


# ----- CLI ------------------------------------------------------------------------------------


def _run(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_bounds_lists_the_registry():
    out = json.loads(_run(["bounds", "--json"]))
    ids = [c["id"] for c in out["claims"]]
    assert set(PAPER_ITEMS) <= set(ids)
    assert all(c["statement_latex"] for c in out["claims"])


def test_bounds_evaluates_c5():
    out = json.loads(_run(["bounds", "--lemma", "C.5", "--N", "64", "--l", "5", "--json"]))
    # linear schedule, N = 64: P_distinct = prod_{j<5}(1 - j/64), bound (63/64)^4
    expected = np.prod([1 - j / 64 for j in range(1, 5)])
    assert out["lhs"] == pytest.approx(expected, rel=1e-12)
    assert out["rhs"] == pytest.approx((63 / 64) ** 4, rel=1e-12)
    assert out["holds"] is True


def test_bounds_evaluates_the_jensen_counterexample():
    out = json.loads(_run(["bounds", "--lemma", "C.5.jensen", "--pi", "3/10,7/10", "--l", "5", "--json"]))
    assert out["holds"] is False
    assert out["lhs"] == pytest.approx(0.0777, rel=1e-12)


def test_bounds_prints_theorem_constants():
    out = json.loads(_run(["bounds", "--lemma", "4.2", "--eps", "0.5", "--n", "2", "--V", "4", "--json"]))
    assert out["constants"]["N"] == 13 and out["constants"]["L_0"] == 144
    assert out["holds"] is True
    out = json.loads(_run(["bounds", "--lemma", "4.2", "--N", "13", "--n", "2", "--V", "4", "--json"]))
    assert out["constants"]["N"] <= 13


def test_bounds_reports_missing_options():
    result = CliRunner().invoke(main, ["bounds", "--lemma", "B.11", "--L", "8"])
    assert result.exit_code != 0 and "needs the options" in result.output


def test_check_command_table_and_json():
    out = json.loads(_run(["check", "--lemma", "C.5", "--instances", "4", "--json"]))
    rows = {r["claim"]: r for r in out["rows"]}
    assert rows["C.5"]["violations"] == 0 and rows["C.5"]["instances"] == 4
    assert "unexpected_violations" in out
    text = _run(["check", "--lemma", "A.3", "--instances", "3"])
    assert "A.3.event" in text and "unexpected violations: none" in text


def test_counterexamples_command_finds_and_writes_the_jensen_violation(tmp_path):
    path = tmp_path / "findings.json"
    out = _run(["counterexamples", "--lemma", "C.5.jensen", "--budget", "60", "--seed", "1", "--out", str(path)])
    assert "VIOLATION C.5.jensen" in out
    payload = json.loads(path.read_text())
    assert payload["findings"] and all(f["claim"] == "C.5.jensen" for f in payload["findings"])
    assert payload["provenance"] and payload["config"]["budget"] == 60


# ----- the data-driven `bounds` dispatch (theory.parameters) ----------------------------------

CLI_READY = [c.id for c in claims() if c.cli_ready]


def test_every_statement_with_scalar_fields_is_cli_ready():
    assert {"A.2", "B.10", "B.11", "B.12", "C.1", "C.5", "C.6", "4.2", "4.4"} <= set(CLI_READY)
    assert not get("B.2").cli_ready and not get("C.7").cli_ready  # languages and tables: `check` only


@pytest.mark.parametrize("cid", CLI_READY)
def test_resolving_a_generated_instance_gives_the_same_check(cid):
    """The options a claim declares rebuild its own generated instances: same lhs, rhs, holds."""
    from theory.parameters import OPTIONS, resolve

    claim = get(cid)
    inst = claim.generate(np.random.default_rng([11, sum(map(ord, cid))]))
    given = {n: inst[n] for n, p in claim.parameters.items() if not p.fixed and n in OPTIONS and n in inst}
    resolved = resolve(cid, claim.parameters, given)
    try:
        want = check(claim, inst)
    except ValueError:  # a generated instance outside the domain (the generators may propose those)
        with pytest.raises(ValueError):
            check(claim, resolved.instance)
        return
    got = check(claim, resolved.instance)
    assert (got.lhs, got.rhs, got.holds) == (want.lhs, want.rhs, want.holds)


def test_resolve_names_missing_and_unused_options():
    from theory.parameters import resolve

    with pytest.raises(ValueError, match="B.11 needs the options --n, --pi-i"):
        resolve("B.11", get("B.11").parameters, {"L": 8, "u_prev": 0.5})
    with pytest.raises(ValueError, match="C.5 does not take --x; it takes --l, --pi/--n-steps"):
        resolve("C.5", get("C.5").parameters, {"l": 5, "pi": [1], "x": 0.5})
    with pytest.raises(ValueError, match="B.2 takes `language`"):
        resolve("B.2", get("B.2").parameters, {"L": 3})


def test_resolve_fills_defaults_in_order():
    from theory.b12_explicit_schedule import b12_length_threshold
    from theory.parameters import resolve

    values = resolve("4.2", get("4.2").parameters, {"eps": F(1, 2)}).values
    assert values["n"] == 2 and values["V"] == 8 and values["L"] == b12_length_threshold(0.5, 2) == 144
    inst = resolve("4.4", get("4.4").parameters, {"L": 10, "pi": [F(1, 4)] * 4}).instance
    assert inst["l"] == 5 and "eps_learning" not in inst  # fixed l; eps_learning only feeds the constants


def test_bounds_prints_exact_rationals():
    out = json.loads(_run(["bounds", "--lemma", "C.5.jensen", "--pi", "3/10,7/10", "--l", "5", "--json"]))
    assert (out["lhs_exact"], out["rhs_exact"], out["exact"]) == ("777/10000", "1/16", True)
    text = _run(["bounds", "--lemma", "C.5.jensen", "--pi", "0.3,0.7", "--l", "5"])
    assert "777/10000" in text and "0.0776999" not in text
    text = _run(["bounds", "--lemma", "C.5.jensen", "--pi", "0.3,0.7", "--l", "5", "--float"])
    assert "777/10000" not in text and "0.0777" in text


@pytest.mark.parametrize("args,message", [
    (["--lemma", "B.11", "--L", "8", "--n", "2", "--u-prev", "1.1", "--pi-i", "0.1"], "u_(i-1) = 1.1 > 0"),
    (["--lemma", "4.2", "--eps", "1.1"], "epsilon must lie in (0, 1), got 1.1"),
    (["--lemma", "C.5", "--l", "5", "--pi", "0.5,0.6"], "pi must sum to 1 exactly, got 11/10"),
    (["--lemma", "C.5", "--l", "5", "--x", "0.5", "--N", "3"], "does not take --x"),
    (["--lemma", "C.5", "--l", "5", "--N", "3", "--schedule", "no-such-family"], "'no-such-family' is not one of"),
    (["--lemma", "C.6", "--l", "5", "--N", "3", "--schedule", "cosine"], "C.6 needs the options --length"),
])
def test_bounds_errors_name_the_numbers(args, message):
    result = CliRunner().invoke(main, ["bounds", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "np.float64" not in result.output and "Traceback" not in result.output


def test_every_theory_option_has_help():
    from validation.commands.theory import COMMANDS

    for cmd in COMMANDS:
        ctx = click.Context(cmd)
        for param in cmd.get_params(ctx):
            if isinstance(param, click.Option):
                assert param.help, f"{cmd.name} {param.opts} has no help text"


# ----- degenerate and vacuous instances: no tightness from them --------------------------------


def test_degenerate_and_vacuous_instances_are_flagged():
    both_one = check(get("C.1"), {"L": 2, "pi": [F(1)]}, exact=True)  # one step: collision certain, bound 1
    assert both_one.holds and both_one.degenerate and both_one.vacuous and not both_one.informative
    vacuous = check(get("C.1"), {"L": 20, "pi": [F(1, 3)] * 3}, exact=True)  # union bound 190/3
    assert vacuous.vacuous and not vacuous.degenerate and not vacuous.informative
    tight = check(get("C.1"), {"L": 2, "pi": [F(1, 2), F(1, 2)]}, exact=True)  # 1/2 <= 1/2: really tight
    assert tight.informative and tight.tightness == 1.0


def test_run_claim_leaves_degenerate_instances_out_of_the_tightness():
    from dataclasses import replace

    from theory.search import run_claim

    pins = [{"L": 2, "pi": [F(1)]}, {"L": 3, "pi": [F(1, 6)] * 6}]  # degenerate; 4/9 <= 1/2
    claim = replace(get("C.1"), generate=lambda rng: pins[int(rng.integers(0, 2))])
    row = run_claim(claim, 12, np.random.default_rng(1))
    informative = check(claim, pins[1])
    assert row.degenerate >= 1 and row.instances == 12
    assert row.min_tightness == row.median_tightness == pytest.approx(informative.tightness, rel=1e-12)
    assert row.min_tightness > 1  # 1.0 from the degenerate pin would have been reported otherwise


def test_bounds_marks_a_degenerate_instance():
    out = json.loads(_run(["bounds", "--lemma", "C.1", "--L", "2", "--pi", "1", "--json"]))
    assert out["tightness"] is None and out["degenerate"] and out["holds"]
    assert "n/a (both sides 0 or 1" in _run(["bounds", "--lemma", "C.1", "--L", "2", "--pi", "1"])


def test_check_command_counts_pinned_counterexamples():
    out = json.loads(_run(["check", "--lemma", "C.5.jensen", "--instances", "1", "--json"]))
    (row,) = out["rows"]
    assert row["violations"] >= 1 and row["pinned"] == 1 and not out["unconfirmed_findings"]
