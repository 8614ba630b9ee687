"""Sampling from trained networks.

* MDM: :class:`TorchDenoiser` wraps the network in ``numerics``' Denoiser protocol
  (``denoiser(tokens, mask) -> (B, L, V)`` float64), so the learned model runs through exactly the
  same sampler as the oracle (``numerics.sampling.samplers.sample_factorized``: ``ddpm`` with
  ``cache=False``, ``ddpm_cache`` with ``cache=True``; float64 draws by default, ``draw="float32"``
  for MDLM's float32 Gumbel-max ablation; NFE counted there). :func:`sample_mdm` is that call.
* AR: :func:`sample_ar` decodes left to right with a KV cache (one network call per token on a
  growing cache; same logits as the full causal forward, see tests), drawing each token from the
  float64 softmax of the float32 logits by exact inverse CDF (or float32 Gumbel-max).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from numerics.draws import draw_inverse_cdf, gumbel_argmax_float32
from numerics.sampling.samplers import DRAWS, sample_factorized
from numerics.schedules import Schedule, make_schedule

from .model import AutoregressiveTransformer, KVCache, MaskedDiffusionTransformer

__all__ = ["TorchDenoiser", "ARSampleResult", "sample_ar", "sample_mdm", "draw_categorical", "sampler_schedule",
           "DRAWS", "MDLM_T_MIN"]

MDLM_T_MIN = 1e-5  # MDLM samples at times linear from 1 down to 1e-5; the last step reveals the rest


def sampler_schedule(name: str, n_steps: int) -> Schedule:
    """The schedule the learned and oracle samplers use: ``"mdlm"`` (MDLM's times, linear down to
    ``1e-5``, log-linear ``alpha``) or any ``numerics.schedules`` family by name."""
    if name == "mdlm":
        return make_schedule("loglinear", n_steps, t_min=MDLM_T_MIN)
    return make_schedule(name, n_steps)


def _autocast(device: torch.device):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


class TorchDenoiser:
    """A trained MDM as a ``numerics`` denoiser: ``(tokens, mask) -> p_theta(x_0^j = v | x_t)``.

    Parameters
    ----------
    model : MaskedDiffusionTransformer
        An MDM network, e.g. ``Checkpoint.build_model()`` (EMA weights).
    device : optional
        Defaults to the model's device.
    max_batch : optional
        Largest batch sent to the network at once (larger inputs are split).

    The returned array is float64 ``(B, L, V)``: at masked positions the softmax over the ``V``
    data tokens of the float32 logits, computed in float64 (the mask class has probability 0 by
    SUBS); at unmasked positions one-hot on the observed token (SUBS carry-over). ``calls``
    counts network evaluations (sequence batches), ``sequences`` the sequences passed.
    """

    def __init__(self, model: MaskedDiffusionTransformer, device: str | torch.device | None = None,
                 max_batch: int | None = None):
        if not isinstance(model, MaskedDiffusionTransformer):
            raise ValueError("TorchDenoiser needs a masked diffusion model (kind 'mdm'), got an AR model")
        self.model = model.eval()
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.vocab_size = model.cfg.vocab_size
        self.max_batch = max_batch
        self.threads = torch.get_num_threads()  # numba's OpenMP kernels (the oracle, log q) may reset it
        self.calls = 0
        self.sequences = 0

    @torch.no_grad()
    def log_probs(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``log p_theta(x_0^j = v | x_t)`` in float64, ``(B, L, V)`` (``-inf`` off the observed token)."""
        tokens = np.asarray(tokens)
        mask = np.asarray(mask, dtype=bool)
        if tokens.ndim != 2 or tokens.shape != mask.shape:
            raise ValueError(f"tokens {tokens.shape} and mask {mask.shape} must be equal (B, L) shapes")
        V = self.vocab_size
        observed = ~mask
        if np.any(observed & ((tokens < 0) | (tokens >= V))):
            raise ValueError(f"observed tokens must lie in 0..{V - 1}")
        ids = np.where(mask, V, tokens).astype(np.int64)
        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        out = np.empty(tokens.shape + (V,), dtype=np.float64)
        step = self.max_batch or max(1, tokens.shape[0])
        for s in range(0, tokens.shape[0], step):
            x = torch.as_tensor(ids[s : s + step], device=self.device)
            with _autocast(self.device):
                logits = self.model(x)  # (b, L, V+1) float32, mask logit -inf
            out[s : s + step] = torch.log_softmax(logits[..., :V].double(), dim=-1).cpu().numpy()
            self.calls += 1
            self.sequences += x.shape[0]
        b, j = np.nonzero(observed)
        out[b, j, :] = -np.inf
        out[b, j, tokens[b, j]] = 0.0
        return out

    def __call__(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.exp(self.log_probs(tokens, mask))


def sample_mdm(model: MaskedDiffusionTransformer, schedule: Schedule, n: int, rng: np.random.Generator, *,
               length: int | None = None, batch_size: int | None = None, cache: bool = True, draw: str = "float64"):
    """``n`` samples of the MDM through ``numerics.sampling.samplers.sample_factorized`` (the shared sampler)."""
    den = TorchDenoiser(model)
    return sample_factorized(den, schedule, n, length or model.cfg.length, rng,
                             batch_size=batch_size, cache=cache, draw=draw)


def draw_categorical(probs: np.ndarray, rng: np.random.Generator, draw: str = "float64") -> np.ndarray:
    """One index per row of ``probs`` ``(n, V)``.

    ``"float64"``: exact inverse CDF, ``u * total`` against the cumulative sums (a zero-probability
    index is never drawn). ``"float32"``: MDLM's ``argmax(p / E)`` with ``E = 1e-10 - log(U + 1e-10)``
    computed in float32 (the Gumbel-max trick at float32 resolution, the ablation of docs/neural.md).
    """
    if draw == "float64":
        return draw_inverse_cdf(probs, rng.random(probs.shape[0]))  # the shared sampler's exact draw
    if draw == "float32":
        return gumbel_argmax_float32(probs, rng)  # the shared float32 Gumbel-max draw (same random stream)
    raise ValueError(f"draw must be one of {DRAWS}, got {draw!r}")


@dataclass(frozen=True)
class ARSampleResult:
    """AR samples.

    Attributes
    ----------
    tokens : (n, L) int64
    decode_steps : int
        Network calls per batch (``L``: one per token, on the KV cache).
    batches : int
    """

    tokens: np.ndarray
    decode_steps: int
    batches: int


#: The attention kernels of KV-cached decoding on CUDA: every backend but cuDNN's. The cache grows by one key a
#: token, so each call has a new shape, and cuDNN's attention builds an execution plan per shape: measured on an
#: H200 (torch 2.11, the paper network, batch 16), decoding L = 128 took 1.09 s a batch with it and 0.68 s
#: without, and a first L = 512 batch 35.7 s (with the plans' builds) against 3.0-4.3 s (docs/performance.md).
DECODE_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


@torch.no_grad()
def ar_step_logits(model: AutoregressiveTransformer, ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Feed ``ids`` ``(B, T)`` on top of ``cache``; return the float32 logits of the last position ``(B, V)``."""
    dev = ids.device
    kernels = sdpa_kernel(DECODE_ATTENTION) if dev.type == "cuda" else contextlib.nullcontext()
    with _autocast(dev), kernels:
        return model(ids, cache=cache)[:, -1].float()


@torch.no_grad()
def sample_ar(model: AutoregressiveTransformer, n: int, rng: np.random.Generator, *, length: int | None = None,
              batch_size: int | None = None, draw: str = "float64") -> ARSampleResult:
    """Draw ``n`` sequences from an AR network by KV-cached decoding (one call per token)."""
    if not isinstance(model, AutoregressiveTransformer):
        raise ValueError("sample_ar needs an autoregressive model (kind 'ar')")
    if draw not in DRAWS:
        raise ValueError(f"draw must be one of {DRAWS}, got {draw!r}")
    model.eval()
    L = length or model.cfg.length
    dev = next(model.parameters()).device
    bs = batch_size or n
    out = np.empty((n, L), dtype=np.int64)
    cache_dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    batches = 0
    for s in range(0, n, bs):
        b = min(bs, n - s)
        cache = KVCache.empty(model.cfg, b, L, dev, cache_dtype)
        ids = torch.full((b, 1), model.cfg.special_id, dtype=torch.long, device=dev)  # BOS
        for j in range(L):
            logits = ar_step_logits(model, ids, cache)  # (b, V)
            probs = torch.softmax(logits.double(), dim=-1).cpu().numpy()
            tok = draw_categorical(probs, rng, draw)
            out[s : s + b, j] = tok
            ids = torch.as_tensor(tok, dtype=torch.long, device=dev)[:, None]
        batches += 1
    return ARSampleResult(out, L, batches)
