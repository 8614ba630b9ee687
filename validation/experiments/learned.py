"""Experiment 4 -- learned vs predicted: trained MDMs next to the oracle and the bounds.

Only when checkpoints are given (``--checkpoint``) or the run trains the ``cpu-small`` model
(``--train``): each trained MDM is sampled with the same factorized sampler as the oracle (the
learned denoiser in its place) and scored exactly -- generative perplexity and SER vs steps with
95% intervals -- next to the oracle's curves at the same points, the AR baseline when a
checkpoint of one is given, and the theorems with the measured ``eps_learning`` (Assumption 4.1:
``KL(oracle posterior || model posterior)`` at random masks) plugged in:
``log TER(p) <= log TER(q) + eps_learning + 4 eps log|V|`` (Theorem 4.2) and
``SER(p) <= 1 - (1 - delta_N) exp(-L eps_learning)`` (Theorem 4.3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

NAME = "learned"
TITLE = "Learned vs predicted: trained MDMs against the oracle and the bounds"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """What to evaluate.

    Attributes
    ----------
    checkpoints : MDM (and AR) checkpoint files to evaluate.
    train : train the ``train_config`` MDM on ``train_language`` first (cached by config).
    train_language, train_config, train_minutes : the training run.
    steps : steps of the evaluation curves.
    samples : generated sequences per point.
    eps_masks : random masks for the ``eps_learning`` measurement.
    seed : seed of every random draw.
    """

    checkpoints: tuple[str, ...] = ()
    train: bool = False
    train_language: str = "2gram"
    train_config: str = "cpu-small"
    train_minutes: float = 8.0
    steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    samples: int = 64
    eps_masks: int = 64
    seed: int = 0

    @classmethod
    def tiny(cls) -> "Config":
        return cls(steps=(1, 2), samples=4, eps_masks=4, train_config="tiny", train_minutes=0.1)

    @classmethod
    def full(cls) -> "Config":
        return cls(steps=(8, 16, 32, 64, 128, 256, 512, 1024, 2048), samples=1000, eps_masks=1000)


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    checkpoints = list(cfg.checkpoints)
    if cfg.train:
        ckpt = parts.attempt(f"training the {cfg.train_config} MDM", lambda: eng.train_checkpoint(
            cfg.train_language, cfg.train_config, cfg.train_minutes, cfg.seed, cache))
        if ckpt is not None:
            checkpoints.append(ckpt)
    if not checkpoints:
        if not cfg.train:
            out.missing.append("no checkpoint given and training not requested "
                               "(mdm-theory report --checkpoint FILE or --train)")
        parts.record(out)
        return out.finish(started)
    rows, eps_rows = [], []
    for ckpt in progress_iter(checkpoints, progress, "learned: checkpoints"):
        ev = parts.attempt(f"evaluating {ckpt}", lambda: eng.evaluate_checkpoint(
            ckpt, cfg.steps, cfg.samples, cfg.eps_masks, cfg.seed, cache))
        if ev is None:
            continue
        rows.extend(ev["points"])
        eps_rows.append(ev["eps_learning"])
    parts.record(out)
    if rows:
        out.tables["points"] = rows
    if eps_rows:
        out.tables["eps_learning"] = eps_rows
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import band, language_color, new_figure

    rows = result.tables.get("points", [])
    if not rows:
        return []
    plots = []
    for metric, label in (("gen_ppl", "generative perplexity"), ("ser", "SER")):
        pts = [r for r in rows if r.get(metric) is not None]
        if not pts:
            continue
        fig, axes = new_figure()
        ax = axes[0, 0]
        for model in dict.fromkeys(r["model"] for r in pts):
            m = sorted((r for r in pts if r["model"] == model), key=lambda r: r["steps"])
            lang = m[0].get("language", "")
            kind = m[0].get("kind", "mdm")
            color = language_color("ar" if kind == "ar" else "learned")
            band(ax, [r["steps"] for r in m], [r[metric] for r in m], [r.get(metric + "_stderr") for r in m],
                 color, label=f"{model} ({kind})", marker="o", markersize=3)
            if any(r.get("oracle_" + metric) is not None for r in m):
                o = [r for r in m if r.get("oracle_" + metric) is not None]
                band(ax, [r["steps"] for r in o], [r["oracle_" + metric] for r in o],
                     [r.get("oracle_" + metric + "_stderr") for r in o], language_color(lang),
                     label=f"oracle ({lang})", linestyle="--")
            if metric == "gen_ppl" and m[0].get("data_ppl"):
                ax.axhline(m[0]["data_ppl"], color=language_color(lang), linestyle=":", linewidth=0.8,
                           label="data perplexity")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("steps N")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
        plots.append(Plot(f"{metric}_learned_vs_oracle", fig,
                          f"{label} of trained models vs the oracle factorized sampler at the same steps "
                          "(95% bands)."))
    return plots
