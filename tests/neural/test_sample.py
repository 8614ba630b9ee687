"""Sampling from networks: the learned denoiser through the shared sampler, AR decoding, eps_learning."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from neural.config import ModelConfig
from neural.diffusion import ar_nll
from neural.evaluate import measure_eps_learning, sample_quality
from neural.model import Transformer, build_model
from neural.sample import TorchDenoiser, draw_categorical, sample_ar
from neural.timing import compare_sampling
from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.hmm import NGram
from numerics.sampling.denoiser import Denoiser, OracleDenoiser
from numerics.sampling.samplers import sample_factorized
from numerics.schedules import cosine, linear
from tests.gof import assert_gof
from tests.tolerances import RTOL_EXACT

torch.set_num_threads(1)



def _model(kind: str, V: int, L: int, seed: int = 0, scale: float = 0.5) -> Transformer:
    torch.manual_seed(seed)
    m = build_model(ModelConfig(kind=kind, vocab_size=V, length=L, width=16, n_layers=1, n_heads=2, cond_dim=8))
    with torch.no_grad():  # move away from the (uniform) zero init: a peaked, input-dependent law
        for p in m.parameters():
            p.add_(scale * torch.randn_like(p))
    return m.eval()


def _enumerate_law(den, V: int, L: int, pi: np.ndarray) -> dict[tuple, float]:
    """Brute-force output law of the factorized sampler: sum over all step assignments
    (prod of pi) of prod over steps of the denoiser's marginals at the revealed positions."""
    law: dict[tuple, float] = {}
    N = len(pi)
    for assign in itertools.product(range(N), repeat=L):
        w = float(np.prod([pi[a] for a in assign]))
        if w == 0:
            continue
        partial = {(): 1.0}  # revealed values (position-ordered) -> probability
        states = [(np.zeros(L, np.int64), np.ones(L, bool), 1.0)]
        for i in range(N):
            pos = [j for j in range(L) if assign[j] == i]
            if not pos:
                continue
            nxt = []
            for tok, mask, p in states:
                probs = den(tok[None], mask[None])[0]
                for vals in itertools.product(range(V), repeat=len(pos)):
                    q = p * float(np.prod([probs[j, v] for j, v in zip(pos, vals)]))
                    t2, m2 = tok.copy(), mask.copy()
                    t2[pos], m2[pos] = vals, False
                    nxt.append((t2, m2, q))
            states = nxt
        del partial
        for tok, _, p in states:
            law[tuple(tok)] = law.get(tuple(tok), 0.0) + w * p
    return law


def _gof(counts: dict, law: dict, n: int) -> None:
    keys = sorted(law)
    assert sum(counts.get(k, 0) for k in counts if k not in law) == 0
    assert sum(counts.values()) == n
    assert_gof(np.array([counts.get(k, 0) for k in keys], float), np.array([law[k] for k in keys]))


def _counts(tokens: np.ndarray) -> dict:
    out: dict = {}
    for row in map(tuple, tokens):
        out[row] = out.get(row, 0) + 1
    return out


def test_torch_denoiser_is_a_denoiser_with_subs_outputs():
    V, L = 4, 6
    den = TorchDenoiser(_model("mdm", V, L))
    assert isinstance(den, Denoiser) and den.vocab_size == V
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, V, (5, L))
    mask = rng.random((5, L)) < 0.5
    probs = den(tokens, mask)
    assert probs.dtype == np.float64 and probs.shape == (5, L, V)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=RTOL_EXACT)
    obs = ~mask
    assert np.all(probs[obs].argmax(-1) == tokens[obs]) and np.all(probs[obs].max(-1) == 1.0)
    assert np.all(probs[mask] > 0)
    with pytest.raises(ValueError, match="masked diffusion"):
        TorchDenoiser(_model("ar", V, L))
    with pytest.raises(ValueError, match="observed tokens"):
        den(np.full((1, L), V), np.zeros((1, L), bool))


def test_revealed_tokens_never_change_and_reveal_steps_follow_schedule():
    V, L, n = 4, 6, 400
    den = TorchDenoiser(_model("mdm", V, L, seed=1))
    seen = []

    class Recorder:
        vocab_size = V

        def __call__(self, tokens, mask):
            seen.append((tokens.copy(), mask.copy()))
            return den(tokens, mask)

    sched = cosine(7)
    res = sample_factorized(Recorder(), sched, n, L, np.random.default_rng(1), cache=True)
    assert res.tokens.min() >= 0 and res.tokens.max() < V  # the mask id is never emitted
    for (t0, m0), (t1, m1) in zip(seen, seen[1:]):
        assert np.all(m1 <= m0)  # nothing is re-masked
        assert np.array_equal(t1[~m0], t0[~m0])  # revealed tokens never change
    assert np.array_equal(seen[-1][0][~seen[-1][1]], res.tokens[~seen[-1][1]])
    counts = np.bincount(res.reveal_steps.ravel() - 1, minlength=sched.n_steps)
    assert_gof(counts, sched.pi, "reveal steps")  # also: no step of probability 0 is ever drawn
    assert res.nfe[0] == len(seen) and res.nfe[0] <= sched.n_steps


def _one_stage_mdlm(den, schedule, n, L, rng):
    """MDLM's ddpm update in float64: every masked position draws among V tokens and [m] with weights
    p(v) (m_{i-1} - m_i) and m_i (m = 1 - u); a reference independent of the two-stage sampler."""
    V = den.vocab_size
    m = 1.0 - schedule.u
    tokens = np.zeros((n, L), np.int64)
    mask = np.ones((n, L), bool)
    for i in range(1, schedule.n_steps + 1):
        probs = den(tokens, mask)
        b, j = np.nonzero(mask)
        w = np.concatenate([probs[b, j] * (m[i - 1] - m[i]), np.full((b.size, 1), m[i])], axis=1)
        choice = draw_categorical(w / w.sum(1, keepdims=True), rng)
        hit = choice < V
        tokens[b[hit], j[hit]] = choice[hit]
        mask[b[hit], j[hit]] = False
    assert not mask.any()
    return tokens


def test_float64_two_stage_one_stage_and_float32_samplers_match_the_exact_law():
    V, L, n = 2, 3, 4000
    den = TorchDenoiser(_model("mdm", V, L, seed=2, scale=0.3))  # a spread law: every cell has >= 5 expected samples
    sched = linear(2)
    law = _enumerate_law(den, V, L, sched.pi)
    assert sum(law.values()) == pytest.approx(1.0, rel=1e-9)
    two = sample_factorized(den, sched, n, L, np.random.default_rng(3), draw="float64").tokens
    one = _one_stage_mdlm(den, sched, n, L, np.random.default_rng(4))
    f32 = sample_factorized(den, sched, n, L, np.random.default_rng(5), draw="float32").tokens
    for tokens in (two, one, f32):
        _gof(_counts(tokens), law, n)
    # the factorized law is not the law of an independent-position sampler: the test has power
    assert max(law.values()) > 1.5 / V**L


def test_ar_sampling_matches_the_model_law():
    V, L, n = 2, 3, 4000
    m = _model("ar", V, L, seed=3, scale=1.0)
    seqs = torch.tensor(list(itertools.product(range(V), repeat=L)))
    with torch.no_grad():
        p = torch.exp(-ar_nll(m, seqs).double()).numpy()
    law = {tuple(s.tolist()): float(q) for s, q in zip(seqs, p)}
    res = sample_ar(m, n, np.random.default_rng(6), batch_size=1000)
    assert res.decode_steps == L and res.batches == 4
    _gof(_counts(res.tokens), law, n)
    f32 = sample_ar(m, 200, np.random.default_rng(7), draw="float32").tokens
    assert f32.shape == (200, L) and f32.min() >= 0 and f32.max() < V
    with pytest.raises(ValueError, match="autoregressive"):
        sample_ar(_model("mdm", V, L), 2, np.random.default_rng(0))


def _lang() -> NGram:
    return NGram(2, np.array([0.5, 0.3, 0.2]), np.array([[0.7, 0.3, 0.0], [0.2, 0.3, 0.5], [0.5, 0.25, 0.25]]))


class _LogProbs:
    """A denoiser given by a function of (tokens, mask) -> probabilities, with log_probs."""

    def __init__(self, fn):
        self.fn = fn

    def log_probs(self, tokens, mask):
        with np.errstate(divide="ignore"):
            return np.log(self.fn(tokens, mask))


def test_eps_learning_zero_for_the_oracle_and_exact_for_the_uniform_model():
    lang, L = _lang(), 6
    seqs = lang.sample(64, L, np.random.default_rng(8))
    oracle = OracleDenoiser(lang)
    e0 = measure_eps_learning(_LogProbs(oracle), lang, seqs, np.random.default_rng(9))
    assert abs(e0.mean) < RTOL_EXACT and e0.max < 1e-12 and e0.positions >= 64
    uniform = _LogProbs(lambda t, m: np.full(t.shape + (3,), 1 / 3))
    e1 = measure_eps_learning(uniform, lang, seqs, np.random.default_rng(9))
    # the same masks again (same seed): KL(q || uniform) = log V - H(q) per masked position
    rng = np.random.default_rng(9)
    t = rng.random(64)
    mask = rng.random(seqs.shape) < t[:, None]
    none = ~mask.any(1)
    mask[none, rng.integers(0, L, int(none.sum()))] = True
    q = masked_forward_backward(lang, seqs, mask).marginals[mask]
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(q > 0, q * np.log(q), 0.0).sum(1)
    assert e1.mean == pytest.approx(float(np.mean(np.log(3) - h)), rel=RTOL_EXACT)
    assert e1.quantiles["q99"] <= e1.max and e1.positions == int(mask.sum())


def test_sample_quality_exact_support_and_perplexity():
    lang, L = _lang(), 4
    good = lang.sample(30, L, np.random.default_rng(10))
    bad = np.array([[0, 2, 1, 1], [1, 1, 0, 2]])  # 0 -> 2 is forbidden
    sq = sample_quality(lang, np.concatenate([good, bad]))
    assert sq.to_json()["invalid"] == 2 and sq.ser.value == pytest.approx(2 / 32) and sq.gen_ppl.value == np.inf
    assert sq.ser.ci_low < 2 / 32 < sq.ser.ci_high
    ll = masked_forward_backward(lang, good, np.zeros(good.shape, bool)).loglik
    assert sq.gen_ppl_valid == pytest.approx(np.exp(-ll.mean() / L), rel=RTOL_EXACT)
    ok = sample_quality(lang, good)
    assert ok.ser.value == 0 and ok.gen_ppl.value == pytest.approx(sq.gen_ppl_valid)
    assert ok.gen_ppl.ci_low < ok.gen_ppl.value < ok.gen_ppl.ci_high


def test_timing_reports_nfe_and_medians():
    V, L = 4, 8
    res = compare_sampling(_model("mdm", V, L), _model("ar", V, L), batch=3, n_steps=(2, 16), repeats=3, warmup=1)
    assert res["ar"].nfe == L and res["ar"].n_steps == L and len(res["ar"].times) == 3
    assert [r.n_steps for r in res["mdm"]] == [2, 16]
    assert 1 <= res["mdm"][0].nfe <= 2 and 1 <= res["mdm"][1].nfe <= 16
    for r in [res["ar"], *res["mdm"]]:
        assert r.seconds_per_batch == pytest.approx(float(np.median(r.times)))
        assert r.seconds_per_sequence == pytest.approx(r.seconds_per_batch / 3)
