"""Experiment "Beyond random order" -- error vs *denoiser calls* for the random and the adaptive samplers.

Every sampler of :mod:`numerics.sampling.adaptive` runs with the oracle denoiser: ``random`` and
``topk`` at ``N`` steps, ``threshold`` (max-prob ``>= gamma``) and ``entropy-sum`` (cumulative
entropy ``<= gamma`` nats) at a grid of ``gamma``. The x axis is what a practitioner pays: the
expected denoiser calls per sequence (the ``ddpm_cache`` count ``E[NFE]`` of the random sampler,
the realized steps of an adaptive rule).

* TER (``2gram``, ``hmm``): ``KL(q || p) / L`` (``log TER(p) - log TER(q)``). Exact at a tiny
  ``L`` for every sampler (``numerics.exact.dp`` for random, ``numerics.exact.adaptive`` for the
  rules). At ``mc_length`` the adaptive rules' *true* KL by the chain-rule identity (I1) along
  ``x ~ q`` (Monte Carlo); for the random sampler only the Jensen bound ``E_tau KL(q || p(.|tau))``
  (exact for a token chain), an upper bound, drawn dashed.
* SER (``2gram-pruned``, and ``interval``, Theorem 4.4's language): exact at tiny ``L`` (the
  ``interval-l3`` preset), Monte Carlo at ``mc_length``, each with the certificate
  ``SER <= 1 - exp(-KL)`` (identity (I3) of ``docs/methods/adaptive.md``, ``theory.related.ser_certificate``;
  flagged where vacuous).
* The question: on ``interval`` (``l = 5``), the fewest calls for which a sampler reaches
  ``SER <= ser_target`` (Clopper-Pearson upper limit for Monte Carlo), against ``L``. For the
  random sampler exactly (the closed form of :mod:`numerics.exact.interval`, smallest ``N`` by
  search); for each adaptive family the cheapest configuration on its grid.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

import numerics.exact.adaptive as ex
import numerics.sampling.adaptive as ad
import numerics.sampling.montecarlo as mcm
from numerics.exact import dp
from numerics.inference import log_q
from numerics.languages.interval import IntervalLanguage
from numerics.sampling.registry import DECODERS, decoder_names
from theory import related

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter, stored_config

NAME = "adaptive"
TITLE = "Beyond random order: adaptive samplers, error vs denoiser calls"
VERSION = 1
FAMILIES = decoder_names("random") + decoder_names("adaptive")  # the registry's random order and adaptive rules


@dataclass(frozen=True)
class Config:
    """Sizes of the experiment.

    Attributes
    ----------
    ter_languages, ser_languages : presets for KL/TER and for SER (the interval language is added).
    exact_length : ``L`` of the exact curves of the presets (``V^L`` outputs).
    interval_exact_l, interval_exact_length : the small interval language (``interval-l{l}``) exact at this ``L``.
    mc_length, samples : Monte Carlo curves.
    n_steps : ``N`` of random and topk (those above ``L`` are dropped).
    thresholds : ``gamma`` of the threshold rule (max-prob).
    entropy_bounds : ``gamma`` (nats) of the entropy-sum rule.
    interval, interval_lengths, interval_samples : the Theorem 4.4 language and the lengths of the question.
    interval_topk_fractions : topk on the interval language at ``N = f L``.
    ser_target : SER level of the question.
    schedule : schedule family of random and topk.
    seed : seed of every random draw.
    """

    ter_languages: tuple[str, ...] = ("2gram", "hmm")
    ser_languages: tuple[str, ...] = ("2gram-pruned",)
    exact_length: int = 3
    interval_exact_l: int = 3
    interval_exact_length: int = 6
    mc_length: int = 32
    samples: int = 200
    n_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    thresholds: tuple[float, ...] = (0.3, 0.5, 0.7, 0.9)
    entropy_bounds: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)
    interval: int = 5
    interval_lengths: tuple[int, ...] = (20, 40, 80, 160)
    interval_samples: int = 200
    interval_topk_fractions: tuple[float, ...] = (0.25, 0.5, 1.0)
    ser_target: float = 0.05
    schedule: str = "linear"
    seed: int = 0

    @classmethod
    def tiny(cls) -> Config:
        return cls(ter_languages=("2gram",), exact_length=2, interval_exact_length=3, mc_length=8, samples=8,
                   n_steps=(1, 2, 4), thresholds=(0.5, 0.9), entropy_bounds=(0.5, 2.0), interval_lengths=(10, 20),
                   interval_samples=20, interval_topk_fractions=(0.5, 1.0), ser_target=0.2)

    @classmethod
    def full(cls) -> Config:
        return cls(exact_length=4, mc_length=128, samples=1000, n_steps=(1, 2, 4, 8, 16, 32, 64, 128),
                   thresholds=(0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95), entropy_bounds=(0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0),
                   interval_lengths=(20, 40, 80, 160, 320, 640), interval_samples=1000,
                   interval_topk_fractions=(0.25, 0.5, 0.75, 1.0))


def _seed(cfg: Config, *parts: str | float) -> list[int]:
    return [cfg.seed, VERSION] + [p if isinstance(p, int) else sum(map(ord, str(p))) for p in parts]


def _specs(cfg: Config, L: int) -> list[tuple[str, float]]:
    """``(family, parameter)`` of every sampler at length ``L``: ``N`` for random/topk, ``gamma`` otherwise."""
    steps = sorted({min(N, L) for N in cfg.n_steps})
    return ([("random", N) for N in steps] + [("topk", N) for N in steps]
            + [("threshold", g) for g in cfg.thresholds] + [("entropy-sum", g) for g in cfg.entropy_bounds])


def _sampler(cfg: Config, family: str, param: float):
    if "schedule" in DECODERS[family].needs:  # random and topk: N steps of the schedule
        return ad.make_sampler(family, schedule=eng.schedule_for(cfg.schedule, int(param)))
    return ad.make_sampler(family, gamma=float(param))


def _language(name: str):
    """A preset, or the direct interval language (``interval-direct-l{l}``) for the fast interval kernel."""
    if name.startswith("interval-direct-l"):
        return IntervalLanguage(int(name.rsplit("l", 1)[1]))
    return eng.load_language(name)


def _certificate(kl: float | None) -> dict:
    """The SER certificate ``1 - exp(-KL)`` of (I3) (``theory.related.ser_certificate``) and whether it is vacuous.

    A Monte Carlo KL estimate below 0 (a KL near 0 estimated with noise) has no certificate: ``None``.
    """
    if kl is None:
        return {"certificate": None, "certificate_vacuous": None}
    try:
        bound = related.ser_certificate(kl)
    except ValueError:  # a negative Monte Carlo estimate of a KL
        return {"certificate": None, "certificate_vacuous": None}
    return {"certificate": float(bound.value), "certificate_vacuous": bool(bound.vacuous)}


def _exact_point(cfg: Config, lang: str, L: int, family: str, param: float) -> dict:
    language = _language(lang)
    if family == "random":
        schedule = eng.schedule_for(cfg.schedule, int(param))
        m = dp.dp_metrics(language, L, schedule)
        calls, method = schedule.expected_nfe(L, 1), "dp (random instances)"
    else:
        r = ex.adaptive_dp(language, L, _sampler(cfg, family, param))
        m, calls, method = r.metrics, r.expected_nfe.value, "dp (reveal paths)"
    kl = float(m.kl.value)
    return {"calls": float(calls), "kl": kl, "ser": float(m.ser.value), **_certificate(kl), "method": method}


def _mc_point(cfg: Config, lang: str, L: int, family: str, param: float, samples: int, need_kl: bool) -> dict:
    """Monte Carlo SER and calls; KL true by (I1) for a rule, the Jensen bound for random (``need_kl``)."""
    language = _language(lang)
    seed = _seed(cfg, lang, L, family, param)
    sampler = _sampler(cfg, family, param)
    if family == "random":
        schedule = sampler.schedule
        ser = eng.oracle_ser(language, schedule, samples, L, seed)
        out = {"calls": schedule.expected_nfe(L, 1), "calls_stderr": 0.0, "ser": ser["value"],
               "ser_upper": ser.get("upper"), "kl": None, "kl_stderr": None, "kl_kind": None}
        if need_kl:
            j = eng.jensen_bound(language, schedule, L, samples, seed + [1])
            out.update(kl=j["value"], kl_stderr=j["stderr"], kl_kind="Jensen bound E_tau KL(q||p(.|tau))")
        return out
    from numerics.sampling.denoiser import OracleDenoiser

    interval = hasattr(language, "pairs")
    oracle = ad.IntervalOracle(language) if interval else OracleDenoiser(language, strict=False)
    run = sampler.sample(oracle, samples, L, np.random.default_rng(seed))
    loglik = log_q(language, run.tokens)
    ser = eng.estimate_json(mcm.ser_from_loglik(loglik))
    calls = ad.nfe_mc(run)
    kl = ad.kl_chain_rule_mc(sampler, language, L, samples, np.random.default_rng(seed + [1]))
    return {"calls": calls.value, "calls_stderr": calls.stderr, "ser": ser["value"], "ser_upper": ser.get("upper"),
            "kl": kl.value, "kl_stderr": kl.stderr, "kl_kind": "true KL(q||p), chain rule (I1)"}


def _interval_random_needed(cfg: Config, L: int) -> dict:
    """Fewest steps (and their expected calls) of the random sampler with exact interval SER <= target."""
    from . import ser as ser_experiment

    scfg = ser_experiment.Config(interval=cfg.interval, schedule=cfg.schedule)
    r = ser_experiment._steps_needed(scfg, L, cfg.ser_target, ser_experiment._Validity(scfg))
    N = r["steps_needed"]
    calls = eng.schedule_for(cfg.schedule, N).expected_nfe(L, 1) if N else None
    return {"length": L, "family": "random", "config": f"N={N}", "calls_needed": calls, "ser": r["ser_at"],
            "ser_upper": r["ser_at"], "method": "exact (closed form, search over N)"}


def _interval_specs(cfg: Config, L: int) -> list[tuple[str, float]]:
    topk = sorted({max(1, int(round(f * L))) for f in cfg.interval_topk_fractions})
    return ([("topk", N) for N in topk] + [("threshold", g) for g in cfg.thresholds]
            + [("entropy-sum", g) for g in cfg.entropy_bounds])


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=stored_config(cfg))
    parts = Parts(strict)
    attempt = parts.attempt

    small_interval = f"interval-l{cfg.interval_exact_l}"
    exact_grid = [(lang, cfg.exact_length, s) for lang in cfg.ter_languages + cfg.ser_languages
                  for s in _specs(cfg, cfg.exact_length)]
    exact_grid += [(small_interval, cfg.interval_exact_length, s) for s in _specs(cfg, cfg.interval_exact_length)]
    rows = []
    for lang, L, (family, param) in progress_iter(exact_grid, progress, "adaptive: exact"):
        key = {"v": VERSION, "language": lang, "length": L, "family": family, "param": param, "schedule": cfg.schedule}
        e = attempt(f"exact {family}", lambda: cache.get_or_compute(
            "adaptive-exact", key, lambda: _exact_point(cfg, lang, L, family, param)))
        if e is not None:
            rows.append({"language": lang, "length": L, "family": family, "param": param, **e,
                         "kl_per_token": e["kl"] / L})
    if rows:
        out.tables["exact"] = rows

    mc_grid = [(lang, s) for lang in cfg.ter_languages + cfg.ser_languages for s in _specs(cfg, cfg.mc_length)]
    mrows = []
    for lang, (family, param) in progress_iter(mc_grid, progress, "adaptive: Monte Carlo"):
        L = cfg.mc_length
        need_kl = True
        key = {"v": VERSION, "language": lang, "length": L, "family": family, "param": param,
               "schedule": cfg.schedule, "samples": cfg.samples, "seed": cfg.seed, "kl": need_kl}
        m = attempt(f"Monte Carlo {family}", lambda: cache.get_or_compute(
            "adaptive-mc", key, lambda: _mc_point(cfg, lang, L, family, param, cfg.samples, need_kl)))
        if m is not None:
            mrows.append({"language": lang, "length": L, "family": family, "param": param, **m,
                          "kl_per_token": m["kl"] / L if m["kl"] is not None else None, **_certificate(m["kl"])})
    if mrows:
        out.tables["monte_carlo"] = mrows
        note = _per_call_note(cfg, mrows)
        if note:
            out.notes.append(note)

    irows, needed = [], []
    direct = f"interval-direct-l{cfg.interval}"
    for L in progress_iter(cfg.interval_lengths, progress, "adaptive: interval"):
        r = attempt("random sampler, exact interval SER", lambda: cache.get_or_compute(
            "adaptive-interval-random", {"v": VERSION, "l": cfg.interval, "length": L, "target": cfg.ser_target,
                                         "schedule": cfg.schedule}, lambda: _interval_random_needed(cfg, L)))
        if r is not None:
            needed.append(r)
        for family, param in _interval_specs(cfg, L):
            key = {"v": VERSION, "language": direct, "length": L, "family": family, "param": param,
                   "schedule": cfg.schedule, "samples": cfg.interval_samples, "seed": cfg.seed}
            m = attempt(f"interval {family}", lambda: cache.get_or_compute(
                "adaptive-interval-mc", key,
                lambda: _mc_point(cfg, direct, L, family, param, cfg.interval_samples, True)))
            if m is not None:
                irows.append({"length": L, "family": family, "param": param, **m, **_certificate(m["kl"])})
        for family in FAMILIES[1:]:
            ok = [r for r in irows if r["length"] == L and r["family"] == family
                  and r["ser_upper"] is not None and r["ser_upper"] <= cfg.ser_target]
            best = min(ok, key=lambda r: r["calls"], default=None)
            needed.append({"length": L, "family": family, "config": f"{family}({best['param']:g})" if best else None,
                           "calls_needed": best["calls"] if best else None, "ser": best["ser"] if best else None,
                           "ser_upper": best["ser_upper"] if best else None,
                           "method": "mc (cheapest grid point with Clopper-Pearson upper limit <= target)"})
    if irows:
        out.tables["interval"] = irows
    if needed:
        out.tables["interval_calls_needed"] = needed
        answer = _answer(cfg, needed)
        if answer:
            out.notes.append(answer)
    checked = [r for t in ("exact", "monte_carlo", "interval") for r in out.tables.get(t, [])
               if r.get("certificate_vacuous") is not None]
    trivial = [r for r in checked if r["certificate_vacuous"]]
    if checked:  # a vacuous check is never a green "ok"; the badge counts them
        out.add_vacuous(f"SER certificate 1 - exp(-KL) (I3): vacuous at {len(trivial)} of {len(checked)} points",
                        len(trivial), len(checked))
    parts.record(out)
    return out.finish(started)


def _per_call_note(cfg: Config, rows: list[dict]) -> str | None:
    """Each TER language: the adaptive point with the lowest KL/L against the random sampler at no more calls."""
    parts = []
    for lang in cfg.ter_languages:
        rand = [r for r in rows if r["language"] == lang and r["family"] == "random" and r["kl_per_token"] is not None]
        for fam in FAMILIES[1:]:
            pts = [r for r in rows if r["language"] == lang and r["family"] == fam and r["kl_per_token"] is not None
                   and 1.5 < r["calls"] < cfg.mc_length]  # points that are neither one-step nor one-at-a-time
            if not pts or not rand:
                continue
            a = min(pts, key=lambda r: r["kl_per_token"])
            cheaper = [r for r in rand if r["calls"] <= a["calls"]]
            if not cheaper:
                continue
            b = min(cheaper, key=lambda r: r["kl_per_token"])
            parts.append(f"{lang} {fam}({a['param']:g}): {a['kl_per_token']:.3g} at {a['calls']:.1f} calls vs random "
                         f"N = {b['param']:g}: <= {b['kl_per_token']:.3g} at {b['calls']:.1f}")
    if not parts:
        return None
    return (f"Per call, KL(q||p)/L of the adaptive rules (true value, chain rule) against the random sampler's Jensen "
            f"upper bound at no more calls (L = {cfg.mc_length}, {cfg.samples} samples): " + "; ".join(parts)
            + ". Where the adaptive value is the larger, confidence ordering is worse than random order per call "
              "(it reveals neighbouring, strongly dependent positions together).")


def _fit(points: list[tuple[int, float]]) -> float | None:
    if len(points) < 2:
        return None
    x, y = np.log(np.array(points, dtype=float)).T
    return float(np.polyfit(x, y, 1)[0])


def _answer(cfg: Config, needed: list[dict]) -> str | None:
    """The one-sentence answer: calls needed vs L for the random sampler and the cheapest adaptive family."""
    by = {fam: {r["length"]: r for r in needed if r["family"] == fam and r["calls_needed"]} for fam in FAMILIES}
    Lmax = max(by["random"], default=None)
    fams = [f for f in FAMILIES[1:] if Lmax in by[f]]
    if Lmax is None or not fams:
        return None
    fam = min(fams, key=lambda f: by[f][Lmax]["calls_needed"])
    b, rand = by[fam][Lmax], by["random"][Lmax]["calls_needed"]
    slope_a = _fit([(L, r["calls_needed"]) for L, r in sorted(by[fam].items())])
    slope_r = _fit([(L, r["calls_needed"]) for L, r in sorted(by["random"].items())])
    fitted = (lambda s: f"fitted exponent {s:.2f}" if s is not None else "one length only")
    ratio = b["calls_needed"] / rand
    cost = (f"a saving of a constant factor {ratio:.2f}" if ratio < 1 else
            f"no saving at all ({ratio:.2f} times the random sampler's calls)")
    escape = "No" if slope_a is None or slope_a > 0.9 else "Apparently yes"
    return (f"{escape}: with the oracle, the cheapest adaptive rule on the interval language (l = {cfg.interval}) needs "
            f"{b['calls_needed']:.1f} calls for SER <= {cfg.ser_target:g} at L = {Lmax} ({b['config']}; "
            f"{b['calls_needed'] / Lmax:.2f} per position, {fitted(slope_a)} over L = {min(by[fam])}..{max(by[fam])}), "
            f"against {rand:.1f} expected calls ({rand / Lmax:.2f} per position, {fitted(slope_r)}) for the random "
            f"sampler at its smallest sufficient N: {cost}. Marginal confidences cannot tell a free bit shared inside "
            f"an interval from independent positions, so a rule that never errs reveals one uncertain token per call.")


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import legend, new_figure

    colors = {"random": "#7f7f7f", "topk": "#1f77b4", "threshold": "#d62728", "entropy-sum": "#2ca02c"}
    markers = {"random": "o", "topk": "s", "threshold": "^", "entropy-sum": "v"}
    plots = []

    def curves(ax, rows, y, ylabel, cert=False):
        for fam in FAMILIES:
            pts = sorted((r["calls"], r[y], r.get("certificate")) for r in rows if r["family"] == fam
                         and r[y] is not None and r["calls"] is not None)
            if not pts:
                continue
            dashed = fam == "random" and any("Jensen" in str(r.get("kl_kind")) for r in rows if r["family"] == fam)
            bound = dashed and y.startswith("kl")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[fam], markersize=3, color=colors[fam],
                    linestyle="--" if bound else "-", label=fam + (" (Jensen bound)" if bound else ""))
            if cert:
                c = [(p[0], p[2]) for p in pts if p[2] is not None]
                if c:
                    ax.plot(*zip(*c), color=colors[fam], linestyle=":", linewidth=0.9, label=f"{fam}: 1 - exp(-KL)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("denoiser calls per sequence")
        ax.set_ylabel(ylabel)
        legend(ax, fontsize=6)

    for table, what in (("exact", "exact"), ("monte_carlo", "Monte Carlo")):
        rows = result.tables.get(table, [])
        langs = list(dict.fromkeys(r["language"] for r in rows))
        if not langs:
            continue
        fig, axes = new_figure(ncols=len(langs))
        for ax, lang in zip(axes[0], langs):
            lr = [r for r in rows if r["language"] == lang]
            ser_lang = "pruned" in lang or lang.startswith("interval")
            if ser_lang:
                curves(ax, lr, "ser", "SER", cert=True)
                ax.set_ylim(-0.02, 1.02)
            else:
                curves(ax, lr, "kl_per_token", "KL(q||p) / L  [nats]")
                ax.set_yscale("symlog", linthresh=1e-4)  # an exact sampler (one token per call) sits at 0
                ax.set_ylim(bottom=0.0)
            ax.set_title(f"{lang}, L = {lr[0]['length']} ({what})")
        plots.append(Plot(f"error_vs_calls_{table}", fig,
                          f"Error vs denoiser calls for every sampler ({what}). TER panels: KL(q||p)/L, the true KL of "
                          "each adaptive rule (exact, or Monte Carlo by the chain-rule identity) and, dashed, only the "
                          "Jensen upper bound for the random sampler at Monte Carlo sizes. SER panels: dotted, the "
                          "certificate SER <= 1 - exp(-KL) of each sampler."))
    irows = result.tables.get("interval", [])
    needed = result.tables.get("interval_calls_needed", [])
    if irows or needed:
        fig, axes = new_figure(ncols=2)
        ax = axes[0, 0]
        Lmax = max(r["length"] for r in irows) if irows else None
        if irows:
            curves(ax, [r for r in irows if r["length"] == Lmax], "ser", "SER", cert=True)
            ax.set_title(f"interval (l = {result.config.get('interval')}), L = {Lmax} (Monte Carlo)")
            ax.set_ylim(-0.02, 1.02)
        ax = axes[0, 1]
        for fam in FAMILIES:
            pts = sorted((r["length"], r["calls_needed"]) for r in needed if r["family"] == fam and r["calls_needed"])
            if pts:
                ax.plot(*zip(*pts), marker=markers[fam], color=colors[fam], label=fam, alpha=0.8)
        Ls = sorted({r["length"] for r in needed})
        if Ls:
            ax.plot(Ls, Ls, color="k", linestyle=":", linewidth=0.8, label="calls = L")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("length L")
        ax.set_ylabel(f"calls for SER <= {result.config.get('ser_target')}")
        legend(ax, fontsize=7)
        plots.append(Plot("interval_calls_needed", fig,
                          "Theorem 4.4's language: SER vs calls at the largest L (left) and the fewest calls that reach "
                          "the SER target vs L (right; random exact, adaptive rules the cheapest grid point whose "
                          "Clopper-Pearson upper limit meets the target). Parallel to calls = L means linear in L."))
    return plots
