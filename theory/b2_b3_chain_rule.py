"""Lemma B.2 (convexity) and Lemma B.3 (chain rule), against the brute-force sampler law of tiny n-grams.

* B.2: the sampler's output law is the mixture ``p = E_tau p(.|tau)`` over instances ``tau``, and KL
  is convex in its second argument: ``KL(q || p) <= E_tau KL(q || p(.|tau))``.
* B.3: for one instance the KL splits over steps,
  ``KL(q || p(.|tau)) = sum_i E_q KL(q(x_{tau_i} | x_{tau_<i}) || prod_{j in tau_i} p_theta(x_j | x_{tau_<i}))``;
  for a general model each step term is the oracle's conditional total correlation of the new
  tokens plus the per-token KLs of the model (``B.3.split``).

Both sides come from explicit tables over ``V^L`` (:mod:`theory.brute`).
"""

from __future__ import annotations

import sympy as sp

from . import symbols as S
from .brute import mixture_law, sequence_kl
from .claims import ATOL_CANCEL
from .family import ClaimFamily
from .instances import (
    TINY_DOC,
    TINY_PARAMS,
    gen_tiny,
    tiny_domain,
    tiny_instance_law,
    tiny_table,
)


def _b2(inst):
    mix = mixture_law(tiny_table(inst), inst["pi"], float(inst.get("beta", 1.0)), inst.get("tilt"))
    return sequence_kl(tiny_table(inst), mix.p), mix.expected_instance_kl


def _b3_sides(inst) -> dict:
    law = tiny_instance_law(inst)
    return {"kl": sequence_kl(tiny_table(inst), law.p), "steps": float(law.step_terms.sum()),
            "split": float(law.step_tc.sum() + law.step_marginal_kl.sum())}


_q, _p_tau = S.tex("q"), S.tex(r"p(\cdot|\tau)")
_step_terms = S.step_sum(S.fn("E_q")(S.KLq(S.tex(r"q(x_{\tau_i}|x_{\tau_{<i}})"),
                                           S.tex(r"\prod_{j} p_\theta(x_j|x_{\tau_{<i}})"))))
_tiny = dict(domain=tiny_domain, generate=gen_tiny, atol=ATOL_CANCEL, parameters=TINY_PARAMS)

ClaimFamily("B.2", "Lemma B.2", **_tiny).statement(
    "KL(q || p) <= E_tau KL(q || p(.|tau)) (convexity)", S.KLq(_q, S.tex("p")), "<=", S.fn("E_tau")(S.KLq(_q, _p_tau)),
    _b2, free={"pi": "simplex"}, doc=TINY_DOC + " p is the mixture over all N^L instances.")

b3 = ClaimFamily("B.3", "Lemma B.3", sides=_b3_sides, **_tiny)
b3.statement(
    "Chain rule: KL(q || p(.|tau)) = sum_i E_q KL(q(x_tau_i | x_tau_<i) || prod_j p_theta(x_j | x_tau_<i))",
    S.KLq(_q, _p_tau), "==", _step_terms, sides=("kl", "steps"), steps=("B.3.split",),
    doc=TINY_DOC + " Left: KL over whole sequences; right: per-step conditional KLs averaged under q.")
b3.step(
    "split", "Each step term = conditional total correlation + sum_j E KL(q(x_j|x_tau_<i) || p_theta(x_j|x_tau_<i))",
    _step_terms, "==",
    S.step_sum(S.tex(r"\mathrm{TC}_i") + sp.Sum(S.fn("E_q")(S.KLq(S.tex("q_j"), S.tex(r"p_{\theta,j}"))),
                                                 (S.tex("j"), 1, S.tex(r"|\tau_i|")))),
    sides=("steps", "split"), paper="proof of Lemma B.3 (general model)",
    doc=(TINY_DOC + " Left: expected log-ratio of the step; right: the oracle's total correlation plus the "
         "per-context marginal KLs (summed over the token axis, then averaged over contexts)."))
