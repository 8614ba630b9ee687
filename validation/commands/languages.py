"""``mdm-theory languages``: the language presets with their summaries, ``languages export`` and
``languages fit`` (an n-gram language fitted to a text file, :mod:`numerics.languages.fit`)."""

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
@click.option("--length", "-L", "length", type=click.IntRange(min=1), default=64, show_default=True,
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
    hmm (TER, unpruned), their -pruned twins (SER), interval (Theorem 4.4, l = 5) and interval-l<l>;
    then the names of the n-grams fitted to the Lee news corpus (lee-char-2gram, ...).
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
        "fitted_languages": list(FITTED_NAMES),
    }
    fitted = (f"\nFitted to the Lee news corpus (every --language accepts them; summarize one with --language NAME): "
              f"{', '.join(FITTED_NAMES)}; in general lee-char-<n>gram and lee-word[-v<C>]-<n>gram, n in 1..4 "
              "(docs/methods/languages.md)")
    emit(result, as_json, "\n".join(f"{_fmt_summary(s)}\n    {descriptions[s.name]}" for s in summaries) + fitted)


#: The fitted real-text languages the report and the docs use (``numerics.languages.corpus``: any
#: ``lee-char-<n>gram`` / ``lee-word[-v<C>]-<n>gram`` name is accepted, these are the ones in use).
FITTED_NAMES = ("lee-char-2gram", "lee-word-2gram", "lee-word-v64-2gram")


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


def _fmt_fit(file: Path, fitted) -> str:
    p, s = fitted.provenance, fitted.summary
    stored = "" if p.order > 1 else " (stored as an order-2 n-gram with identical rows)"
    cap = f", vocabulary cap {p.vocab_cap}: {p.unk_tokens} of {p.tokens} tokens are <unk>" if p.vocab_cap else ""
    k = f" (k = {p.k:g})" if p.k is not None else ""
    return (
        f"wrote {file}: {p.order}-gram{stored}, {p.level} level{', lowercased' if p.lowercase else ''}, "
        f"smoothing {p.smoothing}{k}\n"
        f"    corpus {p.corpus_name}: {p.corpus_bytes} bytes, sha256 {p.corpus_sha256}\n"
        f"    {p.tokens} tokens, V = {s.vocab_size}{cap}\n"
        f"    {s.ngrams_seen} {p.order}-grams seen ({s.distinct_ngrams} distinct on the cycle), "
        f"{s.observed_contexts} of {s.n_states} contexts observed\n"
        f"    zero transitions: {s.zero_transition_share:.4f} of the observed contexts' rows\n"
        f"    entropy rate {s.entropy_rate:.6f} nats/token (perplexity {s.perplexity:.4f})"
        + ("" if s.initial_is_stationary else " under the smoothed initial law (not stationary)")
    )


@languages_cmd.command("fit")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--level", type=click.Choice(["char", "word"]), required=True,
              help="Tokens: every character, or words (runs of \\w) and single punctuation marks.")
@click.option("--order", type=int, default=2, show_default=True,
              help="n of the n-gram, 1..4 (2 = bigram, a first-order Markov chain).")
@click.option("--smoothing", type=click.Choice(["none", "add-k"]), default="none", show_default=True,
              help="none: the support is the observed n-grams (SER is meaningful); add-k: every sequence valid.")
@click.option("--k", "k", type=float, default=None, help="The add-k constant  [default: 1 with add-k].")
@click.option("--vocab-cap", type=int, default=None,
              help="Keep the C-1 most frequent tokens and map the rest to <unk> (C >= 2)  [default: no cap].")
@click.option("--lowercase", is_flag=True, help="Lowercase the text before tokenizing.")
@click.option("--encoding", default="utf-8", show_default=True, help="Encoding of FILE (decoded strictly).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The .npz to write (refused if it exists and was not written by languages fit).")
@json_option
def fit_cmd(file: Path, level: str, order: int, smoothing: str, k: float | None, vocab_cap: int | None,
            lowercase: bool, encoding: str, out: Path, as_json: bool) -> None:
    """Fit an n-gram language to the text in FILE and write it as a language .npz (--out).

    The file holds the keys of any n-gram language (order, initial, conditional), so every command
    that takes --language takes it, plus fit_provenance (corpus SHA-256, level, order, smoothing,
    k, vocabulary) and fit_summary as JSON strings. The corpus is read as a cycle (its end followed
    by its start); under smoothing none the first window has the n-grams' stationary law and a
    context never seen gets an unreachable point-mass row (docs/methods/languages.md).
    """
    from numerics.languages.fit import CorpusError, fit_bytes, fitted_npz_bytes, read_corpus, read_fit_provenance
    from numerics.provenance import atomic_write_bytes, check_writable_file

    if order < 1 or order > 4:
        raise click.BadParameter(f"order must be 1..4 (2 = bigram), got {order}", param_hint="--order")
    if vocab_cap is not None and vocab_cap < 2:
        raise click.BadParameter(f"vocabulary cap must be >= 2 (with one symbol every text is constant), got {vocab_cap}",
                                 param_hint="--vocab-cap")
    if k is not None and smoothing != "add-k":
        raise click.BadParameter("--k is the add-k constant; pass --smoothing add-k", param_hint="--k")
    try:
        target = check_writable_file(out)
    except OSError as exc:
        raise click.BadParameter(str(exc), param_hint="--out") from exc
    if target.exists() and read_fit_provenance(target) is None:
        raise click.BadParameter(f"{out} exists and was not written by 'languages fit': refusing to overwrite it",
                                 param_hint="--out")
    try:
        data = read_corpus(file)  # a regular file, of a size this machine can fit, not binary in its head
    except OSError as exc:
        raise click.BadParameter(f"cannot read {file}: {exc.strerror or exc}", param_hint="FILE") from exc
    except CorpusError as exc:
        raise click.BadParameter(f"{exc} ({type(exc).__name__})", param_hint="FILE") from exc
    try:
        fitted = fit_bytes(data, encoding=encoding, corpus_name=file.name, level=level, order=order,
                           smoothing=smoothing, k=k, vocab_cap=vocab_cap, lowercase=lowercase)
    except CorpusError as exc:
        raise click.BadParameter(f"{file}: {exc} ({type(exc).__name__})", param_hint="FILE") from exc
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    payload = fitted_npz_bytes(fitted)
    atomic_write_bytes(target, payload)
    from dataclasses import asdict

    prov = asdict(fitted.provenance)
    prov["vocabulary"] = list(fitted.provenance.vocabulary)
    result = {"file": str(out), "bytes": len(payload), "provenance": prov, "summary": asdict(fitted.summary)}
    emit(result, as_json, _fmt_fit(out, fitted))


COMMANDS = [languages_cmd]
