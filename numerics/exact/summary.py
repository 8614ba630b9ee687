"""What a researcher wants to know about a language before using it: states, vocabulary, zero
fraction, the one-step sampler's SER with its interval, and the entropy rate.

It sits in the exact wing (it runs the forward pass and the exact entropy), one floor above the
languages it summarizes (:mod:`numerics.languages.presets`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from numerics.draws import inverse_cdf_rows
from numerics.estimate import Estimate, clopper_pearson
from numerics.exact.entropy import entropy_rate
from numerics.inference.forward_backward import log_q, masked_forward_backward
from numerics.languages.generators import as_generator
from numerics.languages.hmm import Language
from numerics.languages.presets import load_language, support_is_complete

__all__ = ["LanguageSummary", "language_summary", "one_step_ser"]


def _arrays(lang: Language) -> dict[str, np.ndarray]:
    """The probability arrays of the form the kernels read (an n-gram's ``order`` is no probability)."""
    return {k: v for k, v in lang.kernel_language().arrays().items() if k != "order"}


def one_step_ser(
    language: Language, length: int, samples: int, rng: np.random.Generator, *, confidence: float = 0.95
) -> tuple[Estimate, tuple[float, float]]:
    """Monte Carlo SER of the one-step sampler (``N = 1``) and its Clopper-Pearson interval.

    With one step every position is drawn independently from its unconditional marginal
    ``q(x_j)`` (the oracle's output on the all-masked sequence); a draw is an error iff
    ``log q(x) = -inf`` (exact support check by the forward pass). Returns
    ``(Estimate(k/K, sqrt(p(1-p)/K), "mc", K), (low, high))``.
    """
    if samples < 1:
        raise ValueError(f"need samples >= 1, got {samples}")
    L = int(length)
    marginals = masked_forward_backward(language.kernel_language(), np.zeros((1, L), dtype=np.int64), np.ones((1, L), dtype=bool)).marginals[0]
    V = marginals.shape[1]
    errors = 0
    batch = max(1, 2**20 // (L * V))
    for lo in range(0, samples, batch):
        n = min(batch, samples - lo)
        u = rng.random((n, L))
        x = inverse_cdf_rows(np.ascontiguousarray(np.broadcast_to(marginals, (n, L, V)).reshape(n * L, V)), u.ravel())
        errors += int(np.count_nonzero(np.isneginf(log_q(language, x.reshape(n, L)))))
    p = errors / samples
    low, high = clopper_pearson(errors, samples, confidence)
    return Estimate(p, math.sqrt(p * (1 - p) / samples), "mc", samples), (low, high)




@dataclass(frozen=True)
class LanguageSummary:
    """What a researcher wants to know about a language before using it.

    Attributes
    ----------
    name : str or None
        Preset name or file path it was loaded from.
    kind : str
        ``language.kind``: ``"ngram"``, ``"hmm"``, ``"interval"`` or ``"sparse-hmm"``.
    n_states, vocab_size : int
        Of the form the kernels read (``kernel_language()``: the interval language's minimal HMM).
    zero_fraction : float
        Fraction of zero (pruned or structural) entries over all of its probability arrays.
    zero_fraction_by_array : dict
        The same per array (``initial``, ``conditional`` or ``transition``/``emission``).
    length : int
        ``L`` of the two estimates below.
    ser_one_step : Estimate
        SER of the one-step sampler at ``L`` (Monte Carlo, binomial).
    ser_one_step_ci : (float, float)
        Clopper-Pearson interval of ``ser_one_step`` at ``confidence``.
    confidence : float
    entropy_rate : Estimate
        ``H(X_1..X_L) / L`` in nats per token (exact for n-grams and the interval language).
    perplexity : float
        ``exp(entropy_rate)``, the data's own perplexity ``TER(q)``.
    complete_support : bool or None
        :func:`support_is_complete`: True means every sequence is valid, so every sampler has SER 0.
    """

    name: str | None
    kind: str
    n_states: int
    vocab_size: int
    zero_fraction: float
    zero_fraction_by_array: dict
    length: int
    ser_one_step: Estimate
    ser_one_step_ci: tuple
    confidence: float
    entropy_rate: Estimate
    perplexity: float
    complete_support: bool | None


def language_summary(
    language: str | Path | Language,
    length: int = 64,
    samples: int = 1000,
    rng: np.random.Generator | int = 0,
    *,
    confidence: float = 0.95,
) -> LanguageSummary:
    """States, vocabulary, zero fraction, one-step SER (with CI) and entropy rate of a language.

    ``language`` is a preset name, an ``.npz`` path or a language object. ``samples`` sequences
    are used for the SER estimate and, for HMMs without a closed form, the entropy estimate.
    """
    rng = as_generator(rng)
    name = None
    if isinstance(language, (str, Path)):
        name = str(language)
        language = load_language(language)
    arrays = _arrays(language)
    zeros = {k: float(np.mean(v == 0.0)) for k, v in arrays.items()}
    total = sum(v.size for v in arrays.values())
    zero_fraction = sum(float(np.count_nonzero(v == 0.0)) for v in arrays.values()) / total
    ser, ci = one_step_ser(language, length, samples, rng, confidence=confidence)
    rate = entropy_rate(language, length, samples=max(samples, 2), rng=rng)  # exact where the object has a closed form
    return LanguageSummary(
        name,
        language.kind,
        language.kernel_language().n_states,
        language.vocab_size,
        zero_fraction,
        zeros,
        int(length),
        ser,
        ci,
        confidence,
        rate,
        math.exp(rate.value),
        support_is_complete(language),
    )
