"""Experiment 3 -- lemma verification: every claim and proof step of ``theory`` checked.

For each entry of the theory registry (Lemmas A.1 .. C.6, Theorems 4.2, 4.3, 4.4, Example C.7)
and each of its proof-step claims, ``theory``'s verification API evaluates both sides on a
generated set of instances and on exact numbers from ``numerics``. The table lists the instances
tried, the violations, the minimum slack (``rhs - lhs`` for an upper bound) and the tightness
(bound / exact); a violated claim is shown with its counterexample.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..cache import ResultCache
from . import _engine as eng
from ._base import ExperimentResult, Parts, Plot, point_cache

NAME = "lemmas"
TITLE = "Lemma verification: every claim and proof step checked"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """Sizes of the lemma checks.

    Attributes
    ----------
    instances : generated instances per claim.
    lemmas : registry ids to check (empty: all).
    seed : seed of the instance generator.
    """

    instances: int = 200
    lemmas: tuple[str, ...] = ()
    seed: int = 0

    @classmethod
    def tiny(cls) -> "Config":
        return cls(instances=5)

    @classmethod
    def full(cls) -> "Config":
        return cls(instances=2000)


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    key = {"v": VERSION, "instances": cfg.instances, "lemmas": list(cfg.lemmas), "seed": cfg.seed}
    rows = parts.attempt("claim checks", lambda: cache.get_or_compute(
        "lemmas-table", key, lambda: eng.check_claims(cfg.instances, cfg.lemmas, cfg.seed, progress)))
    parts.record(out)
    if rows is None:
        return out.finish(started)
    out.tables["claims"] = [{k: v for k, v in r.items() if k != "counterexample"} for r in rows]
    bad = [r for r in rows if r.get("violations")]
    out.tables["counterexamples"] = [{"claim": r["claim"], "violations": r["violations"],
                                      "counterexample": r.get("counterexample")} for r in bad]
    out.notes.append(f"{len(rows)} claims checked, {sum(r.get('instances', 0) or 0 for r in rows)} instances in "
                     f"all; {len(bad)} claims with violations" + (": " + ", ".join(r["claim"] for r in bad) if bad else "."))
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    """Minimum slack and tightness per claim (bars; a violation is a negative slack, in red)."""
    from ._style import new_figure

    rows = [r for r in result.tables.get("claims", []) if r.get("tightness") is not None]
    if not rows:
        return []
    fig, axes = new_figure(width=max(6.0, 0.22 * len(rows)), height=3.6)
    ax = axes[0, 0]
    names = [r["claim"] for r in rows]
    vals = [r["tightness"] for r in rows]
    colors = ["#c62828" if r.get("violations") else "#1f77b4" for r in rows]
    ax.bar(range(len(rows)), vals, color=colors)
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)), names, rotation=90, fontsize=6)
    ax.set_ylabel("tightness (bound / exact)")
    return [Plot("tightness", fig, "Tightness of each claim on its tightest instance (bound / exact; 1 = tight; "
                                   "red: claims with violations).")]
