"""Theorem 4.3 / C.3: SER(p) <= 1 - (1 - delta_N) exp(-L eps_learning), delta_N the collision probability (Lemma C.1)."""

from __future__ import annotations

import math
from math import comb

import numpy as np
import sympy as sp

from . import symbols as S
from .brute import mixture_law, table
from .claims import ATOL_CANCEL, Claim, register
from .collision import collision_probability
from .instances import _dp_domain, _gen_dp, _gen_ser, _ser_domain, _SER_DOC, _ser_params, random_ngram


def _c3(inst, exact_delta: bool):
    q = table(inst["language"], int(inst["L"]))
    pi = np.asarray(inst["pi"], dtype=np.float64)
    mix = mixture_law(q, pi, float(inst.get("beta", 1.0)), inst.get("tilt"))
    L = int(inst["L"])
    delta = float(collision_probability(list(pi), L)) if exact_delta else comb(L, 2) * float(np.sum(pi**2))
    return 1 - mix.valid, 1 - max(1 - delta, 0.0) * math.exp(-L * mix.eps)



register(
    Claim(
        id="4.3",
        atol=ATOL_CANCEL,
        paper="Theorem 4.3 / C.3",
        title="SER(p) <= 1 - (1 - delta_N) exp(-L eps_learning), delta_N = C(L,2) sum_i pi_i^2 (Lemma C.1)",
        lhs=S.tex(r"\mathrm{SER}(p)"),
        rhs=1 - (1 - sp.binomial(S.L, 2) * S.step_sum(S.pi[S.i] ** 2)) * sp.exp(-S.L * S.eps_l),
        relation="<=",
        evaluate=lambda inst: _c3(inst, exact_delta=False),
        domain=_ser_domain,
        generate=_gen_ser,
        doc=_SER_DOC + " SER of the mixture over all N^L instances, exact.",
        steps=("4.3.exact-delta", "4.3.exact-dp"),
        free={"pi": "simplex"},
        parameters=_ser_params,
    )
)
register(
    Claim(
        id="4.3.exact-delta",
        atol=ATOL_CANCEL,
        paper="proof of Theorem 4.3 / C.3 (exact collision probability)",
        title="SER(p) <= 1 - (1 - delta_N) exp(-L eps_learning) with delta_N = 1 - L! e_L(pi) exact",
        lhs=S.tex(r"\mathrm{SER}(p)"),
        rhs=1 - sp.factorial(S.L) * sp.Function("e_L")(S.pi) * sp.exp(-S.L * S.eps_l),
        relation="<=",
        evaluate=lambda inst: _c3(inst, exact_delta=True),
        domain=_ser_domain,
        generate=_gen_ser,
        doc=_SER_DOC,
        free={"pi": "simplex"},
        parameters=_ser_params,
    )
)



def _c3_dp(inst):
    from numerics.exact.dp import dp_metrics
    from numerics.schedules import from_u

    pi = np.asarray(inst["pi"], dtype=np.float64)
    u = np.concatenate([[0.0], np.cumsum(pi)])
    u[-1] = 1.0
    sched = from_u(u, "claim")
    ser = dp_metrics(inst["language"], int(inst["L"]), sched).ser.value
    return ser, float(collision_probability(list(sched.pi), int(inst["L"])))


def _gen_c3_dp(rng: np.random.Generator) -> dict:
    inst = _gen_dp(rng)
    inst["language"] = random_ngram(rng, int(rng.integers(2, 4)), 2, prune=0.3)
    return inst


register(
    Claim(
        id="4.3.exact-dp",
        atol=ATOL_CANCEL,
        paper="proof of Theorem 4.3 / C.3 (oracle, lengths beyond enumeration)",
        title="Oracle: SER(p) <= delta_N = 1 - L! e_L(pi), SER from numerics' exact DP",
        lhs=S.tex(r"\mathrm{SER}(p)"),
        rhs=1 - sp.factorial(S.L) * sp.Function("e_L")(S.pi),
        relation="<=",
        evaluate=_c3_dp,
        domain=_dp_domain,
        generate=_gen_c3_dp,
        doc=(
            "Pruned binary n-grams at L = 5..8, the oracle (eps_learning = 0): SER of the mixture law from "
            "numerics.exact.dp.dp_metrics against the exact collision probability."
        ),
        free={"pi": "simplex"},
        parameters={"language": "NGram", "L": "length", "pi": "step probabilities"},
    )
)

