"""Entropy of a language's sequences: ``H(X_1..X_L)``, the entropy rate and the data's perplexity.

``TER(q) = exp(H(X_1..X_L) / L)`` is the perplexity of the data under itself (``docs/methods/exact.md``:
``log TER(p) - log TER(q) = KL(q || p) / L``), so every TER result needs ``H``.

* n-gram languages (:class:`~numerics.languages.hmm.NGram`): exact, by the chain rule
  ``H(X_1..X_L) = H(X_1..X_m) + sum_{j=n}^{L} H(X_j | window at j-1)``, ``m = min(L, n-1)``:
  the law of the first window by a small forward sum over the hidden pre-history, then the
  conditional entropies ``h(s) = H(conditional[s])`` weighted by the exact state marginals.
* the interval language (:class:`~numerics.languages.interval.IntervalLanguage`): exact, uniform on its
  support (``n_free_bits(L) log 2``).
* any other HMM: Monte Carlo ``E_{x~q}[-log q(x)]`` with ``log q`` exact (forward pass), returned
  as an :class:`~numerics.sampling.denoiser.Estimate` with its standard error and sample count.

All entropies are in nats.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import entr

from numerics.estimate import Estimate
from numerics.inference.forward_backward import log_q
from numerics.languages.hmm import Language, NGram

__all__ = [
    "ngram_sequence_entropy",
    "sequence_entropy",
    "sequence_entropy_mc",
    "entropy_rate",
    "data_perplexity",
]

AnyLanguage = Language  # every kind (numerics.languages.hmm.Language)


def _check_length(length: int) -> int:
    if int(length) != length or length < 1:
        raise ValueError(f"length must be a positive integer, got {length!r}")
    return int(length)


def ngram_sequence_entropy(ngram: NGram, length: int) -> float:
    """Exact ``H(X_1..X_L)`` (nats) of an n-gram language by the chain rule.

    With ``p_j`` the law of the state (window) at position ``j`` (``p_1 = initial``,
    ``p_{j+1}[succ(s, v)] += p_j[s] conditional[s, v]``) and ``m = min(L, n-1)``:
    ``H = H(law of s_m mod V^m) + sum_{j=n}^{L} sum_s p_{j-1}[s] H(conditional[s])``.
    The first term is the entropy of ``(X_1..X_m)``: the last ``m`` tokens of the window at ``m``
    (its first ``n-1-m`` tokens are the unobserved pre-history, summed out). From position ``n-1``
    on the window is a function of the visible tokens, so ``H(X_j | X_<j) = H(X_j | s_{j-1})``.
    Cost ``O(L V^n)``.
    """
    if getattr(ngram, "kind", None) != "ngram":
        raise TypeError(f"ngram_sequence_entropy needs an NGram, got {type(ngram).__name__}")
    L = _check_length(length)
    n, V, S = ngram.order, ngram.vocab_size, ngram.n_states
    succ = ngram.successors()
    cond = ngram.conditional
    h = entr(cond).sum(axis=1)  # (S,) H(conditional[s]); entr(0) = 0 exactly

    def step(p: np.ndarray) -> np.ndarray:
        return np.bincount(succ.ravel(), weights=(p[:, None] * cond).ravel(), minlength=S)

    m = min(L, n - 1)
    p = ngram.initial
    for _ in range(m - 1):
        p = step(p)
    head = np.bincount(np.arange(S) % V**m, weights=p, minlength=V**m)
    H = float(entr(head).sum())
    for _ in range(n, L + 1):  # position j = n..L: p is the law of s_{j-1}
        H += float(p @ h)
        p = step(p)
    return H


def sequence_entropy_mc(
    language: AnyLanguage,
    length: int,
    samples: int,
    rng: np.random.Generator,
    *,
    batch_size: int = 1024,
) -> Estimate:
    """Monte Carlo ``H(X_1..X_L) = E_{x~q}[-log q(x)]`` with ``log q`` exact.

    Returns ``Estimate(value=mean, stderr=sd/sqrt(K), method="mc", samples=K)`` (nats).
    """
    L = _check_length(length)
    if samples < 2:
        raise ValueError(f"need samples >= 2 for a standard error, got {samples}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    nll = np.empty(samples)
    for lo in range(0, samples, batch_size):
        hi = min(samples, lo + batch_size)
        x = language.sample(hi - lo, L, rng)
        nll[lo:hi] = -log_q(language, x)
    if not np.all(np.isfinite(nll)):
        raise RuntimeError("a sequence sampled from the language has probability 0 under it (sampler/forward mismatch)")
    return Estimate(float(nll.mean()), float(nll.std(ddof=1) / math.sqrt(samples)), "mc", int(samples))


#: ``Language.kind -> (H(language, L), method)``: the kinds with an exact sequence entropy.
_EXACT_ENTROPY = {
    "ngram": (lambda lang, L: ngram_sequence_entropy(lang, L), "ngram-chain-rule"),
    "interval": (lambda lang, L: lang.sequence_entropy(L), "closed-form"),
}


def sequence_entropy(
    language: AnyLanguage,
    length: int,
    *,
    samples: int = 4096,
    rng: np.random.Generator | int | None = None,
) -> Estimate:
    """``H(X_1..X_L)`` in nats: exact for n-grams and the interval language, else Monte Carlo.

    ``rng`` (a Generator or a seed) and ``samples`` are used only by the Monte Carlo path, which
    requires them (``ValueError`` without ``rng``).
    """
    L = _check_length(length)
    exact = _EXACT_ENTROPY.get(getattr(language, "kind", None))
    if exact is not None:
        formula, method = exact
        return Estimate(formula(language, L), 0.0, method)
    if rng is None:
        raise ValueError(
            f"no exact entropy for a {type(language).__name__}; pass rng (a Generator or seed) for Monte Carlo"
        )
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    return sequence_entropy_mc(language, L, samples, rng)


def entropy_rate(language: AnyLanguage, length: int, **kwargs) -> Estimate:
    """``H(X_1..X_L) / L``, nats per token (see :func:`sequence_entropy` for ``kwargs``)."""
    L = _check_length(length)
    H = sequence_entropy(language, L, **kwargs)
    return Estimate(H.value / L, H.stderr / L, H.method, H.samples)


def data_perplexity(language: AnyLanguage, length: int, **kwargs) -> Estimate:
    """``TER(q) = exp(H(X_1..X_L) / L)``; a Monte Carlo stderr is propagated by the delta method."""
    rate = entropy_rate(language, length, **kwargs)
    value = math.exp(rate.value)
    return Estimate(value, value * rate.stderr, rate.method, rate.samples)
