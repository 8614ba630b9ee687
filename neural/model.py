"""The transformer shared by the masked diffusion model (MDM) and the autoregressive baseline (AR).

One block type serves both (NEURAL.md): pre-norm, LayerNorm without bias, rotary position
embeddings (no absolute positions), multi-head attention, GELU MLP ``4d``, dropout.

* MDM (MDLM's DiT with time conditioning off): full bidirectional attention; every block is
  modulated by adaLN-Zero whose conditioning is a learned constant vector (the denoiser of a
  masked model needs no ``t``); the output layer is zero-initialised; ids ``0..V-1`` are tokens
  and ``V`` is the mask. SUBS: the mask class gets logit ``-inf`` (probability 0).
* AR: causal attention, no modulation, a BOS id ``V`` before the data; next-token logits over
  ``V`` tokens; decoding with a :class:`KVCache` gives the same logits as the full causal forward.

The output layer (and the log-softmax that follows) always runs in float32, also under bf16
autocast.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import ModelConfig

__all__ = ["Transformer", "KVCache", "build_model"]


# ---------------------------------------------------------------------------------- rotary
def _rotary_tables(length: int, head_dim: int, device, base: float = 10_000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos``/``sin`` tables ``(length, head_dim / 2)`` in float32 (rotate-half convention)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def _apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` ``(B, H, T, D)`` by the angles of its positions (``cos``, ``sin``: ``(T, D/2)``)."""
    x1, x2 = x.float().chunk(2, dim=-1)
    out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.to(x.dtype)


@dataclass
class KVCache:
    """Keys and values of every layer for AR decoding: ``k[i], v[i]`` are ``(B, H, T_max, D)``."""

    k: list[torch.Tensor]
    v: list[torch.Tensor]
    length: int = 0  # positions filled so far

    @classmethod
    def empty(cls, cfg: ModelConfig, batch: int, max_len: int, device, dtype) -> "KVCache":
        hd = cfg.width // cfg.n_heads
        shape = (batch, cfg.n_heads, max_len, hd)
        return cls(
            [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)],
            [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)],
        )


# ---------------------------------------------------------------------------------- blocks
class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width, bias=False)
        self.proj = nn.Linear(cfg.width, cfg.width, bias=False)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, cos, sin, causal: bool, cache: KVCache | None = None, layer: int = 0):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)  # (B, H, T, D)
        q, k = _apply_rotary(q, cos, sin), _apply_rotary(k, cos, sin)
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:  # AR decoding: append this chunk's keys/values, attend to everything so far
            start = cache.length
            cache.k[layer][:, :, start : start + T] = k
            cache.v[layer][:, :, start : start + T] = v
            k_all, v_all = cache.k[layer][:, :, : start + T], cache.v[layer][:, :, : start + T]
            if T == 1:
                y = F.scaled_dot_product_attention(q, k_all, v_all)
            else:  # a chunk: query i sees cached keys and chunk keys up to i
                allowed = torch.ones(T, start + T, dtype=torch.bool, device=x.device).tril(diagonal=start)
                y = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=allowed)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.dropout(self.proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.width, cfg.mlp_ratio * cfg.width)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.width, cfg.width)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.dropout(self.proj(F.gelu(self.fc(x), approximate="tanh")))


def _modulate(x, shift, scale):
    return x * (1 + scale) + shift


class Block(nn.Module):
    """Pre-norm block; with ``adaln`` the norms are modulated and the branches gated (adaLN-Zero)."""

    def __init__(self, cfg: ModelConfig, adaln: bool):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.width, bias=False)
        self.attn = Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg.width, bias=False)
        self.mlp = MLP(cfg)
        self.adaln = nn.Linear(cfg.cond_dim, 6 * cfg.width) if adaln else None

    def forward(self, x, c, cos, sin, causal, cache=None, layer=0):
        if self.adaln is None:
            x = x + self.attn(self.norm1(x), cos, sin, causal, cache, layer)
            return x + self.mlp(self.norm2(x))
        shift1, scale1, gate1, shift2, scale2, gate2 = self.adaln(c)[:, None, :].chunk(6, dim=-1)  # (1, 1, C) each
        x = x + gate1 * self.attn(_modulate(self.norm1(x), shift1, scale1), cos, sin, causal)
        return x + gate2 * self.mlp(_modulate(self.norm2(x), shift2, scale2))


class Transformer(nn.Module):
    """MDM or AR network (``cfg.kind``): ids ``(B, T)`` -> float32 logits ``(B, T, n_outputs)``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.is_mdm = cfg.kind == "mdm"
        self.embed = nn.Embedding(cfg.n_inputs, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg, adaln=self.is_mdm) for _ in range(cfg.n_layers))
        self.norm_f = nn.LayerNorm(cfg.width, bias=False)
        self.head = nn.Linear(cfg.width, cfg.n_outputs)
        if self.is_mdm:
            self.cond = nn.Parameter(torch.randn(cfg.cond_dim) * 0.02)  # learned constant conditioning
            self.adaln_f = nn.Linear(cfg.cond_dim, 2 * cfg.width)
        self.apply(self._init)
        if self.is_mdm:  # adaLN-Zero: every block starts as the identity; zero-initialised output
            for layer in [b.adaln for b in self.blocks] + [self.adaln_f, self.head]:
                nn.init.zeros_(layer.weight)
                nn.init.zeros_(layer.bias)
        hd = cfg.width // cfg.n_heads
        cos, sin = _rotary_tables(max(cfg.length + 1, 1), hd, device="cpu")
        self.register_buffer("rot_cos", cos, persistent=False)
        self.register_buffer("rot_sin", sin, persistent=False)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def _tables(self, start: int, T: int):
        if start + T > self.rot_cos.shape[0]:  # longer than trained: extend (rotary has no limit)
            hd = self.cfg.width // self.cfg.n_heads
            cos, sin = _rotary_tables(start + T, hd, device=self.rot_cos.device)
            self.rot_cos, self.rot_sin = cos, sin
        return self.rot_cos[start : start + T], self.rot_sin[start : start + T]

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        B, T = ids.shape
        start = cache.length if cache is not None else 0
        cos, sin = self._tables(start, T)
        x = self.embed(ids)  # (B, T, C)
        c = F.silu(self.cond)[None, :] if self.is_mdm else None  # (1, cond_dim)
        for i, block in enumerate(self.blocks):
            x = block(x, c, cos, sin, causal=not self.is_mdm, cache=cache, layer=i)
        if cache is not None:
            cache.length += T
        with torch.autocast(device_type=x.device.type, enabled=False):  # output layer in float32
            x = self.norm_f(x.float())
            if self.is_mdm:
                shift, scale = self.adaln_f(c.float())[:, None, :].chunk(2, dim=-1)
                x = _modulate(x, shift, scale)
            logits = self.head(x)  # (B, T, n_outputs) float32
        if self.is_mdm:  # SUBS: the mask class is never predicted
            logits = logits.clone()
            logits[..., self.cfg.special_id] = float("-inf")
        return logits

    # ------------------------------------------------------------------ MDM
    def denoise_logprobs(self, x_t: torch.Tensor) -> torch.Tensor:
        """SUBS log-probabilities ``log p_theta(x_0^i | x_t)``, ``(B, L, V+1)`` float32.

        Masked positions: the network's law over the ``V`` tokens (mask class ``-inf``).
        Unmasked positions: ``0`` at their own token, ``-inf`` elsewhere (carry-over).
        """
        logp = torch.log_softmax(self(x_t), dim=-1)  # (B, L, V+1)
        observed = x_t != self.cfg.special_id
        copy = torch.full_like(logp, float("-inf"))
        copy.scatter_(-1, x_t.unsqueeze(-1), 0.0)
        return torch.where(observed.unsqueeze(-1), copy, logp)

    # ------------------------------------------------------------------ AR
    def ar_inputs(self, x: torch.Tensor) -> torch.Tensor:
        """BOS followed by ``x[:, :-1]``: the inputs whose next-token targets are ``x``."""
        bos = torch.full_like(x[:, :1], self.cfg.special_id)
        return torch.cat([bos, x[:, :-1]], dim=1)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def build_model(cfg: ModelConfig) -> Transformer:
    return Transformer(cfg)


def ar_nll(model: Transformer, x: torch.Tensor) -> torch.Tensor:
    """Per-sequence AR negative log-likelihood ``-log p(x)`` (nats), ``(B,)`` float32."""
    logp = torch.log_softmax(model(model.ar_inputs(x)), dim=-1)  # (B, L, V)
    return -logp.gather(-1, x.unsqueeze(-1)).squeeze(-1).sum(dim=1)


def mdm_nelbo(
    model: Transformer,
    x: torch.Tensor,
    t: torch.Tensor,
    mask: torch.Tensor,
) -> torch.Tensor:
    """Continuous-time NELBO per sequence and token, ``(B,)``: ``sum_{i masked} -log p(x_i | x_t) / t / L``.

    ``t`` ``(B,)`` are the sequences' times and ``mask`` ``(B, L)`` their masks (drawn with
    probability ``1 - alpha_t``); for the log-linear schedule ``-alpha'_t / (1 - alpha_t) = 1/t``
    exactly (NEURAL.md). Dividing by ``L`` (not the masked count) makes ``exp`` of the mean an
    upper bound on the perplexity.
    """
    x_t = torch.where(mask, model.cfg.special_id, x)
    logp = model.denoise_logprobs(x_t)  # (B, L, V+1)
    nll = -logp.gather(-1, x.unsqueeze(-1)).squeeze(-1)  # (B, L); 0 at unmasked positions
    nll = torch.where(mask, nll, torch.zeros_like(nll))
    return nll.sum(dim=1) / t / x.shape[1]


def stratified_times(batch: int, generator: torch.Generator, t_min: float, device=None) -> torch.Tensor:
    """``t_i = ((u_i + i) / B) mod 1`` mapped affinely to ``[t_min, 1)`` (MDLM's low-discrepancy times)."""
    u = torch.rand(batch, generator=generator, dtype=torch.float64)
    t = torch.remainder((u + torch.arange(batch, dtype=torch.float64)) / batch, 1.0)
    t = (1.0 - t_min) * t + t_min
    return t.to(device=device, dtype=torch.float32)


def draw_masks(t: torch.Tensor, length: int, noise_eps: float, generator: torch.Generator) -> torch.Tensor:
    """Mask each position independently with probability ``1 - alpha_t = (1 - eps) t``, ``(B, L)`` bool."""
    u = torch.rand(t.shape[0], length, generator=generator, dtype=torch.float64)
    return (u < ((1.0 - noise_eps) * t.double().cpu())[:, None]).to(t.device)

