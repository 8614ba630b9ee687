"""The transformer shared by the masked diffusion model (MDM) and the autoregressive baseline (AR).

One block type serves both (docs/neural.md): pre-norm, LayerNorm without bias, rotary position
embeddings (plus learned absolute ones only when the config asks), multi-head attention, GELU MLP ``4d``, dropout. The two
kinds differ in three places, each resolved once by the class (:func:`build_model` picks it):

* :class:`MaskedDiffusionTransformer` (MDLM's DiT with time conditioning off): full
  bidirectional attention; every block is modulated by adaLN-Zero whose conditioning is a learned
  constant vector (the denoiser of a masked model needs no ``t``); zero-initialised output layer;
  ids ``0..V-1`` are tokens and ``V`` is the mask. SUBS: the mask class gets logit ``-inf``.
* :class:`AutoregressiveTransformer`: causal attention, no modulation, a BOS id ``V`` before the
  data; next-token logits over ``V`` tokens; decoding with a :class:`KVCache` gives the same
  logits as the full causal forward.

The output layer (and the log-softmax that follows) always runs in float32, also under bf16
autocast. The losses live in :mod:`neural.diffusion`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import ModelConfig

__all__ = ["Transformer", "MaskedDiffusionTransformer", "AutoregressiveTransformer", "KVCache", "build_model"]


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
    def empty(cls, cfg: ModelConfig, batch: int, max_len: int, device, dtype) -> KVCache:
        hd = cfg.width // cfg.n_heads
        shape = (batch, cfg.n_heads, max_len, hd)
        return cls(
            [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)],
            [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)],
        )


# ---------------------------------------------------------------------------------- blocks
class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, causal: bool):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.causal = causal
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width, bias=False)
        self.proj = nn.Linear(cfg.width, cfg.width, bias=False)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, cos, sin, cache: KVCache | None = None, layer: int = 0):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)  # (B, H, T, D)
        q, k = _apply_rotary(q, cos, sin), _apply_rotary(k, cos, sin)
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
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

    def __init__(self, cfg: ModelConfig, causal: bool, adaln: bool):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.width, bias=False)
        self.attn = Attention(cfg, causal)
        self.norm2 = nn.LayerNorm(cfg.width, bias=False)
        self.mlp = MLP(cfg)
        self.adaln = nn.Linear(cfg.cond_dim, 6 * cfg.width) if adaln else None

    def forward(self, x, c, cos, sin, cache=None, layer=0):
        if self.adaln is None:
            x = x + self.attn(self.norm1(x), cos, sin, cache, layer)
            return x + self.mlp(self.norm2(x))
        shift1, scale1, gate1, shift2, scale2, gate2 = self.adaln(c)[:, None, :].chunk(6, dim=-1)  # (1, 1, C) each
        x = x + gate1 * self.attn(_modulate(self.norm1(x), shift1, scale1), cos, sin)
        return x + gate2 * self.mlp(_modulate(self.norm2(x), shift2, scale2))


# ---------------------------------------------------------------------------------- models
class Transformer(nn.Module):
    """The shared trunk: ids ``(B, T)`` -> float32 logits ``(B, T, n_outputs)``.

    Subclasses set ``kind`` and ``causal`` and may add a constant conditioning vector
    (:meth:`_conditioning`) and post-process the logits (:meth:`_head`).
    """

    kind: str = ""
    causal: bool = False

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.kind != self.kind:
            raise ValueError(f"{type(self).__name__} needs a config of kind {self.kind!r}, got {cfg.kind!r}")
        self.cfg = cfg
        adaln = self._adaln()
        self.embed = nn.Embedding(cfg.n_inputs, cfg.width)
        self.positions = nn.Embedding(cfg.length, cfg.width) if cfg.absolute_positions else None
        self.blocks = nn.ModuleList(Block(cfg, self.causal, adaln) for _ in range(cfg.n_layers))
        self.norm_f = nn.LayerNorm(cfg.width, bias=False)
        self.head = nn.Linear(cfg.width, cfg.n_outputs)
        self._extra_parameters()
        self.apply(self._init)
        self._zero_init()
        hd = cfg.width // cfg.n_heads
        cos, sin = _rotary_tables(max(cfg.length + 1, 1), hd, device="cpu")
        self.register_buffer("rot_cos", cos, persistent=False)
        self.register_buffer("rot_sin", sin, persistent=False)

    # hooks of the subclasses
    def _adaln(self) -> bool:
        return False

    def _extra_parameters(self) -> None:
        pass

    def _zero_init(self) -> None:
        pass

    def _conditioning(self) -> torch.Tensor | None:
        return None

    def _head(self, x: torch.Tensor, c: torch.Tensor | None) -> torch.Tensor:
        return self.head(x)

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
        T = ids.shape[1]
        start = cache.length if cache is not None else 0
        cos, sin = self._tables(start, T)
        x = self.embed(ids)  # (B, T, C)
        if self.positions is not None:
            if start + T > self.cfg.length:
                raise ValueError(f"absolute position embeddings cover L = {self.cfg.length} positions, got {start + T}")
            x = x + self.positions(torch.arange(start, start + T, device=ids.device))
        c = self._conditioning()  # (1, cond_dim) or None
        for i, block in enumerate(self.blocks):
            x = block(x, c, cos, sin, cache=cache, layer=i)
        if cache is not None:
            cache.length += T
        with torch.autocast(device_type=x.device.type, enabled=False):  # output layer in float32
            return self._head(self.norm_f(x.float()), c)  # (B, T, n_outputs) float32

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class MaskedDiffusionTransformer(Transformer):
    """The MDM: bidirectional, adaLN-Zero with a learned constant conditioning, SUBS output."""

    kind = "mdm"
    causal = False

    def _adaln(self) -> bool:
        return True

    def _extra_parameters(self) -> None:
        self.cond = nn.Parameter(torch.randn(self.cfg.cond_dim) * 0.02)  # learned constant conditioning
        self.adaln_f = nn.Linear(self.cfg.cond_dim, 2 * self.cfg.width)

    def _zero_init(self) -> None:  # adaLN-Zero: every block starts as the identity; zero-initialised output
        for layer in [b.adaln for b in self.blocks] + [self.adaln_f, self.head]:
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def _conditioning(self) -> torch.Tensor:
        return F.silu(self.cond)[None, :]

    def _head(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift, scale = self.adaln_f(c.float())[:, None, :].chunk(2, dim=-1)
        logits = self.head(_modulate(x, shift, scale)).clone()
        logits[..., self.cfg.special_id] = float("-inf")  # SUBS: the mask class is never predicted
        return logits

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


class AutoregressiveTransformer(Transformer):
    """The AR baseline: causal, no modulation, BOS input, next-token logits over ``V`` tokens."""

    kind = "ar"
    causal = True

    def inputs_for(self, x: torch.Tensor) -> torch.Tensor:
        """BOS followed by ``x[:, :-1]``: the inputs whose next-token targets are ``x``."""
        bos = torch.full_like(x[:, :1], self.cfg.special_id)
        return torch.cat([bos, x[:, :-1]], dim=1)


_MODELS: dict[str, type[Transformer]] = {"mdm": MaskedDiffusionTransformer, "ar": AutoregressiveTransformer}


def build_model(cfg: ModelConfig) -> Transformer:
    """The network of ``cfg.kind`` (the one place the kind picks a class)."""
    return _MODELS[cfg.kind](cfg)
