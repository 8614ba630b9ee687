"""Experiment "Real text" -- TER and SER vs steps on n-gram languages fitted to a news corpus.

The analogue of the paper's OpenWebText check, with an exact ground truth: the Lee news corpus
(shipped in gensim's wheel, :mod:`numerics.languages.corpus`) fitted as a character-level and a
word-level bigram (smoothing ``none``, so the support is the observed transitions and SER is
meaningful; :mod:`numerics.languages.fit`). For each language and length ``L``:

* the data's perplexity ``TER(q) = exp(H(X_1..X_L) / L)``, exact (n-gram chain rule);
* the random-order oracle sampler (the i.i.d. schedule, ``N`` steps): the per-token Jensen bound
  ``E_tau KL(q || p(.|tau)) / L`` exactly by the Markov chain rule (``numerics.exact.markov``),
  an upper bound on ``log TER(p) - log TER(q)`` (Lemma B.2), and the SER by Monte Carlo with an
  exact support check (Clopper-Pearson 95% interval);
* the adaptive ``topk`` sampler (``N`` steps, the most confident positions first): its true
  ``KL(q || p) / L`` by Monte Carlo through the chain-rule identity (I1) and its SER by Monte
  Carlo (``validation.sweep.evaluate_point``).

With ``train`` (``report --train``), a small MDM and AR trained on sequences of ``Config.learned``
(the character bigram; at full scale also the word bigram capped at 64 words) run through the same samplers at
their trained length, beside the oracle with the same seeds (:mod:`.realtext_learned`; tables
``learned_models`` and ``learned``, each model's validation gap to the exact perplexity stated).

The paper's sentence is then checked with numbers at two lengths: the steps needed for the
exact TER bound to come within ``gap`` nats per token of the data (searched exactly over ``N``)
should not grow with ``L``, while the steps needed for ``SER <= ser_target`` (grid, 95% range)
should grow with ``L``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from numerics.languages.corpus import LEE_NAME_RE

from ..cache import ResultCache
from . import _engine as eng
from . import realtext_learned as rl
from ._base import (
    ExperimentResult,
    Parts,
    Plot,
    point_cache,
    progress_iter,
    steps_needed_range,
    stored_config,
)

NAME = "realtext"
TITLE = "Real text: TER and SER vs steps on n-grams fitted to the Lee news corpus"
VERSION = 1


@dataclass(frozen=True)
class Config:
    """Sizes of the real-text experiment.

    Attributes
    ----------
    languages : named fitted languages (``lee-char-<n>gram``, ``lee-word[-v<C>]-<n>gram``).
    lengths : the lengths ``L`` (the sentence is checked between the first and the last).
    n_steps : ``N`` of the random-order sampler's curves.
    samples : sequences per Monte Carlo SER point.
    adaptive : adaptive rules (``numerics.sampling.adaptive``; ``topk`` takes ``N``).
    adaptive_steps, adaptive_samples : grid and sample count of the adaptive points.
    gaps : per-token TER gaps (nats) for the exact steps-needed search.
    ser_targets : SER levels for the steps needed on the grid.
    schedule : schedule family.
    seed : seed of every random draw.
    learned : languages on which a small MDM and AR are trained and evaluated beside the oracle
        (:mod:`.realtext_learned`; ``()``: none).
    learned_preset : their ``neural`` size preset (``cpu-small`` with the real-text recipe of
        :data:`.learned_runs.TEXT_RECIPE`; ``tiny`` for tests).
    learned_steps : ``N`` of their random-order curves (at the trained length); the adaptive rules
        run at ``adaptive_steps``.
    learned_samples : sequences per learned (and same-stream oracle) point, and true sequences of
        the learning part and ``eps_learning``.
    learned_workers : training processes (one torch thread each).
    train : train the learned models that are not in the cache (``report --train`` sets it, as it
        does for the learned section); ``False``: use the cached ones, else list them as missing.
    """

    languages: tuple[str, ...] = ("lee-char-2gram", "lee-word-2gram")
    lengths: tuple[int, ...] = (64, 256)
    n_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    samples: int = 64
    adaptive: tuple[str, ...] = ("topk",)
    adaptive_steps: tuple[int, ...] = (4, 16)
    adaptive_samples: int = 16
    gaps: tuple[float, ...] = (0.1, 0.02)
    ser_targets: tuple[float, ...] = (0.5,)
    schedule: str = "linear"
    seed: int = 0
    learned: tuple[str, ...] = ("lee-char-2gram",)
    learned_preset: str = "cpu-small"
    learned_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    learned_samples: int = 128
    learned_workers: int = 2
    train: bool = False

    @classmethod
    def tiny(cls) -> Config:
        # The learned part on the learned section's tiny 2gram-pruned models (same run config, same
        # checkpoint): a tiny report (tests) trains no model twice; the plumbing is the language's kind's.
        return cls(languages=("lee-char-2gram",), lengths=(8, 16), n_steps=(1, 4, 16), samples=8,
                   adaptive_steps=(2,), adaptive_samples=4, learned=("2gram-pruned",), learned_preset="tiny",
                   learned_steps=(1, 4), learned_samples=4, learned_workers=1, train=True)

    @classmethod
    def full(cls) -> Config:
        return cls(languages=("lee-char-2gram", "lee-word-2gram", "lee-word-v512-2gram"), lengths=(64, 256, 1024),
                   n_steps=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), samples=1000,
                   adaptive_steps=(4, 16, 64, 256), adaptive_samples=200, ser_targets=(0.5, 0.1),
                   learned=("lee-char-2gram", "lee-word-v64-2gram"), learned_samples=1000)


def _seed(cfg: Config, *parts: int | str) -> list[int]:
    return [cfg.seed, VERSION] + [p if isinstance(p, int) else sum(map(ord, p)) for p in parts]


def _adaptive_point(cfg: Config, lang: str, L: int, N: int, rule: str) -> dict:
    from ..sweep import PointConfig, evaluate_point

    r = evaluate_point(PointConfig(lang, L, N, schedule=cfg.schedule, method="mc", samples=cfg.adaptive_samples,
                                   seed=cfg.seed, sampler=rule))
    return {"kl": r["kl"], "ser": r["ser"], "nfe": r["nfe"]}


def _ter_steps_needed(lang_obj, schedule: str, L: int, gap: float, informations: list[float]) -> dict:
    """Smallest ``N`` whose exact per-token Jensen bound is ``<= gap`` (doubling, then bisection;
    assumes the bound is non-increasing in ``N`` for the family, and returns the value at ``N - 1``)."""
    memo: dict[int, float] = {}

    def f(n: int) -> float:
        if n not in memo:
            memo[n] = eng.jensen_bound_from_informations(lang_obj, eng.schedule_for(schedule, n), L,
                                                         informations)["value"] / L
        return memo[n]

    hi = 1
    while f(hi) > gap:
        hi *= 2
        if hi > 1 << 20:
            return {"steps_needed": None, "bound_at": None, "bound_before": None}
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if f(mid) > gap:
            lo = mid
        else:
            hi = mid
    return {"steps_needed": hi, "bound_at": f(hi), "bound_before": f(hi - 1) if hi > 1 else None}


def run(cfg: Config, cache: ResultCache | None = None, progress: bool = False, strict: bool = False) -> ExperimentResult:
    started = time.perf_counter()
    cache = point_cache(cache)
    out = ExperimentResult(NAME, TITLE, config=stored_config(cfg))
    parts = Parts(strict)
    attempt = parts.attempt

    summaries = []
    fitted = tuple(lang for lang in cfg.learned if LEE_NAME_RE.fullmatch(lang))  # tiny() trains a paper language
    for lang in dict.fromkeys(cfg.languages + fitted):
        s = attempt(f"fit {lang}", lambda: eng.fitted_summary(lang))
        if s is not None:
            summaries.append({"language": lang, **s})
    if summaries:
        out.tables["languages"] = summaries

    data_rows, rows, needed = [], [], []
    for lang in progress_iter(cfg.languages, progress, "realtext: languages"):
        obj = attempt(f"fit {lang}", lambda: eng.load_language(lang))
        if obj is None:
            continue
        for L in cfg.lengths:
            base = {"v": VERSION, "language": lang, "length": L}
            d = attempt("exact data perplexity", lambda: cache.get_or_compute(
                "realtext-data", base, lambda: eng.data_ppl(obj, L, 2, _seed(cfg, lang, L))))
            if d is not None:
                data_rows.append({"language": lang, "length": L, "ter_data": d["value"],
                                  "entropy_per_token": math.log(d["value"]), "method": d["method"]})
            iota = attempt("exact Jensen bound (Markov chain rule)", lambda: cache.get_or_compute(
                "realtext-iota", base, lambda: eng.pair_informations(obj, L)))
            for N in cfg.n_steps:
                key = {**base, "steps": N, "schedule": cfg.schedule}
                j = None if iota is None else attempt("exact Jensen bound (Markov chain rule)", lambda: cache.get_or_compute(
                    "realtext-jensen", key, lambda: eng.jensen_bound_from_informations(
                        obj, eng.schedule_for(cfg.schedule, N), L, iota)))
                s = attempt("oracle SER (random order)", lambda: cache.get_or_compute(
                    "realtext-ser", {**key, "samples": cfg.samples, "seed": cfg.seed}, lambda: eng.oracle_ser(
                        obj, eng.schedule_for(cfg.schedule, N), cfg.samples, L, _seed(cfg, lang, L, N))))
                row = {"language": lang, "length": L, "sampler": "random", "steps": N,
                       "log_ter_gap": None if j is None else j["value"] / L, "log_ter_gap_kind": "upper bound (exact)",
                       "ter": None if (j is None or d is None) else d["value"] * math.exp(j["value"] / L),
                       "ser": None, "ser_lower": None, "ser_upper": None, "samples": None, "nfe": None}
                if s is not None:
                    row.update(ser=s["value"], ser_lower=s.get("lower"), ser_upper=s.get("upper"),
                               samples=s["samples"], nfe=s.get("nfe_mean"))
                rows.append(row)
            for rule in cfg.adaptive:
                for N in cfg.adaptive_steps:
                    key = {**base, "steps": N, "schedule": cfg.schedule, "rule": rule,
                           "samples": cfg.adaptive_samples, "seed": cfg.seed}
                    a = attempt(f"adaptive sampler {rule}", lambda: cache.get_or_compute(
                        "realtext-adaptive", key, lambda: _adaptive_point(cfg, lang, L, N, rule)))
                    if a is None:
                        continue
                    kl, ser = a["kl"], a["ser"]
                    gap = None if kl.get("value") is None else kl["value"] / L
                    se = "?" if kl.get("stderr") is None else f"{kl['stderr'] / L:.2g}"
                    rows.append({"language": lang, "length": L, "sampler": rule, "steps": N,
                                 "log_ter_gap": gap, "log_ter_gap_kind": f"KL(q||p)/L, mc +- {se}",
                                 "ter": None if (d is None or gap is None) else d["value"] * math.exp(gap),
                                 "ser": ser["value"], "ser_lower": ser.get("ci_low"), "ser_upper": ser.get("ci_high"),
                                 "samples": ser.get("samples"), "nfe": a["nfe"]["value"]})
            if iota is not None:
                for gap in cfg.gaps:
                    r = attempt("TER steps needed (exact search)", lambda: cache.get_or_compute(
                        "realtext-ter-needed", {**base, "gap": gap, "schedule": cfg.schedule},
                        lambda: _ter_steps_needed(obj, cfg.schedule, L, gap, iota)))
                    if r is not None:
                        needed.append({"language": lang, "length": L, "criterion": f"TER gap bound <= {gap}",
                                       "steps_needed": r["steps_needed"], "lo": r["steps_needed"],
                                       "hi": r["steps_needed"], "exact": True})
            for target in cfg.ser_targets:
                pts = [(r["steps"], r["ser"], r["ser_lower"] if r["ser_lower"] is not None else r["ser"],
                        r["ser_upper"] if r["ser_upper"] is not None else r["ser"])
                       for r in rows if r["language"] == lang and r["length"] == L and r["sampler"] == "random"
                       and r["ser"] is not None]
                if pts:
                    n = steps_needed_range(pts, target)
                    needed.append({"language": lang, "length": L, "criterion": f"SER <= {target}",
                                   "steps_needed": n.steps, "lo": n.lo, "hi": n.hi, "exact": False})
    if data_rows:
        out.tables["data"] = data_rows
    if rows:
        out.tables["curves"] = rows
    if needed:
        out.tables["steps_needed"] = needed
        out.tables["paper_sentence"] = _sentence(cfg, needed)
        for r in out.tables["paper_sentence"]:
            out.notes.append(r["reading"])
    if cfg.learned:
        _learned(cfg, cache, progress, out, attempt)
    for s in summaries:
        out.notes.append(
            f"{s['language']}: V = {s['vocab_size']}, {s['tokens']} tokens of the Lee corpus "
            f"(sha256 {s['corpus_sha256'][:12]}...), entropy rate {s['entropy_rate']:.4f} nats/token, "
            f"{s['zero_transition_share']:.1%} of the transitions never observed (the SER support)"
            + (f", {s['unk_tokens']} tokens mapped to <unk>" if s.get("unk_tokens") else "") + ".")
    parts.record(out)
    return out.finish(started)


def _learned(cfg: Config, cache: ResultCache, progress: bool, out: ExperimentResult, attempt) -> None:
    """Train (or find) the learned MDM and AR of each ``cfg.learned`` language and evaluate them beside the
    oracle at their trained length (:mod:`.realtext_learned`): tables ``learned_models`` and ``learned``."""
    runs = attempt("training the learned models", lambda: rl.train(cfg, cache, progress))
    if runs is None:
        return
    evals, rows = {}, []
    for lang in progress_iter(cfg.learned, progress, "realtext: learned models"):
        ev = attempt(f"evaluating the learned models on {lang}",
                     lambda lang=lang: rl.evaluate_language(cfg, lang, runs, cache))
        if ev is not None:
            evals[lang] = ev
            rows += rl.learned_rows(lang, ev, runs)
    out.tables["learned_models"] = rl.model_rows(runs, evals)
    missed = [m for m in out.tables["learned_models"] if not m["meets_target"]]
    if missed:  # a model short of its validation target: its curves are shown, the section is not "ok"
        out.add_missed_target("validation target not reached by " + ", ".join(
            f"{m['language']} {m['kind']} ({m['val_ratio']:.4f} against {m['target']:.2f})"
            if math.isfinite(m["val_ratio"]) else f"{m['language']} {m['kind']} (ratio not measured)"
            for m in missed))
    if rows:
        out.tables["learned"] = rows
    out.notes.extend(rl.notes(out.tables["learned_models"], rows))


def _sentence(cfg: Config, needed: list[dict]) -> list[dict]:
    """The paper's sentence at the smallest and largest length, with the numbers behind it.

    TER part: the exact steps needed at the two lengths and their ratio (the sentence says it stays
    near 1). SER part: the grid steps needed with their 95% ranges (the sentence says they grow
    with ``L``; ``None`` means the target was not met on the grid).
    """
    L1, L2 = min(cfg.lengths), max(cfg.lengths)
    out = []
    for lang in cfg.languages:
        for crit in dict.fromkeys(r["criterion"] for r in needed):
            at = {r["length"]: r for r in needed if r["language"] == lang and r["criterion"] == crit}
            if L1 not in at or L2 not in at or L1 == L2:
                continue
            a, b = at[L1], at[L2]
            n1, n2 = a["steps_needed"], b["steps_needed"]
            ratio = (n2 / n1) if (n1 and n2) else None
            if crit.startswith("TER"):
                reading = (f"{lang}, {crit} nats/token (exact): N = {n1} at L = {L1}, N = {n2} at L = {L2} "
                           f"(ratio {ratio:.2f} for a {L2 / L1:g}x longer sequence)" if ratio is not None else
                           f"{lang}, {crit}: not reached at one of the lengths")
                holds = ratio is not None and ratio < 1.5
            else:
                def rng_txt(r: dict) -> str:
                    return (f"N = {r['steps_needed']} (95% range {r['lo']}..{r['hi']})" if r["steps_needed"]
                            else f"not met up to N = {max(cfg.n_steps)}")
                reading = f"{lang}, {crit} (Monte Carlo, grid): {rng_txt(a)} at L = {L1}, {rng_txt(b)} at L = {L2}"
                if ratio is not None:
                    reading += f" (ratio {ratio:.2f})"
                overlap = (a["lo"] is not None and b["lo"] is not None and a["hi"] is not None
                           and b["lo"] <= a["hi"])  # the 95% ranges meet: the grid and samples cannot tell
                grows = n1 is not None and (n2 is None or n2 > n1)
                holds = None if (overlap and not grows) else grows
            verdict = {True: "as the paper says", False: "NOT as the paper says",
                       None: "undecided (the 95% ranges overlap)"}[holds]
            reading += "; " + verdict + (
                " (TER saturates in L)" if crit.startswith("TER") else " (SER needs more steps at larger L)") + "."
            out.append({"language": lang, "criterion": crit, "length_small": L1, "length_large": L2,
                        "steps_small": n1, "steps_large": n2, "ratio": ratio, "as_paper_says": holds,
                        "reading": reading})
    return out


def plot(result: ExperimentResult) -> list[Plot]:
    rows = result.tables.get("curves") or []
    plots = [] if not rows else [_plot_curves(rows, "log_ter_gap", "per-token TER gap (nats)", True),
                                 _plot_curves(rows, "ser", "SER", False)]
    return plots + rl.plot(result.tables.get("learned") or [])


def _plot_curves(rows: list[dict], key: str, ylabel: str, log_y: bool) -> Plot:
    from ._style import language_color, legend, length_styles, panel_grid

    langs = list(dict.fromkeys(r["language"] for r in rows))
    lengths = sorted({r["length"] for r in rows})
    styles = length_styles(lengths)
    fig, axes = panel_grid(len(langs))
    for ax, lang in zip(axes, langs):
        color = language_color(lang)
        for L in lengths:
            st = styles[L]
            for sampler, marker in (("random", st["marker"]), ("topk", "x")):
                pts = sorted((r for r in rows if r["language"] == lang and r["length"] == L and r["sampler"] == sampler
                              and r[key] is not None and (r[key] > 0 or not log_y)), key=lambda r: r["steps"])
                if not pts:
                    continue
                x = [r["steps"] for r in pts]
                ax.plot(x, [r[key] for r in pts], color=color if sampler == "random" else "k", marker=marker,
                        linestyle=st["linestyle"] if sampler == "random" else ":", alpha=st["alpha"], markersize=4,
                        label=f"L = {L}, {sampler}")
                if key == "ser" and all(r["ser_lower"] is not None for r in pts):
                    ax.fill_between(x, [r["ser_lower"] for r in pts], [r["ser_upper"] for r in pts],
                                    color=color if sampler == "random" else "k", alpha=0.12, linewidth=0)
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log")
        else:
            ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("steps N")
        ax.set_ylabel(ylabel)
        ax.set_title(lang)
        legend(ax, fontsize=7)
    if key == "ser":
        caption = ("SER of the oracle sampler on the fitted Lee-corpus bigrams vs steps: random order (Monte Carlo "
                   "with an exact support check, 95% Clopper-Pearson band) and the adaptive top-k rule (black).")
    else:
        caption = ("Per-token TER gap vs steps: random order, the exact Jensen bound E_tau KL(q||p(.|tau)) / L "
                   "(Markov chain rule; an upper bound on log TER(p) - log TER(q)); top-k (black), its true "
                   "KL(q||p) / L by Monte Carlo.")
    return Plot(f"realtext_{key}_vs_steps", fig, caption)
