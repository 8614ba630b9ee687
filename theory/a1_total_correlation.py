"""Lemma A.1: sampling k tokens independently costs their total correlation, at most (k-1) log|V|.

For a joint law ``P`` of ``X = (X_1..X_k)`` over ``V`` symbols and ``Y`` with independent components
of ``P``'s marginals, ``KL(P || prod_j P_j) = sum_j H(X_j) - H(X) <= (k-1) log|V|`` (natural logs):
``H(X) >= H(X_1)`` leaves ``sum_{j>=2} H(X_j)``, and each ``H(X_j) <= log|V|``. Every quantity is
computed from the explicit ``(V,) * k`` table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from numerics.tolerances import PROB_SUM_ATOL

from . import symbols as S
from .claims import ATOL_CANCEL, closed_form, require, show
from .family import ClaimFamily
from .information import entropy, kl, marginals, product_of_marginals, total_correlation


def _joint(inst: Mapping[str, Any]) -> np.ndarray:
    P = np.asarray(inst["P"], dtype=np.float64)
    require(P.ndim >= 1 and len(set(P.shape)) == 1, f"P must have shape (V,) * k, got {show(P.shape)}")
    require(P.shape[0] >= 1, "P needs V >= 1 symbols")
    require(bool(np.all(P >= 0)) and abs(P.sum() - 1.0) <= PROB_SUM_ATOL, "P must be a probability table")
    return P


def _joint_domain(inst: Mapping[str, Any]) -> None:
    _joint(inst)


def _gen_joint(rng: np.random.Generator) -> dict:
    k = int(rng.integers(1, 5))
    V = int(rng.integers(2, 5 if k <= 3 else 4))
    kind = rng.integers(0, 4)
    if kind == 0:  # the tight case: k copies of one uniform token
        P = np.zeros((V,) * k)
        for v in range(V):
            P[(v,) * k] = 1.0 / V
    else:
        P = rng.dirichlet(np.full(V**k, float(rng.choice([0.1, 0.5, 1.0, 5.0])))).reshape((V,) * k)
        if kind == 1:  # structural zeros
            P = P * (rng.random(P.shape) < 0.6)
            if P.sum() == 0:
                P[(0,) * k] = 1.0
            P = P / P.sum()
    return {"P": P}


_a1_rhs = closed_form((S.k - 1) * sp.log(S.V), (S.k, S.V))


def _sides(inst: Mapping[str, Any]) -> dict:
    """Every side of A.1's chain on the explicit table ``P``."""
    P = _joint(inst)
    return {
        "kl": kl(P, product_of_marginals(P)),
        "tc": total_correlation(P),
        "tail": sum(entropy(m) for m in marginals(P)[1:]),
        "bound": _a1_rhs({"k": P.ndim, "V": P.shape[0]}),
    }


H_ = S.fn("H")
P_, Pprod = S.tex("P"), S.tex(r"\otimes_j P_j")
X_, Xj = S.tex("X"), S.tex("X_j")
_tc = sp.Sum(H_(Xj), (S.i, 1, S.k)) - H_(X_)
_tail = sp.Sum(H_(Xj), (S.i, 2, S.k))
_bound = (S.k - 1) * sp.log(S.V)

a1 = ClaimFamily("A.1", "Lemma A.1", sides=_sides, domain=_joint_domain, generate=_gen_joint, free={"P": "simplex"})
a1.statement(
    "Independent sampling of k tokens costs at most (k-1) log|V| nats of KL", S.KLq(P_, Pprod), "<=", _bound,
    sides=("kl", "bound"), steps=("A.1.identity", "A.1.joint-entropy", "A.1.entropy-max"),
    parameters={"P": "joint table (V,)*k"},
    doc=("P is an explicit joint table over V^k; the left side is KL(P || prod_j P_j) summed "
         "directly over the table, the right side (k-1) log V. Tight (equality) when the k tokens "
         "are copies of one uniform token."),
)
a1.step("identity", "KL to the product of marginals is the total correlation", S.KLq(P_, Pprod), "==", _tc,
        sides=("kl", "tc"), atol=ATOL_CANCEL,
        doc="Direct KL over the table against sum of marginal entropies minus joint entropy.")
a1.step("joint-entropy", "H(X) >= H(X_1), so the total correlation is at most sum_{j>=2} H(X_j)", _tc, "<=", _tail,
        sides=("tc", "tail"), atol=ATOL_CANCEL, doc="Entropies of the explicit table.")
a1.step("entropy-max", "Each marginal entropy is at most log|V|", _tail, "<=", _bound,
        sides=("tail", "bound"), doc="Entropies of the explicit table against (k-1) log V.")
