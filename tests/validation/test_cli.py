"""The command line as a whole: the explicit command list, option spelling, help text."""

from __future__ import annotations

import importlib
import pkgutil

import click
from click.testing import CliRunner

import validation.commands as commands_pkg
from validation.cli import BENCH_COMMANDS, COMMANDS, bench, main


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
