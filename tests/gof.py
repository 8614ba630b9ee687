"""Goodness of fit for the sampler tests: one chi-squared test, one suite-wide false-failure budget.

Modelled on numpyro's ``distributions/gof.py``: a statistical test that cannot have power is
an error (:class:`Underpowered`), never a pass. Every statistical assertion of the suite (a
chi-squared goodness of fit, :func:`assert_gof`, or a normal-approximation bound, :data:`Z_BOUND`)
has false-failure probability :data:`ALPHA` under a fresh random seed, and the suite makes at
most :data:`MAX_STATISTICAL_TESTS` of them (counted in every session, checked by
``tests/conftest.py``), so a correct engine fails a fresh-seed run of the whole suite with
probability at most :data:`SUITE_FALSE_FAILURE_BUDGET` (Bonferroni). With the default fixed
seeds each test is deterministic; the budget is what ``HYPOTHESIS_PROFILE=thorough``-style
reseeding would cost.

Binning: cells whose expected count is below :data:`MIN_EXPECTED` (where the chi-squared
approximation of the statistic's law fails) are merged into one tail cell; a tail still below
:data:`MIN_EXPECTED` joins the smallest kept cell. Fewer than two cells left is underpowered.
A sample on a cell of probability 0 is a failure on its own (no test needed).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

__all__ = [
    "SUITE_FALSE_FAILURE_BUDGET", "MAX_STATISTICAL_TESTS", "ALPHA", "Z_BOUND", "MIN_EXPECTED", "PROB_SUM_RTOL",
    "Underpowered", "GofResult", "chi2_gof", "assert_gof", "within_z", "law_bins", "count_statistical_test",
    "statistical_tests_run",
]

SUITE_FALSE_FAILURE_BUDGET = 1e-3  # P(a correct engine fails any statistical assertion of the suite), fresh seeds
MAX_STATISTICAL_TESTS = 100  # assertions the suite may make against that budget (checked per session)
ALPHA = SUITE_FALSE_FAILURE_BUDGET / MAX_STATISTICAL_TESTS  # 1e-5 per assertion (Bonferroni)
Z_BOUND = float(stats.norm.isf(ALPHA / 2))  # |estimate - exact| <= Z_BOUND * stderr: two-sided, ALPHA (4.42)
MIN_EXPECTED = 5.0  # below this expected count per cell the chi-squared approximation is unreliable
PROB_SUM_RTOL = 1e-6  # the exact probabilities may sum to 1 only to float32 round-off (a network's law)

_RUN = [0]  # statistical assertions made in this process


class Underpowered(AssertionError):
    """The test cannot have power (too few samples for the cells): an error, never a pass."""


class GofResult(NamedTuple):
    """A chi-squared goodness-of-fit test.

    Attributes
    ----------
    pvalue : float
        ``P(chi2_{k-1} >= statistic)``.
    statistic : float
        Pearson's ``sum (observed - expected)^2 / expected`` over the merged cells.
    cells : int
        ``k``, the number of cells after merging.
    samples : int
    """

    pvalue: float
    statistic: float
    cells: int
    samples: int


def count_statistical_test() -> None:
    """Record one statistical assertion against the suite's budget (:func:`assert_gof` does it itself)."""
    _RUN[0] += 1


def statistical_tests_run() -> int:
    """Statistical assertions made in this process so far."""
    return _RUN[0]


def chi2_gof(counts: np.ndarray, probs: np.ndarray, min_expected: float = MIN_EXPECTED) -> GofResult:
    """Pearson's chi-squared test of ``counts`` (samples per cell) against the exact ``probs`` of the cells.

    Raises ``AssertionError`` when a cell of probability 0 holds samples, :class:`Underpowered`
    when fewer than two cells have enough expected samples, ``ValueError`` on malformed input.
    """
    counts = np.asarray(counts, dtype=np.float64).ravel()
    probs = np.asarray(probs, dtype=np.float64).ravel()
    if counts.shape != probs.shape:
        raise ValueError(f"counts {counts.shape} and probs {probs.shape} differ in shape")
    if np.any(probs < 0) or not np.all(np.isfinite(probs)):
        raise ValueError("probs must be finite and non-negative")
    if abs(probs.sum() - 1.0) > PROB_SUM_RTOL:
        raise ValueError(f"probs sum to {probs.sum()!r}, not 1 (tolerance {PROB_SUM_RTOL})")
    n = counts.sum()
    impossible = probs == 0
    if np.any(counts[impossible] > 0):
        raise AssertionError(f"{int(counts[impossible].sum())} samples fell on cells of probability 0")
    expected = probs[~impossible] / probs.sum() * n
    observed = counts[~impossible]
    small = expected < min_expected
    obs, exp = list(observed[~small]), list(expected[~small])
    if np.any(small):
        tail_obs, tail_exp = observed[small].sum(), expected[small].sum()
        if tail_exp >= min_expected:
            obs.append(tail_obs)
            exp.append(tail_exp)
        elif exp:
            k = int(np.argmin(exp))
            obs[k] += tail_obs
            exp[k] += tail_exp
    if len(exp) < 2:
        raise Underpowered(
            f"{int(n)} samples over {probs.size} cells leave {len(exp)} cell(s) with >= {min_expected} expected samples"
        )
    res = stats.chisquare(np.asarray(obs), np.asarray(exp))
    return GofResult(float(res.pvalue), float(res.statistic), len(exp), int(n))


def assert_gof(counts: np.ndarray, probs: np.ndarray, what: str = "samples") -> GofResult:
    """:func:`chi2_gof` that fails when the p-value is at most :data:`ALPHA` (and counts against the budget)."""
    count_statistical_test()
    res = chi2_gof(counts, probs)
    assert res.pvalue > ALPHA, (
        f"{what} do not follow the exact law: chi-squared {res.statistic:.1f} on {res.cells - 1} degrees of "
        f"freedom, p = {res.pvalue:.2e} <= ALPHA = {ALPHA:.0e} ({res.samples} samples)"
    )
    return res


def within_z(estimate: float, exact: float, stderr: float) -> bool:
    """``|estimate - exact| <= Z_BOUND * stderr`` (a normal-approximation test at level :data:`ALPHA`), counted.

    Use as ``assert within_z(...)``; a stderr of 0 demands equality.
    """
    count_statistical_test()
    return abs(estimate - exact) <= Z_BOUND * stderr


def law_bins(tokens: np.ndarray, q: np.ndarray, p: np.ndarray, undefined: float) -> tuple[np.ndarray, np.ndarray]:
    """Counts and exact probabilities over the sequences of ``supp q`` plus one cell for everything else.

    ``tokens`` ``(n, L)`` samples, ``q`` and ``p`` tables of shape ``(V,) * L`` (the data law and the
    sampler's exact output law), ``undefined`` the output mass the exact method leaves undefined.
    The sampler and the exact methods treat branches that left the support differently (uniform
    continuation vs. stopped; ``numerics.sampling.samplers`` and ``numerics.exact.output_law``);
    no metric sees the difference, so the law is compared on ``supp q`` and on its complement as one cell.
    """
    V, L = q.shape[0], q.ndim
    idx = np.ravel_multi_index(tokens.T, (V,) * L)
    counts = np.bincount(idx, minlength=V**L).astype(float)
    on = q.ravel() > 0
    probs = np.append(p.ravel()[on], p.ravel()[~on].sum() + undefined)
    return np.append(counts[on], counts[~on].sum()), probs
