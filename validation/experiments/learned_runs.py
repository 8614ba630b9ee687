"""The trained models of the report: which runs, where their checkpoints live, training them in parallel.

A run is a ``neural`` :class:`~neural.config.RunConfig` built from the ``cpu-small`` preset plus the
per-language budget of :data:`TRAIN_STEPS`; its folder is ``CACHE/train/<language>-<kind>-<hash>``
with ``<hash>`` the hash of the full config, so a second report finds the finished checkpoint and
does not retrain, and a changed config never reuses an old run. Runs are trained in a pool of
``workers`` processes with one torch thread each: these networks are small, so two single-thread
processes on two cores train about twice as fast as one two-thread process.

Each finished run is judged against its language: validation NELBO-perplexity (MDM) or
perplexity (AR) over the exact perplexity of the same validation sequences must be within
:data:`TARGET_RATIO` (3% / 1%); a run that misses is flagged in the report, not silently used.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from neural.config import PRESETS, RunConfig, make_config, run_config_from_dict
from numerics.languages.presets import load_language

from ..cache import ResultCache, key_hash
from ._base import progress_iter

__all__ = [
    "LANGUAGE_SETS",
    "PRESET",
    "SER_LANGUAGES",
    "TARGET_RATIO",
    "TER_LANGUAGES",
    "NARROW_MDMS",
    "TEXT_FAMILIES",
    "TEXT_RECIPE",
    "TRAIN_STEPS",
    "TrainedRun",
    "as_row",
    "cached_runs",
    "describe",
    "file_digest",
    "run_config",
    "runs_root",
    "summarize",
    "train_runs",
]

#: Languages trained by ``report --train`` (default) and ``report --train all``. The default set is one
#: language per theorem, sized for the 10-minute ``make report``: ``2gram`` for Theorem 4.2 (TER; its SER is
#: 0 at every ``N``, full support) and ``interval`` for Theorem 4.4 (SER); ``--train all`` adds the pruned
#: n-grams (SER), the 3-gram, 4-gram and HMM families and the real-text ``lee-char-2gram``.
LANGUAGE_SETS: dict[str, tuple[str, ...]] = {
    "default": ("2gram", "interval"),
    "all": ("2gram", "3gram", "4gram", "hmm", "2gram-pruned", "3gram-pruned", "4gram-pruned", "hmm-pruned",
            "interval", "lee-char-2gram"),
}
TER_LANGUAGES = ("2gram", "3gram", "4gram", "hmm", "interval")  # figure panels, TER metric (unpruned)
SER_LANGUAGES = ("2gram-pruned", "3gram-pruned", "4gram-pruned", "hmm-pruned", "interval")  # SER metric

PRESET = "cpu-small"
#: Optimizer steps per (language family, kind): the budget that reaches the targets on the CPU
#: where the 40-minute ``--train all`` allows it (the slow families' MDMs miss theirs, see below).
#: The interval MDM is sensitive to the warm-up length (10% of the steps): with 800 steps it stalls at
#: 2.66 x the exact perplexity, with 1600 it reaches 1.0075 and with 2400 1.0005 (seed 0, lr 3e-3).
#: The HMM AR needs 1500 steps (hmm-pruned: 1.042 after 800 steps at L = 32, 1.023 after 1000 and
#: after 1500 at L = 16).
#: A key may name a language exactly (looked up first) or its family (``-pruned`` removed). The ARs of the
#: default report were cut on 2026-11-27 to what reaches the 1% target with margin (one thread, seed 0): the
#: 2gram AR 1.0040 [1.0034, 1.0047] after 150 steps (1.0007 after 300), the interval AR 1.0036 [1.0031,
#: 1.0042] after 250 (1.0017 after 500); the 2gram MDM misses its 3% at 500 steps (1.0372), so it keeps 800
#: (1.0166). ``2gram-pruned``'s AR keeps the family's 300 (not re-measured).
TRAIN_STEPS: dict[tuple[str, str], int] = {
    ("2gram", "mdm"): 2000, ("2gram-pruned", "mdm"): 800, ("3gram", "mdm"): 3000, ("4gram", "mdm"): 3000, ("hmm", "mdm"): 3000,
    ("interval", "mdm"): 1600,
    ("2gram", "ar"): 150, ("2gram-pruned", "ar"): 300, ("3gram", "ar"): 800, ("4gram", "ar"): 1500,
    ("hmm", "ar"): 1500, ("interval", "ar"): 250,
    # The fitted Lee-corpus bigrams (numerics.languages.corpus: characters, V = 55; words capped at 64, V = 64)
    # train the narrower TEXT_RECIPE network, sized for the real-text section of the default report.
    ("lee-char-2gram", "mdm"): 1000, ("lee-char-2gram", "ar"): 300,
    ("lee-word-v64-2gram", "mdm"): 1000, ("lee-word-v64-2gram", "ar"): 600,
}
#: Peak learning rate per kind (measured on the 4-gram AR: 1.038 x the exact perplexity after 600
#: steps at 3e-3, 1.0072 after 1500 at 1e-2).
LEARNING_RATES = {"mdm": 3e-3, "ar": 1e-2}
#: The families whose MDM learns slowly at the cpu-small size. The gap of such a model to the exact
#: posterior sits where few positions are masked (the denoiser must combine the n-gram windows on both
#: sides), so their MDMs draw the masked count with probability ~ 1/k (``count_power`` 1, the same
#: NELBO) and train on L = 16 with batch 256 (the same tokens per step, twice the sequences), at lr
#: 6e-3; their AR baselines use the same L and batch, so that a figure panel compares one length.
#: Measured on the 4-gram MDM, 3000 steps: 1.54 x the exact perplexity with the cpu-small recipe
#: (L = 32, uniform counts), 1.41 with count_power 1, 1.33 with count_power 1 at L = 16.
SLOW_FAMILIES = ("3gram", "4gram", "hmm")
#: Their runs (800 to 3000 steps of one shape: the MDMs share one compiled graph, the ARs another)
#: train through ``torch.compile`` (``TrainConfig.compile``): 1.39 x faster a step for the MDM, 1.30 x
#: for the AR on one CPU thread. The short default runs stay eager: compiled, with torch's compile
#: cache empty, they cost the default report more than they saved (fresh clone: 510 s instead of
#: 416 s). A machine where torch cannot compile trains eager (the report says which).
SLOW_RECIPE = {"model": {"length": 16}, "train": {"batch_size": 256, "compile": True}}
SLOW_MDM_TRAIN = {"lr": 6e-3, "count_power": 1.0}
#: Interval language: L a multiple of l = 5 (Definition C.4), per preset; its law depends on the
#: absolute position (intervals start at multiples of l), so its networks get absolute position
#: embeddings (measured: without them the cpu-small MDM plateaus at 2.7 x the exact perplexity).
INTERVAL_LENGTHS = {"cpu-small": 20, "tiny": 10, "paper": 510}
#: The fitted Lee-corpus languages (the real-text section, ``validation.experiments.realtext``; and
#: ``lee-char-2gram`` in ``--train all``, which shares the checkpoint) train a narrower network: width 32,
#: 2 blocks, 2 heads, about 4.5 x cheaper a step than ``cpu-small`` on one CPU thread, so that both
#: languages' MDM and AR fit the default report. Measured on lee-char-2gram (seed 0, one thread, a loaded
#: 2-core machine): MDM 1200 steps at the MDM lr 3e-3 reach 1.0965 x the exact perplexity, with lr 6e-3 and
#: count_power 1 (SLOW_MDM_TRAIN) 1.0647 [1.0609, 1.0686] in 92 CPU-s of optimizer steps; the ``cpu-small``
#: network reached 1.0816 after 800 steps in 255 CPU-s. AR 300 steps: 1.0171 [1.0152, 1.0189] in 18 CPU-s.
#: With the budget of TRAIN_STEPS (1000 MDM steps; AR 300 on characters, 600 on words), in the report's pool
#: (two workers, the same loaded machine): lee-char-2gram MDM 1.0656 [1.0616, 1.0697] in 76 CPU-s, AR 1.0171
#: in 22; lee-word-v64-2gram MDM 1.0702 [1.0659, 1.0744] in 76, AR 1.0154 [1.0139, 1.0169] in 36 (1.0453
#: after 300 steps). They miss the learned section's 3% / 1% targets; the real-text section states each gap.
TEXT_FAMILIES = ("lee-char-2gram", "lee-word-v64-2gram")
#: The ``2gram`` MDM of the default report trains the same narrower network for 2000 steps (lr 3e-3, uniform
#: counts): 1.0259 [1.0237, 1.0281] x the exact perplexity in 68 CPU-s of optimizer steps, where the
#: ``cpu-small`` network's 800 steps reached 1.0166 in 119 (seed 0, one thread, 2026-11-28; with 800 steps the
#: narrow one stops at 1.047, with lr 6e-3 and count_power 1 at 1.040). Both meet the 3% target; the narrow
#: one leaves 50 CPU-s of the 10-minute ``make report`` to the rest. Its AR and ``2gram-pruned`` keep ``cpu-small``.
NARROW_MDMS = ("2gram",)
TEXT_RECIPE = {"model": {"width": 32, "n_layers": 2, "n_heads": 2, "cond_dim": 16}}
TARGET_RATIO = {"mdm": 1.03, "ar": 1.01}  # validation (NELBO-)perplexity / exact perplexity


def _family(language: str) -> str:
    return language.removesuffix("-pruned")


def run_config(language: str, kind: str, seed: int = 0, preset: str = PRESET) -> RunConfig:
    """The report's run for ``(language, kind)``: ``preset`` with the language's steps and length."""
    vocab = load_language(language).vocab_size
    fam = _family(language)
    model = {"length": INTERVAL_LENGTHS[preset], "absolute_positions": True} if fam == "interval" else {}
    if preset != PRESET:  # tests (``tiny``) and the paper scale take the preset's budget
        return make_config(preset, language=language, kind=kind, vocab_size=vocab, seed=seed,
                           overrides={"model": model})
    steps = TRAIN_STEPS.get((language, kind)) or TRAIN_STEPS[(fam, kind)]
    train = {"train_steps": steps, "lr": LEARNING_RATES[kind], "eval_every": steps,
             "checkpoint_every": max(100, steps // 4)}
    if fam in SLOW_FAMILIES:
        model.update(SLOW_RECIPE["model"])
        train.update(SLOW_RECIPE["train"], **(SLOW_MDM_TRAIN if kind == "mdm" else {}))
    if language in NARROW_MDMS and kind == "mdm":
        model.update(TEXT_RECIPE["model"])
    if fam in TEXT_FAMILIES:
        model.update(TEXT_RECIPE["model"])
        train.update(SLOW_MDM_TRAIN if kind == "mdm" else {})
    batch = train.get("batch_size", PRESETS[preset]["train"]["batch_size"])
    return make_config(preset, language=language, kind=kind, vocab_size=vocab, seed=seed,
                       overrides={"model": model, "train": train, "data": {"n_train": steps * batch}})


@dataclass(frozen=True)
class TrainedRun:
    """A finished (or stopped) training run and how it compares with its language.

    Attributes
    ----------
    language, kind : str
    checkpoint : str
        Path of ``checkpoint.pt``.
    config_hash : str
    complete : bool
    train_steps : int
    ratio, ratio_ci : float, [float, float]
        Validation (NELBO-)perplexity over the exact perplexity of the same sequences, with its 95%
        interval (paired over sequences).
    target : float
        :data:`TARGET_RATIO` of the kind; ``meets_target`` is ``ratio <= target``.
    val_ppl, data_ppl, true_ppl : float
        Validation (NELBO-)perplexity, exact perplexity of the validation sequences, exact entropy
        rate's perplexity (NaN where the language has none).
    tokens_per_second, cpu_seconds, wall_seconds : float
        Of the optimizer steps (validation excluded; wall: the whole call), in the process that
        trained the run, recorded in the cache with the run; NaN for a checkpoint found without
        its record.
    threads : int
    compiled : bool
        Whether the steps ran through ``torch.compile`` (:data:`SLOW_RECIPE`; False where torch could not).
    checkpoint_sha256 : str
        Content hash of the checkpoint the figures belong to.
    """

    language: str
    kind: str
    checkpoint: str
    config_hash: str
    complete: bool
    train_steps: int
    ratio: float
    ratio_ci: list
    target: float
    meets_target: bool
    val_ppl: float
    data_ppl: float
    true_ppl: float
    tokens_per_second: float
    cpu_seconds: float
    wall_seconds: float
    threads: int
    compiled: bool
    checkpoint_sha256: str


def _train_one(cfg_dict: dict, out_dir: str, data_root: str, threads: int) -> dict:
    """Worker: train one run with ``threads`` torch threads; its figures as plain data."""
    import torch

    from neural.train import train

    if threads > 0:  # 0: keep this process's setting
        torch.set_num_threads(threads)
    cfg = run_config_from_dict(cfg_dict)
    started = time.perf_counter()
    res = train(cfg, out_dir, progress=False, data_root=data_root)
    return {"tokens_per_second": res.tokens_per_second, "cpu_seconds": res.cpu_seconds,
            "wall_seconds": time.perf_counter() - started, "threads": torch.get_num_threads(), "compiled": res.compiled}


def file_digest(path: str | Path) -> str:
    """The first 16 hex digits of a file's SHA-256."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def summarize(language: str, kind: str, cfg: RunConfig, path: Path, figures: dict | None) -> TrainedRun:
    """The :class:`TrainedRun` of the checkpoint at ``path`` (``figures``: the training process's speed, if known)."""
    from neural.train import load_checkpoint

    ck = load_checkpoint(path)
    final = ck.history[-1] if ck.history else {}
    figures = figures or {}
    nan = float("nan")
    ratio = final.get("ppl_ratio", nan)
    target = TARGET_RATIO[kind]
    true = nan
    metrics = path.parent / "metrics.json"
    if metrics.exists():
        true = json.loads(metrics.read_text()).get("reference", {}).get("true_ppl", nan)
    return TrainedRun(language, kind, str(path), key_hash("run", cfg.to_dict()), ck.complete, ck.step, ratio,
                      final.get("ppl_ratio_ci", [nan, nan]), target, bool(ratio <= target),
                      final.get("val_ppl", nan), final.get("data_ppl", nan), true,
                      figures.get("tokens_per_second") or nan, figures.get("cpu_seconds", nan),
                      figures.get("wall_seconds", nan), figures.get("threads", 0), bool(figures.get("compiled")),
                      file_digest(path))


def _finished(path: Path) -> bool:
    from neural.train import CheckpointError, load_checkpoint

    try:
        return path.exists() and load_checkpoint(path).complete
    except CheckpointError:
        return False


def runs_root(cache: ResultCache) -> Path:
    """``CACHE/train``, or a fresh temporary folder when the cache keeps nothing."""
    if cache.root is not None:
        return Path(cache.root) / "train"
    return Path(tempfile.mkdtemp(prefix="mdm-theory-train-"))


def _how(threads: int, compiled: bool) -> str:
    return f"{threads} thread(s){' (torch.compile)' if compiled else ''}"


def _say(progress: bool, key: tuple[str, str], fig: dict) -> None:
    if progress:
        print(f"[report] learned: trained {key[0]} {key[1].upper()}: {fig['tokens_per_second']:,.0f} tokens/s on "
              f"{_how(fig['threads'], fig['compiled'])}, {fig['cpu_seconds']:.0f} CPU-s in optimizer steps, {fig['wall_seconds']:.0f} s",
              file=sys.stderr, flush=True)


def _record_key(cfg: RunConfig) -> dict:
    return {"v": 2, "config": cfg.to_dict()}


def _plan(pairs: list[tuple[str, str]], cache: ResultCache, root: Path, seed: int, preset: str) -> tuple:
    """``(plan, found, recorded)``: each pair's config and folder, the finished runs among them, and those
    whose record the cache holds (the others are summarized from their checkpoint)."""
    plan, found, recorded = [], {}, set()
    for language, kind in pairs:
        cfg = run_config(language, kind, seed, preset)
        out = root / f"{language}-{kind}-{key_hash('run', cfg.to_dict())}"
        plan.append((language, kind, cfg, out))
        ckpt = out / "checkpoint.pt"
        if _finished(ckpt):
            ok, row = cache.load("learned-run", _record_key(cfg))
            if ok and row["checkpoint_sha256"] == file_digest(ckpt):
                found[(language, kind)] = TrainedRun(**row)
                recorded.add((language, kind))
            else:
                found[(language, kind)] = summarize(language, kind, cfg, ckpt, None)
    return plan, found, recorded


def cached_runs(pairs: list[tuple[str, str]], cache: ResultCache, *, seed: int = 0, preset: str = PRESET
                ) -> tuple[dict[tuple[str, str], TrainedRun], list[tuple[str, str]]]:
    """The finished runs of ``pairs`` that :func:`train_runs` would reuse, and the pairs it would train."""
    if cache.root is None:
        return {}, list(pairs)
    _, found, _ = _plan(pairs, cache, runs_root(cache), seed, preset)
    return found, [p for p in pairs if p not in found]


def train_runs(pairs: list[tuple[str, str]], cache: ResultCache, *, seed: int = 0, preset: str = PRESET,
               workers: int = 2, progress: bool = False) -> dict[tuple[str, str], TrainedRun]:
    """Train (or find finished) every ``(language, kind)`` of ``pairs``; ``workers`` processes, one thread each.

    A finished checkpoint is reused with the record (:class:`TrainedRun`) stored in the cache when
    it trained it; ``workers <= 1`` trains in this process (tests). Longest runs start first.
    """
    root = runs_root(cache)
    plan, found, recorded = _plan(pairs, cache, root, seed, preset)
    todo = [p for p in plan if (p[0], p[1]) not in found]
    todo.sort(key=lambda p: -p[2].train.train_steps * p[2].train.batch_size * p[2].model.length)  # tokens
    figures: dict[tuple[str, str], dict] = {}
    data_root = str(root / "data")
    if todo and progress:
        print(f"[report] learned: training {len(todo)} model(s) in {min(max(workers, 1), len(todo))} process(es): "
              + ", ".join(f"{lang} {kind.upper()} ({cfg.train.train_steps} steps)" for lang, kind, cfg, _ in todo),
              file=sys.stderr, flush=True)
    if todo and workers > 1:
        with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=get_context("spawn")) as pool:
            futures = {pool.submit(_train_one, cfg.to_dict(), str(out), data_root, 1): (lang, kind)
                       for lang, kind, cfg, out in todo}
            for future in progress_iter(as_completed(futures), progress, "learned: training", total=len(futures)):
                key = futures[future]  # said as each finishes, not in the order they started
                figures[key] = future.result()
                _say(progress, key, figures[key])
    else:
        for lang, kind, cfg, out in progress_iter(todo, progress, "learned: training"):
            figures[(lang, kind)] = _train_one(cfg.to_dict(), str(out), data_root, 0)
            _say(progress, (lang, kind), figures[(lang, kind)])
    out_runs = {}
    for lang, kind, cfg, out in plan:
        run = found.get((lang, kind)) or summarize(lang, kind, cfg, out / "checkpoint.pt", figures[(lang, kind)])
        if (lang, kind) not in recorded:
            cache.store("learned-run", _record_key(cfg), as_row(run))
        out_runs[(lang, kind)] = run
    return out_runs


def describe(run: TrainedRun) -> str:
    """One line for the report: the ratio against the target, and the training speed."""
    if not math.isfinite(run.ratio):  # never measured: no ratio to compare with the target
        return (f"{run.language} {run.kind.upper()}: validation perplexity / exact not measured after "
                f"{run.train_steps} steps, so the {100 * (run.target - 1):.0f}% target was not checked.")
    status = "meets" if run.meets_target else "MISSES"
    speed = (f"; {run.tokens_per_second:,.0f} tokens/s on {_how(run.threads, run.compiled)}, {run.cpu_seconds:.0f} CPU-s"
             if math.isfinite(run.tokens_per_second) else "; checkpoint found without its training record")
    if not math.isfinite(run.ratio):  # never validated (a run stopped before its first validation): nothing to judge
        return (f"{run.language} {run.kind.upper()}: no validation ratio measured after {run.train_steps} steps (its "
                f"checkpoint holds no validation), so the {100 * (run.target - 1):.0f}% target is not judged{speed}.")
    return (f"{run.language} {run.kind.upper()}: validation {'NELBO-' if run.kind == 'mdm' else ''}perplexity / "
            f"exact = {run.ratio:.4f} [{run.ratio_ci[0]:.4f}, {run.ratio_ci[1]:.4f}] after {run.train_steps} steps "
            f"({status} the {100 * (run.target - 1):.0f}% target){speed}.")


def as_row(run: TrainedRun) -> dict[str, Any]:
    return {k: getattr(run, k) for k in run.__dataclass_fields__}
