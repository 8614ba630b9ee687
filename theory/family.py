"""A lemma and its proof steps as one family: the fields they share are written once.

Most statements of the paper come with proof-step claims that share the statement's hypotheses
(``domain``), its instance generator, its description and its instance fields. A
:class:`ClaimFamily` holds those shared fields and registers the statement and each step with
only what differs (title, the two sides, the relation, how they are evaluated)::

    b11 = ClaimFamily("B.11", "Lemma B.11", domain=..., generate=gen_step, doc=..., parameters=...)
    b11.statement("Expected dependencies per step ...", E_gap, "<=", b11_expr, _b11_main,
                  steps=("B.11.case1", ...))
    b11.step("case1", "Case 1 (S_i < mu_S/2): ...", lhs, "<=", rhs, evaluate)   # id "B.11.case1"

Claims whose sides all come out of one computation (``sides(instance, exact) -> {name: value}``)
name the two entries instead of writing an ``evaluate`` each: ``b.step(..., sides=("first",
"jensen"))`` (and get the exact rational form too when the family says ``exact_sides=True``).
:meth:`ClaimFamily.variant` makes a family with some shared fields replaced (another ``sides``
computation, another domain) for members that differ in more than a field or two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .claims import Claim, register

__all__ = ["ClaimFamily", "pick"]

Sides = Callable[..., Mapping[str, Any]]


def pick(sides: Sides, lhs: str, rhs: str, exact: bool = False) -> Callable[[Mapping[str, Any]], tuple]:
    """``instance -> (sides(instance)[lhs], sides(instance)[rhs])``, one call of ``sides`` per instance.

    ``exact=True`` calls ``sides(instance, exact=True)`` (the rational form of the computation).
    """

    def evaluate(instance: Mapping[str, Any]) -> tuple:
        values = sides(instance, exact=True) if exact else sides(instance)
        return values[lhs], values[rhs]

    evaluate.sides = (lhs, rhs)  # type: ignore[attr-defined]
    return evaluate


class ClaimFamily:
    """Registers a statement of the paper (id ``root``) and its proof steps (``root.<name>``).

    Parameters
    ----------
    root : str
        Registry id of the statement, e.g. ``"B.11"``.
    paper : str
        The paper's name for it, e.g. ``"Lemma B.11"``; a step's ``paper`` defaults to
        ``"proof of <paper>"``.
    sides : callable, optional
        ``sides(instance, exact=False) -> {name: value}``: one computation that yields every side
        a member may compare (see :func:`pick`).
    exact_sides : bool
        ``sides`` also runs in exact rational arithmetic (``exact=True``): members given
        ``sides=(a, b)`` then get an ``exact`` form as well.
    **shared
        :class:`~theory.claims.Claim` fields common to the family (``domain``, ``generate``,
        ``doc``, ``free``, ``parameters``, ``build``, ``atol``, ...). A member overrides any of
        them by passing the field itself.
    """

    def __init__(self, root: str, paper: str, sides: Sides | None = None, exact_sides: bool = False, **shared: Any):
        self.root = root
        self.paper = paper
        self.sides = sides
        self.exact_sides = exact_sides
        self.shared = shared

    def variant(self, **changes: Any) -> ClaimFamily:
        """The same family with some shared fields (or ``sides`` / ``exact_sides``) replaced.

        For members of one statement that share most fields but, say, a different ``sides``
        computation or domain.
        """
        sides = changes.pop("sides", self.sides)
        exact_sides = changes.pop("exact_sides", self.exact_sides)
        return ClaimFamily(self.root, self.paper, sides=sides, exact_sides=exact_sides, **{**self.shared, **changes})

    def statement(self, title: str, lhs, relation: str, rhs, evaluate=None, *, sides: tuple[str, str] | None = None,
                  **fields: Any) -> Claim:
        """Register the statement itself (id ``root``, the family's ``paper``)."""
        return self._register(self.root, self.paper, title, lhs, relation, rhs, evaluate, sides=sides, fields=fields)

    def step(self, name: str, title: str, lhs, relation: str, rhs, evaluate=None, *,
             sides: tuple[str, str] | None = None, paper: str | None = None, **fields: Any) -> Claim:
        """Register the proof step ``root.name`` (``paper`` defaults to ``"proof of <paper>"``)."""
        return self._register(f"{self.root}.{name}", paper or f"proof of {self.paper}", title, lhs, relation, rhs,
                              evaluate, sides=sides, fields=fields)

    def _register(self, cid, paper, title, lhs, relation, rhs, evaluate, *, sides, fields) -> Claim:
        merged = {**self.shared, **fields}
        if sides is not None:
            if self.sides is None:
                raise ValueError(f"{cid}: sides={sides!r} needs a family with a sides computation")
            if evaluate is not None:
                raise ValueError(f"{cid}: give either evaluate or sides, not both")
            evaluate = pick(self.sides, *sides)
            if self.exact_sides:
                merged.setdefault("exact", pick(self.sides, *sides, exact=True))
        if evaluate is None:
            raise ValueError(f"{cid}: no evaluate (give evaluate or sides)")
        return register(Claim(id=cid, paper=paper, title=title, lhs=lhs, rhs=rhs, relation=relation,
                              evaluate=evaluate, **merged))
