"""The draw-then-select block decoders: the shared :class:`BlockDecoder` and ``llada``, ``fast-dllm``, ``eb``.

:mod:`numerics.sampling.decoders` states every rule (and re-exports these names); this module holds
the machinery every path shares: the per-step rows (:func:`step_rows`: normalized marginals, the
tempered draw law, entropies on the grid), the selection (:meth:`BlockDecoder.select_rows`), the
block bookkeeping, the generic sampler and path score, and the dispatch to the compiled oracle
kernels (:mod:`numerics.sampling._decoder_numba`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
from scipy.special import entr

from numerics.draws import draw_inverse_cdf
from numerics.languages.hmm import NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling._adaptive_numba import AdaptiveRun
from numerics.sampling._adaptive_paths import CONFIDENCE_CODES, Confidence
from numerics.sampling._decoder_numba import COUNT_CODES, SCORE_CODES, DecoderRule, RemdmRule, decoder_run, remdm_run
from numerics.sampling.adaptive import on_grid, oracle_language, tie_priority
from numerics.sampling.blocks import block_of, check_int, check_run, llada_counts, steps_per_block
from numerics.sampling.denoiser import Denoiser
from numerics.sampling.samplers import PATHS, Sampler, SampleResult, _batches, _call
from numerics.sampling.stream import STREAM_DRAW, STREAM_SCORE, sequence_keys, stream_uniform

__all__ = [
    "REMASKINGS",
    "REMDM_COMPILED",
    "BlockDecoder",
    "EntropyBound",
    "FastDllm",
    "Llada",
    "PathScore",
    "StepRows",
    "step_rows",
    "tempered",
]

REMASKINGS = ("low-confidence", "random")
REMDM_COMPILED = ("cap", "rescale")  # the ReMDM variants the compiled oracle path runs (per-step sigma, reveal)


def _normalized(rows: np.ndarray) -> np.ndarray:
    """Rows normalized; undefined rows (not finite or summing to 0) replaced by the uniform law."""
    p = np.array(rows, dtype=np.float64)
    undefined = ~np.all(np.isfinite(p), axis=-1)
    undefined[~undefined] |= p[~undefined].sum(axis=-1) <= 0.0
    p[undefined] = 1.0
    return p / p.sum(axis=-1, keepdims=True)


def tempered(p: np.ndarray, temperature: float) -> np.ndarray:
    """``r ∝ p^(1/T)`` row-wise (float64, zeros stay zero); ``T = 0``: one-hot on the grid argmax (lowest token)."""
    p = np.asarray(p, dtype=np.float64)
    if temperature == 0:
        g = on_grid(p)
        out = np.zeros_like(p)
        np.put_along_axis(out, np.argmax(g, axis=-1)[..., None], 1.0, axis=-1)
        return out
    if temperature == 1:
        return p
    with np.errstate(divide="ignore"):  # log 0 = -inf: those tokens keep weight 0
        logp = np.log(p)
    w = np.exp((logp - logp.max(axis=-1, keepdims=True)) / temperature)
    return w / w.sum(axis=-1, keepdims=True)


class StepRows(NamedTuple):
    """The per-position quantities one step of a block decoder ranks, for its candidate positions.

    Attributes
    ----------
    probs : (m, V) float64
        The denoiser's marginals, normalized (undefined rows uniform).
    draw_law : (m, V) float64
        ``r_j``, the tempered law the value is drawn from (one-hot at ``T = 0``).
    entropy : (m,) int64
        ``H(p_j)`` in nats on the grid.
    """

    probs: np.ndarray
    draw_law: np.ndarray
    entropy: np.ndarray


def step_rows(rows: np.ndarray, temperature: float) -> StepRows:
    """:class:`StepRows` of marginal rows ``(m, V)``."""
    p = _normalized(rows)
    return StepRows(p, tempered(p, temperature), on_grid(entr(p).sum(axis=-1)))


def _check_common(block_length, temperature, tie_seed) -> None:
    if block_length is not None:
        check_int("block_length", block_length, 1)
    if not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {temperature!r}")
    if tie_seed is not None:
        check_int("tie_seed", tie_seed, 0)


@dataclass(frozen=True, kw_only=True)
class BlockDecoder(Sampler):
    """A draw-then-select block decoder (module docstring); subclasses say how many to reveal.

    Attributes
    ----------
    block_length : int or None
        ``B`` (``None``: ``B = L``, one block).
    temperature : float
        ``T >= 0`` of the draws (``0`` greedy).
    tie_seed : int or None
        Seed of the tie priority (``None``: left to right).
    """

    block_length: int | None = None
    temperature: float = 1.0
    tie_seed: int | None = 0
    kind: ClassVar[str] = "decoder"
    name: ClassVar[str] = ""

    def __post_init__(self) -> None:
        _check_common(self.block_length, self.temperature, self.tie_seed)

    # -- what subclasses define ------------------------------------------------------------------
    @property
    def random_scores(self) -> bool:
        """True when scores are fresh uniforms (selection independent of the draws and marginals)."""
        return False

    @property
    def draw_dependent(self) -> bool:
        """True when the revealed set depends on the drawn values (``low-confidence`` at ``T > 0``)."""
        return False

    @property
    def random_selection(self) -> bool:
        """True when the selection draws its own uniforms ``u_score`` besides any random scores (Dream's
        ``origin`` and ``alg_temp > 0``): the exact methods then read :meth:`selection_law`."""
        return False

    def selection_law(self, rows: StepRows, drawn: np.ndarray, priority: np.ndarray, step: int,
                      block_steps: np.ndarray | None) -> list[tuple[np.ndarray, float]]:
        """For a :attr:`random_selection` rule: every ``(chosen candidate indices, probability)`` of one
        step from one state whose candidates are all valid, given the draws ``(m,)``."""
        raise NotImplementedError

    def scores(self, rows: StepRows, drawn: np.ndarray) -> np.ndarray:
        """Grid scores (higher first) of candidates ``(..., m)`` given their drawn values ``(..., m)``."""
        return on_grid(np.take_along_axis(rows.probs, drawn[..., None], axis=-1)[..., 0])

    def count(self, sorted_scores: np.ndarray, step: np.ndarray, block_steps: np.ndarray | None) -> np.ndarray:
        """How many of each row's sorted candidates ``(n, m)`` (``-inf`` = not a candidate) step ``step`` reveals."""
        raise NotImplementedError

    def priority(self, length: int) -> np.ndarray:
        """``rank[j]``: position ``j``'s place among equal scores (0 first): the tie priority of
        ``tie_seed`` (DUS: its dilated plan)."""
        return tie_priority(length, self.tie_seed)

    def fixed_steps(self, length: int) -> np.ndarray | None:
        """Per-block step counts of a fixed-count rule (``None``: steps until the block is empty)."""
        return None

    @property
    def stops_when_empty(self) -> bool:
        """True when a block ends as soon as it has no masked position (every rule but LLaDA's fixed
        steps, whose count-0 steps still cost their calls)."""
        return True

    def parameters(self) -> dict:
        """Every parameter of the decoder (for ``--json`` rows and labels)."""
        return {"sampler": self.name, "block_length": self.block_length, "temperature": float(self.temperature),
                "tie_seed": self.tie_seed}

    # -- shared machinery --------------------------------------------------------------------------
    def blocks(self, length: int) -> int:
        """``L / B``; a block length that does not divide ``L`` is a ``ValueError``."""
        return length // self.block_of(length)

    def block_of(self, length: int) -> int:
        """``B`` (:func:`~numerics.sampling.blocks.block_of`)."""
        return block_of(length, self.block_length)

    def select_rows(self, rows: StepRows, drawn: np.ndarray, u_score: np.ndarray | None, priority: np.ndarray,
                    valid: np.ndarray, step: np.ndarray, block_steps: np.ndarray | None) -> np.ndarray:
        """Which candidates ``(n, m)`` one step reveals (bool): sort by ``(-score, priority)``, keep ``count``.

        ``random`` scores sort by the raw uniforms ``u_score``; the others by grid score, ties by
        ``priority`` (smaller first). ``valid`` marks the candidates (masked positions of the current
        block). A rule without fixed counts reveals at least one. Every path (generic sampler,
        exact DP, exact enumeration) goes through this method.
        """
        key = u_score if self.random_scores else self.scores(rows, drawn).astype(np.float64)
        key = np.where(valid, key, -np.inf)
        order = np.lexsort((np.broadcast_to(priority, key.shape), -key), axis=-1)
        s = np.take_along_axis(key, order, axis=-1)
        m = valid.sum(axis=-1)
        k = np.minimum(np.asarray(self.count(s, np.asarray(step), block_steps)), m)
        if block_steps is None:
            k = np.maximum(k, np.minimum(m, 1))
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.broadcast_to(np.arange(key.shape[-1]), key.shape), axis=-1)
        return (rank < k[..., None]) & valid

    def select(self, rows: StepRows, drawn: np.ndarray, u_score: np.ndarray | None, priority: np.ndarray, step: int,
               block_steps: np.ndarray | None) -> np.ndarray:
        """:meth:`select_rows` for one state whose candidates are all valid: the chosen indices."""
        one = StepRows(rows.probs[None], rows.draw_law[None], rows.entropy[None])
        chosen = self.select_rows(one, drawn[None], None if u_score is None else u_score[None], priority,
                                  np.ones((1, drawn.size), dtype=bool), np.array([step]), block_steps)
        return np.flatnonzero(chosen[0])

    @property
    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.parameters().items() if k != "sampler" and v is not None)
        return f"{self.name} ({params})"

    def kernel_rule(self, length: int):
        """The decoder as the compiled kernels read it (:class:`~numerics.sampling._decoder_numba.DecoderRule`)."""
        B = self.block_of(length)
        fixed = self.fixed_steps(length)
        count, score, gamma, factor = self._kernel_count(B)
        return DecoderRule(COUNT_CODES[count], SCORE_CODES[score], float(self.temperature), B,
                           np.zeros(1, dtype=np.int64) if fixed is None else np.ascontiguousarray(fixed, np.int64),
                           int(gamma), np.ascontiguousarray(factor, np.int64),
                           np.ascontiguousarray(self.priority(length), np.int64),
                           Confidence(CONFIDENCE_CODES["maxprob"], score == "entropy"))

    def _kernel_count(self, block: int) -> tuple[str, str, int, np.ndarray]:
        """``(count rule, score, gamma on the grid, factor grid (B,))`` of :meth:`kernel_rule`."""
        raise NotImplementedError

    def compiled(self, length: int) -> bool:
        """True when the compiled oracle path runs this decoder at ``length`` (random scores are ranked
        as 53-bit integers times ``L``: exact for ``L <= 1024``; beyond, the generic path; ReMDM: the
        variants of :data:`REMDM_COMPILED`)."""
        if self.name == "remdm":  # the remasking kernel runs the variants with per-step probabilities
            return self.variant in REMDM_COMPILED
        return not (self.random_scores and length > 1024)

    def _compiled_run(self, language, keys: np.ndarray, length: int) -> AdaptiveRun:
        if self.name == "remdm":  # per-step sigma and reveal (``probabilities``), the remasking kernel
            sigma, reveal = self.probabilities()
            rule = RemdmRule(np.ascontiguousarray(sigma, np.float64), np.ascontiguousarray(reveal, np.float64),
                             float(self.temperature), Confidence(CONFIDENCE_CODES["maxprob"], False))
            return remdm_run(language, rule, keys, length)
        return decoder_run(language, self.kernel_rule(length), keys, np.zeros((keys.size, length), dtype=np.int64),
                           sample=True)

    def sample(self, denoiser: Denoiser, n: int, length: int, rng: np.random.Generator, *,
               batch_size: int | None = None, path: str = "auto") -> SampleResult:
        """``n`` sequences; ``path`` ``"auto"`` (compiled for the oracle of an n-gram, HMM or the interval
        language, else generic), ``"oracle"`` (compiled, else an error) or ``"generic"``: the same samples."""
        bs = check_run(denoiser, n, length, rng, batch_size, path, PATHS)
        self.blocks(length)
        self.fixed_steps(length)
        keys = sequence_keys(rng, int(n))
        language = oracle_language(denoiser)
        fast = language is not None and self.compiled(length)
        if path == "oracle" and not fast:
            raise ValueError(f"path='oracle' needs the oracle of an n-gram, HMM or the interval language and a "
                             f"decoder with a compiled path; {self.label} at L = {length} has none")
        sizes = _batches(int(n), bs)
        edges = np.cumsum([0] + sizes)
        if fast and path != "generic":
            run = self._compiled_run(language, keys, length)
            if np.any(run.steps == 0):  # ReMDM: a position still masked after the last step
                raise FloatingPointError(f"{self.name} left positions masked after the last step (u_N must be 1)")
            tokens, steps, calls = run.tokens, run.steps, run.calls
            log_p = run.log_p if self.path_deterministic else None  # log p(x) along the one reveal path
            where = "oracle-" + _kind(language)
        else:
            prio = self.priority(length)
            runs = [self._run(denoiser, keys[a:b], length, prio) for a, b in zip(edges[:-1], edges[1:])]
            tokens = np.concatenate([r[0] for r in runs])
            steps = np.concatenate([r[1] for r in runs])
            calls = np.concatenate([r[2] for r in runs])
            log_p = None
            where = "generic"
        nfe = np.asarray([int(calls[a:b].max()) for a, b in zip(edges[:-1], edges[1:])], dtype=np.int64)
        return SampleResult(tokens, steps, nfe, np.asarray(sizes, dtype=np.int64), int(calls.max()), False, "float64",
                            f"{self.name}-{where}", calls, log_p)

    def _run(self, denoiser: Denoiser, keys: np.ndarray, L: int, prio: np.ndarray):
        """One batch: ``(tokens, reveal call of each position, calls per sequence)``, all sequences at once."""
        Bn = keys.size
        B = self.block_of(L)
        fixed = self.fixed_steps(L)
        tokens = np.zeros((Bn, L), dtype=np.int64)
        mask = np.ones((Bn, L), dtype=bool)
        steps = np.zeros((Bn, L), dtype=np.int64)
        calls = np.zeros(Bn, dtype=np.int64)
        cursor = _BlockCursor(Bn, L, B, fixed, self.stops_when_empty)
        while (active := cursor.active()).size:
            probs = _call(denoiser, tokens[active], mask[active])  # (a, L, V)
            a, V = active.size, probs.shape[-1]
            calls[active] += 1
            cols = cursor.columns(active)  # (a, B): the current block
            valid = mask[active[:, None], cols]
            rows = step_rows(probs[np.arange(a)[:, None], cols], self.temperature)
            c = calls[active].astype(np.uint64)[:, None]
            k = keys[active][:, None]
            u_draw = stream_uniform(k, c, cols, STREAM_DRAW)
            drawn = draw_inverse_cdf(rows.draw_law.reshape(a * B, V), u_draw.ravel()).reshape(a, B)
            u_score = (stream_uniform(k, c, cols, STREAM_SCORE) if self.random_scores or self.random_selection
                       else None)
            chosen = self.select_rows(rows, drawn, u_score, prio[cols], valid, cursor.step[active], fixed)
            ai, bj = np.nonzero(chosen)
            seq, pos = active[ai], cols[ai, bj]
            tokens[seq, pos] = drawn[ai, bj]
            mask[seq, pos] = False
            steps[seq, pos] = calls[seq]
            cursor.advance(active, cols, mask)
        return tokens, steps, calls


    @property
    def path_deterministic(self) -> bool:
        """True when the revealed sets are a function of the revealed values alone, so every output has
        one reveal path and ``log p(x)`` is exact per sample (``eb``; ``T = 0`` with ``low-confidence``)."""
        return not self.random_scores and not self.draw_dependent

    def path_log_prob(self, denoiser: Denoiser, tokens: np.ndarray, *, path: str = "auto") -> PathScore:
        """Replay the rule along given sequences ``x``: ``log p(x) = sum_t sum_{j in D_t(x)} log r_j(x_j | x_{S_t})``.

        Only for a :attr:`path_deterministic` decoder (else ``p(x)`` is a mixture over orders: a
        ``ValueError``). ``-inf`` where ``x`` leaves the sampler's support (e.g. a non-greedy value at
        ``T = 0``). One denoiser call per step on the sequences still masked; ``path="auto"`` replays the
        rule in the compiled kernel for the oracle of an n-gram, HMM or the interval language (same numbers).
        """
        if not self.path_deterministic:
            raise ValueError(f"{self.label}: the revealed sets depend on the draws or on random scores, so p(x) "
                             "is a sum over reveal paths (exact only by enumeration on tiny cases)")
        x = np.asarray(tokens, dtype=np.int64)
        n, L = x.shape
        language = oracle_language(denoiser)
        if language is not None and path != "generic" and self.compiled(L):
            run = decoder_run(language, self.kernel_rule(L), np.zeros(n, dtype=np.uint64), np.array(x, order="C"),
                              sample=False)
            return PathScore(run.log_p, run.calls)
        B = self.block_of(L)
        fixed = self.fixed_steps(L)
        prio = self.priority(L)
        mask = np.ones((n, L), dtype=bool)
        logp = np.zeros(n)
        calls = np.zeros(n, dtype=np.int64)
        cursor = _BlockCursor(n, L, B, fixed, self.stops_when_empty)
        while (active := cursor.active()).size:
            probs = _call(denoiser, np.where(mask[active], 0, x[active]), mask[active])
            a = active.size
            calls[active] += 1
            cols = cursor.columns(active)
            valid = mask[active[:, None], cols]
            rows = step_rows(probs[np.arange(a)[:, None], cols], self.temperature)
            drawn = np.argmax(rows.draw_law, axis=-1)  # the selection does not depend on it (T = 0: it is the draw)
            chosen = self.select_rows(rows, drawn, None, prio[cols], valid, cursor.step[active], fixed)
            ai, bj = np.nonzero(chosen)
            seq, pos = active[ai], cols[ai, bj]
            with np.errstate(divide="ignore"):  # r_j(x_j) = 0: x is outside the sampler's support
                np.add.at(logp, seq, np.log(rows.draw_law[ai, bj, x[seq, pos]]))
            mask[seq, pos] = False
            cursor.advance(active, cols, mask)
        return PathScore(logp, calls)


class _BlockCursor:
    """Per sequence, the current block and the step within it: the block bookkeeping every path shares."""

    def __init__(self, n: int, L: int, B: int, fixed: np.ndarray | None, until_empty: bool) -> None:
        self.block = np.zeros(n, dtype=np.int64)
        self.step = np.zeros(n, dtype=np.int64)
        self.n_blocks, self.B, self.fixed, self.until_empty = L // B, B, fixed, until_empty

    def active(self) -> np.ndarray:
        """Sequences with a block left."""
        return np.flatnonzero(self.block < self.n_blocks)

    def columns(self, active: np.ndarray) -> np.ndarray:
        """``(a, B)`` positions of each active sequence's current block."""
        return self.block[active][:, None] * self.B + np.arange(self.B)[None, :]

    def advance(self, active: np.ndarray, cols: np.ndarray, mask: np.ndarray) -> None:
        """One step done: a block ends after its fixed steps (llada) or, where the rule stops there, when
        it has no masked position."""
        self.step[active] += 1
        done = np.zeros(active.size, dtype=bool)
        if self.fixed is not None:
            done |= self.step[active] >= self.fixed.size
        if self.until_empty:
            done |= ~mask[active[:, None], cols].any(axis=1)
        self.block[active[done]] += 1
        self.step[active[done]] = 0


class PathScore(NamedTuple):
    """Per sequence ``x``: ``log_p`` = ``log p(x)`` along its one reveal path and the ``calls`` of that path."""

    log_p: np.ndarray
    calls: np.ndarray


@dataclass(frozen=True, kw_only=True)
class Llada(BlockDecoder):
    """LLaDA's ``generate``: ``steps`` ``N`` split over the blocks, fixed counts, ``remasking`` scores.

    ``threshold`` ``tau`` (LLaDA2.0's floored threshold, registered as ``llada2``): a step with
    scheduled count ``k_t`` reveals every candidate whose score ``p_j(x0_j)`` is ``> tau`` if at
    least ``k_t`` are, else the top ``k_t``; that is, the top ``max(k_t, #{c_j > tau})``. The block
    ends when it has no masked position (at most its ``n`` steps: each step reveals at least
    ``k_t``), so the calls are random. ``None``: LLaDA's fixed counts.
    """

    steps: int
    remasking: str = "low-confidence"
    threshold: float | None = None
    name: ClassVar[str] = "llada"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("steps", self.steps, 1)
        if self.remasking not in REMASKINGS:
            raise ValueError(f"unknown remasking {self.remasking!r}; choose one of {REMASKINGS}")
        if self.threshold is not None:
            if not (isinstance(self.threshold, (int, float)) and math.isfinite(self.threshold)
                    and 0 < self.threshold <= 1):
                raise ValueError(f"the llada threshold tau must be in (0, 1], got {self.threshold!r}")
            if self.remasking != "low-confidence":
                raise ValueError("the llada threshold floor compares confidences: it needs remasking "
                                 "low-confidence, not random")

    @property
    def stops_when_empty(self) -> bool:
        return self.threshold is not None

    @property
    def random_scores(self) -> bool:
        return self.remasking == "random"

    @property
    def draw_dependent(self) -> bool:
        return self.remasking == "low-confidence" and self.temperature > 0

    def fixed_steps(self, length: int) -> np.ndarray:
        B = self.block_of(length)
        return llada_counts(B, steps_per_block(self.steps, length, B))

    def count(self, sorted_scores, step, block_steps):
        k = block_steps[step]
        if self.threshold is None:
            return k
        return np.maximum(k, (sorted_scores > on_grid(self.threshold)).sum(axis=-1))

    def _kernel_count(self, block):
        if self.threshold is None:
            return "fixed", self.remasking, 0, np.zeros(block, dtype=np.int64)
        return "floored", self.remasking, int(on_grid(self.threshold)), np.zeros(block, dtype=np.int64)

    def parameters(self) -> dict:
        out = {**super().parameters(), "steps": int(self.steps), "remasking": self.remasking}
        if self.threshold is not None:  # only when set: llada's parameters (and stream keys) as before
            out["threshold"] = float(self.threshold)
        return out


@dataclass(frozen=True, kw_only=True)
class FastDllm(BlockDecoder):
    """Fast-dLLM's parallel decoding: ``threshold`` ``tau`` or ``factor`` ``f`` on ``low-confidence`` scores.

    ``sub_block`` ``b`` (Fast-dLLM v2, registered as ``fast-dllm-v2``): each block of ``B`` is split into
    sub-blocks of ``b`` (``b | B``) decoded left to right, the rule applied inside the current one;
    with the oracle (no cache) that is the rule on blocks of ``b``, so :meth:`block_of` is ``b``.
    """

    threshold: float | None = None
    factor: float | None = None
    sub_block: int | None = None
    name: ClassVar[str] = "fast-dllm"

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.threshold is None) == (self.factor is None):
            raise ValueError("fast-dllm takes exactly one of threshold (tau) and factor (f)")
        if self.threshold is not None and not (math.isfinite(self.threshold) and 0 < self.threshold <= 1):
            raise ValueError(f"the fast-dllm threshold tau must be in (0, 1], got {self.threshold!r}")
        if self.factor is not None and not (math.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"the fast-dllm factor f must be a finite number > 0, got {self.factor!r}")
        if self.sub_block is not None:
            check_int("sub_block", self.sub_block, 1)

    def block_of(self, length: int) -> int:
        B = super().block_of(length)
        if self.sub_block is None:
            return B
        if B % self.sub_block:
            raise ValueError(f"the sub-block {self.sub_block} does not divide the block length B = {B}")
        return self.sub_block

    @property
    def draw_dependent(self) -> bool:
        return self.temperature > 0

    def count(self, sorted_scores, step, block_steps):
        j = np.arange(1, sorted_scores.shape[-1] + 1)
        if self.threshold is not None:
            ok = sorted_scores >= on_grid(self.threshold)
        else:  # c_(j) >= 1 - f / (j + 1), the first always
            ok = sorted_scores >= on_grid(1.0 - self.factor / (j + 1))
        ok[..., 0] = True
        return _leading(ok)

    def _kernel_count(self, block):
        if self.threshold is not None:
            return "threshold", "low-confidence", int(on_grid(self.threshold)), np.zeros(block, dtype=np.int64)
        return "factor", "low-confidence", 0, on_grid(1.0 - self.factor / (np.arange(1, block + 1) + 1))

    def parameters(self) -> dict:
        out = {**super().parameters(), "threshold": self.threshold, "factor": self.factor}
        if self.sub_block is not None:  # only when set: fast-dllm's parameters (and stream keys) as before
            out["sub_block"] = int(self.sub_block)
        return out


@dataclass(frozen=True, kw_only=True)
class EntropyBound(BlockDecoder):
    """EB-Sampler: entropy-sorted prefix with ``sum H - max H <= gamma`` nats, values drawn at ``T``."""

    gamma: float
    name: ClassVar[str] = "eb"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.gamma, (int, float)) or not math.isfinite(self.gamma) or self.gamma < 0:
            raise ValueError(f"the eb bound gamma must be a finite number >= 0 nats, got {self.gamma!r}")

    def scores(self, rows: StepRows, drawn: np.ndarray) -> np.ndarray:
        return -rows.entropy

    def count(self, sorted_scores, step, block_steps):
        valid = np.isfinite(sorted_scores)
        H = np.where(valid, -sorted_scores, 0.0)  # ascending entropies on the grid
        # prefix n is allowed iff sum_{i<=n} H_i - max_{i<=n} H_i = sum_{i<n} H_i <= gamma
        before = np.cumsum(H, axis=-1) - H
        return _leading(valid & (before <= on_grid(self.gamma)))

    def _kernel_count(self, block):
        return "entropy", "entropy", int(on_grid(self.gamma)), np.zeros(block, dtype=np.int64)

    def parameters(self) -> dict:
        return {**super().parameters(), "gamma": float(self.gamma)}


def _kind(language) -> str:
    """``ngram``, ``interval`` or ``hmm``: the compiled path's label."""
    return "ngram" if isinstance(language, NGram) else "interval" if isinstance(language, IntervalLanguage) else "hmm"


def _leading(ok: np.ndarray) -> np.ndarray:
    """The number of leading True entries of each row ``(..., m)``."""
    pad = np.zeros(ok.shape[:-1] + (1,), dtype=bool)
    return np.argmin(np.concatenate([ok, pad], axis=-1), axis=-1)
