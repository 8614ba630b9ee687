"""Exact output law of the factorized oracle sampler by a dynamic program over revealed words.

State space. A *word* ``w`` in ``{0..V-1, m}^L`` records the revealed set ``R = {j : w_j != m}``
and the revealed values; there are ``(V+1)^L`` of them (index ``V`` plays ``m``, as in
:func:`numerics.exact.joint_table.masked_marginal_table`, whose ``Q[w] = q(x_R = w_R)``).

Recursion (``docs/methods/exact.md``; the instance law of :mod:`numerics.exact.enumerate` summed over all
instances step by step). Write ``P(tau) = prod_j pi_{step(j)}`` and give a position the factor
``pi_i`` when it is revealed at step ``i`` and ``1`` while it waits. With ``f_0 = 1[all masked]``,

    f_i(y) = sum_{w <= y} f_{i-1}(w) prod_{j : w_j = m, y_j != m} pi_i q(x_j = y_j | x_R = w_R),

where ``w <= y`` means ``y`` agrees with ``w`` on ``R`` and may reveal more positions; the product
over the masked positions of ``w`` has, per position, the options "stay masked" (factor 1) or
"reveal value ``v``" (factor ``pi_i Q[w with v at j] / Q[w]``). A position still masked after the
last step has no step left, so only complete words of ``f_N`` count: ``p(x) = f_N(x)``, and the
weights of every path add up to ``prod_j sum_i pi_i = 1``.

Undefined branches (see :mod:`numerics.exact.output_law`). A word with ``Q[w] = 0`` (an impossible
revealed prefix) that still has ``k`` masked positions is kept only along "reveal nothing"; the
part of its weight that would reveal something at step ``i``, ``f(w) [(1 - u_{i-1})^k - (1 - u_i)^k]``
in probability, is added to ``undefined_mass`` (and, per word, to a *spill* table). Under the
``"uniform"`` convention of :mod:`numerics.exact.output_law` the spill of ``w`` is then spread uniformly
over the ``V^k`` completions of ``w`` (axis by axis: the masked slice divided by ``V`` is added to
each value) and added to ``p``.

Cost: per step, every word ``w`` with ``k`` masked positions reaches ``(V+1)^k`` words, in total
``(2V+1)^L`` products (fewer when ``q`` has zeros), by an odometer over the options with running
products; the first step (one source) and the last (no "stay" option) are much cheaper. Measured
on the shared 2-core development machine under a load average of about 10 (so without any gain
from threads): ``L = 10, V = 2`` about 0.1 s per middle step, ``L = 12, V = 2`` and
``L = 10, V = 3`` about 3 s per middle step. The compiled kernel is checked against its own
pure-Python run (``_dp_step_sources.py_func``) and, independently, against the brute-force
enumeration of all step assignments. The sources of a step are split round-robin
between threads (the kernel releases the GIL), each adding into its own copy of ``f_i``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from numerics._jit import jit
from numerics._threads import kernel_threads
from numerics.exact.joint_table import as_table, masked_marginal_table
from numerics.exact.output_law import (
    ExactMetrics,
    OutputLaw,
    check_undefined_convention,
    law_metrics,
)
from numerics.schedules import Schedule

__all__ = ["MAX_DP_WORDS", "dp_output_law", "dp_metrics"]

MAX_DP_WORDS = 1 << 24  # (V+1)^L words; three float64 arrays of this size are 384 MiB


class DPTables(NamedTuple):
    """The tables one step reads: ``f = f_{i-1}`` and ``Q`` (flat, ``(V+1)^L`` words), ``L`` and ``V``."""

    f: np.ndarray
    Q: np.ndarray
    L: int
    V: int


class DPStep(NamedTuple):
    """Step ``i`` of the recursion: ``p = pi_i``, ``wait_before = 1 - u_{i-1}``, ``wait_after = 1 - u_i``,
    and ``final``: the last step with ``pi_i > 0`` (nobody may stay masked)."""

    p: float
    wait_before: float
    wait_after: float
    final: bool


class DPShare(NamedTuple):
    """One worker's share: the source words ``start, start + stride, ..``, added into its own ``g``
    (the next ``f``); the undefined part of each impossible source ``w`` is added to ``spill[w]``."""

    start: int
    stride: int
    g: np.ndarray
    spill: np.ndarray


@jit(nogil=True)
def _dp_step_sources(tables: DPTables, step: DPStep, share: DPShare) -> float:
    """One step of the recursion for one worker's source words (module docstring); returns the undefined mass.

    Sources are disjoint between shares, so shares with different ``g`` may run concurrently.
    """
    f, Q, L, V = tables
    p, wait_before, wait_after, final = step
    start, stride, g, spill = share
    B = V + 1
    n = f.shape[0]
    pw = np.empty(L, np.int64)
    acc = 1
    for j in range(L - 1, -1, -1):
        pw[j] = acc
        acc *= B
    masked = np.empty(L, np.int64)
    nopt = np.empty(L, np.int64)
    optw = np.empty((L, B))
    optoff = np.empty((L, B), np.int64)
    choice = np.empty(L, np.int64)
    prod = np.empty(L + 1)
    off = np.empty(L + 1, np.int64)
    first_opt = 1 if final else 0
    undefined = 0.0
    for w in range(start, n, stride):
        fw = f[w]
        if fw == 0.0:
            continue
        # masked positions in increasing order: the odometer's fastest digit is the last
        # position, whose stride is 1, so consecutive targets are adjacent in memory
        k = 0
        for j in range(L):
            if (w // pw[j]) % B == V:
                masked[k] = j
                k += 1
        if k == 0:
            g[w] += fw
            continue
        qw = Q[w]
        if qw == 0.0:
            lost = fw * (wait_before**k - wait_after**k)
            undefined += lost
            spill[w] += lost
            g[w] += fw
            continue
        for t in range(k):
            j = masked[t]
            c = 0
            if first_opt == 0:
                optw[t, 0] = 1.0
                optoff[t, 0] = 0
                c = 1
            for v in range(V):
                shift = (v - V) * pw[j]
                qv = Q[w + shift]
                if qv > 0.0:
                    optw[t, c] = p * (qv / qw)
                    optoff[t, c] = shift
                    c += 1
            nopt[t] = c  # >= 1: the values of a masked position of a possible word sum to Q[w] > 0
        # odometer over the first k-1 digits; the last digit's options are a plain loop
        prod[0] = fw
        off[0] = w
        for t in range(k - 1):
            choice[t] = 0
            prod[t + 1] = prod[t] * optw[t, 0]
            off[t + 1] = off[t] + optoff[t, 0]
        h = k - 1
        while True:
            base_p = prod[h]
            base_o = off[h]
            for c in range(nopt[h]):
                g[base_o + optoff[h, c]] += base_p * optw[h, c]
            t = h - 1
            while t >= 0:
                choice[t] += 1
                if choice[t] < nopt[t]:
                    break
                choice[t] = 0
                t -= 1
            if t < 0:
                break
            for s2 in range(t, h):
                prod[s2 + 1] = prod[s2] * optw[s2, choice[s2]]
                off[s2 + 1] = off[s2] + optoff[s2, choice[s2]]
    return undefined


def _default_threads(n_words: int) -> int:
    """Threads for the DP: the kernel threads (:func:`numerics._threads.kernel_threads`), capped so that
    their copies of ``g`` (one each) take at most 1 GiB."""
    return max(1, min(kernel_threads(), (1 << 30) // (8 * n_words)))


def _run_dp(Q: np.ndarray, schedule: Schedule, L: int, V: int, threads: int, compiled: bool):
    """Drive :func:`_dp_step_sources` over the steps; sources split round-robin between threads."""
    kernel = _dp_step_sources if compiled else _dp_step_sources.py_func
    pi, u = schedule.pi, schedule.u
    n = (V + 1) ** L
    positive = np.flatnonzero(pi > 0)
    f = np.zeros(n)
    f[n - 1] = 1.0  # the all-masked word
    spill = np.zeros(n)
    undefined = 0.0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for i in positive:
            tables = DPTables(f, Q, L, V)
            step = DPStep(float(pi[i]), 1.0 - u[i], 1.0 - u[i + 1], bool(i == positive[-1]))
            gs = np.zeros((threads, n))
            jobs = [pool.submit(kernel, tables, step, DPShare(c, threads, gs[c], spill)) for c in range(threads)]
            undefined += sum(job.result() for job in jobs)
            f = gs.sum(axis=0)
    return f, undefined, spill


def _spread_uniformly(spill: np.ndarray, V: int) -> np.ndarray:
    """Mass on words ``(V+1,) * L`` -> law on complete words, each masked position uniform on ``0..V-1``."""
    table = spill.copy()
    for axis in range(table.ndim):
        head = [slice(None)] * table.ndim
        head[axis] = slice(0, V)
        tail = list(head)
        tail[axis] = slice(V, V + 1)
        table[tuple(head)] += table[tuple(tail)] / V
        table[tuple(tail)] = 0.0
    return table[(slice(0, V),) * table.ndim]


def dp_output_law(
    language: Any,
    length: int | None,
    schedule: Schedule,
    *,
    compiled: bool = True,
    undefined: str = "drop",
    threads: int | None = None,
) -> OutputLaw:
    """Exact output law ``p`` of the factorized oracle sampler by the DP of the module docstring.

    Parameters
    ----------
    language : HMM, NGram, IntervalLanguage, or a joint table of shape ``(V,) * L``
    length : int or None
        ``L`` (``None`` allowed for a table).
    schedule : Schedule
    compiled : bool
        ``False`` runs the same kernel as plain Python (``py_func``; tiny cases, for tests).
    undefined : {"drop", "uniform"}
        Convention for branches where the oracle becomes undefined (:mod:`numerics.exact.output_law`).
    threads : int or None
        Worker threads (the compiled kernel releases the GIL); ``None``: :func:`_default_threads`.
        The result depends on it only through the order of float64 additions.
    """
    q = as_table(language, length)
    undefined = check_undefined_convention(undefined)
    L, V = q.ndim, q.shape[0]
    if (V + 1) ** L > MAX_DP_WORDS:
        raise ValueError(
            f"(V+1)^L = {V + 1}^{L} = {(V + 1) ** L} words exceed MAX_DP_WORDS = {MAX_DP_WORDS}"
        )
    Q = masked_marginal_table(q)
    n_threads = _default_threads((V + 1) ** L) if threads is None else int(threads)
    if n_threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads!r}")
    f, undefined_mass, spill = _run_dp(Q.ravel(), schedule, L, V, n_threads, compiled)
    p = np.ascontiguousarray(f.reshape((V + 1,) * L)[(slice(0, V),) * L])
    if undefined == "uniform":
        p += _spread_uniformly(spill.reshape((V + 1,) * L), V)
    p.setflags(write=False)
    return OutputLaw(q, p, float(undefined_mass), "dp", f"{schedule.name} (N={schedule.n_steps})", undefined)


def dp_metrics(language: Any, length: int | None, schedule: Schedule) -> ExactMetrics:
    """All exact metrics from :func:`dp_output_law`; the Jensen bound ``E_tau KL(q || p(. | tau))``
    from the exact information curve of the same table (:mod:`numerics.exact.information_curve`)."""
    from numerics.exact.information_curve import (
        information_curve_table,
        jensen_bound_from_curve,
    )

    law = dp_output_law(language, length, schedule)
    jensen = jensen_bound_from_curve(information_curve_table(law.q), schedule)
    return law_metrics(law, jensen.total)
