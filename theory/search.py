"""Running claims over many instances (``mdm-theory check``) and hunting for violations (``counterexamples``).

:func:`run_claim` evaluates a claim on generated instances and summarizes violations, the
minimum slack and the tightness (bound / exact). :func:`search_counterexamples` adds numerical
optimization: from the instances of smallest relative slack it moves the claim's ``free``
fields (a probability vector through softmax, a scalar in (0, 1) through the logistic map, a
positive scalar through exp) with Nelder-Mead to minimize the relative slack; every instance
that violates the claim is returned as a :class:`Finding`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logit, softmax

from .claims import CheckResult, Claim, check

_LOG_FLOOR = 1e-300  # start point of the optimizer: log of a zero weight (softmax never reaches exactly 0)
_LOGIT_CLIP = 1e-12  # start point of the optimizer: a scalar at 0 or 1 encoded just inside (0, 1)

__all__ = ["ClaimSummary", "Finding", "run_claim", "search_counterexamples", "relative_slack", "jsonable_instance"]


def relative_slack(result: CheckResult, clip_roundoff: bool = True) -> float:
    """``slack / (|lhs| + |rhs|)`` (0 when both sides are 0): scale-free, negative = violation.

    A negative slack inside the claim's round-off allowance (``result.holds``) counts as 0: at
    sides of size 1e-17 it would otherwise read as a relative slack of -1.
    """
    scale = abs(float(result.lhs)) + abs(float(result.rhs))
    rel = result.slack / scale if scale > 0 else 0.0
    return 0.0 if clip_roundoff and result.holds and rel < 0 else rel


@dataclass(frozen=True)
class ClaimSummary:
    """One row of the ``mdm-theory check`` table.

    Attributes
    ----------
    claim, paper, expect : str
    instances : int
        Instances evaluated: the claim's pinned counterexamples plus the generated ones inside its
        domain (generated instances outside it are counted in ``skipped``).
    violations : int
    min_slack : float
        Smallest ``slack`` over the instances (negative = violated).
    min_tightness, median_tightness : float
        ``bound / exact`` (1 = tight) over the informative instances (finite, neither degenerate nor
        vacuous; :attr:`theory.claims.CheckResult.informative`); NaN when there is none.
    exact_checks : int
        Instances also checked in exact rational arithmetic.
    worst : dict
        The instance of smallest relative slack (JSON-ready) with its sides.
    skipped : int
    pinned : int
        Pinned counterexamples among the instances (``Claim.counterexamples``).
    degenerate : int
        Instances with both sides 0 or 1: their tightness says nothing and is left out.
    vacuous : int
        Instances where the bound side is vacuous (``Claim.vacuous_at``): they hold trivially.
    """

    claim: str
    paper: str
    expect: str
    instances: int
    violations: int
    min_slack: float
    min_tightness: float
    median_tightness: float
    exact_checks: int
    worst: dict
    skipped: int = 0
    pinned: int = 0
    degenerate: int = 0
    vacuous: int = 0


def _jsonable(x: Any) -> Any:
    if isinstance(x, Fraction):
        return str(x)
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x)
    if isinstance(x, str) or x is None:
        return x
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_jsonable(y) for y in x]
    return repr(x)


def jsonable_instance(instance: dict) -> dict:
    """The instance with arrays as (nested) lists, Fractions as strings and other objects by repr."""
    return {k: _jsonable(v) for k, v in instance.items()}


def _checked(claim: Claim, inst: dict, exact: bool) -> tuple[CheckResult, bool]:
    """``check`` in float64 and, when asked, exactly: the float result and whether either violated."""
    res = check(claim, inst)
    bad = not res.holds
    if exact:
        bad = bad or not check(claim, inst, exact=True).holds
    return res, bad


def _instances(claim: Claim, n_instances: int, rng: np.random.Generator, exact_every: int):
    """``(instance, check it exactly too)``: the pinned counterexamples, then ``n_instances`` generated ones."""
    for inst in claim.counterexamples:
        yield inst, claim.exact is not None and _is_rational(inst)
    for t in range(n_instances):
        inst = claim.generate(rng)
        yield inst, claim.exact is not None and t % exact_every == 0 and _is_rational(inst)


def run_claim(claim: Claim, n_instances: int, rng: np.random.Generator, exact_every: int = 4) -> ClaimSummary:
    """Evaluate ``claim`` on its pinned counterexamples and on ``n_instances`` generated instances.

    Pinned counterexamples are checked exactly where the claim has an exact form; generated
    instances in exact arithmetic too on every ``exact_every``-th one when they are rational.
    """
    violations, exact_checks, skipped, degenerate, vacuous = 0, 0, 0, 0, 0
    min_slack, worst_rel, worst = math.inf, math.inf, {}
    tight: list[float] = []
    done = 0
    for inst, exact in _instances(claim, n_instances, rng, exact_every):
        try:
            res, bad = _checked(claim, inst, exact)
        except ValueError:
            skipped += 1
            continue
        done += 1
        exact_checks += exact
        violations += bad
        degenerate += res.degenerate
        vacuous += res.vacuous
        min_slack = min(min_slack, res.slack)
        if res.informative:
            tight.append(res.tightness)
        rel = relative_slack(res)
        if rel < worst_rel:
            worst_rel = rel
            worst = {"instance": jsonable_instance(inst), "lhs": float(res.lhs), "rhs": float(res.rhs), "relative_slack": rel}
    return ClaimSummary(
        claim.id,
        claim.paper,
        claim.expect,
        done,
        violations,
        min_slack if done else math.nan,
        float(np.min(tight)) if tight else math.nan,
        float(np.median(tight)) if tight else math.nan,
        exact_checks,
        worst,
        skipped,
        len(claim.counterexamples),
        degenerate,
        vacuous,
    )


def _is_rational(inst: dict) -> bool:
    for v in inst.values():
        vals = np.ravel(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
        for x in vals:
            if isinstance(x, (float, np.floating)) and not isinstance(x, Fraction):
                return False
    return True


# ---------------------------------------------------------------------------------------------
# counterexample search


@dataclass(frozen=True)
class Finding:
    """A violation: the claim, the instance (JSON-ready), both sides and how it was found."""

    claim: str
    paper: str
    expect: str
    instance: dict
    lhs: float
    rhs: float
    relative_slack: float
    method: str


@dataclass
class _Codec:
    claim: Claim
    base: dict
    layout: list[tuple[str, str, int]] = field(default_factory=list)

    def __post_init__(self):
        for key, kind in self.claim.free.items():
            v = self.base[key]
            size = int(np.size(v)) if kind in ("simplex", "unitvec") else 1
            self.layout.append((key, kind, size))

    def encode(self) -> np.ndarray:
        parts = []
        for key, kind, _size in self.layout:
            v = np.asarray([float(x) for x in np.ravel(self.base[key])])
            if kind == "simplex":
                parts.append(np.log(np.maximum(v, _LOG_FLOOR)))
            elif kind in ("unit", "unitvec"):
                parts.append(logit(np.clip(v, _LOGIT_CLIP, 1 - _LOGIT_CLIP)))
            elif kind == "positive":
                parts.append(np.log(np.maximum(v, _LOG_FLOOR)))
        return np.concatenate(parts) if parts else np.zeros(0)

    def decode(self, z: np.ndarray) -> dict:
        inst = dict(self.base)
        pos = 0
        for key, kind, size in self.layout:
            part = z[pos : pos + size]
            pos += size
            if kind == "simplex":
                val = softmax(part)
                inst[key] = val.reshape(np.shape(self.base[key])) if isinstance(self.base[key], np.ndarray) else val
            elif kind == "unitvec":
                inst[key] = expit(part)
            elif kind == "unit":
                inst[key] = float(expit(part[0]))
            elif kind == "positive":
                inst[key] = float(np.exp(part[0]))
        return inst


def _objective(claim: Claim, codec: _Codec):
    def f(z):
        try:
            res = check(claim, codec.decode(z))
        except (ValueError, FloatingPointError, ZeroDivisionError, OverflowError):
            return 1.0
        # raw (unclipped) relative slack: the optimizer keeps descending through the round-off band
        return relative_slack(res, clip_roundoff=False) if math.isfinite(res.slack) else 1.0

    return f


def _try(claim: Claim, inst: dict, method: str, findings: list[Finding]) -> float | None:
    """Relative slack of ``claim`` on ``inst`` (None outside its domain); a violation joins ``findings``."""
    try:
        res = check(claim, inst)
    except ValueError:
        return None
    rel = relative_slack(res)
    if not res.holds:
        findings.append(Finding(claim.id, claim.paper, claim.expect, jsonable_instance(inst), float(res.lhs),
                                float(res.rhs), rel, method))
    return rel


def search_counterexamples(claim: Claim, budget: int, rng: np.random.Generator, n_optimize: int = 3,
                           maxiter: int = 200) -> tuple[list[Finding], float]:
    """Random search over ``budget`` generated instances, then Nelder-Mead from the ``n_optimize``
    instances of least relative slack. Returns the violations found and the least relative slack seen."""
    findings: list[Finding] = []
    scored: list[tuple[float, dict]] = []
    for _ in range(budget):
        inst = claim.generate(rng)
        rel = _try(claim, inst, "random", findings)
        if rel is not None:
            scored.append((rel, inst))
    least = min((rel for rel, _ in scored), default=math.inf)
    if claim.free:
        scored.sort(key=lambda t: t[0])
        for _, inst in scored[:n_optimize]:
            codec = _Codec(claim, inst)
            z0 = codec.encode()
            if z0.size == 0:
                continue
            opt = minimize(_objective(claim, codec), z0, method="Nelder-Mead",
                           options={"maxiter": maxiter, "xatol": 1e-10, "fatol": 1e-14})
            rel = _try(claim, codec.decode(opt.x), "nelder-mead", findings)
            if rel is not None:
                least = min(least, rel)
    return findings, least
