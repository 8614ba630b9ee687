"""Helpers shared by the subcommands: JSON/human output and the ``--json`` option."""

from __future__ import annotations

import json
from typing import Any

import click

from numerics.provenance import to_jsonable

__all__ = ["emit", "json_option"]


def emit(result: Any, as_json: bool, human: str | None = None) -> None:
    """Print ``result`` as one JSON object (``--json``) or as ``human`` text (default: indented JSON)."""
    if as_json or human is None:
        click.echo(json.dumps(to_jsonable(result), indent=None if as_json else 2, allow_nan=False))
    else:
        click.echo(human)


json_option = click.option("--json", "as_json", is_flag=True, help="Print one machine-readable JSON object.")
