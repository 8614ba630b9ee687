"""Fast exact kernels of the oracle factorized sampler (numba): sampling and scoring a reveal process.

* :mod:`~numerics.sampling.oracle.driver`: the per-sequence reveal loop, batching and threads
  (:func:`reveal_sample`, :func:`reveal_score`).

The kernels take the language as :func:`numerics.languages.arrays.kernel_arrays` (its kind
resolved once, by type) and never branch on it at run time. The math is in
``docs/methods/sampling.md``.

They are drivers over the message floor :mod:`numerics.messages` (its steps, jumps and message
store, re-exported here).
"""

from numerics.messages.jumps import POWERS_BYTES, Powers, language_powers
from numerics.messages.steps import (
    Evidence,
    apply_evidence,
    backward_step,
    forward_step,
    normalize,
    observe,
    observed,
    token_marginal,
    window_known,
)
from numerics.messages.store import (
    Messages,
    Scratch,
    advance,
    alpha_query,
    beta_query,
    new_messages,
    new_scratch,
)
from numerics.sampling.oracle.driver import (
    RevealBatch,
    RevealMode,
    RevealScores,
    RevealVectors,
    SequenceArrays,
    SequenceScore,
    Workspace,
    new_workspace,
    reveal_sample,
    reveal_score,
    reveal_sequence,
)

__all__ = [
    "RevealScores", "RevealVectors", "SequenceScore", "reveal_sample", "reveal_score", "reveal_sequence",
    "RevealMode", "SequenceArrays", "RevealBatch", "Workspace", "new_workspace",
    "Powers", "POWERS_BYTES", "language_powers",
    "Messages", "Scratch", "new_messages", "new_scratch", "advance", "alpha_query", "beta_query",
    "Evidence", "observed", "normalize", "forward_step", "backward_step", "token_marginal", "apply_evidence",
    "observe", "window_known",
]
