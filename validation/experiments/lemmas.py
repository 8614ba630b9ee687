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
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter

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

    instances: int = 40
    lemmas: tuple[str, ...] = ()
    seed: int = 0

    @classmethod
    def tiny(cls) -> "Config":
        return cls(instances=4, lemmas=("A.1", "C.5"))

    @classmethod
    def full(cls) -> "Config":
        return cls(instances=500)


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    ids = parts.attempt("claim checks", eng.claim_ids)
    rows = []
    if ids is not None:
        if cfg.lemmas:
            ids = [i for i in ids if any(i == p or i.startswith(p + ".") for p in cfg.lemmas)]
        for cid in progress_iter(ids, progress, "lemmas: claims"):
            key = {"v": VERSION, "claim": cid, "instances": cfg.instances, "seed": cfg.seed}
            r = parts.attempt(f"claim {cid}", lambda: cache.get_or_compute(
                "lemmas-claim", key, lambda: eng.check_claim(cid, cfg.instances, cfg.seed)))
            if r is not None:
                rows.append(r)
    parts.record(out)
    if not rows:
        return out.finish(started)
    cols = ("claim", "paper", "title", "relation", "expect", "instances", "violations", "min_slack",
            "min_tightness", "median_tightness", "exact_checks", "skipped")
    out.tables["claims"] = [{c: r.get(c) for c in cols} for r in rows]
    bad = [r for r in rows if r.get("violations")]
    if bad:
        out.tables["counterexamples"] = [
            {"claim": r["claim"], "paper": r["paper"], "expect": r["expect"], "violations": r["violations"],
             "lhs": (r.get("worst") or {}).get("lhs"), "rhs": (r.get("worst") or {}).get("rhs"),
             "instance": (r.get("worst") or {}).get("instance")} for r in bad]
    unexpected = [r["claim"] for r in bad if r.get("expect") != "false"]
    pinned = [r["claim"] for r in rows if r.get("expect") == "false"]
    out.notes.append(
        f"{len(rows)} claims ({sum(r['top_level'] for r in rows)} lemmas/theorems, the rest proof steps) on "
        f"{sum(r['instances'] for r in rows)} instances: {len(bad)} with violations"
        + (f" ({', '.join(r['claim'] for r in bad)})" if bad else "") + ".")
    if pinned:
        out.notes.append("Claims the engine found false (pinned counterexamples, docs/findings.md): "
                         + ", ".join(pinned) + ".")
    if unexpected:
        out.notes.append("VIOLATIONS NOT YET RECORDED AS FINDINGS: " + ", ".join(unexpected) + ".")
    out.findings.extend(f"{r['claim']}: violated on {r['violations']} of {r['instances']} instances"
                        + ("" if r.get("expect") == "false" else " (not yet recorded in docs/findings.md)")
                        for r in bad)
    out.vacuous.extend(f"{r['claim']}: no instance could be checked" for r in rows if not r.get("instances"))
    return out.finish(started)


def plot(result: ExperimentResult) -> list[Plot]:
    """Tightness (bound / exact, on its tightest instance) per claim; red: claims with violations."""
    import math

    from ._style import new_figure, legend

    rows = [r for r in result.tables.get("claims", [])
            if r.get("min_tightness") is not None and math.isfinite(r["min_tightness"]) and r["min_tightness"] > 0]
    if not rows:
        return []
    fig, axes = new_figure(width=max(6.0, 0.16 * len(rows)), height=3.8)
    ax = axes[0, 0]
    x = range(len(rows))
    ax.bar(x, [r["median_tightness"] if r.get("median_tightness") and r["median_tightness"] > 0 else float("nan")
               for r in rows], color="#c6dbef", label="median over instances")
    ax.scatter(x, [r["min_tightness"] for r in rows], s=10, zorder=3,
               c=["#c62828" if r.get("violations") else "#08519c" for r in rows], label="tightest instance")
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(list(x), [r["claim"] for r in rows], rotation=90, fontsize=5)
    ax.set_ylabel("tightness (bound / exact)")
    legend(ax, fontsize=7)
    return [Plot("tightness", fig, "Tightness of each claim (bound / exact side; 1 = tight): bars the median over the "
                                   "generated instances, dots the tightest instance (red: the claim was violated).")]
