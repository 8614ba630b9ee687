"""The marginal-draw decoders' floor as claims: ParallelBench's ``L*_T``, its monotonicity, Chen-Cong-Li's DP above it.

``L*_T`` and the SER floor are the exact optimal decoder's values
(:func:`numerics.exact.optimal_decoder.optimal_decoder`, a DP over revealed sets and values) on
tiny random languages (:func:`theory.related_info.random_language`):

* ``PB.2`` (ParallelBench 2510.04767 Thm 2 [R]): ``L*_{T+1} <= L*_T``;
* ``PB.1.ccl`` ([D], ParallelBench Thm 1 with the oracle, i.e. (I1)): Chen-Cong-Li's optimal
  ``T``-block random-order schedule (the left-Riemann DP on the information curve) is a random
  mixture of ``T``-call decoders, so its expected conditional KL is ``>= L*_T``;
* ``OPT.ser``  ([D], (I3)): the SER floor is at most ``1 - exp(-L*_T)`` (the KL-optimal policy's SER
  obeys the certificate, and the SER floor is at most that policy's SER); vacuous where it is 1;
* ``OPT.plan`` ([D]): the SER floor is at most the best interleaved plan's (the structural floor at any
  ``L`` is an achievable upper bound); ``OPT.draw`` ([D]): the draw-then-select class's SER floor is at
  most the marginal class's.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from numerics.exact.floors import DecoderClass, class_floor
from numerics.exact.floors_structural import ngram_structural_floor
from numerics.exact.joint_table import joint_table
from numerics.exact.markov import MarkovChain
from numerics.exact.optimal_decoder import MAX_STATES, optimal_decoder
from numerics.exact.schedule_opt import block_error, information_curve, optimal_blocks
from numerics.languages.hmm import NGram
from numerics.languages.presets import load_language

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, register, require
from .instances import random_ngram
from .related_adaptive import _domain as _adaptive_domain
from .related_adaptive import _gen as _adaptive_gen
from .related_adaptive import _law as _adaptive_law
from .related_bounds import ccl_geometric_sizes
from .related_info import informations, random_language

__all__: list[str] = []

_params = {"language": "tiny language (n-gram, HMM or Markov chain)", "L": "length", "T": "call budget"}
_DOC = ("L*_T and the SER floor come from the exact optimal decoder (numerics/exact/optimal_decoder.py, checked "
        "against brute force over every policy). ")


def _gen(rng: np.random.Generator) -> dict:
    language, L = random_language(rng, markov_max_length=5, table_max_length=5)
    return {"language": language, "L": L, "T": int(rng.integers(1, L))}


def _domain(inst) -> None:
    L, T = int(inst["L"]), int(inst["T"])
    require(1 <= T < L, f"need 1 <= T < L, got T = {T}, L = {L}")
    require((inst["language"].vocab_size + 1) ** L <= MAX_STATES, "the optimal decoder's state space is too large")


def _floor(inst, metric: str):
    return optimal_decoder(inst["language"], int(inst["L"]), int(inst["T"]) + 1, metric).values


def _pb2(inst):
    v = _floor(inst, "kl")
    T = int(inst["T"])
    return v[T], v[T - 1]


def _ccl(inst):
    T = int(inst["T"])
    curve = information_curve(inst["language"], int(inst["L"]))
    return _floor(inst, "kl")[T - 1], optimal_blocks(curve, T).error(T).value


def _ser(inst):
    T = int(inst["T"])
    return _floor(inst, "ser")[T - 1], -math.expm1(-_floor(inst, "kl")[T - 1])


_L = lambda t: S.fn("L^*")(t)
register(Claim(
    id="PB.2", paper="ParallelBench 2510.04767, Theorem 2 [R]", title="L*_{T+1} <= L*_T: one more call never hurts",
    lhs=_L(S.tex("T") + 1), rhs=_L(S.tex("T")), relation="<=", evaluate=_pb2, domain=_domain, generate=_gen,
    doc=_DOC + "Both sides from one DP.", parameters=_params, atol=ATOL_CANCEL,
))
register(Claim(
    id="PB.1.ccl", paper="ParallelBench Thm 1 with the oracle (I1) vs Chen-Cong-Li 2511.04647's DP [D]",
    title="L*_T <= Chen-Cong-Li's optimal T-block random-order E_sigma KL",
    lhs=_L(S.tex("T")), rhs=S.fn(r"\min_{k_1..k_T} E_\sigma KL")(S.tex("q")), relation="<=", evaluate=_ccl,
    domain=_domain, generate=_gen,
    doc=_DOC + "Right: optimal_blocks on the exact information curve (a random order is a mixture of T-call "
    "decoders, each paying its (I1) sum).", parameters=_params, atol=ATOL_CANCEL,
))
register(Claim(
    id="OPT.ser", paper="the SER certificate (I3) applied to the KL-optimal decoder [D]",
    title="SER floor in T calls <= 1 - exp(-L*_T)",
    lhs=S.fn("SER^*")(S.tex("T")), rhs=1 - sp.exp(-_L(S.tex("T"))), relation="<=", evaluate=_ser, domain=_domain,
    generate=_gen, doc=_DOC + "Vacuous where the right side is 1.", parameters=_params, atol=ATOL_CANCEL,
    vacuous_at=1.0,
))

# ---------------------------------------------------------------------------------------------
# The floor's neighbours (issue 33): the wider draw-then-select class is below it, an interleaved
# plan (numerics/exact/floors_structural.py, the structural floor at any L) above it.


def _plan_gen(rng: np.random.Generator) -> dict:
    n, V = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    L = int(rng.integers(n, 6 if V == 2 else 5))
    return {"language": random_ngram(rng, n, V, prune=float(rng.choice([0.15, 0.3]))), "L": L,
            "T": int(rng.integers(1, L))}


def _plan_domain(inst) -> None:
    _domain(inst)
    require(isinstance(inst["language"], NGram), "an interleaved plan needs an n-gram")


def _plan(inst):
    T = int(inst["T"])
    plan = ngram_structural_floor(inst["language"], int(inst["L"]), T).values[T - 1]
    return _floor(inst, "ser")[T - 1], plan


def _draw_gen(rng: np.random.Generator) -> dict:
    if rng.random() < 0.5:
        return _gen(rng)
    l = int(rng.integers(3, 5))  # one interval of Theorem 4.4's language: seeing the draws helps there
    return {"language": load_language(f"interval-l{l}"), "L": l, "T": int(rng.integers(2, l))}


def _draw(inst):
    T = int(inst["T"])
    cls = DecoderClass("draw-then-select", 1.0)
    return class_floor(inst["language"], int(inst["L"]), T, cls).values[T - 1], _floor(inst, "ser")[T - 1]


def _floor_claim(doc: str, **fields) -> None:
    """Register a ``<=`` claim on the optimal decoder's floor (shared fields written once)."""
    register(Claim(relation="<=", parameters=_params, atol=ATOL_CANCEL, doc=_DOC + doc, **fields))


_floor_claim(
    id="OPT.plan", paper="interleaved plans on n-grams (docs/methods/optimal-decoder.md) [D]",
    title="SER floor in T calls <= the best interleaved plan's SER (the structural floor is an upper bound)",
    lhs=S.fn("SER^*")(S.tex("T")), rhs=S.fn("SER_{plan}")(S.tex("T")), evaluate=_plan, domain=_plan_domain,
    generate=_plan_gen, doc="Right: ngram_structural_floor (numerics/exact/floors_structural.py), an exact forward "
    "pass over the first call's blocks; equal at T = 1.",
)
_floor_claim(
    id="OPT.draw", paper="draw-then-select decoders (docs/methods/optimal-decoder.md) [D]",
    title="draw-then-select SER floor in T calls <= the marginal class's SER floor",
    lhs=S.fn("SER^*_{draw}")(S.tex("T")), rhs=S.fn("SER^*")(S.tex("T")), evaluate=_draw, domain=_domain,
    generate=_draw_gen, doc="Left: class_floor (numerics/exact/floors.py), the DP whose decision sees one draw per "
    "masked position; seeing the draws can only help.",
)

# ---------------------------------------------------------------------------------------------
# Zhao-Cai (2602.20126): KL after K steps is O~(TC/K) or O~(DTC/K); constants and log factors [U]
#
# Their sampler randomizes the block sizes, so its E KL is an average of deterministic-size
# random-order errors and is >= the best K-block one, KL*_K = min_{k_1..k_K} E_sigma KL (Chen-Cong-
# Li's DP on the exact information curve). A bound C TC / K on their sampler therefore needs
# C >= K KL*_K / TC on every instance: that is the direction an order-only bound can be checked in.
# With C = 1 and no log factor: ZC.tc holds on every instance tried (tight at K = 1, where
# KL*_1 = TC); ZC.dtc does not (pinned below), so the DTC form's hidden constant exceeds 1.


def _zc_gen(rng: np.random.Generator) -> dict:
    language, L = random_language(rng, markov_max_length=24, table_max_length=5)
    return {"language": language, "L": L, "K": int(rng.integers(1, L))}


def _zc_gen_k2(rng: np.random.Generator) -> dict:
    while True:
        language, L = random_language(rng, markov_max_length=24, table_max_length=5)
        if L >= 3:
            return {"language": language, "L": L, "K": int(rng.integers(2, L))}


def _zc_domain(inst, k_min: int = 1) -> None:
    L, K = int(inst["L"]), int(inst["K"])
    require(k_min <= K < L, f"need {k_min} <= K < L (Zhao-Cai's range K < L), got K = {K}, L = {L}")


def _best_k_blocks(inst) -> float:
    """``K KL*_K``: ``K`` times the smallest ``K``-block random-order ``E_sigma KL`` (the DP on exact ``Z``)."""
    K = int(inst["K"])
    return K * optimal_blocks(information_curve(inst["language"], int(inst["L"])), K).error(K).value


def _zc(inst, which: str):
    info = informations(inst["language"], int(inst["L"]))  # from subset entropies, never from Z
    return _best_k_blocks(inst), info.tc if which == "tc" else info.dtc


# a sticky two-state token Markov chain where the best two blocks cost 1.58 DTC / 2 (K KL*_K = 1.58 DTC):
# found by a search over random chains with two-decimal entries
_ZC_DTC_COUNTEREXAMPLE = {"language": MarkovChain(np.array([0.85, 0.15]), np.array([[0.99, 0.01], [0.05, 0.95]])),
                          "L": 8, "K": 2}

_zc_params = {"language": "tiny language (n-gram, HMM or Markov chain)", "L": "length", "K": "steps (K < L)"}
_ZC_DOC = ("Zhao-Cai 2602.20126 [R]: randomized unmasking sizes give KL = O~(TC/K) or O~(DTC/K) for K < L; the "
           "size law, constants and log factors were not recovered [U], so the bounds are order-only. Checked in "
           "the one direction that means something without the constant: their E KL is an average over sizes of "
           "deterministic-size errors, hence >= KL*_K (Chen-Cong-Li's DP on the exact information curve, "
           "numerics/exact/schedule_opt.py), so a bound C TC/K needs C >= K KL*_K / TC. Stated here with C = 1 "
           "and no log factor. TC and DTC from subset entropies (theory/related_info.py), never from Z. ")
_KL_star = S.fn(r"KL^*")(S.tex("K"))
register(Claim(
    id="ZC.tc", paper="Zhao-Cai 2602.20126, O~(TC/K) (order-only; checked with constant 1) [R]/[D]",
    title="K KL*_K <= TC: the best K-step random-order schedule already meets TC/K (constant 1, tight at K = 1)",
    lhs=S.tex("K") * _KL_star, rhs=S.tex(r"\mathrm{TC}"), relation="<=", evaluate=lambda inst: _zc(inst, "tc"),
    domain=_zc_domain, generate=_zc_gen, doc=_ZC_DOC + "At K = 1 both sides are TC (sum_j Z_j = TC).",
    parameters=_zc_params, atol=ATOL_CANCEL,
))
register(Claim(
    id="ZC.dtc", paper="Zhao-Cai 2602.20126, O~(DTC/K) with constant 1: false [R]/[D]",
    title="K KL*_K <= DTC for 2 <= K < L: false, so the DTC form's hidden constant exceeds 1",
    lhs=S.tex("K") * _KL_star, rhs=S.tex(r"\mathrm{DTC}"), relation="<=", evaluate=lambda inst: _zc(inst, "dtc"),
    domain=lambda inst: _zc_domain(inst, 2), generate=_zc_gen_k2,
    doc=_ZC_DOC + "At K = 1 no constant works (the copy law, all tokens equal: KL*_1 = TC = (L - 1) DTC), hence "
    "K >= 2 here; with K = 2 a sticky two-state chain at L = 8 needs C >= 1.58 (pinned; docs/findings.md).",
    parameters=_zc_params, atol=ATOL_CANCEL, expect="false", counterexamples=(_ZC_DTC_COUNTEREXAMPLE,),
))

# ---------------------------------------------------------------------------------------------
# From bits to rounds (2511.21103): rounds >= NLL / (information one round can carry)


def _b2r_capacity(inst) -> float:
    """Most predicted entropy one round of the entropy-sum rule reveals: ``max(gamma, log V)`` ('stay':
    the sum stays <= gamma unless one token is forced) or ``gamma + log V`` ('cross': one token past gamma)."""
    g, logv = float(inst["gamma"]), math.log(inst["language"].vocab_size)
    return max(g, logv) if inst["rule"] == "stay" else g + logv


def _b2r(inst):
    law = _adaptive_law(inst)
    return law.expected_iterations_sampler, law.entropy / _b2r_capacity(inst)


register(Claim(
    id="B2R.1", paper="From bits to rounds 2511.21103 [P]/[R], for the entropy-sum rule [D]",
    title="E_p[calls] >= H(p) / c: realized rounds against the NLL budget (c: the most nats a round can carry)",
    lhs=S.fn("E_p")(S.tex("T")), rhs=S.fn("H")(S.tex("p")) / S.tex("c"), relation=">=", evaluate=_b2r,
    domain=_adaptive_domain, generate=_adaptive_gen,
    doc="The entropy-sum rule's exact output law p and its calls T(x) along every reveal path "
    "(theory.related_adaptive.entropy_sum_law, full enumeration). Along the sampler's own path "
    "p(x_D | x_S) = prod_{i in D} q_i(x_i | x_S), so H(p) = E_p sum_t sum_{i in D_t} H(q_i(. | x_S)) exactly, and "
    "each round's sum is at most c = max(gamma, log V) ('stay') or gamma + log V ('cross'): rounds >= NLL / c, "
    "the bits-to-rounds inequality with NLL = E_p[-log p(x)] = H(p). The paper's own capacity term was not "
    "recovered [U]; this is its form for a rule whose per-round information is known.",
    parameters={"language": "full-support language", "L": "length", "gamma": "entropy threshold (nats)",
                "rule": "'cross' or 'stay'"},
    atol=ATOL_CANCEL,
))

# ---------------------------------------------------------------------------------------------
# Frechet-Hoeffding per step (Fast-dLLM++ 2606.02955): P(x*_D jointly) >= 1 - sum_{i in D} (1 - c_i)


def _fh_step(inst) -> tuple[np.ndarray, tuple]:
    """The exact conditional joint of ``X_D`` given ``x_S`` (axes in the order of ``D``) and ``x*_D``."""
    q = joint_table(inst["language"], int(inst["L"]))
    S_ = dict(inst["revealed"])
    D = tuple(inst["D"])
    cond = q[tuple(S_.get(j, slice(None)) for j in range(q.ndim))]  # axes: the masked positions, in order
    masked = [j for j in range(q.ndim) if j not in S_]
    P = cond.sum(axis=tuple(a for a, j in enumerate(masked) if j not in D))
    P = P / P.sum()
    order = [j for j in masked if j in D]
    P = np.transpose(P, [order.index(j) for j in D])
    x_star = tuple(int(np.argmax(P.sum(axis=tuple(b for b in range(len(D)) if b != a)))) for a in range(len(D)))
    return P, x_star


def _fh(inst):
    P, x_star = _fh_step(inst)
    n = len(x_star)
    c = [float(P.sum(axis=tuple(b for b in range(n) if b != a))[x]) for a, x in enumerate(x_star)]
    return float(P[x_star]), 1.0 - sum(1.0 - ci for ci in c)


def _fh_domain(inst) -> None:
    L = int(inst["L"])
    require(inst["language"].vocab_size ** L <= 1 << 12, "V^L <= 4096 (the joint table is enumerated)")
    S_ = dict(inst["revealed"])
    D = tuple(inst["D"])
    require(len(D) >= 1 and len(set(D)) == len(D), "D must be a non-empty set of positions")
    require(all(0 <= j < L and j not in S_ for j in D), "D must be masked positions in 0..L-1")
    q = joint_table(inst["language"], L)
    require(float(q[tuple(S_.get(j, slice(None)) for j in range(L))].sum()) > 0, "x_S must have q(x_S) > 0")


def _fh_gen(rng: np.random.Generator) -> dict:
    language, L = random_language(rng, markov_max_length=5, table_max_length=5)
    q = joint_table(language, L)
    x = np.unravel_index(int(rng.choice(q.size, p=q.ravel() / q.sum())), q.shape)
    S_ = [int(j) for j in np.nonzero(rng.random(L) < rng.uniform(0.0, 0.6))[0]][: L - 1]
    masked = [j for j in range(L) if j not in S_]
    D = [int(j) for j in rng.permutation(masked)[: int(rng.integers(1, len(masked) + 1))]]
    return {"language": language, "L": L, "revealed": tuple((j, int(x[j])) for j in S_), "D": tuple(D)}


register(Claim(
    id="FH.1", paper="Fast-dLLM++ 2606.02955, the Frechet-Hoeffding certificate [R]",
    title="per step: P(X_D = x*_D | x_S) >= 1 - sum_{i in D} (1 - c_i), c_i = max_v P(X_i = v | x_S)",
    lhs=S.fn("P")(S.tex("x^*_D")), rhs=1 - S.tex(r"\sum_{i \in D} (1 - c_i)"), relation=">=", evaluate=_fh,
    domain=_fh_domain, generate=_fh_gen,
    doc="Tiny languages (n-grams, HMMs, Markov chains; V^L small), x_S drawn from q, D a random set of the "
    "masked positions; the exact conditional joint of X_D given x_S from the joint table. Left: the joint "
    "probability of the confidences' argmax values x*_D (greedy parallel decoding is jointly right); right: the "
    "union (Frechet-Hoeffding) bound from the marginal confidences. Vacuous where the right side is <= 0.",
    parameters={"language": "tiny language", "L": "length", "revealed": "((position, value), ...)",
                "D": "positions revealed together"},
    atol=ATOL_CANCEL, vacuous_at=0.0,
))

# ---------------------------------------------------------------------------------------------
# Chen-Cong-Li's geometric TC / DTC schedules next to the DP optimum with as many blocks


def _ccl_dp(inst):
    curve = information_curve(inst["language"], int(inst["L"]))
    sizes = ccl_geometric_sizes(float(inst["eps"]), int(inst["L"]), inst["kind"])
    return optimal_blocks(curve, len(sizes)).error(len(sizes)).value, block_error(curve, sizes).total.value


def _ccl_dp_domain(inst) -> None:
    require(0 < float(inst["eps"]) <= 1, "eps must lie in (0, 1]")
    require(inst["kind"] in ("tc", "dtc"), "kind must be 'tc' or 'dtc'")


register(Claim(
    id="CCL.dp", paper="Chen-Cong-Li 2511.04647: their TC / DTC schedules vs their DP optimum [R]/[D]",
    title="min over T-block schedules of E_sigma KL <= E_sigma KL of the geometric TC / DTC schedule with T blocks",
    lhs=S.fn(r"KL^*")(S.tex("T")), rhs=S.fn(r"E_\sigma KL")(S.tex(r"k^{geo}")), relation="<=", evaluate=_ccl_dp,
    domain=_ccl_dp_domain,
    generate=lambda rng: {**dict(zip(("language", "L"), random_language(rng, markov_max_length=32))),
                          "eps": float(rng.uniform(0.05, 1.0)), "kind": str(rng.choice(["tc", "dtc"]))},
    doc="Both sides on the exact information curve (numerics/exact/schedule_opt.py): the geometric sizes of "
    "theory.related_bounds.ccl_geometric_sizes (factor <= eps) and the DP's best schedule with as many blocks. "
    "The gap is what a schedule built from TC or DTC alone leaves to the language-specific optimum.",
    parameters={"language": "tiny language", "L": "length", "eps": "factor bound", "kind": "'tc' or 'dtc'"},
    atol=ATOL_CANCEL,
))
