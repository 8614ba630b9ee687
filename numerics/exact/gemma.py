"""Exact law of DiffusionGemma's renoise sampler (:mod:`numerics.sampling.gemma`) on tiny cases: a chain over canvases.

A state is ``(canvas, kept, previous argmax)`` after ``t`` calls. One call decides, from the oracle's
marginals of the canvas, whether the run stops (:func:`~numerics.sampling.gemma.renoise_decide`) and
which positions are accepted; given that, the next canvas has the product law ``prod_j l_j(w_j)`` with
``l_j`` the tempered law ``r_j`` at an accepted position, the token itself at a committed one and the
uniform law elsewhere, and the next ``kept`` and argmax are fixed. So the chain moves the mass of every
state at call ``t`` onto the ``V^L`` next canvases at once (the same product as the factorized reverse
process, :mod:`numerics.exact.uniform_noise`) and merges equal states; a state that stops puts its mass
on its argmax at ``t + 1`` calls. The first call reads the canvas at level 0, so the starting canvas
does not matter: the chain starts from one state.

Sizes: ``V^L <= MAX_CANVASES`` canvases, and at each call (states x ``V^L``) transition entries at most
:data:`MAX_ENTRIES` (:class:`ChainTooLarge` before anything of that size is allocated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.joint_table import all_sequences, joint_table
from numerics.exact.output_law import ExactMetrics, OutputLaw, law_metrics
from numerics.exact.uniform_noise import _transition
from numerics.sampling.gemma import NO_ARGMAX, Renoise, RenoiseState, renoise_apply, renoise_decide, renoise_laws

__all__ = ["MAX_CANVASES", "MAX_ENTRIES", "ChainTooLarge", "RenoiseExact", "renoise_exact"]

MAX_CANVASES = 729  # V^L (3^6): the next-canvas law of a state has V^L entries
MAX_ENTRIES = 2**22  # states x V^L transition entries of one call (32 MiB float64)


class ChainTooLarge(ValueError):
    """The exact renoise chain would exceed :data:`MAX_CANVASES` or :data:`MAX_ENTRIES` (Monte Carlo at scale)."""


@dataclass(frozen=True)
class RenoiseExact:
    """Exact law of the renoise sampler with the oracle.

    Attributes
    ----------
    joint : (step_cap + 1, V^L) float64
        ``joint[t, x]``: probability that the run makes ``t`` calls and emits ``x`` (C order).
    law : OutputLaw
        ``p`` (method ``"canvas-chain"``).
    metrics : ExactMetrics or None
        :func:`law_metrics`; ``None`` when ``p`` vanishes on a sequence of ``supp q`` (``KL(q || p) = inf``).
    kl : float
        ``KL(q || p)`` (nats), ``inf`` as above.
    ser : float
        ``1 - p(supp q)``.
    calls : (step_cap + 1,) float64
        ``calls[t]``: probability of exactly ``t`` calls.
    expected_calls : Estimate
    capped : float
        Probability that the run stops at the cap without the halting rule firing.
    states : int
        States visited.
    """

    joint: np.ndarray
    law: OutputLaw
    metrics: ExactMetrics | None
    kl: float
    ser: float
    calls: np.ndarray
    expected_calls: Estimate
    capped: float
    states: int


def _check(V: int, L: int) -> int:
    if V**L > MAX_CANVASES:
        raise ChainTooLarge(f"V^L = {V}^{L} = {V**L} canvases exceed {MAX_CANVASES}: the exact renoise chain is for "
                            "tiny cases (Monte Carlo at scale)")
    return V**L


def renoise_exact(rn: Renoise, language, length: int, laws=None) -> RenoiseExact:
    """The exact joint law of the output and the calls of ``rn`` on ``(language, length)`` (module docstring).

    ``laws(rn, state) -> (n, L, V)``: the oracle's marginals (default
    :func:`~numerics.sampling.gemma.renoise_laws`, the soft-evidence forward-backward).
    """
    V, L = language.vocab_size, int(length)
    C = _check(V, L)
    laws = laws or (lambda r, st: renoise_laws(r, language, st))
    seqs = all_sequences(V, L)
    bits = 1 << np.arange(L)
    cap = int(rn.step_cap)
    joint = np.zeros((cap + 1, C))
    capped = 0.0
    visited = 0
    # live states as codes: canvas in [0, C), kept in [0, 2^L), previous argmax in [0, C] (C: none yet)
    canvas, kept, prev, mass = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.full(1, C),
                                np.ones(1))
    for t in range(cap):
        n = mass.size
        if n * C > MAX_ENTRIES:
            raise ChainTooLarge(f"{n} live states x {C} canvases at call {t + 1} exceed {MAX_ENTRIES} transition "
                                "entries: the exact renoise chain is for tiny cases (Monte Carlo at scale)")
        visited += n
        keptb = (kept[:, None] & bits) > 0
        am = np.where(prev[:, None] == C, NO_ARGMAX, seqs[np.minimum(prev, C - 1)])
        state = RenoiseState(seqs[canvas], keptb, am, np.full(n, t, dtype=np.int64))
        dec = renoise_decide(rn, state, laws(rn, state))
        out = np.ravel_multi_index(dec.argmax.T, (V,) * L)
        np.add.at(joint[t + 1], out[dec.stop], mass[dec.stop])
        capped += float(mass[dec.stop & ~dec.halted].sum())
        go = ~dec.stop
        if not go.any():
            break
        # the law of each next position: r_j (accepted), the token (committed), uniform (renoised)
        fixed = keptb[go] & rn.committed
        onehot = (seqs[canvas[go]][..., None] == np.arange(V)).astype(np.float64)
        pos_law = np.where(dec.accepted[go][..., None], dec.law[go], np.where(fixed[..., None], onehot, 1.0 / V))
        T = _transition(pos_law) * mass[go, None]  # (n', C): mass moved to each next canvas
        nxt = renoise_apply(rn, RenoiseState(*(a[go] for a in state)), type(dec)(*(a[go] for a in dec)),
                            np.zeros((int(go.sum()), L), dtype=np.int64), np.zeros((int(go.sum()), L), dtype=np.int64))
        k_code = (nxt.kept * bits).sum(axis=1)
        a_code = np.ravel_multi_index(nxt.argmax.T, (V,) * L)
        src, w = np.nonzero(T)
        key = (w * (1 << L) + k_code[src]) * (C + 1) + a_code[src]
        uniq, inv = np.unique(key, return_inverse=True)
        mass = np.bincount(inv, weights=T[src, w])
        prev = uniq % (C + 1)
        kept = (uniq // (C + 1)) % (1 << L)
        canvas = uniq // ((C + 1) << L)
    q = joint_table(language, L)
    p = joint.sum(axis=0).reshape(q.shape)
    law = OutputLaw(q, p, 0.0, "canvas-chain", rn.name, "uniform")
    on = q > 0
    finite = bool(np.all(p[on] > 0))
    metrics = law_metrics(law) if finite else None
    kl = metrics.kl.value if metrics is not None else np.inf
    calls = joint.sum(axis=1)
    return RenoiseExact(joint, law, metrics, kl, float(p[~on].sum()), calls,
                        Estimate(float(np.arange(cap + 1) @ calls), 0.0, "canvas-chain"), capped, visited)
