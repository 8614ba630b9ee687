"""Floors of the wider decoder classes: tempered or greedy values, and draw-then-select.

:func:`numerics.exact.optimal_decoder.optimal_decoder` minimizes over one class, :data:`MARGINAL`:
monotone decoders that choose the next set ``D`` of positions from the revealed values ``x_S``,
each revealed value drawn independently from its oracle marginal ``q(x_j | x_S)``. Decoders
practitioners run leave that class in two ways, so each gets its own class and floor
(``docs/methods/optimal-decoder.md`` has the recursions and their proofs):

* **Values.** A :class:`DecoderClass` with temperature ``tau`` draws ``x_j`` from
  ``r_j ∝ q(x_j | x_S)^(1/tau)`` (``tau = 0``: an argmax, any tie; EB-Sampler and LLaDA/Fast-dLLM at
  their ``temperature``). SER can drop below :data:`MARGINAL`'s floor (a greedy one-call decoder can
  be always valid); forward KL cannot: the marginals minimize it among product laws.
* **Selection.** ``selection = "draw-then-select"``: at each call one value is drawn for *every*
  masked position, and the policy keeps any non-empty subset ``D`` after seeing the draws (LLaDA's
  low-confidence remasking, Fast-dLLM). Seeing the draws can only help.

SER floor, ``t`` = calls left, ``F_0 = 1[q(x) = 0]`` on the full set, ``F = 1`` at ``q(x_S) = 0``::

    fixed:             F_t(S, x_S) = min_D sum_{x_D} prod_{j in D} r_j(x_j | x_S) F_{t-1}(S u D, x_{S u D})
    draw-then-select:  F_t(S, x_S) = sum_{y_M} prod_{j in M} r_j(y_j | x_S) min_D F_{t-1}(S u D, x_S u y_D)

(``M`` the masked set, ``D`` non-empty, ``D = M`` when ``t = 1``; at ``tau = 0`` the sum over a
point law is a minimum over the tied argmax values). KL floor of a ``fixed`` class::

    W_t(S, x_S) = min_D [ sum_{j in D} CE(q(. | x_S)_j, r_j) - H(X_D | x_S) + E_{q(x_D | x_S)} W_{t-1} ],

``CE`` the cross-entropy (``tau = 1``: ``H(X_j | x_S)``, the total correlation of (I1)). A
draw-then-select decoder's law sums over the discarded draws, so its KL is not a DP; its floor is
bounded below by ``-log(1 - F_T)`` (I3), which is 0 (vacuous) where the SER floor is 0.

``call_cost = lam > 0`` adds ``lam`` per call: ``G(lam) = min E[metric] + lam E[calls]`` over the
class with at most ``T`` calls, so every decoder of the class with ``E[calls] = c`` has
``metric >= G(lam) - lam c`` (:func:`expected_calls_floor`): a floor at a decoder's *expected*
calls, for rules whose calls are random.

Work: ``fixed`` as the optimal decoder (``(2V+1)^L`` per budget); ``draw-then-select``
``sum_S V^L 2^{|M|} = (3V)^L``-ish: each revealed set ``S`` carries a full ``V^L`` array per subset of
its masked set. Both refused beyond :data:`MAX_CLASS_WORK` before anything is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy.special import entr

from numerics.exact.joint_table import as_table
from numerics.exact.optimal_decoder import DECODER_CLASS, _members, _subsets_largest_first, _Tables, language_sizes
from numerics.sampling.adaptive import on_grid

__all__ = [
    "ANY_VALUES",
    "DecoderClass",
    "ClassFloor",
    "MARGINAL",
    "MAX_CLASS_WORK",
    "SELECTIONS",
    "class_floor",
    "class_work",
    "expected_calls_floor",
]

SELECTIONS = ("fixed", "draw-then-select")
MAX_CLASS_WORK = 1 << 26  # array entries summed over (S, D) per budget: seconds of NumPy


@dataclass(frozen=True)
class DecoderClass:
    """A class of monotone oracle decoders: how the revealed set is chosen and how its values are drawn.

    Attributes
    ----------
    selection : {"fixed", "draw-then-select"}
        ``fixed``: ``D`` is a function of the revealed values ``x_S``; ``draw-then-select``: of them
        and of one independent draw per masked position, the kept draws being the revealed values.
    temperature : float
        ``tau``: every draw is from ``r_j ∝ q(x_j | x_S)^(1/tau)``; ``1`` the oracle marginal, ``0``
        an argmax (any tie).
    """

    selection: str = "fixed"
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise ValueError(f"unknown selection {self.selection!r}; choose one of {SELECTIONS}")
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")

    @property
    def name(self) -> str:
        """Short label: ``marginal`` (fixed sets, marginal draws), ``fixed-set@T=0.5``, ``draw-then-select@T=1``, ..."""
        base = "fixed-set" if self.selection == "fixed" else "draw-then-select"
        return "marginal" if self == MARGINAL else f"{base}@T={self.temperature:g}"

    @property
    def description(self) -> str:
        """The class in words (the text the CLI, docs and JSON use)."""
        if (self.selection, self.temperature) == ("fixed", 1.0):
            return DECODER_CLASS
        values = ("drawn independently from its oracle marginal given the revealed values" if self.temperature == 1
                  else "an argmax of its oracle marginal given the revealed values (any tie)" if self.temperature == 0
                  else f"drawn independently from its oracle marginal tempered at T = {self.temperature:g}")
        if self.selection == "fixed":
            return ("monotone decoders that choose which positions to reveal from the revealed values, "
                    f"each revealed value {values}")
        return ("monotone decoders that draw one value for every masked position and keep any non-empty "
                f"subset after seeing the draws, each draw {values}")

    @property
    def bounds(self) -> tuple[str, ...]:
        """The metrics whose floor :func:`class_floor` computes exactly for this class."""
        return ("ser", "kl") if self.selection == "fixed" else ("ser",)


MARGINAL = DecoderClass("fixed", 1.0)  # the optimal decoder's class
ANY_VALUES = ("decoders whose values at each call are drawn from any law chosen from the revealed values "
              "(a fixed valid sequence, greedy, tempered, top-p): SER floor 0 at every T >= 1 (output one valid "
              "sequence in one call); forward KL floor = the marginal class's (the marginals minimize "
              "sum_j CE(q_j, r_j) over product laws r)")


@dataclass(frozen=True)
class ClassFloor:
    """The floor of one decoder class for one metric.

    Attributes
    ----------
    decoder_class : DecoderClass
    metric : str
        ``"ser"`` or ``"kl"``.
    values : (calls,) float64
        ``values[t-1]``: ``min E[metric] + call_cost E[calls]`` over the class in at most ``t`` calls.
    calls : int
    call_cost : float
        ``lam`` (0: the plain floor).
    length, vocab_size : int
    """

    decoder_class: DecoderClass
    metric: str
    values: np.ndarray
    calls: int
    call_cost: float
    length: int
    vocab_size: int

    @property
    def value(self) -> float:
        """The floor at the full budget."""
        return float(self.values[-1])


def class_work(vocab_size: int, length: int, calls: int, selection: str) -> int:
    """Array entries the DP sums (module docstring): ``fixed`` ``T (2V+1)^L``, draw-then-select ``T (3V)^L``."""
    V, L, T = int(vocab_size), int(length), min(int(calls), int(length))
    return T * ((2 * V + 1) ** L if selection == "fixed" else (3 * V) ** L)


def _check(V: int, L: int, calls: int, selection: str) -> None:
    if int(calls) != calls or calls < 1:
        raise ValueError(f"the call budget T must be an integer >= 1, got {calls!r}")
    if class_work(V, L, calls, selection) > MAX_CLASS_WORK:
        reach = 0
        while class_work(V, reach + 1, calls, selection) <= MAX_CLASS_WORK:
            reach += 1
        raise ValueError(f"the {selection} class floor's exact DP reaches L <= {reach} at V = {V} with T = {calls} "
                         f"calls (MAX_CLASS_WORK); L = {L} is beyond it")


def _draw_law(cond: np.ndarray, axis: int, tau: float) -> np.ndarray:
    """``r_j ∝ cond^(1/tau)`` along ``axis`` (``tau = 0``: the 0/1 indicator of the argmax set on the grid)."""
    if tau == 1:
        return cond
    if tau == 0:
        g = on_grid(cond)
        return ((g == g.max(axis=axis, keepdims=True)) & (cond > 0)).astype(np.float64)
    with np.errstate(divide="ignore"):
        logc = np.log(cond)
    top = logc.max(axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # an impossible x_S: all zeros, left at zero
    w = np.exp((logc - top) / tau)
    tot = w.sum(axis=axis, keepdims=True)
    return np.divide(w, tot, out=np.zeros_like(w), where=tot > 0)


def class_floor(language: Any, length: int | None, calls: int, decoder_class: DecoderClass = MARGINAL,
                metric: str = "ser", call_cost: float = 0.0) -> ClassFloor:
    """The floor of ``decoder_class`` for ``metric`` in at most ``calls`` calls (module docstring).

    Parameters
    ----------
    language : HMM, NGram, IntervalLanguage or a joint table ``(V,) * L``
    length : int or None
    calls : int
    decoder_class : DecoderClass
    metric : {"ser", "kl"}
        ``"kl"`` only for ``selection = "fixed"`` (:attr:`DecoderClass.bounds`).
    call_cost : float
        ``lam >= 0`` added per call.
    """
    if metric not in decoder_class.bounds:
        raise ValueError(f"the {decoder_class.name} class's floor is computed for {decoder_class.bounds} only "
                         f"(not {metric!r}): a draw-then-select decoder's KL is not a dynamic program")
    if not (math.isfinite(call_cost) and call_cost >= 0):
        raise ValueError(f"call_cost must be a finite number >= 0, got {call_cost!r}")
    V, L = language_sizes(language, length)
    _check(V, L, calls, decoder_class.selection)
    q = as_table(language, length)
    tab = _Tables(q)
    full, T, tau = (1 << L) - 1, min(int(calls), L), float(decoder_class.temperature)
    kl = metric == "kl"
    draw = decoder_class.selection == "draw-then-select" and tau != 0  # at tau = 0 the draws are the state's
    rule = _Rule(kl, draw, tau, float(call_cost))
    prev: dict[int, np.ndarray] = {full: np.zeros(q.shape) if kl else (q == 0).astype(np.float64)}
    values = np.empty(T)
    order = sorted(range(full), key=lambda s: bin(s).count("1"))
    for t in range(1, T + 1):
        cur = {full: prev[full]}
        for S in order:
            cur[S] = _state_value(tab, S, full & ~S, prev, rule, t == 1)
        values[t - 1] = float(cur[0].reshape(()))
        prev = cur
    out = np.concatenate([values, np.full(int(calls) - T, values[-1])])
    out.setflags(write=False)
    return ClassFloor(decoder_class, metric, out, int(calls), float(call_cost), L, V)


class _Rule(NamedTuple):
    """What one DP runs: the metric, the selection, the temperature and the cost per call."""

    kl: bool
    draw: bool  # draw-then-select (at tau > 0)
    tau: float
    lam: float


def _state_value(tab: _Tables, S: int, M: int, prev: dict, rule: _Rule, last: bool) -> np.ndarray:
    """``F_t(S, .)`` / ``W_t(S, .)`` over all ``x_S`` at once (masked axes of length 1)."""
    kl, draw, tau, lam = rule
    L = tab.L
    QS = tab.marg(S)
    masked = _members(M, L)
    cond = {j: tab.conditional(tab.marg(S | (1 << j)), QS) for j in masked}
    r = {j: _draw_law(cond[j], j, tau) for j in masked}
    sets = [M] if last else _subsets_largest_first(M, L)
    if draw:  # sum over the draws y_M of the best kept subset
        shape = tuple(tab.V if (M | S) >> j & 1 else 1 for j in range(L))
        best = np.full(shape, np.inf)
        for D in sets:
            best = np.minimum(best, prev[S | D])
        law = np.ones(QS.shape)
        for j in masked:
            law = law * r[j]
        value = (law * best).sum(axis=tuple(masked), keepdims=True)
        return np.where(QS > 0, value + lam, 1.0 + lam)
    ce = {}
    if kl:
        with np.errstate(divide="ignore"):
            ce = {j: np.where(cond[j] > 0, -cond[j] * np.log(np.where(cond[j] > 0, r[j], 1.0)), 0.0).sum(
                axis=j, keepdims=True) for j in masked}  # r_j = 0 where q > 0: +inf (a greedy decoder's KL)
    best = np.full(QS.shape, np.inf)
    for D in sets:
        axes = tuple(_members(D, L))
        nxt = prev[S | D]
        if kl:
            c = tab.conditional(tab.marg(S | D), QS)
            cand = sum(ce[j] for j in axes) - entr(c).sum(axis=axes, keepdims=True) + (c * nxt).sum(axis=axes,
                                                                                                 keepdims=True)
        elif tau == 0:  # a point law: the best tied argmax values
            ind = np.ones(QS.shape, dtype=bool)
            for j in axes:
                ind = ind & (r[j] > 0)
            cand = np.where(ind, nxt, np.inf).min(axis=axes, keepdims=True)
        else:
            law = r[axes[0]]
            for j in axes[1:]:
                law = law * r[j]
            cand = (law * nxt).sum(axis=axes, keepdims=True)
        best = np.minimum(best, cand)
    return np.where(QS > 0, best + lam, 0.0 if kl else 1.0 + lam)


def expected_calls_floor(floors: list[ClassFloor], expected_calls: float) -> float:
    """``max_lam G(lam) - lam c``: a floor at expected calls ``c`` from floors computed with several ``call_cost``.

    Each ``G(lam)`` must be at the budget the decoder never exceeds (``T >= L`` covers every rule
    that reveals at least one position per call). Every term is a valid floor; the maximum is the
    best of them (the exact lower convex hull needs every ``lam``).
    """
    return max(f.value - f.call_cost * float(expected_calls) for f in floors)
