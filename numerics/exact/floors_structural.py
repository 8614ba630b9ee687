"""Structural floors at any length: interleaved plans on n-grams, the product rule on the interval language.

The optimal decoder's DP (:mod:`numerics.exact.optimal_decoder`) is exact but tiny (:func:`dp_max_length`).
Two structures give floors of the marginal class (:data:`numerics.exact.floors.MARGINAL`) at any ``L``
(proofs in ``docs/methods/optimal-decoder.md``):

* **Interleaved plans on an order-``n`` n-gram** (:func:`ngram_plan`, :func:`ngram_structural_floor`).
  With ``k = n - 1`` (the window), the first call reveals blocks of ``k`` consecutive positions,
  one block ending at ``L - 1`` and then every ``m = k + g`` positions leftwards (a block at
  ``0..k-1`` too when it fits), so every masked run between blocks has length ``<= g``. Given the
  revealed blocks, the masked runs are conditionally independent (each block fixes the n-gram's
  window, a full Markov state), and a call that reveals one position of each run draws from the exact
  joint conditional; a run of length ``g`` is filled exactly in ``c(g)`` calls,
  ``c(g) = g`` for ``g <= k`` and ``c(g) = min(g, k + c(ceil((g - k) / 2)))`` (build a block of
  ``k`` in the middle one position per call, then both halves in parallel; ``k = 1``:
  ``ceil(log2(g + 1))``). So the plan uses ``1 + c(g)`` calls, its later calls are exact, and its
  SER is the probability that the first call's independent draws ``prod_{j in R} q(x_j)`` are
  impossible. That probability is an exact forward pass over the windows at the blocks' ends,
  with the 0/1 reachability ``B_d = [A^d > 0]`` of the window chain between blocks (``A^d`` has
  zeros: a two-step transition that is impossible makes the plan err). Its forward KL is the first
  call's total correlation (:func:`_first_call_kl`). It is an **upper bound**
  on the optimal floor (an achievable plan of the class); it equals it where it is 0, and at
  ``T = 1`` (``g = 0``: the one call every decoder makes).
* **The product rule** (:func:`product_floor`). If ``q`` is a product of independent blocks, the
  class's SER floor in ``T`` calls is ``1 - prod_b (1 - F_b(T))`` with ``F_b`` each block's own floor,
  and its KL floor the sum of the blocks' KL floors: **exact** (optimal), by induction on ``T``. The interval language is such a product
  (:func:`interval_floor`): ``L // l`` intervals of length ``l`` and one of ``L mod l``; each
  interval's floor comes from the DP, so the floor is exact at any ``L`` for ``l <= 5``; ``T >= l``
  gives 0 (one position of every interval per call).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from scipy.special import kl_div

from numerics.exact.optimal_decoder import dp_max_length, optimal_decoder
from numerics.languages.hmm import NGram
from numerics.languages.interval import IntervalLanguage

__all__ = [
    "InterleavedPlan",
    "StructuralFloor",
    "dp_max_length",
    "dp_limit_text",
    "fill_calls",
    "interval_floor",
    "ngram_plan",
    "ngram_structural_floor",
    "product_floor",
    "structural_floor",
]

MAX_WINDOWS_ALL_GAPS = 64  # windows V^(n-1) up to which every gap g is tried (else the widest per call count)


def dp_limit_text(vocab_size: int, calls: int) -> str:
    """``"L <= 6 at V = 8 (T = 16)"``: the DP's reach in plain numbers."""
    return f"L <= {dp_max_length(vocab_size, calls)} at V = {vocab_size} (T = {calls})"


@cache
def fill_calls(gap: int, window: int) -> int:
    """``c(g)``: calls that fill a masked run of ``g`` positions exactly between two known windows of ``k`` tokens."""
    if gap <= window:
        return gap
    return min(gap, window + fill_calls(math.ceil((gap - window) / 2), window))


def fill_order(run: list[int], window: int) -> list[list[int]]:
    """The calls of :func:`fill_calls` on the masked ``run`` (positions in order): the positions each call reveals."""
    g = len(run)
    if g == 0:
        return []
    if g <= window or fill_calls(g, window) == g:
        return [[p] for p in run]
    left = (g - window) // 2
    middle = [[p] for p in run[left:left + window]]
    a, b = fill_order(run[:left], window), fill_order(run[left + window:], window)
    return middle + [(a[i] if i < len(a) else []) + (b[i] if i < len(b) else []) for i in range(max(len(a), len(b)))]


@dataclass(frozen=True)
class InterleavedPlan:
    """One interleaved plan on an n-gram (module docstring) and its exact SER.

    Attributes
    ----------
    gap : int
        ``g``: the longest masked run left by the first call.
    first_call : tuple of (int, int)
        The revealed runs ``(start, end)`` (inclusive, 0-based) of the first call.
    calls : int
        ``1 + c(max run)``: the plan's calls.
    ser : float
        The exact probability that the first call's independent draws are impossible (the later calls are exact).
    kl : float
        The exact forward KL ``KL(q || p)``: the first call's total correlation
        ``sum_{j in R} H(X_j) - H(X_R)`` (nats; the later calls add none).
    length, window : int
        ``L`` and ``k = n - 1``.
    """

    gap: int
    first_call: tuple
    calls: int
    ser: float
    kl: float
    length: int
    window: int

    def partition(self) -> tuple[tuple[int, ...], ...]:
        """The positions each call reveals: the first call's runs, then every masked run filled by :func:`fill_order`."""
        first = sorted(p for b, e in self.first_call for p in range(b, e + 1))
        edges = [-1] + [p for r in self.first_call for p in r] + [self.length]
        later: list[list[int]] = []
        for i in range(0, len(edges), 2):
            for c, ps in enumerate(fill_order(list(range(edges[i] + 1, edges[i + 1])), self.window)):
                while len(later) <= c:
                    later.append([])
                later[c] += ps
        return (tuple(first),) + tuple(tuple(sorted(c)) for c in later)


@dataclass(frozen=True)
class StructuralFloor:
    """A floor of the marginal class at any length, from the language's structure.

    Attributes
    ----------
    values : (calls,) float64
        ``values[t-1]``: the floor in at most ``t`` calls.
    kind : str
        ``"upper bound (achievable interleaved plan)"`` or ``"exact (product rule)"``.
    method : str
        How it was computed, in words.
    plans : tuple
        Per budget, what reached it (an :class:`InterleavedPlan`, or ``None``).
    """

    values: np.ndarray
    kind: str
    method: str
    plans: tuple


def _first_call_runs(L: int, k: int, g: int) -> list[tuple[int, int]]:
    """Blocks of ``k`` ending at ``L - 1, L - 1 - m, ...`` (``m = k + g``) and one at ``0..k-1`` when it fits."""
    if g == 0:
        return [(0, L - 1)]
    m, runs, end = k + g, [], L - 1
    while end - k + 1 >= 0:
        runs.append((end - k + 1, end))
        end -= m
    start = runs[-1][0]
    if start > g and start >= k + 1:  # a block at the start leaves a shorter run before the next one
        runs.append((0, k - 1))
    elif start > g and start == k:  # a block at the start would touch the next: one run
        runs[-1] = (0, runs[-1][1])
    return runs[::-1]


def _max_run(L: int, runs: list[tuple[int, int]]) -> int:
    edges = [-1] + [p for r in runs for p in r] + [L]
    return max(edges[i + 1] - edges[i] - 1 for i in range(0, len(edges), 2))


class _Chain:
    """The n-gram's window chain: laws of the windows, token marginals, 0/1 reachability powers."""

    def __init__(self, lang: NGram, L: int) -> None:
        self.k = lang.order - 1
        self.cond = np.asarray(lang.conditional, dtype=np.float64)
        self.S, self.V = self.cond.shape
        self.W = self.S // self.V
        ok = self.cond > 0
        step = np.zeros((self.S, self.S), dtype=bool)
        s = np.arange(self.S)
        for v in range(self.V):
            step[s, (s % self.W) * self.V + v] = ok[:, v]
        self.ok, self.step = ok, step
        law = np.empty((L, self.S))
        law[0] = lang.initial
        for j in range(1, L):
            law[j] = self._push(law[j - 1])
        self.law = law  # law[j]: the window at position j
        self.mu = law.reshape(L, self.S // self.V, self.V).sum(axis=1)  # token marginals q(x_j)
        self._powers = {1: step}
        self._probs: dict[int, np.ndarray] = {}

    def _push(self, p: np.ndarray) -> np.ndarray:
        out = (p.reshape(self.V, self.W)[:, :, None] * self.cond.reshape(self.V, self.W, self.V)).sum(axis=0)
        return out.ravel()

    def reach(self, d: int) -> np.ndarray:
        """``[A^d > 0]`` by binary powering (cached)."""
        if d not in self._powers:
            half = self.reach(d // 2)
            sq = (half.astype(np.float64) @ half.astype(np.float64)) > 0
            self._powers[d] = (sq.astype(np.float64) @ self.step.astype(np.float64) > 0) if d % 2 else sq
        return self._powers[d]

    def power(self, d: int) -> np.ndarray:
        """``A^d``, the window chain's ``d``-step transition (binary powering, cached)."""
        if d not in self._probs:
            if d == 1:
                A = np.zeros((self.S, self.S))
                s = np.arange(self.S)
                for v in range(self.V):
                    A[s, (s % self.W) * self.V + v] = self.cond[:, v]
                self._probs[1] = A
            else:
                half = self.power(d // 2)
                sq = half @ half
                self._probs[d] = sq @ self.power(1) if d % 2 else sq
        return self._probs[d]

    def window_weight(self, start: int) -> np.ndarray:
        """``prod_i q(x_{start+i} = digit_i(s))`` over windows ``s`` (oldest digit first)."""
        w = self.mu[start]
        for i in range(1, self.k):
            w = np.outer(w, self.mu[start + i]).ravel()
        return w


def _first_call_ser(ch: _Chain, runs: list[tuple[int, int]]) -> float:
    """``1 - P(prod_{j in R} q(x_j) draws are possible)``, exact, in log space (module docstring)."""
    log_valid = 0.0
    alpha = None
    prev_end = -1
    for b, e in runs:
        w = ch.window_weight(b)
        if alpha is None:  # the first full window, reached from the start
            possible = ch.law[b + ch.k - 1] > 0
            lost = float(w[~possible].sum())
            new = w * possible
        else:
            B = ch.reach(b + ch.k - 1 - prev_end)
            lost = float(alpha @ (~B).astype(np.float64) @ w)
            new = (alpha @ B.astype(np.float64)) * w
        if lost >= 1.0:
            return 1.0
        log_valid += math.log1p(-lost)
        alpha = new / new.sum()
        for j in range(b + ch.k, e + 1):  # inside a run: each window moves on by the drawn token
            a = alpha.reshape(ch.V, ch.W)
            okr = ch.ok.reshape(ch.V, ch.W, ch.V)
            lost = float((a[:, :, None] * ~okr * ch.mu[j][None, None, :]).sum())
            if lost >= 1.0:
                return 1.0
            log_valid += math.log1p(-lost)
            alpha = (a[:, :, None] * okr * ch.mu[j][None, None, :]).sum(axis=0).ravel()
            alpha = alpha / alpha.sum()
        prev_end = e
    return float(-math.expm1(log_valid)) + 0.0  # + 0.0: no -0.0


def _first_call_kl(ch: _Chain, runs: list[tuple[int, int]]) -> float:
    """``sum_{j in R} H(X_j) - H(X_R)`` as a sum of non-negative KL terms (exact, nats; no large cancellation).

    Each KL is summed as ``kl_div(p, r) = p log(p / r) - p + r >= 0`` term by term (the same sum for
    two laws), so round-off cannot make it negative.

    By the chain rule over the windows at the runs' ends: each block adds its own total correlation
    ``KL(law of its window || product of its token marginals)`` and, after the first, its mutual
    information with the previous block's window, ``sum_s pi(s) KL(A^d[s, .] || pi')``; each further
    position of a run adds ``I(X_j; window_{j-1}) = sum_s pi_{j-1}(s) KL(q(. | s) || q(x_j))``.
    """
    def mean_kl(weights: np.ndarray, rows: np.ndarray, ref: np.ndarray) -> float:
        on = weights > 0  # an unreachable window has weight 0 and may put mass where ref is 0
        return float(weights[on] @ kl_div(rows[on], ref[None, :]).sum(axis=1))

    total = 0.0
    prev_end = -1
    for b, e in runs:
        window = ch.law[b + ch.k - 1]
        total += float(kl_div(window, ch.window_weight(b)).sum())
        if prev_end >= 0:
            total += mean_kl(ch.law[prev_end], ch.power(b + ch.k - 1 - prev_end), window)
        for j in range(b + ch.k, e + 1):
            total += mean_kl(ch.law[j - 1], ch.cond, ch.mu[j])
        prev_end = e
    return total


def ngram_plan(lang: NGram, length: int, gap: int) -> InterleavedPlan:
    """The interleaved plan with gap ``g`` on ``lang`` at length ``L`` and its exact SER (module docstring)."""
    if not isinstance(lang, NGram):
        raise TypeError(f"interleaved plans are for n-grams, got {type(lang).__name__}")
    k, L = lang.order - 1, int(length)
    if L < k:
        raise ValueError(f"an interleaved plan needs L >= n - 1 = {k}, got L = {L}")
    if int(gap) != gap or gap < 0:
        raise ValueError(f"gap must be an integer >= 0, got {gap!r}")
    return _plan(_Chain(lang, L), L, int(gap))


def _plan(ch: _Chain, L: int, gap: int) -> InterleavedPlan:
    runs = _first_call_runs(L, ch.k, gap)
    calls = 1 + fill_calls(_max_run(L, runs), ch.k)
    return InterleavedPlan(gap, tuple(runs), calls, _first_call_ser(ch, runs), _first_call_kl(ch, runs), L, ch.k)


def ngram_structural_floor(lang: NGram, length: int, calls: int, metric: str = "ser") -> StructuralFloor:
    """The best interleaved plan's SER or KL in at most ``t`` calls, ``t = 1..calls``: an upper bound on the floor.

    Every gap ``g = 0..L - k`` is tried when the n-gram has at most :data:`MAX_WINDOWS_ALL_GAPS`
    windows, else the widest gap of each call count.
    """
    if metric not in ("ser", "kl"):
        raise ValueError(f"unknown metric {metric!r}; choose ser or kl")
    k, L = lang.order - 1, int(length)
    if L < k:
        raise ValueError(f"an interleaved plan needs L >= n - 1 = {k}, got L = {L}")
    ch = _Chain(lang, L)
    gaps = range(0, L - k + 1)
    if ch.S > MAX_WINDOWS_ALL_GAPS:
        widest: dict[int, int] = {}
        for g in gaps:
            widest[1 + fill_calls(g, k)] = g
        gaps = sorted(set(widest.values()) | {0})
    best: list[InterleavedPlan | None] = [None] * int(calls)
    for g in gaps:
        p = _plan(ch, L, g)
        for t in range(p.calls, int(calls) + 1):
            if best[t - 1] is None or getattr(p, metric) < getattr(best[t - 1], metric):
                best[t - 1] = p
    values = np.array([getattr(p, metric) for p in best])
    values.setflags(write=False)
    return StructuralFloor(values, "upper bound (achievable interleaved plan)",
                           f"interleaved plans on the order-{lang.order} n-gram: first call blocks of {k} "
                           "position(s), exact fill of the runs between them", tuple(best))


def product_floor(block_floors: list[np.ndarray]) -> np.ndarray:
    """``1 - prod_b (1 - F_b(t))``: the SER floor of a product of independent blocks (exact; module docstring)."""
    valid = np.ones_like(np.asarray(block_floors[0], dtype=np.float64))
    for f in block_floors:
        valid = valid * (1.0 - np.asarray(f, dtype=np.float64))
    return 1.0 - valid


def interval_floor(lang: IntervalLanguage, length: int, calls: int, metric: str = "ser") -> StructuralFloor:
    """The interval language's SER or KL floor at any ``L`` from its intervals' floors (exact; module docstring).

    SER by the product rule; forward KL is the sum of the intervals' KL floors (the (I1) sum splits
    over independent blocks, each block's share being a mixture of its own policies).
    """
    L, l = int(length), int(lang.l)
    whole, rest = divmod(L, l)
    if dp_max_length(lang.vocab_size, calls) < min(l, L):
        raise ValueError(f"the interval language's floor needs the exact DP on one interval of l = {l} positions, "
                         f"beyond its reach ({dp_limit_text(lang.vocab_size, calls)})")
    blocks = [(optimal_decoder(lang, size, calls, metric).values, count)
              for size, count in ((l, whole), (rest, 1 if rest else 0)) if count]
    if metric == "ser":
        values = product_floor([1.0 - (1.0 - f) ** count for f, count in blocks])
    else:
        values = sum(count * f for f, count in blocks)
    values.setflags(write=False)
    return StructuralFloor(values, "exact (product rule)" if metric == "ser" else "exact (sum over intervals)",
                           f"{whole} independent interval(s) of {l}" + (f" and one of {rest}" if rest else "")
                           + ", each by the optimal decoder's DP", (None,) * int(calls))


def structural_floor(language: Any, length: int, calls: int, metric: str = "ser") -> StructuralFloor | None:
    """The structural floor of ``language`` for ``metric`` if its kind has one (n-gram, interval), else ``None``."""
    if isinstance(language, NGram) and length >= language.order - 1:
        return ngram_structural_floor(language, length, calls, metric)
    if isinstance(language, IntervalLanguage):
        return interval_floor(language, length, calls, metric)
    return None
