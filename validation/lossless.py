"""A lossless decoder's point: its expected rounds and calls at SER = 0, by Monte Carlo or exactly.

The lossless decoders (:data:`numerics.sampling.lossless.LOSSLESS`, ``docs/methods/lossless.md``) have
SER = 0 on the support with the oracle (their output law is ``q``; ``spiffy``'s is its base sampler's)
and a *random* number of rounds and calls. :func:`lossless_point` estimates both (mean, standard error,
sample count, quantiles, the SER of the samples as a check); :func:`lossless_exact` gives their exact
law on a tiny case (:mod:`numerics.exact.lossless`). :func:`validation.calibrate.lossless_searches` puts a decoder on
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

__all__ = ["BENCH_RATIO_TARGET", "DRAFT_GRID_RULE", "SATURATION_SE", "LosslessPoint", "build_lossless",
           "draft_length_search", "lossless_exact", "lossless_point"]

BENCH_RATIO_TARGET = 5.0  # issue 32: a lossless MC point costs at most 5x the random sampler's at N = 64
#: :func:`draft_length_search` stops once a doubling lowers E[calls] by at most this many standard errors.
SATURATION_SE = 2.0
#: :func:`draft_length_search`'s grid in words (calibrate reports it).
DRAFT_GRID_RULE = ("draft length k = 1, 2, 4, ... up to L (L the last), stopping at the first doubling from k >= 4 "
                   f"that lowers E[calls] by at most {SATURATION_SE:g} standard errors of the difference; the k of "
                   "fewest E[calls]")


def _language(language: str | Any):
    from numerics.languages.presets import load_language

    return (load_language(language), language) if isinstance(language, str) else (language, repr(language))


def build_lossless(name: str, options: Mapping[str, Any] | None, length: int, *, steps: int | None = None,
                   schedule: str = "linear", base_options: Mapping[str, Any] | None = None):
    """The decoder ``name`` with ``options`` (registry defaults for the unset ones), checked against ``L``.

    ``spiffy`` takes its base sampler's ``steps`` N (and ``schedule``) where the base does (``random``,
    ``llada``, ...) and the base's registry options ``base_options``. A bad name, option or draft
    length is a ``ValueError`` naming it (:class:`~numerics.sampling.lossless.LosslessError`).
    """
    from dataclasses import replace

    from numerics.sampling.lossless import lossless_spec
    from numerics.schedules import make_schedule

    spec = lossless_spec(name)
    if name != "spiffy":
        if steps is not None:
            raise ValueError(f"{name} takes no steps N (its rounds are random; -N is spiffy's base sampler's)")
        if base_options:
            raise ValueError(f"{name} has no base sampler (only spiffy)")
        decoder = spec.build(options, tie_seed=None)
    else:
        sched = None if steps is None else make_schedule(schedule, int(steps))
        decoder = replace(spec.build(options, tie_seed=None), schedule=sched,
                          base_options=tuple(sorted((base_options or {}).items())))
        if decoder.base != "random":
            decoder.base_sampler  # noqa: B018 - built (and its options checked) here, before any work
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
                   samples: int = 1000, seed: int = 0, steps: int | None = None, schedule: str = "linear",
                   base_options: Mapping[str, Any] | None = None) -> LosslessPoint:
    """``samples`` sequences of decoder ``name`` at ``L = length`` (seeded), their rounds, calls and SER."""
    from numerics.inference.forward_backward import log_q

    if int(samples) != samples or samples < 2:
        raise ValueError(f"samples must be an integer >= 2 (a standard error needs two), got {samples!r}")
    lang, lang_name = _language(language)
    decoder = build_lossless(name, options, length, steps=steps, schedule=schedule, base_options=base_options)
    t0 = time.perf_counter()
    run = decoder.sample(lang, length, int(samples), np.random.default_rng(seed))
    seconds = time.perf_counter() - t0
    errors = (~np.isfinite(log_q(lang, run.tokens))).astype(np.float64)
    return LosslessPoint(lang_name, length, name, decoder.label, _mean(run.rounds, "rounds"), _mean(run.calls, "calls"),
                         _quantiles(run.rounds), _quantiles(run.calls), _mean(errors, "ser"), seconds)


def draft_length_search(language: str | Any, length: int, name: str, *, samples: int = 1000,
                        seed: int = 0) -> list[tuple[int, LosslessPoint]]:
    """``name``'s Monte Carlo points over draft lengths (:data:`DRAFT_GRID_RULE`), in the order evaluated.

    Every draft length has the same output law (``q``; self-spec: the greedy sequence), so the only
    thing that varies is the cost: the cheapest draft length is the one of fewest expected calls.
    ``k = 1`` costs ``L`` calls exactly (a round of one exact draft), and so does ``k = 2`` (a round of 2
    calls commits exactly 2 tokens: the first draft is always kept, the second kept or redrawn); a
    longer window can only add accepted drafts to a round of 2 calls, until the first rejection usually
    comes before the window's end (saturation), where the search stops (from ``k = 4`` on): the difference of two points is judged by the hypot of
    their standard errors (the points share their seed, so this overstates the noise: it stops early,
    never late). The caller picks the fewest E[calls] among the points.
    """
    points: list[tuple[int, LosslessPoint]] = []
    k = 1
    while True:
        points.append((k, lossless_point(language, length, name, {"draft_length": k}, samples=samples, seed=seed)))
        if k == length:
            return points
        if k >= 4:  # k = 2 costs L calls as k = 1 does (a round of 2 calls commits exactly 2 tokens)
            before, now = points[-2][1].calls, points[-1][1].calls
            if before.value - now.value <= SATURATION_SE * math.hypot(before.stderr, now.stderr):
                return points
        k = min(2 * k, length)


def lossless_exact(language: str | Any, length: int, name: str, options: Mapping[str, Any] | None = None, *,
                   steps: int | None = None, schedule: str = "linear",
                   base_options: Mapping[str, Any] | None = None) -> dict:
    """The exact law of (rounds, calls) of decoder ``name`` on a tiny case, and how far its output law is
    from ``q`` (``max_abs_p_minus_q``; for spiffy also from its base sampler's exact law)."""
    from numerics.exact import lossless as ex
    from numerics.exact.enumerate import enumerate_output_law

    lang, lang_name = _language(language)
    decoder = build_lossless(name, options, length, steps=steps, schedule=schedule, base_options=base_options)
    if name == "assd":
        law = ex.assd_law(lang, length, decoder.draft_length, decoder.order)
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
    if name == "spiffy":  # the base's exact law: enumeration (random) or the decoders' DP (numerics.exact.decoders)
        from numerics.exact.decoders import decoder_exact

        base = (enumerate_output_law(lang, length, decoder.schedule, undefined="uniform").law.p if decoder.base == "random"
                else decoder_exact(lang, length, decoder.base_sampler).law.p)
        out["max_abs_p_minus_base"] = float(np.abs(law.p - base).max())
    return out
