"""The instance fields of a claim, their defaults, and the command-line options that set them.

A claim's ``parameters`` map each instance field to a :class:`Parameter`: what the field is for that
claim, and its default (a value, a function of the fields resolved before it, or none: required).
``mdm-theory bounds --lemma ID -L .. --pi ..`` reads them: :data:`OPTIONS` gives the one option
every claim with a field of that name shares (its flag, its kind, a generic help text), and
:func:`resolve` turns the options a user gave into the claim's instance, naming any missing or
unused option. A field with no entry in :data:`OPTIONS` (a language, a joint table) cannot come
from the command line; such claims are checked by ``mdm-theory check``.

Kinds: ``"int"``; ``"number"`` (read as an exact rational: ``0.3`` is ``3/10``, ``3/10`` too);
``"probabilities"`` (a vector summing to 1: ``--pi 3/10,7/10``, or ``-N`` steps of a schedule
family); ``"vector"`` (numbers, e.g. Bernoulli probabilities).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Option", "OPTIONS", "Parameter", "REQUIRED", "Resolved", "resolve", "flags"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter that the user must give.
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Option:
    """The command-line option of every claim field with this name.

    Attributes
    ----------
    flag : str
        ``"--u-prev"``.
    kind : str
        ``"int"``, ``"number"``, ``"probabilities"`` or ``"vector"`` (module docstring).
    help : str
        What the field is, for ``--help``.
    minimum : int or None
        Smallest accepted value of an ``"int"`` option.
    """

    flag: str
    kind: str
    help: str
    minimum: int | None = None


#: Field name -> its option: every command-line-ready claim with a field of that name shares it.
OPTIONS: dict[str, Option] = {
    "N": Option("--n-steps", "int", "Number of steps N (also builds --pi from --schedule).", 1),
    "L": Option("--length", "int", "Sequence length L.", 1),
    "l": Option("--l", "int", "Interval length l.", 1),
    "n": Option("--n", "int", "n-gram order n.", 2),
    "V": Option("--V", "int", "Vocabulary size |V|.", 2),
    "s": Option("--s", "int", "Number of separators s at the step.", 0),
    "k": Option("--k", "int", "Number of new positions k at the step.", 0),
    "eps": Option("--eps", "number", "epsilon in (0, 1): the schedule parameter of Lemma B.12 / Theorem 4.2, or the "
                  "claim's own (see `bounds --lemma ID`)."),
    "eps_learning": Option("--eps-learning", "number", "eps_learning of Assumption 4.1 (0: the oracle)."),
    "u_prev": Option("--u-prev", "number", "u_{i-1}: probability a position is unmasked before step i."),
    "pi_i": Option("--pi-i", "number", "pi_i: probability a position is unmasked at step i."),
    "d": Option("--d", "number", "Chernoff deviation d."),
    "x": Option("--x", "number", "A point x in [0, 1)."),
    "C": Option("--C", "number", "Constant C of Theorem 4.4 (N <= C L)."),
    "pi": Option("--pi", "probabilities",
                 "Step probabilities pi_1..pi_N, comma-separated numbers or fractions (instead of -N/--schedule)."),
    "p": Option("--p", "vector", "Bernoulli probabilities p_1..p_m of Lemma A.2, comma-separated."),
}


@dataclass(frozen=True)
class Parameter:
    """One instance field of a claim.

    Attributes
    ----------
    help : str
        What the field is for this claim (shown in the docs and by ``mdm-theory bounds --lemma ID``).
    default : object
        A value, a callable ``values -> value`` of the fields resolved before this one (in the
        claim's order), or :data:`REQUIRED`.
    fixed : bool
        Always the default, never an option (e.g. ``l = 5`` in Theorem 4.4).
    instance : bool
        Part of the instance; ``False`` for a field that only feeds later defaults and the
        printed constants (e.g. ``N``, from which Theorem 4.2 solves for ``eps``).
    """

    help: str
    default: Any = REQUIRED
    fixed: bool = False
    instance: bool = True

    def __str__(self) -> str:
        return self.help

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Resolved:
    """The outcome of :func:`resolve`: every field's value and the instance (the instance fields only)."""

    values: dict
    instance: dict


def flags(parameters: Mapping[str, Parameter]) -> list[str]:
    """The options that set these fields (``--n-steps`` and ``--schedule`` also stand for a ``pi`` field)."""
    out = []
    for name, p in parameters.items():
        if p.fixed or name not in OPTIONS:
            continue
        out.append(OPTIONS[name].flag + (f"/{OPTIONS['N'].flag}" if OPTIONS[name].kind == "probabilities" else ""))
    return out


def resolve(claim_id: str, parameters: Mapping[str, Parameter], given: Mapping[str, Any]) -> Resolved:
    """The instance of claim ``claim_id`` from the option values ``given`` (only those the user set).

    Fields are resolved in order: a fixed field takes its default; a given one its value; otherwise
    its default (called with the values so far when callable). ``ValueError`` names the options that
    are missing, or given but not taken by this claim, and a field no option can set.
    """
    unused = sorted(set(given) - {n for n, p in parameters.items() if not p.fixed})
    if unused:
        raise ValueError(f"{claim_id} does not take {', '.join(_flag(n) for n in unused)}; "
                         f"it takes {', '.join(flags(parameters)) or 'no options'}")
    values: dict = {}
    missing = []
    for name, p in parameters.items():
        if not p.fixed and name in given:
            values[name] = given[name]
        elif p.required:
            if name not in OPTIONS:
                raise ValueError(f"{claim_id} takes `{name}` ({p.help}), which no option sets; "
                                 f"use `mdm-theory check --lemma {claim_id}`")
            missing.append(name)
        elif callable(p.default) and not missing:
            values[name] = p.default(values)
        elif not callable(p.default):
            values[name] = p.default
    if missing:
        raise ValueError(f"{claim_id} needs the options {', '.join(_flag(n) for n in missing)} "
                         f"({'; '.join(f'{_flag(n)}: {parameters[n].help}' for n in missing)})")
    return Resolved(values, {n: v for n, v in values.items() if parameters[n].instance})


def _flag(name: str) -> str:
    return OPTIONS[name].flag if name in OPTIONS else name
