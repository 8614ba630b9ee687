"""Theorem 4.3 / C.3: ``SER(p) <= 1 - (1 - delta_N) exp(-L eps_learning)``, ``delta_N`` a collision probability.

If no two positions share a step (probability ``1 - delta_N``, Lemma C.1), the sampler reveals one
position per step and Lemma C.2 gives ``P(valid) >= exp(-L eps_learning)``; so
``SER(p) <= delta_N + (1 - delta_N)(1 - e^{-L eps_learning}) = 1 - (1 - delta_N) e^{-L eps_learning}``
(docs/derivations.md, Theorem 4.3). The paper's ``delta_N`` is C.1's union bound
``C(L,2) sum_i pi_i^2``; the exact collision probability ``1 - L! e_L(pi)`` gives the sharper form.
Both are checked against the exact SER of the brute-force sampler law on tiny pruned languages, and
the oracle's form (``eps_learning = 0``: ``SER <= delta_N``) against numerics' exact DP at ``L = 5..8``.
"""

from __future__ import annotations

import math
from math import comb

import numpy as np
import sympy as sp

from numerics.exact.dp import dp_metrics
from numerics.tolerances import PROB_SUM_ATOL

from . import symbols as S
from .brute import mixture_law, table
from .claims import ATOL_CANCEL, require, show
from .collision import collision_probability
from .family import ClaimFamily
from .instances import (
    SER_DOC,
    SER_PARAMS,
    dp_domain,
    gen_dp,
    gen_ser,
    random_ngram,
    schedule_of,
    ser_domain,
)

__all__ = ["thm43_ser_bound"]


def thm43_ser_bound(delta_N: float, L: int, eps_learning: float) -> float:
    """Theorem 4.3's upper bound on the sequence error rate: ``1 - (1 - delta_N) exp(-L eps_learning)``.

    Parameters
    ----------
    delta_N : float
        A probability that some two of the ``L`` positions are revealed at one step, in ``[0, 1]``
        (float round-off up to ``PROB_SUM_ATOL`` accepted, not clamped): the exact ``1 - L! e_L(pi)``
        (:func:`theory.collision.collision_probability`) or Lemma C.1's union bound
        ``C(L, 2) sum_i pi_i^2`` capped at 1.
    L : int
        Sequence length, ``>= 1``.
    eps_learning : float
        Assumption 4.1's constant of the model, ``>= 0`` (0 for the oracle; ``inf`` allowed).

    Returns
    -------
    float
        The bound on ``SER(p)``; a value of 1 (``delta_N = 1`` or ``eps_learning = inf``) is vacuous.
    """
    require(-PROB_SUM_ATOL <= delta_N <= 1 + PROB_SUM_ATOL,
            f"delta_N is a probability in [0, 1] (up to round-off), got {show(delta_N)}")
    require(int(L) == L and L >= 1, f"L must be an integer >= 1, got {show(L)}")
    require(eps_learning >= 0, f"eps_learning must be >= 0, got {show(eps_learning)}")
    return 1 - (1 - delta_N) * math.exp(-L * eps_learning)


def _c3(inst, exact_delta: bool):
    q = table(inst["language"], int(inst["L"]))
    pi = np.asarray(inst["pi"], dtype=np.float64)
    mix = mixture_law(q, pi, float(inst.get("beta", 1.0)), inst.get("tilt"))
    L = int(inst["L"])
    delta = float(collision_probability(list(pi), L)) if exact_delta else comb(L, 2) * float(np.sum(pi**2))
    return 1 - mix.valid, thm43_ser_bound(min(delta, 1.0), L, mix.eps)


def _c3_dp(inst):
    sched = schedule_of(inst["pi"])
    ser = dp_metrics(inst["language"], int(inst["L"]), sched).ser.value
    return ser, float(collision_probability(list(sched.pi), int(inst["L"])))


def _gen_c3_dp(rng: np.random.Generator) -> dict:
    inst = gen_dp(rng)
    inst["language"] = random_ngram(rng, int(rng.integers(2, 4)), 2, prune=0.3)
    return inst


_ser = S.tex(r"\mathrm{SER}(p)")
_distinct = sp.factorial(S.L) * sp.Function("e_L")(S.pi)

t43 = ClaimFamily("4.3", "Theorem 4.3 / C.3", domain=ser_domain, generate=gen_ser, atol=ATOL_CANCEL, doc=SER_DOC, vacuous_at=1,
                  free={"pi": "simplex"}, parameters=SER_PARAMS)
t43.statement(
    "SER(p) <= 1 - (1 - delta_N) exp(-L eps_learning), delta_N = C(L,2) sum_i pi_i^2 (Lemma C.1)", _ser, "<=",
    1 - (1 - sp.binomial(S.L, 2) * S.step_sum(S.pi[S.i] ** 2)) * sp.exp(-S.L * S.eps_l),
    lambda inst: _c3(inst, exact_delta=False), steps=("4.3.exact-delta", "4.3.exact-dp"),
    doc=SER_DOC + (" SER of the mixture over all N^L instances, exact. delta_N = min(1, C(L,2) sum_i pi_i^2) "
                   "(a union bound above 1 makes the bound vacuous)."))
t43.step("exact-delta", "SER(p) <= 1 - (1 - delta_N) exp(-L eps_learning) with delta_N = 1 - L! e_L(pi) exact",
         _ser, "<=", 1 - _distinct * sp.exp(-S.L * S.eps_l), lambda inst: _c3(inst, exact_delta=True),
         paper="proof of Theorem 4.3 / C.3 (exact collision probability)")
t43.step("exact-dp", "Oracle: SER(p) <= delta_N = 1 - L! e_L(pi), SER from numerics' exact DP", _ser, "<=",
         1 - _distinct, _c3_dp, paper="proof of Theorem 4.3 / C.3 (oracle, lengths beyond enumeration)",
         domain=dp_domain, generate=_gen_c3_dp,
         parameters={"language": "NGram", "L": "length", "pi": "step probabilities"},
         doc=("Pruned binary n-grams at L = 5..8, the oracle (eps_learning = 0): SER of the mixture law from "
              "numerics.exact.dp.dp_metrics against the exact collision probability."))
