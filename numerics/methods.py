"""Which method computes a point: what each exact method would cost, the fastest that fits, and
refusals up front (the policy of :func:`numerics.metrics.point_metrics`).

The closed forms are found from the language object (``language.kind == "interval"``: an
:class:`~numerics.languages.interval.IntervalLanguage`, whether it came from a preset or an
``.npz`` file), never from a preset's name.

The exact methods of the oracle sampler's metrics (``numerics.exact``) and their costs for a
language of vocabulary ``V`` at length ``L`` with ``n`` steps of positive probability:

* ``closed-form`` -- the interval language with ``l`` dividing ``L``
  (:mod:`numerics.exact.interval_metrics`): ``O(n l^2)``, microseconds at any ``L``;
* ``enumerate`` -- every one of the ``n^L`` step assignments (:mod:`numerics.exact.enumerate`),
  each a Python step plus an update of the ``V^L`` table: about
  ``n^L (ENUMERATE_INSTANCE_S + V^L ELEMENT_S)`` seconds, at most ``MAX_INSTANCES`` assignments
  and ``ENUMERATE_MAX_BYTES`` of per-partition laws (one ``V^L`` table per ordered set partition);
* ``dp`` -- the dynamic program over revealed words (:mod:`numerics.exact.dp`): ``(2V+1)^L``
  products per step, about ``n (2V+1)^L DP_PRODUCT_S`` seconds plus the information curve's
  ``2^L V^L`` table work, at most ``MAX_DP_WORDS`` words ``(V+1)^L``.

Each exact method also carries its estimated peak memory (:func:`exact_bytes`): the joint table
``q`` is built by the forward contraction over the language's ``S`` hidden states, about
``16 S V^(L-1) + 16 V^L`` bytes (``(8L + 16) V^L`` for a language tabulated by ``log_prob``),
the metrics hold :data:`METRIC_TABLES` more ``V^L`` tables, the DP adds its three ``(V+1)^L``
float64 arrays, enumeration its per-partition laws. A method whose estimate exceeds this
machine's limit (:func:`numerics.machine.memory_limit`) is not feasible: ``auto`` passes over it,
and one asked for by name is refused with the figures.

Monte Carlo (``mc``) costs about ``passes x samples x L x (MC_POSITION_S + MC_UNIT_S W)`` seconds
(:func:`mc_seconds`): ``W`` the work of one message step of the language's kernels (``S^2`` for a
dense HMM, the non-zeros of a sparse transition, ``S V`` for a dense n-gram's conditional, its
non-zeros for a sparse one), ``passes`` the kernel passes of a point (sampling, scoring the data,
the Jensen bound; the adaptive rules: one per step). A run estimated above
:data:`MC_MAX_S` is refused up front with the estimate and what to change (fewer ``--samples``,
a smaller ``-L``); the environment variable ``MDM_THEORY_MAX_SECONDS`` raises the limit (a
cluster job that may run for a day).

``auto`` takes the fastest feasible exact method if its estimate is within
:data:`AUTO_EXACT_BUDGET_S`, else Monte Carlo (``mc``). A method asked for by name that cannot
run at this size (or should take more than :data:`MAX_REQUESTED_S`) is refused before anything
is computed, with the size that rules it out and the estimated cost; the rates below are rough (measured on the shared 2-core development machine)
and serve to order the methods and to refuse hopeless requests, not to promise a run time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.exact.dp import MAX_DP_WORDS
from numerics.exact.enumerate import MAX_INSTANCES
from numerics.exact.joint_table import MAX_TABLE_ENTRIES
from numerics.languages.hmm import SPARSE_DENSITY
from numerics.machine import MAX_SECONDS_ENV, env_value, format_bytes, memory_limit
from numerics.schedules import Schedule

__all__ = [
    "ADAPTIVE_METHODS",
    "EXACT_METHODS",
    "MAX_ADAPTIVE_DP",
    "METHODS",
    "MethodCost",
    "MethodChoice",
    "check_mc_time",
    "choose_adaptive_method",
    "choose_method",
    "closed_form_length",
    "exact_bytes",
    "mc_seconds",
    "method_costs",
    "optimal_decoder_bytes",
    "step_work",
]

EXACT_METHODS = ("closed-form", "dp", "enumerate")
METHODS = ("auto", *EXACT_METHODS, "mc")

ENUMERATE_INSTANCE_S = 1.2e-4  # per step assignment (Python loop + partition lookup): ~120 us measured
ELEMENT_S = 1e-8  # per float64 element of a (V,)*L table operation (NumPy, ~1e8 elements/s)
DP_PRODUCT_S = 1e-8  # per product of the DP's odometer (numerics/exact/dp.py: ~1e8 products/s)
CLOSED_FORM_S = 1e-3  # the closed forms' O(n l^2) recursion
AUTO_EXACT_BUDGET_S = 30.0  # auto computes exactly when the fastest exact method should take at most this
MAX_REQUESTED_S = 86_400.0  # a method asked for by name that should take longer than a day is refused
METRIC_TABLES = 4  # V^L float64 tables of the metrics beside q (p, logs, products): 2gram-pruned, L = 8 measured 0.86 GB
ENUMERATE_MAX_BYTES = 8 * 2**30  # enumeration keeps one (V,)*L float64 law per ordered set partition
MC_MAX_BYTES = 8 * 2**30  # Monte Carlo's (samples, L) arrays above this are refused up front
MC_BYTES_PER_TOKEN = 40  # steps (int64), uniforms (float64), tokens (int64), log q and slack per position
# Monte Carlo time, one thread of the 2-core development machine (measured under load, so an upper-side figure:
# 10-15 us per position for tiny languages; 20-70 ns per unit of W for 4gram (W = 4096), a 300-state HMM (9e4)):
MC_POSITION_S = 1.5e-5  # per sequence position and pass: the kernels' fixed work
MC_UNIT_S = 3e-8  # per unit of W (one multiply-add of a message step) and position and pass
CHAIN_WORK_PER_TOKEN = 4  # the chain sampler's W per vocabulary entry (measured: 0.09 s a sample at V = 4096, L = 1024)
MC_PASSES = 3  # a random-order point: sampling, scoring the data, the Jensen bound
MC_MAX_S = 3600.0  # a Monte Carlo run estimated above this is refused up front (MDM_THEORY_MAX_SECONDS raises it)


@dataclass(frozen=True)
class MethodCost:
    """What one method would cost at a point.

    Attributes
    ----------
    method : str
    feasible : bool
        Within the method's hard limits (table, words, instances) and applicable to the language.
    log10_seconds : float
        ``log10`` of the estimated seconds (``inf`` when not applicable); a log, since hopeless
        sizes overflow a float.
    note : str
        What the estimate counts, or what rules the method out.
    memory_bytes : float
        The estimated peak memory (:func:`exact_bytes`; ``inf`` when not applicable).
    """

    method: str
    feasible: bool
    log10_seconds: float
    note: str
    memory_bytes: float = 0.0

    @property
    def seconds(self) -> float:
        return 10.0**self.log10_seconds if self.log10_seconds < 300 else math.inf

    def describe(self) -> str:
        if math.isinf(self.log10_seconds):
            return self.note
        s = self.log10_seconds
        est = f"{10.0**s:.3g} s" if s < 6 else f"10^{s:.0f} s"
        return f"{self.note}; estimated {est}"


@dataclass(frozen=True)
class MethodChoice:
    """The method a point is computed by, what was asked, and the cost of every exact method."""

    method: str
    requested: str
    costs: dict
    mc_estimated_s: float | None = None

    def as_dict(self) -> dict:
        """JSON-ready: per exact method whether it fits, ``log10`` of its estimated seconds (``None``
        when it does not apply to the language) and what the estimate counts; with Monte Carlo, its
        rough estimated seconds on one thread (:func:`mc_seconds`)."""
        out = {"method": self.method, "requested": self.requested,
               "exact_methods": {m: {"feasible": c.feasible, "note": c.note,
                                     "log10_estimated_s": c.log10_seconds if math.isfinite(c.log10_seconds) else None,
                                     "estimated_bytes": c.memory_bytes if math.isfinite(c.memory_bytes) else None}
                                 for m, c in self.costs.items()}}
        if self.mc_estimated_s is not None:
            out["mc_estimated_s"] = self.mc_estimated_s
        return out


def _pow(base: int, exp: int) -> str:
    """``base^exp``, its value when short, else its order of magnitude (``9^256 = 1.9e244``)."""
    log10 = exp * math.log10(base) if base > 0 else -math.inf
    if log10 < 15:
        return f"{base}^{exp} = {base**exp}"
    mantissa = 10 ** (log10 - math.floor(log10))
    return f"{base}^{exp} = {mantissa:.2g}e{math.floor(log10)}"


def _log10_sum(*logs: float) -> float:
    top = max(logs)
    return top + math.log10(sum(10.0 ** (x - top) for x in logs))


def _ordered_partitions(L: int, n: int) -> int:
    """Ordered set partitions of ``L`` positions into at most ``n`` blocks: ``sum_k k! S(L, k)``, ``k <= n``."""
    row = [1] + [0] * L  # Stirling numbers of the second kind S(m, k), row m, by S(m, k) = k S(m-1, k) + S(m-1, k-1)
    for _ in range(L):
        row = [0] + [k * row[k] + row[k - 1] for k in range(1, L + 1)]
    return sum(math.factorial(k) * row[k] for k in range(1, min(n, L) + 1))


def closed_form_length(language: Any) -> int | None:
    """The interval length ``l`` when ``language`` is the interval language (closed forms), else ``None``."""
    return int(language.l) if getattr(language, "kind", None) == "interval" else None


def _name(language: Any, name: str | None = None) -> str:
    """How messages call the language: the name it was given by (a preset, a file), else its kind."""
    return name if name is not None else f"the {getattr(language, 'kind', type(language).__name__)} language"


def exact_bytes(language: Any, length: int, method: str, *, steps: int = 1) -> float:
    """Estimated peak bytes of the exact ``method`` (``"dp"`` / ``"enumerate"``) at ``L = length`` (module
    docstring); ``steps``: the steps of positive probability (enumeration keeps a law per partition)."""
    V, L = int(language.vocab_size), int(length)
    table = float(V) ** L
    S = getattr(language, "n_states", None)
    if hasattr(language, "to_hmm") and S is not None:
        build = 16.0 * float(S) * float(V) ** (L - 1) + 16.0 * table  # alpha (V^(L-1), S) and its product; q
    else:
        build = (8.0 * L + 16.0) * table  # every sequence (int64) and its probability
    build += 8.0 * METRIC_TABLES * table
    if method == "dp":
        return build + 3 * 8.0 * float(V + 1) ** L
    if method == "enumerate":
        return build + 8.0 * table * _ordered_partitions(L, steps) if table < 2**40 else math.inf
    return 0.0


def _memory_note(need: float) -> tuple[bool, str]:
    limit = memory_limit()
    ok = need <= limit
    return ok, f"about {format_bytes(need)} of memory" + ("" if ok else f" > this machine's limit {format_bytes(limit)}")


def method_costs(language: Any, length: int, schedule: Schedule, *, name: str | None = None) -> dict[str, MethodCost]:
    """The cost of each exact method for ``language`` (called ``name`` in the notes) at ``L = length``."""
    V, L = int(language.vocab_size), int(length)
    n = int(np.count_nonzero(schedule.pi > 0))
    out = {}
    l = closed_form_length(language)
    if l is None:
        out["closed-form"] = MethodCost("closed-form", False, math.inf,
                                        f"no closed form for {_name(language, name)} (only the interval language has one)",
                                        math.inf)
    elif L % l:
        out["closed-form"] = MethodCost("closed-form", False, math.inf,
                                        f"the interval closed form needs l = {l} to divide L = {L}", math.inf)
    else:
        out["closed-form"] = MethodCost("closed-form", True, math.log10(CLOSED_FORM_S), f"O(N l^2) with l = {l}")
    log_table = L * math.log10(V)
    table_ok = V**L <= MAX_TABLE_ENTRIES if log_table < 18 else False
    table_note = f"table of V^L: {_pow(V, L)} sequences" + ("" if table_ok else f" > {MAX_TABLE_ENTRIES}")
    log_instances = L * math.log10(n)
    log_enum = log_instances + math.log10(ENUMERATE_INSTANCE_S + 10.0 ** min(log_table, 300) * ELEMENT_S)
    instances_ok = log_instances <= math.log10(MAX_INSTANCES) + 1e-12
    enum_note = f"N_eff^L: {_pow(n, L)} step assignments" + ("" if instances_ok else f" > {MAX_INSTANCES}")
    enum_bytes = math.inf
    if instances_ok and table_ok:
        held = _ordered_partitions(L, n) * V**L * 8
        enum_note += f"; {held / 2**30:.3g} GiB of per-instance laws" + (
            "" if held <= ENUMERATE_MAX_BYTES else f" > {ENUMERATE_MAX_BYTES / 2**30:.0f} GiB")
        instances_ok = held <= ENUMERATE_MAX_BYTES
        enum_bytes = exact_bytes(language, L, "enumerate", steps=n)
        memory_ok, memory_note = _memory_note(enum_bytes)
        instances_ok, enum_note = instances_ok and memory_ok, f"{enum_note}; {memory_note}"
    out["enumerate"] = MethodCost("enumerate", table_ok and instances_ok, log_enum, f"{enum_note}; {table_note}",
                                  enum_bytes)
    log_words = L * math.log10(V + 1)
    words_ok = log_words <= math.log10(MAX_DP_WORDS) + 1e-12
    log_dp = _log10_sum(math.log10(n) + L * math.log10(2 * V + 1) + math.log10(DP_PRODUCT_S),
                        L * math.log10(2) + log_table + math.log10(ELEMENT_S))
    words_note = f"(V+1)^L: {_pow(V + 1, L)} words" + ("" if words_ok else f" > {MAX_DP_WORDS}")
    dp_bytes = math.inf
    if words_ok and table_ok:
        dp_bytes = exact_bytes(language, L, "dp")
        memory_ok, memory_note = _memory_note(dp_bytes)
        words_ok, words_note = memory_ok, f"{words_note}; {memory_note}"
    out["dp"] = MethodCost("dp", table_ok and words_ok, log_dp, f"{words_note}; {table_note}", dp_bytes)
    return out


def _mc_bytes(samples: int, length: int) -> int:
    return int(samples) * int(length) * MC_BYTES_PER_TOKEN


def step_work(language: Any) -> int:
    """``W``: multiply-adds of one message step of the compiled kernels for ``language`` (module docstring)."""
    kernel = language.kernel_language() if hasattr(language, "kernel_language") else language
    if getattr(kernel, "kind", None) == "ngram":
        cond = kernel.conditional
        nnz = int(cond.nnz) if hasattr(cond, "nnz") else int(np.count_nonzero(cond))
        if kernel.order == 2 and nnz <= SPARSE_DENSITY * cond.shape[0] * cond.shape[1]:
            # a sparse first-order chain: the closed-form chain sampler (numerics.sampling.oracle.chain), a
            # V-wide product per posterior and gap steps for tokens outside its memo
            return min(nnz, CHAIN_WORK_PER_TOKEN * int(cond.shape[1]))
        return int(cond.shape[0]) * int(cond.shape[1]) if nnz > SPARSE_DENSITY * cond.size else nnz
    transition = getattr(kernel, "transition", None)
    if transition is not None:
        return int(transition.nnz) if hasattr(transition, "nnz") else int(np.count_nonzero(transition))
    S = int(kernel.n_states)
    return S * S


def mc_seconds(language: Any, length: int, samples: int, *, passes: int = MC_PASSES) -> float:
    """Rough seconds of a Monte Carlo point on one thread: ``passes x samples x L x (MC_POSITION_S + MC_UNIT_S W)``.

    The rates were measured under load on the 2-core development machine, so the estimate is on
    the high side there (a factor of about 2-10 on an idle machine with two threads); it orders
    runs and refuses hopeless ones (:func:`check_mc_time`), it does not promise a run time.
    """
    return float(passes) * int(samples) * int(length) * (MC_POSITION_S + MC_UNIT_S * step_work(language))


def max_mc_seconds() -> float:
    """:data:`MC_MAX_S`, or the environment variable ``MDM_THEORY_MAX_SECONDS`` when set
    (:func:`numerics.machine.env_value`: a finite number of seconds > 0)."""
    given = env_value(MAX_SECONDS_ENV)
    return MC_MAX_S if given is None else given


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86_400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86_400:.3g} days"


def check_mc_time(language: Any, length: int, samples: int, *, passes: int = MC_PASSES, name: str | None = None,
                  what: str = "Monte Carlo") -> float:
    """The estimate of :func:`mc_seconds`; ``ValueError`` (with the estimate and what to change) above the limit."""
    seconds = mc_seconds(language, length, samples, passes=passes)
    limit = max_mc_seconds()
    if seconds > limit:
        per_sample = seconds / max(int(samples), 1)
        fit = int(limit // per_sample)
        kernel = language.kernel_language() if hasattr(language, "kernel_language") else language
        size = f"{int(kernel.n_states)} states, W = {step_work(language)} multiply-adds per message step"
        raise ValueError(
            f"{what} on {_name(language, name)} ({size}) at L = {length} with {samples} samples would take about "
            f"{_duration(seconds)} on one thread (rough estimate; limit {_duration(limit)}): use fewer --samples "
            f"({fit} fit the limit), a smaller -L or a smaller language, or set {MAX_SECONDS_ENV} to allow longer runs")
    return seconds


def choose_method(requested: str, language: Any, length: int, schedule: Schedule, samples: int, *,
                  name: str | None = None) -> MethodChoice:
    """The method a point is computed by (module docstring); ``ValueError`` when the requested
    method cannot run at this size, naming that method, the language (``name``, e.g. the preset,
    else its kind), what rules it out and the estimated cost."""
    if requested not in METHODS:
        raise ValueError(f"unknown method {requested!r}; choose one of {METHODS}")
    costs = method_costs(language, length, schedule, name=name)
    if requested in EXACT_METHODS:
        cost = costs[requested]
        if not cost.feasible or cost.seconds > MAX_REQUESTED_S:
            raise ValueError(f"--method {requested} cannot compute {_name(language, name)} at L = {length}, "
                             f"N = {schedule.n_steps}: {cost.describe()}; use --method auto or mc")
        return MethodChoice(requested, requested, costs)
    if requested == "auto":
        feasible = [c for c in costs.values() if c.feasible]
        best = min(feasible, key=lambda c: c.log10_seconds, default=None)
        if best is not None and best.seconds <= AUTO_EXACT_BUDGET_S:
            return MethodChoice(best.method, requested, costs)
    need = _mc_bytes(samples, length)
    if need > MC_MAX_BYTES:
        raise ValueError(f"--method {requested} would run Monte Carlo ({samples} samples x L = {length}), "
                         f"which needs about {need / 2**30:.1f} GiB of arrays (limit {MC_MAX_BYTES / 2**30:.0f} GiB); "
                         "use fewer --samples")
    seconds = check_mc_time(language, length, samples, name=name)
    return MethodChoice("mc", requested, costs, seconds)


ADAPTIVE_METHODS = ("dp", "enumerate")  # numerics.exact.adaptive.METHODS
ADAPTIVE_MC_FACTOR = 3  # a rule's Monte Carlo point against the random sampler's (bench adaptive: about 2.4-3x)
MAX_ADAPTIVE_DP = 1 << 15  # V^L outputs of an adaptive rule's exact DP (a Python pass over reachable states)


def choose_adaptive_method(requested: str, vocab: int, length: int, *, language: Any = None, samples: int = 0,
                           name: str | None = None) -> str:
    """``dp`` / ``enumerate`` / ``mc`` for an adaptive rule (``auto``: the DP while ``V^L <= MAX_ADAPTIVE_DP``).

    The rule's exact law comes from :mod:`numerics.exact.adaptive`; ``closed-form`` does not apply.
    With ``language`` given, Monte Carlo is refused up front when :func:`check_mc_time` says it
    would run too long (a rule's point costs up to about :data:`ADAPTIVE_MC_FACTOR` times the
    random sampler's: ``mdm-theory bench adaptive``).
    """
    if requested not in METHODS:
        raise ValueError(f"unknown method {requested!r}; choose one of {METHODS}")
    if requested == "auto":
        method = "dp" if int(vocab) ** int(length) <= MAX_ADAPTIVE_DP else "mc"
    elif requested != "mc" and requested not in ADAPTIVE_METHODS:
        raise ValueError(f"--method {requested}: an adaptive rule is computed by {ADAPTIVE_METHODS + ('mc',)}")
    else:
        method = requested
    if method == "mc" and language is not None:
        check_mc_time(language, length, samples, passes=ADAPTIVE_MC_FACTOR * MC_PASSES, name=name,
                      what="Monte Carlo of an adaptive rule")
    return method


DECODER_BYTES_PER_BUDGET = 200  # per budget t <= T of the optimal decoder's answer (array, list, text): 160 measured


def optimal_decoder_bytes(vocab: int, length: int, calls: int) -> float:
    """Estimated peak bytes of ``optimal-decoder`` (:mod:`numerics.exact.optimal_decoder`) at ``T = calls``.

    Its value and policy tables over the ``(V+1)^L`` states for each of the ``min(T, L)`` budgets
    that differ (``16 (V+1)^L (min(T, L) + 1)``) and the answer's one value per budget ``t <= T``
    (:data:`DECODER_BYTES_PER_BUDGET` each, as an array, a list and text), which grows with ``T``
    although every budget beyond ``L`` has the value at ``L``.
    """
    V, L, T = int(vocab), int(length), int(calls)
    return 16.0 * float(V + 1) ** L * (min(T, L) + 1) + float(DECODER_BYTES_PER_BUDGET) * T
