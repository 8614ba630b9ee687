"""The cheapest decoder setting that meets a target: each family's knob searched on a grid, and the Pareto front.

For a language, a length ``L``, a metric (``ser``, ``ter`` or ``kl``) and a target, a *family* is
one sampler with its options fixed (block length, temperature, remasking, ...) and one *knob*
searched: the number of steps of ``random``, ``topk``, ``llada`` and ``remdm``, the confidence
threshold of ``threshold`` and of Fast-dLLM, Fast-dLLM's factor, the entropy budget of
``entropy-sum`` and ``eb`` (:data:`KNOBS`). Nothing assumes the metric is monotone in the knob; it
is not (``threshold`` on ``2gram-pruned`` at ``L = 3``: SER 0.078 at gamma 0.23, 0.146 at 0.25,
0.057 at 0.28):

* a real knob is evaluated on a uniform grid of ``grid`` points over its range
  (:meth:`Family.space`), and every pair of grid neighbours of which one meets the target and the
  other does not is refined by ``refine`` bisections;
* an integer knob (steps, in multiples of the number of blocks where the rule needs it) is
  evaluated at ``1, 2, 4, ...`` up to the first value meeting the target, then bisected between
  the last miss and that value (:func:`validation.step_search.search_steps`): the expected calls
  of a step family grow with its steps, so no larger value is cheaper.

The answer is the setting with the fewest expected calls among those evaluated that meet the
target; every search says the grid it searched and whether the metric was monotone along the
direction of more calls on the values evaluated (:attr:`FamilySearch.monotone`). A family that
cannot run at this ``L`` (a block length that does not divide it) is reported as inapplicable with
the reason, and the others keep their answers.

What one setting costs and how its numbers were obtained is :func:`evaluate_setting`, which hands
the sampler to :func:`numerics.metrics.point_metrics` asking only for the fields the metric needs
(so every sampler ``point_metrics`` accepts works, and its method -- exact, DP, closed form, Monte
Carlo -- is carried by every :class:`Estimate`):

* the metric itself where the point has it (exact methods; Monte Carlo SER; a rule's Monte Carlo
  KL by the chain-rule identity (I1));
* else, for TER, ``TER(q) exp(KL / L)`` with the interval mapped through the same monotone
  function, ``TER(q)`` exact (:func:`data_entropy`: the chain rule of an n-gram, the interval
  closed form, else the joint table while ``V^L`` is small);
* else (the random-order sampler's mixture law at large ``L``) the Jensen bound
  ``E_tau KL(q || p(. | tau))`` for KL and ``TER(q) exp(bound / L)`` for TER: upper bounds, so a
  setting meeting them meets the metric;
* calls: the point's ``calls`` (the exact ``ddpm_cache`` count of the random order for one
  sequence; a rule's or a decoder's exact or Monte Carlo calls per sequence).

A Monte Carlo setting *meets* the target only when the upper end of its one-sided interval at
``confidence`` does, *may meet* when only the estimate does. A target outside the metric's range is
a :class:`TargetError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from numerics.estimate import Estimate, Unavailable, clopper_pearson, meaningful
from numerics.sampling.registry import DECODERS, REVISERS, Knob
from validation.step_search import Evaluation, search_steps
from validation.sweep import PointConfig

__all__ = [
    "DECODER_PARAMETER_FLOOR",
    "GRID_POINTS",
    "KNOBS",
    "METRICS",
    "REFINE_BISECTIONS",
    "REMDM_DEFAULT_ETA",
    "Calibration",
    "Family",
    "FamilySearch",
    "Setting",
    "Space",
    "TargetError",
    "build_sampler",
    "calibrate",
    "data_entropy",
    "evaluate_setting",
    "family",
    "pareto_front",
    "aup",
    "family_aup",
    "search_family",
    "check_lossless_names",
    "lossless_searches",
    "lossless_settings",
]

METRICS = ("ser", "ter", "kl")
#: Points of a real knob's uniform grid (64 intervals: the threshold's at 1/64).
GRID_POINTS = 65
#: Bisections of each pair of grid neighbours that straddle the target (to 2^-4 of a grid interval).
REFINE_BISECTIONS = 4
#: The first grid point of a range whose low end is open (Fast-dLLM's tau and factor must be > 0):
#: ``low + DECODER_PARAMETER_FLOOR (high - low)``.
DECODER_PARAMETER_FLOOR = 2.0**-10
#: ReMDM's remasking strength when none is given (the ``cap`` variant).
REMDM_DEFAULT_ETA = 0.05
MEETS, MAY_MEET, MISSES = "meets", "may meet", "misses"


class TargetError(ValueError):
    """A target outside the metric's range (SER outside [0, 1], TER below the data's own, a negative KL)."""


#: Each sampler's knobs, the main one first: the decoder registry's (a sampler registered with a knob is a family).
KNOBS: dict[str, tuple[Knob, ...]] = {name: spec.knobs for name, spec in DECODERS.items() if spec.knobs}
#: The revising decoders' knobs (:data:`numerics.sampling.registry.REVISERS`): families of ``revisers=``, whose
#: points may go below the monotone decoders' floor (they change revealed tokens).
REVISER_KNOBS: dict[str, tuple[Knob, ...]] = {name: spec.knobs for name, spec in REVISERS.items() if spec.knobs}
#: Samplers whose steps must be a multiple of the number of blocks L/B, and which never use more than L steps:
#: topk and the decoders that take a number of steps (llada, llada2).
_FIXED_COUNTS = ("topk", *(name for name, spec in DECODERS.items() if "steps" in spec.needs))


@dataclass(frozen=True)
class Space:
    """Where a family's knob is searched at one ``L``: ``[low, high]``; an integer knob in multiples of ``unit``."""

    low: float
    high: float
    unit: int = 1
    low_open: bool = False

    def grid(self, points: int) -> list[float]:
        """``points`` values evenly spaced over ``[low, high]`` (an open low end moved just inside), each at
        13 significant digits (0.9, not the 0.8999999999999999 of ``0.1 + 0.8``: :func:`~numerics.estimate.meaningful`)."""
        span = self.high - self.low
        out = [meaningful(self.low + span * k / (points - 1)) for k in range(points)]
        if self.low_open:
            out[0] = self.low + span * DECODER_PARAMETER_FLOOR
        return out


@dataclass(frozen=True)
class Family:
    """One sampler with its options fixed and one knob searched.

    Attributes
    ----------
    name : str
        As asked for (``"llada-b8"``, ``"fast-dllm:factor"``).
    sampler : str
        The :class:`~validation.sweep.PointConfig` sampler.
    knob : :class:`numerics.sampling.registry.Knob`
        ``name`` is ``"steps"`` (the point's ``n_steps``) or an option (``"gamma"``, ``"threshold"``,
        ``"factor"``); ``calls="more"``: raising it costs calls; ``high=None``: set from ``L``, the
        block length and ``V`` (:meth:`space`).
    options : mapping
        Fixed :class:`~validation.sweep.PointConfig` fields (``block_length``, ``temperature``, ...).
    """

    name: str
    sampler: str
    knob: Knob
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def parameter(self) -> str:
        return self.knob.name

    @property
    def revises(self) -> bool:
        """A revising decoder (it changes revealed tokens: the monotone decoders' floor does not bind it)."""
        return self.sampler in REVISERS

    @property
    def integer(self) -> bool:
        return self.knob.integer

    @property
    def more_calls_when(self) -> str:
        """``"higher"`` or ``"lower"``: the direction of the knob that costs calls."""
        return "higher" if self.knob.calls == "more" else "lower"

    def build(self, base: PointConfig, value: float) -> PointConfig:
        """The point of this family at ``value`` (``base`` carries the language, ``L``, method, schedule, seeds)."""
        opts = dict(self.options)
        if self.sampler == "remdm" and opts.get("eta") is None:
            opts["eta"] = REMDM_DEFAULT_ETA
        if self.knob.integer:
            return replace(base, sampler=self.sampler, n_steps=int(value), **opts)
        # a real knob of a rule that also takes steps (llada2's threshold) is searched at N = L: a floor of one
        # token per step, the threshold deciding how many more
        steps = base.length if "steps" in getattr(DECODERS.get(self.sampler), "needs", ()) else 1
        return replace(base, sampler=self.sampler, n_steps=steps, schedule="linear", **opts,
                       **{self.knob.name: float(value)})

    def block_length(self, length: int) -> int:
        B = self.options.get("block_length")
        return length if B is None else int(B)

    def space(self, length: int, vocab_size: int, max_steps: int) -> Space:
        """The knob's range at ``L``: steps up to ``max_steps`` (topk, llada: up to ``L``, in multiples of
        ``L/B``); an entropy budget up to ``B log V``; Fast-dLLM's factor up to ``B + 1`` (from there every
        score passes ``1 - f/(j+1)``)."""
        k, B = self.knob, self.block_length(length)
        if k.integer:
            fixed = self.sampler in _FIXED_COUNTS
            unit = max(1, length // B) if fixed and length % B == 0 else 1
            top = min(length, max_steps) if fixed else max_steps
            return Space(unit, max(unit, top - top % unit), unit)
        if k.high is not None:
            high = k.high
        elif k.name == "factor":
            high = B + 1.0
        else:
            high = B * math.log(max(vocab_size, 2))
        return Space(k.low, high, 1, k.low_open)

    def range_for(self, length: int, vocab_size: int, max_steps: int) -> tuple[float, float]:
        """``(low, high)`` of :meth:`space`."""
        s = self.space(length, vocab_size, max_steps)
        return s.low, s.high


_LEGACY = re.compile(r"^llada-b(\d+)$")


def family(name: str, options: Mapping[str, Any] | None = None) -> Family:
    """The family ``name``: a sampler of :data:`KNOBS` (its main knob), ``SAMPLER:KNOB`` (another knob:
    ``fast-dllm:factor``), or the short names ``llada-bB`` (llada with blocks of ``B``) and
    ``fast-dllm-factor``; ``options`` are the fixed decoder options (PointConfig fields, ``None`` = not given)."""
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    text = name.strip()
    m = _LEGACY.match(text)
    if m:
        sampler, knob_name = "llada", None
        opts["block_length"] = int(m.group(1))
    elif text == "fast-dllm-factor":
        sampler, knob_name = "fast-dllm", "factor"
    else:
        sampler, _, knob_name = text.partition(":")
        knob_name = knob_name or None
    every = {**KNOBS, **REVISER_KNOBS}
    if sampler not in every:
        raise ValueError(f"unknown sampler family {name!r}; choose from {', '.join(every)} (or SAMPLER:KNOB, "
                         "llada-bB, fast-dllm-factor)")
    knobs = every[sampler]
    knob = knobs[0] if knob_name is None else next((k for k in knobs if k.name == knob_name), None)
    if knob is None:
        raise ValueError(f"unknown sampler family {name!r}: {sampler}'s knobs are {', '.join(k.name for k in knobs)}")
    if not knob.integer and opts.get(knob.name) is not None:
        raise ValueError(f"family {name!r} searches {knob.name}: do not fix it (--{knob.name})")
    if sampler == "fast-dllm":  # one of threshold / factor: the knob, never both
        opts.pop("factor" if knob.name == "threshold" else "threshold", None)
    return Family(text, sampler, knob, opts)


@dataclass(frozen=True)
class Setting:
    """One evaluated setting of a family.

    Attributes
    ----------
    family, parameter : str
        The family and its knob (``steps``, ``gamma``, ``threshold``, ``factor``).
    value : float
        The knob's value (the total number of steps ``N``, or the real parameter).
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
    """The search of one family: the grid, every setting visited, and the answer.

    Attributes
    ----------
    family : str
    parameter : str
        The knob searched.
    settings : tuple of Setting
        In the order visited.
    cheapest : Setting or None
        The fewest-calls setting that meets the target (``None``: none evaluated does).
    grid : dict
        What was searched: ``kind`` (``"uniform"``: ``points`` values over ``[low, high]`` and
        ``refine`` bisections of each straddling pair; ``"doubling"``: ``unit, 2 unit, 4 unit, ...``
        up to ``high`` or the first value meeting the target, then bisection), ``low``, ``high``,
        ``unit``, ``straddles`` (the pairs refined) and ``options`` (the fixed options).
    monotone : bool or None
        The metric never rises along the direction of more calls over the values evaluated
        (Monte Carlo: a rise counts only beyond both intervals); ``None`` when inapplicable.
    error : str or None
        Why the family cannot run here (no settings), or why its search stopped early (a setting no
        method can compute: the settings before it are kept).
    """

    family: str
    parameter: str
    settings: tuple
    cheapest: Setting | None
    grid: dict = field(default_factory=dict)
    monotone: bool | None = None
    error: str | None = None


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
        One per family asked for, inapplicable ones included (with their ``error``).
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

    @property
    def aup(self) -> dict[str, float | None]:
        """Per family, the AUP of its own Pareto front (:func:`family_aup`; ``None`` off SER)."""
        return {fs.family: family_aup(fs.settings, self.length) for fs in self.searches}


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
    level = round(2.0 * confidence - 1.0, 12)  # 0.9, not 0.8999999999999999 from 2 * 0.95 - 1
    if "Clopper-Pearson" in e.method:
        lo, hi = clopper_pearson(int(round(e.value * e.samples)), e.samples, level)
        return replace(e, ci_low=lo, ci_high=hi, confidence=level)
    return replace(e, ci_low=None, ci_high=None, confidence=level)


def data_entropy(language: Any, length: int) -> Estimate | None:
    """``H(q)`` of ``L`` tokens exactly: the n-gram chain rule or the interval closed form
    (:func:`numerics.metrics.exact_entropy`), else the joint table while ``V^L`` fits
    (:data:`numerics.exact.joint_table.MAX_TABLE_ENTRIES`, the table ``exact`` uses); ``None`` beyond."""
    import numpy as np

    from numerics.exact.joint_table import MAX_TABLE_ENTRIES, joint_table
    from numerics.metrics import exact_entropy

    H = exact_entropy(language, length)
    if H is not None:
        return H
    if length * math.log(max(int(language.vocab_size), 1)) > math.log(MAX_TABLE_ENTRIES):
        return None
    q = joint_table(language, length).ravel()
    q = q[q > 0]
    return Estimate(float(-np.sum(q * np.log(q))), 0.0, "joint-table")


#: The PointMetrics fields each metric needs (the first available one is used, in this order).
NEEDS = {"ser": ("ser",), "kl": ("kl", "kl_jensen_bound"), "ter": ("ter", "ter_data", "kl", "kl_jensen_bound")}


def evaluate_setting(sampler: Any, metric: str, language: Any, length: int, *, method: str = "auto",
                     samples: int = 1000, rng: Any = 0, confidence: float = 0.95,
                     names: tuple = (None, None)) -> tuple[Estimate, str, Estimate]:
    """``(metric or its upper bound, quantity, expected calls)`` of one setting (module docstring).

    ``sampler`` is any :class:`~numerics.sampling.samplers.Sampler` that
    :func:`numerics.metrics.point_metrics` accepts (or a ``Schedule``: the random order); only the
    fields of :data:`NEEDS` and ``calls`` (network calls per sequence, every sampler kind) are
    computed. ``confidence`` is one-sided: Monte Carlo intervals are put at the two-sided level
    ``2 confidence - 1``.
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
    ter_q = m.ter_data if isinstance(m.ter_data, Estimate) and m.ter_data.exact else None
    if ter_q is None:
        H = data_entropy(language, length)
        ter_q = None if H is None else Estimate(math.exp(H.value / length), 0.0, H.method)
    if ter_q is None:
        raise ValueError(f"--metric ter at L = {length}: the language has no exact entropy H(q) (no chain rule, "
                         "V^L beyond the joint table); use a smaller --length, an n-gram or interval language, "
                         "or --metric kl")
    lo, hi = kl.interval()
    f = lambda k: ter_q.value * math.exp(k / length)  # noqa: E731
    what = "KL" if quantity == "ter" else "bound"
    e = Estimate(f(kl.value), f(kl.value) * kl.stderr / length,
                 f"TER(q) exp({what} / L): TER(q) {ter_q.method}, {what} {kl.method}", kl.samples,
                 None if kl.exact else f(lo), None if kl.exact else f(hi), kl.confidence)
    return e, quantity, calls


def build_sampler(fam: Family, base: PointConfig, value: float) -> Any:
    """The sampler of ``fam`` at ``value``."""
    return fam.build(base, value).make_sampler()


def _monotone(fam: Family, settings: Sequence[Setting]) -> bool:
    """No rise of the metric along the direction of more calls (Monte Carlo: beyond both intervals)."""
    order = sorted(settings, key=lambda s: s.value, reverse=fam.more_calls_when == "lower")
    for a, b in zip(order, order[1:]):
        if b.metric.interval()[0] > a.metric.interval()[1] * (1 + 1e-12) + 1e-300:
            return False
    return True


def _options_text(options: Mapping[str, Any]) -> dict:
    return {k: v for k, v in options.items() if v is not None}


def search_family(fam: Family, base: PointConfig, metric: str, target: float, language: Any, confidence: float,
                  max_steps: int, on_setting: Callable[[Setting], None] | None = None, *,
                  grid: int = GRID_POINTS, refine: int = REFINE_BISECTIONS) -> FamilySearch:
    """Search ``fam``'s knob for the cheapest setting meeting ``target`` (module docstring).

    A family that cannot run at ``base.length`` (its decoder refuses the block length, the options
    or the steps) comes back with ``error`` set and no settings; nothing is allocated for it.
    """
    if int(grid) != grid or grid < 2:
        raise ValueError(f"a grid needs at least 2 points, got {grid!r}")
    if int(refine) != refine or refine < 0:
        raise ValueError(f"refine must be an integer >= 0, got {refine!r}")
    space = fam.space(base.length, language.vocab_size, max_steps)
    desc = {"knob": fam.parameter, "low": space.low, "high": space.high, "unit": space.unit,
            "options": _options_text(fam.options), **({"revises": True} if fam.revises else {})}
    try:  # what the cheapest setting refuses (a block length that does not divide L, an option it does not take)
        fam.build(base, space.low if fam.integer else space.grid(2)[0]).make_sampler()
    except ValueError as exc:
        return FamilySearch(fam.name, fam.parameter, (), None, desc, None, str(exc))
    seen: dict[float, Setting] = {}

    def at(v: float) -> Setting:
        if v in seen:
            return seen[v]
        sampler = build_sampler(fam, base, v)
        e, quantity, calls = evaluate_setting(sampler, metric, language, base.length, method=base.method,
                                              samples=base.samples, rng=base.seed, confidence=confidence,
                                              names=(base.language, None))
        s = Setting(fam.name, fam.parameter, int(v) if fam.integer else float(v), sampler.label, calls, e, quantity,
                    _status(e, target))
        seen[v] = s
        if on_setting:
            on_setting(s)
        return s

    error = None
    if fam.integer:
        desc |= {"kind": "doubling", "straddles": []}
    else:
        values = space.grid(int(grid))
        desc |= {"kind": "uniform", "points": int(grid), "refine": int(refine), "straddles": []}
    try:  # a setting no method can compute (a size beyond the exact limits) ends this family's search, said so
        if fam.integer:
            u = space.unit
            search_steps(lambda m: Evaluation(m * u, "", Estimate(0.0, 0.0, ""), at(m * u).meets),
                         int(space.high) // u)
        else:
            for v in values:
                at(v)
            straddles = [(a, b) for a, b in zip(values, values[1:]) if seen[a].meets != seen[b].meets]
            desc["straddles"] = [list(ab) for ab in straddles]
            for a, b in straddles:
                for _ in range(int(refine)):
                    mid = 0.5 * (a + b)
                    if at(mid).meets == seen[a].meets:
                        a = mid
                    else:
                        b = mid
    except ValueError as exc:
        error = f"stopped after {len(seen)} settings: {exc}" if seen else str(exc)
    settings = tuple(seen.values())
    cheapest = min((s for s in settings if s.meets), key=lambda s: (s.calls.value, s.metric.value), default=None)
    return FamilySearch(fam.name, fam.parameter, settings, cheapest, desc,
                        _monotone(fam, settings) if settings else None, error)


def pareto_front(settings: Sequence[Setting]) -> tuple:
    """The settings no other one beats on both expected calls and metric value, by increasing calls."""
    out: list[Setting] = []
    for s in sorted(settings, key=lambda s: (s.calls.value, s.metric.value)):
        if not out or s.metric.value < out[-1].metric.value:
            out.append(s)
    return tuple(out)


AUP_WINDOW = 5.0  # d3LLM's AUP keeps the points with y >= y_1 - 5 (y in percent)


def aup(points: Sequence[tuple[float, float]]) -> float:
    """Accuracy under parallelism (d3LLM) of points ``(rho, y)``: ``rho`` tokens per call, ``y`` in percent.

    Sorted by ``rho``, the points with ``y >= y_1 - 5`` are kept and
    ``AUP = rho_1 y_1 + sum_{i>=2} (rho_i - rho_{i-1}) (y_i W(y_i) + y_{i-1} W(y_{i-1})) / 2`` with
    ``W(y) = min(exp(-3 (1 - y / y_max)), 1)``, ``y_max`` the largest kept ``y`` (0 when every ``y`` is 0).
    """
    pts = sorted((float(r), float(y)) for r, y in points)
    if not pts:
        raise ValueError("AUP needs at least one point")
    keep = [p for p in pts if p[1] >= pts[0][1] - AUP_WINDOW]
    y_max = max(y for _, y in keep)
    w = (lambda y: min(math.exp(-3.0 * (1.0 - y / y_max)), 1.0)) if y_max > 0 else (lambda y: 0.0)
    total = keep[0][0] * keep[0][1]
    for (r0, y0), (r1, y1) in zip(keep, keep[1:]):
        total += (r1 - r0) * (y1 * w(y1) + y0 * w(y0)) / 2.0
    return total


def family_aup(settings: Sequence[Setting], length: int) -> float | None:
    """AUP of one family's Pareto front on SER (``rho = L / E[calls]``, ``y = 100 (1 - SER)``); ``None`` when the
    settings are not SER or there are none. Exact where the calls and SER are (``dp`` / closed forms)."""
    if not settings or any(s.quantity != "ser" for s in settings):
        return None
    front = pareto_front(settings)
    return aup([(length / s.calls.value, 100.0 * (1.0 - s.metric.value)) for s in front])


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


class NoFamilyError(ValueError):
    """No family asked for can run at this ``L`` (each one's reason in the message)."""


def calibrate(language: str, length: int, metric: str, target: float, samplers: Sequence[str] = ("random",), *,
              relative: bool = False, schedule: str = "linear", method: str = "auto", samples: int = 1000,
              seed: int = 0, confidence: float = 0.95, max_steps: int = 1 << 12,
              on_setting: Callable[[Setting], None] | None = None, options: Mapping[str, Any] | None = None,
              tie_seed: int = 0, grid: int = GRID_POINTS, refine: int = REFINE_BISECTIONS,
              lossless: Sequence[str] = (), revisers: Sequence[str] = (),
              reviser_options: Mapping[str, Any] | None = None) -> Calibration:
    """The cheapest setting of any of ``samplers`` with ``metric <= target`` (module docstring).

    ``samplers`` are family names (:func:`family`); ``options`` the decoder options every family
    takes (block length, temperature, ...: :class:`~validation.sweep.PointConfig` fields).
    ``relative`` (TER only): the target is the relative excess over the data's ``TER(q)``, i.e.
    ``TER <= (1 + target) TER(q)`` ("perplexity within 1%" is ``target = 0.01``). A family that
    cannot run at ``L`` is reported with its reason; when none can, :class:`NoFamilyError`.
    ``lossless``: lossless decoders (:data:`numerics.sampling.lossless.LOSSLESS`) put on the front as
    ``(E[calls], metric)`` (:func:`lossless_settings`), each a family of one setting.
    ``revisers``: revising decoders (:data:`REVISER_KNOBS`: ``llada21``, ``wino``), each a family whose
    knob (the reveal threshold) is searched like any real knob, at ``options`` and their own
    ``reviser_options`` (``edit_cap``, ``remask_threshold``, ...; one a reviser does not take makes that
    family inapplicable, with the reason). Their settings enter the front beside the monotone ones
    (:attr:`Family.revises`: the monotone decoders' floor does not bind them).
    """
    from numerics.languages.presets import load_language

    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")
    names = list(samplers)
    if not names and not lossless and not revisers:
        raise ValueError("no sampler family given: name at least one of " + ", ".join(KNOBS))
    unknown = [n for n in revisers if n not in REVISER_KNOBS]
    if unknown:
        raise ValueError(f"unknown revising decoder(s) {', '.join(unknown)}; choose from {', '.join(REVISER_KNOBS)}")
    fams = [family(n, options) for n in names]
    fams += [family(n, {**(options or {}), **(reviser_options or {})}) for n in revisers]
    lang = load_language(language)
    ter_q = None
    if metric == "ter":
        H = data_entropy(lang, length)
        ter_q = None if H is None else math.exp(H.value / length)
        if relative:
            if ter_q is None:
                raise TargetError(f"a relative TER target needs the exact entropy H(q); {language} has none at "
                                  f"L = {length} (no chain rule, V^L beyond the joint table)")
            if target < 0:
                raise TargetError(f"a relative TER target is an excess over TER(q) >= 0, got {target}")
            target = ter_q * (1.0 + target)
    elif relative:
        raise ValueError("a relative target applies to --metric ter only")
    check_target(metric, target, ter_q)
    base = PointConfig(language, length, 1, schedule, method, samples, seed, tie_seed=tie_seed)
    searches = tuple(search_family(f, base, metric, target, lang, confidence, max_steps, on_setting, grid=grid,
                                   refine=refine) for f in fams)
    if lossless:
        searches += tuple(lossless_searches(language, length, metric, target, lossless, samples=samples, seed=seed))
    every = [s for fs in searches for s in fs.settings]
    if not every:
        raise NoFamilyError("no family can run at L = {}: {}".format(
            length, "; ".join(f"{fs.family}: {fs.error}" for fs in searches)))
    meeting = [fs.cheapest for fs in searches if fs.cheapest is not None]
    cheapest = min(meeting, key=lambda s: (s.calls.value, s.metric.value)) if meeting else None
    maybe = [s for s in every if s.status == MAY_MEET]
    may_meet = min(maybe, key=lambda s: s.calls.value) if maybe else None
    best = min(every, key=lambda s: (s.metric.value, s.calls.value))
    return Calibration(language, length, metric, target, searches, pareto_front(every), cheapest, best, may_meet,
                       confidence)


def check_lossless_names(names: Sequence[str], metric: str) -> None:
    """What :func:`lossless_settings` refuses, before any work: an unknown name, spiffy (its law is its base
    sampler's), self-spec for a metric other than SER (:class:`~numerics.sampling.lossless.LosslessError`)."""
    from numerics.sampling.lossless import LosslessError, lossless_spec

    for name in names:
        lossless_spec(name)
        if name == "spiffy":
            raise LosslessError("spiffy's output law is its base sampler's (at the base's own settings): calibrate "
                                "the base sampler and read spiffy's calls from `mdm-theory lossless --decoder spiffy`")
        if name == "self-spec" and metric != "ser":
            raise LosslessError(f"self-spec's law is a point mass (greedy left-to-right): its {metric} is not finite")


def lossless_searches(language: str, length: int, metric: str, target: float, names: Sequence[str], *,
                      samples: int = 1000, seed: int = 0) -> list:
    """One :class:`FamilySearch` per lossless decoder, for ``calibrate --lossless``.

    Its settings are ``(E[calls], metric)``: the metric exact from the output law (``q``: SER = 0,
    KL = 0, TER = TER(q); self-spec, a point mass on the greedy sequence: SER = 0, KL and TER not
    finite, refused), the calls by Monte Carlo at each draft length of :func:`draft_length_search`
    (autospec has none: one setting). The grid records the draft lengths evaluated, the rule, and the
    one of fewest E[calls] (``chosen``; the smaller on a tie). spiffy (whose law is its base sampler's)
    is refused here: its metric is its base's at ``N``.
    """
    from validation.lossless import DRAFT_GRID_RULE, draft_length_search, lossless_point

    check_lossless_names(names, metric)
    if metric == "ter":
        from numerics.languages.presets import load_language

        H = data_entropy(load_language(language), length)
        if H is None:
            raise ValueError(f"TER(q) of {language} at L = {length} has no exact value (no chain rule)")
        value = Estimate(math.exp(H.value / length), 0.0, "lossless: TER(p) = TER(q)")
    else:
        value = Estimate(0.0, 0.0, f"lossless: {metric.upper()} = 0 (output law q)")
    out = []
    for name in names:
        if name == "autospec":
            points = [(0, lossless_point(language, length, name, None, samples=samples, seed=seed))]
        else:
            points = draft_length_search(language, length, name, samples=samples, seed=seed)
        parameter = "draft_length" if name != "autospec" else "none"
        settings = tuple(Setting(name, parameter, float(k), p.label, p.calls, value, metric, _status(value, target))
                         for k, p in points)
        chosen = min(settings, key=lambda s: (s.calls.value, s.value))
        grid = {"kind": "lossless", "chosen": chosen.value}
        if name != "autospec":
            grid |= {"draft_lengths": [k for k, _ in points], "rule": DRAFT_GRID_RULE}
        out.append(FamilySearch(name, parameter, settings, chosen if chosen.meets else None, grid))
    return out


def lossless_settings(language: str, length: int, metric: str, target: float, names: Sequence[str], *,
                      samples: int = 1000, seed: int = 0) -> list:
    """One :class:`Setting` per lossless decoder: that of :func:`lossless_searches` at its chosen draft length
    (the fewest E[calls])."""
    return [next(s for s in fs.settings if s.value == fs.grid["chosen"])
            for fs in lossless_searches(language, length, metric, target, names, samples=samples, seed=seed)]
