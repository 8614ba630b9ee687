"""Optimal reveal schedules on the information curve ``Z`` (docs/methods/schedules.md).

Two step-assignment models, both with the oracle and a uniformly random order of the positions:

* **Deterministic block sizes** ``k_1 .. k_T`` (Li-Cai's sampler; Chen-Cong-Li's schedules). With
  ``s_t = k_1 + .. + k_t`` the exact expected KL is the *left-Riemann error* of ``Z``
  (docs/methods/schedules.md, identity (I4)):

      E_sigma KL(q || p_sigma) = sum_t sum_{m=0}^{k_t - 1} (Z_{s_{t-1}+m+1} - Z_{s_{t-1}+1})
                               = sum_t sum_{r=1}^{k_t - 1} (k_t - r) f(s_{t-1} + r),   f(i) = Z_{i+1} - Z_i,

  (:func:`block_error`). A block's cost depends only on where it starts and ends, so the best
  ``T``-block schedule is a shortest path over breakpoints ``0 = s_0 < .. < s_T = L``: dynamic
  programming in ``O(T L^2)`` (:func:`optimal_blocks`; Chen-Cong-Li's DP).

* **I.i.d. step assignment** with probabilities ``pi`` (a :class:`~numerics.schedules.Schedule`,
  the paper's sampler). :func:`numerics.exact.information_curve.jensen_bound_from_curve` gives
  ``E_tau KL``; its sum telescopes (``u_0 = 0, u_N = 1``, ``CZ_L = TC``) to

      E_tau KL = TC - L sum_i pi_i g(u_{i-1}),   g(a) = E Z_{1 + Bin(L-1, a)},

  and since ``L int_0^1 g = sum_j Z_j = TC`` this is ``L`` times the left-Riemann error of the
  Bernstein smoothing ``g`` of ``Z`` on the grid ``u``. :func:`optimize_iid_schedule` minimizes it
  over ``pi`` (L-BFGS-B on softmax logits with the exact gradient
  ``dF/du_k = g(u_k) - g(u_{k-1}) - pi_{k+1} g'(u_k)``, ``g'(a) = (L-1) E f(1 + Bin(L-2, a))``,
  ``F = -sum_i pi_i g(u_{i-1})``) from several starts; the result is a local optimum, reported
  with the start it came from, not a certified global one.

Lavenant-Zanella's continuous optimum, **in our large-L reading** (docs/theory-related.md; their
exact statement and constants were not recovered): with ``z(u) = Z_{uL}`` and ``k(u)`` tokens per
step at unmasked fraction ``u``, ``E KL ~ 1/2 int_0^1 (k(u) - 1) z'(u) du`` and the budget is
``T = int_0^1 L / k(u) du``; a Lagrange multiplier gives ``k(u) ∝ z'(u)^(-1/2)``, i.e. the
step density ``∝ sqrt(z'(u))``: ``u_t = Phi^{-1}(t/T)``, ``Phi(u) ∝ int_0^u sqrt(z')``
(:func:`lz_u`). The same shape is the large-L optimum of the i.i.d. model (there
``E KL ~ 1/2 int k(u) g'(u) du``). The reading ignores ``k >= 1``; :func:`sizes_from_u` enforces it
when a ``u`` grid is rounded to block sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from numerics.estimate import Estimate
from numerics.exact._binomial import binom_pmf
from numerics.exact.information_curve import (
    InformationCurve,
    information_curve_table,
    jensen_bound_from_curve,
)
from numerics.exact.markov import information_curve_markov, markov_chain_of
from numerics.schedules import Schedule, from_u, linear

__all__ = [
    "BlockError",
    "OptimalBlocks",
    "OptimizedSchedule",
    "CurveUnavailableError",
    "block_error",
    "iid_error",
    "information_curve",
    "lz_schedule",
    "lz_u",
    "optimal_blocks",
    "optimal_schedule",
    "optimize_iid_schedule",
    "schedule_from_sizes",
    "sizes_from_u",
]

CURVE_ROUNDOFF = 1e-12  # relative to Z_L: Z is non-decreasing, a smaller decrease is float64 round-off of Z


def information_curve(language_or_table: Any, length: int | None = None) -> InformationCurve:
    """Exact ``Z_1..Z_L``: the Markov closed form for token-level chains, else the joint table.

    A joint table ``(V,) * L`` (ndarray) and any language that
    :func:`numerics.exact.markov.markov_chain_of` refuses go through
    :func:`numerics.exact.information_curve.information_curve_table` (tiny ``V^L`` only).
    """
    if isinstance(language_or_table, np.ndarray):
        return information_curve_table(language_or_table, length)
    if length is None:
        raise ValueError("length is required when a language (not a table) is given")
    try:
        markov_chain_of(language_or_table)
    except ValueError:
        return information_curve_table(language_or_table, length)
    return information_curve_markov(language_or_table, length)


def _increments(curve: InformationCurve) -> np.ndarray:
    """``f[i] = Z_{i+1} - Z_i`` for ``i = 0..L-1`` (``Z_0 = 0``); ``ValueError`` if ``Z`` truly decreases."""
    f = np.diff(curve.z, prepend=0.0)
    scale = float(np.max(np.abs(curve.z))) if curve.length else 0.0
    if np.any(f < -CURVE_ROUNDOFF * scale):
        i = int(np.argmin(f))
        raise ValueError(f"the information curve decreases at j = {i + 1}: Z_{i + 1} - Z_{i} = {f[i]!r}")
    return f


def _check_sizes(sizes: Sequence[int], length: int) -> np.ndarray:
    k = np.asarray(sizes)
    if k.ndim != 1 or k.size < 1 or not np.issubdtype(k.dtype, np.integer):
        raise ValueError(f"block sizes must be a non-empty vector of integers, got {sizes!r}")
    if np.any(k < 1):
        raise ValueError(f"every block must reveal at least one position, got sizes {k.tolist()}")
    if int(k.sum()) != length:
        raise ValueError(f"block sizes sum to {int(k.sum())}, not to the length L = {length}")
    return k.astype(np.int64)


@dataclass(frozen=True)
class BlockError:
    """``E_sigma KL(q || p_sigma)`` of deterministic block sizes under a uniformly random order.

    Attributes
    ----------
    total : Estimate
        The sum of ``per_block`` (exact, ``method = "left-riemann-<curve method>"``).
    per_block : (T,) float64
        ``sum_{m<k_t} (Z_{s_{t-1}+m+1} - Z_{s_{t-1}+1})``: block ``t``'s expected total correlation.
    sizes : (T,) int64
        ``k_1 .. k_T``.
    """

    total: Estimate
    per_block: np.ndarray
    sizes: np.ndarray


def block_error(curve: InformationCurve, sizes: Sequence[int]) -> BlockError:
    """The left-Riemann error (module docstring) of block sizes ``sizes`` (each ``>= 1``, sum ``L``)."""
    k = _check_sizes(sizes, curve.length)
    z = curve.z
    starts = np.concatenate([[0], np.cumsum(k)[:-1]])
    per = np.array([float(np.sum(z[s:s + kk] - z[s])) for s, kk in zip(starts, k)])
    per.setflags(write=False)
    k.setflags(write=False)
    return BlockError(Estimate(float(per.sum()), 0.0, f"left-riemann-{curve.method}"), per, k)


def _block_costs(z: np.ndarray) -> np.ndarray:
    """``C[s, e] = sum_{j=s}^{e-1} (z[j] - z[s])`` for ``0 <= s < e <= L``; ``inf`` where ``e <= s``."""
    L = z.shape[0]
    C = np.full((L + 1, L + 1), np.inf)
    for s in range(L):
        C[s, s + 1:] = np.cumsum(z[s:] - z[s])  # no CZ differences: no cancellation against TC
    return C


@dataclass(frozen=True)
class OptimalBlocks:
    """Chen-Cong-Li's optimal deterministic schedules for every budget ``T <= max_steps``.

    Attributes
    ----------
    errors : (max_steps,) float64
        ``errors[T-1]`` = the minimal ``E_sigma KL`` over all schedules of at most ``T`` blocks
        (0 from ``T = L`` on: one position per step).
    length : int
        ``L``.
    method : str
        ``"dp-<curve method>"``.
    """

    errors: np.ndarray
    length: int
    method: str
    _parents: np.ndarray
    _exact_counts: np.ndarray

    def error(self, n_steps: int) -> Estimate:
        """The minimal ``E_sigma KL`` with at most ``n_steps`` blocks."""
        return Estimate(float(self.errors[self._check(n_steps) - 1]), 0.0, self.method)

    def sizes(self, n_steps: int) -> np.ndarray:
        """Block sizes of an optimal schedule with at most ``n_steps`` blocks (fewest blocks on ties)."""
        T = self._check(n_steps)
        exact = self._exact_counts[: min(T, self.length)]
        t = int(np.argmin(exact)) + 1  # first minimum: the fewest blocks reaching the optimum
        out, e = [], self.length
        for row in range(t - 1, -1, -1):
            s = int(self._parents[row, e])
            out.append(e - s)
            e = s
        return np.array(out[::-1], dtype=np.int64)

    def _check(self, n_steps: int) -> int:
        if int(n_steps) != n_steps or not 1 <= n_steps <= self.errors.shape[0]:
            raise ValueError(f"n_steps must be an integer in 1..{self.errors.shape[0]}, got {n_steps!r}")
        return int(n_steps)


def optimal_blocks(curve: InformationCurve, max_steps: int) -> OptimalBlocks:
    """Minimal left-Riemann error for every budget ``T = 1..max_steps`` by DP over breakpoints.

    ``D_t(e) = min_{s < e} D_{t-1}(s) + C(s, e)`` with ``D_0(0) = 0``, ``D_0(e > 0) = inf`` and
    ``C`` the block cost of the module docstring; ``D_t(L)`` is the best ``t``-block schedule.
    Cost ``O(min(T, L) L^2)`` time, ``O(L^2)`` memory (the parent table is ``min(T, L) x (L+1)``).
    """
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps must be an integer >= 1, got {max_steps!r}")
    _increments(curve)  # refuses a curve that is not non-decreasing
    L = curve.length
    C = _block_costs(curve.z)
    rows = min(int(max_steps), L)
    D = np.full(L + 1, np.inf)
    D[0] = 0.0
    parents = np.zeros((rows, L + 1), dtype=np.int64)
    exact = np.empty(rows)
    cols = np.arange(L + 1)
    for t in range(rows):
        cand = D[:, None] + C  # (L+1, L+1): cand[s, e] = D_{t}(s) + C(s, e)
        parents[t] = np.argmin(cand, axis=0)
        D = cand[parents[t], cols]
        exact[t] = D[L]
    errors = np.concatenate([np.minimum.accumulate(exact), np.full(int(max_steps) - rows, np.nan)])
    errors[rows:] = errors[rows - 1]  # beyond L blocks nothing changes
    for a in (errors, parents, exact):
        a.setflags(write=False)
    return OptimalBlocks(errors, L, f"dp-{curve.method}", parents, exact)


def sizes_from_u(u: Sequence[float], length: int) -> np.ndarray:
    """Round a grid ``0 = u_0 < .. < u_T = 1`` to block sizes: ``s_t = rint(L u_t)``, then each ``>= 1``.

    A forward pass ``s_t = max(s_t, s_{t-1} + 1)`` and a backward pass ``s_t = min(s_t, s_{t+1} - 1)``
    (``s_T = L``) keep every block non-empty; needs ``T <= L``.
    """
    u = np.asarray(u, dtype=np.float64)
    T = u.shape[0] - 1
    if T < 1 or T > length:
        raise ValueError(f"need 1 <= T <= L block boundaries, got T = {T}, L = {length}")
    s = np.rint(length * u).astype(np.int64)
    s[0], s[-1] = 0, length
    for t in range(1, T + 1):
        s[t] = max(s[t], s[t - 1] + 1)
    s[-1] = length
    for t in range(T - 1, 0, -1):
        s[t] = min(s[t], s[t + 1] - 1)
    return np.diff(s)


def schedule_from_sizes(sizes: Sequence[int], name: str = "blocks") -> Schedule:
    """The i.i.d. schedule with the same breakpoints ``u_t = s_t / L`` as the block sizes."""
    k = np.asarray(sizes, dtype=np.int64)
    return from_u(np.concatenate([[0.0], np.cumsum(k) / k.sum()]), name)


def iid_error(curve: InformationCurve, schedule: Schedule) -> Estimate:
    """``E_tau KL`` of the i.i.d. step assignment (:func:`jensen_bound_from_curve`'s total)."""
    return jensen_bound_from_curve(curve, schedule).total


def _g_and_slope(z: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``g(a) = E Z_{1+Bin(L-1,a)}`` and ``g'(a) = (L-1) E[Z_{2+B} - Z_{1+B}]``, ``B ~ Bin(L-2, a)``."""
    L = z.shape[0]
    g = binom_pmf(np.arange(L), L - 1, a[:, None]) @ z
    if L < 2:
        return g, np.zeros_like(a)
    slope = (L - 1) * (binom_pmf(np.arange(L - 1), L - 2, a[:, None]) @ np.diff(z))
    return g, slope


def _iid_objective(z: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """``F = -sum_i pi_i g(u_{i-1})`` with ``pi = softmax(theta)`` and its gradient in ``theta``."""
    w = np.exp(theta - theta.max())
    pi = w / w.sum()
    u = np.concatenate([[0.0], np.cumsum(pi)])
    u[-1] = 1.0
    g, slope = _g_and_slope(z, u)
    F = -float(pi @ g[:-1])
    # dF/du_k for k = 1..N (u_N included: the softmax Jacobian removes the all-ones direction)
    du = g[1:] - g[:-1] - np.concatenate([pi[1:], [0.0]]) * slope[1:]
    dpi = np.cumsum(du[::-1])[::-1]  # u_k = pi_1 + .. + pi_k
    return F, pi * (dpi - pi @ dpi)


@dataclass(frozen=True)
class OptimizedSchedule:
    """A numerically optimized i.i.d. schedule (a local optimum from several starts).

    Attributes
    ----------
    schedule : Schedule
    value : Estimate
        Its exact ``E_tau KL`` (:func:`iid_error`).
    start : str
        Name of the start the optimizer descended from.
    start_values : dict
        ``start name -> exact E_tau KL`` of every start (the optimum is ``<=`` each).
    converged : bool
        Whether L-BFGS-B reported convergence from the winning start.
    """

    schedule: Schedule
    value: Estimate
    start: str
    start_values: dict
    converged: bool


def optimize_iid_schedule(
    curve: InformationCurve, n_steps: int, starts: Sequence[Schedule] = (), max_iter: int = 500
) -> OptimizedSchedule:
    """Minimize ``E_tau KL`` over ``pi`` on the simplex (module docstring) from the given starts.

    Starts with a zero ``pi_i`` are moved inside the simplex (``pi_i`` raised to ``1e-3 / N`` of
    the mass, renormalized): the softmax parametrization cannot represent 0.
    ``linear(N)`` is always a start. Each start's own exact value is kept, so the result is never
    worse than any start.
    """
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    N = int(n_steps)
    for s in starts:
        if s.n_steps != N:
            raise ValueError(f"start {s.name!r} has {s.n_steps} steps, expected {N}")
    z = curve.z
    candidates: list[tuple[float, Schedule, str, bool]] = []
    start_values = {}
    for s in [linear(N), *starts]:
        start_values[s.name] = iid_error(curve, s).value
        candidates.append((start_values[s.name], s, s.name, True))
        if N == 1:
            continue
        pi = np.maximum(s.pi, 1e-3 / N)  # inside the simplex (docstring)
        theta0 = np.log(pi / pi.sum())
        res = minimize(lambda th: _iid_objective(z, th), theta0, jac=True, method="L-BFGS-B",
                       options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-12})
        w = np.exp(res.x - res.x.max())
        u = np.concatenate([[0.0], np.cumsum(w / w.sum())])
        u[-1] = 1.0
        opt = from_u(u, f"optimized-iid(N={N})")
        candidates.append((iid_error(curve, opt).value, opt, s.name, bool(res.success)))
    value, best, start, ok = min(candidates, key=lambda c: c[0])
    best = from_u(best.u, f"optimized-iid(N={N})")
    return OptimizedSchedule(best, Estimate(value, 0.0, f"information-curve-{curve.method}"), start,
                             start_values, ok)


def lz_u(curve: InformationCurve, n_steps: int) -> np.ndarray:
    """Our large-L reading of Lavenant-Zanella's optimum: ``u_t = Phi^{-1}(t/T)``, ``Phi' ∝ sqrt(z')``.

    ``z'`` is piecewise constant, ``f(i) = Z_{i+1} - Z_i`` on ``[i/L, (i+1)/L)`` (``f(0) = 0``), so
    ``Phi`` is piecewise linear and inverted cell by cell. ``Z = 0`` (independent positions: every
    schedule has error 0) gives the linear grid.
    """
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    T = int(n_steps)
    L = curve.length
    mass = np.sqrt(np.maximum(_increments(curve), 0.0)) / L  # negatives are round-off (checked above)
    c = np.concatenate([[0.0], np.cumsum(mass)])
    if c[-1] == 0.0:
        return np.arange(T + 1) / T
    y = c[-1] * np.arange(1, T) / T
    cell = np.minimum(np.searchsorted(c, y, side="right") - 1, L - 1)  # c[cell] <= y < c[cell + 1]
    frac = np.minimum((y - c[cell]) / mass[cell], 1.0)
    return np.concatenate([[0.0], (cell + frac) / L, [1.0]])


def lz_schedule(curve: InformationCurve, n_steps: int) -> Schedule:
    """:func:`lz_u` as an i.i.d. :class:`~numerics.schedules.Schedule`."""
    return from_u(lz_u(curve, n_steps), f"lavenant-zanella-reading(N={n_steps})")


class CurveUnavailableError(ValueError):
    """The information curve ``Z`` of a language is not exactly computable at the length asked."""


def optimal_schedule(language: Any, length: int, n_steps: int) -> Schedule:
    """``--schedule optimal``: Chen-Cong-Li's DP schedule for ``(language, L, N)`` as an i.i.d. schedule.

    The exact information curve (:func:`information_curve`: the Markov closed form at any ``L``,
    the joint table while ``V^L`` is tiny) gives the optimal deterministic block sizes with at most
    ``N`` blocks (:func:`optimal_blocks`, the left-Riemann DP); the schedule has the same breakpoints
    ``u_t = s_t / L`` (:func:`schedule_from_sizes`), so its ``N`` is the number of blocks the DP used
    (fewer than ``n_steps`` when fewer already reach the optimum). The DP optimizes *deterministic*
    block sizes (Li-Cai's sampler); the engine's random sampler draws each position's step i.i.d.
    from these breakpoints, for which the schedule is the DP's choice, not a certified optimum
    (:func:`optimize_iid_schedule` optimizes that model locally). From ``N = L`` on the DP's blocks
    are single positions (breakpoints ``t / L``), and the schedule is ``linear(N)``. Where no exact curve exists
    (a general HMM or the interval language beyond the table's size) :class:`CurveUnavailableError`
    says so.
    """
    from numerics.exact.joint_table import MAX_TABLE_ENTRIES

    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"number of steps N must be an integer >= 1, got {n_steps!r}")
    if int(length) != length or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    try:
        markov_chain_of(language)
    except ValueError:
        V = int(language.vocab_size)
        if V ** int(length) > MAX_TABLE_ENTRIES:
            raise CurveUnavailableError(
                f"--schedule optimal needs the exact information curve Z, which is available for first-order "
                f"Markov chains (n-grams with n = 2) at any L and otherwise only from the joint table while "
                f"V^L <= {MAX_TABLE_ENTRIES}; this language ({type(language).__name__}, V = {V}) at L = {length} "
                f"has neither") from None
    if n_steps >= length:  # one position per block: the DP's breakpoints are t / L, i.e. linear(L); finer is linear(N)
        return from_u(np.arange(int(n_steps) + 1) / int(n_steps), f"optimal(N={int(n_steps)}, N >= L: linear)")
    curve = information_curve(language, int(length))
    blocks = optimal_blocks(curve, min(int(n_steps), int(length)))
    sizes = blocks.sizes(min(int(n_steps), int(length)))
    return schedule_from_sizes(sizes, f"optimal(N={int(n_steps)}, DP blocks {sizes.size}, {blocks.method})")
