"""The neural networks: configs, SUBS invariants, the NELBO's 1/t weight, rotary/causality, KV cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from neural.config import (
    DataConfig,
    ModelConfig,
    RunConfig,
    TrainConfig,
    make_config,
    run_config_from_dict,
)
from neural.diffusion import ar_nll, draw_masks, masked_nll, stratified_times
from neural.model import KVCache, Transformer, build_model

torch.set_num_threads(1)

ATOL_F32 = 1e-5  # float32 round-off of two orderings of the same attention arithmetic
FALSE_FAILURE = 1e-3  # per chi-squared / binomial test, at the fixed seeds used here


def _model(kind: str, V: int = 5, L: int = 7, seed: int = 0, scramble: bool = True) -> Transformer:
    torch.manual_seed(seed)
    m = build_model(ModelConfig(kind=kind, vocab_size=V, length=L, width=32, n_layers=2, n_heads=2, cond_dim=8))
    if scramble:  # leave the zero init so that outputs depend on the input
        with torch.no_grad():
            for p in m.parameters():
                p.add_(0.3 * torch.randn_like(p))
    return m.eval()


# ----------------------------------------------------------------------------- configs
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "gpt"}, "kind"),
        ({"vocab_size": 1}, "vocab_size"),
        ({"length": 0}, "length"),
        ({"width": 30, "n_heads": 4}, "divisible"),
        ({"width": 12, "n_heads": 4}, "even"),
        ({"dropout": 1.0}, "dropout"),
        ({"n_layers": 2.5}, "n_layers"),
    ],
)
def test_bad_model_configs_rejected(kwargs, match):
    base = {"kind": "mdm", "vocab_size": 4, "length": 8, "width": 16, "n_layers": 1, "n_heads": 2}
    with pytest.raises(ValueError, match=match):
        ModelConfig(**{**base, **kwargs})


@pytest.mark.parametrize(
    "kwargs, match",
    [({"lr": 0.0}, "lr"), ({"lr": 1e-3, "lr_min": 1e-2}, "lr_min"), ({"batch_size": 0}, "batch_size"),
     ({"warmup_frac": 1.0}, "warmup_frac"), ({"grad_clip": 0.0}, "grad_clip"), ({"ema_decay": 1.0}, "ema_decay"),
     ({"t_min": 0.0}, "t_min"), ({"betas": (0.9,)}, "betas"), ({"seed": -1}, "seed"),
     ({"nelbo_estimator": "count", "count_power": -1.0}, "count_power"),
     ({"nelbo_estimator": "time", "count_power": 1.0}, "count_power=1.0 needs nelbo_estimator='count'"),
     ({"compile": 1}, "compile must be True or False")],
)
def test_bad_train_configs_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_bad_presets_and_fields_rejected():
    with pytest.raises(ValueError, match="unknown config"):
        make_config("huge", language="x", kind="mdm", vocab_size=8)
    with pytest.raises(ValueError, match="bad config field"):
        make_config("tiny", language="x", kind="mdm", vocab_size=8, overrides={"model": {"depth": 3}})
    with pytest.raises(ValueError, match="section"):
        make_config("tiny", language="x", kind="mdm", vocab_size=8, overrides={"optim": {}})
    with pytest.raises(ValueError):
        DataConfig(n_train=0)


def test_presets_match_the_recipe_and_round_trip():
    paper = make_config("paper", language="2gram", kind="mdm", vocab_size=8)
    assert (paper.model.width, paper.model.n_layers, paper.model.n_heads, paper.model.length) == (512, 8, 8, 512)
    assert paper.model.dropout == 0.1 and paper.train.lr == 3e-4 and paper.train.betas == (0.9, 0.999)
    assert paper.train.warmup_frac == 0.1 and paper.train.ema_decay == 0.9999 and paper.train.grad_clip == 1.0
    assert make_config("paper", language="4gram", kind="ar", vocab_size=8).model.n_layers == 10
    small = make_config("cpu-small", language="2gram", kind="mdm", vocab_size=8, seed=3)
    assert (small.model.length, small.model.width, small.model.n_layers) == (32, 64, 4)
    assert small.train.seed == 3
    for cfg in (paper, small):
        assert run_config_from_dict(cfg.to_dict()) == cfg
    assert isinstance(small, RunConfig)


# ----------------------------------------------------------------------------- SUBS
def test_zero_initialised_output_gives_uniform_law():
    m = _model("mdm", scramble=False)
    x = torch.randint(0, 6, (3, 7))
    logp = m.denoise_logprobs(torch.full_like(x, 5))
    assert torch.allclose(logp[..., :5].exp(), torch.full((3, 7, 5), 0.2), atol=1e-7)


def test_subs_invariants():
    V, L = 5, 7
    m = _model("mdm", V, L)
    g = torch.Generator().manual_seed(1)
    x0 = torch.randint(0, V, (16, L), generator=g)
    mask = torch.rand(16, L, generator=g) < 0.5
    x_t = torch.where(mask, V, x0)
    logp = m.denoise_logprobs(x_t)  # (B, L, V+1)
    probs = logp.exp()
    assert torch.all(probs[..., V] == 0), "the mask class must get probability exactly 0"
    assert torch.allclose(probs.sum(-1), torch.ones(16, L), atol=1e-6)
    # revealed tokens are copied: probability one on the observed token, zero elsewhere
    obs = ~mask
    assert torch.all(probs[obs].argmax(-1) == x0[obs]) and torch.all(probs[obs].max(-1).values == 1.0)
    assert torch.all((probs[obs] > 0).sum(-1) == 1)
    # the masked positions' law is not degenerate
    assert torch.all(probs[mask][:, :V].min(-1).values > 0)


def test_nelbo_weight_is_one_over_t():
    # alpha_t = 1 - (1 - eps) t: -alpha'_t / (1 - alpha_t) = (1 - eps) / ((1 - eps) t) = 1/t
    eps = 1e-3
    for t in (1e-3, 0.1, 0.5, 0.999):
        h = 1e-7
        dalpha = ((1 - (1 - eps) * (t + h)) - (1 - (1 - eps) * (t - h))) / (2 * h)
        assert -dalpha / ((1 - eps) * t) == pytest.approx(1 / t, rel=1e-8)
    # the implemented loss: sum over masked positions of -log p(x_i | x_t), times 1/t, over L
    V, L = 5, 7
    m = _model("mdm", V, L)
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, V, (6, L), generator=g)
    mask = torch.rand(6, L, generator=g) < 0.6
    mask[:, 0] = True
    t = torch.tensor([0.01, 0.1, 0.3, 0.5, 0.7, 0.99])
    got = masked_nll(m, x, mask) / t / L
    logp = m.denoise_logprobs(torch.where(mask, V, x)).gather(-1, x[..., None])[..., 0]
    want = torch.stack([-(logp[b][mask[b]]).sum() / t[b] / L for b in range(6)])
    assert torch.allclose(got, want, rtol=1e-6)


def test_stratified_times_one_per_stratum():
    B, t_min = 64, 1e-3
    t = stratified_times(B, torch.Generator().manual_seed(0), t_min)
    assert torch.all((t >= t_min) & (t < 1))
    strata = torch.floor((t - t_min) / (1 - t_min) * B).long()
    assert sorted(strata.tolist()) == list(range(B))


def test_mask_rate_is_one_minus_alpha():
    eps, t, L, B = 1e-3, 0.37, 64, 200
    mask = draw_masks(torch.full((B,), t), L, eps, torch.Generator().manual_seed(3))
    k, n = int(mask.sum()), B * L
    assert stats.binomtest(k, n, (1 - eps) * t).pvalue > FALSE_FAILURE


# ----------------------------------------------------------------------------- attention
def test_mdm_bidirectional_and_ar_causal():
    V, L = 5, 7
    x = torch.randint(0, V, (2, L), generator=torch.Generator().manual_seed(4))
    y = x.clone()
    y[:, -1] = (y[:, -1] + 1) % V
    ar = _model("ar", V, L)
    la, lb = ar(ar.inputs_for(x)), ar(ar.inputs_for(y))
    assert torch.allclose(la[:, :-1], lb[:, :-1], atol=ATOL_F32)  # the future does not leak
    x2 = x.clone()
    x2[:, 1] = (x2[:, 1] + 1) % V
    assert not torch.allclose(ar(ar.inputs_for(x))[:, 3], ar(ar.inputs_for(x2))[:, 3], atol=1e-4)
    md = _model("mdm", V, L)
    assert not torch.allclose(md(x)[:, 0], md(y)[:, 0], atol=1e-4)  # the last token informs the first


def test_kv_cache_matches_full_causal_forward():
    V, L, B = 5, 9, 3
    m = _model("ar", V, L, seed=5)
    x = torch.randint(0, V, (B, L), generator=torch.Generator().manual_seed(5))
    ids = m.inputs_for(x)
    with torch.no_grad():
        full = m(ids)  # (B, L, V)
        cache = KVCache.empty(m.cfg, B, L, "cpu", torch.float32)
        steps = torch.cat([m(ids[:, j : j + 1], cache=cache) for j in range(L)], dim=1)
        cache2 = KVCache.empty(m.cfg, B, L, "cpu", torch.float32)
        chunked = torch.cat([m(ids[:, :4], cache=cache2), m(ids[:, 4:5], cache=cache2), m(ids[:, 5:], cache=cache2)], 1)
    assert cache.length == L and cache2.length == L
    assert torch.allclose(steps, full, atol=ATOL_F32)
    assert torch.allclose(chunked, full, atol=ATOL_F32)


def test_ar_nll_is_a_normalised_law():
    V, L = 2, 3
    m = _model("ar", V, L, seed=6)
    seqs = torch.tensor([[(k >> (L - 1 - j)) & 1 for j in range(L)] for k in range(V**L)])
    with torch.no_grad():
        total = torch.exp(-ar_nll(m, seqs).double()).sum().item()
    assert total == pytest.approx(1.0, abs=1e-5)
    assert math.isfinite(total)


def test_rotary_extends_past_training_length():
    m = _model("mdm", 5, 4)
    with torch.no_grad():
        out = m(torch.randint(0, 5, (2, 11)))
    assert out.shape == (2, 11, 6) and torch.isfinite(out[..., :5]).all()
    assert np.isneginf(out[..., 5].numpy()).all()


@pytest.mark.parametrize("kind", ["mdm", "ar"])
def test_paper_config_builds_and_runs_one_sequence(kind):
    cfg = make_config("paper", language="2gram", kind=kind, vocab_size=8).model
    m = build_model(cfg).eval()
    d = cfg.width
    per_block = 12 * d * d + 5 * d + (6 * d * (cfg.cond_dim + 1) if kind == "mdm" else 0)  # attn, MLP (+bias), norms, adaLN
    assert abs(m.num_params() - cfg.n_layers * per_block) / m.num_params() < 0.01  # ~25-29M parameters
    with torch.no_grad():
        out = m(torch.randint(0, 8, (1, cfg.length)))
    assert out.shape == (1, 512, 9 if kind == "mdm" else 8)


def test_absolute_positions_break_shift_invariance_and_are_bounded():
    cfg = ModelConfig(kind="mdm", vocab_size=5, length=6, width=16, n_layers=1, n_heads=2, cond_dim=4,
                      absolute_positions=True)
    torch.manual_seed(0)
    m = build_model(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
        x = torch.randint(0, 5, (2, 6), generator=torch.Generator().manual_seed(1))
        out = m(x)
        m.positions.weight.zero_()  # without them the network is the rotary-only one
        assert not torch.allclose(m(x)[..., :5], out[..., :5], atol=1e-4)
    with pytest.raises(ValueError, match="absolute position"):
        m(torch.full((1, 7), 5))
    with pytest.raises(ValueError, match="absolute_positions"):
        ModelConfig(kind="mdm", vocab_size=5, length=6, absolute_positions=1)
