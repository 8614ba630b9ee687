"""The ``mdm-theory`` command line: a click group whose subcommands live in :mod:`validation.commands`."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mdm-theory")
def main() -> None:
    """Exact theory-verification engine for masked diffusion language models (arXiv 2502.09622)."""


@main.group()
def bench() -> None:
    """Benchmarks that print their figures (ratios against a reference measured in the same run)."""


def _register() -> None:
    import validation.commands as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for command in getattr(module, "COMMANDS", ()):
            main.add_command(command)
        for command in getattr(module, "BENCH_COMMANDS", ()):
            bench.add_command(command)


_register()

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
