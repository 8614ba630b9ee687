"""The KL chain of the positive result: Lemmas B.2, B.3, B.8, B.9, checked against exact sampler laws.

* On tiny n-grams (random ones and the Table 1 presets) against the brute-force law of
  :mod:`theory.brute` (every sequence, every instance), with the oracle tempered by ``beta`` so
  that ``eps_learning > 0`` is covered too.
* For the oracle at lengths beyond enumeration: ``KL(q || p)`` from numerics' exact DP over
  revealed words (``L`` 5-8), and ``E_tau KL(q || p(.|tau))`` of 2-grams from the Markov chain rule
  (``L`` in the hundreds).

The right sides use ``E_tau sum_i (|tau_i| - D_i)`` from the transfer matrix of
:mod:`theory.separators`.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from numerics.languages.hmm import NGram
from numerics.schedules import Schedule, from_u

from . import symbols as S
from .brute import instance_law, mixture_law, sequence_kl, table
from .claims import ATOL_CANCEL, Claim, probability_vector, register, require
from .separators import expected_gap_per_step, step_stats

__all__ = ["random_ngram", "TINY_PRESETS", "KLq", "Eps_sum"]

KLq = S.fn("KL")
Eps_sum = S.fn("E")(S.tex(r"\sum_i (|\tau_i| - D_i)"))

# ---------------------------------------------------------------------------------------------
# Lemmas B.2, B.3, B.8, B.9 on tiny n-grams (brute force)


def random_ngram(rng: np.random.Generator, n: int, V: int, prune: float = 0.0) -> NGram:
    """A random n-gram: Dirichlet rows, entries below ``prune`` zeroed (one kept per row), renormalized."""
    S_ = V ** (n - 1)

    def rows(k):
        w = rng.dirichlet(np.full(V if k > 1 else S_, 0.7), size=k)
        if prune > 0:
            keep = w >= prune
            keep[np.arange(w.shape[0]), w.argmax(axis=1)] = True
            w = w * keep
        return w / w.sum(axis=1, keepdims=True)

    return NGram(n, rows(1)[0], rows(S_))


#: The paper's Table 1 n-gram presets (numerics.languages.presets, V = 8) used at tiny lengths by the generators.
TINY_PRESETS = ("2gram", "3gram", "2gram-pruned", "3gram-pruned")


def _gen_tiny(rng: np.random.Generator) -> dict:
    n = int(rng.integers(2, 4))
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 5 if V == 2 else 4))
    N = int(rng.integers(1, 4))
    if rng.random() < 0.25:  # a real language of the paper's experiments (V = 8), at L <= 3
        from numerics.languages.presets import load_language

        lang, L = load_language(str(rng.choice(TINY_PRESETS))), int(rng.integers(2, 4))
    else:
        lang = random_ngram(rng, n, V, prune=float(rng.choice([0.0, 0.15])))
    pi = rng.dirichlet(np.ones(N))
    steps = tuple(int(s) for s in rng.integers(1, N + 1, L))
    beta = float(rng.choice([1.0, 1.0, 0.7, 1.4]))
    tilt = rng.uniform(0.0, 1.0, lang.vocab_size) if rng.random() < 0.3 else None
    return {"language": lang, "L": L, "pi": pi, "steps": steps, "beta": beta, "tilt": tilt,
            "i": int(rng.integers(1, max(steps) + 1))}


def _tiny_domain(inst) -> None:
    lang = inst["language"]
    require(isinstance(lang, NGram), "the B.* brute-force claims take an NGram language")
    L = inst["L"]
    require(int(L) == L and 1 <= L <= 8, f"L must be an integer in 1..8 (brute force), got {L!r}")
    probability_vector("pi", inst["pi"])
    steps = inst.get("steps")
    if steps is not None:
        require(len(steps) == L and min(steps) >= 1, "steps must give a step >= 1 for each of the L positions")
    require(float(inst.get("beta", 1.0)) > 0, "beta must be > 0")


def _q(inst) -> np.ndarray:
    return table(inst["language"], int(inst["L"]))


def _instance(inst):
    return instance_law(_q(inst), inst["steps"], float(inst.get("beta", 1.0)), inst.get("tilt"))


def _dep_term(inst) -> float:
    """``sum_i (|tau_i| - D_i)`` of the instance."""
    steps, n = inst["steps"], inst["language"].order
    return float(sum(st.new - st.dependencies for st in (step_stats(steps, i, n) for i in range(1, max(steps) + 1))))


def _b2(inst):
    mix = mixture_law(_q(inst), inst["pi"], float(inst.get("beta", 1.0)), inst.get("tilt"))
    return sequence_kl(_q(inst), mix.p), mix.expected_instance_kl


def _b3(inst):
    law = _instance(inst)
    return sequence_kl(_q(inst), law.p), float(law.step_terms.sum())


def _b3_split(inst):
    law = _instance(inst)
    return float(law.step_terms.sum()), float(law.step_tc.sum() + law.step_marginal_kl.sum())


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


_TINY_DOC = (
    "Tiny n-gram (random with V <= 3, L <= 4, or a Table 1 preset with V = 8, L <= 3): q tabulated over V^L, the sampler's law p(.|tau) of every instance "
    "computed exactly (theory.brute) for the oracle tempered by beta (beta = 1: oracle); eps_learning "
    "is the exact max over contexts of KL(q(x_j|x_A) || p_theta(x_j|x_A))."
)
_tiny_params = {"language": "NGram", "L": "length", "pi": "step probabilities", "steps": "instance", "beta": "model temperature"}

register(
    Claim(
        id="B.2",
        atol=ATOL_CANCEL,
        paper="Lemma B.2",
        title="KL(q || p) <= E_tau KL(q || p(.|tau)) (convexity)",
        lhs=KLq(S.tex("q"), S.tex("p")),
        rhs=S.fn("E_tau")(KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))),
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
        lhs=KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)")),
        rhs=S.step_sum(S.fn("E_q")(KLq(S.tex(r"q(x_{\tau_i}|x_{\tau_{<i}})"), S.tex(r"\prod_{j} p_\theta(x_j|x_{\tau_{<i}})")))),
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
        lhs=S.step_sum(S.fn("E_q")(KLq(S.tex(r"q(x_{\tau_i}|x_{\tau_{<i}})"), S.tex(r"\prod_{j} p_\theta(x_j|x_{\tau_{<i}})")))),
        rhs=S.step_sum(S.tex(r"\mathrm{TC}_i") + sp.Sum(S.fn("E_q")(KLq(S.tex("q_j"), S.tex(r"p_{\theta,j}"))), (S.tex("j"), 1, S.tex(r"|\tau_i|")))),
        relation="==",
        evaluate=_b3_split,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC + " Left: expected log-ratio of the step; right: the oracle's total correlation plus the "
        "per-context marginal KLs (summed over the token axis, then averaged over contexts).",
        parameters=_tiny_params,
    )
)
register(
    Claim(
        id="B.8",
        atol=ATOL_CANCEL,
        paper="Lemma B.8",
        title="KL(q || p(.|tau)) <= sum_i (|tau_i| - D_i) log|V| + L eps_learning",
        lhs=KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)")),
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
        lhs=S.fn("E_q")(KLq(S.tex(r"q(x_{\tau_i}|\cdot)"), S.tex(r"\prod_j p_\theta(x_j|\cdot)"))),
        rhs=S.tex(r"(|\tau_i| - D_i)") * sp.log(S.V) + S.tex(r"|\tau_i|") * S.eps_l,
        relation="<=",
        evaluate=_b8_step,
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC,
        parameters=_tiny_params,
    )
)
register(
    Claim(
        id="B.9",
        atol=ATOL_CANCEL,
        paper="Lemma B.9",
        title="KL(q || p) <= E_tau[sum_i (|tau_i| - D_i)] log|V| + L eps_learning",
        lhs=KLq(S.tex("q"), S.tex("p")),
        rhs=Eps_sum * sp.log(S.V) + S.L * S.eps_l,
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
        lhs=S.fn("E_tau")(KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))),
        rhs=Eps_sum * sp.log(S.V) + S.L * S.eps_l,
        relation="<=",
        evaluate=lambda inst: _b9(inst, instance_average=True),
        domain=_tiny_domain,
        generate=_gen_tiny,
        doc=_TINY_DOC,
        free={"pi": "simplex"},
        parameters=_tiny_params,
    )
)


# ---------------------------------------------------------------------------------------------
# B.9 at lengths beyond enumeration: numerics' exact DP over revealed words (oracle, eps = 0)


def _gen_dp(rng: np.random.Generator) -> dict:
    n = int(rng.integers(2, 4))
    L = int(rng.integers(5, 9))
    N = int(rng.integers(2, 7))
    pi = rng.dirichlet(np.full(N, float(rng.choice([0.5, 5.0]))))
    return {"language": random_ngram(rng, n, 2, prune=float(rng.choice([0.0, 0.2]))), "L": L, "pi": pi}


def _dp_domain(inst) -> None:
    require(isinstance(inst["language"], NGram), "B.9.exact-dp takes an NGram language")
    L, V = inst["L"], inst["language"].vocab_size
    require(int(L) == L and 1 <= L and (2 * V + 1) ** L <= 5**10, f"(2V+1)^L too large for the exact DP: V = {V}, L = {L}")
    probability_vector("pi", inst["pi"])


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
        lhs=KLq(S.tex("q"), S.tex("p")),
        rhs=Eps_sum * sp.log(S.V),
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


# ---------------------------------------------------------------------------------------------
# B.9 and Theorem 4.2 at real lengths for token-level Markov chains (n = 2): numerics' exact
# Jensen bound E_tau KL(q || p(.|tau)) by the Markov chain rule (oracle, eps_learning = 0)


def _gen_markov(rng: np.random.Generator) -> dict:
    from numerics.schedules import make_schedule

    if rng.random() < 0.5:
        from numerics.languages.presets import load_language

        lang = load_language("2gram")
    else:
        lang = random_ngram(rng, 2, int(rng.integers(2, 9)))
    L = int(rng.integers(2, 600))
    sched = make_schedule(str(rng.choice(["linear", "cosine"])), int(rng.integers(1, 80)))
    return {"language": lang, "L": L, "pi": sched.pi}


def _markov_domain(inst) -> None:
    lang = inst["language"]
    require(isinstance(lang, NGram) and lang.order == 2, "the Markov-chain-rule claims take a 2-gram language")
    require(int(inst["L"]) == inst["L"] and inst["L"] >= 1, "L must be an integer >= 1")


def _schedule_of(pi) -> Schedule:
    pi = np.asarray(pi, dtype=np.float64)
    u = np.concatenate([[0.0], np.cumsum(pi)])
    u[-1] = 1.0
    return from_u(u, "claim")


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
        lhs=S.fn("E_tau")(KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))),
        rhs=Eps_sum * sp.log(S.V),
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
