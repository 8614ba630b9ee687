"""The typed result every metric returns: a value with how it was obtained, and its one JSON shape.

Every number the engine reports, exact or Monte Carlo, is an :class:`Estimate`; every command's
JSON shows it in one shape (:meth:`Estimate.json_record`, documented in docs/schema.md)::

    {"value": 0.9242, "stderr": 0.0081, "ci_low": 0.907, "ci_high": 0.939, "confidence": 0.95,
     "method": "mc (exact support check, Clopper-Pearson)", "samples": 1000, "exact": false}

Numbers are written at their meaningful precision (:func:`meaningful`): an exact value to 13
significant digits (float64 round-off of a sum is ~1e-15 relative: ``4`` calls, not
``3.9999999999999982``), a Monte Carlo value and its interval to two digits beyond its standard
error's leading digit, the standard error to 3 significant digits.

A field that is not a finite number is ``null`` and ``null_reason`` says why. A Monte Carlo
estimate never reads as exact: when every sample agrees (SER 1.0 from 1000 invalid samples) its
sample standard error is 0, which is no uncertainty at all, so ``stderr`` is ``null`` with that
reason and the interval (Clopper-Pearson for a proportion) carries the uncertainty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.tolerances import AGREE_RTOL

__all__ = [
    "CONFIDENCE",
    "ESTIMATE_FIELDS",
    "Estimate",
    "clopper_pearson",
    "is_estimate_record",
    "Metric",
    "Unavailable",
    "meaningful",
    "mean_estimate",
    "normal_interval",
    "unavailable_record",
]

CONFIDENCE = 0.95  # two-sided confidence of every interval the engine reports

#: The keys of every estimate in the engine's JSON, in order (``null_reason`` is added when a field is null).
ESTIMATE_FIELDS = ("value", "stderr", "ci_low", "ci_high", "confidence", "method", "samples", "exact")


@dataclass(frozen=True)
class Estimate:
    """A number together with how it was obtained.

    Attributes
    ----------
    value : float
    stderr : float
        Standard error of a Monte Carlo estimate; 0.0 for an exact value.
    method : str
        E.g. ``"enumerate"``, ``"dp"``, ``"markov-chain-rule"``, ``"mc"``, ``"closed-form"``.
    samples : int
        Monte Carlo sample count (0 for exact values).
    ci_low, ci_high : float or None
        Two-sided confidence interval at ``confidence`` given by the estimator (Clopper-Pearson
        for a proportion, delta method for a perplexity); ``None``: the normal interval
        ``value +- z stderr`` is reported (:func:`normal_interval`).
    confidence : float
        Level of the interval.
    """

    value: float
    stderr: float
    method: str
    samples: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float = CONFIDENCE

    @property
    def exact(self) -> bool:
        return self.samples == 0 and self.stderr == 0.0

    def interval(self) -> tuple[float, float]:
        """``(ci_low, ci_high)``: the point itself when exact, the estimator's own interval when it
        gave one, else :func:`normal_interval` (NaN ends when the standard error is not finite)."""
        if self.exact:
            return self.value, self.value
        if self.ci_low is not None and self.ci_high is not None:
            return float(self.ci_low), float(self.ci_high)
        return normal_interval(self.value, self.stderr, self.confidence)

    def json_record(self, meaningful_digits: bool = True) -> dict[str, Any]:
        """The estimate in the engine's one JSON shape (:data:`ESTIMATE_FIELDS`, docs/schema.md).

        Numbers at their meaningful precision (module docstring); ``meaningful_digits=False`` keeps
        every computed bit (the report's internal records, which later steps compute with).

        Non-finite fields are left as floats here; :func:`numerics.provenance.to_jsonable` writes
        them as ``null``. The ``null_reason`` entries written here say more than "not a number":
        what an infinite value means, and why a Monte Carlo standard error of 0 is not reported.
        """
        lo, hi = self.interval()
        # every Monte Carlo sample gave the same value, or the same up to float64 round-off (a standard
        # error of 1.7e-18 on a constant is no uncertainty either; mean_estimate's rule, for any estimator)
        agree = not self.exact and (self.stderr == 0.0 or self.stderr <= AGREE_RTOL * abs(self.value))
        if agree and (not lo < hi or self.ci_low is None):
            lo = hi = math.nan  # an interval of width 0 (normal, from a 0 stderr) would read as certainty
        value, stderr = self.value, self.stderr
        if meaningful_digits and (self.exact or agree):  # no uncertainty to round at: 13 digits
            value, lo, hi = meaningful(value), meaningful(lo), meaningful(hi)
        elif meaningful_digits and math.isfinite(stderr) and stderr > 0:
            value, lo, hi = (meaningful(x, stderr) for x in (value, lo, hi))
            stderr = float(f"{stderr:.3g}")
        record: dict[str, Any] = {
            "value": value, "stderr": None if agree else stderr, "ci_low": lo, "ci_high": hi,
            "confidence": None if self.exact else self.confidence, "method": self.method,
            "samples": int(self.samples), "exact": self.exact,
        }
        reasons: dict[str, str] = {}
        if not math.isfinite(self.value):
            reasons["value"] = f"{_name(self.value)} ({self.method})"
        if agree:
            reasons["stderr"] = (f"all {self.samples} samples gave the same value (up to float64 round-off): their "
                                 "standard error is 0, which "
                                 "is no uncertainty; the value is an estimate and its interval is the uncertainty")
        elif not math.isfinite(self.stderr):
            reasons["stderr"] = f"{_name(self.stderr)}: " + (
                "the value is not finite" if not math.isfinite(self.value) else "fewer than two independent terms")
        for key, end in (("ci_low", lo), ("ci_high", hi)):
            if math.isfinite(end):
                continue
            if math.isnan(end):
                reasons[key] = "no interval: " + ("the samples all agree and this estimator has no exact interval "
                                                  "for that case" if agree else "the standard error is not finite")
            else:
                reasons[key] = f"{_name(end)}" + (f": the value is {_name(self.value)}" if not math.isfinite(self.value) else "")
        if reasons:
            record["null_reason"] = reasons
        return record


EXACT_DIGITS = 13  # significant digits of an exact value: round-off (~1e-15 relative) is below the last one


def meaningful(x: float, stderr: float | None = None) -> float:
    """``x`` at its meaningful precision: :data:`EXACT_DIGITS` significant digits, or with a Monte
    Carlo ``stderr`` two decimal places beyond the standard error's leading digit (non-finite: as is).

    >>> meaningful(3.9999999999999982), meaningful(0.8999999999999999), meaningful(0.123456789, 0.0034)
    (4.0, 0.9, 0.12346)
    """
    if not math.isfinite(x) or x == 0.0:
        return x
    if stderr is None or not math.isfinite(stderr) or stderr <= 0:
        return float(f"{x:.{EXACT_DIGITS}g}")
    return round(x, 2 - math.floor(math.log10(stderr)))


def _name(x: float) -> str:
    return "NaN" if math.isnan(x) else ("+inf" if x > 0 else "-inf")


def normal_interval(value: float, stderr: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """``value -+ z stderr`` with ``z`` the normal quantile of ``(1 + confidence) / 2``; NaN ends if
    ``stderr`` is not finite."""
    if not math.isfinite(stderr) or not math.isfinite(value):
        return math.nan, math.nan
    from scipy import stats  # here, not at import: scipy.stats takes seconds to import

    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return value - z * stderr, value + z * stderr


def is_estimate_record(data: Any) -> bool:
    """Whether converted JSON ``data`` is an estimate record (a dict with at least ``value`` and ``method``)."""
    return isinstance(data, dict) and {"value", "method"} <= set(data)


def unavailable_record(reason: str) -> dict[str, Any]:
    """The estimate shape of a quantity the chosen method cannot give (``value`` null, ``reason`` why)."""
    return {"value": None, "stderr": None, "ci_low": None, "ci_high": None, "confidence": None,
            "method": "unavailable", "samples": 0, "exact": False,
            "null_reason": {"value": reason}}


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson (exact) two-sided interval for a binomial proportion ``k / n``.

    ``[B(a/2; k, n-k+1), B(1-a/2; k+1, n-k)]`` with ``B`` the Beta quantile and ``a = 1 - confidence``;
    the lower end is 0 when ``k = 0`` and the upper end 1 when ``k = n``.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    a = 1.0 - confidence
    from scipy import stats  # here, not at import (seconds)

    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class Unavailable:
    """A quantity the chosen method cannot give, with the reason (JSON: :func:`unavailable_record`).

    Attributes
    ----------
    reason : str
        Why there is no value (e.g. "KL(q || p) of the sampler's mixture law needs the exact law").
    """

    reason: str

    value = None  # reads like an estimate without a value
    exact = False

    def json_record(self) -> dict[str, Any]:
        return unavailable_record(self.reason)


#: A reported quantity: a number with how it was obtained, or why there is none.
Metric = Estimate | Unavailable


def mean_estimate(values: np.ndarray, method: str, confidence: float = CONFIDENCE, *,
                  scale: float | None = None) -> Estimate:
    """The sample mean of i.i.d. Monte Carlo terms with its standard error ``std(ddof=1) / sqrt(n)``.

    Terms equal up to round-off (spread ``max - min <= AGREE_RTOL * scale``, ``scale`` the size of
    the quantities the terms were computed from, by default ``max |term|``) are a deterministic
    quantity: the standard error is 0 (the record then says "all samples agree", with no interval;
    :meth:`Estimate.json_record`), not a standard error of ~1e-18 whose interval misses the exact
    value by an ulp.
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n < 2:
        raise ValueError("need n >= 2 samples for a standard error")
    if not np.all(np.isfinite(v)):
        raise ValueError("a Monte Carlo term is not finite")
    scale = float(np.max(np.abs(v))) if scale is None else float(scale)
    se = 0.0 if float(np.ptp(v)) <= AGREE_RTOL * scale else float(v.std(ddof=1) / math.sqrt(n))
    return Estimate(float(v.mean()), se, method, n, confidence=confidence)
