"""Masking schedules reduced to what every result depends on: the per-step unmask probabilities.

``docs/methods/sampling.md``: with ``N`` steps at times ``1 = t_0 > t_1 > .. > t_N = 0`` and a schedule
``alpha`` (probability a token is unmasked at time ``t``), ``u_i = alpha(t_i)`` is the probability
that a position is unmasked by the end of step ``i`` (``u_0 = 0``, ``u_N = 1``) and
``pi_i = u_i - u_{i-1}`` the probability it is unmasked *at* step ``i``, independently of the
other positions.

A family ``alpha`` with ``alpha(1) = a_1 > 0`` (MDLM's log-linear ``1 - (1 - eps) t``) starts
sampling from the all-masked sequence, so it is renormalized:
``u_i = (alpha(t_i) - alpha(1)) / (1 - alpha(1))``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Schedule",
    "from_u",
    "from_alpha",
    "linear",
    "cosine",
    "loglinear",
    "polynomial",
    "mdlm",
    "MDLM_T_MIN",
    "SCHEDULES",
    "SCHEDULE_PARAMETERS",
    "make_schedule",
    "schedule_help",
    "MAX_STEPS",
]

U_ATOL = 1e-12  # u_0 = 0 and u_N = 1 must hold to float64 round-off of the user's arithmetic
MAX_STEPS = 1 << 24  # a family's u_0..u_N is (N+1) float64s: 128 MiB here; larger N is refused before allocating


@dataclass(frozen=True, eq=False)
class Schedule:
    """A discretized masking schedule.

    Attributes
    ----------
    u : (N+1,) float64
        ``u[i]`` = probability that a position is unmasked by the end of step ``i``;
        ``u[0] = 0``, ``u[N] = 1``, non-decreasing.
    name : str
        Human-readable description (family and parameters).
    """

    u: np.ndarray
    name: str = "custom"

    def __post_init__(self) -> None:
        u = np.array(self.u, dtype=np.float64)
        if u.ndim != 1 or u.shape[0] < 2:
            raise ValueError(f"u must be a vector u_0..u_N with N >= 1 steps, got shape {u.shape}")
        if not np.all(np.isfinite(u)):
            raise ValueError(f"u has a non-finite entry at step {int(np.argwhere(~np.isfinite(u))[0][0])}")
        if abs(u[0]) > U_ATOL:
            raise ValueError(f"u_0 must be 0 (nothing unmasked before step 1), got {float(u[0])!r}")
        if abs(u[-1] - 1.0) > U_ATOL:
            raise ValueError(f"u_N must be 1 (everything unmasked after the last step), got {float(u[-1])!r}")
        u[0], u[-1] = 0.0, 1.0
        steps = np.diff(u)
        if np.any(steps < 0):
            i = int(np.argwhere(steps < 0)[0][0]) + 1
            raise ValueError(
                f"schedule is not monotone: u_{i} = {float(u[i])!r} < u_{i - 1} = {float(u[i - 1])!r}"
            )
        if np.any(u > 1.0):
            i = int(np.argwhere(u > 1.0)[0][0])
            raise ValueError(f"u_{i} = {float(u[i])!r} exceeds 1")
        u.setflags(write=False)
        object.__setattr__(self, "u", u)

    @property
    def n_steps(self) -> int:
        """``N``."""
        return self.u.shape[0] - 1

    @property
    def pi(self) -> np.ndarray:
        """``(N,)`` per-step unmask probabilities ``pi_i = u_i - u_{i-1}`` (index ``i-1``)."""
        return np.diff(self.u)

    def expected_nfe(self, length: int, batch: int = 1) -> float:
        """``E[NFE] = 1 + sum_{i<N} (1 - (1 - pi_i)^(B L))`` under the ``ddpm_cache`` sampler.

        A network call happens at step 1 and again after every step ``i < N`` that revealed
        something in the batch (``docs/methods/sampling.md``).
        """
        if length < 1 or batch < 1:
            raise ValueError(f"need length >= 1 and batch >= 1, got {length}, {batch}")
        pi = self.pi[:-1]
        with np.errstate(divide="ignore"):  # pi_i = 1 gives log1p(-1) = -inf, i.e. a certain call
            log_none = batch * length * np.log1p(-pi)
        return float(1.0 + np.sum(-np.expm1(log_none)))

    def sample_steps(self, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw i.i.d. reveal steps in ``1..N`` with ``P(step = i) = pi_i`` (float64 inverse CDF)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        draws = rng.random(shape)
        # side="right" on u[1:]: the step i with u_{i-1} <= draw < u_i; empty steps are never drawn
        return np.searchsorted(self.u[1:], draws, side="right").astype(np.int64) + 1

    def __repr__(self) -> str:
        return f"Schedule(name={self.name!r}, N={self.n_steps})"


def from_u(u: Sequence[float], name: str = "custom") -> Schedule:
    """A schedule from a user-given vector ``u_1..u_N`` (``u_0 = 0`` is prepended if missing)."""
    u = np.asarray(u, dtype=np.float64)
    if u.ndim == 1 and u.size and u[0] != 0.0:
        u = np.concatenate([[0.0], u])
    return Schedule(u, name)


def _check_n(n_steps: int) -> int:
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"number of steps N must be an integer >= 1, got {n_steps!r}")
    if n_steps > MAX_STEPS:
        gib = (int(n_steps) + 1) * 8 / 2**30
        raise ValueError(f"N = {int(n_steps)} steps is too many: the schedule alone would need {gib:.3g} GiB "
                         f"(N+1 float64 values, and as many per-step arrays); at most N = {MAX_STEPS}")
    return int(n_steps)


def from_alpha(alpha: Callable[[np.ndarray], np.ndarray], n_steps: int, name: str, t_min: float = 0.0) -> Schedule:
    """Discretize ``alpha`` at times ``t_i = 1 - i (1 - t_min) / N`` and renormalize (module docstring).

    ``t_min > 0`` (MDLM samples down to ``1e-5``) leaves ``1 - alpha(t_min)`` of the mass for the
    last step, which then reveals everything still masked (MDLM's final noise-removal call).
    """
    n = _check_n(n_steps)
    if not 0.0 <= t_min < 1.0:
        raise ValueError(f"t_min must be in [0, 1), got {t_min!r}")
    t = 1.0 - np.arange(n + 1) * (1.0 - t_min) / n
    a = np.asarray(alpha(t), dtype=np.float64)
    a1 = a[0]
    if not a1 < 1.0:
        raise ValueError(f"alpha(1) must be < 1, got {a1!r}")
    u = (a - a1) / (1.0 - a1)
    u[-1] = 1.0
    return Schedule(u, name)


def linear(n_steps: int, t_min: float = 0.0) -> Schedule:
    """``alpha(t) = 1 - t``: ``u_i = i/N``, every step equally likely."""
    return from_alpha(lambda t: 1.0 - t, n_steps, f"linear(N={n_steps})", t_min)


def loglinear(n_steps: int, eps: float = 1e-3, t_min: float = 0.0) -> Schedule:
    """MDLM's ``alpha(t) = 1 - (1 - eps) t``; after renormalization identical to :func:`linear`."""
    if not 0.0 <= eps < 1.0:
        raise ValueError(f"eps must be in [0, 1), got {eps!r}")
    return from_alpha(lambda t: 1.0 - (1.0 - eps) * t, n_steps, f"loglinear(N={n_steps}, eps={eps})", t_min)


def cosine(n_steps: int, t_min: float = 0.0) -> Schedule:
    """``alpha(t) = cos(pi t / 2)``."""
    return from_alpha(lambda t: np.cos(0.5 * np.pi * t), n_steps, f"cosine(N={n_steps})", t_min)


def polynomial(n_steps: int, power: float = 2.0, t_min: float = 0.0) -> Schedule:
    """``alpha(t) = 1 - t^power``."""
    if not power > 0:
        raise ValueError(f"power must be > 0, got {power!r}")
    return from_alpha(lambda t: 1.0 - t**power, n_steps, f"polynomial(N={n_steps}, power={power})", t_min)


MDLM_T_MIN = 1e-5  # MDLM's sampler runs its times down to 1e-5, not 0


def mdlm(n_steps: int) -> Schedule:
    """MDLM's sampling schedule: its log-linear ``alpha`` (``eps = 1e-3``) at times linear from 1
    down to ``t_min = 1e-5``, the mass left at ``t_min`` revealed by the last step (MDLM's final
    noise-removal call); :func:`from_alpha`."""
    base = loglinear(n_steps, t_min=MDLM_T_MIN)
    return Schedule(base.u, f"mdlm(N={n_steps})")


SCHEDULES: dict[str, Callable[..., Schedule]] = {
    "linear": linear,
    "loglinear": loglinear,
    "cosine": cosine,
    "polynomial": polynomial,
    "mdlm": mdlm,
}


#: The one parameter a schedule spec ``"family:value"`` sets (:func:`make_schedule`), per family.
SCHEDULE_PARAMETERS: dict[str, str] = {"loglinear": "eps", "polynomial": "power"}


def schedule_help() -> str:
    """The families and the spec syntax, for command-line help (one source: :data:`SCHEDULES`)."""
    params = ", ".join(f"{k}:{v.upper()}" for k, v in SCHEDULE_PARAMETERS.items())
    return f"Schedule family: {', '.join(SCHEDULES)}; a parameter as FAMILY:VALUE ({params}, e.g. polynomial:3)."


def make_schedule(name: str, n_steps: int, **params: float) -> Schedule:
    """Look up a schedule family by name (``SCHEDULES``) and build it for ``n_steps``.

    ``name`` may carry the family's parameter (:data:`SCHEDULE_PARAMETERS`) as ``"family:value"``:
    ``make_schedule("polynomial:3", N)`` is ``polynomial(N, power=3.0)``.
    """
    family_name, sep, value = str(name).partition(":")
    try:
        family = SCHEDULES[family_name]
    except KeyError:
        raise ValueError(f"unknown schedule {name!r}; known: {sorted(SCHEDULES)} "
                         f"(a parameter as family:value, e.g. polynomial:3)") from None
    if sep:
        key = SCHEDULE_PARAMETERS.get(family_name)
        if key is None:
            raise ValueError(f"schedule {family_name!r} takes no parameter (got {name!r}); "
                             f"parameters: {', '.join(f'{k}:{v}' for k, v in SCHEDULE_PARAMETERS.items())}")
        if key in params:
            raise ValueError(f"schedule {name!r} sets {key} twice")
        try:
            params[key] = float(value)
        except ValueError:
            raise ValueError(f"schedule {name!r}: {key} must be a number, got {value!r}") from None
    return family(n_steps, **params)
