"""The exact optimal decoder: the smallest KL or SER of one stated class of oracle decoders in at most ``T`` calls.

The class (:data:`DECODER_CLASS`): monotone decoders that, with the oracle denoiser, pick the next
set ``D`` of masked positions as a function of the revealed values (DECODERS.md section 7), each
revealed value drawn independently from its oracle marginal given the revealed values. Its states
are ``(S, x_S)`` (revealed set, revealed values), each call reveals ``D`` by the factorized draw
``x_D ~ prod_{j in D} q(x_j | x_S)``, and it must have revealed all ``L`` positions after at
most ``T`` calls. ``topk`` with ``T`` steps, ``threshold`` / ``entropy-sum`` whose longest path has
``<= T`` calls are in it, and the random-order sampler with ``N <= T`` steps is a random mixture of
its members. It is *not* a floor for every decoder: one that draws all masked positions and then
selects (LLaDA low-confidence, Fast-dLLM) or that draws greedy / tempered values (EB-Sampler at
``T < 1``) can go below it with the same calls; :mod:`numerics.exact.floors` computes those
classes' floors and ``docs/methods/optimal-decoder.md`` says which metric each bounds.

Two objectives, each a finite-horizon dynamic program over the states, ``t`` = calls left:

* **Forward KL** (ParallelBench's ``L*_T``). By the chain-rule identity (I1) of
  RELATED-THEORY.md, ``log q(x) - log p(x)`` of a deterministic decoder is the sum along ``x``'s
  own path of ``log q(x_D | x_S) - sum_{j in D} log q(x_j | x_S)``, so ``KL(q || p)`` is the
  ``q``-expected sum of the conditional total correlations of the revealed sets:

      W_t(S, x_S) = min_{D} [ TC(X_D | X_S = x_S) + E_{x_D ~ q(. | x_S)} W_{t-1}(S u D, x_{S u D}) ],
      TC(X_D | x_S) = sum_{j in D} H(X_j | x_S) - H(X_D | x_S),

  with ``W_0 = 0`` on the full set and ``+inf`` elsewhere (so the last call reveals everything
  left), and ``L*_T = W_T(empty)``.

* **SER** ``= 1 - p(supp q)``. Validity is decided along the decoder's *own* draws, which are
  factorized; ``F`` is the probability of ending outside ``supp q``:

      F_t(S, x_S) = min_{D} sum_{x_D} prod_{j in D} q(x_j | x_S) F_{t-1}(S u D, x_{S u D}),

  ``F_0 = 1[q(x) = 0]`` on the full set, ``F = 1`` on any ``x_S`` with ``q(x_S) = 0`` (no
  completion is valid), and the floor is ``F_T(empty)`` (computed directly, not as ``1 - P``,
  so a small SER keeps its relative precision). SER is linear in the output law,
  so a random mixture of decoders (the random-order sampler) never beats the best deterministic
  one; for KL that holds for the *expected conditional* KL ``E_D KL(q || q_D)`` (each fixed
  partition is a decoder), while the KL of the mixture law itself is convex in the law and can be
  smaller (RELATED-THEORY.md (I2); :func:`optimal_decoder` does not bound it).

Work: every pair of disjoint sets ``(S, D)`` with all ``x_{S u D}`` at once, ``sum_{S,D} V^{|S|+|D|}
= (2V + 1)^L`` array entries per budget ``t``; memory ``(V + 1)^L`` per budget (values and the
policy). Both are checked before anything is allocated (:data:`MAX_STATES`, :data:`MAX_WORK`).

Ties: the sets ``D`` are tried largest first (then by bit pattern), and a later set replaces the
incumbent only when strictly better, so the policy reveals as much as possible per call among
optimal choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import entr

from numerics.estimate import Estimate
from numerics.exact.joint_table import as_table, masked_marginal_table

__all__ = [
    "DECODER_CLASS",
    "MAX_STATES",
    "MAX_WORK",
    "OBJECTIVES",
    "OptimalDecoder",
    "PolicyStep",
    "decoder_size",
    "dp_max_length",
    "language_sizes",
    "optimal_decoder",
    "policy_law",
]

OBJECTIVES = ("kl", "ser")
DECODER_CLASS = ("monotone decoders that choose which positions to reveal from the revealed values, each revealed "
                 "value drawn independently from its oracle marginal given the revealed values")
MAX_STATES = 1 << 20  # (V+1)^L states (revealed set, values): 8 MiB of float64 per budget t
MAX_WORK = 1 << 27  # T (2V+1)^L array entries summed over all (S, D) pairs: about a minute of NumPy


@dataclass(frozen=True)
class PolicyStep:
    """What the optimal decoder does in one reachable state.

    Attributes
    ----------
    revealed : tuple of (int, int)
        ``(position, value)`` pairs of ``x_S`` (0-based positions).
    calls_left : int
        ``t``: calls still allowed, this one included.
    reveal : tuple of int
        The set ``D`` revealed by this call.
    probability : float
        Probability of reaching the state under the decoder's own output law ``p``.
    value : float
        ``W_t(S, x_S)`` (KL still to pay, nats) or ``F_t(S, x_S)`` (probability of ending invalid).
    """

    revealed: tuple
    calls_left: int
    reveal: tuple
    probability: float
    value: float


@dataclass(frozen=True)
class OptimalDecoder:
    """The smallest ``metric`` of :data:`DECODER_CLASS` in at most ``calls`` calls, and the policy that reaches it.

    Attributes
    ----------
    metric : str
        ``"kl"`` (``KL(q || p)``, nats) or ``"ser"``.
    value : Estimate
        The floor at budget ``calls`` (exact, ``method = "optimal-decoder-dp"``).
    values : (calls,) float64
        ``values[t-1]``: the floor at budget ``t = 1..calls`` (non-increasing; ``values[0]`` is the
        one-call factorized law's metric).
    calls : int
        ``T``, the budget.
    length, vocab_size : int
    policy : tuple of PolicyStep
        The optimal decoder's reachable states (``q(x_S) > 0``, positive probability under ``p``)
        in order of ``|S|``, then lexicographic.
    expected_calls : float
        ``E_p[calls]`` of the optimal policy (at most ``calls``).
    n_states : int
        ``(V + 1)^L``, the size of the state space.
    decoder_class : str
        The class minimized over, in words (:data:`DECODER_CLASS`).
    """

    metric: str
    value: Estimate
    values: np.ndarray
    calls: int
    length: int
    vocab_size: int
    policy: tuple
    expected_calls: float
    n_states: int
    decoder_class: str = DECODER_CLASS


def decoder_size(vocab_size: int, length: int, calls: int) -> tuple[int, int]:
    """``((V+1)^L, min(T, L) (2V+1)^L)``: states and array work of the DP (module docstring)."""
    V, L = int(vocab_size), int(length)
    return (V + 1) ** L, min(int(calls), L) * (2 * V + 1) ** L


def dp_max_length(vocab_size: int, calls: int) -> int:
    """The largest ``L`` within :data:`MAX_STATES` and :data:`MAX_WORK` at ``V`` tokens and ``T`` calls (0 if none)."""
    L = 0
    while all(size <= limit for size, limit in zip(decoder_size(vocab_size, L + 1, calls), (MAX_STATES, MAX_WORK))):
        L += 1
    return L


def check_decoder_size(vocab_size: int, length: int, calls: int) -> None:
    """Refuse a case beyond :data:`MAX_STATES` / :data:`MAX_WORK` before anything is allocated, naming the reach."""
    if int(calls) != calls or calls < 1:
        raise ValueError(f"the call budget T must be an integer >= 1, got {calls!r}")
    if int(length) != length or length < 1:
        raise ValueError(f"the length L must be an integer >= 1, got {length!r}")
    states, work = decoder_size(vocab_size, length, calls)
    if states > MAX_STATES or work > MAX_WORK:
        raise ValueError(f"the optimal decoder's exact DP reaches L <= {dp_max_length(vocab_size, calls)} at "
                         f"V = {vocab_size} with T = {calls} calls (its state space (V+1)^L and work min(T, L) "
                         f"(2V+1)^L grow by {vocab_size + 1}x and {2 * vocab_size + 1}x per position); "
                         f"L = {length} is beyond it")


def language_sizes(language: Any, length: int | None) -> tuple[int, int]:
    """``(V, L)`` of a joint table ``(V,) * L`` or of a language object at ``length``."""
    if isinstance(language, np.ndarray):
        return language.shape[0], language.ndim
    if length is None:
        raise ValueError("length is required when a language (not a table) is given")
    return int(language.vocab_size), int(length)


def _members(mask: int, L: int) -> list[int]:
    return [j for j in range(L) if (mask >> j) & 1]


def _subsets_largest_first(mask: int, L: int) -> list[int]:
    """Non-empty subsets of ``mask``, by decreasing size then increasing bit pattern."""
    subs = []
    d = mask
    while d:
        subs.append(d)
        d = (d - 1) & mask
    return sorted(subs, key=lambda s: (-bin(s).count("1"), s))


class _Tables:
    """Views of the masked marginal table ``Q`` by revealed set (axes of masked positions have length 1)."""

    def __init__(self, q: np.ndarray) -> None:
        self.V, self.L = q.shape[0], q.ndim
        self.Q = masked_marginal_table(q)

    def marg(self, R: int) -> np.ndarray:
        """``q(x_R)`` broadcast over the positions of ``R`` (length ``V``), 1 elsewhere."""
        V = self.V
        return self.Q[tuple(slice(0, V) if (R >> j) & 1 else slice(V, V + 1) for j in range(self.L))]

    def conditional(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        """``num / den`` where ``den > 0``, 0 where the revealed values are impossible (no epsilon)."""
        return np.divide(num, den, out=np.zeros(np.broadcast_shapes(num.shape, den.shape)), where=den > 0)


def optimal_decoder(language: Any, length: int | None, calls: int, metric: str = "kl") -> OptimalDecoder:
    """The floor of :data:`DECODER_CLASS` and its optimal policy (module docstring) for ``metric`` in ``<= calls`` calls.

    Parameters
    ----------
    language : HMM, NGram, IntervalLanguage or a joint table ``(V,) * L``
    length : int or None
        ``L`` (``None`` for a table).
    calls : int
        The budget ``T >= 1`` (a budget beyond ``L`` is the same as ``L``: one position per call is exact).
    metric : {"kl", "ser"}
    """
    if metric not in OBJECTIVES:
        raise ValueError(f"unknown metric {metric!r} for the optimal decoder; choose one of {OBJECTIVES}")
    V, L = language_sizes(language, length)
    check_decoder_size(V, L, calls)
    q = as_table(language, length)
    tab = _Tables(q)
    full = (1 << L) - 1
    T = min(int(calls), L)
    kl = metric == "kl"
    # layer t-1 values: dict S -> array over x_S (masked axes of length 1)
    prev: dict[int, np.ndarray] = {full: np.zeros(q.shape) if kl else (q == 0).astype(np.float64)}
    policies: list[dict[int, np.ndarray]] = []
    layers: list[dict[int, np.ndarray]] = []
    values = np.empty(T)
    masks_by_size = sorted(range(full + 1), key=lambda s: bin(s).count("1"))
    for t in range(1, T + 1):
        cur: dict[int, np.ndarray] = {full: prev[full]}
        pol: dict[int, np.ndarray] = {}
        for S in masks_by_size:
            if S == full:
                continue
            cur[S], pol[S] = _best_set(tab, S, full & ~S, prev, kl, last=t == 1)
        policies.append(pol)
        layers.append(cur)
        values[t - 1] = float(cur[0].reshape(()))
        prev = cur
    steps, expected_calls = _walk(tab, policies, layers, kl)
    all_values = np.concatenate([values, np.full(int(calls) - T, values[-1])])
    all_values.setflags(write=False)
    return OptimalDecoder(metric, Estimate(float(all_values[-1]), 0.0, "optimal-decoder-dp"), all_values,
                          int(calls), L, V, steps, expected_calls, (V + 1) ** L)


def _best_set(tab: _Tables, S: int, M: int, prev: dict, kl: bool, last: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(value, best D)`` over all ``x_S`` at once for one revealed set ``S`` (module docstring's recursions).

    ``last``: one call left, so ``D`` is every masked position.
    """
    L = tab.L
    QS = tab.marg(S)
    masked = _members(M, L)
    cond_j = {j: tab.conditional(tab.marg(S | (1 << j)), QS) for j in masked}
    h_j = {j: entr(cond_j[j]).sum(axis=j, keepdims=True) for j in masked} if kl else {}
    best = np.full(QS.shape, np.inf)
    arg = np.zeros(QS.shape, dtype=np.int64)
    for D in ([M] if last else _subsets_largest_first(M, L)):
        axes = tuple(_members(D, L))
        nxt = prev[S | D]
        if kl:  # TC(X_D | x_S) + E_{x_D ~ q(. | x_S)} W_{t-1}
            cond = tab.conditional(tab.marg(S | D), QS)
            cand = sum(h_j[j] for j in axes) - entr(cond).sum(axis=axes, keepdims=True)
            cand = cand + (cond * nxt).sum(axis=axes, keepdims=True)
        else:  # sum_{x_D} prod_j q(x_j | x_S) F_{t-1}
            law = cond_j[axes[0]]
            for j in axes[1:]:
                law = law * cond_j[j]
            cand = (law * nxt).sum(axis=axes, keepdims=True)
        better = cand < best
        best = np.where(better, cand, best)
        arg = np.where(better, D, arg)
    # KL: an x_S with q(x_S) = 0 has weight 0 in every q-expectation; SER: no completion of it is valid
    return np.where(QS > 0, best, 0.0 if kl else 1.0), arg


def _walk(tab: _Tables, policies: list, layers: list, kl: bool) -> tuple[tuple, float]:
    """The reachable states of the optimal policy with their ``p``-probabilities, and ``E_p[calls]``."""
    L, V = tab.L, tab.V
    full = (1 << L) - 1
    frontier = {(0, ()): 1.0}  # (S, x_S in position order) -> probability under p
    steps: list[PolicyStep] = []
    expected_calls = 0.0
    for t in range(len(policies), 0, -1):
        nxt: dict[tuple, float] = {}
        for (S, xs), prob in sorted(frontier.items(), key=lambda kv: (bin(kv[0][0]).count("1"), kv[0])):
            pos = _members(S, L)
            vals = dict(zip(pos, xs))
            idx = tuple(vals.get(j, 0) for j in range(L))  # masked axes have length 1: index 0
            QS = float(tab.marg(S)[idx])
            if S == full:
                continue
            expected_calls += prob
            if QS == 0.0:  # dead: nothing is valid any more; the policy reveals the rest in this one call
                continue
            D = int(policies[t - 1][S][idx])
            w = float(layers[t - 1][S][idx])
            dpos = _members(D, L)
            steps.append(PolicyStep(tuple(zip(pos, xs)), t, tuple(dpos), prob, w))
            rows = [tab.conditional(tab.marg(S | (1 << j)), tab.marg(S))[
                tuple(slice(None) if k == j else idx[k] for k in range(L))].ravel() for j in dpos]
            for draw in np.ndindex(*(V,) * len(dpos)):
                pr = prob * float(np.prod([rows[i][v] for i, v in enumerate(draw)]))
                if pr == 0.0:
                    continue
                new = {**vals, **dict(zip(dpos, draw))}
                key = (S | D, tuple(new[j] for j in sorted(new)))
                nxt[key] = nxt.get(key, 0.0) + pr
        frontier = nxt
    return tuple(steps), expected_calls


def policy_law(language: Any, length: int | None, policy: tuple) -> np.ndarray:
    """The output law ``p`` on ``supp q`` of a policy given as :class:`PolicyStep` entries (a replay, for checks).

    Each ``x`` follows, from the empty set with ``T`` calls left, the step whose ``revealed`` values
    and ``calls_left`` it matches; the factors are the oracle conditionals ``q(x_j | x_S)`` from
    the masked marginal table. Every prefix of an ``x`` in ``supp q`` has ``q(x_S) > 0``, so its
    path is in ``policy``; outside ``supp q`` the returned ``p`` is 0 (the mass there is ``1 - p.sum()``).
    """
    q = as_table(language, length)
    V, L = q.shape[0], q.ndim
    Q = masked_marginal_table(q)
    table = {(tuple(j for j, _ in s.revealed), tuple(v for _, v in s.revealed), s.calls_left): s.reveal
             for s in policy}
    T = max((s.calls_left for s in policy), default=0)
    p = np.zeros(q.shape)
    for x in zip(*np.nonzero(q > 0)):
        S, t, prob = (), T, 1.0
        while len(S) < L:
            D = table[(S, tuple(x[j] for j in S), t)]
            QS = Q[tuple(x[j] if j in S else V for j in range(L))]
            for j in D:
                prob *= Q[tuple(x[k] if (k in S or k == j) else V for k in range(L))] / QS
            S, t = tuple(sorted(S + tuple(D))), t - 1
        p[x] = prob
    return p
