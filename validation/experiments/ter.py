"""Experiment 1 -- TER vs steps (the paper's Figure 1, top), with the oracle denoiser.

For each unpruned preset (every sequence has positive probability) and each length ``L``: the
generative perplexity ``exp(E_p[-log q(x)]/L)`` of the oracle factorized sampler at ``N`` steps
(Monte Carlo over sampled sequences, exact ``log q``, 95% band), the data's own perplexity
``exp(H(q)/L)``, and the per-token Jensen bound ``E_tau KL(q || p(.|tau)) / L`` -- an upper bound
on ``log TER(p) - log TER(q) = KL(q || p) / L`` (Lemma B.2), exact where the engine can compute
it. Theorem 4.2's bound ``4 eps log|V|`` (with ``eps`` solved from ``N``, for ``L >= L_0``) is
overlaid where ``theory`` provides it; it is a bound for its own schedule (Lemma B.12), the curves
use the configured one. Finally the number of steps needed to come within ``gap`` of optimal is
plotted against ``L``: Theorem 4.2 says it does not grow with ``L``. Where the criterion comes
from Monte Carlo values the steps needed carry a 95% range: the first grid ``N`` whose lower
confidence limit meets the gap, and the first from which the upper limit does.

Checks that set the section's status: Lemma B.2 (the Jensen bound is at least the exact
``KL(q || p)``) at the small lengths, and Theorem 4.2 at every grid point in its regime
``L >= L_0``. A Theorem 4.2 bound ``4 eps log|V| >= log|V|`` (``eps >= 1/4``) is vacuous: the
Jensen bound of the oracle factorized sampler is a sum, over steps, of token entropies given
the revealed tokens, minus a joint entropy, so ``KL(q || p) / L <= log|V|`` always.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..cache import ResultCache
from . import _engine as eng
from ._base import (
    Z95,
    ExperimentResult,
    Parts,
    Plot,
    StepsNeeded,
    point_cache,
    progress_iter,
    steps_needed_range,
    stored_config,
)

NAME = "ter"
TITLE = "TER vs steps: generative perplexity and the KL bound of the oracle sampler"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """Sizes of the TER experiment.

    Attributes
    ----------
    languages : unpruned presets (``numerics.languages.presets``).
    lengths : sequence lengths ``L``.
    n_steps : numbers of steps ``N``.
    samples : sampled sequences per point (generative perplexity) and Monte Carlo samples of
        the Jensen bound where it is not exact.
    schedule : schedule family of the sampler.
    gap : per-token gap (nats) defining "within gap of optimal" for the steps-needed plot.
    exact_lengths : tiny lengths at which ``KL(q || p)`` of the true mixture is computed exactly
        (DP over revealed words) next to the Jensen bound, to measure Lemma B.2's slack.
    seed : seed of every random draw.
    """

    languages: tuple[str, ...] = ("2gram", "3gram", "4gram", "hmm")
    lengths: tuple[int, ...] = (32, 64, 128, 256)
    n_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    samples: int = 64
    schedule: str = "linear"
    gap: float = 0.05
    exact_lengths: tuple[int, ...] = (4, 5)
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(languages=("2gram",), lengths=(4, 8), n_steps=(1, 2, 4), samples=8, exact_lengths=(3,))

    @classmethod
    def full(cls) -> Config:
        return cls(lengths=(64, 128, 256, 512, 1024, 2048),
                   n_steps=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), samples=1000,
                   exact_lengths=(4, 5, 6))


def _seed(cfg: Config, *parts: int | str) -> list[int]:
    return [cfg.seed, VERSION] + [p if isinstance(p, int) else sum(map(ord, p)) for p in parts]


def _theorem42(lang: str, n_steps: int, length: int) -> dict:
    """Theorem 4.2's bound at this point; for a language that is not an n-gram it does not apply."""
    language = eng.load_language(lang)
    order = eng.language_order(language)
    if order is None:
        return {"eps": None, "log_ter_gap": None, "length_threshold": None, "valid": False, "b12_steps": None,
                "note": "Theorem 4.2 covers n-gram languages only"}
    return eng.theorem42(order, language.vocab_size, n_steps, length)


def _b12_jensen(lang: str, N: int, L: int) -> dict:
    """Exact Jensen bound under the Lemma B.12 schedule that Theorem 4.2 uses (Markov-chain languages)."""
    language = eng.load_language(lang)
    try:
        return eng.jensen_bound_exact(language, eng.b12_schedule(eng.language_order(language), N), L)
    except ValueError:
        return {"value": None, "stderr": None, "method": "not a token-level Markov chain", "samples": 0}


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=stored_config(cfg))
    parts = Parts(strict)
    attempt = parts.attempt

    rows, data_rows = [], []
    for lang in cfg.languages:
        for L in cfg.lengths:
            key = {"v": VERSION, "language": lang, "length": L, "samples": cfg.samples, "seed": cfg.seed}
            d = attempt("data perplexity", lambda: cache.get_or_compute(
                "ter-data", key, lambda: eng.data_ppl(eng.load_language(lang), L, cfg.samples, _seed(cfg, lang, L))))
            data_rows.append({"language": lang, "length": L,
                              "data_ppl": d["value"] if d else None, "data_ppl_stderr": d["stderr"] if d else None,
                              "method": d["method"] if d else None})
    grid = [(lang, L, N) for lang in cfg.languages for L in cfg.lengths for N in cfg.n_steps]
    for lang, L, N in progress_iter(grid, progress, "ter: points"):
        base = {"v": VERSION, "language": lang, "length": L, "steps": N, "schedule": cfg.schedule,
                "samples": cfg.samples, "seed": cfg.seed}

        g = attempt("oracle generative perplexity", lambda: cache.get_or_compute(
            "ter-genppl", base, lambda: eng.oracle_gen_ppl(eng.load_language(lang), eng.schedule_for(cfg.schedule, N),
                                                           cfg.samples, L, _seed(cfg, lang, L, N))))
        j = attempt("Jensen KL bound", lambda: cache.get_or_compute(
            "ter-jensen", base, lambda: eng.jensen_bound(eng.load_language(lang), eng.schedule_for(cfg.schedule, N),
                                                          L, cfg.samples, _seed(cfg, lang, L, N, "j"))))
        t = attempt("Theorem 4.2 bound", lambda: cache.get_or_compute(
            "ter-thm42", {"v": VERSION, "language": lang, "length": L, "steps": N}, lambda: _theorem42(lang, N, L)))
        b12 = None
        if t and t.get("log_ter_gap") is not None:
            b12 = attempt("Jensen KL bound under the B.12 schedule (exact languages only)", lambda: cache.get_or_compute(
                "ter-jensen-b12", base, lambda: _b12_jensen(lang, N, L)))
        rows.append({
            "language": lang, "length": L, "steps": N,
            "gen_ppl": g["value"] if g else None, "gen_ppl_stderr": g["stderr"] if g else None,
            "nfe_mean": g.get("nfe_mean") if g else None,
            "jensen_kl": j["value"] if j else None, "jensen_kl_stderr": j["stderr"] if j else None,
            "jensen_method": j["method"] if j else None,
            "jensen_kl_per_token": j["value"] / L if j else None,
            "thm42_log_ter_gap": t.get("log_ter_gap") if t else None,
            "thm42_valid": t.get("valid") if t else None,
            "thm42_eps": t.get("eps") if t else None,
            "thm42_L0": t.get("length_threshold") if t else None,
            "jensen_kl_per_token_b12": b12["value"] / L if b12 and b12.get("value") is not None else None,
        })
    exact_rows = []
    egrid = [(lang, L, N) for lang in cfg.languages for L in cfg.exact_lengths for N in cfg.n_steps]
    for lang, L, N in progress_iter(egrid, progress, "ter: exact small L"):
        key = {"v": VERSION, "language": lang, "length": L, "steps": N, "schedule": cfg.schedule}
        e = attempt("exact KL(q||p) at small L", lambda: cache.get_or_compute(
            "ter-exact-small", key, lambda: eng.exact_small(eng.load_language(lang), eng.schedule_for(cfg.schedule, N), L)))
        if e is not None:
            exact_rows.append({"language": lang, "length": L, "steps": N, **e,
                               "jensen_over_kl": e["kl_jensen_bound"] / e["kl"] if e["kl"] > 0 else None})
    if exact_rows:
        out.tables["exact_small_length"] = exact_rows
    parts.record(out)
    if any(r["gen_ppl"] is not None or r["jensen_kl"] is not None for r in rows):
        out.tables["points"] = rows
        out.tables["data_perplexity"] = data_rows
        out.tables["steps_needed"] = _steps_needed(cfg, rows, data_rows)
        flat = _flatness_note(out.tables["steps_needed"])
        if flat:
            out.notes.append(flat)
    _check_lemma_b2(out, exact_rows)
    _check_theorem42(out, rows)
    return out.finish(started)


_RTOL_B2 = 1e-12  # float64 round-off between two exact computations of the same joint table


def _check_lemma_b2(out: ExperimentResult, exact_rows: list[dict]) -> None:
    """Lemma B.2 at small ``L``: ``E_tau KL(q || p(.|tau)) >= KL(q || p)``, both exact (DP)."""
    if not exact_rows:
        return
    bad = [r for r in exact_rows if r["kl_jensen_bound"] < r["kl"] * (1 - _RTOL_B2) - _RTOL_B2]
    out.add_finding([
        f"Lemma B.2 violated: {r['language']}, L = {r['length']}, N = {r['steps']}: E_tau KL(q||p(.|tau)) = "
        f"{r['kl_jensen_bound']:.6g} < KL(q||p) = {r['kl']:.6g}" for r in bad], len(bad), len(exact_rows))
    worst = max((r for r in exact_rows if r["jensen_over_kl"]), key=lambda r: r["jensen_over_kl"], default=None)
    if worst and not bad:
        out.notes.append(
            f"Lemma B.2 holds at every small-L point ({len(exact_rows)}, exact DP): E_tau KL(q||p(.|tau)) exceeds "
            f"the true KL(q||p) by up to a factor {worst['jensen_over_kl']:.3g} ({worst['language']}, "
            f"L = {worst['length']}, N = {worst['steps']}); the bound is tight at N = 1.")


def _check_theorem42(out: ExperimentResult, rows: list[dict]) -> None:
    """Theorem 4.2 at the grid points in its regime (``L >= L_0``), each one of: confirmed (an upper
    bound on ``KL(q||p)/L`` is below ``4 eps log|V|``), vacuous (``eps >= 1/4``) or inconclusive."""
    regime = [r for r in rows if r["thm42_valid"]]
    applicable = [r for r in rows if r["thm42_L0"] is not None]
    if not applicable:
        return
    vacuous = [r for r in regime if r["thm42_eps"] >= 0.25]
    confirmed, open_ = [], []
    for r in regime:
        if r["thm42_eps"] >= 0.25:
            continue
        kl = r["jensen_kl"]
        if kl is None:
            open_.append(r)
            continue
        upper = (kl + Z95 * (r["jensen_kl_stderr"] or 0.0)) / r["length"]
        (confirmed if upper <= r["thm42_log_ter_gap"] else open_).append(r)
    top = max(applicable, key=lambda r: (r["steps"], r["language"]))
    out.notes.append(
        f"Theorem 4.2's regime L >= L_0(eps, n): {len(regime)} of {len(applicable)} n-gram grid points "
        f"(e.g. at N = {top['steps']}, {top['language']}: eps = {top['thm42_eps']:.4g}, L_0 = {top['thm42_L0']}). "
        f"In the regime: {len(confirmed)} confirmed (the Jensen bound, 95% upper limit, is below 4 eps log|V|), "
        f"{len(vacuous)} vacuous (eps >= 1/4, so 4 eps log|V| >= log|V| >= KL(q||p)/L), "
        f"{len(open_)} inconclusive (the Jensen bound is above 4 eps log|V|; it only bounds KL(q||p) from above).")
    if not regime:
        out.add_vacuous(f"Theorem 4.2: no grid point has L >= L_0(eps, n) ({len(applicable)} points "
                        "of n-gram languages), so its bound was checked nowhere", len(applicable), len(applicable))
    elif not confirmed:
        out.add_vacuous(f"Theorem 4.2: all {len(vacuous)} grid points in its regime L >= L_0 have eps >= 1/4, "
                        "where 4 eps log|V| >= log|V| >= KL(q||p)/L holds for the oracle sampler at any N"
                        if len(vacuous) == len(regime) else
                        f"Theorem 4.2: confirmed at no grid point in its regime ({len(vacuous)} vacuous, "
                        f"{len(open_)} inconclusive)", len(regime), len(regime))


def _interval(n: int, value: float, stderr: float) -> tuple[int, float, float, float]:
    return n, value, value - Z95 * stderr, value + Z95 * stderr


def _steps_needed(cfg: Config, rows: list[dict], data_rows: list[dict]) -> list[dict]:
    """Steps needed to come within ``cfg.gap`` nats per token of optimal, per language and ``L``.

    Two criteria: the per-token Jensen bound ``E_tau KL(q||p(.|tau)) / L`` (an upper bound on
    ``log TER(p) - log TER(q)``) and ``|log(gen_ppl / data_ppl)|`` (stderr by the delta method,
    the two estimates independent). Each with the 95% range of
    :func:`~validation.experiments._base.steps_needed_range`.
    """
    data = {(d["language"], d["length"]): d for d in data_rows}
    out = []
    for lang in cfg.languages:
        for L in cfg.lengths:
            pts = sorted((r for r in rows if r["language"] == lang and r["length"] == L), key=lambda r: r["steps"])
            kl = [_interval(r["steps"], r["jensen_kl"] / L, (r["jensen_kl_stderr"] or 0.0) / L)
                  for r in pts if r["jensen_kl"] is not None]
            d = data.get((lang, L))
            ppl = []
            if d and d["data_ppl"]:
                sd = (d["data_ppl_stderr"] or 0.0) / d["data_ppl"]
                ppl = [_interval(r["steps"], abs(math.log(r["gen_ppl"] / d["data_ppl"])),
                                 math.hypot((r["gen_ppl_stderr"] or 0.0) / r["gen_ppl"], sd))
                       for r in pts if r["gen_ppl"] is not None and math.isfinite(r["gen_ppl"]) and r["gen_ppl"] > 0]
            row = {"language": lang, "length": L, "gap": cfg.gap}
            for name, series in (("jensen_kl", kl), ("gen_ppl", ppl)):
                n = steps_needed_range(series, cfg.gap) if series else StepsNeeded(None, None, None, False)
                row.update({f"steps_needed_{name}": n.steps, f"steps_needed_{name}_lo": n.lo,
                            f"steps_needed_{name}_hi": n.hi, f"{name}_monte_carlo": n.monte_carlo})
            out.append(row)
    return out


def _flatness_note(needed: list[dict]) -> str | None:
    parts = []
    for lang in sorted({r["language"] for r in needed}):
        vals = [r for r in needed if r["language"] == lang]
        if vals and all(r["steps_needed_jensen_kl"] is not None for r in vals):
            parts.append(f"{lang}: " + ", ".join(
                f"L={r['length']}: N={r['steps_needed_jensen_kl']}"
                + (f" [{r['steps_needed_jensen_kl_lo']}, {r['steps_needed_jensen_kl_hi'] or '>grid'}]"
                   if r["jensen_kl_monte_carlo"] else "") for r in vals))
    if not parts:
        return None
    return ("Steps needed for E_tau KL(q||p(.|tau))/L <= gap (Theorem 4.2 predicts no growth with L; "
            "[95% range] where Monte Carlo): " + "; ".join(parts) + ".")


def plot(result: ExperimentResult) -> list[Plot]:
    rows = result.tables.get("points", [])
    plots = []
    if rows:
        data = {(d["language"], d["length"]): d for d in result.tables.get("data_perplexity", [])}
        if any(_positive(r["gen_ppl"]) for r in rows):
            plots.append(_plot_gen_ppl(rows, data))
        if any(_positive(r["jensen_kl"]) for r in rows):
            plots.append(_plot_kl_bound(rows))
    if result.tables.get("exact_small_length"):
        plots.append(_plot_exact_small(result.tables["exact_small_length"]))
    needed = result.tables.get("steps_needed", [])
    if any(r["steps_needed_jensen_kl"] is not None or r["steps_needed_gen_ppl"] is not None for r in needed):
        plots.append(_plot_steps_needed(needed, sorted({r["steps"] for r in rows}), result.config.get("gap")))
    return plots


def _positive(v: float | None) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def _plot_gen_ppl(rows: list[dict], data: dict) -> Plot:
    """Generative perplexity vs N per language (log y: the curves meet the data's perplexity), with
    Theorem 4.2's TER bound for the largest L drawn inside the frame or its value written where it
    is off scale."""
    from ._style import band, figure_legend, language_panels, legend_key, length_handles, log_ticks

    fig, panels, lengths, styles = language_panels(rows, lambda r: _positive(r["gen_ppl"]))
    drawn = {"bound": False, "regime": False}
    axes = [p.ax for p in panels]
    for ax, lang, color, series in panels:
        shown = []
        for L, pts in series.items():
            st = styles[L]
            if pts:
                band(ax, [r["steps"] for r in pts], [r["gen_ppl"] for r in pts], [r["gen_ppl_stderr"] for r in pts],
                     color, marker=st["marker"], linestyle=st["linestyle"], alpha=st["alpha"], markersize=3)
                shown += [r["gen_ppl"] for r in pts]
            d = data.get((lang, L))
            if d and _positive(d["data_ppl"]):
                ax.axhline(d["data_ppl"], color=color, linewidth=0.8, linestyle=":", alpha=st["alpha"])
                shown.append(d["data_ppl"])
        if not shown:
            continue
        bottom, top = min(shown) / 1.08, max(shown) * 1.25
        L = lengths[-1]
        d = data.get((lang, L))
        bound = [(r["steps"], d["data_ppl"] * math.exp(r["thm42_log_ter_gap"]), bool(r["thm42_valid"]))
                 for r in sorted(rows, key=lambda r: r["steps"])
                 if r["language"] == lang and r["length"] == L and r["thm42_log_ter_gap"] is not None
                 and d and _positive(d["data_ppl"])]
        if bound and max(v for _, v, _ in bound) <= 20 * top:  # within a factor 20: widen the frame
            top = max(top, 1.25 * max(v for _, v, _ in bound))
        if bound:  # the whole line, clipped by the frame; the part above it is stated in words
            drawn["bound"] |= any(v <= top for _, v, _ in bound)
            ax.plot([n for n, _, _ in bound], [v for _, v, _ in bound], color="k", linewidth=0.8, linestyle="--",
                    marker=".", markersize=4)
            valid = [(n, v) for n, v, ok in bound if ok]
            if valid:
                drawn["regime"] |= any(v <= top for _, v in valid)
                ax.plot(*zip(*valid), color="k", linestyle="none", marker="o", markersize=4)
        off = [b for b in bound if b[1] > top]
        if off:
            n, v, _ = max(off, key=lambda b: b[0])
            ax.text(0.97, 0.55, f"Thm 4.2 TER bound (L = {L}) is above\nthe frame for N <= {n}: {v:.3g} at N = {n}",
                    transform=ax.transAxes, ha="right", va="center", fontsize=7, color="k",
                    bbox={"facecolor": "white", "alpha": 0.85, "linewidth": 0, "pad": 1.5})
        elif not _is_ngram(rows, lang):
            ax.text(0.97, 0.55, "Theorem 4.2: n-gram languages only", transform=ax.transAxes, ha="right",
                    va="center", fontsize=7)
        ax.set_ylim(bottom, top)
        log_ticks(ax, "y")
        ax.set_xlabel("steps N")
        ax.set_ylabel("generative perplexity")
        ax.set_title(lang)
    extra = length_handles(lengths, styles) + [
        legend_key("data perplexity exp(H/L)", color="0.35", linestyle=":")]
    if drawn["bound"]:
        extra.append(legend_key(f"Thm 4.2 TER bound exp(H/L + 4 eps log|V|), L = {lengths[-1]}", color="k",
                                linestyle="--", linewidth=0.8))
    if drawn["regime"]:
        extra.append(legend_key("bound point with L >= L_0 (in the theorem's regime)", color="k", linestyle="none",
                                marker="o", markersize=3))
    figure_legend(fig, axes, extra, ncol=3)
    return Plot("gen_ppl_vs_steps", fig,
                "Generative perplexity of the oracle factorized sampler vs steps (log scales; 95% bands); dotted: "
                "the data's own perplexity exp(H/L). Dashed black: Theorem 4.2's TER bound exp(H/L + 4 eps log|V|) "
                "at the largest L (a bound on TER for the Lemma B.12 schedule, drawn for comparison; dots where "
                "L >= L_0, the theorem's regime); where it lies above the frame its value is written in the panel.")


def _is_ngram(rows: list[dict], lang: str) -> bool:
    """Whether Theorem 4.2's constants exist for ``lang`` (an n-gram language)."""
    return any(r["language"] == lang and r["thm42_L0"] is not None for r in rows)


def _plot_kl_bound(rows: list[dict]) -> Plot:
    """Per-token Jensen bound vs N (log-log), Theorem 4.2's 4 eps log|V| and the vacuous region above log|V|."""
    from matplotlib.patches import Patch

    from ._style import band, figure_legend, language_panels, legend_key, length_handles

    fig, panels, lengths, styles = language_panels(rows, lambda r: _positive(r["jensen_kl"]))
    axes = [p.ax for p in panels]
    drawn = {"bound": False, "b12": False, "logv": False}
    for ax, lang, color, series in panels:
        shown = []
        for L, pts in series.items():
            if not pts:
                continue
            st = styles[L]
            y = [r["jensen_kl"] / L for r in pts]
            band(ax, [r["steps"] for r in pts], y, [(r["jensen_kl_stderr"] or 0.0) / L for r in pts], color,
                 marker=st["marker"], linestyle=st["linestyle"], alpha=st["alpha"], markersize=3)
            shown += y
        tb = sorted({(r["steps"], r["thm42_log_ter_gap"], r["thm42_eps"]) for r in rows
                     if r["language"] == lang and r["thm42_log_ter_gap"] is not None})
        if tb:
            drawn["bound"] = True
            ax.plot([n for n, _, _ in tb], [g for _, g, _ in tb], color="k", linestyle="--", linewidth=0.8)
            shown += [g for _, g, _ in tb]
            log_v = tb[0][1] / (4 * tb[0][2])
            drawn["logv"] = True
            ax.axhspan(log_v, 1e6, color="0.85", zorder=0, linewidth=0)
            ax.axhline(log_v, color="0.5", linewidth=0.6)
        else:
            ax.text(0.98, 0.97, "Theorem 4.2: n-gram languages only", transform=ax.transAxes, ha="right",
                    va="top", fontsize=7)
        for L in lengths:
            b12 = sorted((r["steps"], r["jensen_kl_per_token_b12"]) for r in rows if r["language"] == lang
                         and r["length"] == L and _positive(r.get("jensen_kl_per_token_b12")))
            if b12:
                drawn["b12"] = True
                ax.plot(*zip(*b12), color="k", linestyle="none", marker=styles[L]["marker"], markersize=3,
                        markerfacecolor="none")
                shown += [v for _, v in b12]
        if shown:
            ax.set_ylim(min(shown) / 2, max(shown) * 2)
        ax.set_xlabel("steps N")
        ax.set_ylabel("E_tau KL(q||p(.|tau)) / L  [nats]")
        ax.set_title(lang)
    extra = length_handles(lengths, styles)
    if drawn["bound"]:
        extra.append(legend_key("Thm 4.2: 4 eps log|V|", color="k", linestyle="--", linewidth=0.8))
    if drawn["logv"]:
        extra.append(Patch(color="0.85",
                           label="above log|V|: the oracle sampler's KL(q||p)/L never gets there (vacuous)"))
    if drawn["b12"]:
        extra.append(legend_key("exact, under the B.12 schedule", color="k", linestyle="none", marker="o",
                                markerfacecolor="none", markersize=4))
    figure_legend(fig, axes, extra, ncol=3)
    return Plot("kl_bound_vs_steps", fig,
                "Per-token Jensen bound E_tau KL(q || p(.|tau)) / L >= KL(q || p)/L = log TER(p) - log TER(q), "
                "vs steps (log-log; 95% bands where Monte Carlo, cut at a twentieth of the estimate where they reach "
                "0). Dashed: Theorem 4.2's 4 eps log|V| with the smallest eps whose Lemma B.12 schedule fits in N "
                "steps (a bound for L >= L_0(eps, n) only, see the table); gray: above log|V|, where a bound says "
                "nothing. Open markers: the exact value under that B.12 schedule, where the language is a "
                "token-level Markov chain.")


def _plot_exact_small(exact: list[dict]) -> Plot:
    from ._style import figure_legend, language_panels, legend_key, length_handles

    fig, panels, elengths, estyles = language_panels(exact, lambda r: r["kl"] > 0)
    axes = [p.ax for p in panels]
    for ax, lang, color, series in panels:
        for L, pts in series.items():
            if not pts:
                continue
            x = [r["steps"] for r in pts]
            ax.plot(x, [r["kl"] / L for r in pts], color=color, marker=estyles[L]["marker"], markersize=3,
                    linestyle=estyles[L]["linestyle"])
            ax.plot(x, [r["kl_jensen_bound"] / L for r in pts], color="k", linestyle=estyles[L]["linestyle"],
                    linewidth=0.8, marker=estyles[L]["marker"], markersize=3, markerfacecolor="none")
        ax.set_xlabel("steps N")
        ax.set_ylabel("nats per token")
        ax.set_title(f"{lang}: exact, small L")
    extra = length_handles(elengths, estyles) + [
        legend_key("KL(q||p)/L, exact (language color)", color="0.35"),
        legend_key("E_tau KL(q||p(.|tau))/L (Lemma B.2's bound)", color="k", linewidth=0.8, marker="o",
                   markerfacecolor="none", markersize=3)]
    figure_legend(fig, axes, extra, ncol=4)
    return Plot("exact_kl_vs_jensen", fig,
                "Exact KL(q || p) of the sampler's true output law (a mixture over instances; DP over revealed "
                "words) vs the Jensen bound E_tau KL(q || p(.|tau)) of Lemma B.2 at small L: two different "
                "quantities, equal at N = 1 and apart by a growing factor as N grows.")


def _plot_steps_needed(needed: list[dict], grid: list[int], gap: float | None) -> Plot:
    """Steps needed vs L on log-log axes, one panel per criterion, with the 95% range where the
    criterion is Monte Carlo."""
    from ._style import figure_legend, language_color, legend_key, panel_grid

    fig, axes = panel_grid(2, width=4.6, height=3.4)
    langs = list(dict.fromkeys(r["language"] for r in needed))
    top = max(grid) if grid else None
    missed_any = False
    for ax, (crit, what) in zip(axes, (("jensen_kl", "Jensen bound E_tau KL(q||p(.|tau))/L"),
                                       ("gen_ppl", "|log(gen. ppl / data ppl)|"))):
        for k, lang in enumerate(langs):
            dodge = 2 ** (0.05 * (k - (len(langs) - 1) / 2))  # side by side, not on top of each other
            pts = [r for r in needed if r["language"] == lang]
            got = [r for r in pts if r[f"steps_needed_{crit}"] is not None]
            if got:
                y = [r[f"steps_needed_{crit}"] for r in got]
                mc = any(r[f"{crit}_monte_carlo"] for r in got)
                err = [[y_ - (r[f"steps_needed_{crit}_lo"] or y_) for y_, r in zip(y, got)],
                       [(r[f"steps_needed_{crit}_hi"] or top or y_) - y_ for y_, r in zip(y, got)]]
                ax.errorbar([r["length"] * dodge for r in got], y, yerr=err if mc else None, marker="o",
                            capsize=2, color=language_color(lang), markersize=4, linewidth=1,
                            label=lang)
            missed = [r["length"] * dodge for r in pts if r[f"steps_needed_{crit}"] is None]
            if missed and top:
                missed_any = True
                ax.plot(missed, [top * 1.4] * len(missed), linestyle="none", marker="^", markersize=5,
                        color=language_color(lang), markerfacecolor="none")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("length L")
        ax.set_ylabel("steps needed N")
        ax.set_title(f"{what} <= {gap}", fontsize=9)
    extra = [legend_key("not reached at the largest N", color="0.35", marker="^", linestyle="none",
                        markerfacecolor="none")] if missed_any else []
    figure_legend(fig, axes, extra, ncol=5)
    return Plot("steps_needed_vs_length", fig,
                "Smallest grid N from which the per-token gap to optimal stays within the gap, vs L (flat = Theorem "
                "4.2): left by the Jensen KL bound, right by |log(gen. ppl / data ppl)|. Where the criterion comes "
                "from Monte Carlo the bars give its 95% range: from the first N whose lower confidence limit meets "
                "the gap to the first from which the upper limit does; a point without bars is exact.")
