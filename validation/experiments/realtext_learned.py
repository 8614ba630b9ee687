"""The learned models of the real-text section: a small MDM and AR trained on a fitted Lee-corpus language.

For each language of ``Config.learned`` (:mod:`.realtext`) an MDM and an AR baseline are trained on
sequences sampled from the fitted language by the learned section's machinery
(:func:`.learned_runs.train_runs`: the ``cpu-small`` recipe with :data:`.learned_runs.TRAIN_STEPS`,
checkpoints cached by config hash under ``CACHE/train``, so ``report --train all``, which trains
``lee-char-2gram`` with the same config, shares its checkpoint). They are evaluated at the length they
were trained on (``L = 32`` for ``cpu-small``) through the same sampler code as the oracle, at the same
steps and with the same random streams (:func:`neural.evaluate.evaluate_checkpoint` and
:func:`neural.evaluate.sampler_curve`, learned ``TorchDenoiser`` vs ``OracleDenoiser``):

* random order (the factorized sampler, the section's schedule): generative perplexity and SER
  (Monte Carlo, 95% intervals) for the learned MDM and for the oracle, and the per-token TER gap
  bound ``E_tau KL(q || p(.|tau)) / L`` -- for the oracle exact (Markov chain rule), for the
  learned MDM the oracle's exact part plus the measured learning part of Lemma B.3 (Monte Carlo,
  with its standard error);
* the adaptive rules of ``Config.adaptive`` (``topk``) at ``Config.adaptive_steps``: generative
  perplexity and SER, learned vs oracle (the rule ranks positions by the denoiser's own marginals);
* the AR model (KV-cached decoding, ``N = L``): generative perplexity, SER, and its per-token TER
  gap ``log(validation perplexity / exact perplexity)``, which for an AR model is
  ``KL(q || p_AR) / L`` estimated on the validation sequences.

Every learned row states its model's validation gap to the exact perplexity
(:class:`.learned_runs.TrainedRun`); the section's notes say whether it met the learned section's
target. The generative perplexity is ``inf`` as soon as one sample is outside the support (the
unsmoothed fit gives those probability 0); ``gen_ppl_valid`` is the same over the valid samples.

Tables. ``learned_models``, one row per model: ``language``, ``kind`` (MDM / AR), ``length``,
``train_steps``, ``val_ratio`` with ``val_ratio_lo`` / ``val_ratio_hi`` (validation
(NELBO-)perplexity over the exact perplexity of the same sequences, 95% paired interval), ``target``
and ``meets_target`` (the learned section's 3% / 1%), ``eps_learning_mean`` (MDM: mean per-position
``KL(q || p_theta)`` at random masks), ``cpu_seconds`` (of the optimizer steps), ``checkpoint_sha256``.
``learned``, one row per (language, ``model`` oracle / MDM / AR, ``sampler`` random / topk / ar,
``steps``): ``log_ter_gap`` (nats per token; ``None`` for the adaptive rule) with
``log_ter_gap_stderr`` and ``log_ter_gap_kind`` (``exact``: the oracle's Jensen bound; ``exact +
learning part (mc)``: the MDM's; ``log(val ppl / exact)``: the AR's ``KL(q || p_AR) / L`` on the
validation sequences), ``ter_bound`` = ``ter_data * exp(log_ter_gap)`` with ``ter_data`` the exact
``TER(q)`` at the trained length, ``gen_ppl`` with ``gen_ppl_lo`` / ``gen_ppl_hi`` and ``gen_ppl_valid``,
``ser`` with ``ser_lo`` / ``ser_hi`` (Clopper-Pearson 95%), ``samples``, ``nfe`` (mean calls per
sequence or batch, as the sampler reports them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cache import ResultCache
from . import _engine as eng

__all__ = ["AsDecoder", "evaluate_language", "learned_rows", "model_rows", "notes", "plot", "train"]

KINDS = ("mdm", "ar")


@dataclass(frozen=True)
class _Decoded:
    tokens: np.ndarray  # (n, L)
    calls: np.ndarray  # (n,) denoiser calls per sequence


@dataclass(frozen=True)
class AsDecoder:
    """An adaptive rule of :mod:`numerics.sampling.adaptive` in the decoder protocol of
    :func:`neural.evaluate.sampler_curve` (``name``, ``label``, ``parameters()``, ``sample``), so the
    learned denoiser and the oracle run through the one rule with the same uniforms."""

    sampler: Any  # numerics.sampling.adaptive.AdaptiveSampler

    @property
    def name(self) -> str:
        return self.sampler.rule

    @property
    def label(self) -> str:
        return self.sampler.label

    def parameters(self) -> dict:
        s = self.sampler
        return {"rule": s.rule, "confidence": s.confidence, "tie_seed": s.tie_seed,
                "schedule": None if s.schedule is None else s.schedule.name,
                "n_steps": None if s.schedule is None else s.schedule.n_steps, "gamma": s.gamma}

    def sample(self, denoiser: Any, n: int, length: int, rng: np.random.Generator, *, batch_size: int | None = None
               ) -> _Decoded:
        res = self.sampler.sample(denoiser, n, length, rng, batch_size=batch_size)
        return _Decoded(np.asarray(res.tokens), np.asarray(res.nfe_sequence, dtype=np.float64))


def train(cfg: Any, cache: ResultCache, progress: bool) -> dict:
    """``(language, kind) -> TrainedRun`` for every language of ``cfg.learned``: found in the cache, or trained
    when ``cfg.train``; otherwise :class:`MissingInput` naming the models to train (``report --train``)."""
    from ._base import MissingInput
    from .learned_runs import cached_runs, train_runs

    pairs = [(lang, kind) for lang in cfg.learned for kind in KINDS]
    if not cfg.train:
        found, absent = cached_runs(pairs, cache, seed=cfg.seed, preset=cfg.learned_preset)
        if absent:
            raise MissingInput("not trained (mdm-theory report --train trains them): "
                               + ", ".join(f"{lang} {kind.upper()}" for lang, kind in absent))
        return found
    return train_runs(pairs, cache, seed=cfg.seed, preset=cfg.learned_preset, workers=cfg.learned_workers,
                      progress=progress)


def evaluate_language(cfg: Any, lang_name: str, runs: dict, cache: ResultCache) -> dict:
    """The evaluation of one language's MDM and AR (cached by each checkpoint's content hash)."""
    from neural.evaluate import evaluate_checkpoint

    mdm, ar = runs[(lang_name, "mdm")], runs[(lang_name, "ar")]
    base = {"v": 1, "samples": cfg.learned_samples, "seed": cfg.seed, "schedule": cfg.schedule}
    ev_mdm = cache.get_or_compute("realtext-learned-mdm", {
        **base, "sha256": mdm.checkpoint_sha256, "config_hash": mdm.config_hash, "n_steps": list(cfg.learned_steps)},
        lambda: evaluate_checkpoint(mdm.checkpoint, cfg.learned_steps, samples=cfg.learned_samples, seed=cfg.seed,
                                    schedule=cfg.schedule, eps_sequences=cfg.learned_samples, oracle=True,
                                    learning=True))
    adaptive = {rule: cache.get_or_compute("realtext-learned-adaptive", {
        **base, "sha256": mdm.checkpoint_sha256, "config_hash": mdm.config_hash, "rule": rule,
        "n_steps": list(cfg.adaptive_steps)}, lambda rule=rule: _adaptive_curves(cfg, mdm.checkpoint, rule))
        for rule in cfg.adaptive}
    ev_ar = cache.get_or_compute("realtext-learned-ar", {
        **base, "sha256": ar.checkpoint_sha256, "config_hash": ar.config_hash},
        lambda: evaluate_checkpoint(ar.checkpoint, (), samples=cfg.learned_samples, seed=cfg.seed))
    L = ev_mdm["length"]
    obj = eng.load_language(lang_name)
    iota = cache.get_or_compute("realtext-learned-iota", {"v": 1, "language": lang_name, "length": L},
                                lambda: eng.pair_informations(obj, L))
    bound = {N: eng.jensen_bound_from_informations(obj, eng.schedule_for(cfg.schedule, N), L, iota)["value"] / L
             for N in cfg.learned_steps}
    data = cache.get_or_compute("realtext-learned-data", {"v": 1, "language": lang_name, "length": L},
                                lambda: eng.data_ppl(obj, L, 2, [cfg.seed, L]))  # exact for an n-gram: no draw
    return {"mdm": ev_mdm, "adaptive": adaptive, "ar": ev_ar, "oracle_bound": bound, "data_ppl": data["value"],
            "length": L}


def _adaptive_curves(cfg: Any, checkpoint: str, rule: str) -> list[dict]:
    """The rule at each of ``cfg.adaptive_steps``, learned and oracle, with the same seeds."""
    from neural.evaluate import sampler_curve
    from neural.sample import TorchDenoiser
    from neural.train import load_checkpoint, pick_device
    from numerics.sampling.adaptive import make_sampler
    from numerics.sampling.denoiser import OracleDenoiser

    ck = load_checkpoint(checkpoint)
    lang = eng.load_language(ck.config.language)
    L = ck.config.model.length
    decoders = {N: AsDecoder(make_sampler(rule, schedule=eng.schedule_for(cfg.schedule, N)))
                for N in cfg.adaptive_steps}
    seeds = np.random.SeedSequence([cfg.seed, sum(map(ord, rule))]).spawn(len(cfg.adaptive_steps))
    rows = []
    for den, label in ((TorchDenoiser(ck.build_model(pick_device(None))), "model"), (OracleDenoiser(lang, strict=False), "oracle")):
        rows += sampler_curve(den, lang, L, cfg.adaptive_steps, seeds, samples=cfg.learned_samples,
                              decoders=decoders, label=label)
    return rows


def _quality(r: dict) -> dict:
    return {"gen_ppl": r["gen_ppl"], "gen_ppl_lo": r["gen_ppl_ci"][0], "gen_ppl_hi": r["gen_ppl_ci"][1],
            "gen_ppl_valid": r["gen_ppl_valid"], "ser": r["ser"], "ser_lo": r["ser_ci"][0], "ser_hi": r["ser_ci"][1],
            "samples": r["samples"], "nfe": r["nfe"]}


def learned_rows(lang_name: str, ev: dict, runs: dict) -> list[dict]:
    """One row per (denoiser, sampler, N) at the trained length: TER gap, generative perplexity, SER."""
    L, data = ev["length"], ev["data_ppl"]
    ar = runs[(lang_name, "ar")]
    rows = []
    for r in ev["mdm"]["rows"]:
        N = r["n_steps"]
        exact = ev["oracle_bound"][N]
        learned = r["denoiser"] == "model"
        part = r.get("learning_part") if learned else None
        gap = (exact + part["value"]) if learned else exact
        rows.append({"language": lang_name, "length": L, "model": "MDM" if learned else "oracle", "sampler": "random",
                     "steps": N, "log_ter_gap": gap, "log_ter_gap_stderr": part["stderr"] if learned else 0.0,
                     "log_ter_gap_kind": "exact + learning part (mc)" if learned else "exact",
                     "ter_bound": data * math.exp(gap), "ter_data": data, **_quality(r)})
    for rule, curve in ev["adaptive"].items():
        for r in curve:
            learned = r["denoiser"] == "model"
            rows.append({"language": lang_name, "length": L, "model": "MDM" if learned else "oracle", "sampler": rule,
                         "steps": r["n_steps"], "log_ter_gap": None, "log_ter_gap_stderr": None,
                         "log_ter_gap_kind": None, "ter_bound": None, "ter_data": data, **_quality(r)})
    a = ev["ar"]["rows"][0]
    rows.append({"language": lang_name, "length": L, "model": "AR", "sampler": "ar", "steps": a["n_steps"],
                 "log_ter_gap": math.log(ar.ratio), "log_ter_gap_stderr": None,
                 "log_ter_gap_kind": "log(val ppl / exact)",
                 "ter_bound": data * ar.ratio, "ter_data": data, **_quality(a)})
    return rows


def model_rows(runs: dict, evals: dict) -> list[dict]:
    """One row per trained model: its validation gap to the exact perplexity and what it cost."""
    out = []
    for (lang, kind), run in runs.items():
        ev = evals.get(lang)
        eps = ev["mdm"].get("eps_learning", {}) if (ev and kind == "mdm") else {}
        out.append({"language": lang, "kind": kind.upper(), "length": ev["length"] if ev else None,
                    "train_steps": run.train_steps, "val_ratio": run.ratio, "val_ratio_lo": run.ratio_ci[0],
                    "val_ratio_hi": run.ratio_ci[1], "target": run.target, "meets_target": run.meets_target,
                    "eps_learning_mean": eps.get("mean"), "cpu_seconds": run.cpu_seconds,
                    "checkpoint_sha256": run.checkpoint_sha256})
    return out


def notes(models: list[dict], rows: list[dict]) -> list[str]:
    """The learned models' validation gaps and a reading of their curves, with numbers."""
    out = []
    for lang in dict.fromkeys(m["language"] for m in models):
        parts = [f"{m['kind']} {m['train_steps']} steps, {m['val_ratio']:.4f} [{m['val_ratio_lo']:.4f}, "
                 f"{m['val_ratio_hi']:.4f}] ({'within' if m['meets_target'] else 'short of'} "
                 f"{100 * (m['target'] - 1):.0f}%)" for m in models if m["language"] == lang]
        out.append(f"{lang} learned models (validation (NELBO-)perplexity / exact, 95%; the learned section's "
                   f"target): {'; '.join(parts)}. Their curves are estimates of these models.")
    for lang in dict.fromkeys(r["language"] for r in rows):
        mine = sorted((r for r in rows if r["language"] == lang and r["sampler"] == "random"), key=lambda r: r["steps"])
        mdm = [r for r in mine if r["model"] == "MDM"]
        orc = {r["steps"]: r for r in mine if r["model"] == "oracle"}
        ar = next((r for r in rows if r["language"] == lang and r["model"] == "AR"), None)
        if not mdm or ar is None:
            continue
        lo, hi = mdm[0], mdm[-1]

        def ser(r: dict) -> str:
            return f"{r['ser']:.2f} [{r['ser_lo']:.2f}, {r['ser_hi']:.2f}]"

        out.append(f"{lang}, learned at L = {lo['length']} (random order): TER gap bound {lo['log_ter_gap']:.3f} "
                   f"+- {lo['log_ter_gap_stderr']:.3f} nats/token at N = {lo['steps']} and {hi['log_ter_gap']:.3f} "
                   f"+- {hi['log_ter_gap_stderr']:.3f} at N = {hi['steps']} (oracle, exact: "
                   f"{orc[lo['steps']]['log_ter_gap']:.3f} and {orc[hi['steps']]['log_ter_gap']:.3f}); SER "
                   f"{ser(lo)} at N = {lo['steps']} and {ser(hi)} at N = {hi['steps']} (oracle {ser(orc[lo['steps']])} "
                   f"and {ser(orc[hi['steps']])}); AR: TER gap {ar['log_ter_gap']:.4f}, SER {ser(ar)} at "
                   f"N = L = {ar['steps']} ({ar['samples']} samples each).")
    return out


def plot(rows: list[dict]) -> list:
    """TER gap and SER vs steps at the trained length: oracle, learned MDM (random, adaptive) and AR."""
    from ._base import Plot
    from ._style import band_ci, language_color, legend, new_figure

    langs = list(dict.fromkeys(r["language"] for r in rows))
    if not langs:
        return []
    fig, axes = new_figure(ncols=2, nrows=len(langs), width=4.6, height=3.2)
    axes = np.asarray(axes).reshape(len(langs), 2)
    for (ax_t, ax_s), lang in zip(axes, langs):
        color = language_color(lang)
        mine = [r for r in rows if r["language"] == lang]
        L = mine[0]["length"]
        styles = {("oracle", "random"): dict(color=color, marker="o", linestyle="-", label="oracle, random"),
                  ("MDM", "random"): dict(color="#8c564b", marker="s", linestyle="--", label="learned MDM, random")}
        for sampler in dict.fromkeys(r["sampler"] for r in mine if r["sampler"] not in ("random", "ar")):
            styles[("oracle", sampler)] = dict(color="k", marker="x", linestyle=":", label=f"oracle, {sampler}")
            styles[("MDM", sampler)] = dict(color="#8c564b", marker="^", linestyle=":", label=f"learned MDM, {sampler}")
        for (model, sampler), st in styles.items():
            pts = sorted((r for r in mine if r["model"] == model and r["sampler"] == sampler), key=lambda r: r["steps"])
            x = [r["steps"] for r in pts]
            gaps = [r for r in pts if r["log_ter_gap"] is not None and r["log_ter_gap"] > 0]
            if gaps:
                ax_t.plot([r["steps"] for r in gaps], [r["log_ter_gap"] for r in gaps], markersize=4, **st)
            if pts:
                ax_s.plot(x, [r["ser"] for r in pts], markersize=4, **st)
                band_ci(ax_s, x, [r["ser"] for r in pts], [r["ser_lo"] for r in pts], [r["ser_hi"] for r in pts],
                        st["color"])
        ar = next((r for r in mine if r["model"] == "AR"), None)
        if ar is not None:
            if ar["log_ter_gap"] > 0:
                ax_t.axhline(ar["log_ter_gap"], color="#e377c2", linestyle="-.", label="learned AR (N = L)")
            ax_s.errorbar([ar["steps"]], [ar["ser"]], yerr=[[ar["ser"] - ar["ser_lo"]], [ar["ser_hi"] - ar["ser"]]],
                          color="#e377c2", marker="D", markersize=5, linestyle="none", label="learned AR (N = L)")
        for ax, ylabel in ((ax_t, "per-token TER gap bound (nats)"), (ax_s, "SER")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("steps N")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{lang}, L = {L}")
            legend(ax, fontsize=6)
        ax_t.set_yscale("log")
        ax_s.set_ylim(-0.02, 1.02)
    caption = ("Learned models on the fitted Lee-corpus languages at their trained length, beside the oracle through "
               "the same sampler, steps and random streams. Left: the per-token TER gap bound E_tau KL(q||p(.|tau))/L "
               "(oracle exact; learned MDM = the oracle's exact part + the measured learning part, Monte Carlo); the "
               "AR line is log(validation ppl / exact ppl). Right: SER with 95% Clopper-Pearson bands; the AR point "
               "sits at N = L. Each learned model's own validation gap to the exact perplexity is in the table.")
    return [Plot("realtext_learned_vs_steps", fig, caption)]
