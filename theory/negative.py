"""SER results: Lemma C.2, Theorem 4.3 (C.3), Example C.7's error probability, Theorem 4.4 (C.9).

Derived constants (docs/derivations.md):

* Example C.7: under Assumption 4.1 with ``eps_learning = eps``, Pinsker bounds every bit
  marginal of the model within ``delta <= sqrt(eps/2)`` of 1/2; two positions of a fresh pair
  sampled in one step disagree with probability ``1/2 - 2 delta_j delta_k >= 1/2 - eps``, so
  ``p_e = 1/2 - eps > 63/128`` for ``eps < 1/128`` (the paper's value ``1/2 - 2 (1/16)^2``).
* Theorem 4.4: Lemma C.6's bound ``1 - (1 - p_e (1 - (1 - 1/N)^(l-1)))^(L/l)`` exceeds 1/2 for
  ``N <= C L`` exactly when ``C < C_arg``; as ``L -> infinity``
  ``C_arg -> p_e (l-1) / (l log 2)`` (0.5680 for ``l = 5``, ``p_e = 63/128``), but the argument
  gives nothing at ``L = l`` (one interval: the bound is ``p_e < 1/2`` even at ``N = 1``).
* The true threshold: the oracle (a model with ``eps_learning = 0``) on Example C.7 has
  ``SER = 1 - E[2^{-c}]^(L/l)`` exactly; for the linear schedule
  ``E[2^{-c}] = 1 - C(l,2)/(2N) + O(N^-2)`` so ``SER > 1/2`` iff ``N/L < 1/log 2 = 1.4427`` in the
  limit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np
import sympy as sp
from scipy.optimize import minimize
from scipy.special import softmax

from numerics.languages.hmm import HMM

from . import symbols as S
from .brute import instance_law, mixture_law, table
from .claims import ATOL_CANCEL, Claim, probability_vector, register, require
from .collision import collision_probability, interval_validity
from .information import kl
from .kl_chain import _dp_domain, _gen_dp, random_ngram

__all__ = [
    "P_E_PAPER",
    "EPS_MAX",
    "p_e",
    "c9_bound",
    "c9_argument_constant",
    "c9_argument_limit",
    "oracle_ser",
    "true_threshold",
    "best_interval_validity",
    "Threshold",
    "arg_constant_l10",
]

EPS_MAX = Fraction(1, 128)  # Theorem 4.4's hypothesis eps_learning < 1/128
P_E_PAPER = Fraction(1, 2) - 2 * Fraction(1, 16) ** 2  # = 63/128: 1/2 - 2 (sqrt(EPS_MAX/2))^2


def p_e(eps_learning: float) -> float:
    """``p_e = 1/2 - eps_learning``: collision error probability of Example C.7 (module docstring)."""
    require(0 <= eps_learning < 0.5, f"need 0 <= eps_learning < 1/2, got {eps_learning!r}")
    return 0.5 - eps_learning


def c9_bound(N: int, L: int, l: int = 5, pe: float = float(P_E_PAPER)) -> float:
    """Lemma C.6's lower bound on SER used by Theorem 4.4."""
    require(int(N) == N and N >= 1, f"N must be an integer >= 1, got {N!r}")
    require(int(L) == L and L >= 1 and L % l == 0, f"L must be a positive multiple of l = {l}, got {L!r}")
    g = -math.expm1((l - 1) * math.log1p(-1.0 / N)) if N > 1 else 1.0
    return -math.expm1((L // l) * math.log1p(-pe * g))


def _largest_n(L: int, ser_of_n, target: float = 0.5) -> int:
    """Largest ``N >= 1`` with ``ser_of_n(N) > target`` (``ser_of_n`` non-increasing), 0 if none."""
    if not ser_of_n(1) > target:
        return 0
    lo, hi = 1, 2
    while ser_of_n(hi) > target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ser_of_n(mid) > target else (lo, mid)
    return lo


@dataclass(frozen=True)
class Threshold:
    """Largest ``N`` with ``SER > 1/2`` at each ``L`` and the ratios ``C(L) = (N_max(L) + 1) / L``.

    ``C`` is admissible at ``L`` (every ``N <= C L`` gives ``SER > 1/2``) iff ``C < C(L)``.

    Attributes
    ----------
    lengths : (m,) int array
    n_max : (m,) int array
    ratio : (m,) float array
        ``(n_max + 1) / L``.
    constant : float
        ``min`` of ``ratio`` over the lengths: the largest admissible ``C`` for all of them (a supremum).
    limit : float
        The ``L -> infinity`` value of the ratio.
    """

    lengths: np.ndarray
    n_max: np.ndarray
    ratio: np.ndarray
    constant: float
    limit: float


def c9_argument_limit(l: int = 5, pe: float = float(P_E_PAPER)) -> float:
    """``p_e (l-1) / (l log 2)``: the argument's constant as ``L -> infinity``."""
    return pe * (l - 1) / (l * math.log(2))


def c9_argument_constant(lengths, l: int = 5, pe: float = float(P_E_PAPER)) -> Threshold:
    """The largest ``C`` Theorem 4.4's argument supports on the given lengths (:class:`Threshold`)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    nmax = np.array([_largest_n(int(L), lambda N, L=int(L): c9_bound(N, L, l, pe)) for L in lengths])
    ratio = (nmax + 1) / lengths
    return Threshold(lengths, nmax, ratio, float(ratio.min()), c9_argument_limit(l, pe))


def oracle_ser(pi, L: int, l: int = 5) -> float:
    """Exact SER of the oracle sampler on Example C.7: ``1 - E[2^{-c}]^(L/l)``."""
    require(int(L) == L and L >= 1 and L % l == 0, f"L must be a positive multiple of l = {l}, got {L!r}")
    v = float(interval_validity(list(pi), l))
    return -math.expm1((L // l) * math.log(v)) if v > 0 else 1.0


def _uniform_validity(N: int, l: int) -> float:
    return float(interval_validity([1.0 / N] * N, l))


def true_threshold(lengths, l: int = 5, validity=None) -> Threshold:
    """Largest ``N/L`` with exact oracle ``SER > 1/2`` (``validity(N)``: per-interval validity, default linear).

    The limit is ``(l-1) / (4 log 2)`` (``1/log 2`` for ``l = 5``) for the linear schedule (module
    docstring); NaN for a user-given ``validity``.
    """
    default = validity is None
    validity = validity or (lambda N: _uniform_validity(N, l))
    cache: dict[int, float] = {}

    def v(N):
        if N not in cache:
            cache[N] = validity(N)
        return cache[N]

    lengths = np.asarray(lengths, dtype=np.int64)
    nmax = np.array([_largest_n(int(L), lambda N, L=int(L): -math.expm1((L // l) * math.log(v(N)))) for L in lengths])
    ratio = (nmax + 1) / lengths
    limit = (l - 1) / (4 * math.log(2)) if default else float("nan")
    return Threshold(lengths, nmax, ratio, float(ratio.min()), limit)


def best_interval_validity(N: int, l: int = 5, restarts: int = 8, seed: int = 0) -> tuple[float, np.ndarray]:
    """``max over pi`` of ``E_pi[2^{-c}]`` by multi-start L-BFGS on softmax weights (uniform is one start).

    Returns the best value found and its ``pi``. The uniform schedule's value is a lower bound.
    """
    rng = np.random.default_rng(seed)

    def neg(z):
        return -float(interval_validity(list(softmax(z)), l))

    best_val, best_pi = _uniform_validity(N, l), np.full(N, 1.0 / N)
    starts = [np.zeros(N)] + [rng.normal(0, 1.0, N) for _ in range(restarts)]
    for z0 in starts:
        res = minimize(neg, z0, method="L-BFGS-B")
        if -res.fun > best_val:
            best_val, best_pi = -res.fun, softmax(res.x)
    return best_val, best_pi


# ---------------------------------------------------------------------------------------------
# Example C.7's error probability


def _c7_sides(inst):
    l_ = int(inst["l"])
    M = 2 ** (l_ - 1)
    Pj = np.asarray(inst["Pj"], dtype=np.float64)
    Pk = np.asarray(inst["Pk"], dtype=np.float64)
    U = np.full(M, 1.0 / M)
    eps_j, eps_k = kl(U, Pj), kl(U, Pk)
    tokens = np.arange(M)
    pj = float(Pj[(tokens >> int(inst["bit_j"])) & 1 == 1].sum())
    pk = float(Pk[(tokens >> int(inst["bit_k"])) & 1 == 1].sum())
    disagree = pj * (1 - pk) + pk * (1 - pj)
    return {"disagree": disagree, "eps": max(eps_j, eps_k), "eps_j": eps_j, "eps_k": eps_k, "pj": pj, "pk": pk}


def _c7_domain(inst):
    l_ = inst["l"]
    require(int(l_) == l_ and l_ >= 2, f"need an integer l >= 2, got {l_!r}")
    M = 2 ** (int(l_) - 1)
    for name in ("Pj", "Pk"):
        P = probability_vector(name, inst[name])
        require(P.shape == (M,), f"{name} must be a probability vector over the 2^(l-1) = {M} tokens")
    for name in ("bit_j", "bit_k"):
        require(0 <= int(inst[name]) < l_ - 1, f"{name} must index one of the l-1 bits")
    sides = _c7_sides(inst)
    require(sides["eps"] < float(EPS_MAX), f"Theorem 4.4 assumes eps_learning < 1/128; this model has {sides['eps']:.6g}")


def _tilted(rng, M: int, target: float, bit: int, sign: float) -> np.ndarray:
    """A model marginal with KL(uniform || P) = target, tilted towards one value of ``bit`` plus noise."""
    tokens = np.arange(M)
    g = sign * (((tokens >> bit) & 1) * 2.0 - 1.0) + 0.3 * rng.normal(size=M)
    lo, hi = 0.0, 1.0
    U = np.full(M, 1.0 / M)
    while kl(U, softmax(hi * g)) < target:
        hi *= 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if kl(U, softmax(mid * g)) < target else (lo, mid)
    return softmax(lo * g)


def _gen_c7(rng: np.random.Generator) -> dict:
    l_ = int(rng.integers(2, 7))
    M = 2 ** (l_ - 1)
    bj, bk = int(rng.integers(0, l_ - 1)), int(rng.integers(0, l_ - 1))
    sign = float(rng.choice([-1.0, 1.0]))
    eps_target = float(EPS_MAX) * float(rng.uniform(0.01, 0.999))
    return {
        "l": l_,
        "Pj": _tilted(rng, M, eps_target, bj, sign),
        "Pk": _tilted(rng, M, eps_target * float(rng.uniform(0.2, 1.0)), bk, sign if rng.random() < 0.8 else -sign),
        "bit_j": bj,
        "bit_k": bk,
    }


_C7_DOC = (
    "Two positions j, k of an interval, neither revealed, sampled in one step: each bit of their pair "
    "is uniform under q; the model's token marginals Pj, Pk (over 2^(l-1) tokens) satisfy "
    "KL(q_j || Pj) < 1/128 (Assumption 4.1; q_j uniform: the fresh case). Disagreement probability "
    "pj (1 - pk) + pk (1 - pj) from the explicit marginals."
)
_c7_params = {"l": "interval length", "Pj": "model marginal of x_j", "Pk": "model marginal of x_k", "bit_j": "bit of x_j for k", "bit_k": "bit of x_k for j"}

register(
    Claim(
        id="C.7",
        paper="Example C.7",
        title="A collision of a fresh pair is an error with probability >= p_e = 1/2 - 2 (1/16)^2 = 63/128",
        lhs=S.tex(r"P(\mathrm{disagree})"),
        rhs=sp.Rational(1, 2) - 2 * sp.Rational(1, 16) ** 2,
        relation=">=",
        evaluate=lambda inst: (_c7_sides(inst)["disagree"], float(P_E_PAPER)),
        domain=_c7_domain,
        generate=_gen_c7,
        doc=_C7_DOC,
        steps=("C.7.pinsker", "C.7.pair"),
        free={},
        parameters=_c7_params,
    )
)
register(
    Claim(
        id="C.7.pinsker",
        paper="proof of Example C.7 (Pinsker step)",
        title="|P_theta(bit = 1) - 1/2| <= sqrt(eps_learning / 2) < 1/16",
        lhs=sp.Abs(S.tex("p_j") - sp.Rational(1, 2)),
        rhs=sp.sqrt(S.eps_l / 2),
        relation="<=",
        evaluate=lambda inst: (abs(_c7_sides(inst)["pj"] - 0.5), math.sqrt(_c7_sides(inst)["eps_j"] / 2)),
        domain=_c7_domain,
        generate=_gen_c7,
        doc=_C7_DOC,
        parameters=_c7_params,
    )
)
register(
    Claim(
        id="C.7.pair",
        paper="proof of Example C.7 (derived, sharper)",
        title="P(disagree) = 1/2 - 2 delta_j delta_k >= 1/2 - sqrt(eps_j eps_k) >= 1/2 - eps_learning",
        lhs=S.tex(r"P(\mathrm{disagree})"),
        rhs=sp.Rational(1, 2) - S.eps_l,
        relation=">=",
        evaluate=lambda inst: (_c7_sides(inst)["disagree"], 0.5 - _c7_sides(inst)["eps"]),
        domain=_c7_domain,
        generate=_gen_c7,
        doc=_C7_DOC,
        parameters=_c7_params,
    )
)


# ---------------------------------------------------------------------------------------------
# Lemma C.2 and Theorem 4.3 on tiny pruned languages (brute force)


def _random_hmm(rng: np.random.Generator, S_: int, V: int, prune: float) -> HMM:
    def rows(k, m):
        w = rng.dirichlet(np.full(m, 0.6), size=k)
        keep = w >= prune
        keep[np.arange(k), w.argmax(axis=1)] = True
        w = w * keep
        return w / w.sum(axis=1, keepdims=True)

    return HMM(rows(1, S_)[0], rows(S_, S_), rows(S_, V))


#: Pruned presets of numerics.languages.presets used at tiny lengths by the SER generators.
SER_PRESETS = ("2gram-pruned", "3gram-pruned", "hmm-pruned", "interval-l3")


def _gen_ser(rng: np.random.Generator) -> dict:
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 5 if V == 2 else 4))
    kind = rng.random()
    if kind < 0.2:  # the paper's pruned languages and the Theorem 4.4 language (numerics.languages.presets)
        from numerics.languages.presets import load_language

        name = str(rng.choice(SER_PRESETS))
        lang, L = load_language(name), 3 if name == "interval-l3" else 2
    elif kind < 0.6:
        lang = random_ngram(rng, int(rng.integers(2, 4)), V, prune=0.25)
    else:
        lang = _random_hmm(rng, int(rng.integers(1, 4)), V, prune=0.25)
    N = int(rng.integers(1, 4))
    return {
        "language": lang,
        "L": L,
        "pi": rng.dirichlet(np.ones(N)),
        "order": tuple(int(v) for v in rng.permutation(L) + 1),
        "beta": float(rng.choice([1.0, 0.8, 1.25, 1.6])),
        "tilt": rng.uniform(0.0, 1.0, lang.vocab_size) if rng.random() < 0.5 else None,
    }


def _ser_domain(inst):
    L = inst["L"]
    require(int(L) == L and 1 <= L <= 8, f"L must be an integer in 1..8 (brute force), got {L!r}")
    probability_vector("pi", inst["pi"])
    require(float(inst.get("beta", 1.0)) > 0, "beta must be > 0")


def _c2_domain(inst):
    _ser_domain(inst)
    order = inst["order"]
    require(sorted(order) == list(range(1, inst["L"] + 1)), "order must be a permutation of 1..L (one position per step)")


def _c2(inst):
    q = table(inst["language"], int(inst["L"]))
    law = instance_law(q, inst["order"], float(inst.get("beta", 1.0)), inst.get("tilt"))
    return float(law.p[q > 0].sum()), math.exp(-inst["L"] * law.eps)


def _c3(inst, exact_delta: bool):
    q = table(inst["language"], int(inst["L"]))
    pi = np.asarray(inst["pi"], dtype=np.float64)
    mix = mixture_law(q, pi, float(inst.get("beta", 1.0)), inst.get("tilt"))
    L = int(inst["L"])
    delta = float(collision_probability(list(pi), L)) if exact_delta else comb(L, 2) * float(np.sum(pi**2))
    return 1 - mix.valid, 1 - max(1 - delta, 0.0) * math.exp(-L * mix.eps)


def _c2_step(inst):
    Q = np.asarray(inst["Q"], dtype=np.float64)
    P = np.asarray(inst["P"], dtype=np.float64)
    return float(P[Q > 0].sum()), math.exp(-kl(Q, P))


def _gen_c2_step(rng):
    m = int(rng.integers(2, 8))
    Q = rng.dirichlet(np.ones(m)) * (rng.random(m) < 0.6)
    if Q.sum() == 0:
        Q[0] = 1.0
    Q = Q / Q.sum()
    P = rng.dirichlet(np.full(m, float(rng.choice([0.3, 1.0, 5.0]))))
    return {"Q": Q, "P": P}


_SER_DOC = (
    "Model: the oracle tempered by beta and tilted by exp(tilt[token]) (theory.brute). Tiny pruned language (random n-gram or HMM with V <= 3, L <= 4, or a pruned preset of numerics.languages.presets "
    "at L <= 3) tabulated over V^L; the model is the oracle "
    "tempered by beta (theory.brute); eps_learning is the exact max over contexts of the per-token KL."
)
_ser_params = {"language": "NGram or HMM", "L": "length", "pi": "step probabilities", "order": "reveal order", "beta": "model temperature"}

register(
    Claim(
        id="C.2",
        atol=ATOL_CANCEL,
        paper="Lemma C.2",
        title="One position per step: P(valid) >= exp(-L eps_learning)",
        lhs=S.tex(r"P(\mathrm{valid} \mid \tau)"),
        rhs=sp.exp(-S.L * S.eps_l),
        relation=">=",
        evaluate=_c2,
        domain=_c2_domain,
        generate=_gen_ser,
        doc=_SER_DOC + " The instance reveals one position per step in the given order.",
        steps=("C.2.jensen",),
        parameters=_ser_params,
    )
)
register(
    Claim(
        id="C.2.jensen",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.2",
        title="For q supported on A: p(A) >= exp(-KL(q || p)) (Jensen on log)",
        lhs=S.tex("p(A)"),
        rhs=sp.exp(-S.fn("KL")(S.tex("q"), S.tex("p"))),
        relation=">=",
        evaluate=_c2_step,
        domain=lambda inst: require(
            np.asarray(inst["Q"]).shape == np.asarray(inst["P"]).shape, "Q and P must have one shape"
        ),
        generate=_gen_c2_step,
        doc="Explicit finite distributions; A = support of q.",
        free={"Q": "simplex", "P": "simplex"},
    )
)
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


# ---------------------------------------------------------------------------------------------
# Theorem 4.4


def _c9_domain(inst, C_key="C"):
    L, l_ = inst["L"], inst.get("l", 5)
    require(int(L) == L and L >= 1 and L % l_ == 0, f"L must be a positive multiple of l = {l_}, got {L!r}")
    N = len(inst["pi"]) if "pi" in inst else inst["N"]
    C = float(inst[C_key])
    require(1 <= N <= C * L, f"Theorem 4.4 takes N <= C L: N = {N}, C L = {C * L}")


def _gen_c9(rng: np.random.Generator) -> dict:
    L = 5 * int(rng.integers(2, 60))
    C = arg_constant_l10()  # the argument's constant for all L >= 10
    N = int(rng.integers(1, max(1, int(C * L)) + 1))
    w = rng.dirichlet(np.full(N, float(rng.choice([0.5, 5.0, 1e3]))))
    return {"L": L, "l": 5, "pi": w, "N": N, "C": C, "eps_learning": float(EPS_MAX) * float(rng.random())}


def _c9_argument(inst):
    N = len(inst["pi"]) if "pi" in inst else int(inst["N"])
    return c9_bound(N, int(inst["L"]), int(inst.get("l", 5)), p_e(float(inst.get("eps_learning", 0.0)))), 0.5


@functools.lru_cache(maxsize=1)
def arg_constant_l10() -> float:
    """The argument's constant over L = 10, 15, .., 5000 with ``p_e = 63/128`` (L = 5 admits none)."""
    return c9_argument_constant(np.arange(10, 5001, 5)).constant

register(
    Claim(
        id="4.4",
        atol=ATOL_CANCEL,
        paper="Theorem 4.4 / C.9",
        title="N <= C L steps give SER(p) > 1/2 for every schedule (l = 5, |V| = 16, eps_learning < 1/128)",
        lhs=S.tex(r"\mathrm{SER}(p)"),
        rhs=sp.Rational(1, 2),
        relation=">=",
        evaluate=lambda inst: (oracle_ser(inst["pi"], int(inst["L"]), int(inst.get("l", 5))), 0.5),
        domain=_c9_domain,
        generate=_gen_c9,
        doc=(
            "The exact SER of the oracle (an admissible model, eps_learning = 0) on Example C.7 for the given "
            "schedule, with N = len(pi) <= C L and C = the argument's constant (theory.negative.arg_constant_l10). "
            "The strict '>' of the theorem is checked as '>=' plus the reported slack."
        ),
        steps=("4.4.argument",),
        free={"pi": "simplex"},
        parameters={"L": "length (multiple of 5)", "pi": "schedule (or --N)", "C": "the constant"},
        build=lambda **kw: {"L": kw["L"], "l": 5, "pi": kw["pi"], "C": kw.get("C") or arg_constant_l10()},
    )
)
register(
    Claim(
        id="4.4.argument",
        paper="proof of Theorem 4.4",
        title="Lemma C.6 with p_e = 1/2 - eps_learning exceeds 1/2 whenever N <= C_arg L (L >= 10)",
        lhs=1 - (1 - S.p_e * (1 - (1 - 1 / S.N) ** (S.l - 1))) ** (S.L / S.l),
        rhs=sp.Rational(1, 2),
        relation=">=",
        evaluate=_c9_argument,
        domain=_c9_domain,
        generate=_gen_c9,
        doc="Closed form of Lemma C.6's bound against 1/2 (module docstring: C_arg).",
        parameters={"L": "length (multiple of 5)", "N": "steps", "C": "the constant", "eps_learning": "eps_learning"},
        build=lambda **kw: {"L": kw["L"], "l": 5, "N": kw["N"], "C": kw.get("C") or arg_constant_l10(),
                            "eps_learning": kw.get("eps_learning", 0.0)},
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


# ---------------------------------------------------------------------------------------------
# Lemma C.6 / Theorem 4.4's inequality for imperfect models (brute force on Example C.7, l = 3)

TILT_SPREAD_MAX = 0.5  # max(tilt) - min(tilt) < 1/2 bounds every per-token KL by 1/2, so p_e = 1/2 - eps > 0


def _c6_model_domain(inst) -> None:
    probability_vector("pi", inst["pi"])
    l_, L = int(inst["l"]), int(inst["L"])
    require(l_ == 3 and L in (3, 6), "C.6.model is brute force on Example C.7 with l = 3 and L in (3, 6)")
    require(len(inst["pi"]) ** L <= 1 << 10, "N^L too large to enumerate")
    tilt = np.asarray(inst["tilt"], dtype=np.float64)
    require(tilt.shape == (4,) and float(tilt.max() - tilt.min()) < TILT_SPREAD_MAX,
            f"tilt must be 4 numbers with spread < {TILT_SPREAD_MAX} (eps_learning < 1/2)")


def _c6_model(inst):
    from numerics.languages.interval import IntervalLanguage

    l_, L = int(inst["l"]), int(inst["L"])
    pi = np.asarray(inst["pi"], dtype=np.float64)
    q = table(IntervalLanguage(l_), L)
    mix = mixture_law(q, pi, 1.0, inst["tilt"])
    N = pi.size
    pe = 0.5 - mix.eps
    bound = 1 - (1 - pe * (1 - (1 - 1 / N) ** (l_ - 1))) ** (L // l_)
    return 1 - mix.valid, bound


def _gen_c6_model(rng: np.random.Generator) -> dict:
    L = int(rng.choice([3, 3, 6]))
    N = int(rng.integers(1, 4 if L == 6 else 6))
    return {"l": 3, "L": L, "pi": rng.dirichlet(np.ones(N)),
            "tilt": rng.uniform(0, TILT_SPREAD_MAX * float(rng.uniform(0.05, 0.999)), 4)}


register(
    Claim(
        id="C.6.model",
        atol=ATOL_CANCEL,
        paper="proof of Lemma C.6 (imperfect models, p_e = 1/2 - eps_learning)",
        title="Example C.7 (l = 3), tilted models: SER(p) >= 1 - (1 - (1/2 - eps)(1 - (1 - 1/N)^(l-1)))^(L/l)",
        lhs=S.tex(r"\mathrm{SER}(p)"),
        rhs=1 - (1 - (sp.Rational(1, 2) - S.eps_l) * (1 - (1 - 1 / S.N) ** (S.l - 1))) ** (S.L / S.l),
        relation=">=",
        evaluate=_c6_model,
        domain=_c6_model_domain,
        generate=_gen_c6_model,
        doc=(
            "Brute force on Example C.7 with l = 3 (V = 4) at L = 3, 6: the model is the oracle tilted by "
            "exp(tilt[token]) (theory.brute), eps_learning its exact max per-token KL; Lemma C.6 with "
            "Example C.7's p_e = 1/2 - eps_learning against the exact SER of the model's mixture law."
        ),
        free={"pi": "simplex", "tilt": "unitvec"},
        parameters={"l": "3", "L": "3 or 6", "pi": "step probabilities", "tilt": "token tilt (4 numbers)"},
    )
)
