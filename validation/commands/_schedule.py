"""``--schedule NAME``, spelled alike on exact, sweep, steps-needed and calibrate, with ``optimal`` among the names.

``optimal`` is not a fixed family: it is Chen-Cong-Li's DP schedule for the language, length and
step budget at hand (:func:`numerics.exact.schedule_opt.optimal_schedule`), built where a point is
evaluated (:meth:`validation.sweep.PointConfig.make_schedule`). :func:`check_schedule` refuses, before
anything runs, a name that is no family and ``optimal`` where the exact information curve is not
available (a usage error naming why).
"""

from __future__ import annotations

from collections.abc import Iterable

import click

__all__ = ["OPTIMAL", "check_schedule", "schedule_help", "schedule_option"]

OPTIMAL = "optimal"


def schedule_help() -> str:
    """The families and their FAMILY:VALUE syntax (:func:`numerics.schedules.schedule_help`), and ``optimal``."""
    from numerics.schedules import schedule_help as families

    return (families() + " Or optimal: the information-curve DP schedule (Chen-Cong-Li) for this language, L and "
            "N (needs the exact curve: 2-gram chains at any L, other languages while V^L is tiny).")


def schedule_option(f):
    """The ``--schedule`` option (default ``linear``)."""
    return click.option("--schedule", default="linear", show_default=True, help=schedule_help())(f)


def check_schedule(name: str, languages: Iterable[str], lengths: Iterable[int]) -> None:
    """A usage error (exit 2) for an unknown schedule, or for ``optimal`` without an exact information curve."""
    from numerics.schedules import make_schedule

    if name != OPTIMAL:
        try:
            make_schedule(name, 1)  # a family, with its parameter if given as FAMILY:VALUE
        except ValueError as exc:
            raise click.BadParameter(f"{exc}; or {OPTIMAL}", param_hint="--schedule") from None
        return
    from numerics.exact.schedule_opt import CurveUnavailableError, optimal_schedule
    from numerics.languages.presets import load_language

    for spec in languages:
        language = load_language(spec.partition(":")[0])
        for L in lengths:
            try:
                optimal_schedule(language, int(L), 1)
            except CurveUnavailableError as exc:
                raise click.BadParameter(f"{spec} at L = {L}: {exc}", param_hint="--schedule") from None
