"""The runtimes' rules in the claims registry (issue 30): DUS's step cost, the information-gain score, Fast-dLLM
Theorem 1's tightness, the first reveals of a confidence decoder, AATU's anchor.

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
* ``Prox.1`` [D]: the first revealed position of LLaDA's low-confidence rule (``T = 1``, ``N = L``, the oracle) has
  the law ``P(i_1 = i) = sum_v p_i(v) prod_{j != i} P(s_j < p_i(v))`` (ties by the rule's order): the exact DP's
  own step against the closed form from the marginals.
* ``Prox.2`` [R], found false for the rule: arXiv 2604.10567 reports a proximity bias of confidence decoding in
  trained dLLMs (the order concentrates on adjacent tokens; the trajectory hinges on the first position), with no
  bound. Read as ``P(|i_2 - i_1| = 1) >= 2/L`` (random order's value), the rule with exact marginals breaks it on
  many random bigrams (pinned: a chain where it is ``1/4 < 2/3``): the bias is not the confidence rule's alone.
* ``AATU.1`` [R]: AATU (arXiv 2509.21835v2) reaches eps-free TV with ``O(L ln L)`` score evaluations (constant
  and any tightness statement not recovered). Its anchor in the engine: the random-order sampler revealing one position
  a step is exact (TV = 0) with exactly ``L`` calls under the oracle.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp
from scipy.special import entr

from numerics.exact.decoders import _log_draw_law, _transitions, decoder_exact
from numerics.exact.joint_table import joint_table
from numerics.languages.hmm import NGram
from numerics.sampling.adaptive import on_grid
from numerics.sampling.block_decoder import Llada, step_rows
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


# -- the first reveals of a confidence decoder (proximity bias, arXiv 2604.10567) ----------------------------


def _prox_gen(rng: np.random.Generator) -> dict:
    V = int(rng.integers(2, 4))
    L = int(rng.integers(3, 6)) if V == 2 else 3
    return {"language": random_ngram(rng, 2, V, prune=float(rng.choice([0.0, 0.2]))), "L": L,
            "i": int(rng.integers(0, L))}


def _prox_domain(inst) -> None:
    L = int(inst["L"])
    require(L >= 2, f"need L >= 2 positions (a second reveal), got {L}")
    require(0 <= int(inst.get("i", 0)) < L, f"i must be a position in 0..{L - 1}")
    require(inst["language"].vocab_size ** L <= 4096, "the joint table is too large")


def _llada_top1(L: int) -> Llada:
    """LLaDA's low-confidence rule at ``T = 1``, one block, ``N = L``: one position a step."""
    return Llada(steps=L, temperature=1.0, remasking="low-confidence")


def _conditional_rows(q: np.ndarray, shown: dict[int, int], cand: np.ndarray) -> np.ndarray:
    """``q(X_j = . | x_shown)`` for the candidates ``cand`` (rows ``(m, V)``, uniform where undefined)."""
    sl = q[tuple(shown.get(a, slice(None)) for a in range(q.ndim))]
    free = [a for a in range(q.ndim) if a not in shown]
    total = sl.sum()
    V = q.shape[0]
    if total <= 0:
        return np.full((cand.size, V), 1.0 / V)
    return np.stack([sl.sum(axis=tuple(k for k, a in enumerate(free) if a != j)) / total for j in cand])


def _engine_reveal(q: np.ndarray, shown: dict[int, int], decoder: Llada) -> dict[tuple[int, int], float]:
    """The law of the next revealed ``(position, value)`` from the state ``x_shown``, by the exact DP's own step
    (:func:`numerics.exact.decoders._transitions`, every draw through the rule's batched selection)."""
    L = q.ndim
    cand = np.array([j for j in range(L) if j not in shown], dtype=np.int64)
    rows = step_rows(_conditional_rows(q, shown, cand), decoder.temperature)
    out: dict[tuple[int, int], float] = {}
    for w, _, D, vals in _transitions(decoder, rows, _log_draw_law(rows.probs, decoder.temperature),
                                      decoder.priority(L)[cand], len(shown), decoder.fixed_steps(L)):
        require(D.size == 1, f"one position a step at N = L, the rule revealed {D.size}")
        key = (int(cand[D[0]]), int(vals[0]))
        out[key] = out.get(key, 0.0) + w
    return out


def _closed_reveal(q: np.ndarray, shown: dict[int, int], prio: np.ndarray) -> dict[tuple[int, int], float]:
    """The same law in closed form: ``P(i, v) = p_i(v) prod_{j != i} P_j(score_j loses to p_i(v))``, a draw
    ``w`` at ``j`` losing when ``p_j(w) < p_i(v)`` on the rule's grid, or equal with ``j`` later in the tie
    order."""
    L = q.ndim
    cand = [j for j in range(L) if j not in shown]
    p = _conditional_rows(q, shown, np.asarray(cand, dtype=np.int64))
    g = on_grid(p)
    out = {}
    for a, i in enumerate(cand):
        for v in range(q.shape[0]):
            lose = [p[b][(g[b] < g[a, v]) | ((g[b] == g[a, v]) & (prio[j] > prio[i]))].sum()
                    for b, j in enumerate(cand) if j != i]
            out[i, v] = float(p[a, v] * np.prod(lose))
    return out


def _first_reveal(inst, engine: bool = True) -> np.ndarray:
    """``P(first revealed position = i)``, ``i = 0..L-1``."""
    L = int(inst["L"])
    q = joint_table(inst["language"], L)
    law = _engine_reveal(q, {}, _llada_top1(L)) if engine else _closed_reveal(q, {}, _llada_top1(L).priority(L))
    out = np.zeros(L)
    for (i, _), w in law.items():
        out[i] += w
    return out


def _prox1(inst):
    i = int(inst["i"])
    return float(_first_reveal(inst)[i]), float(_first_reveal(inst, engine=False)[i])


def adjacent_second_reveal(language, L: int, engine: bool = True) -> float:
    """``P(|i_2 - i_1| = 1)``: the second revealed position next to the first, LLaDA low-confidence at ``T = 1``,
    ``N = L``, one block, under the oracle (exactly: both steps' laws summed over the first ``(i_1, v)``)."""
    q = joint_table(language, L)
    dec = _llada_top1(L)

    def step(shown):
        return _engine_reveal(q, shown, dec) if engine else _closed_reveal(q, shown, dec.priority(L))

    return float(sum(w * sum(w2 for (i2, _), w2 in step({i1: v}).items() if abs(i2 - i1) == 1)
                     for (i1, v), w in step({}).items()))


def _prox2(inst):
    L = int(inst["L"])
    return adjacent_second_reveal(inst["language"], L), 2.0 / L


_PROX_PARAMS = {"language": "tiny bigram", "L": "length", "i": "a position (Prox.1)"}

register(Claim(
    id="Prox.1", paper="confidence decoders' first reveal (arXiv 2604.10567's proximity bias), its exact law [D]",
    title="P(i_1 = i) = sum_v p_i(v) prod_{j != i} P(the draw at j scores below p_i(v)): LLaDA low-confidence, T = 1",
    lhs=S.fn("P")(sp.Eq(sp.Symbol("i_1"), sp.Symbol("i"))),
    rhs=S.tex(r"\sum_v p_i(v) \prod_{j \neq i} P(s_j \prec p_i(v))"), relation="==",
    evaluate=_prox1, domain=_prox_domain, generate=_prox_gen,
    doc="Random bigrams (some pruned), V = 2 at L = 3..5 or V = 3 at L = 3; the llada decoder, low-confidence "
    "remasking, T = 1, one block, N = L (one position a step), the oracle. Left: the first step's law by the exact "
    "DP's own step (numerics/exact/decoders.py: every draw through the rule's batched selection); right: the closed "
    "form from the marginals, a draw w at j scoring below p_i(v) when p_j(w) < p_i(v) on the rule's grid or equal "
    "with j later in the tie order. An identity, no tightness question.",
    parameters=_PROX_PARAMS, atol=ATOL_CANCEL,
))

#: Position 1 is a fair coin given x_1 = 0, position 2 leans to 1 (3/4): the second reveal jumps over position 1
#: unless the draw at 2 is its 1/4 value, so P(adjacent) = 1/4 < 2/3 (x_1 is certain: revealed first).
_JUMP = NGram(2, np.array([1.0, 0.0]), np.array([[0.5, 0.5], [0.0, 1.0]]))

register(Claim(
    id="Prox.2", paper="proximity bias (arXiv 2604.10567) under the oracle: the second reveal next to the first "
    "at least as often as in random order [R, found false for the rule alone]",
    title="P(|i_2 - i_1| = 1) >= 2/L (random order's value): LLaDA low-confidence, T = 1, N = L, the oracle",
    lhs=S.fn("P")(sp.Eq(sp.Abs(sp.Symbol("i_2") - sp.Symbol("i_1")), 1)), rhs=2 / S.L, relation=">=",
    evaluate=_prox2, domain=_prox_domain, generate=_prox_gen,
    doc="The paper (abstract) finds on trained dLLMs that confidence-based decoding concentrates its denoising order "
    "on spatially adjacent tokens, so the trajectory depends on the first unmasked position; it states no bound "
    "(no tightness claim). Read as: the second reveal is adjacent to the first at least as often as in a uniformly "
    "random order (2/L). Left: both steps' exact laws (the DP's step, as Prox.1) summed over the first (i_1, v). "
    "Found false for the rule with exact marginals: on random bigrams the rule often jumps to the sharper far "
    "marginal (pinned: a chain whose second position is a fair coin, P = 1/4 < 2/3), so the bias, where trained "
    "models show it, is not the confidence rule's alone.",
    parameters=_PROX_PARAMS, expect="false", counterexamples=({"language": _JUMP, "L": 3, "i": 0},),
))


# -- AATU's score evaluations (arXiv 2509.21835v2) as an anchor of the random-order sampler at N = L --------


def _aatu_gen(rng: np.random.Generator) -> dict:
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 7)) if V == 2 else int(rng.integers(2, 5))
    return {"language": random_ngram(rng, int(rng.choice([2, 3])), V, prune=float(rng.choice([0.0, 0.3]))), "L": L}


def _aatu_domain(inst) -> None:
    L = int(inst["L"])
    require(L >= 1, f"need L >= 1, got {L}")
    require((inst["language"].vocab_size + 1) ** L <= 4096, "the exact DP's states are too many")


def one_at_a_time_law(language, L: int):
    """The exact law (:class:`~numerics.exact.decoders.DecoderExact`) of the random-order sampler at ``N = L``
    steps revealing one uniformly random masked position each (``llada`` with random remasking, ``T = 1``)."""
    return decoder_exact(language, L, Llada(steps=L, temperature=1.0, remasking="random"), "dp")


def _aatu(inst):
    return float(one_at_a_time_law(inst["language"], int(inst["L"])).divergences.tv.value), 0.0


register(Claim(
    id="AATU.1", paper="AATU uniformization 2509.21835v2: eps-free TV in O(L ln L) score evaluations; the "
    "random-order sampler at N = L as its anchor [R]",
    title="TV(q, p) = 0 for the random-order sampler revealing one position a step, N = L calls",
    lhs=S.fn("TV")(S.tex("q"), S.tex(r"p_{N=L}")), rhs=sp.Integer(0), relation="<=",
    evaluate=_aatu, domain=_aatu_domain, generate=_aatu_gen, atol=ATOL_CANCEL,
    doc="AATU (v2, as docs/theory-related.md reads it) simulates the masked reverse chain by uniformization with "
    "O(L ln L) score evaluations and no discretization error (eps-free TV, up to the score's own error; the "
    "constant is not recovered, nor any tightness statement: [U]). With exact scores (the oracle) the "
    "one-position-a-step random order is exact with exactly L calls, inside that budget: under the oracle "
    "exactness itself needs no ln L factor. Left: TV of the exact law by the block decoders' DP (llada, random "
    "remasking, N = L, T = 1) on random 2- and 3-grams (some pruned); its expected calls are L (AATU.1.calls). "
    "The paper's i.i.d.-reveal sampler at N = L is not exact (two positions can share a "
    "step): the anchor is the one-a-step order.",
    parameters={"language": "tiny n-gram", "L": "length"}, steps=("AATU.1.calls",),
))
register(Claim(
    id="AATU.1.calls", paper="proof of AATU.1's anchor: its calls [D]",
    title="E[calls] = L for the random-order sampler revealing one position a step (N = L)",
    lhs=S.fn("E")(S.tex(r"\mathrm{calls}")), rhs=S.L, relation="==",
    evaluate=lambda inst: (float(one_at_a_time_law(inst["language"], int(inst["L"])).expected_calls.value),
                           float(inst["L"])),
    domain=_aatu_domain, generate=_aatu_gen,
    doc="Left: the expected calls of the same exact law (the block decoders' DP); right: L. Every run costs L "
    "calls, within AATU's O(L ln L) for any constant c >= 1 / ln 3 at L >= 3 (the constant is not recovered: "
    "no comparison is checked).",
    parameters={"language": "tiny n-gram", "L": "length"},
))
