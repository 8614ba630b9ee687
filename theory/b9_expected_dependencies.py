"""Lemma B.9: ``KL(q || p) <= E_tau[sum_i (|tau_i| - D_i)] log|V| + L eps_learning``.

B.2 then B.8 averaged over instances. Checked three ways:

* on tiny n-grams against the brute-force law of :mod:`theory.brute` (the oracle tempered by ``beta``),
  for ``KL(q || p)`` and for the instance average ``E_tau KL(q || p(.|tau))``;
* for the oracle at ``L = 5..8``: ``KL(q || p)`` from numerics' exact DP over revealed words;
* for the oracle on 2-grams at ``L`` in the hundreds: ``E_tau KL(q || p(.|tau))`` from numerics'
  Markov chain rule.

The right sides use ``E_tau sum_i (|tau_i| - D_i)`` from the transfer matrix of :mod:`theory.separators`.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from numerics.exact.dp import dp_metrics
from numerics.exact.markov import jensen_bound_markov

from . import symbols as S
from .brute import mixture_law, sequence_kl
from .claims import ATOL_CANCEL
from .family import ClaimFamily
from .instances import (
    TINY_DOC,
    TINY_PARAMS,
    dp_domain,
    gen_dp,
    gen_markov,
    gen_tiny,
    markov_domain,
    schedule_of,
    tiny_domain,
    tiny_table,
)
from .separators import expected_gap_per_step


def _b9_sides(inst) -> dict:
    q = tiny_table(inst)
    pi = np.asarray(inst["pi"], dtype=np.float64)
    mix = mixture_law(q, pi, float(inst.get("beta", 1.0)), inst.get("tilt"))
    deps = float(expected_gap_per_step(inst["L"], inst["language"].order, schedule_of(pi).u).sum())
    return {"kl": sequence_kl(q, mix.p), "instance_kl": mix.expected_instance_kl,
            "bound": deps * math.log(inst["language"].vocab_size) + inst["L"] * mix.eps}


def _b9_dp(inst):
    sched = schedule_of(inst["pi"])
    kl = dp_metrics(inst["language"], int(inst["L"]), sched).kl.value
    deps = float(expected_gap_per_step(inst["L"], inst["language"].order, sched.u).sum())
    return kl, deps * math.log(inst["language"].vocab_size)


def _b9_markov(inst):
    sched = schedule_of(inst["pi"])
    lang, L = inst["language"], int(inst["L"])
    jensen = jensen_bound_markov(lang, L, sched).total.value
    return jensen, float(expected_gap_per_step(L, 2, sched.u).sum()) * math.log(lang.vocab_size)


_kl_q_p = S.KLq(S.tex("q"), S.tex("p"))
_instance_kl = S.fn("E_tau")(S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)")))
_bound = S.Eps_sum * sp.log(S.V) + S.L * S.eps_l
_oracle_bound = S.Eps_sum * sp.log(S.V)

b9 = ClaimFamily("B.9", "Lemma B.9", sides=_b9_sides, domain=tiny_domain, generate=gen_tiny, atol=ATOL_CANCEL,
                 doc=TINY_DOC, free={"pi": "simplex"}, parameters=TINY_PARAMS)
b9.statement("KL(q || p) <= E_tau[sum_i (|tau_i| - D_i)] log|V| + L eps_learning", _kl_q_p, "<=", _bound,
             sides=("kl", "bound"), steps=("B.9.instance-average", "B.9.exact-dp", "B.9.markov"),
             doc=TINY_DOC + " E_tau sum_i (|tau_i| - D_i) by the transfer matrix (not by enumeration).")
b9.step("instance-average", "E_tau KL(q || p(.|tau)) <= E_tau[sum_i (|tau_i| - D_i)] log|V| + L eps_learning",
        _instance_kl, "<=", _bound, sides=("instance_kl", "bound"))
b9.step("exact-dp", "Oracle: KL(q || p) <= E_tau[sum_i (|tau_i| - D_i)] log|V|, KL from numerics' exact DP",
        _kl_q_p, "<=", _oracle_bound, _b9_dp, paper="proof of Lemma B.9 (oracle, lengths beyond enumeration)",
        domain=dp_domain, generate=gen_dp, parameters={"language": "NGram", "L": "length", "pi": "step probabilities"},
        doc=("Binary n-grams at L = 5..8: KL(q||p) of the oracle sampler's mixture law from "
             "numerics.exact.dp.dp_metrics (DP over revealed words, independent of theory.brute); the "
             "right side by the transfer matrix."))
b9.step("markov",
        "Oracle, 2-gram: E_tau KL(q || p(.|tau)) <= E_tau[sum_i (|tau_i| - D_i)] log|V|, at L in the hundreds",
        _instance_kl, "<=", _oracle_bound, _b9_markov, paper="proof of Lemma B.9 (oracle, 2-grams at any length)",
        domain=markov_domain, generate=gen_markov,
        parameters={"language": "2-gram", "L": "length", "pi": "step probabilities"},
        doc=("Left side exact by numerics.exact.markov.jensen_bound_markov (the Markov chain rule, "
             "O(L V^3 + N L)) for the Table 1 2-gram preset or random bigrams; right side by the transfer matrix."))
