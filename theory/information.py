"""Lemma A.1 (multi-token sampling = total correlation) and Lemma A.3 (Pinsker), with their steps.

Natural logs throughout. Both sides are computed from explicit finite distributions: ``P`` is a
``(V,) * k`` array (the joint law of ``k`` tokens over ``V`` symbols).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import sympy as sp
from scipy.special import entr, xlog1py

from . import symbols as S
from .claims import ATOL_CANCEL, PROB_SUM_ATOL, Claim, closed_form, register, require

__all__ = ["entropy", "kl", "total_correlation", "marginals", "tv"]


def entropy(p: np.ndarray) -> float:
    """``H(p) = -sum p log p`` in nats (``0 log 0 = 0``)."""
    return float(entr(np.asarray(p, dtype=np.float64)).sum())


_SERIES_T = 1e-2  # |t| below this: phi(t) by its series (8 terms, truncation error < t^10 / 90)


def _phi(t: np.ndarray) -> np.ndarray:
    """``phi(t) = (1 + t) log(1 + t) - t >= 0``, to full relative precision also for tiny ``|t|``.

    For ``|t| < _SERIES_T`` the series ``sum_{k>=2} (-1)^k t^k / (k (k-1))``; else the closed form.
    """
    out = np.empty_like(t)
    small = np.abs(t) < _SERIES_T
    ts = t[small]
    acc = np.zeros_like(ts)
    power = ts * ts
    for k in range(2, 10):
        acc += (-1) ** k * power / (k * (k - 1))
        power = power * ts
    out[small] = acc
    tl = t[~small]
    out[~small] = xlog1py(1 + tl, tl) - tl  # 0 log 0 = 0 at t = -1 (p = 0): phi(-1) = 1
    return out


def kl(p: np.ndarray, q: np.ndarray) -> float:
    """``KL(p || q) = sum p log(p / q)`` in nats; ``inf`` when ``p`` charges a zero of ``q``.

    Summed as ``sum_x q phi((p - q)/q)`` with ``phi(t) = (1+t) log(1+t) - t >= 0`` (this equals
    ``sum p log(p/q) - p + q``, the same total for probability vectors): every term is ``>= 0``, so
    there is no cancellation between terms, and ``phi`` is evaluated to full relative precision
    (series for small ``t``), so ``KL`` stays accurate when ``q`` is close to ``p`` (``KL ~ |p - q|^2``),
    where the plain sum of ``p log(p/q)`` is pure round-off.
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64).ravel()
    if np.any((p > 0) & (q == 0)):
        return float("inf")
    pos = q > 0
    return float(np.sum(q[pos] * _phi((p[pos] - q[pos]) / q[pos])))


def tv(p: np.ndarray, q: np.ndarray) -> float:
    """``TV(p, q) = (1/2) sum |p - q|``."""
    return 0.5 * float(np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum())


def marginals(P: np.ndarray) -> list[np.ndarray]:
    """The ``k`` one-dimensional marginals of a joint table ``P`` of shape ``(V,) * k``."""
    P = np.asarray(P, dtype=np.float64)
    return [P.sum(axis=tuple(a for a in range(P.ndim) if a != j)) for j in range(P.ndim)]


def product_of_marginals(P: np.ndarray) -> np.ndarray:
    """``prod_j P_j`` as a ``(V,) * k`` table: the law of independent tokens with ``P``'s marginals."""
    out = np.ones(())
    for m in marginals(P):
        out = np.multiply.outer(out, m)
    return out


def total_correlation(P: np.ndarray) -> float:
    """``sum_j H(X_j) - H(X)`` (Lemma A.1's identity; nats)."""
    return sum(entropy(m) for m in marginals(P)) - entropy(P)


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


# ---------------------------------------------------------------------------------------------
# Lemma A.3 (Pinsker)


def _pq(inst: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    P = np.asarray(inst["P"], dtype=np.float64).ravel()
    Q = np.asarray(inst["Q"], dtype=np.float64).ravel()
    require(P.shape == Q.shape and P.size >= 1, f"P and Q must be vectors of one length, got {P.shape}, {Q.shape}")
    for name, v in (("P", P), ("Q", Q)):
        require(bool(np.all(v >= 0)) and abs(v.sum() - 1.0) <= PROB_SUM_ATOL, f"{name} must be a probability vector")
    return P, Q


def _domain_a3(inst: Mapping[str, Any]) -> None:
    _pq(inst)


def _gen_pq(rng: np.random.Generator) -> dict:
    m = int(rng.integers(2, 7))
    P = rng.dirichlet(np.full(m, float(rng.choice([0.2, 1.0, 5.0]))))
    if rng.random() < 0.5:  # Q close to P: the regime where Pinsker is tight
        Q = P + rng.normal(0, float(rng.choice([1e-3, 1e-2, 1e-1])), m)
        Q = np.abs(Q)
        Q = Q / Q.sum()
    else:
        Q = rng.dirichlet(np.full(m, 1.0))
    event = rng.random(m) < 0.5
    return {"P": P, "Q": Q, "event": event}


_pinsker_rhs = closed_form(sp.sqrt(S.KLsym / 2), (S.KLsym,))
TV_ = S.fn("TV")
Q_ = S.tex("Q")


def _pinsker(inst):
    P, Q = _pq(inst)
    return tv(P, Q), _pinsker_rhs({"KL": kl(P, Q)})


def _pinsker_event(inst):
    P, Q = _pq(inst)
    E = np.asarray(inst["event"], dtype=bool).ravel()
    require(E.shape == P.shape, "event must be a boolean mask over the outcomes")
    return abs(P[E].sum() - Q[E].sum()), _pinsker_rhs({"KL": kl(P, Q)})


register(
    Claim(
        id="A.3",
        atol=ATOL_CANCEL,
        paper="Lemma A.3",
        title="Pinsker: TV(P, Q) <= sqrt(KL(P||Q) / 2)",
        lhs=TV_(P_, Q_),
        rhs=sp.sqrt(KL_(P_, Q_) / 2),
        relation="<=",
        evaluate=_pinsker,
        domain=_domain_a3,
        generate=_gen_pq,
        doc="Explicit finite P, Q; natural-log KL. Tight to second order as Q -> P for two outcomes.",
        steps=("A.3.event",),
        free={"P": "simplex", "Q": "simplex"},
    )
)

register(
    Claim(
        id="A.3.event",
        atol=ATOL_CANCEL,
        paper="proof of Lemma A.3 (the event form of the statement)",
        title="|P(E) - Q(E)| <= sqrt(KL(P||Q) / 2) for any event E",
        lhs=sp.Abs(sp.Function("P")(S.tex("E")) - sp.Function("Q")(S.tex("E"))),
        rhs=sp.sqrt(KL_(P_, Q_) / 2),
        relation="<=",
        evaluate=_pinsker_event,
        domain=_domain_a3,
        generate=_gen_pq,
        doc="Explicit finite P, Q and an event given as a boolean mask.",
        free={"P": "simplex", "Q": "simplex"},
    )
)
