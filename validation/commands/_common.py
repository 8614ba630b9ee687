"""What every subcommand shares: output conventions, error reporting, and options spelled alike.

The conventions (issue 12, issue 13):

* ``--json`` prints exactly one strict JSON object (RFC 8259: no ``NaN``/``Infinity``; a
  non-finite value is ``null`` with a ``null_reason``) on stdout; without it the same result is
  printed as text for a person.
* A failure prints ``{"error": {"type", "message", "exit_code"}}`` on stdout under ``--json``
  (``Error: ...`` on stderr otherwise) and exits non-zero, without a traceback: bad input is a
  message, not a crash (set ``MDM_THEORY_TRACEBACK=1`` to see the traceback).
* Logs and progress go to stderr; progress bars are drawn only when stderr is a terminal, unless
  ``--progress`` / ``--no-progress`` says otherwise.
* An estimate reads the same everywhere: the shape of :meth:`numerics.estimate.Estimate.json_record`
  (docs/schema.md), produced by :func:`emit` from any :class:`~numerics.estimate.Estimate` in a result.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from numerics.estimate import is_estimate_record
from numerics.machine import TRACEBACK_ENV, EnvironmentVariableError, check_environment, env_value
from numerics.provenance import NULL_REASON, to_jsonable

__all__ = [
    "AliasOption",
    "CommandGroup",
    "USER_ERRORS",
    "emit",
    "format_estimate",
    "json_option",
    "progress_option",
    "render_human",
    "show_progress",
]

#: Exceptions that mean "this input cannot be computed" (a bad language file, a method that does
#: not fit, an unwritable path, a missing optional package): reported as a message, not a traceback.
USER_ERRORS = (ValueError, OSError, ImportError, FloatingPointError, MemoryError)


def _show_traceback() -> bool:
    """``MDM_THEORY_TRACEBACK`` is on (an unusable value is refused by :func:`check_environment` first)."""
    try:
        return bool(env_value(TRACEBACK_ENV))
    except EnvironmentVariableError:
        return False


def _error_object(kind: str, message: str, exit_code: int) -> str:
    return json.dumps({"error": {"type": kind, "message": message, "exit_code": exit_code}}, allow_nan=False)


class CommandGroup(click.Group):
    """The ``mdm-theory`` group: every subcommand's failure becomes an error message or object.

    Parse errors (an unknown option, a bad value) and the :data:`USER_ERRORS` a command raises
    exit with status 2 (usage) or 1 (anything else). When ``--json`` is among the arguments the
    error is one JSON object on stdout, so a script that reads stdout always gets JSON.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        as_json = "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
        try:
            check_environment()  # every MDM_THEORY_* variable parsed once, before any command runs
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:
            if as_json:
                click.echo(_error_object(type(exc).__name__, exc.format_message(), exc.exit_code))
            else:
                exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            if as_json:
                click.echo(_error_object("Abort", "aborted", 1))
            else:
                click.echo("Aborted!", err=True)
            sys.exit(1)
        except USER_ERRORS as exc:
            if _show_traceback():
                raise
            message = str(exc) or type(exc).__name__
            code = getattr(exc, "exit_code", 1)  # validation.guards.GuardError: 2, the input is at fault
            if as_json:
                click.echo(_error_object(type(exc).__name__, message, code))
            else:
                click.echo(f"Error: {message}", err=True)
            sys.exit(code)
        sys.exit(code if isinstance(code, int) else 0)


json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one strict JSON object on stdout (an error object on failure).")

progress_option = click.option(
    "--progress/--no-progress", "progress", default=None,
    help="Progress bars on stderr  [default: only when stderr is a terminal].")


def show_progress(progress: bool | None) -> bool:
    """The ``--progress/--no-progress`` choice, or (neither given) whether stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else bool(progress)


def emit(result: Any, as_json: bool, human: str | None = None) -> None:
    """Print ``result`` as one strict JSON object (``--json``) or as ``human`` text.

    ``human=None`` renders the result as indented ``key: value`` text (:func:`render_human`).
    Any :class:`~numerics.estimate.Estimate` inside ``result`` gets the one estimate shape.
    """
    data = to_jsonable(result)
    if as_json:
        click.echo(json.dumps(data, allow_nan=False))
    else:
        click.echo(human if human is not None else render_human(data))


def _num(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def format_estimate(record: dict) -> str:
    """One estimate record (docs/schema.md) as text: ``0.924 +- 0.008 [0.907, 0.939] (mc, 1000 samples)``."""
    value, reasons = record.get("value"), record.get(NULL_REASON) or {}
    method = record.get("method", "")
    if value is None:
        why = reasons.get("value", "no value")
        return why if method in why else f"{why} ({method})"
    if record.get("exact", record.get("stderr") == 0.0 and not record.get("samples")):
        return f"{_num(value)} (exact: {method})"
    text = _num(value)
    if record.get("stderr") is not None:  # round-off of a constant (1.7e-18 on 4.0) is no spread: 0
        err = record["stderr"]
        text += " +- 0" if isinstance(value, (int, float)) and abs(err) <= 1e-12 * max(abs(value), 1e-300) else f" +- {err:.2g}"
    if record.get("ci_low") is not None and record.get("ci_high") is not None:
        level = record.get("confidence")
        text += f" [{_num(record['ci_low'])}, {_num(record['ci_high'])}]" + (f" {level:.0%} CI" if level else "")
    samples = record.get("samples")
    return text + f" (estimate: {method}" + (f", {samples} samples)" if samples else ")")


def render_human(data: Any, indent: int = 0) -> str:
    """Converted JSON data as indented text: estimates on one line, scalars as ``key: value``."""
    pad = "  " * indent
    if is_estimate_record(data):
        return pad + format_estimate(data)
    if isinstance(data, dict):
        lines = []
        for k, v in data.items():
            if k == NULL_REASON:
                continue
            if is_estimate_record(v):
                lines.append(f"{pad}{k}: {format_estimate(v)}")
            elif isinstance(v, dict) and v:
                lines.append(f"{pad}{k}:")
                lines.append(render_human(v, indent + 1))
            elif isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v):
                lines.append(f"{pad}{k}:")
                lines += [render_human(x, indent + 1) if isinstance(x, (dict, list)) else f"{pad}  {_num(x)}" for x in v]
            elif isinstance(v, list):
                lines.append(f"{pad}{k}: {', '.join(_num(x) for x in v)}")
            elif v is None and k in (data.get(NULL_REASON) or {}):
                lines.append(f"{pad}{k}: {data[NULL_REASON][k]}")
            else:
                lines.append(f"{pad}{k}: {_num(v)}")
        return "\n".join(lines)
    if isinstance(data, list):
        return "\n".join(render_human(x, indent) if isinstance(x, (dict, list)) else pad + _num(x) for x in data)
    return pad + _num(data)


class AliasOption(click.Option):
    """A click option with old spellings that still parse but are left out of ``--help``.

    ``click.option("-N", "--n-steps", "--steps", "n_steps", cls=AliasOption, hidden_aliases=("--steps",))``
    accepts ``--steps`` (the name before ``N`` was spelled out), with a note on a terminal's stderr that it
    is the old spelling, and shows only ``-N, --n-steps``.
    """

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)

    _ALIAS = "__old_spelling"

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        """The old spellings store under their own key, so :meth:`handle_parse_result` can say they were used."""
        if not self.hidden_aliases or self.is_flag:
            return super().add_to_parser(parser, ctx)
        action = "append" if self.multiple else "store"
        parser.add_option(obj=self, opts=[o for o in self.opts if o not in self.hidden_aliases], dest=self.name,
                          action=action, nargs=self.nargs)
        parser.add_option(obj=self, opts=list(self.hidden_aliases), dest=f"{self.name}{self._ALIAS}", action=action,
                          nargs=self.nargs)
        return None

    def handle_parse_result(self, ctx: click.Context, opts: Any, args: Any):
        old = f"{self.name}{self._ALIAS}"
        if old in opts:
            value = opts[old]
            opts = {k: v for k, v in opts.items() if k != old}
            opts.setdefault(self.name, value)  # the new spelling wins when both are given
            if sys.stderr.isatty():  # a person at a terminal; a script's output stays as it was
                new = " / ".join(o for o in self.opts if o not in self.hidden_aliases)
                click.echo(f"note: {' / '.join(self.hidden_aliases)} is the old spelling of {new}; it still works, "
                           "but use the new one", err=True)
        return super().handle_parse_result(ctx, opts, args)

    def get_help_record(self, ctx: click.Context):
        shown, self.opts = self.opts, [o for o in self.opts if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = shown



def bench_names(text: str, allowed: Sequence[str], what: str, flag: str) -> tuple[str, ...]:
    """The comma-separated names of a ``bench`` command, each one of ``allowed`` (a ``click.BadParameter`` naming
    ``flag`` otherwise, or when none is given)."""
    chosen = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [n for n in chosen if n not in allowed]
    if unknown or not chosen:
        raise click.BadParameter(f"unknown {what}(s) {unknown or list(chosen)}; choose from {tuple(allowed)}",
                                 param_hint=flag)
    return chosen


def bench_text(result: dict, chosen: Sequence[str], target: float, random_label: str = "random",
               extra: Any = None) -> str:
    """The human text of a bench that times samplers against the random sampler in one run (``bench adaptive``,
    ``decoders``, ``lossless``, ``revisers``): the random sampler's time, each sampler's ratio against it and
    the target, ``extra(name)`` after it (``E[calls] ...``), and the machine's load."""
    sec, cpu = result["seconds"], result["cpu_seconds"]
    lines = [f"{random_label}: {sec['random']:.2f} s ({cpu['random']:.2f} s CPU)"]
    lines += [f"{n}: {sec[n]:.2f} s, {result['ratio_to_random'][n]:.2f}x random "
              f"({'within' if result['within_target'][n] else 'ABOVE'} the {target:g}x target); "
              f"CPU {result['cpu_ratio_to_random'][n]:.2f}x" + (f"; {extra(n)}" if extra else "") for n in chosen]
    load = f"load {result['loadavg_before'][0]:.1f} -> {result['loadavg_after'][0]:.1f} on {result['cpu_count']} CPUs"
    if "threads" in result:
        load += f", {result['threads']} numba threads (a shared machine: the ratio, measured in one run, is the figure)"
    return "\n".join([*lines, load])
