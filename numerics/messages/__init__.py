"""The message-passing floor under every kernel family (numba): forward and backward messages of a language.

Every exact kernel of the package (the oracle reveal kernels in :mod:`numerics.sampling.oracle`, the
adaptive and decoder kernels, :mod:`numerics.inference`) reads a language through the same pieces:

* :mod:`~numerics.messages.layouts`: the arrays of each language kind (one NamedTuple per kind);
* :mod:`~numerics.messages.dispatch`: :func:`~numerics.messages.dispatch.by_kind`, the one function
  that chooses a step's version by the kind, at compile time;
* :mod:`~numerics.messages.steps`: the single-position forward and backward steps, the transition
  products they are made of, the token marginal, evidence and normalization, once per kind;
* :mod:`~numerics.messages.powers`: the precomputed powers of the transition matrix, one cache and one
  memory cap for them;
* :mod:`~numerics.messages.jumps`: crossing a run of masked positions by one matrix-power product;
* :mod:`~numerics.messages.store`: the per-position message store and its queries.

The math is in ``docs/methods/inference.md`` and ``docs/methods/sampling.md``. Numba's on-disk cache
does not track functions called across files: after editing a module here, delete
``NUMBA_CACHE_DIR`` (or the ``__pycache__`` entries) so the callers recompile.
"""

from numerics.messages.dispatch import by_kind, by_path
from numerics.messages.layouts import ChainArrays, IntervalArrays, PathArrays

__all__ = ["by_kind", "by_path", "ChainArrays", "IntervalArrays", "PathArrays"]
