"""Lemma B.12: the explicit schedule, ``N(eps, n)``, ``L_0(eps, n)`` and KL(q||p) <= 4 eps L log|V| + L eps_learning.

The schedule, its step count and length threshold are derived in docs/derivations.md; the dependency
expectation of the whole schedule is exact (transfer matrix of :mod:`theory.separators`).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from numerics.schedules import Schedule, from_u

from . import symbols as S
from .b11_dependencies import B11_EXPR, B11_TAILS_EXPR
from .claims import require, show
from .family import ClaimFamily
from .parameters import Parameter
from .separators import expected_gap_per_step

__all__ = [
    "b12_rate", "b12_u", "b12_schedule", "b12_steps", "b12_steps_bound", "b12_length_threshold", "b12_solve_eps",
    "expected_dependencies", "check_eps_n", "b12_domain", "b12_sides", "gen_b12", "MAX_B12_STEPS", "b12_constants",
    "B12_PARAMS",
]

MAX_B12_STEPS = 2_000_000  # refuse schedules longer than this (eps too small for an explicit u vector)


def check_eps_n(eps: float, n: int) -> None:
    """Hypotheses of the B.12 schedule: ``0 < eps < 1`` and an integer ``n >= 2``."""
    require(0 < eps < 1, f"epsilon must lie in (0, 1), got {show(eps)}")
    require(int(n) == n and n >= 2, f"n must be an integer >= 2, got {show(n)}")


def b12_rate(eps: float, n: int) -> float:
    """``c = eps / (8 (n-1))``: the schedule's steps are ``pi_i = c u_{i-1}^{n-1}`` for ``i >= 2``."""
    check_eps_n(eps, n)
    return eps / (8 * (n - 1))


def b12_u(eps: float, n: int) -> np.ndarray:
    """``u_0 = 0``, ``u_1 = eps``, ``u_i = min(1, u_{i-1} + c u_{i-1}^{n-1})`` until ``u_N = 1``."""
    c = b12_rate(eps, n)
    u = [0.0, float(eps)]
    while u[-1] < 1.0:
        if len(u) > MAX_B12_STEPS:
            raise ValueError(f"the B.12 schedule for eps = {show(eps)}, n = {show(n)} exceeds {MAX_B12_STEPS} steps")
        u.append(min(1.0, u[-1] + c * u[-1] ** (n - 1)))
    return np.asarray(u)


def b12_schedule(eps: float, n: int) -> Schedule:
    """The derived Lemma B.12 schedule as a :class:`numerics.schedules.Schedule` (via ``from_u``)."""
    return from_u(b12_u(eps, n), name=f"B.12(eps={eps}, n={n})")


def b12_steps(eps: float, n: int) -> int:
    """``N(eps, n)``: the exact number of steps of :func:`b12_schedule`."""
    return b12_u(eps, n).size - 1


def b12_steps_bound(eps: float, n: int) -> float:
    """Closed-form upper bound on ``N(eps, n)`` (docs/derivations.md).

    ``n = 2``: ``1 + ceil(log(1/eps) / log(1 + eps/8))``. ``n >= 3``: doubling phases,
    ``1 + J + 8 (n-1) / (eps^(n-1) (1 - 2^-(n-2)))`` with ``J = ceil(log2(1/eps))``.
    """
    c = b12_rate(eps, n)
    if n == 2:
        return 1 + math.ceil(math.log(1 / eps) / math.log1p(c))
    J = math.ceil(math.log2(1 / eps))
    return 1 + J + 8 * (n - 1) / (eps ** (n - 1) * (1 - 2.0 ** -(n - 2)))


def b12_length_threshold(eps: float, n: int) -> int:
    """``L_0(eps, n) = max(8 (n-1) log(2/eps) / eps^(n-1), 6 (N-1) / eps)``, rounded up to a multiple of ``n-1``.

    For ``L >= L_0`` the B.11 tails of the schedule sum to at most ``2 eps L`` (docs/derivations.md).
    """
    N = b12_steps(eps, n)
    raw = max(8 * (n - 1) * math.log(2 / eps) / eps ** (n - 1), 6 * (N - 1) / eps)
    return int(math.ceil(raw / (n - 1)) * (n - 1))


def _count_steps(eps: float, n: int, cap: int) -> int:
    """``N(eps, n)`` if it is at most ``cap``, else ``cap + 1`` (stops early: no long loops)."""
    c = b12_rate(eps, n)
    u, steps = float(eps), 1
    while u < 1.0 and steps <= cap:
        u = min(1.0, u + c * u ** (n - 1))
        steps += 1
    return steps


def b12_solve_eps(N: int, n: int, tol: float = 1e-10) -> float:
    """The smallest ``eps`` (to ``tol``) whose schedule needs at most ``N`` steps: ``N(eps, n) <= N``.

    ``N(eps, n)`` is non-increasing in ``eps`` (both the start ``u_1 = eps`` and the rate grow).
    """
    require(int(N) == N and N >= 2, f"N must be an integer >= 2 (step 1 and at least one more), got {show(N)}")
    check_eps_n(0.5, n)
    lo, hi = 1e-9, 1.0 - 1e-12  # the open interval (0, 1) of eps, to bisection resolution
    if _count_steps(hi, n, N) > N:
        raise ValueError(f"no eps < 1 gives a B.12 schedule with N = {show(N)} steps")
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _count_steps(mid, n, N) <= N else (mid, hi)
    return hi


def expected_dependencies(L: int, n: int, u) -> np.ndarray:
    """Exact ``E[|tau_i| - D_i]`` for every step of schedule ``u`` (:func:`expected_gap_per_step`)."""
    return expected_gap_per_step(L, n, u)


def b12_domain(inst, need_threshold: bool = True) -> None:
    """``0 < eps < 1``, ``n >= 2``, ``L`` a positive multiple of ``n - 1``; with ``need_threshold``, ``L >= L_0``."""
    eps, n, L = float(inst["eps"]), int(inst["n"]), inst["L"]
    check_eps_n(eps, n)
    require(int(L) == L and L >= 1 and L % (n - 1) == 0, f"L must be a positive multiple of n-1, got {show(L)}")
    if need_threshold:
        L0 = b12_length_threshold(eps, n)
        require(L >= L0, f"Lemma B.12 needs L >= L_0(eps={show(eps)}, n={n}) = {L0}, got L = {show(L)}")


def b12_sides(inst) -> dict:
    """Every side of B.12's chain on the schedule of ``(eps, n)`` at length ``L`` (exact dependency counts)."""
    eps, n, L = float(inst["eps"]), int(inst["n"]), int(inst["L"])
    u = b12_u(eps, n)
    a, b = u[1:-1], np.diff(u)[1:]
    mu_s = L * a ** (n - 1) / (n - 1)
    mu_t = L * b
    gaps = expected_gap_per_step(L, n, u)
    leading = float(np.sum(8 * mu_t**2 / mu_s))
    tails = float(np.sum(2 * mu_t * np.exp(-mu_s / 8) + (2 * mu_t + 6) * np.exp(-mu_t / 3)))
    eps_L = inst["eps"] * inst["L"]
    V, learning = inst.get("V"), inst.get("eps_learning")
    return {
        "gaps": gaps,
        "dependencies": float(gaps.sum()),
        "first": float(gaps[0]),
        "leading": leading,
        "tails": tails,
        "chain": eps * L + leading + tails,
        "eps_L": eps_L,
        "2eps_L": 2 * inst["eps"] * inst["L"],
        "5/4eps_L": 1.25 * inst["eps"] * inst["L"],
        "kl_certificate": None if V is None else float(gaps.sum()) * math.log(V) + inst["L"] * learning,
        "kl_bound": None if V is None else 4 * inst["eps"] * inst["L"] * math.log(V) + inst["L"] * learning,
    }


def gen_b12(rng: np.random.Generator, threshold: bool = True) -> dict:
    """``n in {2, 3}``, a few ``eps``, ``L = L_0`` or ``2 L_0`` (``threshold``) or any multiple of ``n - 1``."""
    n = int(rng.choice([2, 2, 3]))
    eps = float(rng.choice([0.3, 0.4, 0.5, 0.6] if n == 3 else [0.2, 0.3, 0.5]))
    L0 = b12_length_threshold(eps, n)
    L = L0 * int(rng.integers(1, 3)) if threshold else int(rng.integers(1, 200)) * (n - 1)
    return {"eps": eps, "n": n, "L": L, "V": int(rng.integers(2, 9)), "eps_learning": float(rng.choice([0.0, 0.01]))}


_B12_DOC = (
    "Schedule: u_1 = eps, pi_i = eps u_{i-1}^(n-1) / (8(n-1)) for i >= 2 (last step capped at u_N = 1). "
    "E[|tau_i| - D_i] of every step is exact (transfer matrix over positions, vectorized over steps)."
)


def b12_constants(eps: float, n: int) -> dict:
    """The explicit constants of the B.12 schedule: ``c``, ``N(eps, n)``, its closed-form bound, ``L_0(eps, n)``."""
    check_eps_n(eps, n)
    return {"eps": eps, "n": n, "c": b12_rate(eps, n), "N": b12_steps(eps, n), "N_bound": b12_steps_bound(eps, n),
            "L_0": b12_length_threshold(eps, n)}


def _eps_from_steps(values) -> float:
    if values.get("N") is None:
        raise ValueError("Lemma B.12 / Theorem 4.2 need --eps, or -N to solve for the eps that N steps buy")
    return b12_solve_eps(values["N"], values["n"])


#: The fields of Lemma B.12 and Theorem 4.2: ``eps`` (or ``N`` steps to solve for it), ``n``, ``|V|``, ``L``.
B12_PARAMS = {
    "N": Parameter("number of steps: without --eps, eps is the smallest whose schedule fits in N steps",
                   default=None, instance=False),
    "n": Parameter("n-gram order", default=2),
    "V": Parameter("vocabulary size |V|", default=8),
    "eps": Parameter("epsilon in (0, 1)", default=_eps_from_steps),
    "L": Parameter("length, >= L_0 (default L_0(eps, n))", default=lambda v: b12_length_threshold(float(v["eps"]), v["n"])),
    "eps_learning": Parameter("eps_learning", default=0),
}

b12 = ClaimFamily("B.12", "Lemma B.12", sides=b12_sides, domain=b12_domain, generate=gen_b12, doc=_B12_DOC,
                  parameters=B12_PARAMS, constants=lambda v: b12_constants(float(v["eps"]), v["n"]))
b12_any_length = b12.variant(domain=lambda inst: b12_domain(inst, False), generate=lambda rng: gen_b12(rng, False))
b12.statement(
    "With the explicit schedule and L >= L_0: KL(q||p) <= 4 eps L log|V| + L eps_learning",
    S.Eps_sum * sp.log(S.V) + S.L * S.eps_l, "<=", 4 * S.eps * S.L * sp.log(S.V) + S.L * S.eps_l,
    sides=("kl_certificate", "kl_bound"),
    doc=_B12_DOC + " The left side is Lemma B.9's certificate of KL(q||p), evaluated exactly.",
    steps=("B.12.first-step", "B.12.leading", "B.12.tails", "B.12.chain", "B.12.no-threshold"),
)
b12_any_length.step("first-step", "Step 1 (u_1 = eps): E[|tau_1| - D_1] <= eps L",
                    S.fn("E")(S.tex(r"|\tau_1| - D_1")), "<=", S.eps * S.L, sides=("first", "eps_L"))
b12_any_length.step(
    "leading", "Leading terms: sum_{i>=2} 8(n-1) L pi_i^2 / u_{i-1}^(n-1) <= eps L",
    S.step_sum(8 * (S.n - 1) * S.L * S.pi[S.i] ** 2 / sp.IndexedBase("u")[S.i - 1] ** (S.n - 1), 2), "<=",
    S.eps * S.L, sides=("leading", "eps_L"),
    doc=_B12_DOC + " By construction sum = eps L (1 - eps) up to the capped last step.")
b12.step("tails", "Tails: sum_{i>=2} [2 mu_T e^(-mu_S/8) + (2 mu_T + 6) e^(-mu_T/3)] <= 2 eps L for L >= L_0",
         S.step_sum(B11_TAILS_EXPR, 2), "<=", 2 * S.eps * S.L, sides=("tails", "2eps_L"))
b12_any_length.step(
    "chain", "Exact E[sum_i (|tau_i| - D_i)] <= eps L + sum_{i>=2} (B.11 bound) (tightness of the chain)",
    S.Eps_sum, "<=", S.eps * S.L + S.step_sum(B11_EXPR, 2), sides=("dependencies", "chain"))
b12_any_length.step(
    "no-threshold", "For every L (no L_0): E[sum_i (|tau_i| - D_i)] <= (5/4) eps L",
    S.Eps_sum, "<=", sp.Rational(5, 4) * S.eps * S.L, sides=("dependencies", "5/4eps_L"),
    paper="proof of Lemma B.12 (derived: B.11.pairs on the schedule)",
    doc=_B12_DOC + " With B.11.pairs: step i >= 2 costs <= L pi_i c (2n-3) <= L pi_i eps / 4.")
