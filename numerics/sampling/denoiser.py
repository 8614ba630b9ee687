"""The one interface between samplers and denoisers.

A *denoiser* maps partially masked sequences to per-position token laws:
``denoiser(tokens, mask) -> probs`` with ``tokens`` ``(B, L)`` int64, ``mask`` ``(B, L)`` bool
(True = masked) and ``probs`` ``(B, L, V)`` float64, ``probs[b, j] = p(x_j = . | x_obs)``.
The oracle (:class:`OracleDenoiser`) returns the exact posterior of the language; a trained
network (``neural``) returns its predictions. Samplers take any denoiser, so learned and oracle
models run through exactly the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.hmm import Language

__all__ = ["Denoiser", "OracleDenoiser"]


@runtime_checkable
class Denoiser(Protocol):
    """Anything with ``vocab_size`` and ``__call__(tokens, mask) -> (B, L, V) float64 probabilities``."""

    vocab_size: int

    def __call__(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class OracleDenoiser:
    """The exact posterior marginals ``q(x_j = v | x_obs)`` of ``language`` (masked forward-backward).

    ``language`` is any :data:`~numerics.languages.hmm.Language`; the denoiser keeps the form the
    kernels read (``language.kernel_language()``: the interval language's minimal HMM).

    Observed tokens of probability 0 leave the posterior undefined: ``strict=True`` raises,
    ``strict=False`` returns NaN rows for those sequences (the samplers' "undefined" signal, see
    :mod:`numerics.sampling.samplers`; a factorized sampler on a pruned language reaches such states).
    """

    language: Language
    backend: str = "auto"
    strict: bool = True  # False: impossible observations give NaN rows instead of an error

    def __post_init__(self) -> None:  # the forward-backward reads the kernels' form (HMM or NGram)
        if not hasattr(self.language, "kernel_language"):
            raise TypeError(f"OracleDenoiser needs a language, got {type(self.language).__name__}")
        object.__setattr__(self, "language", self.language.kernel_language())

    @property
    def vocab_size(self) -> int:
        return self.language.vocab_size

    def __call__(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        post = masked_forward_backward(self.language, tokens, mask, backend=self.backend)
        if self.strict and not np.all(np.isfinite(post.loglik)):
            b = int(np.argwhere(~np.isfinite(post.loglik))[0][0])
            raise ValueError(
                f"sequence {b} of the batch has observed tokens of probability 0 under the language; "
                "the oracle posterior is undefined there"
            )
        return post.marginals
