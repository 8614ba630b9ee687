"""Lemma B.2 (convexity) and Lemma B.3 (chain rule), against the brute-force sampler law of tiny n-grams."""

from __future__ import annotations


import sympy as sp

from . import symbols as S
from .brute import mixture_law, sequence_kl
from .claims import ATOL_CANCEL, Claim, register
from .instances import _gen_tiny, _instance, _q, _tiny_domain, _TINY_DOC, _tiny_params


def _b2(inst):
    mix = mixture_law(_q(inst), inst["pi"], float(inst.get("beta", 1.0)), inst.get("tilt"))
    return sequence_kl(_q(inst), mix.p), mix.expected_instance_kl


def _b3(inst):
    law = _instance(inst)
    return sequence_kl(_q(inst), law.p), float(law.step_terms.sum())


def _b3_split(inst):
    law = _instance(inst)
    return float(law.step_terms.sum()), float(law.step_tc.sum() + law.step_marginal_kl.sum())



register(
    Claim(
        id="B.2",
        atol=ATOL_CANCEL,
        paper="Lemma B.2",
        title="KL(q || p) <= E_tau KL(q || p(.|tau)) (convexity)",
        lhs=S.KLq(S.tex("q"), S.tex("p")),
        rhs=S.fn("E_tau")(S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))),
        relation="<=",
        evaluate=_b2,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC + " p is the mixture over all N^L instances.",
        free={"pi": "simplex"},
        parameters=_tiny_params,
    )
)
register(
    Claim(
        id="B.3",
        atol=ATOL_CANCEL,
        paper="Lemma B.3",
        title="Chain rule: KL(q || p(.|tau)) = sum_i E_q KL(q(x_tau_i | x_tau_<i) || prod_j p_theta(x_j | x_tau_<i))",
        lhs=S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)")),
        rhs=S.step_sum(S.fn("E_q")(S.KLq(S.tex(r"q(x_{\tau_i}|x_{\tau_{<i}})"), S.tex(r"\prod_{j} p_\theta(x_j|x_{\tau_{<i}})")))),
        relation="==",
        evaluate=_b3,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC + " Left: KL over whole sequences; right: per-step conditional KLs averaged under q.",
        steps=("B.3.split",),
        parameters=_tiny_params,
    )
)
register(
    Claim(
        id="B.3.split",
        atol=ATOL_CANCEL,
        paper="proof of Lemma B.3 (general model)",
        title="Each step term = conditional total correlation + sum_j E KL(q(x_j|x_tau_<i) || p_theta(x_j|x_tau_<i))",
        lhs=S.step_sum(S.fn("E_q")(S.KLq(S.tex(r"q(x_{\tau_i}|x_{\tau_{<i}})"), S.tex(r"\prod_{j} p_\theta(x_j|x_{\tau_{<i}})")))),
        rhs=S.step_sum(S.tex(r"\mathrm{TC}_i") + sp.Sum(S.fn("E_q")(S.KLq(S.tex("q_j"), S.tex(r"p_{\theta,j}"))), (S.tex("j"), 1, S.tex(r"|\tau_i|")))),
        relation="==",
        evaluate=_b3_split,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC + " Left: expected log-ratio of the step; right: the oracle's total correlation plus the "
        "per-context marginal KLs (summed over the token axis, then averaged over contexts).",
        parameters=_tiny_params,
    )
)
