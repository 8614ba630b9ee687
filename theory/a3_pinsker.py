"""Lemma A.3 (Pinsker): TV(P, Q) <= sqrt(KL(P||Q) / 2), and its event form."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import sympy as sp

from . import symbols as S
from .claims import ATOL_CANCEL, PROB_SUM_ATOL, Claim, closed_form, register, require
from .information import kl, tv

KL_ = S.fn("KL")
P_ = S.tex("P")


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
