"""Seeded random languages: the one generator of the engine, its presets, tests and benchmarks.

Definition (``docs/methods/languages.md``): every probability row is ``softmax(temperature * g)``
with ``g`` i.i.d. standard normal from ``numpy.random.default_rng(seed)`` (or a given
``Generator``); then, optionally,

* ``zero_fraction > 0``: each entry becomes a structural zero with that probability (one uniform
  per entry, drawn right after the array's normals);
* ``threshold > 0``: entries below ``threshold`` are set to 0 (the paper's pruning);

and the row is renormalized. A row never loses its largest entry, so no row is ever emptied.
Arrays are drawn in a fixed order, n-gram: ``initial`` then ``conditional``; HMM: ``initial``,
``transition``, ``emission``. The threshold takes no draws, so a pruned language is exactly its
unpruned twin with the small entries removed (the Table 1 presets of
:mod:`numerics.languages.presets` rely on this).
"""

from __future__ import annotations

import numpy as np

from numerics.languages.hmm import HMM, NGram

__all__ = ["as_generator", "softmax_rows", "prune_rows", "random_rows", "random_ngram", "random_sparse_ngram", "random_hmm"]

Seed = int | np.random.Generator


def as_generator(seed: Seed) -> np.random.Generator:
    """``seed`` itself when it is a ``numpy.random.Generator``, else ``numpy.random.default_rng(seed)``."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def softmax_rows(g: np.ndarray, temperature: float) -> np.ndarray:
    """Row-wise ``softmax(temperature * g)`` in float64 (max-shifted; no entry underflows to a silent 0 for |g| < 30)."""
    z = temperature * np.asarray(g, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _zero_and_renormalize(p: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """Set the entries where ``drop`` holds to 0, except each row's argmax, and renormalize."""
    keep = ~drop
    np.put_along_axis(keep, np.argmax(p, axis=-1)[..., None], True, axis=-1)
    p = np.where(keep, p, 0.0)
    return p / p.sum(axis=-1, keepdims=True)


def prune_rows(p: np.ndarray, threshold: float) -> np.ndarray:
    """Set entries ``< threshold`` to 0 and renormalize each row; each row's argmax is always kept.

    ``threshold = 0`` returns the rows unchanged (renormalized).
    """
    if not threshold >= 0.0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    p = np.asarray(p, dtype=np.float64)
    return _zero_and_renormalize(p, p < threshold)


def random_rows(
    rng: np.random.Generator, shape: tuple, temperature: float = 1.0, threshold: float = 0.0, zero_fraction: float = 0.0
) -> np.ndarray:
    """Random probability rows of ``shape`` (the last axis sums to 1) by the module's definition.

    Draws ``rng.standard_normal(shape)``, then ``rng.random(shape)`` only if ``zero_fraction > 0``.
    """
    if not 0.0 <= zero_fraction < 1.0:
        raise ValueError(f"zero_fraction must be in [0, 1), got {zero_fraction!r}")
    p = softmax_rows(rng.standard_normal(shape), temperature)
    if zero_fraction > 0.0:
        p = _zero_and_renormalize(p, rng.random(shape) < zero_fraction)
    return prune_rows(p, threshold)


def _check_order_vocab(order: int, vocab: int) -> None:
    if int(order) != order or order < 2 or int(vocab) != vocab or vocab < 1:
        raise ValueError(f"need integer order >= 2 and vocab >= 1, got order={order!r}, vocab={vocab!r}")


def random_ngram(
    order: int = 2,
    vocab: int = 8,
    temperature: float = 2.0,
    threshold: float = 0.0,
    seed: Seed = 0,
    *,
    zero_fraction: float = 0.0,
) -> NGram:
    """A random n-gram (module docstring): ``initial`` over the ``V^(n-1)`` windows, then ``conditional`` ``(V^(n-1), V)``."""
    _check_order_vocab(order, vocab)
    rng = as_generator(seed)
    S = int(vocab) ** (int(order) - 1)
    initial = random_rows(rng, (S,), temperature, threshold, zero_fraction)
    conditional = random_rows(rng, (S, int(vocab)), temperature, threshold, zero_fraction)
    return NGram(int(order), initial, conditional)


def random_sparse_ngram(
    order: int = 2,
    vocab: int = 4096,
    nonzeros: int = 50_000,
    zipf: float = 1.1,
    temperature: float = 1.0,
    seed: Seed = 0,
) -> NGram:
    """A random mostly-zero n-gram shaped like a word-level model fitted to text (Zipf-like rows).

    Token popularity ``w_v ∝ (v + 1)^(-zipf)``. Window ``s`` (newest token ``s % V``) gets
    ``k_s = clip(round(nonzeros * w_{s % V} / sum_s' w_{s' % V}), 1, V)`` successors (frequent tokens
    have many, rare ones one or two), chosen without replacement with probabilities ``∝ w``
    (Gumbel top-``k``: the ``k_s`` largest ``log w_v + G_{s,v}``); their probabilities are
    ``∝ w_v exp(temperature g)``. ``initial`` is ``∝ w_{s % V}`` times ``exp(temperature g)``, on
    every window. Draws in order: the Gumbels ``(S, V)``, the normals ``(S, V)``, the normals ``(S,)``.
    The number of non-zeros is about ``nonzeros`` (rounding and the clip move it).
    """
    _check_order_vocab(order, vocab)
    if int(nonzeros) != nonzeros or nonzeros < 1 or not zipf >= 0.0:
        raise ValueError(f"need integer nonzeros >= 1 and zipf >= 0, got nonzeros={nonzeros!r}, zipf={zipf!r}")
    rng = as_generator(seed)
    V = int(vocab)
    S = V ** (int(order) - 1)
    logw = -float(zipf) * np.log(np.arange(1, V + 1, dtype=np.float64))
    row_w = np.exp(logw[np.arange(S) % V])
    k = np.clip(np.rint(int(nonzeros) * row_w / row_w.sum()), 1, V).astype(np.int64)
    keys = logw[None, :] + rng.gumbel(size=(S, V))
    kth = np.take_along_axis(np.sort(keys, axis=1), (V - k)[:, None], axis=1)  # the k_s-th largest key of row s
    g = rng.standard_normal((S, V))
    conditional = np.where(keys >= kth, np.exp(logw[None, :] + temperature * g), 0.0)
    conditional /= conditional.sum(axis=1, keepdims=True)
    initial = row_w * np.exp(temperature * rng.standard_normal(S))
    return NGram(int(order), initial / initial.sum(), conditional)


def random_hmm(
    states: int = 32,
    vocab: int = 8,
    temperature: float = 3.2,
    threshold: float = 0.0,
    seed: Seed = 0,
    *,
    zero_fraction: float = 0.0,
) -> HMM:
    """A random HMM (module docstring): ``initial`` ``(S,)``, ``transition`` ``(S, S)``, ``emission`` ``(S, V)``."""
    if int(states) != states or states < 1 or int(vocab) != vocab or vocab < 1:
        raise ValueError(f"need integer states >= 1 and vocab >= 1, got states={states!r}, vocab={vocab!r}")
    rng = as_generator(seed)
    S, V = int(states), int(vocab)
    initial = random_rows(rng, (S,), temperature, threshold, zero_fraction)
    transition = random_rows(rng, (S, S), temperature, threshold, zero_fraction)
    emission = random_rows(rng, (S, V), temperature, threshold, zero_fraction)
    return HMM(initial, transition, emission)
