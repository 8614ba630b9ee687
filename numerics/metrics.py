"""All metrics of one point (language, ``L``, sampler) by the best method there is: the one home.

:func:`point_metrics` returns a :class:`PointMetrics`: KL, the Jensen bound, TER, SER, the SER
certificate, generative perplexity and NFE of a sampler with the oracle denoiser, each field an
:class:`~numerics.estimate.Estimate` saying how it was obtained, or :class:`~numerics.estimate.Unavailable`
with the reason the method cannot give it. The method (:mod:`numerics.methods`) is chosen from the
language *object* (the interval language's closed forms whatever the language was loaded from):

* the random-order sampler (:class:`~numerics.sampling.samplers.RandomOrder`):

  - ``closed-form`` (the interval language, ``l`` dividing ``L``, any size):
    :mod:`numerics.exact.interval_metrics`, every metric exact;
  - ``dp`` / ``enumerate`` (tiny ``L``): the exact output law ``p`` (:mod:`numerics.exact.dp`,
    :mod:`numerics.exact.enumerate`), every metric exact;
  - ``mc``: SER and generative perplexity from samples of the fast oracle sampler with exact
    ``log q``, ``gen_ppl_data`` from true samples, ``TER(q)`` exact where the object has an exact
    entropy (n-grams, the interval language), the Jensen bound by :func:`jensen_bound` (exact for
    the interval language and token Markov chains, else Monte Carlo); ``KL(q || p)`` of the true
    mixture ``p`` (hence ``log_ter_gap``, ``ter``, the certificate) is unavailable -- never
    replaced by the Jensen bound;
  - ``nfe``: the exact expected ``ddpm_cache`` count at the batch size; ``nfe_realized`` (Monte
    Carlo) the mean over the run's batches.

* an adaptive rule (:class:`~numerics.sampling.adaptive.AdaptiveSampler`): exact by
  :mod:`numerics.exact.adaptive` (``dp``; ``enumerate`` by name) while ``V^L`` is small, else Monte
  Carlo with ``kl`` the *true* ``KL(q || p)`` by the chain-rule identity (I1) along ``x ~ q``
  (``docs/methods/adaptive.md``); a rule has one reveal path per output, so the Jensen bound is
  not a separate quantity; ``nfe`` is the expected (exact) or mean (Monte Carlo) calls per
  sequence; ties are broken by the rule's ``tie_seed`` (reported with the point).

* a decoder of :mod:`numerics.sampling.decoders` (``llada``, ``fast-dllm``, ``eb``, ``remdm``;
  ``docs/methods/decoders.md``): exact by :mod:`numerics.exact.decoders` (``dp``, ``enumerate``)
  within its size limits, every metric from the exact law, ``reverse_kl`` and ``tv`` included;
  else Monte Carlo with the fastest exact oracle
  (:func:`numerics.sampling.batch_oracles.fastest_oracle`): SER, generative perplexity and
  ``calls`` from samples; ``kl`` (over ``x ~ q``) and ``reverse_kl`` (over ``x ~ p``) only for a
  path-deterministic decoder, whose ``log p(x)`` is exact per sample
  (:meth:`~numerics.sampling.decoders.BlockDecoder.path_log_prob`), else unavailable with the
  reason; ``tv`` needs the exact law. The decoder's parameters and tie seed are reported with
  the point (:attr:`PointMethod.parameters`).

* a revising decoder (:class:`~numerics.sampling.revisers.Reviser`: ``llada21``, ``wino``;
  ``docs/methods/revisers.md``): exact by the chain over canvases (:mod:`numerics.exact.revisers`,
  method ``enumerate``) while ``(V+1)^L V^B`` is small, every metric from the exact law (``KL = inf``
  exactly where ``T = 0`` leaves ``p(x) = 0`` on ``supp q``); else Monte Carlo: SER, generative
  perplexity and ``calls`` from samples, the KLs, TER and TV unavailable (``p(x)`` sums over canvas
  paths). The law of the calls is :attr:`PointMethod.calls_law`.

``reverse_kl`` ``KL(p || q)`` and ``tv`` ``TV(p, q)`` (:mod:`numerics.exact.divergences`) come
from every exact output law (random order by ``dp`` / ``enumerate``, adaptive rules, decoders);
``calls`` is the expected network calls per sequence for every sampler (``nfe`` keeps its
meaning: the paper's ``ddpm_cache`` count per batch for the random-order sampler).

Labels that do not mislead: an exact KL that comes out at ``-1e-16`` is reported as 0
(:func:`numerics.exact.output_law.nonnegative_kl`; a larger negative KL raises); Monte Carlo
terms that agree up to round-off (a one-token-per-step rule's chain-rule terms) get standard
error 0 and the "all samples agree" reason (:func:`numerics.estimate.mean_estimate`).

Adding a metric: a field of :class:`PointMetrics` (and its column in docs/schema.md), filled by
each sampler kind's function below (or :class:`~numerics.estimate.Unavailable` with the reason).
Adding a sampler kind: one function ``(point) -> dict of fields`` registered in
:data:`SAMPLER_KINDS` under its ``Sampler.kind``.

Only some metrics (``only=``, e.g. a search that compares one metric with a target): every other
field is :class:`~numerics.estimate.Unavailable` ("not requested"), and a kind's function may skip
the work no requested field needs (``point.wants(...)``); the requested fields, and the draws of
each stream, are the same as in the full point.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from numerics.estimate import CONFIDENCE, Estimate, Metric, Unavailable, mean_estimate
from numerics.exact.divergences import Divergences, law_divergences
from numerics.exact.output_law import ExactMetrics, law_metrics, nonnegative_kl, ser_kl_certificate
from numerics.languages.hmm import Language
from numerics.methods import MethodChoice, choose_adaptive_method, choose_method, closed_form_length
from numerics.sampling.revisers import Reviser
from numerics.sampling.samplers import RandomOrder, Sampler
from numerics.schedules import Schedule

__all__ = [
    "DECODER_METHODS",
    "SAMPLER_KINDS",
    "STREAMS",
    "PointMethod",
    "PointMetrics",
    "choose_decoder_method",
    "exact_entropy",
    "exact_metrics",
    "jensen_bound",
    "oracle_ser_mc",
    "point_metrics",
    "reverse_kl_adaptive_mc",
    "streams_of",
]

#: The named random streams of a point (each its own generator, so adding a metric never shifts another's draws).
STREAMS = ("sampler", "sampler-ser", "data", "jensen-steps")

Streams = Callable[[str], np.random.Generator]


@dataclass(frozen=True)
class PointMethod:
    """How a point was computed (the fields of :class:`PointMetrics` that are not metrics).

    Attributes
    ----------
    method : str
        The method that ran: ``closed-form``, ``dp``, ``enumerate`` or ``mc``.
    requested : str
        The method asked for (``auto``, or one by name).
    sampler : str
        The sampler's label (rule and parameters).
    tie_seed : int or None
        Seed of the adaptive rules' and decoders' tie priority (``numerics.sampling.adaptive.tie_priority``);
        ``None`` for the random-order sampler (no ties to break) and for a decoder run left to right.
    choice : MethodChoice or None
        The estimated cost of every exact method (random-order sampler; ``None`` for a rule).
    ser_choice : MethodChoice or None
        The same for the SER language when it differs.
    parameters : dict or None
        Every parameter of a decoder (:meth:`~numerics.sampling.decoders.BlockDecoder.parameters`:
        ``sampler``, ``block_length``, ``temperature``, ``tie_seed`` and the decoder's own);
        ``None`` for the random-order sampler and the adaptive rules.
    calls_law : tuple of float or None
        A revising decoder's law of the calls per sequence: ``calls_law[t] = P(calls = t)`` (exact), or
        the share of the Monte Carlo samples that made ``t`` calls; ``None`` for the other kinds.
    """

    method: str
    requested: str
    sampler: str
    tie_seed: int | None = None
    choice: MethodChoice | None = None
    ser_choice: MethodChoice | None = None
    parameters: dict | None = None
    calls_law: tuple[float, ...] | None = None


@dataclass(frozen=True)
class PointMetrics:
    """Every metric of one point; each an :class:`~numerics.estimate.Estimate` or
    :class:`~numerics.estimate.Unavailable` with the reason (module docstring; columns in docs/schema.md).

    Attributes
    ----------
    kl : Metric
        ``KL(q || p)`` of the sampler's true output law ``p`` (nats).
    kl_jensen_bound : Metric
        ``E_tau KL(q || p(. | tau))`` (Lemma B.2), an upper bound on ``kl`` for the random-order sampler.
    kl_chain_rule : Metric
        An adaptive rule's ``KL(q || p)`` by the chain-rule identity (I1): the same number as
        ``kl`` by a different formula (exact methods), or ``kl`` itself (Monte Carlo).
    log_ter_gap : Metric
        ``log TER(p) - log TER(q) = KL / L``.
    ter : Metric
        ``TER(p) = exp(E_{x~q}[-log p(x)] / L)``.
    ter_data : Metric
        ``TER(q) = exp(H(q) / L)``.
    ser : Metric
        ``SER(p) = 1 - p(supp q)`` (on the SER language when one is given).
    ser_kl_certificate : Metric
        ``1 - exp(-KL)``, an upper bound on ``SER`` (:func:`numerics.exact.output_law.ser_kl_certificate`).
    gen_ppl : Metric
        ``exp(E_{x~p}[-log q(x)] / L)``; ``inf`` when ``p`` leaves ``supp q``.
    gen_ppl_data : Metric
        The same for ``x ~ q``.
    nfe : Metric
        Expected network calls: ``ddpm_cache`` per batch (random order) or calls per sequence (a rule).
    nfe_realized : Metric
        The random-order sampler's mean realized calls per batch in a Monte Carlo run.
    reverse_kl : Metric
        ``KL(p || q)`` (nats; :mod:`numerics.exact.divergences`): ``inf`` once ``p`` leaves
        ``supp q``; exact from an exact law, Monte Carlo over ``x ~ p`` for a path-deterministic decoder.
    tv : Metric
        ``TV(p, q) = 1/2 sum_x |p(x) - q(x)|`` (``>= SER`` on a language with zeros): exact laws only.
    calls : Metric
        Network calls per sequence: ``E[NFE]`` at batch size 1 (random order), a rule's or a
        decoder's expected (exact) or mean (Monte Carlo) calls.
    how : PointMethod
        How the point was computed (not a metric).
    """

    kl: Metric
    kl_jensen_bound: Metric
    kl_chain_rule: Metric
    log_ter_gap: Metric
    ter: Metric
    ter_data: Metric
    ser: Metric
    ser_kl_certificate: Metric
    gen_ppl: Metric
    gen_ppl_data: Metric
    nfe: Metric
    nfe_realized: Metric
    reverse_kl: Metric
    tv: Metric
    calls: Metric
    how: PointMethod

    @classmethod
    def metric_names(cls) -> tuple[str, ...]:
        """The metric fields, in order (every field but ``how``)."""
        return tuple(f.name for f in fields(cls) if f.name != "how")

    def metrics(self) -> dict[str, Metric]:
        """``{name: Estimate or Unavailable}`` in field order."""
        return {name: getattr(self, name) for name in self.metric_names()}


def streams_of(rng: int | np.random.Generator | Streams) -> Streams:
    """The point's named streams (:data:`STREAMS`) from a seed, a Generator or a ``name -> Generator`` callable.

    A seed ``s`` gives ``default_rng([s, crc32(name)])``; a Generator gives one child per name
    (``Generator.spawn``, in the order of :data:`STREAMS`); a callable is used as it is (the sweep
    passes one that also mixes in the point's identity).
    """
    if callable(rng) and not isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.Generator):
        children = dict(zip(STREAMS, rng.spawn(len(STREAMS))))
        return lambda name: children[name]
    if int(rng) != rng or rng < 0:
        raise ValueError(f"rng must be a seed >= 0, a numpy Generator or a stream callable, got {rng!r}")
    return lambda name: np.random.default_rng([int(rng), zlib.crc32(name.encode())])


# ----- the parts every sampler kind shares -------------------------------------------------------


def exact_metrics(method: str, language: Language, length: int, schedule: Schedule) -> ExactMetrics:
    """Every metric of the random-order sampler by the exact ``method`` (``closed-form``, ``enumerate`` or ``dp``)."""
    return _exact_random_order(method, language, length, schedule)[0]


def _exact_random_order(method: str, language: Language, length: int,
                        schedule: Schedule) -> tuple[ExactMetrics, Divergences | None]:
    """:func:`exact_metrics` and the divergences of the exact law (``None`` for the closed form, which has no law)."""
    if method == "closed-form":
        from numerics.exact.interval_metrics import interval_metrics

        l = closed_form_length(language)
        if l is None:
            raise ValueError(f"--method closed-form: no closed form for the {language.kind} language "
                             "(only the interval language has one)")
        return interval_metrics(schedule, length, l), None
    if method == "enumerate":
        from numerics.exact.enumerate import enumerate_output_law

        result = enumerate_output_law(language, length, schedule)
        return law_metrics(result.law, result.kl_jensen_bound), law_divergences(result.law)
    if method == "dp":
        from numerics.exact.dp import dp_output_law
        from numerics.exact.information_curve import information_curve_table, jensen_bound_from_curve

        law = dp_output_law(language, length, schedule)  # numerics.exact.dp.dp_metrics, keeping the law
        jensen = jensen_bound_from_curve(information_curve_table(law.q), schedule)
        return law_metrics(law, jensen.total), law_divergences(law)
    raise ValueError(f"{method!r} is not an exact method; choose one of closed-form, enumerate, dp")


def exact_entropy(language: Language, length: int) -> Estimate | None:
    """``H(X_1..X_L)`` exactly (n-gram chain rule, interval closed form), or ``None`` when there is none."""
    from numerics.exact.entropy import sequence_entropy

    try:
        return sequence_entropy(language, length)
    except ValueError:  # no exact entropy (a general HMM)
        return None


def jensen_bound(language: Language, length: int, schedule: Schedule, *, tokens: np.ndarray | None = None,
                 samples: int = 1000, rng: np.random.Generator | None = None,
                 steps_rng: np.random.Generator | None = None, confidence: float = CONFIDENCE) -> Estimate:
    """The Jensen bound ``E_tau KL(q || p(. | tau))`` (Lemma B.2) by the best method there is.

    The interval closed form (any ``L``), the token Markov chain rule
    (:func:`numerics.exact.markov.jensen_bound_markov`), else Monte Carlo over ``tokens`` (``x ~ q``;
    drawn with ``language.sample(samples, length, rng)`` when not given) and instances
    ``tau ~ pi`` drawn from ``steps_rng`` (default: ``rng``), with a normal interval at ``confidence``.
    """
    from numerics.exact.markov import jensen_bound_markov, markov_chain_of

    l = closed_form_length(language)
    if l is not None:
        from numerics.exact.interval_metrics import interval_jensen_bound

        return interval_jensen_bound(schedule, length, l).total
    try:
        markov_chain_of(language)
    except ValueError:
        from numerics.sampling.montecarlo import kl_jensen_bound_from_tokens

        if tokens is None:
            if rng is None:
                raise ValueError("the Monte Carlo Jensen bound needs tokens or an rng") from None
            tokens = language.sample(samples, length, rng)
        reveal_steps = schedule.sample_steps(steps_rng if steps_rng is not None else rng, tokens.shape)
        return kl_jensen_bound_from_tokens(language, reveal_steps, tokens, confidence)
    return jensen_bound_markov(language, length, schedule).total


def oracle_ser_mc(language: Language, schedule: Schedule, samples: int, length: int, rng: np.random.Generator, *,
                  batch_size: int = 1, confidence: float = CONFIDENCE) -> Estimate:
    """Monte Carlo SER of the random-order oracle sampler: ``samples`` runs, exact support check, Clopper-Pearson."""
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.samplers import sample_oracle

    run = sample_oracle(language, schedule, samples, length, rng, batch_size=batch_size)
    return mc.ser_mc(language, run, confidence)


@dataclass(frozen=True)
class _Point:
    """What a sampler kind's function gets: the point and its streams."""

    language: Language
    ser_language: Language  # ``language`` itself when SER is measured on the same language
    length: int
    sampler: Sampler
    method: str
    samples: int
    streams: Streams
    batch_size: int
    names: tuple  # (language name, SER language name) for messages; None: the kind
    only: frozenset | None = None  # the fields asked for; None: every field

    @property
    def same_ser(self) -> bool:
        return self.ser_language is self.language

    def wants(self, *names: str) -> bool:
        """Whether any of the fields ``names`` was asked for (always, without ``only``)."""
        return self.only is None or any(n in self.only for n in names)


def _data(point: _Point) -> tuple[dict[str, Metric], np.ndarray, np.ndarray]:
    """``gen_ppl_data`` and ``ter_data`` from ``samples`` true sequences; returns them, the sequences and their ``log q``."""
    from numerics.inference import log_q
    from numerics.sampling import montecarlo as mc

    L, language = point.length, point.language
    data = language.sample(point.samples, L, point.streams("data"))
    loglik = log_q(language, data)
    gen_ppl_data = mc.gen_ppl_from_loglik(loglik, L, label="mc, x ~ q")
    H = exact_entropy(language, L)
    # no exact entropy: TER(q) is the data's generative perplexity
    ter_data = gen_ppl_data if H is None else Estimate(math.exp(H.value / L), 0.0, H.method)
    return {"gen_ppl_data": gen_ppl_data, "ter_data": ter_data}, data, loglik


def _exact_ter_data(point: _Point) -> Estimate:
    """``TER(q) = exp(H(q) / L)`` from the exact entropy (the caller checked there is one)."""
    H = exact_entropy(point.language, point.length)
    return Estimate(math.exp(H.value / point.length), 0.0, H.method)


def _sample_metrics(point: _Point, tokens: np.ndarray) -> dict[str, Metric]:
    """``gen_ppl`` (and ``ser`` on the same language) of the sampler's outputs ``tokens``, with exact ``log q``."""
    from numerics.inference import log_q
    from numerics.sampling import montecarlo as mc

    loglik = log_q(point.language, tokens)
    out: dict[str, Metric] = {"gen_ppl": mc.gen_ppl_from_loglik(loglik, point.length)}
    if point.same_ser:
        out["ser"] = mc.ser_from_loglik(loglik)
    return out


_NO_MIXTURE_KL = "KL(q || p) of the sampler's mixture law p needs the exact law (an exact method, small L)"
_NO_MIXTURE_REVERSE_KL = ("KL(p || q): p(x) is a mixture over reveal orders or draws, exact only with the exact law "
                          "(an exact method, small L)")
_NO_TV = "TV(p, q) needs the exact law (an exact method, small L)"


def _random_order(point: _Point) -> tuple[dict[str, Metric], str, MethodChoice, MethodChoice | None]:
    """The random-order sampler: exact law where a method fits, else Monte Carlo (module docstring)."""
    sampler: RandomOrder = point.sampler
    schedule, L, n = sampler.schedule, point.length, point.samples
    choice = choose_method(point.method, point.language, L, schedule, n, name=point.names[0])
    out: dict[str, Metric] = {
        "kl_chain_rule": Unavailable("the random-order sampler has many reveal paths per output: kl is its true KL"),
        "nfe": Estimate(schedule.expected_nfe(L, batch=point.batch_size), 0.0,
                        f"formula E[NFE] (ddpm_cache, batch {point.batch_size})"),
        "calls": Estimate(schedule.expected_nfe(L, batch=1), 0.0, "formula E[NFE] (ddpm_cache, one sequence)"),
    }
    if choice.method != "mc":
        m, div = _exact_random_order(choice.method, point.language, L, schedule)
        out.update({f.name: getattr(m, f.name) for f in fields(m)})
        out["nfe_realized"] = Unavailable("an exact method runs no sampler: nfe is the exact expectation")
        if div is None:
            why = "the interval closed forms give KL(q || p) and SER, not the output law p"
            out.update(reverse_kl=Unavailable(why), tv=Unavailable(why))
        else:
            out.update(reverse_kl=div.reverse_kl, tv=div.tv)
    else:
        from numerics.sampling import montecarlo as mc
        from numerics.sampling.samplers import sample_oracle

        for k in ("kl", "log_ter_gap", "ter", "ser_kl_certificate"):
            out[k] = Unavailable(_NO_MIXTURE_KL)
        out["reverse_kl"] = Unavailable(_NO_MIXTURE_REVERSE_KL)
        out["tv"] = Unavailable(_NO_TV)
        if point.wants("gen_ppl", "nfe_realized") or (point.same_ser and point.wants("ser")):
            run = sample_oracle(point.language, schedule, n, L, point.streams("sampler"),
                                batch_size=point.batch_size, cache=sampler.cache)
            out.update(_sample_metrics(point, run.tokens))
            out["nfe_realized"] = mc.nfe_comparison(run, schedule).realized
        data = None
        if point.wants("gen_ppl_data") or (point.wants("ter_data") and exact_entropy(point.language, L) is None):
            data_metrics, data, _ = _data(point)
            out.update(data_metrics)
        elif point.wants("ter_data"):
            out["ter_data"] = _exact_ter_data(point)
        if point.wants("kl_jensen_bound"):  # without data drawn, the bound draws the same x ~ q where it needs them
            out["kl_jensen_bound"] = jensen_bound(point.language, L, schedule, tokens=data, samples=n,
                                                  rng=point.streams("data"), steps_rng=point.streams("jensen-steps"))
    ser_choice = None
    if not point.same_ser and point.wants("ser"):
        ser_choice = choose_method(point.method, point.ser_language, L, schedule, n, name=point.names[1])
        if ser_choice.method == "mc":
            out["ser"] = oracle_ser_mc(point.ser_language, schedule, n, L, point.streams("sampler-ser"),
                                       batch_size=point.batch_size)
        else:
            out["ser"] = exact_metrics(ser_choice.method, point.ser_language, L, schedule).ser
    return out, choice.method, choice, ser_choice


_ONE_PATH = "one reveal path per output (a deterministic rule): kl itself is given"


def _adaptive(point: _Point) -> tuple[dict[str, Metric], str, None, None]:
    """An adaptive rule: exact (DP / enumeration) or Monte Carlo with (I1) for ``KL(q || p)``."""
    sampler, L, n = point.sampler, point.length, point.samples
    method = choose_adaptive_method(point.method, point.language.vocab_size, L, language=point.language, samples=n,
                                    name=point.names[0])
    out: dict[str, Metric] = {"kl_jensen_bound": Unavailable(_ONE_PATH),
                              "nfe_realized": Unavailable("a rule's calls per sequence are nfe")}
    if method != "mc":
        from numerics.exact.adaptive import adaptive_metrics

        r = adaptive_metrics(point.language, L, sampler, method)
        out.update({f.name: getattr(r.metrics, f.name) for f in fields(r.metrics) if f.name != "kl_jensen_bound"})
        if not point.same_ser:
            out["ser"] = adaptive_metrics(point.ser_language, L, sampler, method).metrics.ser
        div = law_divergences(r.law)
        out.update(kl_chain_rule=r.kl_chain_rule, nfe=r.expected_nfe, calls=r.expected_nfe,
                   reverse_kl=div.reverse_kl, tv=div.tv)
        return out, method, None, None
    from numerics.sampling import adaptive as ad
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.denoiser import OracleDenoiser

    out.update(tv=Unavailable(_NO_TV), reverse_kl=Unavailable(_ADAPTIVE_REVERSE_KL))
    if point.wants("gen_ppl", "nfe", "calls") or (point.same_ser and point.wants("ser")):
        run = sampler.sample(OracleDenoiser(point.language, strict=False), n, L, point.streams("sampler"),
                             batch_size=point.batch_size)
        out.update(_sample_metrics(point, run.tokens), nfe=ad.nfe_mc(run), calls=ad.nfe_mc(run))
    if not point.same_ser and point.wants("ser"):
        ser_run = sampler.sample(OracleDenoiser(point.ser_language, strict=False), n, L, point.streams("sampler-ser"),
                                 batch_size=point.batch_size)
        out["ser"] = mc.ser_mc(point.ser_language, ser_run)
    if not point.wants("kl", "kl_chain_rule", "log_ter_gap", "ser_kl_certificate", "gen_ppl_data", "ter_data"):
        return out, "mc", None, None
    data_metrics, data, data_loglik = _data(point)
    out.update(data_metrics)
    terms = ad.chain_rule_terms(sampler, point.language, data).terms
    # the terms are differences of log-probabilities of size |log q(x)|: that is their round-off scale
    kl = mean_estimate(terms, "mc (x ~ q, chain-rule identity (I1))", scale=float(np.max(np.abs(data_loglik))))
    if kl.stderr == 0.0:  # every term agrees: a deterministic KL (0 for one token per step), clip its round-off
        kl = Estimate(nonnegative_kl(kl.value, float(np.max(np.abs(data_loglik)))), 0.0, kl.method, kl.samples)
    out.update(kl=kl, kl_chain_rule=kl, log_ter_gap=Estimate(kl.value / L, kl.stderr / L, kl.method, n),
               ser_kl_certificate=ser_kl_certificate(kl),
               ter=Unavailable("TER(p) from a Monte Carlo KL: ter_data * exp(log_ter_gap)"))
    return out, "mc", None, None


_ADAPTIVE_REVERSE_KL = ("not computed with the point: a second pass of the rule over its samples (about +30-40% of "
                        "a Monte Carlo point, measured at L = 256); numerics.metrics.reverse_kl_adaptive_mc gives it")


def reverse_kl_adaptive_mc(language: Language, sampler, tokens: np.ndarray) -> Estimate:
    """``KL(p || q)`` of an adaptive rule by Monte Carlo over its outputs ``tokens`` (``x ~ p``):
    ``-E_p[log q(x) - log p(x)]`` by the chain-rule identity (I1).

    A rule has one reveal path per output, so ``log q(x) - log p(x)`` is exact per sample
    (:func:`numerics.sampling.adaptive.chain_rule_terms`). An output outside ``supp q`` makes it
    ``inf`` for certain (``p`` puts mass outside ``supp q``), not as an estimate. Not part of
    :func:`point_metrics` (its cost: a second pass of the rule over the samples).
    """
    from numerics.inference import log_q
    from numerics.sampling import adaptive as ad

    loglik = log_q(language, tokens)
    n = tokens.shape[0]
    if not np.all(np.isfinite(loglik)):
        k = int(np.sum(~np.isfinite(loglik)))
        return Estimate(math.inf, 0.0, f"mc ({k} of {n} outputs outside supp q: KL(p || q) = inf)", n)
    terms = -ad.chain_rule_terms(sampler, language, tokens).terms
    return _nonnegative_mc(mean_estimate(terms, "mc (x ~ p, chain-rule identity (I1))",
                                         scale=float(np.max(np.abs(loglik)))), loglik)


def _nonnegative_mc(kl: Estimate, loglik: np.ndarray) -> Estimate:
    """A Monte Carlo KL whose terms all agree (a deterministic value, e.g. 0) with its round-off clipped."""
    if kl.stderr != 0.0:
        return kl
    return Estimate(nonnegative_kl(kl.value, float(np.max(np.abs(loglik)))), 0.0, kl.method, kl.samples)


# ----- the decoders practitioners run (numerics.sampling.decoders) -----------------------------------

#: The methods a decoder point can run (``closed-form`` is the interval language's random order only).
DECODER_METHODS = ("auto", "dp", "enumerate", "mc")


def choose_decoder_method(method: str, decoder, vocab: int, length: int) -> str:
    """``auto``: ``dp`` within the exact limits of :mod:`numerics.exact.decoders`, else ``mc``; a named one as it is."""
    from numerics.exact import decoders as ex
    from numerics.exact import history as ex_h

    if method not in DECODER_METHODS:
        raise ValueError(f"--method {method}: a decoder is computed by one of {', '.join(DECODER_METHODS)}")
    if method != "auto":
        return method
    if decoder.name == "remdm":
        return "dp" if (vocab + 1) ** length <= ex.MAX_REMDM_STATES else "mc"
    if getattr(decoder, "plan", None) is not None:  # a rule with a history (numerics.exact.history)
        return "dp" if vocab**length * length * length * vocab <= ex_h.MAX_HISTORY_WORK else "mc"
    B = decoder.block_of(length)
    return "dp" if (vocab + 1) ** length * vocab**B <= ex.MAX_DP_WORK else "mc"


_DECODER_MIXTURE = ("p(x) is a mixture over reveal orders or draws (random scores, draw-dependent selection, "
                    "remasking): exact only with the exact law (an exact method, tiny L)")


def _decoder(point: _Point) -> tuple[dict[str, Metric], str, None, None]:
    """A decoder: the exact law (``dp`` / ``enumerate``) or Monte Carlo (module docstring)."""
    decoder, L, n = point.sampler, point.length, point.samples
    decoder.blocks(L)  # a block length that does not divide L, or steps not divisible by the blocks, fail here
    decoder.fixed_steps(L)
    method = choose_decoder_method(point.method, decoder, point.language.vocab_size, L)
    out: dict[str, Metric] = {
        "kl_jensen_bound": Unavailable("a decoder's law is computed directly: no Jensen bound over instances"),
        "nfe": Unavailable("the decoders' network calls per sequence are calls (nfe is the random-order "
                           "sampler's ddpm_cache count)"),
        "nfe_realized": Unavailable("the decoders' network calls per sequence are calls"),
    }
    if method != "mc":
        from numerics.exact.decoders import decoder_exact
        from numerics.exact.history import history_exact
        from numerics.sampling.history_decoders import HistoryDecoder

        exact = history_exact if isinstance(decoder, HistoryDecoder) else decoder_exact  # a history: its own
        r = exact(point.language, L, decoder, method)
        out.update({f.name: getattr(r.metrics, f.name) for f in fields(r.metrics) if f.name != "kl_jensen_bound"})
        out.update(kl_chain_rule=Unavailable("kl is the exact law's KL"), reverse_kl=r.divergences.reverse_kl,
                   tv=r.divergences.tv, calls=r.expected_calls)
        if not point.same_ser:
            out["ser"] = exact(point.ser_language, L, decoder, method).metrics.ser
        return out, method, None, None
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.batch_oracles import fastest_oracle

    oracle = fastest_oracle(point.language)
    run = decoder.sample(oracle, n, L, point.streams("sampler"))  # counter-based draws: batching changes nothing
    out.update(_sample_metrics(point, run.tokens))
    if not point.same_ser:
        out["ser"] = mc.ser_mc(point.ser_language, decoder.sample(fastest_oracle(point.ser_language), n, L,
                                                                  point.streams("sampler-ser")))
    data_metrics, data, data_loglik = _data(point)
    out.update(data_metrics)
    out.update(tv=Unavailable(_NO_TV), ter=Unavailable("TER(p) from a Monte Carlo KL: ter_data * exp(log_ter_gap)"),
               calls=mean_estimate(run.calls.astype(np.float64), "mc (network calls per sequence)"))
    if decoder.path_deterministic:
        from numerics.inference import log_q

        loglik = log_q(point.language, run.tokens)
        if np.all(np.isfinite(loglik)):
            # the compiled path scores log p(x) while it samples; else the rule is replayed along the samples
            lp = run.log_p if run.log_p is not None else decoder.path_log_prob(oracle, run.tokens).log_p
            out["reverse_kl"] = _nonnegative_mc(mean_estimate(
                lp - loglik, "mc (x ~ p, exact log p(x) along the one reveal path)",
                scale=float(np.max(np.abs(loglik)))), loglik)
        else:
            k = int(np.sum(~np.isfinite(loglik)))
            out["reverse_kl"] = Estimate(math.inf, 0.0, f"mc ({k} of {n} outputs outside supp q: KL(p || q) = inf)", n)
        lp_data = decoder.path_log_prob(oracle, data).log_p
        if np.all(np.isfinite(lp_data)):
            kl = _nonnegative_mc(mean_estimate(data_loglik - lp_data, "mc (x ~ q, exact log p(x) along the one "
                                               "reveal path)", scale=float(np.max(np.abs(data_loglik)))),
                                 data_loglik)
        else:  # a greedy decoder: p(x) = 0 for a sampled x ~ q, so KL(q || p) = inf for certain
            k = int(np.sum(~np.isfinite(lp_data)))
            kl = Estimate(math.inf, 0.0, f"mc ({k} of {n} data sequences have p(x) = 0: KL(q || p) = inf)", n)
        out.update(kl=kl, kl_chain_rule=kl, log_ter_gap=Estimate(kl.value / L, kl.stderr / L, kl.method, n),
                   ser_kl_certificate=ser_kl_certificate(kl))
    else:
        for k in ("kl", "kl_chain_rule", "log_ter_gap", "reverse_kl"):
            out[k] = Unavailable(_DECODER_MIXTURE)
        out["ser_kl_certificate"] = Unavailable("the certificate 1 - exp(-KL) needs KL(q || p)")
    return out, "mc", None, None


# ----- the revising decoders (numerics.sampling.revisers) ------------------------------------------


def _reviser_exact_metrics(r) -> dict[str, Metric]:
    """Every metric of a reviser's exact law; at ``T = 0`` a law with ``p(x) = 0`` on ``supp q`` has ``KL = inf``."""
    q, p = r.law.q, r.law.p
    if r.metrics is not None or not np.any(p[q > 0] == 0):
        m = r.metrics if r.metrics is not None else law_metrics(r.law)
        return {f.name: getattr(m, f.name) for f in fields(m) if f.name != "kl_jensen_bound"}
    how = "canvas-chain (T = 0: p(x) = 0 for some x in supp q, exactly)"
    kl = Estimate(math.inf, 0.0, how)
    H = float(-np.sum(q[q > 0] * np.log(q[q > 0])))
    L = r.law.length
    gen = math.inf if r.ser > 0 else math.exp(float(-np.sum(p[p > 0] * np.log(q[p > 0]))) / L)
    return {"kl": kl, "log_ter_gap": kl, "ter": kl, "ser_kl_certificate": ser_kl_certificate(kl),
            "ter_data": Estimate(math.exp(H / L), 0.0, "joint-table"), "ser": Estimate(r.ser, 0.0, "canvas-chain"),
            "gen_ppl": Estimate(gen, 0.0, "canvas-chain"),
            "gen_ppl_data": Estimate(math.exp(H / L), 0.0, "joint-table")}


def _reviser(point: _Point) -> tuple[dict[str, Metric], str, None, None]:
    """A revising decoder (``llada21``, ``wino``): the exact chain over canvases, or Monte Carlo.

    Besides the metrics, ``calls_law`` (:attr:`PointMethod.calls_law`): ``P(calls = t)`` exactly, or the
    Monte Carlo frequencies.
    """
    from numerics.exact.revisers import choose_reviser_method, reviser_exact
    from numerics.sampling.revisers import sample_reviser

    rv, L, n = point.sampler, point.length, point.samples
    method = choose_reviser_method(point.method, rv, point.language.vocab_size, L)
    out: dict[str, Metric] = {
        "kl_jensen_bound": Unavailable("a reviser's law is computed directly: no Jensen bound over instances"),
        "kl_chain_rule": Unavailable("a reviser has no reveal path per output (it edits or remasks): kl is its KL"),
        "nfe": Unavailable("a reviser's network calls per sequence are calls"),
        "nfe_realized": Unavailable("a reviser's network calls per sequence are calls"),
    }
    if method == "enumerate":
        r = reviser_exact(rv, point.language, L)
        out.update(_reviser_exact_metrics(r))
        div = law_divergences(r.law)
        out.update(reverse_kl=div.reverse_kl, tv=div.tv, calls=r.expected_calls, calls_law=tuple(r.calls.tolist()))
        if not point.same_ser:
            out["ser"] = Estimate(reviser_exact(rv, point.ser_language, L).ser, 0.0, "canvas-chain")
        return out, method, None, None
    from numerics.sampling import montecarlo as mc

    run = sample_reviser(rv, point.language, n, L, point.streams("sampler"))
    out.update(_sample_metrics(point, run.tokens))
    if not point.same_ser:
        out["ser"] = mc.ser_mc(point.ser_language, sample_reviser(rv, point.ser_language, n, L,
                                                                  point.streams("sampler-ser")).tokens)
    out.update(_data(point)[0])
    why = ("p(x) of a reviser is a sum over its canvas paths: exact only with the exact chain (--method enumerate, "
           "tiny L)")
    out.update({k: Unavailable(why) for k in ("kl", "log_ter_gap", "ter", "ser_kl_certificate", "reverse_kl", "tv")})
    out.update(calls=mean_estimate(run.calls.astype(np.float64), "mc (network calls per sequence)"),
               calls_law=tuple((np.bincount(run.calls) / n).tolist()))
    return out, "mc", None, None


#: ``Sampler.kind -> function(point) -> (metrics, method, choice, ser_choice)``: one entry per sampler kind.
SAMPLER_KINDS: dict[str, Callable[[_Point], tuple]] = {
    "random": _random_order,
    "adaptive": _adaptive,
    "decoder": _decoder,  # every BlockDecoder: llada, fast-dllm, eb, remdm
    "reviser": _reviser,  # numerics.sampling.revisers.Reviser: llada21, wino
}


def point_metrics(language: Language, length: int, sampler: Sampler | Schedule, *, method: str = "auto",
                  samples: int = 1000, rng: int | np.random.Generator | Streams = 0,
                  ser_language: Language | None = None, batch_size: int = 1,
                  names: tuple[str | None, str | None] = (None, None),
                  only: tuple[str, ...] | frozenset | None = None) -> PointMetrics:
    """Every metric of ``sampler`` with the oracle denoiser of ``language`` at length ``length`` (module docstring).

    Parameters
    ----------
    language : Language
        Any language object (:data:`numerics.languages.hmm.Language`); its kind decides the closed forms.
    length : int
        ``L``.
    sampler : Sampler or Schedule
        A :class:`~numerics.sampling.samplers.Sampler` (random order, an adaptive rule), or a
        :class:`~numerics.schedules.Schedule` for the random-order sampler with it.
    method : {"auto", "closed-form", "dp", "enumerate", "mc"}
        ``auto``: the fastest exact method that fits, else Monte Carlo (:mod:`numerics.methods`);
        a method named that cannot run at this size is a ``ValueError`` naming its cost.
    samples : int
        Monte Carlo sample count of each Monte Carlo quantity.
    rng : int, numpy.random.Generator or callable
        The random streams (:func:`streams_of`); unused by exact methods.
    ser_language : Language, optional
        Measure SER on this language (e.g. a pruned variant), by its own best method.
    batch_size : int
        Sequences per sampler batch (the ``ddpm_cache`` NFE depends on it).
    names : (str or None, str or None)
        What messages call the language and the SER language (e.g. the preset names); ``None``: their kind.
    only : collection of str, optional
        Compute only these fields (:meth:`PointMetrics.metric_names`); every other field is
        ``Unavailable("not requested")``. ``None``: every field.
    """
    if isinstance(sampler, Schedule):
        sampler = RandomOrder(sampler)
    if not isinstance(sampler, (Sampler, Reviser)):
        raise TypeError(f"sampler must be a numerics Sampler, a Reviser or a Schedule, got {type(sampler).__name__}")
    kind = SAMPLER_KINDS.get(sampler.kind)
    if kind is None:
        raise ValueError(f"no point metrics for samplers of kind {sampler.kind!r}; known: {sorted(SAMPLER_KINDS)}")
    for name, v in (("length", length), ("samples", samples), ("batch_size", batch_size)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if method == "mc" and samples < 2:
        raise ValueError("Monte Carlo needs samples >= 2")
    if only is not None:
        only = frozenset(only)
        unknown = sorted(only - set(PointMetrics.metric_names()))
        if unknown or not only:
            raise ValueError(f"only= names metrics of PointMetrics, got unknown {unknown} (or none); "
                             f"choose from {PointMetrics.metric_names()}")
    point = _Point(language, language if ser_language is None else ser_language, int(length), sampler, method,
                   int(samples), streams_of(rng), int(batch_size), tuple(names), only)
    metrics, ran, choice, ser_choice = kind(point)
    calls_law = metrics.pop("calls_law", None)
    if only is not None:  # the fields not asked for, whatever a kind computed on the way
        metrics = {k: metrics[k] if k in only and k in metrics else Unavailable(f"not requested (only={sorted(only)})")
                   for k in PointMetrics.metric_names() if k in only and k in metrics or k not in only}
    missing = set(PointMetrics.metric_names()) - set(metrics)
    if missing:  # a sampler kind must give every field, or say why not
        raise AssertionError(f"{sampler.kind} point metrics left out {sorted(missing)}")
    params = sampler.parameters() if sampler.kind in ("decoder", "reviser") else None
    how = PointMethod(ran, method, sampler.label, getattr(sampler, "tie_seed", None), choice, ser_choice, params,
                      calls_law)
    return PointMetrics(**{k: metrics[k] for k in PointMetrics.metric_names()}, how=how)
