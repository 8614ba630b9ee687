"""One grid point of the oracle sampler's metrics, and a resumable sweep over a grid of them.

:func:`evaluate_point` computes, for one :class:`PointConfig` (language, ``L``, ``N``, schedule,
sampler), every metric by :func:`numerics.metrics.point_metrics` -- the one home of "all metrics
of a point" and of the method choice (:mod:`numerics.methods`) -- and writes it as a JSON-ready
row with the inputs, the method, the sampler, the tie seed and the timing.

:func:`run_sweep` runs a list of configs and appends one JSON row per point to a JSONL table
(config, config hash, result, commit, versions) under the table's lock, rewriting the file
atomically per row, so concurrent sweeps into one table keep every row; a re-run
skips points whose config hash is already there and detects rows that do not check out (bad
JSON, a config that no longer hashes to its recorded hash, a result that does not match its
checksum). Beside the table it writes flat Parquet and CSV copies, one row per point
(:mod:`validation.tables`; columns in docs/schema.md).
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from numerics.methods import METHODS
from numerics.provenance import (
    atomic_write_bytes,
    check_writable_file,
    config_hash,
    provenance,
    to_jsonable,
)
from numerics.sampling.registry import DECODER_FIELDS, OPTIONS, REVISERS, Options, option_takers
from numerics.schedules import Schedule, make_schedule
from validation.canvas_samplers import GEMMA, GEMMA_FIELDS, GEMMA_METHODS, NOISES, REVISER_FIELDS, check_reviser
from validation.executors import EXECUTORS, run_dask, run_local
from validation.guards import guard_output

__all__ = [
    "METHODS",
    "CorruptRowsError",
    "PointConfig",
    "SAMPLER_FIELDS",
    "SweepReport",
    "SweepRow",
    "check_costs",
    "evaluate_point",
    "grid",
    "read_table",
    "run_sweep",
    "table_lock",
    "table_paths",
    "write_flat_tables",
]

#: Fields left out of :meth:`PointConfig.as_dict` at their default, so that the config hash of a
#: point is what it was before the field existed (tables stay resumable).
_HASH_DEFAULTS = {"tie_seed": 0, "noise": "mask"}

_FIELDS = ("language", "length", "n_steps", "schedule", "method", "samples", "seed", "ser_language", "batch_size",
           "sampler", "gamma", "confidence", "tie_seed", "noise")

#: Every option a point's ``options`` may hold: the decoders' (:data:`~numerics.sampling.registry.DECODER_FIELDS`),
#: then the revisers' own and gemma-renoise's (:mod:`validation.canvas_samplers`). Each enters the hash and the
#: random streams only when set, so the points of the samplers before them keep theirs.
SAMPLER_FIELDS = DECODER_FIELDS + REVISER_FIELDS + tuple(k for k in GEMMA_FIELDS if k not in REVISER_FIELDS)
#: The samplers that act on a canvas and take no steps (``n_steps`` is 1, unused): the revisers, gemma-renoise.
CANVAS_SAMPLERS = (*REVISERS, GEMMA)


@dataclass(frozen=True, init=False)
class PointConfig:
    """One point of a sweep (everything that determines its numbers).

    Attributes
    ----------
    language : str
        Preset name or ``.npz`` path (:func:`numerics.languages.presets.load_language`); KL/TER/gen. perplexity/Jensen.
    length : int
        ``L``.
    n_steps : int
        ``N`` (written ``steps`` in the config's JSON and hash, as before the rename).
    schedule : str
        Schedule family (:data:`numerics.schedules.SCHEDULES`), e.g. ``polynomial:3`` for a parameter.
    method : str
        ``auto``, ``closed-form``, ``enumerate``, ``dp`` or ``mc`` (:mod:`numerics.methods`).
    samples : int
        Monte Carlo sample count (each MC quantity).
    seed : int
    ser_language : str or None
        Language whose SER is measured (e.g. the pruned variant); ``None``: ``language``.
    batch_size : int
        Sequences per sampler batch (the ``ddpm_cache`` NFE depends on it; 1 = per sequence).
    sampler : str
        A name of the sampler registry :data:`numerics.sampling.registry.DECODERS`: ``random`` (the
        i.i.d. schedule sampler), an adaptive rule (``topk``, ``threshold``, ``entropy-sum``) or a
        decoder (``llada``, ``fast-dllm``, ``eb``, ``remdm``, ...). What it needs (``n_steps``, the
        ``schedule``) and takes is its registry entry's. Or a sampler that acts on a canvas
        (:data:`CANVAS_SAMPLERS`, :mod:`validation.canvas_samplers`): a revising decoder of
        :data:`~numerics.sampling.registry.REVISERS` (``llada21``, ``wino``) or ``gemma-renoise``
        (``noise="uniform"``); these take no steps (``n_steps`` 1) and no schedule.
    gamma : float or None
        Threshold of ``threshold`` / entropy bound (nats) of ``entropy-sum``, ``eb`` and ``gemma-renoise``.
    confidence : str
        ``maxprob``, ``margin`` or ``neg-entropy`` (``topk``, ``threshold``).
    tie_seed : int
        Seed of the adaptive rules' and decoders' tie priority (``numerics.sampling.adaptive.tie_priority``);
        the random sampler has no ties. Left out of the hash at 0 (the value before it was an option).
    options : Options
        The sampler's other options (:data:`numerics.sampling.registry.DECODER_FIELDS`: ``block_length``,
        ``remasking``, ``temperature``, ``threshold``, ``factor``, ``remdm_variant``, ``eta``, ...), a
        frozen mapping of the options given (unset = the registry's default). The constructor also takes
        them as keywords (``PointConfig(..., eta=0.1)``, ``dataclasses.replace(cfg, eta=0.2)``; ``None``
        unsets) and ``cfg.eta`` reads one (``None`` when not given). Each enters the hash as its own
        key, only when set, so every table written before the mapping existed keeps its hashes. The revisers'
        own options and gemma-renoise's (:data:`SAMPLER_FIELDS`) likewise.
    noise : str
        ``"mask"`` (masked diffusion) or ``"uniform"`` (uniform-noise diffusion: the factorized reverse
        process of ``random``, or ``gemma-renoise``). Left out of the hash at ``"mask"``.
    """

    language: str
    length: int
    n_steps: int
    schedule: str = "linear"
    method: str = "auto"
    samples: int = 1000
    seed: int = 0
    ser_language: str | None = None
    batch_size: int = 1
    sampler: str = "random"
    gamma: float | None = None
    confidence: str = "maxprob"
    tie_seed: int = 0
    options: Options = field(default_factory=Options)
    noise: str = "mask"

    def __init__(self, language: str, length: int, n_steps: int, schedule: str = "linear", method: str = "auto",  # noqa: PLR0917 (the dataclass order)
                 samples: int = 1000, seed: int = 0, ser_language: str | None = None, batch_size: int = 1,
                 sampler: str = "random", gamma: float | None = None, confidence: str = "maxprob", tie_seed: int = 0,
                 options: Mapping[str, Any] | None = None, noise: str = "mask", **flat: Any) -> None:
        values = dict(zip(_FIELDS, (language, length, n_steps, schedule, method, samples, seed, ser_language,
                                    batch_size, sampler, gamma, confidence, tie_seed, noise)))
        unknown = sorted(set(flat) - set(SAMPLER_FIELDS))
        if unknown:
            raise TypeError(f"PointConfig got unknown option(s) {', '.join(unknown)}; "
                            f"the sampler options are {', '.join(SAMPLER_FIELDS)}")
        opts = {**dict(options or {}), **flat}
        foreign = sorted(set(opts) - set(SAMPLER_FIELDS))
        if foreign:
            raise ValueError(f"unknown option(s) {', '.join(foreign)}; the sampler options are "
                             f"{', '.join(SAMPLER_FIELDS)}")
        for k, v in values.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "options", Options(opts))
        self.__post_init__()

    def __getattr__(self, name: str) -> Any:
        if name in SAMPLER_FIELDS and "options" in self.__dict__:
            return self.__dict__["options"].get(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {METHODS}")
        for name in ("length", "n_steps", "samples", "batch_size"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        for name in ("seed", "tie_seed"):
            v = getattr(self, name)
            if int(v) != v or v < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {v!r}")
        if self.method == "mc" and self.samples < 2:
            raise ValueError("Monte Carlo needs samples >= 2")
        # a bad sampler / option combination fails here, with its reason; the sampler is kept (built once)
        object.__setattr__(self, "_sampler", self._build_sampler())

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_sampler"}  # rebuilt on first use

    def rng(self, stream: str) -> np.random.Generator:
        """A generator fixed by the seed, the point (not its position in a grid) and ``stream``."""
        key = f"{self.language}|{self.ser_language}|{self.length}|{self.n_steps}|{self.schedule}|{stream}"
        if self.sampler != "random":
            key += f"|{self.sampler}|{self.gamma}|{self.confidence}"
            if self.tie_seed != _HASH_DEFAULTS["tie_seed"]:
                key += f"|tie{self.tie_seed}"
            for name in SAMPLER_FIELDS:  # a sampler's options, only when set (the other samplers' keys unchanged)
                if name in self.options:
                    key += f"|{name}={self.options[name]}"
        if self.noise != _HASH_DEFAULTS["noise"]:
            key += f"|noise={self.noise}"
        return np.random.default_rng([int(self.seed), zlib.crc32(key.encode())])

    def as_dict(self) -> dict:
        """The fields as hashed and stored: ``n_steps`` under its old name ``steps``, each option given
        as its own key, without the sampler fields of the default ``random`` sampler and without a
        default tie seed (so the config hash of a point is what it was before these were options,
        renamed, or gathered into ``options``)."""
        d = {("steps" if k == "n_steps" else k): getattr(self, k) for k in _FIELDS}
        if self.sampler == "random":
            for name in ("sampler", "gamma", "confidence", "tie_seed"):
                d.pop(name)
        for name, default in _HASH_DEFAULTS.items():
            if d.get(name, default) == default:
                d.pop(name, None)
        d.update(self.options)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> PointConfig:
        """The config of a stored row (:meth:`as_dict`'s inverse)."""
        d = dict(d)
        if "steps" in d:
            d["n_steps"] = d.pop("steps")
        return cls(**d)

    def make_sampler(self):
        """The :class:`numerics.sampling.samplers.Sampler` of this point, built (and checked against
        ``length``) once, when the config was made."""
        sampler = self.__dict__.get("_sampler")
        if sampler is None:
            sampler = self._build_sampler()
            object.__setattr__(self, "_sampler", sampler)
        return sampler

    def _build_sampler(self):
        """The sampler of the registry entry :attr:`sampler` from this point's options (module docstring)."""
        from numerics.sampling.registry import DECODERS, decoder_names

        if self.noise not in NOISES:
            raise ValueError(f"unknown noise {self.noise!r}; choose one of {NOISES}")
        if self.sampler in CANVAS_SAMPLERS:
            return self._build_canvas_sampler()
        spec = DECODERS.get(self.sampler)
        if spec is None:
            raise ValueError(f"unknown sampler {self.sampler!r}; choose one of {tuple(DECODERS) + CANVAS_SAMPLERS}")
        if self.noise != "mask" and self.sampler != "random":
            raise ValueError(f"--noise {self.noise} supports --sampler random (the factorized reverse process) and "
                             f"{GEMMA}, not {self.sampler!r}")
        if self.noise != "mask" and (self.method not in GEMMA_METHODS or self.schedule == "optimal"):
            raise ValueError(f"--noise {self.noise} supports --method {', '.join(GEMMA_METHODS)} and a schedule "
                             f"family other than optimal (optimal for masking), not --method {self.method} "
                             f"--schedule {self.schedule}")
        opts = dict(self.options)
        canvas = [k for k in opts if k not in DECODER_FIELDS]
        if any(k in REVISER_FIELDS for k in canvas):
            check_reviser(self.sampler, opts)  # raises: a reviser's own option given to another sampler
        if canvas:
            raise ValueError(f"{', '.join('--' + k.replace('_', '-') for k in canvas)}: option(s) of --sampler "
                             f"{GEMMA} only, not of --sampler {self.sampler}")
        foreign = [k for k in DECODER_FIELDS if k in opts and k not in spec.option_names]
        if foreign and spec.kind != "decoder":
            names = ", ".join(decoder_names("decoder"))
            raise ValueError(f"{', '.join(OPTIONS[k].flag for k in foreign)} apply to the decoders ({names}), "
                             f"not to --sampler {self.sampler}")
        if spec.kind == "random" and (self.gamma is not None or self.confidence != OPTIONS["confidence"].default):
            raise ValueError("the random sampler takes a schedule only (no gamma, no confidence, no block length)")
        if self.gamma is not None:
            if "gamma" not in spec.option_names:
                raise ValueError(f"--gamma applies to {_takers('gamma')}, not to {self.sampler}")
            opts["gamma"] = self.gamma
        if self.confidence != OPTIONS["confidence"].default:
            if "confidence" not in spec.option_names:
                raise ValueError(f"--confidence {self.confidence} applies to {_takers('confidence')}, not to "
                                 f"{self.sampler}" + (" (the decoders score by their --remasking)"
                                                      if spec.kind == "decoder" else ""))
            opts["confidence"] = self.confidence
        return spec.build(opts, steps=self.n_steps if "steps" in spec.needs else None,
                          schedule=self.make_schedule() if "schedule" in spec.needs else None,
                          tie_seed=self.tie_seed, length=self.length)

    def _build_canvas_sampler(self):
        """A reviser (:class:`~numerics.sampling.revisers.Reviser`, its blocks checked against ``L``) or
        gemma-renoise (:class:`~numerics.sampling.gemma.Renoise`); a ValueError naming what does not fit."""
        from validation.canvas_samplers import build_renoise

        if self.confidence != OPTIONS["confidence"].default:
            raise ValueError(f"--sampler {self.sampler} does not take --confidence")
        if self.tie_seed != _HASH_DEFAULTS["tie_seed"]:
            raise ValueError(f"--sampler {self.sampler} takes no --tie-seed (its ties go to the lowest index)")
        if self.sampler == GEMMA:
            if self.noise != "uniform":
                raise ValueError(f"--sampler {GEMMA} needs --noise uniform (it renoises a uniform-noise canvas)")
            if self.method not in GEMMA_METHODS:
                raise ValueError(f"--sampler {GEMMA} supports --method {', '.join(GEMMA_METHODS)}, not "
                                 f"{self.method!r}")
            return build_renoise(self.options, self.gamma)
        if self.noise != "mask":
            raise ValueError(f"--noise {self.noise} supports --sampler random and {GEMMA}, not {self.sampler!r}")
        rv = REVISERS[self.sampler].build(check_reviser(self.sampler, self.options, self.gamma))
        rv.block(self.length)
        return rv

    def make_schedule(self) -> Schedule:
        """The schedule family at ``n_steps``; ``"optimal"``: the information-curve DP schedule for this
        language and length (:func:`numerics.exact.schedule_opt.optimal_schedule`)."""
        if self.schedule == "optimal":
            from numerics.exact.schedule_opt import optimal_schedule
            from numerics.languages.presets import load_language

            return optimal_schedule(load_language(self.language), self.length, self.n_steps)
        return make_schedule(self.schedule, self.n_steps)


def _takers(option: str) -> str:
    """The samplers that take ``option`` in words: the decoders first, the adaptive rules in brackets."""
    from numerics.sampling.registry import DECODERS

    takers = option_takers(option)
    dec = [n for n in takers if DECODERS[n].kind == "decoder"]
    other = [n for n in takers if DECODERS[n].kind != "decoder"]
    if not dec:
        return " and ".join(other)
    return " / ".join(dec) + (f" (and {' / '.join(other)})" if other else "")


def evaluate_point(cfg: PointConfig) -> dict[str, Any]:
    """All metrics of one point (:func:`numerics.metrics.point_metrics`) as a JSON-ready dict.

    Keys: ``inputs`` (the config as hashed), ``method`` (the method that ran), ``method_choice``
    (the estimated cost of each exact method; random sampler), ``ser_method_choice`` (the SER
    language's, when it differs), ``schedule_name``, ``sampler_name``, ``tie_seed`` (the adaptive
    rules' tie seed; ``null`` for the random sampler, which has no ties), ``sampler_parameters``
    (a decoder's every parameter, defaults included), every metric of
    :class:`numerics.metrics.PointMetrics` as an estimate record
    (:meth:`numerics.estimate.Estimate.json_record`; an unavailable one has ``value = None`` and
    the reason), and ``elapsed_s``.
    """
    from numerics.languages.presets import load_language
    from numerics.metrics import point_metrics

    t0 = time.perf_counter()
    if cfg.noise != "mask" or cfg.sampler in CANVAS_SAMPLERS:
        return _canvas_point(cfg, t0)
    language = load_language(cfg.language)
    same = cfg.ser_language in (None, cfg.language)
    ser_language = None if same else load_language(cfg.ser_language)
    m = point_metrics(language, cfg.length, cfg.make_sampler(), method=cfg.method, samples=cfg.samples, rng=cfg.rng,
                      ser_language=ser_language, batch_size=cfg.batch_size, names=(cfg.language, cfg.ser_language))
    out: dict[str, Any] = {"inputs": cfg.as_dict(), "method": m.how.method}
    if m.how.choice is not None:
        out["method_choice"] = m.how.choice.as_dict()
    out.update(schedule_name=cfg.make_schedule().name, sampler_name=m.how.sampler, tie_seed=m.how.tie_seed)
    if m.how.parameters is not None:  # a decoder: every parameter, defaults included
        out["sampler_parameters"] = m.how.parameters
    if m.how.ser_choice is not None:
        out["ser_method_choice"] = m.how.ser_choice.as_dict()
    return {**out, **{k: to_jsonable(v) for k, v in m.metrics().items()}, "elapsed_s": time.perf_counter() - t0}


def _canvas_point(cfg: PointConfig, t0: float) -> dict[str, Any]:
    """:func:`evaluate_point` of a reviser (:func:`numerics.metrics.point_metrics` of its chain over canvases or
    Monte Carlo, with the law of its calls ``calls_law``), of gemma-renoise
    (:func:`validation.canvas_samplers.gemma_point`) or of the factorized uniform-noise sampler
    (:func:`validation.experiments.noise.uniform_point`), as ``exact`` computes them."""
    from numerics.languages.presets import load_language
    from numerics.metrics import point_metrics

    inputs = cfg.as_dict()
    if cfg.sampler in CANVAS_SAMPLERS:  # no steps, schedule or batches (hashed, unused): not said to be inputs
        for name in ("steps", "schedule", "batch_size", "confidence"):
            inputs.pop(name)
    out: dict[str, Any] = {"inputs": inputs}
    if cfg.sampler in REVISERS:
        same = cfg.ser_language in (None, cfg.language)
        m = point_metrics(load_language(cfg.language), cfg.length, cfg.make_sampler(), method=cfg.method,
                          samples=cfg.samples, rng=cfg.rng, ser_language=None if same else load_language(cfg.ser_language),
                          names=(cfg.language, cfg.ser_language))
        out.update(method=m.how.method, schedule_name=None, sampler_name=m.how.sampler, tie_seed=None,
                   sampler_parameters=m.how.parameters, calls_law=list(m.how.calls_law),
                   **{k: to_jsonable(v) for k, v in m.metrics().items()})
    elif cfg.sampler == GEMMA:
        from validation.canvas_samplers import gemma_point

        res = gemma_point(cfg.make_sampler(), cfg.language, cfg.length, cfg.method, cfg.samples, cfg.seed,
                          cfg.ser_language)
        out.update(schedule_name=None, tie_seed=None, **{k: to_jsonable(v) for k, v in res.items() if k != "elapsed_s"})
    else:
        from validation.experiments.noise import uniform_point

        res = uniform_point(cfg.language, cfg.length, cfg.n_steps, cfg.schedule, cfg.method, cfg.samples, cfg.seed,
                            cfg.ser_language)
        out.update(tie_seed=None, **{k: to_jsonable(v) for k, v in res.items() if k not in ("inputs", "elapsed_s")})
    return {**out, "elapsed_s": time.perf_counter() - t0}


def _check_canvas_cost(cfg: PointConfig, language: Any) -> None:
    """What a reviser, gemma-renoise or uniform-noise point refuses before any work: the exact chain beyond its
    size (a method named), a Monte Carlo run beyond the memory (ValueError)."""
    from numerics.machine import check_memory

    L, V, n = cfg.length, language.vocab_size, cfg.samples
    if cfg.sampler in REVISERS:
        from numerics.exact.revisers import choose_reviser_method

        if choose_reviser_method(cfg.method, cfg.make_sampler(), V, L) == "mc":
            check_memory(8.0 * n * L * (3 * V + 4), f"{cfg.sampler} by Monte Carlo ({n} samples, L = {L})",
                         "use fewer --samples or a smaller -L")
        return
    if cfg.sampler == GEMMA:
        from numerics.exact.gemma import MAX_CANVASES

        per, what = 6 * n * L * V, f"{GEMMA} ({n} samples, L = {L})"
    else:
        from numerics.exact.uniform_noise import MAX_CANVASES

        per, what = 4 * n * L * V + 2 * 64 * L * language.kernel_language().n_states, f"--noise uniform ({n} samples, L = {L})"
    fits = V**L <= MAX_CANVASES
    if cfg.method == "enumerate" and not fits:
        raise ValueError(f"--method enumerate with {cfg.sampler if cfg.sampler == GEMMA else '--noise uniform'} "
                         f"needs V^L <= {MAX_CANVASES}, got {V}^{L}")
    if not fits or cfg.method == "mc":
        check_memory(8.0 * per, what, "use fewer --samples or a smaller -L")


def check_costs(configs: Iterable[PointConfig]) -> None:
    """Refuse, before any point is computed, a grid with a point whose method cannot run at its size
    or whose Monte Carlo would run too long (:func:`numerics.methods.choose_method`,
    :func:`~numerics.methods.choose_adaptive_method`: counts only, nothing sampled); ``ValueError``
    naming the point, its estimate and what to change. Sampler kinds without a cost model pass."""
    from numerics.languages.presets import load_language
    from numerics.methods import choose_adaptive_method, choose_method

    for cfg in configs:
        sampler = cfg.make_sampler()
        for spec in dict.fromkeys(s for s in (cfg.language, cfg.ser_language) if s):
            language = load_language(spec)
            try:
                if cfg.noise != "mask" or cfg.sampler in CANVAS_SAMPLERS:
                    _check_canvas_cost(cfg, language)
                elif sampler.kind == "random":
                    choose_method(cfg.method, language, cfg.length, sampler.schedule, cfg.samples, name=spec)
                elif sampler.kind == "adaptive":
                    choose_adaptive_method(cfg.method, language.vocab_size, cfg.length, language=language,
                                           samples=cfg.samples, name=spec)
            except ValueError as exc:
                raise ValueError(f"point {spec} L = {cfg.length} N = {cfg.n_steps}: {exc}") from None


def grid(languages: Iterable[str], lengths: Iterable[int], n_steps: Iterable[int], **common: Any) -> list[PointConfig]:
    """The configs of a languages x lengths x numbers of steps grid (``common``: the other :class:`PointConfig` fields).

    A language given as ``"A:B"`` measures SER on ``B`` and everything else on ``A``
    (e.g. ``"2gram:2gram-pruned"``).
    """
    out = []
    for lang in languages:
        main, _, ser = lang.partition(":")
        for L in lengths:
            for N in n_steps:
                out.append(PointConfig(main, int(L), int(N), ser_language=ser or None, **common))
    return out


# ----- the results table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRow:
    """One line of the table: ``config`` (a :class:`PointConfig` as a dict), its hash, the result."""

    config: dict
    config_hash: str
    result: dict
    row_hash: str
    provenance: dict = field(default_factory=dict)


class CorruptRowsError(ValueError):
    """Rows of a results table that do not check out (line numbers and reasons in the message).

    ``describe(hint)`` words the way out for the caller: ``on_bad_rows='drop'`` for the Python API
    (the default message), ``--drop-bad-rows`` on the command line.
    """

    def __init__(self, path: str | Path, bad: list[tuple[int, str]]) -> None:
        self.path, self.bad = path, list(bad)
        super().__init__(self.describe("on_bad_rows='drop'"))

    def describe(self, hint: str) -> str:
        lines = "; ".join(f"line {k}: {why}" for k, why in self.bad)
        return f"{self.path}: {len(self.bad)} bad row(s): {lines} (rerun with {hint} to recompute them)"


def _row_hash(config: dict, result: dict) -> str:
    return config_hash({"config": config, "result": result})


def read_table(path: str | Path) -> tuple[list[SweepRow], list[tuple[int, str]]]:
    """Parse a JSONL results table; returns ``(good rows, [(line number, reason), ...] of bad rows)``."""
    path = Path(path)
    rows: list[SweepRow] = []
    bad: list[tuple[int, str]] = []
    if not path.exists():
        return rows, bad
    for k, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            row = SweepRow(d["config"], d["config_hash"], d["result"], d["row_hash"], d.get("provenance", {}))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            bad.append((k, f"unreadable row ({type(exc).__name__}: {exc})"))
            continue
        if config_hash(row.config) != row.config_hash:
            bad.append((k, f"config does not hash to its recorded config_hash {row.config_hash}"))
        elif _row_hash(row.config, row.result) != row.row_hash:
            bad.append((k, "result does not match its row_hash (edited or damaged)"))
        else:
            rows.append(row)
    return rows, bad


@dataclass(frozen=True)
class SweepReport:
    """What a sweep run did.

    Attributes
    ----------
    path : str
        The results table.
    computed : int
        Points computed by this run and appended to the table.
    skipped : int
        Points already in the table when the run started (or listed twice in the grid).
    bad_rows : tuple
        ``(line, reason)`` of rows that did not check out (dropped and recomputed).
    elapsed_s : float
    point_seconds : tuple
        Seconds of each computed point.
    duplicates : int
        Points this run computed that another writer appended first (its row is kept, ours dropped).
    tables : tuple of str
        The flat Parquet and CSV copies of the whole table (:func:`table_paths`).
    """

    path: str
    computed: int
    skipped: int
    bad_rows: tuple
    elapsed_s: float
    point_seconds: tuple
    duplicates: int = 0
    tables: tuple = ()


LOCK_TIMEOUT_S = 600.0  # a writer holds the lock only to read the table or append one row: far less


def table_lock(path: str | Path) -> FileLock:
    """The lock every writer of the table ``path`` holds while it reads or appends (``PATH.lock``).

    A POSIX advisory lock (:mod:`filelock`): it serializes writers on one machine and on file
    systems that implement ``fcntl`` locks across machines (see docs/cluster.md).
    """
    return FileLock(f"{path}.lock", timeout=LOCK_TIMEOUT_S)


def table_paths(path: str | Path) -> tuple[Path, Path]:
    """The flat copies of the table ``path`` (``t.jsonl`` -> ``t.parquet``, ``t.csv``; docs/schema.md)."""
    stem = Path(path).with_suffix("")
    return stem.with_name(stem.name + ".parquet"), stem.with_name(stem.name + ".csv")


def write_flat_tables(path: str | Path) -> tuple[Path, Path]:
    """Rewrite the Parquet and CSV copies of the table ``path`` from its good rows (caller holds the lock)."""
    from validation.tables import flatten_point, write_tables

    rows, _ = read_table(path)
    flat = [_with_option_columns(flatten_point(r.config, r.result, r.provenance, r.config_hash)) for r in rows]
    return write_tables(flat, Path(path).with_suffix(""))


def _with_option_columns(row: dict) -> dict:
    """Every sampler option its own column in every row (``None`` where the point did not set it) and the
    ``sampler`` named on the random sampler's rows too, so a table of mixed samplers has one schema."""
    row.setdefault("sampler", "random")
    for name in ("gamma", "confidence", *DECODER_FIELDS):
        row.setdefault(name, None)
    return row


def _row_line(row: SweepRow) -> str:
    return json.dumps(to_jsonable(asdict(row)), sort_keys=True, allow_nan=False) + "\n"


def _write_rows(path: Path, rows: list[SweepRow]) -> None:
    atomic_write_bytes(path, "".join(_row_line(r) for r in rows).encode())


def _append_row(path: Path, row: SweepRow) -> None:
    """Append one row atomically (the old table plus the line, renamed over it); caller holds the lock."""
    old = path.read_bytes() if path.exists() else b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    atomic_write_bytes(path, old + _row_line(row).encode())


def run_sweep(
    configs: Iterable[PointConfig],
    out: str | Path,
    *,
    on_bad_rows: str = "raise",
    evaluate: Callable[[PointConfig], dict] = evaluate_point,
    progress: Callable[[int, int, PointConfig, dict | None], None] | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    client: Any = None,
) -> SweepReport:
    """Evaluate every config not yet in the table ``out`` and append its row as soon as it is computed.

    Several processes may run sweeps into the same table at once: each appends under the
    table's lock (:func:`table_lock`) by rewriting the table atomically with its row added, so no
    computed row is lost and a reader never sees half a row. A point that another writer appended
    while this run computed it is not written twice (:attr:`SweepReport.duplicates`).

    Parameters
    ----------
    on_bad_rows : {"raise", "drop"}
        Rows that do not check out raise :class:`CorruptRowsError` (default) or are dropped from
        the table and their points recomputed.
    evaluate : callable
        ``PointConfig -> result dict`` (tests pass a cheap or failing one).
    progress : callable, optional
        Called as ``progress(k, total, cfg, result_or_None_if_skipped)``.
    executor : {"local", "dask"}
        Where the points are computed (:mod:`validation.executors`): here in order, or as Dask
        tasks whose results stream back into this table as they finish.
    scheduler : str, optional
        ``dask``: the address of a running scheduler (default: a local cluster for this sweep).
    client : distributed.Client, optional
        ``dask``: an existing client to submit to instead.
    """
    if on_bad_rows not in ("raise", "drop"):
        raise ValueError(f"on_bad_rows must be 'raise' or 'drop', got {on_bad_rows!r}")
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {EXECUTORS}")
    if executor == "local" and (scheduler is not None or client is not None):
        raise ValueError("a scheduler address or client needs executor='dask'")
    configs = list(configs)
    inputs = {"--language": sorted({s for c in configs for s in (c.language, c.ser_language) if s})}
    out = check_writable_file(guard_output(out, "sweep table", inputs=inputs))
    for flat, kind in zip(table_paths(out), ("sweep parquet", "sweep csv")):
        check_writable_file(guard_output(flat, kind, option="--out (its flat copy)", inputs=inputs))
    lock = table_lock(out)
    with lock:
        rows, bad = read_table(out)
        if bad and on_bad_rows == "raise":
            raise CorruptRowsError(out, bad)
        if bad:
            _write_rows(out, rows)
    done = {r.config_hash for r in rows}
    pending: dict[str, tuple[dict, PointConfig]] = {}
    skipped = 0
    total = len(configs)
    for cfg in configs:
        c = to_jsonable(cfg.as_dict())
        h = config_hash(c)
        if h in done or h in pending:
            skipped += 1
            if progress:
                progress(skipped, total, cfg, None)
        else:
            pending[h] = (c, cfg)
    prov = provenance()
    t0 = time.perf_counter()
    computed = duplicates = 0
    seconds = []
    points = {h: cfg for h, (_, cfg) in pending.items()}
    stream = run_local(evaluate, points) if executor == "local" else run_dask(evaluate, points, scheduler, client)
    for h, result, secs in stream:
        c, cfg = pending[h]
        result = to_jsonable(result)
        seconds.append(secs)
        with lock:
            now = {r.config_hash for r in read_table(out)[0]}
            if h in now:
                duplicates += 1
            else:
                _append_row(out, SweepRow(c, h, result, _row_hash(c, result), prov))
                computed += 1
        if progress:
            progress(skipped + computed + duplicates, total, cfg, result)
    with lock:
        tables = tuple(str(p) for p in write_flat_tables(out))
    return SweepReport(str(out), computed, skipped, tuple(bad), time.perf_counter() - t0, tuple(seconds), duplicates,
                       tables)
