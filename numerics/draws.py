"""Categorical draws: the exact float64 inverse CDF, and MDLM's float32 Gumbel-max for the ablation.

Inverse CDF (``docs/methods/sampling.md``): with weights ``w_0..w_{K-1} >= 0`` (not necessarily
normalized), cumulative sums ``c_v = w_0 + .. + w_v`` (summed left to right) and a uniform
``u`` in ``[0, 1)``, index ``v`` is drawn when ``c_{v-1} <= u c_{K-1} < c_v``. An index of weight 0
has an empty interval and is never drawn. Should ``u c_{K-1}`` round up to ``c_{K-1}``, the last
index of positive weight is drawn. Every sampler of the engine draws tokens this way, from one
uniform per token, so two implementations fed the same uniforms give the same tokens.

Float32 Gumbel-max: MDLM's ``_sample_categorical``, ``argmax(w / (1e-10 - log(U + 1e-10)))`` with
float32 uniforms ``U``, reproduced on purpose (constant included) for the float32 ablation: in
exact arithmetic a draw from ``w / sum(w)``, in float32 it under-draws rare indices at many steps.
"""

from __future__ import annotations

import numpy as np

from numerics._jit import jit

__all__ = ["inverse_cdf", "draw_inverse_cdf", "inverse_cdf_rows", "GUMBEL_EPS", "gumbel_argmax_float32"]

GUMBEL_EPS = np.float32(1e-10)  # MDLM's _sample_categorical constant, reproduced on purpose (float32 ablation)


@jit
def inverse_cdf(weights, u):
    """The index drawn from the unnormalized row ``weights`` ``(K,)`` at the uniform ``u`` (module docstring).

    ``weights`` must have a positive sum.
    """
    K = weights.shape[0]
    c = 0.0
    for v in range(K):
        c += weights[v]
    target = u * c
    c = 0.0
    idx = 0
    for v in range(K):
        c += weights[v]
        if c <= target:
            idx += 1
    if idx >= K:
        idx = K - 1
        while weights[idx] <= 0.0:
            idx -= 1
    return idx


@jit
def inverse_cdf_rows(weights, uniforms):
    """:func:`inverse_cdf` of every row of ``weights`` ``(k, K)`` at ``uniforms`` ``(k,)``; ``(k,)`` int64.

    No checks: every row must be finite, non-negative, with a positive sum (see :func:`draw_inverse_cdf`).
    """
    out = np.empty(weights.shape[0], dtype=np.int64)
    for r in range(weights.shape[0]):
        out[r] = inverse_cdf(weights[r], uniforms[r])
    return out


def draw_inverse_cdf(probs: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """One index per row of ``probs`` ``(k, V)`` by the float64 inverse CDF at ``uniforms`` ``(k,)``.

    Rows that are not finite or sum to 0 are *undefined* (the samplers' convention,
    :mod:`numerics.sampling.samplers`) and replaced by the uniform law. A negative entry is an error.
    """
    p = np.asarray(probs, dtype=np.float64)
    k, V = p.shape
    undefined = ~np.all(np.isfinite(p), axis=1)
    if np.any(p[~undefined] < 0):
        raise ValueError("denoiser returned a negative probability")
    undefined |= p.sum(axis=1) <= 0.0
    if np.any(undefined):
        p = p.copy()
        p[undefined] = 1.0 / V
    return inverse_cdf_rows(np.ascontiguousarray(p), np.ascontiguousarray(uniforms, dtype=np.float64).reshape(k))


def gumbel_argmax_float32(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """MDLM's float32 Gumbel-max draw, one index per row of ``weights`` ``(k, K)`` (module docstring).

    Random stream: ``rng.random((k, K), dtype=float32)``. ``weights`` is cast to float32 first.
    """
    w = np.asarray(weights).astype(np.float32)
    gumbel = GUMBEL_EPS - np.log(rng.random(w.shape, dtype=np.float32) + GUMBEL_EPS)
    return np.argmax(w / gumbel, axis=1)
