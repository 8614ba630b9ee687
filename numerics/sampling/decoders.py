"""The decoders practitioners run: LLaDA, Fast-dLLM, EB-Sampler and ReMDM, for any denoiser.

Each is a :class:`~numerics.sampling.samplers.Sampler` (``sample(denoiser, n, length, rng, *,
batch_size, path) -> SampleResult``), so the oracle and a trained network run through the same
code. ``docs/methods/decoders.md`` states every rule with its reference; in short:

* **Blocks** (``block_length B``, ``B | L``, default ``B = L``): the ``L / B`` blocks are decoded
  left to right; only masked positions of the *current* block (the first with a masked position)
  compete at a step. ``llada`` splits its ``N`` steps evenly (``N % (L/B) == 0``): each block gets
  ``n = N B / L`` steps revealing ``B // n`` positions each, the first ``B % n`` steps one more
  (LLaDA's ``get_num_transfer_tokens``; a step with count 0 still costs its call).
* **Draws**: every candidate position gets a drawn value ``x0_j`` from the tempered law
  ``r_j ∝ p_j^(1/T)`` (``T = 0``: the argmax, lowest token among equal grid values), and a score.
* ``llada``: scores ``low-confidence`` = ``p_j(x0_j)`` (untempered) or ``random`` = a fresh
  uniform; the ``k`` highest are revealed with their draws, the rest discarded.
* ``fast-dllm``: ``low-confidence`` scores sorted descending ``c_(1) >= c_(2) >= ...``;
  ``threshold tau``: the first and every further ``c_(j) >= tau``; ``factor f``: the largest
  prefix ``n`` with ``c_(j) >= 1 - f / (j + 1)`` for every ``2 <= j <= n`` (at least one). The
  block ends when it has no masked position, so the calls are random.
* ``eb`` (EB-Sampler): candidates sorted by entropy ``H(p_j)`` ascending; the largest prefix
  whose entropy sum minus its largest entropy is ``<= gamma`` (sorted: ``sum_{i<n} H_(i) <= gamma``),
  values drawn at temperature ``T``. Today's ``entropy-sum`` rule is the same without ``- max``.
* ``remdm`` (ReMDM, Wang et al. arXiv 2503.00307, MDLM posterior with remasking): step ``i``
  goes from ``alpha_t = u_{i-1}`` to ``alpha_s = u_i`` of a schedule; a revealed token is
  remasked with probability ``sigma_i``, a masked position revealed with probability
  ``(alpha_s - (1 - sigma_i) alpha_t) / (1 - alpha_t)``, its value drawn from ``r_j``.
  ``sigma_max = min(1, (1 - alpha_s) / alpha_t)`` (``1`` when ``alpha_t = 0``); variant ``cap``:
  ``sigma = min(eta, sigma_max)``; ``rescale``: ``sigma = eta * sigma_max``. ``eta = 0`` is MDLM's
  ancestral sampler (the random-order sampler with i.i.d. reveal steps ``pi_i = u_i - u_{i-1}``).

Comparisons are made on the grid of :mod:`numerics.sampling.adaptive` (``on_grid``: scores,
entropies, thresholds and argmax ties), so marginals that differ by round-off give the same
decisions in every path. **Ties** among equal grid scores go to the seeded priority
``tie_priority(L, tie_seed)`` (a permutation of positions drawn by
``numpy.random.default_rng(tie_seed)``; ``tie_seed=None``: left to right). ``random`` scores are
compared as raw float64 uniforms.

**Random stream** (counter-based, :func:`stream_uniform`): sequence ``b`` gets a 64-bit key
``keys = rng.integers(0, 2**64, size=n, dtype=uint64)`` drawn up front (one call on ``rng``
for the whole run), and every uniform the sampler uses is
``u(key, call, position, stream) = top 53 bits of splitmix64(splitmix64(splitmix64(key) ^ call)
^ (4 position + stream)) / 2^53`` with streams ``DRAW = 0`` (the inverse CDF of ``r_j``),
``SCORE = 1`` (``random`` scores), ``REMASK = 2`` and ``UNMASK = 3`` (ReMDM's coins), ``call``
the 1-based network call of that sequence. So the draws do not depend on batching, on which
positions are computed, or on the order of evaluation: a compiled path can reproduce this
generic path sample by sample with O(1) memory.

Calls: ``SampleResult.nfe_sequence`` holds each sequence's network calls (``calls``):
``llada`` and ``remdm`` exactly ``N``, ``fast-dllm`` and ``eb`` the realized steps.
Undefined marginals (not finite or summing to 0) are replaced by the uniform law
(:mod:`numerics.sampling.samplers` convention).
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
from numerics.sampling._adaptive_paths import CONFIDENCE_CODES, Confidence
from numerics.sampling._decoder_numba import COUNT_CODES, SCORE_CODES, DecoderRule, RemdmRule, decoder_run, remdm_run
from numerics.sampling._decoder_numba import DecoderRun as _DecoderRun
from numerics.sampling.adaptive import on_grid, oracle_language, tie_priority
from numerics.sampling.denoiser import Denoiser
from numerics.sampling.samplers import PATHS, Sampler, SampleResult, _batches, _call
from numerics.schedules import Schedule

__all__ = [
    "DECODER_NAMES",
    "REMASKINGS",
    "REMDM_VARIANTS",
    "STREAM_DRAW",
    "STREAM_REMASK",
    "STREAM_SCORE",
    "STREAM_UNMASK",
    "BlockDecoder",
    "EntropyBound",
    "FastDllm",
    "Llada",
    "PathScore",
    "Remdm",
    "StepRows",
    "llada_counts",
    "make_decoder",
    "remdm_probabilities",
    "sequence_keys",
    "splitmix64",
    "step_rows",
    "stream_uniform",
    "tempered",
]

DECODER_NAMES = ("llada", "fast-dllm", "eb", "remdm")
REMASKINGS = ("low-confidence", "random")
REMDM_VARIANTS = ("cap", "rescale")
REMDM_COMPILED = ("cap", "rescale")  # the ReMDM variants the compiled oracle path runs (per-step sigma, reveal)
STREAM_DRAW, STREAM_SCORE, STREAM_REMASK, STREAM_UNMASK = 0, 1, 2, 3

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer of ``x + golden`` (Steele et al.), elementwise on uint64 (wrapping)."""
    z = np.atleast_1d(np.asarray(x, dtype=np.uint64)) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def stream_uniform(keys: np.ndarray, call: np.ndarray, position: np.ndarray, stream: int) -> np.ndarray:
    """``u(key, call, position, stream)`` in ``[0, 1)`` (module docstring), broadcast over the arguments."""
    k = splitmix64(keys)
    a = splitmix64(k ^ np.atleast_1d(np.asarray(call, dtype=np.uint64)))
    pos = np.atleast_1d(np.asarray(position, dtype=np.uint64)) * np.uint64(4) + np.uint64(stream)
    z = splitmix64(a ^ pos)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def sequence_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    """The per-sequence keys of a run: ``rng.integers(0, 2**64, size=n, dtype=uint64)``."""
    return rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)


def llada_counts(block_length: int, steps_per_block: int) -> np.ndarray:
    """LLaDA's per-step reveal counts in a block: ``B // n`` each, the first ``B % n`` steps one more."""
    base, extra = divmod(int(block_length), int(steps_per_block))
    counts = np.full(int(steps_per_block), base, dtype=np.int64)
    counts[:extra] += 1
    return counts


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


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_common(block_length, temperature, tie_seed) -> None:
    if block_length is not None:
        _check_int("block_length", block_length, 1)
    if not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {temperature!r}")
    if tie_seed is not None:
        _check_int("tie_seed", tie_seed, 0)


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

    def scores(self, rows: StepRows, drawn: np.ndarray) -> np.ndarray:
        """Grid scores (higher first) of candidates ``(..., m)`` given their drawn values ``(..., m)``."""
        return on_grid(np.take_along_axis(rows.probs, drawn[..., None], axis=-1)[..., 0])

    def count(self, sorted_scores: np.ndarray, step: np.ndarray, block_steps: np.ndarray | None) -> np.ndarray:
        """How many of each row's sorted candidates ``(n, m)`` (``-inf`` = not a candidate) step ``step`` reveals."""
        raise NotImplementedError

    def fixed_steps(self, length: int) -> np.ndarray | None:
        """Per-block step counts of a fixed-count rule (``None``: steps until the block is empty)."""
        return None

    def parameters(self) -> dict:
        """Every parameter of the decoder (for ``--json`` rows and labels)."""
        return {"sampler": self.name, "block_length": self.block_length, "temperature": float(self.temperature),
                "tie_seed": self.tie_seed}

    # -- shared machinery --------------------------------------------------------------------------
    def blocks(self, length: int) -> int:
        """``L / B``; a block length that does not divide ``L`` is a ``ValueError``."""
        B = length if self.block_length is None else int(self.block_length)
        if B > length or length % B:
            raise ValueError(f"block_length {B} does not divide the length L = {length}")
        return length // B

    def block_of(self, length: int) -> int:
        return length // self.blocks(length)

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
                           np.ascontiguousarray(tie_priority(length, self.tie_seed), np.int64),
                           Confidence(CONFIDENCE_CODES["maxprob"], score == "entropy"))

    def _kernel_count(self, block: int) -> tuple[str, str, int, np.ndarray]:
        """``(count rule, score, gamma on the grid, factor grid (B,))`` of :meth:`kernel_rule`."""
        raise NotImplementedError

    def compiled(self, length: int) -> bool:
        """True when the compiled oracle path runs this decoder at ``length`` (random scores are ranked
        as 53-bit integers times ``L``: exact for ``L <= 1024``; beyond, the generic path; ReMDM: the
        variants of :data:`REMDM_COMPILED`)."""
        if isinstance(self, Remdm):
            return self.variant in REMDM_COMPILED
        return not (self.random_scores and length > 1024)

    def _compiled_run(self, language, keys: np.ndarray, length: int) -> _DecoderRun:
        if isinstance(self, Remdm):  # the Remdm class itself stays as it is (its variants are wired elsewhere)
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
        bs = _check_run(denoiser, n, length, rng, batch_size, path)
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
            if np.any(run.masked_left):
                raise FloatingPointError(f"{self.name} left positions masked after the last step (u_N must be 1)")
            tokens, steps, calls = run.tokens, run.steps, run.calls
            where = "oracle-" + _kind(language)
        else:
            prio = tie_priority(length, self.tie_seed)
            runs = [self._run(denoiser, keys[a:b], length, prio) for a, b in zip(edges[:-1], edges[1:])]
            tokens = np.concatenate([r[0] for r in runs])
            steps = np.concatenate([r[1] for r in runs])
            calls = np.concatenate([r[2] for r in runs])
            where = "generic"
        nfe = np.asarray([int(calls[a:b].max()) for a, b in zip(edges[:-1], edges[1:])], dtype=np.int64)
        return SampleResult(tokens, steps, nfe, np.asarray(sizes, dtype=np.int64), int(calls.max()), False, "float64",
                            f"{self.name}-{where}", calls)

    def _run(self, denoiser: Denoiser, keys: np.ndarray, L: int, prio: np.ndarray):
        """One batch: ``(tokens, reveal call of each position, calls per sequence)``, all sequences at once."""
        Bn = keys.size
        B = self.block_of(L)
        fixed = self.fixed_steps(L)
        tokens = np.zeros((Bn, L), dtype=np.int64)
        mask = np.ones((Bn, L), dtype=bool)
        steps = np.zeros((Bn, L), dtype=np.int64)
        calls = np.zeros(Bn, dtype=np.int64)
        cursor = _BlockCursor(Bn, L, B, fixed)
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
            u_score = stream_uniform(k, c, cols, STREAM_SCORE) if self.random_scores else None
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
        if language is not None and path != "generic":
            run = decoder_run(language, self.kernel_rule(L), np.zeros(n, dtype=np.uint64), np.array(x, order="C"),
                              sample=False)
            return PathScore(run.log_p, run.calls)
        B = self.block_of(L)
        fixed = self.fixed_steps(L)
        prio = tie_priority(L, self.tie_seed)
        mask = np.ones((n, L), dtype=bool)
        logp = np.zeros(n)
        calls = np.zeros(n, dtype=np.int64)
        cursor = _BlockCursor(n, L, B, fixed)
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

    def __init__(self, n: int, L: int, B: int, fixed: np.ndarray | None) -> None:
        self.block = np.zeros(n, dtype=np.int64)
        self.step = np.zeros(n, dtype=np.int64)
        self.n_blocks, self.B, self.fixed = L // B, B, fixed

    def active(self) -> np.ndarray:
        """Sequences with a block left."""
        return np.flatnonzero(self.block < self.n_blocks)

    def columns(self, active: np.ndarray) -> np.ndarray:
        """``(a, B)`` positions of each active sequence's current block."""
        return self.block[active][:, None] * self.B + np.arange(self.B)[None, :]

    def advance(self, active: np.ndarray, cols: np.ndarray, mask: np.ndarray) -> None:
        """One step done: a block ends after its fixed steps (llada) or when it has no masked position."""
        self.step[active] += 1
        if self.fixed is not None:
            done = self.step[active] >= self.fixed.size
        else:
            done = ~mask[active[:, None], cols].any(axis=1)
        self.block[active[done]] += 1
        self.step[active[done]] = 0


class PathScore(NamedTuple):
    """Per sequence ``x``: ``log_p`` = ``log p(x)`` along its one reveal path and the ``calls`` of that path."""

    log_p: np.ndarray
    calls: np.ndarray


@dataclass(frozen=True, kw_only=True)
class Llada(BlockDecoder):
    """LLaDA's ``generate``: ``steps`` ``N`` split over the blocks, fixed counts, ``remasking`` scores."""

    steps: int
    remasking: str = "low-confidence"
    name: ClassVar[str] = "llada"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_int("steps", self.steps, 1)
        if self.remasking not in REMASKINGS:
            raise ValueError(f"unknown remasking {self.remasking!r}; choose one of {REMASKINGS}")

    @property
    def random_scores(self) -> bool:
        return self.remasking == "random"

    @property
    def draw_dependent(self) -> bool:
        return self.remasking == "low-confidence" and self.temperature > 0

    def fixed_steps(self, length: int) -> np.ndarray:
        nb = self.blocks(length)
        if self.steps % nb:
            raise ValueError(f"steps N = {self.steps} is not divisible by the number of blocks L/B = {nb}")
        return llada_counts(length // nb, self.steps // nb)

    def count(self, sorted_scores, step, block_steps):
        return block_steps[step]

    def _kernel_count(self, block):
        return "fixed", self.remasking, 0, np.zeros(block, dtype=np.int64)

    def parameters(self) -> dict:
        return {**super().parameters(), "steps": int(self.steps), "remasking": self.remasking}


@dataclass(frozen=True, kw_only=True)
class FastDllm(BlockDecoder):
    """Fast-dLLM's parallel decoding: ``threshold`` ``tau`` or ``factor`` ``f`` on ``low-confidence`` scores."""

    threshold: float | None = None
    factor: float | None = None
    name: ClassVar[str] = "fast-dllm"

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.threshold is None) == (self.factor is None):
            raise ValueError("fast-dllm takes exactly one of threshold (tau) and factor (f)")
        if self.threshold is not None and not (math.isfinite(self.threshold) and 0 < self.threshold <= 1):
            raise ValueError(f"the fast-dllm threshold tau must be in (0, 1], got {self.threshold!r}")
        if self.factor is not None and not (math.isfinite(self.factor) and self.factor > 0):
            raise ValueError(f"the fast-dllm factor f must be a finite number > 0, got {self.factor!r}")

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
        return {**super().parameters(), "threshold": self.threshold, "factor": self.factor}


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


def remdm_probabilities(schedule: Schedule, variant: str, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """``(sigma, reveal)`` per step ``i = 1..N``: remask and reveal probabilities (module docstring).

    ``alpha_t = u_{i-1}``, ``alpha_s = u_i``; ``reveal_i = (alpha_s - (1 - sigma_i) alpha_t) / (1 - alpha_t)``.
    """
    a_t, a_s = schedule.u[:-1], schedule.u[1:]
    with np.errstate(divide="ignore", invalid="ignore"):  # alpha_t = 0: sigma_max = 1 (nothing to remask)
        smax = np.where(a_t > 0, np.minimum(1.0, (1.0 - a_s) / a_t), 1.0)
    sigma = np.minimum(eta, smax) if variant == "cap" else eta * smax
    with np.errstate(divide="ignore", invalid="ignore"):  # alpha_t = 1 only at a final no-op step
        reveal = np.where(a_t < 1, (a_s - (1.0 - sigma) * a_t) / (1.0 - a_t), 1.0)
    return sigma, np.clip(reveal, 0.0, 1.0)


@dataclass(frozen=True, kw_only=True)
class Remdm(BlockDecoder):
    """ReMDM's remasking sampler (variants ``cap`` / ``rescale`` with ``eta``) over ``schedule``."""

    schedule: Schedule
    variant: str = "cap"
    eta: float = 0.0
    name: ClassVar[str] = "remdm"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.schedule, Schedule):
            raise ValueError("remdm needs a schedule (numerics.schedules.Schedule)")
        if self.variant not in REMDM_VARIANTS:
            raise ValueError(f"unknown remdm variant {self.variant!r}; choose one of {REMDM_VARIANTS}")
        if not isinstance(self.eta, (int, float)) or not math.isfinite(self.eta) or not 0 <= self.eta <= 1:
            raise ValueError(f"the remdm eta must be in [0, 1], got {self.eta!r}")
        if self.block_length is not None:
            raise ValueError("remdm decodes the whole sequence (no blocks); leave block_length unset")

    @property
    def path_deterministic(self) -> bool:
        return False  # remasking: an output has many reveal histories

    def probabilities(self) -> tuple[np.ndarray, np.ndarray]:
        return remdm_probabilities(self.schedule, self.variant, float(self.eta))

    def parameters(self) -> dict:
        return {"sampler": self.name, "steps": self.schedule.n_steps, "schedule": self.schedule.name,
                "variant": self.variant, "eta": float(self.eta), "temperature": float(self.temperature),
                "tie_seed": self.tie_seed}

    def _run(self, denoiser: Denoiser, keys: np.ndarray, L: int, prio: np.ndarray):
        Bn = keys.size
        sigma, reveal = self.probabilities()
        tokens = np.zeros((Bn, L), dtype=np.int64)
        mask = np.ones((Bn, L), dtype=bool)
        steps = np.zeros((Bn, L), dtype=np.int64)
        pos = np.arange(L)[None, :]
        k = keys[:, None]
        for i in range(1, self.schedule.n_steps + 1):
            probs = _call(denoiser, tokens, mask)  # (Bn, L, V)
            V = probs.shape[-1]
            c = np.uint64(i)
            law = tempered(_normalized(probs), self.temperature).reshape(Bn * L, V)
            drawn = draw_inverse_cdf(law, stream_uniform(k, c, pos, STREAM_DRAW).ravel()).reshape(Bn, L)
            remask = ~mask & (stream_uniform(k, c, pos, STREAM_REMASK) < sigma[i - 1])
            unmask = mask & (stream_uniform(k, c, pos, STREAM_UNMASK) < reveal[i - 1])
            tokens[unmask] = drawn[unmask]
            steps[unmask] = i
            mask[unmask] = False
            tokens[remask] = 0
            steps[remask] = 0
            mask[remask] = True
        if mask.any():
            raise FloatingPointError("remdm left positions masked after the last step (u_N must be 1)")
        return tokens, steps, np.full(Bn, self.schedule.n_steps, dtype=np.int64)


def _kind(language) -> str:
    """``ngram``, ``interval`` or ``hmm``: the compiled path's label."""
    return "ngram" if isinstance(language, NGram) else "interval" if isinstance(language, IntervalLanguage) else "hmm"


def _leading(ok: np.ndarray) -> np.ndarray:
    """The number of leading True entries of each row ``(..., m)``."""
    pad = np.zeros(ok.shape[:-1] + (1,), dtype=bool)
    return np.argmin(np.concatenate([ok, pad], axis=-1), axis=-1)


def _check_run(denoiser, n, length, rng, batch_size, path) -> int:
    if not isinstance(denoiser, Denoiser):
        raise TypeError(f"{type(denoiser).__name__} does not implement the Denoiser protocol (vocab_size, __call__)")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}; choose one of {PATHS}")
    _check_int("n", n, 1)
    _check_int("length", length, 1)
    return _check_int("batch_size", int(n) if batch_size is None else batch_size, 1)


def make_decoder(name: str, *, steps: int | None = None, schedule: Schedule | None = None,
                 block_length: int | None = None, remasking: str | None = None,
                 temperature: float | None = None, threshold: float | None = None,
                 factor: float | None = None, gamma: float | None = None, variant: str | None = None,
                 eta: float | None = None, tie_seed: int | None = 0) -> BlockDecoder:
    """The decoder called ``name`` (:data:`DECODER_NAMES`) from options that may be unset (``None``).

    ``llada`` takes ``steps`` (and ``remasking``, default ``low-confidence``); ``fast-dllm`` one
    of ``threshold`` / ``factor``; ``eb`` ``gamma``; ``remdm`` a ``schedule`` with ``variant``
    (default ``cap``) and ``eta``. ``temperature`` defaults to 1, ``block_length`` to ``L``. An
    option the decoder does not use is a ``ValueError`` naming it, so a typo never runs silently.
    """
    given = {k: v for k, v in dict(remasking=remasking, threshold=threshold, factor=factor, gamma=gamma,
                                   variant=variant, eta=eta).items() if v is not None}
    uses = {"llada": {"remasking"}, "fast-dllm": {"threshold", "factor"}, "eb": {"gamma"},
            "remdm": {"variant", "eta"}}
    if name not in uses:
        raise ValueError(f"unknown decoder {name!r}; choose one of {DECODER_NAMES}")
    extra = sorted(set(given) - uses[name])
    if extra:
        raise ValueError(f"the {name} decoder does not take {', '.join(extra)}")
    common = dict(block_length=block_length, temperature=1.0 if temperature is None else temperature,
                  tie_seed=tie_seed)
    if name == "llada":
        if steps is None:
            raise ValueError("llada needs steps N")
        return Llada(steps=steps, remasking=remasking or "low-confidence", **common)
    if name == "fast-dllm":
        return FastDllm(threshold=threshold, factor=factor, **common)
    if name == "eb":
        if gamma is None:
            raise ValueError("eb needs gamma (the entropy bound, nats)")
        return EntropyBound(gamma=gamma, **common)
    if eta is None:
        raise ValueError("remdm needs eta (its remasking strength, in [0, 1])")
    return Remdm(schedule=schedule, variant=variant or "cap", eta=eta, **common)
