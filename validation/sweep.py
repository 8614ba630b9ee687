"""One grid point of the oracle sampler's metrics, and a resumable sweep over a grid of them.

:func:`evaluate_point` computes, for one :class:`PointConfig` (language, ``L``, ``N``, schedule),
every metric (KL, TER, SER, generative perplexity, the Jensen bound, NFE) by the best method
there is and says how each field was obtained (:mod:`validation.methods` picks it):

* ``closed-form`` (the interval language, ``l`` dividing ``L``, any size):
  :mod:`numerics.exact.interval_metrics`, every metric exact;
* ``dp`` / ``enumerate`` (tiny ``L``): the exact output law ``p``
  (:mod:`numerics.exact.dp`, :mod:`numerics.exact.enumerate`) gives ``KL(q || p)``, TER, SER,
  generative perplexity, all exact;
* ``mc``: SER and generative perplexity from samples of the fast oracle sampler with exact
  ``log q``, ``gen_ppl_data`` from true samples, ``TER(q)`` exact for n-grams and the interval
  language; the Jensen bound ``E_tau KL(q || p(.|tau))`` exactly by the interval closed form or
  the Markov chain rule (:mod:`numerics.exact.markov`) where they apply, else by Monte Carlo
  (:mod:`numerics.sampling.montecarlo`); ``KL(q || p)`` of the true mixture ``p`` (hence
  ``log_ter_gap`` and ``ter``) is not available and reported as ``None`` with the reason --
  never replaced by the Jensen bound.

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
import math
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from numerics.estimate import CONFIDENCE, Estimate, unavailable_record
from numerics.exact.output_law import ExactMetrics
from numerics.provenance import (
    atomic_write_bytes,
    check_writable_file,
    config_hash,
    provenance,
    to_jsonable,
)
from numerics.schedules import Schedule, make_schedule
from validation.executors import EXECUTORS, run_dask, run_local
from validation.methods import METHODS, choose_method, interval_length_of

__all__ = [
    "METHODS",
    "CorruptRowsError",
    "PointConfig",
    "SweepReport",
    "SweepRow",
    "evaluate_point",
    "exact_entropy",
    "exact_metrics",
    "grid",
    "jensen_estimate",
    "mc_ser",
    "read_table",
    "run_sweep",
    "table_lock",
    "table_paths",
    "write_flat_tables",
]


@dataclass(frozen=True)
class PointConfig:
    """One point of a sweep (everything that determines its numbers).

    Attributes
    ----------
    language : str
        Preset name or ``.npz`` path (:func:`numerics.languages.presets.load_language`); KL/TER/gen. perplexity/Jensen.
    length : int
        ``L``.
    steps : int
        ``N``.
    schedule : str
        Schedule family (:data:`numerics.schedules.SCHEDULES`).
    method : str
        ``auto``, ``closed-form``, ``enumerate``, ``dp`` or ``mc`` (:mod:`validation.methods`).
    samples : int
        Monte Carlo sample count (each MC quantity).
    seed : int
    ser_language : str or None
        Language whose SER is measured (e.g. the pruned variant); ``None``: ``language``.
    batch_size : int
        Sequences per sampler batch (the ``ddpm_cache`` NFE depends on it; 1 = per sequence).
    sampler : str
        ``random`` (the i.i.d. schedule sampler) or an adaptive rule of
        :mod:`numerics.sampling.adaptive` (``topk`` takes ``schedule``/``steps``, ``threshold`` and
        ``entropy-sum`` take ``gamma`` and ignore ``steps``).
    gamma : float or None
        Threshold of ``threshold`` / entropy bound (nats) of ``entropy-sum``.
    confidence : str
        ``maxprob``, ``margin`` or ``neg-entropy`` (``topk``, ``threshold``).
    """

    language: str
    length: int
    steps: int
    schedule: str = "linear"
    method: str = "auto"
    samples: int = 1000
    seed: int = 0
    ser_language: str | None = None
    batch_size: int = 1
    sampler: str = "random"
    gamma: float | None = None
    confidence: str = "maxprob"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {METHODS}")
        for name in ("length", "steps", "samples", "batch_size"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if int(self.seed) != self.seed or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if self.method == "mc" and self.samples < 2:
            raise ValueError("Monte Carlo needs samples >= 2")
        self.make_sampler()  # a bad sampler/gamma/confidence combination fails here, with its reason

    def rng(self, stream: str) -> np.random.Generator:
        """A generator fixed by the seed, the point (not its position in a grid) and ``stream``."""
        key = f"{self.language}|{self.ser_language}|{self.length}|{self.steps}|{self.schedule}|{stream}"
        if self.sampler != "random":
            key += f"|{self.sampler}|{self.gamma}|{self.confidence}"
        return np.random.default_rng([int(self.seed), zlib.crc32(key.encode())])

    def as_dict(self) -> dict:
        """The fields as a dict, without the sampler fields of the default ``random`` sampler (so
        the config hash of a random-sampler point is what it was before samplers were an option)."""
        d = asdict(self)
        if self.sampler == "random":
            for name in ("sampler", "gamma", "confidence"):
                d.pop(name)
        return d

    def make_sampler(self):
        """The :class:`numerics.sampling.samplers.Sampler` of this point."""
        from numerics.sampling.adaptive import make_sampler

        return make_sampler(self.sampler, schedule=self.make_schedule() if self.sampler in ("random", "topk") else None,
                            gamma=self.gamma, confidence=self.confidence)

    def make_schedule(self) -> Schedule:
        """The schedule family at ``steps``; ``"optimal"``: the information-curve DP schedule for this
        language and length (:func:`numerics.exact.schedule_opt.optimal_schedule`)."""
        if self.schedule == "optimal":
            from numerics.exact.schedule_opt import optimal_schedule
            from numerics.languages.presets import load_language

            return optimal_schedule(load_language(self.language), self.length, self.steps)
        return make_schedule(self.schedule, self.steps)


def _est(e: Estimate) -> dict[str, Any]:
    return to_jsonable(e)


_FIELDS = ("kl", "log_ter_gap", "ter", "ter_data", "ser", "ser_kl_certificate", "gen_ppl", "gen_ppl_data")


def exact_metrics(method: str, spec: str, language: Any, length: int, schedule: Schedule) -> ExactMetrics:
    """Every metric of one point by the exact ``method`` (``closed-form``, ``enumerate`` or ``dp``)."""
    if method == "closed-form":
        from numerics.exact.interval_metrics import interval_metrics

        l = interval_length_of(spec)
        if l is None:
            raise ValueError(f"--method closed-form: no closed form for {spec} (only the interval language has one)")
        return interval_metrics(schedule, length, l)
    if method == "enumerate":
        from numerics.exact.enumerate import enumerate_metrics

        return enumerate_metrics(language, length, schedule)
    if method == "dp":
        from numerics.exact.dp import dp_metrics

        return dp_metrics(language, length, schedule)
    raise ValueError(f"{method!r} is not an exact method; choose one of closed-form, enumerate, dp")


def mc_ser(cfg: PointConfig, language: Any, schedule: Schedule, stream: str = "sampler-ser",
           confidence: float = CONFIDENCE) -> Estimate:
    """Monte Carlo SER of the oracle sampler: ``cfg.samples`` runs, exact support check, Clopper-Pearson."""
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.samplers import sample_oracle

    run = sample_oracle(language, schedule, cfg.samples, cfg.length, cfg.rng(stream), batch_size=cfg.batch_size)
    return mc.ser_mc(language, run, confidence)


def jensen_estimate(cfg: PointConfig, spec: str, language: Any, schedule: Schedule,
                    tokens: np.ndarray | None = None, confidence: float = CONFIDENCE) -> Estimate:
    """The Jensen bound ``E_tau KL(q || p(. | tau))`` by the best method there is for the language:
    the interval closed form, the Markov chain rule, else Monte Carlo over ``tokens`` (``x ~ q``;
    drawn from ``cfg.rng("data")`` when not given) with an interval at ``confidence``."""
    from numerics.exact.markov import jensen_bound_markov, markov_chain_of

    l = interval_length_of(spec)
    if l is not None:
        from numerics.exact.interval_metrics import interval_jensen_bound

        return interval_jensen_bound(schedule, cfg.length, l).total
    try:
        markov_chain_of(language)
    except ValueError:
        from numerics.sampling.montecarlo import kl_jensen_bound_from_tokens

        if tokens is None:
            tokens = language.sample(cfg.samples, cfg.length, cfg.rng("data"))
        steps = schedule.sample_steps(cfg.rng("jensen-steps"), tokens.shape)
        return kl_jensen_bound_from_tokens(language, steps, tokens, confidence)
    return jensen_bound_markov(language, cfg.length, schedule).total


def exact_entropy(spec: str, language: Any, length: int) -> Estimate | None:
    """``H(X_1..X_L)`` exactly (n-gram chain rule, interval closed form), or ``None`` when there is none."""
    from numerics.exact.entropy import sequence_entropy
    from numerics.languages.interval import IntervalLanguage

    l = interval_length_of(spec)
    try:
        return sequence_entropy(IntervalLanguage(l) if l is not None else language, length)
    except ValueError:  # no exact entropy (a general HMM)
        return None


def _data_metrics(cfg: PointConfig, language: Any, out: dict[str, Any]) -> np.ndarray:
    """``gen_ppl_data`` and ``ter_data`` into ``out`` from ``samples`` true sequences, which are returned."""
    from numerics.inference import log_q
    from numerics.sampling import montecarlo as mc

    L = cfg.length
    data = language.sample(cfg.samples, L, cfg.rng("data"))
    out["gen_ppl_data"] = _est(mc.gen_ppl_from_loglik(log_q(language, data), L, label="mc, x ~ q"))
    H = exact_entropy(cfg.language, language, L)
    # no exact entropy: TER(q) is the data's generative perplexity
    out["ter_data"] = dict(out["gen_ppl_data"]) if H is None else _est(Estimate(math.exp(H.value / L), 0.0, H.method))
    return data


MAX_ADAPTIVE_DP = 1 << 15  # V^L outputs of an adaptive rule's exact DP (a Python pass over reachable states)


def _adaptive_method(cfg: PointConfig, vocab: int) -> str:
    """``dp`` / ``enumerate`` / ``mc`` for an adaptive rule (``auto``: the DP while ``V^L`` is small)."""
    from numerics.exact.adaptive import METHODS as EXACT

    if cfg.method == "auto":
        return "dp" if vocab**cfg.length <= MAX_ADAPTIVE_DP else "mc"
    if cfg.method != "mc" and cfg.method not in EXACT:
        raise ValueError(f"--method {cfg.method}: an adaptive rule is computed by {EXACT + ('mc',)}")
    return cfg.method


def _adaptive_point(cfg: PointConfig, language: Any, ser_language: Any, method: str) -> dict[str, Any]:
    """An adaptive rule's metrics: exact (DP / enumeration) or Monte Carlo with (I1) for ``KL(q || p)``."""
    sampler = cfg.make_sampler()
    no_jensen = unavailable_record("one reveal path per output (a deterministic rule): kl itself is given")
    if method != "mc":
        from numerics.exact.adaptive import adaptive_metrics

        r = adaptive_metrics(language, cfg.length, sampler, method)
        out = {k: _est(getattr(r.metrics, k)) for k in _FIELDS}
        if ser_language is not language:
            out["ser"] = _est(adaptive_metrics(ser_language, cfg.length, sampler, method).metrics.ser)
        out.update(kl_chain_rule=_est(r.kl_chain_rule), kl_jensen_bound=no_jensen, nfe=_est(r.expected_nfe))
        return out
    from numerics.inference import log_q
    from numerics.sampling import adaptive as ad
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.denoiser import OracleDenoiser

    L, n = cfg.length, cfg.samples
    run = sampler.sample(OracleDenoiser(language, strict=False), n, L, cfg.rng("sampler"), batch_size=cfg.batch_size)
    loglik = log_q(language, run.tokens)
    out: dict[str, Any] = {"gen_ppl": _est(mc.gen_ppl_from_loglik(loglik, L))}
    if ser_language is language:
        out["ser"] = _est(mc.ser_from_loglik(loglik))
    else:
        ser_run = sampler.sample(OracleDenoiser(ser_language, strict=False), n, L, cfg.rng("sampler-ser"),
                                 batch_size=cfg.batch_size)
        out["ser"] = _est(mc.ser_mc(ser_language, ser_run))
    data = _data_metrics(cfg, language, out)
    kl = ad.chain_rule_terms(sampler, language, data).terms
    kl_est = Estimate(float(kl.mean()), float(kl.std(ddof=1) / math.sqrt(n)), "mc (x ~ q, chain-rule identity (I1))", n)
    out["kl"] = _est(kl_est)
    out["log_ter_gap"] = _est(Estimate(kl_est.value / L, kl_est.stderr / L, kl_est.method, n))
    cert = -math.expm1(-kl_est.value)  # SER <= 1 - exp(-KL); delta-method stderr exp(-KL) * se(KL)
    out["ser_kl_certificate"] = _est(Estimate(cert, math.exp(-kl_est.value) * kl_est.stderr, kl_est.method, n))
    out["ter"] = unavailable_record("TER(p) from a Monte Carlo KL: ter_data * exp(log_ter_gap)")
    out["kl_jensen_bound"] = no_jensen
    out["nfe"] = _est(ad.nfe_mc(run))
    return out


def _mc_point(cfg: PointConfig, language: Any, schedule: Schedule, with_ser: bool) -> dict[str, Any]:
    from numerics.inference import log_q
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.samplers import sample_oracle

    L, n = cfg.length, cfg.samples
    out: dict[str, Any] = {}
    reason = "KL(q || p) of the sampler's mixture law p needs the exact law (an exact method, small L)"
    for k in ("kl", "log_ter_gap", "ter", "ser_kl_certificate"):
        out[k] = unavailable_record(reason)
    run = sample_oracle(language, schedule, n, L, cfg.rng("sampler"), batch_size=cfg.batch_size)
    loglik = log_q(language, run.tokens)
    out["gen_ppl"] = _est(mc.gen_ppl_from_loglik(loglik, L))
    if with_ser:
        out["ser"] = _est(mc.ser_from_loglik(loglik))
    data = _data_metrics(cfg, language, out)
    out["kl_jensen_bound"] = _est(jensen_estimate(cfg, cfg.language, language, schedule, data))
    out["nfe_realized"] = _est(mc.nfe_comparison(run, schedule).realized)
    return out


def evaluate_point(cfg: PointConfig) -> dict[str, Any]:
    """All metrics of one point (module docstring) as a JSON-ready dict, with the inputs and timing.

    Every metric is an estimate record (:meth:`numerics.estimate.Estimate.json_record`) whose
    ``method`` says how it was computed; unavailable ones have ``value = None`` and the reason.
    ``method`` is the method of the point (:func:`validation.methods.choose_method`: the fastest
    exact method, else Monte Carlo) and ``method_choice`` the estimated cost of each exact method.
    ``nfe`` is the exact expected ``ddpm_cache`` count ``1 + sum_{i<N} (1 - (1 - pi_i)^(B L))``
    at the config's batch size. The SER language, when different, gets its own best method.

    An adaptive sampler (``cfg.sampler`` not ``random``) is computed by :mod:`numerics.exact.adaptive`
    (``dp``, or ``enumerate`` by name; ``auto`` while ``V^L <= MAX_ADAPTIVE_DP``) or by Monte Carlo
    with ``kl`` its true ``KL(q || p)`` by the chain-rule identity (``docs/methods/adaptive.md``);
    ``nfe`` is then its expected (exact) or mean (Monte Carlo) calls per sequence, and the result
    names the rule in ``sampler_name``.
    """
    from numerics.languages.presets import load_language

    t0 = time.perf_counter()
    language = load_language(cfg.language)
    same = cfg.ser_language in (None, cfg.language)
    ser_spec = cfg.language if same else cfg.ser_language
    ser_language = language if same else load_language(ser_spec)
    schedule = cfg.make_schedule()
    if cfg.sampler != "random":
        method = _adaptive_method(cfg, language.vocab_size)
        metrics = _adaptive_point(cfg, language, ser_language, method)
        return {"inputs": cfg.as_dict(), "method": method, "schedule_name": schedule.name,
                "sampler_name": cfg.make_sampler().label, **metrics, "elapsed_s": time.perf_counter() - t0}
    choice = choose_method(cfg.method, cfg.language, language.vocab_size, cfg.length, schedule, cfg.samples)
    if choice.method == "mc":
        metrics = _mc_point(cfg, language, schedule, with_ser=same)
    else:
        m = exact_metrics(choice.method, cfg.language, language, cfg.length, schedule)
        metrics = {k: _est(getattr(m, k)) for k in _FIELDS}
        metrics["kl_jensen_bound"] = _est(m.kl_jensen_bound)
    out: dict[str, Any] = {"inputs": cfg.as_dict(), "method": choice.method, "method_choice": choice.as_dict(),
                           "schedule_name": schedule.name}
    if not same:
        ser_choice = choose_method(cfg.method, ser_spec, ser_language.vocab_size, cfg.length, schedule, cfg.samples)
        if ser_choice.method == "mc":
            metrics["ser"] = _est(mc_ser(cfg, ser_language, schedule))
        else:
            metrics["ser"] = _est(exact_metrics(ser_choice.method, ser_spec, ser_language, cfg.length, schedule).ser)
        out["ser_method_choice"] = ser_choice.as_dict()
    metrics["nfe"] = _est(Estimate(schedule.expected_nfe(cfg.length, batch=cfg.batch_size), 0.0,
                                   f"formula E[NFE] (ddpm_cache, batch {cfg.batch_size})"))
    return {**out, **metrics, "elapsed_s": time.perf_counter() - t0}


def grid(languages: Iterable[str], lengths: Iterable[int], steps: Iterable[int], **common: Any) -> list[PointConfig]:
    """The configs of a languages x lengths x steps grid (``common``: the other :class:`PointConfig` fields).

    A language given as ``"A:B"`` measures SER on ``B`` and everything else on ``A``
    (e.g. ``"2gram:2gram-pruned"``).
    """
    out = []
    for lang in languages:
        main, _, ser = lang.partition(":")
        for L in lengths:
            for N in steps:
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
    """Rows of a results table that do not check out (line numbers and reasons in the message)."""


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
    flat = [flatten_point(r.config, r.result, r.provenance, r.config_hash) for r in rows]
    return write_tables(flat, Path(path).with_suffix(""))


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
    out = check_writable_file(out)
    for flat in table_paths(out):
        check_writable_file(flat)
    configs = list(configs)
    lock = table_lock(out)
    with lock:
        rows, bad = read_table(out)
        if bad and on_bad_rows == "raise":
            lines = "; ".join(f"line {k}: {why}" for k, why in bad)
            raise CorruptRowsError(
                f"{out}: {len(bad)} bad row(s): {lines} (rerun with on_bad_rows='drop' to recompute them)")
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
