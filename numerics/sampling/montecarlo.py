"""Monte Carlo metrics of the factorized sampler, each an estimate with its error bar and sample count.

* SER (``docs/methods/exact.md``): the fraction of samples with ``q(x) = 0``, decided exactly by the
  forward pass; Clopper-Pearson interval.
* Generative perplexity ``exp(E_{x~p}[-log q(x)] / L)`` with exact ``log q``: the sample mean of
  ``-log q(x) / L`` and its standard error, mapped through ``exp`` (delta method for the standard
  error; the interval is ``exp`` of the normal interval on the log scale). ``gen_ppl_data`` is the
  same number for true samples from ``q``.
* The Jensen bound ``E_tau KL(q || p(.|tau))`` (Lemma B.2/B.3) for any HMM or n-gram: over
  ``x ~ q`` and an instance ``tau`` (i.i.d. steps from ``pi``), the per-sample term
  ``log q(x) - log p(x | tau) = sum_i [log q(x_{tau_i} | x_{tau_<i}) - sum_{j in tau_i} log q(x_j | x_{tau_<i})]``
  with every conditional exact (:func:`numerics.sampling.oracle.reveal_score`). Rao-Blackwellized in
  the instance: steps revealing one position contribute exactly 0 and are not sampled terms.
  This is **not** ``KL(q || p)`` of the sampler's true output law (a mixture over ``tau``, only exact
  for small ``L``), which it bounds from above; the two never share a name.
* Realized network calls against :meth:`Schedule.expected_nfe`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numerics.estimate import CONFIDENCE, Estimate, clopper_pearson
from numerics.inference.forward_backward import log_q
from numerics.languages.hmm import Language
from numerics.sampling.oracle import reveal_score
from numerics.sampling.samplers import SampleResult
from numerics.schedules import Schedule

__all__ = [
    "IntervalEstimate",
    "NFEComparison",
    "CONFIDENCE",
    "ser_from_loglik",
    "gen_ppl_from_loglik",
    "ser_mc",
    "gen_ppl_mc",
    "gen_ppl_data",
    "kl_jensen_bound_mc",
    "kl_jensen_bound_from_tokens",
    "nfe_comparison",
]



@dataclass(frozen=True)
class IntervalEstimate(Estimate):
    """An :class:`Estimate` with a two-sided confidence interval ``[ci_low, ci_high]`` at ``confidence``."""

    ci_low: float = math.nan
    ci_high: float = math.nan
    confidence: float = CONFIDENCE


def ser_from_loglik(loglik: np.ndarray, confidence: float = CONFIDENCE) -> IntervalEstimate:
    """SER = fraction of ``-inf`` log-likelihoods; stderr ``sqrt(s(1-s)/n)``, Clopper-Pearson interval."""
    loglik = np.asarray(loglik, dtype=np.float64)
    if np.any(np.isnan(loglik)):
        raise ValueError("log-likelihoods contain NaN")
    n = loglik.size
    k = int(np.count_nonzero(loglik == -np.inf))
    s = k / n
    lo, hi = clopper_pearson(k, n, confidence)
    return IntervalEstimate(s, math.sqrt(s * (1 - s) / n), "mc (exact support check, Clopper-Pearson)", n, lo, hi, confidence)


def gen_ppl_from_loglik(loglik: np.ndarray, length: int, confidence: float = CONFIDENCE, label: str = "mc") -> IntervalEstimate:
    """``exp(mean(-log q(x)) / L)`` with delta-method stderr; ``inf`` (stderr NaN) if any sample is invalid."""
    loglik = np.asarray(loglik, dtype=np.float64)
    n = loglik.size
    if n < 2:
        raise ValueError("need at least 2 samples for a standard error")
    if np.any(loglik == -np.inf):
        k = int(np.count_nonzero(loglik == -np.inf))
        return IntervalEstimate(math.inf, math.nan, f"{label} ({k} of {n} samples outside supp q: infinite)", n,
                                math.inf, math.inf, confidence)
    per_token = -loglik / length
    m = float(per_token.mean())
    se = float(per_token.std(ddof=1) / math.sqrt(n))
    z = _z(confidence)
    value = math.exp(m)
    return IntervalEstimate(value, value * se, f"{label} (exact log q, delta method)", n,
                            math.exp(m - z * se), math.exp(m + z * se), confidence)


def ser_mc(language: Language, samples: SampleResult | np.ndarray, confidence: float = CONFIDENCE) -> IntervalEstimate:
    """SER of the sampler's outputs with the exact support check (``samples``: a result or tokens)."""
    tokens = samples.tokens if isinstance(samples, SampleResult) else samples
    return ser_from_loglik(log_q(language, tokens), confidence)


def gen_ppl_mc(language: Language, samples: SampleResult | np.ndarray, confidence: float = CONFIDENCE) -> IntervalEstimate:
    """Generative perplexity of the sampler's outputs scored by the exact ``q``."""
    tokens = samples.tokens if isinstance(samples, SampleResult) else np.asarray(samples)
    return gen_ppl_from_loglik(log_q(language, tokens), tokens.shape[1], confidence)


def gen_ppl_data(language: Language, length: int, n: int, rng: np.random.Generator,
                 confidence: float = CONFIDENCE) -> IntervalEstimate:
    """Generative perplexity of ``n`` true samples ``x ~ q`` (the reference an exact sampler reaches)."""
    tokens = language.sample(n, length, rng)
    return gen_ppl_from_loglik(log_q(language, tokens), length, confidence, label="mc, x ~ q")


def kl_jensen_bound_from_tokens(language: Language, reveal_steps: np.ndarray, tokens: np.ndarray,
                                confidence: float = CONFIDENCE) -> IntervalEstimate:
    """The Jensen-bound Monte Carlo over given pairs ``(x, tau)``: ``tokens`` ``x ~ q`` and ``reveal_steps`` ``tau ~ pi``.

    Standard error: sample standard deviation of the per-sample terms over ``sqrt(n)``; normal interval.
    """
    n = np.asarray(tokens).shape[0]
    if n < 2:
        raise ValueError("need n >= 2 samples for a standard error")
    terms = reveal_score(language, reveal_steps, tokens).jensen
    if not np.all(np.isfinite(terms)):
        raise ValueError("a Jensen term is not finite: some x is outside supp q (tokens must be samples of q)")
    m = float(terms.mean())
    se = float(terms.std(ddof=1) / math.sqrt(n))
    z = _z(confidence)
    return IntervalEstimate(m, se, "mc (x ~ q, tau ~ pi; exact conditionals, single-reveal steps exactly 0)", n,
                            m - z * se, m + z * se, confidence)


def kl_jensen_bound_mc(language: Language, schedule: Schedule, length: int, n: int, rng: np.random.Generator,
                       confidence: float = CONFIDENCE) -> IntervalEstimate:
    """Monte Carlo of the Jensen bound ``E_tau KL(q || p(. | tau))`` (module docstring).

    Random stream: ``x = language.sample(n, length, rng)`` then ``reveal_steps = schedule.sample_steps(rng, (n, L))``.
    """
    tokens = language.sample(n, length, rng)
    reveal_steps = schedule.sample_steps(rng, (n, length))
    return kl_jensen_bound_from_tokens(language, reveal_steps, tokens, confidence)


@dataclass(frozen=True)
class NFEComparison:
    """Realized network calls of a sampler run against the formula.

    Attributes
    ----------
    realized : IntervalEstimate
        Mean realized NFE per batch (stderr over batches; NaN with one batch).
    expected : float
        ``E[NFE] = 1 + sum_{i<N} (1 - (1 - pi_i)^(B L))`` (:meth:`Schedule.expected_nfe`) at the
        run's batch size (``N`` for an uncached run).
    batch_size : int
    length : int
    n_steps : int
    """

    realized: IntervalEstimate
    expected: float
    batch_size: int
    length: int
    n_steps: int


def nfe_comparison(result: SampleResult, schedule: Schedule, confidence: float = CONFIDENCE) -> NFEComparison:
    """Realized NFE of ``result`` (batches of equal size only) vs the expected NFE of ``schedule``."""
    sizes = np.unique(result.batch_sizes)
    if sizes.size != 1:
        raise ValueError(f"batches of different sizes {sizes.tolist()} have different expected NFE; use equal batches")
    B = int(sizes[0])
    nfe = result.nfe.astype(np.float64)
    k = nfe.size
    m = float(nfe.mean())
    se = float(nfe.std(ddof=1) / math.sqrt(k)) if k > 1 else math.nan
    z = _z(confidence)
    expected = schedule.expected_nfe(result.length, batch=B) if result.cache else float(schedule.n_steps)
    realized = IntervalEstimate(m, se, "realized (mean over batches)", k, m - z * se, m + z * se, confidence)
    return NFEComparison(realized, expected, B, result.length, schedule.n_steps)


def _z(confidence: float) -> float:
    """The normal quantile of a two-sided ``confidence`` interval (scipy.stats imported here: seconds at import)."""
    from scipy import stats

    return float(stats.norm.ppf(0.5 + confidence / 2))
