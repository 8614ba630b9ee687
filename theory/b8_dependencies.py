"""Lemma B.8: ``KL(q || p(.|tau)) <= sum_i (|tau_i| - D_i) log|V| + L eps_learning`` for one instance ``tau``.

Given the tokens of a separator (a run of ``n-1`` revealed positions, Definition B.4), an n-gram's
left and right parts are independent, so the new tokens of step ``i`` fall into ``D_i`` groups that
are conditionally independent (``B.8.groups``); Lemma A.1 on a group of ``k`` tokens costs at most
``(k-1) log|V|``, and each revealed token adds at most ``eps_learning`` (Assumption 4.1), so step
``i`` costs at most ``(|tau_i| - D_i) log|V| + |tau_i| eps_learning`` (``B.8.step``). Checked on
tiny n-grams against the brute-force law of :mod:`theory.brute`; ``D_i`` from
:func:`theory.separators.step_stats`.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import symbols as S
from .brute import instance_law, sequence_kl
from .claims import ATOL_CANCEL
from .family import ClaimFamily
from .instances import (
    TINY_DOC,
    TINY_PARAMS,
    dependency_count,
    gen_tiny,
    tiny_domain,
    tiny_instance_law,
    tiny_table,
)
from .separators import step_stats


def _b8(inst):
    law = tiny_instance_law(inst)
    V = inst["language"].vocab_size
    return sequence_kl(tiny_table(inst), law.p), dependency_count(inst) * math.log(V) + inst["L"] * law.eps


def _b8_groups(inst):
    """Oracle total correlation of step i's new tokens = sum over its groups (n-gram separation)."""
    q, steps, i = tiny_table(inst), np.asarray(inst["steps"]), int(inst["i"])
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
    law = tiny_instance_law(inst)
    i = int(inst["i"])
    st = step_stats(inst["steps"], i, inst["language"].order)
    V = inst["language"].vocab_size
    if st.new == 0:  # nothing revealed at step i: both sides are 0 (and 0 * eps = 0 even for eps = inf)
        return 0.0, 0.0
    return float(law.step_terms[i - 1]), (st.new - st.dependencies) * math.log(V) + st.new * law.eps


b8 = ClaimFamily("B.8", "Lemma B.8", domain=tiny_domain, generate=gen_tiny, atol=ATOL_CANCEL, parameters=TINY_PARAMS,
                 doc=TINY_DOC)
b8.statement(
    "KL(q || p(.|tau)) <= sum_i (|tau_i| - D_i) log|V| + L eps_learning", S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)")),
    "<=", S.step_sum(S.tex(r"(|\tau_i| - D_i)")) * sp.log(S.V) + S.L * S.eps_l, _b8,
    doc=TINY_DOC + " D_i from theory.separators.step_stats (Definition B.5).", steps=("B.8.groups", "B.8.step"))
b8.step("groups", "Groups are conditionally independent: the step's total correlation is the sum over groups",
        S.tex(r"\mathrm{TC}(x_{\tau_i} | x_{\tau_{<i}})"), "==",
        sp.Sum(S.tex(r"\mathrm{TC}(x_{g} | x_{\tau_{<i}})"), (S.tex("g"), 1, S.tex("D_i"))), _b8_groups,
        doc=TINY_DOC + " Both sides oracle conditional total correlations by enumeration.")
b8.step("step", "Per step: E_q KL(step i) <= (|tau_i| - D_i) log|V| + |tau_i| eps_learning",
        S.fn("E_q")(S.KLq(S.tex(r"q(x_{\tau_i}|\cdot)"), S.tex(r"\prod_j p_\theta(x_j|\cdot)"))), "<=",
        S.tex(r"(|\tau_i| - D_i)") * sp.log(S.V) + S.tex(r"|\tau_i|") * S.eps_l, _b8_step)
