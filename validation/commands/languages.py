"""``mdm-theory languages``: the language presets with their summaries, and ``languages export``."""

from __future__ import annotations

import io
import sys
import zlib
from pathlib import Path

import click

from ._common import emit, json_option, progress_option, show_progress

__all__ = ["COMMANDS"]


def _fmt_summary(s) -> str:
    ser, (lo, hi) = s.ser_one_step, s.ser_one_step_ci
    zeros = ", ".join(f"{k} {v:.3f}" for k, v in s.zero_fraction_by_array.items())
    rate = s.entropy_rate
    rate_txt = f"{rate.value:.4f}" + (f" +- {rate.stderr:.4f}" if rate.stderr else "") + f" ({rate.method})"
    complete = {True: "every sequence valid: SER = 0 for every sampler", False: "some sequences invalid",
                None: "undecided"}[s.complete_support]
    return (
        f"{s.name}: {s.kind}, {s.n_states} states, V = {s.vocab_size}\n"
        f"    zero fraction {s.zero_fraction:.3f} ({zeros})\n"
        f"    one-step SER at L = {s.length}: {ser.value:.4f} "
        f"[{lo:.4f}, {hi:.4f}] ({s.confidence:.0%} Clopper-Pearson, {ser.samples} samples)\n"
        f"    entropy rate {rate_txt} nats/token, perplexity {s.perplexity:.4f}\n"
        f"    support: {complete}"
    )


@click.group("languages", invoke_without_command=True)
@click.option("--length", "length", type=click.IntRange(min=1), default=64, show_default=True,
              help="Sequence length L of the one-step SER and the entropy rate.")
@click.option("--samples", type=click.IntRange(min=2), default=1000, show_default=True,
              help="Monte Carlo samples K (one-step SER; entropy of HMMs without a closed form).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the Monte Carlo draws (each language's stream is seeded by (SEED, its name)).")
@click.option("--language", "languages", multiple=True, metavar="NAME|FILE.npz",
              help="Summarize only these (repeatable; a preset name or an .npz file)  [default: all presets].")
@progress_option
@json_option
@click.pass_context
def languages_cmd(ctx: click.Context, length: int, samples: int, seed: int, languages: tuple[str, ...],
                  progress: bool | None, as_json: bool) -> None:
    """List the language presets with their summaries (zero fraction, one-step SER, entropy rate).

    The one-step sampler (N = 1) draws every position independently from its marginal; its SER is
    estimated from SAMPLES sequences with an exact support check. Presets: 2gram, 3gram, 4gram,
    hmm (TER, unpruned), their -pruned twins (SER), interval (Theorem 4.4, l = 5) and interval-l<l>.
    """
    if ctx.invoked_subcommand is not None:
        return
    import numpy as np
    from tqdm import tqdm

    from numerics.exact.summary import language_summary
    from numerics.languages.presets import get_preset, preset_names

    names = list(languages) or preset_names()
    for name in names:  # refuse hopeless sizes before computing anything
        _check_summary_size(name, length, samples)
    summaries = []
    for name in tqdm(names, desc="languages", file=sys.stderr, disable=not show_progress(progress), leave=False):
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])  # same draws whatever else is listed
        try:
            summary = language_summary(name, length, samples, rng)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--language") from exc
        summaries.append(summary)
    descriptions = {}
    for s in summaries:
        try:
            descriptions[s.name] = get_preset(s.name).description
        except ValueError:
            descriptions[s.name] = f"language file {s.name}"
    result = {
        "length": length,
        "samples": samples,
        "seed": seed,
        "languages": [{"description": descriptions[s.name], **_as_dict(s)} for s in summaries],
    }
    emit(result, as_json, "\n".join(f"{_fmt_summary(s)}\n    {descriptions[s.name]}" for s in summaries))


def _check_summary_size(name: str, length: int, samples: int) -> None:
    """Refuse, before computing, a summary whose arrays would exceed the Monte Carlo memory limit.

    The one-step SER runs a forward-backward over ``L`` positions (``alpha``, ``beta`` over ``S``
    states and marginals over ``V`` tokens: ``8 L (2 S + 2 V)`` bytes) and draws ``K`` sequences
    of ``L`` tokens for the SER and the entropy rate (about ``16 K L`` bytes).
    """
    from numerics.languages.presets import load_language
    from numerics.methods import MC_MAX_BYTES

    try:
        lang = load_language(name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--language") from exc
    S = lang.kernel_language().n_states  # the interval language: its minimal HMM, which the forward pass reads
    need = 8 * length * (2 * S + 2 * lang.vocab_size) + 16 * samples * length
    if need > MC_MAX_BYTES:
        raise click.BadParameter(
            f"summarizing {name} at L = {length} ({S} states, {samples} samples) needs about "
            f"{need / 2**30:.1f} GiB of arrays (limit {MC_MAX_BYTES / 2**30:.0f} GiB); use a smaller --length",
            param_hint="--length")


def _as_dict(summary) -> dict:
    """The summary's fields, its one-step SER as one estimate with its Clopper-Pearson interval."""
    from dataclasses import fields, replace

    out = {f.name: getattr(summary, f.name) for f in fields(summary)}
    lo, hi = out.pop("ser_one_step_ci")
    out["ser_one_step"] = replace(summary.ser_one_step, ci_low=lo, ci_high=hi, confidence=out.pop("confidence"))
    return out


@languages_cmd.command("export")
@click.argument("name")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
def export_cmd(name: str, file: Path, as_json: bool) -> None:
    """Write preset NAME to FILE (.npz: initial/transition/emission, order/initial/conditional, or interval_l).

    Edit the arrays and bring the file back wherever a language is accepted (``--language FILE``).
    """
    from numerics.languages.presets import get_preset, load_language
    from numerics.provenance import atomic_write_bytes
    from validation.guards import guard_output

    try:
        preset = get_preset(name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from exc
    guard_output(file, "language", option="FILE")
    language = load_language(preset.name)
    buffer = io.BytesIO()
    language.save(buffer)  # np.savez to a buffer: the file gets exactly the name given, atomically
    atomic_write_bytes(file, buffer.getvalue())
    keys = list(language.arrays())  # what the file holds, by the language's own kind
    result = {"name": name, "file": str(file), "keys": keys, "kind": language.kind,
              "n_states": language.kernel_language().n_states,
              "vocab_size": language.vocab_size, "bytes": len(buffer.getvalue())}
    emit(result, as_json, f"wrote {name} to {file} (keys {', '.join(keys)})")


COMMANDS = [languages_cmd]
