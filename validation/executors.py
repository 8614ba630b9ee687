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

No wait without a deadline: a scheduler address is parsed before anything else (a port outside
1..65535 is refused at once, :func:`check_scheduler_address`), and the scheduler must answer an
``identity`` request within ``MDM_THEORY_CONNECT_SECONDS`` (default 30 s) before a client is made
(:func:`connect_scheduler`): a closed port, an unknown host and a listener that accepts and never
answers all end in a ``TimeoutError`` naming the address and the deadline (``distributed``'s own
``Client(timeout=...)`` bounds the TCP connect but not the handshake after it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

from numerics.machine import CONNECT_ENV, GuardError, env_value

__all__ = ["EXECUTORS", "POINT_RETRIES", "check_scheduler_address", "connect_scheduler", "run_local", "run_dask",
           "timed"]

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


def check_scheduler_address(address: str, option: str = "--scheduler") -> str:
    """``address`` if it names a Dask scheduler that could exist (``tcp://host:port``, port 1..65535);
    else a :class:`~numerics.machine.GuardError` naming ``option``, before any connection is tried."""
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError as exc:
        raise ImportError("--executor dask needs the dask and distributed packages "
                          "(pip install 'dask[distributed]')") from exc
    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls", "ucx", "ws", "wss"):
            host, port = parse_host_port(location)
            if not host or not 1 <= int(port) <= 65535:
                raise ValueError(f"port {port} is outside 1..65535" if host else "no host")
    except (ValueError, TypeError) as exc:
        raise GuardError(f"{option} {address!r} is not a scheduler address ({exc}): expected tcp://HOST:PORT "
                         "with a port in 1..65535, e.g. tcp://127.0.0.1:8786") from None
    return address


async def _identity(address: str, deadline: float) -> dict:
    from distributed.comm import connect

    comm = await asyncio.wait_for(connect(address, timeout=deadline), deadline)
    try:
        await asyncio.wait_for(comm.write({"op": "identity"}), deadline)
        return await asyncio.wait_for(comm.read(), deadline)
    finally:
        comm.abort()


def connect_scheduler(address: str, deadline: float | None = None) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address``, once it has answered within ``deadline``
    seconds (default ``MDM_THEORY_CONNECT_SECONDS``, 30 s); else a ``TimeoutError`` (module docstring)."""
    from distributed import Client

    check_scheduler_address(address)
    deadline = float(env_value(CONNECT_ENV) if deadline is None else deadline)
    try:
        reply = asyncio.run(_identity(address, deadline))
    except (OSError, asyncio.TimeoutError) as exc:
        raise TimeoutError(f"--scheduler {address}: no Dask scheduler answered within {deadline:g} s "
                           f"({type(exc).__name__}{': ' + str(exc) if str(exc) else ''}); check the address and that "
                           f"the scheduler runs, or set {CONNECT_ENV} for a slower network") from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        raise ConnectionError(f"--scheduler {address} answered, but not as a Dask scheduler: {str(reply)[:120]}")
    return Client(address, timeout=deadline)


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
            client = connect_scheduler(scheduler)
            owned.append(client)
        else:
            cluster = LocalCluster(dashboard_address=":0")
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
