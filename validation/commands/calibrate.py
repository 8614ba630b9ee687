"""``mdm-theory calibrate``: the cheapest sampler setting meeting a SER / TER / KL target, and ``bench calibrate``.

Thin CLI over :func:`validation.calibrate.calibrate`.
"""

from __future__ import annotations

import time

import click

from numerics.sampling.registry import REVISERS
from validation.canvas_samplers import option_flag
from validation.commands._common import (
    emit,
    format_estimate,
    json_option,
    progress_option,
    show_progress,
)
from validation.commands._decoders import DECODER_NAMES, check_decoder_method
from validation.commands._revisers import REVISER_NAMES, check_reviser_options, reviser_options
from validation.commands._schedule import check_schedule, schedule_option
from validation.commands.calibrate_options import search_options

__all__ = ["bench_calibrate_command", "calibrate_command", "calibration_record", "grid_text", "search_record"]


def _setting(s) -> dict | None:
    if s is None:
        return None
    return {"family": s.family, "parameter": s.parameter, s.parameter: s.value, "value": s.value, "label": s.label,
            "calls": s.calls, "metric": s.metric, "quantity": s.quantity, "status": s.status}


def search_record(fs) -> dict:
    """The JSON shape of one :class:`validation.calibrate.FamilySearch` (docs/schema.md)."""
    return {"family": fs.family, "parameter": fs.parameter, "applicable": bool(fs.settings) or fs.error is None,
            "error": fs.error,
            "grid": fs.grid, "monotone": fs.monotone, "cheapest": _setting(fs.cheapest),
            "settings": [_setting(s) for s in fs.settings]}


def _cheapest_class(c) -> str | None:
    """``lossless``, ``reviser`` or ``monotone``: the kind of decoder of the answer (``None``: not met)."""
    fs = next((fs for fs in c.searches if c.met and fs.cheapest is c.cheapest), None)
    if fs is None:
        return None
    return "lossless" if fs.grid.get("kind") == "lossless" else "reviser" if fs.grid.get("revises") else "monotone"


def calibration_record(c) -> dict:
    """The JSON shape of a :class:`validation.calibrate.Calibration` (docs/schema.md)."""
    return {
        "language": c.language, "length": c.length, "metric": c.metric, "target": c.target, "met": c.met,
        "setting": _setting(c.cheapest), "calls": c.cheapest.calls if c.met else None,
        "best": _setting(c.best), "may_meet": _setting(c.may_meet), "confidence": c.confidence,
        "front": [_setting(s) for s in c.front],
        "cheapest_class": _cheapest_class(c),
        "families": [search_record(fs) for fs in c.searches],
        "aup": c.aup,
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
              help="Comma-separated families, each a sampler and the knob searched: random, topk, llada, remdm "
                   "(steps), threshold, entropy-sum, eb (gamma), fast-dllm (threshold), fast-dllm:factor (factor); "
                   "llada-bB is llada --block-length B, fast-dllm-factor is fast-dllm:factor. The decoder options "
                   "below (--block-length, --temperature, ...) apply to every family; one that does not take an "
                   "option or cannot run at L is reported as inapplicable, with the reason.")
@click.option("--lossless", default="", metavar="NAMES",
              help="Comma-separated lossless decoders (assd, autospec, self-spec) put on the front at (E[calls] by "
                   "Monte Carlo, metric exact from their output law q: SER = KL = 0), assd and self-spec at the draft "
                   "length of fewest E[calls] (k = 1, 2, 4, ... while the calls fall); says when one is the cheapest.")
@click.option("--revisers", default="", metavar="NAMES",
              help="Comma-separated revising decoders (llada21, wino), each a family whose reveal threshold is "
                   "searched like any real knob (the chain over canvases, or Monte Carlo), at the decoder options "
                   "and their own options below; their settings enter the front beside the monotone ones (they "
                   "change revealed tokens: the monotone floor does not bind them); says when one is the cheapest.")
@schedule_option
@search_options
@reviser_options
@progress_option
@json_option
def calibrate_command(language, length, metric, target, relative, samplers, lossless, revisers, schedule, method,
                      samples, confidence, max_steps, seed, tie_seed, grid, refine, decoder_opts, reviser_opts,
                      progress, as_json):
    """The cheapest setting (fewest expected denoiser calls) of each sampler family that meets a target.

    A real knob (threshold, factor, gamma) is evaluated on a uniform grid over its range (--grid
    points), and each pair of neighbours of which one meets the target and the other not is refined
    by --refine bisections; steps are evaluated at 1, 2, 4, ... up to the first N meeting the target,
    then bisected. No monotonicity is assumed: the answer is the setting with the fewest expected
    calls among those evaluated that meet TARGET, and each family says its grid and whether the metric
    was monotone on it. Every setting enters the Pareto front of (expected calls, metric); every
    number says its method (exact / DP / closed form / Monte Carlo). A Monte Carlo setting "meets"
    only when its interval's upper end does, and "may meet" when only its estimate does. A target no
    setting meets answers met: false with the best found (exit 0); a family that cannot run at L is
    reported as inapplicable beside the others, and when none can, the command fails (exit 2).
    """
    from validation.calibrate import GRID_POINTS, REFINE_BISECTIONS, NoFamilyError, TargetError, calibrate

    t0 = time.perf_counter()
    names = [s.strip() for s in samplers.split(",") if s.strip()]
    if not names:
        raise click.BadParameter("name at least one sampler family", param_hint="--sampler")
    rev = [s.strip() for s in revisers.split(",") if s.strip()]
    bad = [n for n in rev if n not in REVISER_NAMES]
    if bad:
        raise click.BadParameter(f"{', '.join(bad)}: not a revising decoder; choose from {', '.join(REVISER_NAMES)}",
                                 param_hint="--revisers")
    if reviser_opts and not rev:
        raise click.UsageError(f"{', '.join(option_flag(k) for k in reviser_opts)}: option(s) of the revising decoders "
                               f"({', '.join(REVISER_NAMES)}), which calibrate searches with --revisers only")
    for n in rev:  # an option out of its range, named before any work (one a reviser does not take: inapplicable)
        check_reviser_options(n, {}, {k: v for k, v in reviser_opts.items() if k in REVISERS[n].option_names}, None)
    check_schedule(schedule, [language], [length])
    check_decoder_method(names[0] if all(n.split(":")[0] in DECODER_NAMES for n in names) else "random", method)
    verbose = show_progress(progress)

    def log(s):
        if verbose:
            click.echo(f"{s.label}: {s.quantity} {format_estimate(_rec(s.metric))}, calls "
                       f"{s.calls.value:.4g} -> {s.status}", err=True)

    try:
        c = calibrate(language, length, metric, target, names, relative=relative, schedule=schedule, method=method,
                      samples=samples, seed=seed, confidence=confidence, max_steps=max_steps, on_setting=log,
                      options=decoder_opts.fields(), tie_seed=tie_seed,
                      grid=GRID_POINTS if grid is None else grid, refine=REFINE_BISECTIONS if refine is None else refine,
                      lossless=[n.strip() for n in lossless.split(",") if n.strip()], revisers=rev,
                      reviser_options=reviser_opts)
    except TargetError as exc:
        raise click.BadParameter(str(exc), param_hint="--target") from None
    except NoFamilyError as exc:
        raise click.UsageError(str(exc)) from None
    except ValueError as exc:
        from numerics.sampling.lossless import LosslessError

        if isinstance(exc, LosslessError):
            raise click.BadParameter(str(exc), param_hint="--lossless") from None
        if "sampler family" in str(exc) or "do not fix it" in str(exc):
            raise click.BadParameter(str(exc), param_hint="--sampler") from None
        raise
    result = {**calibration_record(c), "elapsed_s": time.perf_counter() - t0}
    if not c.met:
        result["null_reason"] = {"setting": f"no setting evaluated meets {metric} <= {c.target:g}",
                                 "calls": "not met"}
    emit(result, as_json, _human(result, c))


def _rec(e) -> dict:
    from numerics.provenance import to_jsonable

    return to_jsonable(e)


def grid_text(fs) -> str:
    """One family's search in words: the grid, and whether the metric was monotone on it."""
    g = fs.grid
    opts = ", ".join(f"{k} = {v}" for k, v in g.get("options", {}).items())
    where = f"{fs.family}" + (f" ({opts})" if opts else "")
    if fs.error is not None and not fs.settings:
        return f"{where}: inapplicable: {fs.error}"
    if g.get("kind") == "lossless":
        ks = g.get("draft_lengths")
        return (f"{where}: lossless decoder (SER = 0 on the support; calls by Monte Carlo), "
                + (f"draft length k = {', '.join(map(str, ks))} (doubling from k = 4 on while E[calls] falls): "
                   f"k = {g['chosen']:g} has the fewest calls" if ks else "one setting"))
    if g["kind"] == "uniform":
        how = (f"{fs.parameter} on {g['points']} points of [{g['low']:g}, {g['high']:g}], "
               f"{len(g['straddles'])} straddling pair(s) refined by {g['refine']} bisections")
    else:
        how = (f"{fs.parameter} = {g['low']:g}, 2x, 4x, ... up to {g['high']:g} (or the first N meeting the "
               "target), then bisection")
    if g.get("revises"):
        how += " (a revising decoder)"
    mono = "monotone" if fs.monotone else "NOT monotone"
    stopped = f"; {fs.error}" if fs.error is not None else ""
    return f"{where}: {how}; {len(fs.settings)} settings, metric {mono} on them{stopped}"


def _human(result: dict, c) -> str:
    what = f"{c.metric.upper()} <= {c.target:.6g}"
    if c.met:
        s = c.cheapest
        head = (f"{c.language}, L = {c.length}: {what} is met most cheaply by {s.label} "
                f"({s.parameter} = {s.value:g}), {s.calls.value:.4g} calls, {s.quantity} {format_estimate(_rec(s.metric))}")
    else:
        b = c.best
        head = (f"{c.language}, L = {c.length}: not met: no setting evaluated gives {what}; best found {b.label}, "
                f"{b.quantity} {format_estimate(_rec(b.metric))}")
    lines = [head]
    kind = _cheapest_class(c)
    if kind == "lossless":
        lines.append(f"  a lossless decoder ({c.cheapest.family}) is the cheapest way to meet the target")
    elif kind == "reviser":
        lines.append(f"  a revising decoder ({c.cheapest.family}) is the cheapest way to meet the target (it changes "
                     "revealed tokens: the monotone decoders' floor does not bind it)")
    lines.append("  Families:")
    for fs in c.searches:
        lines.append(f"    {grid_text(fs)}")
        if fs.settings:
            s = fs.cheapest
            lines.append(f"      cheapest meeting: {s.parameter} = {s.value:g}, {s.calls.value:.4g} calls, {s.quantity} "
                         f"{format_estimate(_rec(s.metric))}" if s else "      cheapest meeting: none evaluated")
    lines.append("  Pareto front (calls, metric):")
    lines += [f"    {s.calls.value:8.4g}  {s.quantity} {format_estimate(_rec(s.metric))}  [{s.label}; {s.status}]"
              for s in c.front]
    aups = {k: v for k, v in c.aup.items() if v is not None}
    if aups:
        lines.append("  AUP (rho = L / calls, y = 100 (1 - SER), each family's front): "
                     + ", ".join(f"{k} {v:.4g}" for k, v in aups.items()))
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
    step family; for a real knob, the search's grid refined everywhere to its finest resolution);
    past 600 s it is extrapolated from the settings measured. Wall and CPU times (all threads) of
    both are printed: on a shared machine the CPU time is the figure to compare with an idle one.
    """
    from numerics.languages.presets import load_language
    from validation.calibrate import (
        GRID_POINTS,
        REFINE_BISECTIONS,
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
    space = fam.space(length, lang.vocab_size, 1 << 12)
    if fam.integer:
        top = int(c.cheapest.value) if c.met else int(max(s.value for s in c.searches[0].settings))
        values = list(range(space.unit, top + 1, space.unit))
    else:  # the search's finest resolution: its grid's intervals, each refined to 2^-refine
        values = space.grid(((GRID_POINTS - 1) << REFINE_BISECTIONS) + 1)
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
