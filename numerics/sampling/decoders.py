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

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from numerics.draws import draw_inverse_cdf
from numerics.sampling.block_decoder import (
    REMASKINGS,
    REMDM_COMPILED,
    BlockDecoder,
    EntropyBound,
    FastDllm,
    Llada,
    PathScore,
    StepRows,
    _normalized,
    step_rows,
    tempered,
)
from numerics.sampling.blocks import llada_counts
from numerics.sampling.denoiser import Denoiser
from numerics.sampling.samplers import _call
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

REMDM_VARIANTS = ("cap", "rescale", "loop")


def remdm_probabilities(schedule: Schedule, variant: str, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """``(sigma, reveal)`` per step ``i = 1..N``: remask and reveal probabilities (module docstring).

    ``alpha_t = u_{i-1}``, ``alpha_s = u_i``; ``reveal_i = (alpha_s - (1 - sigma_i) alpha_t) / (1 - alpha_t)``.
    """
    a_t, a_s = schedule.u[:-1], schedule.u[1:]
    with np.errstate(divide="ignore", invalid="ignore"):  # alpha_t = 0: sigma_max = 1 (nothing to remask)
        smax = np.where(a_t > 0, np.minimum(1.0, (1.0 - a_s) / a_t), 1.0)
    sigma = np.minimum(eta, smax) if variant == "cap" else eta * smax
    with np.errstate(divide="ignore", invalid="ignore"):  # alpha_t = 1 only at a final no-op step
        reveal = np.where(a_t < 1, (a_s - (1.0 - sigma) * a_t) / (1.0 - a_t), 1.0)
    return sigma, np.clip(reveal, 0.0, 1.0)


@dataclass(frozen=True, kw_only=True)
class Remdm(BlockDecoder):
    """ReMDM's remasking sampler (variants ``cap`` / ``rescale`` / ``loop`` with ``eta``) over ``schedule``.

    ``loop`` (ReMDM-loop, arXiv 2503.00307; the reference scripts' ``t_on = 0.55``,
    ``t_off = 0.05``, ``alpha_on = 0.9``): on the time grid ``t_i = 1 - i/N`` (only the schedule's
    ``N`` is used) ``alpha(t)`` rises linearly from 0 at ``t = 1`` to ``alpha_on`` at ``t_on``, is
    held at ``alpha_on`` on ``[t_off, t_on]`` and rises linearly to 1 at ``t = 0``; a step whose two
    ends are both held (``alpha_t = alpha_s = alpha_on``) remasks with ``sigma = min(eta, sigma_max)``
    and reveals with ``sigma alpha_on / (1 - alpha_on)`` (the ReMDM posterior at equal ``alpha``:
    the expected number of masked positions is kept), every other step is MDLM's (``sigma = 0``).
    The linear shape of ``alpha`` outside the loop follows MDLM's log-linear schedule
    ``alpha = 1 - t``; ``docs/methods/decoders.md`` says what is not pinned down by the reference.
    """

    schedule: Schedule
    variant: str = "cap"
    eta: float = 0.0
    t_on: float = 0.55
    t_off: float = 0.05
    alpha_on: float = 0.9
    name: ClassVar[str] = "remdm"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.schedule, Schedule):
            raise ValueError("remdm needs a schedule (numerics.schedules.Schedule)")
        if self.variant not in REMDM_VARIANTS:
            raise ValueError(f"unknown remdm variant {self.variant!r}; choose one of {REMDM_VARIANTS}")
        if not isinstance(self.eta, (int, float)) or not math.isfinite(self.eta) or not 0 <= self.eta <= 1:
            raise ValueError(f"the remdm eta must be in [0, 1], got {self.eta!r}")
        if self.block_length is not None:
            raise ValueError("remdm decodes the whole sequence (no blocks); leave block_length unset")
        if not (0 < self.t_off < self.t_on < 1 and 0 < self.alpha_on < 1):
            raise ValueError(f"remdm loop needs 0 < t_off < t_on < 1 and 0 < alpha_on < 1, got t_off = {self.t_off}, "
                             f"t_on = {self.t_on}, alpha_on = {self.alpha_on}")

    @property
    def path_deterministic(self) -> bool:
        return False  # remasking: an output has many reveal histories

    def loop_alphas(self) -> np.ndarray:
        """``alpha(t_i)`` at ``t_i = 1 - i/N``, ``i = 0..N``, of the ``loop`` variant (class docstring)."""
        N = self.schedule.n_steps
        t = 1.0 - np.arange(N + 1) / N
        a_on = float(self.alpha_on)
        rise = a_on * (1.0 - t) / (1.0 - self.t_on)
        fall = a_on + (1.0 - a_on) * (self.t_off - t) / self.t_off
        return np.where(t > self.t_on, rise, np.where(t < self.t_off, fall, a_on))

    def probabilities(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sigma, reveal)`` per step (:func:`remdm_probabilities`; ``loop``: class docstring)."""
        if self.variant != "loop":
            return remdm_probabilities(self.schedule, self.variant, float(self.eta))
        a = self.loop_alphas()
        a_t, a_s = a[:-1], a[1:]
        held = (a_t == self.alpha_on) & (a_s == self.alpha_on)
        sigma = np.where(held, min(float(self.eta), 1.0, (1.0 - self.alpha_on) / self.alpha_on), 0.0)
        reveal = (a_s - (1.0 - sigma) * a_t) / (1.0 - a_t)  # alpha_t < 1 at every step (alpha = 1 only at t = 0)
        return sigma, np.clip(reveal, 0.0, 1.0)

    def parameters(self) -> dict:
        out = {"sampler": self.name, "steps": self.schedule.n_steps, "schedule": self.schedule.name,
               "variant": self.variant, "eta": float(self.eta), "temperature": float(self.temperature),
               "tie_seed": self.tie_seed}
        if self.variant == "loop":
            out.update(t_on=float(self.t_on), t_off=float(self.t_off), alpha_on=float(self.alpha_on))
        return out

    def _run(self, denoiser: Denoiser, keys: np.ndarray, L: int, prio: np.ndarray):
        Bn = keys.size
        sigma, reveal = self.probabilities()
        tokens = np.zeros((Bn, L), dtype=np.int64)
        mask = np.ones((Bn, L), dtype=bool)
        steps = np.zeros((Bn, L), dtype=np.int64)
        pos = np.arange(L)[None, :]
        k = keys[:, None]
        for i in range(1, self.schedule.n_steps + 1):
            probs = _call(denoiser, tokens, mask)  # (Bn, L, V)
            V = probs.shape[-1]
            c = np.uint64(i)
            law = tempered(_normalized(probs), self.temperature).reshape(Bn * L, V)
            drawn = draw_inverse_cdf(law, stream_uniform(k, c, pos, STREAM_DRAW).ravel()).reshape(Bn, L)
            remask = ~mask & (stream_uniform(k, c, pos, STREAM_REMASK) < sigma[i - 1])
            unmask = mask & (stream_uniform(k, c, pos, STREAM_UNMASK) < reveal[i - 1])
            tokens[unmask] = drawn[unmask]
            steps[unmask] = i
            mask[unmask] = False
            tokens[remask] = 0
            steps[remask] = 0
            mask[remask] = True
        if mask.any():
            raise FloatingPointError("remdm left positions masked after the last step (u_N must be 1)")
        return tokens, steps, np.full(Bn, self.schedule.n_steps, dtype=np.int64)


def make_decoder(name: str, *, steps: int | None = None, schedule: Schedule | None = None, tie_seed: int | None = 0,
                 **options: float | int | str | None) -> BlockDecoder:
    """The decoder called ``name`` (:data:`DECODER_NAMES`) from options that may be unset (``None``).

    Built by its registry entry (:data:`numerics.sampling.registry.DECODERS`, which lists each
    decoder's options, defaults and ranges); ``steps`` and ``schedule`` are used by the decoders that
    need them. An option that no decoder or not this one takes is a ``ValueError`` naming it, so a
    typo never runs silently.
    """
    from numerics.sampling.registry import DECODERS, decoder_names

    if name not in decoder_names("decoder"):
        raise ValueError(f"unknown decoder {name!r}; choose one of {decoder_names('decoder')}")
    return DECODERS[name].build(options, steps=steps, schedule=schedule, tie_seed=tie_seed)


def __getattr__(name: str):
    if name == "DECODER_NAMES":  # generated from the registry (which imports this module: resolved on first use)
        from numerics.sampling.registry import decoder_names

        return decoder_names("decoder")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
