"""``mdm-theory bounds``, ``mdm-theory check`` and ``mdm-theory counterexamples``: the theory registry.

* ``bounds``: list every lemma, theorem and proof step (``--lemma X`` to evaluate one on the
  values given as options, e.g. ``mdm-theory bounds --lemma C.5 -N 64 --l 5``). The options are
  data: each claim declares its fields and defaults (:mod:`theory.parameters`), one option per
  field name is built from the registry when ``bounds`` is first used, and
  :func:`theory.parameters.resolve` turns what the user gave into the claim's instance;
* ``check``: run every claim over generated instances; table of instances, violations, minimum
  slack and tightness (bound / exact);
* ``counterexamples``: random search plus Nelder-Mead for violations; writes them to a JSON file.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import click

from numerics.schedules import SCHEDULES, make_schedule

from ._common import AliasOption, emit, json_option, progress_option, show_progress

__all__ = ["COMMANDS"]

_lemma_option = click.option("--lemma", "lemma", default=None, metavar="ID",
                             help="A claim id (A.1, B.11, C.5.jensen, 4.4, ...) or a prefix selecting it and its steps.")
_seed_option = click.option("--seed", type=int, default=0, show_default=True,
                            help="Seed of the numpy Generator that draws the instances (same seed, same instances).")


class _Rationals(click.ParamType):
    """A number read as an exact rational (``0.3`` is 3/10, and so is ``3/10``), or a comma-separated list of them."""

    def __init__(self, many: bool = False):
        self.many = many
        self.name = "X1,X2,.." if many else "NUMBER"

    def convert(self, value, param, ctx):
        if isinstance(value, (Fraction, list)):
            return value
        try:
            numbers = [Fraction(t.strip()) for t in str(value).split(",")] if self.many else Fraction(str(value).strip())
        except (ValueError, ZeroDivisionError):
            self.fail(f"{value!r} must be {'comma-separated numbers' if self.many else 'a number'} or fractions p/q",
                      param, ctx)
        return numbers


def _click_type(option):
    if option.kind == "int":
        return click.IntRange(min=option.minimum)
    return _Rationals(many=option.kind != "number")


def _registry_options() -> list[click.Option]:
    """One option per field name of :data:`theory.parameters.OPTIONS`, its help naming the statements that take it."""
    from theory import claims
    from theory.parameters import OPTIONS

    users: dict[str, list[str]] = {name: [] for name in OPTIONS}
    for c in claims():
        if not c.cli_ready:
            continue
        root = ".".join(c.id.split(".")[:2])  # the statement a proof step belongs to
        for name, p in c.parameters.items():
            if name in OPTIONS and not p.fixed and root not in users[name]:
                users[name].append(root)
    return [AliasOption([*_SHORT.get(name, ()), opt.flag, *_OLD.get(name, ()), name], hidden_aliases=_OLD.get(name, ()),
                        type=_click_type(opt), default=None,
                        help=opt.help + (f" Used by {', '.join(users[name])} (or their proof steps)." if users[name] else ""))
            for name, opt in OPTIONS.items()]


#: The paper's letters as short options, as in every other command (``-N`` steps, ``-L`` length).
_SHORT = {"N": ("-N",), "L": ("-L",)}
#: Old spellings that still parse, with a note (``--N``, ``--L`` before the options were named as elsewhere).
_OLD = {"N": ("--N",), "L": ("--L",)}


class _RegistryCommand(click.Command):
    """A command whose claim-field options come from the theory registry, built on first use.

    ``mdm-theory --help`` and every other command stay free of the sympy import the registry needs.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._registry_built = False

    def get_params(self, ctx):
        if not self._registry_built:
            self.params.extend(_registry_options())
            self._registry_built = True
        return super().get_params(ctx)


def _fmt(v) -> str:
    if isinstance(v, Fraction):
        return str(v) if v.denominator == 1 else f"{v} ({float(v):.6g})"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _rational(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_rational(v) for v in value)
    return isinstance(value, (int, Fraction)) and not isinstance(value, bool)


def _as_float(value):
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, list):
        return [_as_float(v) for v in value]
    return value


def _schedule_pi(schedule: str, N: int) -> list:
    """``pi`` of ``N`` steps of a schedule family; the linear one exactly (``pi_i = 1/N``)."""
    family = make_schedule(schedule, N)  # refuses N beyond numerics.schedules.MAX_STEPS before any list is built
    if schedule == "linear":
        return [Fraction(1, N)] * N
    return list(family.pi)


def _option_rows(claim) -> list[dict]:
    from theory.parameters import OPTIONS

    return [{"field": name, "option": OPTIONS[name].flag if name in OPTIONS else None, "help": p.help,
             "required": p.required, "default": None if p.required or callable(p.default) else str(p.default),
             "fixed": p.fixed} for name, p in claim.parameters.items()]


def _listing(lemma, latex: bool, as_json: bool) -> None:
    from theory import claims
    from theory.parameters import flags

    rows = claims(lemma) if lemma else claims()
    if not rows:
        raise click.UsageError(f"no claim matches {lemma!r}")
    out = [{"id": c.id, "paper": c.paper, "title": c.title, "relation": c.relation,
            "statement_latex": c.statement_latex, "expect": c.expect, "steps": list(c.steps),
            "parameters": {k: str(v) for k, v in c.parameters.items()}, "options": _option_rows(c),
            "cli_ready": c.cli_ready, "doc": c.doc} for c in rows]
    lines = []
    for c in rows:
        lines.append(f"{c.id:20s} {c.paper:42s} {c.title}" + ("   [FALSE: see docs/findings.md]" if c.expect == "false" else ""))
        if latex:
            lines.append(f"{'':20s} $ {c.statement_latex} $")
        if lemma:
            lines.append(f"{'':20s} options: {' '.join(flags(c.parameters))}" if c.cli_ready
                         else f"{'':20s} (table-valued instance: `mdm-theory check --lemma {c.id}`)")
    emit({"claims": out}, as_json, "\n".join(lines))


@click.command("bounds", cls=_RegistryCommand)
@_lemma_option
@click.option("--schedule", type=click.Choice(sorted(SCHEDULES)), default=None,
              help="Schedule family that turns -N into step probabilities pi (numerics.schedules; default linear, "
                   "pi_i = 1/N exactly).")
@click.option("--float", "use_float", is_flag=True,
              help="Evaluate in float64 even where the claim has an exact rational form (faster at long lengths).")
@click.option("--latex", is_flag=True, help="Print the LaTeX statement of each listed claim.")
@json_option
def bounds_cmd(lemma, schedule, use_float, latex, as_json, **options) -> None:
    """List the registry of lemmas, theorems and proof steps, or evaluate one (--lemma ID with its options).

    Each claim declares its fields, their defaults and its explicit constants (theory.parameters);
    `bounds --lemma ID` lists the options it takes. Numbers are read as exact rationals, and a claim
    with an exact form is evaluated in rational arithmetic (sides printed as p/q). Theorem 4.2 / B.12
    print N(eps, n), L_0(eps, n) (with -N and no --eps: the eps that N steps buy); Theorem 4.4 prints
    the argument's constant C and the true threshold.
    """
    from theory import check, get
    from theory.parameters import OPTIONS, resolve
    from theory.search import jsonable_instance
    from validation.guards import check_claim_size

    given = {k: v for k, v in options.items() if v is not None}
    if lemma is None or (not given and schedule is None):
        _listing(lemma, latex, as_json)
        return
    try:
        claim = get(lemma)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    schedule_fields = [n for n, p in claim.parameters.items()
                       if not p.fixed and n in OPTIONS and OPTIONS[n].kind == "probabilities"]
    if schedule is not None and not schedule_fields:
        raise click.UsageError(f"{claim.id} takes no step probabilities, so no --schedule")
    if schedule_fields and schedule_fields[0] not in given and "N" in given:
        given[schedule_fields[0]] = _schedule_pi(schedule or "linear", given["N"])
        if "N" not in claim.parameters:
            del given["N"]
    try:
        resolved = resolve(claim.id, claim.parameters, given)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        constants = claim.constants(resolved.values) if claim.constants else None
        exact = claim.exact is not None and not use_float and _rational(list(resolved.instance.values()))
        check_claim_size(claim.id, resolved.instance, exact)
        inst = resolved.instance if exact else {k: _as_float(v) for k, v in resolved.instance.items()}
        res = check(claim, inst, exact=exact)
    except ValueError as exc:
        raise click.UsageError(f"{claim.id}: {exc}") from None
    result: dict = {"id": claim.id, "paper": claim.paper, "title": claim.title,
                    "statement_latex": claim.statement_latex, "values": jsonable_instance(resolved.values),
                    "relation": claim.relation, "lhs": float(res.lhs), "rhs": float(res.rhs), "exact": res.exact,
                    "holds": res.holds, "slack": res.slack, "tightness": None if res.degenerate or res.vacuous else res.tightness,
                    "degenerate": res.degenerate, "vacuous": res.vacuous}
    if res.exact:
        result.update({"lhs_exact": str(res.lhs), "rhs_exact": str(res.rhs)})
    why = [w for w, flag in (("both sides 0 or 1", res.degenerate), ("vacuous bound", res.vacuous)) if flag]
    tightness = f"n/a ({', '.join(why)})" if why else _fmt(res.tightness)
    human = (f"{claim.id} ({claim.paper}): {claim.title}\n"
             f"  lhs = {_fmt(res.lhs)}  {claim.relation}  rhs = {_fmt(res.rhs)}"
             f"   holds: {res.holds}, slack {_fmt(res.slack)}, tightness {tightness}"
             + ("  (exact rationals)" if res.exact else ""))
    if constants:
        result["constants"] = constants
        human += "\n  constants: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in constants.items())
    emit(result, as_json, human)


@click.command("check")
@_lemma_option
@click.option("--instances", type=click.IntRange(min=1), default=20, show_default=True,
              help="Generated instances per claim.")
@_seed_option
@progress_option
@json_option
def check_cmd(lemma, instances, seed, progress, as_json) -> None:
    """Run every claim (or --lemma ID and its steps) over generated instances and exact numbers.

    A claim found false is also run on its pinned counterexamples, so it never reports 0
    violations. Columns: instances tried (pinned ones included), violations, minimum slack
    (rhs - lhs for <=), tightness = bound / exact (minimum and median over the informative
    instances; 1 = tight), instances left out of the tightness because both sides are 0 or 1
    (degenerate) or the bound is vacuous, and whether the claim is expected to hold (claims marked
    FALSE were found false; docs/findings.md).
    """
    import numpy as np

    from theory import claims
    from theory.search import run_claim
    from validation.experiments._base import progress_iter

    rng = np.random.default_rng(seed)
    selected = claims(lemma)
    rows = [run_claim(c, instances, rng) for c in progress_iter(selected, show_progress(progress), "check: claims")]
    if not rows:
        raise click.UsageError(f"no claim matches {lemma!r}")
    header = (f"{'claim':22s} {'tried':>5s} {'viol.':>5s} {'min slack':>11s} {'tight min':>10s} {'tight med':>10s}"
              f" {'degen.':>6s} {'vacuous':>7s}  expect")
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r.claim:22s} {r.instances:5d} {r.violations:5d} {r.min_slack:11.3g} "
                     f"{r.min_tightness:10.4g} {r.median_tightness:10.4g} {r.degenerate:6d} {r.vacuous:7d}  "
                     f"{r.expect}" + (f" ({r.pinned} pinned)" if r.pinned else ""))
    unexpected = [r.claim for r in rows if r.violations and r.expect == "holds"]
    unconfirmed = [r.claim for r in rows if r.expect == "false" and not r.violations]
    lines += ["", "unexpected violations: " + (", ".join(unexpected) if unexpected else "none")]
    if unconfirmed:
        lines.append("FOUND FALSE BUT NOT VIOLATED (the pinned counterexample no longer fails): " + ", ".join(unconfirmed))
    emit({"rows": [r.__dict__ for r in rows], "unexpected_violations": unexpected,
          "unconfirmed_findings": unconfirmed}, as_json, "\n".join(lines))


@click.command("counterexamples")
@_lemma_option
@click.option("--budget", type=click.IntRange(min=1), default=100, show_default=True,
              help="Random instances per claim before the Nelder-Mead refinement.")
@_seed_option
@progress_option
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("results/theory/counterexamples.json"), show_default=True,
              help="Findings file (written atomically with provenance).")
@json_option
def counterexamples_cmd(lemma, budget, seed, progress, out, as_json) -> None:
    """Search for violations of every claim (or --lemma ID): random instances, then Nelder-Mead on
    the claim's free parameters from the least-slack instances. Violations are printed and written
    to --out."""
    import numpy as np

    from numerics.provenance import atomic_write_json, check_writable_file, provenance
    from theory import claims
    from theory.search import search_counterexamples
    from validation.guards import guard_output

    if not claims(lemma):
        raise click.UsageError(f"no claim matches {lemma!r}")
    guard_output(out, "counterexamples")
    check_writable_file(out)  # before the search, not after it
    rng = np.random.default_rng(seed)
    findings, least = [], {}
    from validation.experiments._base import progress_iter

    for c in progress_iter(claims(lemma), show_progress(progress), "counterexamples: claims"):
        found, rel = search_counterexamples(c, budget, rng)
        findings.extend(found)
        least[c.id] = rel
    payload = {"config": {"lemma": lemma, "budget": budget, "seed": seed}, "provenance": provenance(),
               "findings": [f.__dict__ for f in findings],
               "least_relative_slack": {k: (v if math.isfinite(v) else None) for k, v in least.items()}}
    atomic_write_json(out, payload)
    by_claim: dict[str, int] = {}
    for f in findings:
        by_claim[f.claim] = by_claim.get(f.claim, 0) + 1
    lines = [f"{cid:22s} least relative slack {least[cid]:11.3g}  violations {by_claim.get(cid, 0)}" for cid in least]
    for cid in by_claim:
        f = min((f for f in findings if f.claim == cid), key=lambda f: f.relative_slack)
        lines.append(f"VIOLATION {cid} ({f.expect}): lhs {f.lhs:.6g} rhs {f.rhs:.6g} at {f.instance}")
    lines.append(f"written to {out}")
    emit({"findings": payload["findings"], "least_relative_slack": payload["least_relative_slack"],
          "out": str(out)}, as_json, "\n".join(lines))


COMMANDS = [bounds_cmd, check_cmd, counterexamples_cmd]
