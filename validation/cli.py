"""The ``mdm-theory`` command line: one click group and the explicit list of its subcommands.

Every subcommand is named below, next to the module that defines it (:mod:`validation.commands`);
there is no discovery. A new subcommand is added to :data:`LAZY_COMMANDS` (or :data:`LAZY_BENCH_COMMANDS`
for ``mdm-theory bench``) as ``"module:attribute"``; its module is imported only when the command
runs, so ``mdm-theory --help`` and ``--version`` import neither numba nor scipy (:class:`LazyGroup`).
``COMMANDS`` / ``BENCH_COMMANDS`` are the imported command objects.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any

import click

from validation.commands._common import CommandGroup

__all__ = ["main", "LAZY_COMMANDS", "LAZY_BENCH_COMMANDS", "LazyGroup"]  # and COMMANDS, BENCH_COMMANDS (__getattr__)

#: Top-level subcommands, in the order of a first session: look at the languages, compute one
#: point, ask how many steps a target needs, sweep a grid, check the theory, train and evaluate a
#: model, write the report and the docs. Each is ``name: "module:attribute"``, imported when it
#: is run or its help is asked for (so ``mdm-theory --help`` imports neither numba nor scipy).
LAZY_COMMANDS: dict[str, str] = {
    "languages": "validation.commands.languages:languages_cmd",  # mdm-theory languages [export]
    "exact": "validation.commands.exact:exact_command",
    "steps-needed": "validation.commands.steps_needed:steps_needed_cmd",
    "calibrate": "validation.commands.calibrate:calibrate_command",
    "optimal-decoder": "validation.commands.optimal_decoder:optimal_decoder_cmd",
    "lossless": "validation.commands.lossless:lossless_command",
    "sweep": "validation.commands.exact:sweep_command",
    "plot": "validation.commands.plot:plot_cmd",
    "bounds": "validation.commands.theory:bounds_cmd",
    "check": "validation.commands.theory:check_cmd",
    "counterexamples": "validation.commands.theory:counterexamples_cmd",
    "train": "validation.commands.neural:train_cmd",
    "evaluate": "validation.commands.neural:evaluate_cmd",
    "report": "validation.commands.report:report_cmd",
    "docs": "validation.commands.report:docs_cmd",
}

#: Subcommands of ``mdm-theory bench``, as :data:`LAZY_COMMANDS`.
LAZY_BENCH_COMMANDS: dict[str, str] = {
    "forward-backward": "validation.commands.bench_fb:bench_forward_backward",
    "sweep": "validation.commands.exact:bench_sweep_command",
    "sampling": "validation.commands.neural:bench_sampling_cmd",
    "adaptive": "validation.commands.bench_adaptive:bench_adaptive_command",
    "sparse-ngram": "validation.commands.bench_fb:bench_sparse_ngram",
    "calibrate": "validation.commands.calibrate:bench_calibrate_command",
    "decoders": "validation.commands.bench_decoders:bench_decoders_command",
    "lossless": "validation.commands.lossless:bench_lossless_command",
    "revisers": "validation.commands.bench_revisers:bench_revisers_command",
}


def _load(target: str) -> click.Command:
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


def _short_help(target: str, limit: int) -> str:
    """The one-line help of the command at ``target`` without importing its module: click's own
    shortening of the help text, read from the module's source (:mod:`ast`): the command function's
    docstring, or the leading text of the string its decorator passes as ``help=``."""
    module, attribute = target.split(":")
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == attribute)
    text = ast.get_docstring(node)
    command = [d for d in node.decorator_list if isinstance(d, ast.Call) and getattr(d.func, "attr", None) in ("command", "group")]
    for keyword in (k for d in command for k in d.keywords if k.arg == "help"):
        value = keyword.value
        if isinstance(value, ast.Name):  # a module-level constant
            value = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets))
        parts = value.values if isinstance(value, ast.JoinedStr) else [value]
        text = "".join(p.value for p in itertools.takewhile(lambda p: isinstance(p, ast.Constant), parts))
    return click.Command(attribute, help=text).get_short_help_str(limit)


class LazyGroup(CommandGroup):
    """A :class:`~validation.commands._common.CommandGroup` whose subcommands are imported when used.

    ``commands`` (click's mapping of every subcommand) imports them all; running one, or asking
    for its help, imports only its module; the group's ``--help`` imports none.
    """

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        self._lazy = dict(lazy or {})
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> dict[str, click.Command]:
        for name in list(self._lazy):
            self._loaded[name] = _load(self._lazy.pop(name))
        return self._loaded

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._loaded = dict(value)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        name = name or cmd.name
        if name is None:
            raise TypeError("Command has no name.")
        self._loaded[name] = cmd  # (click's version reads ``commands``, which would import every command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            self._loaded[cmd_name] = _load(self._lazy.pop(cmd_name))
        return self._loaded.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self._lazy, *self._loaded})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = [n for n in self.list_commands(ctx) if n in self._lazy or not self._loaded[n].hidden]
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, _short_help(self._lazy[n], limit) if n in self._lazy else self._loaded[n].get_short_help_str(limit))
                for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mdm-theory")
def main() -> None:
    """Exact theory-verification engine for masked diffusion language models (arXiv 2502.09622).

    Every computing subcommand prints human-readable text by default and one JSON object with
    --json (an {"error": ...} object and a non-zero exit status on failure); logs and progress
    go to stderr.
    """


@main.group(cls=LazyGroup, lazy=LAZY_BENCH_COMMANDS)
def bench() -> None:
    """Benchmarks that print their figures (ratios against a reference measured in the same run)."""


def __getattr__(name: str) -> tuple[click.Command, ...]:
    """``COMMANDS`` / ``BENCH_COMMANDS``: every subcommand, imported (tests, docs)."""
    if name == "COMMANDS":
        return tuple(main.commands[n] for n in LAZY_COMMANDS)
    if name == "BENCH_COMMANDS":
        return tuple(bench.commands[n] for n in LAZY_BENCH_COMMANDS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
