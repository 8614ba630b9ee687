"""The decoder options every command shares, generated from the sampler registry.

:func:`decoder_options` adds one click option per decoder option of
:data:`numerics.sampling.registry.DECODERS` (``--block-length``, ``--remasking``, ``--temperature``,
``--threshold``, ``--factor``, ``--remdm-variant``, ``--eta``, and whatever a new entry declares):
its type or choices, its help (which samplers take it, its range, its default) and its flag come
from the registry. The command receives one :class:`DecoderOptions` (argument ``decoder_opts``), a
frozen mapping of the options given, which :class:`validation.sweep.PointConfig` takes as its
``options``; ``lists=True`` (``sweep``) takes comma lists and hands the command the grid of them
(``decoder_grid``, a list of :class:`DecoderOptions`). :func:`check_decoder_method` refuses a method
no decoder has (``closed-form``) on the command line.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import click

from numerics.sampling.registry import (
    DECODER_FIELDS,
    DECODERS,
    OPTIONS,
    REVISERS,
    Option,
    Options,
    decoder_names,
    option_takers,
)

DECODER_NAMES = decoder_names("decoder")
BLOCK_RULES = tuple(n for n in decoder_names("adaptive") if "block_length" in DECODERS[n].option_names)

__all__ = ["BLOCK_RULES", "DECODER_FIELDS", "DECODER_NAMES", "DecoderOptions", "check_decoder_method",
           "decoder_options", "parse_values", "reviser_help"]


class DecoderOptions(Options):
    """The decoder options as given (unset ones are absent; ``opts.eta`` is ``None`` when not given)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name in DECODER_FIELDS:
            return self.get(name)
        raise AttributeError(name)

    def given(self) -> list[str]:
        """The flags given, in the registry's order."""
        return [OPTIONS[k].flag for k in DECODER_FIELDS if k in self]

    def fields(self) -> dict:
        """Every decoder option name with its value (``None`` = not given)."""
        return {k: self.get(k) for k in DECODER_FIELDS}


def check_decoder_method(sampler: str, method: str) -> None:
    """A ``click.UsageError`` for a method the decoders do not have (``closed-form``)."""
    from numerics.metrics import DECODER_METHODS

    if sampler in DECODER_NAMES and method not in DECODER_METHODS:
        raise click.UsageError(f"--method {method}: a decoder is computed by one of {', '.join(DECODER_METHODS)}")


def _help(o: Option, revisers: bool = False) -> str:
    """Which samplers take the option and what it does for each (grouped where they say the same);
    ``revisers``: also the revising decoders that take it (``exact``)."""
    said: dict[str, list[str]] = {}
    for n in option_takers(o.name):
        mine = DECODERS[n].option(o.name)
        default = f" [default: {mine.default}]" if mine.default is not None else ""
        said.setdefault(mine.help + default, []).append(n)
    limits = "" if o.choices or o.range_text() == "any" else f" Range {o.range_text()}."
    text = "; ".join(f"{', '.join(names)}: {text}" for text, names in said.items()) + "." + limits
    if revisers:
        more = reviser_help(o.name)
        text += f" {more}." if more else ""
    return text


def reviser_help(name: str) -> str:
    """What the revisers that take ``name`` do with it (``llada21: ... [default: 16]``), ``""`` if none does."""
    takers = ((n, s.option(name)) for n, s in REVISERS.items() if name in s.option_names)
    return "; ".join(f"{n}: {o.help}" + (f" [default: {o.default}]" if o.default is not None else "") for n, o in takers)


def parse_values(o: Option, text: str | None) -> tuple:
    """A comma list of ``o``'s values (``None``: ``(None,)``, not given); a bad one is a ``click.BadParameter``."""
    if text is None:
        return (None,)
    out = []
    for part in (s.strip() for s in str(text).split(",")):
        try:
            v = o.type(part)
        except ValueError:
            raise click.BadParameter(f"{part!r} is not a valid {o.type.__name__}", param_hint=o.flag) from None
        if o.choices is not None and v not in o.choices:
            raise click.BadParameter(f"{v!r} is not one of {', '.join(map(repr, o.choices))}", param_hint=o.flag)
        out.append(v)
    if not out or any(p == "" for p in str(text).split(",")):
        raise click.BadParameter(f"an empty value in {text!r}", param_hint=o.flag)
    return tuple(dict.fromkeys(out))


def _click_option(o: Option, lists: bool, revisers: bool = False):
    if lists:
        return click.option(o.flag, o.name, type=str, default=None, help=_help(o) + " A comma list sweeps it.")
    kind = click.Choice(list(o.choices)) if o.choices else o.type
    return click.option(o.flag, o.name, type=kind, default=None, help=_help(o, revisers))


def decoder_options(f=None, *, lists: bool = False, revisers: bool = False):
    """Add the registry's decoder options to a click command; it receives ``decoder_opts``
    (:class:`DecoderOptions`), or with ``lists`` ``decoder_grid`` (every combination of the comma lists);
    ``revisers``: the help also says what the revising decoders do with an option (``exact``)."""
    if f is None:
        return functools.partial(decoder_options, lists=lists, revisers=revisers)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        raw = {k: kwargs.pop(k) for k in DECODER_FIELDS}
        if not lists:
            kwargs["decoder_opts"] = DecoderOptions(raw)
        else:
            axes = [parse_values(OPTIONS[k], raw[k]) for k in DECODER_FIELDS]
            kwargs["decoder_grid"] = [DecoderOptions(dict(zip(DECODER_FIELDS, combo)))
                                      for combo in itertools.product(*axes)]
        return f(*args, **kwargs)

    for name in reversed(DECODER_FIELDS):
        wrapper = _click_option(OPTIONS[name], lists, revisers)(wrapper)
    return wrapper
