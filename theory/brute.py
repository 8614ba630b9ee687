"""Brute-force laws of the factorized sampler on tiny languages: the exact numbers for B.2-B.9, C.2, C.3.

Everything is an explicit table over ``V^L`` (from :func:`numerics.exact.joint_table.joint_table`).
An *instance* (Definition B.1) is a vector ``steps`` with ``steps[j]`` the step (1-based) at
which position ``j+1`` is revealed. The *model* is the oracle tempered by ``beta`` and tilted by
a fixed vector ``tilt`` over the vocabulary:

``p_theta(x_j | x_A) ∝ q(x_j | x_A)^beta exp(tilt[x_j])``

(``beta = 1``, no tilt: the oracle, ``eps_learning = 0``; the tilt moves mass between tokens of the
support, which tempering cannot do where ``q(. | x_A)`` is uniform on its support, e.g. in
Example C.7); its Assumption 4.1 constant on an instance is
measured exactly as ``eps = max over steps, new positions j and contexts x_A with q(x_A) > 0 of
KL(q(x_j | x_A) || p_theta(x_j | x_A))``. Tokens revealed in one step are drawn independently,
so ``p(x | tau) = prod_i prod_{j in tau_i} p_theta(x_j | x_{tau_<i})``. Only ``x`` in the support of
``q`` are needed (every prefix of such ``x`` has positive probability), which keeps all
conditionals well defined.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.special import rel_entr

from numerics.exact.joint_table import joint_table

from .claims import show

__all__ = ["InstanceLaw", "instance_law", "mixture_law", "instances", "sequence_kl"]

MAX_INSTANCES = 1 << 14  # N^L instances enumerated at most (tiny cases only)


@dataclass(frozen=True)
class InstanceLaw:
    """The sampler's law on one instance ``tau``.

    Attributes
    ----------
    p : (V,)*L array
        ``p(x | tau)`` on the support of ``q`` (0 elsewhere: not computed, not needed).
    step_terms : (N,) array
        ``E_{x~q} KL(q(x_{tau_i} | x_{tau_<i}) || prod_j p_theta(x_j | x_{tau_<i}))`` (nats).
    step_tc : (N,) array
        The oracle part: ``E_q`` of the conditional total correlation of ``x_{tau_i}`` given ``x_{tau_<i}``.
    step_marginal_kl : (N,) array
        The model part: ``sum_{j in tau_i} E_{x_{tau_<i} ~ q} KL(q(x_j | x_{tau_<i}) || p_theta(x_j | x_{tau_<i}))``,
        summed context by context (0 for the oracle).
    eps : float
        Assumption 4.1 constant measured on this instance (module docstring).
    """

    p: np.ndarray
    step_terms: np.ndarray
    step_tc: np.ndarray
    step_marginal_kl: np.ndarray
    eps: float


def _marg(q: np.ndarray, keep: set[int]) -> np.ndarray:
    drop = tuple(a for a in range(q.ndim) if a not in keep)
    return q.sum(axis=drop, keepdims=True) if drop else q


def _cond(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(np.broadcast_shapes(num.shape, den.shape)), where=den > 0)


def _log(a: np.ndarray) -> np.ndarray:
    """``log a`` with ``log 0 = -inf`` (a legal log-probability, never clipped)."""
    out = np.full(a.shape, -np.inf)
    np.log(a, out=out, where=a > 0)
    return out


def instance_law(q: np.ndarray, steps, beta: float = 1.0, tilt=None) -> InstanceLaw:
    """:class:`InstanceLaw` of instance ``steps`` for the table ``q`` and the model ``(beta, tilt)``."""
    steps = np.asarray(steps, dtype=np.int64)
    L = q.ndim
    if steps.shape != (L,) or np.any(steps < 1):
        raise ValueError(f"steps must be {L} step indices >= 1, got {show(steps)}")
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {show(beta)}")
    if tilt is not None:
        tilt = np.asarray(tilt, dtype=np.float64)
        if tilt.shape != (q.shape[0],) or not np.all(np.isfinite(tilt)):
            raise ValueError(f"tilt must be {q.shape[0]} finite numbers (one per token), got {show(tilt)}")
        if not np.any(tilt):
            tilt = None
    support = q > 0
    p = np.ones_like(q)
    n_steps = int(steps.max())
    terms = np.zeros(n_steps)
    tcs = np.zeros(n_steps)
    mkl = np.zeros(n_steps)
    eps = 0.0
    for i in range(1, n_steps + 1):
        new = [j for j in range(L) if steps[j] == i]
        if not new:
            continue
        A = {j for j in range(L) if steps[j] < i}
        mA = _marg(q, A)
        joint_new = _cond(_marg(q, A | set(new)), mA)  # q(x_T | x_A)
        log_prod_q = np.zeros(())
        log_prod_p = np.zeros(())
        for j in new:
            qj = _cond(_marg(q, A | {j}), mA)  # q(x_j | x_A), axis j holds the token
            if beta == 1.0 and tilt is None:  # the oracle: eps_learning = 0 exactly, no round-off
                pj = qj
            else:
                pj = qj**beta
                if tilt is not None:
                    shape = [1] * L
                    shape[j] = q.shape[0]
                    pj = pj * np.exp(tilt).reshape(shape)
                pj = _cond(pj, pj.sum(axis=j, keepdims=True))
                # Assumption 4.1 on this (j, context): KL over axis j where the context has mass
                kl_ctx = rel_entr(qj, pj).sum(axis=j, keepdims=True)
                eps = max(eps, float(np.max(np.where(mA > 0, kl_ctx, 0.0))))
                mkl[i - 1] += float(np.sum(np.where(mA > 0, mA * kl_ctx, 0.0)))
            p = p * pj
            log_prod_q = log_prod_q + _log(qj)
            log_prod_p = log_prod_p + _log(pj)
        log_joint = _log(joint_new)
        lj = np.broadcast_to(log_joint, q.shape)[support]
        w = q[support]
        tcs[i - 1] = float(np.sum(w * (lj - np.broadcast_to(log_prod_q, q.shape)[support])))
        terms[i - 1] = float(np.sum(w * (lj - np.broadcast_to(log_prod_p, q.shape)[support])))
    return InstanceLaw(np.where(support, p, 0.0), terms, tcs, mkl, eps)


def sequence_kl(q: np.ndarray, p: np.ndarray) -> float:
    """``KL(q || p) = sum_x q log(q / p)`` over the table (``inf`` if ``p`` misses support)."""
    return float(rel_entr(q, p).sum())


def instances(L: int, pi) -> list[tuple[tuple[int, ...], float]]:
    """All instances ``steps in {1..N}^L`` of positive probability with ``P(tau) = prod_j pi_{steps_j}``."""
    pi = np.asarray(pi, dtype=np.float64)
    N = pi.size
    if N**L > MAX_INSTANCES:
        raise ValueError(f"N^L = {N}^{L} instances exceed MAX_INSTANCES = {MAX_INSTANCES}")
    out = []
    for steps in itertools.product(range(1, N + 1), repeat=L):
        w = float(np.prod(pi[np.asarray(steps) - 1]))
        if w > 0:
            out.append((steps, w))
    return out


@dataclass(frozen=True)
class MixtureLaw:
    """The sampler's output law ``p = E_tau p(. | tau)`` and the averaged per-instance quantities.

    Attributes
    ----------
    p : (V,)*L array
        ``p(x)`` on the support of ``q``.
    expected_instance_kl : float
        ``E_tau KL(q || p(. | tau))``.
    eps : float
        Assumption 4.1 constant: the max over all instances of :attr:`InstanceLaw.eps`.
    valid : float
        ``p(supp q) = 1 - SER(p)``.
    """

    p: np.ndarray
    expected_instance_kl: float
    eps: float
    valid: float


def mixture_law(q: np.ndarray, pi, beta: float = 1.0, tilt=None) -> MixtureLaw:
    """:class:`MixtureLaw` by enumerating every instance (``N^L <= MAX_INSTANCES``)."""
    p = np.zeros_like(q)
    ekl = 0.0
    eps = 0.0
    for steps, w in instances(q.ndim, pi):
        law = instance_law(q, steps, beta, tilt)
        p += w * law.p
        ekl += w * sequence_kl(q, law.p)
        eps = max(eps, law.eps)
    return MixtureLaw(p, ekl, eps, float(p[q > 0].sum()))


def table(language, L: int) -> np.ndarray:
    """``q`` as a ``(V,)*L`` table (:func:`numerics.exact.joint_table.joint_table`)."""
    return joint_table(language, L)
