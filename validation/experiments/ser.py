"""Experiment 2 -- SER vs steps (the paper's Figure 1, bottom), with the oracle denoiser.

On the threshold-pruned presets (which have invalid sequences) the SER of the oracle factorized
sampler is estimated by Monte Carlo with an exact support check (binomial 95% interval). On the
``interval`` language of Theorem 4.4 (Example C.7) the SER is exact: ``1 - (E[2^-c])^(L/l)``,
``c`` the number of pairs of an interval revealed in the same step. Lemma C.6's lower bound
``1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)`` is overlaid where ``theory`` provides ``p_e``.
Then the number of steps needed for ``SER <= 1/2`` and ``SER <= 0.1`` is found exactly (search
over ``N``) for growing ``L`` and a line is fitted on log-log axes: Theorem 4.4 says it grows
linearly in ``L`` (slope 1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter, steps_needed_range, stored_config

NAME = "ser"
TITLE = "SER vs steps: pruned presets and the Theorem 4.4 interval language"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """Sizes of the SER experiment.

    Attributes
    ----------
    languages : pruned presets for the Monte Carlo curves.
    lengths, n_steps, samples : grid and sampled sequences per point of those curves.
    interval : interval length ``l`` of the Theorem 4.4 language (vocabulary ``2^(l-1)``).
    interval_lengths : lengths of the exact interval SER curves (multiples of ``l``).
    interval_steps : steps of those curves.
    needed_lengths : lengths at which the steps needed for each threshold are searched.
    thresholds : SER levels for the steps-needed search.
    schedule : schedule family.
    seed : seed of every random draw.
    """

    languages: tuple[str, ...] = ("2gram-pruned", "3gram-pruned", "4gram-pruned", "hmm-pruned")
    lengths: tuple[int, ...] = (32, 64, 128, 256)
    n_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    samples: int = 64
    interval: int = 5
    interval_lengths: tuple[int, ...] = (20, 80, 320, 1280)
    interval_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
    needed_lengths: tuple[int, ...] = (10, 20, 40, 80, 160, 320, 640)
    thresholds: tuple[float, ...] = (0.5, 0.1)
    schedule: str = "linear"
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(languages=("2gram-pruned",), lengths=(4, 8), n_steps=(1, 2, 4), samples=8,
                   interval_lengths=(10, 20), interval_steps=(1, 4, 16, 64), needed_lengths=(5, 10, 20))

    @classmethod
    def full(cls) -> Config:
        return cls(lengths=(64, 128, 256, 512, 1024, 2048),
                   n_steps=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), samples=1000,
                   interval_lengths=(20, 80, 320, 1280, 5120),
                   interval_steps=tuple(2 ** k for k in range(17)),
                   needed_lengths=(10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120))


def _seed(cfg: Config, *parts: int | str) -> list[int]:
    return [cfg.seed, VERSION] + [p if isinstance(p, int) else sum(map(ord, p)) for p in parts]


def _mc_point(cfg: Config, lang: str, L: int, N: int) -> dict:
    return eng.oracle_ser(eng.load_language(lang), eng.schedule_for(cfg.schedule, N), cfg.samples, L,
                          _seed(cfg, lang, L, N))


class _Validity:
    """Memo of one interval's validity ``E[2^-c]`` per ``N``: it does not depend on ``L``
    (``SER = 1 - E[2^-c]^(L/l)``), so every length and threshold shares the DP over steps."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.memo: dict = {}

    def ser(self, n: int, L: int) -> float:
        if n not in self.memo:
            self.memo[n] = eng.interval_validity(eng.schedule_for(self.cfg.schedule, n), self.cfg.interval)
        return eng.interval_ser_from_validity(self.memo[n], L, self.cfg.interval)


def _steps_needed(cfg: Config, L: int, threshold: float, validity: _Validity) -> dict:
    """Smallest ``N`` with exact interval SER <= threshold (doubling, then bisection).

    The search assumes SER is non-increasing in ``N`` for the schedule family; the SER at
    ``N - 1`` is returned too, so a reader can see the crossing.
    """
    def f(n: int) -> float:
        return validity.ser(n, L)

    hi = 1
    while f(hi) > threshold:
        hi *= 2
        if hi > 1 << 24:
            return {"length": L, "threshold": threshold, "steps_needed": None, "ser_at": None, "ser_before": None}
    lo = hi // 2  # f(lo) > threshold (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if f(mid) > threshold:
            lo = mid
        else:
            hi = mid
    return {"length": L, "threshold": threshold, "steps_needed": hi, "ser_at": f(hi),
            "ser_before": f(hi - 1) if hi > 1 else None}


def _preset_steps_needed(cfg: Config, rows: list[dict]) -> list[dict]:
    """Steps needed for each SER threshold on the pruned presets, from the Monte Carlo points.

    The smallest grid ``N`` from which the estimate stays below the threshold, with its 95% range
    from the binomial (Clopper-Pearson) limits (:func:`~validation.experiments._base.steps_needed_range`);
    coarse: limited by the grid and the sample size.
    """
    out = []
    for lang in cfg.languages:
        for L in cfg.lengths:
            pts = [(r["steps"], r["ser"], r["ser"] if r["ser_lower"] is None else r["ser_lower"],
                    r["ser"] if r["ser_upper"] is None else r["ser_upper"])
                   for r in rows if r["language"] == lang and r["length"] == L]
            for thr in cfg.thresholds:
                n = steps_needed_range(pts, thr)
                at = {N: v for N, v, _, _ in pts}
                out.append({"language": lang, "length": L, "threshold": thr, "steps_needed_grid": n.steps,
                            "steps_needed_lo": n.lo, "steps_needed_hi": n.hi,
                            "ser_at": at.get(n.steps) if n.steps else None})
    return out


def _check_lower_bounds(out: ExperimentResult, irows: list[dict]) -> None:
    """Lemma C.6 (oracle ``p_e = 1/2``) and Theorem 4.4 (``p_e = 63/128``) are lower bounds on the
    exact interval SER: a point below one is a finding; a bound of 0 says nothing (vacuous)."""
    for key, name in (("lemma_c6_lower_bound", "Lemma C.6 (p_e = 1/2)"),
                      ("thm44_lower_bound", "Theorem 4.4 (p_e = 63/128)")):
        pts = [r for r in irows if r[key] is not None and r["exact_ser"] is not None]
        if not pts:
            continue
        bad = [r for r in pts if r["exact_ser"] < r[key] * (1 - _RTOL_BOUND)]
        out.add_finding([f"{name} violated: L = {r['length']}, N = {r['steps']}: exact SER {r['exact_ser']:.6g} "
                         f"< lower bound {r[key]:.6g}" for r in bad], len(bad), len(pts))
        trivial = [r for r in pts if r[key] <= 0.0]
        if len(trivial) == len(pts):
            out.add_vacuous(f"{name}: the lower bound is 0 at every one of the {len(pts)} points", len(pts), len(pts))
        elif not bad:
            out.notes.append(f"{name}: the exact SER is at or above the lower bound at all {len(pts)} points"
                             + (f" (the bound is 0, so says nothing, at {len(trivial)})." if trivial else "."))


_RTOL_BOUND = 1e-12  # float64 round-off between the closed-form SER and the closed-form bound


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=stored_config(cfg))
    parts = Parts(strict)
    attempt = parts.attempt

    # Monte Carlo SER on the pruned presets
    rows = []
    grid = [(lang, L, N) for lang in cfg.languages for L in cfg.lengths for N in cfg.n_steps]
    for lang, L, N in progress_iter(grid, progress, "ser: presets"):
        key = {"v": VERSION, "language": lang, "length": L, "steps": N, "schedule": cfg.schedule,
               "samples": cfg.samples, "seed": cfg.seed}
        e = attempt("oracle SER on the pruned presets", lambda: cache.get_or_compute(
            "ser-mc", key, lambda: _mc_point(cfg, lang, L, N)))
        if e is not None:
            rows.append({"language": lang, "length": L, "steps": N, "ser": e["value"], "ser_stderr": e["stderr"],
                         "ser_lower": e.get("lower"), "ser_upper": e.get("upper"), "samples": e["samples"],
                         "method": e["method"], "nfe_mean": e.get("nfe_mean")})
    if rows:
        out.tables["preset_ser"] = rows
        out.tables["preset_steps_needed"] = _preset_steps_needed(cfg, rows)

    # exact SER of the interval language, with Lemma C.6 / Theorem 4.4's lower bound
    validity = _Validity(cfg)
    irows = []
    igrid = [(L, N) for L in cfg.interval_lengths for N in cfg.interval_steps]
    for L, N in progress_iter(igrid, progress, "ser: interval"):
        key = {"v": VERSION, "l": cfg.interval, "length": L, "steps": N, "schedule": cfg.schedule}
        s = attempt("exact interval SER", lambda: cache.get_or_compute(
            "ser-interval", key, lambda: validity.ser(N, L)))
        b = attempt("Theorem 4.4 / Lemma C.6 bound", lambda: cache.get_or_compute(
            "ser-thm44", key, lambda: eng.theorem44(N, L, cfg.interval)))
        if s is not None or b is not None:
            irows.append({"length": L, "steps": N, "steps_per_length": N / L, "exact_ser": s,
                          "lemma_c6_lower_bound": b.get("ser_lower") if b else None,
                          "thm44_lower_bound": b.get("thm44_ser_lower") if b else None})
    if irows:
        out.tables["interval_ser"] = irows
        _check_lower_bounds(out, irows)

    # steps needed vs L, with a fitted slope
    nrows = []
    for L in progress_iter(cfg.needed_lengths, progress, "ser: steps needed"):
        for thr in cfg.thresholds:
            key = {"v": VERSION, "l": cfg.interval, "length": L, "threshold": thr, "schedule": cfg.schedule}
            r = attempt("exact interval SER", lambda: cache.get_or_compute(
                "ser-needed", key, lambda: _steps_needed(cfg, L, thr, validity)))
            if r is not None:
                nrows.append(r)
    if nrows:
        out.tables["steps_needed"] = nrows
        fits = []
        for thr in cfg.thresholds:
            pts = [(r["length"], r["steps_needed"]) for r in nrows if r["threshold"] == thr and r["steps_needed"]]
            if len(pts) >= 2:
                x, y = np.log(np.array(pts, dtype=float)).T
                slope, intercept = np.polyfit(x, y, 1)
                ratio = [n / L for L, n in pts]
                fits.append({"threshold": thr, "slope": float(slope), "intercept": float(intercept),
                             "points": len(pts), "steps_per_length_at_largest_L": ratio[-1]})
        out.tables["slope_fit"] = fits
        for f in fits:
            out.notes.append(
                f"Interval language (l = {cfg.interval}, {cfg.schedule} schedule): steps needed for SER <= "
                f"{f['threshold']} grow like L^{f['slope']:.3f} (least squares on log-log, {f['points']} lengths); "
                f"N/L at the largest L = {f['steps_per_length_at_largest_L']:.3f}.")
    const = attempt("Theorem 4.4 constants", lambda: cache.get_or_compute(
        "ser-thm44-constants", {"v": VERSION, "l": cfg.interval, "lengths": list(cfg.needed_lengths)},
        lambda: eng.theorem44_thresholds([L for L in cfg.needed_lengths if L % cfg.interval == 0], cfg.interval)))
    if const is not None:
        out.tables["theorem44_constants"] = [
            {"length": L, "argument_n_max": a, "true_n_max": t, "argument_C(L)": (a + 1) / L, "true_C(L)": (t + 1) / L}
            for L, a, t in zip(const["lengths"], const["argument_n_max"], const["true_n_max"])]
        out.notes.append(
            f"Theorem 4.4 (l = {cfg.interval}): the argument (Lemma C.6, p_e = 63/128) supports C = "
            f"{const['argument_constant']:.4f} on these lengths (limit {const['argument_limit']:.4f}); the exact oracle "
            f"SER under the linear schedule stays above 1/2 up to N/L = {const['true_constant']:.4f} "
            f"(limit {const['true_limit']:.4f}).")
        mine = {r["length"]: r["steps_needed"] for r in nrows if r["threshold"] == 0.5}
        cross = [(L, mine[L], t + 1) for L, t in zip(const["lengths"], const["true_n_max"]) if L in mine]
        if cross and cfg.schedule == "linear":
            agree = all(a == b for _, a, b in cross)
            if agree:
                out.notes.append("Cross-check: steps needed for SER <= 1/2 found here agree with "
                                 "theory.true_threshold (N_max + 1) at every length.")
            else:  # two computations of one number disagree: a bug, shown as an error
                out.errors["cross-check with theory.true_threshold"] = (
                    "steps needed for SER <= 1/2 (search here vs N_max + 1 of theory.true_threshold): "
                    + ", ".join(f"L={L}: {a} vs {b}" for L, a, b in cross if a != b))
    parts.record(out)
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    plots = []
    if result.tables.get("preset_ser"):
        plots.append(_plot_presets(result.tables["preset_ser"]))
    if result.tables.get("interval_ser"):
        plots.append(_plot_interval(result.tables["interval_ser"], result.config.get("interval")))
    if result.tables.get("steps_needed"):
        plots.append(_plot_steps_needed(result.tables["steps_needed"], result.tables.get("slope_fit", []),
                                        result.tables.get("preset_steps_needed", [])))
    return plots


def _plot_presets(rows: list[dict]) -> Plot:
    from ._style import figure_legend, language_panels, length_handles

    fig, panels, lengths, styles = language_panels(rows, log_y=False)
    axes = [p.ax for p in panels]
    for ax, lang, color, series in panels:
        for L, pts in series.items():
            if not pts:
                continue
            st = styles[L]
            x = [r["steps"] for r in pts]
            ax.plot(x, [r["ser"] for r in pts], color=color, marker=st["marker"],
                    linestyle=st["linestyle"], alpha=st["alpha"], markersize=3)
            if all(r["ser_lower"] is not None for r in pts):
                ax.fill_between(x, [r["ser_lower"] for r in pts], [r["ser_upper"] for r in pts],
                                color=color, alpha=0.15, linewidth=0)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("steps N")
        ax.set_ylabel("SER")
        ax.set_title(lang)
    figure_legend(fig, axes, length_handles(lengths, styles), ncol=4)
    return Plot("preset_ser_vs_steps", fig,
                "SER of the oracle factorized sampler on the pruned presets vs steps (Monte Carlo with an exact "
                "support check; bands: 95% Clopper-Pearson intervals).")


def _plot_interval(irows: list[dict], l: int | None) -> Plot:
    from ._style import figure_legend, language_color, legend_key, length_handles, length_styles, panel_grid

    lengths = sorted({r["length"] for r in irows})
    fig, axes = panel_grid(2)
    color = language_color("interval")
    styles = length_styles(lengths)
    for ax, xkey in zip(axes, ("steps", "steps_per_length")):
        for L in lengths:
            pts = sorted((r for r in irows if r["length"] == L), key=lambda r: r["steps"])
            st = styles[L]
            ex = [(r[xkey], r["exact_ser"]) for r in pts if r["exact_ser"] is not None]
            if ex:
                ax.plot(*zip(*ex), color=color, marker=st["marker"], linestyle=st["linestyle"],
                        alpha=st["alpha"], markersize=3)
            lb = [(r[xkey], r["lemma_c6_lower_bound"]) for r in pts if r["lemma_c6_lower_bound"] is not None]
            if lb:
                ax.plot(*zip(*lb), color="k", linestyle=st["linestyle"], linewidth=0.8, alpha=st["alpha"])
        ax.axhline(0.5, color="0.5", linewidth=0.6, linestyle=":")
        ax.set_xscale("log", base=2)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("steps N" if xkey == "steps" else "steps per token N / L")
        ax.set_ylabel("SER")
    axes[0].set_title(f"interval language, l = {l}")
    axes[1].set_title("the same against N / L")
    extra = length_handles(lengths, styles) + [
        legend_key("exact SER", color=color),
        legend_key("Lemma C.6 lower bound (p_e = 1/2)", color="k", linewidth=0.8)]
    figure_legend(fig, axes, extra, ncol=3)
    return Plot("interval_ser_vs_steps", fig,
                "Exact SER 1 - (E[2^-c])^(L/l) of the interval language (Theorem 4.4) vs N and vs N/L; "
                "black: Lemma C.6's lower bound with the oracle's p_e = 1/2 (Theorem 4.4 uses p_e = 63/128 "
                "for eps_learning < 1/128; see the table). Curves collapsing against N/L mean the steps "
                "needed grow linearly in L.")


def _plot_steps_needed(nrows: list[dict], fits: list[dict], preset: list[dict]) -> Plot:
    from ._style import language_color, legend, new_figure

    fig, axes = new_figure(width=6.8, height=4.0)
    ax = axes[0, 0]
    fit_of = {f["threshold"]: f for f in fits}
    for k, thr in enumerate(sorted({r["threshold"] for r in nrows}, reverse=True)):
        pts = sorted((r["length"], r["steps_needed"]) for r in nrows if r["threshold"] == thr and r["steps_needed"])
        if not pts:
            continue
        x, y = zip(*pts)
        ax.plot(x, y, marker="os"[k % 2], linestyle="none", color=language_color("interval"),
                label=f"interval, SER <= {thr} (exact)")
        if thr in fit_of:
            f = fit_of[thr]
            xs = np.array([min(x), max(x)], dtype=float)
            ax.plot(xs, np.exp(f["intercept"]) * xs ** f["slope"], color=language_color("interval"),
                    linestyle=["-", "--"][k % 2], linewidth=0.9, label=f"fit: slope {f['slope']:.3f}")
    langs = list(dict.fromkeys(r["language"] for r in preset))
    for j, lang in enumerate(langs):
        dodge = 2 ** (0.04 * (j - (len(langs) - 1) / 2))  # side by side, not on top of each other
        for thr, marker in zip(sorted({r["threshold"] for r in preset}, reverse=True), ("^", "v", "s", "D")):
            got = sorted((r for r in preset if r["language"] == lang and r["threshold"] == thr
                          and r["steps_needed_grid"]), key=lambda r: r["length"])
            if not got:
                continue
            y = [r["steps_needed_grid"] for r in got]
            err = [[v - (r["steps_needed_lo"] or v) for v, r in zip(y, got)],
                   [(r["steps_needed_hi"] or v) - v for v, r in zip(y, got)]]
            ax.errorbar([r["length"] * dodge for r in got], y, yerr=err, marker=marker, linestyle=":",
                        linewidth=0.8, markersize=4, capsize=2, color=language_color(lang),
                        label=f"{lang}, SER <= {thr} (MC, 95% range)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("length L")
    ax.set_ylabel("steps needed N")
    ax.set_title("steps needed vs length")
    legend(ax, fontsize=7)
    return Plot("steps_needed_vs_length", fig,
                "Exact smallest N with SER <= 1/2 and <= 0.1 on the interval language vs L, with a "
                "least-squares line on log-log axes (Theorem 4.4: slope 1); dotted, in each preset's "
                "color: the smallest grid N from which the Monte Carlo SER stays below the threshold on the "
                "pruned presets, with its 95% range from the binomial limits (coarse: limited by the grid and "
                "the sample size).")
