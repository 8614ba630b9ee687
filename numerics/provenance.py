"""Result files that can be trusted later: atomic writes and provenance (config, commit, versions)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import asdict, is_dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_json", "provenance", "config_hash", "to_jsonable"]

_PACKAGES = ("numpy", "scipy", "sympy", "numba", "torch", "matplotlib")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    A reader never sees a half-written file, and an interrupted run leaves the old file intact.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
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
