"""The exact Jensen bound ``E_tau KL(q || p(. | tau))`` of first-order Markov chains by the chain rule.

Chain rule (Lemma B.3 with the oracle; ``docs/methods/exact.md``). For one instance ``tau``,
``KL(q || p(. | tau)) = sum_i TC(tau_i | tau_<i)`` with the conditional total correlation
``TC(D | S) = sum_{j in D} H(X_j | X_S) - H(X_D | X_S)``; the Jensen bound of Lemma B.2 is its
expectation over the i.i.d. step assignment: at step ``i`` each position is in ``S = tau_<i`` with
probability ``a = u_{i-1}``, in ``D = tau_i`` with probability ``b = pi_i``, independently.

Markov chains. For a chain ``(mu, P)`` and positions ``p_1 < .. < p_m`` (``docs/methods/exact.md``)

    H(X_{p_1..p_m}) = H(m_{p_1}) + sum_k H_{m_{p_k}}(P^{p_{k+1} - p_k}),   m_p = mu P^(p-1),

(:func:`markov_subset_entropy`). Writing each link entropy as ``H(m_r) - I(X_l ; X_r)`` the
marginal entropies cancel from ``TC`` and only the pair informations remain:
``H(X_j | X_S) = H(m_j) - I(l, j) - I(j, r) + I(l, r)`` with ``l, r`` the nearest elements of
``S`` left and right of ``j`` (a missing neighbour drops its terms), and ``H(X_T) = sum_{p in T}
H(m_p) - sum_{consecutive l < r in T} I(l, r)``. Taking the expectation over the independent
memberships (a pair at distance ``d`` is consecutive in a Bernoulli(``rho``) set with probability
``rho^2 (1 - rho)^(d-1)``) and summing over ``j`` gives, with ``iota(d) = sum_l I(X_l ; X_{l+d})``,

    E TC_i = sum_{d=1}^{L-1} iota(d) w_d(a, b),
    w_d = (a+b)^2 y^(d-1) - (a^2 + 2ab) x^(d-1) + (d-1) a^2 b x^(d-2),   x = 1 - a, y = 1 - a - b.

``w_d`` is the second-order Taylor remainder of ``rho -> rho^2 (1 - rho)^(d-1)`` type terms and
is ``O(b^2)``; evaluated as written it would lose ``log10(1/b)`` digits, so it is evaluated as
``w_d = b^2 [x^(d-1) + a^2 B_d - (2a + b) A_d]`` with the positive recursions
``A_2 = 1, A_{d+1} = x^(d-1) + y A_d`` (``A_d = sum_{k<d-1} x^k y^(d-2-k)``) and
``B_2 = 0, B_{d+1} = (d-1) x^(d-2) + y B_d`` (``B_d = sum_{s<d-2} (s+1) x^s y^(d-3-s)``).
``iota(d) = sum_{r >= d} H(m_r) - (sum_{l < L-d} m_l) . h_d`` where ``h_d(s)`` is the entropy of
row ``s`` of ``P^d``. Cost: ``O(L V^3)`` for the powers, ``O(N L)`` for the weights.

Which languages are first-order Markov chains over tokens (:func:`markov_chain_of`): a 2-gram; an
n-gram whose next-token law depends on the newest token only; an HMM whose emission is a
bijection between states and tokens. A general n-gram is a Markov chain over *windows*, but the
sampler reveals tokens, not windows: ``H(X_D | X_S)`` is not ``H(Y_D | Y_S)`` for the windows
``Y_j``, so applying these formulas to the window chain computes the Jensen bound of a different
language (the one whose tokens are the windows). :func:`markov_chain_of` refuses that case; the
tests show the two numbers differ on a 3-gram and agree with enumeration on the window language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import entr

from numerics.estimate import Estimate
from numerics.exact.information_curve import InformationCurve, JensenBound
from numerics.languages.hmm import HMM, NGram, _check_distribution
from numerics.schedules import Schedule

__all__ = [
    "MarkovChain",
    "markov_chain_of",
    "markov_subset_entropy",
    "pair_informations",
    "jensen_step_weights",
    "jensen_bound_markov",
    "information_curve_markov",
]


@dataclass(frozen=True, eq=False)
class MarkovChain:
    """A first-order Markov chain over ``V`` tokens: ``x_1 ~ initial``, ``x_{j+1} | x_j ~ transition[x_j]``."""

    initial: np.ndarray
    transition: np.ndarray

    def __post_init__(self) -> None:
        initial = _check_distribution("initial", self.initial, 1)
        transition = _check_distribution("transition", self.transition, 2)
        if transition.shape != (initial.shape[0],) * 2:
            raise ValueError(f"transition has shape {transition.shape}, expected {(initial.shape[0],) * 2}")
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "transition", transition)

    kind = "markov-chain"

    @property
    def vocab_size(self) -> int:
        return self.initial.shape[0]

    def to_hmm(self) -> HMM:
        """The same language as an :class:`HMM` with identity emission (for tables and samplers)."""
        return HMM(self.initial, self.transition, np.eye(self.vocab_size))

    def kernel_language(self) -> HMM:
        """The form the compiled kernels read (:meth:`to_hmm`)."""
        return self.to_hmm()

    def marginals(self, length: int) -> np.ndarray:
        """``(L, V)``: row ``p`` (0-based) is the law of ``x_{p+1}``, ``mu P^p``."""
        out = np.empty((length, self.vocab_size))
        out[0] = self.initial
        for p in range(1, length):
            out[p] = out[p - 1] @ self.transition
        return out

    def powers(self, max_power: int) -> np.ndarray:
        """``(max_power + 1, V, V)``: ``P^0 .. P^max_power``."""
        out = np.empty((max_power + 1, self.vocab_size, self.vocab_size))
        out[0] = np.eye(self.vocab_size)
        for d in range(1, max_power + 1):
            out[d] = out[d - 1] @ self.transition
        return out


def markov_chain_of(language: Any) -> MarkovChain:
    """The token-level first-order Markov chain of ``language``, or ``ValueError`` if it is not one.

    Accepted: a :class:`MarkovChain`; an :class:`NGram` of order 2; an n-gram of higher order whose
    ``conditional[s]`` depends on the window ``s`` only through its newest token ``s % V`` (exact
    equality of rows; then ``x_1`` has the law of the newest token of ``initial``); an :class:`HMM`
    whose emission is a 0/1 matrix matching states one-to-one with tokens.
    """
    of_kind = _TOKEN_CHAIN.get(getattr(language, "kind", None))
    if of_kind is None:
        raise ValueError(f"a {type(language).__name__} is not a first-order Markov chain over tokens")
    return of_kind(language)


def _ngram_chain(language: NGram) -> MarkovChain:
    V = language.vocab_size
    if language.order == 2:
        return MarkovChain(language.initial, language.conditional)
    newest = np.arange(language.n_states) % V
    rows = language.conditional[:V]  # windows 0..V-1 have older tokens 0 and newest token s
    if np.array_equal(language.conditional, rows[newest]):
        initial = np.bincount(newest, weights=language.initial, minlength=V)
        return MarkovChain(initial / initial.sum(), rows)
    raise ValueError(
        f"a {language.order}-gram is a Markov chain over windows of {language.order - 1} tokens, "
        "not over tokens: the sampler reveals tokens, so the window chain's chain-rule formula "
        "would give the Jensen bound of the window language, not of this one (use Monte Carlo, "
        "or exact enumeration / the DP on tiny lengths)"
    )


def _hmm_chain(language: HMM) -> MarkovChain:
    E = language.emission
    if E.shape[0] == E.shape[1] and np.all((E == 0) | (E == 1)):
        perm = np.argmax(E, axis=1)  # state s emits token perm[s]
        if np.array_equal(np.sort(perm), np.arange(E.shape[1])):
            order = np.argsort(perm)  # order[v] = the state that emits v
            return MarkovChain(language.initial[order], language.transition[np.ix_(order, order)])
    raise ValueError(
        "this HMM is not a first-order Markov chain over tokens (its emission is not a one-to-one "
        "0/1 map from states to tokens); the chain-rule closed form does not apply"
    )


#: ``Language.kind -> its token Markov chain`` (or ``ValueError``); other kinds are not token chains.
_TOKEN_CHAIN = {"markov-chain": lambda chain: chain, "ngram": _ngram_chain, "hmm": _hmm_chain}


def _entropies_of_rows(m: np.ndarray) -> np.ndarray:
    return entr(m).sum(axis=-1)


def markov_subset_entropy(chain: MarkovChain, positions: Sequence[int]) -> float:
    """``H(X_{p_1..p_m}) = H(m_{p_1}) + sum_k H_{m_{p_k}}(P^{p_{k+1} - p_k})`` (0-based positions).

    ``H_m(M) = sum_a m_a H(M_a.)``. ``H`` of the empty set is 0.
    """
    p = sorted(int(j) for j in positions)
    if len(set(p)) != len(p) or (p and p[0] < 0):
        raise ValueError(f"positions must be distinct and >= 0, got {positions!r}")
    if not p:
        return 0.0
    marg = chain.marginals(p[-1] + 1)
    total = float(_entropies_of_rows(marg[p[0]]))
    for left, right in zip(p[:-1], p[1:]):
        rows = _entropies_of_rows(np.linalg.matrix_power(chain.transition, right - left))
        total += float(marg[left] @ rows)
    return total


def pair_informations(chain: MarkovChain, length: int) -> np.ndarray:
    """``iota[d] = sum_{l=0}^{L-1-d} I(X_l ; X_{l+d})`` for ``d = 0..L-1`` (``iota[0] = 0``, unused).

    ``I(X_l ; X_{l+d}) = H(m_{l+d}) - m_l . h_d``, summed with prefix sums of the marginals.
    """
    L = int(length)
    marg = chain.marginals(L)
    h_marg = _entropies_of_rows(marg)  # (L,)
    tail_h = np.cumsum(h_marg[::-1])[::-1]  # tail_h[d] = sum_{r >= d} H(m_r)
    prefix_m = np.cumsum(marg, axis=0)  # prefix_m[k] = sum_{l <= k} m_l
    iota = np.zeros(L)
    power = np.eye(chain.vocab_size)
    for d in range(1, L):
        power = power @ chain.transition
        iota[d] = tail_h[d] - prefix_m[L - 1 - d] @ _entropies_of_rows(power)
    return iota


def jensen_step_weights(a: np.ndarray, b: np.ndarray, length: int, y: np.ndarray | None = None) -> np.ndarray:
    """``w[i, d] = w_d(a_i, b_i)`` of the module docstring, ``(N, L)`` (column ``d = 0`` is 0).

    ``E TC_i = sum_d iota(d) w_d(u_{i-1}, pi_i)``; computed with the positive recursions.
    ``y = 1 - a - b`` may be passed as ``1 - u_i`` from the schedule itself (exactly 0 at the end).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    L = int(length)
    x = 1.0 - a
    y = x - b if y is None else np.asarray(y, dtype=np.float64)
    w = np.zeros(a.shape + (L,))
    if L < 2:
        return w
    w[..., 1] = b * b  # d = 1: both neighbours new
    xp = np.ones_like(a)  # x^(d-2) at the top of iteration d
    A = np.ones_like(a)  # A_2
    B = np.zeros_like(a)  # B_2
    for d in range(2, L):
        xd1 = xp * x  # x^(d-1)
        w[..., d] = b * b * (xd1 + a * a * B - (2.0 * a + b) * A)
        B = (d - 1) * xp + y * B  # B_{d+1}
        A = xd1 + y * A  # A_{d+1}
        xp = xd1
    return w


def jensen_bound_markov(language: Any, length: int, schedule: Schedule,
                        informations: np.ndarray | None = None) -> JensenBound:
    """``E_tau KL(q || p(. | tau))`` for a token-level Markov chain, exactly, in ``O(L V^3 + N L)``.

    Parameters
    ----------
    language : MarkovChain, 2-gram, or anything :func:`markov_chain_of` accepts
    length : int
        ``L``.
    schedule : Schedule
    informations : (L,) array, optional
        ``pair_informations(markov_chain_of(language), L)``, when already computed: the ``O(L V^3)``
        part does not depend on the schedule, so a curve over ``N`` computes it once.
    """
    chain = markov_chain_of(language)
    if int(length) != length or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    if informations is None:
        iota = pair_informations(chain, int(length))
    else:
        iota = np.asarray(informations, dtype=np.float64)
        if iota.shape != (int(length),):
            raise ValueError(f"informations has shape {iota.shape}, expected ({int(length)},) = (L,)")
    pi = schedule.pi
    weights = jensen_step_weights(schedule.u[:-1], pi, int(length), 1.0 - schedule.u[1:])  # (N, L)
    per_step = weights @ iota
    per_step[pi == 0] = 0.0  # nothing revealed: no error (w is already 0 there up to -0.0)
    per_step.setflags(write=False)
    return JensenBound(Estimate(float(per_step.sum()), 0.0, "markov-chain-rule"), per_step)


def information_curve_markov(language: Any, length: int) -> InformationCurve:
    """Exact ``Z_1..Z_L`` of a token-level Markov chain in ``O(L^2 + L V^3)``.

    For ``T`` a uniform ``t``-subset of the positions other than ``j``, the nearest neighbours of
    ``j`` in ``T`` give (module docstring) ``Z_{t+1} = (1/L) sum_d iota(d) [2 r1(d, t) - (d-1) r2(d, t)]``
    with ``r1 = C(L-1-d, t-1) / C(L-1, t)`` (a given pair at distance ``d`` is "neighbour and
    ``j``") and ``r2 = C(L-1-d, t-2) / C(L-1, t)`` (both ends in ``T`` around ``j``, nothing else
    between), each by a recursion in ``d`` with positive factors.
    """
    chain = markov_chain_of(language)
    L = int(length)
    iota = pair_informations(chain, L)
    t = np.arange(L, dtype=np.float64)
    z = np.zeros(L)
    if L >= 2:
        r1 = t / (L - 1)  # d = 1
        for d in range(1, L):
            if d >= 2:
                # from d-1 to d; the factor reaches 0 exactly where C(L-1-d, t-1) = 0 (t - 1 > L - 1 - d)
                r1 = r1 * np.maximum(L - (d - 1) - t, 0.0) / (L - d)
            z += 2.0 * iota[d] * r1
        if L >= 3:
            r2 = t * (t - 1) / ((L - 1) * (L - 2))  # d = 2
            for d in range(2, L):
                if d >= 3:
                    r2 = r2 * np.maximum(L + 2 - d - t, 0.0) / (L - d)
                z -= (d - 1) * iota[d] * r2
        z /= L
    z[0] = 0.0
    z.setflags(write=False)
    return InformationCurve(z, "markov")
