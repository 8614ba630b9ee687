"""The smallest number of steps ``N`` at which the sampler meets a target: SER, TER or KL at most ``T``.

Search (:func:`search_steps`): exponential search ``N = 1, 2, 4, ...`` until the target is met
(or ``max_steps`` is reached), then bisection between the last ``N`` that missed and the first
that met, so about ``2 log2 N`` evaluations instead of a grid. The expected calls grow with ``N``,
so no ``N`` beyond the first grid value meeting the target is cheaper; inside the bisected interval
the answer is the smallest ``N`` *evaluated* that meets it (the metric need not be monotone in
``N``: the callers report whether it was on the ``N`` evaluated). The answer's neighbour ``N - 1``
is evaluated and reported.

What is compared with ``T`` at each ``N`` (:func:`oracle_metric`), with the method stated:

* exact where an exact method fits (:func:`numerics.methods.choose_method`: the interval closed
  forms at any ``L``, the DP or enumeration at small ``L``): the value itself;
* otherwise Monte Carlo: SER from ``samples`` sampler runs with the exact support check; the
  target counts as met when the one-sided upper confidence bound at ``confidence`` is at most
  ``T`` (Clopper-Pearson for SER), so "met" holds with that confidence at each ``N`` evaluated;
* ``kl`` and ``ter`` without the exact law (large ``L``): the Jensen bound ``E_tau KL(q || p(. |
  tau))`` (Lemma B.2) -- exact for Markov chains and the interval language -- bounds ``KL`` from
  above, and ``exp((H(q) + bound) / L)`` bounds ``TER``; an ``N`` found this way suffices (the
  smallest ``N`` for the metric itself may be smaller), and the result says so.

A learned model (:func:`model_ser`) is searched for SER only: its output law is not available
exactly, so KL and TER are not defined here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from numerics.estimate import Estimate
from numerics.methods import choose_method
from numerics.metrics import exact_metrics, jensen_bound, oracle_ser_mc
from validation.step_search import DEFAULT_MAX_STEPS, Evaluation, StepsNeeded, search_steps
from validation.sweep import PointConfig

__all__ = ["METRICS", "Evaluation", "StepsNeeded", "search_steps", "oracle_metric", "model_ser", "steps_needed",
           "uniform_noise_metric", "DEFAULT_MAX_STEPS"]

METRICS = ("ser", "ter", "kl")
def _meets(e: Estimate, target: float) -> bool:
    if e.exact:
        return e.value <= target
    return e.interval()[1] <= target  # one-sided: the upper end of the interval at the search's level


def oracle_metric(cfg: PointConfig, metric: str, target: float, language: Any, confidence: float) -> Callable[[int], Evaluation]:
    """``N -> Evaluation`` of the oracle sampler's ``metric`` at ``cfg`` with ``steps = N`` (module docstring).

    ``confidence`` is one-sided: Monte Carlo intervals are computed at the two-sided level
    ``2 confidence - 1``, whose upper end is the one-sided bound.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")
    level = round(2.0 * confidence - 1.0, 12)  # 0.9, not 0.8999999999999999 from 2 * 0.95 - 1
    spec, L = cfg.language, cfg.length

    def evaluate(n: int) -> Evaluation:
        point = replace(cfg, n_steps=int(n))
        schedule = point.make_schedule()
        choice = choose_method(point.method, language, L, schedule, point.samples, name=spec)
        if choice.method != "mc":
            e = getattr(exact_metrics(choice.method, language, L, schedule), metric)
            return Evaluation(n, metric, e, _meets(e, target))
        if metric == "ser":
            e = oracle_ser_mc(language, schedule, point.samples, L, point.rng("sampler-ser"),
                              batch_size=point.batch_size, confidence=level)
            return Evaluation(n, metric, e, _meets(e, target))
        bound = jensen_bound(language, L, schedule, samples=point.samples, rng=point.rng("data"),
                             steps_rng=point.rng("jensen-steps"), confidence=level)
        if metric == "kl":
            return Evaluation(n, "kl_jensen_bound", bound, _meets(bound, target))
        e = _ter_bound(bound, "Jensen", spec, language, L)
        return Evaluation(n, "ter_jensen_bound", e, _meets(e, target))

    return evaluate


def _ter_bound(bound: Estimate, what: str, spec: str, language: Any, L: int) -> Estimate:
    """``exp((H(q) + bound) / L)``: an upper bound on TER from an upper bound on KL, its interval mapped along."""
    from validation.calibrate import data_entropy

    H = data_entropy(language, L)
    if H is None:
        raise ValueError(f"--metric ter at L = {L}: {spec} has no exact entropy H(q) and no exact method fits; "
                         "use a smaller --length, an n-gram or interval language, or --metric kl")
    lo, hi = bound.interval()
    return Estimate(math.exp((H.value + bound.value) / L), math.exp((H.value + bound.value) / L) * bound.stderr / L,
                    f"exp((H(q) + {what} bound) / L): H {H.method}, bound {bound.method}", bound.samples,
                    None if bound.exact else math.exp((H.value + lo) / L),
                    None if bound.exact else math.exp((H.value + hi) / L), bound.confidence)


def uniform_noise_metric(cfg: PointConfig, metric: str, target: float, language: Any,
                         confidence: float) -> Callable[[int], Evaluation]:
    """``N -> Evaluation`` of the factorized uniform-noise sampler's ``metric`` at ``cfg`` with ``steps = N``
    (:func:`validation.experiments.noise.uniform_point`, as ``exact --noise uniform`` computes it).

    Exact (the chain over canvases) while ``V^L`` fits; beyond, Monte Carlo: SER with its Clopper-Pearson
    bound, ``kl`` through the path KL (an upper bound on ``KL(q || p)``, quantity ``kl_path_bound``) and
    ``ter`` through ``exp((H(q) + path bound) / L)`` (``ter_path_bound``): an ``N`` found by a bound suffices.
    ``confidence`` is one-sided, as in :func:`oracle_metric`.
    """
    from validation.calibrate import _one_sided
    from validation.experiments.noise import uniform_point

    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")

    def evaluate(n: int) -> Evaluation:
        p = uniform_point(cfg.language, cfg.length, int(n), cfg.schedule, cfg.method, cfg.samples, cfg.seed)
        if p["method"] != "mc":
            e = p[metric]
            return Evaluation(n, metric, e, _meets(e, target))
        if metric == "ser":
            e = _one_sided(p["ser"], confidence)
            return Evaluation(n, metric, e, _meets(e, target))
        bound = _one_sided(p["kl_path_bound"], confidence)
        if metric == "kl":
            return Evaluation(n, "kl_path_bound", bound, _meets(bound, target))
        e = _ter_bound(bound, "path", cfg.language, language, cfg.length)
        return Evaluation(n, "ter_path_bound", e, _meets(e, target))

    return evaluate


def model_ser(model: Any, language: Any, length: int, schedule_name: str, samples: int, seed: int, target: float, *,
              confidence: float, batch_size: int | None = None) -> Callable[[int], Evaluation]:
    """``N -> Evaluation`` of a learned denoiser's SER (Monte Carlo through the shared factorized sampler).

    ``model`` is any :class:`numerics.sampling.denoiser.Denoiser` (e.g. ``neural.sample.TorchDenoiser``);
    the draws at ``N`` come from ``seed`` and ``N`` alone.
    """
    import numpy as np

    from numerics.sampling.montecarlo import ser_mc
    from numerics.sampling.samplers import sample_factorized
    from numerics.schedules import make_schedule

    level = round(2.0 * confidence - 1.0, 12)  # 0.9, not 0.8999999999999999 from 2 * 0.95 - 1

    def evaluate(n: int) -> Evaluation:
        rng = np.random.default_rng([int(seed), int(n)])
        run = sample_factorized(model, make_schedule(schedule_name, int(n)), samples, length, rng, batch_size=batch_size)
        e = ser_mc(language, run, level)
        return Evaluation(n, "ser", e, _meets(e, target))

    return evaluate


def steps_needed(language: str | Any, length: int, metric: str, target: float, sampler: str = "random", *,
                 schedule: str = "linear", method: str = "auto", samples: int = 1000, confidence: float = 0.95,
                 max_steps: int = DEFAULT_MAX_STEPS, seed: int = 0, tie_seed: int = 0, batch_size: int | None = None,
                 denoiser: Any = None, lossless: str | Sequence[str] = "", noise: str = "mask") -> StepsNeeded:
    """``mdm-theory steps-needed`` from Python, with its names and defaults: the smallest ``N`` with
    ``metric <= target`` (:class:`StepsNeeded`; ``n_steps`` is ``None`` when no ``N <= max_steps`` meets it).

    Parameters
    ----------
    language : a preset name or an ``.npz`` file (a language object too, with ``denoiser``).
    length, metric, target : ``L``; ``"ser"``, ``"ter"`` or ``"kl"``; the target.
    sampler : ``"random"`` (the paper's factorized sampler) or ``"topk"`` (the samplers whose number of
        steps is searched here; the others' parameters: :func:`validation.calibrate.calibrate`).
    schedule, method, samples, confidence, max_steps, seed, tie_seed, batch_size : as on the command line.
    denoiser : any :class:`numerics.sampling.denoiser.Denoiser` (your own network, say) instead of the
        oracle: the steps the factorized sampler needs with it, by Monte Carlo (``metric="ser"`` only).
    lossless : lossless decoders reported beside the answer (``--lossless``: names comma-separated, or a
        sequence; ``assd``, ``autospec``, ``self-spec``): :attr:`StepsNeeded.lossless`, one
        :class:`validation.calibrate.Setting` each (the metric of the output law, no steps, ``E[calls]``
        by Monte Carlo with ``samples`` and ``seed``). Needs a preset name or file.
    noise : ``"mask"`` or ``"uniform"`` (``--noise``): the steps of the factorized uniform-noise reverse process
        (``sampler="random"``, the oracle, a preset name or file): exact while ``V^L`` fits, beyond that Monte
        Carlo with the path KL's bound for ``kl`` and ``ter`` (:func:`uniform_noise_metric`).
    """
    from numerics.languages.presets import load_language
    from validation.calibrate import check_lossless_names, lossless_settings

    names = [n.strip() for n in (lossless.split(",") if isinstance(lossless, str) else lossless) if n.strip()]
    if names:
        if not isinstance(language, str):
            raise ValueError("lossless decoders are reported for a preset name or an .npz path (they read the "
                             "language's joint density), not a language object")
        check_lossless_names(names, metric)
    if noise not in ("mask", "uniform"):
        raise ValueError(f"noise must be 'mask' or 'uniform', got {noise!r}")
    found = _search(language, length, metric, target, sampler=sampler, schedule=schedule, method=method,
                    samples=samples, confidence=confidence, max_steps=max_steps, seed=seed, tie_seed=tie_seed,
                    batch_size=batch_size, denoiser=denoiser, noise=noise,
                    lang=load_language(language) if isinstance(language, str) else language)
    if names:
        found = replace(found, lossless=tuple(lossless_settings(language, length, metric, target, names,
                                                                samples=samples, seed=seed)))
    return found


def _search(language, length, metric, target, *, sampler, schedule, method, samples, confidence, max_steps, seed,
            tie_seed, batch_size, denoiser, noise, lang) -> StepsNeeded:
    """:func:`steps_needed`'s search (its lossless rows aside)."""
    if noise == "uniform" and (sampler != "random" or denoiser is not None or not isinstance(language, str)):
        raise ValueError("noise='uniform' searches the steps of sampler='random' with the oracle, on a preset name "
                         "or an .npz path")
    if denoiser is not None:
        if metric != "ser" or sampler != "random":
            raise ValueError("a denoiser of your own is searched for metric='ser' with sampler='random' only "
                             "(its output law is not available exactly)")
        return search_steps(model_ser(denoiser, lang, length, schedule, samples, seed, target, confidence=confidence,
                                      batch_size=batch_size), max_steps)
    if not isinstance(language, str):
        raise ValueError("language must be a preset name or an .npz path (a language object needs a denoiser)")
    if sampler not in ("random", "topk"):
        raise ValueError(f"steps_needed searches the steps of 'random' and 'topk', not {sampler!r}: the other "
                         "samplers' parameter is searched by validation.calibrate.calibrate")
    cfg = PointConfig(language, length, 1, schedule, method, samples, seed, None, batch_size or 1, tie_seed=tie_seed)
    if noise == "uniform":
        from validation.sweep import check_costs

        check_costs([replace(cfg, noise="uniform")])  # the chain or a Monte Carlo run beyond its size, refused first
        return search_steps(uniform_noise_metric(cfg, metric, target, lang, confidence), max_steps)
    if sampler == "random":
        return search_steps(oracle_metric(cfg, metric, target, lang, confidence), max_steps)
    from validation.calibrate import _status, evaluate_setting

    def evaluate(n: int) -> Evaluation:
        point = replace(cfg, n_steps=int(n), sampler=sampler)
        e, quantity, _ = evaluate_setting(point.make_sampler(), metric, lang, length, method=method,
                                          samples=samples, rng=seed, confidence=confidence, names=(language, None))
        return Evaluation(n, quantity, e, _status(e, target) == "meets")

    return search_steps(evaluate, max_steps)
