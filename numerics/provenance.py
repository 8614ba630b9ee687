"""Result files that can be trusted later: atomic writes and provenance (config, commit, versions)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import subprocess
import tempfile
import threading
from dataclasses import fields, is_dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "NotRegularFileError",
    "check_writable_file",
    "atomic_write_bytes",
    "atomic_write_json",
    "provenance",
    "config_hash",
    "to_jsonable",
    "from_jsonable",
    "NULL_REASON",
]

_PACKAGES = ("numpy", "scipy", "sympy", "numba", "torch", "matplotlib")


class NotRegularFileError(OSError):
    """The target of a write exists and is not a regular file (a device, a directory, a socket...)."""


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:  # pragma: no cover - not Linux
        pass
    with _UMASK_LOCK:  # pragma: no cover - os.umask can only be read by setting it
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def check_writable_file(path: str | os.PathLike) -> Path:
    """The path a result file may be written to: ``path`` with symbolic links followed.

    A target that exists and is not a regular file (``/dev/null``, a directory, a FIFO) is refused
    with :class:`NotRegularFileError` naming what it is, before anything is computed or written:
    an atomic write would replace it with a regular file. A symbolic link is written through (its
    target is replaced, the link stays). A path through a regular file (``FILE/out.json``) is
    refused with a ``NotADirectoryError`` naming that file.
    """
    path = Path(os.path.realpath(Path(path)))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return path
    except NotADirectoryError:  # a folder on the way is a file: name it (root can write anywhere else)
        folder = next(p for p in path.parents if p.exists())
        raise NotADirectoryError(f"cannot write {path}: {folder} is a file, not a folder") from None
    if not stat.S_ISREG(st.st_mode):
        kinds = {stat.S_ISDIR: "a directory", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
                 stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket"}
        kind = next((name for test, name in kinds.items() if test(st.st_mode)), "not a regular file")
        raise NotRegularFileError(f"refusing to write {path}: it is {kind}, not a regular file "
                                  "(results are written to a temporary file and renamed over the target)")
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    A reader never sees a half-written file, and an interrupted run leaves the old file intact.
    The file gets the permissions of the file it replaces, or for a new file those the umask
    gives (``0o666 & ~umask``, as ``open(path, "w")`` would), not ``mkstemp``'s private 0600.
    A target that is not a regular file is refused (:func:`check_writable_file`); a symbolic link
    is written through. Returns the path written (links followed).
    """
    path = check_writable_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


NONFINITE = ("null", "tag", "keep")
TAG = "$float"  # {"$float": "inf" | "-inf" | "nan"}: a non-finite float in a file that must round-trip
NULL_REASON = "null_reason"  # the key that says why a field is null: {"field": "why", ...}
_SHOWN_NOTES = 5  # non-finite list entries described one by one in a null_reason


def _nonfinite_name(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _why_null(x: float) -> str:
    return {"inf": "+inf", "-inf": "-inf", "nan": "NaN"}[_nonfinite_name(x)] + " (JSON has no non-finite numbers)"


def _convert(obj: Any, nonfinite: str, where: str) -> tuple[Any, list[str]]:
    """``(converted obj, descriptions of the non-finite floats written as null inside it)``."""
    import numpy as np

    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if math.isfinite(x):
            return x, []
        if nonfinite == "keep":
            return x, []
        if nonfinite == "tag":
            return {TAG: _nonfinite_name(x)}, []
        return None, [f"{where}: {_why_null(x)}" if where else _why_null(x)]
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj, []
    if isinstance(obj, np.generic):
        return _convert(obj.item(), nonfinite, where)
    if isinstance(obj, np.ndarray):
        return _convert(obj.tolist(), nonfinite, where)
    if isinstance(obj, Path):
        return str(obj), []
    if is_dataclass(obj) and not isinstance(obj, type):
        record = getattr(obj, "json_record", None)
        if nonfinite == "null" and callable(record):  # a type that says how readers should see it (Estimate)
            return _convert(record(), nonfinite, where)
        return _convert({f.name: getattr(obj, f.name) for f in fields(obj)}, nonfinite, where)
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        reasons: dict[str, str] = {}
        for k, v in obj.items():
            out[str(k)], notes = _convert(v, nonfinite, "")
            if notes:  # only a float or a list reports notes; a dict keeps its own null_reason
                shown = notes[:_SHOWN_NOTES] + ([f"and {len(notes) - _SHOWN_NOTES} more"] if len(notes) > _SHOWN_NOTES else [])
                reasons[str(k)] = "; ".join(shown)
        if reasons:
            given = out.get(NULL_REASON)
            out[NULL_REASON] = {**reasons, **(given if isinstance(given, dict) else {})}
        return out, []
    if isinstance(obj, (list, tuple)):
        items, notes = [], []
        for i, v in enumerate(obj):
            item, inner = _convert(v, nonfinite, f"{where}[{i}]")
            items.append(item)
            notes += inner
        return items, notes
    raise TypeError(f"cannot convert a value of type {type(obj).__name__} to JSON: {obj!r}")


def to_jsonable(obj: Any, *, nonfinite: str = "null") -> Any:
    """The one JSON converter: dataclasses, numpy scalars/arrays, paths and tuples to JSON values.

    Parameters
    ----------
    obj : any
        Dicts (keys become strings), lists/tuples, dataclasses, numpy values, paths, and JSON
        scalars; anything else is a ``TypeError`` naming its type.
    nonfinite : {"null", "tag", "keep"}
        What becomes of ``inf``, ``-inf`` and ``nan`` (RFC 8259 JSON has none of them):

        * ``"null"`` (files and ``--json`` output that other tools read): the value is ``null`` and
          the dict holding it gets ``"null_reason": {"<key>": "+inf (JSON has no non-finite
          numbers)"}`` (for a list, the indices). A dataclass with a ``json_record()`` method is
          converted through it (:class:`numerics.estimate.Estimate`: the estimate shape of
          docs/schema.md, with a reason that says what the value is).
        * ``"tag"`` (files that must round-trip exactly, e.g. the report cache):
          ``{"$float": "inf" | "-inf" | "nan"}``, decoded by :func:`from_jsonable`.
        * ``"keep"``: Python floats (an in-memory canonical form; not for ``json.dumps`` with
          ``allow_nan=False``).
    """
    if nonfinite not in NONFINITE:
        raise ValueError(f"nonfinite must be one of {NONFINITE}, got {nonfinite!r}")
    return _convert(obj, nonfinite, "")[0]


def from_jsonable(obj: Any) -> Any:
    """Undo ``to_jsonable(..., nonfinite="tag")``: every ``{"$float": name}`` back to its float."""
    if isinstance(obj, dict):
        if len(obj) == 1 and TAG in obj:
            name = obj[TAG]
            if name not in ("inf", "-inf", "nan"):
                raise ValueError(f"unknown non-finite tag {obj!r}")
            return float(name)
        return {k: from_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_jsonable(v) for v in obj]
    return obj


def atomic_write_json(path: str | os.PathLike, payload: Any) -> Path:
    """Atomically write ``payload`` (made JSON-safe with :func:`to_jsonable`) as indented JSON."""
    text = json.dumps(to_jsonable(payload), indent=2, sort_keys=True, allow_nan=False)
    return atomic_write_bytes(path, (text + "\n").encode())


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here, capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def provenance() -> dict[str, Any]:
    """The git commit (``-dirty`` if the tree has changes) and the versions of the key packages."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"commit": _git_commit(), "versions": versions}


def config_hash(config: Any) -> str:
    """A stable 16-hex-digit hash of a config (dataclass or dict) for caching results by config."""
    text = json.dumps(to_jsonable(config, nonfinite="tag"), sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
