"""The option block ``calibrate`` and ``steps-needed`` share: how each setting is computed and how the knob is searched.

One definition (:func:`search_options`), so the two commands cannot drift apart (their
``--max-steps`` defaults once did). The command receives ``method``, ``samples``, ``confidence``,
``max_steps``, ``seed``, ``tie_seed``, ``grid``, ``refine`` and ``decoder_opts`` (the decoders'
options, :func:`validation.commands._decoders.decoder_options`).
"""

from __future__ import annotations

import click

from numerics.schedules import MAX_STEPS  # the largest N a schedule holds: --max-steps above it is refused at once
from validation.commands._decoders import decoder_options
from validation.steps_needed import DEFAULT_MAX_STEPS

__all__ = ["search_options"]

_OPTIONS = (
    click.option("--method", type=click.Choice(["auto", "closed-form", "dp", "enumerate", "mc"]), default="auto",
                 show_default=True, help="How each setting is computed: auto = the fastest exact method that fits, "
                                         "else Monte Carlo (a learned model: always Monte Carlo)."),
    click.option("--samples", type=click.IntRange(min=2), default=1000, show_default=True,
                 help="Monte Carlo samples per setting evaluated."),
    click.option("--confidence", type=click.FloatRange(0.5, 1.0, min_open=True, max_open=True), default=0.95,
                 show_default=True, help="Monte Carlo: one-sided confidence that a setting meets the target."),
    click.option("--max-steps", type=click.IntRange(min=1, max=MAX_STEPS), default=DEFAULT_MAX_STEPS, show_default=True,
                 help="Largest number of steps N tried (step families; topk and llada stop at L)."),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed of the Monte Carlo draws."),
    click.option("--tie-seed", type=click.IntRange(min=0), default=0, show_default=True,
                 help="Seed of the adaptive rules' and decoders' tie priority (the random sampler has no ties)."),
    click.option("--grid", type=click.IntRange(min=2), default=None,
                 help="Points of a real knob's uniform grid (threshold, factor, gamma)  [default: 65]."),
    click.option("--refine", type=click.IntRange(min=0), default=None,
                 help="Bisections of each pair of grid neighbours of which one meets the target and the other "
                      "not  [default: 4]."),
)


def search_options(f):
    """Add the shared options (module docstring) and the decoder options to a click command."""
    f = decoder_options(f)
    for opt in reversed(_OPTIONS):
        f = opt(f)
    return f
