"""The theory next to a trained model: Theorems 4.2 / 4.3 / 4.4 with the *measured* ``eps_learning``,
the oracle's exact curves, and the split of the learned sampler's error.

Every bound is judged at each point as one of :data:`VERDICTS`, never counted as holding when it
says nothing:

* ``holds`` -- the measured value is on the right side of the bound;
* ``violated`` -- on the wrong side with the whole 95% interval (a finding);
* ``within-ci`` -- on the wrong side, but the 95% interval reaches the bound (inconclusive);
* ``vacuous`` -- the bound is trivial there (an SER upper bound ``>= 1``, a lower bound ``<= 0``);
* ``not-applicable`` -- a hypothesis of the theorem fails at this point (stated with the value).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numerics.exact.interval import interval_ser, sequence_collision_probability
from numerics.metrics import jensen_bound
from numerics.schedules import Schedule
from theory import EPS_MAX, b12_solve_eps, c9_bound, p_e, theorem42_constants

__all__ = ["VERDICTS", "judge_upper", "judge_lower", "theorem42", "lemma_c6",
           "factorization_gap", "interval_oracle_ser", "oracle_threshold", "collision_probability"]

VERDICTS = ("holds", "violated", "within-ci", "vacuous", "not-applicable")


def judge_upper(value: float, ci_low: float, bound: float, *, vacuous: bool) -> str:
    """Verdict of an upper bound ``value <= bound`` for a measured ``value`` with interval lower end ``ci_low``."""
    if vacuous:
        return "vacuous"
    if value <= bound:
        return "holds"
    return "violated" if ci_low > bound else "within-ci"


def judge_lower(value: float, ci_high: float, bound: float, *, vacuous: bool) -> str:
    """Verdict of a lower bound ``value >= bound`` for a measured ``value`` with interval upper end ``ci_high``."""
    if vacuous:
        return "vacuous"
    if value >= bound:
        return "holds"
    return "violated" if ci_high < bound else "within-ci"


def collision_probability(schedule: Schedule, length: int) -> float:
    """``delta_N``: probability that two of the ``L`` positions share a step (Lemma C.1, exact)."""
    return float(sequence_collision_probability(schedule, length).probability)


def theorem42(order: int, vocab: int, n_steps: int, length: int, eps_learning: float) -> dict[str, Any]:
    """Theorem 4.2's bound ``log TER(p) - log TER(q) <= eps_learning + 4 eps log|V|`` at ``N`` steps.

    ``eps`` is the smallest whose Lemma B.12 schedule fits in ``N`` steps. The theorem needs
    ``L >= L_0(eps, n)`` and the B.12 schedule; ``applies`` is False otherwise (our samplers use
    MDLM's schedule, so it is drawn for comparison only). ``N = 1`` has no B.12 schedule.
    """
    if n_steps < 2:
        return {"eps": None, "log_ter_gap": None, "length_threshold": None, "applies": False}
    eps = b12_solve_eps(n_steps, order)
    c = theorem42_constants(eps, order, vocab, eps_learning)
    return {"eps": float(eps), "log_ter_gap": float(c["ter_gap_bound"]), "length_threshold": int(c["L_0"]),
            "applies": False}


def lemma_c6(n_steps: int, length: int, l: int, eps_learning: float) -> dict[str, Any]:
    """Lemma C.6's lower bound on SER with Example C.7's ``p_e = 1/2 - eps_learning`` (Theorem 4.4).

    ``hypothesis`` is Theorem 4.4's ``eps_learning < 1/128``; with a larger measured value the
    bound is evaluated all the same but marked not applicable.
    """
    if not 0.0 <= eps_learning < 0.5:
        return {"value": 0.0, "p_e": None, "hypothesis": False}
    pe = p_e(eps_learning)
    return {"value": float(c9_bound(n_steps, length, l, pe)), "p_e": pe, "hypothesis": eps_learning < float(EPS_MAX)}


def factorization_gap(language: Any, schedule: Schedule, length: int, samples: int, seed: int) -> dict[str, Any]:
    """The oracle's Jensen bound ``E_tau KL(q || p(.|tau)) / L`` per token by the best method there is
    (:func:`numerics.metrics.jensen_bound`: the interval closed form, the token Markov chain rule,
    else Monte Carlo with its standard error)."""
    est = jensen_bound(language, length, schedule, samples=samples, rng=np.random.default_rng(seed))
    return {"value": est.value / length, "stderr": est.stderr / length, "method": est.method, "samples": est.samples}


def interval_oracle_ser(schedule: Schedule, length: int, l: int) -> float:
    """Exact SER of the oracle on the interval language: ``1 - E[2^-c]^(L/l)`` (Example C.7)."""
    return float(interval_ser(schedule, length, l).probability)


def oracle_threshold(length: int, l: int, make) -> int:
    """Smallest ``N`` whose exact oracle SER on the interval language is ``<= 1/2`` (``make(N)``: the schedule).

    The SER is non-increasing in ``N`` for the schedules used here; doubling then bisection.
    """
    def ok(N: int) -> bool:
        return interval_oracle_ser(make(N), length, l) <= 0.5

    hi = 1
    while not ok(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi
