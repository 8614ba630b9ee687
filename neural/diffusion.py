"""The noise process and the training losses: masking times, masks, the MDM's NELBO and the AR NLL.

Masked diffusion (docs/neural.md). The forward process masks each position independently with
probability ``1 - alpha_t`` at time ``t``; MDLM's log-linear schedule ``alpha_t = 1 - (1 - eps) t``
gives the NELBO weight ``-alpha'_t / (1 - alpha_t) = 1/t`` exactly. Per sequence and token

    NELBO(x) = E_t [ (1/t) sum_{i masked} -log p_theta(x_i | x_t) ] / L,

an upper bound on ``-log p_theta(x) / L`` (so ``exp`` of its mean bounds the perplexity).

Two unbiased estimators of it (:data:`NELBO_ESTIMATORS`):

* ``"time"`` (MDLM): a time ``t`` per sequence, stratified over the batch and mapped to
  ``[t_min, 1)``; Bernoulli masks with rate ``(1 - eps) t``; weight ``1 / (t L)``.
* ``"count"``: the number of masked positions ``k`` per sequence, stratified over ``1..L``; a
  uniformly random set of exactly ``k`` masked positions; weight ``1 / k``. With a denoiser that
  does not see ``t`` (ours), integrating the Bernoulli law over ``t`` gives
  ``int_0^1 (1/t) C(L,k) t^k (1-t)^(L-k) dt = 1/k``, so

      NELBO(x) = (1/L) sum_{k=1}^{L} (1/k) E_{|M| = k} sum_{i in M} -log p_theta(x_i | x_{not M}),

  the any-order autoregressive form (the ``eps -> 0`` limit of the ``"time"`` form). Each term is
  an average over masked positions instead of a sum weighted by ``1/t``, so its variance is much
  smaller at the same cost.

  The count need not be uniform: drawn with probability ``pi(k) ~ k^(-count_power)`` and weighted
  ``1 / (k L pi(k))``, the estimator is the same NELBO (:func:`count_law`). ``count_power = 1``
  gives every masked position the same weight ``H_L / L`` (``H_L`` the harmonic number) and spends
  more of the batch on few masks, where the denoiser must combine the most context and learns
  slowest.

Validation uses a third, exact-per-order form (:func:`order_nelbo`): one uniformly random order
``sigma`` per sequence and *all* ``L`` terms ``-log p_theta(x_sigma(j) | x_sigma(<j))`` (one
batch of ``L`` masked copies of the sequence). Its mean over ``sigma`` is the same NELBO, and for
the exact posterior every order gives exactly ``-log q(x)``, so the paired gap to ``-log q(x)``
has no masking noise left: what remains is the model's error.

Autoregressive: ``-log p_theta(x) = sum_i -log p_theta(x_i | x_<i)`` with a BOS input before ``x``.

:class:`MaskedDiffusion` and :class:`Autoregressive` are the two objectives behind one interface
(:func:`objective_for` picks one from the model kind, once): ``draw`` the noise of a batch,
``loss`` per sequence and token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import torch

__all__ = [
    "NELBO_ESTIMATORS",
    "Noise",
    "Objective",
    "MaskedDiffusion",
    "Autoregressive",
    "objective_for",
    "stratified_times",
    "stratified_counts",
    "count_law",
    "draw_masks",
    "draw_count_masks",
    "masked_nll",
    "ar_nll",
    "order_nelbo",
    "random_ranks",
]

NELBO_ESTIMATORS = ("time", "count")


class Noise(NamedTuple):
    """The noise of one batch of an MDM: which positions are masked and the NELBO weight.

    Attributes
    ----------
    mask : (B, L) bool
        True where ``x_t`` is the mask token.
    weight : (B,) float32
        Per-sequence weight of the summed masked NLL: ``1 / (t L)`` (``"time"``) or ``1 / k``
        (``"count"``), so that ``weight * sum_{masked} nll`` is the per-token NELBO term.
    """

    mask: torch.Tensor
    weight: torch.Tensor


# ------------------------------------------------------------------------------ noise
def stratified_times(batch: int, generator: torch.Generator, t_min: float) -> torch.Tensor:
    """``t_b = ((u_b + b) / B) mod 1`` mapped affinely to ``[t_min, 1)``: MDLM's low-discrepancy times, ``(B,)`` float64."""
    u = torch.rand(batch, generator=generator, dtype=torch.float64)
    t = torch.remainder((u + torch.arange(batch, dtype=torch.float64)) / batch, 1.0)
    return (1.0 - t_min) * t + t_min


def draw_masks(t: torch.Tensor, length: int, noise_eps: float, generator: torch.Generator) -> torch.Tensor:
    """Mask each position independently with probability ``1 - alpha_t = (1 - eps) t``, ``(B, L)`` bool."""
    u = torch.rand(t.shape[0], length, generator=generator, dtype=torch.float64)
    return u < ((1.0 - noise_eps) * t.double())[:, None]


def count_law(length: int, power: float = 0.0) -> torch.Tensor:
    """``pi(k) ~ k^(-power)`` over ``k = 1..L``, ``(L,)`` float64: the law of the masked count.

    With weight ``1 / (k L pi(k))`` per sequence, ``sum_k pi(k) * weight(k) * E_{|M|=k} S(M)`` is
    the count form of the NELBO for every ``power`` (``0``: uniform, weight ``1/k``).
    """
    pi = torch.arange(1, length + 1, dtype=torch.float64) ** (-float(power))
    return pi / pi.sum()


def stratified_counts(batch: int, length: int, generator: torch.Generator, power: float = 0.0) -> torch.Tensor:
    """Masked counts ``k_b`` in ``1..L`` with one draw per stratum of ``B`` equal strata of ``[0, 1)``, ``(B,)`` int64.

    ``s_b = (u_b + b) / B mod 1`` is mapped through the inverse CDF of :func:`count_law`: for
    ``power = 0``, ``k_b = floor(L s_b) + 1``, so each ``k`` has probability ``1/L`` for every
    sequence and over the batch the counts are spread evenly (exactly ``B / L`` of each when ``L``
    divides ``B``, up to the two strata across each boundary).
    """
    u = torch.rand(batch, generator=generator, dtype=torch.float64)
    s = torch.remainder((u + torch.arange(batch, dtype=torch.float64)) / batch, 1.0)
    if power == 0:
        return torch.clamp(torch.floor(s * length).long(), max=length - 1) + 1
    cdf = torch.cumsum(count_law(length, power), 0)
    return torch.clamp(torch.searchsorted(cdf, s, right=True), max=length - 1) + 1


def draw_count_masks(counts: torch.Tensor, length: int, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random set of exactly ``counts[b]`` masked positions per row, ``(B, L)`` bool.

    The ranks of i.i.d. uniforms are a uniform random permutation; positions of rank ``< k`` are masked.
    """
    return random_ranks(counts.shape[0], length, generator) < counts[:, None]


# ------------------------------------------------------------------------------ losses
def masked_nll(model, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``sum_{i masked} -log p_theta(x_i | x_t)`` per sequence, ``(B,)`` float32 (SUBS: unmasked terms are 0)."""
    x_t = torch.where(mask, model.cfg.special_id, x)
    logp = model.denoise_logprobs(x_t)  # (B, L, V+1)
    nll = -logp.gather(-1, x.unsqueeze(-1)).squeeze(-1)  # (B, L); 0 at unmasked positions
    return torch.where(mask, nll, torch.zeros_like(nll)).sum(dim=1)


def random_ranks(batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """The rank of each position in a uniformly random order, per row, ``(B, L)`` int64 (ranks of i.i.d. uniforms)."""
    return torch.rand(batch, length, generator=generator, dtype=torch.float64).argsort(dim=1).argsort(dim=1)


def order_nelbo(model, x: torch.Tensor, ranks: torch.Tensor) -> torch.Tensor:
    """``(1/L) sum_j -log p_theta(x_sigma(j) | x_sigma(<j))`` for the order ``ranks`` of each sequence, ``(B,)``.

    Row ``b`` is expanded into ``L`` copies; copy ``j`` masks the positions of rank ``>= j`` and
    scores the one of rank ``j`` (``B L`` sequences through the network).
    """
    B, L = x.shape
    ranks = ranks.to(x.device)
    j = torch.arange(L, device=x.device)
    mask = ranks[:, None, :] >= j[None, :, None]  # (B, L copies, L positions)
    target = ranks[:, None, :] == j[None, :, None]
    xx = x[:, None, :].expand(B, L, L).reshape(B * L, L)
    x_t = torch.where(mask.reshape(B * L, L), model.cfg.special_id, xx)
    logp = model.denoise_logprobs(x_t).gather(-1, xx.unsqueeze(-1)).squeeze(-1)  # (B L, L)
    return -(logp.reshape(B, L, L) * target).sum(dim=(1, 2)) / L


def ar_nll(model, x: torch.Tensor) -> torch.Tensor:
    """Per-sequence AR negative log-likelihood ``-log p_theta(x)`` (nats), ``(B,)`` float32."""
    logp = torch.log_softmax(model(model.inputs_for(x)), dim=-1)  # (B, L, V)
    return -logp.gather(-1, x.unsqueeze(-1)).squeeze(-1).sum(dim=1)


# ------------------------------------------------------------------------------ objectives
class Objective(Protocol):
    """What training and validation need of a model kind: its noise and its per-token loss.

    ``validation_draw`` / ``validation_loss`` are the low-variance validation estimator of the same
    quantity; ``copies`` is how many network rows one validation sequence costs.
    """

    def draw(self, batch: int, length: int, generator: torch.Generator) -> Noise | None: ...

    def loss(self, model, x: torch.Tensor, noise: Noise | None) -> torch.Tensor: ...

    def validation_draw(self, n: int, length: int, generator: torch.Generator) -> torch.Tensor | None: ...

    def validation_loss(self, model, x: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor: ...

    def copies(self, length: int) -> int: ...


@dataclass(frozen=True)
class MaskedDiffusion:
    """The MDM's continuous-time NELBO with the ``estimator`` of the module docstring.

    Attributes
    ----------
    estimator : {"time", "count"}
    noise_eps : float
        ``eps`` of the log-linear schedule (``"time"`` only).
    t_min : float
        Smallest training time (``"time"`` only).
    count_power : float
        Masked counts drawn with probability ``~ k^(-count_power)`` (``"count"`` only; 0: uniform).
    """

    estimator: str = "time"
    noise_eps: float = 1e-3
    t_min: float = 1e-3
    count_power: float = 0.0

    def __post_init__(self) -> None:
        if self.estimator not in NELBO_ESTIMATORS:
            raise ValueError(f"NELBO estimator must be one of {NELBO_ESTIMATORS}, got {self.estimator!r}")

    def draw(self, batch: int, length: int, generator: torch.Generator) -> Noise:
        """Masks and weights of a batch of ``batch`` sequences (CPU tensors)."""
        if self.estimator == "time":
            t = stratified_times(batch, generator, self.t_min)
            return Noise(draw_masks(t, length, self.noise_eps, generator), (1.0 / (t * length)).float())
        k = stratified_counts(batch, length, generator, self.count_power)
        if self.count_power == 0:  # 1 / (k L (1/L)) without the rounding of L * (1/L): runs stay bit for bit
            weight = 1.0 / k.double()
        else:
            weight = 1.0 / (k.double() * length * count_law(length, self.count_power)[k - 1])
        return Noise(draw_count_masks(k, length, generator), weight.float())

    def loss(self, model, x: torch.Tensor, noise: Noise) -> torch.Tensor:
        """Per-sequence, per-token NELBO term ``weight * sum_{masked} -log p_theta(x_i | x_t)``, ``(B,)``."""
        return masked_nll(model, x, noise.mask.to(x.device)) * noise.weight.to(x.device)

    def validation_draw(self, n: int, length: int, generator: torch.Generator) -> torch.Tensor:
        """One random order per sequence (:func:`order_nelbo`)."""
        return random_ranks(n, length, generator)

    def validation_loss(self, model, x: torch.Tensor, ranks: torch.Tensor) -> torch.Tensor:
        return order_nelbo(model, x, ranks)

    def copies(self, length: int) -> int:
        return length


@dataclass(frozen=True)
class Autoregressive:
    """Next-token NLL per token, ``-log p_theta(x) / L``; no noise."""

    def draw(self, batch: int, length: int, generator: torch.Generator) -> None:
        return None

    def loss(self, model, x: torch.Tensor, noise: None = None) -> torch.Tensor:
        return ar_nll(model, x) / x.shape[1]

    def validation_draw(self, n: int, length: int, generator: torch.Generator) -> None:
        return None

    def validation_loss(self, model, x: torch.Tensor, noise: None = None) -> torch.Tensor:
        return self.loss(model, x)

    def copies(self, length: int) -> int:
        return 1


def objective_for(kind: str, train_cfg=None) -> Objective:
    """The training objective of model ``kind``; ``train_cfg`` (a :class:`~neural.config.TrainConfig`) sets the MDM's noise."""
    if kind == "ar":
        return Autoregressive()
    if kind != "mdm":
        raise ValueError(f"unknown model kind {kind!r}")
    if train_cfg is None:
        return MaskedDiffusion()
    return MaskedDiffusion(train_cfg.nelbo_estimator, train_cfg.noise_eps, train_cfg.t_min, train_cfg.count_power)
