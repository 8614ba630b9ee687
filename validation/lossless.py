"""A lossless decoder's point: its expected rounds and calls at SER = 0, by Monte Carlo or exactly.

The lossless decoders (:data:`numerics.sampling.registry.LOSSLESS`, ``docs/methods/lossless.md``) have
SER = 0 on the support with the oracle (their output law is ``q``; ``spiffy``'s is its base sampler's)
and a *random* number of rounds and calls. :func:`lossless_point` estimates both (mean, standard error,
sample count, quantiles, the SER of the samples as a check); :func:`lossless_exact` gives their exact
law on a tiny case (:mod:`numerics.exact.lossless`). :func:`validation.calibrate.lossless_settings` puts a decoder on
:func:`validation.calibrate.calibrate`'s Pareto front as ``(E[calls], metric)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.estimate import Estimate

__all__ = ["BENCH_RATIO_TARGET", "LosslessPoint", "build_lossless", "lossless_exact", "lossless_point"]

BENCH_RATIO_TARGET = 5.0  # issue 32: a lossless MC point costs at most 5x the random sampler's at N = 64


def _language(language: str | Any):
    from numerics.languages.presets import load_language

    return (load_language(language), language) if isinstance(language, str) else (language, repr(language))


def build_lossless(name: str, options: Mapping[str, Any] | None, length: int, *, steps: int | None = None,
                   schedule: str = "linear"):
    """The decoder ``name`` with ``options`` (registry defaults for the unset ones), checked against ``L``.

    ``spiffy`` needs ``steps`` (its base sampler's ``N``). A bad name, option or draft length is a
    ``ValueError`` naming it (:class:`~numerics.sampling.lossless.LosslessError`).
    """
    from numerics.sampling.registry import lossless_spec
    from numerics.schedules import make_schedule

    spec = lossless_spec(name)
    sched = None
    if "schedule" in spec.needs:
        if steps is None:
            raise ValueError(f"{name} needs the base sampler's steps N (-N)")
        sched = make_schedule(schedule, int(steps))
    elif steps is not None:
        raise ValueError(f"{name} takes no steps N (its rounds are random; -N is spiffy's base sampler's)")
    decoder = spec.build(options, schedule=sched, tie_seed=None)
    decoder.check_length(length)
    return decoder


def _quantiles(a: np.ndarray) -> dict:
    q = np.quantile(a, [0.05, 0.5, 0.95])
    return {"min": int(a.min()), "p05": float(q[0]), "median": float(q[1]), "p95": float(q[2]), "max": int(a.max())}


def _mean(a: np.ndarray, what: str) -> Estimate:
    n = a.size
    sd = float(a.std(ddof=1)) if n > 1 else math.nan
    return Estimate(float(a.mean()), sd / math.sqrt(n), "mc", n)


@dataclass(frozen=True)
class LosslessPoint:
    """A lossless decoder's Monte Carlo point.

    Attributes
    ----------
    language, length, decoder, label : the point (``decoder`` the registry name, ``label`` its parameters)
    rounds, calls : Estimate
        Mean sequential passes and network evaluations per sequence (standard error, sample count).
    rounds_quantiles, calls_quantiles : dict
        ``min``, ``p05``, ``median``, ``p95``, ``max`` of the samples.
    ser : Estimate
        The share of samples outside the support (0 for a lossless decoder with the oracle; spiffy:
        its base sampler's SER).
    seconds : float
        Wall seconds of the sampling.
    """

    language: str
    length: int
    decoder: str
    label: str
    rounds: Estimate
    calls: Estimate
    rounds_quantiles: dict
    calls_quantiles: dict
    ser: Estimate
    seconds: float


def lossless_point(language: str | Any, length: int, name: str, options: Mapping[str, Any] | None = None, *,
                   samples: int = 1000, seed: int = 0, steps: int | None = None,
                   schedule: str = "linear") -> LosslessPoint:
    """``samples`` sequences of decoder ``name`` at ``L = length`` (seeded), their rounds, calls and SER."""
    from numerics.inference.forward_backward import log_q

    if int(samples) != samples or samples < 2:
        raise ValueError(f"samples must be an integer >= 2 (a standard error needs two), got {samples!r}")
    lang, lang_name = _language(language)
    decoder = build_lossless(name, options, length, steps=steps, schedule=schedule)
    t0 = time.perf_counter()
    run = decoder.sample(lang, length, int(samples), np.random.default_rng(seed))
    seconds = time.perf_counter() - t0
    errors = (~np.isfinite(log_q(lang, run.tokens))).astype(np.float64)
    return LosslessPoint(lang_name, length, name, decoder.label, _mean(run.rounds, "rounds"), _mean(run.calls, "calls"),
                         _quantiles(run.rounds), _quantiles(run.calls), _mean(errors, "ser"), seconds)


def lossless_exact(language: str | Any, length: int, name: str, options: Mapping[str, Any] | None = None, *,
                   steps: int | None = None, schedule: str = "linear") -> dict:
    """The exact law of (rounds, calls) of decoder ``name`` on a tiny case, and how far its output law is
    from ``q`` (``max_abs_p_minus_q``; for spiffy also from its base sampler's exact law)."""
    from numerics.exact import lossless as ex
    from numerics.exact.enumerate import enumerate_output_law

    lang, lang_name = _language(language)
    decoder = build_lossless(name, options, length, steps=steps, schedule=schedule)
    if name == "assd":
        law = ex.assd_law(lang, length, decoder.draft_length)
    elif name == "self-spec":
        law = ex.self_spec_law(lang, length, decoder.draft_length)
    elif name == "autospec":
        law = ex.autospec_law(lang, length)
    else:
        law = ex.spiffy_law(lang, length, decoder)
    out = {"language": lang_name, "length": length, "decoder": name, "label": decoder.label,
           "rounds": Estimate(law.expected("rounds"), 0.0, "enumerate"),
           "calls": Estimate(law.expected("calls"), 0.0, "enumerate"),
           "cost_law": [{"rounds": r, "calls": c, "probability": p} for (r, c), p in sorted(law.cost.items())],
           "max_abs_p_minus_q": float(np.abs(law.p - law.q).max())}
    if name == "spiffy":
        base = enumerate_output_law(lang, length, decoder.schedule, undefined="uniform").law.p
        out["max_abs_p_minus_base"] = float(np.abs(law.p - base).max())
    return out
