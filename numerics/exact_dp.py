"""Exact output law of the factorized oracle sampler by a dynamic program over revealed words.

State space. A *word* ``w`` in ``{0..V-1, m}^L`` records the revealed set ``R = {j : w_j != m}``
and the revealed values; there are ``(V+1)^L`` of them (index ``V`` plays ``m``, as in
:func:`numerics.joint_table.masked_marginal_table`, whose ``Q[w] = q(x_R = w_R)``).

Recursion (MATH.md section 1; the instance law of :mod:`numerics.exact_enumerate` summed over all
instances step by step). Write ``P(tau) = prod_j pi_{step(j)}`` and give a position the factor
``pi_i`` when it is revealed at step ``i`` and ``1`` while it waits. With ``f_0 = 1[all masked]``,

    f_i(y) = sum_{w <= y} f_{i-1}(w) prod_{j : w_j = m, y_j != m} pi_i q(x_j = y_j | x_R = w_R),

where ``w <= y`` means ``y`` agrees with ``w`` on ``R`` and may reveal more positions; the product
over the masked positions of ``w`` has, per position, the options "stay masked" (factor 1) or
"reveal value ``v``" (factor ``pi_i Q[w with v at j] / Q[w]``). A position still masked after the
last step has no step left, so only complete words of ``f_N`` count: ``p(x) = f_N(x)``, and the
weights of every path add up to ``prod_j sum_i pi_i = 1``.

Undefined branches (see :mod:`numerics.output_law`). A word with ``Q[w] = 0`` (an impossible
revealed prefix) that still has ``k`` masked positions is kept only along "reveal nothing"; the
part of its weight that would reveal something at step ``i``, ``f(w) [(1 - u_{i-1})^k - (1 - u_i)^k]``
in probability, is added to ``undefined_mass`` (and, per word, to a *spill* table). Under the
``"uniform"`` convention of :mod:`numerics.output_law` the spill of ``w`` is then spread uniformly
over the ``V^k`` completions of ``w`` (axis by axis: the masked slice divided by ``V`` is added to
each value) and added to ``p``.

Cost: per step, every word ``w`` with ``k`` masked positions reaches ``(V+1)^k`` words, in total
``(2V+1)^L`` products (fewer when ``q`` has zeros), by an odometer over the options with running
products. ``L = 12, V = 2`` takes about a second per step on one core. The compiled kernel is
checked against its own pure-Python run (``_dp_kernel.py_func``) and, independently, against the
brute-force enumeration of all step assignments.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from .joint_table import as_table, masked_marginal_table
from .output_law import ExactMetrics, OutputLaw, check_undefined_convention, law_metrics
from .schedules import Schedule

__all__ = ["MAX_DP_WORDS", "dp_output_law", "dp_metrics"]

MAX_DP_WORDS = 1 << 24  # (V+1)^L words; three float64 arrays of this size are 384 MiB


@njit(cache=True)
def _dp_kernel(Q: np.ndarray, pi: np.ndarray, u: np.ndarray, L: int, V: int) -> tuple[np.ndarray, float, np.ndarray]:
    """Run the recursion of the module docstring; returns ``(f_N, undefined_mass, spill)`` over all words.

    ``Q`` is the flattened masked marginal table (C order, base ``V+1``), ``pi`` the per-step
    probabilities and ``u`` the cumulative ``u_0..u_N``.
    """
    B = V + 1
    n = B**L
    pw = np.empty(L, np.int64)
    acc = 1
    for j in range(L - 1, -1, -1):
        pw[j] = acc
        acc *= B
    last = -1
    for i in range(pi.shape[0]):
        if pi[i] > 0.0:
            last = i
    f = np.zeros(n)
    f[n - 1] = 1.0  # the all-masked word
    undefined = 0.0
    spill = np.zeros(n)
    masked = np.empty(L, np.int64)
    nopt = np.empty(L, np.int64)
    optw = np.empty((L, B))
    optoff = np.empty((L, B), np.int64)
    choice = np.empty(L, np.int64)
    prod = np.empty(L + 1)
    off = np.empty(L + 1, np.int64)
    for i in range(pi.shape[0]):
        p = pi[i]
        if p == 0.0:
            continue
        wait_before = 1.0 - u[i]  # 1 - u_{i-1}: a position is revealed at step >= i
        wait_after = 1.0 - u[i + 1]  # 1 - u_i: revealed after step i
        first_opt = 1 if i == last else 0  # after the last step nobody may stay masked
        g = np.zeros(n)
        for w in range(n):
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
            empty = False
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
                nopt[t] = c
                if c == 0:
                    empty = True
            if empty:
                continue
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
                for s in range(t, h):
                    prod[s + 1] = prod[s] * optw[s, choice[s]]
                    off[s + 1] = off[s] + optoff[s, choice[s]]
        f = g
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
    language: Any, length: int | None, schedule: Schedule, *, compiled: bool = True, undefined: str = "drop"
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
        Convention for branches where the oracle becomes undefined (:mod:`numerics.output_law`).
    """
    q = as_table(language, length)
    undefined = check_undefined_convention(undefined)
    L, V = q.ndim, q.shape[0]
    if (V + 1) ** L > MAX_DP_WORDS:
        raise ValueError(
            f"(V+1)^L = {V + 1}^{L} = {(V + 1) ** L} words exceed MAX_DP_WORDS = {MAX_DP_WORDS}"
        )
    Q = masked_marginal_table(q)
    kernel = _dp_kernel if compiled else _dp_kernel.py_func
    f, undefined_mass, spill = kernel(
        Q.ravel(), np.ascontiguousarray(schedule.pi), np.ascontiguousarray(schedule.u), L, V
    )
    p = np.ascontiguousarray(f.reshape((V + 1,) * L)[(slice(0, V),) * L])
    if undefined == "uniform":
        p += _spread_uniformly(spill.reshape((V + 1,) * L), V)
    p.setflags(write=False)
    return OutputLaw(q, p, float(undefined_mass), "dp", f"{schedule.name} (N={schedule.n_steps})", undefined)


def dp_metrics(language: Any, length: int | None, schedule: Schedule) -> ExactMetrics:
    """All exact metrics from :func:`dp_output_law`; the Jensen bound ``E_tau KL(q || p(. | tau))``
    from the exact information curve of the same table (:mod:`numerics.information_curve`)."""
    from .information_curve import information_curve_table, jensen_bound_from_curve

    law = dp_output_law(language, length, schedule)
    jensen = jensen_bound_from_curve(information_curve_table(law.q), schedule)
    return law_metrics(law, jensen.total)
