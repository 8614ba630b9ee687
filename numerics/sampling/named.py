"""Every sampler by its command-line name: ``numerics.make_sampler("llada", n_steps=16)``.

One entry point for every sampler of the registry (:data:`numerics.sampling.registry.DECODERS`:
``random``, the adaptive rules, the decoders), with the names and defaults of ``mdm-theory exact``:
``n_steps`` (``-N``), ``schedule`` (``--schedule``, default ``linear``), ``tie_seed`` and the sampler's
own options by their command-line names (``gamma``, ``confidence``, ``block_length``, ``remasking``,
``temperature``, ``threshold``, ``factor``, ``remdm_variant``, ``eta``, ...). The registry builds and
checks the sampler, so an option the sampler does not take is a ``ValueError`` naming it, exactly as
on the command line. The revising decoders (``llada21``, ``wino``: :data:`~numerics.sampling.registry.REVISERS`)
and DiffusionGemma's uniform-noise ``gemma-renoise`` (:class:`~numerics.sampling.gemma.Renoise`, its fields
as keywords, ``committed`` required) take no ``n_steps`` and no schedule: their rules decide the calls.
"""

from __future__ import annotations

from typing import Any

from numerics.sampling.registry import DECODERS, REVISERS, spec
from numerics.schedules import Schedule, make_schedule

__all__ = ["ALL_SAMPLERS", "make_sampler"]

ALL_SAMPLERS = (*DECODERS, *REVISERS, "gemma-renoise")
"""Every name :func:`make_sampler` accepts, as ``mdm-theory exact --sampler`` lists them."""


def make_sampler(name: str, *, n_steps: int | None = None, schedule: Schedule | str = "linear",
                 tie_seed: int | None = 0, **options: Any) -> Any:
    """The sampler called ``name`` (:data:`ALL_SAMPLERS`), configured as ``mdm-theory exact`` would.

    Parameters
    ----------
    name : a registered sampler (``random``, ``topk``, ``threshold``, ``entropy-sum``, ``llada``,
        ``fast-dllm``, ``eb``, ``remdm``, ``llada2``, ...; ``mdm-theory exact --help`` lists them).
    n_steps : the number of steps ``N`` of the samplers that take one (``random``, ``topk``, ``llada``,
        ``remdm``, ...); the others decide their calls by a threshold, factor or gamma.
    schedule : a :class:`~numerics.schedules.Schedule`, or the name of one (``linear``, ``cosine``, ...)
        built with ``n_steps``, for the samplers that follow a schedule (``random``, ``topk``, ``remdm``).
    tie_seed : seed of the tie priority of the adaptive rules and the decoders.
    **options : the sampler's own options by their command-line names (``--block-length`` is
        ``block_length``); unset ones take the registry's defaults.

    Returns
    -------
    A sampler for :func:`numerics.point_metrics` and :func:`numerics.sample_factorized`.
    """
    if name not in ALL_SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(ALL_SAMPLERS)}")
    if name not in DECODERS:  # a reviser or gemma-renoise: its rule decides the calls
        if n_steps is not None or isinstance(schedule, Schedule):
            raise ValueError(f"the {name} sampler takes no n_steps and no schedule (its rule decides the calls)")
        if name in REVISERS:
            return REVISERS[name].build(options)
        from numerics.sampling.gemma import Renoise

        return Renoise(**options)
    s = spec(name)
    if n_steps is not None and not s.needs:
        knob = f"its {s.knob.name}" if s.knob is not None else "its rule"
        raise ValueError(f"the {name} sampler takes no n_steps ({knob} decides the calls)")
    sched = None
    if "schedule" in s.needs:
        if isinstance(schedule, Schedule):
            if n_steps is not None and n_steps != schedule.n_steps:
                raise ValueError(f"n_steps={n_steps} disagrees with the schedule's {schedule.n_steps} steps")
            sched = schedule
        elif n_steps is None:
            raise ValueError(f"the {name} sampler needs n_steps (N) or a Schedule")
        else:
            sched = make_schedule(schedule, n_steps)
    elif isinstance(schedule, Schedule):
        raise ValueError(f"the {name} sampler takes no schedule")
    return s.build(options, steps=n_steps, schedule=sched, tie_seed=tie_seed)
