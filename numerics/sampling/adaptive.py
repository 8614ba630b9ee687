"""Adaptive samplers: each step reveals the masked positions the denoiser is most confident about.

The samplers people run decide *which* positions to reveal from the denoiser's own marginals
``p_j = denoiser(tokens, mask)[j]`` at the masked positions (``docs/methods/adaptive.md``):

* ``topk`` -- step ``t`` reveals the ``k_t`` most confident positions, ``k_t`` from a schedule:
  ``k_t = c_t - c_{t-1}`` with ``c_t = floor(L u_t + 1/2)`` (steps with ``k_t = 0`` are skipped
  and cost no call; a linear schedule gives ``L / N`` per step);
* ``threshold`` -- every masked position with confidence ``>= gamma``, at least one (the most
  confident): Fast-dLLM's rule with ``confidence = maxprob``;
* ``entropy-sum`` -- positions in order of increasing entropy ``H(p_j)`` while the cumulative
  entropy stays ``<= gamma``, at least one (Cai-Li's rule; EB-Sampler's bound without its
  ``- max H`` term).

Confidence (``confidence=``): ``maxprob`` = ``max_v p_j(v)``, ``margin`` = top-1 minus top-2,
``neg-entropy`` = ``-H(p_j)``; ``entropy-sum`` always orders by entropy.

Comparisons are made on a grid. Confidences and entropies are rounded to integers
``floor(value * GRID_SCALE + 1/2)`` (``GRID_SCALE = 1e9``) before they are ranked, compared with
``gamma`` (rounded the same way) or summed. Marginals from different exact paths (messages,
joint tables) differ by ~1e-15; on the grid they give the same decisions, and exactly equal
marginals (e.g. the interval language's uniform ones) are ties whatever the round-off.

Ties are broken by a seeded priority: position ``perm[0]`` first, then ``perm[1]``, ... with
``perm = numpy.random.default_rng(tie_seed).permutation(L)``; ``tie_seed=None`` means left to
right. The priority is a fixed function of ``(tie_seed, L)``, so a rule is a deterministic
function of the revealed values, its output law is a sum over reveal paths and the exact
methods (:mod:`numerics.exact.adaptive`) compute the same sampler.

Draws: one uniform ``U[b, j]`` per position drawn up front (``rng.random((B, L))`` per batch),
the token the float64 inverse CDF of ``p_j`` at ``U[b, j]`` (:func:`~numerics.sampling.samplers.draw_inverse_cdf`).
Undefined marginals (not finite or summing to 0; the oracle past a jointly impossible reveal)
are replaced by the uniform law for ranking and drawing, the convention of
:mod:`numerics.sampling.samplers`.

Calls: a step costs one denoiser call; ``SampleResult.nfe_sequence`` holds each sequence's
steps, ``SampleResult.nfe`` each batch's calls (the generic path calls the denoiser on the
sequences of the batch still masked, so a batch costs its slowest sequence's steps).

Paths: the generic path works for any :class:`~numerics.sampling.denoiser.Denoiser`; for the
oracle of an n-gram, an HMM (:class:`~numerics.sampling.denoiser.OracleDenoiser`) or the
interval language (:class:`IntervalOracle`) ``path="auto"`` runs the incremental kernels of
:mod:`numerics.sampling._adaptive_numba` on the same random stream (same samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
from scipy.special import entr

from numerics.estimate import CONFIDENCE, Estimate
from numerics.languages.hmm import HMM, NGram
from numerics.languages.interval import IntervalLanguage
from numerics.sampling._adaptive_numba import CONFIDENCE_CODES, GRID_SCALE, RULE_CODES, Rule, adaptive_run, make_rule
from numerics.sampling.batch_oracles import BatchIntervalOracle, BigramOracle
from numerics.sampling.blocks import block_of, check_int, check_run, llada_counts, steps_per_block
from numerics.sampling.denoiser import Denoiser, OracleDenoiser
from numerics.sampling.samplers import PATHS, RandomOrder, Sampler, SampleResult, _batches, _call, draw_inverse_cdf
from numerics.schedules import Schedule

__all__ = [
    "RULES",
    "CONFIDENCES",
    "SAMPLER_NAMES",
    "GRID_SCALE",
    "AdaptiveSampler",
    "IntervalOracle",
    "Confidences",
    "ChainRuleScore",
    "make_sampler",
    "tie_priority",
    "topk_sizes",
    "on_grid",
    "oracle_language",
    "confidence_grid",
    "select_positions",
    "chain_rule_terms",
    "kl_chain_rule_mc",
    "nfe_mc",
]

RULES = tuple(RULE_CODES)
CONFIDENCES = tuple(CONFIDENCE_CODES)
SAMPLER_NAMES = ("random",) + RULES


def on_grid(value: np.ndarray | float) -> np.ndarray:
    """``floor(value * GRID_SCALE + 1/2)`` as int64 (the comparison grid of the module docstring)."""
    return np.floor(np.asarray(value, dtype=np.float64) * GRID_SCALE + 0.5).astype(np.int64)


def tie_priority(length: int, tie_seed: int | None) -> np.ndarray:
    """``rank[j]``: position ``j``'s place among ties (0 first); module docstring."""
    if tie_seed is None:
        return np.arange(length, dtype=np.int64)
    perm = np.random.default_rng(tie_seed).permutation(length)
    rank = np.empty(length, dtype=np.int64)
    rank[perm] = np.arange(length)
    return rank


def topk_sizes(schedule: Schedule, length: int) -> np.ndarray:
    """``k_t = c_t - c_{t-1}``, ``c_t = floor(L u_t + 1/2)``: positions revealed at step ``t`` (sum ``L``)."""
    c = np.floor(length * schedule.u + 0.5).astype(np.int64)
    c[0], c[-1] = 0, length
    return np.diff(c)


class Confidences(NamedTuple):
    """Grid values of marginal rows (the NumPy twin of the kernels' ``_confidence``).

    Attributes
    ----------
    conf : (k,) int64
        The chosen confidence on the grid.
    entropy : (k,) int64
        ``H(p_j)`` (nats) on the grid.
    probs : (k, V) float64
        The rows normalized, undefined rows replaced by the uniform law.
    """

    conf: np.ndarray
    entropy: np.ndarray
    probs: np.ndarray


def confidence_grid(probs: np.ndarray, confidence: str) -> Confidences:
    """Confidences and entropies of marginal rows ``(k, V)`` on the grid (module docstring)."""
    p = np.array(probs, dtype=np.float64)
    V = p.shape[1]
    undefined = ~np.all(np.isfinite(p), axis=1)
    undefined[~undefined] |= p[~undefined].sum(axis=1) <= 0.0
    p[undefined] = 1.0
    p /= p.sum(axis=1, keepdims=True)
    top = np.sort(p, axis=1)
    top1 = top[:, -1]
    top2 = top[:, -2] if V > 1 else np.zeros_like(top1)
    H = entr(p).sum(axis=1)
    conf = {"maxprob": top1, "margin": top1 - top2, "neg-entropy": -H}[confidence]
    return Confidences(on_grid(conf), on_grid(H), p)


def select_positions(rule: str, masked: np.ndarray, conf: np.ndarray, entropy: np.ndarray, priority: np.ndarray,
                     k: int, gamma_grid: int) -> np.ndarray:
    """The positions one step reveals (sorted), from grid confidences of one sequence (NumPy twin of ``_select``).

    ``topk``: the ``k`` first in the order ``(-conf, priority)``; ``threshold``: every masked
    ``j`` with ``conf_j >= gamma`` or else the first; ``entropy-sum``: the longest prefix of the order
    ``(entropy, priority)`` whose cumulative entropy is ``<= gamma``, at least one.
    """
    cand = np.flatnonzero(masked)
    L = masked.shape[0]
    key = entropy[cand] * L + priority[cand] if rule == "entropy-sum" else -conf[cand] * L + priority[cand]
    order = cand[np.argsort(key)]
    if rule == "topk":
        chosen = order[:k]
    elif rule == "threshold":
        chosen = cand[conf[cand] >= gamma_grid]
        if chosen.size == 0:
            chosen = order[:1]
    else:
        within = int(np.count_nonzero(np.cumsum(entropy[order]) <= gamma_grid))
        chosen = order[: max(within, 1)]
    return np.sort(chosen)


class IntervalOracle(BatchIntervalOracle):
    """The exact posterior marginals of the interval language (Example C.7), a :class:`Denoiser`.

    Intervals are independent; a masked token is uniform over the tokens whose pair bits agree
    with its revealed partners. Revealed tokens that disagree leave the posterior undefined: the
    whole sequence gets NaN rows (as ``OracleDenoiser(strict=False)``). Revealed rows are one-hot.
    The rule is written once, in :class:`~numerics.sampling.batch_oracles.BatchIntervalOracle`
    (vectorized over the batch); this name is kept for the adaptive samplers' callers.
    """


def oracle_language(denoiser: Denoiser):
    """The language whose fast kernels compute ``denoiser`` exactly, or ``None``: the oracle of an
    n-gram or HMM (:class:`OracleDenoiser`, :class:`~numerics.sampling.batch_oracles.BigramOracle`)
    or of the interval language (:class:`IntervalOracle`, :class:`~numerics.sampling.batch_oracles.BatchIntervalOracle`)."""
    if isinstance(denoiser, (OracleDenoiser, BigramOracle)) and isinstance(denoiser.language, (HMM, NGram)):
        return denoiser.language
    if isinstance(denoiser, (IntervalOracle, BatchIntervalOracle)):
        return denoiser.language
    return None


@dataclass(frozen=True)
class AdaptiveSampler(Sampler):
    """A confidence-based rule (module docstring): ``topk`` with ``schedule``, or ``threshold`` / ``entropy-sum`` with ``gamma``."""

    rule: str
    schedule: Schedule | None = None
    gamma: float | None = None
    confidence: str = "maxprob"
    tie_seed: int | None = 0
    block_length: int | None = None
    kind: ClassVar[str] = "adaptive"

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown adaptive rule {self.rule!r}; choose one of {RULES}")
        if self.confidence not in CONFIDENCES:
            raise ValueError(f"unknown confidence {self.confidence!r}; choose one of {CONFIDENCES}")
        if self.rule == "topk":
            if not isinstance(self.schedule, Schedule):
                raise ValueError("the topk rule needs a schedule (numerics.schedules.Schedule) for its step sizes")
            if self.gamma is not None:
                raise ValueError("gamma applies to the threshold and entropy-sum rules, not topk")
        else:
            if self.schedule is not None:
                raise ValueError(f"the {self.rule} rule takes gamma, not a schedule")
            if self.gamma is None or not math.isfinite(self.gamma):
                raise ValueError(f"the {self.rule} rule needs a finite gamma, got {self.gamma!r}")
            if self.rule == "entropy-sum" and self.gamma < 0:
                raise ValueError(f"the entropy-sum bound gamma must be >= 0 nats, got {self.gamma!r}")
            if self.rule == "entropy-sum" and self.confidence != "maxprob":
                raise ValueError("the entropy-sum rule orders by entropy; it takes no confidence option")
        if self.tie_seed is not None and (int(self.tie_seed) != self.tie_seed or self.tie_seed < 0):
            raise ValueError(f"tie_seed must be a non-negative integer or None, got {self.tie_seed!r}")
        if self.block_length is not None:
            check_int("block_length", self.block_length, 1)

    @property
    def label(self) -> str:
        blocks = "" if self.block_length is None else f", blocks B = {self.block_length}"
        if self.rule == "topk":
            return f"topk ({self.confidence}), {self.schedule.name}{blocks}"
        if self.rule == "threshold":
            return f"threshold ({self.confidence} >= {self.gamma:g}){blocks}"
        return f"entropy-sum (sum H <= {self.gamma:g} nats){blocks}"

    @property
    def gamma_grid(self) -> int:
        """``gamma`` on the comparison grid (0 for topk)."""
        return 0 if self.gamma is None else int(on_grid(self.gamma))

    def block_of(self, length: int) -> int:
        """``B`` at length ``L`` (``block_length``; ``None``: ``L``); one that does not divide ``L`` is a ``ValueError``."""
        return block_of(length, self.block_length)

    def step_sizes(self, length: int) -> np.ndarray:
        """Top-k's ``k_t`` within a block; ``[0]`` for the other rules.

        One block (``B = L``): :func:`topk_sizes` of the schedule. ``B < L``: the schedule's ``N``
        steps split evenly over the ``L / B`` blocks (``N % (L/B) == 0``, else a ``ValueError``) with
        LLaDA's fixed counts :func:`~numerics.sampling.blocks.llada_counts`. Steps of size 0 are
        skipped and cost no call, as in one block.
        """
        B = self.block_of(length)  # a block length that does not divide L fails here, for every rule
        if self.rule != "topk":
            return np.zeros(1, dtype=np.int64)
        if B == length:
            return topk_sizes(self.schedule, length)
        return llada_counts(B, steps_per_block(self.schedule.n_steps, length, B))

    def candidates(self, masked: np.ndarray) -> np.ndarray:
        """``masked`` ``(L,)`` restricted to the current block (the first holding a masked position)."""
        L = masked.shape[0]
        B = self.block_of(L)
        if B == L or not masked.any():
            return masked
        lo = (int(np.argmax(masked)) // B) * B
        out = np.zeros_like(masked)
        out[lo:lo + B] = masked[lo:lo + B]
        return out

    def kernel_rule(self, length: int) -> Rule:
        """The rule as the fast kernels read it (:class:`~numerics.sampling._adaptive_numba.Rule`) at length ``L``."""
        return make_rule(self.rule, self.confidence, self.step_sizes(length), self.gamma_grid,
                         tie_priority(length, self.tie_seed), block=self.block_of(length))

    def choose(self, probs: np.ndarray, masked: np.ndarray, priority: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, normalized rows)`` one step reveals given the marginal rows ``(L, V)`` of one sequence
        (only the masked positions of the current block compete, :meth:`candidates`)."""
        c = confidence_grid(probs, self.confidence)
        return (select_positions(self.rule, self.candidates(masked), c.conf, c.entropy, priority, k, self.gamma_grid),
                c.probs)

    def sample(self, denoiser: Denoiser, n: int, length: int, rng: np.random.Generator, *,
               batch_size: int | None = None, path: str = "auto") -> SampleResult:
        """``n`` sequences; ``path`` ``"auto"`` / ``"oracle"`` / ``"generic"`` (module docstring)."""
        bs = check_run(denoiser, n, length, rng, batch_size, path, PATHS)
        self.step_sizes(length)  # a block length that does not divide L (or N) fails here
        language = oracle_language(denoiser)
        if path == "oracle" and language is None:
            raise ValueError("path='oracle' needs an OracleDenoiser of an HMM/NGram or an IntervalOracle")
        fast = language is not None and path != "generic"
        batches = _batches(int(n), int(bs))
        uniforms = [rng.random((B, length)) for B in batches]
        if fast:
            run = adaptive_run(language, self.kernel_rule(length), np.zeros((int(n), length), dtype=np.int64),
                               np.concatenate(uniforms), sample=True)
            tokens, steps, per_seq = run.tokens, run.steps, run.calls
            kind = "ngram" if isinstance(language, NGram) else "interval" if isinstance(language, IntervalLanguage) else "hmm"
            where = "oracle-" + kind
        else:
            sizes, prio = self.step_sizes(length), tie_priority(length, self.tie_seed)
            runs = [self._run_generic(denoiser, U, prio, sizes) for U in uniforms]
            tokens = np.concatenate([r[0] for r in runs])
            steps = np.concatenate([r[1] for r in runs])
            per_seq = np.concatenate([r[2] for r in runs])
            where = "generic"
        edges = np.cumsum([0] + batches)
        nfe = np.asarray([per_seq[a:b].max() for a, b in zip(edges[:-1], edges[1:])], dtype=np.int64)
        return SampleResult(tokens, steps, nfe, np.asarray(batches, dtype=np.int64), int(per_seq.max()), False,
                            "float64", f"adaptive-{self.rule}-{where}", per_seq)

    def _run_generic(self, denoiser: Denoiser, U: np.ndarray, prio: np.ndarray, sizes: np.ndarray):
        """One batch through ``denoiser`` calls: ``(tokens, steps, calls per sequence)``."""
        B, L = U.shape
        tokens = np.zeros((B, L), dtype=np.int64)
        mask = np.ones((B, L), dtype=bool)
        steps = np.zeros((B, L), dtype=np.int64)
        calls = np.zeros(B, dtype=np.int64)
        t = 0
        while mask.any():
            k = 0
            if self.rule == "topk":  # every sequence reveals the same number per step: one block cursor
                if (L - int(mask[np.argmax(mask.any(axis=1))].sum())) % self.block_of(L) == 0:
                    t = 0
                while sizes[t] == 0:
                    t += 1
                k, t = int(sizes[t]), t + 1
            active = np.flatnonzero(mask.any(axis=1))
            probs = _call(denoiser, tokens[active], mask[active])  # (B_active, L, V)
            for i, b in enumerate(active):
                chosen, rows = self.choose(probs[i], mask[b], prio, k)
                tokens[b, chosen] = draw_inverse_cdf(rows[chosen], U[b, chosen])
                calls[b] += 1
                steps[b, chosen] = calls[b]
                mask[b, chosen] = False
        return tokens, steps, calls


def make_sampler(name: str, *, schedule: Schedule | None = None, gamma: float | None = None,
                 confidence: str = "maxprob", tie_seed: int | None = 0, block_length: int | None = None) -> Sampler:
    """The sampler called ``name`` (:data:`SAMPLER_NAMES`): ``random`` and ``topk`` take ``schedule``,
    ``threshold`` and ``entropy-sum`` take ``gamma``, the adaptive rules ``block_length``; an option the
    sampler does not use is an error."""
    if name == "random":
        if gamma is not None or confidence != "maxprob" or block_length is not None:
            raise ValueError("the random sampler takes a schedule only (no gamma, no confidence, no block length)")
        if not isinstance(schedule, Schedule):
            raise ValueError("the random sampler needs a schedule")
        return RandomOrder(schedule)
    if name not in RULES:
        raise ValueError(f"unknown sampler {name!r}; choose one of {SAMPLER_NAMES}")
    return AdaptiveSampler(name, schedule=schedule if name == "topk" else None, gamma=gamma, confidence=confidence,
                           tie_seed=tie_seed, block_length=block_length)


class ChainRuleScore(NamedTuple):
    """Per sequence ``x``: ``terms = log q(x) - log p(x)`` by (I1) and the ``calls`` of the rule's path."""

    terms: np.ndarray
    calls: np.ndarray


def chain_rule_terms(sampler: AdaptiveSampler, language, tokens: np.ndarray) -> ChainRuleScore:
    """Replay ``sampler``'s oracle rule along given sequences ``x`` in ``supp q`` (the kernel's scoring mode).

    ``log q(x) - log p(x) = sum_t [log q(x_{D_t} | x_{S_t}) - sum_{j in D_t} log q(x_j | x_{S_t})]``
    with every conditional exact (:mod:`numerics.sampling._adaptive_numba`); ``E_{x~q}`` of it is
    ``KL(q || p)`` of the sampler's true output law. A sequence outside ``supp q`` is a ``ValueError``.
    """
    if not isinstance(sampler, AdaptiveSampler):
        raise TypeError("the chain-rule identity needs a deterministic adaptive rule (an AdaptiveSampler)")
    x = np.array(tokens, dtype=np.int64)
    if x.ndim != 2 or np.any((x < 0) | (x >= language.vocab_size)):
        raise ValueError(f"tokens must be a (B, L) array of tokens in 0..{language.vocab_size - 1}")
    L = x.shape[1]
    run = adaptive_run(language, sampler.kernel_rule(L), x, np.zeros(x.shape), sample=False)
    if np.any(run.outside_support):
        raise ValueError(f"sequence {int(np.argmax(run.outside_support))} is outside supp q: the identity needs x ~ q")
    return ChainRuleScore(run.chain_rule, run.calls)


def _mean_estimate(values: np.ndarray, method: str, confidence: float) -> Estimate:
    """The sample mean with its standard error (normal interval at ``confidence``, :class:`Estimate`)."""
    n = values.size
    if n < 2:
        raise ValueError("need n >= 2 samples for a standard error")
    return Estimate(float(values.mean()), float(values.std(ddof=1) / math.sqrt(n)), method, n, confidence=confidence)


def kl_chain_rule_mc(sampler: AdaptiveSampler, language, length: int, n: int, rng: np.random.Generator,
                     confidence: float = CONFIDENCE) -> Estimate:
    """Monte Carlo of ``KL(q || p)`` of the adaptive sampler's *true* output law by (I1) along ``x ~ q``.

    Random stream: ``x = language.sample(n, length, rng)``. Normal interval on the mean of the
    per-sequence terms (:func:`chain_rule_terms`).
    """
    score = chain_rule_terms(sampler, language, language.sample(n, length, rng))
    return _mean_estimate(score.terms, "mc (x ~ q, chain-rule identity (I1), exact conditionals)", confidence)


def nfe_mc(result: SampleResult, confidence: float = CONFIDENCE) -> Estimate:
    """Mean denoiser calls per sequence of an adaptive run (``result.nfe_sequence``), with its interval."""
    if result.nfe_sequence is None:
        raise ValueError("this run has no per-sequence calls (not an adaptive sampler)")
    return _mean_estimate(result.nfe_sequence.astype(np.float64), "mc (calls per sequence)", confidence)
