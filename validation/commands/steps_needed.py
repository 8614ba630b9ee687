"""``mdm-theory steps-needed``: the smallest N at which the sampler meets a SER, TER or KL target.

Thin CLI over :mod:`validation.steps_needed` (the search and the metric at one ``N``).
"""

from __future__ import annotations

import math
import time

import click

from numerics.sampling.registry import DECODERS
from validation.commands._common import emit, format_estimate, json_option, progress_option, show_progress
from validation.commands._decoders import DECODER_NAMES, check_decoder_method, decoder_options
from validation.commands._schedule import check_schedule, schedule_option
from validation.guards import check_metric_target

__all__ = ["steps_needed_cmd"]

#: Samplers steps-needed can search: the families of validation.calibrate (steps-needed is calibrate's
#: one-family case; a family whose parameter is not a number of steps has its gamma searched instead).
SAMPLERS = ("random", "topk", "threshold", "entropy-sum")
#: Decoders whose number of steps steps-needed searches (docs/methods/decoders.md): those whose registry
#: entry's main knob is the steps (llada, remdm, dream); fast-dllm, eb and llada2 lead with a threshold, factor
#: or gamma (mdm-theory calibrate).
DECODER_SAMPLERS = tuple(n for n in DECODER_NAMES if getattr(DECODERS[n].knob, "name", None) == "steps")


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
@click.option("--sampler", type=click.Choice(list(SAMPLERS + DECODER_NAMES)), default="random", show_default=True,
              help="Sampler: random = the factorized random-order sampler of the paper; topk (its steps searched); "
                   "threshold / entropy-sum (no steps: their gamma is searched, n_steps is null and gamma, calls "
                   "say the answer); llada (N searched in multiples of the number of blocks L/B) and remdm "
                   "(N of --schedule), with the decoder options below; fast-dllm and eb take no steps "
                   "(use calibrate).")
@schedule_option
@click.option("--method", type=click.Choice(["auto", "closed-form", "dp", "enumerate", "mc"]), default="auto",
              show_default=True, help="How each N is computed: auto = the fastest exact method that fits, else "
                                      "Monte Carlo (a learned model: always Monte Carlo).")
@click.option("--samples", type=click.IntRange(min=2), default=1000, show_default=True,
              help="Monte Carlo samples per N evaluated.")
@click.option("--confidence", type=click.FloatRange(0.5, 1.0, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Monte Carlo: one-sided confidence that the metric at N is <= TARGET.")
@click.option("--max-steps", type=click.IntRange(min=1), default=1 << 16, show_default=True,
              help="Give up (target not met) beyond this N.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the Monte Carlo draws.")
@click.option("--tie-seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the adaptive rules' and decoders' tie priority (reported as tie_seed; the random "
                   "sampler has no ties).")
@decoder_options
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Sequences per sampler batch (default: 1 for the oracle, all samples for a model).")
@click.option("--checkpoint", type=click.Path(exists=True), default=None,
              help="A trained MDM checkpoint: search the steps of the learned model (SER only).")
@click.option("--device", default=None, help="With --checkpoint: cpu, cuda, ... (default: CUDA when available).")
@progress_option
@json_option
def steps_needed_cmd(language, length, metric, target, sampler, schedule, method, samples, confidence, max_steps,
                     seed, tie_seed, decoder_opts, batch_size, checkpoint, device, progress, as_json):
    """The smallest number of steps N at which the sampler's SER, TER or KL is at most TARGET.

    Exponential search then bisection over N (about 2 log2 N evaluations, not a grid), assuming the
    metric does not increase with N. Each N is computed exactly where an exact method exists
    (the interval language's closed forms at any L, the DP or enumeration at small L), otherwise
    by Monte Carlo, where "met" means the one-sided upper confidence bound is <= TARGET. Without
    the exact law, kl and ter are compared through the Jensen bound (an upper bound: the N found
    suffices). Reports N, the metric at N and at N - 1, and the method of each.
    """
    from validation.steps_needed import StepsNeeded, model_ser, oracle_metric, search_steps
    from validation.sweep import PointConfig

    t0 = time.perf_counter()
    if not math.isfinite(target) or target < 0:
        raise click.BadParameter(f"the target must be a finite number >= 0, got {target}", param_hint="--target")
    check_metric_target(metric, target)
    verbose = show_progress(progress)
    check_decoder_method(sampler, method)
    if sampler in DECODER_NAMES and sampler not in DECODER_SAMPLERS:
        raise click.UsageError(f"--sampler {sampler} takes no number of steps (its threshold, factor or gamma "
                               "decides the calls): search it with mdm-theory calibrate")
    if sampler not in DECODER_NAMES and decoder_opts.given():
        raise click.UsageError(f"{', '.join(decoder_opts.given())} apply to the decoders "
                               f"({', '.join(DECODER_NAMES)}), not to --sampler {sampler}")
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

        try:  # the sampler joins this config (PointConfig.sampler) when numerics.sampling has more than one
            cfg = PointConfig(language, length, 1, schedule, method, samples, seed, None, batch_size or 1,
                              tie_seed=tie_seed)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        lang = load_language(language)
        from numerics.methods import choose_method

        # what evaluating N = 1 would refuse (a size no method can compute), refused before anything runs
        check_schedule(schedule, [language], [length])
        choose_method(method, lang, length, cfg.make_schedule(), samples, name=language)
        _check_reachable(metric, target, language, lang, length)
        check_schedule(schedule, [language], [length])
        if sampler in DECODER_SAMPLERS:
            return _decoder_steps(cfg, sampler, decoder_opts, metric, target, lang, confidence, max_steps, verbose,
                                  t0, as_json)
        if sampler in ("threshold", "entropy-sum"):
            return _gamma_family(cfg, sampler, metric, target, lang, confidence, max_steps, verbose, t0, as_json)
        evaluate = (oracle_metric(cfg, metric, target, lang, confidence) if sampler == "random"
                    else _family_metric(cfg, sampler, metric, target, lang, confidence))

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
        "schedule": schedule, "method": method, "checkpoint": checkpoint,
        "tie_seed": tie_seed if sampler != "random" else None,
        "n_steps": found.n_steps, "met": found.met, "exact": found.exact,
        "confidence": confidence if mc else None,
        "at_n": _evaluation(found.at_n), "at_n_minus_1": _evaluation(found.at_n_minus_1),
        "evaluations": [_evaluation(e) for e in found.evaluations],
        "max_steps": max_steps,
        "notes": _notes(found, mc, bound, confidence),
        "elapsed_s": time.perf_counter() - t0,
    }
    if not found.met:
        result["null_reason"] = {"n_steps": f"no N <= {max_steps} meets {metric} <= {target}"}
    elif found.at_n_minus_1 is None:
        result["null_reason"] = {"at_n_minus_1": "N = 1 is the smallest number of steps"}
    emit(result, as_json, _human(result, found))


def _family_metric(cfg, sampler: str, metric: str, target: float, language, confidence: float):
    """``N -> Evaluation`` of a step family other than ``random`` through calibrate's one-setting function."""
    from dataclasses import replace

    from validation.calibrate import _status, evaluate_setting
    from validation.steps_needed import Evaluation

    def evaluate(n: int):
        point = replace(cfg, n_steps=int(n), sampler=sampler)
        e, quantity, _ = evaluate_setting(point.make_sampler(), metric, language, point.length, method=point.method,
                                          samples=point.samples, rng=point.seed, confidence=confidence,
                                          names=(point.language, None))
        return Evaluation(n, quantity, e, _status(e, target) == "meets")

    return evaluate


def _decoder_steps(cfg, sampler, opts, metric, target, language, confidence, max_steps, verbose, t0, as_json):
    """steps-needed for ``llada`` / ``remdm``: the search runs over ``N = m L/B`` (llada's steps must be a
    multiple of the number of blocks), every ``N`` by :func:`validation.sweep.evaluate_point` (point_metrics)."""
    from dataclasses import replace

    from numerics.estimate import Estimate
    from numerics.metrics import choose_decoder_method
    from validation.steps_needed import Evaluation, StepsNeeded, search_steps
    from validation.sweep import evaluate_point

    B = opts.block_length or cfg.length
    nb = cfg.length // B if sampler == "llada" and B >= 1 and cfg.length % B == 0 else 1
    try:  # a bad block length or option is refused here, by the decoder, with its name
        first = replace(cfg, n_steps=nb, sampler=sampler, **opts.fields())
        decoder = first.make_sampler()
        ran = choose_decoder_method(cfg.method, decoder, language.vocab_size, cfg.length)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if ran == "mc" and metric != "ser" and not decoder.path_deterministic:
        raise click.UsageError(f"--metric {metric} of {decoder.label} needs its exact law (p(x) is a mixture over "
                               "reveal orders or draws): use --metric ser, or a size an exact method fits")

    def evaluate(m: int) -> Evaluation:
        N = m * nb
        r = evaluate_point(replace(first, n_steps=N))
        e = _estimate(r[metric])
        if metric == "ter" and r["ter"].get("value") is None and r["ter"]["method"] == "unavailable":
            kl, ter_q = _estimate(r["kl"]), _estimate(r["ter_data"])  # TER(p) = TER(q) exp(KL / L)
            lo, hi = kl.interval()
            f = lambda k: ter_q.value * math.exp(k / cfg.length)  # noqa: E731
            e = Estimate(f(kl.value), f(kl.value) * kl.stderr / cfg.length, f"TER(q) exp(KL / L): KL {kl.method}",
                         kl.samples, f(lo), f(hi), kl.confidence)
        ev = Evaluation(N, metric, e, e.value <= target if e.exact else e.interval()[1] <= target)
        if verbose:
            click.echo(f"N = {N}: {metric} {format_estimate(_record(e))} -> {'meets' if ev.meets else 'misses'} "
                       f"{target}", err=True)
        return ev

    found: StepsNeeded = search_steps(evaluate, max(1, max_steps // nb))
    n = None if found.n_steps is None else found.n_steps * nb
    mc = any(not e.estimate.exact for e in found.evaluations)
    prev = found.at_n_minus_1
    result = {
        "language": cfg.language, "length": cfg.length, "metric": metric, "target": target, "sampler": sampler,
        "schedule": cfg.schedule, "method": cfg.method, "checkpoint": None, "tie_seed": cfg.tie_seed,
        "sampler_parameters": decoder.parameters() | {"steps": n},
        "n_steps": n, "met": found.met, "exact": found.exact, "confidence": confidence if mc else None,
        "at_n": _evaluation(found.at_n), "at_n_minus_1": _evaluation(prev),
        "evaluations": [_evaluation(e) for e in found.evaluations], "max_steps": max_steps,
        "notes": _notes(found, mc, False, confidence)
        + ([f"llada's N is a multiple of the number of blocks L/B = {nb}: at_n_minus_1 is N - {nb}"] if nb > 1 else [])
        + (["Monte Carlo intervals are the point's two-sided 95% ones: their upper end is a one-sided 97.5% bound"]
           if mc else []),
        "elapsed_s": time.perf_counter() - t0,
    }
    if not found.met:
        result["null_reason"] = {"n_steps": f"no N <= {max_steps} meets {metric} <= {target}"}
    elif prev is None:
        result["null_reason"] = {"at_n_minus_1": f"N = {n} is the smallest number of steps"}
    emit(result, as_json, _human(result, replace(found, n_steps=n, max_steps=max_steps)))


def _estimate(rec: dict):
    """An :class:`~numerics.estimate.Estimate` from a point's JSON record (an infinite value is ``inf``)."""
    from numerics.estimate import Estimate

    if rec.get("value") is None:
        if rec["method"] == "unavailable":
            raise click.ClickException(f"unavailable: {rec['null_reason']['value']}")
        return Estimate(math.inf, 0.0, rec["method"], int(rec.get("samples") or 0))
    return Estimate(float(rec["value"]), float(rec.get("stderr") or 0.0), rec["method"], int(rec.get("samples") or 0),
                    rec.get("ci_low"), rec.get("ci_high"), rec.get("confidence") or 0.95)


def _gamma_family(cfg, sampler, metric, target, language, confidence, max_steps, verbose, t0, as_json):
    """steps-needed for a family without steps: calibrate's search of its gamma (same output fields)."""
    from validation.calibrate import family, search_family
    from validation.commands.calibrate import _setting

    def log(s):
        if verbose:
            click.echo(f"{s.label}: {s.quantity} {format_estimate(_record(s.metric))} -> {s.status}", err=True)

    fs = search_family(family(sampler), cfg, metric, target, language, confidence, max_steps, log)
    mc = any(not s.metric.exact for s in fs.settings)
    result = {
        "language": cfg.language, "length": cfg.length, "metric": metric, "target": target, "sampler": sampler,
        "schedule": None, "method": cfg.method, "checkpoint": None, "n_steps": None, "met": fs.cheapest is not None,
        "exact": fs.cheapest is not None and fs.cheapest.metric.exact, "confidence": confidence if mc else None,
        "gamma": fs.cheapest.value if fs.cheapest else None, "calls": fs.cheapest.calls if fs.cheapest else None,
        "setting": _setting(fs.cheapest), "at_n": None, "at_n_minus_1": None,
        "evaluations": [_setting(s) for s in fs.settings], "max_steps": max_steps,
        "notes": [(f"{sampler} has no number of steps: its gamma was searched by bisection (validation.calibrate); "
                  "calls are its expected denoiser calls")],
        "elapsed_s": time.perf_counter() - t0,
        "null_reason": {"n_steps": f"{sampler} takes gamma, not a number of steps"},
    }
    s = fs.cheapest
    human = (f"{sampler}: gamma = {s.value:g} is the cheapest setting tried with {metric.upper()} <= {target:g} "
             f"({s.calls.value:.4g} calls, {s.quantity} {format_estimate(_record(s.metric))})" if s else
             f"{sampler}: no gamma tried gives {metric.upper()} <= {target:g}")
    emit(result, as_json, human)


def _record(estimate) -> dict:
    from numerics.provenance import to_jsonable

    return to_jsonable(estimate)


def _check_reachable(metric: str, target: float, spec: str, language, length: int) -> None:
    """TER(p) >= TER(q) = exp(H(q) / L) for every sampler: a target below the data's own TER is never met."""
    if metric != "ter":
        return
    from numerics.metrics import exact_entropy

    H = exact_entropy(language, length)
    if H is not None and target <= math.exp(H.value / length):
        raise click.BadParameter(f"TER(q) = {math.exp(H.value / length):.6g} for {spec} at L = {length} is the floor "
                                 f"of every sampler's TER; a target of {target} is never met", param_hint="--target")


def _notes(found, mc: bool, bound: bool, confidence: float) -> list[str]:
    notes = ["bisection assumes the metric does not increase with N; N - 1 is evaluated to show the step"]
    if mc:
        notes.append(f"Monte Carlo points meet the target when their one-sided {confidence:.0%} upper confidence "
                     "bound does (each N separately; no correction for the number of N evaluated)")
    if bound:
        notes.append("without the exact law the Jensen bound (an upper bound on KL, hence on TER) was compared: "
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
