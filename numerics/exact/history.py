"""Exact output law of the rules with a history (:mod:`numerics.sampling.history_decoders`) on tiny languages.

With the oracle such a rule is a Markov chain on ``(x_S, block, step, history)``: the history is a
deterministic function of the reveal path (a marginal changes only when something is revealed),
the revealed set a deterministic function of the state (class A), and the chosen values are drawn
independently from the rule's ``law``. Two methods that share nothing but the rule's
:meth:`~numerics.sampling.history_decoders.HistoryDecoder.plan`:

* ``dp`` -- a forward pass call by call over the reachable states, merging equal states (the
  history keyed by its bytes), marginals and conditional marginals read off the masked marginal
  table ``Q`` (:mod:`numerics.exact.joint_table`);
* ``enumerate`` -- for every output ``x`` the one reveal path compatible with ``x`` followed from
  the empty state (depth first, no merging), marginals summed from the flat table of sequences.

Undefined branches: the ``"uniform"`` convention (the samplers'). Sizes are checked before any work.
"""

from __future__ import annotations

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.decoders import DecoderExact, _finish, _greedy_metrics
from numerics.exact.divergences import law_divergences
from numerics.exact.joint_table import all_sequences, as_table, masked_marginal_table
from numerics.exact.output_law import OutputLaw
from numerics.sampling.history_decoders import HistoryDecoder, View, normalized

__all__ = ["MAX_HISTORY_WORK", "history_dp", "history_enumerate", "history_exact"]

MAX_HISTORY_WORK = 1 << 16  # V^L outputs times L calls times L V conditional queries


def _check(decoder: HistoryDecoder, V: int, L: int, method: str) -> None:
    work = V**L * L * (L * V if decoder.needs_conditional else 1)
    if work > MAX_HISTORY_WORK:
        raise ValueError(f"the exact {decoder.name} law by {method} needs about {work} steps of work (V = {V}, "
                         f"L = {L}), beyond the limit {MAX_HISTORY_WORK}; use Monte Carlo")


def _setup(language, length, decoder: HistoryDecoder, method: str):
    if not isinstance(decoder, HistoryDecoder):
        raise TypeError(f"need a rule of numerics.sampling.history_decoders, got {type(decoder).__name__}")
    if isinstance(language, np.ndarray):
        V, L = int(language.shape[0]), int(language.ndim)
    else:
        V, L = int(language.vocab_size), int(length)
    _check(decoder, V, L, method)
    q = as_table(language, length)
    decoder.blocks(L)
    return q, V, L, decoder.block_of(L), decoder.fixed_steps(L), decoder.priority(L)


def _done(q, p, method, decoder, calls, n_states) -> DecoderExact:
    """The block decoders' finish; a rule that commits to argmaxes (Prophet) may give ``p(x) = 0`` on
    ``supp q`` at any ``T``, which :func:`_greedy_metrics` reads as ``KL = inf`` (not as underflow)."""
    if not getattr(decoder, "commits", False) or decoder.temperature == 0:
        return _finish(q, p, method, decoder, calls, n_states)
    p = np.asarray(p, dtype=np.float64).reshape(q.shape)
    p.setflags(write=False)
    law = OutputLaw(q, p, 0.0, method, decoder.label, "uniform")
    return DecoderExact(law, _greedy_metrics(law), law_divergences(law), Estimate(float(calls), 0.0, method), n_states)


def _advance(decoder, fixed, B, L, block, step, mask_after, stop):
    """``(block, step, finished)`` after one call (the samplers' block bookkeeping)."""
    step += 1
    end = decoder.stops_when_empty and not mask_after[block * B:(block + 1) * B].any()
    if fixed is not None and step >= fixed.size:
        end = True
    if end:
        block, step = block + 1, 0
    return block, step, bool(stop) or block >= L // B


def history_dp(language, length: int | None, decoder: HistoryDecoder) -> DecoderExact:
    """Forward pass call by call over ``(code, block, step, history)`` (module docstring)."""
    q, V, L, B, fixed, prio = _setup(language, length, decoder, "dp")
    Qf = masked_marginal_table(q).ravel()
    base = (V + 1) ** np.arange(L - 1, -1, -1, dtype=np.int64)
    flat = V ** np.arange(L - 1, -1, -1)
    vv = np.arange(V)

    def marginals(code: int) -> np.ndarray:
        digits = (code // base) % (V + 1)
        qS = Qf[code]
        out = np.full((L, V), np.nan)
        hidden = np.flatnonzero(digits == V)
        if qS > 0:
            out[hidden] = Qf[code + (vv[None, :] - V) * base[hidden][:, None]] / qS
        return normalized(out)

    start = int(V * base.sum())
    layer = {(start, 0, 0, b""): [1.0, decoder.init_history(1, L, V)]}
    p = np.zeros(q.size)
    calls = 0.0
    t = n_states = 0
    while layer:
        t += 1
        nxt: dict = {}
        for (code, block, step, _), (mass, hist) in layer.items():
            n_states += 1
            digits = (code // base) % (V + 1)
            mask = digits == V

            def cond(i, code=code):
                j = int(i[0])
                return np.stack([marginals(code + (v - V) * int(base[j])) for v in range(V)])[None]

            view = View(marginals(code)[None], mask[None], np.array([block * B]), np.array([step]),
                        cond if decoder.needs_conditional else None)
            plan = decoder.plan(view, hist, prio)
            D = np.flatnonzero(plan.chosen[0])
            law = plan.law[0][D]
            grid = np.indices((V,) * D.size).reshape(D.size, -1).T
            w = np.prod(law[np.arange(D.size)[None, :], grid], axis=1)
            for vals, wv in zip(grid, w):
                if wv == 0:
                    continue
                code2 = int(code + np.dot(vals - V, base[D]))
                mask2 = mask.copy()
                mask2[D] = False
                b2, s2, finished = _advance(decoder, fixed, B, L, block, step, mask2, plan.stop[0])
                if finished:
                    if mask2.any():
                        raise AssertionError(f"{decoder.label} ended with masked positions")
                    x = int(np.dot((code2 // base) % (V + 1), flat))
                    p[x] += mass * wv
                    calls += mass * wv * t
                    continue
                key = (code2, b2, s2, b"".join(h.tobytes() for h in plan.history))
                slot = nxt.setdefault(key, [0.0, plan.history])
                slot[0] += mass * wv
        layer = nxt
    return _done(q, p, "dp", decoder, calls, n_states)


def history_enumerate(language, length: int | None, decoder: HistoryDecoder) -> DecoderExact:
    """For every output ``x``, its one compatible reveal path from the empty state (module docstring)."""
    q, V, L, B, fixed, prio = _setup(language, length, decoder, "enumerate")
    xs = all_sequences(V, L)
    qf = q.ravel()

    def marginals(shown: np.ndarray, vals: np.ndarray) -> np.ndarray:
        w = qf * np.all(xs[:, shown] == vals[shown], axis=1)
        if w.sum() <= 0:
            return normalized(np.full((L, V), np.nan))
        return normalized(np.stack([np.bincount(xs[:, j], weights=w, minlength=V) for j in range(L)]))

    p = np.zeros(xs.shape[0])
    calls = 0.0
    nodes = 0
    for k, x in enumerate(xs):
        mask = np.ones(L, dtype=bool)
        block = step = 0
        hist = decoder.init_history(1, L, V)
        prob, t = 1.0, 0
        while True:
            t += 1
            nodes += 1

            def cond(i, mask=mask):
                j = int(i[0])
                out = []
                for v in range(V):
                    shown, vals = ~mask, x.copy()
                    shown[j], vals[j] = True, v
                    out.append(marginals(shown, vals))
                return np.stack(out)[None]

            view = View(marginals(~mask, x)[None], mask[None], np.array([block * B]), np.array([step]),
                        cond if decoder.needs_conditional else None)
            plan = decoder.plan(view, hist, prio)
            D = np.flatnonzero(plan.chosen[0])
            prob *= float(np.prod(plan.law[0][D, x[D]]))
            if prob == 0.0:
                break
            mask = mask.copy()
            mask[D] = False
            hist = plan.history
            block, step, finished = _advance(decoder, fixed, B, L, block, step, mask, plan.stop[0])
            if finished:
                p[k] = prob
                calls += prob * t
                break
    return _done(q, p, "enumerate", decoder, calls, nodes)


def history_exact(language, length: int | None, decoder: HistoryDecoder, method: str = "dp") -> DecoderExact:
    """:func:`history_dp` (``"dp"``) or :func:`history_enumerate` (``"enumerate"``)."""
    if method not in ("dp", "enumerate"):
        raise ValueError(f"unknown method {method!r}; choose one of ('dp', 'enumerate')")
    return (history_dp if method == "dp" else history_enumerate)(language, length, decoder)
