"""Helpers shared by the subcommands: JSON/human output and the options every command spells alike."""

from __future__ import annotations

import json
from typing import Any

import click

from numerics.provenance import to_jsonable

__all__ = ["emit", "json_option", "AliasOption"]


def emit(result: Any, as_json: bool, human: str | None = None) -> None:
    """Print ``result`` as one JSON object (``--json``) or as ``human`` text (default: indented JSON)."""
    if as_json or human is None:
        click.echo(json.dumps(to_jsonable(result), indent=None if as_json else 2, allow_nan=False))
    else:
        click.echo(human)


json_option = click.option("--json", "as_json", is_flag=True, help="Print one machine-readable JSON object.")


class AliasOption(click.Option):
    """A click option with old spellings that still parse but are left out of ``--help``.

    ``click.option("-N", "--n-steps", "--steps", "n_steps", cls=AliasOption, hidden_aliases=("--steps",))``
    accepts ``--steps`` (the name before ``N`` was spelled out) and shows only ``-N, --n-steps``.
    """

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)

    def get_help_record(self, ctx: click.Context):
        shown, self.opts = self.opts, [o for o in self.opts if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = shown
