"""The runtimes' rules in the claims registry (issue 30): DUS's step cost, the information-gain score, Fast-dLLM
Theorem 1's tightness.

* ``DUS.1`` [D]: DUS's dilated plan is a fixed ordered partition, so its forward KL is (I1)'s sum of the
  rounds' expected total correlations, ``KL(q || p) = sum_t E_q TC(X_{D_t} | X_{S_t})``, an identity
  (tight by construction). The paper (arXiv 2506.19037) argues that spaced positions are nearly
  independent under a fast-mixing chain; it states no identity and claims no tightness. Left: the
  exact DP of the ``dus`` decoder at ``T = 1``; right: subset entropies of the joint table.
* ``IG.1`` [D]: the information-gain score (arXiv 2602.18176, as ``docs/methods/decoders.md`` reads it) from the
  empty state, ``sum_{j != i} I(X_i; X_j) - H(X_i)``, computed by the rule from conditional marginals
  (``sum_v p_i(v) KL(p_j(. | X_i = v) || p_j)``) equals ``sum_{j != i} (H_i + H_j - H_ij) - H_i`` from subset
  entropies: the score's exact value under the oracle. A definition's value, no tightness question.
* ``FastdLLM.1.tight`` [D]: Theorem 1 (1)'s condition ``(n + 1) eps <= 1`` cannot be relaxed. On ``n`` binary
  positions let ``P(0...0) = 1 - n b`` and ``P(e_j) = b``: every marginal gives ``x*_j = 0`` probability
  ``1 - b > 1 - eps`` for ``b < eps``, and ``P(x*) - max_{x != x*} P(x) = 1 - (n + 1) b``, which tends to 0
  as ``b -> eps = 1/(n+1)`` and is negative for any ``eps > 1/(n+1)`` (take ``1/(n+1) < b < eps``): the
  argmax changes. The authors state the condition without a tightness statement (not recovered: [U]).
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp
from scipy.special import entr

from numerics.exact.decoders import decoder_exact
from numerics.exact.joint_table import joint_table
from numerics.sampling.history_decoders import InfoGain, View, normalized
from numerics.sampling.runtime_decoders import Dus, dilated_rounds

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, register, require
from .instances import random_ngram

__all__: list[str] = []


def _H(q: np.ndarray, keep: tuple[int, ...]) -> float:
    """``H(X_keep)`` in nats from the joint table ``q``."""
    drop = tuple(a for a in range(q.ndim) if a not in keep)
    m = q.sum(axis=drop) if drop else q
    return float(entr(m).sum())


def _tc(q: np.ndarray, D: tuple[int, ...], S_: tuple[int, ...]) -> float:
    """``E_q TC(X_D | X_S) = sum_{i in D} H(X_i | X_S) - H(X_D | X_S)``."""
    HS = _H(q, S_)
    return sum(_H(q, tuple(sorted(S_ + (i,)))) - HS for i in D) - (_H(q, tuple(sorted(S_ + D))) - HS)


def _dus_gen(rng: np.random.Generator) -> dict:
    V = int(rng.integers(2, 4))
    L = 4 if V == 2 else 2
    B = int(rng.choice([2, L]))
    return {"language": random_ngram(rng, 2, V, prune=float(rng.choice([0.0, 0.3]))), "L": L, "B": B}


def _dus_domain(inst) -> None:
    L, B = int(inst["L"]), int(inst["B"])
    require(B >= 2 and B & (B - 1) == 0 and L % B == 0, f"need a power-of-2 block B >= 2 dividing L, got B = {B}")
    require(inst["language"].vocab_size ** L <= 4096, "the joint table is too large")


def _dus(inst):
    L, B = int(inst["L"]), int(inst["B"])
    language = inst["language"]
    lhs = decoder_exact(language, L, Dus(block_length=B, temperature=1.0), "dp").metrics.kl.value
    q = joint_table(language, L)
    rounds = dilated_rounds(B)
    total, shown = 0.0, ()
    for b in range(L // B):
        for t in range(1, int(rounds.max()) + 1):
            D = tuple(b * B + o for o in range(B) if rounds[o] == t)
            total += _tc(q, D, shown)
            shown = tuple(sorted(shown + D))
    return lhs, total


register(Claim(
    id="DUS.1", paper="DUS 2506.19037, dilated unmasking's step cost as (I1) [D]",
    title="KL(q || p_DUS) = sum over DUS's rounds of E_q TC(X_{D_t} | X_{S_t})",
    lhs=S.fn("KL")(S.tex("q"), S.tex("p_{DUS}")),
    rhs=S.tex(r"\sum_t E_q \mathrm{TC}(X_{D_t} | X_{S_t})"), relation="==",
    evaluate=_dus, domain=_dus_domain, generate=_dus_gen,
    doc="Random bigrams (some pruned), L = 4 (V = 2) or 2 (V = 3), blocks of 2 or L. Left: the dus decoder's exact "
    "law by the block decoders' DP (numerics/exact/decoders.py) at T = 1, its forward KL; right: the rounds' "
    "expected total correlations from subset entropies of the joint table. An identity: the paper claims no bound, "
    "so no tightness.", parameters={"language": "tiny bigram", "L": "length", "B": "DUS block (power of 2)"},
    atol=ATOL_CANCEL,
))


def _ig_gen(rng: np.random.Generator) -> dict:
    n, V = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    P = rng.dirichlet(np.full(V**n, float(rng.choice([0.3, 1.0, 5.0]))))
    return {"P": P, "n": n, "V": V, "i": int(rng.integers(0, n))}


def _ig_domain(inst) -> None:
    n, V = int(inst["n"]), int(inst["V"])
    require(np.asarray(inst["P"]).size == V**n, f"P must have V^n = {V ** n} entries")
    require(0 <= int(inst["i"]) < n, f"i must be a position in 0..{n - 1}")
    require(bool(np.all(np.asarray(inst["P"]) > 0)), "a full-support table (every conditional defined)")


def _ig(inst):
    n, V, i = int(inst["n"]), int(inst["V"]), int(inst["i"])
    q = np.asarray(inst["P"], dtype=np.float64).reshape((V,) * n)
    q = q / q.sum()
    marg = np.stack([q.sum(axis=tuple(a for a in range(n) if a != j)) for j in range(n)])

    def cond(pos):
        j = int(pos[0])
        out = []
        for v in range(V):
            sl = q.take(v, axis=j)  # (V,) * (n-1): the table given X_j = v
            rows = []
            for k in range(n):
                if k == j:
                    rows.append(np.eye(V)[v])
                else:
                    kk = k if k < j else k - 1
                    rows.append(sl.sum(axis=tuple(a for a in range(n - 1) if a != kk)))
            out.append(normalized(np.stack(rows)))
        return np.stack(out)[None]

    view = View(marg[None], np.ones((1, n), dtype=bool), np.array([0]), np.array([0]), cond)
    lhs = float(InfoGain(steps=n).scores(view)[0, i])
    Hi = _H(q, (i,))
    rhs = sum(Hi + _H(q, (j,)) - _H(q, tuple(sorted((i, j)))) for j in range(n) if j != i) - Hi
    return lhs, rhs


register(Claim(
    id="IG.1", paper="information-gain sampler 2602.18176, the score under the oracle [D]",
    title="score_i = sum_{j != i} I(X_i; X_j) - H(X_i) from the empty state",
    lhs=S.tex(r"\mathrm{score}_i"), rhs=S.tex(r"\sum_{j \neq i} I(X_i; X_j) - H(X_i)"), relation="==",
    evaluate=_ig, domain=_ig_domain, generate=_ig_gen,
    doc="Random full-support joints of n <= 3 positions. Left: InfoGain.scores (numerics/sampling/history_decoders.py) "
    "from the marginals and the conditional marginals given X_i = v (the rule's own form, "
    "sum_v p_i(v) KL(p_j(. | X_i = v) || p_j)); right: subset entropies. A definition's exact value.",
    parameters={"P": "joint, flattened (V,)*n", "n": "positions", "V": "vocabulary", "i": "the scored position"},
    atol=ATOL_CANCEL,
))


def _tight_gen(rng: np.random.Generator) -> dict:
    n = int(rng.integers(1, 6))
    return {"n": n, "b": float(rng.uniform(0.0, 1.0 / (n + 1)))}


def _tight_domain(inst) -> None:
    n, b = int(inst["n"]), float(inst["b"])
    require(n >= 1, f"need n >= 1 positions, got {n}")
    require(0 <= b < 1 / (n + 1), f"need 0 <= b < 1/(n+1) = {1 / (n + 1):.6g} (Theorem 1's eps = 1/(n+1)), got {b}")


def _tight(inst):
    n, b = int(inst["n"]), float(inst["b"])
    P = np.zeros((2,) * n)
    P[(0,) * n] = 1.0 - n * b
    for j in range(n):
        P[tuple(1 if k == j else 0 for k in range(n))] = b
    star = P[(0,) * n]
    others = max(P[x] for x in itertools.product(range(2), repeat=n) if any(x))
    return float(star - others), 1.0 - (n + 1) * b


register(Claim(
    id="FastdLLM.1.tight", paper="Fast-dLLM 2505.22618, Theorem 1 (1) at eps = 1/(n+1): tightness [D] (authors' [U])",
    title="P(x*) - max_{x != x*} P(x) = 1 - (n+1) b -> 0 as b -> eps = 1/(n+1): the condition is tight",
    lhs=S.tex(r"P(x^*) - \max_{x \neq x^*} P(x)"), rhs=1 - (S.n + 1) * sp.Symbol("b"), relation="==",
    evaluate=_tight, domain=_tight_domain, generate=_tight_gen,
    doc="The table P(0..0) = 1 - n b, P(e_j) = b on n binary positions: every marginal P_j(0) = 1 - b > 1 - eps "
    "for b < eps = 1/(n+1), the theorem's hypothesis; the argmax margin is 1 - (n+1) b, positive there and "
    "tending to 0 at b -> 1/(n+1). For eps > 1/(n+1), b in (1/(n+1), eps) meets the marginal condition with "
    "the argmax elsewhere (margin < 0): the constant cannot be raised.",
    parameters={"n": "positions", "b": "mass of each one-hot sequence"},
))
