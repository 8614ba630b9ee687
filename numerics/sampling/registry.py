"""The sampler registry: every sampler the engine runs by name, as data (:data:`DECODERS`).

One :class:`DecoderSpec` per command-line name says what the sampler is (its class), which options it
takes (:class:`Option`: name, type, default, range or choices, help, command-line flag), what it
needs besides its options (``steps`` N, a ``schedule``) and its main knobs (:class:`Knob`: the
option a calibration searches, and whether raising it costs more or fewer calls). The command-line
options, the sweep's point configuration, ``make_decoder``, the benchmarks, the report's families and
the shared test table are generated from it, so a new rule of the monotone kind is its class, one
entry here, one test row and one docs section.

The families, and where two names are one rule with a parameter:

* ``random`` (i.i.d. schedule) and the adaptive rules ``topk``, ``threshold``, ``entropy-sum``
  (:mod:`numerics.sampling.adaptive`: the selection over the oracle's *marginals*, no draws before
  the selection);
* the draw-then-select block decoders ``llada``, ``fast-dllm``, ``eb``
  (:mod:`numerics.sampling.block_decoder`) and the remasking ``remdm``
  (:mod:`numerics.sampling.decoders`).
* ``llada2`` (LLaDA2.0's floored threshold) is ``llada`` with its ``threshold`` set (default 0.95,
  ``remasking`` fixed to ``low-confidence``): the entry differs from ``llada``'s only in defaults;
  with one step per position it is ``fast-dllm --threshold`` (``>`` for ``>=``).
* ``dream`` (Dream's ``diffusion_generate``, :mod:`numerics.sampling.runtime_decoders`): ``--alg origin``
  is the random-order sampler on the schedule ``u_k = 1 - t_k``; the confidence algorithms are fixed
  counts (:func:`~numerics.sampling.runtime_decoders.dream_counts`) over one block, like ``llada``.
* ``dus`` (DUS's dilated plan) is a fixed-count rule with equal scores ordered by its plan
  (``Dus.priority``); at ``B = 2`` it is ``llada`` with one step a block (each pair at once).
* ``sdar`` (SDAR's ``low_confidence_dynamic``) is ``llada2`` with SDAR's defaults (blocks of 4, tau 0.85);
  ``--threshold 1`` is its ``low_confidence_static`` (no confidence exceeds 1: the top count).
* ``fast-dllm-v2`` is ``fast-dllm --threshold`` with its ``sub_block`` set (blocks 32, sub-blocks 8, tau 0.9):
  with the oracle the rule on blocks of the sub-block's length.
* ``dinfer`` (dInfer's hierarchy decoder, :class:`~numerics.sampling.runtime_decoders.Dinfer`) on the
  ``select_rows`` seam; ``credit``, ``klass``, ``prophet``, ``info-gain``
  (:mod:`numerics.sampling.history_decoders`) read a history or conditional marginals, so they share
  the richer ``plan`` seam and their exact law is :mod:`numerics.exact.history`; ``credit`` with
  ``credit_alpha = 0`` at ``T = 0`` is ``fast-dllm --threshold`` at ``T = 0``, ``prophet`` with a
  gap no state reaches is ``llada`` at ``T = 0``.
* ``threshold`` is ``fast-dllm --threshold`` at ``T = 0`` (the score of the argmax is the maximum
  probability) and ``entropy-sum`` is ``eb`` without the ``- max H`` term;
  Both kinds select through one seam, ``select_rows``
  (the :class:`Rule` protocol), which the generic samplers and the exact DP and enumeration call.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from numerics.sampling.adaptive import CONFIDENCES, AdaptiveSampler
from numerics.sampling.block_decoder import REMASKINGS, EntropyBound, FastDllm, Llada
from numerics.sampling.history_decoders import Credit, InfoGain, Klass, Prophet
from numerics.sampling.remdm import REMDM_VARIANTS, Remdm
from numerics.sampling.revisers import Reviser
from numerics.sampling.runtime_decoders import DREAM_ALGS, Dinfer, Dream, Dus
from numerics.sampling.samplers import RandomOrder, Sampler
from numerics.schedules import Schedule

__all__ = [
    "CONFIG_FIELDS",
    "DECODERS",
    "DECODER_FIELDS",
    "OPTIONS",
    "DecoderSpec",
    "REVISERS",
    "Knob",
    "Option",
    "Options",
    "Rule",
    "build_sampler",
    "decoder_names",
    "option_takers",
    "reviser_spec",
    "spec",
]


@runtime_checkable
class Rule(Protocol):
    """The selection seam every monotone rule has, adaptive rules and block decoders alike.

    ``select_rows`` decides, for a batch of states, which candidate positions one step reveals; the
    generic samplers, the exact DP and the exact enumeration (:mod:`numerics.exact.adaptive`,
    :mod:`numerics.exact.decoders`) call only it, so a rule written once is exact and sampled the
    same way. ``block_of`` is the block length at ``L``.
    """

    def select_rows(self, *args, **kwargs) -> np.ndarray: ...

    def block_of(self, length: int) -> int: ...


@dataclass(frozen=True)
class Option:
    """One option of a sampler.

    Attributes
    ----------
    name : str
        The option's name in configs, JSON rows and table columns (``remdm_variant``).
    type : type
        ``int``, ``float`` or ``str``.
    help : str
        One line for ``--help`` and the docs.
    default : object
        The value when not given (``None``: the option is off, or ``required``).
    low, high : float or None
        The range (``None``: unbounded); ``low_open`` / ``high_open``: an open end.
    choices : tuple of str or None
        The allowed values of a ``str`` option.
    required : bool
        The sampler cannot run without it.
    param : str or None
        The sampler class's keyword when it differs from ``name`` (``variant``).
    """

    name: str
    type: type
    help: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    required: bool = False
    param: str | None = None

    @property
    def flag(self) -> str:
        """The command-line flag (``--remdm-variant``)."""
        return "--" + self.name.replace("_", "-")

    @property
    def keyword(self) -> str:
        """The sampler class's keyword."""
        return self.param or self.name

    def range_text(self) -> str:
        """The range or choices in words (``(0, 1]``, ``>= 0``, ``cap|rescale|loop``)."""
        if self.choices:
            return "|".join(self.choices)
        if self.low is not None and self.high is not None:
            return f"{'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        return "any"

    def contains(self, value: Any) -> bool:
        """True when ``value`` is in the declared range or choices (the classes enforce it)."""
        if self.choices is not None:
            return value in self.choices
        v = float(value)
        if not math.isfinite(v):
            return False
        if self.low is not None and (v < self.low or (self.low_open and v == self.low)):
            return False
        return not (self.high is not None and (v > self.high or (self.high_open and v == self.high)))


@dataclass(frozen=True)
class Knob:
    """A sampler's main parameter for calibration: raising it ``"more"`` or ``"fewer"`` calls.

    ``name`` is an option or ``"steps"`` (the schedule's / the decoder's ``N``); ``low`` / ``high``
    its search range (``None``: unbounded; an open end is ``low_open``); ``integer`` for steps.
    Raising a knob with ``calls="more"`` buys accuracy with calls; with ``"fewer"``, lowering does.
    """

    name: str
    calls: str
    low: float | None = None
    high: float | None = None
    integer: bool = False
    low_open: bool = False


@dataclass(frozen=True)
class DecoderSpec:
    """One registered sampler (module docstring).

    Attributes
    ----------
    name : str
        The command-line name (``--sampler NAME``).
    cls : type
        The :class:`~numerics.sampling.samplers.Sampler` class built.
    kind : str
        ``random``, ``adaptive`` or ``decoder`` (the :attr:`Sampler.kind` of what it builds).
    summary : str
        One line for ``--help`` and the docs.
    options : tuple of Option
        The options it takes (its defaults: :attr:`Option.default`).
    needs : frozenset of str
        ``steps`` (N, passed as ``steps``) and / or ``schedule`` (a :class:`~numerics.schedules.Schedule` of N).
    knobs : tuple of Knob
        The parameters a calibration searches, the main one first.
    fixed : mapping
        Class keywords this entry fixes (``rule="topk"``).
    tie_seed : bool
        It takes a tie seed (every rule with ties; not ``random``).
    presets : tuple of (str, mapping)
        Named settings at the reference's documented defaults (``""``: the entry's own name), which
        ``bench decoders`` times as ``NAME`` or ``NAME-SUFFIX``.
    compiled : bool
        It has a compiled Monte Carlo path on the oracle of an n-gram, HMM or the interval language
        (numba kernels: ``sample_oracle``, the adaptive or the decoder kernels) at its defaults; else only the
        generic path, which calls the denoiser step by step.
    """

    name: str
    cls: type
    kind: str
    summary: str
    options: tuple[Option, ...] = ()
    needs: frozenset[str] = frozenset()
    knobs: tuple[Knob, ...] = ()
    fixed: Mapping[str, Any] = field(default_factory=dict)
    tie_seed: bool = True
    presets: tuple[tuple[str, Mapping[str, Any]], ...] = (("", {}),)
    compiled: bool = False

    def preset_names(self) -> dict[str, Mapping[str, Any]]:
        """``{NAME or NAME-SUFFIX: options}`` of :attr:`presets`."""
        return {(f"{self.name}-{k}" if k else self.name): v for k, v in self.presets}

    def option(self, name: str) -> Option:
        """The option called ``name`` (or by its class keyword); ``KeyError`` if it takes none."""
        for o in self.options:
            if name in (o.name, o.param):
                return o
        raise KeyError(name)

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    @property
    def knob(self) -> Knob | None:
        """The main knob (``None``: none)."""
        return self.knobs[0] if self.knobs else None

    def build(self, options: Mapping[str, Any] | None = None, *, steps: int | None = None,
              schedule: Schedule | None = None, tie_seed: int | None = 0, length: int | None = None) -> Sampler:
        """The sampler of ``options`` (unset = ``None`` = the option's default) checked once.

        An option this sampler does not take, a missing required one or a missing ``steps`` /
        ``schedule`` is a ``ValueError`` naming it; the class checks each value's range. With
        ``length`` the blocks and per-block steps are checked against ``L`` here, once.
        """
        given = {k: v for k, v in (options or {}).items() if v is not None}
        kw: dict[str, Any] = dict(self.fixed)
        for k in given:
            try:
                self.option(k)
            except KeyError:
                if k not in OPTIONS and k not in _KEYWORDS:
                    raise ValueError(f"unknown decoder option(s) {k}; choose from {sorted(OPTIONS)}") from None
                raise ValueError(f"the {self.name} decoder does not take {k}") from None
        for o in self.options:
            value = given.get(o.name, given.get(o.param)) if o.param else given.get(o.name)
            if value is None:
                value = o.default
            if value is None and o.required:
                who = f"the {self.name} rule needs a finite" if self.kind == "adaptive" else f"{self.name} needs"
                raise ValueError(f"{who} {o.name} ({o.flag}): {o.help}")
            if value is not None:
                kw[o.keyword] = value
        if "steps" in self.needs:
            if steps is None:
                raise ValueError(f"{self.name} needs steps N")
            kw["steps"] = steps
        if "schedule" in self.needs:
            if not isinstance(schedule, Schedule):
                raise ValueError(f"{self.name} needs a schedule (numerics.schedules.Schedule)")
            kw["schedule"] = schedule
        if self.tie_seed:
            kw["tie_seed"] = tie_seed
        sampler = self.cls(**kw)
        if length is not None:
            check_length(sampler, length)
        return sampler


def check_length(sampler: Sampler, length: int) -> None:
    """The sampler's blocks (and per-block steps) against ``L``: a ``ValueError`` naming the bad one."""
    if sampler.kind == "decoder":
        sampler.blocks(length)
        sampler.fixed_steps(length)
    elif sampler.kind == "adaptive":
        sampler.step_sizes(length)


class Options(Mapping):
    """A frozen, hashable mapping of option name to value, sorted by name (``None`` values dropped)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | None = None, **kw: Any) -> None:
        merged = {**(items or {}), **kw}
        object.__setattr__(self, "_items", tuple(sorted((k, v) for k, v in merged.items() if v is not None)))

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self) == dict(other)

    def __repr__(self) -> str:
        return f"Options({dict(self._items)!r})"


# ----- the options ---------------------------------------------------------------------------------

_BLOCK = Option("block_length", int, "semi-autoregressive block length B (must divide L; with steps, N divisible "
                "by L/B) [default: L, one block]", low=1)
_TEMPERATURE = Option("temperature", float, "temperature T >= 0 of the draws (0 = greedy argmax)", default=1.0, low=0)
_REMASKING = Option("remasking", str, "score of a drawn value: its probability (low-confidence) or a fresh uniform "
                    "(random)", default="low-confidence", choices=REMASKINGS)
_THRESHOLD = Option("threshold", float, "reveal every drawn value of probability >= TAU, at least one",
                    low=0, high=1, low_open=True)
_FACTOR = Option("factor", float, "reveal the largest prefix with c_(j) >= 1 - F/(j+1), at least one",
                 low=0, low_open=True)
_GAMMA = Option("gamma", float, "the bound G", required=True)
_FLOOR = replace(_THRESHOLD, help="LLaDA2.0's floor: reveal every drawn value of probability > TAU if at least "
                 "the step's count are, else the top count (a parameter of llada, off by default)")
_CONFIDENCE = Option("confidence", str, "confidence of a masked position's marginal", default="maxprob",
                     choices=CONFIDENCES)
_VARIANT = Option("remdm_variant", str, "sigma = min(eta, sigma_max) (cap), eta * sigma_max (rescale), or loop "
                  "(alpha held at 0.9 for t in [0.05, 0.55], remasking min(eta, sigma_max) there)", default="cap",
                  choices=REMDM_VARIANTS, param="variant")
_ETA = Option("eta", float, "remasking strength eta", low=0, high=1, required=True)
_SUB_BLOCK = Option("sub_block", int, "Fast-dLLM v2's sub-block: each block is decoded in sub-blocks of this many "
                   "positions, left to right, the threshold rule inside the current one (must divide the block)",
                   default=8, low=1)
_ALG = Option("alg", str, "Dream's algorithm: reveal each masked position with probability 1 - t_{k+1}/t_k (origin), "
              "or the top floor(m (1 - t_{k+1}/t_k)) by drawn value's probability, top-1 minus top-2 probability or "
              "minus entropy", default="origin", choices=DREAM_ALGS)
_ALG_TEMP = Option("alg_temp", float, "Dream's position temperature: > 0 draws the positions without replacement "
                   "from softmax(score / ALG_TEMP) (confidence algorithms)", default=0.0, low=0)

_RUN_THRESHOLD = Option("run_threshold", float, "dInfer's low threshold: each maximal run of masked positions "
                       "reveals its most confident one if its confidence is > TAU", default=0.62, low=0, high=1,
                       low_open=True)
_KL = Option("kl", float, "KLASS's stability bound: KL between a position's marginals at consecutive calls < KL",
             default=0.01, low=0, low_open=True)
_KL_STEPS = Option("kl_steps", int, "KLASS's history h: the KL bound must hold over the last h calls", default=2,
                   low=1)
_CREDIT_DECAY = Option("credit_decay", float, "CreditDecoding's beta: the credit decays by this factor each call",
                       default=0.8, low=0, high=1)
_CREDIT_POWER = Option("credit_power", float, "CreditDecoding's gamma: each call adds p_top1^GAMMA to the argmax's "
                       "credit", default=0.2, low=0, low_open=True)
_CREDIT_ALPHA = Option("credit_alpha", float, "CreditDecoding's alpha: the threshold rule runs on "
                       "softmax(logits + ALPHA log(1 + credit))", default=0.7, low=0)
_GAP = Option("gap", float, "Prophet's early-commit gap: commit every masked position to its argmax once the mean "
              "log p1 - log p2 is >= GAP (revealed share < 1/3), 2 GAP/3 (< 2/3), GAP/3 (later)", default=7.5, low=0)

#: Every option by name, as the command line and the sweep know it (the first spelling of each name).
OPTIONS: dict[str, Option] = {o.name: o for o in (_BLOCK, _TEMPERATURE, _REMASKING, _THRESHOLD, _FACTOR, _GAMMA,
                                                  _CONFIDENCE, _VARIANT, _ETA, _ALG, _ALG_TEMP,
                                                  _SUB_BLOCK, _RUN_THRESHOLD, _KL, _KL_STEPS, _CREDIT_DECAY,
                                                  _CREDIT_POWER, _CREDIT_ALPHA, _GAP)}
_KEYWORDS = {o.param for o in OPTIONS.values() if o.param}

#: The options a sampler takes beside the two every rule family has (``gamma``, ``confidence``, which
#: are fields of their own in a sweep's config): the keys of a config's ``options`` mapping and of its
#: flat table columns. The first seven in the order the configs of 18407ad hashed and keyed their random
#: streams by (kept, so old tables resolve); a new option is appended.
CONFIG_FIELDS = ("gamma", "confidence")
DECODER_FIELDS = ("block_length", "remasking", "temperature", "threshold", "factor", "remdm_variant", "eta")
DECODER_FIELDS += tuple(k for k in OPTIONS if k not in DECODER_FIELDS + CONFIG_FIELDS)

_STEPS_KNOB = Knob("steps", "more", 1, None, integer=True)


def _specs() -> tuple[DecoderSpec, ...]:
    sched, steps = frozenset({"schedule"}), frozenset({"steps"})
    return (
        DecoderSpec("random", RandomOrder, "random", "i.i.d. reveal steps pi_i = u_i - u_{i-1} of the schedule",
                    needs=sched, knobs=(_STEPS_KNOB,), tie_seed=False, compiled=True),
        DecoderSpec("topk", AdaptiveSampler, "adaptive", "the k_t most confident positions, k_t from the schedule",
                    (_CONFIDENCE, _BLOCK), sched, (_STEPS_KNOB,), {"rule": "topk"}, compiled=True),
        DecoderSpec("threshold", AdaptiveSampler, "adaptive",
                    "every position with confidence >= gamma, at least one (fast-dllm --threshold at T = 0)",
                    (replace(_GAMMA, help="reveal confidence >= G"), _CONFIDENCE, _BLOCK), frozenset(),
                    (Knob("gamma", "more", 0.0, 1.0),), {"rule": "threshold"}, compiled=True),
        DecoderSpec("entropy-sum", AdaptiveSampler, "adaptive",
                    "entropy-ordered prefix with sum H <= gamma nats, at least one (eb without its - max H)",
                    (replace(_GAMMA, help="cumulative entropy <= G nats", low=0), _BLOCK), frozenset(),
                    (Knob("gamma", "fewer", 0.0, None),), {"rule": "entropy-sum"}, compiled=True),
        DecoderSpec("llada", Llada, "decoder", "LLaDA generate: N steps over the blocks, fixed counts per step",
                    (_BLOCK, _TEMPERATURE, _REMASKING, _FLOOR), steps, (_STEPS_KNOB,),
                    presets=(("", {}), ("random", {"remasking": "random"})), compiled=True),
        DecoderSpec("fast-dllm", FastDllm, "decoder", "Fast-dLLM parallel decoding: --threshold or --factor",
                    (_BLOCK, _TEMPERATURE, _THRESHOLD, _FACTOR), frozenset(),
                    (Knob("threshold", "more", 0.0, 1.0, low_open=True), Knob("factor", "fewer", 0.0, None,
                                                                              low_open=True)),
                    presets=(("", {"threshold": 0.9}), ("factor", {"factor": 1.0})), compiled=True),
        DecoderSpec("eb", EntropyBound, "decoder", "EB-Sampler: entropy-ordered prefix, sum H - max H <= gamma nats",
                    (_BLOCK, _TEMPERATURE, replace(_GAMMA, help="entropy bound G (nats)", low=0)), frozenset(),
                    (Knob("gamma", "fewer", 0.0, None),), presets=(("", {"gamma": 1.0}),), compiled=True),
        DecoderSpec("remdm", Remdm, "decoder", "ReMDM remasking over N steps of the schedule",
                    (_TEMPERATURE, _VARIANT, _ETA), sched, (_STEPS_KNOB,), presets=(("", {"eta": 0.05}),), compiled=True),
        DecoderSpec("llada2", Llada, "decoder", "LLaDA2.0: llada's counts floored by a threshold, reveal every "
                    "draw of probability > tau if at least the step's count are, else the top count",
                    (_BLOCK, _TEMPERATURE, replace(_FLOOR, default=0.95)), steps,
                    (Knob("threshold", "more", 0.0, 1.0, low_open=True), _STEPS_KNOB),
                    {"remasking": "low-confidence"}, compiled=True),
        DecoderSpec("dream", Dream, "decoder", "Dream diffusion_generate: N calls on t = linspace(1, 1e-3, N+1); "
                    "origin reveals each masked position with probability 1 - t_{k+1}/t_k, the confidence "
                    "algorithms the top floor(m (1 - t_{k+1}/t_k)) by score (the last step the rest)",
                    (_TEMPERATURE, _ALG, _ALG_TEMP), steps, (_STEPS_KNOB,),
                    presets=(("", {}), ("entropy", {"alg": "entropy"}))),
        DecoderSpec("dus", Dus, "decoder", "DUS dilated unmasking: in blocks of B = 2^k, round t reveals the offsets "
                    "that are multiples of B/2^t, log2 B calls a block", (_BLOCK, _TEMPERATURE), frozenset(), (),
                    tie_seed=False, compiled=True),
        DecoderSpec("fast-dllm-v2", FastDllm, "decoder", "Fast-dLLM v2: blocks of 32 in sub-blocks of 8, the threshold "
                    "rule (tau = 0.9, at least one) inside the current sub-block",
                    (replace(_BLOCK, default=32, help="block length B (must divide L)"), _SUB_BLOCK, _TEMPERATURE,
                     replace(_THRESHOLD, default=0.9)), frozenset(),
                    (Knob("threshold", "more", 0.0, 1.0, low_open=True),), presets=(), compiled=True),
        DecoderSpec("sdar", Llada, "decoder", "SDAR low_confidence_dynamic: llada on blocks of 4 with the floored "
                    "threshold tau = 0.85 (--threshold 1: low_confidence_static, the top count)",
                    (replace(_BLOCK, default=4, help="block length B (must divide L; N divisible by L/B)"),
                     _TEMPERATURE, replace(_FLOOR, default=0.85, help="SDAR's dynamic threshold: reveal every drawn "
                                           "value of probability > TAU if at least the step's count are, else the "
                                           "top count (1: the static rule)")), steps,
                    (Knob("threshold", "more", 0.0, 1.0, low_open=True), _STEPS_KNOB),
                    {"remasking": "low-confidence"}, presets=(), compiled=True),
        DecoderSpec("dinfer", Dinfer, "decoder", "dInfer's hierarchy decoder: in the block, each run of masked "
                    "positions reveals its most confident one above the low threshold, every position above the "
                    "high one, and always the top one",
                    (_BLOCK, _TEMPERATURE, replace(_THRESHOLD, default=0.92, help="dInfer's high threshold: reveal "
                                                   "every drawn value of probability > TAU"), _RUN_THRESHOLD),
                    frozenset(), (Knob("threshold", "more", 0.0, 1.0, low_open=True),), tie_seed=False),
        DecoderSpec("credit", Credit, "decoder", "CreditDecoding: the threshold rule on softmax(logits + alpha "
                    "log(1 + credit)), a per-block credit of each argmax that decays by beta each call",
                    (_BLOCK, replace(_TEMPERATURE, default=0.0), replace(_THRESHOLD, default=0.9, help="reveal "
                     "every position whose enhanced law's largest probability is >= TAU, at least one"),
                     _CREDIT_DECAY, _CREDIT_POWER, _CREDIT_ALPHA), frozenset(),
                    (Knob("threshold", "more", 0.0, 1.0, low_open=True),)),
        DecoderSpec("klass", Klass, "decoder", "KLASS: reveal every position of the block with confidence > tau whose "
                    "marginal moved by KL < kl over the last h calls, else llada's scheduled top count",
                    (_BLOCK, _TEMPERATURE, replace(_THRESHOLD, default=0.9, help="KLASS's confidence threshold: a "
                     "ready position has largest probability > TAU"), _KL, _KL_STEPS), steps,
                    (_STEPS_KNOB, Knob("threshold", "more", 0.0, 1.0, low_open=True))),
        DecoderSpec("prophet", Prophet, "decoder", "Prophet: llada's top counts by confidence, committing every masked "
                    "position to its argmax once the mean top-2 log gap clears the scheduled bound",
                    (_BLOCK, _TEMPERATURE, _GAP), steps, (_STEPS_KNOB, Knob("gap", "more", 0.0, None))),
        DecoderSpec("info-gain", InfoGain, "decoder", "information-gain sampler: llada's counts, positions ranked by "
                    "sum_j I(X_i; X_j | x_S) - H(X_i | x_S) over the block (exact under the oracle)",
                    (_BLOCK, _TEMPERATURE), steps, (_STEPS_KNOB,),
                    presets=()),  # not in bench decoders' default table: m V conditional queries a step (slow)
    )


#: The registry: command-line name -> :class:`DecoderSpec`, in the order ``--sampler`` lists them (a new
#: entry is appended: the report's colours follow this order).
DECODERS: dict[str, DecoderSpec] = {s.name: s for s in _specs()}


def spec(name: str) -> DecoderSpec:
    """The spec called ``name``; an unknown name is a ``ValueError`` listing the registered ones."""
    try:
        return DECODERS[name]
    except KeyError:
        raise ValueError(f"unknown decoder {name!r}; choose one of {tuple(DECODERS)}") from None


def decoder_names(kind: str | None = "decoder") -> tuple[str, ...]:
    """The registered names of one kind (``None``: all)."""
    return tuple(n for n, s in DECODERS.items() if kind is None or s.kind == kind)


def option_takers(name: str) -> tuple[str, ...]:
    """The samplers that take the option ``name``."""
    return tuple(n for n, s in DECODERS.items() if name in s.option_names)


# ----- the revising decoders (class C) -------------------------------------------------------------
# A separate mapping for the reason the lossless decoders have one (numerics.sampling.lossless.LOSSLESS): a reviser changes revealed tokens, so no consumer of
# DECODERS (the DP, sweep's tables, the report's families) can run it; numerics.metrics runs its exact
# chain over canvases or Monte Carlo (kind "reviser", docs/methods/revisers.md). exact, sweep,
# steps-needed and calibrate (--revisers) take them (validation/canvas_samplers.py).
_UNIT = {"low": 0, "high": 1}
_REVISER_THRESHOLD = Option("threshold", float, "reveal every masked position whose draw has confidence > TAU "
                            "(llada21) or >= TAU (wino), at least the most confident one", **_UNIT)

#: Calibration's knob of both revisers (validation.calibrate): a higher reveal threshold reveals fewer positions a call.
_REVISER_KNOB = Knob("threshold", "more", 0.0, 1.0)

#: The revising decoders by command-line name (``mdm-theory exact --sampler NAME``).
REVISERS: dict[str, DecoderSpec] = {s.name: s for s in (
    DecoderSpec("llada21", Reviser, "reviser", "LLaDA2.1 joint threshold: reveal draws of confidence > tau, replace "
                "revealed tokens whose leave-one-out draw differs with confidence > tau_edit, editing steps after a "
                "full block (at most the cap)",
                (_BLOCK, _TEMPERATURE, replace(_REVISER_THRESHOLD, default=0.9),
                 Option("edit_threshold", float, "token-to-token: a revealed token whose leave-one-out draw differs "
                        "with confidence > TAU_EDIT takes the draw", default=0.9, **_UNIT),
                 Option("edit_cap", int, "editing steps after a block is full, stopping at one that changes nothing "
                        "(0: no editing after the block)", default=16, low=0)),
                knobs=(_REVISER_KNOB,), fixed={"name": "llada21"}, tie_seed=False),
    DecoderSpec("wino", Reviser, "reviser", "WINO wide in, narrow out: reveal draws of confidence >= tau, remask "
                "revealed tokens whose leave-one-out probability is < the remask threshold",
                (_BLOCK, _TEMPERATURE, replace(_REVISER_THRESHOLD, default=0.6),
                 Option("remask_threshold", float, "narrow out: remask a revealed token whose leave-one-out "
                        "probability is < TAU_REMASK", default=0.9, **_UNIT),
                 Option("step_cap", int, "the engine's cap on steps per block: the last reveals every masked position "
                        "[default: 2 B]", low=1)),
                knobs=(_REVISER_KNOB,), fixed={"name": "wino"}, tie_seed=False),
)}


def reviser_spec(name: str) -> DecoderSpec:
    """The revising decoder called ``name``; an unknown name is a ``ValueError`` listing them."""
    try:
        return REVISERS[name]
    except KeyError:
        raise ValueError(f"unknown revising decoder {name!r}; choose one of {tuple(REVISERS)}") from None


def build_sampler(name: str, options: Mapping[str, Any] | None = None, **kw: Any) -> Sampler:
    """``spec(name).build(options, **kw)`` (:meth:`DecoderSpec.build`)."""
    return spec(name).build(options, **kw)

