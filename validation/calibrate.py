"""The cheapest decoder setting that meets a target: each family's parameter searched, and the Pareto front.

For a language, a length ``L``, a metric (``ser``, ``ter`` or ``kl``) and a target, every sampler
family of :data:`FAMILIES` has one parameter whose increase (or decrease) buys accuracy with calls:
the number of steps of ``random`` and ``topk``, the confidence threshold of ``threshold``, the
entropy budget of ``entropy-sum``. :func:`calibrate` searches it along the direction of more calls:

* integer parameters (steps): exponential search ``1, 2, 4, ...`` then bisection
  (:func:`validation.steps_needed.search_steps`), about ``2 log2 N`` settings;
* real parameters (gamma): the two ends first (the cheapest end meeting the target ends the
  search; the dearest end missing it answers "not met"), then :data:`GAMMA_BISECTIONS` bisections.

Both assume the metric does not increase along the direction of more calls (true of every case
computed, not a theorem). Every setting evaluated joins the Pareto front of ``(expected calls,
metric)``; the cheapest setting that *meets* the target is the answer.

A family is a sampler factory ``(base PointConfig, parameter value) -> Sampler`` and its
parameter's search space; what one setting costs and how its numbers were obtained is
:func:`evaluate_setting`, which hands the sampler to :func:`numerics.metrics.point_metrics` asking
only for the fields the metric needs (so any sampler ``point_metrics`` accepts works, and its
method -- exact, DP, closed form, Monte Carlo -- is carried by every :class:`Estimate`):

* the metric itself where the point has it (exact methods; Monte Carlo SER; a rule's Monte Carlo
  KL by the chain-rule identity (I1));
* else, for TER, ``TER(q) exp(KL / L)`` with the interval mapped through the same monotone function;
* else (the random-order sampler's mixture law at large ``L``) the Jensen bound
  ``E_tau KL(q || p(. | tau))`` for KL and ``TER(q) exp(bound / L)`` for TER: upper bounds, so a
  setting meeting them meets the metric;
* calls: the point's ``calls`` (the exact ``ddpm_cache`` count ``1 + sum_{i<N} (1 - (1 - pi_i)^L)``
  of the random order for one sequence; a rule's or a decoder's exact or Monte Carlo calls per sequence).

A Monte Carlo setting *meets* the target only when the upper end of its one-sided interval at
``confidence`` does, *may meet* when only the estimate does. A target outside the metric's
range is a :class:`TargetError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from numerics.estimate import Estimate, Unavailable, clopper_pearson
from numerics.sampling.runtime_decoders import DREAM_ALGS
from validation.sweep import PointConfig

__all__ = [
    "FAMILIES",
    "GAMMA_BISECTIONS",
    "METRICS",
    "Calibration",
    "Family",
    "FamilySearch",
    "Setting",
    "TargetError",
    "calibrate",
    "build_sampler",
    "evaluate_setting",
    "family",
    "pareto_front",
    "search_family",
]

METRICS = ("ser", "ter", "kl")
GAMMA_BISECTIONS = 12  # a real parameter is located to 2^-12 of its range (the rules' decisions are on a grid anyway)
MEETS, MAY_MEET, MISSES = "meets", "may meet", "misses"


class TargetError(ValueError):
    """A target outside the metric's range (SER outside [0, 1], TER below the data's own, a negative KL)."""


@dataclass(frozen=True)
class Family:
    """One sampler family and its searched parameter.

    Attributes
    ----------
    name : str
        The sampler (``PointConfig.sampler``).
    parameter : str
        ``"steps"`` or ``"gamma"``.
    integer : bool
        Steps are integers (searched by doubling and bisection); gamma is real.
    low, high : float or None
        The range of the parameter (``None``: set from ``L`` by :meth:`range_for`).
    more_calls_when : str
        ``"higher"``: raising the parameter costs calls and buys accuracy (steps, the confidence
        threshold); ``"lower"``: lowering it does (the entropy budget).
    build : callable
        ``(base PointConfig, parameter value) -> Sampler``: the setting's
        :class:`~numerics.sampling.samplers.Sampler` (a :class:`~validation.sweep.PointConfig` is
        also accepted and taken through its ``make_sampler``); ``base`` carries the language,
        ``L``, the schedule and the method.
    """

    name: str
    parameter: str
    integer: bool
    low: float | None
    high: float | None
    more_calls_when: str
    build: Callable[[PointConfig, float], PointConfig]

    def range_for(self, length: int, vocab_size: int, max_steps: int) -> tuple[float, float]:
        """``(low, high)`` at this ``L``: steps up to ``max_steps`` (topk: ``L``), entropy up to ``L log V``."""
        low = self.low if self.low is not None else 0.0
        if self.high is not None:
            return low, self.high
        if self.name == "topk":
            return low, float(min(length, max_steps))
        if self.parameter == "steps":
            return low, float(max_steps)
        return low, length * math.log(max(vocab_size, 2))


def _steps(sampler: str) -> Callable[[PointConfig, float], Any]:
    """The sampler ``sampler`` with ``v`` steps of the base's schedule."""
    return lambda base, v: replace(base, n_steps=int(v), sampler=sampler, gamma=None).make_sampler()


def _gamma(sampler: str) -> Callable[[PointConfig, float], Any]:
    """The sampler ``sampler`` with ``gamma = v``."""
    return lambda base, v: replace(base, n_steps=1, schedule="linear", sampler=sampler, gamma=float(v)).make_sampler()


#: The families, one entry each (a decoder of numerics.sampling with one monotone parameter joins here).
FAMILIES: tuple[Family, ...] = (
    Family("random", "steps", True, 1, None, "higher", _steps("random")),
    Family("topk", "steps", True, 1, None, "higher", _steps("topk")),
    Family("threshold", "gamma", False, 0.0, 1.0, "higher", _gamma("threshold")),
    Family("entropy-sum", "gamma", False, 0.0, None, "lower", _gamma("entropy-sum")),
)


def family(name: str) -> Family:
    """The family called ``name`` (:data:`FAMILIES`)."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise ValueError(f"unknown sampler family {name!r}; choose from {', '.join(f.name for f in FAMILIES)}")


@dataclass(frozen=True)
class Setting:
    """One evaluated setting of a family.

    Attributes
    ----------
    family, parameter : str
    value : float
        The parameter's value (an integer number of steps, or gamma).
    label : str
        The sampler as the engine names it (schedule or threshold included).
    calls : Estimate
        Expected denoiser calls per sequence (exact formula / exact DP / Monte Carlo mean).
    metric : Estimate
        The metric, or an upper bound on it (``quantity``), with its method and interval.
    quantity : str
        ``"ser"``, ``"ter"``, ``"kl"``, or ``"kl_jensen_bound"`` / ``"ter_jensen_bound"`` (an upper
        bound compared in place of the metric: meeting it suffices).
    status : str
        ``"meets"``, ``"may meet"`` (Monte Carlo: the estimate meets, its upper end does not) or ``"misses"``.
    """

    family: str
    parameter: str
    value: float
    label: str
    calls: Estimate
    metric: Estimate
    quantity: str
    status: str

    @property
    def meets(self) -> bool:
        return self.status == MEETS


@dataclass(frozen=True)
class FamilySearch:
    """The search of one family: every setting visited, and the answer.

    Attributes
    ----------
    family : str
    settings : tuple of Setting
        In the order visited.
    cheapest : Setting or None
        The fewest-calls setting that meets the target (``None``: none tried does).
    """

    family: str
    settings: tuple
    cheapest: Setting | None


@dataclass(frozen=True)
class Calibration:
    """The answer of :func:`calibrate`.

    Attributes
    ----------
    language : str
    length : int
    metric : str
    target : float
        The absolute target (a relative TER target already multiplied by ``TER(q)``).
    searches : tuple of FamilySearch
    front : tuple of Setting
        Pareto front over every family: no other setting has fewer expected calls and a lower
        metric value (ordered by calls).
    cheapest : Setting or None
        The fewest-calls setting of any family that meets the target.
    best : Setting
        The setting with the lowest metric value found (the answer's fallback when not met).
    may_meet : Setting or None
        The fewest-calls Monte Carlo setting whose estimate, but not its interval, meets the target.
    confidence : float
        One-sided level of every Monte Carlo "meets".
    """

    language: str
    length: int
    metric: str
    target: float
    searches: tuple
    front: tuple
    cheapest: Setting | None
    best: Setting
    may_meet: Setting | None
    confidence: float

    @property
    def met(self) -> bool:
        return self.cheapest is not None


def _status(e: Estimate, target: float) -> str:
    if e.exact:
        return MEETS if e.value <= target else MISSES
    if e.interval()[1] <= target:
        return MEETS
    return MAY_MEET if e.value <= target else MISSES


def _one_sided(e: Estimate, confidence: float) -> Estimate:
    """``e`` with its interval at the two-sided level ``2 confidence - 1`` (whose upper end is the
    one-sided bound at ``confidence``): Clopper-Pearson recomputed for a proportion, else normal."""
    if e.exact:
        return e
    level = 2.0 * confidence - 1.0
    if "Clopper-Pearson" in e.method:
        lo, hi = clopper_pearson(int(round(e.value * e.samples)), e.samples, level)
        return replace(e, ci_low=lo, ci_high=hi, confidence=level)
    return replace(e, ci_low=None, ci_high=None, confidence=level)


#: The PointMetrics fields each metric needs (the first available one is used, in this order).
NEEDS = {"ser": ("ser",), "kl": ("kl", "kl_jensen_bound"), "ter": ("ter", "ter_data", "kl", "kl_jensen_bound")}


def evaluate_setting(sampler: Any, metric: str, language: Any, length: int, *, method: str = "auto",
                     samples: int = 1000, rng: Any = 0, confidence: float = 0.95,
                     names: tuple = (None, None)) -> tuple[Estimate, str, Estimate]:
    """``(metric or its upper bound, quantity, expected calls)`` of one setting (module docstring).

    ``sampler`` is any :class:`~numerics.sampling.samplers.Sampler` that
    :func:`numerics.metrics.point_metrics` accepts (or a ``Schedule``: the random order); only the
    fields of :data:`NEEDS` and ``calls`` (network calls per sequence, every sampler kind) are computed. ``confidence`` is one-sided: Monte Carlo
    intervals are put at the two-sided level ``2 confidence - 1``.
    """
    from numerics.metrics import point_metrics

    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")
    m = point_metrics(language, length, sampler, method=method, samples=samples, rng=rng,
                      only=NEEDS[metric] + ("calls",), names=names)
    calls = m.calls
    if isinstance(calls, Unavailable):
        raise ValueError(f"{m.how.sampler}: no call count ({calls.reason})")
    calls = _one_sided(calls, confidence)
    direct = getattr(m, metric)
    if isinstance(direct, Estimate):
        return _one_sided(direct, confidence), metric, calls
    kl, quantity = m.kl, metric
    if not isinstance(kl, Estimate):
        kl, quantity = m.kl_jensen_bound, f"{metric}_jensen_bound"
    if not isinstance(kl, Estimate):
        raise ValueError(f"{m.how.sampler} at L = {length}: no {metric} and no KL or bound on it "
                         f"({direct.reason}; {kl.reason})")
    kl = _one_sided(kl, confidence)
    if metric == "kl":
        return kl, quantity, calls
    ter_q = m.ter_data
    if not isinstance(ter_q, Estimate) or not ter_q.exact:
        raise ValueError(f"--metric ter at L = {length}: the language has no exact entropy H(q) and no exact method "
                         "fits; use a smaller --length, an n-gram or interval language, or --metric kl")
    lo, hi = kl.interval()
    f = lambda k: ter_q.value * math.exp(k / length)
    e = Estimate(f(kl.value), f(kl.value) * kl.stderr / length, f"TER(q) exp({'KL' if quantity == 'ter' else 'bound'} "
                 f"/ L): TER(q) {ter_q.method}, {'KL' if quantity == 'ter' else 'bound'} {kl.method}", kl.samples,
                 None if kl.exact else f(lo), None if kl.exact else f(hi), kl.confidence)
    return e, quantity, calls


def build_sampler(fam: Family, base: PointConfig, value: float) -> Any:
    """The sampler of ``fam`` at ``value`` (a :class:`PointConfig` built by a family is taken through ``make_sampler``)."""
    out = fam.build(base, value)
    return out.make_sampler() if isinstance(out, PointConfig) else out


def search_family(fam: Family, base: PointConfig, metric: str, target: float, language: Any, confidence: float,
                  max_steps: int, on_setting: Callable[[Setting], None] | None = None, *,
                  gamma_bisections: int = GAMMA_BISECTIONS) -> FamilySearch:
    """Search ``fam``'s parameter for the cheapest setting meeting ``target`` (module docstring; a real
    parameter is bisected ``gamma_bisections`` times)."""
    from validation.steps_needed import Evaluation, search_steps

    seen: list[Setting] = []

    def at(v: float) -> Setting:
        sampler = build_sampler(fam, base, v)
        e, quantity, calls = evaluate_setting(sampler, metric, language, base.length, method=base.method,
                                              samples=base.samples, rng=base.seed, confidence=confidence,
                                              names=(base.language, None))
        s = Setting(fam.name, fam.parameter, float(v), sampler.label, calls, e, quantity, _status(e, target))
        seen.append(s)
        if on_setting:
            on_setting(s)
        return s

    low, high = fam.range_for(base.length, language.vocab_size, max_steps)
    if fam.integer:
        found = search_steps(lambda n: Evaluation(n, "", Estimate(0.0, 0.0, ""), at(n).meets), int(high))
        cheapest = next((s for s in seen if s.value == found.n_steps), None) if found.met else None
        return FamilySearch(fam.name, tuple(seen), cheapest)
    # real parameter, ordered so that s = 0 is the cheapest end and s = 1 the dearest
    def value(s: float) -> float:
        return low + s * (high - low) if fam.more_calls_when == "higher" else high - s * (high - low)

    dear = at(value(1.0))
    if not dear.meets:
        return FamilySearch(fam.name, tuple(seen), None)
    if at(value(0.0)).meets:
        return FamilySearch(fam.name, tuple(seen), seen[-1])
    lo, hi, best = 0.0, 1.0, dear
    for _ in range(int(gamma_bisections)):
        mid = 0.5 * (lo + hi)
        s = at(value(mid))
        if s.meets:
            hi, best = mid, s
        else:
            lo = mid
    cheapest = min((s for s in seen if s.meets), key=lambda s: (s.calls.value, s.metric.value), default=best)
    return FamilySearch(fam.name, tuple(seen), cheapest)


def pareto_front(settings: Sequence[Setting]) -> tuple:
    """The settings no other one beats on both expected calls and metric value, by increasing calls."""
    out: list[Setting] = []
    for s in sorted(settings, key=lambda s: (s.calls.value, s.metric.value)):
        if not out or s.metric.value < out[-1].metric.value:
            out.append(s)
    return tuple(out)


def check_target(metric: str, target: float, ter_data: float | None) -> None:
    """:class:`TargetError` for a target outside the metric's range."""
    if not math.isfinite(target):
        raise TargetError(f"the target must be a finite number, got {target}")
    if metric == "ser" and not 0.0 <= target <= 1.0:
        raise TargetError(f"SER is a probability: a target of {target} is outside [0, 1]")
    if metric == "kl" and target < 0:
        raise TargetError(f"KL(q || p) >= 0: a target of {target} is never met")
    if metric == "ter" and ter_data is not None and target < ter_data:
        raise TargetError(f"TER(q) = {ter_data:.6g} (the data's own perplexity) is the floor of every sampler's "
                          f"TER; a target of {target} is never met")


def calibrate(language: str, length: int, metric: str, target: float, samplers: Sequence[str] = ("random",), *,
              relative: bool = False, schedule: str = "linear", method: str = "auto", samples: int = 1000,
              seed: int = 0, confidence: float = 0.95, max_steps: int = 1 << 12,
              on_setting: Callable[[Setting], None] | None = None,
              gamma_bisections: int = GAMMA_BISECTIONS) -> Calibration:
    """The cheapest setting of any of ``samplers`` with ``metric <= target`` (module docstring).

    ``relative`` (TER only): the target is the relative excess over the data's ``TER(q)``, i.e.
    ``TER <= (1 + target) TER(q)`` ("perplexity within 1%" is ``target = 0.01``).
    """
    from numerics.languages.presets import load_language
    from numerics.metrics import exact_entropy

    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")
    names = [s for s in samplers]
    if not names:
        raise ValueError("no sampler family given: name at least one of " + ", ".join(f.name for f in FAMILIES))
    fams = [family(n) for n in names]
    lang = load_language(language)
    ter_q = None
    if metric == "ter":
        H = exact_entropy(lang, length)
        ter_q = None if H is None else math.exp(H.value / length)
        if relative:
            if ter_q is None:
                raise TargetError(f"a relative TER target needs the exact entropy H(q); {language} has none")
            if target < 0:
                raise TargetError(f"a relative TER target is an excess over TER(q) >= 0, got {target}")
            target = ter_q * (1.0 + target)
    elif relative:
        raise ValueError("a relative target applies to --metric ter only")
    check_target(metric, target, ter_q)
    base = PointConfig(language, length, 1, schedule, method, samples, seed)
    searches = tuple(search_family(f, base, metric, target, lang, confidence, max_steps, on_setting,
                                   gamma_bisections=gamma_bisections) for f in fams)
    every = [s for fs in searches for s in fs.settings]
    meeting = [fs.cheapest for fs in searches if fs.cheapest is not None]
    cheapest = min(meeting, key=lambda s: (s.calls.value, s.metric.value)) if meeting else None
    maybe = [s for s in every if s.status == MAY_MEET]
    may_meet = min(maybe, key=lambda s: s.calls.value) if maybe else None
    best = min(every, key=lambda s: (s.metric.value, s.calls.value))
    return Calibration(language, length, metric, target, searches, pareto_front(every), cheapest, best, may_meet,
                       confidence)


# ----- the decoders of numerics.sampling.decoders (docs/methods/decoders.md) ------------------------
#
# Each family builds a PointConfig whose sampler is a decoder; evaluate_setting reads its calls from the
# point's ``calls`` (as for every sampler) and its metric as for the adaptive rules (exact law on tiny
# cases, else Monte Carlo; KL / TER by Monte Carlo only for a path-deterministic decoder, else unavailable).

#: The block lengths of the ``llada-bB`` families (besides ``llada``, one block ``B = L``).
LLADA_BLOCK_LENGTHS = (8, 32)
#: The cheap end of a real parameter that must stay positive (fast-dllm's tau, its factor f): at
#: ``2^-10`` every draw of probability ``>= 2^-10`` passes (tau), or one per step nearly (f); the
#: bisection locates the parameter to ``2^-GAMMA_BISECTIONS`` of its range anyway.
DECODER_PARAMETER_FLOOR = 2.0**-10
#: ReMDM's remasking strength when the base config gives none (the ``cap`` variant).
REMDM_DEFAULT_ETA = 0.05


def _llada(block_length: int | None) -> Callable[[PointConfig, float], PointConfig]:
    """``v`` steps per block: ``N = v L/B`` (LLaDA's steps are a multiple of the number of blocks)."""

    def build(base: PointConfig, v: float) -> PointConfig:
        blocks = 1 if block_length is None else base.length // block_length
        return replace(base, n_steps=int(v) * blocks, sampler="llada", gamma=None, block_length=block_length)

    return build


def _fast_dllm(parameter: str) -> Callable[[PointConfig, float], PointConfig]:
    return lambda base, v: replace(base, n_steps=1, schedule="linear", sampler="fast-dllm", gamma=None,
                                   **{parameter: float(v)})


def _remdm(base: PointConfig, v: float) -> PointConfig:
    eta = REMDM_DEFAULT_ETA if base.eta is None else base.eta
    return replace(base, n_steps=int(v), sampler="remdm", gamma=None, eta=eta)


def _dream(alg: str) -> Callable[[PointConfig, float], PointConfig]:
    """Dream's ``diffusion_generate`` with ``--alg alg`` at ``v`` steps (its defaults otherwise)."""
    return lambda base, v: replace(base, n_steps=int(v), sampler="dream", gamma=None, options={"alg": alg})


FAMILIES += (
    Family("llada", "steps", True, 1, None, "higher", _llada(None)),
    *(Family(f"llada-b{B}", "steps", True, 1, None, "higher", _llada(B)) for B in LLADA_BLOCK_LENGTHS),
    Family("fast-dllm", "gamma", False, DECODER_PARAMETER_FLOOR, 1.0, "higher", _fast_dllm("threshold")),
    Family("fast-dllm-factor", "gamma", False, DECODER_PARAMETER_FLOOR, None, "lower", _fast_dllm("factor")),
    Family("eb", "gamma", False, 0.0, None, "lower", _gamma("eb")),
    Family("remdm", "steps", True, 1, None, "higher", _remdm),
    *(Family("dream" if alg == "origin" else f"dream-{alg}", "steps", True, 1, None, "higher", _dream(alg))
      for alg in DREAM_ALGS),
)

__all__ += ["DECODER_PARAMETER_FLOOR", "LLADA_BLOCK_LENGTHS", "REMDM_DEFAULT_ETA"]
