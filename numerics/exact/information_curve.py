"""The information curve ``Z`` and the exact Jensen bound ``E_tau KL(q || p(. | tau))`` it gives.

Information curve (Chen, Cong, Li 2025; ``docs/methods/exact.md``). For a uniformly random order ``sigma``
of the ``L`` positions,

    Z_j = E[ I(X_sigma(j) ; X_sigma(1..j-1)) ],   j = 1..L,

so ``Z_1 = 0``, ``Z`` is non-decreasing and ``sum_j Z_j`` is the total correlation
``sum_j H(X_j) - H(X)``. Equivalently, with ``T`` a uniformly random ``t``-subset and ``j`` a
uniformly random position outside it, ``Z_{t+1} = hbar - E H(X_j | X_T)``, ``hbar = mean_j H(X_j)``.

Expected total correlation of one step. If a uniformly random set ``D`` of ``b`` new positions is
revealed on top of a uniformly random revealed set ``S`` of ``s`` positions, the oracle's
factorization error of that step (Lemma B.3 with the oracle: the conditional total correlation
``sum_{j in D} H(X_j | X_S) - H(X_D | X_S)``) has expectation
``sum_{m=0}^{b-1} (Z_{s+m+1} - Z_{s+1})`` (write ``H(X_D | X_S)`` by the chain rule along a
uniformly random order of ``D``; each term is a uniformly random pair of the right size).

The Jensen bound. Under the i.i.d. step assignment, given ``(|tau_<i|, |tau_i|) = (s, b)`` the pair
``(tau_<i, tau_i)`` is uniformly random, and ``(|tau_<i|, |tau_i|, rest)`` is multinomial with
probabilities ``(u_{i-1}, pi_i, 1 - u_i)``. With ``CZ_k = Z_1 + .. + Z_k`` the inner sum is
``CZ_{s+b} - CZ_s - b Z_{s+1}``, and taking expectations (``s + b ~ Bin(L, u_i)``,
``s ~ Bin(L, u_{i-1})``, and ``E[b | s] = (L - s) pi_i / (1 - u_{i-1})`` which turns
``P(s) (L - s) pi_i / (1 - u_{i-1})`` into ``L pi_i P(Bin(L - 1, u_{i-1}) = s)``):

    E_tau KL(q || p(. | tau)) = sum_i ( E CZ_{Bin(L, u_i)} - E CZ_{Bin(L, u_{i-1})}
                                         - L pi_i E Z_{1 + Bin(L-1, u_{i-1})} ),

an ``O(N L)`` sum once ``Z`` is known. ``Z`` is exact here for tiny languages (subset entropies of
the joint table, :func:`information_curve_table`) and for first-order Markov chains in polynomial
time (:func:`numerics.exact.markov.information_curve_markov`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from numerics.estimate import Estimate
from numerics.exact._binomial import binom_pmf
from numerics.exact.joint_table import as_table, subset_entropies
from numerics.schedules import Schedule

__all__ = [
    "InformationCurve",
    "JensenBound",
    "information_curve_table",
    "jensen_bound_from_curve",
]

_CHUNK = 256  # steps per vectorized binomial evaluation (256 x (L+1) float64 each)


@dataclass(frozen=True)
class InformationCurve:
    """``Z_1..Z_L`` (``z[j-1] = Z_j``, nats) and how it was computed.

    Attributes
    ----------
    z : (L,) float64
        The information curve; ``z[0] = Z_1 = 0``.
    method : str
        ``"table"`` (subset entropies of the joint table) or ``"markov"`` (closed form).
    """

    z: np.ndarray
    method: str

    @property
    def length(self) -> int:
        return self.z.shape[0]

    @property
    def total_correlation(self) -> float:
        """``sum_j Z_j = sum_j H(X_j) - H(X_1..X_L)``."""
        return float(self.z.sum())


@dataclass(frozen=True)
class JensenBound:
    """``E_tau KL(q || p(. | tau))`` (Lemma B.2's upper bound on ``KL(q || p)``) and its parts.

    Attributes
    ----------
    total : Estimate
        The bound, ``sum_i per_step[i]``; exact (stderr 0), ``method`` says how.
    per_step : (N,) float64
        ``E_tau[ conditional total correlation of the tokens revealed at step i ]`` (Lemma B.3).
    """

    total: Estimate
    per_step: np.ndarray


def information_curve_table(language_or_table, length: int | None = None) -> InformationCurve:
    """Exact ``Z`` of a tiny language from the entropies of all ``2^L`` marginals.

    With ``Y_k = sum_{|U| = k} H(X_U)``: ``sum_{|T| = t} sum_{j not in T} H(X_j | X_T)
    = (t + 1) Y_{t+1} - (L - t) Y_t``, averaged over the ``L C(L-1, t)`` pairs, and
    ``Z_{t+1} = Y_1 / L - that average``.
    """
    q = as_table(language_or_table, length)
    L = q.ndim
    H = subset_entropies(q)
    sizes = np.array([bin(m).count("1") for m in range(1 << L)])
    Y = np.array([H[sizes == k].sum() for k in range(L + 1)])
    t = np.arange(L)
    pairs = np.array([L * comb(L - 1, int(k)) for k in t], dtype=np.float64)
    z = Y[1] / L - ((t + 1) * Y[t + 1] - (L - t) * Y[t]) / pairs
    z[0] = 0.0  # Y_1 / L - Y_1 / L: exactly 0, not a round-off residue
    z.setflags(write=False)
    return InformationCurve(z, "table")


def jensen_bound_from_curve(curve: InformationCurve, schedule: Schedule) -> JensenBound:
    """``E_tau KL(q || p(. | tau))`` from the information curve (module docstring formula)."""
    L = curve.length
    z = curve.z
    cz = np.concatenate([[0.0], np.cumsum(z)])  # cz[k] = Z_1 + .. + Z_k
    k = np.arange(L + 1)
    u, pi = schedule.u, schedule.pi
    N = pi.shape[0]
    e_cz = np.empty(N + 1)  # e_cz[i] = E CZ_{Bin(L, u_i)}
    e_z = np.empty(N)  # e_z[i] = E Z_{1 + Bin(L-1, u_i)}
    for start in range(0, N + 1, _CHUNK):
        rows = np.arange(start, min(start + _CHUNK, N + 1))
        e_cz[rows] = binom_pmf(k, L, u[rows, None]) @ cz
        rows = rows[rows < N]
        e_z[rows] = binom_pmf(k[:-1], L - 1, u[rows, None]) @ z
    per_step = np.where(pi > 0, e_cz[1:] - e_cz[:-1] - L * pi * e_z, 0.0)
    per_step.setflags(write=False)
    method = f"information-curve-{curve.method}"
    return JensenBound(Estimate(float(per_step.sum()), 0.0, method), per_step)
