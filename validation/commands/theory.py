"""``mdm-theory bounds``, ``mdm-theory check`` and ``mdm-theory counterexamples``: the theory registry.

* ``bounds``: list every lemma, theorem and proof step (``--lemma X`` to evaluate one on the
  values given as options, e.g. ``mdm-theory bounds --lemma C.5 --N 64 --l 5``);
* ``check``: run every claim over generated instances; table of instances, violations, minimum
  slack and tightness (bound / exact);
* ``counterexamples``: random search plus Nelder-Mead for violations; writes them to a JSON file.
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from ._common import emit, json_option

__all__ = ["COMMANDS"]

_lemma_option = click.option("--lemma", "lemma", default=None, metavar="ID",
                             help="A claim id (A.1, B.11, C.5.jensen, 4.4, ...) or a prefix selecting it and its steps.")


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


@click.command("bounds")
@_lemma_option
@click.option("--N", "N", type=click.IntRange(min=1), default=None, help="Number of steps N (builds pi from --schedule).")
@click.option("--schedule", default="linear", show_default=True, help="Schedule family for --N (numerics.schedules).")
@click.option("--pi", "pi_text", default=None, metavar="P1,P2,..",
              help="Explicit step probabilities pi_1..pi_N (instead of --N/--schedule).")
@click.option("--L", "L", type=click.IntRange(min=1), default=None, help="Sequence length L.")
@click.option("--l", "l_", type=click.IntRange(min=1), default=None, help="Interval length l.")
@click.option("--n", "n", type=click.IntRange(min=2), default=None, help="n-gram order n.")
@click.option("--V", "V", type=click.IntRange(min=2), default=None, help="Vocabulary size |V|.")
@click.option("--eps", type=float, default=None, help="epsilon of Lemma B.12 / Theorem 4.2.")
@click.option("--eps-learning", "eps_learning", type=float, default=0.0, show_default=True, help="eps_learning.")
@click.option("--u-prev", "u_prev", type=float, default=None, help="u_{i-1} (Lemmas B.10, B.11).")
@click.option("--pi-i", "pi_i", type=float, default=None, help="pi_i (Lemmas B.10, B.11).")
@click.option("--d", "d", type=float, default=None, help="Chernoff deviation d.")
@click.option("--x", "x", type=float, default=None, help="Point x (C.5.concavity).")
@click.option("--C", "C", type=float, default=None, help="Constant C of Theorem 4.4.")
@click.option("--s", "s", type=click.IntRange(min=0), default=None, help="Separators s (B.11.interleaving).")
@click.option("--k", "k", type=click.IntRange(min=0), default=None, help="New positions k (B.11.interleaving).")
@click.option("--latex", is_flag=True, help="Print LaTeX statements.")
@json_option
def bounds_cmd(lemma, N, schedule, pi_text, L, l_, n, V, eps, eps_learning, u_prev, pi_i, d, x, C, s, k, latex,
               as_json) -> None:
    """List the registry of lemmas, theorems and proof steps, or evaluate one (--lemma ID with values).

    Theorem 4.2 / B.12 also print their constants N(eps, n), L_0(eps, n) (with --N and no --eps:
    the eps that N steps buy); Theorem 4.4 prints the argument's constant C and the true threshold.
    """
    from numerics.schedules import make_schedule
    from theory import claims, get

    if lemma is None or not any(v is not None for v in (N, pi_text, L, l_, n, V, eps, u_prev, pi_i, d, x, C, s, k)):
        rows = claims(lemma) if lemma else claims()
        if not rows:
            raise click.UsageError(f"no claim matches {lemma!r}; `mdm-theory bounds` lists every claim id")
        out = [{"id": c.id, "paper": c.paper, "title": c.title, "relation": c.relation,
                "statement_latex": c.statement_latex, "expect": c.expect, "steps": list(c.steps),
                "parameters": c.parameters, "doc": c.doc} for c in rows]
        human = "\n".join(
            f"{c.id:20s} {c.paper:42s} {c.title}" + (f"\n{'':20s} $ {c.statement_latex} $" if latex else "")
            + ("   [FALSE: see docs/findings.md]" if c.expect == "false" else "")
            for c in rows
        )
        emit({"claims": out}, as_json, human)
        return
    claim = get(lemma)
    values = {"N": N, "L": L, "l": l_, "n": n, "V": V, "eps": eps, "eps_learning": eps_learning,
              "u_prev": u_prev, "pi_i": pi_i, "d": d, "x": x, "C": C, "s": s, "k": k}
    if pi_text is not None:
        from fractions import Fraction

        try:
            values["pi"] = [Fraction(t.strip()) for t in pi_text.split(",")]
        except (ValueError, ZeroDivisionError):
            raise click.UsageError(f"--pi must be comma-separated numbers or fractions, got {pi_text!r}") from None
        values["N"] = len(values["pi"])
    elif N is not None:
        values["pi"] = make_schedule(schedule, N).pi
    result: dict = {"id": claim.id, "paper": claim.paper, "title": claim.title,
                    "statement_latex": claim.statement_latex}
    constants = _constants(claim.id, values)
    if constants:
        result["constants"] = constants
        if claim.id in ("4.2", "B.12") and values["eps"] is None:
            values["eps"] = constants["eps"]
        if claim.id in ("4.2", "B.12") and values["L"] is None:
            values["L"] = constants["L_0"]
    if claim.build is None:
        raise click.UsageError(f"{claim.id} takes a table-valued instance (languages, distributions); "
                               f"use `mdm-theory check --lemma {claim.id}`")
    try:
        inst = claim.build(**values)
        res = claim(inst)
    except (KeyError, TypeError) as exc:
        unset = [p for p in sorted(claim.parameters) if values.get(p) is None]
        raise click.UsageError(f"{claim.id} needs the options {sorted(claim.parameters)}: "
                               + (f"missing {', '.join('--' + p.replace('_', '-') for p in unset)}" if unset else f"({exc})")) from None
    except ValueError as exc:
        raise click.UsageError(f"{claim.id}: {exc}") from None
    result.update({"lhs": float(res.lhs), "rhs": float(res.rhs), "relation": claim.relation, "holds": res.holds,
                   "slack": res.slack, "tightness": res.tightness})
    human = (f"{claim.id} ({claim.paper}): {claim.title}\n"
             f"  lhs = {_fmt(float(res.lhs))}  {claim.relation}  rhs = {_fmt(float(res.rhs))}"
             f"   holds: {res.holds}, slack {_fmt(res.slack)}, tightness {_fmt(res.tightness)}")
    if constants:
        human += "\n  constants: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in constants.items())
    emit(result, as_json, human)


def _constants(claim_id: str, values: dict) -> dict:
    if claim_id in ("4.2", "B.12"):
        from theory.positive import b12_solve_eps, theorem42_constants

        n, V = values["n"] or 2, values["V"] or 8
        eps = values["eps"]
        if eps is None and values["N"] is not None:
            eps = b12_solve_eps(values["N"], n)
        if eps is None:
            raise click.UsageError("Theorem 4.2 / B.12 need --eps (or --N to solve for eps)")
        return dict(theorem42_constants(eps, n, V, values["eps_learning"]))
    if claim_id in ("4.4", "4.4.argument"):
        import numpy as np

        from theory.negative import (arg_constant_l10, c9_argument_constant, c9_argument_limit, p_e,
                                     true_threshold)

        pe = p_e(values["eps_learning"])
        lengths = np.arange(10, 2001, 5)
        arg = c9_argument_constant(lengths, 5, pe)
        true = true_threshold(lengths[::20], 5)
        return {"p_e": pe, "C_argument_L>=10": arg.constant, "C_argument_limit": c9_argument_limit(5, pe),
                "C_argument_L>=10_at_p_e=63/128": arg_constant_l10(),
                "C_true_linear_min_over_L": true.constant, "C_true_linear_limit": true.limit}
    return {}


@click.command("check")
@_lemma_option
@click.option("--instances", type=click.IntRange(min=1), default=20, show_default=True,
              help="Generated instances per claim.")
@click.option("--seed", type=int, default=0, show_default=True)
@json_option
def check_cmd(lemma, instances, seed, as_json) -> None:
    """Run every claim (or --lemma ID and its steps) over generated instances and exact numbers.

    Columns: instances tried, violations, minimum slack (rhs - lhs for <=), tightness = bound / exact
    (minimum and median over the instances; 1 = tight), and whether the claim is expected to hold
    (claims marked FALSE were found false; docs/findings.md).
    """
    import numpy as np

    from theory import claims
    from theory.search import run_claim

    rng = np.random.default_rng(seed)
    rows = [run_claim(c, instances, rng) for c in claims(lemma)]
    if not rows:
        raise click.UsageError(f"no claim matches {lemma!r}")
    header = f"{'claim':22s} {'tried':>5s} {'viol.':>5s} {'min slack':>11s} {'tight min':>10s} {'tight med':>10s}  expect"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r.claim:22s} {r.instances:5d} {r.violations:5d} {r.min_slack:11.3g} "
                     f"{r.min_tightness:10.4g} {r.median_tightness:10.4g}  {r.expect}")
    unexpected = [r.claim for r in rows if r.violations and r.expect == "holds"]
    lines.append("")
    lines.append("unexpected violations: " + (", ".join(unexpected) if unexpected else "none"))
    emit({"rows": [r.__dict__ for r in rows], "unexpected_violations": unexpected}, as_json, "\n".join(lines))


@click.command("counterexamples")
@_lemma_option
@click.option("--budget", type=click.IntRange(min=1), default=100, show_default=True,
              help="Random instances per claim before the Nelder-Mead refinement.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("results/theory/counterexamples.json"), show_default=True,
              help="Findings file (written atomically with provenance).")
@json_option
def counterexamples_cmd(lemma, budget, seed, out, as_json) -> None:
    """Search for violations of every claim (or --lemma ID): random instances, then Nelder-Mead on
    the claim's free parameters from the least-slack instances. Violations are printed and written
    to --out."""
    import numpy as np

    from numerics.provenance import atomic_write_json, check_writable_file, provenance
    from theory import claims
    from theory.search import search_counterexamples

    check_writable_file(out)  # before the search, not after it
    rng = np.random.default_rng(seed)
    findings, least = [], {}
    if not claims(lemma):
        raise click.UsageError(f"no claim matches {lemma!r}; `mdm-theory bounds` lists every claim id")
    for c in claims(lemma):
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
