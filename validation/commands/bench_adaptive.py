"""``mdm-theory bench adaptive``: an adaptive sampler's Monte Carlo point against the random sampler's.

Both points are :func:`validation.sweep.evaluate_point` with ``method="mc"`` on the same
language, ``L``, ``N`` and sample count (default: ``2gram``, ``L = 512``, ``N = 64``, 1000
samples), measured in the same run, alternating, best of ``--repeats`` each (a warm-up point of
each sampler first, so numba compilation is not timed). The random point samples with the fast
oracle kernel and takes the exact Jensen bound; the adaptive point samples with the incremental
adaptive kernel (:mod:`numerics.sampling._adaptive_numba`) and replays the rule along as many
true sequences for ``KL(q || p)`` by the chain-rule identity. The target is
``adaptive / random <= 3`` (issue 11). Timings on a shared machine are noisy; the ratio is the
figure that means something, and the load average is printed next to it.
"""

from __future__ import annotations

import os
import time

import click

from ._common import emit, json_option

__all__ = ["BENCH_COMMANDS", "run_benchmark", "RATIO_TARGET"]

RATIO_TARGET = 3.0  # issue 11: an adaptive MC point costs at most 3x the random sampler's point


def _timed(cfg) -> tuple[float, dict]:
    from validation.sweep import evaluate_point

    t0 = time.perf_counter()
    result = evaluate_point(cfg)
    return time.perf_counter() - t0, result


def run_benchmark(language: str = "2gram", length: int = 512, steps: int = 64, samples: int = 1000,
                  samplers: tuple[str, ...] = ("topk",), gamma: float | None = None, repeats: int = 1) -> dict:
    """Seconds of the random point and of each adaptive point (best of ``repeats``) and their ratios."""
    from validation.sweep import PointConfig

    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")

    def config(name: str, L: int, n: int) -> PointConfig:
        return PointConfig(language, L, steps, method="mc", samples=n, sampler=name,
                           gamma=None if name in ("random", "topk") else gamma)

    names = ("random",) + tuple(samplers)
    for name in names:  # warm-up: compile (or load) every kernel before anything is timed
        _timed(config(name, 16, 4))
    load_before = os.getloadavg()
    best = {name: float("inf") for name in names}
    results = {}
    for _ in range(repeats):
        for name in names:
            seconds, results[name] = _timed(config(name, length, samples))
            best[name] = min(best[name], seconds)
    ratios = {name: best[name] / best["random"] for name in samplers}
    return {
        "language": language, "length": length, "steps": steps, "samples": samples, "repeats": repeats,
        "seconds": best, "ratio_to_random": ratios, "target_ratio": RATIO_TARGET,
        "within_target": {name: r <= RATIO_TARGET for name, r in ratios.items()},
        "mean_calls": {name: results[name]["nfe"]["value"] for name in names},
        "cpu_count": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
    }


@click.command("adaptive")
@click.option("--language", default="2gram", show_default=True)
@click.option("--length", "-L", type=int, default=512, show_default=True)
@click.option("--steps", "-N", type=int, default=64, show_default=True, help="N of the random and topk samplers.")
@click.option("--samples", type=int, default=1000, show_default=True)
@click.option("--samplers", default="topk", show_default=True,
              help="Comma-separated adaptive samplers to time (topk, threshold, entropy-sum).")
@click.option("--gamma", type=float, default=None, help="gamma of threshold / entropy-sum.")
@click.option("--repeats", type=int, default=1, show_default=True, help="Best of this many timings per point.")
@json_option
def bench_adaptive_command(language, length, steps, samples, samplers, gamma, repeats, as_json):
    """Adaptive vs random sampler Monte Carlo point, same run (target: adaptive <= 3x random)."""
    names = tuple(s.strip() for s in samplers.split(",") if s.strip())
    try:
        result = run_benchmark(language, length, steps, samples, names, gamma, repeats)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    lines = [f"random: {result['seconds']['random']:.2f} s"]
    lines += [f"{n}: {result['seconds'][n]:.2f} s, {result['ratio_to_random'][n]:.2f}x random "
              f"({'within' if result['within_target'][n] else 'ABOVE'} the {RATIO_TARGET:g}x target)" for n in names]
    lines.append(f"load {result['loadavg_before'][0]:.1f} -> {result['loadavg_after'][0]:.1f} on "
                 f"{result['cpu_count']} CPUs (a shared machine: the ratio, measured in one run, is the figure)")
    emit(result, as_json, "\n".join(lines))


BENCH_COMMANDS = (bench_adaptive_command,)
