"""Every sampler by its command-line name: ``numerics.make_sampler("llada", n_steps=16)``.

One entry point for the samplers of :mod:`numerics.sampling.adaptive` (``random``, ``topk``,
``threshold``, ``entropy-sum``) and the decoders of :mod:`numerics.sampling.decoders` (``llada``,
``fast-dllm``, ``eb``, ``remdm``), with the names and defaults of ``mdm-theory exact``: ``n_steps``
(``-N``), ``schedule`` (``--schedule``, default ``linear``), ``gamma``, ``confidence``, ``tie_seed``,
``block_length`` and the decoder options (``remasking``, ``temperature``, ``threshold``, ``factor``,
``remdm_variant``, ``eta``). An option the sampler does not use is a ``ValueError`` naming it.
"""

from __future__ import annotations

from typing import Any

from numerics.sampling.adaptive import SAMPLER_NAMES
from numerics.sampling.adaptive import make_sampler as _make_rule
from numerics.sampling.decoders import DECODER_NAMES, make_decoder
from numerics.schedules import Schedule, make_schedule

__all__ = ["ALL_SAMPLERS", "make_sampler"]

ALL_SAMPLERS = SAMPLER_NAMES + DECODER_NAMES
"""Every name :func:`make_sampler` accepts, as ``mdm-theory exact --sampler`` lists them."""

_STEPS_TAKEN = ("random", "topk", "llada", "remdm")  # the samplers whose number of steps N means something


def _schedule(schedule: Schedule | str, n_steps: int | None, name: str) -> Schedule:
    if isinstance(schedule, Schedule):
        if n_steps is not None and n_steps != schedule.n_steps:
            raise ValueError(f"n_steps={n_steps} disagrees with the schedule's {schedule.n_steps} steps")
        return schedule
    if n_steps is None:
        raise ValueError(f"the {name} sampler needs n_steps (N) or a Schedule")
    return make_schedule(schedule, n_steps)


def make_sampler(name: str, *, n_steps: int | None = None, schedule: Schedule | str = "linear",
                 gamma: float | None = None, confidence: str = "maxprob", tie_seed: int | None = 0,
                 block_length: int | None = None, **decoder_options: Any) -> Any:
    """The sampler called ``name`` (:data:`ALL_SAMPLERS`), configured as ``mdm-theory exact`` would.

    Parameters
    ----------
    name : ``random``, ``topk``, ``threshold``, ``entropy-sum``, ``llada``, ``fast-dllm``, ``eb`` or ``remdm``.
    n_steps : the number of steps ``N`` (``random``, ``topk``, ``llada``, ``remdm``; the others take none).
    schedule : a :class:`~numerics.schedules.Schedule`, or the name of one (``linear``, ``cosine``, ...)
        built with ``n_steps`` (``random``, ``topk``, ``remdm``).
    gamma : ``threshold`` / ``entropy-sum`` (the adaptive rules' parameter) and ``eb`` (its entropy bound).
    confidence : the adaptive rules' confidence score (``maxprob``, ``margin``, ``neg-entropy``).
    tie_seed : seed of the tie priority of the adaptive rules and the decoders.
    block_length : semi-autoregressive block length ``B`` (the decoders and the adaptive rules).
    **decoder_options : the decoders' own: ``remasking`` (llada), ``temperature``, ``threshold`` /
        ``factor`` (fast-dllm), ``remdm_variant`` and ``eta`` (remdm).

    Returns
    -------
    A sampler for :func:`numerics.point_metrics` and :func:`numerics.sample_factorized`.
    """
    if name in DECODER_NAMES:
        opts = dict(decoder_options)
        if "remdm_variant" in opts:  # the command line's name of remdm's ``variant``
            opts["variant"] = opts.pop("remdm_variant")
        if n_steps is not None and name not in _STEPS_TAKEN:
            raise ValueError(f"the {name} decoder takes no n_steps (its threshold, factor or gamma decides the calls)")
        if gamma is not None and name != "eb":
            raise ValueError(f"gamma applies to eb (and threshold / entropy-sum), not to {name}")
        if confidence != "maxprob":
            raise ValueError(f"confidence applies to the adaptive rules, not to the {name} decoder")
        return make_decoder(name, steps=n_steps if name == "llada" else None,
                            schedule=_schedule(schedule, n_steps, name) if name == "remdm" else None,
                            tie_seed=tie_seed, block_length=block_length, gamma=gamma, **opts)
    if name not in SAMPLER_NAMES:
        raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(ALL_SAMPLERS)}")
    if decoder_options:
        raise ValueError(f"{', '.join(sorted(decoder_options))} apply to the decoders "
                         f"({', '.join(DECODER_NAMES)}), not to the {name} sampler")
    if name in ("threshold", "entropy-sum"):
        if n_steps is not None:
            raise ValueError(f"the {name} rule takes no n_steps (gamma decides the calls)")
        return _make_rule(name, gamma=gamma, confidence=confidence, tie_seed=tie_seed, block_length=block_length)
    return _make_rule(name, schedule=_schedule(schedule, n_steps, name), gamma=gamma, confidence=confidence,
                      tie_seed=tie_seed, block_length=block_length)
