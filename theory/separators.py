"""Separators and dependencies of a reverse step (Definitions B.4, B.5) and their exact laws.

For step ``i`` of an instance (Definition B.1) every position is in exactly one class:

* ``E`` (earlier): in ``tau_{<i}``, unmasked before step ``i``; probability ``a = u_{i-1}``;
* ``T`` (new): in ``tau_i``; probability ``b = pi_i``;
* ``M``: still masked after step ``i``; probability ``1 - u_i``;

independently over positions (the i.i.d. step assignment of an instance: docs/derivations.md,
"The setting every lemma shares"). A maximal run of ``r`` consecutive ``E`` positions holds
``floor(r / (n-1))`` separators; ``S_i`` is their total (Definition B.4).
``D_i`` is the number of intervals between separators that hold at least one ``T`` position
(Definition B.5): scanning the ``T`` positions left to right, a ``T`` position starts a new group
unless it is the first or no run of ``>= n-1`` ``E`` positions lies between it and the previous
``T`` position. ``K_i = |tau_i|``.

The exact laws come from a transfer matrix over positions whose state is
``(r mod (n-1), B)``: ``r`` the length of the current ``E`` run and ``B`` the flag "the next ``T``
position starts a new group". It carries the joint law of ``(S_i, K_i)`` and the first moment
of ``D_i`` on each ``(S_i, K_i)`` cell, so ``E[D_i | S_i = s, K_i = k]`` is exact. Arrays of
``fractions.Fraction`` (``dtype=object``) give exact rationals; float64 arrays give the fast form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .claims import show

__all__ = [
    "StepStats",
    "step_stats",
    "JointLaw",
    "joint_law",
    "expected_dependency_gap",
    "expected_gap_per_step",
    "expected_same_group_pairs",
    "enumerate_joint_law",
    "check_step_probabilities",
]


@dataclass(frozen=True)
class StepStats:
    """Definitions B.4/B.5 for one step ``i`` of one instance.

    Attributes
    ----------
    separators : int
        ``S_i = sum over maximal runs of tau_{<i} of floor(r / (n-1))``.
    dependencies : int
        ``D_i``: number of separator-delimited intervals holding a position of ``tau_i``.
    new : int
        ``K_i = |tau_i|``.
    groups : tuple of tuple of int
        The positions of ``tau_i`` (1-based) grouped by interval, left to right.
    runs : tuple of tuple of int
        ``(start, length)`` of each maximal run of ``tau_{<i}`` (1-based start).
    """

    separators: int
    dependencies: int
    new: int
    groups: tuple[tuple[int, ...], ...]
    runs: tuple[tuple[int, int], ...]


def _check_order(n: int) -> int:
    if int(n) != n or n < 2:
        raise ValueError(f"n-gram order n must be an integer >= 2, got {show(n)}")
    return int(n)


def step_stats(steps: Sequence[int], i: int, n: int) -> StepStats:
    """``S_i``, ``D_i``, ``|tau_i|`` of step ``i`` for the instance ``steps`` (Definitions B.4, B.5).

    Parameters
    ----------
    steps : sequence of int, length L
        ``steps[j-1]`` = the step (``>= 1``) at which position ``j`` is unmasked.
    i : int
        The step, ``>= 1``.
    n : int
        n-gram order, ``>= 2``.
    """
    n = _check_order(n)
    steps = np.asarray(steps)
    if steps.ndim != 1 or steps.size == 0:
        raise ValueError(f"steps must be a non-empty vector of step indices, got shape {steps.shape}")
    if np.any(steps < 1):
        raise ValueError(f"step indices start at 1, got min {int(steps.min())}")
    if int(i) != i or i < 1:
        raise ValueError(f"step i must be an integer >= 1, got {show(i)}")
    earlier = steps < i
    runs: list[tuple[int, int]] = []
    groups: list[list[int]] = []
    separators = 0
    run = 0
    open_group = False  # a group is open: no separator since the last new position
    for j, s in enumerate(steps.tolist(), start=1):
        if s < i:
            run += 1
            if run == 1:
                runs.append((j, 0))
            runs[-1] = (runs[-1][0], run)
            if run % (n - 1) == 0:
                separators += 1
                open_group = False
        else:
            run = 0
            if s == i:
                if not open_group:
                    groups.append([])
                    open_group = True
                groups[-1].append(j)
    del earlier
    k = sum(len(g) for g in groups)
    return StepStats(separators, len(groups), k, tuple(tuple(g) for g in groups), tuple(runs))


def check_step_probabilities(a, b) -> None:
    """Domain of the step law: ``a = u_{i-1} >= 0``, ``b = pi_i >= 0``, ``a + b <= 1``."""
    if not (0 <= a and 0 <= b and a + b <= 1):
        raise ValueError(
            f"need u_(i-1) = {show(a)} >= 0, pi_i = {show(b)} >= 0 and u_(i-1) + pi_i <= 1 (they are probabilities)"
        )


@dataclass(frozen=True)
class JointLaw:
    """Exact joint law of ``(S_i, K_i)`` and first moment of ``K_i - D_i`` for one step.

    Attributes
    ----------
    prob : (S_max + 1, L + 1) array
        ``prob[s, k] = P(S_i = s, K_i = k)``.
    gap_moment : (S_max + 1, L + 1) array
        ``gap_moment[s, k] = E[K_i - D_i ; S_i = s, K_i = k]`` (the moment, not conditional):
        accumulated directly as the probability of new positions that do *not* start a group, a
        sum of positive terms (no cancellation in float64).
    """

    prob: np.ndarray
    gap_moment: np.ndarray

    @property
    def dep_moment(self) -> np.ndarray:
        """``E[D_i ; S_i = s, K_i = k] = k P(s, k) - E[K_i - D_i ; s, k]``."""
        k = np.arange(self.prob.shape[1])[None, :]
        return k * self.prob - self.gap_moment

    def conditional_gap(self) -> np.ndarray:
        """``E[K_i - D_i | S_i = s, K_i = k]``; NaN (float) / None (exact) where the cell has probability 0."""
        gap = self.gap_moment
        out = np.empty(gap.shape, dtype=gap.dtype)
        for idx in np.ndindex(gap.shape):
            p = self.prob[idx]
            out[idx] = gap[idx] / p if p != 0 else (None if gap.dtype == object else np.nan)
        return out


def _step_arguments(L: int, n: int, a, b) -> tuple:
    """Checked ``(L, n, a, b, exact)``: ``a, b`` as Fractions when both are rational (``exact``)."""
    n = _check_order(n)
    if int(L) != L or L < 1:
        raise ValueError(f"L must be an integer >= 1, got {show(L)}")
    check_step_probabilities(a, b)
    exact = isinstance(a, (Fraction, int)) and isinstance(b, (Fraction, int))
    if exact:
        a, b = Fraction(a), Fraction(b)
    return int(L), n, a, b, exact


def _zeros(shape, exact: bool) -> np.ndarray:
    if exact:
        out = np.empty(shape, dtype=object)
        out.fill(Fraction(0))
        return out
    return np.zeros(shape)


def joint_law(L: int, n: int, a, b) -> JointLaw:
    """Exact law of ``(S_i, K_i)`` with ``E[D_i ; S_i, K_i]`` by the transfer matrix (module docstring).

    Parameters
    ----------
    L : int
        Sequence length.
    n : int
        n-gram order.
    a, b : float or Fraction
        ``u_{i-1}`` and ``pi_i``. Fractions (or ints) give exact rational arrays.

    Cost ``O(L * (n-1) * S_max * L)``; about a second at ``L = 512``.
    """
    L, n, a, b, exact = _step_arguments(L, n, a, b)
    m = 1 - (a + b)  # >= 0 exactly when the domain check a + b <= 1 passed
    w = n - 1
    s_max = L // w
    shape = (w, 2, s_max + 1, L + 1)
    P = _zeros(shape, exact)
    G = _zeros(shape, exact)  # first moment of K - D on each state
    P[0, 1, 0, 0] = 1 if not exact else Fraction(1)
    for _ in range(L):
        P2 = _zeros(shape, exact)
        G2 = _zeros(shape, exact)
        # E: run grows; completing a multiple of n-1 adds a separator and opens a new group
        for r in range(w):
            if r + 1 < w:
                P2[r + 1] += a * P[r]
                G2[r + 1] += a * G[r]
            else:
                P2[0, 1, 1:, :] += a * P[r, 0, :-1, :] + a * P[r, 1, :-1, :]
                G2[0, 1, 1:, :] += a * G[r, 0, :-1, :] + a * G[r, 1, :-1, :]
        # T: a new position; it joins the open group iff B = 0 (then K - D grows by 1)
        tP = P.sum(axis=0)  # (2, S, K)
        tG = G.sum(axis=0)
        P2[0, 0, :, 1:] += b * (tP[0, :, :-1] + tP[1, :, :-1])
        G2[0, 0, :, 1:] += b * (tG[0, :, :-1] + tG[1, :, :-1] + tP[0, :, :-1])
        # M: still masked; run resets, B unchanged
        P2[0] += m * tP
        G2[0] += m * tG
        P, G = P2, G2
    return JointLaw(P.sum(axis=(0, 1)), G.sum(axis=(0, 1)))


def expected_dependency_gap(L: int, n: int, a, b):
    """``E[|tau_i| - D_i]`` exactly, by the ``(r, B)`` transfer matrix alone (``O(L n)``).

    ``E[|tau_i| - D_i] = sum_j P(position j is new and B = 0 just before it)`` (a new position
    that joins an open group): a sum of positive terms, accurate in float64 even when
    ``pi_i`` is tiny (no ``L b - E[D_i]`` cancellation).
    """
    L, n, a, b, exact = _step_arguments(L, n, a, b)
    m = 1 - (a + b)  # >= 0 exactly when the domain check a + b <= 1 passed
    w = n - 1
    P = _zeros((w, 2), exact)
    P[0, 1] = Fraction(1) if exact else 1.0
    gap = Fraction(0) if exact else 0.0
    for _ in range(L):
        tP = P.sum(axis=0)
        gap += b * tP[0]
        P2 = _zeros((w, 2), exact)
        for r in range(w):
            if r + 1 < w:
                P2[r + 1] += a * P[r]
            else:
                P2[0, 1] += a * (P[r, 0] + P[r, 1])
        P2[0, 0] += b * (tP[0] + tP[1])
        P2[0] += m * tP
        P = P2
    return gap


def expected_same_group_pairs(L: int, n: int, a, b):
    """``E[#{j < k in tau_i : no run of >= n-1 positions of tau_{<i} strictly between}]``, exactly.

    An upper bound on ``|tau_i| - D_i`` instance by instance (a group of size ``g`` has
    ``g - 1 <= g (g - 1) / 2``). For a pair at distance ``d`` the probability is
    ``b^2 * P(no E-run of length n-1 among d-1 i.i.d. positions)``; the latter by a run-length
    recursion.
    """
    L, n, a, b, exact = _step_arguments(L, n, a, b)
    w = n - 1
    # no_run[m] = P(no run of w consecutive E among m positions), E with probability a
    state = _zeros(w, exact)
    state[0] = Fraction(1) if exact else 1.0
    no_run = [state.sum()]
    for _ in range(L):
        nxt = _zeros(w, exact)
        nxt[0] = (1 - a) * state.sum()
        nxt[1:] = a * state[:-1]
        state = nxt
        no_run.append(state.sum())
    total = Fraction(0) if exact else 0.0
    for d in range(1, L):
        total += (L - d) * no_run[d - 1]
    return b * b * total


def enumerate_joint_law(L: int, n: int, a: Fraction, b: Fraction) -> JointLaw:
    """Brute-force oracle for :func:`joint_law`: all ``3^L`` class assignments, exact rationals."""
    import itertools

    m = 1 - (a + b)  # >= 0 exactly when the domain check a + b <= 1 passed
    s_max = L // (n - 1)
    P = _zeros((s_max + 1, L + 1), True)
    G = _zeros((s_max + 1, L + 1), True)
    weight = {1: a, 2: b, 3: m}  # class code = step: 1 earlier, 2 this step, 3 later
    for classes in itertools.product((1, 2, 3), repeat=L):
        p = Fraction(1)
        for c in classes:
            p *= weight[c]
        if p == 0:
            continue
        st = step_stats(classes, 2, n)
        P[st.separators, st.new] += p
        G[st.separators, st.new] += p * (st.new - st.dependencies)
    return JointLaw(P, G)


def expected_gap_per_step(L: int, n: int, u) -> np.ndarray:
    """``E[|tau_i| - D_i]`` for every step ``i = 1..N`` of the schedule ``u = (u_0..u_N)``, float64.

    The ``(r, B)`` transfer matrix of :func:`expected_dependency_gap`, run for all steps at once
    (arrays over steps), ``O(L N n)``.
    """
    n = _check_order(n)
    if int(L) != L or L < 1:
        raise ValueError(f"L must be an integer >= 1, got {show(L)}")
    u = np.asarray(u, dtype=np.float64)
    a, b = u[:-1], np.diff(u)
    if np.any(a < 0) or np.any(b < 0) or np.any(a + b > 1):
        raise ValueError("u must be a non-decreasing vector in [0, 1] (a schedule u_0..u_N)")
    m = 1 - (a + b)
    w = n - 1
    P = np.zeros((a.size, w, 2))
    P[:, 0, 1] = 1.0
    gap = np.zeros(a.size)
    for _ in range(int(L)):
        tP = P.sum(axis=1)  # (N, 2)
        gap += b * tP[:, 0]  # a new position joining an open group (positive terms, no cancellation)
        P2 = np.zeros_like(P)
        P2[:, 1:, :] = a[:, None, None] * P[:, :-1, :]
        P2[:, 0, 1] += a * (P[:, w - 1, 0] + P[:, w - 1, 1])
        P2[:, 0, 0] += b * (tP[:, 0] + tP[:, 1])
        P2[:, 0, :] += m[:, None] * tP
        P = P2
    return gap
