"""DiffusionGemma's renoise sampler (``gemma-renoise``) with the uniform-noise oracle (``docs/methods/uniform-noise.md``).

A canvas of ``L`` tokens starts uniform-random. Call ``t = 0, 1, ..`` (one network call each):

1. **Denoise.** The oracle's marginals ``m_j = q(x_0^j | y)`` of the canvas ``y`` read as a uniform-noise
   canvas of level ``a = alpha k / L`` at every position (:func:`numerics.inference.soft_evidence.uniform_noise_posterior`),
   ``k`` the number of positions that kept a draw at the last update (0 before the first: the first call
   reads a pure-noise canvas at level 0 and returns ``q``'s marginals). The oracle is told how many
   positions hold a draw, not which: like the network, it sees tokens only.
2. **Temperature.** ``T_t = t_min + (t_max - t_min) (cap - t) / cap`` (``t_max`` at the first call, falling
   linearly; diffusers' ``EntropyBoundScheduler``); ``r_j ∝ m_j^(1/T_t)`` is the law a value is drawn
   from and ``H_j = H(r_j)`` (nats) the entropy every rule reads.
3. **Halt.** If ``t >= 1``, the mean of ``H_j`` over the ``L`` positions is ``< halt_entropy`` and the
   argmax of every ``m_j`` (lowest token on ties) equals that of the previous call, the sampler stops and
   emits the argmax. At call ``cap`` (``t = cap - 1``) it stops anyway and emits the argmax: the run
   *hit the cap* when the rule had not fired.
4. **Select.** The candidates (every position, or the uncommitted ones with ``committed``) sorted by
   ``H_j`` ascending (lowest index on ties); the prefix whose entropy sum *excluding the current one* is
   ``<= entropy_bound`` is accepted (at least the first candidate).
5. **Renoise.** Accepted positions take a value drawn from ``r_j``; committed positions (``committed``)
   keep their token; every other position takes a fresh uniform token.

The two published variants are two chains: ``committed=False`` (SGLang) reselects from scratch at every
call (a position accepted before may be renoised); ``committed=True`` (diffusers) keeps every accepted
position fixed and selects among the others only. Entropies, the bound and the halting threshold are
compared on the comparison grid of :mod:`numerics.sampling.adaptive` (:func:`~numerics.sampling.adaptive.on_grid`),
so an equality of exact arithmetic is not decided by round-off.

The rule is written once for a batch of canvases (:func:`renoise_decide`, :func:`renoise_apply`): Monte
Carlo runs it on sampled draws (:func:`sample_renoise`), the exact chain (:mod:`numerics.exact.gemma`) on
every draw, weighted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from numerics.draws import draw_inverse_cdf
from numerics.inference.soft_evidence import uniform_noise_posterior
from numerics.sampling.adaptive import confidence_grid, on_grid
from numerics.sampling.block_decoder import tempered

__all__ = ["Renoise", "RenoiseState", "Decision", "initial_state", "renoise_laws", "renoise_decide", "renoise_apply",
           "RenoiseSamples", "sample_renoise"]

NO_ARGMAX = -1  # the previous argmax before the first call (never equal to a token)


@dataclass(frozen=True)
class Renoise:
    """DiffusionGemma's renoise sampler (module docstring); defaults are the released sampler's.

    Parameters
    ----------
    committed : keep accepted positions fixed (diffusers) or reselect from scratch each call (SGLang).
    entropy_bound : the bound on the accepted prefix's entropy sum excluding its last, nats, ``>= 0``.
    t_max, t_min : the temperature ramp, ``0 < t_min <= t_max``.
    step_cap : calls at most, ``>= 1``.
    halt_entropy : the mean entropy below which (with an unchanged argmax) the sampler stops, ``>= 0``.
    alpha : the oracle's level of a kept draw, in ``[0, 1)`` (the canvas is read at ``alpha k / L``;
        ``1`` is refused: a kept canvas outside ``supp q`` would leave the oracle undefined).
    """

    committed: bool
    entropy_bound: float = 0.1
    t_max: float = 0.8
    t_min: float = 0.4
    step_cap: int = 48
    halt_entropy: float = 0.005
    alpha: float = 0.99

    def __post_init__(self) -> None:
        def finite(name: str) -> float:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"the gemma-renoise {name.replace('_', '-')} must be a finite number, got {v!r}")
            return float(v)

        if finite("entropy_bound") < 0:
            raise ValueError(f"the gemma-renoise entropy-bound must be >= 0 nats, got {self.entropy_bound!r}")
        if not 0 < finite("t_min") <= finite("t_max"):
            raise ValueError(f"the gemma-renoise temperatures need 0 < t-min <= t-max, got t-min {self.t_min!r}, "
                             f"t-max {self.t_max!r}")
        if finite("halt_entropy") < 0:
            raise ValueError(f"the gemma-renoise halt-entropy must be >= 0 nats, got {self.halt_entropy!r}")
        if not 0 <= finite("alpha") < 1:
            raise ValueError(f"the gemma-renoise oracle alpha must be in [0, 1), got {self.alpha!r} (at 1 a kept "
                             "canvas that q cannot produce leaves the oracle undefined)")
        if isinstance(self.step_cap, bool) or int(self.step_cap) != self.step_cap or self.step_cap < 1:
            raise ValueError(f"the gemma-renoise step cap must be an integer >= 1, got {self.step_cap!r}")

    @property
    def name(self) -> str:
        return f"gemma-renoise ({'committed' if self.committed else 'reselect'})"

    def temperature(self, t: int) -> float:
        """``T_t`` of call ``t`` (0-based)."""
        return self.t_min + (self.t_max - self.t_min) * (self.step_cap - t) / self.step_cap


class RenoiseState(NamedTuple):
    """A batch of sampler states (all rows at the same call count in the exact chain).

    Attributes
    ----------
    canvas : (n, L) int64
    kept : (n, L) bool, the positions that kept a draw at the last update (committed: the committed set)
    argmax : (n, L) int64, the previous call's argmax (:data:`NO_ARGMAX` before the first call)
    calls : (n,) int64, calls made
    """

    canvas: np.ndarray
    kept: np.ndarray
    argmax: np.ndarray
    calls: np.ndarray


class Decision(NamedTuple):
    """What one call decides before any value is drawn.

    Attributes
    ----------
    law : (n, L, V) float64, ``r_j``, the tempered law of a drawn value
    accepted : (n, L) bool
    argmax : (n, L) int64, this call's argmax (the output when it stops)
    stop : (n,) bool, the run stops at this call (halting rule or cap)
    halted : (n,) bool, the halting rule fired (``stop & ~halted``: the cap)
    """

    law: np.ndarray
    accepted: np.ndarray
    argmax: np.ndarray
    stop: np.ndarray
    halted: np.ndarray


def initial_state(n: int, canvas: np.ndarray) -> RenoiseState:
    """``n`` states before the first call, on ``canvas`` ``(n, L)``."""
    L = canvas.shape[1]
    return RenoiseState(np.asarray(canvas, dtype=np.int64), np.zeros((n, L), dtype=np.bool_),
                        np.full((n, L), NO_ARGMAX, dtype=np.int64), np.zeros(n, dtype=np.int64))


def renoise_laws(rn: Renoise, language, state: RenoiseState) -> np.ndarray:
    """The oracle's marginals ``(n, L, V)`` of each canvas at level ``alpha k / L`` (module docstring)."""
    L = state.canvas.shape[1]
    level = rn.alpha * state.kept.sum(axis=1, keepdims=True) / L
    return uniform_noise_posterior(language, state.canvas, level).marginals


def renoise_decide(rn: Renoise, state: RenoiseState, marginals: np.ndarray) -> Decision:
    """Steps 2-4 of the module docstring for every row of ``state``; all rows at the same call count."""
    t = int(state.calls[0])
    if np.any(state.calls != t):
        raise ValueError("renoise_decide takes rows at one call count (the temperature is per call)")
    n, L, V = marginals.shape
    law = tempered(marginals, rn.temperature(t))
    H = confidence_grid(law.reshape(-1, V), "maxprob").entropy.reshape(n, L)  # on the grid
    argmax = np.argmax(on_grid(marginals), axis=-1)
    halted = (t >= 1) & (H.sum(axis=1) < L * on_grid(rn.halt_entropy)) & np.all(argmax == state.argmax, axis=1)
    stop = halted | (t + 1 >= rn.step_cap)
    cand = ~state.kept if rn.committed else np.ones((n, L), dtype=np.bool_)
    order = np.argsort(np.where(cand, H, np.iinfo(np.int64).max), axis=1, kind="stable")  # lowest index on ties
    Hs = np.take_along_axis(np.where(cand, H, 0), order, axis=1)
    before = np.cumsum(Hs, axis=1) - Hs  # the entropy sum excluding the current one
    ok = (before <= on_grid(rn.entropy_bound)) & np.take_along_axis(cand, order, axis=1)
    accepted = np.zeros((n, L), dtype=np.bool_)
    np.put_along_axis(accepted, order, ok, axis=1)
    return Decision(law, accepted, argmax, stop, halted)


def renoise_apply(rn: Renoise, state: RenoiseState, dec: Decision, draws: np.ndarray, noise: np.ndarray) -> RenoiseState:
    """Step 5: the next states of the rows that go on (``draws`` from ``dec.law``, ``noise`` uniform tokens)."""
    fixed = state.kept & rn.committed
    canvas = np.where(dec.accepted, draws, np.where(fixed, state.canvas, noise))
    kept = dec.accepted | fixed
    return RenoiseState(canvas, kept, dec.argmax, state.calls + 1)


@dataclass(frozen=True)
class RenoiseSamples:
    """Outputs of the renoise sampler.

    Attributes
    ----------
    tokens : (n, L) int64, the emitted argmax of each run
    calls : (n,) int64, network calls of each run (``1 .. step_cap``)
    capped : (n,) bool, the run stopped at the cap without the halting rule firing
    """

    tokens: np.ndarray
    calls: np.ndarray
    capped: np.ndarray


def sample_renoise(rn: Renoise, language, n: int, length: int, rng: np.random.Generator) -> RenoiseSamples:
    """``n`` runs of ``rn`` on canvases of ``length`` tokens with the oracle, by Monte Carlo."""
    if int(n) != n or n < 1 or int(length) != length or length < 1:
        raise ValueError(f"need n >= 1 runs and length >= 1, got n={n!r}, length={length!r}")
    V = language.vocab_size
    state = initial_state(n, rng.integers(0, V, size=(n, length)))
    live = np.arange(n)
    tokens = np.empty((n, length), dtype=np.int64)
    calls = np.empty(n, dtype=np.int64)
    capped = np.empty(n, dtype=np.bool_)
    while live.size:
        dec = renoise_decide(rn, state, renoise_laws(rn, language, state))
        done = live[dec.stop]
        tokens[done] = dec.argmax[dec.stop]
        calls[done] = state.calls[dec.stop] + 1
        capped[done] = ~dec.halted[dec.stop]
        go = ~dec.stop
        m = int(go.sum())
        law = dec.law[go].reshape(-1, V)
        draws = draw_inverse_cdf(law, rng.random(m * length)).reshape(m, length)
        noise = rng.integers(0, V, size=(m, length))
        sub = RenoiseState(*(a[go] for a in state))
        state = renoise_apply(rn, sub, Decision(*(a[go] for a in dec)), draws, noise)
        live = live[go]
    return RenoiseSamples(tokens, calls, capped)
