"""The command line as a whole: the explicit command list, option spelling, help text."""

from __future__ import annotations

import importlib
import os
import pkgutil

import click
import pytest
from click.testing import CliRunner

import validation.commands as commands_pkg
from numerics.estimate import ESTIMATE_FIELDS, is_estimate_record
from tests.strict_json import strict_json
from validation.cli import BENCH_COMMANDS, COMMANDS, bench, main
from validation.commands import exact, report, steps_needed
from validation.commands.languages import languages_cmd


def _defined_commands() -> set[click.Command]:
    """Every click command object defined at module level in validation.commands (found here, in the test only)."""
    found = set()
    for info in pkgutil.iter_modules(commands_pkg.__path__):
        module = importlib.import_module(f"{commands_pkg.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, click.Command) and value.callback is not None and \
                    value.callback.__module__ == module.__name__:
                found.add(value)
    return found


def test_the_explicit_list_registers_every_command_defined():
    registered = set(COMMANDS) | set(BENCH_COMMANDS)
    for command in _defined_commands():
        if isinstance(command, click.Group) or command in registered:
            continue
        parent = next((c for c in registered if isinstance(c, click.Group) and command in c.commands.values()), None)
        assert parent is not None, f"{command.name} is defined in validation.commands but not listed in validation.cli"
    assert set(main.commands.values()) == set(COMMANDS) | {bench}
    assert set(bench.commands.values()) == set(BENCH_COMMANDS)


def test_n_steps_is_spelled_out_and_the_old_name_is_a_hidden_alias():
    runner = CliRunner()
    help_text = runner.invoke(main, ["exact", "--help"]).output
    assert "-N, --n-steps" in help_text and "--steps" not in help_text.replace("--n-steps", "")
    a = runner.invoke(main, ["exact", "--language", "2gram", "-L", "3", "--n-steps", "2", "--json"])
    b = runner.invoke(main, ["exact", "--language", "2gram", "-L", "3", "--steps", "2", "--json"])
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    assert '"steps": 2' in a.output and '"steps": 2' in b.output


#: Subcommands this layer owns that compute something (theory/neural/bench_fb commands are owned elsewhere).
COMPUTING = {"languages": languages_cmd, "exact": exact.exact_command, "sweep": exact.sweep_command,
             "steps-needed": steps_needed.steps_needed_cmd,
             "report": report.report_cmd, "bench sweep": exact.bench_sweep_command}


def test_every_computing_command_has_json_progress_and_help_for_every_option():
    for name, command in {**COMPUTING, "docs": report.docs_cmd, "languages export": languages_cmd.commands["export"]}.items():
        options = {o for p in command.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts}
        assert "--json" in options, name
        if name in COMPUTING:
            assert {"--progress", "--no-progress"} <= options, name
        for p in command.params:
            if isinstance(p, click.Option) and not p.hidden:
                assert p.help, f"{name} {p.opts[0]} has no help text"


def test_json_output_is_strict_and_text_output_is_not_json(tmp_path):
    runner = CliRunner()
    # a pruned language at N = 2: some samples leave the support, so gen_ppl is +inf
    args = ["exact", "--language", "2gram-pruned", "-L", "16", "-N", "2", "--method", "mc", "--samples", "20"]
    r = runner.invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    d = strict_json(r.output)
    assert d["gen_ppl"]["value"] is None and "+inf" in d["gen_ppl"]["null_reason"]["value"]
    text = runner.invoke(main, args)
    assert text.exit_code == 0 and not text.output.lstrip().startswith("{")
    assert "gen_ppl" in text.output and "+inf" in text.output


@pytest.mark.parametrize("args, exit_code, message", [
    (["exact", "--language", "nope", "-L", "3", "-N", "2"], 1, "neither a language preset"),
    (["exact", "--language", "2gram", "-L", "3", "-N", "0"], 2, "steps must be an integer >= 1"),
    (["exact", "--language", "2gram", "-L", "3", "-N", "2", "--bogus"], 2, "No such option"),
    (["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2", "--out", os.devnull], 1, "not a regular file"),
    (["sweep", "--languages", "2gram", "--lengths", "3", "-N", "8,...,64", "--out", "x.jsonl"], 2, "ellipsis"),
])
def test_a_failure_is_an_error_object_with_json_and_a_message_without(args, exit_code, message):
    runner = CliRunner()
    r = runner.invoke(main, [*args, "--json"])
    assert r.exit_code == exit_code, r.output
    error = strict_json(r.stdout)["error"]
    assert message in error["message"] and error["exit_code"] == exit_code
    r = runner.invoke(main, args)
    assert r.exit_code == exit_code and message in r.stderr and "Traceback" not in r.output and r.stdout == ""


def _estimates(data):
    """Every estimate-like dict (one with a value and a method) anywhere in converted JSON data."""
    if isinstance(data, dict):
        if is_estimate_record(data):
            yield data
        for v in data.values():
            yield from _estimates(v)
    elif isinstance(data, list):
        for v in data:
            yield from _estimates(v)


def test_every_estimate_in_every_command_has_one_shape(tmp_path):
    """Issue 12: `languages`, `exact` and `sweep` each had their own estimate shape."""
    runner = CliRunner()
    outputs = [
        runner.invoke(main, ["exact", "--language", "2gram", "-L", "3", "-N", "2", "--json"]),
        runner.invoke(main, ["exact", "--language", "3gram", "-L", "12", "-N", "3", "--method", "mc", "--samples", "10",
                             "--ser-language", "3gram-pruned", "--json"]),
        runner.invoke(main, ["languages", "--language", "2gram-pruned", "--length", "8", "--samples", "20", "--json"]),
        runner.invoke(main, ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2", "--out",
                             str(tmp_path / "t.jsonl"), "--json"]),
    ]
    found = 0
    for r in outputs:
        assert r.exit_code == 0, r.output
        for e in _estimates(strict_json(r.output)):
            assert set(ESTIMATE_FIELDS) <= set(e), e
            assert e["exact"] or e["samples"] > 0 or e["method"] == "unavailable", e
            found += 1
    rows = [strict_json(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    for e in _estimates(rows):
        assert set(ESTIMATE_FIELDS) <= set(e), e
        found += 1
    assert found > 30
