"""What the dense and n-gram forward-backward kernels share: the scaled log-likelihood and the outputs.

Scaling (Rabiner; ``docs/methods/inference.md``): ``alpha_j`` is divided by its sum ``c_j`` at
every step and ``log q(x_obs) = sum_j log c_j``. The ``c_j`` are multiplied into a running
product that is folded into the log before it can underflow (:func:`fold_scale`), so there is
one ``log`` per about 340 steps instead of one per step, and no product ever leaves the normal
float64 range.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from numerics._jit import jit

__all__ = ["FOLD", "fold_scale", "PosteriorBuffers", "new_buffers", "check_stable"]

FOLD = 1e-150  # fold the running product of c_j into the log before it can underflow


@jit
def fold_scale(tot, logc, prod):
    """One step of ``log prod_j c_j``: returns the new ``(logc, prod)`` after the factor ``tot > 0``.

    ``log prod = logc + log(prod)``; a factor below :data:`FOLD` goes to ``logc`` directly, and
    ``prod`` is folded into ``logc`` when it drops below :data:`FOLD`.
    """
    if tot < FOLD:
        return logc + math.log(tot), prod
    prod *= tot
    if prod < FOLD:
        return logc + math.log(prod), 1.0
    return logc, prod


class PosteriorBuffers(NamedTuple):
    """The outputs a kernel writes.

    Attributes
    ----------
    loglik : (B,) float64
        ``log q(x_obs)``; ``-inf`` for an impossible sequence.
    marginals : (B, L, V) float64
        ``q(x_j = v | x_obs)``; NaN for every position of an impossible sequence.
    unstable : (B,) bool
        Set by a kernel when a possible sequence's posterior normalizer came out zero or not
        finite: round-off broke the scaled recursion (:func:`check_stable` raises).
    """

    loglik: np.ndarray
    marginals: np.ndarray
    unstable: np.ndarray


def new_buffers(batch: int, length: int, vocab_size: int) -> PosteriorBuffers:
    """Uninitialized :class:`PosteriorBuffers` (``unstable`` all False)."""
    return PosteriorBuffers(np.empty(batch), np.empty((batch, length, vocab_size)), np.zeros(batch, dtype=np.bool_))


def check_stable(out: PosteriorBuffers) -> None:
    """Fail loudly if round-off broke a possible sequence's posterior (it never should)."""
    if np.any(out.unstable):
        b = int(np.flatnonzero(out.unstable)[0])
        raise FloatingPointError(
            f"sequence {b} has log-likelihood {out.loglik[b]!r} but non-finite posterior marginals: "
            "the scaled recursion under- or overflowed (an extremely peaked model)"
        )
