"""Trained models measured against the ground truth (the exact tools of ``numerics``).

* :func:`measure_eps_learning` -- Assumption 4.1 empirically: at random masks of true sequences,
  ``KL(q(x_0^i | x_t) || p_theta(x_0^i | x_t))`` per masked position ``i``, the oracle posterior
  ``q`` from the masked forward-backward; mean (with standard error) and upper quantiles.
* :func:`learning_part` -- the learning term of Lemma B.3's chain rule for the factorized sampler
  with schedule ``pi``: ``(1/L) E_{x, tau} sum_j KL(q_j || p_theta,j | x revealed before j's step)``,
  the part of the learned sampler's Jensen bound that the oracle does not pay (docs/neural.md).
* :func:`sample_quality` -- generative perplexity (exact ``log q``, delta-method interval) and
  sequence error rate (exact support check, Clopper-Pearson interval) of any array of samples,
  by ``numerics.sampling.montecarlo``.
* :func:`evaluate_checkpoint` -- all of these versus the number of steps ``N`` (MDM through the
  shared factorized sampler with ``ddpm_cache``, realized NFE reported; the oracle through the same
  sampler at the same seeds on request) or for KV-cached AR decoding, next to true samples of ``q``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from numerics.estimate import CONFIDENCE
from numerics.inference.forward_backward import masked_forward_backward
from numerics.languages.hmm import Language
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.montecarlo import IntervalEstimate, gen_ppl_from_loglik, ser_from_loglik
from numerics.sampling.samplers import sample_factorized
from numerics.schedules import Schedule

from .data import exact_loglik, language_fingerprint, resolve_language
from .model import AutoregressiveTransformer, Transformer
from .sample import TorchDenoiser, sample_ar, sampler_schedule

__all__ = ["EpsLearning", "LearningPart", "SampleQuality", "measure_eps_learning", "learning_part",
           "position_kl", "sample_quality", "sampler_curve", "evaluate_checkpoint", "EPS_QUANTILES"]

EPS_QUANTILES = (0.5, 0.9, 0.99)


def _denoiser(model) -> TorchDenoiser:
    return TorchDenoiser(model) if isinstance(model, Transformer) else model


def position_kl(den, language: Language, tokens: np.ndarray, mask: np.ndarray, backend: str = "auto") -> np.ndarray:
    """``KL(q(x_j | x_obs) || p(x_j | x_obs))`` at every masked position, ``(B, L)`` float64 (0 where unmasked).

    ``q`` is the exact masked forward-backward of ``language``; ``den`` has
    ``log_probs(tokens, mask) -> (B, L, V)`` float64 (:class:`TorchDenoiser`, or an oracle
    wrapper). ``KL = sum_v q_v (log q_v - log p_v)`` over ``q_v > 0``; ``+inf`` when ``p_v = 0 < q_v``
    (never clipped). ``tokens`` must be samples of the language (else the posterior is undefined).
    """
    q = masked_forward_backward(language, tokens, mask, backend=backend).marginals  # (B, L, V)
    if not np.all(np.isfinite(q[mask])):
        raise ValueError("oracle posterior undefined: the sequences are not samples of the language")
    logp = den.log_probs(tokens, mask)  # (B, L, V)
    pos = q > 0
    with np.errstate(divide="ignore"):
        logq = np.log(np.where(pos, q, 1.0))
    terms = np.where(pos, q * (logq - np.where(pos, logp, 0.0)), 0.0)
    return np.where(mask, terms.sum(axis=-1), 0.0)


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
    position is masked with probability ``t`` (at least one position). ``model`` is an MDM
    :class:`Transformer` or anything with ``log_probs`` (:func:`position_kl`).
    """
    den = _denoiser(model)
    seqs = np.asarray(sequences, dtype=np.int64)
    n, L = seqs.shape
    kls = []
    for s in range(0, n, batch_size):
        x = seqs[s : s + batch_size]
        t = rng.random(x.shape[0])
        mask = rng.random(x.shape) < t[:, None]
        none = ~mask.any(axis=1)
        mask[none, rng.integers(0, L, size=int(none.sum()))] = True
        kls.append(position_kl(den, language, x, mask, backend)[mask])
    kl = np.concatenate(kls)
    qs = np.quantile(kl, EPS_QUANTILES)
    return EpsLearning(
        mean=float(kl.mean()), stderr=float(kl.std(ddof=1) / math.sqrt(kl.size)) if kl.size > 1 else float("nan"),
        quantiles={f"q{round(100 * q)}": float(v) for q, v in zip(EPS_QUANTILES, qs)},
        max=float(kl.max()), positions=int(kl.size), sequences=int(n),
    )


@dataclass(frozen=True)
class LearningPart:
    """The learning term of the learned sampler's Jensen bound, per token (nats).

    Attributes
    ----------
    value, stderr : float
        ``(1/L) E_{x ~ q, tau ~ pi} sum_j KL(q_j || p_theta,j)`` with position ``j``'s context the
        tokens revealed before its step, and the standard error over sequences.
    samples : int
        Sequences (one ``(x, tau, j)`` draw each).
    masked_fraction, step_kl : (samples,) float64
        For each draw, the fraction of positions still masked when ``j``'s step was sampled
        (``1 - u_{i-1}`` in law) and the mean KL over the positions revealed at that step: the
        learning error step by step.
    """

    value: float
    stderr: float
    samples: int
    masked_fraction: np.ndarray
    step_kl: np.ndarray


def learning_part(model, language: Language, sequences: np.ndarray, schedule: Schedule, rng: np.random.Generator,
                  *, batch_size: int = 256, backend: str = "auto") -> LearningPart:
    """Estimate ``(1/L) E sum_j KL(q_j || p_theta,j | x_{tau_{<i(j)}})`` for the factorized sampler (Lemma B.3).

    Lemma B.3 splits each step's term of ``KL(q || p(.|tau))`` exactly into the oracle's
    conditional total correlation (the factorization gap, independent of the model) plus
    ``sum_{j in tau_i} KL(q_j || p_theta,j)``, both given the tokens revealed before step ``i``.
    Unbiased estimator, one network call per sequence: draw ``tau ~ pi`` (i.i.d. steps), a uniform
    position ``j`` and ``i = tau(j)``; mask the positions with step ``>= i``; average the KL over
    ``tau_i`` (the positions revealed with ``j``). Since ``P(i) = |tau_i| / L`` this averages to
    ``(1/L) sum_j KL_j``.
    """
    den = _denoiser(model)
    seqs = np.asarray(sequences, dtype=np.int64)
    n, L = seqs.shape
    vals, fracs = np.empty(n), np.empty(n)
    for s in range(0, n, batch_size):
        x = seqs[s : s + batch_size]
        b = x.shape[0]
        reveal_steps = schedule.sample_steps(rng, (b, L))
        pick = reveal_steps[np.arange(b), rng.integers(0, L, size=b)]  # (b,) the step of a uniform position
        mask = reveal_steps >= pick[:, None]
        same = reveal_steps == pick[:, None]
        kl = position_kl(den, language, x, mask, backend)
        vals[s : s + b] = (kl * same).sum(axis=1) / same.sum(axis=1)
        fracs[s : s + b] = mask.mean(axis=1)
    se = float(vals.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return LearningPart(float(vals.mean()), se, int(n), fracs, vals)


@dataclass(frozen=True)
class SampleQuality:
    """Ground-truth scores of a set of samples.

    Attributes
    ----------
    gen_ppl : IntervalEstimate
        ``exp(-sum log q(x) / (n L))`` over all samples with its delta-method interval; ``inf``
        when a sample is outside the support (then see ``gen_ppl_valid``).
    gen_ppl_valid : float
        The same over the samples inside the support only (NaN when there is none).
    ser : IntervalEstimate
        Fraction of samples with ``q(x) = 0`` (exact check) and its Clopper-Pearson interval.
    samples, length : int
    """

    gen_ppl: IntervalEstimate
    gen_ppl_valid: float
    ser: IntervalEstimate
    samples: int
    length: int

    def to_json(self) -> dict:
        """Flat JSON: ``gen_ppl``, ``gen_ppl_ci``, ``gen_ppl_valid``, ``ser``, ``ser_ci``, ``invalid``, ``samples``, ``length``."""
        return {"gen_ppl": self.gen_ppl.value, "gen_ppl_ci": [self.gen_ppl.ci_low, self.gen_ppl.ci_high],
                "gen_ppl_valid": self.gen_ppl_valid, "ser": self.ser.value, "ser_ci": [self.ser.ci_low, self.ser.ci_high],
                "invalid": int(round(self.ser.value * self.samples)), "samples": self.samples, "length": self.length}


def sample_quality(language: Language, tokens: np.ndarray, confidence: float = CONFIDENCE) -> SampleQuality:
    """Exact generative perplexity and SER of ``tokens`` ``(n, L)`` under ``language`` (``n >= 2``)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    n, L = tokens.shape
    ll = exact_loglik(language, tokens)
    valid = np.isfinite(ll)
    gv = gen_ppl_from_loglik(ll[valid], L, confidence).value if valid.sum() >= 2 else float("nan")
    return SampleQuality(gen_ppl_from_loglik(ll, L, confidence), gv, ser_from_loglik(ll, confidence), n, L)


def _quality_row(language: Language, tokens: np.ndarray, prefixes: Sequence[int]) -> dict:
    row = sample_quality(language, tokens).to_json()
    if prefixes:
        row["prefix_ser"] = {}
        for p in prefixes:
            q = sample_quality(language, tokens[:, :p]).to_json()
            row["prefix_ser"][str(p)] = {"ser": q["ser"], "ser_ci": q["ser_ci"]}
    return row


def sampler_curve(den, language: Language, length: int, n_steps: Sequence[int], seeds: Sequence, *,
                  samples: int, schedule: str = "mdlm", batch_size: int | None = None, draw: str = "float64",
                  prefixes: Sequence[int] = (), label: str = "model", decoders: Mapping[int, Any] | None = None
                  ) -> list[dict]:
    """Generative perplexity, SER and realized NFE of the factorized sampler with denoiser ``den`` at each ``N``.

    One row per ``N`` (``ddpm_cache``, ``schedule``), the sampler's random stream seeded by the
    matching entry of ``seeds``: the learned model and the oracle run through this one function
    with the same seeds, so their samples differ only by the denoiser. ``decoders`` (``N -> ``a
    decoder of :mod:`numerics.sampling.decoders`): run that decoder at each ``N`` instead (float64
    draws; ``nfe`` and ``calls`` the mean network calls per sequence, ``sampler_parameters`` its
    every parameter).
    """
    rows = []
    bs = batch_size or samples
    for N, seed in zip(n_steps, seeds):
        t0 = time.perf_counter()
        if decoders is not None:
            dec = decoders[int(N)]
            res = dec.sample(den, samples, length, np.random.default_rng(seed), batch_size=bs)
            calls = float(np.mean(res.calls))
            rows.append({"sampler": dec.name, "sampler_name": dec.label, "sampler_parameters": dec.parameters(),
                         "denoiser": label, "n_steps": int(N), "nfe": calls, "calls": calls,
                         "seconds": time.perf_counter() - t0, **_quality_row(language, res.tokens, prefixes)})
            continue
        sched = sampler_schedule(schedule, int(N))
        res = sample_factorized(den, sched, samples, length, np.random.default_rng(seed), batch_size=bs,
                                cache=True, draw=draw)
        rows.append({"sampler": "ddpm_cache", "denoiser": label, "n_steps": int(N), "nfe": res.mean_nfe,
                     "expected_nfe": sched.expected_nfe(length, min(bs, samples)),
                     "seconds": time.perf_counter() - t0, **_quality_row(language, res.tokens, prefixes)})
    return rows


def evaluate_checkpoint(
    checkpoint,
    n_steps: Sequence[int] = (8, 16, 32, 64, 128, 256, 512, 1024, 2048),
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
    learning: bool = False,
    prefixes: Sequence[int] = (),
    decoders: Mapping[int, Any] | None = None,
) -> dict:
    """Generative perplexity, SER and NFE versus steps (MDM) or of KV-cached decoding (AR).

    Returns a JSON-ready dict: the checkpoint's config and step, the true-sample reference
    (``samples`` fresh draws of ``q``), one row per ``N`` (MDM: realized mean NFE per batch and the
    schedule's expected NFE; ``oracle=True`` adds the oracle denoiser through the same sampler with
    the same random stream; ``learning=True`` adds :func:`learning_part` at that ``N`` on
    ``eps_sequences`` true sequences), and for an MDM the measured ``eps_learning``.
    ``prefixes``: also the SER of the first ``L'`` tokens of every sample, for each ``L'`` given
    (the interval language's length-``L'`` sampler has exactly this law for the oracle, since its
    intervals are independent). ``decoders``: ``N -> `` a decoder run instead of the factorized
    sampler at that ``N`` (:func:`sampler_curve`; no ``learning`` part, which is the factorized
    sampler's).
    """
    from .train import load_checkpoint, pick_device

    ck = checkpoint if hasattr(checkpoint, "config") else load_checkpoint(checkpoint)
    cfg = ck.config
    lang = language if language is not None else resolve_language(cfg.language)
    if ck.language_fingerprint not in (None, language_fingerprint(lang)):
        raise ValueError(f"the checkpoint was trained on a different language than {cfg.language!r}")
    dev = pick_device(device)
    model = ck.build_model(dev)
    L = cfg.model.length
    ref_seed, eps_seed, ar_seed, *step_seeds = np.random.SeedSequence(seed).spawn(3 + len(n_steps))
    truth = lang.sample(samples, L, np.random.default_rng(ref_seed))
    result: dict = {
        "checkpoint": str(getattr(ck, "path", "")), "model": cfg.model.kind, "language": cfg.language,
        "config": cfg.to_dict(), "trained_steps": ck.step, "complete": ck.complete, "length": L,
        "samples": samples, "seed": seed, "draw": draw, "ci_level": CONFIDENCE, "device": str(dev),
        "reference": {"true_samples": _quality_row(lang, truth, prefixes)}, "rows": [],
    }
    bs = batch_size or samples
    if isinstance(model, AutoregressiveTransformer):
        t0 = time.perf_counter()
        res = sample_ar(model, samples, np.random.default_rng(ar_seed), batch_size=bs, draw=draw)
        result["rows"].append({"sampler": "ar-kv-cache", "n_steps": L, "nfe": float(res.decode_steps),
                               "seconds": time.perf_counter() - t0, **_quality_row(lang, res.tokens, prefixes)})
        return result
    result["schedule"] = schedule
    den = TorchDenoiser(model)
    sample_seeds, learn_seeds = zip(*(ss.spawn(2) for ss in step_seeds))
    curve = sampler_curve(den, lang, L, n_steps, sample_seeds, samples=samples, schedule=schedule, batch_size=bs,
                          draw=draw, prefixes=prefixes, decoders=decoders)
    if learning and decoders is not None:
        raise ValueError("the learning part is the factorized sampler's (Jensen bound): not with a decoder")
    if learning:
        for row, learn_seed in zip(curve, learn_seeds):
            val = lang.sample(eps_sequences, L, np.random.default_rng(learn_seed))
            part = learning_part(den, lang, val, sampler_schedule(schedule, row["n_steps"]),
                                 np.random.default_rng(learn_seed))
            row["learning_part"] = {"value": part.value, "stderr": part.stderr, "samples": part.samples,
                                    "masked_fraction": part.masked_fraction.tolist(), "step_kl": part.step_kl.tolist()}
    oracle_curve = (sampler_curve(OracleDenoiser(lang, strict=False), lang, L, n_steps, sample_seeds, samples=samples,
                                  schedule=schedule, batch_size=bs, draw=draw, prefixes=prefixes, label="oracle",
                                  decoders=decoders)
                    if oracle else [])
    for k, row in enumerate(curve):
        result["rows"].append(row)
        if oracle_curve:
            result["rows"].append(oracle_curve[k])
    val = lang.sample(eps_sequences, L, np.random.default_rng(eps_seed))
    result["eps_learning"] = asdict(measure_eps_learning(den, lang, val, np.random.default_rng(eps_seed)))
    return result
