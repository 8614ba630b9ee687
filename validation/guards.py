"""Guards on what a user types (issue 19): nothing written over a file of another kind, lists that
mean one thing, sizes checked against the machine before anything is allocated.

Three families, each raising a :class:`GuardError` (a ``ValueError``; the command line prints its
message and exits with status 2, the usage status, without a traceback):

* **Outputs** -- :func:`guard_output`: an output path that exists must hold a file of the kind the
  command writes there (a sweep table, an evaluation result, ...) or be empty; it must not be one
  of the command's own inputs (compared after following symbolic links, so a link to the input is
  the input). A file of another kind is never written over, whatever the other options say
  (``--drop-bad-rows`` drops bad rows of a sweep table, it does not make a checkpoint one).
* **Lists** -- :func:`check_increasing`: ``-N 16,4,4,8`` is refused, naming the duplicate or the
  disorder and giving the sorted, de-duplicated list to type instead.
* **Sizes** -- :func:`check_memory` and the per-command estimates below: the bytes (or work) a
  request needs, compared with this machine's memory (:func:`physical_memory`, from
  ``/proc/meminfo`` or ``os.sysconf``: :mod:`numerics.machine`), refused with the estimate and the
  option that changes it.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from numerics.machine import (
    MEMORY_FRACTION,
    GuardError,
    check_memory,
    format_bytes,
    memory_limit,
    physical_memory,
    transformer_bytes,
)

__all__ = [
    "MEMORY_FRACTION",
    "OUTPUT_KINDS",
    "GuardError",
    "OutputKind",
    "check_claim_size",
    "check_hmm_inference",
    "check_increasing",
    "check_memory",
    "check_metric_target",
    "check_same_vocabulary",
    "check_steps_list",
    "check_training",
    "check_transformer",
    "describe_file",
    "guard_output",
    "memory_limit",
    "physical_memory",
    "transformer_bytes",
]


# ----------------------------------------------------------------------------------------- outputs
_SNIFF_BYTES = 1 << 16  # how much of a file is read to tell what it is


def _head(path: Path, n: int = _SNIFF_BYTES) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def _json_object(path: Path) -> dict | None:
    """The file as one JSON object, or ``None`` (not JSON, not an object, unreadable)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _is_sweep_table(path: Path) -> bool:
    """A JSONL sweep table: some line is a row (``config`` and ``config_hash``), damaged lines aside."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and {"config", "config_hash"} <= row.keys():
            return True
    return False


def _is_flat_csv(path: Path) -> bool:
    try:
        first = _head(path).split(b"\n", 1)[0]
    except OSError:
        return False
    return b"config_hash" in first.split(b",")


def _is_flat_parquet(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return data[:4] == b"PAR1" and data[-4:] == b"PAR1" and b"config_hash" in data[-_SNIFF_BYTES:]


def _npz_keys(path: Path) -> set[str] | None:
    try:
        with zipfile.ZipFile(path) as z:
            return {n.removesuffix(".npy") for n in z.namelist()}
    except (OSError, zipfile.BadZipFile):
        return None


_LANGUAGE_KEYS = ({"initial", "transition", "emission"}, {"order", "initial", "conditional"})


def _is_language_npz(path: Path) -> bool:
    keys = _npz_keys(path)
    return keys is not None and any(k <= keys for k in _LANGUAGE_KEYS)


def _is_result_json(*keys: str) -> Callable[[Path], bool]:
    def test(path: Path) -> bool:
        data = _json_object(path)
        return data is not None and "provenance" in data and all(k in data for k in keys)

    return test


@dataclass(frozen=True)
class OutputKind:
    """A kind of file a command writes: what to call it, and how to recognise one already there."""

    name: str
    test: Callable[[Path], bool]


#: The kinds of output file, by the name a command passes to :func:`guard_output`.
OUTPUT_KINDS: dict[str, OutputKind] = {
    "sweep table": OutputKind("an mdm-theory sweep table (JSONL rows)", _is_sweep_table),
    "sweep csv": OutputKind("the CSV copy of a sweep table", _is_flat_csv),
    "sweep parquet": OutputKind("the Parquet copy of a sweep table", _is_flat_parquet),
    "evaluation": OutputKind("an mdm-theory evaluate result (JSON)", _is_result_json("rows", "model")),
    "sampling benchmark": OutputKind("an mdm-theory bench sampling result (JSON)", _is_result_json("weights")),
    "counterexamples": OutputKind("an mdm-theory counterexamples file (JSON)", _is_result_json("findings")),
    "language": OutputKind("a language .npz file", _is_language_npz),
    "run metrics": OutputKind("an mdm-theory training metrics.json", _is_result_json("config", "history")),
    "report page": OutputKind("an mdm-theory report page", lambda p: b"<title>mdm-theory" in _head(p, 4096)),
    "plot figure": OutputKind("an mdm-theory plot figure (PNG or SVG)", lambda p: b"mdm-theory plot" in _head(p, 8192)),
}


def describe_file(path: str | os.PathLike) -> str:
    """What an existing file looks like, in a few words (for a refusal: 'it looks like ...')."""
    path = Path(path)
    try:
        head = _head(path)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not head:
        return "empty"
    keys = _npz_keys(path) if head[:2] == b"PK" else None
    if keys is not None:
        if "data.pkl" in {k.rsplit("/", 1)[-1] for k in keys} or any(k.endswith("/data.pkl") for k in keys):
            return "a PyTorch file (a checkpoint?)"
        if any(k <= keys for k in _LANGUAGE_KEYS):
            return "a language .npz file"
        return f"an .npz/zip archive (members {sorted(keys)[:5]})"
    if head[:4] == b"PAR1":
        return "a Parquet file"
    if head[:6] == b"\x93NUMPY":
        return "a .npy array"
    for kind in ("sweep table", "evaluation", "sampling benchmark", "counterexamples", "run metrics"):
        if OUTPUT_KINDS[kind].test(path):
            return OUTPUT_KINDS[kind].name
    try:
        head.decode()
    except UnicodeDecodeError:
        return f"a binary file of {path.stat().st_size} bytes"
    if _json_object(path) is not None:
        return "a JSON object of another program"
    return f"a text file of {path.stat().st_size} bytes"


def _same_file(a: Path, b: str | os.PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def guard_output(path: str | os.PathLike, kind: str, *, option: str = "--out",
                 inputs: Mapping[str, str | os.PathLike | Sequence[str | os.PathLike] | None] | None = None) -> Path:
    """Refuse to write ``kind`` to ``path`` unless it is new, empty or already a file of that kind.

    Parameters
    ----------
    path : path-like
        The output file (symbolic links are followed: the file checked is the link's target).
    kind : str
        A key of :data:`OUTPUT_KINDS`.
    option : str
        The option that named the path, for the message.
    inputs : mapping, optional
        ``{option: path or paths}`` of the command's input files; the output may be none of them.
        Entries that are not existing files (a preset name) are ignored.

    Returns the path, links followed. Raises :class:`GuardError` naming the option, the file and
    what it holds.
    """
    out = Path(path)
    target = Path(os.path.realpath(out))
    via = f" (through the symbolic link {out} -> {target})" if out.is_symlink() else ""
    for name, given in (inputs or {}).items():
        for item in ([given] if isinstance(given, (str, os.PathLike)) else list(given or ())):
            if os.path.isfile(item) and _same_file(target, item):
                raise GuardError(f"{option} {out} is the same file as the input {name} {item}{via}: writing the "
                                 f"output would destroy the input; choose another {option}")
    if not target.is_file() or target.stat().st_size == 0:
        return target  # new, empty, or not a regular file (numerics.provenance.check_writable_file names that)
    spec = OUTPUT_KINDS[kind]
    if not spec.test(target):
        raise GuardError(f"{option} {out}{via} exists and is not {spec.name}: it looks like {describe_file(target)}; "
                         f"mdm-theory writes only over its own output files, so nothing was written; choose another "
                         f"{option} or move the file away")
    return target


# ------------------------------------------------------------------------------------------- lists
def check_increasing(values: Sequence[int], option: str) -> list[int]:
    """``values`` if strictly increasing; else :class:`GuardError` naming the repeat or the disorder.

    A list of step counts or lengths is a set of points in the order they are plotted and
    reported: ``4,2,2`` has a point twice and runs backwards, so it is refused with the list that
    was probably meant (sorted, each value once).
    """
    values = [int(v) for v in values]
    suggestion = ",".join(str(v) for v in sorted(set(values)))
    seen: set[int] = set()
    for k, v in enumerate(values):
        if v in seen:
            raise GuardError(f"{option} lists {v} twice ({','.join(map(str, values))}); each value is one point: "
                             f"did you mean {option} {suggestion}?")
        seen.add(v)
        if k and v < values[k - 1]:
            raise GuardError(f"{option} is not increasing: {v} comes after {values[k - 1]} "
                             f"({','.join(map(str, values))}); did you mean {option} {suggestion}?")
    return values


def check_same_vocabulary(pairs: Iterable[tuple[str, str | None]], option: str) -> None:
    """Refuse a pair ``(language, ser_language)`` whose two vocabularies differ (``None``: no second language).

    The sampler draws tokens ``0..V-1`` of ``language``; SER measured on a language over another
    alphabet scores them as tokens of a different vocabulary, a number that means nothing.
    """
    from numerics.languages.presets import load_language

    for language, other in sorted({(a, b) for a, b in pairs if b not in (None, a)}):
        vocab, other_vocab = load_language(language).vocab_size, load_language(other).vocab_size
        if vocab != other_vocab:
            raise GuardError(f"{option}: {other} has a vocabulary of {other_vocab} tokens, but {language} (the "
                             f"language sampled) has {vocab}: SER on another alphabet means nothing; measure it on a "
                             f"language over the same {vocab} tokens (e.g. {language}'s -pruned twin)")


#: Metrics with a bounded range: ``(low, high)``. SER is a probability; a target above its top
#: (``1.5``) cannot be what was meant, and the search would answer ``N = 1`` to it.
METRIC_RANGES = {"ser": (0.0, 1.0)}


def check_metric_target(metric: str, target: float, option: str = "--target") -> None:
    """Refuse a target outside the metric's range (a SER target above 1)."""
    if not math.isfinite(target) or target < 0:
        raise GuardError(f"{option}: the target must be a finite number >= 0, got {target}")
    low, high = METRIC_RANGES.get(metric, (0.0, math.inf))
    if target > high:
        raise GuardError(f"{option} {target} is outside {metric.upper()}'s range [{low:g}, {high:g}]: every sampler "
                         f"meets it at N = 1, so there is nothing to search; a {metric.upper()} target is a "
                         "probability such as 0.1")


# ------------------------------------------------------------------------------------------- sizes

# check_memory (numerics.machine): ``need_bytes`` against memory_limit(), a GuardError naming what to change


# ---------------------------------------------------------------------------- per-command estimates
MULTIPLICITY_MAX_SIZE = 1000  # float64 C(L, L/2) overflows at L = 1030; (L+1)^2 big binomials are minutes before
RATIONAL_MAX_WORK = 10**9  # digit operations of an exact-rational evaluation (seconds to a minute) before --float


#: Claims computed by the multiplicity recursion of :mod:`theory.collision` (the modules that use
#: it), each with the field that sizes its recursion: an ``(m+1) x (m+1)`` table of binomials and
#: ``O(m^2 log n)`` products, in floats too (Lemma C.1 and Theorem 4.3 over the ``L`` positions;
#: Lemmas C.5-C.7 and Theorem 4.4 over one interval of ``l`` positions).
MULTIPLICITY_CLAIMS = {"C.1": "L", "4.3": "L", "C.5": "l", "C.6": "l", "C.7": "l", "4.4": "l"}


def _int_field(instance: Mapping[str, object], name: str) -> int | None:
    v = instance.get(name)
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


def check_claim_size(claim_id: str, instance: Mapping[str, object], exact: bool, float_option: str = "--float") -> None:
    """Refuse a claim evaluation whose size makes it hopeless, with the estimate and what to change.

    The sizes are read from the fields that carry them, by name: ``m``, the field of
    :data:`MULTIPLICITY_CLAIMS` that sizes the recursion (``L`` or ``l``); ``L``, the sequence
    length (1 for a claim without one); ``n``, the longest list (the step probabilities). Other
    integer fields (a number of steps ``N``, a vocabulary) size nothing here. Claims of
    :data:`MULTIPLICITY_CLAIMS` build ``(m+1)^2`` binomials of up to ``0.3 m`` digits whatever
    the arithmetic, which overflow a float64 beyond ``m = 1029`` (refused above
    :data:`MULTIPLICITY_MAX_SIZE`); in exact rationals a claim sums products of up to ``L`` of
    the ``n`` rationals (e.g. Lemma C.1's ``e_L(pi)``) whose denominators grow to
    ``D = L log10 n`` digits: about ``(m+1)^2 log2(n) D`` digit operations by the multiplicity
    recursion (``L n D`` otherwise), refused above :data:`RATIONAL_MAX_WORK` with the suggestion
    to add ``float_option``.
    """
    family = ".".join(claim_id.split(".")[:2])
    lists = [len(v) for v in instance.values() if isinstance(v, (list, tuple))]
    n = max(lists, default=1)
    L = _int_field(instance, "L") or 1
    field = MULTIPLICITY_CLAIMS.get(family)
    m = (_int_field(instance, field) or 1) if field else None
    if m is not None and m > MULTIPLICITY_MAX_SIZE:
        raise GuardError(f"{claim_id} at {field} = {m} runs the multiplicity recursion over an ({field}+1)^2 table of "
                         f"binomials of up to {0.3 * m:.3g} digits ({(m + 1) ** 2:.3g} entries), in float64 too, and "
                         f"C({field}, {field}/2) overflows a float64 beyond {field} = 1029; use {_flag_of(field)} up to "
                         f"{MULTIPLICITY_MAX_SIZE}")
    if not exact:
        return
    digits = L * math.log10(max(n, 2))
    work = (m + 1) ** 2 * math.log2(n + 1) * digits if m is not None else L * n * digits
    if work > RATIONAL_MAX_WORK:
        raise GuardError(f"{claim_id} in exact rationals at L = {L} with {n} step probabilities: about {work:.3g} "
                         f"digit operations (limit {RATIONAL_MAX_WORK:.0e}) on numbers of up to {digits:.3g} digits; "
                         f"add {float_option} to evaluate in float64")


def check_steps_list(values: Sequence[int], option: str) -> None:
    """Refuse step counts no schedule can hold, before a grid of configs builds one schedule per value."""
    from numerics.schedules import MAX_STEPS

    too_many = [v for v in values if v > MAX_STEPS]
    if too_many:
        raise GuardError(f"{option} {too_many[0]} is too many steps: a schedule holds at most N = {MAX_STEPS} "
                         f"(N+1 float64s and as many per-step arrays, {format_bytes(8 * (too_many[0] + 1))} each "
                         f"at N = {too_many[0]}); {len(too_many)} value(s) of {option} exceed it")


def check_transformer(batch: int, length: int, width: int, heads: int, layers: int, vocab: int, what: str,
                      change: str) -> None:
    """:func:`check_memory` of :func:`transformer_bytes`."""
    check_memory(transformer_bytes(batch, length, width, heads, layers, vocab),
                 f"{what} (batch {batch} x L = {length}, width {width}, {layers} blocks)", change)


def check_training(cfg, option_hint: str = "use a smaller -L, --batch-size or --n-train") -> None:
    """Refuse a training run whose data set or one optimizer step cannot fit in memory.

    The data set holds ``(n_train + n_val) L`` int64 tokens (and the sampler's as many float64
    draws while it is drawn); a step keeps the forward pass (:func:`transformer_bytes`) plus
    gradients and AdamW's two moments of the weights.
    """
    m, t, d = cfg.model, cfg.train, cfg.data
    tokens = (d.n_train + d.n_val) * m.length
    check_memory(16.0 * tokens, f"the training data set ({d.n_train} + {d.n_val} sequences of L = {m.length})",
                 option_hint)
    check_transformer(t.batch_size, m.length, m.width, m.n_heads, m.n_layers, m.vocab_size,
                      "one training step", option_hint)


def check_hmm_inference(states: int, length: int, batch: int, what: str, change: str) -> None:
    """Refuse a dense forward-backward whose arrays cannot fit: the ``S x S`` transition (and its
    log and a work copy, ``24 S^2`` bytes) and ``alpha``, ``beta`` over ``B L S`` (``16 B L S``)."""
    check_memory(24.0 * states * states + 16.0 * batch * length * states,
                 f"{what} ({states} states, L = {length}, batch {batch})", change)


def _flag_of(field: str) -> str:
    """The ``bounds`` option that sets a claim's field (``L`` -> ``--length``, ``l`` -> ``--l``)."""
    from theory.parameters import OPTIONS

    return OPTIONS[field].flag if field in OPTIONS else f"--{field}"
