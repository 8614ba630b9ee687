"""``mdm-theory calibrate``: the cheapest sampler setting meeting a SER / TER / KL target, and ``bench calibrate``.

Thin CLI over :func:`validation.calibrate.calibrate`.
"""

from __future__ import annotations

import time

import click

from numerics.schedules import MAX_STEPS  # the largest N a schedule holds: --max-steps above it is refused at once
from validation.commands._common import (
    emit,
    format_estimate,
    json_option,
    progress_option,
    show_progress,
)
from validation.commands._schedule import check_schedule, schedule_option

__all__ = ["bench_calibrate_command", "calibrate_command", "calibration_record"]


def _setting(s) -> dict | None:
    if s is None:
        return None
    return {"family": s.family, "parameter": s.parameter, "value": s.value, "label": s.label, "calls": s.calls,
            "metric": s.metric, "quantity": s.quantity, "status": s.status}


def calibration_record(c) -> dict:
    """The JSON shape of a :class:`validation.calibrate.Calibration` (docs/cli.md)."""
    return {
        "language": c.language, "length": c.length, "metric": c.metric, "target": c.target, "met": c.met,
        "setting": _setting(c.cheapest), "calls": c.cheapest.calls if c.met else None,
        "best": _setting(c.best), "may_meet": _setting(c.may_meet), "confidence": c.confidence,
        "front": [_setting(s) for s in c.front],
        "families": [{"family": fs.family, "cheapest": _setting(fs.cheapest),
                      "settings": [_setting(s) for s in fs.settings]} for fs in c.searches],
    }


@click.command("calibrate")
@click.option("--language", required=True, metavar="NAME|FILE.npz", help="Preset name or .npz language file.")
@click.option("--length", "-L", type=click.IntRange(min=1), required=True, help="Sequence length L.")
@click.option("--metric", type=click.Choice(["ser", "ter", "kl"]), required=True,
              help="ser: sequence error rate; ter: token error rate TER(p) (a perplexity); kl: KL(q || p).")
@click.option("--target", type=float, required=True, help="Find the cheapest setting with metric <= TARGET.")
@click.option("--relative", is_flag=True,
              help="--metric ter: TARGET is the excess over the data's TER(q), e.g. 0.01 = within 1%.")
@click.option("--sampler", "samplers", default="random", show_default=True,
              help="Comma-separated families: random, topk, llada, llada-b8, llada-b32, remdm (steps searched), "
                   "threshold, entropy-sum, eb (gamma searched), fast-dllm (threshold searched), fast-dllm-factor "
                   "(factor searched).")
@schedule_option
@click.option("--method", type=click.Choice(["auto", "closed-form", "dp", "enumerate", "mc"]), default="auto",
              show_default=True, help="How each setting is computed: auto = the fastest exact method that fits, "
                                      "else Monte Carlo.")
@click.option("--samples", type=click.IntRange(min=2), default=1000, show_default=True,
              help="Monte Carlo samples per setting evaluated.")
@click.option("--confidence", type=click.FloatRange(0.5, 1.0, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Monte Carlo: one-sided confidence of 'meets'.")
@click.option("--max-steps", type=click.IntRange(min=1, max=MAX_STEPS), default=1 << 12, show_default=True,
              help="Largest number of steps tried (random).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the Monte Carlo draws.")
@progress_option
@json_option
def calibrate_command(language, length, metric, target, relative, samplers, schedule, method, samples, confidence,
                      max_steps, seed, progress, as_json):
    """The cheapest setting (fewest expected denoiser calls) of each sampler family that meets a target.

    Each family's parameter is searched along the direction of more calls (doubling then bisection
    for steps, bisection for gamma), every setting evaluated is kept, and the answer is the Pareto
    front of (expected calls, metric) with the cheapest setting meeting TARGET. Every number says
    its method (exact / DP / closed form / Monte Carlo). A Monte Carlo setting "meets" only when
    its interval's upper end does, and "may meet" when only its estimate does. A target no setting
    tried meets answers met: false with the best found (exit 0).
    """
    from validation.calibrate import TargetError, calibrate

    t0 = time.perf_counter()
    names = [s.strip() for s in samplers.split(",") if s.strip()]
    if not names:
        raise click.BadParameter("name at least one sampler family", param_hint="--sampler")
    check_schedule(schedule, [language], [length])
    verbose = show_progress(progress)

    def log(s):
        if verbose:
            click.echo(f"{s.label}: {s.quantity} {format_estimate(_rec(s.metric))}, calls "
                       f"{s.calls.value:.4g} -> {s.status}", err=True)

    try:
        c = calibrate(language, length, metric, target, names, relative=relative, schedule=schedule, method=method,
                      samples=samples, seed=seed, confidence=confidence, max_steps=max_steps, on_setting=log)
    except TargetError as exc:
        raise click.BadParameter(str(exc), param_hint="--target") from None
    except ValueError as exc:
        if "unknown sampler family" in str(exc):
            raise click.BadParameter(str(exc), param_hint="--sampler") from None
        raise
    result = {**calibration_record(c), "elapsed_s": time.perf_counter() - t0}
    if not c.met:
        result["null_reason"] = {"setting": f"no setting tried meets {metric} <= {c.target:g}",
                                 "calls": "not met"}
    emit(result, as_json, _human(result, c))


def _rec(e) -> dict:
    from numerics.provenance import to_jsonable

    return to_jsonable(e)


def _human(result: dict, c) -> str:
    what = f"{c.metric.upper()} <= {c.target:.6g}"
    if c.met:
        s = c.cheapest
        head = (f"{c.language}, L = {c.length}: {what} is met most cheaply by {s.label} "
                f"({s.parameter} = {s.value:g}), {s.calls.value:.4g} calls, {s.quantity} {format_estimate(_rec(s.metric))}")
    else:
        b = c.best
        head = (f"{c.language}, L = {c.length}: not met: no setting tried gives {what}; best found {b.label}, "
                f"{b.quantity} {format_estimate(_rec(b.metric))}")
    lines = [head, "  Pareto front (calls, metric):"]
    lines += [f"    {s.calls.value:8.4g}  {s.quantity} {format_estimate(_rec(s.metric))}  [{s.label}; {s.status}]"
              for s in c.front]
    if c.may_meet is not None and not (c.met and c.may_meet.calls.value >= c.cheapest.calls.value):
        lines.append(f"  may meet (estimate only): {c.may_meet.label}, {c.may_meet.calls.value:.4g} calls")
    lines.append(f"  {sum(len(fs.settings) for fs in c.searches)} settings evaluated, {result['elapsed_s']:.2f} s")
    return "\n".join(lines)


@click.command("calibrate")
@click.option("--language", default="2gram", show_default=True)
@click.option("--length", "-L", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--metric", type=click.Choice(["ser", "ter", "kl"]), default="ter", show_default=True)
@click.option("--target", type=float, default=0.01, show_default=True,
              help="--metric ter: relative excess over TER(q); else absolute.")
@click.option("--sampler", default="random", show_default=True, help="One family.")
@click.option("--samples", type=click.IntRange(min=2), default=1000, show_default=True)
@json_option
def bench_calibrate_command(language, length, metric, target, sampler, samples, as_json):
    """Time calibrate for one family against the equivalent full grid, measured in the same run.

    The grid evaluates every parameter value from the cheapest up to the answer (steps 1..N for a
    step family; for a gamma family, as many evenly spaced values as the search has resolution);
    past 600 s it is extrapolated from the settings measured. Wall and CPU times (all threads) of
    both are printed: on a shared machine the CPU time is the figure to compare with an idle one.
    """
    from numerics.languages.presets import load_language
    from validation.calibrate import (
        GAMMA_BISECTIONS,
        build_sampler,
        calibrate,
        evaluate_setting,
        family,
    )
    from validation.sweep import PointConfig

    fam = family(sampler)
    t0, c0 = time.perf_counter(), time.process_time()
    c = calibrate(language, length, metric, target, [sampler], relative=metric == "ter", samples=samples)
    t_search, cpu_search = time.perf_counter() - t0, time.process_time() - c0
    n_search = sum(len(fs.settings) for fs in c.searches)
    lang = load_language(language)
    base = PointConfig(language, length, 1, samples=samples)
    if fam.integer:
        top = int(c.cheapest.value) if c.met else int(max(s.value for s in c.searches[0].settings))
        values = list(range(1, top + 1))
    else:
        low, high = fam.range_for(length, lang.vocab_size, 1 << 12)
        n = 1 << GAMMA_BISECTIONS
        values = [low + (high - low) * k / n for k in range(n + 1)]
    t0, c0 = time.perf_counter(), time.process_time()
    limit = 600.0
    done = 0
    for v in values:
        evaluate_setting(build_sampler(fam, base, v), metric, lang, length, samples=samples)
        done += 1
        if time.perf_counter() - t0 > limit:
            break
    t_grid = time.perf_counter() - t0
    grid_total = t_grid * len(values) / done
    cpu_grid_total = (time.process_time() - c0) * len(values) / done
    result = {"language": language, "length": length, "metric": metric, "family": sampler, "met": c.met,
              "setting": c.cheapest.label if c.met else None, "search_s": t_search, "search_cpu_s": cpu_search,
              "search_settings": n_search, "grid_cpu_s": cpu_grid_total,
              "grid_s": grid_total, "grid_settings": len(values), "grid_measured_settings": done,
              "speedup": grid_total / t_search if t_search > 0 else None}
    emit(result, as_json, f"calibrate {sampler} on {language}, L = {length}, {metric}: {t_search:.2f} s "
                          f"({cpu_search:.2f} s CPU, all threads) for "
                          f"{n_search} settings; the full grid of {len(values)} settings: {grid_total:.2f} s "
                          f"({cpu_grid_total:.2f} s CPU) "
                          f"({'measured' if done == len(values) else f'{done} measured, extrapolated'}); "
                          f"{grid_total / t_search:.1f}x")
