"""Experiment "A threshold is not a dial": error and calls against the confidence threshold, per block length.

The ``threshold`` rule (reveal every masked position whose top marginal is at least ``gamma``, at
least one; :mod:`numerics.sampling.adaptive`; Fast-dLLM's threshold at temperature 0) on
``language`` at length ``length``, for each block length of ``block_lengths`` and each threshold of
a uniform grid of ``points`` values over ``[0, high]``: the exact SER and expected calls (DP,
:func:`numerics.metrics.point_metrics`). Raising the threshold buys accuracy with calls *on
average*, not at every step: the SER can rise as the threshold rises (on ``2gram-pruned`` at
``L = 3``, one block, SER 0.078 at gamma 0.23 with 2.0 calls, 0.146 at 0.25 with 2.03 calls), which
is why :func:`validation.calibrate.search_family` searches a grid rather than bisecting. The
notes count the rises on each grid and name the largest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

NAME = "thresholds"
TITLE = "A threshold is not a dial: error and calls vs the confidence threshold"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """Sizes of the experiment.

    Attributes
    ----------
    language : the language (an exact DP must fit: ``(V+1)^L`` states).
    length : ``L``.
    block_lengths : the block lengths ``B`` (each divides ``L``; ``L`` is one block).
    points : thresholds evenly spaced over ``[0, high]``.
    high : the largest threshold (on ``2gram-pruned``, V = 8, nothing changes above about 0.4: every
        position is then revealed alone).
    """

    language: str = "2gram-pruned"
    length: int = 4  # L = 6 shows the same rise (and one at B = 3) for ~90x the CPU: the full scale runs it
    block_lengths: tuple[int, ...] = (4, 2)
    points: int = 33
    high: float = 0.5

    @classmethod
    def tiny(cls) -> Config:
        return cls(length=3, block_lengths=(3,))

    @classmethod
    def full(cls) -> Config:
        return cls(length=6, block_lengths=(6, 3, 2), points=129, high=1.0)


def _point(cfg: Config, B: int, gamma: float) -> dict:
    """The exact SER and expected calls of ``threshold`` at ``gamma`` with blocks of ``B``."""
    from numerics.metrics import point_metrics
    from numerics.sampling.adaptive import make_sampler

    language = eng.load_language(cfg.language)
    block = None if B == cfg.length else B
    m = point_metrics(language, cfg.length, make_sampler("threshold", gamma=gamma, block_length=block), method="dp",
                      only=("ser", "calls"))
    return {"ser": m.ser.value, "calls": m.calls.value, "method": m.how.method}


def rises(rows: list[dict]) -> list[tuple[dict, dict]]:
    """Consecutive grid pairs (by threshold) where the SER rises although the threshold rose (beyond round-off)."""
    pts = sorted(rows, key=lambda r: r["gamma"])
    return [(a, b) for a, b in zip(pts, pts[1:]) if b["ser"] > a["ser"] * (1 + 1e-12) + 1e-15]


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    grid = [cfg.high * k / (cfg.points - 1) for k in range(cfg.points)]
    rows = []
    for B in progress_iter(cfg.block_lengths, progress, "thresholds: block lengths"):
        for g in grid:
            key = {"v": VERSION, "language": cfg.language, "length": cfg.length, "block_length": B, "gamma": g}
            r = parts.attempt(f"threshold with blocks of {B}", lambda B=B, g=g: cache.get_or_compute(
                "thresholds-point", key, lambda: _point(cfg, B, g)))
            if r is not None:
                rows.append({"language": cfg.language, "length": cfg.length, "block_length": B, "gamma": g, **r})
    if rows:
        out.tables["points"] = rows
    for B in cfg.block_lengths:
        mine = [r for r in rows if r["block_length"] == B]
        if not mine:
            continue
        up = rises(mine)
        if up:
            a, b = max(up, key=lambda ab: ab[1]["ser"] - ab[0]["ser"])
            out.notes.append(
                f"{cfg.language}, L = {cfg.length}, blocks of {B}: the SER rises at {len(up)} of the {len(mine) - 1} "
                f"steps of the threshold grid; the largest from {a['ser']:.4g} ({a['calls']:.4g} calls) at gamma = "
                f"{a['gamma']:.4g} to {b['ser']:.4g} ({b['calls']:.4g} calls) at {b['gamma']:.4g} (exact, DP).")
        else:
            out.notes.append(f"{cfg.language}, L = {cfg.length}, blocks of {B}: the SER never rises along the "
                             f"{len(mine)}-point threshold grid (exact, DP).")
    parts.record(out)
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    from ._style import legend, new_figure

    rows = result.tables.get("points", [])
    if not rows:
        return []
    fig, axes = new_figure(ncols=2, width=4.2, height=3.2)
    for B in dict.fromkeys(r["block_length"] for r in rows):
        pts = sorted((r for r in rows if r["block_length"] == B), key=lambda r: r["gamma"])
        label = "one block" if B == pts[0]["length"] else f"blocks of {B}"
        for ax, key in zip(axes.ravel(), ("ser", "calls")):
            ax.step([r["gamma"] for r in pts], [r[key] for r in pts], where="post", marker="o", markersize=2.5,
                    linewidth=1, label=label)
    c = result.config
    for ax, ylabel in zip(axes.ravel(), ("SER (exact)", "expected calls (exact)")):
        ax.set_xlabel("threshold gamma")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{c['language']}, L = {c['length']}", fontsize=9)
        legend(ax, fontsize=6)
    return [Plot("threshold_curves", fig, "The threshold rule's exact SER and expected calls against its threshold, "
                 "one line per block length: the SER does not fall at every step as the threshold (and the calls) "
                 "rise, so a search that bisects the threshold can skip a cheaper setting that meets a target.")]
