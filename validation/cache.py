"""Results cached by config hash, so that a re-run or an interrupted run of the report resumes.

Every cached result is one JSON file ``ROOT/KIND/HASH.json`` written atomically
(:func:`numerics.provenance.atomic_write_bytes`: a reader never sees half a file, an interrupted
write leaves the previous file intact). The file holds the full config the result was computed
from, the result, a SHA-256 checksum of the result's canonical text, the format version and the
provenance (git commit, package versions) of the run that computed it::

    {"format": 1, "kind": "ter-point", "config_hash": "...", "config": {...},
     "result": {...}, "result_sha256": "...", "provenance": {...}, "written_utc": "..."}

On lookup an entry is used only if it is *valid*: readable JSON, the current format, the same
kind, a stored config equal to the requested one (so a renamed or hand-edited file, or a hash
collision, is never mistaken for the requested result) and a result whose checksum matches.
Anything else is *stale* or *corrupt*: it is recorded in :attr:`ResultCache.events`, recomputed
and overwritten -- never silently reused.

Entries are strict JSON (RFC 8259). A non-finite float (an ``inf`` generative perplexity, a
``nan`` marker) is stored as ``{"$float": "inf"}`` (:func:`numerics.provenance.to_jsonable` with
``nonfinite="tag"``) and decoded on lookup, so every float64 round-trips exactly.

Two processes may share the cache (two ``report`` runs on one ``--out``): each entry is looked up,
computed and stored under its own lock (:meth:`ResultCache.lock`), so it is computed once and no
process ever reads half of it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock

from numerics.provenance import (
    atomic_write_bytes,
    from_jsonable,
    provenance,
    to_jsonable,
)

__all__ = ["CACHE_FORMAT", "CacheEvent", "ResultCache", "canonical", "key_hash"]

CACHE_FORMAT = 2  # 2: strict JSON, non-finite floats tagged. Bump when the entry layout changes: older entries are then stale


def canonical(obj: Any) -> Any:
    """``obj`` as plain JSON types in memory: :func:`numerics.provenance.to_jsonable` with
    ``nonfinite="keep"`` (non-finite floats stay floats, so a cached ``inf`` comes back as ``inf``)."""
    return to_jsonable(obj, nonfinite="keep")


def _dumps(obj: Any) -> str:
    """Canonical strict-JSON text of ``obj`` (non-finite floats tagged): what checksums and hashes read."""
    return json.dumps(to_jsonable(obj, nonfinite="tag"), sort_keys=True, allow_nan=False, separators=(",", ":"))


def key_hash(kind: str, config: Any) -> str:
    """A 16-hex-digit hash of ``(kind, config)``; the cache file name."""
    return hashlib.sha256(f"{kind}\n{_dumps(config)}".encode()).hexdigest()[:16]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _same(a: Any, b: Any) -> bool:
    """Equality of canonical JSON values where ``nan == nan``."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _drop_lock_file(lock_file: str, entry: Path) -> None:
    """Remove an entry's lock file when the entry was not written (called while holding the lock).

    A process already waiting on the file then holds a lock on the removed file while a newcomer
    locks a new one: both may compute the entry, each writes it atomically and the two results
    are equal, so the worst case is one entry computed twice -- never a file left for each
    entry that failed (a report on a full disk).
    """
    if not entry.exists():
        try:
            os.unlink(lock_file)
        except OSError:
            pass


@dataclass(frozen=True)
class CacheEvent:
    """One thing the cache noticed: ``what`` is ``"hit"``, ``"miss"``, ``"stale"`` or ``"corrupt"``."""

    what: str
    kind: str
    path: str
    reason: str = ""


@dataclass
class ResultCache:
    """A folder of cached results keyed by ``(kind, config)``; ``root=None`` caches nothing.

    Parameters
    ----------
    root : path or None
        Folder of the cache (created on first write). ``None`` disables persistence: every
        lookup is a miss (tests and one-off runs).
    """

    root: Path | None
    events: list[CacheEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.root is not None:
            self.root = Path(self.root)

    # -- lookup -----------------------------------------------------------------------------
    def path_for(self, kind: str, config: Any) -> Path:
        """Where the entry for ``(kind, config)`` lives (``root/kind/hash.json``)."""
        if self.root is None:
            raise ValueError("this cache has no folder (root=None)")
        if not kind or "/" in kind or kind.startswith("."):
            raise ValueError(f"invalid cache kind {kind!r}")
        return self.root / kind / f"{key_hash(kind, config)}.json"

    def _invalid(self, what: str, kind: str, path: Path, reason: str) -> None:
        self.events.append(CacheEvent(what, kind, str(path), reason))

    def load(self, kind: str, config: Any) -> tuple[bool, Any]:
        """``(True, result)`` for a valid entry, else ``(False, None)`` (the reason is recorded)."""
        if self.root is None:
            return False, None
        path = self.path_for(kind, config)
        if not path.exists():
            self.events.append(CacheEvent("miss", kind, str(path)))
            return False, None
        try:
            entry = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            self._invalid("corrupt", kind, path, f"unreadable JSON ({type(err).__name__}: {err})")
            return False, None
        if not isinstance(entry, dict) or not {"format", "kind", "config", "result", "result_sha256"} <= set(entry):
            self._invalid("corrupt", kind, path, "entry lacks required fields")
            return False, None
        if entry["format"] != CACHE_FORMAT:
            self._invalid("stale", kind, path, f"cache format {entry['format']!r} != {CACHE_FORMAT}")
            return False, None
        if entry["kind"] != kind:
            self._invalid("stale", kind, path, f"entry is of kind {entry['kind']!r}")
            return False, None
        if not _same(from_jsonable(entry["config"]), canonical(config)):
            self._invalid("stale", kind, path, "stored config differs from the requested config")
            return False, None
        if _sha256(_dumps(entry["result"])) != entry["result_sha256"]:
            self._invalid("corrupt", kind, path, "result checksum mismatch (file edited or damaged)")
            return False, None
        self.events.append(CacheEvent("hit", kind, str(path)))
        return True, from_jsonable(entry["result"])

    # -- store ------------------------------------------------------------------------------
    def store(self, kind: str, config: Any, result: Any) -> Any:
        """Write ``result`` for ``(kind, config)`` atomically; returns the canonical result."""
        result = canonical(result)
        if self.root is None:
            return result
        text = _dumps(result)
        entry = {
            "format": CACHE_FORMAT,
            "kind": kind,
            "config_hash": key_hash(kind, config),
            "config": to_jsonable(config, nonfinite="tag"),
            "result": to_jsonable(result, nonfinite="tag"),
            "result_sha256": _sha256(text),
            "provenance": provenance(),
            "written_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        body = json.dumps(entry, sort_keys=True, allow_nan=False, indent=1)
        atomic_write_bytes(self.path_for(kind, config), (body + "\n").encode())
        return result

    def lock(self, kind: str, config: Any) -> FileLock:
        """The lock of one entry (``root/kind/.HASH.json.lock``), held from lookup to store.

        Two processes sharing the cache (two ``report`` runs on one ``--out``) therefore compute
        each entry once: the second waits for the first and then finds a valid entry. The lock is
        POSIX advisory (:mod:`filelock`) and is released when its holder exits, even by SIGKILL.
        An entry that could not be computed or stored (a full disk, a failed computation) leaves
        no lock file behind (:meth:`get_or_compute`).
        """
        path = self.path_for(kind, config)
        path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(path.with_name(f".{path.name}.lock"))

    def get_or_compute(self, kind: str, config: Any, compute: Callable[[], Any]) -> Any:
        """The cached result of ``(kind, config)``, or ``compute()`` stored and returned.

        The returned value is always the canonical JSON form (tuples become lists, numpy
        values become Python values), whether it came from the cache or was just computed, so
        callers see the same thing on a first run and on a resumed one. With a folder, the
        entry's :meth:`lock` is held throughout, so concurrent processes compute it once;
        ``compute`` must not look up the same entry (it would wait for itself).
        """
        if self.root is None:
            return self.store(kind, config, compute())
        lock = self.lock(kind, config)
        with lock:
            ok, result = self.load(kind, config)
            if ok:
                return result
            try:
                return self.store(kind, config, compute())
            except BaseException:
                _drop_lock_file(lock.lock_file, self.path_for(kind, config))
                raise

    # -- summary ----------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """How many hits, misses, stale and corrupt entries this cache object has seen."""
        out = {"hit": 0, "miss": 0, "stale": 0, "corrupt": 0}
        for ev in self.events:
            out[ev.what] = out.get(ev.what, 0) + 1
        return out

    def problems(self) -> list[CacheEvent]:
        """The stale and corrupt entries that were recomputed."""
        return [ev for ev in self.events if ev.what in ("stale", "corrupt")]
