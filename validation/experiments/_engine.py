"""The one place where the experiments call into ``numerics``, ``theory`` and ``neural``.

Each function returns plain JSON data (an :class:`numerics.estimate.Estimate` becomes
``{"value", "stderr", "method", "samples"}``). ``numerics`` and ``theory`` are imported here
directly: a module that is renamed or deleted fails the import of the experiments, and so every
test of them. ``neural`` (torch) is imported inside the functions that train, evaluate or time a
model, so that the oracle experiments run without loading torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import theory
from numerics.exact import entropy as _entropy
from numerics.exact import interval as _interval_exact
from numerics.exact import markov as _markov
from numerics.exact.dp import dp_metrics
from numerics.languages.presets import load_language as _load_preset
from numerics.metrics import jensen_bound as _jensen_bound
from numerics.sampling import montecarlo as _mc
from numerics.sampling.denoiser import OracleDenoiser
from numerics.sampling.samplers import sample_factorized
from numerics.schedules import Schedule, make_schedule
from theory.search import run_claim

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
    "interval_validity",
    "interval_ser_from_validity",
    "theorem42",
    "b12_schedule",
    "theorem44",
    "theorem44_thresholds",
    "claim_ids",
    "check_claim",
    "checkpoint_kind",
    "collision_probability",
    "exact_small",
    "fitted_summary",
    "pair_informations",
    "jensen_bound_from_informations",
]


def estimate_json(est: Any) -> dict:
    """The experiments' compact form of an :class:`~numerics.estimate.Estimate`, read off its one
    record (:meth:`~numerics.estimate.Estimate.json_record`): ``value``, ``stderr`` (0 where every
    Monte Carlo sample agrees), ``method``, ``samples``, and ``lower``/``upper`` where the estimator
    gave its own interval (Clopper-Pearson, delta method)."""
    record = est.json_record(meaningful_digits=False)  # later steps compute with it: every bit kept
    out = {"value": None if record["value"] is None else float(record["value"]),
           "stderr": 0.0 if record["stderr"] is None else float(record["stderr"]),
           "method": str(record["method"]), "samples": int(record["samples"])}
    if est.ci_low is not None and est.ci_high is not None:  # an exact Estimate has ci_low = ci_high = None
        out["lower"], out["upper"] = float(record["ci_low"]), float(record["ci_high"])
    return out


def load_language(spec: str) -> Any:
    return _load_preset(spec)


def language_order(lang: Any) -> int | None:
    """The n-gram order ``n`` of ``lang`` (``None`` for a general HMM)."""
    return int(lang.order) if hasattr(lang, "order") else None


def schedule_for(name: str, n_steps: int) -> Schedule:
    return make_schedule(name, n_steps)


def oracle_samples(lang: Any, schedule: Schedule, n: int, length: int, seed: Any) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences of the oracle factorized sampler (float64 draws) and the realized NFE."""
    rng = np.random.default_rng(seed)
    res = sample_factorized(OracleDenoiser(lang), schedule, n, length, rng)
    return np.asarray(res.tokens), np.asarray(res.nfe)


def oracle_gen_ppl(lang: Any, schedule: Schedule, n: int, length: int, seed: Any) -> dict:
    """Generative perplexity ``exp(E_p[-log q(x)] / L)`` of ``n`` oracle samples (exact ``log q``).
    """
    tokens, nfe = oracle_samples(lang, schedule, n, length, seed)
    out = estimate_json(_mc.gen_ppl_mc(lang, tokens))
    out["nfe_mean"] = float(np.mean(nfe))
    return out


def oracle_ser(lang: Any, schedule: Schedule, n: int, length: int, seed: Any) -> dict:
    """SER of ``n`` oracle samples: the fraction outside the support (exact check, binomial CI)."""
    tokens, nfe = oracle_samples(lang, schedule, n, length, seed)
    out = estimate_json(_mc.ser_mc(lang, tokens))
    out["nfe_mean"] = float(np.mean(nfe))
    return out


def data_ppl(lang: Any, length: int, samples: int, seed: Any) -> dict:
    """The data's perplexity ``TER(q) = exp(H(X_1..X_L) / L)``: exact for n-grams, else Monte Carlo."""
    return estimate_json(_entropy.data_perplexity(lang, length, samples=max(samples, 2), rng=np.random.default_rng(seed)))


def jensen_bound_exact(lang: Any, schedule: Schedule, length: int) -> dict:
    """``E_tau KL(q || p(.|tau))`` exactly by the Markov chain rule; ``ValueError`` if not a token chain."""
    return estimate_json(_markov.jensen_bound_markov(lang, length, schedule).total)


def jensen_bound(lang: Any, schedule: Schedule, length: int, samples: int, seed: Any) -> dict:
    """``E_tau KL(q || p(.|tau))`` (Lemma B.2's upper bound on ``KL(q || p)``) by the best method there is
    (:func:`numerics.metrics.jensen_bound`: interval closed form, Markov chain rule, else Monte Carlo
    with ``x`` then ``tau`` drawn from ``default_rng(seed)``)."""
    return estimate_json(_jensen_bound(lang, length, schedule, samples=max(samples, 2), rng=np.random.default_rng(seed)))


def interval_ser(schedule: Schedule, length: int, l: int) -> float:
    """Exact SER ``1 - (E[2^-c])^(L/l)`` of the interval language (Example C.7) under ``schedule``."""
    return float(_interval_exact.interval_ser(schedule, length, l).probability)


def interval_validity(schedule: Schedule, l: int) -> Any:
    """One interval's validity ``E[2^-c]`` (``numerics.exact.interval.interval_validity``); it does not depend on ``L``."""
    return _interval_exact.interval_validity(schedule, l)


def interval_ser_from_validity(validity: Any, length: int, l: int) -> float:
    """The SER at ``L`` from one interval's validity (``numerics.exact.interval.interval_ser_from_validity``)."""
    return float(_interval_exact.interval_ser_from_validity(validity, length, l).probability)


def theorem42(order: int, vocab: int, n_steps: int, length: int) -> dict:
    """Theorem 4.2's bound on ``log TER(p) - log TER(q)`` at ``N`` steps (``eps_learning = 0``).

    ``eps`` is the smallest value whose Lemma B.12 schedule fits in ``N`` steps
    (``theory.b12_solve_eps``); the bound ``4 eps log|V|`` holds for ``L >= L_0(eps, n)``.
    Returns ``{"eps", "log_ter_gap", "length_threshold", "valid", "b12_steps"}``; ``N = 1`` has
    no B.12 schedule (``log_ter_gap`` None).
    """
    if n_steps < 2:
        return {"eps": None, "log_ter_gap": None, "length_threshold": None, "valid": False, "b12_steps": None}
    eps = theory.b12_solve_eps(n_steps, order)
    c = theory.theorem42_constants(eps, order, vocab)
    return {"eps": float(eps), "log_ter_gap": float(c["ter_gap_bound"]), "length_threshold": int(c["L_0"]),
            "valid": bool(length >= c["L_0"]), "b12_steps": int(c["N"])}


def b12_schedule(order: int, n_steps: int) -> Schedule:
    """The Lemma B.12 schedule with the smallest ``eps`` that fits in ``N`` steps."""
    return theory.b12_schedule(theory.b12_solve_eps(n_steps, order), order)


def theorem44(n_steps: int, length: int, l: int) -> dict:
    """Lemma C.6's lower bound on the interval language's SER, with the oracle's ``p_e = 1/2`` and
    with Theorem 4.4's ``p_e`` for ``eps_learning < 1/128`` (``theory``)."""
    pe_oracle = float(theory.p_e(0.0))
    return {"ser_lower": float(theory.c9_bound(n_steps, length, l, pe_oracle)), "p_e": pe_oracle,
            "thm44_ser_lower": float(theory.c9_bound(n_steps, length, l, float(theory.P_E_PAPER))),
            "p_e_thm44": float(theory.P_E_PAPER)}


def theorem44_thresholds(lengths: list[int], l: int) -> dict:
    """Theorem 4.4's constants from ``theory``: the argument's ``C`` and the exact threshold ``N/L``."""
    arg = theory.c9_argument_constant(lengths, l)
    true = theory.true_threshold(lengths, l)
    return {"lengths": [int(x) for x in lengths], "argument_n_max": [int(x) for x in arg.n_max],
            "argument_constant": float(arg.constant), "argument_limit": float(arg.limit),
            "true_n_max": [int(x) for x in true.n_max], "true_constant": float(true.constant),
            "true_limit": float(true.limit)}


def claim_ids() -> list[str]:
    """Every claim id of the theory registry, in paper order (lemmas, theorems and proof steps)."""
    return [c.id for c in theory.claims()]


def check_claim(claim_id: str, instances: int, seed: int) -> dict:
    """``theory.search.run_claim`` on one claim: instances, violations, minimum slack, tightness."""
    claim = theory.get(claim_id)
    rng = np.random.default_rng([seed, sum(map(ord, claim_id))])
    s = run_claim(claim, instances, rng)
    row = {k: getattr(s, k) for k in s.__dataclass_fields__}
    row["title"] = claim.title
    row["relation"] = claim.relation
    row["top_level"] = not claim.paper.startswith("proof of")
    return row


def checkpoint_kind(path: str) -> str:
    """``"mdm"`` or ``"ar"``: the model kind stored in a ``neural`` checkpoint."""
    from neural.train import load_checkpoint

    return load_checkpoint(path).config.model.kind


def collision_probability(schedule: Schedule, length: int) -> float:
    """``delta_N = 1 - L! e_L(pi)``: probability that two of ``L`` positions share a step (Lemma C.1)."""
    return float(_interval_exact.sequence_collision_probability(schedule, length).probability)


def exact_small(lang: Any, schedule: Schedule, length: int) -> dict:
    """Exact ``KL(q || p)`` of the sampler's mixture law and ``E_tau KL(q || p(.|tau))`` (tiny ``L``).

    ``numerics.exact.dp.dp_metrics``: the output law by a DP over revealed words, the Jensen bound
    from the exact information curve of the same joint table -- two different quantities.
    """
    m = dp_metrics(lang, length, schedule)
    return {"kl": float(m.kl.value), "kl_jensen_bound": float(m.kl_jensen_bound.value),
            "ser": float(m.ser.value), "ser_kl_certificate": float(m.ser_kl_certificate.value),
            "gen_ppl": float(m.gen_ppl.value), "ter": float(m.ter.value), "ter_data": float(m.ter_data.value),
            "method": str(m.kl.method)}


def fitted_summary(name: str) -> dict:
    """The fit summary and provenance (vocabulary left out) of a named real-text language (``lee-*``)."""
    from dataclasses import asdict

    from numerics.languages.corpus import fit_lee

    fitted = fit_lee(name)
    prov = {k: v for k, v in asdict(fitted.provenance).items() if k != "vocabulary"}
    return {**asdict(fitted.summary), **prov}


def pair_informations(lang: Any, length: int) -> list[float]:
    """``iota(d) = sum_l I(X_l ; X_{l+d})`` of a token-level Markov chain (``numerics.exact.markov``):
    the schedule-free ``O(L V^3)`` part of its exact Jensen bound, computed once per ``(language, L)``."""
    return [float(x) for x in _markov.pair_informations(_markov.markov_chain_of(lang), length)]


def jensen_bound_from_informations(lang: Any, schedule: Schedule, length: int, informations: list[float]) -> dict:
    """:func:`jensen_bound_exact` with the pair informations already computed (:func:`pair_informations`)."""
    return estimate_json(_markov.jensen_bound_markov(lang, length, schedule, np.asarray(informations)).total)
