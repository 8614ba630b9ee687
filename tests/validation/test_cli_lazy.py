"""The command line imports a command's module only when the command runs (``validation.cli.LazyGroup``).

``mdm-theory --help`` / ``--version`` import neither numba nor scipy (they took 2.6 s when every
command module was imported up front), and the help listing read from the sources without
importing is the one click prints from the imported commands.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from validation import cli

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(*args: str) -> set[str]:
    code = ("import sys; from validation.cli import main\n"
            f"try:\n    main.main({list(args)!r}, standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(run.stdout.split())


def test_help_and_version_import_no_command_module():
    for args in (["--help"], ["--version"], ["bench", "--help"]):
        loaded = _modules_after(*args)
        assert not {"numba", "scipy", "numerics.sampling", "validation.commands.exact"} & loaded, args
    assert "validation.commands.exact" in _modules_after("exact", "--help")  # the case is exercised


def test_lazy_short_help_is_the_imported_commands_short_help():
    for group, table in ((cli.main, cli.LAZY_COMMANDS), (cli.bench, cli.LAZY_BENCH_COMMANDS)):
        for name, target in table.items():
            command = group.commands[name]
            assert command is cli._load(target) and command.name == name
            for limit in (30, 45, 70):
                assert cli._short_help(target, limit) == command.get_short_help_str(limit), (name, limit)


def test_commands_tuples_are_the_tables_in_order():
    assert [c.name for c in cli.COMMANDS] == list(cli.LAZY_COMMANDS)
    assert [c.name for c in cli.BENCH_COMMANDS] == list(cli.LAZY_BENCH_COMMANDS)
    assert all(isinstance(c, click.Command) for c in cli.COMMANDS + cli.BENCH_COMMANDS)
