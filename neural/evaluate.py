"""Trained models measured against the ground truth (the exact tools of ``numerics``).

* :func:`measure_eps_learning` -- Assumption 4.1 empirically: at random masks of true sequences,
  ``KL(q(x_0^i | x_t) || p_theta(x_0^i | x_t))`` per masked position ``i``, the oracle posterior
  ``q`` from the masked forward-backward; mean (with standard error) and upper quantiles.
* :func:`sample_quality` -- generative perplexity ``exp(-sum log q(x) / (n L))`` (exact ``log q``)
  with a delta-method CI and the sequence error rate (exact support check, ``log q = -inf``) with
  a Clopper-Pearson CI, for any array of samples.
* :func:`evaluate_checkpoint` -- both, versus the number of steps ``N`` (MDM through the shared
  ``ddpm_cache`` sampler, NFE reported) or for KV-cached AR decoding, next to the same numbers
  for true samples from ``q``.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.hmm import Language

from .data import exact_loglik, language_fingerprint, resolve_language
from .model import Transformer
from .sample import TorchDenoiser, sample_ar

__all__ = ["EpsLearning", "SampleQuality", "measure_eps_learning", "sample_quality", "evaluate_checkpoint",
           "CI_LEVEL", "EPS_QUANTILES"]

CI_LEVEL = 0.95
EPS_QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class EpsLearning:
    """Per-position ``KL(oracle || model)`` at random masks (nats).

    Attributes
    ----------
    mean, stderr : float
        Mean over masked positions and its standard error (positions of one sequence are
        treated as independent; a lower bound on the true standard error).
    quantiles : dict
        ``{"q50": .., "q90": .., "q99": ..}`` of the per-position KL.
    max : float
        Largest per-position KL seen (``eps_learning`` of Assumption 4.1 is a supremum, so the
        upper quantiles matter more than the mean).
    positions, sequences : int
        Masked positions measured and the sequences they came from.
    mask_rate : str
        How masks were drawn.
    """

    mean: float
    stderr: float
    quantiles: dict
    max: float
    positions: int
    sequences: int
    mask_rate: str = "t ~ U(0,1) per sequence, each position masked with probability t"


def measure_eps_learning(
    model, language: Language, sequences: np.ndarray, rng: np.random.Generator, *,
    batch_size: int = 256, backend: str = "auto",
) -> EpsLearning:
    """``KL(q(x_0^i | x_t) || p_theta(x_0^i | x_t))`` at masked positions of random masks of ``sequences``.

    ``sequences`` ``(n, L)`` are true samples of ``language``; each gets ``t ~ U(0, 1)`` and every
    position is masked with probability ``t`` (at least one position). The oracle posterior is the
    exact masked forward-backward; the model's law is its SUBS softmax in float64.
    ``KL = sum_v q_v (log q_v - log p_v)`` over ``q_v > 0`` (``+inf`` if the model gives 0 where
    ``q > 0``, never clipped). ``model`` is an MDM :class:`Transformer` or anything with a
    ``log_probs(tokens, mask) -> (B, L, V)`` float64 method (e.g. :class:`TorchDenoiser`).
    """
    den = TorchDenoiser(model) if isinstance(model, Transformer) else model
    seqs = np.asarray(sequences, dtype=np.int64)
    n, L = seqs.shape
    kls = []
    for s in range(0, n, batch_size):
        x = seqs[s : s + batch_size]
        t = rng.random(x.shape[0])
        mask = rng.random(x.shape) < t[:, None]
        none = ~mask.any(axis=1)
        mask[none, rng.integers(0, L, size=int(none.sum()))] = True
        q = masked_forward_backward(language, x, mask, backend=backend).marginals  # (b, L, V)
        if not np.all(np.isfinite(q[mask])):
            raise ValueError("oracle posterior undefined: the sequences are not samples of the language")
        logp = den.log_probs(x, mask)  # (b, L, V)
        qm, lpm = q[mask], logp[mask]  # (m, V)
        pos = qm > 0
        with np.errstate(divide="ignore"):
            logq = np.where(pos, np.log(np.where(pos, qm, 1.0)), 0.0)
        terms = np.where(pos, qm * (logq - np.where(pos, lpm, 0.0)), 0.0)
        kls.append(terms.sum(axis=1))
    kl = np.concatenate(kls)
    qs = np.quantile(kl, EPS_QUANTILES)
    return EpsLearning(
        mean=float(kl.mean()), stderr=float(kl.std(ddof=1) / math.sqrt(kl.size)) if kl.size > 1 else float("nan"),
        quantiles={f"q{round(100 * q)}": float(v) for q, v in zip(EPS_QUANTILES, qs)},
        max=float(kl.max()), positions=int(kl.size), sequences=int(n),
    )


@dataclass(frozen=True)
class SampleQuality:
    """Ground-truth scores of a set of samples.

    Attributes
    ----------
    gen_ppl : float
        ``exp(-sum log q(x) / (n L))`` over all samples; ``inf`` when a sample is outside the
        support (then see ``gen_ppl_valid``).
    gen_ppl_ci : (float, float)
        Delta-method ``CI_LEVEL`` interval: ``exp(m -+ z s / sqrt(n))`` with ``m``, ``s`` the mean
        and standard deviation of ``-log q(x) / L``.
    gen_ppl_valid : float
        The same over the samples inside the support only.
    ser, ser_ci : float, (float, float)
        Fraction of samples with ``q(x) = 0`` and its Clopper-Pearson interval.
    samples, length : int
    """

    gen_ppl: float
    gen_ppl_ci: tuple
    gen_ppl_valid: float
    ser: float
    ser_ci: tuple
    invalid: int
    samples: int
    length: int


def sample_quality(language: Language, tokens: np.ndarray) -> SampleQuality:
    """Exact generative perplexity and SER of ``tokens`` ``(n, L)`` under ``language``."""
    tokens = np.asarray(tokens, dtype=np.int64)
    n, L = tokens.shape
    ll = exact_loglik(language, tokens)
    valid = np.isfinite(ll)
    k = int((~valid).sum())
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CI_LEVEL, method="exact")
    z = stats.norm.ppf(0.5 + CI_LEVEL / 2)

    def ppl(v):
        if v.size == 0:
            return float("nan"), (float("nan"), float("nan"))
        m = float(-v.mean() / L)
        s = float((v / L).std(ddof=1)) if v.size > 1 else float("nan")
        h = z * s / math.sqrt(v.size)
        return math.exp(m), (math.exp(m - h), math.exp(m + h))

    if k:
        g, gci = float("inf"), (float("inf"), float("inf"))
    else:
        g, gci = ppl(ll)
    gv, _ = ppl(ll[valid])
    return SampleQuality(g, gci, gv, k / n, (float(ci.low), float(ci.high)), k, n, L)


def _sampler_schedule(name: str, n_steps: int):
    from numerics.schedules import make_schedule

    if name == "mdlm":  # MDLM's times: linear down to 1e-5, the rest in the last step
        return make_schedule("loglinear", n_steps, t_min=1e-5)
    return make_schedule(name, n_steps)


def evaluate_checkpoint(
    checkpoint,
    steps: Sequence[int] = (8, 16, 32, 64, 128, 256, 512, 1024, 2048),
    *,
    samples: int = 256,
    seed: int = 0,
    schedule: str = "mdlm",
    draw: str = "float64",
    batch_size: int | None = None,
    eps_sequences: int = 256,
    language: Language | None = None,
    device: str | None = None,
    oracle: bool = False,
) -> dict:
    """Generative perplexity and SER versus steps (MDM) or of KV-cached decoding (AR).

    Returns a JSON-ready dict: the checkpoint's config and step, the true-sample reference
    (``samples`` fresh draws of ``q``), one row per ``N`` (MDM: realized mean NFE per batch and the
    schedule's expected NFE; ``oracle=True`` adds the oracle denoiser through the same sampler),
    and for an MDM the measured ``eps_learning``.
    """
    from .train import load_checkpoint, pick_device

    ck = checkpoint if not isinstance(checkpoint, (str, bytes)) and hasattr(checkpoint, "config") else load_checkpoint(checkpoint)
    cfg = ck.config
    lang = language if language is not None else resolve_language(cfg.language)
    if ck.language_fingerprint not in (None, language_fingerprint(lang)):
        raise ValueError(f"the checkpoint was trained on a different language than {cfg.language!r}")
    dev = pick_device(device)
    model = ck.build_model(dev)
    L = cfg.model.length
    root = np.random.SeedSequence(seed)
    ref_seed, eps_seed, *step_seeds = root.spawn(2 + len(steps))
    truth = lang.sample(samples, L, np.random.default_rng(ref_seed))
    result: dict = {
        "checkpoint": str(getattr(ck, "path", "")), "model": cfg.model.kind, "language": cfg.language,
        "config": cfg.to_dict(), "trained_steps": ck.step, "complete": ck.complete,
        "samples": samples, "seed": seed, "draw": draw, "ci_level": CI_LEVEL, "device": str(dev),
        "reference": {"true_samples": asdict(sample_quality(lang, truth))},
        "rows": [],
    }
    bs = batch_size or samples
    if cfg.model.kind == "ar":
        t0 = time.perf_counter()
        res = sample_ar(model, samples, np.random.default_rng(step_seeds[0] if step_seeds else eps_seed),
                        batch_size=bs, draw=draw)
        result["rows"].append({"sampler": "ar-kv-cache", "steps": L, "nfe": float(res.decode_steps),
                               "seconds": time.perf_counter() - t0, **asdict(sample_quality(lang, res.tokens))})
        return result
    from numerics.sampling.samplers import sample_factorized
    from numerics.sampling.denoiser import OracleDenoiser

    result["schedule"] = schedule
    for N, ss in zip(steps, step_seeds):
        sched = _sampler_schedule(schedule, int(N))
        runs = [("model", TorchDenoiser(model))] + ([("oracle", OracleDenoiser(lang))] if oracle else [])
        for who, den in runs:
            t0 = time.perf_counter()
            res = sample_factorized(den, sched, samples, L, np.random.default_rng(ss), batch_size=bs,
                                    cache=True, draw=draw)
            nfe = np.asarray(res.nfe, dtype=np.float64)
            result["rows"].append({
                "sampler": "ddpm_cache", "denoiser": who, "steps": int(N), "nfe": float(nfe.mean()),
                "expected_nfe": sched.expected_nfe(L, min(bs, samples)),
                "seconds": time.perf_counter() - t0, **asdict(sample_quality(lang, res.tokens)),
            })
    val = lang.sample(eps_sequences, L, np.random.default_rng(eps_seed))
    result["eps_learning"] = asdict(measure_eps_learning(model, lang, val, np.random.default_rng(eps_seed)))
    return result

