"""Exact information quantities of tiny languages and Markov chains, and random instances of them,
for the claims of :mod:`theory.related_schedules` (docs/theory-related.md).

Everything here is computed from *subset entropies* -- the joint table's
(:func:`numerics.exact.joint_table.subset_entropies`) or a Markov chain's closed form
(:func:`numerics.exact.markov.markov_subset_entropy`) -- and never from the information curve
``Z``, so the claims that compare the two are real checks:

* ``TC = sum_i H(X_i) - H(X)``;
* ``sum_mi = sum_i I(X_i ; X_{-i}) = sum_i (H(X_i) + H(X_{-i}) - H(X))``;
* ``DTC = H(X) - sum_i H(X_i | X_{-i}) = H(X) - sum_i (H(X) - H(X_{-i}))``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.exact.joint_table import joint_table, subset_entropies
from numerics.exact.markov import MarkovChain, markov_chain_of, markov_subset_entropy
from numerics.languages.presets import random_hmm

from .claims import require
from .instances import random_ngram

__all__ = ["MAX_TABLE_LENGTH", "Informations", "informations", "is_markov", "random_language", "random_sizes"]

MAX_TABLE_LENGTH = 6  # subset entropies of a (V,)^L table enumerate 2^L marginals: tiny L only
MAX_MARKOV_LENGTH = 512  # Markov closed forms: O(L^2) matrix powers, 0.08 s at L = 64, 1.3 s at 256 (2gram, 2 cores)


@dataclass(frozen=True)
class Informations:
    """Exact information quantities of ``X_1..X_L`` (nats).

    Attributes
    ----------
    entropy : float
        ``H(X)``.
    tc : float
        Total correlation ``sum_i H(X_i) - H(X)``.
    dtc : float
        Dual total correlation ``H(X) - sum_i H(X_i | X_{-i})``.
    sum_mi : float
        ``sum_i I(X_i ; X_{-i}) = tc + dtc``.
    """

    entropy: float
    tc: float
    dtc: float
    sum_mi: float


def is_markov(language: Any) -> bool:
    """Whether :func:`numerics.exact.markov.markov_chain_of` accepts ``language``."""
    try:
        markov_chain_of(language)
    except ValueError:
        return False
    return True


def _from_entropies(H_all: float, H_single: np.ndarray, H_rest: np.ndarray) -> Informations:
    tc = float(H_single.sum() - H_all)
    sum_mi = float(np.sum(H_single + H_rest - H_all))
    dtc = float(H_all - np.sum(H_all - H_rest))
    return Informations(float(H_all), tc, dtc, sum_mi)


def informations(language: Any, length: int) -> Informations:
    """:class:`Informations` from subset entropies (Markov closed form, else the joint table)."""
    L = int(length)
    require(L >= 1, f"length must be >= 1, got {length!r}")
    if is_markov(language):
        require(L <= MAX_MARKOV_LENGTH, f"Markov instances have L <= {MAX_MARKOV_LENGTH}, got {L}")
        chain = markov_chain_of(language)
        every = list(range(L))
        H_all = markov_subset_entropy(chain, every)
        single = np.array([markov_subset_entropy(chain, [i]) for i in every])
        rest = np.array([markov_subset_entropy(chain, every[:i] + every[i + 1:]) for i in every])
        return _from_entropies(H_all, single, rest)
    require(L <= MAX_TABLE_LENGTH, f"table instances have L <= {MAX_TABLE_LENGTH}, got {L}")
    H = subset_entropies(joint_table(language, L))
    full = (1 << L) - 1
    return _from_entropies(H[full], np.array([H[1 << i] for i in range(L)]),
                           np.array([H[full & ~(1 << i)] for i in range(L)]))


def _dirichlet_rows(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return rng.dirichlet(np.full(cols, float(rng.choice([0.3, 0.7, 2.0]))), size=rows)


def random_language(rng: np.random.Generator, markov_max_length: int = 48, table_max_length: int = 5) -> tuple[Any, int]:
    """A random ``(language, L)``: a token-level Markov chain (``V`` 2..4, ``L`` up to
    ``markov_max_length``), a tiny n-gram or a tiny HMM (``V^L`` small, ``L`` up to ``table_max_length``)."""
    kind = int(rng.integers(0, 3))
    if kind == 0:
        V = int(rng.integers(2, 5))
        chain = MarkovChain(_dirichlet_rows(rng, 1, V)[0], _dirichlet_rows(rng, V, V))
        return chain, int(rng.integers(2, markov_max_length + 1))
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, (table_max_length if V == 2 else min(table_max_length, 4)) + 1))
    if kind == 1:
        return random_ngram(rng, int(rng.integers(2, 4)), V, prune=float(rng.choice([0.0, 0.15]))), L
    return random_hmm(int(rng.integers(2, 4)), V, float(rng.choice([1.0, 3.0])), 0.0, rng), L


def random_sizes(rng: np.random.Generator, length: int) -> tuple[int, ...]:
    """A random composition of ``L``: balanced (``ceil``/``floor`` of ``L/T``), geometric, or uniform cuts."""
    L = int(length)
    style = int(rng.integers(0, 3))
    if style == 0:  # balanced sizes, the case of Li-Cai's corollary
        T = int(rng.integers(1, L + 1))
        return tuple(int(x) for x in np.diff(np.floor(np.linspace(0, L, T + 1)).astype(np.int64)) if x > 0)
    if style == 1:  # growing blocks (the geometric shape of the DTC schedules)
        out, s = [], 0
        r = float(rng.uniform(0.05, 1.0))
        while s < L:
            k = min(1 + int(r * (s + 1)), L - s)
            out.append(k)
            s += k
        return tuple(out[::-1]) if rng.random() < 0.5 else tuple(out)
    cuts = sorted(int(c) for c in rng.choice(np.arange(1, L), size=int(rng.integers(0, L)), replace=False)) if L > 1 else []
    b = [0, *cuts, L]
    return tuple(y - x for x, y in itertools.pairwise(b))

