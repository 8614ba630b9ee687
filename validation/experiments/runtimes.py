"""Experiment "What the runtimes ship": the 2026 runtimes' default decoders with the oracle, their error against
their calls, ParallelBench's closed forms and AUP per family.

* Monte Carlo (``languages`` at ``lengths``): every runtime default at its documented setting
  (``llada2``, ``dream`` origin and entropy, ``sdar``, ``fast-dllm-v2``, ``dus``, ``dinfer``, ``credit``,
  ``klass``, ``prophet``) and one more value of its main knob, beside ``llada`` at ``N = L``; on
  ``2gram`` the TER side as ``log gen. perplexity - log TER(q)`` (0 for an exact sampler), on
  ``2gram-pruned`` and the interval language the SER with its Clopper-Pearson upper limit; the
  calls are the realized mean. The points come from the same Monte Carlo point as the ``decoders``
  experiment (:func:`validation.experiments.decoders._mc_point`). ``info-gain`` is left out at this
  scale: its score costs ``m V`` conditional oracle queries a step (exact only on tiny cases, in the tests).
* ParallelBench (:mod:`numerics.exact.parallelbench`): the four list tasks at ``pb_n`` items, each
  rule's closed-form SER beside the engine's exact SER and their difference.
* AUP per family on each SER language and length (:func:`validation.calibrate.aup` over the family's
  Pareto front of ``rho = L / calls``, ``y = 100 (1 - SER)``): from Monte Carlo points here, so an
  estimate (``calibrate --json`` gives it exactly where the calls and SER are exact).
* The floor beside the SER curves: the structural SER floor of the ``calls`` experiment
  (:func:`validation.experiments.calls._structural_part`, same cache entry) for ``T = 1..8`` calls, the least SER
  of the monotone decoders that draw each revealed value from its oracle marginal (exact on the interval
  language, an achievable plan's value, so an upper bound on that floor, on n-grams). The draw-then-select rules
  (LLaDA's low-confidence, the threshold rules) are outside that class and may go below it. No floor on
  ``2gram``'s perplexity panel: the exact KL floor is computable at tiny ``L`` only (the ``calls`` experiment).
* The trackers' recurring questions, each one sentence computed from the results above: steps against length
  (the step-count defaults at ``N = L`` and at their fewer steps), which block length (``llada`` at ``N = L/2``
  for blocks of 8, 32 and ``L``, the ``decoders`` experiment's note), the threshold rules' speed-up ``L / calls``
  per language and length, what low-confidence remasking does to the law (the ``decoders`` experiment's exact
  pair at ``N = L`` and ``llada`` random remasking here), and duplicates at low temperature (ParallelBench's
  shuffle rows).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..cache import ResultCache
from . import calls as calls_exp
from . import decoders as dec_exp
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

NAME = "runtimes"
TITLE = "What the runtimes ship: their default decoders, ParallelBench's closed forms, AUP"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """Sizes of the experiment.

    Attributes
    ----------
    languages : presets of the Monte Carlo points (``interval-l{interval}`` = the interval language).
    interval : ``l`` of the interval language.
    lengths : ``L`` of the points (each a multiple of 32: the runtimes' blocks).
    samples : Monte Carlo samples per point.
    pb_n : items of the ParallelBench lists (the exact tables have ``2^n`` or ``n^n`` cells).
    seed : seed of every random draw.
    """

    languages: tuple[str, ...] = ("2gram", "2gram-pruned", "interval-l4")
    interval: int = 4
    lengths: tuple[int, ...] = (64,)
    samples: int = 64
    pb_n: int = 4
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(languages=("2gram", "interval-l4"), lengths=(8,), samples=8, pb_n=3)

    @classmethod
    def full(cls) -> Config:
        return cls(lengths=(64, 256), samples=1000)


def _specs(L: int) -> list[tuple[str, str, dict]]:
    """``(family, label, parameters)``: each runtime default at its documented setting and one more knob value."""
    B = min(32, L)
    sub = min(8, B)
    dus_b = min(8, L)
    out = [("llada", f"llada B={B} N=L", {"steps": L, "block_length": B}),
           ("llada", "llada random N=L", {"steps": L, "block_length": B, "remasking": "random"})]
    for b in sorted({min(8, L), B, L}):  # which block length: the same budget N = L/2
        out.append(("llada", f"llada B={b if b < L else 'L'} N=L/2", {"steps": max(1, L // 2), "block_length": b}))
    for label, fam, p, q in [
        ("llada2", "llada2", {"steps": L, "block_length": B}, {"steps": L // 2, "block_length": B}),
        ("dream origin", "dream", {"steps": L}, {"steps": max(1, L // 4)}),
        ("dream entropy", "dream", {"steps": L, "alg": "entropy"}, {"steps": max(1, L // 4), "alg": "entropy"}),
        ("sdar", "sdar", {"steps": L}, {"steps": L, "threshold": 0.7}),
        ("fast-dllm-v2", "fast-dllm-v2", {"block_length": B, "sub_block": sub}, {"block_length": B, "sub_block": sub,
                                                                                 "threshold": 0.7}),
        ("dus", "dus", {"block_length": dus_b}, {"block_length": L}),
        ("dinfer", "dinfer", {"block_length": B}, {"block_length": B, "threshold": 0.8, "run_threshold": 0.5}),
        ("credit", "credit", {"block_length": B}, {"block_length": B, "threshold": 0.7}),
        ("klass", "klass", {"steps": L, "block_length": B}, {"steps": L // 2, "block_length": B}),
        ("prophet", "prophet", {"steps": L, "block_length": B}, {"steps": L, "block_length": B, "gap": 2.5}),
    ]:
        out.append((fam, f"{label} (default)", p))
        out.append((fam, f"{label} " + " ".join(f"{k}={v}" for k, v in q.items() if p.get(k) != v), q))
    return out


def _front_aup(rows: list[dict], L: int) -> float:
    from validation.calibrate import aup

    front, best = [], float("inf")
    for r in sorted(rows, key=lambda r: (r["calls"], r["ser"])):
        if r["ser"] < best:
            front.append(r)
            best = r["ser"]
    return aup([(L / r["calls"], 100.0 * (1.0 - r["ser"])) for r in front])


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    from numerics.exact.parallelbench import parallelbench_table

    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    grid = [(lang, L, s) for lang in cfg.languages for L in cfg.lengths for s in _specs(L)]
    grid = list({(lang, L, s[0], str(sorted(s[2].items()))): (lang, L, s) for lang, L, s in grid}.values())  # once
    rows, view = [], []  # view: each row with its decoder's parameters (llada's remasking made explicit)
    for lang, L, (family, label, params) in progress_iter(grid, progress, "runtimes: Monte Carlo"):
        key = {"v": VERSION, "language": lang, "length": L, "family": family, "params": params,
               "samples": cfg.samples, "seed": cfg.seed, "l": cfg.interval}
        m = parts.attempt(f"{label} on {lang}", lambda lang=lang, L=L, family=family, params=params:
                          cache.get_or_compute("runtimes-mc", key,
                                               lambda: dec_exp._mc_point(cfg, lang, L, family, params)))
        if m is not None:
            rows.append({"language": lang, "length": L, "family": family, "config": label, **m})
            view.append({**rows[-1], **({"remasking": "low-confidence"} if family == "llada" else {}), **params})
    if rows:
        out.tables["monte_carlo"] = rows
    floor = []
    for lang in (x for x in cfg.languages if x != "2gram"):
        for L in cfg.lengths:
            key = {"v": calls_exp.VERSION, "language": lang, "length": L}  # the calls experiment's entry
            sf = parts.attempt(f"structural floor on {lang} at L = {L}", lambda lang=lang, L=L, key=key: (
                cache.get_or_compute("calls-structural", key, lambda: calls_exp._structural_part(lang, L))))
            if sf is not None and sf["values"] is not None:
                floor += [{"language": lang, "length": L, "T": T + 1, "ser_floor": v, "kind": sf["kind"]}
                          for T, v in enumerate(sf["values"])]
    if floor:
        out.tables["floor"] = floor
    dcfg = dec_exp.Config()
    erows = []
    pair = ("llada low-confidence T=1", "llada random T=1")  # at N = L: what decoders' _bias note reads
    for family, label, params in (s for s in dec_exp._exact_specs(dcfg) if s[1] in pair):
        key = {"v": dec_exp.VERSION, "language": dcfg.exact_language, "length": dcfg.exact_length, "family": family,
               "params": params}  # the decoders experiment's entry
        e = parts.attempt(f"exact {label}", lambda key=key, family=family, params=params: cache.get_or_compute(
            "decoders-exact", key, lambda: dec_exp._exact_point(dcfg, family, params)))
        if e is not None:
            erows.append({"language": dcfg.exact_language, "length": dcfg.exact_length, "config": label, **e})
    if erows:
        out.tables["remasking_exact"] = erows
    pb = parts.attempt("ParallelBench closed forms", lambda: cache.get_or_compute(
        "runtimes-parallelbench", {"v": VERSION, "n": cfg.pb_n},
        lambda: [r._asdict() for r in parallelbench_table(cfg.pb_n)]))
    if pb:
        out.tables["parallelbench"] = pb
        worst = max(abs(r["difference"]) for r in pb)
        out.notes.append(f"ParallelBench's four list tasks at n = {cfg.pb_n}: every closed form (derived in "
                         f"numerics/exact/parallelbench.py) equals the engine's exact SER, largest |difference| "
                         f"{worst:.2g} over {len(pb)} rows.")
    aups = []
    for lang in cfg.languages:
        if lang == "2gram":
            continue
        for L in cfg.lengths:
            for fam in dict.fromkeys(r["family"] for r in rows):
                mine = [r for r in rows if r["language"] == lang and r["length"] == L and r["family"] == fam]
                if mine:
                    aups.append({"language": lang, "length": L, "family": fam, "aup": _front_aup(mine, L),
                                 "points": len(mine), "method": f"mc ({cfg.samples} samples)"})
    if aups:
        out.tables["aup"] = aups
    for lang in cfg.languages:
        if lang == "2gram":
            continue
        for L in cfg.lengths:
            pts = [r for r in rows if r["language"] == lang and r["length"] == L and r["config"].endswith("(default)")]
            if pts:
                out.notes.append(f"{lang}, L = {L}, the runtimes' defaults (calls, SER by Monte Carlo, {cfg.samples} "
                                 "samples): " + "; ".join(f"{r['config'][:-10]} {r['calls']:.3g}, {r['ser']:.3g}"
                                                          for r in pts) + ".")
    for note in (_steps_note(view), dec_exp._blocks(cfg, view), _threshold_note(view), dec_exp._bias(erows),
                 dec_exp._mode_seeking(view), _duplicates_note(pb or [])):
        if note:
            out.notes.append(note)
    if floor:
        out.notes.append(_floor_note(floor, rows))
    parts.record(out)
    return out.finish(started)


_THRESHOLD_FAMILIES = ("llada2", "sdar", "fast-dllm-v2", "dinfer", "credit")


def _steps_note(view: list[dict]) -> str | None:
    """SER of each step-count configuration at ``N = L`` against the same configuration with fewer steps."""
    def rest(r: dict) -> tuple:  # the configuration but its steps
        return tuple(sorted((k, str(v)) for k, v in r.items() if k not in (
            "steps", "config", "calls", "ser", "ser_upper", "ppl_gap", "method")))

    parts, grew = [], []
    for r in view:
        if r["language"] == "2gram" or r.get("steps") != r["length"]:
            continue
        for o in view:
            if o.get("steps", o["length"]) < o["length"] and rest(o) == rest(r):
                parts.append(f"{r['config'].removesuffix(' (default)')} on {r['language']} (L = {r['length']}) "
                             f"{r['ser']:.3g} at N = L, {o['ser']:.3g} at N = {o['steps']}")
                grew.append(o["ser"] >= r["ser"])
    if not parts:
        return None
    verdict = ("every one's SER is at least as large with fewer steps" if all(grew) else
               f"SER is at least as large with fewer steps in {sum(grew)} of {len(grew)} pairs")
    return ("Steps against length (SER by Monte Carlo): " + "; ".join(parts) + f". With the oracle, {verdict}: "
            "below N = L some calls must reveal dependent positions together, which N = L lets a rule avoid "
            "(the rule's own bias aside).")


def _threshold_note(view: list[dict]) -> str | None:
    """The threshold rules' largest speed-up ``L / E[calls]`` per language and length (at ``N = L`` where the rule
    takes steps: the threshold's saving, not fewer steps')."""
    parts = []
    for lang in dict.fromkeys(r["language"] for r in view):
        for L in sorted({r["length"] for r in view if r["language"] == lang}):
            th = [r for r in view if r["language"] == lang and r["length"] == L and r["family"] in _THRESHOLD_FAMILIES
                  and r.get("steps", L) == L]
            if th:
                best = max(th, key=lambda r: L / r["calls"])
                parts.append(f"{lang} (L = {L}): {L / best['calls']:.3g}x ({best['config']})")
    if not parts:
        return None
    return ("Threshold rules (" + ", ".join(_THRESHOLD_FAMILIES) + ", Monte Carlo): the largest speed-up L / E[calls] "
            "is " + "; ".join(parts) + ". A call saves a step only where several masked positions' oracle confidences "
            "pass the threshold at once, so the speed-up is set by how predictable the text is, not by its length: a "
            "short output of unpredictable tokens decodes one token a call, like a long one.")


def _duplicates_note(pb: list[dict]) -> str | None:
    """Duplicates in one call: ParallelBench's shuffle (distinct items) under greedy threshold and top-k at T = 1."""
    sh = [r for r in pb if r["task"] == "shuffle"]
    th = [r for r in sh if r["rule"] == "threshold"]
    tk = [r for r in sh if r["rule"] == "top-k" and r["parameter"] > 1]
    if not th:
        return None
    text = (f"Duplicates at low temperature (ParallelBench's shuffle, n = {sh[0]['n']} distinct items, exact SER): "
            "greedy decoding (T = 0) that reveals several positions in one call gives each the same argmax, a "
            "duplicate; the threshold rule's SER is " + ", ".join(f"{r['engine']:.3g} at tau = {r['parameter']:g}"
                                                                  for r in th)
            + " (all m masked positions pass together iff tau <= 1/m).")
    if tk:
        text += (" Sampling at T = 1 does not cure it when positions share a call: top-k's SER is "
                 + ", ".join(f"{r['engine']:.3g} at k = {r['parameter']:g}" for r in tk)
                 + " (independent draws collide); one position a call (k = 1) does.")
    return text


def _floor_note(floor: list[dict], rows: list[dict]) -> str:
    """Per SER panel: the floor's fewest calls to SER 0 (or its least value) beside the runtimes' cheapest SER 0."""
    parts = []
    for lang, L in dict.fromkeys((f["language"], f["length"]) for f in floor):
        fl = [f for f in floor if f["language"] == lang and f["length"] == L]
        zero = next((f["T"] for f in fl if f["ser_floor"] == 0.0), None)
        what = (f"SER 0 in {zero} call{'s' if zero > 1 else ''}" if zero is not None
                else f"SER {min(f['ser_floor'] for f in fl):.3g} at {fl[-1]['T']} calls")
        ok = [r for r in rows if r["language"] == lang and r["length"] == L and r["ser"] == 0.0]
        best = min(ok, key=lambda r: r["calls"]) if ok else None
        parts.append(f"{lang} (L = {L}): {what} ({fl[0]['kind']})"
                     + (f"; the cheapest runtime setting with SER 0 in its samples: {best['config']}, "
                        f"{best['calls']:.3g} calls" if best else "; no runtime setting reached SER 0 in its samples"))
    return ("The floor on the SER panels is that of the monotone decoders with marginal draws (the calls experiment's "
            "structural floor): " + "; ".join(parts) + ". The draw-then-select rules (low-confidence, the threshold "
            "rules) are outside that class and may go below it; a Monte Carlo SER of 0 is an estimate, not 0.")


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import legend, new_figure

    rows = result.tables.get("monte_carlo", [])
    if not rows:
        return []
    langs = list(dict.fromkeys(r["language"] for r in rows))
    fig, axes = new_figure(ncols=len(langs), width=4.0, height=3.2)
    for ax, lang in zip(axes.ravel(), langs):
        at = [r for r in rows if r["language"] == lang]
        key = "ppl_gap" if lang == "2gram" else "ser"
        for fam in dict.fromkeys(r["family"] for r in at):
            pts = sorted((r for r in at if r["family"] == fam and r[key] is not None), key=lambda r: r["calls"])
            if pts:
                ax.plot([r["calls"] for r in pts], [r[key] for r in pts], marker="o", markersize=3, linewidth=0.8,
                        label=fam)
        fl = [f for f in result.tables.get("floor", []) if f["language"] == lang and key == "ser"]
        for L in dict.fromkeys(f["length"] for f in fl):
            at_L = [f for f in fl if f["length"] == L]
            ax.step([f["T"] for f in at_L], [f["ser_floor"] for f in at_L], where="post", color="black",
                    linestyle="--", linewidth=1.0, label=f"floor, monotone decoders (L = {L})")
        ax.set_xscale("log")
        ax.set_xlabel("calls per sequence (mean)")
        ax.set_ylabel("log gen. ppl - log TER(q)" if key == "ppl_gap" else "SER (Monte Carlo)")
        ax.set_title(lang, fontsize=9)
        legend(ax, fontsize=6)
    return [Plot("runtimes_error_vs_calls", fig, "The runtimes' default decoders (and one more value of each one's "
                 "main knob) with the oracle: error against mean calls per sequence, Monte Carlo. Dashed: the SER "
                 "floor of the monotone decoders that draw each revealed value from its oracle marginal, in at most "
                 "T calls "
                 "(the calls experiment's structural floor: exact on the interval language, an achievable plan's "
                 "value on n-grams); the draw-then-select rules (low-confidence, thresholds) are outside that class "
                 "and may go below it. No floor on 2gram's perplexity panel (computable at tiny L only).")]
