"""Lemma A.3 (Pinsker): ``TV(P, Q) <= sqrt(KL(P||Q) / 2)``, and its event form.

Natural-log KL. Since ``TV(P, Q) = max_E |P(E) - Q(E)|``, the event form
``|P(E) - Q(E)| <= sqrt(KL(P||Q) / 2)`` holds for every event ``E`` (Example C.7 uses it on the
event "a bit equals 1"). Both are checked on explicit finite ``P``, ``Q``; the bound is tight to
second order as ``Q -> P`` on two outcomes.
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
from .information import kl, tv


def _pq(inst: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    P = np.asarray(inst["P"], dtype=np.float64).ravel()
    Q = np.asarray(inst["Q"], dtype=np.float64).ravel()
    require(P.shape == Q.shape and P.size >= 1,
            f"P and Q must be vectors of one length, got lengths {show(P.size)}, {show(Q.size)}")
    for name, v in (("P", P), ("Q", Q)):
        require(bool(np.all(v >= 0)) and abs(v.sum() - 1.0) <= PROB_SUM_ATOL, f"{name} must be a probability vector")
    return P, Q


def _domain(inst: Mapping[str, Any]) -> None:
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


def _sides(inst: Mapping[str, Any]) -> dict:
    """``TV(P, Q)``, ``|P(E) - Q(E)|`` (when the instance has an ``event``) and ``sqrt(KL(P||Q)/2)``."""
    P, Q = _pq(inst)
    out = {"tv": tv(P, Q), "bound": _pinsker_rhs({"KL": kl(P, Q)})}
    if "event" in inst:
        E = np.asarray(inst["event"], dtype=bool).ravel()
        require(E.shape == P.shape, "event must be a boolean mask over the outcomes")
        out["event"] = abs(P[E].sum() - Q[E].sum())
    return out


P_, Q_ = S.tex("P"), S.tex("Q")
_bound = sp.sqrt(S.KLq(P_, Q_) / 2)

a3 = ClaimFamily("A.3", "Lemma A.3", sides=_sides, domain=_domain, generate=_gen_pq, atol=ATOL_CANCEL, vacuous_at=1,
                 free={"P": "simplex", "Q": "simplex"})
a3.statement("Pinsker: TV(P, Q) <= sqrt(KL(P||Q) / 2)", S.fn("TV")(P_, Q_), "<=", _bound, sides=("tv", "bound"),
             steps=("A.3.event",),
             doc="Explicit finite P, Q; natural-log KL. Tight to second order as Q -> P for two outcomes.")
a3.step("event", "|P(E) - Q(E)| <= sqrt(KL(P||Q) / 2) for any event E",
        sp.Abs(sp.Function("P")(S.tex("E")) - sp.Function("Q")(S.tex("E"))), "<=", _bound, sides=("event", "bound"),
        paper="proof of Lemma A.3 (the event form of the statement)",
        doc="Explicit finite P, Q and an event given as a boolean mask.")
