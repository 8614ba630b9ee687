"""``mdm-theory lossless`` and ``mdm-theory bench lossless``: a lossless decoder's rounds and calls at SER = 0.

Thin CLI over :mod:`validation.lossless` (the point, Monte Carlo or exact on a tiny case) and the
benchmark of issue 32: a lossless decoder's Monte Carlo point against the random sampler's at
``N = 64`` (default ``2gram``, ``L = 512``, 1000 samples), measured in the same run, target
``<= 5x``. Bad input (a draft length of 0 or above ``L``, an unknown base sampler for spiffy, a
language whose joint density the oracle cannot evaluate) is a usage error (exit 2), nothing written.
"""

from __future__ import annotations

import os
import time

import click

from validation.commands._common import bench_names, bench_text, emit, format_estimate, json_option

__all__ = ["BENCH_COMMANDS", "bench_lossless_command", "lossless_command"]

_NAMES = ("assd", "self-spec", "autospec", "spiffy")  # numerics.sampling.lossless.LOSSLESS, in its order


def _options(draft_length, base, order=None) -> dict:
    return {k: v for k, v in {"draft_length": draft_length, "base": base, "order": order}.items() if v is not None}


def _base_options(base: str, given: tuple[str, ...]) -> dict:
    """``NAME=VALUE`` options of spiffy's base sampler, typed by its registry entry (``ValueError`` naming a bad one)."""
    from numerics.sampling.registry import DECODERS

    out: dict = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--base-option {item!r}: expected NAME=VALUE")
        if base not in DECODERS or base == "random":
            raise ValueError(f"--base-option {item!r}: the base sampler {base!r} takes no options")
        try:
            option = DECODERS[base].option(key.replace("-", "_"))
        except KeyError:
            raise ValueError(f"--base-option {item!r}: {base} takes no option {key!r}; it takes "
                             f"{DECODERS[base].option_names}") from None
        try:
            out[option.name] = option.type(value)
        except ValueError:
            raise ValueError(f"--base-option {item!r}: {key} must be {option.type.__name__}") from None
    return out


@click.command("lossless")
@click.option("--language", required=True, metavar="NAME|FILE.npz", help="Preset name or .npz language file.")
@click.option("--length", "-L", type=int, required=True, help="Sequence length L.")
@click.option("--decoder", type=click.Choice(_NAMES), required=True,
              help="assd: any-subset speculative decoding; self-spec: LinearSpec (greedy); autospec: sequence-level "
                   "self-speculation; spiffy: lossless over its --base sampler (docs/methods/lossless.md).")
@click.option("--draft-length", "-k", type=int, default=None,
              help="Positions (assd, self-spec) or base steps (spiffy) drafted a round: 1..L (spiffy 1..N) [default: 4].")
@click.option("--base", default=None,
              help="spiffy's base sampler: random or a block decoder (llada, fast-dllm, eb, llada2, dream, dus, sdar, "
                   "dinfer) [default: random].")
@click.option("--base-option", "base_option", multiple=True, metavar="NAME=VALUE",
              help="spiffy: an option of its base sampler, by the registry's name (block_length=2, threshold=0.9); "
                   "repeatable. With none of the base's knobs given, its registry default preset applies (fast-dllm: "
                   "threshold=0.9; eb: gamma=1).")
@click.option("--order", type=click.Choice(["random", "left-to-right"]), default=None,
              help="assd: the order of generation, a uniform random permutation per sequence (any subset) or left "
                   "to right [default: random].")
@click.option("--steps", "-N", type=int, default=None, help="spiffy: the base sampler's steps N.")
@click.option("--schedule", default="linear", show_default=True, help="spiffy: the base sampler's schedule.")
@click.option("--method", type=click.Choice(["mc", "exact"]), default="mc", show_default=True,
              help="mc: Monte Carlo; exact: the law of (rounds, calls) by enumeration (tiny V^L only).")
@click.option("--samples", type=int, default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@json_option
def lossless_command(language, length, decoder, draft_length, base, base_option, order, steps, schedule, method,
                     samples, seed, as_json):
    """A lossless decoder's expected rounds and calls (SER = 0 on the support) with the oracle."""
    from validation.lossless import lossless_exact, lossless_point

    if decoder != "spiffy" and (base is not None or base_option):
        raise click.BadParameter(f"{decoder} has no base sampler (only spiffy)",
                                 param_hint="--base" if base is not None else "--base-option")
    if decoder != "assd" and order is not None:
        raise click.BadParameter(f"{decoder} has no order option (only assd)", param_hint="--order")
    opts = _options(draft_length, base, order)
    try:
        base_options = _base_options(base or "random", base_option)
        if method == "exact":
            result = lossless_exact(language, length, decoder, opts, steps=steps, schedule=schedule,
                                    base_options=base_options)
            human = (f"{result['label']} on {language}, L = {length}: E[rounds] = {result['rounds'].value:.6g}, "
                     f"E[calls] = {result['calls'].value:.6g} (exact, enumeration); max |p - q| = "
                     f"{result['max_abs_p_minus_q']:.3g}"
                     + (f", from its base's exact law {result['max_abs_p_minus_base']:.3g}"
                        if "max_abs_p_minus_base" in result else ""))
        else:
            p = lossless_point(language, length, decoder, opts, samples=samples, seed=seed, steps=steps,
                               schedule=schedule, base_options=base_options)
            result = {"language": p.language, "length": p.length, "decoder": p.decoder, "label": p.label,
                      "rounds": p.rounds, "calls": p.calls, "rounds_quantiles": p.rounds_quantiles,
                      "calls_quantiles": p.calls_quantiles, "ser": p.ser, "seconds": p.seconds}
            from numerics.provenance import to_jsonable

            human = (f"{p.label} on {language}, L = {length}: rounds {format_estimate(to_jsonable(p.rounds))} "
                     f"(median {p.rounds_quantiles['median']:g}, 95% {p.rounds_quantiles['p95']:g}), calls "
                     f"{format_estimate(to_jsonable(p.calls))}; SER of the samples {p.ser.value:g}")
    except ValueError as exc:  # LosslessError, OracleError, an unknown preset: named, exit 2
        raise click.UsageError(str(exc)) from None
    emit(result, as_json, human)


def run_lossless_benchmark(language: str = "2gram", length: int = 512, steps: int = 64, samples: int = 1000,
                           names: tuple[str, ...] = ("assd", "autospec"), draft_length: int = 4,
                           order: str = "random") -> dict:
    """Seconds of the random point (:func:`validation.sweep.evaluate_point`, ``method="mc"``) and of each
    lossless decoder's point, measured back to back after a warm-up of each, and their ratios."""
    from validation.lossless import BENCH_RATIO_TARGET, lossless_point
    from validation.sweep import PointConfig, evaluate_point

    def opts(n):
        return {"draft_length": draft_length, **({"order": order} if n == "assd" else {})} if n in (
            "assd", "self-spec", "spiffy") else None

    def point(name: str, L: int, n: int) -> tuple[float, float, dict]:
        t0, c0 = time.perf_counter(), time.process_time()
        extra: dict = {}
        if name == "random":
            evaluate_point(PointConfig(language, L, steps, method="mc", samples=n))
        else:
            p = lossless_point(language, L, name, opts(name), samples=n, steps=steps if name == "spiffy" else None)
            extra = {"rounds": p.rounds, "calls": p.calls}
        return time.perf_counter() - t0, time.process_time() - c0, extra

    every = ("random", *names)
    for name in every:
        point(name, min(length, 16), 4)
    load = os.getloadavg()
    wall, cpu, points = {}, {}, {}
    for name in every:
        wall[name], cpu[name], points[name] = point(name, length, samples)
    ratio = {n: wall[n] / wall["random"] for n in names}
    return {"language": language, "length": length, "steps": steps, "samples": samples, "seconds": wall,
            "cpu_seconds": cpu, "ratio_to_random": ratio,
            "cpu_ratio_to_random": {n: cpu[n] / cpu["random"] for n in names},
            "points": {n: points[n] for n in names}, "target_ratio": BENCH_RATIO_TARGET,
            "within_target": {n: r <= BENCH_RATIO_TARGET for n, r in ratio.items()},
            "cpu_count": os.cpu_count(), "loadavg_before": load, "loadavg_after": os.getloadavg()}


@click.command("lossless")
@click.option("--language", default="2gram", show_default=True)
@click.option("--length", "-L", type=int, default=512, show_default=True)
@click.option("--steps", "-N", type=int, default=64, show_default=True, help="N of the random sampler (and spiffy).")
@click.option("--samples", type=int, default=1000, show_default=True)
@click.option("--decoders", "names", default="assd,autospec", show_default=True,
              help="Comma-separated lossless decoders: " + ", ".join(_NAMES) + ".")
@click.option("--draft-length", "-k", type=int, default=4, show_default=True)
@click.option("--order", type=click.Choice(["random", "left-to-right"]), default="random", show_default=True,
              help="assd's order of generation.")
@json_option
def bench_lossless_command(language, length, steps, samples, names, draft_length, order, as_json):
    """Lossless decoders vs random sampler Monte Carlo point, same run (target: <= 5x random at N = 64)."""
    chosen = bench_names(names, _NAMES, "lossless decoder", "--decoders")
    try:
        r = run_lossless_benchmark(language, length, steps, samples, chosen, draft_length, order)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    emit(r, as_json, bench_text(r, chosen, r["target_ratio"], f"random (N = {steps})",
                                lambda n: f"E[rounds] {r['points'][n]['rounds'].value:.4g}, "
                                          f"E[calls] {r['points'][n]['calls'].value:.4g}"))


BENCH_COMMANDS = (bench_lossless_command,)
