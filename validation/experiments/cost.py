"""Experiment 5 -- cost: expected vs measured network calls (NFE) under caching; MDM vs AR timing.

With the ``ddpm_cache`` sampler a network call happens at step 1 and after every step ``i < N``
that revealed something (MATH.md section 1), so for one sequence of length ``L``
``E[NFE] = 1 + sum_{i<N} (1 - (1 - pi_i)^L)`` (:meth:`numerics.schedules.Schedule.expected_nfe`).

Two independent measurements are set against the formula:

* *simulated*: draw the i.i.d. reveal steps of ``runs`` sequences with
  :meth:`Schedule.sample_steps` and count ``1 + #{i < N : tau_i non-empty}`` -- a Monte Carlo
  check of the formula, with a standard error;
* *sampler*: the calls the factorized sampler (``numerics.sampling.samplers``, generic path, oracle
  denoiser) really made while generating sequences of a language, counted by a wrapper around
  the denoiser, and checked against the NFE the sampler reports.

When checkpoints of an MDM and an AR model are given, their wall-clock sampling times are
measured with ``neural``'s timing protocol (warm-up excluded, median of repeats).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from numerics.schedules import make_schedule

from ..cache import ResultCache
from ._base import ExperimentResult, Parts, Plot, need, point_cache, progress_iter

NAME = "cost"
TITLE = "Cost: network calls (NFE) vs steps under caching"
VERSION = 1  # bump when the computation of a point changes: cached points become misses


@dataclass(frozen=True)
class Config:
    """Sizes of the cost experiment.

    Attributes
    ----------
    lengths : sequence lengths ``L`` of the NFE curves.
    steps : numbers of steps ``N``.
    schedules : schedule families (``numerics.schedules.SCHEDULES``).
    runs : simulated sequences per point for the measured NFE.
    sampler_language, sampler_length, sampler_samples, sampler_steps :
        the oracle sampler run whose counted NFE is compared with the formula (batch of one
        sequence per call, ``sampler_samples`` sequences).
    mdm_checkpoint, ar_checkpoint : optional checkpoint paths for the MDM vs AR timing.
    timing_steps, timing_batch, timing_repeats : the MDM's steps, the batch size and the timed
        repeats of the timing comparison.
    seed : seed of every random draw.
    """

    lengths: tuple[int, ...] = (64, 256, 1024)
    steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
    schedules: tuple[str, ...] = ("linear", "cosine")
    runs: int = 400
    sampler_language: str = "2gram"
    sampler_length: int = 32
    sampler_samples: int = 8
    sampler_steps: tuple[int, ...] = (4, 16, 64)
    mdm_checkpoint: str | None = None
    ar_checkpoint: str | None = None
    timing_steps: int = 64
    timing_batch: int = 16
    timing_repeats: int = 3
    seed: int = 0

    @classmethod
    def tiny(cls) -> "Config":
        return cls(lengths=(8, 16), steps=(1, 2, 4, 8), schedules=("linear",), runs=50,
                   sampler_length=6, sampler_samples=2, sampler_steps=(2, 4))

    @classmethod
    def full(cls) -> "Config":
        return cls(lengths=(64, 256, 512, 1024, 2048), runs=2000, sampler_length=64,
                   sampler_samples=32, sampler_steps=(8, 32, 128, 512))


def _simulated_point(schedule_name: str, length: int, n_steps: int, runs: int, seed: int) -> dict:
    sched = make_schedule(schedule_name, n_steps)
    rng = np.random.default_rng([seed, length, n_steps])
    steps = sched.sample_steps(rng, (runs, length))  # (runs, L) reveal step of each position
    nonempty = np.zeros((runs, n_steps + 1), dtype=bool)
    nonempty[np.arange(runs)[:, None], steps] = True
    nfe = 1 + nonempty[:, 1:n_steps].sum(axis=1)  # steps 1..N-1 that revealed something
    return {
        "schedule": schedule_name, "length": length, "steps": n_steps,
        "expected_nfe": sched.expected_nfe(length),
        "measured_nfe": float(nfe.mean()),
        "measured_stderr": float(nfe.std(ddof=1) / math.sqrt(runs)) if runs > 1 else float("nan"),
        "runs": runs,
    }


class _CountingDenoiser:
    """Wraps a denoiser and counts its calls: the NFE measured from outside the sampler."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.vocab_size = inner.vocab_size
        self.calls = 0

    def __call__(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.inner(tokens, mask)


def _sampler_point(cfg: Config, n_steps: int) -> dict:
    """Run the sampler (generic path, ``ddpm_cache``) one sequence at a time and count the calls."""
    samplers = need("numerics.sampling.samplers", "sample_factorized")
    presets = need("numerics.languages.presets", "load_language")
    from numerics.sampling.denoiser import OracleDenoiser

    lang = presets.load_language(cfg.sampler_language)
    sched = make_schedule("linear", n_steps)
    rng = np.random.default_rng([cfg.seed, 7, n_steps])
    counted, reported = [], []
    for _ in range(cfg.sampler_samples):
        den = _CountingDenoiser(OracleDenoiser(lang))
        res = samplers.sample_factorized(den, sched, 1, cfg.sampler_length, rng, cache=True, path="generic")
        counted.append(den.calls)
        reported.append(int(np.sum(res.nfe)))
    nfe = np.asarray(counted, dtype=float)
    return {
        "language": cfg.sampler_language, "length": cfg.sampler_length, "steps": n_steps,
        "expected_nfe": sched.expected_nfe(cfg.sampler_length),
        "sampler_nfe": float(nfe.mean()),
        "sampler_stderr": float(nfe.std(ddof=1) / math.sqrt(nfe.size)) if nfe.size > 1 else float("nan"),
        "sampler_reported_equals_counted": bool(counted == reported),
        "sequences": int(nfe.size),
    }


def _timing(cfg: Config) -> dict:
    """MDM vs AR sampling wall-clock (``neural.timing``: warm-up excluded, median of repeats)."""
    from neural.timing import compare_sampling
    from neural.train import load_checkpoint

    mdm = load_checkpoint(cfg.mdm_checkpoint).build_model("cpu")
    ar = load_checkpoint(cfg.ar_checkpoint).build_model("cpu")
    res = compare_sampling(mdm, ar, batch=cfg.timing_batch, n_steps=(cfg.timing_steps,), repeats=cfg.timing_repeats)
    rows = []
    for r in [res["ar"], *res["mdm"]]:
        d = dict(r) if isinstance(r, dict) else {k: getattr(r, k) for k in r.__dataclass_fields__}
        d.pop("times", None)
        rows.append(d)
    return {"rows": rows, "speedup_vs_ar": res.get("speedup_vs_ar")}


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    """Expected vs simulated NFE for every (schedule, L, N); the sampler's counts; timing if asked."""
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    grid = [(s, L, N) for s in cfg.schedules for L in cfg.lengths for N in cfg.steps]
    rows = []
    for s, L, N in progress_iter(grid, progress, "cost: NFE"):
        key = {"v": VERSION, "schedule": s, "length": L, "steps": N, "runs": cfg.runs, "seed": cfg.seed}
        rows.append(cache.get_or_compute("cost-nfe", key, lambda: _simulated_point(s, L, N, cfg.runs, cfg.seed)))
    out.tables["nfe"] = rows
    worst = max((abs(r["measured_nfe"] - r["expected_nfe"]) / r["measured_stderr"]
                 for r in rows if r["measured_stderr"] > 0), default=0.0)
    out.notes.append(
        f"Simulated NFE vs the formula: largest |measured - expected| = {worst:.2f} standard errors "
        f"over {len(rows)} points ({cfg.runs} simulated sequences each)."
    )

    srows = []
    for N in progress_iter(cfg.sampler_steps, progress, "cost: sampler NFE"):
        key = {"v": VERSION, "language": cfg.sampler_language, "length": cfg.sampler_length,
               "samples": cfg.sampler_samples, "steps": N, "seed": cfg.seed}
        r = parts.attempt("NFE counted by the oracle sampler",
                          lambda: cache.get_or_compute("cost-sampler", key, lambda: _sampler_point(cfg, N)))
        if r is not None:
            srows.append(r)
    if srows:
        out.tables["sampler_nfe"] = srows
        agree = all(r["sampler_reported_equals_counted"] for r in srows)
        out.notes.append(
            f"Sampler ({cfg.sampler_language}, L = {cfg.sampler_length}, {cfg.sampler_samples} sequences per N): "
            "counted denoiser calls " + ("equal" if agree else "DIFFER FROM") + " the NFE the sampler reports; "
            + "; ".join(f"N={r['steps']}: {r['sampler_nfe']:.2f} counted vs {r['expected_nfe']:.2f} expected"
                        for r in srows) + ".")

    if cfg.mdm_checkpoint and cfg.ar_checkpoint:
        timing = parts.attempt("MDM vs AR timing", lambda: _timing(cfg))
        if timing is not None:
            out.data["timing"] = timing
            if isinstance(timing, dict) and isinstance(timing.get("rows"), list):
                out.tables["timing"] = timing["rows"]
                ar = [r for r in timing["rows"] if r.get("model") == "ar"]
                for r in (r for r in timing["rows"] if r.get("model") == "mdm"):
                    if ar:
                        out.notes.append(
                            f"Timing (batch {r['batch']}, L = {r['length']}, {r['device']}): MDM at N = {r['n_steps']} "
                            f"({r['nfe']:.1f} network calls) {r['seconds_per_batch']:.3g} s per batch vs AR with KV cache "
                            f"({ar[0]['nfe']:.0f} calls) {ar[0]['seconds_per_batch']:.3g} s: ratio MDM / AR = "
                            f"{r['seconds_per_batch'] / ar[0]['seconds_per_batch']:.3g} (median of {r['repeats']} repeats, "
                            "warm-up excluded).")
    else:
        out.notes.append("MDM vs AR timing: not measured (no MDM and AR checkpoints given).")
    parts.record(out)
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    """NFE vs N (log-log), expected as lines, measured as points with 95% error bars."""
    from ._style import Z95, length_styles, new_figure, legend

    rows = result.tables.get("nfe", [])
    if not rows:
        return []
    schedules = sorted({r["schedule"] for r in rows})
    lengths = sorted({r["length"] for r in rows})
    styles = length_styles(lengths)
    fig, axes = new_figure(ncols=len(schedules))
    colors = {L: f"C{k}" for k, L in enumerate(lengths)}
    for ax, s in zip(axes[0], schedules):
        for L in lengths:
            pts = sorted((r for r in rows if r["schedule"] == s and r["length"] == L), key=lambda r: r["steps"])
            n = [r["steps"] for r in pts]
            ax.plot(n, [r["expected_nfe"] for r in pts], color=colors[L], linestyle=styles[L]["linestyle"],
                    label=f"L={L} expected")
            ax.errorbar(n, [r["measured_nfe"] for r in pts], yerr=[Z95 * r["measured_stderr"] for r in pts],
                        fmt=styles[L]["marker"], color=colors[L], markersize=4, capsize=2,
                        label=f"L={L} simulated")
        n_all = sorted({r["steps"] for r in rows})
        ax.plot(n_all, n_all, color="0.6", linewidth=0.8, linestyle=":", label="NFE = N (no cache)")
        for srow in result.tables.get("sampler_nfe", []) if s == "linear" else []:
            ax.errorbar([srow["steps"]], [srow["sampler_nfe"]], yerr=[Z95 * np.nan_to_num(srow["sampler_stderr"])],
                        fmt="k*", markersize=8, capsize=2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("steps N")
        ax.set_ylabel("network calls (NFE)")
        ax.set_title(f"{s} schedule")
        legend(ax, fontsize=6, ncol=2)
    caption = ("Expected NFE under caching (lines, 1 + sum_{i<N} (1-(1-pi_i)^L)) and simulated NFE "
               "(markers, 95% error bars); black stars: NFE counted by the oracle sampler "
               f"(L = {result.config.get('sampler_length')}). NFE saturates near L: a step that "
               "reveals nothing costs no call.")
    return [Plot("nfe_vs_steps", fig, caption)]
