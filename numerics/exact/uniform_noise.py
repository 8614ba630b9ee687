"""Exact law of the factorized uniform-noise reverse process on tiny cases: a Markov chain over canvases.

The canvas law starts uniform on ``V^L`` and moves, step ``i``, by the transition
``T_i[y, w] = prod_l p(w_l | y)`` (:func:`numerics.sampling.uniform_noise.reverse_kernel` on the oracle
marginals of every canvas at once); the law of ``y_N`` is the sampler's output law ``p``
(:func:`uniform_noise_output_law`), whose metrics are :func:`numerics.exact.output_law.law_metrics`'s.
The path KL (:mod:`numerics.sampling.uniform_noise`) is exact here too (:func:`uniform_noise_path_kl`),
from the canvas laws ``q_i(y) = q(y at level u_i)`` of the soft-evidence forward-backward.

Interval languages factorize over intervals under ``q``, under the forward noise and so under the
oracle's reverse chain: the output law at ``L = k l`` is the ``k``-fold product of the one-interval law,
and ``SER(L) = 1 - (1 - s)^(L / l)`` with ``s`` the one-interval SER (:func:`interval_uniform_ser`).
The cost is ``V^(2L)`` per step: ``V^L <= 4096`` canvases (:data:`MAX_CANVASES`).
"""

from __future__ import annotations

import math

import numpy as np

from numerics.exact.joint_table import all_sequences, joint_table
from numerics.exact.output_law import ExactMetrics, OutputLaw, law_metrics, nonnegative_kl
from numerics.inference.soft_evidence import uniform_noise_posterior
from numerics.languages.interval import IntervalLanguage
from numerics.sampling.uniform_noise import forward_kernel, reverse_kernel
from numerics.schedules import Schedule

__all__ = ["MAX_CANVASES", "uniform_noise_output_law", "uniform_noise_metrics", "uniform_noise_path_kl",
           "interval_uniform_ser"]

MAX_CANVASES = 4096  # V^L: the transition of a step has V^(2L) entries (16M float64 = 128 MiB)


def _canvases(language, length: int) -> np.ndarray:
    V = language.vocab_size
    if V**length > MAX_CANVASES:
        raise ValueError(f"V^L = {V}^{length} = {V**length} canvases exceed {MAX_CANVASES}: the exact uniform-noise "
                         "law is for tiny cases (Monte Carlo at scale)")
    return all_sequences(V, length)


def _transition(kernel: np.ndarray) -> np.ndarray:
    """``T[y, w] = prod_l kernel[y, l, w_l]`` (``(C, L, V)`` -> ``(C, C)``, ``w`` in C order)."""
    C, L, _ = kernel.shape
    T = kernel[:, 0, :]
    for pos in range(1, L):
        T = (T[:, :, None] * kernel[:, pos, None, :]).reshape(C, -1)
    return T


def _steps(u: np.ndarray):
    """The steps that move the canvas: ``(a, a')`` with ``a < a'`` and ``a < 1``."""
    return [(float(u[i - 1]), float(u[i])) for i in range(1, len(u)) if u[i] > u[i - 1] and u[i - 1] < 1.0]


def uniform_noise_output_law(language, length: int, schedule: Schedule) -> OutputLaw:
    """The exact output law ``p`` of the factorized uniform-noise sampler (module docstring)."""
    ys = _canvases(language, length)
    V = language.vocab_size
    law = np.full(len(ys), float(V) ** -length)
    for a, a_next in _steps(schedule.u):
        m = uniform_noise_posterior(language, ys, a).marginals
        law = law @ _transition(reverse_kernel(m, ys, a, a_next))
    q = joint_table(language, length)
    return OutputLaw(q, law.reshape(q.shape), 0.0, "enumerate-canvases", f"{schedule.name} N={schedule.n_steps}")


def uniform_noise_metrics(language, length: int, schedule: Schedule) -> ExactMetrics:
    """KL / TER / SER and the rest of :class:`~numerics.exact.output_law.ExactMetrics`, exact."""
    return law_metrics(uniform_noise_output_law(language, length, schedule))


def uniform_noise_path_kl(language, length: int, schedule: Schedule) -> float:
    """The path KL ``sum_i E_{y_{i-1} ~ q_{i-1}} KL(q(y_i | y_{i-1}) || p(y_i | y_{i-1}))`` (nats), exactly.

    ``q(y_i | y_{i-1}) = q_i(y_i) R_i(y_i -> y_{i-1}) / q_{i-1}(y_{i-1})`` with ``q_i`` the canvas law at
    level ``u_i`` (``exp`` of the soft-evidence ``log q(y)``; ``q`` itself at level 1).
    """
    ys = _canvases(language, length)
    V = language.vocab_size

    def canvas_law(a: float) -> np.ndarray:
        if a >= 1.0:
            return joint_table(language, length).ravel().copy()
        return np.exp(uniform_noise_posterior(language, ys, a).loglik)

    total = 0.0
    for a, a_next in _steps(schedule.u):
        q_prev, q_next = canvas_law(a), canvas_law(a_next)
        R = forward_kernel(a, a_next, V)
        back = _transition(R[ys])  # back[w, y] = prod_l R[w_l, y_l]
        joint = q_next[None, :] * back.T  # joint[y, w] = q(y_{i-1} = y, y_i = w)
        m = uniform_noise_posterior(language, ys, a).marginals
        T = _transition(reverse_kernel(m, ys, a, a_next))
        on = joint > 0
        cond = joint[on] / np.broadcast_to(q_prev[:, None], joint.shape)[on]
        total += float(np.sum(joint[on] * (np.log(cond) - np.log(T[on]))))
    return nonnegative_kl(total, length * math.log(V))


def interval_uniform_ser(l: int, schedule: Schedule, length: int | None = None) -> tuple[float, float]:
    """``(s, SER(L))``: the exact one-interval SER ``s`` of the interval language of interval length ``l``,
    and ``SER(L) = 1 - (1 - s)^(L / l)`` (``length`` a multiple of ``l``; default ``l``)."""
    length = l if length is None else int(length)
    if length % l:
        raise ValueError(f"length {length} is not a multiple of the interval length {l}")
    s = uniform_noise_metrics(IntervalLanguage(l), l, schedule).ser.value
    return s, -math.expm1((length // l) * math.log1p(-s))
