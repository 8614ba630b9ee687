"""Reverse KL and total variation of an exact output law (beside :func:`numerics.exact.output_law.law_metrics`).

For the data law ``q`` and a sampler's law ``p`` (``docs/methods/decoders.md``, DECODERS §5):

* ``KL(p || q) = sum_{p(x) > 0} p(x) log(p(x) / q(x))``: ``inf`` as soon as ``p`` puts mass outside
  ``supp q`` (``SER(p) > 0``); finite and informative on a full-support language;
* ``TV(p, q) = 1/2 sum_x |p(x) - q(x)|`` (``>= SER(p)`` on a language with zeros).

Under the ``"drop"`` convention of :class:`~numerics.exact.output_law.OutputLaw` the dropped
``undefined_mass`` lies outside ``supp q``: it adds ``undefined_mass / 2`` to TV and makes the
reverse KL infinite; under ``"uniform"`` it is already in ``p``.

Round-off is labelled as such, as for the forward KL
(:func:`numerics.exact.output_law.nonnegative_kl`): a reverse KL of round-off size below 0 is
reported as 0 (a larger negative one raises), and a TV below :data:`TV_ROUNDOFF_ATOL` -- a float64
sum of ``|p(x) - q(x)|`` for ``p = q`` up to the rounding of each probability, e.g. ``7e-17`` for
``random`` remasking, whose law is exactly ``q`` -- is reported as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.output_law import OutputLaw, nonnegative_kl
from numerics.tolerances import KL_ROUNDOFF_RTOL

__all__ = ["TV_ROUNDOFF_ATOL", "Divergences", "law_divergences", "nonnegative_tv"]

#: A TV at most this is round-off: the sum of ``V^L`` differences of probabilities, each exact to
#: ~1e-16 relative, of laws summing to 1 (the same bound as :data:`numerics.tolerances.KL_ROUNDOFF_RTOL`).
TV_ROUNDOFF_ATOL = KL_ROUNDOFF_RTOL


def nonnegative_tv(tv: float) -> float:
    """An exact ``TV(p, q)`` as reported: a value in ``[0, TV_ROUNDOFF_ATOL]`` (round-off of ``p = q``) is 0."""
    tv = float(tv)
    if tv < 0:
        raise ValueError(f"TV = {tv!r} < 0: a sum of absolute values is never negative")
    return 0.0 if tv <= TV_ROUNDOFF_ATOL else tv


@dataclass(frozen=True)
class Divergences:
    """Reverse KL and total variation of an exact law (each exact, stderr 0; natural logs).

    Attributes
    ----------
    reverse_kl : Estimate
        ``KL(p || q)``; ``inf`` when ``p`` leaves ``supp q``.
    tv : Estimate
        ``TV(p, q)``.
    """

    reverse_kl: Estimate
    tv: Estimate


def law_divergences(law: OutputLaw) -> Divergences:
    """:class:`Divergences` of an exact :class:`OutputLaw` (module docstring)."""
    q, p = law.q.ravel(), law.p.ravel()
    dropped = law.undefined_mass if law.undefined == "drop" else 0.0
    tv = nonnegative_tv(0.5 * (float(np.abs(p - q).sum()) + dropped))
    outside = bool(np.any(p[q == 0] > 0)) or dropped > 0
    if outside:
        rkl = math.inf
    else:
        on = p > 0
        logq = np.log(q[on])
        # the terms are of size |log q|: that is the round-off scale of their sum
        rkl = nonnegative_kl(float(np.sum(p[on] * (np.log(p[on]) - logq))), float(np.sum(p[on] * np.abs(logq))))
    return Divergences(Estimate(rkl, 0.0, law.method), Estimate(tv, 0.0, law.method))
