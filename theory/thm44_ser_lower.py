"""Theorem 4.4 / C.9: ``N <= C L`` steps give ``SER(p) > 1/2`` on Example C.7; the argument's ``C`` and the truth.

The theorem (``l = 5``, ``|V| = 16``, ``eps_learning < 1/128``): there is a constant ``C`` such that
every schedule with ``N <= C L`` steps has ``SER(p) > 1/2``. Its argument is Lemma C.6 with Example
C.7's ``p_e`` (docs/derivations.md, Theorem 4.4):

* Theorem 4.4: Lemma C.6's bound ``1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)`` exceeds 1/2 for
  ``N <= C L`` exactly when ``C < C_arg``; as ``L -> infinity``
  ``C_arg -> p_e (l-1) / (l log 2)`` (0.5680 for ``l = 5``, ``p_e = 63/128``), but the argument
  gives nothing at ``L = l`` (one interval: the bound is ``p_e < 1/2`` even at ``N = 1``).
* The true threshold: the oracle (a model with ``eps_learning = 0``) on Example C.7 has
  ``SER = 1 - E[2^{-c}]^(L/l)`` exactly; for the linear schedule
  ``E[2^{-c}] = 1 - C(l,2)/(2N) + O(N^-2)`` so ``SER > 1/2`` iff ``N/L < 1/log 2 = 1.4427`` in the
  limit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import sympy as sp
from scipy.optimize import minimize
from scipy.special import softmax

from . import symbols as S
from .c6_interval_errors import c6_bound
from .c7_interval_language import EPS_MAX, P_E_PAPER, p_e
from .claims import ATOL_CANCEL, require, show
from .collision import interval_validity
from .family import ClaimFamily
from .parameters import Parameter

__all__ = [
    "c9_bound", "c9_argument_constant", "c9_argument_limit", "oracle_ser", "true_threshold", "best_interval_validity",
    "Threshold", "arg_constant_l10", "theorem44_constants",
]


def c9_bound(N: int, L: int, l: int = 5, pe: float = float(P_E_PAPER)) -> float:
    """Lemma C.6's lower bound on SER used by Theorem 4.4 (:func:`theory.c6_interval_errors.c6_bound`), checked."""
    require(int(N) == N and N >= 1, f"N must be an integer >= 1, got {show(N)}")
    require(int(L) == L and L >= 1 and L % l == 0, f"L must be a positive multiple of l = {l}, got {show(L)}")
    return c6_bound(int(N), int(L), l, pe)


def _largest_n(L: int, ser_of_n, target: float = 0.5) -> int:
    """Largest ``N >= 1`` with ``ser_of_n(N) > target`` (``ser_of_n`` non-increasing), 0 if none."""
    if not ser_of_n(1) > target:
        return 0
    lo, hi = 1, 2
    while ser_of_n(hi) > target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ser_of_n(mid) > target else (lo, mid)
    return lo


@dataclass(frozen=True)
class Threshold:
    """Largest ``N`` with ``SER > 1/2`` at each ``L`` and the ratios ``C(L) = (N_max(L) + 1) / L``.

    ``C`` is admissible at ``L`` (every ``N <= C L`` gives ``SER > 1/2``) iff ``C < C(L)``.

    Attributes
    ----------
    lengths : (m,) int array
    n_max : (m,) int array
    ratio : (m,) float array
        ``(n_max + 1) / L``.
    constant : float
        ``min`` of ``ratio`` over the lengths: the largest admissible ``C`` for all of them (a supremum).
    limit : float
        The ``L -> infinity`` value of the ratio.
    """

    lengths: np.ndarray
    n_max: np.ndarray
    ratio: np.ndarray
    constant: float
    limit: float


def c9_argument_limit(l: int = 5, pe: float = float(P_E_PAPER)) -> float:
    """``p_e (l-1) / (l log 2)``: the argument's constant as ``L -> infinity``."""
    return pe * (l - 1) / (l * math.log(2))


def c9_argument_constant(lengths, l: int = 5, pe: float = float(P_E_PAPER)) -> Threshold:
    """The largest ``C`` Theorem 4.4's argument supports on the given lengths (:class:`Threshold`)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    nmax = np.array([_largest_n(int(L), lambda N, L=int(L): c9_bound(N, L, l, pe)) for L in lengths])
    ratio = (nmax + 1) / lengths
    return Threshold(lengths, nmax, ratio, float(ratio.min()), c9_argument_limit(l, pe))


def oracle_ser(pi, L: int, l: int = 5) -> float:
    """Exact SER of the oracle sampler on Example C.7: ``1 - E[2^{-c}]^(L/l)``."""
    require(int(L) == L and L >= 1 and L % l == 0, f"L must be a positive multiple of l = {l}, got {show(L)}")
    v = float(interval_validity(list(pi), l))
    return -math.expm1((L // l) * math.log(v)) if v > 0 else 1.0


def _uniform_validity(N: int, l: int) -> float:
    return float(interval_validity([1.0 / N] * N, l))


def true_threshold(lengths, l: int = 5, validity=None) -> Threshold:
    """Largest ``N/L`` with exact oracle ``SER > 1/2`` (``validity(N)``: per-interval validity, default linear).

    The limit is ``(l-1) / (4 log 2)`` (``1/log 2`` for ``l = 5``) for the linear schedule (module
    docstring); NaN for a user-given ``validity``.
    """
    default = validity is None
    validity = validity or (lambda N: _uniform_validity(N, l))
    cache: dict[int, float] = {}

    def v(N):
        if N not in cache:
            cache[N] = validity(N)
        return cache[N]

    lengths = np.asarray(lengths, dtype=np.int64)
    nmax = np.array([_largest_n(int(L), lambda N, L=int(L): -math.expm1((L // l) * math.log(v(N)))) for L in lengths])
    ratio = (nmax + 1) / lengths
    limit = (l - 1) / (4 * math.log(2)) if default else float("nan")
    return Threshold(lengths, nmax, ratio, float(ratio.min()), limit)


def best_interval_validity(N: int, l: int = 5, restarts: int = 8, seed: int = 0) -> tuple[float, np.ndarray]:
    """``max over pi`` of ``E_pi[2^{-c}]`` by multi-start L-BFGS on softmax weights (uniform is one start).

    Returns the best value found and its ``pi``. The uniform schedule's value is a lower bound.
    """
    rng = np.random.default_rng(seed)

    def neg(z):
        return -float(interval_validity(list(softmax(z)), l))

    best_val, best_pi = _uniform_validity(N, l), np.full(N, 1.0 / N)
    starts = [np.zeros(N)] + [rng.normal(0, 1.0, N) for _ in range(restarts)]
    for z0 in starts:
        res = minimize(neg, z0, method="L-BFGS-B")
        if -res.fun > best_val:
            best_val, best_pi = -res.fun, softmax(res.x)
    return best_val, best_pi


@functools.lru_cache(maxsize=1)
def arg_constant_l10() -> float:
    """The argument's constant over L = 10, 15, .., 5000 with ``p_e = 63/128`` (L = 5 admits none)."""
    return c9_argument_constant(np.arange(10, 5001, 5)).constant


def _domain(inst):
    L, l_ = inst["L"], inst.get("l", 5)
    require(int(L) == L and L >= 1 and L % l_ == 0, f"L must be a positive multiple of l = {show(l_)}, got {show(L)}")
    N = len(inst["pi"]) if "pi" in inst else inst["N"]
    C = float(inst["C"])
    require(1 <= N <= C * L, f"Theorem 4.4 takes N <= C L: N = {show(N)}, C L = {show(C * L)} with C = {show(C)} "
                             "(the field C, option --C: a C of at least N / L states the theorem at this N)")


def _gen(rng: np.random.Generator) -> dict:
    L = 5 * int(rng.integers(2, 60))
    C = arg_constant_l10()  # the argument's constant for all L >= 10
    N = int(rng.integers(1, max(1, int(C * L)) + 1))
    w = rng.dirichlet(np.full(N, float(rng.choice([0.5, 5.0, 1e3]))))
    return {"L": L, "l": 5, "pi": w, "N": N, "C": C, "eps_learning": float(EPS_MAX) * float(rng.random())}


def _argument(inst):
    N = len(inst["pi"]) if "pi" in inst else int(inst["N"])
    return c9_bound(N, int(inst["L"]), int(inst.get("l", 5)), p_e(float(inst.get("eps_learning", 0.0)))), 0.5


def theorem44_constants(eps_learning: float = 0.0) -> dict:
    """Theorem 4.4's constants: ``p_e``, the argument's ``C`` (over ``L = 10..2000`` and in the limit, and at
    the paper's ``p_e = 63/128``) and the true threshold of the linear schedule (min over ``L`` and limit)."""
    pe = p_e(eps_learning)
    lengths = np.arange(10, 2001, 5)
    arg = c9_argument_constant(lengths, 5, pe)
    true = true_threshold(lengths[::20], 5)
    return {"p_e": pe, "C_argument_L>=10": arg.constant, "C_argument_limit": c9_argument_limit(5, pe),
            "C_argument_L>=10_at_p_e=63/128": arg_constant_l10(),
            "C_true_linear_min_over_L": true.constant, "C_true_linear_limit": true.limit}


_C_PARAMS = {"C": Parameter("the constant (default: the argument's C for L >= 10)", default=lambda v: arg_constant_l10()),
             "l": Parameter("interval length", default=5, fixed=True)}

t44 = ClaimFamily("4.4", "Theorem 4.4 / C.9", domain=_domain, generate=_gen,
                  constants=lambda v: theorem44_constants(float(v["eps_learning"])))
t44.statement(
    "N <= C L steps give SER(p) > 1/2 for every schedule (l = 5, |V| = 16, eps_learning < 1/128)",
    S.tex(r"\mathrm{SER}(p)"), ">=", sp.Rational(1, 2),
    lambda inst: (oracle_ser(inst["pi"], int(inst["L"]), int(inst.get("l", 5))), 0.5),
    atol=ATOL_CANCEL, steps=("4.4.argument",), free={"pi": "simplex"},
    plot_x=("N / (C L): steps over the budget", lambda inst: len(inst["pi"]) / (
        float(inst["C"]) * int(inst["L"]))),
    parameters={"L": Parameter("length (multiple of 5)"), "pi": Parameter("schedule (or -N steps of --schedule)"),
                **_C_PARAMS, "eps_learning": Parameter("eps_learning of the printed p_e = 1/2 - eps_learning", default=0,
                                                       instance=False)},
    doc=("The exact SER of the oracle (an admissible model, eps_learning = 0) on Example C.7 for the given "
         "schedule, with N = len(pi) <= C L and C = the argument's constant (theory.thm44_ser_lower.arg_constant_l10). "
         "The strict '>' of the theorem is checked as '>=' plus the reported slack."),
)
t44.step(
    "argument", "Lemma C.6 with p_e = 1/2 - eps_learning exceeds 1/2 whenever N <= C_arg L (L >= 10)",
    1 - (1 - S.p_e * (1 - (1 - 1 / S.N) ** (S.l - 1))) ** (S.L / S.l), ">=", sp.Rational(1, 2), _argument,
    paper="proof of Theorem 4.4", doc="Closed form of Lemma C.6's bound against 1/2 (module docstring: C_arg).",
    parameters={"L": Parameter("length (multiple of 5)"), "N": Parameter("number of steps"), **_C_PARAMS,
                "eps_learning": Parameter("eps_learning (p_e = 1/2 - eps_learning)", default=0)},
)
