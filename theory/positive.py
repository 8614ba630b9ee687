"""The positive result: Lemmas B.11, B.12 and Theorem 4.2 (B.13) (B.2-B.9: :mod:`theory.kl_chain`).

* B.11 and its case split are checked against the exact law of ``(S_i, |tau_i|, D_i)`` from the
  transfer matrix of :mod:`theory.separators`, at any ``L`` a few hundred long.
* B.12 / Theorem 4.2: the explicit schedule, ``N(eps, n)``, ``L_0(eps, n)`` and the bound, all
  derived in docs/derivations.md; the dependency expectation of the whole schedule is exact.

Derived B.11 (docs/derivations.md): for ``i >= 2``, with ``mu_S = L u_{i-1}^{n-1}/(n-1)`` and
``mu_T = L pi_i``,

``E[|tau_i| - D_i] <= 8 mu_T^2 / mu_S + 2 mu_T e^{-mu_S/8} + (2 mu_T + 6) e^{-mu_T/3}``

(case 3 + case 1 + case 2), and the tail-free pair bound
``E[|tau_i| - D_i] <= L pi_i^2 ((n-1)/u_{i-1}^{n-1} + n - 2)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import sympy as sp

from numerics.schedules import Schedule, from_u

from . import symbols as S
from .chernoff import gen_step, step_build, step_domain, step_means
from .claims import ATOL_CANCEL, Claim, closed_form, register, require
from .kl_chain import Eps_sum, KLq, _markov_domain
from .separators import (
    expected_dependency_gap,
    expected_gap_per_step,
    expected_same_group_pairs,
    joint_law,
)

__all__ = [
    "b11_bound",
    "b11_tails",
    "pair_bound",
    "b12_schedule",
    "b12_steps",
    "b12_length_threshold",
    "b12_solve_eps",
    "Theorem42Constants",
    "theorem42_constants",
    "expected_dependencies",
]

# ---------------------------------------------------------------------------------------------
# closed forms of B.11 / B.12

_leading_expr = 8 * S.mu_T**2 / S.mu_S
_case1_expr = 2 * S.mu_T * sp.exp(-S.mu_S / 8) + 3 * sp.exp(-S.mu_T / 3)
_case2_expr = (2 * S.mu_T + 3) * sp.exp(-S.mu_T / 3)
_tails_expr = 2 * S.mu_T * sp.exp(-S.mu_S / 8) + (2 * S.mu_T + 6) * sp.exp(-S.mu_T / 3)
_b11_expr = _leading_expr + _tails_expr
_pair_expr = S.L * S.pi_i**2 * ((S.n - 1) / S.u_prev ** (S.n - 1) + S.n - 2)

_means = (S.mu_S, S.mu_T)
_leading = closed_form(_leading_expr, _means)
_case1 = closed_form(_case1_expr, _means)
_case2 = closed_form(_case2_expr, _means)
_tails = closed_form(_tails_expr, _means)
_b11 = closed_form(_b11_expr, _means)
_pair = closed_form(_pair_expr, (S.L, S.n, S.u_prev, S.pi_i))


def b11_bound(L: int, n: int, u_prev: float, pi_i: float) -> float:
    """The derived Lemma B.11 bound on ``E[|tau_i| - D_i]`` (module docstring), ``i >= 2``."""
    return _b11(step_means(L, n, u_prev, pi_i))


def b11_tails(L: int, n: int, u_prev: float, pi_i: float) -> float:
    """The tail part ``2 mu_T e^{-mu_S/8} + (2 mu_T + 6) e^{-mu_T/3}`` of :func:`b11_bound`."""
    return _tails(step_means(L, n, u_prev, pi_i))


def pair_bound(L: int, n: int, u_prev: float, pi_i: float) -> float:
    """Tail-free bound ``L pi_i^2 ((n-1)/u_{i-1}^{n-1} + n - 2)`` on ``E[|tau_i| - D_i]``."""
    return _pair({"L": L, "n": n, "u_prev": u_prev, "pi_i": pi_i})


# ---------------------------------------------------------------------------------------------
# Lemma B.11 and its steps


def _step(inst):
    return step_domain(inst)


def _cases(inst) -> tuple[float, float, float]:
    """Exact ``E[(K - D) 1{case c}]`` for the three cases of the proof of B.11."""
    L, n, a, b = _step(inst)
    mu = step_means(L, n, a, b)
    law = joint_law(L, n, a, b)
    gap = law.gap_moment.astype(np.float64)
    s = np.arange(gap.shape[0])[:, None]
    k = np.arange(gap.shape[1])[None, :]
    few_sep = s < mu["mu_S"] / 2
    many_new = k > 2 * mu["mu_T"]
    c1 = float(gap[np.broadcast_to(few_sep, gap.shape)].sum())
    c2 = float(gap[~few_sep & many_new].sum())
    c3 = float(gap[~few_sep & ~many_new].sum())
    return c1, c2, c3


def _b11_main(inst):
    L, n, a, b = _step(inst)
    return float(expected_dependency_gap(L, n, a, b)), b11_bound(L, n, a, b)


def _b11_exact_lhs(inst):
    L, n, a, b = _step(inst)
    return expected_dependency_gap(L, n, Fraction(a), Fraction(b))


def _interleave_domain(inst):
    L, n, a, b = step_domain(inst, divisible=False)
    s, k = int(inst["s"]), int(inst["k"])
    require(s + k >= 1, "need s + k >= 1")
    if isinstance(inst["u_prev"], Fraction) and isinstance(inst["pi_i"], Fraction):
        a, b = inst["u_prev"], inst["pi_i"]
    law = joint_law(L, n, a, b)
    require(0 <= s < law.prob.shape[0] and 0 <= k < law.prob.shape[1] and law.prob[s, k] > 0,
            f"the cell S_i = {s}, |tau_i| = {k} has probability 0")


def _interleave(inst, exact=False):
    L, n, a, b = step_domain(inst, divisible=False)
    if exact:
        a, b = Fraction(inst["u_prev"]), Fraction(inst["pi_i"])
    s, k = int(inst["s"]), int(inst["k"])
    law = joint_law(L, n, a, b)
    lhs = law.gap_moment[s, k] / law.prob[s, k]
    rhs = Fraction(k * (k - 1), s + k) if exact else k * (k - 1) / (s + k)
    return lhs, rhs


def _gen_interleave(rng: np.random.Generator) -> dict:
    inst = gen_step(rng, max_L=24)
    exact = rng.random() < 0.5
    if exact:  # small denominators keep the rational DP fast
        a = Fraction(int(rng.integers(1, 9)), 10)
        b = Fraction(int(rng.integers(1, 10 - int(a * 10) + 1)), 10) if a < 1 else Fraction(0)
        inst["u_prev"], inst["pi_i"] = a, b
        inst["L"] = min(inst["L"], 12)
    law = joint_law(inst["L"], inst["n"], inst["u_prev"], inst["pi_i"])
    cells = np.argwhere(np.vectorize(lambda v: v > 0)(law.prob))
    s, k = cells[rng.integers(0, len(cells))]
    if s + k == 0:
        k = 1 if law.prob.shape[1] > 1 and law.prob[0, 1] > 0 else k
        if s + k == 0:
            s, k = cells[-1]
    inst["s"], inst["k"] = int(s), int(k)
    return inst


_B11_DOC = (
    "Exact law of (S_i, |tau_i|, D_i) at step i from the transfer matrix of theory.separators "
    "(P(S, K) and E[D; S, K]); the right sides are the derived closed forms in mu_S = L u_{i-1}^(n-1)/(n-1) "
    "and mu_T = L pi_i (docs/derivations.md, B.11)."
)
E_gap = S.fn("E")(S.tex(r"|\tau_i| - D_i"))
_step_params = {"L": "sequence length (multiple of n-1)", "n": "n-gram order", "u_prev": "u_{i-1}", "pi_i": "pi_i"}

register(
    Claim(
        id="B.11",
        paper="Lemma B.11",
        title="Expected dependencies per step: 8 mu_T^2/mu_S plus exponentially small tails",
        lhs=E_gap,
        rhs=_b11_expr,
        relation="<=",
        evaluate=_b11_main,
        domain=lambda inst: _step(inst) and None,
        generate=gen_step,
        doc=_B11_DOC + " The left side is E[|tau_i|] - E[D_i] by the O(L n) transfer matrix.",
        steps=("B.11.case1", "B.11.case2", "B.11.case3", "B.11.interleaving", "B.11.pairs", "B.11.pairs-exact"),
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=lambda **kw: {k: kw[k] for k in ("L", "n", "u_prev", "pi_i")},
    )
)
register(
    Claim(
        id="B.11.case1",
        paper="proof of Lemma B.11",
        title="Case 1 (S_i < mu_S/2): E[(|tau_i|-D_i) 1{case}] <= 2 mu_T e^(-mu_S/8) + 3 e^(-mu_T/3)",
        lhs=S.fn("E")(S.tex(r"(|\tau_i| - D_i) 1\{S_i < \mu_S/2\}")),
        rhs=_case1_expr,
        relation="<=",
        evaluate=lambda inst: (_cases(inst)[0], _case1(step_means(*_step(inst)))),
        domain=lambda inst: _step(inst) and None,
        generate=lambda rng: gen_step(rng, 64),
        doc=_B11_DOC,
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=step_build,
    )
)
register(
    Claim(
        id="B.11.case2",
        paper="proof of Lemma B.11",
        title="Case 2 (S_i >= mu_S/2, |tau_i| > 2 mu_T): E[(|tau_i|-D_i) 1{case}] <= (2 mu_T + 3) e^(-mu_T/3)",
        lhs=S.fn("E")(S.tex(r"(|\tau_i| - D_i) 1\{S_i \geq \mu_S/2, |\tau_i| > 2\mu_T\}")),
        rhs=_case2_expr,
        relation="<=",
        evaluate=lambda inst: (_cases(inst)[1], _case2(step_means(*_step(inst)))),
        domain=lambda inst: _step(inst) and None,
        generate=lambda rng: gen_step(rng, 64),
        doc=_B11_DOC,
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=step_build,
    )
)
register(
    Claim(
        id="B.11.case3",
        paper="proof of Lemma B.11",
        title="Case 3 (typical): E[(|tau_i|-D_i) 1{case}] <= (2 mu_T)^2 / (mu_S / 2) = 8 mu_T^2 / mu_S",
        lhs=S.fn("E")(S.tex(r"(|\tau_i| - D_i) 1\{S_i \geq \mu_S/2, |\tau_i| \leq 2\mu_T\}")),
        rhs=_leading_expr,
        relation="<=",
        evaluate=lambda inst: (_cases(inst)[2], _leading(step_means(*_step(inst)))),
        domain=lambda inst: _step(inst) and None,
        generate=lambda rng: gen_step(rng, 64),
        doc=_B11_DOC,
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=step_build,
    )
)
register(
    Claim(
        id="B.11.interleaving",
        paper="proof of Lemma B.11",
        title="Uniform interleaving: E[|tau_i| - D_i | S_i = s, |tau_i| = k] = k(k-1)/(s+k)",
        lhs=S.fn("E")(S.tex(r"|\tau_i| - D_i \mid S_i = s, |\tau_i| = k")),
        rhs=S.k * (S.k - 1) / (S.s + S.k),
        relation="==",
        evaluate=lambda inst: tuple(float(v) for v in _interleave(inst)),
        exact=lambda inst: _interleave(inst, exact=True),
        domain=_interleave_domain,
        generate=_gen_interleave,
        doc=(
            "The paper argues this by treating separators and new positions as a uniformly random "
            "interleaving (a heuristic step). The engine computes the exact conditional expectation "
            "from the transfer matrix (exact rationals when u_{i-1}, pi_i are Fractions) and finds it "
            "EXACTLY equal for every n, L, s, k: a renewal argument proves it (docs/derivations.md)."
        ),
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters={**_step_params, "s": "separators", "k": "new positions"},
        build=lambda **kw: {**step_build(**kw), "s": kw["s"], "k": kw["k"]},
    )
)
register(
    Claim(
        id="B.11.pairs",
        paper="proof of Lemma B.11 (derived: tail-free replacement)",
        title="E[|tau_i| - D_i] <= L pi_i^2 ((n-1)/u_{i-1}^(n-1) + n - 2), any L",
        lhs=E_gap,
        rhs=_pair_expr,
        relation="<=",
        evaluate=lambda inst: (
            float(expected_dependency_gap(*step_domain(inst, divisible=False))),
            pair_bound(*step_domain(inst, divisible=False)),
        ),
        exact=lambda inst: (
            expected_dependency_gap(inst["L"], inst["n"], Fraction(inst["u_prev"]), Fraction(inst["pi_i"])),
            Fraction(inst["L"]) * Fraction(inst["pi_i"]) ** 2
            * ((inst["n"] - 1) / Fraction(inst["u_prev"]) ** (inst["n"] - 1) + inst["n"] - 2),
        ),
        domain=lambda inst: step_domain(inst, divisible=False) and None,
        generate=gen_step,
        doc=(
            "|tau_i| - D_i <= #pairs of new positions in one group <= #pairs with no full aligned "
            "(n-1)-block of tau_<i strictly between them; each such pair has probability "
            "pi_i^2 (1 - u_{i-1}^(n-1))^(#blocks between). Summing over distances gives the bound "
            "(docs/derivations.md). Exact left side by the transfer matrix."
        ),
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=step_build,
    )
)
register(
    Claim(
        id="B.11.pairs-exact",
        paper="proof of Lemma B.11 (derived: tail-free replacement)",
        title="E[|tau_i| - D_i] <= E[#same-group pairs of new positions]",
        lhs=E_gap,
        rhs=S.fn("E")(S.tex(r"\#\mathrm{pairs}")),
        relation="<=",
        evaluate=lambda inst: (
            float(expected_dependency_gap(*step_domain(inst, divisible=False))),
            float(expected_same_group_pairs(*step_domain(inst, divisible=False))),
        ),
        domain=lambda inst: step_domain(inst, divisible=False) and None,
        generate=gen_step,
        doc="Both sides exact: transfer matrix, and pi_i^2 times a run-free probability summed over distances.",
        free={"u_prev": "unit", "pi_i": "unit"},
        parameters=_step_params,
        build=step_build,
    )
)


# ---------------------------------------------------------------------------------------------
# Lemma B.12 / Theorem 4.2: schedule, N(eps, n), L_0(eps, n)

MAX_B12_STEPS = 2_000_000  # refuse schedules longer than this (eps too small for an explicit u vector)


def _check_eps_n(eps: float, n: int) -> None:
    require(0 < eps < 1, f"epsilon must lie in (0, 1), got {eps!r}")
    require(int(n) == n and n >= 2, f"n must be an integer >= 2, got {n!r}")


def b12_rate(eps: float, n: int) -> float:
    """``c = eps / (8 (n-1))``: the schedule's steps are ``pi_i = c u_{i-1}^{n-1}`` for ``i >= 2``."""
    _check_eps_n(eps, n)
    return eps / (8 * (n - 1))


def b12_u(eps: float, n: int) -> np.ndarray:
    """``u_0 = 0``, ``u_1 = eps``, ``u_i = min(1, u_{i-1} + c u_{i-1}^{n-1})`` until ``u_N = 1``."""
    c = b12_rate(eps, n)
    u = [0.0, float(eps)]
    while u[-1] < 1.0:
        if len(u) > MAX_B12_STEPS:
            raise ValueError(f"the B.12 schedule for eps = {eps}, n = {n} exceeds {MAX_B12_STEPS} steps")
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
    require(int(N) == N and N >= 2, f"N must be an integer >= 2 (step 1 and at least one more), got {N!r}")
    _check_eps_n(0.5, n)
    lo, hi = 1e-9, 1.0 - 1e-12  # the open interval (0, 1) of eps, to bisection resolution
    if _count_steps(hi, n, N) > N:
        raise ValueError(f"no eps < 1 gives a B.12 schedule with N = {N} steps")
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _count_steps(mid, n, N) <= N else (mid, hi)
    return hi


def expected_dependencies(L: int, n: int, u) -> np.ndarray:
    """Exact ``E[|tau_i| - D_i]`` for every step of schedule ``u`` (:func:`expected_gap_per_step`)."""
    return expected_gap_per_step(L, n, u)


class Theorem42Constants(dict):
    """``eps, n, N, N_bound, L_0, c`` and the bound ``4 eps log|V| + eps_learning`` on ``log TER(p) - log TER(q)``."""


def theorem42_constants(eps: float, n: int, V: int, eps_learning: float = 0.0) -> Theorem42Constants:
    """Every explicit constant of Lemma B.12 / Theorem 4.2 for ``(eps, n, |V|)`` (docs/derivations.md)."""
    _check_eps_n(eps, n)
    return Theorem42Constants(
        eps=eps,
        n=n,
        V=V,
        c=b12_rate(eps, n),
        N=b12_steps(eps, n),
        N_bound=b12_steps_bound(eps, n),
        L_0=b12_length_threshold(eps, n),
        ter_gap_bound=4 * eps * math.log(V) + eps_learning,
    )


def _b12_domain(inst, need_threshold: bool = True):
    eps, n, L = float(inst["eps"]), int(inst["n"]), inst["L"]
    _check_eps_n(eps, n)
    require(int(L) == L and L >= 1 and L % (n - 1) == 0, f"L must be a positive multiple of n-1, got {L!r}")
    if need_threshold:
        L0 = b12_length_threshold(eps, n)
        require(L >= L0, f"Lemma B.12 needs L >= L_0(eps={eps}, n={n}) = {L0}, got L = {L}")


def _b12_parts(inst) -> dict:
    eps, n, L = float(inst["eps"]), int(inst["n"]), int(inst["L"])
    u = b12_u(eps, n)
    a, b = u[1:-1], np.diff(u)[1:]
    mu_s = L * a ** (n - 1) / (n - 1)
    mu_t = L * b
    gaps = expected_gap_per_step(L, n, u)
    return {
        "u": u,
        "gaps": gaps,
        "leading": float(np.sum(8 * mu_t**2 / mu_s)),
        "tails": float(np.sum(2 * mu_t * np.exp(-mu_s / 8) + (2 * mu_t + 6) * np.exp(-mu_t / 3))),
        "pairs": float(np.sum(L * b**2 * ((n - 1) / a ** (n - 1) + n - 2))),
        "first": eps * L,
    }


def _gen_b12(rng: np.random.Generator, threshold: bool = True) -> dict:
    n = int(rng.choice([2, 2, 3]))
    eps = float(rng.choice([0.3, 0.4, 0.5, 0.6] if n == 3 else [0.2, 0.3, 0.5]))
    L0 = b12_length_threshold(eps, n)
    L = L0 * int(rng.integers(1, 3)) if threshold else int(rng.integers(1, 200)) * (n - 1)
    return {"eps": eps, "n": n, "L": L, "V": int(rng.integers(2, 9)), "eps_learning": float(rng.choice([0.0, 0.01]))}


_B12_DOC = (
    "Schedule: u_1 = eps, pi_i = eps u_{i-1}^(n-1) / (8(n-1)) for i >= 2 (last step capped at u_N = 1). "
    "E[|tau_i| - D_i] of every step is exact (transfer matrix over positions, vectorized over steps)."
)

register(
    Claim(
        id="B.12",
        paper="Lemma B.12",
        title="With the explicit schedule and L >= L_0: KL(q||p) <= 4 eps L log|V| + L eps_learning",
        lhs=Eps_sum * sp.log(S.V) + S.L * S.eps_l,
        rhs=4 * S.eps * S.L * sp.log(S.V) + S.L * S.eps_l,
        relation="<=",
        evaluate=lambda inst: (
            float(_b12_parts(inst)["gaps"].sum()) * math.log(inst["V"]) + inst["L"] * inst["eps_learning"],
            4 * inst["eps"] * inst["L"] * math.log(inst["V"]) + inst["L"] * inst["eps_learning"],
        ),
        domain=_b12_domain,
        generate=_gen_b12,
        doc=_B12_DOC + " The left side is Lemma B.9's certificate of KL(q||p), evaluated exactly.",
        steps=("B.12.first-step", "B.12.leading", "B.12.tails", "B.12.chain", "B.12.no-threshold"),
        free={},
        parameters={"eps": "epsilon", "n": "n-gram order", "L": "length >= L_0", "V": "|V|", "eps_learning": "eps_learning"},
        build=lambda **kw: {k: kw[k] for k in ("eps", "n", "L", "V", "eps_learning")},
    )
)
register(
    Claim(
        id="B.12.first-step",
        paper="proof of Lemma B.12",
        title="Step 1 (u_1 = eps): E[|tau_1| - D_1] <= eps L",
        lhs=S.fn("E")(S.tex(r"|\tau_1| - D_1")),
        rhs=S.eps * S.L,
        relation="<=",
        evaluate=lambda inst: (float(_b12_parts(inst)["gaps"][0]), inst["eps"] * inst["L"]),
        domain=lambda inst: _b12_domain(inst, False),
        generate=lambda rng: _gen_b12(rng, False),
        doc=_B12_DOC,
    )
)
register(
    Claim(
        id="B.12.leading",
        paper="proof of Lemma B.12",
        title="Leading terms: sum_{i>=2} 8(n-1) L pi_i^2 / u_{i-1}^(n-1) <= eps L",
        lhs=S.step_sum(8 * (S.n - 1) * S.L * S.pi[S.i] ** 2 / sp.IndexedBase("u")[S.i - 1] ** (S.n - 1), 2),
        rhs=S.eps * S.L,
        relation="<=",
        evaluate=lambda inst: (_b12_parts(inst)["leading"], inst["eps"] * inst["L"]),
        domain=lambda inst: _b12_domain(inst, False),
        generate=lambda rng: _gen_b12(rng, False),
        doc=_B12_DOC + " By construction sum = eps L (1 - eps) up to the capped last step.",
    )
)
register(
    Claim(
        id="B.12.tails",
        paper="proof of Lemma B.12",
        title="Tails: sum_{i>=2} [2 mu_T e^(-mu_S/8) + (2 mu_T + 6) e^(-mu_T/3)] <= 2 eps L for L >= L_0",
        lhs=S.step_sum(_tails_expr, 2),
        rhs=2 * S.eps * S.L,
        relation="<=",
        evaluate=lambda inst: (_b12_parts(inst)["tails"], 2 * inst["eps"] * inst["L"]),
        domain=_b12_domain,
        generate=_gen_b12,
        doc=_B12_DOC,
    )
)
register(
    Claim(
        id="B.12.chain",
        paper="proof of Lemma B.12",
        title="Exact E[sum_i (|tau_i| - D_i)] <= eps L + sum_{i>=2} (B.11 bound) (tightness of the chain)",
        lhs=Eps_sum,
        rhs=S.eps * S.L + S.step_sum(_b11_expr, 2),
        relation="<=",
        evaluate=lambda inst: (
            float(_b12_parts(inst)["gaps"].sum()),
            _b12_parts(inst)["first"] + _b12_parts(inst)["leading"] + _b12_parts(inst)["tails"],
        ),
        domain=lambda inst: _b12_domain(inst, False),
        generate=lambda rng: _gen_b12(rng, False),
        doc=_B12_DOC,
    )
)
register(
    Claim(
        id="B.12.no-threshold",
        paper="proof of Lemma B.12 (derived: B.11.pairs on the schedule)",
        title="For every L (no L_0): E[sum_i (|tau_i| - D_i)] <= (5/4) eps L",
        lhs=Eps_sum,
        rhs=sp.Rational(5, 4) * S.eps * S.L,
        relation="<=",
        evaluate=lambda inst: (float(_b12_parts(inst)["gaps"].sum()), 1.25 * inst["eps"] * inst["L"]),
        domain=lambda inst: _b12_domain(inst, False),
        generate=lambda rng: _gen_b12(rng, False),
        doc=_B12_DOC + " With B.11.pairs: step i >= 2 costs <= L pi_i c (2n-3) <= L pi_i eps / 4.",
    )
)

Ter_gap = sp.log(S.tex(r"\mathrm{TER}(p)")) - sp.log(S.tex(r"\mathrm{TER}(q)"))
register(
    Claim(
        id="4.2",
        paper="Theorem 4.2 / B.13",
        title="log TER(p) <= log TER(q) + eps_learning + 4 eps log|V| with N(eps, n) steps, L >= L_0",
        lhs=Ter_gap,
        rhs=S.eps_l + 4 * S.eps * sp.log(S.V),
        relation="<=",
        evaluate=lambda inst: (
            float(_b12_parts(inst)["gaps"].sum()) * math.log(inst["V"]) / inst["L"] + inst["eps_learning"],
            inst["eps_learning"] + 4 * inst["eps"] * math.log(inst["V"]),
        ),
        domain=_b12_domain,
        generate=_gen_b12,
        doc=(
            "log TER(p) - log TER(q) = KL(q||p) / L. The left side is the certificate of Lemmas B.2 + B.9 "
            "divided by L (E_tau sum (|tau_i| - D_i) exact), the right side the theorem's bound. "
            "Constants: theory.positive.theorem42_constants."
        ),
        steps=("B.12", "4.2.markov"),
        parameters={"eps": "epsilon", "n": "n-gram order", "L": "length >= L_0", "V": "|V|", "eps_learning": "eps_learning"},
        build=lambda **kw: {k: kw[k] for k in ("eps", "n", "L", "V", "eps_learning")},
    )
)


# ---------------------------------------------------------------------------------------------
# Theorem 4.2 on the Table 1 2-gram at L >= L_0: numerics' exact Jensen bound (Markov chain rule)


def _gen_42_markov(rng: np.random.Generator) -> dict:
    from numerics.languages.presets import load_language

    eps = float(rng.choice([0.5, 0.3, 0.25]))
    L = b12_length_threshold(eps, 2) * int(rng.integers(1, 3))
    return {"eps": eps, "n": 2, "L": L, "V": 8, "eps_learning": 0.0, "language": load_language("2gram")}


def _t42_markov(inst):
    from numerics.exact.markov import jensen_bound_markov

    lang, L, eps = inst["language"], int(inst["L"]), float(inst["eps"])
    jensen = jensen_bound_markov(lang, L, b12_schedule(eps, 2)).total.value
    return jensen / L, 4 * eps * math.log(lang.vocab_size)


register(
    Claim(
        id="4.2.markov",
        atol=ATOL_CANCEL,
        paper="proof of Theorem 4.2 / B.13 (oracle, the 2-gram preset at L >= L_0)",
        title="Oracle, 2-gram preset, B.12 schedule, L >= L_0: E_tau KL(q || p(.|tau)) / L <= 4 eps log|V|",
        lhs=S.fn("E_tau")(KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))) / S.L,
        rhs=4 * S.eps * sp.log(S.V),
        relation="<=",
        evaluate=_t42_markov,
        domain=lambda inst: (_b12_domain(inst), _markov_domain(inst)) and None,
        generate=_gen_42_markov,
        doc=(
            "The Table 1 2-gram (V = 8) at L = L_0(eps, 2) or 2 L_0 under the B.12 schedule: the exact "
            "E_tau KL(q||p(.|tau)) (>= KL(q||p) = L (log TER(p) - log TER(q))) from the Markov chain rule, "
            "divided by L, against the theorem's 4 eps log|V|."
        ),
        parameters={"eps": "epsilon", "L": "length >= L_0"},
    )
)
