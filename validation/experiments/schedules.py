"""Experiment -- schedules: exact expected KL vs step budget for every schedule, with the bounds overlaid.

For each language (a token-level Markov chain by the closed-form information curve, ``L`` up to 512;
a tiny HMM by its joint table) the exact information curve ``Z`` gives, at each budget ``N``:

* the **i.i.d. step assignment** (the paper's sampler) under linear, cosine, log-linear (identical to
  linear after renormalization), the Lemma B.12 schedule (n-grams), our large-L reading of
  Lavenant-Zanella's optimum, the DP's breakpoints, and the numerically optimized ``pi``:
  exact ``E_tau KL`` (:func:`numerics.exact.schedule_opt.iid_error`);
* **deterministic block sizes** under a uniformly random order (Li-Cai's sampler): balanced sizes,
  rounded cosine, rounded LZ reading, and Chen-Cong-Li's DP optimum: exact ``E_sigma KL`` (the
  left-Riemann error);
* the bounds (``theory.related``): Li-Cai Theorem 1 and the (I4) ordering for balanced sizes, the
  L-free ``max pi * sum_i I(X_i;X_-i)`` for linear i.i.d. steps, the TC/DTC bounds at the step
  counts of their geometric schedules, and ``TC`` (the one-step error, the trivial bound).

Everything is exact (no sampling); docs/methods/schedules.md explains the methods.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

import numerics.exact.schedule_opt as so
import numerics.schedules as sch
import theory.related as rel
from numerics.exact.joint_table import joint_table

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter, stored_config

NAME = "schedules"
TITLE = "Schedules: exact expected KL vs steps for every schedule, with the published bounds"
VERSION = 1

IID = ("linear", "cosine", "loglinear", "b12", "lz-reading", "dp-breakpoints", "optimized")
BLOCKS = ("balanced", "cosine", "lz-reading", "dp-optimal")


@dataclass(frozen=True)
class Config:
    """Sizes of the schedules experiment.

    Attributes
    ----------
    markov_languages : presets that are token-level Markov chains (closed-form ``Z``).
    lengths : their lengths ``L``.
    n_steps : budgets ``N`` (block schedules only for ``N <= L``).
    table_languages : presets handled through the joint table (tiny ``L``).
    table_length : their length.
    optimize_max_steps : the i.i.d. ``pi`` is optimized (L-BFGS-B, several starts) for ``N`` up to this.
    ccl_eps : factors ``eps`` of the geometric TC/DTC schedules whose bounds are overlaid.
    """

    markov_languages: tuple[str, ...] = ("2gram",)
    lengths: tuple[int, ...] = (64, 512)
    n_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    table_languages: tuple[str, ...] = ("hmm",)
    table_length: int = 6
    optimize_max_steps: int = 32
    ccl_eps: tuple[float, ...] = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125)

    @classmethod
    def tiny(cls) -> Config:
        return cls(lengths=(12,), n_steps=(1, 2, 4), table_length=4, optimize_max_steps=2, ccl_eps=(1.0, 0.25))

    @classmethod
    def full(cls) -> Config:
        return cls(lengths=(64, 256, 512, 1024), n_steps=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                   table_length=7, optimize_max_steps=128)


def _b12(lang, N: int):
    """The Lemma B.12 schedule with the smallest eps fitting in N steps (n-grams; None otherwise)."""
    order = eng.language_order(lang)
    if order is None or N < 2:
        return None
    try:
        return eng.b12_schedule(order, N)
    except ValueError:  # no eps < 1 gives a B.12 schedule this short
        return None


def _point(name: str, L: int | None, cfg: Config) -> dict:
    """Every schedule's exact error and every bound for one language and length."""
    lang = eng.load_language(name)
    length = cfg.table_length if L is None else L
    curve = so.information_curve(lang, length) if L is not None else so.information_curve(
        joint_table(lang, length))
    tc, sum_mi = curve.total_correlation, length * float(curve.z[-1])
    dtc = sum_mi - tc
    budgets = sorted({N for N in cfg.n_steps if L is not None or N <= length})
    dp = so.optimal_blocks(curve, max(budgets))
    rows, bounds = [], []
    for N in budgets:
        iid = {"linear": sch.make_schedule("linear", N), "cosine": sch.make_schedule("cosine", N),
               "loglinear": sch.make_schedule("loglinear", N), "b12": _b12(lang, N),
               "lz-reading": so.lz_schedule(curve, N)}
        if N <= length:
            iid["dp-breakpoints"] = so.schedule_from_sizes(dp.sizes(N), "dp-breakpoints")
        if N <= cfg.optimize_max_steps:
            starts = [iid["lz-reading"]] + ([iid["dp-breakpoints"]] if "dp-breakpoints" in iid else [])
            iid["optimized"] = so.optimize_iid_schedule(curve, N, starts).schedule
        for key, s in iid.items():
            if s is not None:
                v = so.iid_error(curve, s).value
                rows.append({"schedule": key, "model": "iid", "steps": N, "realized_steps": s.n_steps, "kl": v})
        if N <= length:
            blocks = {"balanced": so.sizes_from_u(np.arange(N + 1) / N, length),
                      "cosine": so.sizes_from_u(iid["cosine"].u, length),
                      "lz-reading": so.sizes_from_u(iid["lz-reading"].u, length), "dp-optimal": dp.sizes(N)}
            for key, k in blocks.items():
                rows.append({"schedule": key, "model": "blocks", "steps": N, "realized_steps": len(k),
                             "kl": so.block_error(curve, k).total.value})
            s_max = math.ceil(length / N)
            for key, b in (("li-cai", rel.li_cai_bound(sum_mi, length, s_max, tc)),
                           ("ordering", rel.ordering_bound(sum_mi, length, s_max, tc))):
                bounds.append({"bound": key, "steps": N, "value": b.value, "vacuous": b.vacuous, "source": b.source})
        b = rel.iid_mi_bound(sum_mi, np.full(N, 1.0 / N), tc)
        bounds.append({"bound": "iid-mi", "steps": N, "value": b.value, "vacuous": b.vacuous, "source": b.source})
    ccl = []
    for eps in cfg.ccl_eps:
        for kind, fn, base in (("dtc", rel.ccl_dtc_bound, dtc), ("tc", rel.ccl_tc_bound, tc)):
            k = rel.ccl_geometric_sizes(eps, length, kind)
            b = fn(k, base) if kind == "tc" else fn(k, base, tc)
            ccl.append({"kind": kind, "eps": eps, "steps": len(k), "bound": b.value, "vacuous": b.vacuous,
                        "exact": so.block_error(curve, k).total.value, "source": b.source})
    return {"length": length, "method": curve.method, "tc": tc, "dtc": dtc, "sum_mi": sum_mi,
            "z": [float(x) for x in curve.z], "rows": rows, "bounds": bounds, "ccl": ccl,
            "dp_sizes": {str(N): [int(x) for x in dp.sizes(N)] for N in budgets if N <= length}}


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=stored_config(cfg))
    parts = Parts(strict)
    grid = [(name, L) for name in cfg.markov_languages for L in cfg.lengths] + [(n, None) for n in cfg.table_languages]
    points, curves, rows, bounds, ccl = {}, [], [], [], []
    for name, L in progress_iter(grid, progress, "schedules: languages"):
        key = {"v": VERSION, "language": name, "length": L, "table_length": cfg.table_length,
               "steps": list(cfg.n_steps), "optimize_max_steps": cfg.optimize_max_steps, "ccl_eps": list(cfg.ccl_eps)}
        p = parts.attempt(f"schedules on {name}", lambda key=key, name=name, L=L: cache.get_or_compute(
            "schedules-point", key, lambda: _point(name, L, cfg)))
        if p is None:
            continue
        points[(name, p["length"])] = p
        curves.append({"language": name, "length": p["length"], "method": p["method"], "tc": p["tc"],
                       "dtc": p["dtc"], "sum_mi": p["sum_mi"]})
        tag = {"language": name, "length": p["length"]}
        rows += [{**tag, **r, "kl_per_token": r["kl"] / p["length"]} for r in p["rows"]]
        bounds += [{**tag, **b} for b in p["bounds"]]
        ccl += [{**tag, **c} for c in p["ccl"]]
    parts.record(out)
    if rows:
        out.tables.update(points=rows, bounds=bounds, ccl=ccl, curves=curves)
        out.data["z"] = {f"{n}|{L}": p["z"] for (n, L), p in points.items()}
        out.data["dp_sizes"] = {f"{n}|{L}": p["dp_sizes"] for (n, L), p in points.items()}
        out.notes += _notes(rows, bounds)
        named = [(b["bound"], b["vacuous"]) for b in bounds] + [(f"CCL {c['kind']}", c["vacuous"]) for c in ccl]
        for name in dict.fromkeys(n for n, _ in named):  # a bound above TC says nothing: never a green "ok"
            flags = [v for n, v in named if n == name]
            out.add_vacuous(f"{name} bound: vacuous (above TC) at {sum(flags)} of {len(flags)} points",
                            sum(flags), len(flags))
    return out.finish(started)


def _notes(rows: list[dict], bounds: list[dict]) -> list[str]:
    notes = []
    for (lang, L) in dict.fromkeys((r["language"], r["length"]) for r in rows):
        pts = {(r["schedule"], r["model"], r["steps"]): r["kl"] for r in rows if r["language"] == lang and r["length"] == L}
        Ns = sorted({N for (s, m, N) in pts if s == "dp-optimal" and pts[(s, m, N)] > 0})
        if not Ns:
            continue
        N = Ns[len(Ns) // 2]

        def get(s, m, pts=pts, N=N):
            return pts.get((s, m, N))

        lc = next((b for b in bounds if b["language"] == lang and b["length"] == L and b["bound"] == "li-cai"
                   and b["steps"] == N), None)
        text = (f"{lang}, L = {L}, N = {N} (nats per token): deterministic sizes -- DP optimum "
                f"{get('dp-optimal', 'blocks') / L:.4g}, balanced {get('balanced', 'blocks') / L:.4g}, LZ reading "
                f"{get('lz-reading', 'blocks') / L:.4g}; i.i.d. steps -- linear {get('linear', 'iid') / L:.4g}, cosine "
                f"{get('cosine', 'iid') / L:.4g}, LZ reading {get('lz-reading', 'iid') / L:.4g}")
        if get("optimized", "iid") is not None:
            text += f", optimized pi {get('optimized', 'iid') / L:.4g}"
        if get("b12", "iid") is not None:
            text += f", Lemma B.12 {get('b12', 'iid') / L:.4g}"
        if lc is not None:
            text += (f". Li-Cai's bound for balanced sizes is {lc['value'] / get('balanced', 'blocks'):.3g}x the exact "
                     f"value" + (" (vacuous: above TC)" if lc["vacuous"] else ""))
        notes.append(text + ".")
    return notes


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import figure_legend, language_color, legend, legend_key, new_figure

    rows = result.tables.get("points", [])
    if not rows:
        return []
    panels = list(dict.fromkeys((r["language"], r["length"]) for r in rows))
    fig, axes = new_figure(ncols=len(panels), width=4.8, height=3.8)
    styles = {("iid", "linear"): "-", ("iid", "cosine"): "-", ("iid", "loglinear"): ":", ("iid", "b12"): "-",
              ("iid", "lz-reading"): "-", ("iid", "dp-breakpoints"): "-", ("iid", "optimized"): "-",
              ("blocks", "balanced"): "--", ("blocks", "cosine"): "--", ("blocks", "lz-reading"): "--",
              ("blocks", "dp-optimal"): "--"}
    colors = dict(zip(dict.fromkeys(s for _, s in styles), ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8"]))
    drawn: dict[str, None] = {}  # schedules drawn, in order: one legend entry each (colour = schedule)
    for ax, (lang, L) in zip(axes[0], panels):
        for (model, sched), ls in styles.items():
            pts = sorted((r["steps"], r["kl"] / L) for r in rows if r["language"] == lang and r["length"] == L
                         and r["model"] == model and r["schedule"] == sched and r["kl"] > 0)
            if pts:
                ax.plot(*zip(*pts), linestyle=ls, marker="o" if model == "iid" else "s", markersize=2.5,
                        color=colors[sched])
                drawn[sched] = None
        for bound, ls in (("li-cai", (0, (4, 2))), ("ordering", ":"), ("iid-mi", "-.")):
            pts = sorted((b["steps"], b["value"] / L) for b in result.tables.get("bounds", [])
                         if b["language"] == lang and b["length"] == L and b["bound"] == bound and b["value"] > 0)
            if pts:
                ax.plot(*zip(*pts), color="k", linestyle=ls, linewidth=0.9, label=f"bound: {bound}")
        for kind, marker in (("dtc", "x"), ("tc", "+")):
            pts = [(c["steps"], c["bound"] / L) for c in result.tables.get("ccl", [])
                   if c["language"] == lang and c["length"] == L and c["kind"] == kind and c["bound"] > 0]
            if pts:
                ax.plot(*zip(*pts), color="k", linestyle="none", marker=marker, label=f"bound: eps*{kind.upper()}")
        curve = next(c for c in result.tables["curves"] if c["language"] == lang and c["length"] == L)
        ax.axhline(curve["tc"] / L, color="0.5", linewidth=0.8, linestyle=":", label="TC / L (N = 1)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("steps N")
        ax.set_ylabel("exact E KL / L  [nats]")
        ax.set_title(f"{lang}, L = {L}")
    keys = [legend_key(f"schedule {sched}", color=colors[sched], linestyle="-") for sched in drawn]
    keys += [legend_key("i.i.d. steps (E_tau KL)", color="0.35", linestyle="-", marker="o", markersize=4),
             legend_key("block sizes, random order (E_sigma KL)", color="0.35", linestyle="--", marker="s", markersize=4)]
    figure_legend(fig, axes, extra=keys, ncol=4, fontsize=8)
    plots = [Plot("kl_vs_steps_by_schedule", fig,
                  "Exact expected KL per token vs steps: i.i.d. step assignment (solid, E_tau KL) and deterministic "
                  "block sizes with a random order (dashed, E_sigma KL), for each schedule; black: bounds (Li-Cai "
                  "Thm 1 and the (I4) ordering for balanced sizes, max pi * sum I for linear i.i.d. steps, eps*DTC / "
                  "eps*TC at the step counts of the geometric schedules). Zero errors (N = L blocks) are not drawn.")]
    z = result.data.get("z", {})
    if z:
        fig, axes = new_figure()
        ax = axes[0, 0]
        for key, zs in z.items():
            lang, L = key.split("|")
            frac = np.arange(len(zs)) / len(zs)  # (j - 1) / L: revealed before the j-th token
            ax.plot(frac, zs, color=language_color(lang), label=f"{lang}, L = {L}",
                    linestyle="-" if int(L) == max(int(k.split("|")[1]) for k in z if k.startswith(lang + "|")) else "--")
        ax.set_xlabel("revealed fraction (j - 1) / L")
        ax.set_ylabel("Z_j  [nats]")
        legend(ax, fontsize=7)
        plots.append(Plot("information_curves", fig,
                          "Exact information curves Z_j (mean information between a new token and a random (j-1)-set of "
                          "revealed ones): TC is the area under Z, DTC the area between Z and Z_L."))
    return plots
