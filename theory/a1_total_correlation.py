"""Lemma A.1: sampling k tokens independently costs their total correlation, at most (k-1) log|V|."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import sympy as sp

from . import symbols as S
from .claims import ATOL_CANCEL, PROB_SUM_ATOL, Claim, closed_form, register, require
from .information import entropy, kl, marginals, product_of_marginals, total_correlation


def _joint(inst: Mapping[str, Any]) -> np.ndarray:
    P = np.asarray(inst["P"], dtype=np.float64)
    require(P.ndim >= 1 and len(set(P.shape)) == 1, f"P must have shape (V,) * k, got {P.shape}")
    require(P.shape[0] >= 1, "P needs V >= 1 symbols")
    require(bool(np.all(P >= 0)) and abs(P.sum() - 1.0) <= PROB_SUM_ATOL, "P must be a probability table")
    return P


def _domain_a1(inst: Mapping[str, Any]) -> None:
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


_scalars = (S.k, S.V)


def _kV(inst: Mapping[str, Any]) -> dict:
    P = _joint(inst)
    return {"k": P.ndim, "V": P.shape[0]}


_a1_rhs = closed_form((S.k - 1) * sp.log(S.V), _scalars)
KL_ = S.fn("KL")
H_ = S.fn("H")
P_, Pprod = S.tex("P"), S.tex(r"\otimes_j P_j")
X_, Xj, X1 = S.tex("X"), S.tex("X_j"), S.tex("X_1")

register(
    Claim(
        id="A.1",
        paper="Lemma A.1",
        title="Independent sampling of k tokens costs at most (k-1) log|V| nats of KL",
        lhs=KL_(P_, Pprod),
        rhs=(S.k - 1) * sp.log(S.V),
        relation="<=",
        evaluate=lambda inst: (kl(_joint(inst), product_of_marginals(_joint(inst))), _a1_rhs(_kV(inst))),
        domain=_domain_a1,
        generate=_gen_joint,
        doc=(
            "P is an explicit joint table over V^k; the left side is KL(P || prod_j P_j) summed "
            "directly over the table, the right side (k-1) log V. Tight (equality) when the k tokens "
            "are copies of one uniform token."
        ),
        steps=("A.1.identity", "A.1.joint-entropy", "A.1.entropy-max"),
        free={"P": "simplex"},
        parameters={"P": "joint table (V,)*k"},
    )
)

register(
    Claim(
        id="A.1.identity",
        atol=ATOL_CANCEL,
        paper="proof of Lemma A.1",
        title="KL to the product of marginals is the total correlation",
        lhs=KL_(P_, Pprod),
        rhs=sp.Sum(H_(Xj), (S.i, 1, S.k)) - H_(X_),
        relation="==",
        evaluate=lambda inst: (
            kl(_joint(inst), product_of_marginals(_joint(inst))),
            total_correlation(_joint(inst)),
        ),
        domain=_domain_a1,
        generate=_gen_joint,
        doc="Direct KL over the table against sum of marginal entropies minus joint entropy.",
        free={"P": "simplex"},
    )
)

register(
    Claim(
        id="A.1.joint-entropy",
        atol=ATOL_CANCEL,
        paper="proof of Lemma A.1",
        title="H(X) >= H(X_1), so the total correlation is at most sum_{j>=2} H(X_j)",
        lhs=sp.Sum(H_(Xj), (S.i, 1, S.k)) - H_(X_),
        rhs=sp.Sum(H_(Xj), (S.i, 2, S.k)),
        relation="<=",
        evaluate=lambda inst: (
            total_correlation(_joint(inst)),
            sum(entropy(m) for m in marginals(_joint(inst))[1:]),
        ),
        domain=_domain_a1,
        generate=_gen_joint,
        doc="Entropies of the explicit table.",
        free={"P": "simplex"},
    )
)

register(
    Claim(
        id="A.1.entropy-max",
        paper="proof of Lemma A.1",
        title="Each marginal entropy is at most log|V|",
        lhs=sp.Sum(H_(Xj), (S.i, 2, S.k)),
        rhs=(S.k - 1) * sp.log(S.V),
        relation="<=",
        evaluate=lambda inst: (sum(entropy(m) for m in marginals(_joint(inst))[1:]), _a1_rhs(_kV(inst))),
        domain=_domain_a1,
        generate=_gen_joint,
        doc="Entropies of the explicit table against (k-1) log V.",
        free={"P": "simplex"},
    )
)

