"""Lemma B.8: KL(q || p(.|tau)) <= sum_i (|tau_i| - D_i) log|V| + L eps_learning, with its proof steps."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import symbols as S
from .brute import instance_law, sequence_kl
from .claims import ATOL_CANCEL, Claim, register
from .instances import _dep_term, _gen_tiny, _instance, _q, _tiny_domain, _TINY_DOC, _tiny_params
from .separators import step_stats


def _b8(inst):
    law = _instance(inst)
    V = inst["language"].vocab_size
    return sequence_kl(_q(inst), law.p), _dep_term(inst) * math.log(V) + inst["L"] * law.eps


def _b8_groups(inst):
    """Oracle total correlation of step i's new tokens = sum over its groups (n-gram separation)."""
    q, steps, i = _q(inst), np.asarray(inst["steps"]), int(inst["i"])
    st = step_stats(steps, i, inst["language"].order)
    if st.new == 0:
        return 0.0, 0.0
    total = instance_law(q, np.where(steps == i, 1, np.where(steps < i, 0, 2)) + 1).step_tc[1]
    parts = 0.0
    for g in st.groups:
        mask = np.where(steps < i, 1, 3)
        mask[list(np.asarray(g) - 1)] = 2
        parts += instance_law(q, mask).step_tc[1]
    return total, parts


def _b8_step(inst):
    law = _instance(inst)
    i = int(inst["i"])
    st = step_stats(inst["steps"], i, inst["language"].order)
    V = inst["language"].vocab_size
    if st.new == 0:  # nothing revealed at step i: both sides are 0 (and 0 * eps = 0 even for eps = inf)
        return 0.0, 0.0
    return float(law.step_terms[i - 1]), (st.new - st.dependencies) * math.log(V) + st.new * law.eps



register(
    Claim(
        id="B.8",
        atol=ATOL_CANCEL,
        paper="Lemma B.8",
        title="KL(q || p(.|tau)) <= sum_i (|tau_i| - D_i) log|V| + L eps_learning",
        lhs=S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)")),
        rhs=S.step_sum(S.tex(r"(|\tau_i| - D_i)")) * sp.log(S.V) + S.L * S.eps_l,
        relation="<=",
        evaluate=_b8,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC + " D_i from theory.separators.step_stats (Definition B.5).",
        steps=("B.8.groups", "B.8.step"),
        parameters=_tiny_params,
    )
)
register(
    Claim(
        id="B.8.groups",
        atol=ATOL_CANCEL,
        paper="proof of Lemma B.8",
        title="Groups are conditionally independent: the step's total correlation is the sum over groups",
        lhs=S.tex(r"\mathrm{TC}(x_{\tau_i} | x_{\tau_{<i}})"),
        rhs=sp.Sum(S.tex(r"\mathrm{TC}(x_{g} | x_{\tau_{<i}})"), (S.tex("g"), 1, S.tex("D_i"))),
        relation="==",
        evaluate=_b8_groups,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC + " Both sides oracle conditional total correlations by enumeration.",
        parameters=_tiny_params,
    )
)
register(
    Claim(
        id="B.8.step",
        atol=ATOL_CANCEL,
        paper="proof of Lemma B.8",
        title="Per step: E_q KL(step i) <= (|tau_i| - D_i) log|V| + |tau_i| eps_learning",
        lhs=S.fn("E_q")(S.KLq(S.tex(r"q(x_{\tau_i}|\cdot)"), S.tex(r"\prod_j p_\theta(x_j|\cdot)"))),
        rhs=S.tex(r"(|\tau_i| - D_i)") * sp.log(S.V) + S.tex(r"|\tau_i|") * S.eps_l,
        relation="<=",
        evaluate=_b8_step,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC,
        parameters=_tiny_params,
    )
)
