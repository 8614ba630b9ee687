"""What this machine can hold (its physical memory, read without third-party packages) and the
environment variables that change what a run may do, each read by one parser.

Sizes that drive memory (an array header in a language file, a batch, a sequence length) are
compared with :func:`memory_limit` before anything is allocated, so a request that cannot fit is
refused with its estimate instead of failing (or swapping) halfway.

Every environment variable the package reads is declared once in :data:`ENVIRONMENT` and read
through :func:`env_value`: a value it cannot use (``abc``, ``nan``, ``inf``, ``-1`` where a
positive size is meant, ``maybe`` for a switch) is an :class:`EnvironmentVariableError` naming
the variable, what it holds and what it accepts -- never a silent default, never a traceback.
The command line checks them all before any command runs (:func:`check_environment`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

__all__ = [
    "CONNECT_ENV",
    "ENVIRONMENT",
    "MAX_SECONDS_ENV",
    "MEMORY_ENV",
    "MEMORY_FRACTION",
    "TRACEBACK_ENV",
    "EnvironmentVariableError",
    "EnvVar",
    "GuardError",
    "check_memory",
    "check_environment",
    "env_value",
    "format_bytes",
    "memory_limit",
    "physical_memory",
    "transformer_bytes",
]

MEMORY_FRACTION = 0.5  # one request may plan on at most half of the machine's physical memory
MEMORY_ENV = "MDM_THEORY_MEMORY_GIB"  # overrides the machine's memory (a batch job's share of a node)
MAX_SECONDS_ENV = "MDM_THEORY_MAX_SECONDS"  # raises the Monte Carlo time limit (numerics.methods)
TRACEBACK_ENV = "MDM_THEORY_TRACEBACK"  # 1: a failure shows its traceback instead of a message
CONNECT_ENV = "MDM_THEORY_CONNECT_SECONDS"  # deadline of a connection to a Dask scheduler

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


class GuardError(ValueError):
    """A request refused before anything is computed or written (the message names the option)."""

    exit_code = 2  # the command line's usage status: the input, not the program, is at fault


class EnvironmentVariableError(ValueError):
    """An environment variable holds a value the package cannot use (the message names it)."""

    exit_code = 2  # the command line's usage status: the input, not the program, is at fault


@dataclass(frozen=True)
class EnvVar:
    """One environment variable: its kind (``"positive"`` number, ``"count"`` integer,
    ``"switch"``), its meaning (for messages), its value when unset and (numbers) the range
    ``(low, high]`` of a usable value (``count``: ``[low, high]``)."""

    name: str
    kind: str
    meaning: str
    default: object = None
    low: float = 0.0
    high: float = math.inf


#: Every environment variable the package reads, by name.
ENVIRONMENT: dict[str, EnvVar] = {v.name: v for v in (
    EnvVar(MEMORY_ENV, "positive", "the memory of this machine (or this job's share) in GiB", low=2**-10,
           high=2**40),
    EnvVar(MAX_SECONDS_ENV, "positive", "the longest Monte Carlo run allowed, in seconds"),
    EnvVar(CONNECT_ENV, "positive", "the deadline of a connection to a Dask scheduler, in seconds", 30.0),
    EnvVar(TRACEBACK_ENV, "switch", "whether a failure prints its traceback", False),
    EnvVar("RANK", "count", "this process's rank (torchrun)", 0),
    EnvVar("LOCAL_RANK", "count", "this process's rank on its node (torchrun)", 0),
    EnvVar("WORLD_SIZE", "count", "the number of processes (torchrun)", 1, low=1),
)}


def env_value(name: str):
    """The value of the environment variable ``name`` (declared in :data:`ENVIRONMENT`), parsed.

    Unset or empty: the declared default. ``positive``: a finite number in ``(low, high]`` (a
    float); ``count``: an integer ``>= low``; ``switch``: ``1/true/yes/on`` or ``0/false/no/off``
    (any case). Anything else raises :class:`EnvironmentVariableError`.
    """
    var = ENVIRONMENT[name]
    given = os.environ.get(name)
    if given is None or given.strip() == "" and var.kind != "switch":
        return var.default
    text = given.strip()
    if var.kind == "switch":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise EnvironmentVariableError(f"{name}={given!r} is not a switch: {name} sets {var.meaning}; use "
                                       f"{name}=1 (on) or {name}=0 (off), or unset it")
    if var.kind == "count":
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < var.low:
            raise EnvironmentVariableError(f"{name}={given!r} is not an integer >= {var.low:g}: {name} is "
                                           f"{var.meaning}")
        return value
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise EnvironmentVariableError(f"{name}={given!r} is not a finite number > 0: {name} is {var.meaning}; set "
                                       f"it to a positive number such as {name}=8, or unset it")
    if not var.low < value <= var.high:
        raise EnvironmentVariableError(f"{name}={given!r} is outside ({var.low:g}, {var.high:g}]: {name} is "
                                       f"{var.meaning}")
    return value


def check_environment() -> None:
    """Parse every variable of :data:`ENVIRONMENT` that is set (the first unusable one is raised)."""
    for name in ENVIRONMENT:
        env_value(name)


def physical_memory() -> int:
    """This machine's physical memory in bytes: ``MemTotal`` of ``/proc/meminfo``, else ``os.sysconf``.

    The environment variable ``MDM_THEORY_MEMORY_GIB`` overrides it (a job's share of a node).
    """
    given = env_value(MEMORY_ENV)  # a finite size of 1 MiB to 2^40 GiB
    if given is not None:
        return int(given * 2**30)
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
    if not math.isfinite(n):
        return "an unbounded amount"
    return f"{n / 2**30:.3g} GiB" if n < 2**100 else f"about 10^{math.log10(n / 2**30):.0f} GiB"


def check_memory(need_bytes: float, what: str, change: str) -> None:
    """Refuse ``what`` (a :class:`GuardError`) when its estimated ``need_bytes`` exceed :func:`memory_limit`.

    ``change`` names the option(s) that bring the estimate down (``"use a smaller --batch"``).
    """
    limit = memory_limit()
    if not math.isfinite(need_bytes) or need_bytes > limit:
        raise GuardError(f"{what} needs about {format_bytes(need_bytes)} of memory, more than this machine's limit of "
                         f"{format_bytes(limit)} ({MEMORY_FRACTION:.0%} of {format_bytes(physical_memory())}); {change}")


def transformer_bytes(batch: int, length: int, width: int, heads: int, layers: int, vocab: int) -> float:
    """Rough float32 bytes of one forward pass of the ``neural`` transformer kept for the backward.

    Per block: the residual stream and MLP/QKV activations (about ``16 B L d`` floats) and the
    attention weights (``B heads L^2``); the output logits ``(B, L, V)`` twice (logits, log-softmax).
    """
    per_block = 16.0 * batch * length * width + float(batch) * heads * length * length
    return 4.0 * (layers * per_block + 2.0 * batch * length * (vocab + 1))
