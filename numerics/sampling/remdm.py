"""ReMDM (Wang et al., arXiv 2503.00307): the remasking sampler, its variants and step probabilities.

The rule is stated in :mod:`numerics.sampling.decoders` (module docstring) and
``docs/methods/decoders.md``; this module holds its class so that the decoder registry
(:mod:`numerics.sampling.registry`) can sit above every decoder class, and
:mod:`numerics.sampling.decoders` above the registry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from numerics.draws import draw_inverse_cdf
from numerics.sampling.block_decoder import BlockDecoder, _normalized, tempered
from numerics.sampling.denoiser import Denoiser
from numerics.sampling.samplers import _call
from numerics.sampling.stream import STREAM_DRAW, STREAM_REMASK, STREAM_UNMASK, stream_uniform
from numerics.schedules import Schedule

__all__ = ["REMDM_VARIANTS", "Remdm", "remdm_probabilities"]

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
