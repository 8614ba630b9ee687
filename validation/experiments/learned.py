"""Experiment 4 -- learned vs predicted: trained MDMs and AR baselines against the oracle and the bounds.

For every language trained (``report --train``: ``2gram`` and ``interval``;
``report --train all``: the four paper languages unpruned for TER and pruned for SER, and
``interval``) or given (``--checkpoint``), an MDM and an AR baseline are trained (cached by config
hash, :mod:`.learned_runs`) and evaluated through the same sampler code as the oracle
(``numerics.sampling.samplers.sample_factorized``, learned ``TorchDenoiser`` vs
``OracleDenoiser``, same steps, schedule and random stream): generative perplexity, SER and
realized NFE with 95% intervals, the AR model (KV-cached decoding) as the last point. Beside them:

* the theorems with the *measured* ``eps_learning`` (:mod:`.learned_bounds`): Theorem 4.2's TER
  bound, Theorem 4.3's SER upper bound ``1 - (1 - delta_N) exp(-L eps)`` and, on ``interval``,
  Lemma C.6's lower bound with Theorem 4.4's ``p_e = 1/2 - eps``; vacuous points are marked so;
* Theorem 4.4 with the learned model: SER against ``N / L`` at several lengths (prefixes of the
  trained length; for the oracle, whose intervals are independent, the prefix of a length-``L``
  sample has exactly the law of a length-``L'`` sample) next to the oracle's exact SER, and the
  steps needed for ``SER <= 1/2``, learned vs the exact oracle threshold;
* where the error comes from (Lemma B.3): the learned sampler's Jensen bound per token split into
  the oracle's factorization gap and the measured learning part, at every ``N``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from neural.evaluate import evaluate_checkpoint
from neural.sample import sampler_schedule
from neural.train import load_checkpoint
from numerics.languages.presets import load_language
from theory import thm43_ser_bound

from ..cache import ResultCache
from . import learned_bounds as lb
from . import learned_plots
from ._base import ExperimentResult, Parts, Plot, point_cache, progress_iter
from .learned_runs import (
    LANGUAGE_SETS,
    PRESET,
    TARGET_RATIO,
    TrainedRun,
    as_row,
    describe,
    summarize,
    train_runs,
)

NAME = "learned"
TITLE = "Learned vs predicted: trained MDMs and AR baselines against the oracle and the bounds"
VERSION = 2
INTERVAL_L = 5  # l of the interval language (Theorem 4.4)


@dataclass(frozen=True)
class Config:
    """What to train and evaluate.

    Attributes
    ----------
    checkpoints : MDM / AR checkpoint files to evaluate (with or without training).
    train : ``""`` (no training), ``"default"`` or ``"all"`` (:data:`learned_runs.LANGUAGE_SETS`);
        ``True`` means ``"default"``.
    languages : train these instead of the set ``train`` names.
    preset : the ``neural`` size preset the runs start from.
    n_steps : sampling steps ``N`` of the curves.
    samples : sequences sampled per point (95% intervals).
    eps_sequences : true sequences for ``eps_learning`` and for the learning part at each ``N``.
    jensen_samples : Monte Carlo samples of the oracle's factorization gap where it is not exact.
    workers : training processes (one torch thread each).
    seed : seed of every random draw.
    also_train : languages trained in the same pool of processes for another section and not
        evaluated here (the report passes the real-text section's ``learned`` languages, so that
        both sections' models share the two cores instead of training one after the other).
    """

    checkpoints: tuple[str, ...] = ()
    train: str = ""
    languages: tuple[str, ...] = ()
    preset: str = PRESET
    n_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32)  # up to L = 32 (N = 64 alone cost as much as the rest)
    samples: int = 128
    eps_sequences: int = 128
    jensen_samples: int = 128
    workers: int = 2
    seed: int = 0
    also_train: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        train = {True: "default", False: "", None: ""}.get(self.train, self.train)
        if train not in ("", *LANGUAGE_SETS):
            raise ValueError(f"train must be '', 'default' or 'all', got {self.train!r}")
        object.__setattr__(self, "train", train)

    @classmethod
    def tiny(cls) -> Config:
        return cls(train="default", languages=("2gram-pruned", "hmm", "interval"), preset="tiny", n_steps=(1, 4),
                   samples=8, eps_sequences=4, jensen_samples=8, workers=1)

    @classmethod
    def full(cls) -> Config:
        return cls(train="all", n_steps=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), samples=1000, eps_sequences=512,
                   jensen_samples=2000)


def _evaluate(run: TrainedRun, cfg: Config, cache: ResultCache) -> dict:
    """``neural.evaluate.evaluate_checkpoint`` of one run, cached by the checkpoint's content hash."""
    interval = run.language.startswith("interval")
    L = load_checkpoint(run.checkpoint).config.model.length
    prefixes = tuple(p for p in (INTERVAL_L, 2 * INTERVAL_L, L) if interval and p <= L and L % INTERVAL_L == 0)
    key = {"v": VERSION, "config_hash": run.config_hash, "sha256": run.checkpoint_sha256, "n_steps": list(cfg.n_steps),
           "samples": cfg.samples, "eps_sequences": cfg.eps_sequences, "seed": cfg.seed, "prefixes": list(prefixes)}
    return cache.get_or_compute("learned-eval", key, lambda: evaluate_checkpoint(
        run.checkpoint, cfg.n_steps, samples=cfg.samples, seed=cfg.seed, eps_sequences=cfg.eps_sequences,
        oracle=True, learning=True, prefixes=prefixes))


def _theory_point(language: str, N: int, L: int, cfg: Config) -> dict:
    """The model-free side of one ``(language, N)``: ``delta_N``, the oracle's factorization gap, exact interval SER."""
    lang = load_language(language)
    sched = sampler_schedule("mdlm", N)
    out = {"delta_N": lb.collision_probability(sched, L),
           "factorization_gap": lb.factorization_gap(lang, sched, L, cfg.jensen_samples, cfg.seed + N)}
    if language.startswith("interval") and L % INTERVAL_L == 0:
        out["oracle_exact_ser"] = {str(p): lb.interval_oracle_ser(sched, p, INTERVAL_L)
                                   for p in range(INTERVAL_L, L + 1, INTERVAL_L)}
    return out


def _points(language: str, ev: dict, ar: dict | None, theory: dict[int, dict], L: int) -> list[dict]:
    """One row per ``N``: learned and oracle metrics, the error split and the bounds with measured eps."""
    eps = ev["eps_learning"]
    lang = load_language(language)
    order = getattr(lang, "order", None)
    ref = ev["reference"]["true_samples"]
    rows = []
    by = {(r["denoiser"], r["n_steps"]): r for r in ev["rows"]}
    for N in sorted({r["n_steps"] for r in ev["rows"]}):
        m, o, t = by[("model", N)], by[("oracle", N)], theory[N]
        learn = m.get("learning_part", {})
        gap = t["factorization_gap"]
        row = {"language": language, "n_steps": N, "length": L,
               "gen_ppl": m["gen_ppl"], "gen_ppl_lo": m["gen_ppl_ci"][0], "gen_ppl_hi": m["gen_ppl_ci"][1],
               "ser": m["ser"], "ser_lo": m["ser_ci"][0], "ser_hi": m["ser_ci"][1], "nfe": m["nfe"],
               "expected_nfe": m["expected_nfe"],
               "oracle_gen_ppl": o["gen_ppl"], "oracle_gen_ppl_lo": o["gen_ppl_ci"][0],
               "oracle_gen_ppl_hi": o["gen_ppl_ci"][1], "oracle_ser": o["ser"], "oracle_ser_lo": o["ser_ci"][0],
               "oracle_ser_hi": o["ser_ci"][1], "oracle_nfe": o["nfe"],
               "data_gen_ppl": ref["gen_ppl"], "samples": m["samples"],
               "factorization_gap": gap["value"], "factorization_gap_stderr": gap["stderr"],
               "factorization_gap_method": gap["method"],
               "learning_part": learn.get("value"), "learning_part_stderr": learn.get("stderr"),
               "delta_N": t["delta_N"], "eps_mean": eps["mean"], "eps_max": eps["max"]}
        if row["learning_part"] is not None:
            row["jensen_bound_learned"] = gap["value"] + row["learning_part"]
            row["learning_share"] = row["learning_part"] / row["jensen_bound_learned"] if row["jensen_bound_learned"] > 0 else None
        for stat in ("mean", "max"):
            bound = thm43_ser_bound(t["delta_N"], L, eps[stat])
            row[f"thm43_{stat}"] = bound
            row[f"thm43_{stat}_verdict"] = lb.judge_upper(m["ser"], m["ser_ci"][0], bound, vacuous=bound >= 1.0)
        if order is not None:
            t42 = lb.theorem42(int(order), lang.vocab_size, N, L, eps["mean"])
            row["thm42_log_ter_gap"] = t42["log_ter_gap"]
            row["thm42_bound"] = (ref["gen_ppl"] * math.exp(t42["log_ter_gap"])
                                  if t42["log_ter_gap"] is not None else None)
            row["thm42_L0"] = t42["length_threshold"]
            row["thm42_verdict"] = "not-applicable"
        if "oracle_exact_ser" in t:
            c6 = lb.lemma_c6(N, L, INTERVAL_L, eps["mean"])
            row["oracle_exact_ser"] = t["oracle_exact_ser"][str(L)]
            row["c6_lower"] = c6["value"]
            row["c6_hypothesis"] = c6["hypothesis"]
            row["c6_verdict"] = (lb.judge_lower(m["ser"], m["ser_ci"][1], c6["value"], vacuous=c6["value"] <= 0.0)
                                 if c6["hypothesis"] else "not-applicable")
        if ar is not None:
            row["ar_gen_ppl"], row["ar_ser"] = ar["gen_ppl"], ar["ser"]
        rows.append(row)
    return rows


def _interval_rows(language: str, ev: dict, theory: dict[int, dict], L: int) -> list[dict]:
    """Theorem 4.4 with the learned model: SER vs ``N / L'`` at each prefix length ``L'``."""
    eps = ev["eps_learning"]["mean"]
    rows = []
    for r in ev["rows"]:
        if r["denoiser"] != "model":
            continue
        N = r["n_steps"]
        for p, s in sorted(r.get("prefix_ser", {}).items(), key=lambda kv: int(kv[0])):
            Lp = int(p)
            exact = theory[N]["oracle_exact_ser"][p]
            oracle = next(o for o in ev["rows"] if o["denoiser"] == "oracle" and o["n_steps"] == N)["prefix_ser"][p]
            c6 = lb.lemma_c6(N, Lp, INTERVAL_L, eps)
            rows.append({"language": language, "length": Lp, "n_steps": N, "n_over_l": N / Lp,
                         "ser": s["ser"], "ser_lo": s["ser_ci"][0], "ser_hi": s["ser_ci"][1],
                         "oracle_ser_mc": oracle["ser"], "oracle_exact_ser": exact,
                         "learned_at_or_above_oracle": s["ser_ci"][1] >= exact,
                         "c6_lower_eps": c6["value"], "c6_lower_oracle": lb.lemma_c6(N, Lp, INTERVAL_L, 0.0)["value"],
                         "c6_hypothesis": c6["hypothesis"]})
    return sorted(rows, key=lambda r: (r["length"], r["n_steps"]))


def _thresholds(rows: list[dict]) -> list[dict]:
    """Steps needed for SER <= 1/2: learned (first grid N with SER <= 1/2) vs the exact oracle threshold."""
    out = []
    for Lp in sorted({r["length"] for r in rows}):
        pts = sorted((r for r in rows if r["length"] == Lp), key=lambda r: r["n_steps"])
        learned = next((r["n_steps"] for r in pts if r["ser"] <= 0.5), None)
        exact = lb.oracle_threshold(Lp, INTERVAL_L, lambda N: sampler_schedule("mdlm", N))
        out.append({"length": Lp, "learned_steps_needed": learned, "grid_max": pts[-1]["n_steps"] if pts else None,
                    "oracle_exact_steps_needed": exact, "oracle_exact_n_over_l": exact / Lp})
    return out


@dataclass
class _Collected:
    runs: dict = field(default_factory=dict)  # (language, kind) -> TrainedRun
    points: list = field(default_factory=list)
    ar: list = field(default_factory=list)
    eps: list = field(default_factory=list)
    interval: list = field(default_factory=list)
    steps_kl: dict = field(default_factory=dict)


def _given(paths: tuple[str, ...]) -> dict:
    out = {}
    for path in paths:
        ck = load_checkpoint(path)
        out[(ck.config.language, ck.config.model.kind)] = summarize(ck.config.language, ck.config.model.kind,
                                                                     ck.config, Path(ck.path), None)
    return out


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=cfg.__dict__.copy())
    parts = Parts(strict)
    got = _Collected()
    languages = cfg.languages or (LANGUAGE_SETS[cfg.train] if cfg.train else ())
    if languages:
        pairs = [(lang, kind) for lang in languages for kind in ("mdm", "ar")]
        extra = [(lang, kind) for lang in cfg.also_train if lang not in languages for kind in ("mdm", "ar")]
        trained = parts.attempt("training", lambda: train_runs(pairs + extra, cache, seed=cfg.seed, preset=cfg.preset,
                                                                workers=cfg.workers, progress=progress))
        got.runs.update({k: v for k, v in (trained or {}).items() if k in pairs})
    if cfg.checkpoints:
        got.runs.update(parts.attempt("reading the given checkpoints", lambda: _given(cfg.checkpoints)) or {})
    if not got.runs:
        if not languages and not cfg.checkpoints:
            out.missing.append("no checkpoint given and training not requested "
                               "(mdm-theory report --checkpoint FILE, --train or --train all)")
        parts.record(out)
        return out.finish(started)
    out.tables["training"] = [as_row(r) for r in got.runs.values()]
    out.notes.extend(describe(r) for r in got.runs.values())
    missed = [r for r in got.runs.values() if not r.meets_target]
    if missed:
        flagged = ", ".join(f"{r.language} {r.kind.upper()} "
                            + (f"({r.ratio:.3f})" if math.isfinite(r.ratio) else "(ratio not measured)")
                            for r in missed)
        out.notes.append(f"FLAGGED: {flagged} did not reach the validation target; their curves are shown but "
                         "marked as such.")
        # a model short of its target is a part not achieved: the section is not "ok"
        pct = {k: round(100 * (v - 1)) for k, v in TARGET_RATIO.items()}
        out.add_missed_target(f"validation target (within {pct['mdm']}% of the exact perplexity for an MDM, "
                              f"{pct['ar']}% for an AR model) not reached by {flagged}")
    for language in progress_iter(sorted({lang for lang, _ in got.runs}), progress, "learned: evaluation"):
        parts.attempt(f"evaluating {language}", lambda language=language: _language(language, got, cfg, cache))
    _tables(out, got)
    learned_plots.notes(out)
    parts.record(out)
    return out.finish(started)


def _language(language: str, got: _Collected, cfg: Config, cache: ResultCache) -> None:
    mdm, ar_run = got.runs.get((language, "mdm")), got.runs.get((language, "ar"))
    ar = None
    if ar_run is not None:
        ev_ar = _evaluate(ar_run, cfg, cache)
        ar = ev_ar["rows"][0]
        got.ar.append({"language": language, "gen_ppl": ar["gen_ppl"], "gen_ppl_lo": ar["gen_ppl_ci"][0],
                       "gen_ppl_hi": ar["gen_ppl_ci"][1], "ser": ar["ser"], "ser_lo": ar["ser_ci"][0],
                       "ser_hi": ar["ser_ci"][1], "nfe": ar["nfe"], "samples": ar["samples"],
                       "data_gen_ppl": ev_ar["reference"]["true_samples"]["gen_ppl"],
                       "meets_target": ar_run.meets_target})
    if mdm is None:
        return
    ev = _evaluate(mdm, cfg, cache)
    L = ev["length"]
    theory = {N: cache.get_or_compute("learned-theory", {"v": VERSION, "language": language, "n_steps": N, "length": L,
                                                         "jensen_samples": cfg.jensen_samples, "seed": cfg.seed},
                                      lambda N=N: _theory_point(language, N, L, cfg))
              for N in cfg.n_steps}
    points = _points(language, ev, ar, theory, L)
    for p in points:
        p["meets_target"] = mdm.meets_target
    got.points.extend(points)
    got.eps.append({"language": language, **{k: v for k, v in ev["eps_learning"].items() if k != "quantiles"},
                    **ev["eps_learning"]["quantiles"]})
    got.steps_kl[language] = [(f, k) for r in ev["rows"] if "learning_part" in r
                              for f, k in zip(r["learning_part"]["masked_fraction"], r["learning_part"]["step_kl"])]
    if language.startswith("interval"):
        got.interval.extend(_interval_rows(language, ev, theory, L))


def _tables(out: ExperimentResult, got: _Collected) -> None:
    if got.points:
        out.tables["points"] = got.points
    if got.ar:
        out.tables["ar"] = got.ar
    if got.eps:
        out.tables["eps_learning"] = got.eps
    if got.interval:
        out.tables["interval_theorem44"] = got.interval
        out.tables["interval_thresholds"] = _thresholds(got.interval)
    if got.steps_kl:
        out.data["learning_by_masked_fraction"] = learned_plots.bin_steps(got.steps_kl)


def plot(result: ExperimentResult) -> list[Plot]:
    return learned_plots.figures(result)
