"""The noise process and the NELBO estimators: the three forms agree exactly, and the exact posterior
gives ``-log q(x)`` for every order."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import integrate

from neural.config import ModelConfig
from neural.diffusion import (
    Autoregressive,
    MaskedDiffusion,
    count_law,
    draw_count_masks,
    masked_nll,
    objective_for,
    order_nelbo,
    random_ranks,
    stratified_counts,
)
from neural.model import build_model
from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.hmm import NGram
from tests.tolerances import RTOL_EXACT

torch.set_num_threads(1)

RTOL_F32 = 1e-5  # float32 network outputs summed in two different orders
RTOL_QUAD = 1e-7  # scipy quad of a polynomial in t times 1/t (smooth, no singularity left)


def _net(V: int = 3, L: int = 3, seed: int = 0):
    torch.manual_seed(seed)
    m = build_model(ModelConfig(kind="mdm", vocab_size=V, length=L, width=16, n_layers=1, n_heads=2, cond_dim=4))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.5 * torch.randn_like(p))
    return m.eval()


def _subset_sums(m, x: torch.Tensor) -> dict[tuple, float]:
    """``S(M) = sum_{i in M} -log p(x_i | x_{not M})`` for every non-empty mask ``M`` of one sequence."""
    L = x.shape[1]
    out = {}
    with torch.no_grad():
        for bits in itertools.product([False, True], repeat=L):
            if any(bits):
                out[bits] = float(masked_nll(m, x, torch.tensor([bits])).double())
    return out


def test_time_count_and_order_forms_are_the_same_nelbo():
    L = 3
    m = _net(L=L)
    x = torch.tensor([[2, 0, 1]])
    S = _subset_sums(m, x)
    # count form: (1/L) sum_k (1/k) mean_{|M|=k} S(M)
    count = sum(np.mean([s for M, s in S.items() if sum(M) == k]) / k for k in range(1, L + 1)) / L
    # order form averaged over all L! orders
    orders = []
    for perm in itertools.permutations(range(L)):
        ranks = torch.tensor([perm])  # rank of each position
        with torch.no_grad():
            orders.append(float(order_nelbo(m, x, ranks).double()))
    assert np.mean(orders) == pytest.approx(count, rel=RTOL_F32)
    # time form with eps -> 0: int_0^1 (1/(t L)) sum_M t^|M| (1-t)^(L-|M|) S(M) dt
    integrand = lambda t: sum(t ** (sum(M) - 1) * (1 - t) ** (L - sum(M)) * s for M, s in S.items()) / L
    time_form, _ = integrate.quad(integrand, 0.0, 1.0)
    assert time_form == pytest.approx(count, rel=RTOL_QUAD)
    # count form with a non-uniform count law pi and the weights the estimator itself applies to each k
    for power in (0.5, 1.0, 2.0):
        noise = MaskedDiffusion("count", count_power=power).draw(4000, L, torch.Generator().manual_seed(0))
        k = noise.mask.sum(dim=1)
        weight = {j: noise.weight[k == j].unique() for j in range(1, L + 1)}
        assert all(w.numel() == 1 for w in weight.values())  # every k drawn, its weight a function of k alone
        pi = count_law(L, power).numpy()  # the law of the draws (test_count_law_draws_are_stratified)
        weighted = sum(pi[j - 1] * float(weight[j]) * np.mean([s for M, s in S.items() if sum(M) == j])
                       for j in range(1, L + 1))
        assert weighted == pytest.approx(count, rel=RTOL_F32)


@pytest.mark.parametrize("power", [0.0, 1.0, 2.5])
def test_count_law_draws_are_stratified(power):
    B, L = 200, 16
    pi = count_law(L, power)
    assert pi.sum().item() == pytest.approx(1.0, rel=RTOL_EXACT)
    torch.testing.assert_close(pi * torch.arange(1, L + 1, dtype=torch.float64) ** power, pi[0].expand(L),
                               rtol=RTOL_EXACT, atol=0)  # pi(k) k^power is the same for every k
    for seed in range(5):
        noise = MaskedDiffusion("count", count_power=power).draw(B, L, torch.Generator().manual_seed(seed))
        k = noise.mask.sum(dim=1)
        # one point per stratum [b/B, (b+1)/B): an interval of mass pi(k) holds every stratum inside it
        # and 0 or 1 of the (at most two) strata across its ends, so k is hit within 2 of B pi(k) times
        hits = torch.bincount(k, minlength=L + 1)[1:].double()
        assert torch.all((hits - B * pi).abs() < 2.0), (hits, B * pi)
    if power == 1.0:  # every masked position weighs H_L / L
        harmonic = sum(1.0 / k for k in range(1, L + 1))
        np.testing.assert_allclose(noise.weight.double(), harmonic / L, rtol=1e-6)
    if power == 0.0:  # the uniform law keeps weight 1/k
        np.testing.assert_allclose(noise.weight.double(), (1.0 / k.double()).float().double(), rtol=0)


class _OracleNet:
    """The exact posterior of a language behind the network interface ``order_nelbo`` uses (float64)."""

    def __init__(self, lang, V):
        self.lang = lang
        self.cfg = ModelConfig(kind="mdm", vocab_size=V, length=4, width=4, n_layers=1, n_heads=2, cond_dim=2)

    def denoise_logprobs(self, x_t: torch.Tensor) -> torch.Tensor:
        tokens = x_t.numpy()
        mask = tokens == self.cfg.special_id
        q = masked_forward_backward(self.lang, np.where(mask, 0, tokens), mask).marginals
        with np.errstate(divide="ignore"):
            logq = np.log(q)
        out = np.full(tokens.shape + (self.cfg.vocab_size + 1,), -np.inf)
        out[..., : self.cfg.vocab_size] = logq
        b, j = np.nonzero(~mask)
        out[b, j] = -np.inf
        out[b, j, tokens[b, j]] = 0.0
        return torch.as_tensor(out)


def test_order_nelbo_of_the_exact_posterior_is_the_exact_nll_for_every_order():
    lang = NGram(2, np.array([0.5, 0.3, 0.2]), np.array([[0.7, 0.3, 0.0], [0.2, 0.3, 0.5], [0.5, 0.25, 0.25]]))
    L = 4
    x = lang.sample(6, L, np.random.default_rng(0))
    ll = masked_forward_backward(lang, x, np.zeros(x.shape, bool)).loglik
    net = _OracleNet(lang, 3)
    for seed in range(3):
        ranks = random_ranks(6, L, torch.Generator().manual_seed(seed))
        got = order_nelbo(net, torch.as_tensor(x), ranks).numpy()
        np.testing.assert_allclose(got, -ll / L, rtol=RTOL_EXACT)


def test_count_masks_have_exactly_k_masked_and_counts_are_stratified():
    g = torch.Generator().manual_seed(1)
    B, L = 64, 8
    k = stratified_counts(B, L, g)
    assert sorted(torch.bincount(k, minlength=L + 1).tolist()[1:]) == [B // L] * L  # every k equally often
    mask = draw_count_masks(k, L, g)
    assert torch.equal(mask.sum(dim=1), k)
    noise = MaskedDiffusion("count").draw(B, L, g)
    assert torch.allclose(noise.weight.double(), 1.0 / noise.mask.sum(dim=1).double())
    t_noise = MaskedDiffusion("time", noise_eps=1e-3, t_min=1e-3).draw(B, L, g)
    assert t_noise.mask.shape == (B, L) and torch.all(t_noise.weight > 0)


def test_objectives_are_resolved_once_by_kind():
    assert isinstance(objective_for("ar"), Autoregressive) and objective_for("ar").copies(7) == 1
    assert isinstance(objective_for("mdm"), MaskedDiffusion) and objective_for("mdm").copies(7) == 7
    with pytest.raises(ValueError, match="kind"):
        objective_for("gpt")
    with pytest.raises(ValueError, match="estimator"):
        MaskedDiffusion("sometimes")
    with torch.no_grad():
        loss = objective_for("mdm").loss(_net(), torch.tensor([[0, 1, 2]]), MaskedDiffusion("count").draw(1, 3, torch.Generator()))
    assert loss.shape == (1,) and math.isfinite(float(loss))
