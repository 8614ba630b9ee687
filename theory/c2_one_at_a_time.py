"""Lemma C.2: revealing one position per step, ``P(valid) >= exp(-L eps_learning)``.

Per step, with ``A`` the set of valid continuations (the support of ``q``'s conditional), Jensen on
``log`` gives ``p_theta(A) >= exp(-KL(q || p_theta)) >= exp(-eps_learning)`` (Assumption 4.1); ``L``
steps multiply. Checked by brute force on tiny pruned languages (the instance reveals one position
per step in a given order) and, for the Jensen step, on explicit finite distributions.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import symbols as S
from .brute import instance_law, table
from .claims import ATOL_CANCEL, require
from .family import ClaimFamily
from .information import kl
from .instances import SER_DOC, SER_PARAMS, gen_ser, ser_domain


def _domain(inst):
    ser_domain(inst)
    order = inst["order"]
    require(sorted(order) == list(range(1, inst["L"] + 1)), "order must be a permutation of 1..L (one position per step)")


def _c2(inst):
    q = table(inst["language"], int(inst["L"]))
    law = instance_law(q, inst["order"], float(inst.get("beta", 1.0)), inst.get("tilt"))
    return float(law.p[q > 0].sum()), math.exp(-inst["L"] * law.eps)


def _jensen(inst):
    Q = np.asarray(inst["Q"], dtype=np.float64)
    P = np.asarray(inst["P"], dtype=np.float64)
    return float(P[Q > 0].sum()), math.exp(-kl(Q, P))


def _gen_jensen(rng: np.random.Generator) -> dict:
    m = int(rng.integers(2, 8))
    Q = rng.dirichlet(np.ones(m)) * (rng.random(m) < 0.6)
    if Q.sum() == 0:
        Q[0] = 1.0
    Q = Q / Q.sum()
    P = rng.dirichlet(np.full(m, float(rng.choice([0.3, 1.0, 5.0]))))
    return {"Q": Q, "P": P}


c2 = ClaimFamily("C.2", "Lemma C.2", atol=ATOL_CANCEL, vacuous_at=0)
c2.statement("One position per step: P(valid) >= exp(-L eps_learning)", S.tex(r"P(\mathrm{valid} \mid \tau)"), ">=",
             sp.exp(-S.L * S.eps_l), _c2, domain=_domain, generate=gen_ser, steps=("C.2.jensen",),
             parameters=SER_PARAMS,
             doc=SER_DOC + " The instance reveals one position per step in the given order.")
c2.step("jensen", "For q supported on A: p(A) >= exp(-KL(q || p)) (Jensen on log)", S.tex("p(A)"), ">=",
        sp.exp(-S.KLq(S.tex("q"), S.tex("p"))), _jensen,
        domain=lambda inst: require(np.asarray(inst["Q"]).shape == np.asarray(inst["P"]).shape,
                                    "Q and P must have one shape"),
        generate=_gen_jensen, doc="Explicit finite distributions; A = support of q.", free={"Q": "simplex", "P": "simplex"})
