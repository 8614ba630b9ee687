"""ParallelBench's four synthetic list tasks (arXiv 2510.04767, section 3) as languages, and the closed forms of
their SER under top-``k``, threshold and factor decoding with the oracle denoiser.

The prompt (an input list of ``n`` items) is fixed, so each task's answer law is a joint table over
``n`` positions (the items relabelled so that the input list reads ``0, 1, ..., n-1`` or ``0 ... 0``):

* ``copy``: the input itself: a point mass (``V = 2``, the sequence ``0 ... 0``);
* ``replace-index``: the item at a given index replaced by a given token: a point mass
  (``V = 2``, ``e_i``);
* ``replace-random``: the item at a uniformly random index replaced by the token ``1``
  (``V = 2``, the input ``0 ... 0``): uniform over the ``n`` sequences ``e_j``;
* ``shuffle``: a uniformly random permutation of ``n`` distinct items (``V = n``): uniform over the
  ``n!`` permutations.

The rules, as the engine runs them (``../shared/DECODERS.md`` section 9 and ``docs/methods/decoders.md``):
top-``k`` is ``llada`` (one block, ``N = n / k``, ``low-confidence`` at ``T = 1``); threshold is
``fast-dllm --threshold tau`` and factor ``fast-dllm --factor f``, both greedy (``T = 0``: the argmax,
the lowest token on ties). With ``m`` positions still masked the oracle's marginals are, for
replace-random before the replacement is placed, ``(1 - 1/m, 1/m)`` at every masked position, and
for shuffle uniform over the ``m`` items left. Derivations (each tested against the exact DP):

* **copy, replace-index**: every marginal is a point mass: SER 0 under every rule.
* **replace-random, top-k** (``k | n``): the draws are i.i.d., ``Y ~ Bin(m, 1/m)`` of them the token
  ``1``; for ``m > 2`` an original (score ``1 - 1/m``) outranks a replacement (``1/m``), so the ``k``
  revealed hold ``max(0, k - (m - Y))`` replacements: the step continues (no replacement placed)
  when ``Y <= m - k``, succeeds when ``Y = m - k + 1`` (exactly one; the rest are then determined), and
  fails otherwise (at ``m = k`` continuing means ``Y = 0``: no replacement at all, a failure). At
  ``m = 2`` the scores tie and the law of the step is the same. Accuracy
  ``A = sum_t prod_{s<t} P(Y_s <= m_s - k) P(Y_t = m_t - k + 1)``, ``m_t = n - t k``, the last term
  ``P(Y = 1) = (1 - 1/k)^(k-1)``. ``k = 1``: ``A = 1``; ``k = 2``: the last step alone gives 1/2.
  The paper's "1/2 at ``k = 2``, 0 for ``k > 2``" is greedy decoding with a *random* tie-break at the
  last step's ``(1/2, 1/2)`` tie; the engine's greedy argmax takes the lowest token there, so greedy
  top-``k`` is ``A = 1`` for ``k = 1`` and ``0`` for ``k >= 2``.
* **replace-random, threshold** (greedy): the top confidence is ``1 - 1/m < tau`` unless ... all ``m``
  pass at once when ``tau <= 1 - 1/m`` (all originals: failure); else one is revealed (an original),
  down to ``m = 1`` (the replacement, certain). ``A = 1`` iff ``tau > (n - 1)/n`` (the paper, with a
  strict ``> tau`` rule: iff ``tau >= (n-1)/n``; the engine reveals ``>= tau``: the boundary point differs).
* **replace-random, factor** (greedy): with equal confidences ``c = 1 - 1/m`` the prefix of length ``J``
  passes iff ``J + 1 <= f / (1 - c) = f m``: ``J = min(m, max(1, floor(f m) - 1))``; all ``m`` at once
  (failure) iff ``f >= 1 + 1/m``. ``A = 1`` iff ``f < (n + 1)/n``.
* **shuffle, top-k** (``T = 1``): all scores tie (``1/m``), so the ``k`` revealed are fixed and their
  draws i.i.d. uniform over the ``m`` items left: the step succeeds iff they are distinct,
  ``prod_{i<k} (m - i)/m``; ``A = prod_t prod_{i<k} (m_t - i)/m_t`` (``k = 1``: 1; ``k >= 2``: tends to 0).
* **shuffle, threshold** (greedy): all ``m`` pass iff ``tau <= 1/m``, each taking the lowest item
  (duplicates: failure for ``m >= 2``); else one at a time. ``A = 1`` iff ``tau > 1/2``.
* **shuffle, factor** (greedy): ``J + 1 <= f m / (m - 1)``; two or more (failure) iff
  ``f >= 3 (m - 1)/m``, hardest at ``m = 2``: ``A = 1`` iff ``f < 3/2``.

``SER = 1 - A``.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np
from scipy import stats

__all__ = ["RULES", "TASKS", "PBRow", "closed_form_accuracy", "engine_ser", "parallelbench_table", "task_table"]

TASKS = ("copy", "replace-index", "replace-random", "shuffle")
RULES = ("top-k", "threshold", "factor")


def task_table(task: str, n: int) -> np.ndarray:
    """The answer law of ``task`` on ``n`` items as a joint table (module docstring)."""
    if task not in TASKS:
        raise ValueError(f"unknown ParallelBench task {task!r}; choose one of {TASKS}")
    if int(n) != n or n < 2:
        raise ValueError(f"a list task needs n >= 2 items, got {n!r}")
    if task == "shuffle":
        if n > 6:
            raise ValueError(f"the shuffle table has n^n = {n ** n} cells; n <= 6")
        q = np.zeros((n,) * n)
        for perm in itertools.permutations(range(n)):
            q[perm] = 1.0 / math.factorial(n)
        return q
    q = np.zeros((2,) * n)
    if task == "copy":
        q[(0,) * n] = 1.0
    elif task == "replace-index":
        q[tuple(1 if j == n // 2 else 0 for j in range(n))] = 1.0
    else:
        for i in range(n):
            q[tuple(1 if j == i else 0 for j in range(n))] = 1.0 / n
    return q


def closed_form_accuracy(task: str, rule: str, n: int, parameter: float) -> float:
    """``A = 1 - SER`` of ``rule`` (``top-k``: ``k``; ``threshold``: ``tau``; ``factor``: ``f``) on ``task``."""
    if task in ("copy", "replace-index"):
        return 1.0
    if rule == "top-k":
        k = int(parameter)
        ms = range(n, 0, -k)
        if task == "shuffle":
            return float(np.prod([np.prod([(m - i) / m for i in range(k)]) for m in ms]))
        total, alive = 0.0, 1.0
        for m in ms:
            Y = stats.binom(m, 1.0 / m)
            total += alive * float(Y.pmf(m - k + 1))
            alive *= float(Y.cdf(m - k)) if m > k else 0.0
        return total
    if rule == "threshold":
        return float(parameter > ((n - 1) / n if task == "replace-random" else 0.5))
    if rule == "factor":
        return float(parameter < ((n + 1) / n if task == "replace-random" else 1.5))
    raise ValueError(f"unknown rule {rule!r}; choose one of {RULES}")


def engine_ser(task: str, rule: str, n: int, parameter: float) -> float:
    """The exact SER of the engine's rule (module docstring) on the task's table, by the decoders' DP."""
    from numerics.exact.decoders import decoder_exact
    from numerics.sampling.registry import spec

    q = task_table(task, n)
    if rule == "top-k":
        d = spec("llada").build({"temperature": 1.0}, steps=n // int(parameter), length=n)
    elif rule == "threshold":
        d = spec("fast-dllm").build({"threshold": float(parameter), "temperature": 0.0}, length=n)
    else:
        d = spec("fast-dllm").build({"factor": float(parameter), "temperature": 0.0}, length=n)
    return float(decoder_exact(q, None, d, "dp").metrics.ser.value)


class PBRow(NamedTuple):
    """One row of the ParallelBench table: the closed form's SER, the engine's, and their difference."""

    task: str
    rule: str
    n: int
    parameter: float
    closed_form: float
    engine: float
    difference: float


def parallelbench_table(n: int = 4, ks=(1, 2, 4), taus=(0.5, 0.7, 0.75, 0.8), factors=(1.0, 1.25, 1.5)) -> list:
    """Every task under every rule at ``n`` (top-``k`` for ``k | n``): closed-form SER vs the engine's."""
    rows = []
    for task in TASKS:
        for rule, params in (("top-k", [k for k in ks if n % k == 0]), ("threshold", taus), ("factor", factors)):
            for p in params:
                cf = 1.0 - closed_form_accuracy(task, rule, n, p)
                en = engine_ser(task, rule, n, p)
                rows.append(PBRow(task, rule, n, float(p), cf, en, en - cf))
    return rows
