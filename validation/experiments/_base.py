"""What every experiment returns, and the statuses that say what happened in it.

An experiment module (STYLE.md habit 12) has a frozen config dataclass ``Config`` with the
sizes ``Config.tiny()`` (smoke tests, seconds), ``Config()`` (the default report, a 2-core CPU)
and ``Config.full()`` (the paper's scale), ``run(cfg, cache=None, progress=False) ->
ExperimentResult`` and ``plot(result) -> list[Plot]``. Results are plain JSON data, so the report
can cache, write and re-plot them; the figures are produced by ``plot`` only.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..cache import ResultCache, canonical

__all__ = ["ExperimentResult", "STORED_NAMES", "stored_config", "Plot", "MissingInput", "Parts", "STATUSES", "STATUS_LEGEND", "Z95", "StepsNeeded",
           "steps_needed_range", "Timer", "point_cache", "progress_iter", "family_wise_z", "beyond_budget"]


class MissingInput(Exception):
    """An input of an experiment that the user supplies (a checkpoint, a trained model) is absent.

    The engine's own modules are imported directly (``validation/experiments/_engine.py``): a
    missing module is an ``ImportError``, never a missing input.
    """


STATUS_LEGEND: dict[str, str] = {
    "ok": "every part was computed, every model met its validation target, and every claim or bound checked "
          "holds with something to say",
    "vacuous": "vacuous n/m: n of the section's m checks of a bound are trivially true (a bound >= 1 on a "
               "probability, or no point in the bound's regime): those n say nothing; the others hold",
    "finding": "finding n/m: n of the section's m checks violate a claim or bound -- an exact value beyond "
               "round-off, or a Monte Carlo value beyond the section's 95% confidence budget shared by its m "
               "comparisons (Bonferroni), not merely outside one 95% interval; see the notes",
    "partial": "a part was not measured (an input such as a checkpoint was not given) or a trained model missed "
               "its validation target: what and why are listed",
    "error": "a part raised an exception: a bug; the traceback is shown",
}
"""The five statuses of an experiment, most severe last; the report prints this legend."""

STATUSES = tuple(STATUS_LEGEND)

Z95 = 1.959963984540054  # two-sided 95% normal quantile: value +- Z95 * stderr is a 95% interval


def family_wise_z(comparisons: int, level: float = 0.95) -> float:
    """The one-sided normal quantile that keeps ``comparisons`` one-sided Monte Carlo comparisons together
    within the confidence budget ``1 - level`` (Bonferroni: each gets ``(1 - level) / comparisons``).

    A Monte Carlo value is *beyond* a reference when ``|value - reference| > z stderr`` with this ``z``:
    out of 21 comparisons at 95%, one outside its own 95% interval is what chance gives.
    """
    if int(comparisons) != comparisons or comparisons < 1:
        raise ValueError(f"comparisons must be an integer >= 1, got {comparisons!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    from statistics import NormalDist

    return NormalDist().inv_cdf(1.0 - (1.0 - level) / comparisons)


def beyond_budget(value: float, lo: float, hi: float, reference: float, comparisons: int, side: str) -> bool:
    """A Monte Carlo ``value`` with 95% interval ``[lo, hi]`` lies ``side`` (``"below"`` / ``"above"``) an exact
    ``reference`` by more than :func:`family_wise_z` standard errors, the standard error read off the
    interval (``(hi - lo) / (2 Z95)``); with a zero-width interval, by any amount."""
    if side not in ("below", "above"):
        raise ValueError(f"side must be 'below' or 'above', got {side!r}")
    gap = reference - value if side == "below" else value - reference
    return gap > family_wise_z(comparisons) * (hi - lo) / (2.0 * Z95)

#: Config fields stored under the name they had before a rename: ``n_steps`` (the numbers of steps
#: ``N``) was ``steps``, so the stored config and its hash are those of the configs written before.
STORED_NAMES = {"n_steps": "steps"}


def stored_config(cfg: Any) -> dict:
    """An experiment ``Config`` as :attr:`ExperimentResult.config` stores it: its fields, renamed ones
    under their old names (:data:`STORED_NAMES`), so results and config hashes from before a rename
    still match (``numerics.provenance.config_hash(stored_config(cfg))``)."""
    return {STORED_NAMES.get(k, k): v for k, v in cfg.__dict__.items()}


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
        One of :data:`STATUSES`, set by :meth:`finish` from the lists below, the most severe
        that applies: ``"error"`` (a part raised), ``"partial"`` (a part not measured),
        ``"finding"`` (a claim violated), ``"vacuous"`` (a check that says nothing), else ``"ok"``.
    missing : list of str
        One line per part that was not computed and why (e.g. no checkpoint given).
    findings : list of str
        One line per claim or bound that the numbers here violate.
    vacuous : list of str
        One line per check that is trivially true here (a bound >= 1 on a probability, or a
        bound whose regime no point of the grid reaches).
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
    counts : dict
        ``"vacuous"`` / ``"finding"`` -> ``[n, m]``: n of the section's m checks are vacuous /
        violated (:meth:`add_vacuous`, :meth:`add_finding`); the badge shows ``vacuous n/m``.
    """

    name: str
    title: str
    config: dict
    status: str = "ok"
    missing: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    vacuous: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    elapsed_s: float = 0.0
    errors: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)

    def _count(self, status: str, n: int, of: int) -> None:
        if not 0 <= n <= of:
            raise ValueError(f"{status}: {n} of {of} checks is not a count")
        got = self.counts.setdefault(status, [0, 0])
        got[0] += int(n)
        got[1] += int(of)

    def add_vacuous(self, text: str | list[str], n: int, of: int) -> None:
        """``n`` of ``of`` checks of a bound are trivially true here, said in ``text`` (one line or several)."""
        self._count("vacuous", n, of)
        if n:
            self.vacuous.extend([text] if isinstance(text, str) else text)

    def add_finding(self, text: str | list[str], n: int, of: int) -> None:
        """``n`` of ``of`` checks violate a claim (exact, or Monte Carlo beyond :func:`family_wise_z`), said in
        ``text`` (one line or several)."""
        self._count("finding", n, of)
        if n:
            self.findings.extend([text] if isinstance(text, str) else text)

    def add_missed_target(self, text: str) -> None:
        """A trained model short of its validation target: the section is ``partial``, with ``text`` as the reason."""
        self.missing.append(text)

    def badge_label(self, status: str) -> str:
        """``status`` with its counts where known (``vacuous 2/173``)."""
        n = self.counts.get(status)
        return f"{status} {n[0]}/{n[1]}" if n and status in ("vacuous", "finding") else status

    def to_json(self) -> dict:
        return canonical(self.__dict__)

    @classmethod
    def from_json(cls, payload: dict) -> ExperimentResult:
        return cls(**payload)

    def all_findings(self) -> list[str]:
        """:attr:`findings` and every note that says ``FINDING`` (a section never shows ``ok`` beside one)."""
        return list(self.findings) + [n for n in self.notes if str(n).startswith("FINDING") and n not in self.findings]

    def badges(self) -> list[str]:
        """Every status that applies, the most severe first (``["ok"]`` when none of the others does)."""
        applies = {"error": bool(self.errors) or self.status == "error", "partial": bool(self.missing),
                   "finding": bool(self.all_findings()), "vacuous": bool(self.vacuous)}
        out = [s for s in reversed(STATUSES) if applies.get(s)]
        return out or ["ok"]

    def finish(self, started: float) -> ExperimentResult:
        """Set ``status`` from what was computed and record the elapsed time."""
        self.status = self.badges()[0]
        self.elapsed_s = time.perf_counter() - started
        return self


class StepsNeeded(NamedTuple):
    """Smallest grid ``N`` meeting a target, with its 95% range when the values are estimates.

    Attributes
    ----------
    steps : int or None
        Smallest grid ``N`` from which the value stays ``<= target`` (``None``: not at the last ``N``).
    lo : int or None
        Smallest grid ``N`` whose 95% lower limit is ``<= target``: below it the target is missed
        with 95% confidence.
    hi : int or None
        Smallest grid ``N`` from which the 95% upper limit stays ``<= target``: from there on the
        target is met with 95% confidence.
    monte_carlo : bool
        Whether any value had an interval (``lo = steps = hi`` for exact values).
    """

    steps: int | None
    lo: int | None
    hi: int | None
    monte_carlo: bool


def _first_stable(points: list[tuple[int, float]], target: float) -> int | None:
    best = None
    for n, v in reversed(points):
        if not v <= target:
            break
        best = n
    return best


def steps_needed_range(points: Iterable[tuple[int, float, float, float]], target: float) -> StepsNeeded:
    """:class:`StepsNeeded` from ``(N, value, lower, upper)`` on a grid of ``N`` (any order).

    ``lower``/``upper`` are the 95% limits of ``value`` (both equal to it when it is exact).
    """
    pts = sorted(points)
    return StepsNeeded(
        steps=_first_stable([(n, v) for n, v, _, _ in pts], target),
        lo=next((n for n, _, lo, _ in pts if lo <= target), None),
        hi=_first_stable([(n, hi) for n, _, _, hi in pts], target),
        monte_carlo=any(lo < v or hi > v for _, v, lo, hi in pts),
    )


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

    def record(self, result: ExperimentResult) -> None:
        result.missing.extend(f"{part}: {why}" for part, why in self.missing.items())
        result.missing.extend(f"{part}: failed ({tb.splitlines()[0]})" for part, tb in self.failed.items())
        result.errors.update(self.failed)


class Timer:
    """``with Timer() as t: ...; t.seconds``."""

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def point_cache(cache: ResultCache | None) -> ResultCache:
    """``cache`` or a cache that stores nothing."""
    return cache if cache is not None else ResultCache(None)


def progress_iter(items: Iterable, progress: bool, desc: str, total: int | None = None) -> Iterable:
    """``items`` with progress on stderr when ``progress``: a tqdm bar on a terminal, else one line per
    long step (:func:`validation.progress.track`)."""
    from ..progress import track

    return track(items, progress, desc, total)
