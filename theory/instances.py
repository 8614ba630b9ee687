"""Random instances and domain checks that several statements share.

An *instance* is a plain dict of named values; each kind below has a generator (``gen_*``, a
``numpy.random.Generator`` in, an instance out) and a domain check (``*_domain``, raising
``ValueError`` that names the violated hypothesis):

* a reverse step ``(L, n, u_{i-1}, pi_i)`` (Lemmas B.10, B.11);
* a tiny n-gram with one sampler instance ``tau`` (Lemmas B.2-B.9, brute force over ``V^L``);
* a tiny pruned language with a model (Lemma C.2, Theorem 4.3, brute force);
* a binary n-gram at ``L = 5..8`` (numerics' exact DP) and a 2-gram at any ``L`` (Markov chain rule);
* a step probability vector ``pi`` with an interval length ``l`` (Lemmas C.1, C.5, C.6).

Tiny random languages draw Dirichlet rows (concentration below 1, so some entries are small) and
prune them with :func:`numerics.languages.presets.prune_rows` (entries below the threshold set to
0, each row's largest entry kept): pruning is what makes invalid sequences, hence ``SER > 0``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from numerics.languages.hmm import HMM, NGram
from numerics.languages.presets import load_language, prune_rows
from numerics.schedules import Schedule, from_u, make_schedule

from .brute import InstanceLaw, instance_law, table
from .claims import probability_vector, require, show
from .separators import step_stats

__all__ = [
    "step_domain", "step_means", "gen_step",
    "random_ngram", "random_hmm", "TINY_PRESETS", "SER_PRESETS",
    "gen_tiny", "tiny_domain", "tiny_table", "tiny_instance_law", "dependency_count", "TINY_DOC", "TINY_PARAMS",
    "gen_ser", "ser_domain", "SER_DOC", "SER_PARAMS",
    "gen_dp", "dp_domain", "gen_markov", "markov_domain", "schedule_of",
    "pi_vector", "gen_pi", "gen_pi_exact", "interval_domain", "gen_interval", "INTERVAL_PARAMS",
]

# ----- a reverse step (B.10, B.11) ------------------------------------------------------------


def step_domain(inst: Mapping[str, Any], divisible: bool = True) -> tuple[int, int, float, float]:
    """Hypotheses of B.10/B.11: integers ``L >= 1``, ``n >= 2``; ``0 < u_{i-1}``, ``0 < pi_i``,
    ``u_{i-1} + pi_i <= 1`` (a step ``i >= 2``); with ``divisible``, ``n - 1`` divides ``L``."""
    L, n = inst["L"], inst["n"]
    require(int(L) == L and L >= 1, f"L must be an integer >= 1, got {show(L)}")
    require(int(n) == n and n >= 2, f"n must be an integer >= 2, got {show(n)}")
    a, b = float(inst["u_prev"]), float(inst["pi_i"])
    require(0 < a and 0 < b and a + b <= 1,
            f"need u_(i-1) = {show(a)} > 0, pi_i = {show(b)} > 0, u_(i-1) + pi_i <= 1 (step i >= 2)")
    if divisible:
        require(int(L) % (int(n) - 1) == 0, f"Lemma B.10 assumes n-1 divides L; got L = {show(L)}, n = {show(n)}")
    return int(L), int(n), a, b


def step_means(L: int, n: int, a: float, b: float) -> dict:
    """``mu_S = L u_{i-1}^{n-1} / (n-1)`` and ``mu_T = L pi_i`` (Lemma B.10's means)."""
    return {"mu_S": L * a ** (n - 1) / (n - 1), "mu_T": L * b}


def gen_step(rng: np.random.Generator, max_L: int = 96) -> dict:
    """A random step instance ``(L, n, u_{i-1}, pi_i, d)`` with ``n - 1 | L``."""
    n = int(rng.integers(2, 5))
    L = int(rng.integers(1, max_L // (n - 1) + 1)) * (n - 1)
    a = float(rng.uniform(0.02, 0.98))
    b = float(rng.uniform(0.0, 1.0 - a)) * float(rng.choice([0.05, 0.3, 1.0]))
    b = max(b, 1e-3 * (1 - a))
    return {"L": L, "n": n, "u_prev": a, "pi_i": b, "d": float(rng.uniform(0.01, 0.99))}


# ----- tiny random languages ------------------------------------------------------------------


def _dirichlet_rows(rng: np.random.Generator, rows: int, size: int, concentration: float, prune: float) -> np.ndarray:
    return prune_rows(rng.dirichlet(np.full(size, concentration), size=rows), prune)


def random_ngram(rng: np.random.Generator, n: int, V: int, prune: float = 0.0) -> NGram:
    """A random n-gram: Dirichlet(0.7) rows, entries below ``prune`` zeroed (largest kept), renormalized."""
    windows = V ** (n - 1)
    return NGram(n, _dirichlet_rows(rng, 1, windows, 0.7, prune)[0], _dirichlet_rows(rng, windows, V, 0.7, prune))


def random_hmm(rng: np.random.Generator, states: int, V: int, prune: float) -> HMM:
    """A random HMM: Dirichlet(0.6) rows (initial, transition, emission), pruned like :func:`random_ngram`."""
    return HMM(_dirichlet_rows(rng, 1, states, 0.6, prune)[0], _dirichlet_rows(rng, states, states, 0.6, prune),
               _dirichlet_rows(rng, states, V, 0.6, prune))


#: The paper's Table 1 n-gram presets (numerics.languages.presets, V = 8) used at tiny lengths by the generators.
TINY_PRESETS = ("2gram", "3gram", "2gram-pruned", "3gram-pruned")
#: Pruned presets of numerics.languages.presets used at tiny lengths by the SER generators.
SER_PRESETS = ("2gram-pruned", "3gram-pruned", "hmm-pruned", "interval-l3")


# ----- tiny n-gram + sampler instance (B.2 - B.9) ---------------------------------------------


def gen_tiny(rng: np.random.Generator) -> dict:
    """A tiny n-gram (random, ``V <= 3``, ``L <= 4``; or a Table 1 preset at ``L <= 3``), a schedule
    ``pi``, one instance ``steps``, a model ``(beta, tilt)`` and a step ``i``."""
    n = int(rng.integers(2, 4))
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 5 if V == 2 else 4))
    N = int(rng.integers(1, 4))
    if rng.random() < 0.25:  # a real language of the paper's experiments (V = 8), at L <= 3
        lang, L = load_language(str(rng.choice(TINY_PRESETS))), int(rng.integers(2, 4))
    else:
        lang = random_ngram(rng, n, V, prune=float(rng.choice([0.0, 0.15])))
    pi = rng.dirichlet(np.ones(N))
    steps = tuple(int(s) for s in rng.integers(1, N + 1, L))
    beta = float(rng.choice([1.0, 1.0, 0.7, 1.4]))
    tilt = rng.uniform(0.0, 1.0, lang.vocab_size) if rng.random() < 0.3 else None
    return {"language": lang, "L": L, "pi": pi, "steps": steps, "beta": beta, "tilt": tilt,
            "i": int(rng.integers(1, max(steps) + 1))}


def _brute_length(L) -> None:
    require(int(L) == L and 1 <= L <= 8, f"L must be an integer in 1..8 (brute force), got {show(L)}")


def tiny_domain(inst: Mapping[str, Any]) -> None:
    """An NGram, ``1 <= L <= 8``, a probability vector ``pi``, ``steps`` (one per position), ``beta > 0``."""
    require(isinstance(inst["language"], NGram), "the B.* brute-force claims take an NGram language")
    L = inst["L"]
    _brute_length(L)
    probability_vector("pi", inst["pi"])
    steps = inst.get("steps")
    if steps is not None:
        require(len(steps) == L and min(steps) >= 1, "steps must give a step >= 1 for each of the L positions")
    require(float(inst.get("beta", 1.0)) > 0, "beta must be > 0")


def tiny_table(inst: Mapping[str, Any]) -> np.ndarray:
    """``q`` of the instance's language as a ``(V,)*L`` table."""
    return table(inst["language"], int(inst["L"]))


def tiny_instance_law(inst: Mapping[str, Any]) -> InstanceLaw:
    """The sampler's exact law on the instance ``steps`` (:func:`theory.brute.instance_law`)."""
    return instance_law(tiny_table(inst), inst["steps"], float(inst.get("beta", 1.0)), inst.get("tilt"))


def dependency_count(inst: Mapping[str, Any]) -> float:
    """``sum_i (|tau_i| - D_i)`` of the instance ``steps`` (Definition B.5)."""
    steps, n = inst["steps"], inst["language"].order
    return float(sum(st.new - st.dependencies for st in (step_stats(steps, i, n) for i in range(1, max(steps) + 1))))


_BRUTE_DOC = (
    "q tabulated over V^L, the sampler's law p(.|tau) of every instance computed exactly (theory.brute) for the "
    "oracle tempered by beta and tilted by exp(tilt[token]) (beta = 1, no tilt: the oracle); eps_learning is the "
    "exact max over contexts of KL(q(x_j|x_A) || p_theta(x_j|x_A))."
)
_MODEL_PARAMS = {"L": "length", "pi": "step probabilities", "beta": "model temperature"}
TINY_DOC = "Tiny n-gram (random with V <= 3, L <= 4, or a Table 1 preset with V = 8, L <= 3): " + _BRUTE_DOC
TINY_PARAMS = {"language": "NGram", **_MODEL_PARAMS, "steps": "instance"}


# ----- tiny pruned language + model (C.2, 4.3) ------------------------------------------------


def gen_ser(rng: np.random.Generator) -> dict:
    """A tiny pruned language (random n-gram or HMM, or a pruned preset), ``pi``, a reveal ``order``
    and a model ``(beta, tilt)``."""
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 5 if V == 2 else 4))
    kind = rng.random()
    if kind < 0.2:  # the paper's pruned languages and the Theorem 4.4 language (numerics.languages.presets)
        name = str(rng.choice(SER_PRESETS))
        lang, L = load_language(name), 3 if name == "interval-l3" else 2
    elif kind < 0.6:
        lang = random_ngram(rng, int(rng.integers(2, 4)), V, prune=0.25)
    else:
        lang = random_hmm(rng, int(rng.integers(1, 4)), V, prune=0.25)
    N = int(rng.integers(1, 4))
    return {
        "language": lang,
        "L": L,
        "pi": rng.dirichlet(np.ones(N)),
        "order": tuple(int(v) for v in rng.permutation(L) + 1),
        "beta": float(rng.choice([1.0, 0.8, 1.25, 1.6])),
        "tilt": rng.uniform(0.0, 1.0, lang.vocab_size) if rng.random() < 0.5 else None,
    }


def ser_domain(inst: Mapping[str, Any]) -> None:
    """``1 <= L <= 8``, a probability vector ``pi``, ``beta > 0``."""
    _brute_length(inst["L"])
    probability_vector("pi", inst["pi"])
    require(float(inst.get("beta", 1.0)) > 0, "beta must be > 0")


SER_DOC = ("Tiny pruned language (random n-gram or HMM with V <= 3, L <= 4, or a pruned preset of "
           "numerics.languages.presets at L <= 3): " + _BRUTE_DOC)
SER_PARAMS = {"language": "NGram or HMM", **_MODEL_PARAMS, "order": "reveal order"}


# ----- lengths beyond enumeration: exact DP (L = 5..8) and the Markov chain rule (2-grams) ----


def gen_dp(rng: np.random.Generator) -> dict:
    """A binary n-gram (``n = 2, 3``, pruned or not) at ``L = 5..8`` with a random ``pi``."""
    n = int(rng.integers(2, 4))
    L = int(rng.integers(5, 9))
    N = int(rng.integers(2, 7))
    pi = rng.dirichlet(np.full(N, float(rng.choice([0.5, 5.0]))))
    return {"language": random_ngram(rng, n, 2, prune=float(rng.choice([0.0, 0.2]))), "L": L, "pi": pi}


def dp_domain(inst: Mapping[str, Any]) -> None:
    """An NGram small enough for numerics' exact DP (``(2V+1)^L <= 5^10``), a probability vector ``pi``."""
    require(isinstance(inst["language"], NGram), "the exact-DP claims take an NGram language")
    L, V = inst["L"], inst["language"].vocab_size
    require(int(L) == L and 1 <= L and (2 * V + 1) ** L <= 5**10,
            f"(2V+1)^L too large for the exact DP: V = {show(V)}, L = {show(L)}")
    probability_vector("pi", inst["pi"])


def gen_markov(rng: np.random.Generator) -> dict:
    """The Table 1 2-gram or a random bigram, ``L`` up to 600, a linear or cosine schedule."""
    if rng.random() < 0.5:
        lang = load_language("2gram")
    else:
        lang = random_ngram(rng, 2, int(rng.integers(2, 9)))
    L = int(rng.integers(2, 600))
    sched = make_schedule(str(rng.choice(["linear", "cosine"])), int(rng.integers(1, 80)))
    return {"language": lang, "L": L, "pi": sched.pi}


def markov_domain(inst: Mapping[str, Any]) -> None:
    """A 2-gram language and an integer ``L >= 1``."""
    lang = inst["language"]
    require(isinstance(lang, NGram) and lang.order == 2, "the Markov-chain-rule claims take a 2-gram language")
    require(int(inst["L"]) == inst["L"] and inst["L"] >= 1, "L must be an integer >= 1")


def schedule_of(pi) -> Schedule:
    """The :class:`~numerics.schedules.Schedule` with step probabilities ``pi`` (``u`` = cumulative sums, ``u_N = 1``)."""
    pi = np.asarray(pi, dtype=np.float64)
    u = np.concatenate([[0.0], np.cumsum(pi)])
    u[-1] = 1.0
    return from_u(u, "claim")


# ----- step probability vectors and intervals (C.1, C.5, C.6) ---------------------------------


def pi_vector(inst: Mapping[str, Any]) -> np.ndarray:
    """The instance's ``pi``, checked to be a probability vector."""
    return probability_vector("pi", inst["pi"])


def gen_pi(rng: np.random.Generator, max_n: int = 40) -> np.ndarray:
    """A random ``pi`` with ``N <= max_n`` steps: uniform, or Dirichlet with concentration 0.2, 1 or 10."""
    N = int(rng.integers(1, int(rng.choice([min(3, max_n), min(8, max_n), max_n])) + 1))
    if rng.integers(0, 3) == 0:
        return np.full(N, 1.0 / N)
    return rng.dirichlet(np.full(N, float(rng.choice([0.2, 1.0, 10.0]))))


def gen_pi_exact(rng: np.random.Generator, max_n: int = 8) -> list[Fraction]:
    """A random rational ``pi`` (small integer weights, some zero) with ``N <= max_n`` steps."""
    N = int(rng.integers(1, max_n + 1))
    w = [int(v) for v in rng.integers(0, 6, N)]
    if sum(w) == 0:
        w[-1] = 1
    return [Fraction(v, sum(w)) for v in w]


def interval_domain(inst: Mapping[str, Any]) -> None:
    """A probability vector ``pi`` and an integer interval length ``l >= 1``."""
    pi_vector(inst)
    l_ = inst["l"]
    require(int(l_) == l_ and l_ >= 1, f"interval length l must be an integer >= 1, got {show(l_)}")


def gen_interval(rng: np.random.Generator) -> dict:
    """``l in 1..7`` and a ``pi`` (rational with probability 0.3)."""
    exact = rng.random() < 0.3
    return {"l": int(rng.integers(1, 8)), "pi": gen_pi_exact(rng) if exact else gen_pi(rng, 30)}


INTERVAL_PARAMS = {"l": "interval length", "pi": "step probabilities (or -N steps of --schedule)"}
