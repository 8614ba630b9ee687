"""The one thread policy of every parallel numba kernel in numerics.

* **How many threads**: :func:`kernel_threads`, numba's own thread count (``NUMBA_NUM_THREADS``
  at start-up, :func:`numba.set_num_threads` at run time), so one setting governs the
  forward-backward, the oracle reveal kernels and the exact DP alike. A caller may cap it
  further by the work or memory it has (the DP does).
* **How work is split**: into about :data:`CHUNKS_PER_THREAD` contiguous chunks per thread
  (:func:`chunk_bounds`), so a slow chunk does not leave the other threads idle. ``prange``
  kernels loop over the chunks; GIL-releasing (``nogil``) kernels run them on a thread pool
  (:func:`run_chunks`).
* **Idle threads sleep**: numba's OpenMP threads are started (by the first :func:`kernel_threads`)
  with ``OMP_WAIT_POLICY=PASSIVE`` unless the user set the variable (:func:`_start_threads`).
  GNU OpenMP's default spins a finished thread for up to 300000 rounds; on a shared machine the
  spinning thread takes the core from the thread still working (measured on a loaded 2-core
  machine: a 2-thread forward-backward 1.2-1.4x slower than with sleeping threads, the bare
  products 3x slower). One parallel region per kernel call costs a wake-up of microseconds.
* **BLAS**: held at one thread while a kernel whose threads call BLAS themselves runs
  (:func:`blas_single_thread`), so the two levels of threads do not oversubscribe the cores.

Results never depend on the thread count beyond the order of float64 additions (the tests
run the kernels with one thread and with all of them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numba
import numpy as np
import scipy.linalg.cython_blas  # noqa: F401  (numba's np.dot calls this BLAS; load it before threadpoolctl looks)
from threadpoolctl import ThreadpoolController

__all__ = ["CHUNKS_PER_THREAD", "kernel_threads", "chunk_bounds", "run_chunks", "blas_single_thread"]

CHUNKS_PER_THREAD = 4  # chunks per thread: balances uneven chunks at little scheduling cost

_BLAS = ThreadpoolController()  # cached: a fresh threadpool_limits() rescans the libraries (~1 ms)


_started = False


def _start_threads() -> None:
    """Start numba's threads (the first ``numba.get_num_threads`` does) with idle OpenMP threads that
    sleep: GNU OpenMP reads ``OMP_WAIT_POLICY`` once, when numba loads it. A user's own setting is
    kept, the variable is not left set for other OpenMP runtimes (torch's), and threads numba
    already started are left as they are."""
    global _started
    if _started:
        return
    own = "OMP_WAIT_POLICY" not in os.environ
    if own:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        numba.get_num_threads()
    finally:
        if own:
            del os.environ["OMP_WAIT_POLICY"]
    _started = True


def kernel_threads() -> int:
    """Threads a parallel kernel uses: numba's thread count (``NUMBA_NUM_THREADS``, ``numba.set_num_threads``)."""
    _start_threads()
    return int(numba.get_num_threads())


def chunk_bounds(n: int, threads: int | None = None) -> np.ndarray:
    """``CHUNKS_PER_THREAD * threads + 1`` increasing bounds splitting ``0..n`` into contiguous chunks (int64).

    Chunk ``k`` is ``bounds[k]:bounds[k + 1]``; some may be empty when ``n`` is small.
    """
    threads = kernel_threads() if threads is None else threads
    return np.linspace(0, n, CHUNKS_PER_THREAD * max(1, threads) + 1).astype(np.int64)


def run_chunks(kernel: Callable, n: int, args: tuple, threads: int | None = None) -> None:
    """``kernel(*args, lo, hi)`` over the chunks of ``0..n``, on a pool of :func:`kernel_threads` threads.

    ``kernel`` must release the GIL (``@njit(nogil=True)``) and write disjoint outputs per chunk.
    With one thread (or ``n <= 1``) it runs inline on ``0..n``.
    """
    workers = min(kernel_threads() if threads is None else threads, n)
    if workers <= 1:
        kernel(*args, 0, n)
        return
    bounds = chunk_bounds(n, workers)
    with ThreadPoolExecutor(workers) as pool:
        jobs = [pool.submit(kernel, *args, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        for job in jobs:
            job.result()


@contextmanager
def blas_single_thread() -> Iterator[None]:
    """BLAS limited to one thread inside the block (for kernels whose own threads call BLAS)."""
    with _BLAS.limit(limits=1, user_api="blas"):
        yield
