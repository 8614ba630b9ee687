"""Progress on stderr: a tqdm bar on a terminal, plain lines elsewhere (a log, ``make report`` piped).

A bar redraws itself with carriage returns, which a log file or a CI console shows as one line at
the end, or not at all; so when stderr is not a terminal, a loop prints one line per long step
instead::

    [report] learned: training 3/6, 142 s elapsed, about 95 s left

A line is printed when at least :data:`LINE_EVERY_S` seconds have passed since the previous one,
and once at the end of a loop that took that long, so quick loops stay silent and a long loop
says where it is at least every :data:`LINE_EVERY_S` seconds (between its steps: a step itself
is not interrupted). The estimate of the time left is the mean time per step after the first
times the steps left (the first step pays numba's compilation: 54 s for one TER point of
seconds, which made a first estimate of "about 129 min left"); none before the second step.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

__all__ = ["LINE_EVERY_S", "progress_lines", "seconds", "track"]

LINE_EVERY_S = 5.0
"""Seconds between two progress lines of one loop (when stderr is not a terminal)."""


def seconds(s: float) -> str:
    """``s`` seconds as ``"42 s"`` or ``"3 min 05 s"``."""
    s = max(0.0, float(s))
    if s < 100:
        return f"{s:.0f} s"
    m, r = divmod(int(round(s)), 60)
    return f"{m} min {r:02d} s"


def progress_lines(items: Iterable, desc: str, total: int | None = None, stream: TextIO | None = None,
                   every_s: float = LINE_EVERY_S, prefix: str = "[report]") -> Iterator[Any]:
    """Yield ``items``, printing ``PREFIX DESC done/total, elapsed, about ... left`` lines to ``stream``.

    Parameters
    ----------
    items : the loop's items.
    desc : what the loop does (``"learned: training"``).
    total : the number of items (default ``len(items)`` when it has one; else no estimate).
    stream : where the lines go (default ``sys.stderr`` at call time).
    every_s : least seconds between two lines.
    prefix : the first word of every line.
    """
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    started = last = time.perf_counter()
    first = started  # the end of the first step (compilation): the estimate's clock starts there
    done = said = 0

    def say(now: float) -> None:
        out = stream if stream is not None else sys.stderr
        elapsed = now - started
        of = f"/{total}" if total else ""
        left = (f", about {seconds((now - first) / (done - 1) * (total - done))} left"
                if total and 1 < done < total else "")
        print(f"{prefix} {desc} {done}{of}, {seconds(elapsed)} elapsed{left}", file=out, flush=True)

    for item in items:
        yield item
        done += 1
        now = time.perf_counter()
        if done == 1:
            first = now
        if now - last >= every_s:
            say(now)
            last, said = now, done
    now = time.perf_counter()
    if said != done and now - started >= every_s:  # the last line: a long loop always ends with it
        say(now)


def track(items: Iterable, progress: bool, desc: str, total: int | None = None) -> Iterable:
    """``items`` with progress on stderr when ``progress``: a tqdm bar on a terminal, else lines."""
    if not progress:
        return items
    if sys.stderr.isatty():
        from tqdm.auto import tqdm

        return tqdm(items, desc=desc, total=total, leave=False, dynamic_ncols=True)
    return progress_lines(items, desc, total)
