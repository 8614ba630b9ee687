"""Decoders that revise: LLaDA2.1's joint threshold (``llada21``) and WINO (``wino``), with the oracle.

Both decode blocks of ``block_length`` positions left to right; one step is one network call on the
canvas. With the oracle, the confidence of a masked position ``j`` is read off its posterior marginal
``q(x_j | x_S)`` and that of a revealed one off its leave-one-out conditional ``q(x_j | x_{S \\ j})``
(:func:`numerics.inference.soft_evidence.leave_one_out`: one pass gives both). A position's value is
drawn from that law tempered at ``temperature`` (argmax, lowest token on ties, at ``T = 0``); its
confidence is the untempered probability of the value drawn. Confidences and thresholds are compared on
the comparison grid of :mod:`numerics.sampling.adaptive` (:func:`~numerics.sampling.adaptive.on_grid`), so
a confidence that equals a threshold in exact arithmetic is not decided by round-off.

**llada21** (LLaDA2.1 joint threshold, DECODERS.md section 10), per step in the current block:

* mask-to-token: every masked position with confidence ``> threshold`` is revealed with its draw; if
  none is, the masked position of largest confidence (lowest index on ties);
* token-to-token: every position revealed before this step whose draw differs from its token with
  confidence ``> edit_threshold`` takes the draw;
* once the block is full, editing steps go on until one changes nothing or ``edit_cap`` editing steps
  were made (``edit_cap = 0``: the next block starts as soon as this one is full).

**wino** (WINO, wide in, narrow out), per step in the current block:

* narrow out: every position revealed before this step whose leave-one-out probability of its own
  token is ``< remask_threshold`` is masked again;
* wide in: every masked position (of before this step) with confidence ``>= threshold`` is revealed
  with its draw (at least the largest, lowest index on ties);
* the block ends when no position of it is masked after a step. The engine caps a block at
  ``step_cap`` steps: the last allowed step remasks nothing and reveals every masked position (so the
  chain ends; the published rule has no cap).

The rule is written once, for a batch of canvases (:func:`reviser_step`): Monte Carlo runs it over the
sampled sequences (:func:`sample_reviser`), the exact chain (:mod:`numerics.exact.revisers`) over every
draw of one canvas's block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from numerics.draws import draw_inverse_cdf
from numerics.inference.soft_evidence import leave_one_out
from numerics.sampling.adaptive import on_grid
from numerics.sampling.block_decoder import tempered

__all__ = ["REVISERS", "Reviser", "CanvasState", "reviser_step", "sample_reviser", "RevisedSamples"]

REVISERS = ("llada21", "wino")


@dataclass(frozen=True)
class Reviser:
    """A revising decoder: ``name`` in :data:`REVISERS` and its parameters (module docstring).

    Parameters
    ----------
    name : "llada21" or "wino"
    block_length : positions per block (must divide ``L``; ``None``: one block).
    threshold : mask-to-token (llada21, ``> threshold``) or wide-in (wino, ``>=``) confidence, in [0, 1].
    edit_threshold : llada21's token-to-token confidence, in [0, 1].
    edit_cap : llada21's editing steps after a block is full, ``>= 0`` (LLaDA2.1: 16).
    remask_threshold : wino's narrow-out leave-one-out probability, in [0, 1] (WINO: 0.9).
    step_cap : wino's steps per block, ``>= 1`` (``None``: ``2 block_length``).
    temperature : ``>= 0``.
    """

    name: str
    block_length: int | None = None
    threshold: float = 0.9
    edit_threshold: float = 0.9
    edit_cap: int = 16
    remask_threshold: float = 0.9
    step_cap: int | None = None
    temperature: float = 1.0
    kind: ClassVar[str] = "reviser"  # numerics.metrics.point_metrics's sampler kind

    def __post_init__(self) -> None:
        if self.name not in REVISERS:
            raise ValueError(f"unknown reviser {self.name!r}; choose one of {REVISERS}")
        for field in ("threshold", "edit_threshold", "remask_threshold"):
            v = getattr(self, field)
            if not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"the {self.name} {field.replace('_', '-')} must be in [0, 1], got {v!r}")
        if int(self.edit_cap) != self.edit_cap or self.edit_cap < 0:
            raise ValueError(f"the editing cap must be an integer >= 0, got {self.edit_cap!r}")
        if self.step_cap is not None and (int(self.step_cap) != self.step_cap or self.step_cap < 1):
            raise ValueError(f"the wino step cap must be an integer >= 1, got {self.step_cap!r}")
        if self.block_length is not None and (int(self.block_length) != self.block_length or self.block_length < 1):
            raise ValueError(f"block_length must be an integer >= 1, got {self.block_length!r}")
        if not isinstance(self.temperature, (int, float)) or not math.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"the temperature must be finite and >= 0, got {self.temperature!r}")

    def block(self, length: int) -> int:
        B = length if self.block_length is None else int(self.block_length)
        if length % B:
            raise ValueError(f"block_length {B} does not divide L = {length}")
        return B

    def cap(self, length: int) -> int:
        return 2 * self.block(length) if self.step_cap is None else int(self.step_cap)

    def parameters(self) -> dict:
        """Every parameter this rule reads (``sampler``, ``block_length``, ``temperature`` and its own)."""
        own = (("threshold", "edit_threshold", "edit_cap") if self.name == "llada21"
               else ("threshold", "remask_threshold", "step_cap"))
        return {"sampler": self.name, "block_length": self.block_length, "temperature": float(self.temperature),
                **{k: getattr(self, k) for k in own}}

    @property
    def label(self) -> str:
        """``llada21 (threshold=0.9, ...)``: the rule and its parameters (``None``: the default at ``L``)."""
        params = ", ".join(f"{k}={v}" for k, v in self.parameters().items() if k != "sampler" and v is not None)
        return f"{self.name} ({params})"


class CanvasState(NamedTuple):
    """A batch of reviser states.

    Attributes
    ----------
    tokens : (n, L) int64 (0 where masked)
    masked : (n, L) bool
    block : (n,) int64, the current block (``L / B`` = done)
    count : (n,) int64, llada21: editing steps made since the block is full; wino: steps in the block
    """

    tokens: np.ndarray
    masked: np.ndarray
    block: np.ndarray
    count: np.ndarray


def reviser_step(rv: Reviser, state: CanvasState, cond: np.ndarray, draws: np.ndarray) -> tuple[CanvasState, np.ndarray]:
    """One call of ``rv`` on every live canvas of ``state``; ``(next state, changed)``.

    ``cond`` ``(n, L, V)``: the oracle's law of each position (posterior marginal where masked,
    leave-one-out where revealed); ``draws`` ``(n, L)``: the values drawn (from ``cond`` tempered). Rows
    whose block is past the end are returned unchanged.
    """
    tokens, masked, block, count = (np.array(a) for a in state)
    n, L = tokens.shape
    B = rv.block(L)
    nblocks = L // B
    live = block < nblocks
    pos = np.arange(L)[None, :]
    inblock = live[:, None] & (pos // B == block[:, None])
    conf = on_grid(np.take_along_axis(cond, draws[..., None], axis=-1)[..., 0])  # compared on the house grid
    mk = masked & inblock
    rev = ~masked & inblock
    changed = np.zeros(n, dtype=np.bool_)
    if rv.name == "llada21":
        reveal = mk & (conf > on_grid(rv.threshold))
        edit = rev & (draws != tokens) & (conf > on_grid(rv.edit_threshold))
    else:
        last = count + 1 >= rv.cap(L)
        own = on_grid(np.take_along_axis(cond, tokens[..., None], axis=-1)[..., 0])
        remask = rev & (own < on_grid(rv.remask_threshold)) & ~last[:, None]
        reveal = mk & ((conf >= on_grid(rv.threshold)) | last[:, None])
        edit = np.zeros_like(reveal)
    need = mk.any(axis=1) & ~reveal.any(axis=1)  # at least one: the largest confidence, lowest index
    if need.any():
        top = np.argmax(np.where(mk, conf, -1), axis=1)
        reveal[need, top[need]] = True
    tokens[reveal | edit] = draws[reveal | edit]
    masked[reveal] = False
    changed |= (reveal | edit).any(axis=1)
    if rv.name == "wino":
        tokens[remask] = 0
        masked[remask] = True
        changed |= remask.any(axis=1)
    full = ~(masked & inblock).any(axis=1)
    if rv.name == "llada21":
        editing = live & ~mk.any(axis=1)  # this was an editing step (the block was full before it)
        count = np.where(editing, count + 1, count)
        done = live & full & (~editing & (rv.edit_cap == 0) | editing & (~changed | (count >= rv.edit_cap)))
    else:
        count = np.where(live, count + 1, count)
        done = live & full
    block = np.where(done, block + 1, block)
    count = np.where(done, 0, count)
    return CanvasState(tokens, masked, block, count), changed


def oracle_laws(language, state: CanvasState) -> np.ndarray:
    """``cond`` of :func:`reviser_step` from the oracle; an undefined row (impossible revealed values) is uniform."""
    cond = leave_one_out(language, state.tokens, state.masked)
    bad = ~np.isfinite(cond).all(axis=-1)
    cond[bad] = 1.0 / cond.shape[-1]
    return cond


@dataclass(frozen=True)
class RevisedSamples:
    """Outputs of a reviser: ``tokens`` ``(n, L)`` and ``calls`` ``(n,)`` (network calls per sequence)."""

    tokens: np.ndarray
    calls: np.ndarray


def sample_reviser(rv: Reviser, language, n: int, length: int, rng: np.random.Generator,
                   max_calls: int | None = None) -> RevisedSamples:
    """``n`` sequences of ``rv`` with the oracle, by Monte Carlo (the rule of :func:`reviser_step`)."""
    B = rv.block(length)
    per_block = B + rv.edit_cap if rv.name == "llada21" else rv.cap(length)
    limit = (length // B) * per_block if max_calls is None else max_calls
    state = CanvasState(np.zeros((n, length), dtype=np.int64), np.ones((n, length), dtype=np.bool_),
                        np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
    calls = np.zeros(n, dtype=np.int64)
    V = language.vocab_size
    for _ in range(limit):
        live = state.block < length // B
        if not live.any():
            break
        cond = oracle_laws(language, state)
        law = tempered(cond, rv.temperature).reshape(-1, V)
        draws = draw_inverse_cdf(law, rng.random(n * length)).reshape(n, length)
        state, _ = reviser_step(rv, state, cond, draws)
        calls += live
    if (state.block < length // B).any():
        raise RuntimeError(f"{rv.name} did not finish within {limit} calls")
    return RevisedSamples(state.tokens, calls)
