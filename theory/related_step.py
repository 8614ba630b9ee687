"""Per-step claims against an exact conditional joint: Fast-dLLM Theorem 1, EB-Sampler's certificate,
and the SER certificate (I3) against the exact output law (docs/theory-related.md).

An instance of the per-step claims is the exact conditional joint ``P`` of ``n`` masked positions
given the revealed ones (a ``(V,)*n`` table, stored flattened so the counterexample search can move
it on the simplex); ``Q`` is the product of its marginals, the parallel sampler's law for that step.
Fast-dLLM writes ``p`` for the joint and ``q`` for the product; here ``KL(P || Q)`` is the same
forward divergence (and equals the step's total correlation).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import entr, rel_entr

from . import symbols as S
from .brute import mixture_law, sequence_kl, table
from .claims import ATOL_CANCEL, Claim, probability_vector, register, require
from .instances import random_ngram
from .related_bounds import (
    eb_certificate,
    fast_dllm_kl_formula,
    fast_dllm_lp_bound,
    fast_dllm_tv_bound,
    ser_certificate,
)

__all__ = ["StepTables", "step_tables"]

MAX_CELLS = 256  # V^n cells of a per-step joint (tiny: the claims enumerate them)


class StepTables:
    """``P`` reshaped, its marginals, ``x*`` (each marginal's argmax), the product ``Q``, ``min_j P_j(x*_j)``."""

    def __init__(self, P: np.ndarray, n: int, V: int) -> None:
        self.P = np.asarray(P, dtype=np.float64).reshape((V,) * n)
        self.marginals = [self.P.sum(axis=tuple(a for a in range(n) if a != j)) for j in range(n)]
        self.x_star = tuple(int(np.argmax(m)) for m in self.marginals)
        Q = np.ones(())
        for m in self.marginals:
            Q = np.multiply.outer(Q, m)
        self.Q = Q
        self.confidence = min(float(m[x]) for m, x in zip(self.marginals, self.x_star))


def step_tables(inst) -> StepTables:
    return StepTables(inst["P"], int(inst["n"]), int(inst["V"]))


def _table_domain(inst) -> None:
    n, V = inst["n"], inst["V"]
    require(int(n) == n and n >= 1 and int(V) == V and V >= 2, "n >= 1 positions and V >= 2 tokens (integers)")
    require(V ** n <= MAX_CELLS, f"V^n must be <= {MAX_CELLS}")
    P = probability_vector("P", inst["P"])
    require(P.size == V ** n, f"P must have V^n = {V ** n} entries, got {P.size}")


def _confidence_domain(inst, n_min: int = 2, greedy: bool = False, fano: bool = False) -> None:
    _table_domain(inst)
    n, V, eps = int(inst["n"]), int(inst["V"]), float(inst["eps"])
    require(n >= n_min, f"the statement is for n >= {n_min} positions")
    require(0 < eps < 1, "eps must lie in (0, 1)")
    t = step_tables(inst)
    require(t.confidence > 1 - eps, f"every marginal must exceed 1 - eps at x*: min_j P_j(x*_j) = {t.confidence!r}")
    if greedy:
        require((n + 1) * eps <= 1, "part (1) needs (n + 1) eps <= 1")
    if fano:
        require(eps <= 1 - 1 / V, "the KL bound's proof needs eps <= 1 - 1/|V| (docs/findings.md)")


def _gen_table(rng: np.random.Generator, eta_max: float, eps_cap) -> dict:
    """``P = (1 - eta) delta_{x*} + eta D`` with ``D`` Dirichlet (peaked, flat or sparse), then ``eps``
    uniform in ``(1 - min_j P_j(x*_j), eps_cap(n, V))`` (resampled until that interval is non-empty)."""
    while True:
        V = int(rng.integers(2, 5))
        n = int(rng.integers(2, {2: 6, 3: 4, 4: 3}[V] + 1))
        alpha = float(rng.choice([0.05, 0.3, 1.0]))
        D = rng.dirichlet(np.full(V ** n, alpha))
        eta = float(rng.uniform(0.0, eta_max))
        P = eta * D
        P[int(rng.integers(0, V ** n))] += 1.0 - eta
        t = StepTables(P, n, V)
        lo, hi = 1.0 - t.confidence, eps_cap(n, V)
        if lo < hi:
            return {"P": P, "n": n, "V": V, "eps": float(lo + (hi - lo) * rng.uniform(0.01, 1.0))}


def _greedy(inst):
    t = step_tables(inst)
    p_star = float(t.P[t.x_star])
    others = np.delete(t.P.ravel(), np.ravel_multi_index(t.x_star, t.P.shape))
    return p_star, float(others.max()) if others.size else 0.0


def _not_vacuous(bound) -> None:
    """A vacuous bound (no better than the trivial one) is outside the domain: never counted as holding."""
    require(not bound.vacuous, f"the bound {bound.value!r} is vacuous (>= {bound.trivial!r}, which always holds)")


def _lp_domain(inst) -> None:
    _confidence_domain(inst)
    _not_vacuous(fast_dllm_lp_bound(int(inst["n"]), float(inst["eps"]), float(inst["p"])))


def _lp(inst):
    t, p = step_tables(inst), float(inst["p"])
    return float(np.sum(np.abs(t.P - t.Q) ** p) ** (1 / p)), fast_dllm_lp_bound(int(inst["n"]), float(inst["eps"]), p).value


def _gen_lp(rng: np.random.Generator) -> dict:
    p = float(rng.choice([1.0, 1.5, 2.0, 3.0]))
    return {**_gen_table(rng, 0.6, lambda n, V: 0.99 * (2 / ((n - 1) ** p + 2 * n)) ** (1 / p)), "p": p}


def _tv_domain(inst) -> None:
    _confidence_domain(inst)
    _not_vacuous(fast_dllm_tv_bound(int(inst["n"]), float(inst["eps"])))


def _tv(inst):
    t = step_tables(inst)
    return 0.5 * float(np.abs(t.P - t.Q).sum()), fast_dllm_tv_bound(int(inst["n"]), float(inst["eps"])).value


def _kl_domain(inst, fano: bool) -> None:
    _confidence_domain(inst, fano=fano)
    n, V = int(inst["n"]), int(inst["V"])
    bound = fast_dllm_kl_formula(n, float(inst["eps"]), V)
    require(bound < (n - 1) * math.log(V), f"the bound {bound!r} is vacuous (>= (n-1) log|V|, which always holds)")


def _kl(inst):
    t = step_tables(inst)
    return float(rel_entr(t.P, t.Q).sum()), fast_dllm_kl_formula(int(inst["n"]), float(inst["eps"]), int(inst["V"]))


def _gen_kl_printed(rng: np.random.Generator) -> dict:
    """Half the instances in the range the proof covers, half with |V| = 2, n = 2 and eps > 1/2,
    where a strongly correlated table breaks the printed bound (docs/findings.md)."""
    if rng.random() < 0.5:
        return _gen_table(rng, 0.6, lambda n, V: min(1 - 1 / V, 0.999))
    rho = float(rng.uniform(0.5, 1.0))
    P = (1 - rho) * rng.dirichlet(np.ones(4)) + rho * np.array([0.5, 0.0, 0.0, 0.5])
    return {"P": P, "n": 2, "V": 2, "eps": float(rng.uniform(max(0.5, 1 - StepTables(P, 2, 2).confidence) + 1e-9, 0.95))}


_FD = ("Fast-dLLM (Wu et al. 2505.22618), Theorem 1: a step decoding n masked positions in parallel from the "
       "product Q of the exact conditional marginals, each with P_j(x*_j) > 1 - eps. ")
_STEP_DOC = ("Random conditional joints P over V^n <= 256 cells: a point mass at a random x* mixed with a "
             "Dirichlet table (peaked, flat or sparse); eps uniform above 1 - min_j P_j(x*_j). Instances where "
             "the bound is vacuous are outside the domain (never counted as holding). ")
_step_params = {"P": "conditional joint, flattened (V,)*n", "n": "positions", "V": "vocabulary", "eps": "confidence gap"}

register(Claim(
    id="FastdLLM.1", paper="Fast-dLLM 2505.22618, Theorem 1 (1) [V]",
    title="(n + 1) eps <= 1 and every P_j(x*_j) > 1 - eps  =>  x* is the argmax of the joint P",
    lhs=S.tex(r"P(x^*)"), rhs=S.tex(r"\max_{x \neq x^*} P(x)"), relation=">=",
    evaluate=_greedy, domain=lambda inst: _confidence_domain(inst, n_min=1, greedy=True),
    generate=lambda rng: _gen_table(rng, 0.5, lambda n, V: 1 / (n + 1)),
    doc=_FD + _STEP_DOC + "x* is also the argmax of the product Q (each marginal's argmax), so P(x*) >= every other "
    "P(x) is the theorem's argmax equality.",
    steps=("FastdLLM.1.lp", "FastdLLM.1.tv", "FastdLLM.1.kl", "FastdLLM.1.kl-fano"),
    free={"P": "simplex"}, parameters=_step_params,
))
register(Claim(
    id="FastdLLM.1.lp", paper="Fast-dLLM 2505.22618, Theorem 1 (2), L_p distance [V]",
    title="||P - Q||_p < ((n-1)^p + 2n)^(1/p) eps (checked as <=)",
    lhs=S.tex(r"\|P - Q\|_p"), rhs=((S.n - 1) ** S.tex("p") + 2 * S.n) ** (1 / S.tex("p")) * S.eps, relation="<=",
    evaluate=_lp, domain=_lp_domain, generate=_gen_lp,
    doc=_FD + _STEP_DOC, free={"P": "simplex"}, parameters={**_step_params, "p": "norm exponent >= 1"},
))
register(Claim(
    id="FastdLLM.1.tv", paper="Fast-dLLM 2505.22618, Theorem 1 (2), total variation [V]",
    title="TV(P, Q) < (3n - 1) eps / 2 (checked as <=)",
    lhs=S.tex(r"\mathrm{TV}(P, Q)"), rhs=(3 * S.n - 1) * S.eps / 2, relation="<=",
    evaluate=_tv, domain=_tv_domain,
    generate=lambda rng: _gen_table(rng, 0.6, lambda n, V: 0.99 * 2 / (3 * n - 1)),
    doc=_FD + _STEP_DOC, free={"P": "simplex"}, parameters=_step_params,
))
_KL_RHS = (S.n - 1) * (S.fn("H_b")(S.eps) + S.eps * S.fn("ln")(S.V - 1))
register(Claim(
    id="FastdLLM.1.kl", paper="Fast-dLLM 2505.22618, Theorem 1 (2), forward KL as printed [V]",
    title="KL(P || Q) < (n-1)(H_b(eps) + eps ln(|V|-1)) for every eps in (0, 1): false for eps > 1 - 1/|V|",
    lhs=S.fn("KL")(S.tex("P"), S.tex("Q")), rhs=_KL_RHS, relation="<=",
    evaluate=_kl, domain=lambda inst: _kl_domain(inst, fano=False),
    generate=_gen_kl_printed, expect="false", counterexamples=({"P": (0.5, 0.0, 0.0, 0.5), "n": 2, "V": 2, "eps": 0.6},),
    doc=_FD + "The printed statement asks only for 'some small eps > 0'. Its proof bounds each H(X_j) by "
    "H_b(eps_j) + eps_j ln(|V|-1) < H_b(eps) + eps ln(|V|-1), which needs this function to increase, i.e. "
    "eps <= 1 - 1/|V|. Counterexample (docs/findings.md): n = 2, |V| = 2, P uniform on {00, 11}, eps = 0.6: "
    "KL = ln 2 = 0.693 > H_b(0.6) = 0.673. Half the generated instances are such correlated tables.",
    free={"P": "simplex"}, parameters=_step_params,
))
register(Claim(
    id="FastdLLM.1.kl-fano", paper="Fast-dLLM 2505.22618, Theorem 1 (2), forward KL with eps <= 1 - 1/|V| [V]/[D]",
    title="KL(P || Q) < (n-1)(H_b(eps) + eps ln(|V|-1)) when eps <= 1 - 1/|V| (checked as <=)",
    lhs=S.fn("KL")(S.tex("P"), S.tex("Q")), rhs=_KL_RHS, relation="<=",
    evaluate=_kl, domain=lambda inst: _kl_domain(inst, fano=True),
    generate=lambda rng: _gen_table(rng, 0.6, lambda n, V: 1 - 1 / V),
    doc=_FD + _STEP_DOC + "KL(P || Q) is the step's total correlation; eps <= 1 - 1/|V| is the range where the "
    "proof's Fano step is valid (and it contains part (1)'s eps <= 1/(n+1)).",
    free={"P": "simplex"}, parameters=_step_params, atol=ATOL_CANCEL,
))


def _eb(inst):
    _table_domain(inst)
    t = step_tables(inst)
    h = [float(entr(m).sum()) for m in t.marginals]
    return float(rel_entr(t.P, t.Q).sum()), eb_certificate(h).value


def _gen_eb(rng: np.random.Generator) -> dict:
    V = int(rng.integers(2, 5))
    n = int(rng.integers(1, {2: 6, 3: 4, 4: 3}[V] + 1))
    P = rng.dirichlet(np.full(V ** n, float(rng.choice([0.05, 0.3, 1.0, 5.0]))))
    return {"P": P, "n": n, "V": V}


register(Claim(
    id="EB.1", paper="EB-Sampler 2505.24857, the entropy-bound certificate [M]",
    title="TC(X_U | x_S) <= sum_{l in U} H_l - max_{l in U} H_l",
    lhs=S.tex(r"\mathrm{TC}(X_U | x_S)"), rhs=S.tex(r"\sum_{l \in U} H_l - \max_{l \in U} H_l"), relation="<=",
    evaluate=_eb, domain=_table_domain, generate=_gen_eb,
    doc="Random conditional joints P of n <= 5 positions (Dirichlet, peaked to flat). Left: KL(P || product of "
    "marginals); right: the certificate from the exact marginal entropies. Exact fact: H(X_U) >= max_l H_l. "
    "Along the entropy-sum rule's trajectories see CaiLi.1.step-tc.",
    free={"P": "simplex"}, parameters={"P": "conditional joint, flattened", "n": "positions", "V": "vocabulary"},
    atol=ATOL_CANCEL,
))

# ---------------------------------------------------------------------------------------------
# the SER certificate (I3) against the exact output law of the oracle sampler


def _ser_domain(inst) -> None:
    L = inst["L"]
    require(int(L) == L and 1 <= L <= 4, "L must be an integer in 1..4 (every step assignment is enumerated)")
    probability_vector("pi", inst["pi"])
    require(len(inst["pi"]) ** L <= 1 << 12, "N^L <= 4096 step assignments")


def _ser(inst, expected: bool = False):
    q = table(inst["language"], int(inst["L"]))
    mix = mixture_law(q, inst["pi"])
    kl = mix.expected_instance_kl if expected else sequence_kl(q, mix.p)
    return 1.0 - mix.valid, ser_certificate(kl).value


def _gen_ser(rng: np.random.Generator) -> dict:
    n, V = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    lang = random_ngram(rng, n, V, prune=float(rng.choice([0.1, 0.2, 0.3])))
    N = int(rng.integers(1, 4))
    return {"language": lang, "L": int(rng.integers(2, 5 if V == 2 else 4)), "pi": rng.dirichlet(np.ones(N))}


_SER_DOC = ("Pruned random n-grams (zeros in every row, so SER > 0), L <= 4, N <= 3: the oracle sampler's exact "
            "output law p by enumerating every step assignment (theory.brute). SER(p) = 1 - p(supp q). (I3): "
            "KL(q || p) = -log p(S) + KL(q || p(.|S)) with S = supp q, so p(S) >= exp(-KL(q || p)).")
_ser_params = {"language": "NGram (pruned)", "L": "length", "pi": "step probabilities"}
register(Claim(
    id="SER.1", paper="SER certificate (I3) [D]", title="SER(p) <= 1 - exp(-KL(q || p))",
    lhs=S.tex(r"\mathrm{SER}(p)"), rhs=1 - S.fn("exp")(-S.fn("KL")(S.tex("q"), S.tex("p"))), relation="<=",
    evaluate=_ser, domain=_ser_domain, generate=_gen_ser, doc=_SER_DOC, steps=("SER.1.expected",),
    free={"pi": "simplex"}, parameters=_ser_params, atol=ATOL_CANCEL,
))
register(Claim(
    id="SER.1.expected", paper="SER certificate (I3) with Lemma B.2 [D]",
    title="SER(p) <= 1 - exp(-E_tau KL(q || p(.|tau)))",
    lhs=S.tex(r"\mathrm{SER}(p)"), rhs=1 - S.fn("exp")(-S.fn("E_tau")(S.fn("KL")(S.tex("q"), S.tex(r"p(\cdot|\tau)")))),
    relation="<=", evaluate=lambda inst: _ser(inst, expected=True), domain=_ser_domain, generate=_gen_ser,
    doc=_SER_DOC + " The expected conditional KL is at least KL(q || p) (Lemma B.2).",
    free={"pi": "simplex"}, parameters=_ser_params, atol=ATOL_CANCEL,
))
