"""The one place where the experiments call into ``numerics``, ``theory`` and ``neural``.

Each function returns plain JSON data (an :class:`numerics.sampling.denoiser.Estimate` becomes
``{"value", "stderr", "method", "samples"}``) and raises :class:`MissingInput` when the part of
the engine it needs has not been built, so the report can say exactly what is missing.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np

from numerics.schedules import Schedule, make_schedule

from ._base import need

__all__ = [
    "estimate_json",
    "load_language",
    "language_order",
    "schedule_for",
    "oracle_samples",
    "oracle_gen_ppl",
    "oracle_ser",
    "data_ppl",
    "jensen_bound_exact",
    "jensen_bound",
    "interval_ser",
    "interval_validity_complement",
    "ser_from_validity",
    "theorem42",
    "b12_schedule",
    "theorem44",
    "theorem44_thresholds",
    "claim_ids",
    "check_claim",
    "train_checkpoint",
    "evaluate_checkpoint",
    "checkpoint_kind",
    "time_sampling",
    "collision_probability",
    "exact_small",
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
    for key, names in (("lower", ("lower", "ci_low")), ("upper", ("upper", "ci_high"))):
        for name in names:
            end = d[name] if name in d else getattr(est, name, None)
            if end is not None:  # an exact Estimate has ci_low = ci_high = None
                out[key] = float(end)
                break
    return out


def load_language(spec: str) -> Any:
    presets = need("numerics.languages.presets", "load_language")
    return presets.load_language(spec)


def language_order(lang: Any) -> int | None:
    """The n-gram order ``n`` of ``lang`` (``None`` for a general HMM)."""
    return int(lang.order) if hasattr(lang, "order") else None


def schedule_for(name: str, n_steps: int) -> Schedule:
    return make_schedule(name, n_steps)


def oracle_samples(lang: Any, schedule: Schedule, n: int, length: int, seed: Any) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences of the oracle factorized sampler (float64 draws) and the realized NFE."""
    samplers = need("numerics.sampling.samplers", "sample_factorized")
    from numerics.sampling.denoiser import OracleDenoiser

    rng = np.random.default_rng(seed)
    res = samplers.sample_factorized(OracleDenoiser(lang), schedule, n, length, rng)
    return np.asarray(res.tokens), np.asarray(res.nfe)


def _montecarlo(name: str) -> Any:
    return getattr(need("numerics.sampling.montecarlo", name), name)


def oracle_gen_ppl(lang: Any, schedule: Schedule, n: int, length: int, seed: Any) -> dict:
    """Generative perplexity ``exp(E_p[-log q(x)] / L)`` of ``n`` oracle samples (exact ``log q``).

    The Monte Carlo function is looked up before anything is sampled.
    """
    fn = _montecarlo("gen_ppl_mc")
    tokens, nfe = oracle_samples(lang, schedule, n, length, seed)
    out = estimate_json(fn(lang, tokens))
    out["nfe_mean"] = float(np.mean(nfe))
    return out


def oracle_ser(lang: Any, schedule: Schedule, n: int, length: int, seed: Any) -> dict:
    """SER of ``n`` oracle samples: the fraction outside the support (exact check, binomial CI)."""
    fn = _montecarlo("ser_mc")
    tokens, nfe = oracle_samples(lang, schedule, n, length, seed)
    out = estimate_json(fn(lang, tokens))
    out["nfe_mean"] = float(np.mean(nfe))
    return out


def data_ppl(lang: Any, length: int, samples: int, seed: Any) -> dict:
    """The data's perplexity ``TER(q) = exp(H(X_1..X_L) / L)``: exact for n-grams, else Monte Carlo."""
    entropy = need("numerics.exact.entropy", "data_perplexity")
    return estimate_json(entropy.data_perplexity(lang, length, samples=max(samples, 2), rng=np.random.default_rng(seed)))


def jensen_bound_exact(lang: Any, schedule: Schedule, length: int) -> dict:
    """``E_tau KL(q || p(.|tau))`` exactly by the Markov chain rule; ``ValueError`` if not a token chain."""
    cr = need("numerics.exact.markov", "jensen_bound_markov")
    return estimate_json(cr.jensen_bound_markov(lang, length, schedule).total)


def jensen_bound(lang: Any, schedule: Schedule, length: int, samples: int, seed: Any) -> dict:
    """``E_tau KL(q || p(.|tau))`` (Lemma B.2's upper bound on ``KL(q || p)``): exact where possible.

    Exact by the chain rule for token-level Markov chains (``numerics.exact.markov``); otherwise
    Rao-Blackwellized Monte Carlo (``numerics.sampling.montecarlo``) with a standard error.
    """
    try:
        return jensen_bound_exact(lang, schedule, length)
    except ValueError:
        pass  # not a first-order chain over tokens: Monte Carlo below
    fn = _montecarlo("kl_jensen_bound_mc")
    return estimate_json(fn(lang, schedule, length, max(samples, 2), np.random.default_rng(seed)))


def interval_ser(schedule: Schedule, length: int, l: int) -> float:
    """Exact SER ``1 - (E[2^-c])^(L/l)`` of the interval language (Example C.7) under ``schedule``."""
    ie = need("numerics.exact.interval", "interval_ser")
    return float(ie.interval_ser(schedule, length, l).probability)


def interval_validity_complement(schedule: Schedule, l: int) -> float:
    """``1 - E[2^-c]`` for one interval (``numerics.exact.interval.interval_validity``'s complement)."""
    ie = need("numerics.exact.interval", "interval_validity")
    return float(ie.interval_validity(schedule, l).complement)


def ser_from_validity(complement: float, length: int, l: int) -> float:
    """``1 - (1 - complement)^(L/l)`` with the same floating-point steps as ``interval_exact.interval_ser``."""
    if length % l:
        raise ValueError(f"length L = {length} is not a multiple of the interval length l = {l}")
    log_valid = (length // l) * math.log1p(-complement) if complement < 1.0 else -math.inf
    return -math.expm1(log_valid)


def theorem42(order: int, vocab: int, n_steps: int, length: int) -> dict:
    """Theorem 4.2's bound on ``log TER(p) - log TER(q)`` at ``N`` steps (``eps_learning = 0``).

    ``eps`` is the smallest value whose Lemma B.12 schedule fits in ``N`` steps
    (``theory.b12_solve_eps``); the bound ``4 eps log|V|`` holds for ``L >= L_0(eps, n)``.
    Returns ``{"eps", "log_ter_gap", "length_threshold", "valid", "b12_steps"}``; ``N = 1`` has
    no B.12 schedule (``log_ter_gap`` None).
    """
    pos = need("theory", "b12_solve_eps", "theorem42_constants")
    if n_steps < 2:
        return {"eps": None, "log_ter_gap": None, "length_threshold": None, "valid": False, "b12_steps": None}
    eps = pos.b12_solve_eps(n_steps, order)
    c = pos.theorem42_constants(eps, order, vocab)
    return {"eps": float(eps), "log_ter_gap": float(c["ter_gap_bound"]), "length_threshold": int(c["L_0"]),
            "valid": bool(length >= c["L_0"]), "b12_steps": int(c["N"])}


def b12_schedule(order: int, n_steps: int) -> Schedule:
    """The Lemma B.12 schedule with the smallest ``eps`` that fits in ``N`` steps."""
    pos = need("theory", "b12_solve_eps", "b12_schedule")
    return pos.b12_schedule(pos.b12_solve_eps(n_steps, order), order)


def theorem44(n_steps: int, length: int, l: int) -> dict:
    """Lemma C.6's lower bound on the interval language's SER, with the oracle's ``p_e = 1/2`` and
    with Theorem 4.4's ``p_e`` for ``eps_learning < 1/128`` (``theory``)."""
    neg = need("theory", "c9_bound", "P_E_PAPER", "p_e")
    pe_oracle = float(neg.p_e(0.0))
    return {"ser_lower": float(neg.c9_bound(n_steps, length, l, pe_oracle)), "p_e": pe_oracle,
            "thm44_ser_lower": float(neg.c9_bound(n_steps, length, l, float(neg.P_E_PAPER))),
            "p_e_thm44": float(neg.P_E_PAPER)}


def theorem44_thresholds(lengths: list[int], l: int) -> dict:
    """Theorem 4.4's constants from ``theory``: the argument's ``C`` and the exact threshold ``N/L``."""
    neg = need("theory", "c9_argument_constant", "true_threshold")
    arg = neg.c9_argument_constant(lengths, l)
    true = neg.true_threshold(lengths, l)
    return {"lengths": [int(x) for x in lengths], "argument_n_max": [int(x) for x in arg.n_max],
            "argument_constant": float(arg.constant), "argument_limit": float(arg.limit),
            "true_n_max": [int(x) for x in true.n_max], "true_constant": float(true.constant),
            "true_limit": float(true.limit)}


def claim_ids() -> list[str]:
    """Every claim id of the theory registry, in paper order (lemmas, theorems and proof steps)."""
    th = need("theory", "claims")
    return [c.id for c in th.claims()]


def check_claim(claim_id: str, instances: int, seed: int) -> dict:
    """``theory.search.run_claim`` on one claim: instances, violations, minimum slack, tightness."""
    th = need("theory", "get")
    search = need("theory.search", "run_claim")
    claim = th.get(claim_id)
    rng = np.random.default_rng([seed, sum(map(ord, claim_id))])
    s = search.run_claim(claim, instances, rng)
    row = {k: getattr(s, k) for k in s.__dataclass_fields__}
    row["title"] = claim.title
    row["relation"] = claim.relation
    row["top_level"] = not claim.paper.startswith("proof of")
    return row


def train_checkpoint(language: str, config: str, minutes: float, seed: int, cache: Any,
                     progress: bool = False) -> str:
    """Train (or resume, or find finished) an MDM of ``config`` on ``language``; the checkpoint path.

    The run lives in ``CACHE/train/<language>-<config>-mdm-s<seed>/`` (``neural.train`` writes
    atomic, resumable checkpoints there), so a re-run of the report resumes or reuses it.
    """
    tr = need("neural.train", "train")
    cf = need("neural.config", "make_config")
    lang = load_language(language)
    run_cfg = cf.make_config(config, language=language, kind="mdm", vocab_size=lang.vocab_size, seed=seed)
    root = Path(cache.root) if getattr(cache, "root", None) is not None else Path("runs")
    out = root / "train" / f"{language}-{config}-mdm-s{seed}"
    result = tr.train(run_cfg, out, language=lang, max_minutes=minutes, progress=progress)
    return str(result.checkpoint)


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def evaluate_checkpoint(path: str, steps: tuple[int, ...], samples: int, eps_masks: int, seed: int,
                        cache: Any) -> dict:
    """``neural.evaluate.evaluate_checkpoint`` with the oracle through the same sampler, cached.

    The cache key holds the checkpoint's content hash, so a retrained checkpoint is re-evaluated.
    """
    ev = need("neural.evaluate", "evaluate_checkpoint")
    key = {"v": 1, "checkpoint": str(path), "sha256": _file_digest(path), "steps": list(steps),
           "samples": samples, "eps_sequences": eps_masks, "seed": seed}
    return cache.get_or_compute("learned-eval", key, lambda: ev.evaluate_checkpoint(
        path, steps, samples=samples, seed=seed, eps_sequences=eps_masks, oracle=True))


def checkpoint_kind(path: str) -> str:
    """``"mdm"`` or ``"ar"``: the model kind stored in a ``neural`` checkpoint."""
    tr = need("neural.train", "load_checkpoint")
    return tr.load_checkpoint(path).config.model.kind


def time_sampling(mdm_checkpoint: str, ar_checkpoint: str, steps: int, batch: int, repeats: int) -> dict:
    """MDM (``ddpm_cache`` at ``steps``) vs AR (KV cache) wall-clock, ``neural.timing`` protocol."""
    tm = need("neural.timing", "compare_sampling")
    tr = need("neural.train", "load_checkpoint")
    mdm = tr.load_checkpoint(mdm_checkpoint).build_model("cpu")
    ar = tr.load_checkpoint(ar_checkpoint).build_model("cpu")
    return tm.compare_sampling(mdm, ar, batch=batch, steps=(steps,), repeats=repeats)


def collision_probability(schedule: Schedule, length: int) -> float:
    """``delta_N = 1 - L! e_L(pi)``: probability that two of ``L`` positions share a step (Lemma C.1)."""
    ie = need("numerics.exact.interval", "sequence_collision_probability")
    return float(ie.sequence_collision_probability(schedule, length).probability)


def exact_small(lang: Any, schedule: Schedule, length: int) -> dict:
    """Exact ``KL(q || p)`` of the sampler's mixture law and ``E_tau KL(q || p(.|tau))`` (tiny ``L``).

    ``numerics.exact.dp.dp_metrics``: the output law by a DP over revealed words, the Jensen bound
    from the exact information curve of the same joint table -- two different quantities.
    """
    dp = need("numerics.exact.dp", "dp_metrics")
    m = dp.dp_metrics(lang, length, schedule)
    return {"kl": float(m.kl.value), "kl_jensen_bound": float(m.kl_jensen_bound.value),
            "ser": float(m.ser.value), "ser_kl_certificate": float(m.ser_kl_certificate.value),
            "gen_ppl": float(m.gen_ppl.value), "ter": float(m.ter.value), "ter_data": float(m.ter_data.value),
            "method": str(m.kl.method)}
