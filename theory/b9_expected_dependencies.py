"""Lemma B.9: KL(q || p) <= E_tau[sum_i (|tau_i| - D_i)] log|V| + L eps_learning.

* On tiny n-grams against the brute-force law of :mod:`theory.brute`, the oracle tempered by ``beta``.
* For the oracle at lengths beyond enumeration: ``KL(q || p)`` from numerics' exact DP over revealed
  words (``L`` 5-8), and ``E_tau KL(q || p(.|tau))`` of 2-grams from the Markov chain rule (``L`` in the hundreds).

The right sides use ``E_tau sum_i (|tau_i| - D_i)`` from the transfer matrix of :mod:`theory.separators`.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from numerics.schedules import from_u

from . import symbols as S
from .brute import mixture_law, sequence_kl
from .claims import ATOL_CANCEL, Claim, register
from .instances import _dp_domain, _gen_dp, _gen_markov, _gen_tiny, _markov_domain, _q, _schedule_of, _tiny_domain, _TINY_DOC, _tiny_params
from .separators import expected_gap_per_step


def _b9(inst, instance_average: bool = False):
    q = _q(inst)
    pi = np.asarray(inst["pi"], dtype=np.float64)
    mix = mixture_law(q, pi, float(inst.get("beta", 1.0)), inst.get("tilt"))
    u = np.concatenate([[0.0], np.cumsum(pi)])
    u[-1] = 1.0
    deps = float(expected_gap_per_step(inst["L"], inst["language"].order, u).sum())
    V = inst["language"].vocab_size
    lhs = mix.expected_instance_kl if instance_average else sequence_kl(q, mix.p)
    return lhs, deps * math.log(V) + inst["L"] * mix.eps



register(
    Claim(
        id="B.9",
        atol=ATOL_CANCEL,
        paper="Lemma B.9",
        title="KL(q || p) <= E_tau[sum_i (|tau_i| - D_i)] log|V| + L eps_learning",
        lhs=S.KLq(S.tex("q"), S.tex("p")),
        rhs=S.Eps_sum * sp.log(S.V) + S.L * S.eps_l,
        relation="<=",
        evaluate=_b9,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC + " E_tau sum_i (|tau_i| - D_i) by the transfer matrix (not by enumeration).",
        steps=("B.9.instance-average", "B.9.exact-dp", "B.9.markov"),
        free={"pi": "simplex"},
        parameters=_tiny_params,
    )
)
register(
    Claim(
        id="B.9.instance-average",
        atol=ATOL_CANCEL,
        paper="proof of Lemma B.9",
        title="E_tau KL(q || p(.|tau)) <= E_tau[sum_i (|tau_i| - D_i)] log|V| + L eps_learning",
        lhs=S.fn("E_tau")(S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))),
        rhs=S.Eps_sum * sp.log(S.V) + S.L * S.eps_l,
        relation="<=",
        evaluate=lambda inst: _b9(inst, instance_average=True),
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC,
        free={"pi": "simplex"},
        parameters=_tiny_params,
    )
)



def _b9_dp(inst):
    from numerics.exact.dp import dp_metrics

    pi = np.asarray(inst["pi"], dtype=np.float64)
    u = np.concatenate([[0.0], np.cumsum(pi)])
    u[-1] = 1.0
    sched = from_u(u, "claim")
    kl = dp_metrics(inst["language"], int(inst["L"]), sched).kl.value
    deps = float(expected_gap_per_step(inst["L"], inst["language"].order, sched.u).sum())
    return kl, deps * math.log(inst["language"].vocab_size)


register(
    Claim(
        id="B.9.exact-dp",
        atol=ATOL_CANCEL,
        paper="proof of Lemma B.9 (oracle, lengths beyond enumeration)",
        title="Oracle: KL(q || p) <= E_tau[sum_i (|tau_i| - D_i)] log|V|, KL from numerics' exact DP",
        lhs=S.KLq(S.tex("q"), S.tex("p")),
        rhs=S.Eps_sum * sp.log(S.V),
        relation="<=",
        evaluate=_b9_dp,
        domain=_dp_domain,
        generate=_gen_dp,
        doc=(
            "Binary n-grams at L = 5..8: KL(q||p) of the oracle sampler's mixture law from "
            "numerics.exact.dp.dp_metrics (DP over revealed words, independent of theory.brute); the "
            "right side by the transfer matrix."
        ),
        free={"pi": "simplex"},
        parameters={"language": "NGram", "L": "length", "pi": "step probabilities"},
    )
)



def _b9_markov(inst):
    from numerics.exact.markov import jensen_bound_markov

    sched = _schedule_of(inst["pi"])
    lang, L = inst["language"], int(inst["L"])
    jensen = jensen_bound_markov(lang, L, sched).total.value
    return jensen, float(expected_gap_per_step(L, 2, sched.u).sum()) * math.log(lang.vocab_size)


register(
    Claim(
        id="B.9.markov",
        atol=ATOL_CANCEL,
        paper="proof of Lemma B.9 (oracle, 2-grams at any length)",
        title="Oracle, 2-gram: E_tau KL(q || p(.|tau)) <= E_tau[sum_i (|tau_i| - D_i)] log|V|, at L in the hundreds",
        lhs=S.fn("E_tau")(S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))),
        rhs=S.Eps_sum * sp.log(S.V),
        relation="<=",
        evaluate=_b9_markov,
        domain=_markov_domain,
        generate=_gen_markov,
        doc=(
            "Left side exact by numerics.exact.markov.jensen_bound_markov (the Markov chain rule, "
            "O(L V^3 + N L)) for the Table 1 2-gram preset or random bigrams; right side by the transfer matrix."
        ),
        free={"pi": "simplex"},
        parameters={"language": "2-gram", "L": "length", "pi": "step probabilities"},
    )
)
