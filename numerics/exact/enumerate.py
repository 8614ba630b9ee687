"""Brute force: the exact output law of the factorized oracle sampler by enumerating every instance.

An *instance* (Definition B.1, ``docs/methods/sampling.md``) is an assignment of the ``L`` positions to steps
``1..N``, each position independently at step ``i`` with probability ``pi_i``; so there are
``N^L`` of them and instance ``tau`` has probability ``prod_j pi_{step(j)}``. Given ``tau``, the
tokens revealed at step ``i`` (the set ``tau_i``) are drawn independently from the oracle
marginals given the tokens revealed before (``tau_<i``):

    p(x | tau) = prod_i prod_{j in tau_i} q(x_j | x_{tau_<i}),
    q(x_j | x_S) = q(x_{S + j}) / q(x_S)          (marginals of the joint table).

The sampler's output law is the mixture ``p(x) = sum_tau P(tau) p(x | tau)``. Besides ``p``
(hence ``KL(q || p)``, TER, SER, generative perplexity via :func:`numerics.exact.output_law.law_metrics`)
the enumeration gives the Jensen bound of Lemma B.2, ``E_tau KL(q || p(. | tau))``, directly as
the ``P(tau)``-weighted mean of the per-instance KLs. Steps with ``pi_i = 0`` never occur and
are left out; ``p(. | tau)`` depends on ``tau`` only through its *ordered set partition* (the
non-empty ``tau_i`` in step order), so it is computed once per partition.

Everything here is deliberately the obvious computation on the whole ``(V,) * L`` table: it is
the oracle the dynamic program (:mod:`numerics.exact.dp`) and the chain-rule formulas
(:mod:`numerics.exact.markov`, :mod:`numerics.exact.information_curve`) are tested against.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.estimate import Estimate
from numerics.exact.joint_table import as_table, masked_marginal_table
from numerics.exact.output_law import (
    ExactMetrics,
    OutputLaw,
    _check_no_underflow,
    check_undefined_convention,
    law_metrics,
)
from numerics.schedules import Schedule

__all__ = [
    "MAX_INSTANCES",
    "Enumeration",
    "InstanceLaw",
    "instance_output_law",
    "enumerate_output_law",
    "enumerate_metrics",
]

MAX_INSTANCES = 200_000  # N^L step assignments; above this use numerics.exact.dp


@dataclass(frozen=True)
class InstanceLaw:
    """The law ``p(. | tau)`` of one instance (one ordered set partition of the positions).

    Attributes
    ----------
    p : (V,) * L float64
        ``p(x | tau)`` under the ``undefined`` convention (:mod:`numerics.exact.output_law`).
    undefined_mass : float
        Probability that some step after the first reveals tokens next to an impossible prefix
        (``q(x_{tau_<i}) = 0``), where the oracle is undefined (see :mod:`numerics.exact.output_law`).
    kl : float
        ``KL(q || p(. | tau))``.
    """

    p: np.ndarray
    undefined_mass: float
    kl: float


@dataclass(frozen=True)
class Enumeration:
    """Result of :func:`enumerate_output_law`.

    Attributes
    ----------
    law : OutputLaw
        The exact mixture law ``p`` (method ``"enumerate"``).
    kl_jensen_bound : Estimate
        ``E_tau KL(q || p(. | tau))`` (Lemma B.2), exact by enumeration.
    n_instances : int
        Number of step assignments enumerated (``N'^L`` with ``N'`` the steps of positive ``pi``).
    n_partitions : int
        Number of distinct ordered set partitions among them.
    """

    law: OutputLaw
    kl_jensen_bound: Estimate
    n_instances: int
    n_partitions: int


def _marginal(Q: np.ndarray, revealed: Sequence[int]) -> np.ndarray:
    """``q(x_S)`` as an array of shape ``V`` on the axes in ``S``, ``1`` on the others (broadcastable)."""
    V = Q.shape[0] - 1
    S = set(revealed)
    return Q[tuple(slice(0, V) if j in S else slice(V, V + 1) for j in range(Q.ndim))]


def _kl(q: np.ndarray, p: np.ndarray) -> float:
    """``KL(q || p) = sum_{q > 0} q log(q / p)``; ``FloatingPointError`` if ``p`` underflowed on ``supp q``."""
    on = q > 0
    qs, ps = q[on], p[on]
    _check_no_underflow(ps)
    return float(np.sum(qs * (np.log(qs) - np.log(ps))))


def _instance(q: np.ndarray, Q: np.ndarray, partition: Sequence[Sequence[int]], undefined: str) -> InstanceLaw:
    L, V = q.ndim, q.shape[0]
    P = np.ones((1,) * L)
    spilled = np.zeros(q.shape)  # "uniform": outputs of undefined branches, later tokens uniform
    revealed: list[int] = []
    undefined_mass = 0.0
    for block in partition:
        q_S = _marginal(Q, revealed)
        impossible = q_S == 0
        if np.any(impossible):
            # P depends on x_S only (shape V on S axes), so its sum over these cells is a probability
            lost = np.where(impossible, P, 0.0)
            undefined_mass += float(np.sum(lost))
            if undefined == "uniform":
                spilled += lost / float(V) ** (L - len(revealed))
            P = np.where(impossible, 0.0, P)
        for j in block:
            q_Sj = _marginal(Q, revealed + [j])
            shape = np.broadcast_shapes(q_Sj.shape, q_S.shape)
            cond = np.divide(q_Sj, q_S, out=np.zeros(shape), where=~impossible)  # q(x_j | x_S)
            P = P * cond
        revealed += list(block)
    P = np.broadcast_to(P, q.shape) + spilled
    return InstanceLaw(P, undefined_mass, _kl(q, P))


def _check_partition(partition: Sequence[Sequence[int]], length: int) -> list[list[int]]:
    blocks = [sorted(int(j) for j in block) for block in partition]
    flat = sorted(j for block in blocks for j in block)
    if flat != list(range(length)) or any(not block for block in blocks):
        raise ValueError(
            f"partition {partition!r} is not an ordered partition of positions 0..{length - 1} into non-empty blocks"
        )
    return blocks


def instance_output_law(
    language: Any, length: int | None, partition: Sequence[Sequence[int]], *, undefined: str = "drop"
) -> InstanceLaw:
    """``p(. | tau)`` for the instance whose non-empty reveal sets are ``partition`` (in step order).

    Parameters
    ----------
    language : language or joint table ``(V,) * L``
    length : int or None
        ``L`` (may be ``None`` when a table is given).
    partition : sequence of sequences of int
        ``tau_{i_1}, tau_{i_2}, ..``: 0-based positions, every position exactly once.
    undefined : {"drop", "uniform"}
        Convention for branches where the oracle becomes undefined (:mod:`numerics.exact.output_law`).
    """
    q = as_table(language, length)
    undefined = check_undefined_convention(undefined)
    return _instance(q, masked_marginal_table(q), _check_partition(partition, q.ndim), undefined)


def _ordered_partition(assignment: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    steps = sorted(set(assignment))
    return tuple(tuple(j for j, s in enumerate(assignment) if s == step) for step in steps)


def enumerate_output_law(
    language: Any,
    length: int | None,
    schedule: Schedule,
    *,
    max_instances: int = MAX_INSTANCES,
    undefined: str = "drop",
) -> Enumeration:
    """Exact ``p``, and ``E_tau KL(q || p(. | tau))``, by enumerating all ``N^L`` step assignments.

    Parameters
    ----------
    language : HMM, NGram, IntervalLanguage, or a joint table of shape ``(V,) * L``
    length : int or None
        ``L`` (``None`` allowed for a table).
    schedule : Schedule
        Supplies ``pi``; steps with ``pi_i = 0`` are skipped.
    max_instances : int
        Refuse (``ValueError``) when more step assignments would be enumerated.
    undefined : {"drop", "uniform"}
        Convention for branches where the oracle becomes undefined (:mod:`numerics.exact.output_law`).
    """
    q = as_table(language, length)
    undefined = check_undefined_convention(undefined)
    L = q.ndim
    Q = masked_marginal_table(q)
    pi = schedule.pi
    steps = [i for i in range(pi.shape[0]) if pi[i] > 0]
    n_instances = len(steps) ** L
    if n_instances > max_instances:
        raise ValueError(
            f"{len(steps)}^{L} = {n_instances} step assignments exceed max_instances = {max_instances}; "
            "use numerics.exact.dp for larger cases"
        )
    p = np.zeros(q.shape)
    undefined_mass = 0.0
    jensen = 0.0
    cache: dict[tuple[tuple[int, ...], ...], InstanceLaw] = {}
    for assignment in itertools.product(steps, repeat=L):
        weight = math.prod(float(pi[s]) for s in assignment)  # P(tau) = prod_j pi_{step(j)}
        key = _ordered_partition(assignment)
        inst = cache.get(key)
        if inst is None:
            inst = cache[key] = _instance(q, Q, key, undefined)
        p += weight * inst.p
        undefined_mass += weight * inst.undefined_mass
        jensen += weight * inst.kl
    p.setflags(write=False)
    law = OutputLaw(q, p, undefined_mass, "enumerate", f"{schedule.name} (N={schedule.n_steps})", undefined)
    return Enumeration(law, Estimate(jensen, 0.0, "enumerate"), n_instances, len(cache))


def enumerate_metrics(language: Any, length: int | None, schedule: Schedule, **kwargs: Any) -> ExactMetrics:
    """:func:`~numerics.exact.output_law.law_metrics` of :func:`enumerate_output_law`, with the Jensen bound."""
    result = enumerate_output_law(language, length, schedule, **kwargs)
    return law_metrics(result.law, result.kl_jensen_bound)
