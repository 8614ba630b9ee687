"""Experiment 1 -- TER vs steps (the paper's Figure 1, top), with the oracle denoiser.

For each unpruned preset (every sequence has positive probability) and each length ``L``: the
generative perplexity ``exp(E_p[-log q(x)]/L)`` of the oracle factorized sampler at ``N`` steps
(Monte Carlo over sampled sequences, exact ``log q``, 95% band), the data's own perplexity
``exp(H(q)/L)``, and the per-token Jensen bound ``E_tau KL(q || p(.|tau)) / L`` -- an upper bound
on ``log TER(p) - log TER(q) = KL(q || p) / L`` (Lemma B.2), exact where the engine can compute
it. Theorem 4.2's bound ``4 eps log|V|`` (with ``eps`` solved from ``N``, for ``L >= L_0``) is
overlaid where ``theory`` provides it; it is a bound for its own schedule (Lemma B.12), the curves
use the configured one. Finally the number of steps needed to come within ``gap`` of optimal is
plotted against ``L``: Theorem 4.2 says it does not grow with ``L``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

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
    steps : numbers of steps ``N``.
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
    steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    samples: int = 64
    schedule: str = "linear"
    gap: float = 0.05
    exact_lengths: tuple[int, ...] = (4, 5)
    seed: int = 0

    @classmethod
    def tiny(cls) -> "Config":
        return cls(languages=("2gram",), lengths=(4, 8), steps=(1, 2, 4), samples=8, exact_lengths=(3,))

    @classmethod
    def full(cls) -> "Config":
        return cls(lengths=(64, 128, 256, 512, 1024, 2048),
                   steps=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048), samples=1000,
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
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
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
    grid = [(lang, L, N) for lang in cfg.languages for L in cfg.lengths for N in cfg.steps]
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
    egrid = [(lang, L, N) for lang in cfg.languages for L in cfg.exact_lengths for N in cfg.steps]
    for lang, L, N in progress_iter(egrid, progress, "ter: exact small L"):
        key = {"v": VERSION, "language": lang, "length": L, "steps": N, "schedule": cfg.schedule}
        e = attempt("exact KL(q||p) at small L", lambda: cache.get_or_compute(
            "ter-exact-small", key, lambda: eng.exact_small(eng.load_language(lang), eng.schedule_for(cfg.schedule, N), L)))
        if e is not None:
            exact_rows.append({"language": lang, "length": L, "steps": N, **e,
                               "jensen_over_kl": e["kl_jensen_bound"] / e["kl"] if e["kl"] > 0 else None})
    if exact_rows:
        out.tables["exact_small_length"] = exact_rows
        worst = max((r for r in exact_rows if r["jensen_over_kl"]), key=lambda r: r["jensen_over_kl"], default=None)
        if worst:
            out.notes.append(
                f"Lemma B.2 at small L (exact DP): E_tau KL(q||p(.|tau)) exceeds the true KL(q||p) by up to a factor "
                f"{worst['jensen_over_kl']:.3g} ({worst['language']}, L = {worst['length']}, N = {worst['steps']}); "
                "the bound is tight at N = 1.")
    parts.record(out)
    if any(r["gen_ppl"] is not None or r["jensen_kl"] is not None for r in rows):
        out.tables["points"] = rows
        out.tables["data_perplexity"] = data_rows
        out.tables["steps_needed"] = _steps_needed(cfg, rows, data_rows)
        flat = _flatness_note(out.tables["steps_needed"])
        if flat:
            out.notes.append(flat)
        regime = [r for r in rows if r["thm42_L0"] is not None]
        if regime:
            top = max(regime, key=lambda r: (r["steps"], r["language"]))
            valid = sum(bool(r["thm42_valid"]) for r in regime)
            out.notes.append(
                f"Theorem 4.2's regime: at N = {top['steps']} ({top['language']}) eps = {top['thm42_eps']:.4g} and "
                f"L_0(eps, n) = {top['thm42_L0']}; {valid} of {len(regime)} grid points have L >= L_0.")
    return out.finish(started)


def _steps_needed(cfg: Config, rows: list[dict], data_rows: list[dict]) -> list[dict]:
    """Smallest grid ``N`` whose per-token gap is <= ``cfg.gap`` (95% upper limit for MC values)."""
    data = {(d["language"], d["length"]): d for d in data_rows}
    out = []
    for lang in cfg.languages:
        for L in cfg.lengths:
            pts = sorted((r for r in rows if r["language"] == lang and r["length"] == L), key=lambda r: r["steps"])
            kl_n = ppl_n = None
            for r in pts:
                if kl_n is None and r["jensen_kl"] is not None:
                    upper = (r["jensen_kl"] + 1.96 * (r["jensen_kl_stderr"] or 0.0)) / L
                    if upper <= cfg.gap:
                        kl_n = r["steps"]
                d = data.get((lang, L))
                if ppl_n is None and r["gen_ppl"] is not None and d and d["data_ppl"]:
                    rel = abs(math.log(r["gen_ppl"] / d["data_ppl"]))
                    se = (r["gen_ppl_stderr"] or 0.0) / r["gen_ppl"] + (d["data_ppl_stderr"] or 0.0) / d["data_ppl"]
                    if rel + 1.96 * se <= cfg.gap:
                        ppl_n = r["steps"]
            out.append({"language": lang, "length": L, "gap": cfg.gap,
                        "steps_needed_jensen_kl": kl_n, "steps_needed_gen_ppl": ppl_n})
    return out


def _flatness_note(needed: list[dict]) -> str | None:
    parts = []
    for lang in sorted({r["language"] for r in needed}):
        vals = [(r["length"], r["steps_needed_jensen_kl"]) for r in needed if r["language"] == lang]
        if all(v is not None for _, v in vals) and vals:
            parts.append(f"{lang}: " + ", ".join(f"L={L}: N={v}" for L, v in vals))
    if not parts:
        return None
    return ("Steps needed for E_tau KL(q||p(.|tau))/L <= gap (Theorem 4.2 predicts no growth with L): "
            + "; ".join(parts) + ".")


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import band, language_color, length_styles, new_figure, legend

    rows = result.tables.get("points", [])
    if not rows:
        return []
    data = {(d["language"], d["length"]): d for d in result.tables.get("data_perplexity", [])}
    langs = list(dict.fromkeys(r["language"] for r in rows))
    lengths = sorted({r["length"] for r in rows})
    styles = length_styles(lengths)
    plots = []

    if any(r["gen_ppl"] is not None for r in rows):
        fig, axes = new_figure(ncols=len(langs))
        for ax, lang in zip(axes[0], langs):
            color = language_color(lang)
            for L in lengths:
                pts = [r for r in sorted(rows, key=lambda r: r["steps"])
                       if r["language"] == lang and r["length"] == L and r["gen_ppl"] is not None]
                if not pts:
                    continue
                st = styles[L]
                band(ax, [r["steps"] for r in pts], [r["gen_ppl"] for r in pts], [r["gen_ppl_stderr"] for r in pts],
                     color, label=f"L={L}", marker=st["marker"], linestyle=st["linestyle"], alpha=st["alpha"],
                     markersize=3)
                d = data.get((lang, L))
                if d and d["data_ppl"] is not None:
                    ax.axhline(d["data_ppl"], color=color, linewidth=0.8, linestyle=":", alpha=st["alpha"])
                bound = [(r["steps"], d["data_ppl"] * math.exp(r["thm42_log_ter_gap"])) for r in pts
                         if d and d["data_ppl"] and r["thm42_log_ter_gap"] is not None]
                if bound and L == lengths[-1]:
                    ax.plot(*zip(*bound), color="k", linewidth=0.8, linestyle="--", label="Thm 4.2 TER bound")
            shown = [r["gen_ppl"] for r in rows if r["language"] == lang and r["gen_ppl"] is not None]
            shown += [d["data_ppl"] for (lg, _), d in data.items() if lg == lang and d["data_ppl"] is not None]
            if shown:  # the curves set the scale; a bound far above them leaves the frame
                lo, hi = min(shown), max(shown)
                ax.set_ylim(lo - 0.08 * (hi - lo) - 1e-9, hi + 0.25 * (hi - lo) + 1e-9)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("steps N")
            ax.set_ylabel("generative perplexity")
            ax.set_title(lang)
            legend(ax, fontsize=7)
        plots.append(Plot("gen_ppl_vs_steps", fig,
                          "Generative perplexity of the oracle factorized sampler vs steps (95% bands); dotted: "
                          "the data's own perplexity exp(H/L); dashed: Theorem 4.2's TER bound exp(H/L + 4 eps log|V|) "
                          "(a bound on TER, for the B.12 schedule and L >= L_0, drawn for comparison)."))

    if any(r["jensen_kl"] is not None for r in rows):
        fig, axes = new_figure(ncols=len(langs))
        for ax, lang in zip(axes[0], langs):
            color = language_color(lang)
            ax.set_yscale("log")
            for L in lengths:
                pts = [r for r in sorted(rows, key=lambda r: r["steps"])
                       if r["language"] == lang and r["length"] == L and r["jensen_kl"] is not None
                       and r["jensen_kl"] > 0]
                if not pts:
                    continue
                st = styles[L]
                band(ax, [r["steps"] for r in pts], [r["jensen_kl"] / L for r in pts],
                     [r["jensen_kl_stderr"] / L for r in pts], color, label=f"L={L}", marker=st["marker"],
                     linestyle=st["linestyle"], alpha=st["alpha"], markersize=3)
            tb = sorted({(r["steps"], r["thm42_log_ter_gap"]) for r in rows if r["language"] == lang
                         and r["thm42_log_ter_gap"] is not None})
            if tb:
                ax.plot(*zip(*tb), color="k", linestyle="--", linewidth=0.8, label="Thm 4.2: 4 eps log|V|")
            for L in lengths:
                b12 = sorted((r["steps"], r["jensen_kl_per_token_b12"]) for r in rows if r["language"] == lang
                             and r["length"] == L and r.get("jensen_kl_per_token_b12"))
                if b12:
                    ax.plot(*zip(*b12), color="k", linestyle="none", marker=styles[L]["marker"], markersize=3,
                            markerfacecolor="none", label=f"exact, B.12 schedule, L={L}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("steps N")
            ax.set_ylabel("E_tau KL(q||p(.|tau)) / L  [nats]")
            ax.set_title(lang)
            legend(ax, fontsize=7)
        plots.append(Plot("kl_bound_vs_steps", fig,
                          "Per-token Jensen bound E_tau KL(q || p(.|tau)) / L >= KL(q || p)/L = log TER(p) - "
                          "log TER(q), vs steps (log-log; 95% bands where Monte Carlo, cut at a twentieth of the estimate "
                          "where they reach 0). Dashed: Theorem 4.2's "
                          "4 eps log|V| with the smallest eps whose Lemma B.12 schedule fits in N steps (a bound for "
                          "L >= L_0(eps, n) only, see the table); open markers: the exact value under that B.12 "
                          "schedule, where the language is a token-level Markov chain."))

    exact = result.tables.get("exact_small_length", [])
    if exact:
        elangs = list(dict.fromkeys(r["language"] for r in exact))
        elengths = sorted({r["length"] for r in exact})
        estyles = length_styles(elengths)
        fig, axes = new_figure(ncols=len(elangs))
        for ax, lang in zip(axes[0], elangs):
            color = language_color(lang)
            for L in elengths:
                pts = sorted((r for r in exact if r["language"] == lang and r["length"] == L and r["kl"] > 0),
                             key=lambda r: r["steps"])
                if not pts:
                    continue
                x = [r["steps"] for r in pts]
                ax.plot(x, [r["kl"] / L for r in pts], color=color, marker=estyles[L]["marker"], markersize=3,
                        label=f"KL(q||p)/L, L={L}")
                ax.plot(x, [r["kl_jensen_bound"] / L for r in pts], color="k", linestyle="--",
                        marker=estyles[L]["marker"], markersize=3, markerfacecolor="none",
                        label=f"E_tau KL(q||p(.|tau))/L, L={L}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("steps N")
            ax.set_ylabel("nats per token")
            ax.set_title(f"{lang}: exact, small L")
            legend(ax, fontsize=6)
        plots.append(Plot("exact_kl_vs_jensen", fig,
                          "Exact KL(q || p) of the sampler's true output law (a mixture over instances; DP over revealed "
                          "words) vs the Jensen bound E_tau KL(q || p(.|tau)) of Lemma B.2 at small L: two different "
                          "quantities, equal at N = 1 and apart by a growing factor as N grows."))

    needed = result.tables.get("steps_needed", [])
    if any(r["steps_needed_jensen_kl"] is not None or r["steps_needed_gen_ppl"] is not None for r in needed):
        fig, axes = new_figure()
        ax = axes[0, 0]
        for lang in langs:
            pts = [r for r in needed if r["language"] == lang]
            kl = [(r["length"], r["steps_needed_jensen_kl"]) for r in pts if r["steps_needed_jensen_kl"]]
            gp = [(r["length"], r["steps_needed_gen_ppl"]) for r in pts if r["steps_needed_gen_ppl"]]
            if kl:
                ax.plot(*zip(*kl), marker="o", color=language_color(lang), label=f"{lang} (KL bound)")
            if gp:
                ax.plot(*zip(*gp), marker="s", linestyle="--", color=language_color(lang), label=f"{lang} (gen. ppl)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("length L")
        ax.set_ylabel(f"steps needed (gap {result.config.get('gap')})")
        legend(ax, fontsize=7)
        plots.append(Plot("steps_needed_vs_length", fig,
                          "Smallest N on the grid within the per-token gap of optimal, vs L (flat = Theorem 4.2)."))
    return plots
