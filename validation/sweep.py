"""One grid point of the oracle sampler's metrics, and a resumable sweep over a grid of them.

:func:`evaluate_point` computes, for one :class:`PointConfig` (language, ``L``, ``N``, schedule),
every metric of MATH.md section 3 by the best available method and says how each was obtained:

* ``enumerate`` / ``dp`` (tiny ``L``): the exact output law ``p`` (part B's
  :mod:`numerics.exact.enumerate`, :mod:`numerics.exact.dp`) gives ``KL(q || p)``, TER, SER,
  generative perplexity, all exact;
* ``mc``: SER and generative perplexity from samples of the fast oracle sampler with exact
  ``log q``, ``gen_ppl_data`` from true samples, ``TER(q)`` exact for n-grams; the Jensen bound
  ``E_tau KL(q || p(.|tau))`` exactly by the Markov chain rule when the language is a token-level
  Markov chain (:mod:`numerics.exact.markov`), else by Monte Carlo (:mod:`numerics.sampling.montecarlo`);
  ``KL(q || p)`` of the true mixture ``p`` (hence ``log_ter_gap`` and ``ter``) is not available
  and reported as ``None`` with the reason — never replaced by the Jensen bound.

:func:`run_sweep` runs a list of configs and appends one JSON row per point to a JSONL table
(config, config hash, result, commit, versions), rewriting the file atomically per row; a re-run
skips points whose config hash is already there and detects rows that do not check out (bad
JSON, a config that no longer hashes to its recorded hash, a result that does not match its
checksum).
"""

from __future__ import annotations

import json
import math
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import numpy as np

from numerics.estimate import Estimate
from numerics.provenance import atomic_write_bytes, config_hash, provenance, to_jsonable
from numerics.schedules import Schedule, make_schedule

__all__ = [
    "METHODS",
    "PointConfig",
    "resolve_method",
    "evaluate_point",
    "grid",
    "SweepRow",
    "SweepReport",
    "CorruptRowsError",
    "read_table",
    "run_sweep",
]

METHODS = ("auto", "enumerate", "dp", "mc")
MAX_ENUMERATE_INSTANCES = 200_000  # N^L step assignments (numerics.exact.enumerate default is larger)
MAX_DP_WORK = 300_000_000  # (2V+1)^L products per step times N steps: a few minutes at most
MAX_TABLE = 1 << 20  # V^L sequences held as a joint table
MAX_ADAPTIVE_DP = 1 << 15  # V^L outputs of an adaptive rule's exact DP (a Python pass over reachable states)


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
        ``auto``, ``enumerate``, ``dp`` or ``mc``.
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
    ser_language: Optional[str] = None
    batch_size: int = 1
    sampler: str = "random"
    gamma: Optional[float] = None
    confidence: str = "maxprob"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {METHODS}")
        for name in ("length", "steps", "samples", "batch_size"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
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
        return make_schedule(self.schedule, self.steps)


def _unavailable(reason: str) -> dict[str, Any]:
    return {"value": None, "stderr": None, "method": f"unavailable: {reason}"}


def _est(e: Estimate) -> dict[str, Any]:
    return to_jsonable(e)


def resolve_method(cfg: PointConfig, language: Any) -> str:
    """``auto``: enumerate when ``N^L`` instances are few, else the DP when ``(2V+1)^L N`` is small, else mc."""
    if cfg.method != "auto":
        return cfg.method
    V, L = language.vocab_size, cfg.length
    if cfg.sampler != "random":  # adaptive rules: the DP over reachable states (numerics.exact.adaptive)
        return "dp" if V**L <= MAX_ADAPTIVE_DP else "mc"
    n_eff = int(np.count_nonzero(cfg.make_schedule().pi > 0))
    if V**L <= MAX_TABLE and n_eff**L <= MAX_ENUMERATE_INSTANCES:
        return "enumerate"
    if V**L <= MAX_TABLE and (2 * V + 1) ** L * n_eff <= MAX_DP_WORK:
        return "dp"
    return "mc"


def _exact_point(cfg: PointConfig, language: Any, ser_language: Any, method: str, schedule: Schedule) -> dict[str, Any]:
    if method == "enumerate":
        from numerics.exact.enumerate import enumerate_metrics as metrics
    else:
        from numerics.exact.dp import dp_metrics as metrics
    m = metrics(language, cfg.length, schedule)
    out = {k: _est(getattr(m, k)) for k in ("kl", "log_ter_gap", "ter", "ter_data", "gen_ppl", "gen_ppl_data",
                                            "ser_kl_certificate")}
    out["kl_jensen_bound"] = _est(m.kl_jensen_bound) if m.kl_jensen_bound is not None else _unavailable("not computed")
    if ser_language is language:
        out["ser"] = _est(m.ser)
    else:
        out["ser"] = _est(metrics(ser_language, cfg.length, schedule).ser)
    return out


def _jensen(cfg: PointConfig, language: Any, schedule: Schedule, tokens: np.ndarray) -> dict[str, Any]:
    from numerics.exact.markov import jensen_bound_markov, markov_chain_of

    try:
        markov_chain_of(language)
    except ValueError:
        from numerics.sampling.montecarlo import kl_jensen_bound_from_tokens

        steps = schedule.sample_steps(cfg.rng("jensen-steps"), tokens.shape)
        return _est(kl_jensen_bound_from_tokens(language, steps, tokens))
    return _est(jensen_bound_markov(language, cfg.length, schedule).total)


def _data_metrics(cfg: PointConfig, language: Any, out: dict[str, Any]) -> np.ndarray:
    """``gen_ppl_data`` and ``ter_data`` into ``out`` from ``samples`` true sequences, which are returned."""
    from numerics.exact.entropy import sequence_entropy
    from numerics.sampling import montecarlo as mc

    L = cfg.length
    data = language.sample(cfg.samples, L, cfg.rng("data"))
    out["gen_ppl_data"] = _est(mc.gen_ppl_from_loglik(mc.log_q(language, data), L, label="mc, x ~ q"))
    try:
        H = sequence_entropy(language, L)
        out["ter_data"] = _est(Estimate(math.exp(H.value / L), 0.0, H.method))
    except ValueError:  # no exact entropy for this language: TER(q) is the data's generative perplexity
        out["ter_data"] = dict(out["gen_ppl_data"])
    return data


def _adaptive_point(cfg: PointConfig, language: Any, ser_language: Any, method: str) -> dict[str, Any]:
    """An adaptive rule's metrics: exact (DP / enumeration) or Monte Carlo with (I1) for ``KL(q || p)``."""
    sampler = cfg.make_sampler()
    no_jensen = _unavailable("one reveal path per output (a deterministic rule): kl itself is given")
    if method != "mc":
        from numerics.exact.adaptive import adaptive_metrics

        r = adaptive_metrics(language, cfg.length, sampler, method)
        out = {k: _est(getattr(r.metrics, k)) for k in ("kl", "log_ter_gap", "ter", "ter_data", "gen_ppl",
                                                        "gen_ppl_data", "ser_kl_certificate")}
        ser = r if ser_language is language else adaptive_metrics(ser_language, cfg.length, sampler, method)
        out.update(kl_chain_rule=_est(r.kl_chain_rule), kl_jensen_bound=no_jensen, ser=_est(ser.metrics.ser),
                   nfe=_est(r.expected_nfe))
        return out
    from numerics.sampling import adaptive as ad
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.denoiser import OracleDenoiser

    L, n = cfg.length, cfg.samples
    run = sampler.sample(OracleDenoiser(language, strict=False), n, L, cfg.rng("sampler"), batch_size=cfg.batch_size)
    loglik = mc.log_q(language, run.tokens)
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
    out["ter"] = _unavailable("TER(p) from a Monte Carlo KL: use ter_data * exp(log_ter_gap)")
    out["kl_jensen_bound"] = no_jensen
    out["nfe"] = _est(ad.nfe_mc(run))
    return out


def _mc_point(cfg: PointConfig, language: Any, ser_language: Any, schedule: Schedule) -> dict[str, Any]:
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.samplers import sample_oracle

    L, n = cfg.length, cfg.samples
    out: dict[str, Any] = {}
    reason = "KL(q || p) of the sampler's mixture law p needs the exact law (enumerate/dp, small L)"
    out["kl"] = _unavailable(reason)
    out["log_ter_gap"] = _unavailable(reason)
    out["ter"] = _unavailable(reason)
    out["ser_kl_certificate"] = _unavailable(reason)
    run = sample_oracle(language, schedule, n, L, cfg.rng("sampler"), batch_size=cfg.batch_size)
    loglik = mc.log_q(language, run.tokens)
    out["gen_ppl"] = _est(mc.gen_ppl_from_loglik(loglik, L))
    if ser_language is language:
        out["ser"] = _est(mc.ser_from_loglik(loglik))
    else:
        ser_run = sample_oracle(ser_language, schedule, n, L, cfg.rng("sampler-ser"), batch_size=cfg.batch_size)
        out["ser"] = _est(mc.ser_mc(ser_language, ser_run))
    data = _data_metrics(cfg, language, out)
    out["kl_jensen_bound"] = _jensen(cfg, language, schedule, data)
    out["nfe_realized"] = to_jsonable(mc.nfe_comparison(run, schedule).realized)
    return out


def evaluate_point(cfg: PointConfig) -> dict[str, Any]:
    """All metrics of one point (module docstring) as a JSON-ready dict, with the inputs and timing.

    Every metric is ``{value, stderr, method, ...}``; exact ones have stderr 0, unavailable ones
    ``value = None`` and a method saying why. ``nfe`` is the exact expected ``ddpm_cache`` count
    ``1 + sum_{i<N} (1 - (1 - pi_i)^(B L))`` at the config's batch size.
    """
    from numerics.languages.presets import load_language

    t0 = time.perf_counter()
    language = load_language(cfg.language)
    ser_language = language if cfg.ser_language in (None, cfg.language) else load_language(cfg.ser_language)
    schedule = cfg.make_schedule()
    method = resolve_method(cfg, language)
    if cfg.sampler != "random":
        metrics = _adaptive_point(cfg, language, ser_language, method)
    elif method == "mc":
        metrics = _mc_point(cfg, language, ser_language, schedule)
    else:
        metrics = _exact_point(cfg, language, ser_language, method, schedule)
    if cfg.sampler == "random":
        metrics["nfe"] = _est(Estimate(schedule.expected_nfe(cfg.length, batch=cfg.batch_size), 0.0,
                                       f"formula E[NFE] (ddpm_cache, batch {cfg.batch_size})"))
    return {
        "inputs": cfg.as_dict(),
        "method": method,
        "schedule_name": schedule.name,
        **({} if cfg.sampler == "random" else {"sampler_name": cfg.make_sampler().label}),
        **metrics,
        "elapsed_s": time.perf_counter() - t0,
    }


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
    """What a sweep run did: points computed now, skipped (already in the table), bad rows found."""

    path: str
    computed: int
    skipped: int
    bad_rows: tuple
    elapsed_s: float
    point_seconds: tuple


def _write_rows(path: Path, rows: list[SweepRow]) -> None:
    text = "".join(json.dumps(to_jsonable(asdict(r)), sort_keys=True, allow_nan=False) + "\n" for r in rows)
    atomic_write_bytes(path, text.encode())


def run_sweep(
    configs: Iterable[PointConfig],
    out: str | Path,
    *,
    on_bad_rows: str = "raise",
    evaluate: Callable[[PointConfig], dict] = evaluate_point,
    progress: Optional[Callable[[int, int, PointConfig, Optional[dict]], None]] = None,
) -> SweepReport:
    """Evaluate every config not yet in the table ``out`` and append its row (atomic rewrite per row).

    Parameters
    ----------
    on_bad_rows : {"raise", "drop"}
        Rows that do not check out raise :class:`CorruptRowsError` (default) or are dropped from
        the table and their points recomputed.
    evaluate : callable
        ``PointConfig -> result dict`` (tests pass a cheap or failing one).
    progress : callable, optional
        Called as ``progress(k, total, cfg, result_or_None_if_skipped)``.
    """
    if on_bad_rows not in ("raise", "drop"):
        raise ValueError(f"on_bad_rows must be 'raise' or 'drop', got {on_bad_rows!r}")
    out = Path(out)
    configs = list(configs)
    rows, bad = read_table(out)
    if bad and on_bad_rows == "raise":
        lines = "; ".join(f"line {k}: {why}" for k, why in bad)
        raise CorruptRowsError(f"{out}: {len(bad)} bad row(s): {lines} (rerun with on_bad_rows='drop' to recompute them)")
    if bad:
        _write_rows(out, rows)
    done = {r.config_hash for r in rows}
    prov = provenance()
    t0 = time.perf_counter()
    computed = skipped = 0
    seconds = []
    for k, cfg in enumerate(configs, start=1):
        c = to_jsonable(cfg.as_dict())
        h = config_hash(c)
        if h in done:
            skipped += 1
            if progress:
                progress(k, len(configs), cfg, None)
            continue
        t = time.perf_counter()
        result = to_jsonable(evaluate(cfg))
        seconds.append(time.perf_counter() - t)
        rows.append(SweepRow(c, h, result, _row_hash(c, result), prov))
        _write_rows(out, rows)
        done.add(h)
        computed += 1
        if progress:
            progress(k, len(configs), cfg, result)
    return SweepReport(str(out), computed, skipped, tuple(bad), time.perf_counter() - t0, tuple(seconds))

