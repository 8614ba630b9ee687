"""Experiment "Beyond masking": masked vs uniform-noise factorized sampling with the oracle.

Uniform-noise diffusion (``docs/methods/uniform-noise.md``) starts from a canvas of uniform tokens and
re-draws every position at every step from the oracle's posterior given the noisy canvas
(:mod:`numerics.sampling.uniform_noise`). Three parts, each beside the masked sampler on the same schedule:

* **interval** (Theorem 4.4's language): the exact SER vs ``N`` at several ``L``, both noises. Under
  either noise the intervals are independent, so ``SER(L) = 1 - (1 - s)^(L / l)`` with ``s`` the
  one-interval SER (uniform noise: the exact chain over one interval's canvases; masking: the exact
  collision DP); and the fewest steps with ``SER <= 1/2`` vs ``L``.
* **n-gram SER** (``ser_language``, pruned): Monte Carlo SER vs ``N`` at several ``L``, both noises
  (Clopper-Pearson intervals, ``samples`` sequences per point).
* **n-gram TER** (``ter_language``, unpruned, Theorem 4.2): the exact per-token KL vs ``N`` at tiny
  ``L`` (uniform noise: the chain over canvases) and, at scale, the Monte Carlo path KL per token (an
  upper bound on ``KL(q || p) / L = log TER(p) - log TER(q)``) beside the masked sampler's Jensen bound
  (its counterpart, also an upper bound).

* **revisers** (tiny, exact): LLaDA2.1's joint threshold (``llada21``) and WINO (``wino``) at a few
  thresholds (:mod:`numerics.sampling.revisers`, the exact chain over canvases), LLaDA 1.x low-confidence
  at ``N = 1 .. L`` (``T = 1``), against two floors at each decoder's expected calls: the monotone
  optimal decoder's (marginal class) and the draw-then-select class's, both for *monotone* decoders only
  (a reviser may go below them; whether it does is what the table says).

DiffusionGemma's renoise sampler is not in this section.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

NAME = "noise"
TITLE = "Beyond masking: uniform-noise diffusion against masking, with the oracle"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """Sizes of the experiment.

    Attributes
    ----------
    interval_l : interval length of the exact part (vocabulary ``2^(l-1)``; one interval has ``V^l``
        canvases: ``l <= 4``).
    interval_lengths, interval_steps : the ``L`` and ``N`` of the interval part.
    ser_language, ter_language : the n-gram pair (SER on the pruned one, TER on the unpruned one).
    lengths, steps : the ``L`` and ``N`` of the Monte Carlo parts; ``samples`` sequences per point.
    exact_lengths, exact_steps : the tiny ``L`` and ``N`` of the exact per-token KL (``V^L <= 4096``).
    schedule : the schedule of every part.
    seed : the Monte Carlo seed.
    """

    interval_l: int = 3
    interval_lengths: tuple[int, ...] = (3, 30, 120)
    interval_steps: tuple[int, ...] = (4, 16, 64, 256)
    ser_language: str = "2gram-pruned"
    ter_language: str = "2gram"
    lengths: tuple[int, ...] = (32, 128)
    steps: tuple[int, ...] = (4, 16)
    samples: int = 200
    exact_lengths: tuple[int, ...] = (2, 3)
    exact_steps: tuple[int, ...] = (1, 4, 16)
    reviser_language: str = "2gram-pruned"
    reviser_length: int = 3
    reviser_thresholds: tuple[float, ...] = (0.6, 0.9)
    schedule: str = "linear"
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(interval_lengths=(3, 30), interval_steps=(4, 16), lengths=(16,), steps=(4,), samples=40,
                   exact_lengths=(2,), exact_steps=(1, 4), reviser_length=2, reviser_thresholds=(0.6,))

    @classmethod
    def full(cls) -> Config:
        return cls(interval_l=4, interval_lengths=(4, 64, 512), reviser_thresholds=(0.3, 0.6, 0.9), interval_steps=(4, 16, 64, 256), lengths=(64, 256, 1024),
                   steps=(4, 16, 64), samples=1000, exact_lengths=(2, 3), exact_steps=(1, 4, 16, 64))


NOISE_METHODS = ("auto", "enumerate", "mc")


def uniform_point(language: str, length: int, n_steps: int, schedule: str = "linear", method: str = "auto",
                  samples: int = 1000, seed: int = 0, ser_language: str | None = None) -> dict:
    """One point of the factorized uniform-noise sampler with the oracle (``exact --noise uniform``).

    ``method``: ``enumerate`` (the exact chain over canvases, ``V^L <= 4096``), ``mc`` (Monte Carlo:
    ``samples`` sequences for SER and generative perplexity, ``samples`` forward chains for the path KL),
    ``auto`` (enumerate when it fits). Returns the inputs and :class:`~numerics.estimate.Estimate` s:
    exact ``kl``, ``log_ter_gap``, ``ter``, ``ser``, ``gen_ppl``, ``kl_path_bound``; Monte Carlo ``ser``,
    ``gen_ppl`` and ``kl_path_bound`` (an upper bound on ``kl``, never under its name), and ``calls``.
    """
    from numerics.estimate import Estimate
    from numerics.exact.uniform_noise import MAX_CANVASES, uniform_noise_metrics, uniform_noise_path_kl
    from numerics.inference import log_q
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.uniform_noise import path_kl_terms, sample_uniform_noise

    if method not in NOISE_METHODS:
        raise ValueError(f"method {method!r} is not one of {NOISE_METHODS} with uniform noise")
    started = time.perf_counter()
    lang = eng.load_language(language)
    ser_lang = lang if ser_language is None else eng.load_language(ser_language)
    s = eng.schedule_for(schedule, n_steps)
    fits = lang.vocab_size ** length <= MAX_CANVASES
    if method == "enumerate" and not fits:
        raise ValueError(f"--method enumerate with uniform noise needs V^L <= {MAX_CANVASES} canvases, got "
                         f"{lang.vocab_size}^{length}")
    if method == "auto":
        method = "enumerate" if fits else "mc"
    out: dict = {"inputs": {"language": language, "ser_language": ser_language, "length": length, "steps": n_steps,
                            "noise": "uniform"},
                 "schedule_name": s.name, "sampler_name": "random (factorized uniform-noise reverse process)",
                 "method": method}
    calls = int(np.count_nonzero((s.u[1:] > s.u[:-1]) & (s.u[:-1] < 1.0)))
    if method == "enumerate":
        m = uniform_noise_metrics(lang, length, s)
        out.update(kl=m.kl, log_ter_gap=m.log_ter_gap, ter=m.ter, ter_data=m.ter_data, gen_ppl=m.gen_ppl,
                   kl_path_bound=Estimate(uniform_noise_path_kl(lang, length, s), 0.0, "enumerate-canvases"))
        out["ser"] = m.ser if ser_language is None else uniform_noise_metrics(ser_lang, length, s).ser
    else:
        rng = np.random.default_rng([seed, length, n_steps])
        tokens = sample_uniform_noise(lang, s, samples, length, rng).tokens
        out["ser"] = mc.ser_from_loglik(log_q(ser_lang, tokens))
        out["gen_ppl"] = mc.gen_ppl_from_loglik(log_q(lang, tokens), length)
        terms = path_kl_terms(lang, s, samples, length, rng)
        out["kl_path_bound"] = Estimate(float(terms.mean()), float(terms.std(ddof=1) / math.sqrt(samples)), "mc", samples)
    out["calls"] = Estimate(float(calls), 0.0, "schedule")
    out["elapsed_s"] = time.perf_counter() - started
    return out


def _interval_point(l: int, L: int, N: int, schedule: str) -> dict:
    from numerics.exact.interval import interval_ser
    from numerics.exact.uniform_noise import interval_uniform_ser

    s = eng.schedule_for(schedule, N)
    one, ser = interval_uniform_ser(l, s, L)
    return {"uniform_ser": ser, "uniform_interval_ser": one, "masked_ser": interval_ser(s, L, l).probability}


def _mc_point(cfg: Config, L: int, N: int) -> dict:
    from numerics.inference import log_q
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.uniform_noise import path_kl_terms, sample_uniform_noise

    s = eng.schedule_for(cfg.schedule, N)
    ser_lang, ter_lang = eng.load_language(cfg.ser_language), eng.load_language(cfg.ter_language)
    rng = np.random.default_rng([cfg.seed, L, N])
    uni = sample_uniform_noise(ser_lang, s, cfg.samples, L, rng)
    terms = path_kl_terms(ter_lang, s, cfg.samples, L, rng) / L
    return {
        "uniform_ser": eng.estimate_json(mc.ser_from_loglik(log_q(ser_lang, uni.tokens))),
        "masked_ser": eng.oracle_ser(ser_lang, s, cfg.samples, L, [cfg.seed, L, N, 1]),
        "uniform_path_kl_per_token": {"value": float(terms.mean()), "stderr": float(terms.std(ddof=1) / math.sqrt(len(terms))),
                                      "method": "mc", "samples": int(len(terms))},
        "masked_jensen_per_token": _per_token(eng.jensen_bound(ter_lang, s, L, cfg.samples, [cfg.seed, L, N, 2]), L),
        "uniform_calls": uni.calls,
    }


def _per_token(est: dict, L: int) -> dict:
    out = dict(est)
    for k in ("value", "stderr", "lower", "upper"):
        if out.get(k) is not None:
            out[k] = out[k] / L
    return out


def _exact_point(cfg: Config, L: int, N: int) -> dict:
    from numerics.exact.uniform_noise import uniform_noise_metrics, uniform_noise_path_kl

    s = eng.schedule_for(cfg.schedule, N)
    lang = eng.load_language(cfg.ter_language)
    m = uniform_noise_metrics(lang, L, s)
    return {"uniform_kl_per_token": m.kl.value / L, "uniform_path_kl_per_token": uniform_noise_path_kl(lang, L, s) / L,
            "masked_jensen_per_token": _per_token(eng.jensen_bound_exact(lang, s, L), L)["value"]}


FLOOR_COSTS = (0.0, 1e-3, 3e-3, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 1.0)  # call costs of the floors' convex hull


def _reviser_rows(cfg: Config) -> list[dict]:
    """Exact SER and expected calls of llada21, wino and LLaDA low-confidence, with both floors at their calls."""
    from numerics.exact.decoders import decoder_exact
    from numerics.exact.floors import MARGINAL, DecoderClass, class_floor, expected_calls_floor
    from numerics.exact.revisers import reviser_exact
    from numerics.sampling.registry import spec
    from numerics.sampling.revisers import Reviser

    lang, L = eng.load_language(cfg.reviser_language), cfg.reviser_length
    marginal = [class_floor(lang, L, L, MARGINAL, "ser", lam) for lam in FLOOR_COSTS]
    dts = [class_floor(lang, L, L, DecoderClass("draw-then-select", 1.0), "ser", lam) for lam in FLOOR_COSTS]
    rows = []
    for th in cfg.reviser_thresholds:
        for rv in (Reviser("llada21", threshold=th, edit_threshold=th, edit_cap=16),
                   Reviser("wino", threshold=th, remask_threshold=0.9)):
            ex = reviser_exact(rv, lang, L)
            rows.append({"decoder": rv.name, "setting": f"threshold {th:g}" + (
                f", edit threshold {th:g}, cap 16" if rv.name == "llada21" else ", remask below 0.9"),
                "ser": ex.ser, "calls": ex.expected_calls.value, "max_calls": int(np.flatnonzero(ex.calls)[-1])})
    for N in range(1, L + 1):
        d = spec("llada").build({"remasking": "low-confidence", "temperature": 1.0}, steps=N,
                                schedule=eng.schedule_for("linear", N), length=L)
        ex = decoder_exact(lang, L, d)
        rows.append({"decoder": "llada", "setting": f"low-confidence, T = 1, N = {N}", "ser": ex.metrics.ser.value,
                     "calls": ex.expected_calls.value, "max_calls": N})
    for r in rows:
        r["marginal_floor"] = expected_calls_floor(marginal, r["calls"])
        r["draw_then_select_floor"] = expected_calls_floor(dts, r["calls"])
    return rows


def _below(value: float, floor: float) -> bool:
    """``value`` below ``floor`` beyond round-off (both exact; equal values reached by two sums are not "below")."""
    return value < floor - 1e-12 * max(1.0, floor)


def _steps_for_half(l: int, L: int, schedule: str, noise: str) -> int:
    """The fewest steps with exact SER <= 1/2 on the interval language (bisection; SER falls with N)."""
    from numerics.exact.interval import interval_ser
    from numerics.exact.uniform_noise import interval_uniform_ser

    def ser(N):
        s = eng.schedule_for(schedule, N)
        return interval_uniform_ser(l, s, L)[1] if noise == "uniform" else interval_ser(s, L, l).probability

    lo, hi = 1, 4 * L
    while lo < hi:
        mid = (lo + hi) // 2
        if ser(mid) <= 0.5:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _grid(parts: Parts, cache: ResultCache, progress: bool, part: str, lengths, steps, key, compute) -> list[dict]:
    """``{"L", "N", **compute(L, N)}`` over ``lengths x steps``, each point cached under ``key(L, N)``."""
    rows = []
    for L in progress_iter(lengths, progress, f"noise: {part}"):
        for N in steps:
            r = parts.attempt(f"{part} L={L} N={N}", lambda L=L, N=N: cache.get_or_compute(
                f"noise-{part}", key(L, N), lambda: compute(L, N)))
            if r is not None:
                rows.append({"L": L, "N": N, **r})
    return rows


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    base = {"v": VERSION, "schedule": cfg.schedule}
    rows = _grid(parts, cache, progress, "interval", cfg.interval_lengths, cfg.interval_steps,
                 lambda L, N: {**base, "l": cfg.interval_l, "L": L, "N": N},
                 lambda L, N: _interval_point(cfg.interval_l, L, N, cfg.schedule))
    if rows:
        out.tables["interval"] = rows
    need = []
    for L in cfg.interval_lengths[1:]:
        key = {**base, "l": cfg.interval_l, "L": L}
        r = parts.attempt(f"steps for SER <= 1/2 at L={L}", lambda L=L, key=key: cache.get_or_compute(
            "noise-steps-half", key, lambda: {n: _steps_for_half(cfg.interval_l, L, cfg.schedule, n)
                                              for n in ("uniform", "masked")}))
        if r is not None:
            need.append({"L": L, **r})
    if need:
        out.tables["steps_for_half_ser"] = need
        out.notes.append(f"interval (l = {cfg.interval_l}), {cfg.schedule} schedule, exact: the fewest steps with SER <= 1/2 "
                         + "; ".join(f"L = {r['L']}: {r['uniform']} uniform-noise, {r['masked']} masked" for r in need)
                         + ". Linear in L under both noises: Theorem 4.4's barrier is not an artefact of masking.")
    mc_rows = _grid(parts, cache, progress, "ngram", cfg.lengths, cfg.steps,
                    lambda L, N: {**base, "ser": cfg.ser_language, "ter": cfg.ter_language, "L": L, "N": N,
                                  "samples": cfg.samples, "seed": cfg.seed},
                    lambda L, N: _mc_point(cfg, L, N))
    if mc_rows:
        out.tables["ngram"] = mc_rows
    ex_rows = _grid(parts, cache, progress, "exact", cfg.exact_lengths, cfg.exact_steps,
                    lambda L, N: {**base, "ter": cfg.ter_language, "L": L, "N": N}, lambda L, N: _exact_point(cfg, L, N))
    if ex_rows:
        out.tables["exact_ter"] = ex_rows
        out.notes.append("exact per-token KL of uniform-noise sampling on " + cfg.ter_language + ": "
                         + "; ".join(f"L={r['L']} N={r['N']}: {r['uniform_kl_per_token']:.4g} "
                                     f"(path bound {r['uniform_path_kl_per_token']:.4g}, masked Jensen bound "
                                     f"{r['masked_jensen_per_token']:.4g})" for r in ex_rows) + ".")
    key = {**base, "language": cfg.reviser_language, "L": cfg.reviser_length, "th": list(cfg.reviser_thresholds),
           "costs": list(FLOOR_COSTS)}
    rrows = parts.attempt("revisers", lambda: cache.get_or_compute("noise-revisers", key, lambda: _reviser_rows(cfg)))
    if rrows:
        out.tables["revisers"] = rrows
        below = [r for r in rrows if _below(r["ser"], r["marginal_floor"])]
        below_dts = [r for r in rrows if _below(r["ser"], r["draw_then_select_floor"])]
        out.notes.append(
            f"revisers on {cfg.reviser_language}, L = {cfg.reviser_length} (exact): "
            + ("; ".join(f"{r['decoder']} ({r['setting']}) SER {r['ser']:.4g} at {r['calls']:.3g} calls is below the "
                         f"monotone optimal-decoder floor {r['marginal_floor']:.4g}" for r in below)
               or "no decoder goes below the monotone optimal-decoder floor at its expected calls")
            + "; " + (f"{len(below_dts)} below the draw-then-select floor" if below_dts
                      else "none below the draw-then-select floor")
            + ". Both floors are for monotone decoders only.")
    out.notes.append("Not in this section: DiffusionGemma's renoise sampler (not built yet).")
    parts.record(out)
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import legend, new_figure

    plots = []
    rows = result.tables.get("interval", [])
    mc_rows = result.tables.get("ngram", [])
    if rows or mc_rows:
        fig, axes = new_figure(ncols=3, width=4.0, height=3.2)
        ax = axes.ravel()[0]
        for L in dict.fromkeys(r["L"] for r in rows):
            pts = [r for r in rows if r["L"] == L]
            line = ax.plot([r["N"] for r in pts], [r["uniform_ser"] for r in pts], marker="o", label=f"uniform L={L}")
            ax.plot([r["N"] for r in pts], [r["masked_ser"] for r in pts], marker="x", linestyle="--",
                    color=line[0].get_color(), label=f"masked L={L}")
        ax.set_xscale("log")
        ax.set_xlabel("steps N")
        ax.set_ylabel("SER (exact)")
        ax.set_title(f"interval l={result.config['interval_l']}", fontsize=9)
        legend(ax, fontsize=6)
        for ax, key, ylabel in ((axes.ravel()[1], "ser", "SER (Monte Carlo, 95% CI)"),
                                (axes.ravel()[2], "kl", "per-token KL bound (Monte Carlo)")):
            for L in dict.fromkeys(r["L"] for r in mc_rows):
                pts = [r for r in mc_rows if r["L"] == L]
                Ns = [r["N"] for r in pts]
                if key == "ser":
                    u, m = [r["uniform_ser"] for r in pts], [r["masked_ser"] for r in pts]
                else:
                    u, m = [r["uniform_path_kl_per_token"] for r in pts], [r["masked_jensen_per_token"] for r in pts]
                line = ax.errorbar(Ns, [e["value"] for e in u], yerr=[1.96 * e["stderr"] for e in u], marker="o",
                                   label=f"uniform L={L}")
                ax.errorbar(Ns, [e["value"] for e in m], yerr=[1.96 * e["stderr"] for e in m], marker="x",
                            linestyle="--", color=line[0].get_color(), label=f"masked L={L}")
            ax.set_xscale("log")
            ax.set_xlabel("steps N")
            ax.set_ylabel(ylabel)
            legend(ax, fontsize=6)
        c = result.config
        axes.ravel()[1].set_title(c["ser_language"], fontsize=9)
        axes.ravel()[2].set_title(f"{c['ter_language']}: path KL (uniform), Jensen (masked)", fontsize=8)
        plots.append(Plot("noise_curves", fig, "Masked (dashed) vs uniform-noise (solid) factorized sampling with the "
                          "oracle: exact SER on the interval language, Monte Carlo SER on the pruned n-gram, and the "
                          "per-token KL upper bounds (uniform: path KL; masked: Jensen bound) on the unpruned n-gram. "
                          "The floor drawn is none: both samplers are the factorized oracle sampler."))
    rrows = result.tables.get("revisers", [])
    if rrows:
        fig, ax = new_figure(ncols=1, width=4.6, height=3.4)
        ax = np.ravel(ax)[0]
        for name, marker in (("llada21", "o"), ("wino", "s"), ("llada", "x")):
            pts = [r for r in rrows if r["decoder"] == name]
            ax.plot([r["calls"] for r in pts], [r["ser"] for r in pts], marker=marker, linestyle="none", label=name)
        cs = sorted(r["calls"] for r in rrows)
        ax.plot(cs, [next(r["marginal_floor"] for r in rrows if r["calls"] == c) for c in cs], color="k",
                linewidth=1, label="monotone optimal-decoder floor")
        ax.plot(cs, [next(r["draw_then_select_floor"] for r in rrows if r["calls"] == c) for c in cs], color="grey",
                linewidth=1, linestyle=":", label="draw-then-select floor")
        ax.set_xlabel("expected calls (exact)")
        ax.set_ylabel("SER (exact)")
        ax.set_title(f"{result.config['reviser_language']}, L = {result.config['reviser_length']}", fontsize=9)
        legend(ax, fontsize=6)
        plots.append(Plot("revisers", fig, "Revising decoders (llada21, wino) against LLaDA low-confidence: exact SER "
                          "vs expected calls, with the floors of two classes of monotone decoders at equal expected "
                          "calls (the monotone optimal decoder's and the draw-then-select class's); a reviser is in "
                          "neither class, so either floor may be crossed."))
    return plots
