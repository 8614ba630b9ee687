"""Lemma C.2: revealing one position per step, P(valid) >= exp(-L eps_learning) (brute force on tiny pruned languages)."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import symbols as S
from .brute import instance_law, table
from .claims import ATOL_CANCEL, Claim, register, require
from .information import kl
from .instances import _gen_ser, _ser_domain, _SER_DOC, _ser_params


def _c2_domain(inst):
    _ser_domain(inst)
    order = inst["order"]
    require(sorted(order) == list(range(1, inst["L"] + 1)), "order must be a permutation of 1..L (one position per step)")


def _c2(inst):
    q = table(inst["language"], int(inst["L"]))
    law = instance_law(q, inst["order"], float(inst.get("beta", 1.0)), inst.get("tilt"))
    return float(law.p[q > 0].sum()), math.exp(-inst["L"] * law.eps)



def _c2_step(inst):
    Q = np.asarray(inst["Q"], dtype=np.float64)
    P = np.asarray(inst["P"], dtype=np.float64)
    return float(P[Q > 0].sum()), math.exp(-kl(Q, P))


def _gen_c2_step(rng):
    m = int(rng.integers(2, 8))
    Q = rng.dirichlet(np.ones(m)) * (rng.random(m) < 0.6)
    if Q.sum() == 0:
        Q[0] = 1.0
    Q = Q / Q.sum()
    P = rng.dirichlet(np.full(m, float(rng.choice([0.3, 1.0, 5.0]))))
    return {"Q": Q, "P": P}



register(
    Claim(
        id="C.2",
        atol=ATOL_CANCEL,
        paper="Lemma C.2",
        title="One position per step: P(valid) >= exp(-L eps_learning)",
        lhs=S.tex(r"P(\mathrm{valid} \mid \tau)"),
        rhs=sp.exp(-S.L * S.eps_l),
        relation=">=",
        evaluate=_c2,
        domain=_c2_domain,
        generate=_gen_ser,
        doc=_SER_DOC + " The instance reveals one position per step in the given order.",
        steps=("C.2.jensen",),
        parameters=_ser_params,
    )
)
register(
    Claim(
        id="C.2.jensen",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.2",
        title="For q supported on A: p(A) >= exp(-KL(q || p)) (Jensen on log)",
        lhs=S.tex("p(A)"),
        rhs=sp.exp(-S.fn("KL")(S.tex("q"), S.tex("p"))),
        relation=">=",
        evaluate=_c2_step,
        domain=lambda inst: require(
            np.asarray(inst["Q"]).shape == np.asarray(inst["P"]).shape, "Q and P must have one shape"
        ),
        generate=_gen_c2_step,
        doc="Explicit finite distributions; A = support of q.",
        free={"Q": "simplex", "P": "simplex"},
    )
)
