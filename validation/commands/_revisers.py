"""``--sampler llada21|wino`` on ``exact``, ``sweep`` and ``steps-needed`` (``calibrate --revisers``): the
revising decoders' options, and ``exact``'s point.

The revisers are :data:`numerics.sampling.registry.REVISERS` (not :data:`~numerics.sampling.registry.DECODERS`:
no DP or report family can run a rule that edits revealed tokens); their options are checked once, for
every command, by :func:`validation.canvas_samplers.check_reviser`. Their options shared with the decoders (``--block-length``, ``--temperature``, ``--threshold``) are
the decoder options' flags; the ones of their own (``--edit-threshold``, ``--edit-cap``,
``--remask-threshold``, ``--step-cap``) are added here from the registry (:func:`reviser_options`). A
point is :func:`numerics.metrics.point_metrics` of the :class:`~numerics.sampling.revisers.Reviser`
(the exact chain over canvases, or Monte Carlo), written as ``exact`` writes a decoder's point plus the law
of the calls (``calls_law``).
"""

from __future__ import annotations

import functools
import itertools
import time
from typing import Any

import click

from numerics.sampling.registry import REVISERS, Option
from validation.canvas_samplers import REVISER_FIELDS, REVISER_NAMES, check_reviser
from validation.commands._decoders import parse_values

__all__ = ["REVISER_FIELDS", "REVISER_NAMES", "check_reviser_options", "reviser_options", "reviser_point",
           "reviser_summaries"]


def _takers(name: str) -> list[str]:
    return [n for n, s in REVISERS.items() if name in s.option_names]


def _option(name: str) -> Option:
    return next(s.option(name) for s in REVISERS.values() if name in s.option_names)


def reviser_help(name: str) -> str:
    """What the revisers that take ``name`` do with it (``llada21: ... [default: 16]``), ``""`` if none does."""
    parts = []
    for n in _takers(name):
        o = REVISERS[n].option(name)
        parts.append(f"{n}: {o.help}" + (f" [default: {o.default}]" if o.default is not None else ""))
    return "; ".join(parts)


def reviser_summaries() -> str:
    """``llada21: ...; wino: ...`` for ``--sampler``'s help."""
    return "; ".join(f"{n}: {s.summary}" for n, s in REVISERS.items())


def reviser_options(f=None, *, also: dict[str, str] | None = None, lists: bool = False):
    """Add the revisers' own options (:data:`REVISER_FIELDS`); the command receives ``reviser_opts`` (the given ones).
    ``also``: option name -> help of another sampler that takes the same flag (appended to its help); ``lists``
    (``sweep``): each takes a comma list and the command receives ``reviser_grid``, every combination of them
    (a list of dicts of the options given)."""
    if f is None:
        return functools.partial(reviser_options, also=also, lists=lists)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        raw = {k: kwargs.pop(k) for k in REVISER_FIELDS}
        if lists:
            axes = [parse_values(_option(k), raw[k]) for k in REVISER_FIELDS]
            kwargs["reviser_grid"] = [{k: v for k, v in zip(REVISER_FIELDS, combo) if v is not None}
                                      for combo in itertools.product(*axes)]
        else:
            kwargs["reviser_opts"] = {k: v for k, v in raw.items() if v is not None}
        return f(*args, **kwargs)

    for name in reversed(REVISER_FIELDS):
        o = _option(name)
        wrapper = click.option(o.flag, o.name, type=str if lists else o.type, default=None,
                               help=f"{reviser_help(name)}. Range {o.range_text()}."
                                    + (" A comma list sweeps it." if lists else "")
                                    + (f" {also[name]}" if also and name in also else ""))(wrapper)
    return wrapper


def check_reviser_options(sampler: str, decoder_opts: dict, reviser_opts: dict, gamma: float | None) -> dict:
    """The options of ``--sampler`` ``sampler`` (a reviser, or any sampler given a reviser's own option), checked.

    A reviser's own option given to another sampler, an option the reviser does not take, ``--gamma``, and a
    value out of its range are each a ``click.UsageError`` naming the flag. Returns the reviser's options.
    """
    try:
        return check_reviser(sampler, {**decoder_opts, **reviser_opts}, gamma)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def reviser_point(sampler: str, options: dict, language: str, ser_language: str | None, length: int, method: str,
                  samples: int, seed: int) -> dict[str, Any]:
    """One point of a reviser (:func:`numerics.metrics.point_metrics`), as ``exact`` writes a decoder's point.

    Bad sizes (a block length that does not divide ``L``, ``--method dp``, the exact chain beyond its size,
    too few samples, a Monte Carlo run beyond the memory) are a ``click.UsageError`` before any work.
    """
    from numerics.exact.revisers import choose_reviser_method
    from numerics.languages.presets import load_language
    from numerics.machine import check_memory
    from numerics.metrics import point_metrics
    from numerics.provenance import to_jsonable

    t0 = time.perf_counter()
    if length < 1 or samples < 2:
        raise click.UsageError("a revising decoder needs -L >= 1 and --samples >= 2")
    try:
        rv = REVISERS[sampler].build(options)
        lang = load_language(language)
        ser_lang = None if ser_language in (None, language) else load_language(ser_language)
        ran = choose_reviser_method(method, rv, lang.vocab_size, length)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if ran == "mc":  # the oracle's laws (n, L, V) and their tempered copy, the draws and the canvases
        check_memory(8.0 * samples * length * (3 * lang.vocab_size + 4), f"{sampler} by Monte Carlo ({samples} "
                     f"samples, L = {length})", "use fewer --samples or a smaller -L")
    m = point_metrics(lang, length, rv, method=method, samples=samples, rng=seed, ser_language=ser_lang,
                      names=(language, ser_language))
    inputs = {"language": language, "ser_language": ser_language, "length": length, "method": method,
              "samples": samples, "seed": seed, "sampler": sampler, **options}
    out = {"inputs": inputs, "method": m.how.method, "schedule_name": None, "sampler_name": m.how.sampler,
           "tie_seed": None, "sampler_parameters": m.how.parameters, "calls_law": list(m.how.calls_law)}
    return {**out, **{k: to_jsonable(v) for k, v in m.metrics().items()}, "elapsed_s": time.perf_counter() - t0}
