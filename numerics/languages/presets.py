"""The paper's random languages (Table 1, Appendix E.1), the interval language, and a preset registry.

Generator (MATH.md section 2; the paper's Algorithms 1-2 are not recoverable, this is our
documented definition): every probability row (initial, transition, and for the HMM also
emission) is ``softmax(temperature * g)`` with ``g`` i.i.d. standard normal drawn from
``numpy.random.default_rng(seed)``; entries below ``threshold`` are set to 0 and the row is
renormalized (:func:`prune_rows`, which always keeps each row's largest entry, so no row is
ever emptied). The normals are drawn in a fixed order that does not depend on the threshold
(n-gram: ``initial`` then ``conditional`` row by row; HMM: ``initial``, ``transition``,
``emission``), so a pruned preset is exactly its unpruned twin with small entries removed.

For an n-gram the ``initial`` row is the law of the first state, a window of ``n-1`` tokens
(pre-history and ``x_1``; see :class:`~numerics.languages.hmm.NGram`), one row of ``V^(n-1)`` entries.

Presets (:data:`PRESETS`; seeds in :data:`SEEDS`):

============== ===================================================== =========
name           language                                              threshold
============== ===================================================== =========
2gram          2-gram, V = 8, temperature 2                           0 (TER)
3gram          3-gram, V = 8, temperature 2                           0
4gram          4-gram, V = 8, temperature 2                           0
hmm            HMM, 32 states, V = 8, temperature 3.2                 0
2gram-pruned   as 2gram                                               0.008 (SER)
3gram-pruned   as 3gram                                               0.008
4gram-pruned   as 4gram                                               0.005
hmm-pruned     as hmm                                                 0.05 (*)
hmm-pruned-paper  as hmm, the paper's threshold (complete support)    0.003
interval       Theorem 4.4 language, l = 5, V = 16 (minimal HMM, 544 states)
interval-l{l}  the same for interval length l (dense while it has <= 4096 states: l <= 5)
============== ===================================================== =========

(*) A finding about our generator (docs/findings.md): with the paper's threshold 0.003 the
pruned 32-state HMM still has *complete support* -- from every reachable set of hidden states
every token can be emitted next (subset construction, :func:`support_is_complete`), so every
sequence of every length is valid and the SER of every sampler is exactly 0 (96 of 100 seeds
behave so). The SER preset ``hmm-pruned`` therefore uses threshold 0.05, the smallest of
{0.003, 0.03, 0.05, 0.1} whose one-step SER at L = 64 is near 1 like the n-gram presets
(0.98, Clopper-Pearson [0.966, 0.992] from 500 samples); ``hmm-pruned-paper`` keeps 0.003.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

from numerics.estimate import Estimate, clopper_pearson
from numerics.exact.entropy import entropy_rate, language_log_likelihood
from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.hmm import HMM, Language, NGram, load_language_file
from numerics.languages.interval import IntervalLanguage

__all__ = [
    "softmax_rows",
    "prune_rows",
    "random_ngram",
    "random_hmm",
    "Preset",
    "PRESETS",
    "SEEDS",
    "HMM_SER_THRESHOLD",
    "preset_names",
    "get_preset",
    "load_language",
    "LanguageSummary",
    "language_summary",
    "one_step_ser",
    "support_is_complete",
]

#: Fixed seeds of the Table 1 presets: the arXiv id 2502.09622 followed by the order (32: the HMM's
#: states). Pruned and unpruned twins share the seed, hence the same normals.
SEEDS = {"2gram": 2502_0962_2, "3gram": 2502_0962_3, "4gram": 2502_0962_4, "hmm": 2502_0962_32}

#: Table 1 parameters: order/states, vocabulary, temperature, pruning threshold of the SER variant.
TABLE1 = {
    "2gram": dict(order=2, vocab=8, temperature=2.0, threshold=0.008),
    "3gram": dict(order=3, vocab=8, temperature=2.0, threshold=0.008),
    "4gram": dict(order=4, vocab=8, temperature=2.0, threshold=0.005),
    "hmm": dict(states=32, vocab=8, temperature=3.2, threshold=0.003),
}

#: Threshold of the ``hmm-pruned`` SER preset: 0.003 (Table 1) leaves the support complete, see above.
HMM_SER_THRESHOLD = 0.05

INTERVAL_DEFAULT_L = 5  # Theorem 4.4 uses l = 5 (vocabulary 16)


def softmax_rows(g: np.ndarray, temperature: float) -> np.ndarray:
    """Row-wise ``softmax(temperature * g)`` in float64 (max-shifted; no entry underflows to a silent 0 for |g| < 30)."""
    z = temperature * np.asarray(g, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def prune_rows(p: np.ndarray, threshold: float) -> np.ndarray:
    """Set entries ``< threshold`` to 0 and renormalize each row; each row's argmax is always kept.

    ``threshold = 0`` returns the rows unchanged (renormalized).
    """
    if not threshold >= 0.0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    p = np.array(p, dtype=np.float64)
    keep = p >= threshold
    np.put_along_axis(keep, np.argmax(p, axis=-1)[..., None], True, axis=-1)
    p[~keep] = 0.0
    return p / p.sum(axis=-1, keepdims=True)


def _rows(rng: np.random.Generator, shape: tuple, temperature: float, threshold: float) -> np.ndarray:
    return prune_rows(softmax_rows(rng.standard_normal(shape), temperature), threshold)


def _rng(seed: Union[int, np.random.Generator]) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def random_ngram(
    order: int = 2,
    vocab: int = 8,
    temperature: float = 2.0,
    threshold: float = 0.0,
    seed: Union[int, np.random.Generator] = 0,
) -> NGram:
    """A random n-gram: ``initial`` (``V^(n-1)`` windows) and each ``conditional`` row ``softmax(temperature g)``, pruned.

    Normals drawn in the order ``initial`` (``V^(n-1)``), ``conditional`` (``(V^(n-1), V)``).
    """
    if int(order) != order or order < 2 or int(vocab) != vocab or vocab < 1:
        raise ValueError(f"need integer order >= 2 and vocab >= 1, got order={order!r}, vocab={vocab!r}")
    rng = _rng(seed)
    S = int(vocab) ** (int(order) - 1)
    initial = _rows(rng, (S,), temperature, threshold)
    conditional = _rows(rng, (S, int(vocab)), temperature, threshold)
    return NGram(int(order), initial, conditional)


def random_hmm(
    states: int = 32,
    vocab: int = 8,
    temperature: float = 3.2,
    threshold: float = 0.0,
    seed: Union[int, np.random.Generator] = 0,
) -> HMM:
    """A random HMM: every row of ``initial``, ``transition``, ``emission`` is ``softmax(temperature g)``, pruned.

    Normals drawn in the order ``initial`` (``S``), ``transition`` (``(S, S)``), ``emission`` (``(S, V)``).
    """
    if int(states) != states or states < 1 or int(vocab) != vocab or vocab < 1:
        raise ValueError(f"need integer states >= 1 and vocab >= 1, got states={states!r}, vocab={vocab!r}")
    rng = _rng(seed)
    S, V = int(states), int(vocab)
    initial = _rows(rng, (S,), temperature, threshold)
    transition = _rows(rng, (S, S), temperature, threshold)
    emission = _rows(rng, (S, V), temperature, threshold)
    return HMM(initial, transition, emission)


@dataclass(frozen=True)
class Preset:
    """A named language of the registry.

    Attributes
    ----------
    name : str
    description : str
    build : callable
        ``build() -> HMM | NGram`` (deterministic).
    seed : int or None
        The generator seed (None for the deterministic interval language).
    params : dict
        The generator's parameters.
    exact_entropy : callable or None
        ``exact_entropy(L) -> H(X_1..X_L)`` in nats when known in closed form for a dense-HMM preset.
    """

    name: str
    description: str
    build: Callable[[], Language] = field(repr=False)
    seed: Optional[int] = None
    params: dict = field(default_factory=dict)
    exact_entropy: Optional[Callable[[int], float]] = field(default=None, repr=False)


def _table1_preset(base: str, pruned: bool, threshold: Optional[float] = None, suffix: str = "-pruned") -> Preset:
    params = dict(TABLE1[base])
    if not pruned:
        params["threshold"] = 0.0
    elif threshold is not None:
        params["threshold"] = threshold
    seed = SEEDS[base]
    name = f"{base}{suffix}" if pruned else base
    if base == "hmm":
        desc = f"random HMM, {params['states']} states, V = {params['vocab']}, temperature {params['temperature']}"
        build = functools.partial(random_hmm, seed=seed, **params)
    else:
        desc = f"random {params['order']}-gram, V = {params['vocab']}, temperature {params['temperature']}"
        build = functools.partial(random_ngram, seed=seed, **params)
    desc += f", threshold {params['threshold']} ({'SER' if pruned else 'TER'})"
    return Preset(name, desc, build, seed, params)


def _interval_preset(l: int, name: str) -> Preset:
    lang = IntervalLanguage(l)
    return Preset(
        name,
        f"Theorem 4.4 interval language, l = {l}, V = {lang.vocab_size} (minimal HMM, {lang.n_states()} states)",
        lambda: lang.minimal_hmm().to_hmm(),
        None,
        {"l": l, "vocab": lang.vocab_size},
        lang.sequence_entropy,
    )


PRESETS: dict[str, Preset] = {
    **{b: _table1_preset(b, False) for b in TABLE1},
    **{f"{b}-pruned": _table1_preset(b, True) for b in TABLE1 if b != "hmm"},
    "hmm-pruned": _table1_preset("hmm", True, HMM_SER_THRESHOLD),
    "hmm-pruned-paper": _table1_preset("hmm", True, suffix="-pruned-paper"),
    "interval": _interval_preset(INTERVAL_DEFAULT_L, "interval"),
}

_INTERVAL_RE = re.compile(r"interval-l(\d+)")


def preset_names() -> list[str]:
    """The registered names (``interval-l{l}`` is accepted too for any ``l >= 2``)."""
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    """The :class:`Preset` called ``name``; ``ValueError`` listing the presets for an unknown name."""
    if name in PRESETS:
        return PRESETS[name]
    m = _INTERVAL_RE.fullmatch(name)
    if m:
        return _interval_preset(int(m.group(1)), name)
    raise ValueError(f"unknown language preset {name!r}; presets: {', '.join(preset_names())}, interval-l<l>")


@functools.lru_cache(maxsize=32)
def _build(name: str) -> Language:
    return get_preset(name).build()


def load_language(spec: Union[str, Path]) -> Language:
    """A language from a preset name (see :data:`PRESETS`) or a path to an ``.npz`` language file.

    Raises ``ValueError`` naming the presets when ``spec`` is neither a preset nor an existing file.
    """
    text = str(spec)
    if isinstance(spec, str) and (text in PRESETS or _INTERVAL_RE.fullmatch(text)):
        return _build(text)
    path = Path(spec)
    if path.is_file():
        return load_language_file(path)
    if path.is_dir():
        raise ValueError(f"{text!r} is a directory, not a language .npz file")
    raise ValueError(
        f"{text!r} is neither a language preset nor an existing .npz file; "
        f"presets: {', '.join(preset_names())}, interval-l<l>"
    )


# ----- summaries ---------------------------------------------------------------------------------


def _arrays(lang: Language) -> dict[str, np.ndarray]:
    if isinstance(lang, NGram):
        return {"initial": lang.initial, "conditional": lang.conditional}
    return {"initial": lang.initial, "transition": lang.transition, "emission": lang.emission}


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
    post = masked_forward_backward(language, np.zeros((1, L), dtype=np.int64), np.ones((1, L), dtype=bool))
    cum = np.cumsum(post.marginals[0], axis=1)  # (L, V) float64
    errors = 0
    batch = max(1, 2**20 // (L * cum.shape[1]))
    for lo in range(0, samples, batch):
        n = min(batch, samples - lo)
        u = rng.random((n, L)) * cum[:, -1]
        x = (cum[None, :, :] <= u[:, :, None]).sum(axis=2)  # inverse CDF per position, (n, L)
        errors += int(np.count_nonzero(np.isneginf(language_log_likelihood(language, x))))
    p = errors / samples
    low, high = clopper_pearson(errors, samples, confidence)
    return Estimate(p, math.sqrt(p * (1 - p) / samples), "mc", samples), (low, high)


def support_is_complete(language: Language, *, max_sets: int = 100_000) -> Optional[bool]:
    """Exactly: is every token sequence, of every length, in the support ``L_q``?

    Subset construction on the support graph: the set ``R_j`` of hidden states possible after
    ``x_1..x_j`` is ``{t : exists s in R_{j-1}, A[s,t] > 0, B[t,x_j] > 0}``; the support is complete
    iff no reachable set, for any next token, becomes empty (``R_1`` from ``initial``). When it is
    complete, ``SER(p) = 0`` for *every* sampler ``p``, so the language is useless for SER
    experiments. Returns None when more than ``max_sets`` sets are reachable (undecided).
    """
    hmm = language.to_hmm()
    A, E = hmm.transition > 0, hmm.emission > 0
    first = hmm.initial > 0
    V = hmm.vocab_size
    frontier = [frozenset(np.flatnonzero(first & E[:, v]).tolist()) for v in range(V)]
    seen: set = set()
    while frontier:
        nxt = []
        for R in frontier:
            if not R:
                return False
            if R in seen:
                continue
            seen.add(R)
            if len(seen) > max_sets:
                return None
            reach = A[sorted(R)].any(axis=0)
            nxt.extend(frozenset(np.flatnonzero(reach & E[:, v]).tolist()) for v in range(V))
        frontier = nxt
    return True


@dataclass(frozen=True)
class LanguageSummary:
    """What a researcher wants to know about a language before using it.

    Attributes
    ----------
    name : str or None
        Preset name or file path it was loaded from.
    kind : str
        ``"ngram"`` or ``"hmm"``.
    n_states, vocab_size : int
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

    name: Optional[str]
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
    complete_support: Optional[bool]


def language_summary(
    language: Union[str, Path, Language],
    length: int = 64,
    samples: int = 1000,
    rng: Union[np.random.Generator, int] = 0,
    *,
    confidence: float = 0.95,
) -> LanguageSummary:
    """States, vocabulary, zero fraction, one-step SER (with CI) and entropy rate of a language.

    ``language`` is a preset name, an ``.npz`` path or a language object. ``samples`` sequences
    are used for the SER estimate and, for HMMs without a closed form, the entropy estimate.
    """
    rng = _rng(rng)
    name = None
    exact_entropy = None
    if isinstance(language, (str, Path)):
        name = str(language)
        if isinstance(language, str) and (name in PRESETS or _INTERVAL_RE.fullmatch(name)):
            exact_entropy = get_preset(name).exact_entropy
        language = load_language(language)
    arrays = _arrays(language)
    zeros = {k: float(np.mean(v == 0.0)) for k, v in arrays.items()}
    total = sum(v.size for v in arrays.values())
    zero_fraction = sum(float(np.count_nonzero(v == 0.0)) for v in arrays.values()) / total
    ser, ci = one_step_ser(language, length, samples, rng, confidence=confidence)
    if exact_entropy is not None:
        rate = Estimate(exact_entropy(length) / length, 0.0, "closed-form")
    else:
        rate = entropy_rate(language, length, samples=max(samples, 2), rng=rng)
    return LanguageSummary(
        name,
        "ngram" if isinstance(language, NGram) else "hmm",
        language.n_states,
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
