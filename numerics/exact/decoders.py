"""Exact output law, divergences and expected calls of the decoders (:mod:`numerics.sampling.decoders`) on tiny languages.

With the oracle denoiser each decoder is a Markov chain on partial states ``(S, x_S)``:

* ``llada`` / ``fast-dllm`` / ``eb`` reveal only, block by block. At a state the candidates are
  the masked positions ``M`` of the current block; the step's outcome is a function of the draws
  ``y in V^M`` (probability ``prod_j r_j(y_j)``, ``r_j`` the tempered marginal) and, for
  ``random`` scores, of a uniformly random ``k``-subset. Where the selection depends on the draws
  (``low-confidence`` at ``T > 0``) the law needs the sum over all ``V^|M|`` draws: a revealed
  value is then *not* distributed as its marginal.
* ``remdm`` remasks, so the chain is not monotone: its law is propagated over all ``(V+1)^L``
  partial states for ``N`` steps; every step's transition factorizes over positions given the
  state (reveal with probability ``reveal_i`` and draw from ``r_j``; remask with ``sigma_i``).

Two independent methods per decoder, sharing nothing but the rule's step
(:meth:`BlockDecoder.select` / :func:`remdm_probabilities`):

* ``dp`` -- a forward pass over reachable states with conditionals read off the masked marginal
  table ``Q`` (:mod:`numerics.exact.joint_table`); block decoders split the step by case
  (random subsets, draw-dependent selection, fixed selection) and enumerate only what each needs;
  ReMDM builds each state's successor law as an outer product of its per-position rows.
* ``enumerate`` -- block decoders: for every output ``x`` a recursion over revealed sets
  ``f(S) = sum_{y, D} w(y, D) [y_D = x_D] f(S u D)`` enumerating all ``V^|M|`` draws (and all
  subsets for ``random`` scores) with marginals summed from the flat table of sequences;
  ReMDM: the full transition matrix of each step built entry by entry from per-position
  factors (a gather over the digit table), then matrix-vector products.

A rule with per-step counts (``llada``, with or without its ``threshold`` floor) reads its count by
the step within the block, which the state carries (``(code, step)``; a state of the floor can be
reached after different numbers of steps); the other block rules carry step 0.

Undefined branches: the ``"uniform"`` convention of :mod:`numerics.exact.output_law` (the
samplers' convention; ``p`` sums to 1). Sizes beyond the limits are refused before any work.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.divergences import Divergences, law_divergences
from numerics.exact.joint_table import all_sequences, as_table, masked_marginal_table
from numerics.exact.output_law import ExactMetrics, OutputLaw, law_metrics
from numerics.sampling.decoders import (
    BlockDecoder,
    Remdm,
    StepRows,
    step_rows,
    tempered,
)

__all__ = [
    "MAX_DP_WORK",
    "MAX_ENUMERATE_WORK",
    "MAX_REMDM_STATES",
    "METHODS",
    "DecoderExact",
    "decoder_dp",
    "decoder_enumerate",
    "decoder_exact",
    "remdm_dp",
    "remdm_enumerate",
]

METHODS = ("dp", "enumerate")
MAX_DP_WORK = 1 << 22  # (V+1)^L states times V^B draws per state
MAX_ENUMERATE_WORK = 1 << 18  # V^L outputs times 2^L revealed sets times V^B draws (a Python loop each)
MAX_REMDM_STATES = 1 << 11  # (V+1)^L partial states; a step costs states^2


@dataclass(frozen=True)
class DecoderExact:
    """The exact law and metrics of one oracle decoder on ``(q, L)``.

    Attributes
    ----------
    law : OutputLaw
        ``p`` under the ``"uniform"`` convention; ``method`` says how.
    metrics : ExactMetrics
        Forward KL, TER, SER, certificate, generative perplexity (:func:`law_metrics`).
    divergences : Divergences
        Reverse KL ``KL(p || q)`` and ``TV(p, q)`` (:func:`law_divergences`).
    expected_calls : Estimate
        ``E[calls]``, network calls per sequence (``N`` for ``llada`` and ``remdm``).
    n_states : int
        States visited (``dp``) or recursion nodes (``enumerate``).
    """

    law: OutputLaw
    metrics: ExactMetrics
    divergences: Divergences
    expected_calls: Estimate
    n_states: int


def _finish(q, p, method, decoder, calls, n_states, undefined_mass=0.0, log_p=None) -> DecoderExact:
    p = np.asarray(p, dtype=np.float64).reshape(q.shape)
    p.setflags(write=False)
    law = OutputLaw(q, p, float(undefined_mass), method, decoder.label, "uniform")
    metrics = _greedy_metrics(law) if decoder.temperature == 0 else law_metrics(law, log_p=log_p)
    return DecoderExact(law, metrics, law_divergences(law), Estimate(float(calls), 0.0, method), n_states)


def _greedy_metrics(law: OutputLaw) -> ExactMetrics:
    """:func:`law_metrics` for a greedy (``T = 0``) decoder, whose ``p`` may be 0 on ``supp q`` by design.

    Where it is, ``KL(q || p) = inf`` (so TER ``inf``, certificate 1); SER and generative
    perplexity as usual. Elsewhere :func:`law_metrics` itself (with its underflow guard).
    """
    q, p = law.q.ravel(), law.p.ravel()
    if not np.any(p[q > 0] == 0):
        return law_metrics(law)
    base = law_metrics(OutputLaw(law.q, law.q, 0.0, law.method, law.schedule, law.undefined))  # q's own numbers
    L, m = law.length, law.method
    ser = float(p[q == 0].sum())
    gen = math.inf if ser > 0 else math.exp(float(-np.sum(p[q > 0] * np.log(q[q > 0]))) / L)
    inf = Estimate(math.inf, 0.0, m)
    return ExactMetrics(kl=inf, log_ter_gap=inf, ter=inf, ter_data=base.ter_data, ser=Estimate(ser, 0.0, m),
                        ser_kl_certificate=Estimate(1.0, 0.0, m), gen_ppl=Estimate(gen, 0.0, m),
                        gen_ppl_data=base.gen_ppl_data)


class _Setup(NamedTuple):
    """What both exact methods of a block decoder start from (sizes checked before the table is built)."""

    q: np.ndarray  # (V,) * L joint table
    V: int
    L: int
    B: int  # block length
    fixed: np.ndarray | None  # LLaDA's per-step counts in a block, None for the other rules
    prio: np.ndarray  # tie priority of each position


def _block_setup(language: Any, length: int | None, decoder: BlockDecoder, method: str) -> _Setup:
    _check_block_size(decoder, *_sizes(language, length), method)
    q = as_table(language, length)
    L = q.ndim
    fixed = decoder.fixed_steps(L)
    return _Setup(q, q.shape[0], L, decoder.block_of(L), fixed, decoder.priority(L))


def _next_step(fixed, step: int, revealed: int, candidates: int) -> int:
    """The step within the block after one that revealed ``revealed`` of ``candidates`` (0: a new block,
    or a rule without per-step counts)."""
    return 0 if fixed is None or revealed == candidates else step + 1


def _fixed_calls(decoder: BlockDecoder, fixed) -> float | None:
    """The calls of a rule that runs every block's steps (LLaDA without its floor): ``N``; else ``None``."""
    return float(decoder.steps) if fixed is not None and not decoder.stops_when_empty else None


def _sizes(language: Any, length: int | None) -> tuple[int, int]:
    """``(V, L)`` of a language or table, without building the table (sizes are checked first)."""
    if isinstance(language, np.ndarray):
        return int(language.shape[0]), int(language.ndim)
    if length is None or int(length) != length or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    return int(language.vocab_size), int(length)


def _check_block_size(decoder: BlockDecoder, V: int, L: int, method: str) -> None:
    B = decoder.block_of(L)
    work = (V + 1) ** L * V**B if method == "dp" else V**L * 2**L * V**B
    limit = MAX_DP_WORK if method == "dp" else MAX_ENUMERATE_WORK
    if work > limit:
        raise ValueError(f"the exact {decoder.name} law by {method} needs about {work} steps of work "
                         f"(V = {V}, L = {L}, B = {B}), beyond the limit {limit}; use Monte Carlo")


def decoder_dp(language: Any, length: int | None, decoder: BlockDecoder) -> DecoderExact:
    """Forward pass over reachable states of a block decoder (module docstring)."""
    if isinstance(decoder, Remdm):
        return remdm_dp(language, length, decoder)
    q, V, L, B, fixed, prio = _block_setup(language, length, decoder, "dp")
    Qf = masked_marginal_table(q).ravel()
    base = (V + 1) ** np.arange(L - 1, -1, -1, dtype=np.int64)
    vv = np.arange(V)
    layers: list[dict[tuple[int, int], list[float]]] = [dict() for _ in range(L + 1)]
    # (code, step in block): [mass, mass * calls so far, log mass]
    layers[0][int(V * base.sum()), 0] = [1.0, 0.0, 0.0]
    undefined_mass = 0.0
    n_states = 0
    for c in range(L):
        while layers[c]:  # a step that reveals nothing (Dream) adds to the layer it reads: a worklist
            (code, step), (mass, mcalls, logmass) = layers[c].popitem()
            n_states += 1
            digits = (code // base) % (V + 1)
            masked = digits == V
            blk = int(np.argmax(masked)) // B
            cand = blk * B + np.flatnonzero(masked[blk * B:(blk + 1) * B])
            qS = Qf[code]
            marg = np.full((cand.size, V), 1.0 / V)
            if qS > 0:
                marg = Qf[code + (vv[None, :] - V) * base[cand][:, None]] / qS
            rows = step_rows(marg, decoder.temperature)
            logr = _log_draw_law(rows.probs, decoder.temperature)
            for w, logw, D, vals in _transitions(decoder, rows, logr, prio[cand], step, fixed):
                nxt = int(code + np.dot(vals - V, base[cand[D]]))
                q2 = Qf[nxt]
                if qS > 0 and q2 == 0 and c + D.size < L:
                    undefined_mass += mass * w
                slot = layers[c + D.size].setdefault((nxt, _next_step(fixed, step, D.size, cand.size)),
                                                      [0.0, 0.0, -math.inf])
                slot[0] += mass * w
                slot[1] += (mcalls + mass) * w
                slot[2] = float(np.logaddexp(slot[2], logmass + logw))
    p = np.zeros(q.size)
    log_p = np.full(q.size, -math.inf)
    calls = 0.0
    for (code, _), (mass, mcalls, logmass) in layers[L].items():
        digits = (code // base) % (V + 1)
        x = int(np.dot(digits, V ** np.arange(L - 1, -1, -1)))
        p[x] += mass
        log_p[x] = float(np.logaddexp(log_p[x], logmass))
        calls += mcalls
    fixed_calls = _fixed_calls(decoder, fixed)
    return _finish(q, p, "dp", decoder, calls if fixed_calls is None else fixed_calls, n_states, undefined_mass,
                   log_p)


def _log_draw_law(probs: np.ndarray, temperature: float) -> np.ndarray:
    """``log r_j``, the tempered law of :func:`~numerics.sampling.block_decoder.tempered` in log space: finite
    wherever ``p_j > 0`` at any ``T > 0`` (``r_j`` itself underflows to 0 below ``T`` of about
    ``|log p| / 745``); at ``T = 0`` the log of the one-hot argmax."""
    with np.errstate(divide="ignore"):
        if temperature == 0:
            return np.log(tempered(probs, 0.0))
        z = np.log(probs)
    if temperature != 1:
        z = (z - z.max(axis=-1, keepdims=True)) / temperature
    top = z.max(axis=-1, keepdims=True)
    return z - (top + np.log(np.exp(z - top).sum(axis=-1, keepdims=True)))


def _transitions(decoder: BlockDecoder, rows, logr, prio, step, fixed):
    """``(weight, log weight, chosen candidate indices, their values)`` of one step from a state (the DP's
    case split); every draw of positive probability in log space (``logr``), even where ``r`` underflows."""
    m, V = rows.probs.shape
    r = rows.draw_law
    if decoder.random_selection:  # the rule's own law of subsets given the draws (Dream origin, alg_temp > 0)
        draws = (zip(*_all_assignments(r, logr)) if decoder.draw_dependent
                 else [(np.argmax(r, axis=1), 1.0, 0.0)])
        for y, wy, logwy in draws:
            for D, wd in decoder.selection_law(rows, y, prio, step, fixed):
                logwd = math.log(wd) if wd > 0 else -math.inf
                if decoder.draw_dependent:
                    yield float(wy) * wd, float(logwy) + logwd, D, y[D]
                else:
                    for vals, w, logw in _assignments(r[D], logr[D]):
                        yield wd * w, logwd + logw, D, vals
        return
    if decoder.random_scores:
        k = min(int(fixed[step]), m)
        subsets = list(itertools.combinations(range(m), k))
        for D in subsets:
            D = np.asarray(D, dtype=np.int64)
            for vals, w, logw in _assignments(r[D], logr[D]):
                yield w / len(subsets), logw - math.log(len(subsets)), D, vals
        return
    if decoder.draw_dependent:  # every draw at once through the rule's batched step
        ys, ws, logws = _all_assignments(r, logr)
        K = ws.size
        many = StepRows(*(np.broadcast_to(a, (K,) + a.shape) for a in rows))
        chosen = decoder.select_rows(many, ys, None, prio, np.ones(ys.shape, dtype=bool),
                                     np.full(K, step), fixed)
        for y, w, logw, c in zip(ys, ws, logws, chosen):
            D = np.flatnonzero(c)
            yield float(w), float(logw), D, y[D]
        return
    y = np.argmax(r, axis=1)  # the draws do not move the selection: T = 0 (one-hot) or entropy order
    D = decoder.select(rows, y, None, prio, step, fixed)
    for vals, w, logw in _assignments(r[D], logr[D]):
        yield w, logw, D, vals


def _all_assignments(r: np.ndarray, logr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(draws (K, k), probabilities (K,), their logs (K,))``: the assignments of the rows of ``r`` with
    positive probability (``logr > -inf``; the probability itself may underflow to 0)."""
    k, V = r.shape
    grid = np.indices((V,) * k).reshape(k, -1).T
    w = np.prod(r[np.arange(k)[None, :], grid], axis=1)
    logw = np.sum(logr[np.arange(k)[None, :], grid], axis=1)
    keep = logw > -np.inf
    return grid[keep], w[keep], logw[keep]


def _assignments(r: np.ndarray, logr: np.ndarray):
    """Every assignment ``y`` of the rows of ``r`` ``(k, V)`` with positive probability: ``(y, prod_j r_j(y_j),
    its log)`` (the product may underflow to 0, the log not)."""
    k, V = r.shape
    if k == 0:
        yield np.zeros(0, dtype=np.int64), 1.0, 0.0
        return
    grid = np.indices((V,) * k).reshape(k, -1).T
    w = np.prod(r[np.arange(k)[None, :], grid], axis=1)
    logw = np.sum(logr[np.arange(k)[None, :], grid], axis=1)
    for y, pr, lw in zip(grid, w, logw):
        if lw > -np.inf:
            yield y, float(pr), float(lw)


def decoder_enumerate(language: Any, length: int | None, decoder: BlockDecoder) -> DecoderExact:
    """Per-output recursion over revealed sets, all draws enumerated (module docstring)."""
    if isinstance(decoder, Remdm):
        return remdm_enumerate(language, length, decoder)
    q, V, L, B, fixed, prio = _block_setup(language, length, decoder, "enumerate")
    xs = all_sequences(V, L)
    qf = q.ravel()
    full = (1 << L) - 1
    p = np.zeros(xs.shape[0])
    calls = 0.0
    nodes = [0]
    for i, x in enumerate(xs):

        @functools.cache
        def fg(S: int, step: int) -> tuple[float, float]:
            """(P(end at x | x_S revealed, ``step`` steps into the block), E[calls to the end; end at x])."""
            if S == full:
                return 1.0, 0.0
            nodes[0] += 1
            bits = np.array([(S >> j) & 1 for j in range(L)], dtype=bool)
            blk = int(np.argmin(bits)) // B
            cand = np.array([j for j in range(blk * B, (blk + 1) * B) if not bits[j]], dtype=np.int64)
            consistent = np.all(xs[:, bits] == x[bits], axis=1)
            w = qf * consistent
            qS = w.sum()
            if qS > 0:
                marg = np.stack([np.bincount(xs[:, j], weights=w, minlength=V) / qS for j in cand])
            else:
                marg = np.full((cand.size, V), 1.0 / V)
            rows = step_rows(marg, decoder.temperature)
            f = g = 0.0
            m = cand.size
            for y in itertools.product(range(V), repeat=m):
                y = np.asarray(y, dtype=np.int64)
                wy = float(np.prod(rows.draw_law[np.arange(m), y]))
                if wy == 0.0:
                    continue
                if decoder.random_selection:
                    choices = decoder.selection_law(rows, y, prio[cand], step, fixed)
                elif decoder.random_scores:
                    k = min(int(fixed[step]), m)
                    choices = [(np.asarray(D, dtype=np.int64), 1.0 / math.comb(m, k))
                               for D in itertools.combinations(range(m), k)]
                else:
                    choices = [(decoder.select(rows, y, None, prio[cand], step, fixed), 1.0)]
                for D, wd in choices:
                    if np.any(y[D] != x[cand[D]]):
                        continue
                    S2 = S
                    for j in cand[D]:
                        S2 |= 1 << int(j)
                    f2, g2 = fg(S2, _next_step(fixed, step, len(D), m))
                    f += wy * wd * f2
                    g += wy * wd * (f2 + g2)
            return f, g

        p[i], gi = fg(0, 0)
        calls += gi
    fixed_calls = _fixed_calls(decoder, fixed)
    return _finish(q, p, "enumerate", decoder, calls if fixed_calls is None else fixed_calls, nodes[0])


# -- ReMDM -----------------------------------------------------------------------------------------

def _remdm_setup(language, length, decoder: Remdm):
    V, L = _sizes(language, length)
    S = (V + 1) ** L
    if S > MAX_REMDM_STATES:
        raise ValueError(f"the exact remdm chain has (V+1)^L = {V + 1}^{L} = {S} partial states, beyond the limit "
                         f"{MAX_REMDM_STATES}; use Monte Carlo")
    return as_table(language, length), V, L, S


def _remdm_rows(marg: np.ndarray, digits: np.ndarray, V: int, sigma: float, reveal: float, T: float) -> np.ndarray:
    """Per-position successor law ``(L, V+1)`` from a state with ``digits`` (index ``V`` = masked)."""
    r = tempered(marg, T)
    out = np.zeros((digits.size, V + 1))
    for j, d in enumerate(digits):
        if d == V:
            out[j, :V] = reveal * r[j]
            out[j, V] = 1.0 - reveal
        else:
            out[j, d] = 1.0 - sigma
            out[j, V] = sigma
    return out


def remdm_dp(language: Any, length: int | None, decoder: Remdm) -> DecoderExact:
    """ReMDM's law by propagating the partial-state distribution; successors as outer products (``Q`` table)."""
    q, V, L, S = _remdm_setup(language, length, decoder)
    Qf = masked_marginal_table(q).ravel()
    base = (V + 1) ** np.arange(L - 1, -1, -1, dtype=np.int64)
    sigma, reveal = decoder.probabilities()
    vv = np.arange(V)
    mass = np.zeros(S)
    mass[S - 1] = 1.0  # all masked: every digit V
    visited = 0
    for i in range(decoder.schedule.n_steps):
        new = np.zeros(S)
        for code in np.flatnonzero(mass):
            visited += 1
            digits = (code // base) % (V + 1)
            qS = Qf[code]
            marg = np.full((L, V), 1.0 / V)  # revealed rows are not used
            hidden = digits == V
            if qS > 0:
                marg[hidden] = Qf[code + (vv[None, :] - V) * base[hidden][:, None]] / qS
            rows = _remdm_rows(marg, digits, V, float(sigma[i]), float(reveal[i]), decoder.temperature)
            new += mass[code] * functools.reduce(np.multiply.outer, rows).ravel()
        mass = new
    return _finish(q, _revealed_part(mass, V, L), "dp", decoder, decoder.schedule.n_steps, visited)


def _revealed_part(mass: np.ndarray, V: int, L: int) -> np.ndarray:
    full = mass.reshape((V + 1,) * L)[(slice(0, V),) * L]
    left = mass.sum() - full.sum()
    if left > 1e-12:
        raise FloatingPointError(f"remdm left mass {left} on partially masked states after the last step")
    return full.ravel()


def remdm_enumerate(language: Any, length: int | None, decoder: Remdm) -> DecoderExact:
    """ReMDM's law by full transition matrices built entry by entry (flat-table marginals)."""
    q, V, L, S = _remdm_setup(language, length, decoder)
    xs = all_sequences(V, L)
    qf = q.ravel()
    digits = np.indices((V + 1,) * L).reshape(L, -1).T  # (S, L): every partial state
    sigma, reveal = decoder.probabilities()
    mass = np.zeros(S)
    mass[-1] = 1.0
    pos = np.arange(L)
    for i in range(decoder.schedule.n_steps):
        P = np.zeros((S, S))
        for z in range(S):
            d = digits[z]
            shown = d < V
            w = qf * np.all(xs[:, shown] == d[shown], axis=1)
            marg = (np.stack([np.bincount(xs[:, j], weights=w, minlength=V) for j in range(L)]) / w.sum()
                    if w.sum() > 0 else np.full((L, V), 1.0 / V))
            rows = _remdm_rows(marg, d, V, float(sigma[i]), float(reveal[i]), decoder.temperature)
            P[z] = np.prod(rows[pos[None, :], digits], axis=1)
        mass = mass @ P
    return _finish(q, _revealed_part(mass, V, L), "enumerate", decoder, decoder.schedule.n_steps, S)


def decoder_exact(language: Any, length: int | None, decoder: BlockDecoder, method: str = "dp") -> DecoderExact:
    """:func:`decoder_dp` (``method="dp"``) or :func:`decoder_enumerate` (``"enumerate"``)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if not isinstance(decoder, BlockDecoder):
        raise TypeError(f"need a decoder of numerics.sampling.decoders, got {type(decoder).__name__}")
    return (decoder_dp if method == "dp" else decoder_enumerate)(language, length, decoder)
