"""The factorized reverse process of uniform-noise diffusion with the oracle denoiser (``docs/methods/uniform-noise.md``).

Forward process: each position independently keeps its token with probability ``alpha_t`` and is
replaced by a uniform token otherwise (it may draw its own token back). A schedule's ``u`` vector
(:class:`~numerics.schedules.Schedule`, ``u_0 = 0``, ``u_N = 1``) gives the levels ``alpha`` of the
canvases ``y_0`` (pure noise), ``y_1``, ..., ``y_N = x_0``. From level ``a = u_{i-1}`` to ``a' = u_i``
the forward step is ``R(w -> y) = r [y = w] + (1 - r) / V`` with ``r = a / a'``.

Reverse step (one network call): every position ``l`` draws its next token ``w`` independently from

    ``p(w | y) = sum_x m_l(x) Q_{a'}(x -> w) R(w -> y_l) / Q_a(x -> y_l)``,   ``Q_a(x -> y) = a [y = x] + (1 - a) / V``,

with ``m_l = q(x_0^l | y)`` the oracle marginal (:func:`numerics.inference.soft_evidence.uniform_noise_posterior`)
and ``(Q_{a'} R) / Q_a`` the exact per-position posterior ``q(y'_l | y_l, x_0^l)``. Tokens drawn in one
step are independent given ``y``: the factorization error, the only error with the oracle. At ``a' = 1`` the
draw is the marginal itself; at ``a = 0`` it is ``a' m_l + (1 - a') / V``.

The path KL. The forward chain ``y_0 .. y_N`` under ``q`` (``x_0 ~ q``, noised down the levels) and the
reverse chain under ``p`` (``y_0`` uniform) have the same first law, so by data processing
``KL(q(x_0) || p(x_0)) <= KL_path = E_q[ sum_i log q(y_i | y_{i-1}) - log p(y_i | y_{i-1}) ]``, and with
``q(y_i | y_{i-1}) = q(y_i) R_i(y_i -> y_{i-1}) / q(y_{i-1})`` the sum telescopes to one term per sample

    ``log q(x_0) + L log V + sum_i [ sum_l log R_i(y_i^l -> y_{i-1}^l) - log p(y_i | y_{i-1}) ]``,

every part exact (:func:`path_kl_terms`): the uniform-noise counterpart of the masked Jensen bound
``E_tau KL(q || p(.|tau))``, an upper bound on ``KL(q || p)``, never reported under its name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from numerics.draws import draw_inverse_cdf
from numerics.inference.soft_evidence import uniform_noise_posterior
from numerics.schedules import Schedule

__all__ = ["reverse_kernel", "UniformNoiseSamples", "sample_uniform_noise", "path_kl_terms", "forward_kernel"]


def forward_kernel(a_from: float, a_to: float, V: int) -> np.ndarray:
    """``R[w, y]``: the law of the token at level ``a_from`` given the token ``w`` at level ``a_to >= a_from``
    (``R = r I + (1 - r)/V``, ``r = a_from / a_to``; the identity when ``a_to = 0``)."""
    r = 1.0 if a_to == 0.0 else a_from / a_to
    return r * np.eye(V) + (1.0 - r) / V


def reverse_kernel(marginals: np.ndarray, canvas: np.ndarray, a: float, a_next: float) -> np.ndarray:
    """``p(w | y)`` of every position (``(..., V)``) from the oracle marginals ``(..., V)`` and the canvas ``(...)``.

    ``p(w) = g(w) [a' m(w) / Z(w) + (1 - a')/V sum_x m(x) / Z(x)]`` with ``g(w) = r [w = y] + (1 - r)/V``,
    ``Z(x) = Q_a(x -> y) = a [x = y] + (1 - a)/V`` (module docstring). ``a = 1`` (a clean canvas) keeps
    the canvas; ``a' = a`` (an empty step) too.
    """
    V = marginals.shape[-1]
    onehot = canvas[..., None] == np.arange(V)
    if a >= 1.0 or a_next <= a:
        return onehot.astype(np.float64)
    r = a / a_next
    g = r * onehot + (1.0 - r) / V
    z = a * onehot + (1.0 - a) / V  # > 0 since a < 1
    mz = marginals / z
    return g * (a_next * mz + (1.0 - a_next) / V * mz.sum(axis=-1, keepdims=True))


@dataclass(frozen=True)
class UniformNoiseSamples:
    """Outputs of the factorized uniform-noise sampler.

    Attributes
    ----------
    tokens : (n, L) int64
        The final canvases ``y_N`` (the samples ``x ~ p``).
    calls : int
        Network calls per sequence: the steps whose level rises below 1 (``u_{i-1} < 1``, ``u_i > u_{i-1}``).
    """

    tokens: np.ndarray
    calls: int


def _calls(u: np.ndarray) -> int:
    return int(np.count_nonzero((u[1:] > u[:-1]) & (u[:-1] < 1.0)))


def sample_uniform_noise(language, schedule: Schedule, n: int, length: int, rng: np.random.Generator) -> UniformNoiseSamples:
    """``n`` sequences of ``length`` tokens from the factorized reverse process with the oracle denoiser."""
    V = language.vocab_size
    u = schedule.u
    y = rng.integers(0, V, size=(n, length))
    for i in range(1, len(u)):
        a, a_next = float(u[i - 1]), float(u[i])
        if a_next <= a or a >= 1.0:
            continue
        m = uniform_noise_posterior(language, y, a).marginals
        k = reverse_kernel(m, y, a, a_next)
        y = draw_inverse_cdf(k.reshape(-1, V), rng.random(n * length)).reshape(n, length)
    return UniformNoiseSamples(y, _calls(u))


def path_kl_terms(language, schedule: Schedule, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` i.i.d. terms whose mean is the path KL (module docstring), from forward chains ``x_0 ~ q``.

    Returns ``(n,)`` float64 (nats): ``log q(x_0) + L log V + sum_i [sum_l log R_i - log p(y_i | y_{i-1})]``.
    """
    from numerics.inference.forward_backward import log_q

    V = language.vocab_size
    u = schedule.u
    x0 = language.sample(n, length, rng)
    chain = [x0]
    for i in range(len(u) - 1, 0, -1):  # noise y_i (level u_i) down to y_{i-1} (level u_{i-1})
        R = forward_kernel(float(u[i - 1]), float(u[i]), V)
        chain.append(draw_inverse_cdf(R[chain[-1].ravel()], rng.random(n * length)).reshape(n, length))
    chain.reverse()  # chain[i] = y_i
    terms = log_q(language, x0) + length * np.log(V)
    rows = np.arange(n)[:, None]
    cols = np.arange(length)[None, :]
    for i in range(1, len(u)):
        a, a_next = float(u[i - 1]), float(u[i])
        y_prev, y_i = chain[i - 1], chain[i]
        R = forward_kernel(a, a_next, V)
        with np.errstate(divide="ignore"):
            terms += np.log(R[y_i, y_prev]).sum(axis=1)
        if a >= 1.0 or a_next <= a:
            continue  # p keeps the canvas, as q does (y_i = y_{i-1}): both terms are 0
        k = reverse_kernel(uniform_noise_posterior(language, y_prev, a).marginals, y_prev, a, a_next)
        terms -= np.log(k[rows, cols, y_i]).sum(axis=1)
    return terms
