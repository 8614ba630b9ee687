"""What this machine can hold: its physical memory, read without third-party packages.

Sizes that drive memory (an array header in a language file, a batch, a sequence length) are
compared with :func:`memory_limit` before anything is allocated, so a request that cannot fit is
refused with its estimate instead of failing (or swapping) halfway.
"""

from __future__ import annotations

import os

__all__ = ["MEMORY_ENV", "MEMORY_FRACTION", "format_bytes", "memory_limit", "physical_memory"]

MEMORY_FRACTION = 0.5  # one request may plan on at most half of the machine's physical memory
MEMORY_ENV = "MDM_THEORY_MEMORY_GIB"  # overrides the machine's memory (a batch job's share of a node)


def physical_memory() -> int:
    """This machine's physical memory in bytes: ``MemTotal`` of ``/proc/meminfo``, else ``os.sysconf``.

    The environment variable ``MDM_THEORY_MEMORY_GIB`` overrides it (a job's share of a node).
    """
    given = os.environ.get(MEMORY_ENV)
    if given:
        return int(float(given) * 2**30)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):  # pragma: no cover - neither Linux nor POSIX
        return 16 * 2**30


def memory_limit() -> int:
    """The bytes one request may plan on: :data:`MEMORY_FRACTION` of :func:`physical_memory`."""
    return int(MEMORY_FRACTION * physical_memory())


def format_bytes(n: float) -> str:
    """``n`` bytes in GiB, readable at any size (``3.2 GiB``, ``7.28e+03 GiB``, ``10^21 GiB``)."""
    import math

    if not math.isfinite(n):
        return "an unbounded amount"
    return f"{n / 2**30:.3g} GiB" if n < 2**100 else f"about 10^{math.log10(n / 2**30):.0f} GiB"
