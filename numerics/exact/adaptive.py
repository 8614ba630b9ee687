"""Exact output law, KL, SER and expected calls of the oracle adaptive samplers on tiny languages.

An adaptive rule (:mod:`numerics.sampling.adaptive`: ``topk``, ``threshold``, ``entropy-sum``,
with or without semi-autoregressive blocks) with the oracle denoiser chooses the step's set ``D_t`` as a deterministic function of the
revealed values ``x_{S_t}`` (ties by the seeded priority). So each output ``x`` has exactly one
reveal path and

    p(x) = prod_t prod_{j in D_t(x)} q(x_j | x_{S_t(x)}),

the output law is a sum over reveal paths, and the chain-rule identity (I1) of
``docs/methods/adaptive.md`` gives the KL of the *true* output law (not a bound):

    KL(q || p) = E_{x~q} sum_t [ log q(x_{D_t} | x_{S_t}) - sum_{j in D_t} log q(x_j | x_{S_t}) ].

Two independent methods on the explicit joint table (:mod:`numerics.exact.joint_table`):

* :func:`adaptive_dp` -- a forward pass over the reachable *states* (revealed positions and
  values, an index of the masked marginal table ``Q``), layer by number of revealed positions:
  each state's conditional marginals ``Q[w, j=v] / Q[w]``, the rule's set ``D``, and every value
  assignment of ``D`` as a successor. Along the way, (I1) is accumulated with the q-probability
  ``Q[w']`` of each transition (the path through ``w`` is the path of every ``x`` with
  ``x_S = w_S``), and calls as ``sum mass * steps``.
* :func:`adaptive_enumerate` -- for every ``x`` in ``V^L``, walk its path with marginals summed
  from the flat table of sequences (no masked-marginal table): ``p(x)``, its calls ``T(x)`` and
  its (I1) term.

Undefined branches use the samplers' convention (``undefined="uniform"`` of
:mod:`numerics.exact.output_law`): once the revealed tokens are jointly impossible every later
marginal is uniform, so ``p`` sums to 1 and the expected calls are defined;
``undefined_mass`` is the probability of entering such a state with positions still masked.
KL and SER do not depend on the convention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.joint_table import all_sequences, as_table, masked_marginal_table
from numerics.exact.output_law import ExactMetrics, OutputLaw, law_metrics, nonnegative_kl
from numerics.sampling.adaptive import AdaptiveSampler, tie_priority

__all__ = [
    "MAX_ENUMERATE_SEQUENCES",
    "MAX_DP_TABLE",
    "METHODS",
    "AdaptiveExact",
    "adaptive_dp",
    "adaptive_enumerate",
    "adaptive_metrics",
]

MAX_ENUMERATE_SEQUENCES = 4096  # V^L paths, each walked with V^L-sized sums: quadratic, tiny cases only
MAX_DP_TABLE = 1 << 22  # (V+1)^L entries of the masked marginal table (32 MiB of float64)
METHODS = ("dp", "enumerate")


@dataclass(frozen=True)
class AdaptiveExact:
    """The exact law and metrics of one oracle adaptive sampler on ``(q, L)``.

    Attributes
    ----------
    law : OutputLaw
        ``p`` under the ``"uniform"`` convention (module docstring); ``method`` says how.
    metrics : ExactMetrics
        KL, TER, SER, certificate, generative perplexity of ``law``
        (:func:`numerics.exact.output_law.law_metrics`); ``kl_jensen_bound`` is ``None``.
    kl_chain_rule : Estimate
        ``KL(q || p)`` by the chain-rule identity (I1) along q-trajectories: the same number as
        ``metrics.kl`` by a different formula.
    expected_nfe : Estimate
        ``E_{x~p}[T(x)]``, the expected denoiser calls (steps) per sequence.
    n_states : int
        States visited (``dp``) or sequences walked (``enumerate``).
    calls : (V,) * L int64 or None
        ``T(x)``, the calls on the path of every ``x`` (``enumerate`` only).
    chain_terms : (V,) * L float64 or None
        ``log q(x) - log p(x)`` by (I1) for ``x`` in ``supp q``, NaN elsewhere (``enumerate`` only).
    """

    law: OutputLaw
    metrics: ExactMetrics
    kl_chain_rule: Estimate
    expected_nfe: Estimate
    n_states: int
    calls: np.ndarray | None = None
    chain_terms: np.ndarray | None = None


def _check_sampler(sampler: Any) -> AdaptiveSampler:
    if not isinstance(sampler, AdaptiveSampler):
        raise TypeError(f"need an AdaptiveSampler (a deterministic rule), got {type(sampler).__name__}; the random "
                        "sampler's exact law is numerics.exact.enumerate / numerics.exact.dp")
    return sampler


def _next_k(sampler: AdaptiveSampler, cum: np.ndarray, revealed: int, block: int) -> int:
    """Top-k's size of the next step after ``revealed`` positions, blocks of ``block`` (0 for the other rules).

    Blocks are revealed in order, so ``revealed % B`` positions of the current block are revealed
    and ``cum`` (the cumulative step sizes within a block) says which step comes next.
    """
    if sampler.rule != "topk":
        return 0
    inside = revealed % block
    return int(cum[np.searchsorted(cum, inside, side="right")] - inside)


def _finish(q: np.ndarray, p: np.ndarray, undefined_mass: float, method: str, sampler: AdaptiveSampler, *,
            kl_chain: float, nfe: float, n_states: int, calls=None, terms=None) -> AdaptiveExact:
    p.setflags(write=False)
    law = OutputLaw(q, p, float(undefined_mass), method, sampler.label, "uniform")
    on = q > 0
    entropy = float(-np.sum(q[on] * np.log(q[on])))
    kl_chain = nonnegative_kl(kl_chain, entropy)  # -2e-16 for a one-token-per-step rule is round-off: 0
    return AdaptiveExact(law, law_metrics(law), Estimate(float(kl_chain), 0.0, f"{method}, chain rule (I1)"),
                         Estimate(float(nfe), 0.0, method), n_states, calls, terms)


def adaptive_dp(language: Any, length: int | None, sampler: AdaptiveSampler) -> AdaptiveExact:
    """Exact law, (I1) KL and expected calls by the forward pass over reachable states (module docstring).

    Parameters
    ----------
    language : HMM, NGram, IntervalLanguage or a joint table ``(V,) * L``
    length : int or None
        ``L`` (``None`` for a table).
    sampler : AdaptiveSampler
    """
    sampler = _check_sampler(sampler)
    q = as_table(language, length)
    V, L = q.shape[0], q.ndim
    if (V + 1) ** L > MAX_DP_TABLE:
        raise ValueError(f"(V+1)^L = {V + 1}^{L} exceeds MAX_DP_TABLE = {MAX_DP_TABLE}; use Monte Carlo")
    Qf = masked_marginal_table(q).ravel()
    base = (V + 1) ** np.arange(L - 1, -1, -1, dtype=np.int64)  # flat index of w = sum_j w_j base_j
    prio = tie_priority(L, sampler.tie_seed)
    cum = np.cumsum(sampler.step_sizes(L))
    B = sampler.block_of(L)
    start = int(V * base.sum())
    layers: list[dict[int, list[float]]] = [dict() for _ in range(L + 1)]
    layers[0][start] = [1.0, 0.0]  # [mass, sum of mass * steps so far]
    undefined_mass = kl_chain = 0.0
    n_states = 0
    vv = np.arange(V)
    for c in range(L):
        k = _next_k(sampler, cum, c, B)
        for code, (mass, msteps) in layers[c].items():
            n_states += 1
            digits = (code // base) % (V + 1)
            masked = digits == V
            qS = Qf[code]
            rows = np.full((L, V), 1.0 / V)
            if qS > 0:
                mj = np.flatnonzero(masked)
                rows[mj] = Qf[code + (vv[None, :] - V) * base[mj][:, None]] / qS  # q(x_j = v | x_S)
            D, rows = sampler.choose(rows, masked, prio, k)
            grid = np.indices((V,) * D.size).reshape(D.size, -1).T  # every assignment of D
            prob = np.prod(rows[D[None, :], grid], axis=1)
            nxt = code + (grid - V) @ base[D]
            done = layers[c + D.size]
            with np.errstate(divide="ignore"):  # log 0 only where prob = 0, skipped below
                log_factors = np.log(rows[D[None, :], grid]).sum(axis=1)
            for pr, lf, code2 in zip(prob, log_factors, nxt):
                if pr == 0.0:
                    continue
                code2 = int(code2)
                q2 = Qf[code2]
                if qS > 0 and q2 > 0:  # q-mass Q[w'] times log q(x_D | x_S) - sum_j log q(x_j | x_S)
                    kl_chain += q2 * (math.log(q2) - math.log(qS) - lf)
                elif qS > 0 and c + D.size < L:
                    undefined_mass += mass * pr
                slot = done.setdefault(code2, [0.0, 0.0])
                slot[0] += mass * pr
                slot[1] += (msteps + mass) * pr
        layers[c] = {}
    p = np.zeros(q.shape)
    nfe = 0.0
    for code, (mass, msteps) in layers[L].items():
        p[tuple((code // base) % (V + 1))] = mass
        nfe += msteps
    return _finish(q, p, undefined_mass, "dp", sampler, kl_chain=kl_chain, nfe=nfe, n_states=n_states)


def adaptive_enumerate(language: Any, length: int | None, sampler: AdaptiveSampler) -> AdaptiveExact:
    """Exact law, per-sequence calls and (I1) terms by walking the path of every ``x`` (module docstring).

    Marginals are sums over the flat table of all ``V^L`` sequences, so nothing is shared with
    :func:`adaptive_dp` but the rule's step (``AdaptiveSampler.choose``).
    """
    sampler = _check_sampler(sampler)
    q = as_table(language, length)
    V, L = q.shape[0], q.ndim
    if V**L > MAX_ENUMERATE_SEQUENCES:
        raise ValueError(f"V^L = {V}^{L} exceeds MAX_ENUMERATE_SEQUENCES = {MAX_ENUMERATE_SEQUENCES}; use adaptive_dp")
    xs = all_sequences(V, L)
    qf = q.ravel()
    prio = tie_priority(L, sampler.tie_seed)
    cum = np.cumsum(sampler.step_sizes(L))
    B = sampler.block_of(L)
    p = np.ones(xs.shape[0])
    calls = np.zeros(xs.shape[0], dtype=np.int64)
    terms = np.full(xs.shape[0], np.nan)
    undefined = np.zeros(xs.shape[0], dtype=bool)
    for i, x in enumerate(xs):
        consistent = np.ones(xs.shape[0], dtype=bool)
        masked = np.ones(L, dtype=bool)
        term = 0.0
        while masked.any():
            w = qf[consistent]
            qS = w.sum()
            rows = np.full((L, V), 1.0 / V)
            if qS > 0:
                for j in np.flatnonzero(masked):
                    rows[j] = np.bincount(xs[consistent, j], weights=w, minlength=V) / qS
            else:  # the revealed tokens are jointly impossible: uniform from here on
                undefined[i] = True
            D, rows = sampler.choose(rows, masked, prio, _next_k(sampler, cum, L - int(masked.sum()), B))
            factors = rows[D, x[D]]
            p[i] *= np.prod(factors)
            consistent &= np.all(xs[:, D] == x[D], axis=1)
            if qf[i] > 0:  # log q(x_D | x_S) - sum_j log q(x_j | x_S)
                term += math.log(qf[consistent].sum() / qS) - float(np.sum(np.log(factors)))
            masked[D] = False
            calls[i] += 1
        if qf[i] > 0:
            terms[i] = term
    kl_chain = float(np.sum(qf[qf > 0] * terms[qf > 0]))
    nfe = float(np.sum(p * calls))
    return _finish(q, p.reshape(q.shape), float(p[undefined].sum()), "enumerate", sampler, kl_chain=kl_chain, nfe=nfe,
                   n_states=xs.shape[0], calls=calls.reshape(q.shape), terms=terms.reshape(q.shape))


def adaptive_metrics(language: Any, length: int | None, sampler: AdaptiveSampler, method: str = "dp"
                     ) -> AdaptiveExact:
    """:func:`adaptive_dp` (``method="dp"``) or :func:`adaptive_enumerate` (``"enumerate"``)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    return (adaptive_dp if method == "dp" else adaptive_enumerate)(language, length, sampler)

