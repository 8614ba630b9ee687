"""``mdm-theory steps-needed``: the smallest N at which the sampler meets a SER, TER or KL target.

Thin CLI over :mod:`validation.steps_needed` (the search and the metric at one ``N``).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import click

from validation.calibrate import KNOBS, REVISER_KNOBS
from validation.commands._common import emit, format_estimate, json_option, progress_option, show_progress
from validation.commands._decoders import check_decoder_method
from validation.commands._revisers import REVISER_NAMES, check_reviser_options, reviser_options
from validation.commands._schedule import check_schedule, schedule_option
from validation.commands.calibrate_options import search_options
from validation.guards import check_metric_target

__all__ = ["steps_needed_cmd"]

#: Samplers steps-needed can search: the families of validation.calibrate (steps-needed is calibrate's
#: one-family case; a sampler whose knob is not a number of steps has that knob searched instead), the revising
#: decoders among them; gemma-renoise is a choice only to be refused with the reason (:data:`GEMMA_REFUSAL`).
SAMPLERS = (*KNOBS, *REVISER_KNOBS, "gemma-renoise")
GEMMA_REFUSAL = ("--sampler gemma-renoise: steps-needed searches a number of steps, and DiffusionGemma's renoise "
                 "sampler takes none (its halting rule stops it; --step-cap only bounds its calls, and the cap it "
                 "hits is reported as the share 'capped'). Its SER, calls' law and capped share at each setting: "
                 "mdm-theory sweep --sampler gemma-renoise --noise uniform --committed yes|no --gamma G1,G2,...")


def _evaluation(ev) -> dict | None:
    if ev is None:
        return None
    return {"n_steps": ev.n_steps, "quantity": ev.quantity, "meets": ev.meets, "estimate": ev.estimate}


def _load_model(checkpoint: str, language: str | None, length: int | None, device: str | None):
    """The checkpoint's denoiser, its language and length (``--language``/``-L`` must agree with it)."""
    from neural.data import language_fingerprint, resolve_language
    from neural.sample import TorchDenoiser
    from neural.train import load_checkpoint, pick_device

    ck = load_checkpoint(checkpoint)
    if ck.config.model.kind != "mdm":
        raise click.UsageError(f"--checkpoint {checkpoint} holds a {ck.config.model.kind} model; "
                               "steps-needed searches the steps of a masked diffusion model")
    lang = resolve_language(language or ck.config.language)
    if ck.language_fingerprint not in (None, language_fingerprint(lang)):
        raise click.UsageError(f"--language {language} is not the language the checkpoint was trained on "
                               f"({ck.config.language})")
    L = ck.config.model.length
    if length not in (None, L):
        raise click.UsageError(f"--length {length} differs from the checkpoint's sequence length {L}")
    return TorchDenoiser(ck.build_model(pick_device(device))), lang, L, ck.config.language


@click.command("steps-needed")
@click.option("--language", default=None, metavar="NAME|FILE.npz",
              help="Preset name or .npz language file (default with --checkpoint: the model's language).")
@click.option("--length", "-L", type=click.IntRange(min=1), default=None,
              help="Sequence length L (default with --checkpoint: the model's length).")
@click.option("--metric", type=click.Choice(["ser", "ter", "kl"]), required=True,
              help="ser: sequence error rate; ter: token error rate TER(p) (a perplexity); kl: KL(q || p).")
@click.option("--target", type=float, required=True, help="Find the smallest N with metric <= TARGET.")
@click.option("--sampler", type=click.Choice(list(SAMPLERS)), default="random", show_default=True,
              help="Sampler: random = the factorized random-order sampler of the paper (with --noise uniform: "
                   "its uniform-noise reverse process); topk, llada (N in multiples "
                   "of the number of blocks L/B) and remdm (N of --schedule) have their steps searched; threshold, "
                   "entropy-sum, eb (gamma), fast-dllm (threshold; --knob factor) and the revising decoders "
                   "llada21, wino (their reveal threshold, at their own options below) take no steps: their knob is "
                   "searched as by calibrate, n_steps is null and the knob and calls say the answer. gemma-renoise "
                   "is refused (no steps: its halting rule decides its calls; use sweep). The decoder "
                   "options below apply as in exact.")
@click.option("--knob", default=None, help="The knob searched when the sampler has several (fast-dllm: threshold "
                                          "or factor)  [default: the sampler's main knob].")
@schedule_option
@search_options
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Sequences per sampler batch (default: 1 for the oracle, all samples for a model).")
@click.option("--checkpoint", type=click.Path(exists=True), default=None,
              help="A trained MDM checkpoint: search the steps of the learned model (SER only).")
@click.option("--device", default=None, help="With --checkpoint: cpu, cuda, ... (default: CUDA when available).")
@click.option("--lossless", default="", metavar="NAMES",
              help="Comma-separated lossless decoders (assd, autospec, self-spec) reported beside the answer: "
                   "the metric exact from their output law (SER = 0), no steps, their E[calls] and E[rounds] by "
                   "Monte Carlo (--samples, --seed).")
@reviser_options
@click.option("--noise", type=click.Choice(["mask", "uniform"]), default="mask", show_default=True,
              help="mask: masked diffusion; uniform: the steps N of the factorized uniform-noise reverse process "
                   "(--sampler random; exact while V^L <= 4096, else Monte Carlo with the path KL as the upper "
                   "bound of kl and ter); docs/methods/uniform-noise.md.")
@progress_option
@json_option
def steps_needed_cmd(language, length, metric, target, sampler, knob, schedule, method, samples, confidence,
                     max_steps, seed, tie_seed, grid, refine, decoder_opts, batch_size, checkpoint, device, lossless,
                     reviser_opts, noise, progress, as_json):
    """The smallest number of steps N at which the sampler's SER, TER or KL is at most TARGET.

    Steps are evaluated at N = 1, 2, 4, ... (topk and llada with blocks: multiples of L/B) up to the
    first N meeting the target, then bisected between the last miss and it; the expected calls grow
    with N, so no larger N is cheaper, and the output says whether the metric was monotone on the N
    evaluated (it is not always). A sampler without steps has its knob searched on a grid, as by
    calibrate (its one-family case). Each N is computed exactly where an exact method exists (the
    interval language's closed forms at any L, the DP or enumeration at small L), otherwise by Monte
    Carlo, where "met" means the one-sided upper confidence bound is <= TARGET. Without the exact
    law, kl and ter are compared through the Jensen bound (an upper bound: the N found suffices).
    Reports N, the metric at N and at N - 1, and the method of each.
    """
    from validation.steps_needed import StepsNeeded, model_ser, oracle_metric, search_steps, uniform_noise_metric
    from validation.sweep import PointConfig

    t0 = time.perf_counter()
    if sampler == "gemma-renoise":
        raise click.UsageError(GEMMA_REFUSAL)
    if reviser_opts or sampler in REVISER_NAMES:
        check_reviser_options(sampler, dict(decoder_opts), reviser_opts, None)  # a bad one named before any work
    if noise == "uniform":
        _check_uniform(sampler, decoder_opts, checkpoint, method, schedule)
    if not math.isfinite(target) or target < 0:
        raise click.BadParameter(f"the target must be a finite number >= 0, got {target}", param_hint="--target")
    check_metric_target(metric, target)
    verbose = show_progress(progress)
    check_decoder_method(sampler, method)
    if sampler == "random" and decoder_opts.given():
        from numerics.sampling.registry import decoder_names

        raise click.UsageError(f"{', '.join(decoder_opts.given())} apply to the decoders "
                               f"({', '.join(decoder_names('decoder'))}), not to --sampler random")
    if knob is not None and sampler == "random":
        raise click.UsageError("--knob applies to a sampler with several knobs (fast-dllm), not to random")
    if checkpoint is not None and sampler != "random":
        raise click.UsageError(f"--checkpoint searches the steps of the factorized random-order sampler; "
                               f"--sampler {sampler} with a learned model: mdm-theory evaluate --sampler")
    if checkpoint is not None:
        if metric != "ser":
            raise click.UsageError(f"--metric {metric} of a learned model needs its exact output law; "
                                   "with --checkpoint only --metric ser (Monte Carlo) is available")
        if method not in ("auto", "mc"):
            raise click.UsageError(f"--method {method}: a learned model has no exact method; use auto or mc")
        denoiser, lang, length, language = _load_model(checkpoint, language, length, device)
        evaluate = model_ser(denoiser, lang, length, schedule, samples, seed, target, confidence=confidence, batch_size=batch_size)
    else:
        if language is None or length is None:
            raise click.UsageError("--language and --length are required (or --checkpoint)")
        from numerics.languages.presets import load_language

        try:
            cfg = PointConfig(language, length, 1, schedule, method, samples, seed, None, batch_size or 1,
                              tie_seed=tie_seed)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        lang = load_language(language)
        from numerics.methods import choose_method

        # what evaluating N = 1 would refuse (a size no method can compute), refused before anything runs
        check_schedule(schedule, [language], [length])
        if noise == "mask" and sampler not in REVISER_NAMES:
            choose_method(method, lang, length, cfg.make_schedule(), samples, name=language)
        _check_reachable(metric, target, language, lang, length)
        if sampler != "random":
            return _family_steps(cfg, sampler if knob is None else f"{sampler}:{knob}",
                                 {**decoder_opts.fields(), **reviser_opts}, metric, target, lang, confidence,
                                 max_steps, grid, refine, verbose, t0, as_json)
        if noise == "uniform":
            from validation.sweep import check_costs

            try:  # the chain beyond its size (--method enumerate), a Monte Carlo run beyond memory
                check_costs([replace(cfg, noise="uniform")])
            except ValueError as exc:
                raise click.UsageError(str(exc)) from None
        evaluate = (oracle_metric if noise == "mask" else uniform_noise_metric)(cfg, metric, target, lang, confidence)

    def logged(n: int):
        ev = evaluate(n)
        if verbose:
            click.echo(f"N = {n}: {ev.quantity} {format_estimate(_record(ev.estimate))} "
                       f"-> {'meets' if ev.meets else 'misses'} {target}", err=True)
        return ev

    found: StepsNeeded = search_steps(logged, max_steps)
    mc = any(not e.estimate.exact for e in found.evaluations)
    bound = any(e.quantity.endswith("_bound") for e in found.evaluations)
    result = {
        "language": language, "length": length, "metric": metric, "target": target, "sampler": sampler,
        "schedule": schedule, "method": method, "checkpoint": checkpoint, "noise": noise,
        "tie_seed": tie_seed if sampler != "random" else None,
        "n_steps": found.n_steps, "met": found.met, "exact": found.exact,
        "confidence": confidence if mc else None,
        "at_n": _evaluation(found.at_n), "at_n_minus_1": _evaluation(found.at_n_minus_1),
        "evaluations": [_evaluation(e) for e in found.evaluations],
        "max_steps": max_steps,
        "grid": {"knob": "steps", "kind": "doubling", "low": 1, "high": max_steps, "unit": 1, "straddles": [],
                 "options": {}},
        "monotone": _monotone_steps(found.evaluations),
        "notes": _notes(found, mc, bound, confidence),
        "elapsed_s": time.perf_counter() - t0,
    }
    if not found.met:
        result["null_reason"] = {"n_steps": f"no N <= {max_steps} meets {metric} <= {target}"}
    elif found.at_n_minus_1 is None:
        result["null_reason"] = {"at_n_minus_1": "N = 1 is the smallest number of steps"}
    human = _human(result, found)
    names = [n.strip() for n in lossless.split(",") if n.strip()]
    if names:
        from validation.calibrate import lossless_settings

        try:
            rows = lossless_settings(language, length, metric, target, names, samples=samples, seed=seed)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--lossless") from None
        result["lossless"] = [{"decoder": r.family, "label": r.label, "metric": r.metric, "calls": r.calls,
                               "status": r.status} for r in rows]
        human += "".join(f"\n  {r.label} (lossless, no steps): {metric} {format_estimate(_record(r.metric))}, "
                         f"{r.calls.value:.4g} calls on average -> {r.status}" for r in rows)
    emit(result, as_json, human)


def _family_steps(cfg, name, opts, metric, target, language, confidence, max_steps, grid, refine, verbose, t0,
                  as_json):
    """steps-needed for every sampler but ``random``: calibrate's search of one family (its steps, or its
    knob when it has no steps), reported in steps-needed's fields."""
    from validation.calibrate import GRID_POINTS, REFINE_BISECTIONS, family, search_family
    from validation.commands.calibrate import _setting, grid_text

    def log(s):
        if verbose:
            click.echo(f"{s.label}: {s.quantity} {format_estimate(_record(s.metric))} -> {s.status}", err=True)

    try:
        fam = family(name, opts)
        fs = search_family(fam, cfg, metric, target, language, confidence, max_steps, log,
                           grid=GRID_POINTS if grid is None else grid, refine=REFINE_BISECTIONS if refine is None else refine)
    except ValueError as exc:  # a knob the sampler lacks, an option it does not take, a metric it has no law for
        raise click.UsageError(str(exc)) from None
    if fs.error is not None and not fs.settings:
        raise click.UsageError(f"--sampler {fam.sampler} at L = {cfg.length}: {fs.error}")
    s = fs.cheapest
    mc = any(not x.metric.exact for x in fs.settings)
    steps = fam.integer
    by_value = {x.value: x for x in fs.settings}
    prev = by_value.get(s.value - fs.grid["unit"]) if steps and s is not None else None

    def evaluation(x):
        return None if x is None else {"n_steps": int(x.value) if steps else None, "quantity": x.quantity,
                                       "meets": x.meets, "estimate": x.metric, **_setting(x)}

    result = {
        "language": cfg.language, "length": cfg.length, "metric": metric, "target": target, "sampler": fam.sampler,
        "schedule": cfg.schedule if steps else None, "method": cfg.method, "checkpoint": None, "noise": "mask",
        "tie_seed": cfg.tie_seed, "options": fs.grid["options"], "parameter": fs.parameter,
        "sampler_parameters": _parameters(fam, cfg, s),
        "n_steps": int(s.value) if steps and s is not None else None, "met": s is not None,
        "exact": s is not None and s.metric.exact and (prev is None or prev.metric.exact),
        "confidence": confidence if mc else None,
        fs.parameter: s.value if s is not None else None, "calls": s.calls if s is not None else None,
        "setting": _setting(s), "at_n": evaluation(s) if steps else None, "at_n_minus_1": evaluation(prev),
        "evaluations": [evaluation(x) for x in fs.settings], "max_steps": max_steps,
        "grid": fs.grid, "monotone": fs.monotone,
        "notes": [grid_text(fs)] + ([] if steps else [f"{fam.sampler} has no number of steps: its {fs.parameter} "
                                                      "was searched (validation.calibrate); calls are its expected "
                                                      "denoiser calls"]),
        "elapsed_s": time.perf_counter() - t0,
    }
    if s is None:
        result["null_reason"] = {"n_steps" if steps else fs.parameter:
                                 f"no {fs.parameter} evaluated meets {metric} <= {target}"}
    elif not steps:
        result["null_reason"] = {"n_steps": f"{fam.sampler} takes {fs.parameter}, not a number of steps"}
    elif prev is None:
        result["null_reason"] = {"at_n_minus_1": f"N = {int(s.value)} is the smallest number of steps"}
    if steps:
        what = f"{metric.upper()} <= {target:g}"
        human = (f"N = {int(s.value)}: the smallest number of steps evaluated with {what} on {cfg.language} at "
                 f"L = {cfg.length}, {fam.name} ({s.calls.value:.4g} calls, {s.quantity} "
                 f"{format_estimate(_record(s.metric))})" if s else f"no N <= {max_steps} gives {what} ({fam.name})")
    else:
        human = (f"{fam.name}: {fs.parameter} = {s.value:g} is the cheapest setting evaluated with "
                 f"{metric.upper()} <= {target:g} ({s.calls.value:.4g} calls, {s.quantity} "
                 f"{format_estimate(_record(s.metric))})" if s else
                 f"{fam.name}: no {fs.parameter} evaluated gives {metric.upper()} <= {target:g}")
    emit(result, as_json, human + "\n  " + grid_text(fs))


def _parameters(fam, cfg, s) -> dict | None:
    """A decoder's every parameter at the answer (its ``steps`` the ``N`` found); ``None`` for the other samplers."""
    if s is None:
        return None
    sampler = fam.build(cfg, s.value).make_sampler()
    return sampler.parameters() if sampler.kind in ("decoder", "reviser") else None


def _check_uniform(sampler, decoder_opts, checkpoint, method, schedule) -> None:
    """What ``--noise uniform`` refuses: another sampler than random, a decoder option, a checkpoint, a method the
    uniform-noise chain has not, the optimal schedule (each a ``click.UsageError`` naming the flag)."""
    from validation.canvas_samplers import GEMMA_METHODS

    if sampler != "random":
        raise click.UsageError(f"--noise uniform searches the steps of --sampler random (the factorized reverse "
                               f"process), not {sampler!r}")
    if decoder_opts.given() or checkpoint is not None:
        raise click.UsageError("--noise uniform takes no decoder option and no --checkpoint (a masked model)")
    if method not in GEMMA_METHODS:
        raise click.UsageError(f"--noise uniform supports --method {', '.join(GEMMA_METHODS)}, not {method!r}")
    if schedule == "optimal":
        raise click.UsageError("--noise uniform does not support --schedule optimal (it is optimal for masking)")


def _record(estimate) -> dict:
    from numerics.provenance import to_jsonable

    return to_jsonable(estimate)


def _check_reachable(metric: str, target: float, spec: str, language, length: int) -> None:
    """TER(p) >= TER(q) = exp(H(q) / L) for every sampler: a target below the data's own TER is never met."""
    if metric != "ter":
        return
    from validation.calibrate import data_entropy

    H = data_entropy(language, length)
    if H is not None and target <= math.exp(H.value / length):
        raise click.BadParameter(f"TER(q) = {math.exp(H.value / length):.6g} for {spec} at L = {length} is the floor "
                                 f"of every sampler's TER; a target of {target} is never met", param_hint="--target")


def _monotone_steps(evaluations) -> bool:
    """The metric never rises with N over the N evaluated (Monte Carlo: beyond both intervals)."""
    order = sorted(evaluations, key=lambda e: e.n_steps)
    return not any(b.estimate.interval()[0] > a.estimate.interval()[1] * (1 + 1e-12) + 1e-300
                   for a, b in zip(order, order[1:]))


def _notes(found, mc: bool, bound: bool, confidence: float) -> list[str]:
    notes = [f"N = 1, 2, 4, ... up to the first N meeting the target, then bisection (N - 1 evaluated): the answer "
             f"is the smallest N evaluated that meets it; the metric was "
             f"{'' if _monotone_steps(found.evaluations) else 'NOT '}monotone in N on the N evaluated"]
    if mc:
        notes.append(f"Monte Carlo points meet the target when their one-sided {confidence:.0%} upper confidence "
                     "bound does (each N separately; no correction for the number of N evaluated)")
    if bound:
        which = "the path KL of uniform-noise sampling" if any(e.quantity.endswith("_path_bound")
                                                               for e in found.evaluations) else "the Jensen bound"
        notes.append(f"without the exact law {which} (an upper bound on KL, hence on TER) was compared: "
                     "the N found suffices, the smallest N for the metric itself may be smaller")
    return notes


def _human(result: dict, found) -> str:
    what = f"{result['metric'].upper()} <= {result['target']:g}"
    where = (f"{result['language']} at L = {result['length']}, {result['schedule']} schedule, "
             f"{result['sampler']} sampler" + (f", model {result['checkpoint']}" if result["checkpoint"] else ""))
    if not found.met:
        head = f"no N <= {result['max_steps']} gives {what} on {where}"
    else:
        head = f"N = {found.n_steps}: the smallest number of steps with {what} on {where}"
    lines = [head]
    for label, ev in (("at N", found.at_n), ("at N - 1", found.at_n_minus_1)):
        if ev is not None:
            lines.append(f"  {label} = {ev.n_steps}: {ev.quantity} {format_estimate(_record(ev.estimate))}")
    lines.append(f"  {len(found.evaluations)} values of N evaluated, {result['elapsed_s']:.2f} s")
    lines += [f"  note: {n}" for n in result["notes"]]
    return "\n".join(lines)
