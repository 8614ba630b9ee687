"""``mdm-theory bench decoders``: each decoder's Monte Carlo point against the random sampler's.

The random point is :func:`validation.sweep.evaluate_point` (``method="mc"``, fast oracle kernel);
each decoder point is :func:`validation.decoders_point.decoder_point` (``method="mc"``, the compiled
oracle path of :mod:`numerics.sampling._decoder_numba`), on the same language, ``L``, ``N`` and sample count (default
``2gram``, ``L = 512``, ``N = 64``, 1000 samples), measured in one run, best of ``--repeats``,
after a warm-up point of each; ``--decoders`` defaults to every decoder of :data:`BENCH_DECODERS`
(the full table in one command). The issue-20 target is ``decoder / random <= 3`` (the generic
path, kept as the reference and for learned denoisers, is 40-90x). On a shared machine
the ratio is the figure; the load average and numba's thread count are printed next to it
(``NUMBA_NUM_THREADS=1`` gives the 1-thread figures), and beside wall seconds the process's CPU
seconds (all threads), which vary less than the wall clock on a loaded machine.
"""

from __future__ import annotations

import os
import time

import click

from ._common import AliasOption, bench_text, emit, json_option

__all__ = ["BENCH_COMMANDS", "BENCH_DECODERS", "RATIO_TARGET", "run_decoder_benchmark"]

RATIO_TARGET = 3.0  # issue 20: a decoder's MC point costs at most 3x the random sampler's point


def _schedule(steps: int):
    from numerics.schedules import make_schedule

    return make_schedule("linear", steps)


def _bench_decoders() -> dict:
    """``{name: (spec, options)}``: every preset of every decoder of the registry (``NAME`` or ``NAME-SUFFIX``)."""
    from numerics.sampling.registry import DECODERS, decoder_names

    return {label: (DECODERS[n], opts) for n in decoder_names("decoder")
            for label, opts in DECODERS[n].preset_names().items()}


#: The decoders the benchmark times (``--decoders`` picks among them; the default is all of them):
#: ``NAME`` or ``NAME-SUFFIX`` of each preset of the registry's decoders.
BENCH_DECODERS = tuple(_bench_decoders())


def _decoders(names: tuple[str, ...], steps: int):
    known = _bench_decoders()
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"unknown decoder(s) {unknown or names}; choose from {list(known)}")
    out = {}
    for n in names:
        spec, opts = known[n]
        out[n] = spec.build(opts, steps=steps if "steps" in spec.needs else None,
                            schedule=_schedule(steps) if "schedule" in spec.needs else None)
    return out


def run_decoder_benchmark(language: str = "2gram", length: int = 512, steps: int = 64, samples: int = 1000,
                          names: tuple[str, ...] | None = None, repeats: int = 1) -> dict:
    """Seconds of the random point and of each decoder point (best of ``repeats``) and their ratios.

    ``names``: from :data:`BENCH_DECODERS` (``None``: all of them).
    """
    from numerics._threads import kernel_threads
    from validation.decoders_point import decoder_point
    from validation.sweep import PointConfig, evaluate_point

    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    names = tuple(BENCH_DECODERS) if names is None else tuple(names)
    decoders = _decoders(names, steps)

    def point(name: str, L: int, n: int) -> tuple[float, float]:
        """``(wall seconds, CPU seconds of the process (all threads))`` of one point."""
        t0, c0 = time.perf_counter(), time.process_time()
        if name == "random":
            evaluate_point(PointConfig(language, L, steps, method="mc", samples=n))
        else:
            decoder_point(language, L, decoders[name], method="mc", samples=n)
        return time.perf_counter() - t0, time.process_time() - c0

    every = ("random",) + tuple(names)
    for name in every:  # warm-up: compile or load every kernel first
        point(name, steps, 4)
    load_before = os.getloadavg()
    best = {name: float("inf") for name in every}
    best_cpu = dict(best)
    for _ in range(repeats):
        for name in every:
            wall, cpu = point(name, length, samples)
            best[name], best_cpu[name] = min(best[name], wall), min(best_cpu[name], cpu)
    ratios = {name: best[name] / best["random"] for name in names}
    return {"language": language, "length": length, "steps": steps, "samples": samples, "repeats": repeats,
            "decoders": {n: d.label for n, d in decoders.items()}, "seconds": best, "ratio_to_random": ratios,
            "cpu_seconds": best_cpu,
            "cpu_ratio_to_random": {name: best_cpu[name] / best_cpu["random"] for name in names},
            "target_ratio": RATIO_TARGET, "within_target": {n: r <= RATIO_TARGET for n, r in ratios.items()},
            "threads": kernel_threads(),
            "cpu_count": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


@click.command("decoders")
@click.option("--language", default="2gram", show_default=True)
@click.option("--length", "-L", type=int, default=512, show_default=True)
@click.option("-N", "--n-steps", "--steps", "steps", cls=AliasOption, hidden_aliases=("--steps",), type=click.IntRange(1),
              default=64, show_default=True, help="N of every sampler that takes steps (random, llada, remdm, ...).")
@click.option("--samples", type=int, default=1000, show_default=True)
@click.option("--decoders", "names", default=",".join(BENCH_DECODERS), show_default=True,
              help="Comma-separated, each a preset of the registry's decoders: "
                   + ", ".join(f"{n} ({', '.join(f'{k} {v}' for k, v in o.items()) or 'defaults'})"
                               for n, (_, o) in _bench_decoders().items())
                   + "; the default is all of them (the full table in one command).")
@click.option("--repeats", type=int, default=1, show_default=True, help="Best of this many timings per point.")
@json_option
def bench_decoders_command(language, length, steps, samples, names, repeats, as_json):
    """Decoders vs random sampler Monte Carlo point, same run (target: decoder <= 3x random)."""
    chosen = tuple(s.strip() for s in names.split(",") if s.strip())
    try:
        result = run_decoder_benchmark(language, length, steps, samples, chosen, repeats)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    emit(result, as_json, bench_text(result, chosen, RATIO_TARGET))


BENCH_COMMANDS = (bench_decoders_command,)
