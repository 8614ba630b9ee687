"""``mdm-theory exact``, ``mdm-theory sweep`` and ``mdm-theory bench sweep``: the oracle sampler's metrics.

Thin CLI over :mod:`validation.sweep` (one point: :func:`~validation.sweep.evaluate_point`; a grid:
:func:`~validation.sweep.run_sweep`).
"""

from __future__ import annotations

import functools
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

import click

from numerics.sampling.registry import DECODERS
from validation.commands._common import AliasOption, emit, format_estimate, json_option, progress_option, show_progress
from validation.commands._decoders import DECODER_NAMES, check_decoder_method, decoder_options, parse_values
from validation.commands._revisers import (
    REVISER_NAMES,
    check_reviser_options,
    reviser_options,
    reviser_point,
    reviser_summaries,
)
from validation.commands._schedule import check_schedule, schedule_option
from validation.guards import check_increasing, check_same_vocabulary, check_steps_list

__all__ = ["COMMANDS", "BENCH_COMMANDS", "parse_int_list"]


MAX_LIST_VALUES = 10_000  # an ellipsis pattern that would list more values is refused before it is built


def parse_int_list(text: str) -> list[int]:
    """``"8,16,32"``, or a doubling/arithmetic pattern with an ellipsis ``"8,16,...,2048"``."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if "..." not in parts:
        try:
            return [int(p) for p in parts]
        except ValueError:
            raise click.BadParameter(f"not a comma-separated list of integers: {text!r}") from None
    k = parts.index("...")
    if k < 2 or k != len(parts) - 2:
        raise click.BadParameter(f"an ellipsis needs two values before it and one after: {text!r}")
    try:
        head = [int(p) for p in parts[:k]]
        last = int(parts[-1])
    except ValueError:
        raise click.BadParameter(f"not a list of integers: {text!r}") from None
    a, b = head[-2], head[-1]
    candidates = []
    if 0 < a < b and b % a == 0:  # geometric first (the usual 8,16,...,2048)
        out = list(head)
        while out[-1] * (b // a) <= last:
            out.append(out[-1] * (b // a))
        candidates.append(out)
    if a < b and (last - b) // (b - a) + len(head) > MAX_LIST_VALUES:  # counted, not built: 8,16,...,2^40
        if not candidates or candidates[0][-1] != last:
            raise click.BadParameter(f"{text!r} is neither a doubling pattern nor an arithmetic one of at most "
                                     f"{MAX_LIST_VALUES} values (it would list {(last - b) // (b - a) + len(head)})")
    elif a < b:
        out = list(head)
        while out[-1] + (b - a) <= last:
            out.append(out[-1] + (b - a))
        candidates.append(out)
    for out in candidates:
        if out[-1] == last:
            return out
    raise click.BadParameter(f"neither a doubling nor an arithmetic pattern from {head} reaches {last} exactly")

def _steps(text: str) -> list[int]:
    """``-N`` of a sweep: parsed, every value within what a schedule holds (checked before the grid is built)."""
    values = parse_int_list(text)
    check_steps_list(values, "-N")
    return values


_method = click.option("--method", type=click.Choice(["auto", "closed-form", "dp", "enumerate", "mc"]), default="auto",
                       show_default=True,
                       help="auto: the fastest exact method that fits (closed form for the interval language, "
                            "else the DP or enumeration for small L), else Monte Carlo. A method named here that "
                            "cannot run at this size is refused with its estimated cost.")
_schedule = schedule_option
_samples = click.option("--samples", type=int, default=1000, show_default=True, help="Monte Carlo samples per quantity.")
_seed = click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the Monte Carlo draws (each point's streams are fixed by the seed and the point).")
_batch = click.option("--batch-size", type=int, default=1, show_default=True,
                      help="Sequences per sampler batch (ddpm_cache NFE is per batch).")


def _sampler_options(f, decoders: bool = False, lists: bool = False, revisers: bool = False, extra: tuple = ()):
    """``--sampler`` (the registry's names, :data:`numerics.sampling.registry.DECODERS`), ``--gamma``,
    ``--confidence``, ``--tie-seed`` (the tie seed serves the adaptive rules and the decoders);
    ``decoders``: the ``--sampler`` choices include the decoders (the command then takes
    :func:`decoder_options`); ``lists``: ``--gamma`` takes a comma list (``sweep``), handed on as a tuple; ``extra``: ``(name, help)`` of more ``--sampler`` choices outside the
    registry."""
    from numerics.sampling.registry import DECODERS, OPTIONS

    confidence_help = "Confidence of topk/threshold (entropy-sum orders by entropy)."
    if lists:
        f = click.option("--confidence", type=str, default="maxprob", show_default=True,
                         callback=lambda ctx, param, v: parse_values(OPTIONS["confidence"], v),
                         help=confidence_help + f" One of {', '.join(OPTIONS['confidence'].choices)}; a comma list "
                                                "sweeps it.")(f)
    else:
        f = click.option("--confidence", type=click.Choice(list(OPTIONS["confidence"].choices)), default="maxprob",
                         show_default=True, help=confidence_help)(f)
    gamma_help = "threshold: reveal confidence >= G; entropy-sum: cumulative entropy <= G nats; eb: sum H - max H <= G."
    if lists:
        f = click.option("--gamma", "gamma", type=str, default=None,
                         callback=lambda ctx, param, v: parse_values(OPTIONS["gamma"], v),
                         help=gamma_help + " A comma list sweeps it.")(f)
    else:
        f = click.option("--gamma", type=float, default=None, help=gamma_help)(f)
    f = click.option("--tie-seed", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Seed of the tie priority of the adaptive rules and decoders (positions of equal "
                          "confidence or score are revealed in a random order fixed by it); reported as tie_seed.")(f)
    names = [n for n, s in DECODERS.items() if decoders or s.kind != "decoder"] + [n for n, _ in extra]
    more = ("; " + "; ".join(f"{n}: {DECODERS[n].summary}" for n in DECODER_NAMES)
            + " (docs/methods/decoders.md)") if decoders else ""
    more += "".join(f"; {n}: {text}" for n, text in extra)
    if revisers:  # the revising decoders (validation.commands._revisers)
        names += list(REVISER_NAMES)
        more += f"; {reviser_summaries()} (docs/methods/revisers.md)"
    return click.option("--sampler", type=click.Choice(names), default="random", show_default=True,
                        help="random: i.i.d. schedule; topk: k_t from the schedule; threshold / entropy-sum: "
                             f"adaptive with --gamma (steps ignored){more}.")(f)


def _gemma_options(f):
    """The options of ``--sampler gemma-renoise`` (:data:`validation.canvas_samplers.GEMMA_OPTIONS`; its
    ``--step-cap`` is the revisers' flag), handed to the command as one dict ``gemma`` of those given."""
    from validation.canvas_samplers import GEMMA_OPTIONS

    specs = [o for o in GEMMA_OPTIONS if o.name != "step_cap"]

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        raw = {o.name: kwargs.pop(o.name) for o in specs}
        kwargs["gemma"] = {k: v for k, v in raw.items() if v is not None}
        return f(*args, **kwargs)

    for o in reversed(specs):
        kind = click.Choice(list(o.choices)) if o.choices else o.type
        default = f" [default: {o.default}]" if o.default is not None else ""
        where = f"; in {o.range_text()}" if o.high is not None else ""
        wrapper = click.option(o.flag, o.name, type=kind, default=None,
                               help=f"gemma-renoise{' (required with it)' if o.required else ''}: {o.help}{where}"
                                    f"{default}.")(wrapper)
    return wrapper


_GEMMA_CHOICE = (("gemma-renoise", "DiffusionGemma's renoise sampler (--noise uniform; --gamma is its entropy bound)"),)
_GEMMA_STEP_CAP = {"step_cap": "gemma-renoise: calls at most, >= 1 [default: 48]."}
_noise_option = click.option(
    "--noise", type=click.Choice(["mask", "uniform"]), default="mask", show_default=True,
    help="mask: masked (absorbing) diffusion; uniform: uniform-noise diffusion, the factorized reverse process with "
         "the oracle (--sampler random) or DiffusionGemma's renoise sampler (--sampler gemma-renoise); "
         "docs/methods/uniform-noise.md.")


@click.command("exact")
@click.option("--language", required=True, help="Preset name or .npz file.")
@click.option("--ser-language", default=None, help="Measure SER on this language instead (e.g. the pruned preset).")
@click.option("--length", "-L", type=int, required=True, help="Sequence length L.")
@click.option("-N", "--n-steps", "--steps", "steps", cls=AliasOption, hidden_aliases=("--steps",), type=int,
              default=None, help="Number of sampling steps N (the schedule's steps): random, topk, llada and remdm; "
                                 "the other samplers take none (their threshold or gamma decides the calls).")
@_schedule
@_method
@_samples
@_seed
@_batch
@functools.partial(_sampler_options, decoders=True, revisers=True, extra=_GEMMA_CHOICE)
@decoder_options(revisers=True)
@reviser_options(also=_GEMMA_STEP_CAP)
@_noise_option
@_gemma_options
@progress_option
@json_option
def exact_command(language, ser_language, length, steps, schedule, method, samples, seed, batch_size, sampler, gamma,
                  confidence, tie_seed, decoder_opts, reviser_opts, noise, gemma, progress, as_json):
    """KL, Jensen bound, TER, SER, generative perplexity and NFE of the oracle sampler (random order,
    an adaptive rule, a decoder: llada, fast-dllm, eb, remdm, ..., or a revising decoder: llada21, wino).

    For each of kl, kl_jensen_bound, kl_chain_rule, log_ter_gap, ter, ter_data, ser,
    ser_kl_certificate, gen_ppl, gen_ppl_data, nfe, nfe_realized, reverse_kl, tv, calls: an
    estimate {value, stderr, ci_low, ci_high, confidence, method, samples, exact}
    (docs/schema.md); value null with a null_reason when it is not a finite number or the method
    cannot give it. An exact KL of round-off size below 0, and an exact TV of round-off size, are
    reported as 0. A decoder's row also carries sampler_parameters (every parameter); a revising
    decoder's also calls_law (P(calls = t), t = 0, 1, ...: exact, or the Monte Carlo shares).
    """
    from validation.sweep import PointConfig, evaluate_point

    if sampler == "gemma-renoise" or gemma:
        if "step_cap" in reviser_opts:  # --step-cap is one flag: the revisers' and gemma-renoise's cap on calls
            gemma = {**gemma, "step_cap": reviser_opts.pop("step_cap")}
        if reviser_opts:
            raise click.UsageError(f"{', '.join(sorted(reviser_opts))}: options of the revising decoders, not of "
                                   "gemma-renoise")
        _gemma_point(language, ser_language, length, steps, method, samples, seed, sampler, gamma, decoder_opts, noise,
                     gemma, as_json)
        return
    if sampler in REVISER_NAMES or reviser_opts:
        options = check_reviser_options(sampler, dict(decoder_opts), reviser_opts, gamma)
        if noise == "uniform":
            raise click.UsageError(f"--noise uniform supports --sampler random and gemma-renoise only, not {sampler!r}")
        if show_progress(progress):
            click.echo(f"computing {sampler} on {language} L={length} ({method}) ...", err=True)
        result = reviser_point(sampler, options, language, ser_language, length, method, samples, seed, tie_seed,
                               confidence)
        emit(result, as_json, _human_point(result) + "\n" + _calls_law_text(result["calls_law"], result["method"]))
        return
    if noise == "uniform":
        if gamma is not None or decoder_opts.given():
            raise click.UsageError("--noise uniform takes no --gamma or decoder option (its sampler is the "
                                   "factorized reverse process)")
        _uniform_point(language, ser_language, length, steps, schedule, method, samples, seed, sampler, as_json)
        return
    check_schedule(schedule, [language], [length])
    check_decoder_method(sampler, method)
    if steps is None and sampler in STEPS_SAMPLERS:
        raise click.UsageError(f"-N / --n-steps is required with --sampler {sampler}")
    try:
        cfg = PointConfig(language, length, 1 if steps is None else steps, schedule, method, samples, seed, ser_language, batch_size,
                          sampler=sampler, gamma=gamma, confidence=confidence, tie_seed=tie_seed,
                          options=decoder_opts)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    check_same_vocabulary([(language, ser_language)], "--ser-language")
    if show_progress(progress):
        click.echo(f"computing {language} L={length} N={steps} ({method}) ...", err=True)
    result = evaluate_point(cfg)
    emit(result, as_json, _human_point(result))


def _uniform_point(language, ser_language, length, steps, schedule, method, samples, seed, sampler, as_json) -> None:
    """``exact --noise uniform``: the factorized uniform-noise sampler (validation.experiments.noise.uniform_point)."""
    from validation.experiments.noise import NOISE_METHODS, uniform_point

    if sampler != "random":
        raise click.UsageError(f"--noise uniform supports --sampler random (the factorized reverse process) and "
                               f"gemma-renoise only, not {sampler!r}")
    if method not in NOISE_METHODS:
        raise click.UsageError(f"--noise uniform supports --method {', '.join(NOISE_METHODS)}, not {method!r}")
    if steps is None:
        raise click.UsageError("-N / --n-steps is required with --noise uniform")
    if schedule == "optimal":
        raise click.UsageError("--noise uniform does not support --schedule optimal (it is optimal for masking)")
    if length < 1 or steps < 1 or samples < 2:
        raise click.UsageError("--noise uniform needs -L >= 1, -N >= 1 and --samples >= 2")
    check_schedule(schedule, [language], [length])
    check_same_vocabulary([(language, ser_language)], "--ser-language")
    from numerics.languages.presets import load_language
    from numerics.machine import check_memory

    try:
        lang = load_language(language)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    S, V = lang.kernel_language().n_states, lang.vocab_size  # sizes checked before anything is allocated
    check_memory(8.0 * (4 * samples * length * V + 2 * 64 * length * S), f"--noise uniform ({samples} samples, "
                 f"L = {length}, {S} states)", "use fewer --samples or a smaller -L")
    try:
        result = uniform_point(language, length, steps, schedule, method, samples, seed, ser_language)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    emit(result, as_json, _human_point(result))


def _gemma_point(language, ser_language, length, steps, method, samples, seed, sampler, gamma, decoder_opts, noise,
                 opts, as_json) -> None:
    """``exact --noise uniform --sampler gemma-renoise``: :func:`validation.canvas_samplers.gemma_point`."""
    from validation.canvas_samplers import build_renoise, gemma_point

    if sampler != "gemma-renoise" or noise != "uniform" or "committed" not in opts:
        raise click.UsageError("--sampler gemma-renoise needs --noise uniform and --committed yes|no; --committed, "
                               "--step-cap, --t-max, --t-min, --halt-entropy and --oracle-alpha are for it only")
    if decoder_opts.given() or steps is not None:
        raise click.UsageError("--sampler gemma-renoise takes no -N or decoder option (its halting rule and "
                               "--step-cap decide the calls; --gamma is its entropy bound)")
    try:
        rn = build_renoise(opts, gamma)
        check_same_vocabulary([(language, ser_language)], "--ser-language")
        out = gemma_point(rn, language, length, method, samples, seed, ser_language)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    out = {"inputs": {"language": language, "ser_language": ser_language, "length": length, "noise": "uniform"},
           **out}
    emit(out, as_json, _human_point(out))


#: The samplers that take a number of steps N, from the registry (a schedule or steps among their needs; the
#: others: a threshold, factor or gamma decides their calls).
STEPS_SAMPLERS = tuple(name for name, s in DECODERS.items() if s.needs & {"steps", "schedule"})

#: What the method of a point means for its numbers (the text output's first line says which ran).
_METHOD_WORDS = {"closed-form": "exact", "dp": "exact", "enumerate": "exact",
                 "mc": "Monte Carlo: estimates with intervals; exact where a metric says so"}


def _human_point(result: dict) -> str:
    from numerics.estimate import is_estimate_record
    from numerics.provenance import to_jsonable

    data = to_jsonable(result)
    inputs = data["inputs"]
    head = (f"{inputs['language']}" + (f" (SER on {inputs['ser_language']})" if inputs.get("ser_language") else "")
            + f", L = {inputs['length']}"
            + (f", N = {inputs['steps']}, schedule {data['schedule_name']}" if data["sampler_name"].split()[0].rstrip(",") in STEPS_SAMPLERS else "")
            + ", "
            f"sampler {data['sampler_name']}" + (f" (tie seed {data['tie_seed']})" if data.get("tie_seed") is not None else "")
            + f", method {data['method']} ({_METHOD_WORDS.get(data['method'], 'see each metric')}), {data['elapsed_s']:.2f} s")
    metrics = [(k, v) for k, v in data.items() if is_estimate_record(v)]
    width = max(len(k) for k, _ in metrics)
    return "\n".join([head] + [f"  {k:<{width}}  {format_estimate(v)}" for k, v in metrics])


def _calls_law_text(law: list[float], method: str) -> str:
    """``  calls_law  P(calls = 3) = 0.99, P(calls = 4) = 0.0088 (exact)``: the nonzero terms."""
    terms = ", ".join(f"P(calls = {t}) = {p:.6g}" for t, p in enumerate(law) if p > 0)
    return f"  calls_law  {terms} ({'exact' if method != 'mc' else 'Monte Carlo shares'})"


def _progress_bar(total: int, enabled: bool):
    """A callback for :func:`validation.sweep.run_sweep` that advances a tqdm bar on stderr."""
    import sys

    from tqdm import tqdm

    bar = tqdm(total=total, desc="sweep", unit="point", file=sys.stderr, disable=not enabled, leave=False)

    def progress(k, total, cfg, result):
        bar.set_postfix_str(f"{cfg.language} L={cfg.length} N={cfg.n_steps}" + (" (in table)" if result is None else ""))
        bar.update(1)

    return bar, progress


@click.command("sweep")
@click.option("--language", "--languages", "languages", cls=AliasOption, hidden_aliases=("--languages",), required=True,
              help="Comma-separated; 'A:B' measures SER on B (e.g. 2gram:2gram-pruned).")
@click.option("-L", "--length", "--lengths", "lengths", cls=AliasOption, hidden_aliases=("--lengths",), required=True,
              help="Comma-separated lengths L, e.g. 512 or 64,128.")
@click.option("-N", "--n-steps", "--steps", "steps_text", cls=AliasOption, hidden_aliases=("--steps",), default=None,
              help="Comma-separated numbers of sampling steps N; '8,16,...,2048' doubles up to 2048. Required, but "
                   "for the samplers that take no steps: the revising decoders and gemma-renoise refuse it.")
@_schedule
@_method
@_samples
@_seed
@_batch
@functools.partial(_sampler_options, decoders=True, lists=True, revisers=True, extra=_GEMMA_CHOICE)
@decoder_options(lists=True)
@reviser_options(also=_GEMMA_STEP_CAP, lists=True)
@_noise_option
@_gemma_options
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Results table (JSONL), resumed if it exists; Parquet and CSV copies are written beside it.")
@click.option("--drop-bad-rows", is_flag=True, help="Drop rows that do not check out and recompute them (default: error).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="local: the points one after the other here; dask: each point a task on a Dask cluster, "
                   "results streamed back into the same table (docs/cluster.md).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="--executor dask: address of a running scheduler, e.g. tcp://host:8786 "
                   "[default: a local cluster for this sweep].")
@progress_option
@json_option
def sweep_command(languages, lengths, steps_text, schedule, method, samples, seed, batch_size, sampler, gamma,
                  confidence, tie_seed, decoder_grid, reviser_grid, noise, gemma, out, drop_bad_rows, executor,
                  scheduler, progress, as_json):
    """Run a languages x lengths x steps grid into a resumable results table (one JSON row per point).

    Every sampler option (--gamma, --confidence and the decoder options) takes a comma list: the grid is crossed with
    every combination of them, the revisers' own options (--edit-cap, --step-cap, ...) too. The revising decoders
    (llada21, wino) and gemma-renoise (--noise uniform) take no steps (no -N): their point is exact's (the chain
    over canvases, or Monte Carlo), with the law of the calls; gemma-renoise's --committed, --t-max, ... take one
    value each.

    Concurrent sweeps may share one --out: rows are appended under the table's lock. Parquet and
    CSV copies (one row per point, docs/schema.md) are written beside the table.
    """
    from validation.sweep import CorruptRowsError, check_costs, grid, run_sweep

    check_decoder_method(sampler, method)
    own_grid = [_canvas_options(sampler, steps_text, ro, noise, gemma, decoder_grid, gamma) for ro in reviser_grid]
    try:
        check_schedule(schedule, [s.strip() for s in languages.split(",") if s.strip()], parse_int_list(lengths))
        langs = [s.strip() for s in languages.split(",") if s.strip()]
        Ls = check_increasing(parse_int_list(lengths), "-L")
        Ns = [1] if steps_text is None else check_increasing(_steps(steps_text), "-N")
        configs = [cfg for g in gamma for conf in confidence for opts in decoder_grid for own in own_grid
                   for cfg in grid(langs, Ls, Ns, schedule=schedule, method=method, samples=samples, seed=seed,
                                   batch_size=batch_size, sampler=sampler, gamma=g, confidence=conf,
                                   tie_seed=tie_seed, options={**opts, **own}, noise=noise)]
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if not configs:
        raise click.UsageError(f"the grid is empty: --language {languages!r}, -L {lengths!r} and "
                               f"-N {steps_text!r} must each name at least one value")
    if scheduler is not None and executor != "dask":
        raise click.UsageError("--scheduler needs --executor dask")
    if scheduler is not None:
        from validation.executors import check_scheduler_address

        check_scheduler_address(scheduler)  # a port outside 1..65535 is refused before any work
    check_same_vocabulary([(c.language, c.ser_language) for c in configs], "--language A:B")
    try:
        check_costs(configs)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    bar, tick = _progress_bar(len(configs), show_progress(progress))
    try:
        report = run_sweep(configs, out, on_bad_rows="drop" if drop_bad_rows else "raise", progress=tick,
                           executor=executor, scheduler=scheduler)
    except CorruptRowsError as exc:
        raise click.ClickException(exc.describe("--drop-bad-rows")) from None
    finally:
        bar.close()
    emit(report, as_json, f"{report.computed} point(s) computed, {report.skipped} skipped, "
                          f"{len(report.bad_rows)} bad row(s) dropped, {report.elapsed_s:.1f} s -> {report.path} "
                          f"(flat copies: {', '.join(report.tables)})")


def _canvas_options(sampler, steps_text, reviser_opts, noise, gemma, decoder_grid, gamma) -> dict:
    """sweep's options of the samplers that act on a canvas (the revisers' own, gemma-renoise's), checked as
    ``exact`` checks them: one given to another sampler, ``-N`` given to a sampler without steps, ``--noise
    uniform`` with a sampler it does not support are each a ``click.UsageError`` naming the flag."""
    reviser_opts, gemma = dict(reviser_opts), dict(gemma)
    if sampler == "gemma-renoise" and "step_cap" in reviser_opts:  # one flag: the revisers' and gemma's cap on calls
        gemma["step_cap"] = reviser_opts.pop("step_cap")
    if reviser_opts and sampler not in REVISER_NAMES:
        check_reviser_options(sampler, {}, reviser_opts, None)  # raises, naming the flag
    if gemma and sampler != "gemma-renoise":
        raise click.UsageError(f"{', '.join('--' + k.replace('_', '-') for k in gemma)}: option(s) of --sampler "
                               f"gemma-renoise only, not of --sampler {sampler}")
    if noise == "uniform" and sampler not in ("random", "gemma-renoise"):
        raise click.UsageError(f"--noise uniform supports --sampler random (the factorized reverse process) and "
                               f"gemma-renoise, not {sampler!r}")
    if sampler == "gemma-renoise" and noise != "uniform":
        raise click.UsageError("--sampler gemma-renoise needs --noise uniform (it renoises a uniform-noise canvas)")
    canvas = sampler in REVISER_NAMES or sampler == "gemma-renoise"
    if canvas and steps_text is not None:
        raise click.UsageError(f"--sampler {sampler} takes no steps: leave out -N / --n-steps (its thresholds "
                               "and caps decide its calls; each point reports them)")
    if not canvas and steps_text is None:
        raise click.UsageError(f"-N / --n-steps is required with --sampler {sampler}")
    if sampler in REVISER_NAMES:
        for opts in decoder_grid:
            for g in gamma:
                check_reviser_options(sampler, dict(opts), reviser_opts, g)
        return reviser_opts
    if sampler == "gemma-renoise":
        if any(opts.given() for opts in decoder_grid):
            raise click.UsageError(f"--sampler gemma-renoise takes no decoder option ({', '.join(decoder_grid[-1].given())}"
                                   "; --gamma is its entropy bound)")
        return gemma
    return {}


BENCH_PRESETS = ("2gram", "3gram", "4gram", "hmm")


@click.command("sweep")
@click.option("--quick", is_flag=True, help="L = 128, N in {8, 64, 512}, 100 samples (a smoke run of the same code).")
@click.option("--samples", type=int, default=None, help="Override the sample count.")
@click.option("--presets", default=",".join(BENCH_PRESETS), show_default=True,
              help="Comma-separated presets; SER is measured on each one's -pruned twin.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Keep the results table here (default: a temporary file).")
@progress_option
@json_option
def bench_sweep_command(quick, samples, presets, out, progress, as_json):
    """The paper-scale oracle sweep: SER (pruned presets), generative perplexity and the Jensen KL bound
    (unpruned), L = 512, N = 8..2048, 1000 samples per point; prints total time and per-point cost."""
    from validation.sweep import grid, run_sweep

    length = 128 if quick else 512
    steps = [8, 64, 512] if quick else parse_int_list("8,16,...,2048")
    n = samples or (100 if quick else 1000)
    names = [p.strip() for p in presets.split(",") if p.strip()]
    configs = grid([f"{p}:{p}-pruned" for p in names], [length], steps, method="mc", samples=n)
    per_point: dict[str, float] = {}

    verbose = show_progress(progress)

    def tick(k, total, cfg, res):
        if verbose:
            click.echo(f"[{k}/{total}] {cfg.language} L={cfg.length} N={cfg.n_steps}"
                       + (": already in the table" if res is None else f": {res['elapsed_s']:.1f} s"), err=True)
        if res is not None:
            per_point[f"{cfg.language} N={cfg.n_steps}"] = round(res["elapsed_s"], 3)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(out) if out else Path(tmp) / "bench_sweep.jsonl"
        t0 = time.perf_counter()
        report = run_sweep(configs, path, progress=tick)
        total = time.perf_counter() - t0
    result = {
        "presets": names, "length": length, "steps": steps, "samples": n, "points": len(configs),
        "computed": report.computed, "skipped": report.skipped,
        "total_s": total, "mean_point_s": total / max(report.computed, 1), "per_point_s": per_point,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cpu_count": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "machine": platform.processor() or platform.machine(),
    }
    human = (f"{report.computed} points in {total:.1f} s ({total / max(report.computed, 1):.2f} s/point), "
             f"max RSS {result['max_rss_mib']:.0f} MiB, load {load_before[0]:.1f} -> {result['loadavg_after'][0]:.1f} "
             f"on {os.cpu_count()} CPUs\n" + "\n".join(f"  {k}: {v:.2f} s" for k, v in per_point.items()))
    emit(result, as_json, human)


COMMANDS = (exact_command, sweep_command)
BENCH_COMMANDS = (bench_sweep_command,)
