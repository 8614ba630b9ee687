"""Semi-autoregressive blocks and the run arguments every sampler of this package checks the same way.

Blocks (``block_length B``, ``B | L``; ``None`` = ``L``, one block): the ``L / B`` blocks are
decoded left to right and only the masked positions of the *current* block (the first with a
masked position) compete at a step. A rule with counts splits its ``N`` steps evenly
(``N % (L/B) == 0``): each block gets ``n = N B / L`` steps revealing ``B // n`` positions each,
the first ``B % n`` steps one more (LLaDA's ``get_num_transfer_tokens``, :func:`llada_counts`).
Used by :mod:`numerics.sampling.adaptive` (``topk``, ``threshold``, ``entropy-sum``) and
:mod:`numerics.sampling.decoders`.
"""

from __future__ import annotations

import functools

import numpy as np

from numerics.sampling.denoiser import Denoiser

__all__ = ["block_of", "check_int", "check_run", "llada_counts", "steps_per_block"]


def check_int(name: str, value, low: int) -> int:
    """``value`` as an int, or a ``ValueError`` naming ``name`` when it is not an integer ``>= low``."""
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_run(denoiser, n, length, rng, batch_size, path: str, paths: tuple[str, ...]) -> int:
    """The arguments of ``Sampler.sample`` checked (a ``TypeError`` / ``ValueError`` naming the bad
    one); returns the batch size (``None``: ``n``, one batch)."""
    if not isinstance(denoiser, Denoiser):
        raise TypeError(f"{type(denoiser).__name__} does not implement the Denoiser protocol (vocab_size, __call__)")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if path not in paths:
        raise ValueError(f"unknown path {path!r}; choose one of {paths}")
    check_int("n", n, 1)
    check_int("length", length, 1)
    return check_int("batch_size", int(n) if batch_size is None else batch_size, 1)


@functools.lru_cache(maxsize=256)
def block_of(length: int, block_length: int | None) -> int:
    """``B`` (``None``: ``L``); a block length that does not divide ``L`` is a ``ValueError``.

    Cached: a point asks it of every path (sampler, exact methods, kernels); it is checked once
    per ``(L, B)`` (an error is not cached, so it is raised every time)."""
    B = int(length) if block_length is None else int(block_length)
    if B < 1 or B > length or length % B:
        raise ValueError(f"block_length {B} does not divide the length L = {length}")
    return B


@functools.lru_cache(maxsize=256)
def steps_per_block(steps: int, length: int, block_length: int | None) -> int:
    """``n = N / (L / B)``; ``N`` not divisible by the number of blocks is a ``ValueError`` (cached as
    :func:`block_of`)."""
    nb = length // block_of(length, block_length)
    if steps % nb:
        raise ValueError(f"steps N = {steps} is not divisible by the number of blocks L/B = {nb}")
    return steps // nb


def llada_counts(block_length: int, steps_per_block: int) -> np.ndarray:
    """LLaDA's per-step reveal counts in a block: ``B // n`` each, the first ``B % n`` steps one more."""
    base, extra = divmod(int(block_length), int(steps_per_block))
    counts = np.full(int(steps_per_block), base, dtype=np.int64)
    counts[:extra] += 1
    return counts
