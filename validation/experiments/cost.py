"""Experiment 5 -- cost: expected vs measured network calls (NFE) under caching; MDM vs AR timing.

With the ``ddpm_cache`` sampler a network call happens at step 1 and after every step ``i < N``
that revealed something (``docs/methods/sampling.md``), so for one sequence of length ``L``
``E[NFE] = 1 + sum_{i<N} (1 - (1 - pi_i)^L)`` (:meth:`numerics.schedules.Schedule.expected_nfe`).

Two independent measurements are set against the formula:

* *simulated*: draw the i.i.d. reveal steps of ``runs`` sequences with
  :meth:`Schedule.sample_steps` and count ``1 + #{i < N : tau_i non-empty}`` -- a Monte Carlo
  check of the formula, with a standard error;
* *sampler*: the calls the factorized sampler (``numerics.sampling.samplers``, generic path, oracle
  denoiser) really made while generating sequences of a language, counted by a wrapper around
  the denoiser, and checked against the NFE the sampler reports.

The MDM-vs-AR timing table (the paper's Inference Time Comparison, on this machine): MDM
``ddpm_cache`` at several ``N`` against AR decoding with a KV cache, same architecture (the
report's trained ``cpu-small`` shape), same batch, float32 on the CPU, warm-up excluded, median of
repeats, with the thread count stated. Sampling time does not depend on the weights (NFE depends
only on the schedule, ``L`` and the batch), so untrained networks of the trained shape are timed
unless checkpoints are given. The GPU command at the paper's config is in
``neural/results/README.md``.
"""

from __future__ import annotations

import math
import os
import platform
import time
from dataclasses import dataclass

import numpy as np

from numerics.languages.presets import load_language
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.samplers import sample_factorized
from numerics.schedules import make_schedule

from ..cache import ResultCache
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter, stored_config

NAME = "cost"
TITLE = "Cost: network calls (NFE) vs steps under caching"
VERSION = 1  # bump when the computation of a point changes: cached points become misses


@dataclass(frozen=True)
class Config:
    """Sizes of the cost experiment.

    Attributes
    ----------
    lengths : sequence lengths ``L`` of the NFE curves.
    n_steps : numbers of steps ``N``.
    schedules : schedule families (``numerics.schedules.SCHEDULES``).
    runs : simulated sequences per point for the measured NFE.
    sampler_language, sampler_length, sampler_samples, sampler_steps :
        the oracle sampler run whose counted NFE is compared with the formula (batch of one
        sequence per call, ``sampler_samples`` sequences).
    mdm_checkpoint, ar_checkpoint : optional checkpoint paths for the MDM vs AR timing (default:
        untrained networks of the ``timing_preset`` shape).
    timing_preset, timing_lengths, timing_steps, timing_batch, timing_repeats, timing_threads :
        the networks' shape, the lengths ``L``, the MDM's ``N``, the batch size, the timed repeats
        and the torch threads of the timing table.
    seed : seed of every random draw.
    """

    lengths: tuple[int, ...] = (32, 64, 256, 1024)  # includes sampler_length: its measured stars get a curve
    n_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
    schedules: tuple[str, ...] = ("linear", "cosine")
    runs: int = 400
    sampler_language: str = "2gram"
    sampler_length: int = 32
    sampler_samples: int = 8
    sampler_steps: tuple[int, ...] = (4, 16, 64)
    mdm_checkpoint: str | None = None
    ar_checkpoint: str | None = None
    timing_preset: str = "cpu-small"
    timing_lengths: tuple[int, ...] = (32, 128)
    timing_steps: tuple[int, ...] = (8, 32, 128)
    timing_batch: int = 16
    timing_repeats: int = 3
    timing_threads: int = 1  # make report runs two sections at once: two torch threads each would spin on the other's core
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(lengths=(6, 16), n_steps=(1, 2, 4, 8), schedules=("linear",), runs=50,
                   sampler_length=6, sampler_samples=2, sampler_steps=(2, 4), timing_preset="tiny",
                   timing_lengths=(8,), timing_steps=(2, 8), timing_batch=2, timing_repeats=2, timing_threads=1)

    @classmethod
    def full(cls) -> Config:
        return cls(lengths=(64, 256, 512, 1024, 2048), runs=2000, sampler_length=64,
                   sampler_samples=32, sampler_steps=(8, 32, 128, 512), timing_lengths=(64, 256, 512),
                   timing_steps=(64, 256, 512))


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
    lang = load_language(cfg.sampler_language)
    sched = make_schedule("linear", n_steps)
    rng = np.random.default_rng([cfg.seed, 7, n_steps])
    counted, reported = [], []
    for _ in range(cfg.sampler_samples):
        den = _CountingDenoiser(OracleDenoiser(lang))
        res = sample_factorized(den, sched, 1, cfg.sampler_length, rng, cache=True, path="generic")
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


def _machine() -> dict:
    """What a timing depends on besides the config: the CPU, the torch version and threads."""
    import torch

    return {"machine": platform.machine(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "torch": str(torch.__version__)}


def _timing_models(cfg: Config, length: int):
    """The MDM and AR networks to time: the given checkpoints, or untrained ones of the preset's shape."""
    import torch

    from neural.config import make_config
    from neural.model import build_model
    from neural.train import load_checkpoint

    if cfg.mdm_checkpoint and cfg.ar_checkpoint:
        return (load_checkpoint(cfg.mdm_checkpoint).build_model("cpu"), load_checkpoint(cfg.ar_checkpoint).build_model("cpu"),
                "trained checkpoints")
    models = []
    for kind in ("mdm", "ar"):
        torch.manual_seed(cfg.seed)
        mc = make_config(cfg.timing_preset, language="2gram", kind=kind, vocab_size=8, overrides={"model": {"length": length}})
        models.append(build_model(mc.model).eval())
    return models[0], models[1], f"untrained {cfg.timing_preset} networks (timing does not depend on the weights)"


def _timing_point(cfg: Config, length: int) -> dict:
    """MDM vs AR sampling wall-clock at one length (``neural.timing``: warm-up excluded, median of repeats)."""
    import torch

    from neural.timing import compare_sampling

    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.timing_threads)
    try:
        mdm, ar, weights = _timing_models(cfg, length)
        res = compare_sampling(mdm, ar, batch=cfg.timing_batch, n_steps=cfg.timing_steps, length=length,
                               repeats=cfg.timing_repeats, seed=cfg.seed)
    finally:
        torch.set_num_threads(threads)
    rows = []
    for r in [res["ar"], *res["mdm"]]:
        d = {k: getattr(r, k) for k in r.__dataclass_fields__ if k != "times"}
        d["ratio_to_ar"] = r.seconds_per_batch / res["ar"].seconds_per_batch
        d["weights"] = weights
        rows.append(d)
    return {"rows": rows}


def _timing(cfg: Config, cache: ResultCache, progress: bool) -> list[dict]:
    key_base = {"v": VERSION, "preset": cfg.timing_preset, "steps": list(cfg.timing_steps), "batch": cfg.timing_batch,
                "repeats": cfg.timing_repeats, "threads": cfg.timing_threads, "seed": cfg.seed,
                "mdm": cfg.mdm_checkpoint, "ar": cfg.ar_checkpoint, **_machine()}
    rows = []
    for L in progress_iter(cfg.timing_lengths, progress, "cost: timing"):
        rows.extend(cache.get_or_compute("cost-timing", {**key_base, "length": L},
                                         lambda L=L: _timing_point(cfg, L))["rows"])
    return rows


TIMING_SLACK = 0.8  # a later N may time up to 20 % below an earlier one (noise) before the series is distrusted


def _non_monotone_timing(timing: list[dict]) -> dict[int, str]:
    """``{L: why}`` for the lengths whose MDM seconds per batch fall as N (and the network calls) grow.

    More steps never make fewer network calls, so a time that drops by more than
    ``1 - TIMING_SLACK`` as N grows measures warm-up or a machine shared with other work, not the
    sampler: such a series is not summarized as MDM / AR ratios.
    """
    out = {}
    for length in dict.fromkeys(r["length"] for r in timing):
        rows = sorted((r for r in timing if r["model"] == "mdm" and r["length"] == length), key=lambda r: r["n_steps"])
        for a, b in zip(rows, rows[1:]):
            if b["nfe"] >= a["nfe"] and b["seconds_per_batch"] < TIMING_SLACK * a["seconds_per_batch"]:
                out[length] = (f"MDM timing is not monotone in N (N = {a['n_steps']}: {a['seconds_per_batch']:.3g} s, "
                               f"N = {b['n_steps']}: {b['seconds_per_batch']:.3g} s with more network calls): warm-up "
                               "or a shared machine; rerun on an idle machine (the cached timing is keyed by the "
                               "machine) -- no ratio reported")
                break
    return out


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    """Expected vs simulated NFE for every (schedule, L, N); the sampler's counts; timing if asked."""
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=stored_config(cfg))
    parts = Parts(strict)
    lengths = sorted(set(cfg.lengths) | {cfg.sampler_length})  # the sampler's stars always have their curve
    grid = [(s, L, N) for s in cfg.schedules for L in lengths for N in cfg.n_steps]
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

    timing = parts.attempt("MDM vs AR timing", lambda: _timing(cfg, cache, progress))
    if timing:
        out.tables["timing"] = timing
        ar = {r["length"]: r for r in timing if r["model"] == "ar"}
        first = timing[0]
        out.notes.append(
            f"Timing regime: {first['device']} ({first['dtype']}), {first['threads']} torch thread(s), batch "
            f"{first['batch']}, {first['weights']}; median of {first['repeats']} repeats after {first['warmup']} "
            "warm-up run(s). MDM = ddpm_cache with the MDLM schedule, AR = KV-cached decoding, same architecture.")
        unsteady = _non_monotone_timing(timing)
        for length, why in unsteady.items():
            out.missing.append(f"MDM / AR ratio at L = {length}: {why}")
        for r in (r for r in timing if r["model"] == "mdm" and r["length"] not in unsteady):
            a = ar[r["length"]]
            out.notes.append(
                f"L = {r['length']}: MDM at N = {r['n_steps']} ({r['nfe']:.1f} network calls) "
                f"{r['seconds_per_batch']:.3g} s per batch vs AR ({a['nfe']:.0f} calls) {a['seconds_per_batch']:.3g} s: "
                f"MDM / AR = {r['ratio_to_ar']:.3g}.")
    parts.record(out)
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    """NFE vs N (log-log), expected as lines, measured as points with 95% error bars."""
    from ._style import Z95, legend, length_styles, new_figure

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
    plots = [Plot("nfe_vs_steps", fig, caption)]
    timing = result.tables.get("timing", [])
    if timing:
        plots.append(_timing_plot(timing))
    return plots


def _timing_plot(rows: list[dict]) -> Plot:
    """Seconds per batch vs N for the MDM (markers), the AR baseline as a horizontal line, per L."""
    from ._style import legend, new_figure

    fig, axes = new_figure(width=4.6)
    ax = axes[0, 0]
    for k, L in enumerate(sorted({r["length"] for r in rows})):
        mdm = sorted((r for r in rows if r["length"] == L and r["model"] == "mdm"), key=lambda r: r["n_steps"])
        ar = next(r for r in rows if r["length"] == L and r["model"] == "ar")
        ax.plot([r["n_steps"] for r in mdm], [r["seconds_per_batch"] for r in mdm], "o-", color=f"C{k}",
                label=f"MDM ddpm_cache, L={L}")
        ax.axhline(ar["seconds_per_batch"], color=f"C{k}", linestyle="--", linewidth=1, label=f"AR KV cache, L={L}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("MDM steps N")
    ax.set_ylabel("seconds per batch (median)")
    legend(ax, fontsize=6)
    r0 = rows[0]
    cap = (f"Sampling wall-clock on this machine ({r0['device']}, {r0['dtype']}, {r0['threads']} thread(s), batch "
           f"{r0['batch']}; {r0['weights']}): MDM ddpm_cache at N steps (markers) against KV-cached AR decoding of the "
           f"same architecture (dashed); median of {r0['repeats']} repeats, warm-up excluded.")
    return Plot("timing_mdm_vs_ar", fig, cap)
