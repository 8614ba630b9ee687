"""The :class:`Claim` type, the registry of every lemma, theorem and proof step, and :func:`check`.

A claim is one inequality (or equality) of the paper's appendix, or one step inside a proof:
``lhs  <relation>  rhs`` over named symbols. It carries

* ``lhs``, ``rhs``: sympy expressions; a quantity with no closed form (an exact expectation
  computed by a transfer matrix, a KL divergence computed by enumeration) appears as an
  undefined sympy function such as ``E_gap(L, n, u_{i-1}, pi_i)`` and is evaluated by a Python
  callable;
* ``evaluate(instance) -> (lhs, rhs)``: the fast numeric form (closed forms are lambdified);
* ``exact(instance) -> (lhs, rhs)`` in ``fractions.Fraction`` where the mathematics is rational;
* ``domain(instance)``: raises ``ValueError`` naming the violated condition;
* ``generate(rng) -> instance``: a random instance for property checks and ``mdm-theory check``;
* ``free``: the continuous fields a counterexample search may move (see
  :mod:`theory.search`).

An instance is a plain ``dict`` of named values (scalars, vectors, small tables).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from numerics.tolerances import PROB_SUM_ATOL

from .parameters import OPTIONS, Parameter
from .symbols import LATEX_NAMES

__all__ = [
    "Claim",
    "CheckResult",
    "MissingFieldError",
    "REGISTRY",
    "register",
    "get",
    "claims",
    "check",
    "closed_form",
    "latex",
    "require",
    "show",
    "probability_vector",
    "LATEX_NAMES",
    "RTOL_FLOAT",
    "ATOL_CANCEL",
]

RTOL_FLOAT = 1e-12  # float64 round-off of both sides; exact checks (Fractions) use no tolerance
ATOL_CANCEL = 1e-14  # absolute: a side formed as 1 - x (x = O(1) float) carries ~1e-16 absolute error per term


Relation = str  # "<=", ">=", "=="


class MissingFieldError(KeyError, ValueError):
    """An instance lacks a field its claim needs; the message lists what the claim takes.

    A ``KeyError`` (what a missing key was before) and a ``ValueError`` (bad input), whose text is the
    message itself rather than a quoted key.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _fields_wanted(claim: Claim) -> dict[str, str]:
    """The instance fields of ``claim`` with their help: its parameters, else a generated instance's keys."""
    if claim.parameters:
        return {n: p.help for n, p in claim.parameters.items() if p.instance}
    return dict.fromkeys(claim.generate(np.random.default_rng(0)), "")


def _named_missing(claim: Claim, fn: Callable) -> Callable:
    """``fn(instance)``, with a :class:`MissingFieldError` naming the claim's fields when ``instance`` lacks one."""

    def call(instance: Mapping[str, Any]) -> Any:
        try:
            return fn(instance)
        except KeyError as err:
            key = err.args[0] if err.args else None
            if isinstance(err, MissingFieldError) or not isinstance(instance, Mapping) or key in instance:
                raise
            wanted = _fields_wanted(claim)
            listed = ", ".join(f"{n} ({h})" if h else n for n, h in wanted.items())
            hint = (" (pi: the step probabilities pi_1..pi_N, e.g. numerics.make_schedule('linear', N).pi)"
                    if key == "pi" else "")
            raise MissingFieldError(f"claim {claim.id} needs the field {key!r}{hint}; it takes {listed}; "
                                    f"given: {', '.join(map(str, instance)) or 'nothing'}") from None

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


@dataclass(frozen=True)
class CheckResult:
    """Outcome of :func:`check` on one instance.

    Attributes
    ----------
    lhs, rhs : float or Fraction
        Both sides, evaluated.
    holds : bool
        Whether ``lhs <relation> rhs`` holds (float: up to ``RTOL_FLOAT`` relative round-off).
    slack : float
        ``rhs - lhs`` for ``<=``, ``lhs - rhs`` for ``>=``, ``-|lhs - rhs|`` for ``==``;
        negative slack beyond round-off is a violation.
    tightness : float
        ``rhs / lhs`` for ``<=`` (bound / exact), ``lhs / rhs`` for ``>=``, 1 for a held equality;
        ``inf`` when the exact side is ``<= 0`` (0 up to round-off) and the bound is positive, NaN
        when both are.
    exact : bool
        True when both sides were computed in exact rational arithmetic.
    degenerate : bool
        Both sides are 0 or 1 (up to round-off): the instance says nothing about how tight the
        bound is, so summaries leave its tightness out (:func:`theory.search.run_claim`).
    vacuous : bool
        The bound side is at or beyond the claim's ``vacuous_at`` (e.g. a probability bounded by
        ``>= 1``): the instance holds trivially, and summaries count it apart.
    """

    lhs: Any
    rhs: Any
    holds: bool
    slack: float
    tightness: float
    exact: bool = False
    degenerate: bool = False
    vacuous: bool = False

    @property
    def informative(self) -> bool:
        """The tightness of this instance measures the bound: finite, not degenerate, not vacuous."""
        return not (self.degenerate or self.vacuous) and math.isfinite(self.tightness)


@dataclass(frozen=True)
class Claim:
    """One checkable statement (module docstring).

    Attributes
    ----------
    id : str
        Registry key: the paper's number (``"C.5"``) or a step inside its proof (``"C.5.jensen"``).
    paper : str
        The paper's name for it (``"Lemma C.5"``, ``"Theorem 4.4 / C.9"``, ``"proof of Lemma C.5"``).
    title : str
        One line.
    lhs, rhs : sympy.Expr
    relation : str
        ``"<="``, ``">="`` or ``"=="``.
    evaluate : callable
        ``instance -> (lhs, rhs)`` as floats.
    domain : callable
        Raises ``ValueError`` naming the violated hypothesis for an instance outside the claim's
        hypotheses (its return value is ignored).
    generate : callable
        ``numpy.random.Generator -> instance`` (a dict).
    doc : str
        How the claim is checked (what is exact, what is enumerated, what each side is).
    steps : tuple of str
        Ids of the proof-step claims of this claim.
    exact : callable or None
        ``instance -> (lhs, rhs)`` as Fractions, where the mathematics is rational.
    free : dict
        ``field -> kind`` for the counterexample search: ``"simplex"`` (probability vector),
        ``"unit"`` (scalar in (0, 1)), ``"positive"`` (scalar > 0).
    expect : str
        ``"holds"``, or ``"false"`` where the engine found and pinned a counterexample
        (docs/findings.md). Never used to excuse a violation: it only labels the report.
    parameters : dict
        ``name ->`` :class:`~theory.parameters.Parameter` (a plain string is its help text): the
        instance fields in order, with defaults; ``mdm-theory bounds --lemma ID -L ..`` reads them
        (:func:`theory.parameters.resolve`). ``str(parameter)`` is its description.
    constants : callable or None
        ``values -> dict`` of explicit constants printed with the claim by ``mdm-theory bounds``
        (e.g. ``N(eps, n)`` and ``L_0(eps, n)`` of Theorem 4.2), from the resolved parameter values.
    atol : float
        Absolute round-off allowance of the float check, 0 unless a side is computed with
        cancellation (:data:`ATOL_CANCEL`); exact checks never use it.
    counterexamples : tuple of dict
        The pinned instances that violate a claim found false (``expect="false"``; at least one,
        and none for a claim that holds). ``mdm-theory check`` evaluates them with every run, so
        a claim pinned false never reports 0 violations.
    vacuous_at : float or None
        The value of the bound side at or beyond which the claim says nothing (1 for an upper
        bound on a probability, 0 for a lower bound on one); such instances are reported as
        vacuous (:attr:`CheckResult.vacuous`).
    plot_x : (str, callable) or None
        ``(label, instance -> float)``: what the docs' check plot puts on its x axis, for a claim whose
        bound side is a constant (Theorem 4.4's 1/2), where a plot of one side against the other is a
        vertical line; ``None``: the bound side.
    """

    id: str
    paper: str
    title: str
    lhs: sp.Expr
    rhs: sp.Expr
    relation: Relation
    evaluate: Callable[[Mapping[str, Any]], tuple[float, float]]
    domain: Callable[[Mapping[str, Any]], object]
    generate: Callable[[np.random.Generator], dict]
    doc: str
    steps: tuple[str, ...] = ()
    exact: Callable[[Mapping[str, Any]], tuple[Fraction, Fraction]] | None = None
    free: dict[str, str] = field(default_factory=dict)
    expect: str = "holds"
    parameters: dict[str, Parameter] = field(default_factory=dict)
    constants: Callable[[Mapping[str, Any]], dict] | None = None
    atol: float = 0.0
    counterexamples: tuple[dict, ...] = ()
    vacuous_at: float | None = None
    plot_x: tuple[str, Callable[[Mapping[str, Any]], float]] | None = None

    def __post_init__(self) -> None:
        if self.relation not in ("<=", ">=", "=="):
            raise ValueError(f"relation must be one of <=, >=, ==; got {self.relation!r}")
        if self.expect not in ("holds", "false"):
            raise ValueError(f"expect must be 'holds' or 'false', got {self.expect!r}")
        if (self.expect == "false") != bool(self.counterexamples):
            raise ValueError(f"claim {self.id}: a claim found false pins its counterexamples, and only such a claim "
                             f"(expect={self.expect!r}, {len(self.counterexamples)} counterexamples)")
        if self.vacuous_at is not None and self.relation == "==":
            raise ValueError(f"claim {self.id}: an equality has no vacuous side")
        params = {k: v if isinstance(v, Parameter) else Parameter(str(v)) for k, v in self.parameters.items()}
        object.__setattr__(self, "parameters", params)
        for name in ("domain", "evaluate", "exact"):  # a field missing from an instance is named, with the claim's
            fn = getattr(self, name)
            if fn is not None:
                object.__setattr__(self, name, _named_missing(self, fn))

    @property
    def cli_ready(self) -> bool:
        """Every required instance field can be set by a command-line option (``mdm-theory bounds``)."""
        return bool(self.parameters) and all(
            name in OPTIONS or not p.required or p.fixed for name, p in self.parameters.items())

    @property
    def top_level(self) -> bool:
        """True for the paper's own lemmas and theorems (ids like ``C.5``, ``4.4``), False for steps."""
        return self.id.count(".") == 1

    @property
    def statement(self) -> sp.Basic:
        """The statement as one sympy relation."""
        op = {"<=": sp.Le, ">=": sp.Ge, "==": sp.Eq}[self.relation]
        return op(self.lhs, self.rhs, evaluate=False)

    @property
    def statement_latex(self) -> str:
        """LaTeX of the statement."""
        return latex(self.statement)

    @property
    def docstring(self) -> str:
        return self.doc

    def __call__(self, instance: Mapping[str, Any]) -> CheckResult:
        return check(self, instance)


REGISTRY: dict[str, Claim] = {}


def register(claim: Claim) -> Claim:
    """Add ``claim`` to :data:`REGISTRY` (ids are unique)."""
    if claim.id in REGISTRY:
        raise ValueError(f"claim id {claim.id!r} is registered twice")
    REGISTRY[claim.id] = claim
    return claim


def get(claim_id: str) -> Claim:
    """The claim with this id; ``ValueError`` listing the known ids otherwise."""
    try:
        return REGISTRY[claim_id]
    except KeyError:
        raise ValueError(f"unknown claim {claim_id!r}; known: {', '.join(sorted(REGISTRY))}") from None


def _sort_key(claim_id: str) -> tuple:
    parts = claim_id.split(".")
    out = []
    for p in parts:
        out.append((0, int(p), "") if p.isdigit() else (1, 0, p))
    return tuple(out)


def claims(prefix: str | None = None, top_level: bool = False) -> list[Claim]:
    """All registered claims in paper order; ``prefix="C.5"`` selects C.5 and its steps.

    ``top_level=True`` keeps only the paper's lemmas and theorems (no proof steps).
    """
    out = []
    for cid in sorted(REGISTRY, key=_sort_key):
        c = REGISTRY[cid]
        if prefix is not None and not (cid == prefix or cid.startswith(prefix + ".")):
            continue
        if top_level and not c.top_level:
            continue
        out.append(c)
    return out


def _compare(lhs, rhs, relation: str, exact: bool, atol: float = 0.0) -> tuple[bool, float, float]:
    lf, rf = float(lhs), float(rhs)
    if math.isinf(lf) and lf == rf:  # the same infinity on both sides: holds in the extended reals
        return True, 0.0, 1.0
    if relation == "<=":
        slack = rf - lf
        tight = rf / lf if lf > atol else (float("nan") if rf <= atol else float("inf"))
        holds = (lhs <= rhs) if exact else lf <= rf + RTOL_FLOAT * max(abs(lf), abs(rf)) + atol
    elif relation == ">=":
        slack = lf - rf
        tight = lf / rf if rf > atol else (float("nan") if lf <= atol else float("inf"))
        holds = (lhs >= rhs) if exact else lf >= rf - RTOL_FLOAT * max(abs(lf), abs(rf)) - atol
    else:
        slack = -abs(lf - rf) + 0.0  # + 0.0: an exact equality has slack 0, not -0
        holds = (lhs == rhs) if exact else abs(lf - rf) <= RTOL_FLOAT * max(abs(lf), abs(rf)) + atol
        tight = 1.0 if holds else (lf / rf if rf != 0 else float("inf"))
    return bool(holds), slack, tight


def check(claim: Claim, instance: Mapping[str, Any], exact: bool = False) -> CheckResult:
    """Evaluate ``claim`` on ``instance``: left side, right side, holds, slack, tightness.

    ``exact=True`` uses the claim's rational form (``ValueError`` if it has none). The domain
    is checked first; an instance outside it raises ``ValueError``.
    """
    claim.domain(instance)
    if exact:
        if claim.exact is None:
            raise ValueError(f"claim {claim.id} has no exact rational form")
        lhs, rhs = claim.exact(instance)
    else:
        lhs, rhs = claim.evaluate(instance)
        lhs, rhs = float(lhs), float(rhs)
        if np.isnan(lhs) or np.isnan(rhs):
            raise ValueError(f"claim {claim.id}: a side evaluated to NaN on {_show_instance(instance)}")
    holds, slack, tight = _compare(lhs, rhs, claim.relation, exact, claim.atol)
    return CheckResult(lhs, rhs, holds, slack, tight, exact, _degenerate(lhs, rhs, exact, claim.atol),
                       _vacuous(claim, rhs))


def _is_0_or_1(x, exact: bool, atol: float) -> bool:
    if exact:
        return x in (0, 1)
    x = float(x)
    return abs(x) <= RTOL_FLOAT + atol or abs(x - 1.0) <= RTOL_FLOAT + atol


def _degenerate(lhs, rhs, exact: bool, atol: float) -> bool:
    """Both sides 0 or 1 (up to round-off): e.g. a probability bounded by 1, or 0 <= 0."""
    return _is_0_or_1(lhs, exact, atol) and _is_0_or_1(rhs, exact, atol)


def _vacuous(claim: Claim, rhs) -> bool:
    if claim.vacuous_at is None:
        return False
    return rhs >= claim.vacuous_at if claim.relation == "<=" else rhs <= claim.vacuous_at


def latex(expr: sp.Basic) -> str:
    """LaTeX with the project's symbol names (:data:`LATEX_NAMES`)."""
    return sp.latex(expr, symbol_names=LATEX_NAMES)


def closed_form(expr: sp.Expr, symbols: tuple[sp.Symbol, ...], keys: tuple[str, ...] | None = None):
    """A fast numeric form of a closed-form ``expr``: ``instance -> float`` via ``sympy.lambdify``.

    ``keys[j]`` is the instance field bound to ``symbols[j]`` (default: the symbol names).
    """
    keys = keys if keys is not None else tuple(s.name for s in symbols)
    fn = sp.lambdify(symbols, expr, modules="numpy")

    def evaluate(instance: Mapping[str, Any]) -> float:
        return float(fn(*(instance[k] for k in keys)))

    evaluate.expr = expr  # type: ignore[attr-defined]
    evaluate.symbols = symbols  # type: ignore[attr-defined]
    evaluate.keys = keys  # type: ignore[attr-defined]
    return evaluate


def _show_instance(instance: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {show(v)}" for k, v in instance.items()) + "}"


def show(value: Any) -> str:
    """A number as a reader writes it, for error messages: ``1.1``, ``3/10``, ``[0.5, 0.5]``.

    numpy scalars print as Python numbers (never ``np.float64(1.1)``), Fractions as ``p/q``,
    arrays and sequences element by element.
    """
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(show(v) for v in np.ravel(np.asarray(value, dtype=object))) + "]"
    return repr(value)


def require(condition: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``condition``: the domain checks of every claim."""
    if not condition:
        raise ValueError(message)


def probability_vector(name: str, p, allow_zero: bool = True) -> np.ndarray:
    """Validate a probability vector (entries in [0, 1], summing to 1 within round-off)."""
    arr = np.asarray(p, dtype=object if any(isinstance(x, Fraction) for x in np.ravel(p)) else np.float64)
    require(arr.ndim == 1 and arr.size >= 1, f"{name} must be a non-empty vector")
    require(all(0 <= x <= 1 for x in arr), f"{name} entries must lie in [0, 1]")
    total = sum(arr)
    if arr.dtype == object:
        require(total == 1, f"{name} must sum to 1 exactly, got {show(total)}")
    else:
        require(abs(float(total) - 1.0) <= PROB_SUM_ATOL, f"{name} must sum to 1, got {show(total)}")
    if not allow_zero:
        require(all(x > 0 for x in arr), f"{name} entries must be > 0")
    return arr
