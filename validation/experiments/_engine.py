"""The one place where the experiments call into ``numerics``, ``theory`` and ``neural``.

Each function returns plain JSON data (an :class:`numerics.denoiser.Estimate` becomes
``{"value", "stderr", "method", "samples"}``) and raises :class:`MissingInput` when the part of
the engine it needs has not been built, so the report can say exactly what is missing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numerics.schedules import Schedule, make_schedule

from ._base import MissingInput, need

__all__ = [
    "estimate_json",
    "load_language",
    "language_order",
    "schedule_for",
    "oracle_samples",
    "gen_ppl",
    "ser",
    "data_ppl",
    "jensen_bound",
]


def estimate_json(est: Any) -> dict:
    """An ``Estimate`` (or anything with value/stderr/method/samples) as a dict of plain values."""
    if isinstance(est, dict):
        d = dict(est)
    else:
        d = {k: getattr(est, k) for k in ("value", "stderr", "method", "samples") if hasattr(est, k)}
    out = {"value": float(d["value"]) if d.get("value") is not None else None,
           "stderr": float(d.get("stderr", 0.0) or 0.0),
           "method": str(d.get("method", "?")),
           "samples": int(d.get("samples", 0) or 0)}
    for key in ("lower", "upper"):
        if key in d or hasattr(est, key):
            out[key] = float(d[key] if key in d else getattr(est, key))
    return out


def load_language(spec: str) -> Any:
    presets = need("numerics.presets", "load_language")
    return presets.load_language(spec)


def language_order(lang: Any) -> int | None:
    """The n-gram order ``n`` of ``lang`` (``None`` for a general HMM)."""
    return int(lang.order) if hasattr(lang, "order") else None


def schedule_for(name: str, n_steps: int) -> Schedule:
    return make_schedule(name, n_steps)


def oracle_samples(lang: Any, schedule: Schedule, n: int, length: int, seed: Any) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences of the oracle factorized sampler (float64 draws) and the realized NFE."""
    samplers = need("numerics.samplers", "sample_factorized")
    from numerics.denoiser import OracleDenoiser

    rng = np.random.default_rng(seed)
    res = samplers.sample_factorized(OracleDenoiser(lang), schedule, n, length, rng)
    return np.asarray(res.tokens), np.asarray(res.nfe)


def gen_ppl(lang: Any, tokens: np.ndarray) -> dict:
    """Generative perplexity ``exp(E_p[-log q(x)] / L)`` of ``tokens`` with exact ``log q``."""
    mc = need("numerics.montecarlo", "gen_ppl")
    return estimate_json(mc.gen_ppl(lang, tokens))


def ser(lang: Any, tokens: np.ndarray) -> dict:
    """SER: the fraction of ``tokens`` outside the support of ``lang`` (exact check, binomial CI)."""
    mc = need("numerics.montecarlo", "ser")
    return estimate_json(mc.ser(lang, tokens))


def data_ppl(lang: Any, length: int, samples: int, seed: Any) -> dict:
    """The data's perplexity ``TER(q) = exp(H(X_1..X_L) / L)``: exact for n-grams, else Monte Carlo."""
    entropy = need("numerics.entropy", "data_perplexity")
    return estimate_json(entropy.data_perplexity(lang, length, samples=max(samples, 2), rng=np.random.default_rng(seed)))


def jensen_bound(lang: Any, schedule: Schedule, length: int, samples: int, seed: Any) -> dict:
    """``E_tau KL(q || p(.|tau))`` (Lemma B.2's upper bound on ``KL(q || p)``): exact where possible."""
    chain_rule = None
    try:
        chain_rule = need("numerics.chain_rule", "jensen_bound")
    except MissingInput:
        pass
    if chain_rule is not None:
        try:
            return estimate_json(chain_rule.jensen_bound(lang, schedule, length))
        except (ValueError, NotImplementedError):
            pass  # not a language the exact method covers: Monte Carlo below
    mc = need("numerics.montecarlo", "jensen_bound_mc")
    return estimate_json(mc.jensen_bound_mc(lang, schedule, length, samples, np.random.default_rng(seed)))


def interval_ser(schedule: Schedule, length: int, l: int) -> float:
    """Exact SER ``1 - (E[2^-c])^(L/l)`` of the interval language (Example C.7) under ``schedule``."""
    ie = need("numerics.interval_exact", "interval_ser")
    r = ie.interval_ser(schedule, length, l)
    return float(getattr(r, "value", r))


def theorem42(order: int, vocab: int, n_steps: int, length: int) -> dict:
    """Theorem 4.2's bound on ``log TER(p) - log TER(q)`` at ``N`` steps (``eps_learning = 0``).

    Returns ``{"eps", "log_ter_gap" (= 4 eps log|V|), "length_threshold" (L_0), "valid" (L >= L_0)}``.
    """
    t = need("theory", "theorem42_bound")
    return dict(t.theorem42_bound(order=order, vocab=vocab, steps=n_steps, length=length))


def theorem44(n_steps: int, length: int, l: int) -> dict:
    """Lemma C.6 / Theorem 4.4's lower bound on the SER of the interval language with its ``p_e``."""
    t = need("theory", "theorem44_bound")
    return dict(t.theorem44_bound(steps=n_steps, length=length, l=l))


def check_claims(instances: int, lemmas: tuple[str, ...], seed: int, progress: bool) -> list[dict]:
    """Run ``theory``'s checks over every claim: one row per claim (instances, violations, slack...)."""
    t = need("theory", "check_all")
    rows = t.check_all(instances=instances, lemmas=list(lemmas) or None, seed=seed)
    return [dict(r) if isinstance(r, dict) else {k: getattr(r, k) for k in r.__dataclass_fields__} for r in rows]


def train_checkpoint(language: str, config: str, minutes: float, seed: int, cache: Any) -> str:
    """Train (or find in the cache) an MDM of ``config`` on ``language``; returns the checkpoint path."""
    train = need("neural.train", "train")
    raise MissingInput("the report's training hook is not wired to `neural.train` yet")


def evaluate_checkpoint(path: str, steps: tuple[int, ...], samples: int, eps_masks: int, seed: int,
                        cache: Any) -> dict:
    """Evaluate a checkpoint against the ground truth: gen. perplexity / SER vs steps, eps_learning."""
    evaluate = need("neural.evaluate", "evaluate_checkpoint")
    raise MissingInput("the report's evaluation hook is not wired to `neural.evaluate` yet")
