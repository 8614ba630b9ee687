"""Result files that can be trusted later: atomic writes and provenance (config, commit, versions)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import tempfile
import threading
from dataclasses import asdict, is_dataclass
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
    target is replaced, the link stays).
    """
    path = Path(os.path.realpath(Path(path)))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return path
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


def to_jsonable(obj: Any) -> Any:
    """Convert dataclasses, numpy scalars/arrays, paths and tuples into JSON-serializable values."""
    import numpy as np

    if is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return repr(obj)  # JSON has no nan/inf; keep them readable and unambiguous
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
    text = json.dumps(to_jsonable(config), sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
