"""The exact law of a lossless decoder on a tiny case: its output law and the law of (rounds, calls).

By enumeration of every random choice the decoder makes (``docs/methods/lossless.md``), with every
conditional read from the brute-force joint table (:func:`numerics.exact.joint_table.masked_marginal_table`:
``q(x_j = v | x_obs) = Q[obs, x_j = v] / Q[obs]``), not from the oracle the decoders use:

* :func:`assd_law`: the order of generation (every permutation for ``random``), drafts (``V^w`` a
  round), each drafted token's accept / reject, the residual draw;
* :func:`self_spec_law`: the one path of the greedy rule;
* :func:`autospec_law`: the decoder is a function of its uniforms ``u``; it depends on ``u_j`` only
  through the cell of ``u_j`` among the breakpoints of every law it may invert at position ``j``
  (the CDFs of ``q(x_j | a)`` for every prefix ``a`` with some positions masked, the empty one
  included), so running the decoder once per
  product of cells, at the cell's midpoint, weighted by the cells' lengths, is its exact law;
* :func:`spiffy_law`: the reveal sets and values of every drafted step, the accept / reject of each
  drafted step, and the residual's values.

A decoder is lossless when :attr:`LosslessLaw.p` equals ``q`` (or the base sampler's exact law,
:mod:`numerics.exact.enumerate`): ``tests/numerics/test_lossless.py`` checks that, and that Monte
Carlo of :mod:`numerics.sampling.lossless` fits :attr:`LosslessLaw.cost`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from numerics.exact.joint_table import joint_table, masked_marginal_table
from numerics.inference.queries import PrefixOracle
from numerics.sampling.lossless import ASSD_ORDERS, Autospec, BlockChain, Spiffy, _check_width

__all__ = ["MAX_CELLS", "LosslessLaw", "assd_law", "autospec_law", "self_spec_law", "spiffy_law"]

MAX_CELLS = 1 << 20  # products of u-cells autospec_law runs the decoder on


@dataclass(frozen=True)
class LosslessLaw:
    """The exact law of a lossless decoder on ``(q, L)``.

    Attributes
    ----------
    q : (V,) * L float64
        The language's joint table.
    p : (V,) * L float64
        The decoder's output law.
    cost : dict
        ``{(rounds, calls): probability}``.
    joint : dict
        ``{(output tuple, rounds, calls): probability}``.
    """

    q: np.ndarray
    p: np.ndarray
    cost: dict
    joint: dict

    def expected(self, what: str) -> float:
        """``E[rounds]`` (``what="rounds"``) or ``E[calls]``."""
        i = ("rounds", "calls").index(what)
        return float(sum(k[i] * w for k, w in self.cost.items()))


def _finish(q: np.ndarray, joint: dict) -> LosslessLaw:
    p = np.zeros(q.shape)
    cost: dict = defaultdict(float)
    for (x, rounds, calls), w in joint.items():
        p[x] += w
        cost[(rounds, calls)] += w
    return LosslessLaw(q, p, dict(cost), dict(joint))


class _Table:
    """Conditionals of the joint table: ``cond(obs)`` is ``q(x_j = . | x_obs)`` at the first masked ``j``
    of ``obs`` (a tuple, ``V`` = masked) — or at position ``j`` if given."""

    def __init__(self, language, length: int):
        self.q = joint_table(language, length)
        self.Q = masked_marginal_table(self.q)
        self.V, self.L = self.q.shape[0], length

    def mass(self, obs: tuple) -> float:
        return float(self.Q[obs])

    def cond(self, obs: tuple, j: int) -> np.ndarray:
        den = self.Q[obs]
        if den == 0.0:  # an impossible canvas: the samplers' "uniform" convention
            return np.full(self.V, 1.0 / self.V)
        rows = [self.Q[obs[:j] + (v,) + obs[j + 1:]] for v in range(self.V)]
        return np.array(rows) / den

    def prefix(self, a: tuple) -> tuple:
        return a + (self.V,) * (self.L - len(a))


def assd_law(language, length: int, draft_length: int, order: str = "random") -> LosslessLaw:
    """The exact law of :class:`~numerics.sampling.lossless.Assd` (``k = draft_length``, ``order``) by
    enumeration: for each order of generation ``sigma`` (every permutation, each ``1 / L!``, for
    ``random``; the identity for ``left-to-right``) the drafts, accepts and residual draws."""
    _check_width(draft_length, length, "assd")
    if order not in ASSD_ORDERS:
        raise ValueError(f"assd: unknown order {order!r}; choose one of {ASSD_ORDERS}")
    t = _Table(language, length)
    V, L = t.V, length
    orders = list(itertools.permutations(range(L))) if order == "random" else [tuple(range(L))]

    def put(obs: tuple, j: int, v: int) -> tuple:
        return obs[:j] + (v,) + obs[j + 1:]

    @functools.cache
    def rounds_from(sigma: tuple, obs: tuple) -> dict:
        """``{(output, rounds, calls): prob}`` from the committed positions ``sigma[:p]`` of ``obs``."""
        p = sum(v != V for v in obs)
        if p == L:
            return {(obs, 0, 0): 1.0}
        w = min(draft_length, L - p)
        cost = 1 if w == 1 else 2
        win = sigma[p:p + w]
        marg = [t.cond(obs, j) for j in win]
        nxt: dict = defaultdict(float)
        for y in itertools.product(range(V), repeat=w):
            py = math.prod(marg[m][y[m]] for m in range(w))
            if py == 0.0:
                continue
            stay, cur = 1.0, obs
            for m in range(w):
                c = t.cond(cur, win[m])
                acc = min(1.0, c[y[m]] / marg[m][y[m]])
                if acc < 1.0:
                    resid = np.maximum(c - marg[m], 0.0)
                    for v in range(V):
                        if resid[v] > 0:
                            nxt[put(cur, win[m], v)] += py * stay * (1.0 - acc) * resid[v] / resid.sum()
                stay *= acc
                if stay == 0.0:
                    break
                cur = put(cur, win[m], y[m])
            if stay > 0.0:
                nxt[cur] += py * stay
        out: dict = defaultdict(float)
        for b, w_b in nxt.items():
            for (x, r, c), w_s in rounds_from(sigma, b).items():
                out[(x, r + cost, c + cost)] += w_b * w_s
        return dict(out)

    joint: dict = defaultdict(float)
    for sigma in orders:
        for key, w in rounds_from(sigma, (V,) * L).items():
            joint[key] += w / len(orders)
    return _finish(t.q, dict(joint))


def self_spec_law(language, length: int, draft_length: int) -> LosslessLaw:
    """The exact law (a point mass) of :class:`~numerics.sampling.lossless.SelfSpec`, from the table."""
    _check_width(draft_length, length, "self-spec")
    t = _Table(language, length)
    a: tuple = ()
    calls = 0
    while len(a) < length:
        p = len(a)
        w = min(draft_length, length - p)
        y = tuple(int(np.argmax(t.cond(t.prefix(a), p + m))) for m in range(w))
        for m in range(w):
            yh = int(np.argmax(t.cond(t.prefix(a + y[:m]), p + m)))
            if yh != y[m]:
                y = y[:m] + (yh,)
                break
        a = a + y
        calls += 1 if w == 1 else 2
    return _finish(t.q, {(a, calls, calls): 1.0})


def autospec_law(language, length: int) -> LosslessLaw:
    """The exact law of :class:`~numerics.sampling.lossless.Autospec` by enumerating the cells of its uniforms."""
    t = _Table(language, length)
    V, L = t.V, length
    edges = []
    for j in range(L):
        laws = []  # given any prefix with some positions masked (past an impossible speculated token)
        for a in itertools.product(range(V + 1), repeat=j):
            if t.mass(t.prefix(a)) > 0:
                laws.append(t.cond(t.prefix(a), j))
        cuts = np.unique(np.concatenate([np.cumsum(w)[:-1] / w.sum() for w in laws] + [[0.0, 1.0]]))
        edges.append(cuts[(cuts >= 0.0) & (cuts <= 1.0)])
    n_cells = math.prod(len(e) - 1 for e in edges)
    if n_cells > MAX_CELLS:
        raise ValueError(f"{n_cells} cells of the uniforms exceed MAX_CELLS = {MAX_CELLS}: a tiny case only")
    mids = [(e[1:] + e[:-1]) / 2 for e in edges]
    widths = [np.diff(e) for e in edges]
    grid = np.array(list(itertools.product(*[range(len(m)) for m in mids])))
    u = np.stack([mids[j][grid[:, j]] for j in range(L)], axis=1)
    weight = np.prod(np.stack([widths[j][grid[:, j]] for j in range(L)], axis=1), axis=1)
    run = Autospec.run(PrefixOracle.of(language), u)
    joint: dict = defaultdict(float)
    for x, r, c, w in zip(map(tuple, run.tokens), run.rounds, run.calls, weight):
        joint[(x, int(r), int(c))] += float(w)
    return _finish(t.q, joint)


def spiffy_law(language, length: int, decoder: Spiffy) -> LosslessLaw:
    """The exact law of :class:`~numerics.sampling.lossless.Spiffy` by enumeration (any base)."""
    decoder.check_length(length)
    t = _Table(language, length)
    if decoder.base != "random":
        return _spiffy_chain_law(t, decoder)
    V, L = t.V, length
    r = decoder.reveal_probs()
    N, D = r.size, decoder.draft_length

    def drafts(x: tuple, k: int, d: int, marg: list):
        """Every chain of ``d`` drafted steps from ``x``: ``(prob, [(canvas, revealed set)])``."""
        chains = [(1.0, [], x)]
        for j in range(d):
            out = []
            for w, chain, cx in chains:
                masked = [i for i in range(L) if cx[i] == V]
                for S in itertools.chain.from_iterable(itertools.combinations(masked, s) for s in range(len(masked) + 1)):
                    ps = r[k + j] ** len(S) * (1 - r[k + j]) ** (len(masked) - len(S))
                    if ps == 0.0:
                        continue
                    for vals in itertools.product(range(V), repeat=len(S)):
                        pv = math.prod(marg[i][v] for i, v in zip(S, vals))
                        if pv == 0.0:
                            continue
                        nx = list(cx)
                        for i, v in zip(S, vals):
                            nx[i] = v
                        out.append((w * ps * pv, chain + [(tuple(nx), S)], tuple(nx)))
            chains = out
        return [(w, chain) for w, chain, _ in chains]

    def marginals(x: tuple) -> list:
        return [t.cond(x, i) if x[i] == V else None for i in range(L)]

    cache: dict = {}

    def from_state(x: tuple, k: int) -> dict:
        """``{(final canvas, rounds, calls): prob}`` of the rest, from ``x`` (evaluated) at step ``k``."""
        if k == N:
            return {(x, 0, 0): 1.0}
        key = (x, k)
        if key in cache:
            return cache[key]
        d = min(D, N - k)
        e = d - 1 + (k + d < N)
        marg = marginals(x)
        nxt: dict = defaultdict(float)  # (canvas, step, extra rounds/calls) -> prob
        for w, chain in drafts(x, k, d, marg):
            stay = 1.0
            for j in range(1, d):
                prev, (cur, S) = chain[j - 1][0], chain[j]
                fresh = marginals(prev)
                P = math.prod(fresh[i][cur[i]] for i in S)
                Qv = math.prod(marg[i][cur[i]] for i in S)
                acc = min(1.0, P / Qv)
                if acc < 1.0:
                    combos = list(itertools.product(range(V), repeat=len(S)))
                    pr = np.array([math.prod(fresh[i][v] for i, v in zip(S, c)) for c in combos])
                    qr = np.array([math.prod(marg[i][v] for i, v in zip(S, c)) for c in combos])
                    resid = np.maximum(pr - qr, 0.0)
                    extra = 1 if k + j + 1 < N else 0
                    for c, m in zip(combos, resid):
                        if m > 0:
                            nx = list(prev)
                            for i, v in zip(S, c):
                                nx[i] = v
                            nxt[(tuple(nx), k + j + 1, extra)] += w * stay * (1 - acc) * m / resid.sum()
                stay *= acc
                if stay == 0.0:
                    break
            if stay > 0.0:
                nxt[(chain[d - 1][0], k + d, 0)] += w * stay
        out: dict = defaultdict(float)
        base = 1 if e else 0
        for (nx, nk, extra), w in nxt.items():
            for (fx, rr, cc), w2 in from_state(nx, nk).items():
                out[(fx, rr + base + extra, cc + e + extra)] += w * w2
        cache[key] = dict(out)
        return cache[key]

    start = (V,) * L
    joint = {(x, rr + 1, cc + 1): w for (x, rr, cc), w in from_state(start, 0).items()}
    return _finish(t.q, joint)


def _spiffy_chain_law(t: _Table, decoder: Spiffy) -> LosslessLaw:
    """Spiffy over a block base: every drafted chain of base steps (their law from the stale marginals),
    each drafted step's accept / reject against the fresh marginals, and the residual's states; the
    marginals are the table's (``_Table.cond``), the step laws :meth:`BlockChain.law`."""
    V, L, D = t.V, t.L, decoder.draft_length
    chain = BlockChain(decoder.base_sampler, L, V)

    @functools.cache
    def marginals(codes: tuple) -> np.ndarray:
        return np.array([t.cond(codes, i) if codes[i] == V else np.full(V, 1.0 / V) for i in range(L)])

    @functools.cache
    def law(state: tuple, source: tuple) -> dict:
        """The step law from ``state`` with the marginals of canvas ``source`` (stale or fresh)."""
        return chain.law(state, marginals(source))

    def drafts(state: tuple) -> list:
        """Every drafted chain from ``state``: ``(probability, [states], [stale step laws])``."""
        out, todo = [], [(1.0, [state], [])]
        while todo:
            w, dr, stale = todo.pop()
            if len(stale) == D or chain.done(dr[-1]):
                out.append((w, dr, stale))
                continue
            Q = law(dr[-1], state[0])
            todo.extend((w * p, dr + [s], stale + [Q]) for s, p in Q.items())
        return out

    @functools.cache
    def from_state(state: tuple) -> dict:
        """``{(output, rounds, calls): prob}`` of the rest from ``state`` (its canvas evaluated)."""
        if chain.done(state):
            return {(state[0], 0, 0): 1.0}
        nxt: dict = defaultdict(float)  # (next state, rounds, calls of this round) -> prob
        for w, dr, stale in drafts(state):
            e = len(dr) - 2 + (not chain.done(dr[-1]))  # drafted canvases evaluated in one pass
            r0 = 1 if e else 0
            stay = 1.0
            for j in range(1, len(stale)):
                P, Q, s = law(dr[j], dr[j][0]), stale[j], dr[j + 1]
                acc = min(1.0, P.get(s, 0.0) / Q[s])
                if acc < 1.0:
                    resid = {k: p - Q.get(k, 0.0) for k, p in P.items() if p > Q.get(k, 0.0)}
                    total = sum(resid.values())
                    for k, m in resid.items():
                        extra = 0 if chain.done(k) else 1
                        nxt[(k, r0 + extra, e + extra)] += w * stay * (1.0 - acc) * m / total
                stay *= acc
                if stay == 0.0:
                    break
            if stay > 0.0:
                nxt[(dr[-1], r0, e)] += w * stay
        out: dict = defaultdict(float)
        for (s, r, c), w in nxt.items():
            for (x, rr, cc), w2 in from_state(s).items():
                out[(x, r + rr, c + cc)] += w * w2
        return dict(out)

    joint = {(x, r + 1, c + 1): w for (x, r, c), w in from_state(chain.start()).items()}
    return _finish(t.q, joint)
