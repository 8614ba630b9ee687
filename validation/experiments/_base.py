"""What every experiment returns, and how it says that an input it needs has not been built.

An experiment module (STYLE.md habit 12) has a frozen config dataclass ``Config`` with the
sizes ``Config.tiny()`` (smoke tests, seconds), ``Config()`` (the default report, a 2-core CPU)
and ``Config.full()`` (the paper's scale), ``run(cfg, cache=None, progress=False) ->
ExperimentResult`` and ``plot(result) -> list[Plot]``. Results are plain JSON data, so the report
can cache, write and re-plot them; the figures are produced by ``plot`` only.
"""

from __future__ import annotations

import importlib
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..cache import ResultCache, canonical

__all__ = ["ExperimentResult", "Plot", "MissingInput", "Parts", "need", "Timer", "point_cache", "progress_iter"]


class MissingInput(Exception):
    """An input of an experiment (a module of another part of the engine, a checkpoint) is absent."""


def need(module: str, *names: str) -> Any:
    """Import ``module`` and check it defines ``names``; :class:`MissingInput` says what is missing.

    A missing module or attribute, or a third-party package it needs that is not installed,
    counts as missing; any other error while importing is a bug and propagates.
    """
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is not None and (module == err.name or module.startswith(err.name + ".")):
            raise MissingInput(f"`{module}` is not available yet") from None
        if err.name is not None and "." not in err.name and not err.name.startswith(("numerics", "theory", "neural")):
            # a third-party package the module needs is not installed (e.g. torch for ``neural``)
            raise MissingInput(f"`{module}` cannot be imported: the package `{err.name}` is not installed") from None
        raise
    absent = [n for n in names if not hasattr(mod, n)]
    if absent:
        raise MissingInput(f"`{module}` does not define {', '.join('`' + n + '`' for n in absent)}")
    return mod


@dataclass
class ExperimentResult:
    """The outcome of one experiment run.

    Attributes
    ----------
    name, title : str
        Module name (``"ter"``) and human title.
    config : dict
        The config the result was computed from (canonical JSON).
    status : str
        ``"ok"`` (everything computed), ``"partial"`` (some parts missing) or ``"unavailable"``
        (nothing could be computed; see ``missing``).
    missing : list of str
        One line per part that was not computed and why (e.g. a module that has not landed).
    tables : dict
        Table name -> list of row dicts (the same keys in every row).
    data : dict
        Series for the plots (JSON data).
    notes : list of str
        Findings and remarks shown under the experiment in the report.
    elapsed_s : float
        Wall-clock seconds of this run (cached points cost nothing).
    errors : dict
        Part -> traceback of a part that raised (a bug somewhere, shown in the report).
    """

    name: str
    title: str
    config: dict
    status: str = "ok"
    missing: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    elapsed_s: float = 0.0
    errors: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return canonical(self.__dict__)

    @classmethod
    def from_json(cls, payload: dict) -> "ExperimentResult":
        return cls(**payload)

    def finish(self, started: float) -> "ExperimentResult":
        """Set ``status`` from what was computed and record the elapsed time."""
        has_output = bool(self.tables) or bool(self.data)
        if self.errors and not has_output:
            self.status = "error"
        elif self.missing or self.errors:
            self.status = "partial" if has_output else "unavailable"
        else:
            self.status = "ok"
        self.elapsed_s = time.perf_counter() - started
        return self


@dataclass(frozen=True)
class Plot:
    """A matplotlib figure with a file stem and a caption for the report."""

    name: str
    figure: Any
    caption: str


class Parts:
    """Runs the parts of an experiment so that one missing input or one failure hides nothing else.

    ``parts.attempt("name", fn)`` returns ``fn()``, or ``None`` after recording a
    :class:`MissingInput` (the part is then skipped for the rest of the run) or, unless
    ``strict``, any other exception with its traceback. ``parts.record(result)`` copies both
    into the result.
    """

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.missing: dict[str, str] = {}
        self.failed: dict[str, str] = {}

    def attempt(self, part: str, fn: Any) -> Any:
        if part in self.missing or part in self.failed:
            return None
        try:
            return fn()
        except MissingInput as err:
            self.missing[part] = str(err)
        except Exception as err:  # noqa: BLE001 -- recorded and shown; strict runs re-raise
            if self.strict:
                raise
            self.failed[part] = f"{type(err).__name__}: {err}\n\n{traceback.format_exc()}"
        return None

    def record(self, result: "ExperimentResult") -> None:
        result.missing.extend(f"{part}: {why}" for part, why in self.missing.items())
        result.missing.extend(f"{part}: failed ({tb.splitlines()[0]})" for part, tb in self.failed.items())
        result.errors.update(self.failed)


class Timer:
    """``with Timer() as t: ...; t.seconds``."""

    def __enter__(self) -> "Timer":
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def point_cache(cache: ResultCache | None) -> ResultCache:
    """``cache`` or a cache that stores nothing."""
    return cache if cache is not None else ResultCache(None)


def progress_iter(items: Iterable, progress: bool, desc: str, total: int | None = None) -> Iterable:
    """``items`` wrapped in a tqdm bar on stderr when ``progress``."""
    if not progress:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, total=total, leave=False, dynamic_ncols=True)
