"""Experiment "Escaping the linear barrier": lossless decoders' rounds and calls at SER = 0 against L.

For each language and ``L``: the expected rounds (sequential passes) and calls of each lossless decoder
(:mod:`numerics.sampling.lossless`: ``assd``, ``self-spec``, ``autospec``), by Monte Carlo with standard
errors (``self-spec`` is deterministic: one run is exact), beside the steps the factorized ``random``
sampler needs for SER <= each target (the interval language: exact, :mod:`numerics.exact.interval`;
a Markov preset: Monte Carlo on a doubling grid of ``N`` up to ``16 L``, the smallest grid ``N`` whose estimate meets
it with its 95% range). Fitted growth exponents ``d log E[rounds] / d log L`` with 95% intervals
(weighted least squares on the log means, delta-method variances), and Anari et al.'s ``O~(sqrt(L))``
(claim ``AN.sqrt``, :mod:`theory.related_lossless`) checked against autospec's exponent.

What Theorem 4.4 covers: a sampler that reveals positions *independently given what is revealed*
(the factorized sampler of the paper, any schedule) needs a number of steps linear in ``L`` for a
fixed SER target on the interval language. What it does not cover: a decoder that verifies its draft
with the joint density (or left-to-right conditionals) and redraws, whose output law is exactly ``q``
(SER = 0) and whose rounds are random; the barrier is about error at a fixed number of independent
reveal steps, not about the rounds of a sampler that checks its draft. The optimal monotone decoder's
floor (:mod:`numerics.exact.optimal_decoder`) is computable only at ``(V+1)^L`` tiny sizes: it is given
at ``L = floor_length`` (the fewest calls meeting each target, beside the lossless decoders' calls there),
not drawn at the plot's lengths.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter, steps_needed_range

NAME = "lossless"
TITLE = "Escaping the linear barrier: lossless decoders' rounds at SER = 0"
VERSION = 1

SQRT_EXPONENT = 0.5  # Anari et al. 2511.07869: O~(L^(1/2)) expected rounds


@dataclass(frozen=True)
class Config:
    """Sizes of the experiment.

    Attributes
    ----------
    languages : presets (``interval``: Theorem 4.4's language, exact steps-needed; others: Monte Carlo).
    lengths : the ``L`` grid (the interval language's rounded up to whole intervals: :func:`lengths_for`).
    decoders : lossless decoders (``assd`` and ``self-spec`` with ``draft_length``; ``assd`` in the
        left-to-right order).
    draft_length : ``k`` of assd and self-spec.
    samples : Monte Carlo sequences per point (and of the random sampler's SER on a Markov preset).
    targets : SER targets of the factorized sampler's steps-needed.
    seed : base seed.
    """

    languages: tuple[str, ...] = ("interval", "2gram-pruned")
    lengths: tuple[int, ...] = (16, 32, 64, 128)
    decoders: tuple[str, ...] = ("assd", "self-spec", "autospec")
    draft_length: int = 4
    samples: int = 50
    targets: tuple[float, ...] = (0.1,)  # SER <= 0.01 on the interval language needs N ~ 100 L: the full scale
    seed: int = 32
    floor_length: int = 4  # the optimal monotone decoder's exact DP: (V+1)^L states (L = 4 at V = 16)

    @classmethod
    def tiny(cls) -> Config:
        return cls(languages=("2gram-pruned",), lengths=(8, 16), samples=16, targets=(0.1,))

    @classmethod
    def full(cls) -> Config:
        return cls(languages=("interval", "2gram-pruned", "3gram-pruned", "hmm-pruned"),
                   lengths=(16, 32, 64, 128, 256, 512, 1024), samples=1000, targets=(0.1, 0.01))


def lengths_for(lang: str, lengths: tuple[int, ...]) -> list[int]:
    """The grid for ``lang``: the interval language's closed form needs whole intervals, so each ``L`` is
    rounded up to a multiple of ``l`` (16 -> 20 at ``l = 5``); other languages take ``lengths`` as given."""
    language = eng.load_language(lang)
    if getattr(language, "kind", "") != "interval":
        return list(lengths)
    l = language.l
    return sorted({l * -(-L // l) for L in lengths})


def _point(cfg: Config, lang: str, L: int, name: str) -> dict:
    from validation.lossless import lossless_point

    opts = {"draft_length": cfg.draft_length} if name in ("assd", "self-spec") else None
    if name == "assd":  # the prefix filter's order: O(L) a sequence (the random order's O(L^2) is not in budget)
        opts["order"] = "left-to-right"
    n = 2 if name == "self-spec" else cfg.samples  # deterministic: two runs give the exact value (stderr 0)
    p = lossless_point(lang, L, name, opts, samples=n, seed=cfg.seed + L)
    return {"rounds": p.rounds.value, "rounds_stderr": p.rounds.stderr, "calls": p.calls.value,
            "calls_stderr": p.calls.stderr, "samples": n, "rounds_p95": p.rounds_quantiles["p95"],
            "rounds_max": p.rounds_quantiles["max"], "ser": p.ser.value, "label": p.label}


def _validity(lang: str):
    """The interval language's per-``N`` validity memo (:class:`validation.experiments.ser._Validity`), shared by
    every ``L`` of the grid (it does not depend on ``L``); ``None`` for another language."""
    language = eng.load_language(lang)
    if getattr(language, "kind", "") != "interval":
        return None
    from .ser import Config as SerConfig
    from .ser import _Validity

    return _Validity(SerConfig(interval=language.l))


def _random_steps(cfg: Config, lang: str, L: int, validity) -> list[dict]:
    """The factorized sampler's steps-needed for each SER target at ``L`` (``validity``: :func:`_validity`)."""
    language = eng.load_language(lang)
    out = []
    if validity is not None:
        from .ser import Config as SerConfig
        from .ser import _steps_needed

        for t in cfg.targets:
            r = _steps_needed(SerConfig(interval=language.l), L, t, validity)
            out.append({"target": t, "steps": r["steps_needed"], "lo": r["steps_needed"], "hi": r["steps_needed"],
                        "method": "exact (interval closed form)"})
        return out
    grid = [2 ** k for k in range(int(math.log2(L)) + 5)]  # up to 16 L: collisions of i.i.d. steps need N >> L
    pts = []
    for N in grid:
        e = eng.oracle_ser(language, eng.schedule_for("linear", N), cfg.samples, L, [cfg.seed, L, N])
        lo = e["value"] if e.get("ci_low") is None else e["ci_low"]
        hi = e["value"] if e.get("ci_high") is None else e["ci_high"]
        pts.append((N, e["value"], lo, hi))
    for t in cfg.targets:
        n = steps_needed_range(pts, t)
        out.append({"target": t, "steps": n.steps, "lo": n.lo, "hi": n.hi,
                    "method": f"mc ({cfg.samples} samples a point, grid N = 1, 2, 4, ..., 16 L)"})
    return out


def _floor(cfg: Config, lang: str) -> list[dict]:
    """At ``L = floor_length``: the fewest calls of the optimal monotone decoder (exact DP,
    :func:`numerics.exact.optimal_decoder.optimal_decoder`) meeting each SER target, beside each lossless
    decoder's expected calls at SER = 0 (Monte Carlo)."""
    from numerics.exact.optimal_decoder import optimal_decoder

    L = cfg.floor_length
    values = optimal_decoder(eng.load_language(lang), L, L, "ser").values
    calls = {n: _point(cfg, lang, L, n)["calls"] for n in cfg.decoders}
    out = []
    for t in cfg.targets:
        T = next((i + 1 for i, v in enumerate(values) if v <= t), None)
        out.append({"language": lang, "length": L, "target": t, "optimal_calls": T,
                    **{f"{n}_calls": c for n, c in calls.items()}})
    return out


def fit_exponent(lengths, means, stderrs) -> dict:
    """``log E = a + b log L`` by weighted least squares (weights ``(mean / stderr)^2``; exact points, a
    stderr of 0, get the largest finite weight): ``b`` and its 95% normal interval (from the residuals
    when every point is exact; NaN with fewer than three lengths)."""
    x = np.log(np.asarray(lengths, dtype=float))
    y = np.log(np.asarray(means, dtype=float))
    rel = np.asarray(stderrs, dtype=float) / np.asarray(means, dtype=float)
    var = np.where(rel > 0, rel ** 2, np.nan)
    if np.all(np.isnan(var)):
        w = np.ones_like(x)
        exact = True
    else:
        var = np.where(np.isnan(var), np.nanmin(var), var)
        w = 1.0 / var
        exact = False
    X = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    b = float((cov @ X.T @ (w * y))[1])
    if len(x) < 3:  # a line through two points: no interval
        se = math.nan
    elif exact:  # exact points: the spread about the line is the only uncertainty of a power law's exponent
        resid = y - X @ (cov @ X.T @ (w * y))
        se = float(math.sqrt(cov[1, 1] * float(np.sum(w * resid ** 2)) / (len(x) - 2)))
    else:
        se = float(math.sqrt(cov[1, 1]))
    return {"exponent": b, "stderr": se, "low": b - 1.96 * se, "high": b + 1.96 * se, "points": len(x)}


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    rows, steps = [], []
    for lang in progress_iter(cfg.languages, progress, "lossless: languages"):
        validity = _validity(lang)
        for L in lengths_for(lang, cfg.lengths):
            for name in cfg.decoders:
                key = {"v": VERSION, "language": lang, "length": L, "decoder": name, "k": cfg.draft_length,
                       "samples": cfg.samples, "seed": cfg.seed}
                r = parts.attempt(f"{name} on {lang}", lambda lang=lang, L=L, name=name: cache.get_or_compute(
                    "lossless-point", key, lambda: _point(cfg, lang, L, name)))
                if r is not None:
                    rows.append({"language": lang, "length": L, "decoder": name, **r})
            key = {"v": VERSION, "language": lang, "length": L, "targets": list(cfg.targets), "samples": cfg.samples,
                   "seed": cfg.seed}
            s = parts.attempt(f"random steps-needed on {lang}", lambda lang=lang, L=L: cache.get_or_compute(
                "lossless-random-steps", key, lambda: _random_steps(cfg, lang, L, validity)))
            for r in s or []:
                steps.append({"language": lang, "length": L, **r})
    if rows:
        out.tables["points"] = rows
    if steps:
        out.tables["random_steps_needed"] = steps
    fits = []
    for lang in cfg.languages:
        for name in cfg.decoders:
            mine = sorted((r for r in rows if r["language"] == lang and r["decoder"] == name), key=lambda r: r["length"])
            if len(mine) >= 2:
                for what in ("rounds", "calls"):
                    f = fit_exponent([r["length"] for r in mine], [r[what] for r in mine],
                                     [r[f"{what}_stderr"] for r in mine])
                    fits.append({"language": lang, "decoder": name, "of": what, **f})
        for t in cfg.targets:
            mine = [r for r in steps if r["language"] == lang and r["target"] == t and r["steps"]]
            if len(mine) >= 2:
                f = fit_exponent([r["length"] for r in mine], [r["steps"] for r in mine], [0.0] * len(mine))
                fits.append({"language": lang, "decoder": f"random (SER <= {t:g})", "of": "steps", **f})
    if fits:
        out.tables["exponents"] = fits
    floors = []
    for lang in cfg.languages:
        key = {"v": VERSION, "language": lang, "length": cfg.floor_length, "targets": list(cfg.targets),
               "samples": cfg.samples, "seed": cfg.seed, "decoders": list(cfg.decoders), "k": cfg.draft_length}
        f = parts.attempt(f"optimal decoder floor on {lang}", lambda lang=lang, key=key: cache.get_or_compute(
            "lossless-floor", key, lambda: _floor(cfg, lang)))
        floors += f or []
    if floors:
        out.tables["floor"] = floors
        for r in floors:
            out.notes.append(f"{r['language']}, L = {r['length']} (where the optimal monotone decoder is exact): SER <= "
                             f"{r['target']:g} needs {r['optimal_calls']} calls of the optimal monotone decoder "
                             "(exact DP); at SER = 0 the lossless decoders use " + ", ".join(
                                 f"{n} {r[n + '_calls']:.3g}" for n in cfg.decoders) + " calls on average (MC)")
    _notes(cfg, out, rows, fits)
    parts.record(out)
    return out.finish(started)


def _notes(cfg: Config, out: ExperimentResult, rows: list[dict], fits: list[dict]) -> None:
    bad = [r for r in rows if r["ser"] > 0 and r["decoder"] != "spiffy"]
    if bad:
        out.add_finding([f"FINDING: {r['decoder']} on {r['language']} at L = {r['length']} drew a sequence outside "
                         f"the support (SER {r['ser']:.3g}): a lossless decoder must not" for r in bad], len(bad), len(rows))
    auto = [f for f in fits if f["decoder"] == "autospec" and f["of"] == "rounds"]
    above = [f for f in auto if f["low"] > SQRT_EXPONENT]  # NaN (two lengths) compares False: no check
    out.add_finding([f"FINDING: autospec's rounds on {f['language']} grow as L^{f['exponent']:.3f} (95% "
                     f"[{f['low']:.3f}, {f['high']:.3f}]), above Anari et al.'s O~(L^1/2) beyond the interval "
                     "(the rule here is the engine's, not necessarily the paper's: docs/methods/lossless.md)"
                     for f in above], len(above), len(auto))
    for f in fits:
        out.notes.append(f"{f['language']}: {f['decoder']} {f['of']} ~ L^{f['exponent']:.3f} "
                         f"(95% [{f['low']:.3f}, {f['high']:.3f}], {f['points']} lengths)")
    out.notes.append(
        "Theorem 4.4 covers samplers that reveal positions independently given the revealed ones (the paper's "
        "factorized sampler, any schedule): on the interval language their steps for a fixed SER target grow "
        "linearly in L. It does not cover lossless decoders, which check a draft against the joint density or the "
        "left-to-right conditionals and redraw: their SER is 0 and their rounds are random. It says nothing about "
        "rounds that are not independent reveal steps; the optimal monotone decoder's floor is computable only at "
        "tiny L (the floor table, not the plot).")


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import legend, new_figure

    rows = result.tables.get("points", [])
    if not rows:
        return []
    langs = list(dict.fromkeys(r["language"] for r in rows))
    fig, axes = new_figure(ncols=len(langs), width=4.2, height=3.4)
    axes = np.atleast_1d(axes).ravel()
    steps = result.tables.get("random_steps_needed", [])
    for ax, lang in zip(axes, langs):
        for name in dict.fromkeys(r["decoder"] for r in rows):
            pts = sorted((r for r in rows if r["language"] == lang and r["decoder"] == name), key=lambda r: r["length"])
            ax.errorbar([r["length"] for r in pts], [r["rounds"] for r in pts],
                        yerr=[1.96 * r["rounds_stderr"] for r in pts], marker="o", markersize=3, linewidth=1,
                        capsize=2, label=f"{name}: E[rounds], SER = 0")
        for t in dict.fromkeys(r["target"] for r in steps):
            pts = sorted((r for r in steps if r["language"] == lang and r["target"] == t and r["steps"]),
                         key=lambda r: r["length"])
            if pts:
                ax.plot([r["length"] for r in pts], [r["steps"] for r in pts], linestyle="--", marker="s",
                        markersize=3, linewidth=1, label=f"random: steps for SER <= {t:g}")
        Ls = sorted({r["length"] for r in rows if r["language"] == lang})
        ax.plot(Ls, [L / Ls[0] * 4 for L in Ls], color="grey", linewidth=0.6, linestyle=":", label="slope 1")
        ax.plot(Ls, [math.sqrt(L / Ls[0]) * 4 for L in Ls], color="grey", linewidth=0.6, linestyle="-.",
                label="slope 1/2")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("L")
        ax.set_ylabel("rounds / steps")
        ax.set_title(lang, fontsize=9)
        legend(ax, fontsize=6)
    return [Plot("lossless_barrier", fig,
                 "Expected rounds (sequential network passes, 95% intervals) of the lossless decoders at SER = 0 "
                 "against L, beside the steps the factorized random sampler needs for each SER target (interval: "
                 "exact; Markov preset: Monte Carlo grid). Theorem 4.4's linear barrier is about the latter.")]
