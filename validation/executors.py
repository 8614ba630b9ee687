"""Where the points of a sweep are computed: one after the other in this process, or as tasks on Dask.

An executor takes ``evaluate`` (``PointConfig -> result``) and the points still to compute (keyed
by config hash) and yields ``(hash, result, seconds)`` as each point finishes, in any order. The
sweep (:func:`validation.sweep.run_sweep`) writes each row as it arrives, in this process only,
under the table's lock, so the table is never written by a worker and never half-written.

* ``local`` -- here, in order; the first point that raises stops the sweep (rows so far are kept).
* ``dask`` -- every point is an independent task on a ``dask.distributed`` cluster (``scheduler``:
  its address; none: a :class:`distributed.LocalCluster` on this machine). Each point is
  submitted once (its key is its config hash) and written once; a worker lost mid-point is
  rescheduled by the Dask scheduler onto another worker (a result the lost worker held but had
  not yet sent is computed again, as Dask does), and a point whose task raised is resubmitted
  ``POINT_RETRIES`` times. The points that finish are written even when another fails; the failure is raised at
  the end. See docs/cluster.md for a SLURM cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["EXECUTORS", "POINT_RETRIES", "run_local", "run_dask", "timed"]

EXECUTORS = ("local", "dask")
POINT_RETRIES = 2  # resubmissions of a point whose task raised (a lost worker is rescheduled by Dask itself)


def timed(evaluate: Callable[[Any], Any], cfg: Any) -> tuple[Any, float]:
    """``(evaluate(cfg), seconds)``, timed where it runs (on the worker for Dask)."""
    t = time.perf_counter()
    result = evaluate(cfg)
    return result, time.perf_counter() - t


def run_local(evaluate: Callable[[Any], Any], points: dict[str, Any]) -> Iterator[tuple[str, Any, float]]:
    """The points one after the other, in this process."""
    for h, cfg in points.items():
        result, seconds = timed(evaluate, cfg)
        yield h, result, seconds


def run_dask(evaluate: Callable[[Any], Any], points: dict[str, Any], scheduler: str | None = None,
             client: Any = None) -> Iterator[tuple[str, Any, float]]:
    """The points as Dask tasks, yielded as they complete (module docstring).

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); without it (and without ``client``)
        a :class:`distributed.LocalCluster` is started for this sweep and closed after it.
    client : distributed.Client, optional
        An existing client (tests, notebooks); left open.
    """
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise ImportError("--executor dask needs the dask and distributed packages "
                          "(pip install 'dask[distributed]')") from exc
    owned: list[Any] = []
    if client is None:
        if scheduler:
            client = Client(scheduler)
            owned.append(client)
        else:
            cluster = LocalCluster(dashboard_address=None)
            client = Client(cluster)
            owned += [client, cluster]
    try:
        futures = {client.submit(timed, evaluate, cfg, key=f"mdm-theory-point-{h}", pure=False,
                                 retries=POINT_RETRIES): h for h, cfg in points.items()}
        failures: list[BaseException] = []
        for future in as_completed(futures):
            try:
                result, seconds = future.result()
            except Exception as exc:  # a point failed after its retries: finish and write the others first
                failures.append(exc)
                continue
            finally:
                future.release()  # the worker may drop the result once it is here
            yield futures[future], result, seconds
        if failures:
            failures[0].add_note(f"{len(failures)} of {len(futures)} point(s) failed on the Dask cluster; "
                                 "the others were written to the table")
            raise failures[0]
    finally:
        for obj in owned:
            obj.close()
