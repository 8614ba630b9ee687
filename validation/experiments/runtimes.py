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
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..cache import ResultCache
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
    out = [("llada", f"llada B={B} N=L", {"steps": L, "block_length": B})]
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
    rows = []
    for lang, L, (family, label, params) in progress_iter(grid, progress, "runtimes: Monte Carlo"):
        key = {"v": VERSION, "language": lang, "length": L, "family": family, "params": params,
               "samples": cfg.samples, "seed": cfg.seed, "l": cfg.interval}
        m = parts.attempt(f"{label} on {lang}", lambda lang=lang, L=L, family=family, params=params:
                          cache.get_or_compute("runtimes-mc", key,
                                               lambda: dec_exp._mc_point(cfg, lang, L, family, params)))
        if m is not None:
            rows.append({"language": lang, "length": L, "family": family, "config": label, **m})
    if rows:
        out.tables["monte_carlo"] = rows
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
    parts.record(out)
    return out.finish(started)


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
        ax.set_xscale("log")
        ax.set_xlabel("calls per sequence (mean)")
        ax.set_ylabel("log gen. ppl - log TER(q)" if key == "ppl_gap" else "SER (Monte Carlo)")
        ax.set_title(lang, fontsize=9)
        legend(ax, fontsize=6)
    return [Plot("runtimes_error_vs_calls", fig, "The runtimes' default decoders (and one more value of each one's "
                 "main knob) with the oracle: error against mean calls per sequence, Monte Carlo.")]
