"""Reverse KL and total variation of an exact output law (beside :func:`numerics.exact.output_law.law_metrics`).

For the data law ``q`` and a sampler's law ``p`` (``docs/methods/decoders.md``, DECODERS §5):

* ``KL(p || q) = sum_{p(x) > 0} p(x) log(p(x) / q(x))``: ``inf`` as soon as ``p`` puts mass outside
  ``supp q`` (``SER(p) > 0``); finite and informative on a full-support language;
* ``TV(p, q) = 1/2 sum_x |p(x) - q(x)|`` (``>= SER(p)`` on a language with zeros).

Under the ``"drop"`` convention of :class:`~numerics.exact.output_law.OutputLaw` the dropped
``undefined_mass`` lies outside ``supp q``: it adds ``undefined_mass / 2`` to TV and makes the
reverse KL infinite; under ``"uniform"`` it is already in ``p``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.output_law import OutputLaw

__all__ = ["Divergences", "law_divergences"]


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
    tv = 0.5 * (float(np.abs(p - q).sum()) + dropped)
    outside = bool(np.any(p[q == 0] > 0)) or dropped > 0
    if outside:
        rkl = math.inf
    else:
        on = p > 0
        rkl = float(np.sum(p[on] * (np.log(p[on]) - np.log(q[on]))))
    return Divergences(Estimate(rkl, 0.0, law.method), Estimate(tv, 0.0, law.method))
