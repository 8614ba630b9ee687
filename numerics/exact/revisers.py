"""Exact law of the revising decoders (:mod:`numerics.sampling.revisers`) on tiny cases: a chain over canvases.

A state is a canvas (tokens, masked positions) with the decoder's block and counter. One call moves a
state by :func:`~numerics.sampling.revisers.reviser_step` applied to *every* draw of the positions that
the rule reads (the current block's masked positions; for ``llada21`` also its revealed ones, which it
may edit), each draw weighted by its probability ``prod_j r_j(y_j)`` (``r_j`` the tempered oracle law);
equal next states are merged. The mass that reaches the end after ``t`` calls gives the law of the calls,
and the final canvases the output law ``p``. States: at most ``(V+1)^L`` canvases times blocks and
counters; draws ``V^B`` per state (``V^L <= 4096`` is refused beyond).

The same rule runs in the Monte Carlo sampler, so the chain and the sampler differ only in how draws
are taken (all of them, weighted, vs sampled): the tests compare the two by a chi-squared test, and the
chain against a chain whose oracle laws are read off the joint table (no forward-backward).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.joint_table import joint_table
from numerics.exact.output_law import ExactMetrics, OutputLaw, law_metrics
from numerics.sampling.block_decoder import tempered
from numerics.sampling.revisers import CanvasState, Reviser, oracle_laws, reviser_step

__all__ = ["MAX_CHAIN_WORK", "MAX_DRAWS", "REVISER_METHODS", "RevisedExact", "choose_reviser_method", "chain_work",
           "reviser_exact"]

MAX_DRAWS = 4096  # V^B draws of one state's block
MAX_CHAIN_WORK = 1 << 22  # (V+1)^L canvases times V^B draws: what method auto runs exactly (seconds at L <= 6)
#: The methods of a reviser's point: the exact chain (``enumerate``) or Monte Carlo.
REVISER_METHODS = ("auto", "enumerate", "mc")


def _power(base: int, exponent: int) -> int:
    """``base^exponent``, counted only as far as the limits need (``exponent`` capped at 64: ``2^64`` is past them)."""
    return int(base) ** min(int(exponent), 64)


def chain_work(rv: Reviser, vocab_size: int, length: int) -> int:
    """``(V+1)^L V^B``: canvases times draws of one block, a bound on the rows the chain steps per call
    (exponents capped at 64, so a huge ``L`` is counted, not computed)."""
    return _power(int(vocab_size) + 1, length) * _power(vocab_size, rv.block(int(length)))


def choose_reviser_method(method: str, rv: Reviser, vocab_size: int, length: int) -> str:
    """``auto``: ``enumerate`` (the exact chain) within :data:`MAX_CHAIN_WORK`, else ``mc``; a named one checked.

    ``dp`` and ``closed-form`` are refused (the chain is not a product along reveal paths); ``enumerate``
    beyond :data:`MAX_DRAWS` is refused with its size.
    """
    if method not in REVISER_METHODS:
        raise ValueError(f"--method {method}: a revising decoder is computed by the exact chain over canvases "
                         f"(enumerate) or Monte Carlo (mc); choose one of {', '.join(REVISER_METHODS)}")
    V, L = int(vocab_size), int(length)
    B = rv.block(L)
    over = _power(V, B) > MAX_DRAWS or _power(V, L) > MAX_DRAWS
    if method == "enumerate" and over:
        raise ValueError(f"--method enumerate: the exact reviser chain enumerates V^B = {V}^{B} draws per state over "
                         f"V^L = {V}^{L} canvases; at most {MAX_DRAWS} each (use --method mc or a smaller -L)")
    if method != "auto":
        return method
    fits = not over and chain_work(rv, V, L) <= MAX_CHAIN_WORK
    return "enumerate" if fits else "mc"


@dataclass(frozen=True)
class RevisedExact:
    """Exact law of a reviser with the oracle.

    Attributes
    ----------
    law : OutputLaw
        ``p`` (method ``"canvas-chain"``).
    metrics : ExactMetrics or None
        :func:`law_metrics` (``None`` at temperature 0, where ``p`` may vanish on ``supp q``).
    ser : float
        ``1 - p(supp q)``.
    calls : (K,) float64
        ``calls[t]``: probability that the decoder makes exactly ``t`` calls.
    expected_calls : Estimate
    states : int
        States visited.
    """

    law: OutputLaw
    metrics: ExactMetrics | None
    ser: float
    calls: np.ndarray
    expected_calls: Estimate
    states: int


def reviser_exact(rv: Reviser, language, length: int,
                  laws: Callable[[CanvasState], np.ndarray] | None = None) -> RevisedExact:
    """The exact output law, SER, KL and calls' law of ``rv`` on ``(language, length)`` (module docstring).

    ``laws(state) -> (n, L, V)``: the oracle's law of every position (default: the soft-evidence
    forward-backward, :func:`~numerics.sampling.revisers.oracle_laws`).
    """
    V, L = language.vocab_size, int(length)
    B = rv.block(L)
    if _power(V, B) > MAX_DRAWS or _power(V, L) > MAX_DRAWS:
        raise ValueError(f"the exact reviser chain enumerates V^B = {V}^{B} draws per state over V^L = {V}^{L} "
                         f"canvases; at most {MAX_DRAWS} each (Monte Carlo at scale)")
    laws = laws or (lambda st: oracle_laws(language, st))
    nblocks = L // B
    start = ((0,) * L, (True,) * L, 0, 0)
    mass = {start: 1.0}
    out = np.zeros(V**L)
    calls: list[float] = [0.0]
    visited = 0
    per_block = B + rv.edit_cap if rv.name == "llada21" else rv.cap(L)
    for _ in range(nblocks * per_block):
        new: dict = {}
        ended = 0.0
        for (tok, msk, blk, cnt), w in mass.items():
            visited += 1
            st = CanvasState(np.array([tok]), np.array([msk]), np.array([blk]), np.array([cnt]))
            cond = laws(st)
            r = tempered(cond[0], rv.temperature)
            blockpos = range(blk * B, (blk + 1) * B)
            read = [j for j in blockpos if msk[j] or rv.name == "llada21"]
            choices = [np.flatnonzero(r[j] > 0) for j in read]
            combos = np.array(list(itertools.product(*choices)), dtype=np.int64).reshape(-1, len(read))
            n = len(combos)
            draws = np.zeros((n, L), dtype=np.int64)
            draws[:, read] = combos
            weight = w * np.prod(r[read][np.arange(len(read))[None, :], combos], axis=1) if read else np.full(n, w)
            rep = CanvasState(np.repeat(st.tokens, n, 0), np.repeat(st.masked, n, 0), np.repeat(st.block, n),
                              np.repeat(st.count, n))
            nxt, _ = reviser_step(rv, rep, np.repeat(cond, n, 0), draws)
            for k in range(n):
                if nxt.block[k] >= nblocks:
                    out[np.ravel_multi_index(tuple(nxt.tokens[k]), (V,) * L)] += weight[k]
                    ended += weight[k]
                else:
                    key = (tuple(nxt.tokens[k].tolist()), tuple(nxt.masked[k].tolist()), int(nxt.block[k]),
                           int(nxt.count[k]))
                    new[key] = new.get(key, 0.0) + weight[k]
        calls.append(ended)
        mass = new
        if not mass:
            break
    if mass:
        raise RuntimeError(f"{rv.name}: mass {sum(mass.values())} still running after the longest path")
    q = joint_table(language, L)
    p = out.reshape(q.shape)
    law = OutputLaw(q, p, 0.0, "canvas-chain", f"{rv.name}", "uniform")
    c = np.array(calls)
    ser = float(p[q == 0].sum())
    metrics = law_metrics(law) if rv.temperature > 0 else None
    return RevisedExact(law, metrics, ser, c, Estimate(float(np.arange(len(c)) @ c), 0.0, "canvas-chain"), visited)
