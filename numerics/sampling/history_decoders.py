"""Rules that read more than one step's marginals: KLASS, CreditDecoding, Prophet, the information-gain sampler.

The block decoders' seam (:meth:`~numerics.sampling.block_decoder.BlockDecoder.select_rows`) sees
one step's candidate rows. These rules need more, so they share one richer seam,
:meth:`HistoryDecoder.plan`, which the generic sampler (here) and the two exact methods
(:mod:`numerics.exact.history`: a DP over ``(state, block, step, history)`` and an independent
per-output path enumeration) call alike:

``plan(view, history, priority) -> Plan(chosen, law, history, stop)``

* ``view`` (:class:`View`): every position's normalized marginal given the revealed values
  ``x_S`` (``(n, L, V)``), the mask, the current block's start and the step within it, and
  ``conditional(i)``, the marginals given ``x_S`` and ``X_i = v`` for each ``v`` (the
  information-gain score's only extra);
* ``history``: a tuple of arrays with a leading ``n`` axis, the rule's memory of earlier calls
  (``()`` for a rule without one). **Under the oracle** a marginal changes only when something
  is revealed, so a rule's history is a deterministic function of the reveal path (the ordered
  revealed sets and their values): the exact state is ``(x_S, block, step, history)``;
* ``chosen`` (the positions revealed), ``law`` (``(n, L, V)``: the law each chosen value is drawn
  from), ``stop`` (the sequence ends after this step: Prophet's early commit).

The selection never depends on the draws (every score here is a function of the marginals):
these rules are class A, their law a product along each reveal path. One network call a step;
blocks as LLaDA's (fixed steps, :attr:`stops_when_empty` ``False``) or until empty.

The rules (``../shared/DECODERS.md`` section 8, with the oracle):

* :class:`Klass` (KLASS): a masked position of the block is *ready* when its confidence (the
  largest marginal probability) is ``> threshold`` and the KL between its marginals at
  consecutive calls stayed ``< kl`` over the last ``kl_steps`` calls; every ready position is
  revealed, or if none, the step's scheduled top count (LLaDA counts) by confidence. History:
  the marginals of the last ``kl_steps`` calls (a position has no KL before that many calls: not ready).
* :class:`Credit` (CreditDecoding): per block a credit ``C(j, v)`` decays by ``credit_decay`` each
  call and gains ``p_top1(j)^credit_power`` on each masked position's argmax; the threshold rule
  (``>= threshold``, at least the top one) runs on the enhanced law
  ``p~_j(v) ∝ p_j(v) (1 + C(j, v))^credit_alpha`` (``softmax(logits + alpha log(1 + C))``),
  and values are drawn from it at ``T``. History: ``C``, reset at each block's first step.
  ``credit_alpha = 0`` at ``T = 0`` is ``fast-dllm --threshold`` at ``T = 0``.
* :class:`Prophet` (early commit): LLaDA's fixed counts on blocks, top count by confidence;
  at each call, before the step, if the mean over the masked positions of
  ``log p1 - log p2`` (top-1 and top-2 probability) is at least ``gap`` (revealed share below
  1/3), ``2 gap / 3`` (below 2/3) or ``gap / 3`` (later), every masked position of the sequence is
  committed to its argmax at once and decoding stops. ``gap`` large is ``llada`` (at ``T = 0``, the
  same law); ``gap = 0`` commits at the first call (every position to its marginal's argmax).
  No history beyond the state.
* :class:`InfoGain` (information-gain sampler, arXiv 2602.18176): LLaDA's fixed counts on blocks;
  a masked position ``i`` of the block scores
  ``sum_{j != i masked in the block} I(X_i; X_j | x_S) - H(X_i | x_S)`` (information its reveal
  gives about the rest of the block, minus its own uncertainty), exact under the oracle with
  ``I(X_i; X_j | x_S) = sum_v p_i(v) KL(p_j(. | x_S, X_i = v) || p_j(. | x_S))``; the top count
  reveal. Its score needs ``m V`` conditional queries per step; ``calls`` counts the steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from numerics.draws import draw_inverse_cdf
from numerics.sampling.adaptive import on_grid
from numerics.sampling.block_decoder import BlockDecoder, _BlockCursor, step_rows, tempered
from numerics.sampling.blocks import check_int, llada_counts, steps_per_block
from numerics.sampling.denoiser import Denoiser
from numerics.sampling.samplers import _call
from numerics.sampling.stream import STREAM_DRAW, stream_uniform

__all__ = ["Credit", "HistoryDecoder", "InfoGain", "Klass", "Plan", "Prophet", "View", "normalized", "top_count"]


class View(NamedTuple):
    """What one call shows a :class:`HistoryDecoder`, for ``n`` states at once.

    Attributes
    ----------
    probs : (n, L, V) float64
        Every position's marginal given ``x_S``, normalized (undefined rows uniform); the rows of
        revealed positions are not read.
    mask : (n, L) bool
        The masked positions.
    start : (n,) int64
        The current block's first position.
    step : (n,) int64
        Calls already made in the current block.
    conditional : callable
        ``conditional(i)`` with ``i`` ``(n,)`` masked positions: ``(n, V, L, V)``, the marginals
        given ``x_S`` and ``X_i = v`` (normalized; ``None`` where the rule needs none).
    """

    probs: np.ndarray
    mask: np.ndarray
    start: np.ndarray
    step: np.ndarray
    conditional: Callable[[np.ndarray], np.ndarray] | None


class Plan(NamedTuple):
    """One step of a :class:`HistoryDecoder`: ``chosen`` ``(n, L)`` bool, ``law`` ``(n, L, V)`` (the law of
    each chosen value), ``history`` (the rule's memory after the call), ``stop`` ``(n,)`` (decoding ends)."""

    chosen: np.ndarray
    law: np.ndarray
    history: tuple[np.ndarray, ...]
    stop: np.ndarray


def normalized(rows: np.ndarray) -> np.ndarray:
    """Marginal rows normalized, undefined rows uniform (the block decoders' convention, :func:`step_rows`)."""
    return step_rows(rows, 1.0).probs


def top_count(score: np.ndarray, ok: np.ndarray, k: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """The ``k`` ``(n,)`` best of each row's ``ok`` positions by grid ``score`` ``(n, L)``, ties by ``priority``."""
    key = np.where(ok, score.astype(np.float64), -np.inf)
    order = np.lexsort((np.broadcast_to(priority, key.shape), -key), axis=-1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(key.shape[-1]), key.shape), axis=-1)
    return (rank < np.asarray(k)[:, None]) & ok


def _in_block(view: View, B: int) -> np.ndarray:
    """``(n, L)``: the masked positions of each state's current block."""
    pos = np.arange(view.mask.shape[1])
    return view.mask & (pos[None, :] >= view.start[:, None]) & (pos[None, :] < view.start[:, None] + B)


def _argmax_law(p: np.ndarray) -> np.ndarray:
    return tempered(p, 0.0)


def _check_unit(name: str, value, low_open: bool = True) -> None:
    ok = isinstance(value, (int, float)) and math.isfinite(value) and (0 < value <= 1 if low_open else 0 <= value <= 1)
    if not ok:
        raise ValueError(f"the {name} must be in {'(0, 1]' if low_open else '[0, 1]'}, got {value!r}")


def _check_nonneg(name: str, value, strict: bool = False) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and (value > 0 if strict else value >= 0)):
        raise ValueError(f"the {name} must be a finite number {'>' if strict else '>='} 0, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class HistoryDecoder(BlockDecoder):
    """A rule on the :meth:`plan` seam (module docstring); the generic path only.

    The block decoders' DP (:mod:`numerics.exact.decoders`) carries no history: its seam
    :meth:`select_rows` refuses these rules, whose exact law is :mod:`numerics.exact.history`.
    """

    def init_history(self, n: int, length: int, vocab: int) -> tuple[np.ndarray, ...]:
        """The memory before the first call (``()``: none)."""
        return ()

    def plan(self, view: View, history: tuple[np.ndarray, ...], priority: np.ndarray) -> Plan:
        raise NotImplementedError

    @property
    def needs_conditional(self) -> bool:
        """True when :meth:`plan` reads :attr:`View.conditional`."""
        return False

    def select_rows(self, *args, **kwargs):
        raise TypeError(f"{self.name} reads more than one step's rows (its history or conditional marginals): "
                        "its exact law is numerics.exact.history, not the block decoders' DP")

    def compiled(self, length: int) -> bool:
        return False

    @property
    def path_deterministic(self) -> bool:
        return False  # p(x) along a path needs the history: exact only by numerics.exact.history

    def _run(self, denoiser: Denoiser, keys: np.ndarray, L: int, prio: np.ndarray):
        """One batch of the generic sampler: ``(tokens, reveal call of each position, calls per sequence)``; the
        block bookkeeping is the block decoders' (``_BlockCursor``), a stopped sequence's block set past the end."""
        n = keys.size
        B = self.block_of(L)
        tokens = np.zeros((n, L), dtype=np.int64)
        mask = np.ones((n, L), dtype=bool)
        steps = np.zeros((n, L), dtype=np.int64)
        calls = np.zeros(n, dtype=np.int64)
        cursor = _BlockCursor(n, L, B, self.fixed_steps(L), self.stops_when_empty)
        history = None
        while (active := cursor.active()).size:
            probs = normalized(_call(denoiser, tokens[active], mask[active]))  # (a, L, V)
            a, V = active.size, probs.shape[-1]
            history = self.init_history(n, L, V) if history is None else history
            calls[active] += 1
            cond = self._conditional(denoiser, tokens[active], mask[active]) if self.needs_conditional else None
            view = View(probs, mask[active], cursor.block[active] * B, cursor.step[active], cond)
            plan = self.plan(view, tuple(h[active] for h in history), prio)
            for h, new in zip(history, plan.history):
                h[active] = new
            u = stream_uniform(keys[active][:, None], calls[active].astype(np.uint64)[:, None],
                               np.arange(L)[None, :], STREAM_DRAW)
            drawn = draw_inverse_cdf(plan.law.reshape(a * L, V), u.ravel()).reshape(a, L)
            ai, j = np.nonzero(plan.chosen)
            seq = active[ai]
            tokens[seq, j] = drawn[ai, j]
            mask[seq, j] = False
            steps[seq, j] = calls[seq]
            cursor.advance(active, cursor.columns(active), mask)
            cursor.block[active[plan.stop]] = cursor.n_blocks
        return tokens, steps, calls

    @staticmethod
    def _conditional(denoiser: Denoiser, tokens: np.ndarray, mask: np.ndarray):
        """:attr:`View.conditional` by one denoiser call on ``a V`` rows (each state with ``X_i = v``)."""
        a, L = tokens.shape

        def cond(i: np.ndarray) -> np.ndarray:
            V = denoiser.vocab_size
            t, m = np.repeat(tokens, V, axis=0), np.repeat(mask, V, axis=0)
            r, col = np.arange(a * V), np.repeat(i, V)
            t[r, col] = np.tile(np.arange(V), a)
            m[r, col] = False
            return normalized(_call(denoiser, t, m)).reshape(a, V, L, V)

        return cond

    def parameters(self) -> dict:
        return {**super().parameters(), **self._own()}

    def _own(self) -> dict:
        return {}


@dataclass(frozen=True, kw_only=True)
class _Counted(HistoryDecoder):
    """A rule with LLaDA's per-block counts of ``steps`` ``N``."""

    steps: int

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("steps", self.steps, 1)

    def fixed_steps(self, length: int) -> np.ndarray:
        B = self.block_of(length)
        return llada_counts(B, steps_per_block(self.steps, length, B))

    def _counts(self, view: View, length: int) -> np.ndarray:
        fixed = self.fixed_steps(length)
        return fixed[np.minimum(view.step, fixed.size - 1)]

    def _own(self) -> dict:
        return {"steps": int(self.steps)}


def _kl_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``KL(p || q)`` over the last axis (``inf`` where ``q = 0 < p``; NaN rows of ``q``: NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return terms.sum(axis=-1)


@dataclass(frozen=True, kw_only=True)
class Klass(_Counted):
    """KLASS (module docstring): ``threshold`` 0.9, ``kl`` 0.01 over ``kl_steps`` 2 calls, LLaDA counts otherwise."""

    threshold: float = 0.9
    kl: float = 0.01
    kl_steps: int = 2
    name: ClassVar[str] = "klass"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_unit("klass threshold", self.threshold)
        _check_nonneg("klass kl bound", self.kl, strict=True)
        check_int("kl_steps", self.kl_steps, 1)

    @property
    def stops_when_empty(self) -> bool:
        return True

    def init_history(self, n, length, vocab):
        return (np.full((n, self.kl_steps, length, vocab), np.nan),)

    def plan(self, view, history, priority):
        (past,) = history  # (n, h, L, V): the marginals of the last h calls, oldest first
        L = view.mask.shape[1]
        cand = _in_block(view, self.block_of(L))
        chain = np.concatenate([past, view.probs[:, None]], axis=1)  # (n, h + 1, L, V)
        kl = _kl_rows(chain[:, 1:], chain[:, :-1])  # (n, h, L): consecutive calls
        with np.errstate(invalid="ignore"):
            stable = np.all(kl < self.kl, axis=1)  # NaN (no such call yet): not stable
        conf = on_grid(view.probs.max(axis=-1))
        ready = cand & stable & (conf > on_grid(self.threshold))
        top = top_count(conf, cand, self._counts(view, L), priority)
        chosen = np.where(ready.any(axis=1)[:, None], ready, top)
        hist = np.where(view.mask[:, None, :, None], chain[:, 1:], 0.0)  # revealed rows: never read again
        return Plan(chosen, tempered(view.probs, self.temperature), (hist,), np.zeros(chosen.shape[0], dtype=bool))

    def _own(self):
        return {**super()._own(), "threshold": float(self.threshold), "kl": float(self.kl),
                "kl_steps": int(self.kl_steps)}


@dataclass(frozen=True, kw_only=True)
class Credit(HistoryDecoder):
    """CreditDecoding (module docstring): ``threshold`` 0.9, ``credit_decay`` 0.8, ``credit_power`` 0.2,
    ``credit_alpha`` 0.7; values drawn from the enhanced law at ``T`` (0: its argmax)."""

    threshold: float = 0.9
    credit_decay: float = 0.8
    credit_power: float = 0.2
    credit_alpha: float = 0.7
    name: ClassVar[str] = "credit"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_unit("credit threshold", self.threshold)
        _check_unit("credit_decay", self.credit_decay, low_open=False)
        _check_nonneg("credit_power", self.credit_power, strict=True)
        _check_nonneg("credit_alpha", self.credit_alpha)

    def init_history(self, n, length, vocab):
        return (np.zeros((n, length, vocab)),)

    def enhanced(self, probs: np.ndarray, credit: np.ndarray) -> np.ndarray:
        """``p~ ∝ p (1 + C)^alpha`` row-wise (zeros stay zero)."""
        w = probs * np.power(1.0 + credit, self.credit_alpha)
        return w / w.sum(axis=-1, keepdims=True)

    def plan(self, view, history, priority):
        (credit,) = history
        L, V = view.probs.shape[1:]
        cand = _in_block(view, self.block_of(L))
        credit = np.where((view.step == 0)[:, None, None], 0.0, credit) * self.credit_decay
        top = _argmax_law(view.probs)  # one-hot on each position's argmax (lowest token on grid ties)
        gain = np.power(view.probs.max(axis=-1), self.credit_power)
        credit = credit + np.where(cand[..., None], top * gain[..., None], 0.0)
        law = self.enhanced(view.probs, credit)
        conf = on_grid(law.max(axis=-1))
        ok = cand & (conf >= on_grid(self.threshold))
        chosen = ok | top_count(conf, cand, np.ones(cand.shape[0], dtype=np.int64), priority)
        return Plan(chosen, tempered(law, self.temperature), (credit,), np.zeros(cand.shape[0], dtype=bool))

    def _own(self):
        return {"threshold": float(self.threshold), "credit_decay": float(self.credit_decay),
                "credit_power": float(self.credit_power), "credit_alpha": float(self.credit_alpha)}


@dataclass(frozen=True, kw_only=True)
class Prophet(_Counted):
    """Prophet (module docstring): LLaDA counts by confidence, early commit at mean gap ``>= gap`` (7.5)."""

    gap: float = 7.5
    name: ClassVar[str] = "prophet"
    commits: ClassVar[bool] = True  # the early commit takes argmaxes: p(x) = 0 on part of supp q at any T

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_nonneg("prophet gap", self.gap)

    @property
    def stops_when_empty(self) -> bool:
        return False  # LLaDA's blocks: every step of the block costs its call

    def gap_threshold(self, revealed_share: np.ndarray) -> np.ndarray:
        """``gap``, ``2 gap / 3``, ``gap / 3`` for a revealed share below 1/3, below 2/3, later."""
        s = np.asarray(revealed_share)
        return self.gap * np.where(3 * s < 1, 1.0, np.where(3 * s < 2, 2.0 / 3.0, 1.0 / 3.0))

    def mean_gap(self, view: View) -> np.ndarray:
        """Mean over the masked positions of ``log p1 - log p2`` (``inf`` where ``p2 = 0``)."""
        s = np.sort(view.probs, axis=-1)
        with np.errstate(divide="ignore"):
            g = np.log(s[..., -1]) - np.log(s[..., -2]) if s.shape[-1] > 1 else np.full(s.shape[:-1], np.inf)
        g = np.round(g, 9)  # the decision on a grid: exact paths' marginals differ by round-off
        return np.where(view.mask, g, 0.0).sum(axis=1) / np.maximum(view.mask.sum(axis=1), 1)

    def plan(self, view, history, priority):
        L = view.mask.shape[1]
        cand = _in_block(view, self.block_of(L))
        conf = on_grid(view.probs.max(axis=-1))
        top = top_count(conf, cand, self._counts(view, L), priority)
        commit = self.mean_gap(view) >= self.gap_threshold(1.0 - view.mask.sum(axis=1) / L)
        chosen = np.where(commit[:, None], view.mask, top)
        law = np.where(commit[:, None, None], _argmax_law(view.probs), tempered(view.probs, self.temperature))
        return Plan(chosen, law, (), commit)

    def _own(self):
        return {**super()._own(), "gap": float(self.gap)}


@dataclass(frozen=True, kw_only=True)
class InfoGain(_Counted):
    """The information-gain sampler (module docstring): LLaDA counts by ``sum_j I(X_i; X_j | x_S) - H(X_i | x_S)``."""

    name: ClassVar[str] = "info-gain"

    @property
    def stops_when_empty(self) -> bool:
        return False

    @property
    def needs_conditional(self) -> bool:
        return True

    def scores(self, view: View) -> np.ndarray:
        """``(n, L)`` float: the score of every masked position of the block (``-inf`` elsewhere)."""
        n, L, V = view.probs.shape
        cand = _in_block(view, self.block_of(L))
        out = np.full((n, L), -np.inf)
        p = view.probs
        with np.errstate(divide="ignore", invalid="ignore"):
            H = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=-1)
        r = np.arange(n)
        for o in range(self.block_of(L)):  # one conditional query per offset of the block, all states at once
            i = view.start + o
            rows = cand[r, i]
            if not rows.any():
                continue
            kl = _kl_rows(view.conditional(i), p[:, None])  # (n, V, L): KL(p_j(. | x_S, X_i = v) || p_j)
            w = p[r, i][..., None]  # (n, V, 1)
            mi = np.where(w > 0, w * np.where(w > 0, kl, 0.0), 0.0).sum(axis=1)  # (n, L): I(X_i; X_j | x_S)
            others = cand.copy()
            others[r, i] = False
            gain = np.where(others, mi, 0.0).sum(axis=1)
            out[rows, i[rows]] = (gain - H[r, i])[rows]
        return out

    def plan(self, view, history, priority):
        L = view.mask.shape[1]
        cand = _in_block(view, self.block_of(L))
        s = self.scores(view)
        score = np.where(cand, on_grid(np.where(cand, s, 0.0)), 0)
        chosen = top_count(score, cand, self._counts(view, L), priority)
        return Plan(chosen, tempered(view.probs, self.temperature), (), np.zeros(cand.shape[0], dtype=bool))

