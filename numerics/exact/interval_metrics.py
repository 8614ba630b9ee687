"""Every metric of the oracle sampler on the interval language in closed form (Example C.7, Theorem 4.4).

The interval language with interval length ``l`` (:class:`numerics.languages.interval.IntervalLanguage`)
is uniform on its support: every pair ``(j, k)`` of positions inside one interval shares one
uniform bit, shown once in ``x_j`` and once in ``x_k``. Write ``P`` for the number of such pairs
with both positions inside the sequence, ``P = (L // l) C(l, 2) + C(L mod l, 2)``, so
``q(x) = 2^{-n_free_bits(L)}`` on the support.

Given an instance ``tau`` (each position's reveal step, Definition B.1), the oracle draws each
revealed token from its marginal given the tokens revealed before; a token's bits are independent
and each is determined when its partner was revealed earlier, uniform otherwise. So a pair
revealed at two different steps comes out consistent with probability 1 (the later copy is
forced) and a pair revealed at the same step with probability 1/2 (two independent uniform
copies). With ``c(tau)`` the number of pairs revealed at the same step, for every ``x`` in the
support

    p(x | tau) = q(x) 2^{-c(tau)},   hence   p(x) = E_tau[p(x | tau)] = q(x) (1 - SER),

since ``E_tau[2^{-c}] = P(valid) = 1 - SER`` (:func:`numerics.exact.interval.interval_ser`). It follows that

* ``KL(q || p) = -log(1 - SER)`` and the SER certificate ``1 - exp(-KL)`` equals the SER;
* ``TER(p) = exp((H(q) + KL) / L)`` with ``H(q) = n_free_bits(L) log 2``;
* the generative perplexity is ``+inf`` whenever ``SER > 0`` (``p`` leaves the support);
* the Jensen bound of Lemma B.2: ``KL(q || p(. | tau)) = c(tau) log 2``, so
  ``E_tau KL(q || p(. | tau)) = log 2 * P * sum_i pi_i^2`` (each pair shares a step with probability
  ``sum_i pi_i^2``); step ``i`` contributes ``log 2 * P * pi_i^2``, the expected total correlation of
  the tokens it reveals (Lemma B.3).

The SER (and so everything but the Jensen bound) needs ``l`` to divide ``L``, as
:func:`~numerics.exact.interval.interval_ser` does. Cross-checked against enumeration of all
instances and the DP (:mod:`numerics.exact.enumerate`, :mod:`numerics.exact.dp`) in
``tests/numerics/test_interval_metrics.py``. The pair-bit picture is that of Example C.7 in
docs/derivations.md.
"""

from __future__ import annotations

import math

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.information_curve import JensenBound
from numerics.exact.interval import interval_ser_from_validity, interval_validity, sequence_log_validity
from numerics.exact.output_law import ExactMetrics, ser_kl_certificate
from numerics.languages.interval import IntervalLanguage, whole_intervals
from numerics.schedules import Schedule

__all__ = ["METHOD", "interval_pairs", "interval_jensen_bound", "interval_metrics"]

METHOD = "closed-form (interval language)"


def interval_pairs(length: int, l: int) -> int:
    """``P``: pairs of positions that share a bit with both positions among the first ``length``."""
    if int(length) != length or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    IntervalLanguage(l)  # validates l
    return (length // l) * math.comb(l, 2) + math.comb(length % l, 2)


def interval_jensen_bound(schedule: Schedule, length: int, l: int) -> JensenBound:
    """``E_tau KL(q || p(. | tau)) = log 2 * P * sum_i pi_i^2`` (module docstring), any ``L``."""
    per_step = math.log(2.0) * interval_pairs(length, l) * np.square(schedule.pi)
    per_step.setflags(write=False)
    return JensenBound(Estimate(float(per_step.sum()), 0.0, METHOD), per_step)


def interval_metrics(schedule: Schedule, length: int, l: int) -> ExactMetrics:
    """Every metric of :class:`~numerics.exact.output_law.ExactMetrics` in closed form (module docstring).

    Raises ``ValueError`` when ``l`` does not divide ``length`` (the SER closed form needs whole
    intervals).
    """
    whole_intervals(length, l)
    validity = interval_validity(schedule, l)  # P(one interval comes out valid)
    ser = interval_ser_from_validity(validity, length, l).probability
    kl = -sequence_log_validity(validity, length, l) + 0.0  # KL = -log P(valid) >= 0 (+ 0.0: no -0.0)
    entropy = IntervalLanguage(l).sequence_entropy(length)
    ter_data = math.exp(entropy / length)

    def exact(value: float) -> Estimate:
        return Estimate(float(value), 0.0, METHOD)

    return ExactMetrics(
        kl=exact(kl),
        log_ter_gap=exact(kl / length),
        ter=exact(math.exp((entropy + kl) / length)),
        ter_data=exact(ter_data),
        ser=exact(ser),
        ser_kl_certificate=ser_kl_certificate(exact(kl)),
        gen_ppl=exact(math.inf if ser > 0 else ter_data),
        gen_ppl_data=exact(ter_data),
        kl_jensen_bound=interval_jensen_bound(schedule, length, l).total,
    )
