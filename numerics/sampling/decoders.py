"""The decoders practitioners run: LLaDA, Fast-dLLM, EB-Sampler and ReMDM, for any denoiser.

Each is a :class:`~numerics.sampling.samplers.Sampler` (``sample(denoiser, n, length, rng, *,
batch_size, path) -> SampleResult``), so the oracle and a trained network run through the same
code. ``docs/methods/decoders.md`` states every rule with its reference; in short:

* **Blocks** (``block_length B``, ``B | L``, default ``B = L``): the ``L / B`` blocks are decoded
  left to right; only masked positions of the *current* block (the first with a masked position)
  compete at a step. ``llada`` splits its ``N`` steps evenly (``N % (L/B) == 0``): each block gets
  ``n = N B / L`` steps revealing ``B // n`` positions each, the first ``B % n`` steps one more
  (LLaDA's ``get_num_transfer_tokens``; a step with count 0 still costs its call).
* **Draws**: every candidate position gets a drawn value ``x0_j`` from the tempered law
  ``r_j ∝ p_j^(1/T)`` (``T = 0``: the argmax, lowest token among equal grid values), and a score.
* ``llada``: scores ``low-confidence`` = ``p_j(x0_j)`` (untempered) or ``random`` = a fresh
  uniform; the ``k`` highest are revealed with their draws, the rest discarded.
* ``fast-dllm``: ``low-confidence`` scores sorted descending ``c_(1) >= c_(2) >= ...``;
  ``threshold tau``: the first and every further ``c_(j) >= tau``; ``factor f``: the largest
  prefix ``n`` with ``c_(j) >= 1 - f / (j + 1)`` for every ``2 <= j <= n`` (at least one). The
  block ends when it has no masked position, so the calls are random.
* ``eb`` (EB-Sampler): candidates sorted by entropy ``H(p_j)`` ascending; the largest prefix
  whose entropy sum minus its largest entropy is ``<= gamma`` (sorted: ``sum_{i<n} H_(i) <= gamma``),
  values drawn at temperature ``T``. Today's ``entropy-sum`` rule is the same without ``- max``.
* ``remdm`` (ReMDM, Wang et al. arXiv 2503.00307, MDLM posterior with remasking): step ``i``
  goes from ``alpha_t = u_{i-1}`` to ``alpha_s = u_i`` of a schedule; a revealed token is
  remasked with probability ``sigma_i``, a masked position revealed with probability
  ``(alpha_s - (1 - sigma_i) alpha_t) / (1 - alpha_t)``, its value drawn from ``r_j``.
  ``sigma_max = min(1, (1 - alpha_s) / alpha_t)`` (``1`` when ``alpha_t = 0``); variant ``cap``:
  ``sigma = min(eta, sigma_max)``; ``rescale``: ``sigma = eta * sigma_max``. ``eta = 0`` is MDLM's
  ancestral sampler (the random-order sampler with i.i.d. reveal steps ``pi_i = u_i - u_{i-1}``).
  ``loop``: ``alpha`` held at ``alpha_on`` on ``t in [t_off, t_on]``, remasking there only
  (:class:`Remdm`). ReMDM's ``conf`` variant is not implemented (``docs/methods/decoders.md``).

Where the code is: :mod:`numerics.sampling.block_decoder` (:class:`BlockDecoder`, ``llada``,
``fast-dllm``, ``eb``), :mod:`numerics.sampling.stream` (the random stream),
:mod:`numerics.sampling.blocks` (blocks, counts, argument checks), this module (ReMDM and
:func:`make_decoder`, re-exporting the rest) and :mod:`numerics.sampling._decoder_numba` (the
compiled oracle paths: ``path="auto"`` runs them for the oracle of an n-gram, HMM or the interval
language, with the same samples as the generic path).

Comparisons are made on the grid of :mod:`numerics.sampling.adaptive` (``on_grid``: scores,
entropies, thresholds and argmax ties), so marginals that differ by round-off give the same
decisions in every path. **Ties** among equal grid scores go to the seeded priority
``tie_priority(L, tie_seed)`` (a permutation of positions drawn by
``numpy.random.default_rng(tie_seed)``; ``tie_seed=None``: left to right). ``random`` scores are
compared as raw float64 uniforms.

**Random stream** (counter-based, :func:`stream_uniform`): sequence ``b`` gets a 64-bit key
``keys = rng.integers(0, 2**64, size=n, dtype=uint64)`` drawn up front (one call on ``rng``
for the whole run), and every uniform the sampler uses is
``u(key, call, position, stream) = top 53 bits of splitmix64(splitmix64(splitmix64(key) ^ call)
^ (4 position + stream)) / 2^53`` with streams ``DRAW = 0`` (the inverse CDF of ``r_j``),
``SCORE = 1`` (``random`` scores), ``REMASK = 2`` and ``UNMASK = 3`` (ReMDM's coins), ``call``
the 1-based network call of that sequence. So the draws do not depend on batching, on which
positions are computed, or on the order of evaluation: a compiled path can reproduce this
generic path sample by sample with O(1) memory.

Calls: ``SampleResult.nfe_sequence`` holds each sequence's network calls (``calls``):
``llada`` and ``remdm`` exactly ``N``, ``fast-dllm`` and ``eb`` the realized steps.
Undefined marginals (not finite or summing to 0) are replaced by the uniform law
(:mod:`numerics.sampling.samplers` convention).
"""

from __future__ import annotations

from numerics.sampling.block_decoder import (
    REMASKINGS,
    REMDM_COMPILED,
    BlockDecoder,
    EntropyBound,
    FastDllm,
    Llada,
    PathScore,
    StepRows,
    step_rows,
    tempered,
)
from numerics.sampling.blocks import llada_counts
from numerics.sampling.registry import DECODERS, decoder_names
from numerics.sampling.remdm import REMDM_VARIANTS, Remdm, remdm_probabilities
from numerics.sampling.stream import (
    STREAM_DRAW,
    STREAM_REMASK,
    STREAM_SCORE,
    STREAM_UNMASK,
    sequence_keys,
    splitmix64,
    stream_uniform,
)
from numerics.schedules import Schedule

__all__ = [
    "DECODER_NAMES",
    "REMASKINGS",
    "REMDM_COMPILED",
    "REMDM_VARIANTS",
    "STREAM_DRAW",
    "STREAM_REMASK",
    "STREAM_SCORE",
    "STREAM_UNMASK",
    "BlockDecoder",
    "EntropyBound",
    "FastDllm",
    "Llada",
    "PathScore",
    "Remdm",
    "StepRows",
    "llada_counts",
    "make_decoder",
    "remdm_probabilities",
    "sequence_keys",
    "splitmix64",
    "step_rows",
    "stream_uniform",
    "tempered",
]

#: The decoders' command-line names, from the registry (:func:`numerics.sampling.registry.decoder_names`).
DECODER_NAMES = decoder_names("decoder")


def make_decoder(name: str, *, steps: int | None = None, schedule: Schedule | None = None, tie_seed: int | None = 0,
                 **options: float | int | str | None) -> BlockDecoder:
    """The decoder called ``name`` (:data:`DECODER_NAMES`) from options that may be unset (``None``).

    Built by its registry entry (:data:`numerics.sampling.registry.DECODERS`, which lists each
    decoder's options, defaults and ranges); ``steps`` and ``schedule`` are used by the decoders that
    need them. An option that no decoder or not this one takes is a ``ValueError`` naming it, so a
    typo never runs silently.
    """
    if name not in DECODER_NAMES:
        raise ValueError(f"unknown decoder {name!r}; choose one of {DECODER_NAMES}")
    return DECODERS[name].build(options, steps=steps, schedule=schedule, tie_seed=tie_seed)
