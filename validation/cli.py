"""The ``mdm-theory`` command line: one click group and the explicit list of its subcommands.

Every subcommand is named below, next to the module that defines it (:mod:`validation.commands`);
there is no discovery. A new subcommand is added to :data:`COMMANDS` (or :data:`BENCH_COMMANDS`
for ``mdm-theory bench``). Heavy imports (torch, matplotlib, dask) live inside the command
functions so that ``mdm-theory --help`` stays fast.
"""

from __future__ import annotations

import sys

import click

from validation.commands import (
    bench_adaptive,
    bench_decoders,
    bench_fb,
    exact,
    languages,
    neural,
    optimal_decoder,
    plot,
    report,
    steps_needed,
    theory,
)
from validation.commands import calibrate as calibrate_cmd
from validation.commands._common import CommandGroup

__all__ = ["main", "COMMANDS", "BENCH_COMMANDS"]

#: Top-level subcommands, in the order of a first session: look at the languages, compute one
#: point, ask how many steps a target needs, sweep a grid, check the theory, train and evaluate a
#: model, write the report and the docs.
COMMANDS: tuple[click.Command, ...] = (
    languages.languages_cmd,  # mdm-theory languages [export]
    exact.exact_command,  # mdm-theory exact
    steps_needed.steps_needed_cmd,  # mdm-theory steps-needed
    calibrate_cmd.calibrate_command,  # mdm-theory calibrate
    optimal_decoder.optimal_decoder_cmd,  # mdm-theory optimal-decoder
    exact.sweep_command,  # mdm-theory sweep
    plot.plot_cmd,  # mdm-theory plot
    theory.bounds_cmd,  # mdm-theory bounds
    theory.check_cmd,  # mdm-theory check
    theory.counterexamples_cmd,  # mdm-theory counterexamples
    neural.train_cmd,  # mdm-theory train
    neural.evaluate_cmd,  # mdm-theory evaluate
    report.report_cmd,  # mdm-theory report
    report.docs_cmd,  # mdm-theory docs
)

#: Subcommands of ``mdm-theory bench``.
BENCH_COMMANDS: tuple[click.Command, ...] = (
    bench_fb.bench_forward_backward,  # mdm-theory bench forward-backward
    exact.bench_sweep_command,  # mdm-theory bench sweep
    neural.bench_sampling_cmd,  # mdm-theory bench sampling
    bench_adaptive.bench_adaptive_command,  # mdm-theory bench adaptive
    bench_fb.bench_sparse_ngram,  # mdm-theory bench sparse-ngram
    calibrate_cmd.bench_calibrate_command,  # mdm-theory bench calibrate
    bench_decoders.bench_decoders_command,  # mdm-theory bench decoders
)


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mdm-theory")
def main() -> None:
    """Exact theory-verification engine for masked diffusion language models (arXiv 2502.09622).

    Every computing subcommand prints human-readable text by default and one JSON object with
    --json (an {"error": ...} object and a non-zero exit status on failure); logs and progress
    go to stderr.
    """


@main.group()
def bench() -> None:
    """Benchmarks that print their figures (ratios against a reference measured in the same run)."""


for _command in COMMANDS:
    main.add_command(_command)
for _command in BENCH_COMMANDS:
    bench.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
