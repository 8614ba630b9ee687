"""Experiment "The decoders people run": LLaDA, Fast-dLLM, EB-Sampler and ReMDM with the oracle.

Every decoder of :mod:`numerics.sampling.decoders` runs with the exact oracle denoiser (the
generic path; the interval language and the bigram presets through the batch oracles of
:mod:`numerics.sampling.batch_oracles`, equal to the forward-backward oracle)
beside today's ``random`` (i.i.d. schedule) and ``topk`` samplers. The x axis is what a
practitioner pays: network calls per sequence (``llada``/``remdm``: ``N``; ``fast-dllm``/``eb``:
the realized mean; ``random``: the ``ddpm_cache`` expectation; ``topk``: its steps).

* Monte Carlo (``lengths``): on ``2gram`` the TER side as ``log gen. perplexity - log TER(q)``
  (0 for an exact sampler; exact ``log q``), on ``2gram-pruned`` and on the interval language
  (Theorem 4.4, ``l = interval``) the SER with its Clopper-Pearson interval.
* Calls needed (``growth_lengths``, interval language): for each LLaDA configuration (block
  length ``B``, remasking) the fewest calls on its grid of ``N`` whose SER upper limit meets
  ``ser_target``, against ``L`` -- does semi-autoregressive decoding change Theorem 4.4's linear
  growth? The random sampler's value is exact (closed form, :func:`numerics.exact.interval.interval_ser`).
* Exact (``exact_language`` at ``exact_length``, :mod:`numerics.exact.decoders`): forward KL,
  reverse KL and TV of each decoder at ``N = L``; LLaDA low-confidence at ``T = 1`` against
  ``random`` remasking (which is exactly ``q`` at ``N = L``) measures the bias of draw-then-select.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

import numerics.sampling.montecarlo as mcm
from numerics.exact.decoders import decoder_exact
from numerics.exact.interval import interval_ser
from numerics.inference import log_q
from numerics.languages.interval import IntervalLanguage
from numerics.sampling import adaptive as ad
from numerics.sampling import decoders as dec
from numerics.sampling.batch_oracles import fastest_oracle
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.registry import DECODERS, decoder_names
from numerics.sampling.samplers import sample_oracle

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

NAME = "decoders"
TITLE = "The decoders people run: LLaDA, Fast-dLLM, EB-Sampler, ReMDM"
VERSION = 1
FAMILIES = ("random", "topk", *decoder_names("decoder"))  # the registry's decoders beside random and topk


@dataclass(frozen=True)
class Config:
    """Sizes of the experiment.

    Attributes
    ----------
    languages : presets of the Monte Carlo curves (``interval-l{l}`` = the direct interval language, ``l = interval``,
        which must be its ``l``; ``l = 4`` divides the power-of-two lengths and block lengths).
    lengths : ``L`` of those curves.
    growth_lengths : ``L`` of the interval language's calls-needed question.
    samples : Monte Carlo samples per point.
    blocks : LLaDA block lengths (``0`` = ``L``).
    llada_fractions : LLaDA's ``N = f L`` (rounded up to a multiple of the number of blocks).
    thresholds, factors : Fast-dLLM's ``tau`` and ``f``.
    eb_gammas : EB-Sampler's bounds (nats).
    remdm_etas : ReMDM-cap's ``eta`` at ``N = L``.
    random_fractions, topk_fractions : ``N = f L`` of the random and topk samplers.
    ser_target : SER level of the questions.
    exact_language, exact_length : the exact comparison at ``N = L``.
    seed : seed of every random draw.
    """

    languages: tuple[str, ...] = ("2gram", "2gram-pruned", "interval-l4")
    interval: int = 4
    lengths: tuple[int, ...] = (64,)
    growth_lengths: tuple[int, ...] = (32, 64)
    samples: int = 64
    blocks: tuple[int, ...] = (8, 32, 0)
    llada_fractions: tuple[float, ...] = (0.25, 1.0)
    thresholds: tuple[float, ...] = (0.7, 0.9)
    factors: tuple[float, ...] = (1.0,)
    eb_gammas: tuple[float, ...] = (1.0,)
    remdm_etas: tuple[float, ...] = (0.05,)
    random_fractions: tuple[float, ...] = (0.25, 0.5, 1.0)
    topk_fractions: tuple[float, ...] = (0.25, 1.0)
    ser_target: float = 0.1
    exact_language: str = "2gram"
    exact_length: int = 3
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(languages=("2gram", "interval-l4"), lengths=(8,), growth_lengths=(4, 8), samples=8, blocks=(4, 0),
                   llada_fractions=(1.0,), thresholds=(0.9,), factors=(), random_fractions=(1.0,),
                   topk_fractions=(1.0,), exact_length=2, ser_target=0.4)

    @classmethod
    def full(cls) -> Config:
        return cls(lengths=(64, 256), growth_lengths=(32, 64, 128, 256), samples=1000,
                   llada_fractions=(0.125, 0.25, 0.5, 1.0), thresholds=(0.5, 0.7, 0.8, 0.9, 0.95),
                   factors=(0.5, 1.0, 2.0), eb_gammas=(0.1, 0.5, 1.0, 2.0), remdm_etas=(0.02, 0.05, 0.1))


def _seed(cfg: Config, *parts) -> list[int]:
    return [cfg.seed, VERSION] + [p if isinstance(p, int) else sum(map(ord, str(p))) for p in parts]


def _language(cfg: Config, name: str):
    return IntervalLanguage(cfg.interval) if name == _interval(cfg) else eng.load_language(name)


def _interval(cfg: Config) -> str:
    return f"interval-l{cfg.interval}"


def _denoiser(language):
    """The fastest exact oracle of ``language`` (batch interval or bigram marginals, else the forward-backward)."""
    return fastest_oracle(language)


def _llada_steps(L: int, B: int, f: float) -> int:
    nb = L // B
    return max(nb, int(math.ceil(f * L / nb)) * nb)


def _specs(cfg: Config, L: int, lengths_only_llada: bool = False) -> list[tuple[str, str, dict]]:
    """``(family, config label, parameters)`` of every sampler at ``L``."""
    out = []
    for B0 in cfg.blocks:
        B = L if B0 == 0 or B0 > L else B0
        for rem in dec.REMASKINGS:
            for N in sorted({_llada_steps(L, B, f) for f in cfg.llada_fractions}):
                out.append(("llada", f"llada B={B if B < L else 'L'} {rem} N={N}",
                            {"steps": N, "block_length": B, "remasking": rem}))
    if lengths_only_llada:
        return list({label: (fam, label, p) for fam, label, p in out}.values())
    for tau in cfg.thresholds:
        out.append(("fast-dllm", f"fast-dllm tau={tau:g}", {"threshold": tau}))
    for f in cfg.factors:
        out.append(("fast-dllm", f"fast-dllm f={f:g}", {"factor": f}))
    for g in cfg.eb_gammas:
        out.append(("eb", f"eb gamma={g:g}", {"gamma": g}))
    for eta in cfg.remdm_etas:
        out.append(("remdm", f"remdm-cap eta={eta:g} N=L", {"eta": eta, "steps": L}))
    for f in cfg.random_fractions:
        out.append(("random", f"random N={max(1, round(f * L))}", {"steps": max(1, round(f * L))}))
    for f in cfg.topk_fractions:
        out.append(("topk", f"topk N={max(1, round(f * L))}", {"steps": max(1, round(f * L))}))
    return list({label: (fam, label, p) for fam, label, p in out}.values())  # block L and 32 = L coincide


def _decoder(family: str, params: dict):
    p = dict(params)
    steps = p.pop("steps", None)
    spec = DECODERS[family]
    schedule = eng.schedule_for("linear", steps) if "schedule" in spec.needs else None
    return spec.build(p, steps=steps if "steps" in spec.needs else None, schedule=schedule)


def _mc_point(cfg: Config, lang: str, L: int, family: str, params: dict) -> dict:
    """SER (Clopper-Pearson), generative perplexity against TER(q), and calls of one sampler by Monte Carlo."""
    language = _language(cfg, lang)
    n = cfg.samples
    rng = np.random.default_rng(_seed(cfg, lang, L, family, str(sorted(params.items()))))
    if family == "random":
        schedule = eng.schedule_for("linear", params["steps"])
        calls = schedule.expected_nfe(L, 1)
        if isinstance(language, IntervalLanguage):  # exact closed form
            ser = float(interval_ser(schedule, L, cfg.interval).probability)
            return {"calls": calls, "ser": ser, "ser_upper": ser, "ppl_gap": None, "method": "exact (closed form)"}
        tokens = sample_oracle(language, schedule, n, L, rng).tokens
    elif family == "topk":
        sampler = ad.make_sampler("topk", schedule=eng.schedule_for("linear", params["steps"]))
        oracle = (ad.IntervalOracle(language) if isinstance(language, IntervalLanguage)  # the fast oracle kernels
                  else OracleDenoiser(language, strict=False))
        run = sampler.sample(oracle, n, L, rng)
        tokens, calls = run.tokens, float(run.calls.mean())
    else:
        run = _decoder(family, params).sample(_denoiser(language), n, L, rng)
        tokens, calls = run.tokens, float(run.calls.mean())
    loglik = log_q(language, tokens)
    ser = eng.estimate_json(mcm.ser_from_loglik(loglik))
    gap = None
    if np.all(np.isfinite(loglik)):
        from numerics.exact.entropy import sequence_entropy

        H = sequence_entropy(language, L).value
        gap = float(np.mean(-loglik) / L - H / L)  # log gen. perplexity - log TER(q)
    return {"calls": float(calls), "ser": ser["value"], "ser_upper": ser.get("upper"), "ppl_gap": gap,
            "method": f"mc ({n} samples)"}


def _exact_point(cfg: Config, family: str, params: dict) -> dict:
    language = eng.load_language(cfg.exact_language)
    r = decoder_exact(language, cfg.exact_length, _decoder(family, params), "dp")
    fin = (lambda x: float(x) if math.isfinite(x) else None)
    return {"calls": r.expected_calls.value, "kl": fin(r.metrics.kl.value), "reverse_kl": fin(r.divergences.reverse_kl.value),
            "tv": r.divergences.tv.value, "ser": r.metrics.ser.value}


def _exact_specs(cfg: Config) -> list[tuple[str, str, dict]]:
    L = cfg.exact_length
    return [("llada", "llada low-confidence T=1", {"steps": L, "remasking": "low-confidence"}),
            ("llada", "llada random T=1", {"steps": L, "remasking": "random"}),
            ("llada", "llada low-confidence T=0.5", {"steps": L, "remasking": "low-confidence", "temperature": 0.5}),
            ("fast-dllm", f"fast-dllm tau={cfg.thresholds[-1]:g}", {"threshold": cfg.thresholds[-1]}),
            ("eb", f"eb gamma={cfg.eb_gammas[0]:g}", {"gamma": cfg.eb_gammas[0]}),
            ("remdm", f"remdm-cap eta={cfg.remdm_etas[0]:g}", {"eta": cfg.remdm_etas[0], "steps": L})]


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    attempt = parts.attempt

    grid = [(lang, L, s) for lang in cfg.languages for L in cfg.lengths for s in _specs(cfg, L)]
    iv = _interval(cfg)
    grid += [(iv, L, s) for L in cfg.growth_lengths if L not in cfg.lengths or iv not in cfg.languages
             for s in _specs(cfg, L, lengths_only_llada=True)]
    grid += [(iv, L, ("random", f"random N={N}", {"steps": N})) for L in cfg.growth_lengths for N in _random_grid(L)]
    grid = list({(lang, L, s[1]): (lang, L, s) for lang, L, s in grid}.values())  # each point once
    rows = []
    for lang, L, (family, label, params) in progress_iter(grid, progress, "decoders: Monte Carlo"):
        key = {"v": VERSION, "language": lang, "length": L, "family": family, "params": params,
               "samples": cfg.samples, "seed": cfg.seed, "l": cfg.interval}
        m = attempt(f"{label} on {lang}", lambda: cache.get_or_compute(
            "decoders-mc", key, lambda: _mc_point(cfg, lang, L, family, params)))
        if m is not None:
            rows.append({"language": lang, "length": L, "family": family, "config": label, **params, **m})
    if rows:
        out.tables["monte_carlo"] = _uniform_rows(rows)
    erows = []
    for family, label, params in progress_iter(_exact_specs(cfg), progress, "decoders: exact"):
        key = {"v": VERSION, "language": cfg.exact_language, "length": cfg.exact_length, "family": family,
               "params": params}
        e = attempt(f"exact {label}", lambda: cache.get_or_compute(
            "decoders-exact", key, lambda: _exact_point(cfg, family, params)))
        if e is not None:
            erows.append({"language": cfg.exact_language, "length": cfg.exact_length, "config": label, **e})
    if erows:
        out.tables["exact"] = erows
    needed = _calls_needed(cfg, rows)
    if needed:
        out.tables["interval_calls_needed"] = needed
    for note in (_fewest_calls(cfg, rows), _blocks(cfg, rows), _growth(cfg, needed), _bias(erows),
                 _mode_seeking(rows)):
        if note:
            out.notes.append(note)
    parts.record(out)
    return out.finish(started)


def _random_grid(L: int) -> list[int]:
    """``N`` of the exact random-sampler search on the interval language: doublings up to ``16 L``."""
    return [N for N in (2**k for k in range(1, 20)) if N <= 16 * L]


def _uniform_rows(rows: list[dict]) -> list[dict]:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return [{k: r.get(k) for k in keys} for r in rows]


def _calls_needed(cfg: Config, rows: list[dict]) -> list[dict]:
    """Interval language: per LLaDA configuration (and random), the fewest calls whose SER upper limit meets the target."""
    out = []
    iv = _interval(cfg)
    for L in sorted({r["length"] for r in rows if r["language"] == iv}):
        at = [r for r in rows if r["language"] == iv and r["length"] == L]
        groups: dict[str, list[dict]] = {}
        for r in at:
            if r["family"] == "llada":
                B = "L" if r["block_length"] == L else str(r["block_length"])
                groups.setdefault(f"llada B={B} {r['remasking']}", []).append(r)
            elif r["family"] == "random":
                groups.setdefault("random", []).append(r)
        for name, rs in groups.items():
            ok = [r for r in rs if r["ser_upper"] is not None and r["ser_upper"] <= cfg.ser_target]
            best = min(ok, key=lambda r: r["calls"], default=None)
            out.append({"length": L, "decoder": name, "calls_needed": best["calls"] if best else None,
                        "config": best["config"] if best else None,
                        "calls_per_position": best["calls"] / L if best else None})
    return out


def _fewest_calls(cfg: Config, rows: list[dict]) -> str | None:
    parts = []
    for lang in [x for x in cfg.languages if x != "2gram"]:
        L = max((r["length"] for r in rows if r["language"] == lang), default=None)
        ok = [r for r in rows if r["language"] == lang and r["length"] == L and r["ser_upper"] is not None
              and r["ser_upper"] <= cfg.ser_target]
        if not ok:
            parts.append(f"on {lang} (L = {L}) no configuration of the grid reaches SER <= {cfg.ser_target:g}")
            continue
        best = min(ok, key=lambda r: r["calls"])
        rand = [r for r in ok if r["family"] == "random"]
        tail = (f" (the random sampler needs {min(r['calls'] for r in rand):.1f})" if rand else "")
        parts.append(f"on {lang} (L = {L}) {best['config']} with {best['calls']:.1f} calls per sequence, SER "
                     f"{best['ser']:.3g} (upper limit {best['ser_upper']:.3g}){tail}")
    if not parts:
        return None
    return (f"Fewest calls for SER <= {cfg.ser_target:g} (Clopper-Pearson upper limit, {cfg.samples} samples; "
            "random on the interval language exact): " + "; ".join(parts) + ".")


def _blocks(cfg: Config, rows: list[dict]) -> str | None:
    """SER of LLaDA at its smallest N against the block length, per SER language (largest L)."""
    parts = []
    for lang in [x for x in cfg.languages if x != "2gram"]:
        ll = [r for r in rows if r["language"] == lang and r["family"] == "llada"]
        if not ll:
            continue
        L = max(r["length"] for r in ll)
        N = min(r["steps"] for r in ll if r["length"] == L)
        at = sorted((r for r in ll if r["length"] == L and r["steps"] == N), key=lambda r: -r["block_length"])
        for rem in dec.REMASKINGS:
            pts = [f"{r['ser']:.3g} (B = {'L' if r['block_length'] == L else r['block_length']})"
                   for r in at if r["remasking"] == rem]
            if pts:
                parts.append(f"{lang} (L = {L}, N = {N}), {rem}: " + ", ".join(pts))
    if not parts:
        return None
    return ("Block length at a fixed budget (LLaDA at its smallest N, SER by Monte Carlo): " + "; ".join(parts)
            + ". Within a block the same number of calls must reveal its B neighbouring positions, so a smaller "
              "block puts dependent neighbours into the same call more often.")


def _growth(cfg: Config, needed: list[dict]) -> str | None:
    names = list(dict.fromkeys(r["decoder"] for r in needed))
    parts, slopes = [], {}
    for name in names:
        pts = sorted((r["length"], r["calls_needed"]) for r in needed if r["decoder"] == name and r["calls_needed"])
        if len(pts) < 2:
            continue
        x, y = np.log(np.array(pts, dtype=float)).T
        slopes[name] = float(np.polyfit(x, y, 1)[0])
        parts.append(f"{name}: " + ", ".join(f"{c / L:.2f} L at L = {L}" for L, c in pts)
                     + f" (exponent {slopes[name]:.2f})")
    if not parts:
        return None
    blocked = {n: v for n, v in slopes.items() if n.startswith("llada") and "B=L" not in n}
    verdict = ("No: every block length keeps calls growing linearly in L (fitted exponents "
               f"{min(blocked.values()):.2f} to {max(blocked.values()):.2f})" if blocked and min(blocked.values()) > 0.9
               else "Not linear on this grid for " + ", ".join(n for n, v in blocked.items() if v <= 0.9)
               if blocked else "No blocked configuration reached the target at two lengths")
    return (f"Does semi-autoregressive decoding change Theorem 4.4's linear growth? {verdict}. Interval language "
            f"(l = {cfg.interval}), SER <= {cfg.ser_target:g}, calls needed on each configuration's N grid (upper "
            "limits at grid resolution): " + "; ".join(parts) + ".")


def _bias(erows: list[dict]) -> str | None:
    by = {r["config"]: r for r in erows}
    lc, rnd = by.get("llada low-confidence T=1"), by.get("llada random T=1")
    if not lc or not rnd:
        return None
    L = lc["length"]
    return (f"Low-confidence remasking at T = 1 is biased from the marginals: on {lc['language']} at L = {L} with "
            f"N = L (one position per call, where random remasking samples q exactly: TV = {rnd['tv']:.2g}), its exact "
            f"law has TV(p, q) = {lc['tv']:.3f}, KL(q||p) = {_fmt(lc['kl'])} and KL(p||q) = {_fmt(lc['reverse_kl'])} "
            "nats: keeping the most probable draw favours probable values over the marginal law.")


def _mode_seeking(rows: list[dict]) -> str | None:
    """On 2gram at the largest L, the per-token log generative perplexity gap at one position per call."""
    tr = [r for r in rows if r["language"] == "2gram" and r["ppl_gap"] is not None]
    if not tr:
        return None
    L = max(r["length"] for r in tr)
    one = [r for r in tr if r["length"] == L and r["family"] in ("llada", "fast-dllm", "eb")
           and (r["family"] != "llada" or r["steps"] == L)]
    if not one:
        return None
    text = ", ".join(f"{r['config']} {r['ppl_gap']:+.3f}" for r in one)
    return (f"Monte Carlo side of the bias (2gram, L = {L}, about one position per call): log generative perplexity "
            f"minus log TER(q), nats per token (0 for a sampler of q; negative = outputs more probable than q's "
            f"typical sequences): {text}.")


def _fmt(x) -> str:
    return "inf" if x is None else f"{x:.3f}"


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import legend, new_figure

    colors = {"random": "#7f7f7f", "topk": "#1f77b4", "llada": "#d62728", "fast-dllm": "#ff7f0e", "eb": "#2ca02c",
              "remdm": "#9467bd"}
    rows = result.tables.get("monte_carlo", [])
    panels = list(dict.fromkeys((r["language"], r["length"]) for r in rows))
    plots = []
    if panels:
        fig, axes = new_figure(ncols=len(panels))
        for ax, (lang, L) in zip(axes[0], panels):
            pr = [r for r in rows if r["language"] == lang and r["length"] == L]
            y = "ppl_gap" if lang == "2gram" else "ser"
            for fam in FAMILIES:
                pts = sorted((r["calls"], r[y]) for r in pr if r["family"] == fam and r[y] is not None)
                if pts:
                    ax.plot(*zip(*pts), marker="o", markersize=3, linestyle="" if fam != "random" else "-",
                            color=colors.get(fam, "k"), label=fam)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("network calls per sequence")
            ax.set_ylabel("log gen. ppl - log TER(q)" if y == "ppl_gap" else "SER")
            ax.set_title(f"{lang}, L = {L}")
            legend(ax, fontsize=6)
        plots.append(Plot("error_vs_calls", fig, "Error vs network calls of every decoder with the oracle (Monte "
                          "Carlo; the random sampler on the interval language exact)."))
    needed = result.tables.get("interval_calls_needed", [])
    if needed:
        fig, axes = new_figure(ncols=1)
        ax = axes[0, 0]
        for name in dict.fromkeys(r["decoder"] for r in needed):
            pts = sorted((r["length"], r["calls_needed"]) for r in needed if r["decoder"] == name and r["calls_needed"])
            if pts:
                ax.plot(*zip(*pts), marker="o", label=name)
        Ls = sorted({r["length"] for r in needed})
        ax.plot(Ls, Ls, color="k", linestyle=":", linewidth=0.8, label="calls = L")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("length L")
        ax.set_ylabel("calls for the SER target")
        legend(ax, fontsize=6)
        plots.append(Plot("interval_calls_needed", fig, "Calls needed vs L on Theorem 4.4's language for LLaDA's "
                          "block lengths and remasking modes, and the random sampler."))
    return plots
