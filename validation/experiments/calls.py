"""Experiment "How many calls, at best": each family's cheapest setting, its Pareto front, and the floor.

For ``2gram``, its pruned variant ``2gram-pruned`` (zeros in the table, so SER > 0) and the
interval language (Theorem 4.4's, ``interval-l{l}``), at each length of ``lengths`` (64 and 256):

* **Fronts**: :func:`validation.calibrate.calibrate` for every family of ``families`` and
  ``ser_decoders`` (LLaDA, Fast-dLLM, EB-Sampler) for SER <= ``ser_target`` on the languages where SER
  is not identically 0 (a language of full support, ``2gram``, has SER 0 for every sampler: no SER
  panel, said in a note), and for every family of ``families`` for TER within ``ter_excess`` of the
  data's ``TER(q)`` ("perplexity within 1%") on ``ter_languages``
  -- with every setting visited on the axes (expected calls, SER) and
  (expected calls, ``TER / TER(q) - 1``) and the Pareto front over all families.
* **Documented settings**: the registered decoders of ``documented`` (of
  :data:`numerics.sampling.registry.DECODERS`: the rules the runtimes ship, with a compiled or quick
  path; the runtimes section draws the others) at each of their presets
  (the runtimes' documented defaults; ``N = L``, one step per token, where the decoder takes steps),
  one labelled marker each on the SER panels (Monte Carlo or exact, by
  :func:`numerics.metrics.point_metrics`); the simplified rules (``random``, ``topk``, ``threshold``,
  ``entropy-sum``) have no documented setting and are on the fronts. Each number keeps
  its method (exact closed form / DP, Monte Carlo with its interval, or the Jensen upper bound for
  the random order's TER at large ``L``). The cheapest setting meeting each target is the
  sentence per language.
* **Bounds on the same axes**: the best ``K``-block random-order schedule (Chen-Cong-Li's DP on
  the exact information curve, :func:`numerics.exact.schedule_opt.optimal_blocks`) with ``K``
  calls, its SER certificate ``1 - exp(-KL*_K)`` (I3), and Zhao-Cai's ``TC / K`` with constant 1
  (claim ``ZC.tc``) -- where the information curve is exact (token Markov chains; else left out
  and said so).
* **Floor** (``tiny_lengths``): the exact optimal decoder
  (:func:`numerics.exact.optimal_decoder.optimal_decoder`: the smallest SER and the smallest
  forward KL of the monotone decoders that pick the next positions from the revealed values, each
  revealed value drawn from its oracle marginal, in at most ``T`` calls; draw-then-select and greedy
  decoders are outside that class and can go below it, ``docs/methods/optimal-decoder.md``) beside every family's exact (calls, SER, KL) on a small grid of its parameter. SER
  is linear in the output law, so a step family (``N`` steps: at most ``N`` calls on every run,
  a random order being a mixture of such decoders) is never below ``SER*_N``; one that is would
  be a finding. The KL floor is for deterministic policies: a randomized sampler's mixture law can
  have a smaller ``KL(q || p)`` (KL is convex, not linear), so the KL panel is a comparison, not a check.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from numerics.sampling.registry import DECODERS, decoder_names

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

NAME = "calls"
TITLE = "How many calls, at best"
VERSION = 2
_PALETTE = ("#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#8c564b", "#17becf", "#9467bd", "#e377c2",
            "#bcbd22", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94")
COLORS = dict(zip(DECODERS, _PALETTE))  # one colour per family of the sampler registry, in its order
_MARKER_CYCLE = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p", "d", "H", "8", "1")
MARKERS = dict(zip(DECODERS, _MARKER_CYCLE))  # one marker per family of the sampler registry, in its order


#: The registry's decoders drawn at their documented presets: those with a compiled Monte Carlo path
#: (:attr:`~numerics.sampling.registry.DecoderSpec.compiled`) and ``dream``, whose generic path is as quick;
#: the other generic ones (dinfer and the history decoders) cost 10-2000x the random point (Config.documented).
DOCUMENTED = tuple(n for n in decoder_names("decoder") if DECODERS[n].compiled or n == "dream")
#: The calibrate families of the fronts: the registry's random order and adaptive rules.
FAMILIES = decoder_names("random") + decoder_names("adaptive")


@dataclass(frozen=True)
class Config:
    """Sizes of the experiment.

    Attributes
    ----------
    languages : the languages (``interval-l{l}`` is the interval language with ``l = interval``).
    interval : ``l`` of the interval language (must divide every length and the tiny length).
    lengths : ``L`` of the fronts, the bounds and the documented settings.
    ter_languages : the languages of the TER fronts.
    documented : the registered decoders drawn at their documented presets (dinfer, credit, klass, prophet
        and info-gain run on the generic path at 10-2000x the random point's cost: the runtimes section
        draws them).
    short_languages : languages whose fronts are searched at the first length only and without the
        adaptive rules of ``families`` (random and ``ser_decoders`` only): those rules recompute every
        marginal at each of their up to ``L`` steps, which on the interval language costs 45 CPU-s at
        ``L = 64`` and minutes at 256 (``full`` searches everything).
    families : the calibrate families searched (:func:`validation.calibrate.family` names).
    ser_decoders : decoder families searched for the SER target too (their TER needs a law no Monte
        Carlo point gives for a decoder whose output mixes reveal orders: SER only).
    samples : Monte Carlo samples per setting.
    grid, refine : a real knob's grid points and the bisections of each pair straddling the target
        (:func:`validation.calibrate.search_family`).
    ser_target : the SER target.
    ter_excess : the TER target, relative to ``TER(q)`` (0.01 = perplexity within 1%).
    tiny_lengths : ``L`` of the optimal decoder's floor, one per language.
    tiny_gammas : parameters of the gamma families on the tiny grid.
    confidence : one-sided level of a Monte Carlo "meets".
    seed : seed of every Monte Carlo draw.
    """

    languages: tuple[str, ...] = ("2gram", "2gram-pruned", "interval-l4")
    interval: int = 4
    lengths: tuple[int, ...] = (64, 256)
    ter_languages: tuple[str, ...] = ("2gram",)
    short_languages: tuple[str, ...] = ("interval-l4",)
    documented: tuple[str, ...] = DOCUMENTED
    families: tuple[str, ...] = FAMILIES
    ser_decoders: tuple[str, ...] = ("llada", "fast-dllm", "eb")
    samples: int = 200
    grid: int = 9
    refine: int = 3
    ser_target: float = 0.1
    ter_excess: float = 0.01
    tiny_lengths: tuple[int, ...] = (4, 4, 4)
    tiny_gammas: tuple[float, ...] = (0.3, 0.6, 0.9)
    confidence: float = 0.95
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(languages=("2gram", "2gram-pruned", "interval-l3"), interval=3, lengths=(3,),
                   families=("random", "topk", "threshold"), ser_decoders=(), samples=16, grid=5, refine=1,
                   tiny_lengths=(3, 3, 3), tiny_gammas=(0.5,), ser_target=0.4)

    @classmethod
    def full(cls) -> Config:
        return cls(samples=1000, grid=65, refine=4, short_languages=())


def _full_support(lang: str) -> bool:
    """Whether every sequence of ``lang`` is valid (then SER is 0 for every sampler: nothing to search)."""
    from numerics.languages.presets import support_is_complete

    return bool(support_is_complete(eng.load_language(lang)))


def _setting_row(s, lang: str, L: int, metric: str, ter_q: float | None) -> dict:
    lo, hi = s.metric.interval()
    to_axis = (lambda v: v / ter_q - 1.0) if metric == "ter" else (lambda v: v)
    return {"language": lang, "length": L, "metric": metric, "family": s.family, "parameter": s.parameter,
            "value": s.value, "label": s.label, "calls": s.calls.value, "y": to_axis(s.metric.value),
            "y_high": to_axis(hi), "quantity": s.quantity, "method": s.metric.method, "status": s.status}


def _front_part(cfg: Config, lang: str, metric: str, L: int, fams: tuple[str, ...]) -> dict:
    """Calibrate the families ``fams`` for one (language, metric, L): settings, front, cheapest."""
    from numerics.metrics import exact_entropy
    from validation.calibrate import calibrate

    target = cfg.ter_excess if metric == "ter" else cfg.ser_target
    c = calibrate(lang, L, metric, target, list(fams), relative=metric == "ter", samples=cfg.samples,
                  seed=cfg.seed, confidence=cfg.confidence, grid=cfg.grid, refine=cfg.refine)
    ter_q = math.exp(exact_entropy(eng.load_language(lang), L).value / L) if metric == "ter" else None
    settings = [_setting_row(s, lang, L, metric, ter_q) for fs in c.searches for s in fs.settings]
    front = {(s.family, s.value) for s in c.front}
    for r in settings:
        r["front"] = (r["family"], r["value"]) in front
    best = c.cheapest
    return {"settings": settings, "met": c.met, "target": c.target,
            "cheapest": _setting_row(best, lang, L, metric, ter_q) if best else None,
            "best": _setting_row(c.best, lang, L, metric, ter_q)}


def _bounds_part(cfg: Config, lang: str, L: int, ks: list[int]) -> dict:
    """The best K-block random-order schedule's KL (DP), its SER certificate and TC/K, where Z is exact."""
    from numerics.exact.schedule_opt import CurveUnavailableError, information_curve, optimal_blocks
    from theory.related_info import informations, is_markov

    language = eng.load_language(lang)
    if not is_markov(language) and L > 6:
        return {"available": False, "reason": f"{lang} is not a token Markov chain: no exact information curve at L = {L}"}
    try:
        curve = information_curve(language, L)
    except (CurveUnavailableError, ValueError) as err:
        return {"available": False, "reason": str(err)}
    dp = optimal_blocks(curve, max(ks))
    info = informations(language, L)
    rows = [{"K": k, "kl_dp": dp.error(k).value, "ser_certificate_dp": -math.expm1(-dp.error(k).value),
             "tc_over_k": info.tc / k} for k in ks]
    return {"available": True, "tc": info.tc, "dtc": info.dtc, "rows": rows}


def _tiny_part(cfg: Config, lang: str, L: int) -> dict:
    """The optimal decoder's SER and KL floors for T = 1..L, and every family's exact points at L."""
    from numerics.exact.optimal_decoder import optimal_decoder
    from numerics.metrics import point_metrics
    from validation.calibrate import build_sampler, family
    from validation.sweep import PointConfig

    language = eng.load_language(lang)
    floors = {m: [float(v) for v in optimal_decoder(language, L, L, m).values] for m in ("ser", "kl")}
    base = PointConfig(lang, L, 1)
    points = []
    for name in cfg.families:
        fam = family(name)
        values = range(1, L + 1) if fam.integer else cfg.tiny_gammas
        for v in values:
            if not fam.integer and fam.more_calls_when == "lower":  # entropy budget: in nats, scaled to log V
                v = v * math.log(language.vocab_size)
            s = build_sampler(fam, base, v)
            m = point_metrics(language, L, s, only=("ser", "kl", "nfe"))
            points.append({"family": name, "value": float(v), "label": s.label, "calls": m.nfe.value,
                           "ser": m.ser.value, "kl": m.kl.value, "method": m.how.method})
    return {"length": L, "ser_floor": floors["ser"], "kl_floor": floors["kl"], "points": points}


def _documented_part(cfg: Config, lang: str, L: int) -> dict:
    """Every registered decoder at each documented preset (``N = L`` where it takes steps): SER and calls."""
    from numerics.metrics import point_metrics
    from numerics.schedules import make_schedule

    language = eng.load_language(lang)
    rows, skipped = [], []
    for name, spec in ((n, DECODERS[n]) for n in cfg.documented):
        for label, options in (spec.preset_names() or {name: {}}).items():
            try:
                sampler = spec.build(options, steps=L, schedule=make_schedule("linear", L), length=L)
            except ValueError as err:  # no default for its knob (threshold, entropy-sum), or blocks that do not fit L
                skipped.append(f"{label} ({err})")
                continue
            m = point_metrics(language, L, sampler, samples=cfg.samples, rng=cfg.seed, only=("ser", "calls"))
            lo, hi = m.ser.interval()
            rows.append({"language": lang, "length": L, "family": name, "preset": label, "label": sampler.label,
                         "calls": m.calls.value, "y": m.ser.value, "y_low": lo, "y_high": hi,
                         "method": m.ser.method})
    return {"rows": rows, "skipped": skipped}


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    if len(cfg.tiny_lengths) != len(cfg.languages):
        raise ValueError("tiny_lengths needs one length per language")
    settings, answers, bounds, tiny, documented = [], [], [], [], []
    full = [lang for lang in cfg.languages if _full_support(lang)]
    if full:
        out.notes.append(f"No SER panel on {', '.join(full)}: every sequence is valid there (full support), so every "
                         "sampler's SER is 0 at any number of calls; its TER front is drawn.")
    ser_langs = [lang for lang in cfg.languages if lang not in full]
    jobs = [(lang, metric, L) for L in cfg.lengths for metric in ("ser", "ter")
            for lang in (ser_langs if metric == "ser" else cfg.ter_languages)
            if L == cfg.lengths[0] or lang not in cfg.short_languages]
    if cfg.short_languages and len(cfg.lengths) > 1:
        out.notes.append(f"The fronts of {', '.join(cfg.short_languages)} are searched at L = {cfg.lengths[0]} only, "
                         "for random and the decoders (the adaptive rules take 45 CPU-s there at L = 64 and minutes "
                         "at 256 on two cores; --full searches everything); the documented settings are drawn at "
                         "every length.")
    for lang, metric, L in progress_iter(jobs, progress, "calls: calibrate"):
        fams = cfg.families + (cfg.ser_decoders if metric == "ser" else ())
        if lang in cfg.short_languages:
            fams = tuple(f for f in fams if f == "random" or f in cfg.ser_decoders)
        key = {"v": VERSION, "language": lang, "metric": metric, "length": L, "families": fams,
               "samples": cfg.samples, "grid": (cfg.grid, cfg.refine), "target": (cfg.ser_target, cfg.ter_excess),
               "confidence": cfg.confidence, "seed": cfg.seed}
        r = parts.attempt(f"calibrate {metric} on {lang} at L = {L}", lambda: cache.get_or_compute(
            "calls-front", key, lambda: _front_part(cfg, lang, metric, L, fams)))
        if r is None:
            continue
        settings += r["settings"]
        answers.append({"language": lang, "length": L, "metric": metric, "met": r["met"], "target": r["target"],
                        **{f"cheapest_{k}": (r["cheapest"] or {}).get(k) for k in ("label", "calls", "y", "method")},
                        **{f"best_{k}": r["best"][k] for k in ("label", "calls", "y")}})
    for lang, L in progress_iter([(lang, L) for L in cfg.lengths for lang in ser_langs], progress,
                                 "calls: documented settings"):
        key = {"v": VERSION, "language": lang, "length": L, "decoders": cfg.documented, "samples": cfg.samples,
               "seed": cfg.seed}
        d = parts.attempt(f"documented settings on {lang} at L = {L}", lambda: cache.get_or_compute(
            "calls-documented", key, lambda: _documented_part(cfg, lang, L)))
        if d is None:
            continue
        documented += d["rows"]
        if d["skipped"]:
            out.notes.append(f"Not drawn as a documented setting on {lang} at L = {L}: " + "; ".join(d["skipped"]) + ".")
    for L in cfg.lengths:
        ks = sorted({k for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192) if k < L} | {L - 1})
        for lang in cfg.languages:
            key = {"v": VERSION, "language": lang, "length": L, "ks": ks}
            b = parts.attempt(f"bounds on {lang} at L = {L}", lambda: cache.get_or_compute(
                "calls-bounds", key, lambda: _bounds_part(cfg, lang, L, ks)))
            if b is None:
                continue
            if b["available"]:
                bounds += [{"language": lang, "length": L, **row} for row in b["rows"]]
            else:
                out.notes.append(f"No information-curve bounds on {lang} at L = {L}: {b['reason']}.")
    for lang, L in zip(cfg.languages, cfg.tiny_lengths):
        key = {"v": VERSION, "language": lang, "length": L, "families": cfg.families, "gammas": cfg.tiny_gammas}
        t = parts.attempt(f"optimal decoder on {lang}", lambda: cache.get_or_compute(
            "calls-floor", key, lambda: _tiny_part(cfg, lang, L)))
        if t is not None:
            tiny.append({"language": lang, **t})
    structural = []
    for lang, L in ((lang, L) for L in cfg.lengths for lang in ser_langs):  # full support: SER 0 at one call
        key = {"v": VERSION, "language": lang, "length": L}
        sf = parts.attempt(f"structural floor on {lang} at L = {L}", lambda: cache.get_or_compute(
            "calls-structural", key, lambda: _structural_part(lang, L)))
        if sf is not None and sf["values"] is not None:
            structural += [{"language": lang, "length": L, "T": T + 1, "ser_floor": v, "kind": sf["kind"]}
                           for T, v in enumerate(sf["values"])]
            out.notes.append(_structural_note(lang, L, sf))
    if structural:
        out.tables["structural_floor"] = structural
    if settings:
        out.tables["settings"] = settings
    if documented:
        out.tables["documented"] = documented
    if answers:
        out.tables["cheapest"] = answers
    if bounds:
        out.tables["bounds"] = bounds
    if tiny:
        out.tables["floor"] = [{"language": t["language"], "length": t["length"], "T": T + 1,
                                "ser_floor": t["ser_floor"][T], "kl_floor": t["kl_floor"][T]}
                               for t in tiny for T in range(t["length"])]
        out.tables["floor_points"] = [{"language": t["language"], "length": t["length"], **p}
                                      for t in tiny for p in t["points"]]
    out.notes += _sentences(cfg, answers)
    below = _below_floor(tiny)
    if below:
        out.findings.append("FINDING: a sampler below the optimal decoder's SER floor at its worst-case calls: "
                            + "; ".join(below))
    elif tiny:
        out.notes.append(_floor_note(tiny))
    parts.record(out)
    return out.finish(started)


def _structural_part(lang: str, L: int) -> dict:
    """The structural SER floor of :mod:`numerics.exact.floors_structural` at ``L`` (any length), budgets
    ``T = 1..min(L, 8)``; ``values`` is ``None`` for a language with no structural floor."""
    from numerics.exact.floors_structural import structural_floor

    try:
        f = structural_floor(eng.load_language(lang), L, min(L, 8), "ser")
    except ValueError as exc:  # e.g. an interval language whose one interval is beyond the DP
        return {"values": None, "why": str(exc)}
    if f is None:
        return {"values": None, "why": "no structural floor for this kind of language"}
    return {"values": [float(v) for v in f.values], "kind": f.kind, "how": f.method}


def _structural_note(lang: str, L: int, sf: dict) -> str:
    """One sentence: the fewest calls at which the structural floor reaches SER 0, or its values."""
    zero = next((T + 1 for T, v in enumerate(sf["values"]) if v == 0.0), None)
    what = (f"SER 0 is reachable in {zero} call{'s' if zero > 1 else ''} at L = {L}" if zero is not None else
            "the SER floor at T = 1.." + str(len(sf["values"])) + " calls is "
            + ", ".join(f"{v:.3g}" for v in sf["values"]))
    return (f"{lang}: {what} by a plan that uses the language's structure ({sf['how']}; {sf['kind']}), "
            "for the monotone decoders with marginal draws; the fronts above show what the registered "
            "decoders need for the same target.")


def _fmt_y(metric: str, y: float | None) -> str:
    if y is None:
        return "n/a"
    return f"SER {y:.3g}" if metric == "ser" else f"TER {100 * y:+.2f}% of TER(q)"


def _sentences(cfg: Config, answers: list[dict]) -> list[str]:
    out = []
    for lang, L in ((lang, L) for lang in cfg.languages for L in cfg.lengths):
        by = {a["metric"]: a for a in answers if a["language"] == lang and a["length"] == L}
        parts = []
        for metric, what in (("ser", f"SER <= {cfg.ser_target:g}"), ("ter", f"perplexity within {100 * cfg.ter_excess:g}%")):
            a = by.get(metric)
            if a is None:
                continue
            if a["met"]:
                parts.append(f"for {what} the cheapest setting is {a['cheapest_label']} with {a['cheapest_calls']:.3g} "
                             f"expected calls ({_fmt_y(metric, a['cheapest_y'])}; {a['cheapest_method']})")
            else:
                parts.append(f"no setting tried reaches {what}; the best found is {a['best_label']} "
                             f"({_fmt_y(metric, a['best_y'])} at {a['best_calls']:.3g} calls)")
        if parts:
            out.append(f"{lang} (L = {L}): " + "; ".join(parts) + ".")
    return out


def _below_floor(tiny: list[dict]) -> list[str]:
    """Step families (random, topk) whose exact SER is below the floor at their step budget.

    ``N`` steps make at most ``min(N, L)`` calls on every run, and a randomized order is a mixture
    of decoders that each make at most that many; SER is linear in the law, so the mixture's SER is
    at least the floor ``SER*_{min(N, L)}``. (A rule's calls vary by path: no budget to compare.)
    """
    out = []
    for t in tiny:
        floor = t["ser_floor"]
        for p in t["points"]:
            if p["family"] not in ("random", "topk"):
                continue
            T = min(int(p["value"]), t["length"])
            if p["ser"] < floor[T - 1] - 1e-12:  # round-off of two exact computations of a probability
                out.append(f"{p['label']} on {t['language']} (L = {t['length']}): SER {p['ser']:.6g} < floor "
                           f"{floor[T - 1]:.6g} at T = {T}")
    return out


def _floor_note(tiny: list[dict]) -> str:
    parts = []
    for t in tiny:
        L, floor = t["length"], t["ser_floor"]
        first = next((T + 1 for T, v in enumerate(floor) if v <= 1e-12), None)
        cheapest = {}
        for p in t["points"]:
            if p["ser"] <= 1e-12 and (p["family"] not in cheapest or p["calls"] < cheapest[p["family"]]):
                cheapest[p["family"]] = p["calls"]
        fams = ", ".join(f"{f} {c:.3g}" for f, c in sorted(cheapest.items(), key=lambda kv: kv[1]))
        parts.append(f"{t['language']} (L = {L}): the optimal decoder reaches SER 0 in {first} call"
                     f"{'s' if first != 1 else ''} (SER floor at one call {floor[0]:.3g}, KL floor {t['kl_floor'][0]:.3g} "
                     f"nats); the families reach SER 0 at expected calls {fams or 'never on this grid'}")
    return ("The floor of monotone decoders with marginal draws (exact optimal decoder, tiny L): "
            + "; ".join(parts) + ".")


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import legend, new_figure

    plots = []
    settings = result.tables.get("settings", [])
    bounds = result.tables.get("bounds", [])
    documented = result.tables.get("documented", [])
    for metric, ylabel in (("ser", "SER"), ("ter", "TER / TER(q) - 1")):
        rows = [r for r in settings if r["metric"] == metric]
        drawn = rows + (documented if metric == "ser" else [])
        if not rows:
            continue
        langs = list(dict.fromkeys(r["language"] for r in drawn))  # no SER panel at full support
        lengths = sorted({r["length"] for r in drawn})
        presets = list(dict.fromkeys(d["preset"] for d in documented))  # one marker per documented setting
        fig, axes = new_figure(ncols=len(langs), nrows=len(lengths), width=4.6, height=3.3)
        for (i, L), (j, lang) in ((a, b) for a in enumerate(lengths) for b in enumerate(langs)):
            ax = axes[i, j]
            pr = [r for r in rows if r["language"] == lang and r["length"] == L]
            if not any(r["language"] == lang and r["length"] == L for r in drawn):
                ax.set_axis_off()
                continue
            for fam in dict.fromkeys(r["family"] for r in pr):
                pts = sorted((r["calls"], r["y"]) for r in pr if r["family"] == fam and r["y"] is not None)
                ax.plot(*zip(*pts), marker=MARKERS.get(fam, "o"), markersize=3.5, linestyle="",
                        color=COLORS.get(fam, "k"), label=f"{fam} (search)", alpha=0.6)
            if not pr:
                ax.text(0.5, 0.5, f"no front searched at L = {L}\n(see the notes)", transform=ax.transAxes,
                        ha="center", va="center", fontsize=7, color="0.4")
            if metric == "ser":  # each registered decoder at its documented setting: its own labelled marker
                for d in (d for d in documented if d["language"] == lang and d["length"] == L):
                    err = [[d["y"] - d["y_low"]], [d["y_high"] - d["y"]]] if d["y_low"] is not None else None
                    ax.errorbar([d["calls"]], [d["y"]], yerr=err,
                                marker=_MARKER_CYCLE[presets.index(d["preset"]) % len(_MARKER_CYCLE)],
                                markersize=7, markerfacecolor="none", markeredgewidth=1.3, linestyle="",
                                color=COLORS.get(d["family"], "k"), elinewidth=0.8, capsize=2,
                                label=f"{d['preset']} (documented)")
            front = sorted((r["calls"], r["y"]) for r in pr if r["front"] and r["y"] is not None)
            if front:
                ax.step([f[0] for f in front], [f[1] for f in front], where="post", color="k", linewidth=0.8,
                        label="Pareto front")
            br = sorted((b for b in bounds if b["language"] == lang and b["length"] == L), key=lambda b: b["K"])
            if br:
                if metric == "ser":
                    ax.plot([b["K"] for b in br], [b["ser_certificate_dp"] for b in br], color="#bcbd22",
                            linestyle="--", linewidth=1, label="1-exp(-KL*_K), DP")
                else:
                    ax.plot([b["K"] for b in br], [math.expm1(b["kl_dp"] / L) for b in br], color="#bcbd22",
                            linestyle="--", linewidth=1, label="DP K blocks")
                    ax.plot([b["K"] for b in br], [math.expm1(b["tc_over_k"] / L) for b in br], color="#e377c2",
                            linestyle=":", linewidth=1, label="TC/K")
            ax.set_xscale("log", base=2)
            if metric == "ter":  # symlog: an exact sampler's excess is 0 up to round-off
                ax.set_yscale("symlog", linthresh=1e-3)
                ax.set_ylim(bottom=0.0)  # an excess is >= 0
            ax.set_xlabel("expected calls")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{lang}, L = {L}")
            legend(ax, fontsize=6)
        caption = (f"{ylabel} against expected network calls at L = {', '.join(map(str, lengths))}: every setting "
                   "each family's search visited (small filled markers; calibrate: exact, Monte Carlo estimates, or "
                   "for the random order's TER the Jensen upper bound), the Pareto front over all families, and where "
                   "the information curve is exact the best K-block random-order schedule with K calls (DP)")
        caption += (", its SER certificate; each registered decoder at each documented setting is a large hollow "
                    "marker of its own (colour: its decoder) with its 95% interval (N = L where it takes steps)."
                    if metric == "ser" else
                    " and Zhao-Cai's TC/K with constant 1.")
        plots.append(Plot(f"front_{metric}", fig, caption))
    floor = result.tables.get("floor", [])
    points = result.tables.get("floor_points", [])
    flangs = list(dict.fromkeys(r["language"] for r in floor))
    if flangs:
        fig, axes = new_figure(ncols=len(flangs), nrows=2, width=3.6, height=2.9)
        for col, lang in enumerate(flangs):
            fr = [r for r in floor if r["language"] == lang]
            pr = [p for p in points if p["language"] == lang]
            for row, (key, ylabel) in enumerate((("ser", "SER"), ("kl", "KL(q || p), nats"))):
                ax = axes[row, col]
                ax.step([0.5] + [r["T"] for r in fr], [fr[0][f"{key}_floor"]] + [r[f"{key}_floor"] for r in fr],
                        where="pre", color="k", linewidth=1.2, label="optimal decoder")
                for fam in dict.fromkeys(p["family"] for p in pr):
                    pts = sorted((p["calls"], p[key]) for p in pr if p["family"] == fam and p[key] is not None)
                    ax.plot(*zip(*pts), marker="o", markersize=3, linestyle="", color=COLORS.get(fam, "k"), label=fam)
                ax.set_xlabel("expected calls")
                ax.set_ylabel(ylabel)
                ax.set_title(f"{lang}, L = {fr[0]['length']}")
                legend(ax, fontsize=6)
        plots.append(Plot("floor", fig, "The floor of monotone decoders with marginal draws (exact optimal decoder, tiny L): the smallest SER "
                          "and forward KL in at most T calls, drawn over (T-1, T], with every family's exact points at "
                          "their expected calls. A step family with N steps is never below the SER floor at N; the "
                          "random order's KL can be below the KL floor (its law is a mixture and KL is convex)."))
    return plots
