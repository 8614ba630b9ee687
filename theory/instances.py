"""Random instances and domain checks that several lemmas share.

* a reverse step ``(L, n, u_{i-1}, pi_i)`` (Lemmas B.10, B.11);
* tiny n-gram languages with a sampler instance (Lemmas B.2-B.9, brute force);
* tiny pruned languages with a model (Lemma C.2, Theorem 4.3, brute force);
* binary n-grams at lengths 5-8 (numerics' exact DP) and 2-grams at any length (Markov chain rule);
* step probability vectors ``pi`` (Lemmas C.1, C.5, C.6).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

import numpy as np

from numerics.languages.hmm import HMM, NGram
from numerics.schedules import Schedule, from_u

from .brute import instance_law, table
from .claims import probability_vector, require
from .separators import step_stats

def step_domain(inst: Mapping[str, Any], divisible: bool = True) -> tuple[int, int, float, float]:
    """Domain shared by B.10/B.11: integers ``L >= 1``, ``n >= 2``, ``0 < u_{i-1}``, ``0 < pi_i``,
    ``u_{i-1} + pi_i <= 1`` and (``divisible``) ``n - 1`` divides ``L``."""
    L, n = inst["L"], inst["n"]
    require(int(L) == L and L >= 1, f"L must be an integer >= 1, got {L!r}")
    require(int(n) == n and n >= 2, f"n must be an integer >= 2, got {n!r}")
    a, b = float(inst["u_prev"]), float(inst["pi_i"])
    require(0 < a and 0 < b and a + b <= 1, f"need u_(i-1) = {a!r} > 0, pi_i = {b!r} > 0, u_(i-1) + pi_i <= 1 (step i >= 2)")
    if divisible:
        require(int(L) % (int(n) - 1) == 0, f"Lemma B.10 assumes n-1 divides L; got L = {L}, n = {n}")
    return int(L), int(n), a, b


def step_build(**kw) -> dict:
    """A step instance from ``mdm-theory bounds`` options (``--L --n --u-prev --pi-i [--d]``)."""
    inst = {k: kw[k] for k in ("L", "n", "u_prev", "pi_i")}
    if kw.get("d") is not None:
        inst["d"] = kw["d"]
    return inst


def step_means(L: int, n: int, a: float, b: float) -> dict:
    """``mu_S = L u_{i-1}^{n-1} / (n-1)`` and ``mu_T = L pi_i``."""
    return {"mu_S": L * a ** (n - 1) / (n - 1), "mu_T": L * b}




def gen_step(rng: np.random.Generator, max_L: int = 96) -> dict:
    """A random step instance ``(L, n, u_{i-1}, pi_i)`` with ``n - 1 | L``."""
    n = int(rng.integers(2, 5))
    L = int(rng.integers(1, max_L // (n - 1) + 1)) * (n - 1)
    a = float(rng.uniform(0.02, 0.98))
    b = float(rng.uniform(0.0, 1.0 - a)) * float(rng.choice([0.05, 0.3, 1.0]))
    b = max(b, 1e-3 * (1 - a))
    return {"L": L, "n": n, "u_prev": a, "pi_i": b, "d": float(rng.uniform(0.01, 0.99))}



def random_ngram(rng: np.random.Generator, n: int, V: int, prune: float = 0.0) -> NGram:
    """A random n-gram: Dirichlet rows, entries below ``prune`` zeroed (one kept per row), renormalized."""
    S_ = V ** (n - 1)

    def rows(k):
        w = rng.dirichlet(np.full(V if k > 1 else S_, 0.7), size=k)
        if prune > 0:
            keep = w >= prune
            keep[np.arange(w.shape[0]), w.argmax(axis=1)] = True
            w = w * keep
        return w / w.sum(axis=1, keepdims=True)

    return NGram(n, rows(1)[0], rows(S_))


#: The paper's Table 1 n-gram presets (numerics.languages.presets, V = 8) used at tiny lengths by the generators.
TINY_PRESETS = ("2gram", "3gram", "2gram-pruned", "3gram-pruned")


def _gen_tiny(rng: np.random.Generator) -> dict:
    n = int(rng.integers(2, 4))
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 5 if V == 2 else 4))
    N = int(rng.integers(1, 4))
    if rng.random() < 0.25:  # a real language of the paper's experiments (V = 8), at L <= 3
        from numerics.languages.presets import load_language

        lang, L = load_language(str(rng.choice(TINY_PRESETS))), int(rng.integers(2, 4))
    else:
        lang = random_ngram(rng, n, V, prune=float(rng.choice([0.0, 0.15])))
    pi = rng.dirichlet(np.ones(N))
    steps = tuple(int(s) for s in rng.integers(1, N + 1, L))
    beta = float(rng.choice([1.0, 1.0, 0.7, 1.4]))
    tilt = rng.uniform(0.0, 1.0, lang.vocab_size) if rng.random() < 0.3 else None
    return {"language": lang, "L": L, "pi": pi, "steps": steps, "beta": beta, "tilt": tilt,
            "i": int(rng.integers(1, max(steps) + 1))}


def _tiny_domain(inst) -> None:
    lang = inst["language"]
    require(isinstance(lang, NGram), "the B.* brute-force claims take an NGram language")
    L = inst["L"]
    require(int(L) == L and 1 <= L <= 8, f"L must be an integer in 1..8 (brute force), got {L!r}")
    probability_vector("pi", inst["pi"])
    steps = inst.get("steps")
    if steps is not None:
        require(len(steps) == L and min(steps) >= 1, "steps must give a step >= 1 for each of the L positions")
    require(float(inst.get("beta", 1.0)) > 0, "beta must be > 0")


def _q(inst) -> np.ndarray:
    return table(inst["language"], int(inst["L"]))


def _instance(inst):
    return instance_law(_q(inst), inst["steps"], float(inst.get("beta", 1.0)), inst.get("tilt"))


def _dep_term(inst) -> float:
    """``sum_i (|tau_i| - D_i)`` of the instance."""
    steps, n = inst["steps"], inst["language"].order
    return float(sum(st.new - st.dependencies for st in (step_stats(steps, i, n) for i in range(1, max(steps) + 1))))



_TINY_DOC = (
    "Tiny n-gram (random with V <= 3, L <= 4, or a Table 1 preset with V = 8, L <= 3): q tabulated over V^L, the sampler's law p(.|tau) of every instance "
    "computed exactly (theory.brute) for the oracle tempered by beta (beta = 1: oracle); eps_learning "
    "is the exact max over contexts of KL(q(x_j|x_A) || p_theta(x_j|x_A))."
)
_tiny_params = {"language": "NGram", "L": "length", "pi": "step probabilities", "steps": "instance", "beta": "model temperature"}


def _random_hmm(rng: np.random.Generator, S_: int, V: int, prune: float) -> HMM:
    def rows(k, m):
        w = rng.dirichlet(np.full(m, 0.6), size=k)
        keep = w >= prune
        keep[np.arange(k), w.argmax(axis=1)] = True
        w = w * keep
        return w / w.sum(axis=1, keepdims=True)

    return HMM(rows(1, S_)[0], rows(S_, S_), rows(S_, V))


#: Pruned presets of numerics.languages.presets used at tiny lengths by the SER generators.
SER_PRESETS = ("2gram-pruned", "3gram-pruned", "hmm-pruned", "interval-l3")


def _gen_ser(rng: np.random.Generator) -> dict:
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 5 if V == 2 else 4))
    kind = rng.random()
    if kind < 0.2:  # the paper's pruned languages and the Theorem 4.4 language (numerics.languages.presets)
        from numerics.languages.presets import load_language

        name = str(rng.choice(SER_PRESETS))
        lang, L = load_language(name), 3 if name == "interval-l3" else 2
    elif kind < 0.6:
        lang = random_ngram(rng, int(rng.integers(2, 4)), V, prune=0.25)
    else:
        lang = _random_hmm(rng, int(rng.integers(1, 4)), V, prune=0.25)
    N = int(rng.integers(1, 4))
    return {
        "language": lang,
        "L": L,
        "pi": rng.dirichlet(np.ones(N)),
        "order": tuple(int(v) for v in rng.permutation(L) + 1),
        "beta": float(rng.choice([1.0, 0.8, 1.25, 1.6])),
        "tilt": rng.uniform(0.0, 1.0, lang.vocab_size) if rng.random() < 0.5 else None,
    }


def _ser_domain(inst):
    L = inst["L"]
    require(int(L) == L and 1 <= L <= 8, f"L must be an integer in 1..8 (brute force), got {L!r}")
    probability_vector("pi", inst["pi"])
    require(float(inst.get("beta", 1.0)) > 0, "beta must be > 0")



_SER_DOC = (
    "Model: the oracle tempered by beta and tilted by exp(tilt[token]) (theory.brute). Tiny pruned language (random n-gram or HMM with V <= 3, L <= 4, or a pruned preset of numerics.languages.presets "
    "at L <= 3) tabulated over V^L; the model is the oracle "
    "tempered by beta (theory.brute); eps_learning is the exact max over contexts of the per-token KL."
)
_ser_params = {"language": "NGram or HMM", "L": "length", "pi": "step probabilities", "order": "reveal order", "beta": "model temperature"}


def _gen_dp(rng: np.random.Generator) -> dict:
    n = int(rng.integers(2, 4))
    L = int(rng.integers(5, 9))
    N = int(rng.integers(2, 7))
    pi = rng.dirichlet(np.full(N, float(rng.choice([0.5, 5.0]))))
    return {"language": random_ngram(rng, n, 2, prune=float(rng.choice([0.0, 0.2]))), "L": L, "pi": pi}


def _dp_domain(inst) -> None:
    require(isinstance(inst["language"], NGram), "B.9.exact-dp takes an NGram language")
    L, V = inst["L"], inst["language"].vocab_size
    require(int(L) == L and 1 <= L and (2 * V + 1) ** L <= 5**10, f"(2V+1)^L too large for the exact DP: V = {V}, L = {L}")
    probability_vector("pi", inst["pi"])



def _gen_markov(rng: np.random.Generator) -> dict:
    from numerics.schedules import make_schedule

    if rng.random() < 0.5:
        from numerics.languages.presets import load_language

        lang = load_language("2gram")
    else:
        lang = random_ngram(rng, 2, int(rng.integers(2, 9)))
    L = int(rng.integers(2, 600))
    sched = make_schedule(str(rng.choice(["linear", "cosine"])), int(rng.integers(1, 80)))
    return {"language": lang, "L": L, "pi": sched.pi}


def _markov_domain(inst) -> None:
    lang = inst["language"]
    require(isinstance(lang, NGram) and lang.order == 2, "the Markov-chain-rule claims take a 2-gram language")
    require(int(inst["L"]) == inst["L"] and inst["L"] >= 1, "L must be an integer >= 1")


def _schedule_of(pi) -> Schedule:
    pi = np.asarray(pi, dtype=np.float64)
    u = np.concatenate([[0.0], np.cumsum(pi)])
    u[-1] = 1.0
    return from_u(u, "claim")



def _pi(inst: Mapping[str, Any]):
    pi = inst["pi"]
    return probability_vector("pi", pi)


def _c1_domain(inst):
    _pi(inst)
    L = inst["L"]
    require(int(L) == L and L >= 2, f"L must be an integer >= 2, got {L!r}")


def _gen_pi(rng: np.random.Generator, max_n: int = 40) -> np.ndarray:
    N = int(rng.integers(1, int(rng.choice([min(3, max_n), min(8, max_n), max_n])) + 1))
    kind = rng.integers(0, 3)
    if kind == 0:
        return np.full(N, 1.0 / N)
    w = rng.dirichlet(np.full(N, float(rng.choice([0.2, 1.0, 10.0]))))
    return w


def _gen_pi_exact(rng: np.random.Generator, max_n: int = 8) -> list[Fraction]:
    N = int(rng.integers(1, max_n + 1))
    w = [int(v) for v in rng.integers(0, 6, N)]
    if sum(w) == 0:
        w[-1] = 1
    return [Fraction(v, sum(w)) for v in w]

