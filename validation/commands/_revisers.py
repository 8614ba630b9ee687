"""``--sampler llada21|wino`` on ``exact``, ``sweep`` and ``steps-needed`` (``calibrate --revisers``): the
revising decoders' options, and ``exact``'s point.

The revisers are :data:`numerics.sampling.registry.REVISERS` (not :data:`~numerics.sampling.registry.DECODERS`:
no DP or report family can run a rule that edits revealed tokens); their options are checked once, for
every command, by :func:`validation.canvas_samplers.check_reviser`. Their options shared with the
decoders (``--block-length``, ``--temperature``, ``--threshold``) are the decoder options' flags; the ones of
their own (``--edit-threshold``, ``--edit-cap``, ``--remask-threshold``, ``--step-cap``) are added here from
the registry (:func:`reviser_options`; comma lists on ``sweep``). A point (:func:`reviser_point`) is
``sweep``'s: :func:`validation.sweep.evaluate_point`, i.e. :func:`numerics.metrics.point_metrics` of the
:class:`~numerics.sampling.revisers.Reviser` (the exact chain over canvases, or Monte Carlo), written as
``exact`` writes a decoder's point plus the law of the calls (``calls_law``).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import click

from numerics.sampling.registry import REVISERS, Option
from validation.canvas_samplers import REVISER_FIELDS, REVISER_NAMES, check_reviser
from validation.commands._decoders import parse_values, reviser_help

__all__ = ["REVISER_FIELDS", "REVISER_NAMES", "check_reviser_options", "reviser_options", "reviser_point",
           "reviser_summaries"]


def _option(name: str) -> Option:
    return next(s.option(name) for s in REVISERS.values() if name in s.option_names)


def reviser_summaries() -> str:
    """``llada21: ...; wino: ...`` for ``--sampler``'s help."""
    return "; ".join(f"{n}: {s.summary}" for n, s in REVISERS.items())


def reviser_options(f=None, *, also: dict[str, str] | None = None, lists: bool = False):
    """Add the revisers' own options (:data:`REVISER_FIELDS`); the command receives ``reviser_opts`` (the given ones).
    ``also``: option name -> help of another sampler that takes the same flag (appended to its help); ``lists``
    (``sweep``): each takes a comma list and the command receives ``reviser_grid``, every combination of them
    (a list of dicts of the options given)."""
    if f is None:
        return functools.partial(reviser_options, also=also, lists=lists)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        raw = {k: kwargs.pop(k) for k in REVISER_FIELDS}
        if lists:
            axes = [parse_values(_option(k), raw[k]) for k in REVISER_FIELDS]
            kwargs["reviser_grid"] = [{k: v for k, v in zip(REVISER_FIELDS, combo) if v is not None}
                                      for combo in itertools.product(*axes)]
        else:
            kwargs["reviser_opts"] = {k: v for k, v in raw.items() if v is not None}
        return f(*args, **kwargs)

    for name in reversed(REVISER_FIELDS):
        o = _option(name)
        wrapper = click.option(o.flag, o.name, type=str if lists else o.type, default=None,
                               help=f"{reviser_help(name)}. Range {o.range_text()}."
                                    + (" A comma list sweeps it." if lists else "")
                                    + (f" {also[name]}" if also and name in also else ""))(wrapper)
    return wrapper


def check_reviser_options(sampler: str, decoder_opts: dict, reviser_opts: dict, gamma: float | None) -> dict:
    """The options of ``--sampler`` ``sampler`` (a reviser, or any sampler given a reviser's own option), checked.

    A reviser's own option given to another sampler, an option the reviser does not take, ``--gamma``, and a
    value out of its range are each a ``click.UsageError`` naming the flag. Returns the reviser's options.
    """
    try:
        return check_reviser(sampler, {**decoder_opts, **reviser_opts}, gamma)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def reviser_point(sampler: str, options: dict, language: str, ser_language: str | None, length: int, method: str,
                  samples: int, seed: int, tie_seed: int = 0, confidence: str = "maxprob") -> dict[str, Any]:
    """One point of a reviser, as ``sweep`` computes it: :func:`validation.sweep.evaluate_point` of its
    :class:`~validation.sweep.PointConfig` (:func:`numerics.metrics.point_metrics` with the point's streams).

    Bad sizes (a block length that does not divide ``L``, ``--method dp``, the exact chain beyond its size,
    too few samples, a Monte Carlo run beyond the memory) are a ``click.UsageError`` before any work.
    """
    from validation.sweep import PointConfig, check_costs, evaluate_point

    if length < 1 or samples < 2:
        raise click.UsageError("a revising decoder needs -L >= 1 and --samples >= 2")
    try:
        cfg = PointConfig(language, length, 1, method=method, samples=samples, seed=seed, ser_language=ser_language,
                          sampler=sampler, confidence=confidence, tie_seed=tie_seed, options=options)
        check_costs([cfg])
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    return evaluate_point(cfg)
