"""The decoders the 2026 runtimes ship, on the block-decoder machinery: Dream's ``diffusion_generate``, DUS.

:class:`Dream` (DreamLM/Dream; also llama.cpp, mlx-lm, diffusers, SGLang) runs ``N`` steps on the
times ``t_k = linspace(1, eps = 1e-3, N + 1)``, one network call each, over the whole sequence (no
blocks). With ``m`` positions still masked at step ``k``:

* ``alg = "origin"`` reveals each masked position independently with probability
  ``1 - t_{k+1} / t_k`` (every one at the last step), its value drawn at temperature ``T``: the
  paper's random-order sampler on the schedule ``u_k = 1 - t_k`` (``u_N = 1``).
* the confidence algorithms score each masked position: ``maskgit-plus`` the probability of its
  drawn value, ``margin`` the top-1 minus top-2 probability, ``entropy`` minus the entropy, each of
  the law the values are drawn from (``softmax(logits / T)``; at ``T = 0`` the untempered marginal,
  whose argmax is drawn), and reveal the top ``floor(m (1 - t_{k+1} / t_k))`` (``m`` at the last
  step): a step may reveal nothing and still cost its call. From ``m = L`` the counts are a fixed
  sequence (:func:`dream_counts`), so these are fixed-count rules like LLaDA's.
* ``alg_temp > 0`` (confidence algorithms) draws that many positions without replacement from
  ``softmax(score / alg_temp)`` over the masked positions instead of taking the top ones
  (``torch.multinomial``): sequential draws, the Plackett-Luce law of the chosen set. The sampler
  takes the top of ``score / alg_temp + G_j`` with Gumbel ``G_j = -log(-log u_j)`` (the same law).

The random selections (``origin``, ``alg_temp > 0``) read the per-position uniforms ``u_score`` of
the counter-based stream; the exact methods read :meth:`Dream.selection_law` (every subset with its
probability). Dream runs on the generic path only (no compiled kernel).

:class:`Dus` (dilated unmasking, arXiv 2506.19037) is a fixed plan inside blocks of ``B = 2^k``:
round ``t = 1 .. k`` reveals the positions not yet revealed whose offset in the block is a multiple
of ``B / 2^t`` (coarse to fine: ``{0, B/2}``, then ``{B/4, 3B/4}``, ..., then the odd offsets), one
call a round, ``log2 B`` calls a block, values drawn at ``T``. It is a fixed-count rule whose scores
are all equal and whose order is the plan (:meth:`Dus.priority`): the top ``2^max(t-1, 1)`` by that
order are exactly round ``t``'s positions. Compiled kernel: score code ``plan`` (equal scores).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import logsumexp

from numerics.sampling.adaptive import GRID_SCALE, on_grid
from numerics.sampling.block_decoder import BlockDecoder, StepRows
from numerics.sampling.blocks import check_int

__all__ = ["DREAM_ALGS", "DREAM_EPS", "Dinfer", "Dream", "Dus", "dilated_rounds", "dream_counts", "dream_fractions",
           "dream_times"]

DREAM_ALGS = ("origin", "maskgit-plus", "margin", "entropy")
DREAM_EPS = 1e-3  # diffusion_generate's default eps: the last time


def dream_times(steps: int, eps: float = DREAM_EPS) -> np.ndarray:
    """``t_k = linspace(1, eps, N + 1)`` (float64)."""
    return np.linspace(1.0, eps, steps + 1)


def dream_fractions(steps: int, eps: float = DREAM_EPS) -> np.ndarray:
    """``f_k = 1 - t_{k+1} / t_k`` for ``k < N - 1`` and ``f_{N-1} = 1``: the share of the masked
    positions step ``k`` reveals (``origin``: each one's probability)."""
    t = dream_times(steps, eps)
    f = 1.0 - t[1:] / t[:-1]
    f[-1] = 1.0
    return f


def dream_counts(length: int, steps: int, eps: float = DREAM_EPS) -> np.ndarray:
    """The confidence algorithms' counts from ``m = L``: ``k_t = floor(m_t f_t)``, ``m_{t+1} = m_t - k_t``."""
    out = np.zeros(steps, dtype=np.int64)
    m = int(length)
    for k, f in enumerate(dream_fractions(steps, eps)):
        out[k] = math.floor(m * f)
        m -= int(out[k])
    return out


def _gumbel(u: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):  # u = 0: -inf (probability 2^-53)
        return -np.log(-np.log(u))


@dataclass(frozen=True, kw_only=True)
class Dream(BlockDecoder):
    """Dream's ``diffusion_generate`` (module docstring): ``steps`` ``N``, ``alg``, ``alg_temp``.

    Attributes
    ----------
    steps : int
        ``N``, the calls (every step costs one, revealing or not).
    alg : str
        One of :data:`DREAM_ALGS`.
    alg_temp : float
        ``>= 0``; ``> 0`` draws the positions from ``softmax(score / alg_temp)`` (confidence algorithms).
    """

    steps: int
    alg: str = "origin"
    alg_temp: float = 0.0
    name: ClassVar[str] = "dream"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("steps", self.steps, 1)
        if self.alg not in DREAM_ALGS:
            raise ValueError(f"unknown dream algorithm {self.alg!r}; choose one of {DREAM_ALGS}")
        if not (isinstance(self.alg_temp, (int, float)) and math.isfinite(self.alg_temp) and self.alg_temp >= 0):
            raise ValueError(f"the dream alg_temp must be a finite number >= 0, got {self.alg_temp!r}")
        if self.alg == "origin" and self.alg_temp > 0:
            raise ValueError("alg_temp draws positions by their scores: it needs a confidence algorithm "
                             "(maskgit-plus, margin, entropy), not origin")
        if self.block_length is not None:
            raise ValueError("dream decodes the whole sequence (no blocks); leave block_length unset")

    @property
    def stops_when_empty(self) -> bool:
        return False  # every one of the N steps costs its call

    @property
    def draw_dependent(self) -> bool:
        return self.alg == "maskgit-plus" and self.temperature > 0

    @property
    def random_selection(self) -> bool:
        return self.alg == "origin" or self.alg_temp > 0

    @property
    def path_deterministic(self) -> bool:
        return not self.draw_dependent and not self.random_selection

    def compiled(self, length: int) -> bool:
        return False

    def fixed_steps(self, length: int) -> np.ndarray:
        return dream_counts(length, self.steps)

    def _score_law(self, rows: StepRows) -> np.ndarray:
        """The law Dream scores: the draw law at ``T > 0``, the marginal at ``T = 0`` (its argmax is drawn)."""
        return rows.draw_law if self.temperature > 0 else rows.probs

    def scores(self, rows: StepRows, drawn: np.ndarray) -> np.ndarray:
        p = self._score_law(rows)
        if self.alg == "maskgit-plus":
            s = np.take_along_axis(p, drawn[..., None], axis=-1)[..., 0]
        elif self.alg == "margin":
            top = np.sort(p, axis=-1)
            s = top[..., -1] - (top[..., -2] if p.shape[-1] > 1 else 0.0)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                s = np.where(p > 0, p * np.log(p), 0.0).sum(axis=-1)  # minus the entropy
        return on_grid(np.broadcast_to(s, drawn.shape))

    def count(self, sorted_scores, step, block_steps):
        m = np.isfinite(sorted_scores).sum(axis=-1)
        return np.floor(m * dream_fractions(self.steps)[np.asarray(step)]).astype(np.int64)

    def select_rows(self, rows, drawn, u_score, priority, valid, step, block_steps):
        if not self.random_selection:
            return super().select_rows(rows, drawn, u_score, priority, valid, step, block_steps)
        step = np.asarray(step)
        if self.alg == "origin":  # each masked position with probability f_k, on its own uniform
            return valid & (u_score < dream_fractions(self.steps)[step][..., None])
        key = self.scores(rows, drawn) / GRID_SCALE / self.alg_temp + _gumbel(u_score)
        key = np.where(valid, key, -np.inf)
        order = np.lexsort((np.broadcast_to(priority, key.shape), -key), axis=-1)
        k = np.minimum(self.count(np.where(valid, 0.0, -np.inf), step, block_steps), valid.sum(axis=-1))
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.broadcast_to(np.arange(key.shape[-1]), key.shape), axis=-1)
        return (rank < k[..., None]) & valid

    def selection_law(self, rows, drawn, priority, step, block_steps):
        m = drawn.shape[-1]
        f = float(dream_fractions(self.steps)[step])
        if self.alg == "origin":  # independent Bernoulli(f) per candidate
            out = []
            for r in range(m + 1):
                w = f**r * (1.0 - f) ** (m - r)
                if w > 0:
                    out += [(np.asarray(D, dtype=np.int64), w) for D in itertools.combinations(range(m), r)]
            return out
        k = math.floor(m * f)
        logw = self.scores(StepRows(*(a[None] for a in rows)), drawn[None])[0] / GRID_SCALE / self.alg_temp
        out = []
        for D in itertools.combinations(range(m), k):  # Plackett-Luce: the sum over the orders of D
            total = 0.0
            for order in itertools.permutations(D):
                left, lp = np.ones(m, dtype=bool), 0.0
                for j in order:
                    lp += logw[j] - logsumexp(logw[left])
                    left[j] = False
                total += math.exp(lp)
            out.append((np.asarray(D, dtype=np.int64), total))
        return out

    def parameters(self) -> dict:
        return {**super().parameters(), "steps": int(self.steps), "alg": self.alg, "alg_temp": float(self.alg_temp)}


def dilated_rounds(block: int) -> np.ndarray:
    """DUS's round ``r(o) = max(1, k - v2(o))`` of each offset ``o < B = 2^k`` (``v2``: the power of 2 in
    ``o``; ``v2(0) = k``): offset ``o`` is a multiple of ``B / 2^t`` exactly from round ``r(o)`` on."""
    k = int(block).bit_length() - 1
    v2 = np.array([k if o == 0 else (o & -o).bit_length() - 1 for o in range(block)], dtype=np.int64)
    return np.maximum(1, k - v2)


@dataclass(frozen=True, kw_only=True)
class Dus(BlockDecoder):
    """DUS, dilated unmasking (module docstring): ``log2 B`` rounds a block of ``B = 2^k >= 2`` positions."""

    name: ClassVar[str] = "dus"

    def check_block(self, length: int) -> int:
        """``B``; a ``ValueError`` unless it is a power of 2 ``>= 2``."""
        B = self.block_of(length)
        if B < 2 or B & (B - 1):
            raise ValueError(f"dus needs a block length B that is a power of 2 >= 2, got B = {B}"
                             + ("" if self.block_length else f" (B = L = {length}: give --block-length)"))
        return B

    def _kernel_count(self, block):
        return "fixed", "plan", 0, np.zeros(block, dtype=np.int64)  # equal scores: the kernel ranks by priority

    def fixed_steps(self, length: int) -> np.ndarray:
        return np.bincount(dilated_rounds(self.check_block(length)))[1:].astype(np.int64)

    def priority(self, length: int) -> np.ndarray:
        B = self.check_block(length)
        rounds = np.tile(dilated_rounds(B), length // B)
        return rounds * B + np.arange(length) % B  # round first, then offset (within a block)

    def scores(self, rows: StepRows, drawn: np.ndarray) -> np.ndarray:
        return np.zeros(drawn.shape, dtype=np.int64)  # all equal: the plan (priority) orders them

    def count(self, sorted_scores, step, block_steps):
        return block_steps[step]


@dataclass(frozen=True, kw_only=True)
class Dinfer(BlockDecoder):
    """dInfer's hierarchy decoder: in the block, each maximal run of masked positions reveals its most
    confident one if its confidence is ``> run_threshold`` (0.62); every position ``> threshold`` (0.92) is
    revealed too, and always the block's most confident one.

    The confidence is the probability of the drawn value (``low-confidence``; at ``T = 0`` the
    largest marginal probability). Ties go left to right: the priority is the position itself
    (:meth:`priority`), which is also how :meth:`select_rows` finds the runs (candidates sorted by
    position; a run breaks where the next candidate's position is not the next integer), so the rule
    reads the same on the generic path (a block's columns with ``valid``) and in the exact DP (the
    masked candidates only).
    """

    threshold: float = 0.92
    run_threshold: float = 0.62
    tie_seed: int | None = None
    name: ClassVar[str] = "dinfer"

    def __post_init__(self) -> None:
        super().__post_init__()
        for what, v in (("threshold", self.threshold), ("run_threshold", self.run_threshold)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 < v <= 1):
                raise ValueError(f"the dinfer {what} must be in (0, 1], got {v!r}")
        if self.tie_seed is not None:
            raise ValueError("dinfer breaks ties left to right (its runs read positions): leave tie_seed unset")

    @property
    def draw_dependent(self) -> bool:
        return self.temperature > 0

    def compiled(self, length: int) -> bool:
        return False

    def priority(self, length: int) -> np.ndarray:
        return np.arange(length, dtype=np.int64)

    def select_rows(self, rows, drawn, u_score, priority, valid, step, block_steps):
        s = np.where(valid, self.scores(rows, drawn).astype(np.float64), -np.inf)  # (n, m) on the grid
        pos = np.broadcast_to(priority, s.shape)
        prev_ok = np.concatenate([np.zeros(s.shape[:-1] + (1,), dtype=bool), valid[..., :-1]], axis=-1)
        prev_pos = np.concatenate([np.full(s.shape[:-1] + (1,), -2), pos[..., :-1]], axis=-1)
        run = np.cumsum(valid & ~(prev_ok & (pos == prev_pos + 1)), axis=-1)  # run id of each candidate
        idx = np.broadcast_to(np.arange(s.shape[-1]), s.shape)
        order = np.lexsort((idx, -s, run), axis=-1)  # by run, then confidence (highest first), then leftmost
        r = np.take_along_axis(run, order, axis=-1)
        first = np.concatenate([np.ones(r.shape[:-1] + (1,), dtype=bool), r[..., 1:] != r[..., :-1]], axis=-1)
        best = np.zeros_like(valid)
        np.put_along_axis(best, order, first, axis=-1)
        best &= valid  # the most confident of its run (leftmost on ties); invalid columns sort last in a run
        chosen = valid & ((best & (s > on_grid(self.run_threshold))) | (s > on_grid(self.threshold)))
        key = np.where(valid, s, -np.inf)
        top = np.argmax(key, axis=-1)  # first maximum: leftmost
        any_valid = valid.any(axis=-1)
        chosen[np.flatnonzero(any_valid), top[any_valid]] = True
        return chosen

    def parameters(self) -> dict:
        return {**super().parameters(), "threshold": float(self.threshold), "run_threshold": float(self.run_threshold)}
