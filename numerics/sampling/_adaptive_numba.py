"""Fast exact kernels of the oracle adaptive samplers (numba): the rule's steps, sampling and scoring.

One pass per sequence: at each step the rule (a :class:`Rule`, :mod:`numerics.sampling.adaptive`)
picks ``D`` from the grid confidences of the masked positions (``_select``), the tokens of ``D``
are drawn by the float64 inverse CDF of their marginals at the sequence's uniforms (sampling) or
read from the given sequence (scoring), and :mod:`numerics.sampling._adaptive_paths` updates the
marginals that ``D`` can change (``refresh``, chosen by the language's path arrays at compile time).

Scoring is the chain-rule identity (I1) of ``docs/methods/adaptive.md``. For a rule that is a
deterministic function of the revealed values, ``p(x) = prod_t prod_{j in D_t} q(x_j | x_{S_t})``
along the unique path of ``x``, hence per sequence

    log q(x) - log p(x) = sum_t [ log q(x_{D_t} | x_{S_t}) - sum_{j in D_t} log q(x_j | x_{S_t}) ],

the joint factor from the chain rule over the new positions (the paths module), accumulated term
by term. A jointly impossible reveal (factor 0) leaves ``supp q``: every later marginal is
uniform (the samplers' convention) and the term is NaN.

Sequences run in parallel chunks (:func:`numerics._threads.run_chunks`); each chunk allocates its
own :class:`~numerics.sampling._adaptive_paths.Posterior`, path scratch and :class:`Selection`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics._threads import run_chunks
from numerics.draws import inverse_cdf
from numerics.sampling._adaptive_paths import (
    CONFIDENCE_CODES,
    GRID_SCALE,
    Confidence,
    initial,
    new_posterior,
    new_workspace,
    path_arrays,
    refresh,
    selected_rows,
    uniform_all,
)

__all__ = ["RULE_CODES", "CONFIDENCE_CODES", "GRID_SCALE", "Rule", "AdaptiveRun", "make_rule", "adaptive_run",
           "SequenceResult", "end_step", "first_masked", "masked_span", "new_run", "start", "store"]

RULE_CODES = {"topk": 0, "threshold": 1, "entropy-sum": 2}
_TOPK, _THRESHOLD, _ENTROPY = 0, 1, 2
_PARTIAL = 32  # select up to this many smallest keys by one bounded insertion pass, more by a full argsort


class Rule(NamedTuple):
    """An adaptive rule as the kernels read it (:func:`make_rule`; module :mod:`numerics.sampling.adaptive`).

    Attributes
    ----------
    code : int
        :data:`RULE_CODES`: ``topk``, ``threshold`` or ``entropy-sum``.
    confidence : Confidence
        Which grid values the marginal rows get (:class:`~numerics.sampling._adaptive_paths.Confidence`).
    sizes : (T,) int64
        Top-k's ``k_t`` within a block (steps with ``k_t = 0`` are skipped); ``[0]`` for the other rules.
    gamma : int
        ``gamma`` on the grid (threshold: confidence; entropy-sum: the entropy budget); 0 for top-k.
    priority : (L,) int64
        ``priority[j]``: position ``j``'s place among ties (0 first), a permutation of ``0..L-1``.
    block : int
        ``B``: the blocks ``[b B, (b+1) B)`` are decoded left to right, only the current block's masked
        positions compete (``B = L``: one block).
    """

    code: int
    confidence: Confidence
    sizes: np.ndarray
    gamma: int
    priority: np.ndarray
    block: int


class Selection(NamedTuple):
    """Scratch of one step's selection (``_select``).

    Attributes
    ----------
    candidates, keys : (L,) int64
        The masked positions and their sort keys (distinct: ``key * L + priority``).
    chosen : (L,) int64
        The step's positions, sorted (the first ``r``).
    best_keys, best_index : (_PARTIAL,) int64
        The bounded insertion pass's smallest keys and their indices into ``candidates``.
    """

    candidates: np.ndarray
    keys: np.ndarray
    chosen: np.ndarray
    best_keys: np.ndarray
    best_index: np.ndarray


class Sequence(NamedTuple):
    """One sequence's rows of the batch: ``tokens`` (written when sampling), ``uniforms``, ``steps`` (written), each (L,)."""

    tokens: np.ndarray
    uniforms: np.ndarray
    steps: np.ndarray


class SequenceResult(NamedTuple):
    """One sequence's outcome (fields as in :class:`AdaptiveRun`)."""

    calls: int
    chain_rule: float
    outside_support: bool
    log_p: float


class AdaptiveRun(NamedTuple):
    """A compiled oracle run on ``B`` sequences: an adaptive rule (:func:`adaptive_run`) or a block decoder
    (:func:`numerics.sampling._decoder_numba.decoder_run`, :func:`~numerics.sampling._decoder_numba.remdm_run`).

    Attributes
    ----------
    tokens : (B, L) int64
        The sequences: drawn (sampling) or the given ones (scoring).
    steps : (B, L) int64
        ``steps[b, j]``: the step (1-based call) that revealed ``j`` (ReMDM: the last reveal; 0 for a
        position left masked).
    calls : (B,) int64
        Denoiser calls of each sequence (its number of steps).
    chain_rule : (B,) float64
        ``log q(x) - log p(x)`` by the chain-rule identity (I1) along the sequence's reveal path,
        accumulated step by step: ``sum_t [log q(x_{D_t} | x_{S_t}) - sum_{j in D_t} log r_j(x_j | x_{S_t})]``
        with ``r_j`` the law the value is drawn from (the marginal; a decoder's tempered law); NaN
        once the sequence left ``supp q``, and for ReMDM (no single reveal path).
    outside_support : (B,) bool
        Some step's new tokens were jointly impossible under ``q`` (every later marginal uniform);
        False for ReMDM (not tracked).
    log_p : (B,) float64
        ``sum_t sum_{j in D_t} log r_j(x_j | x_{S_t})`` along the sequence's reveal path: ``log p(x)``
        for a rule or decoder whose revealed sets depend on the revealed values alone (``-inf`` outside
        the sampler's support); NaN for ReMDM.
    """

    tokens: np.ndarray
    steps: np.ndarray
    calls: np.ndarray
    chain_rule: np.ndarray
    outside_support: np.ndarray
    log_p: np.ndarray


def new_run(tokens: np.ndarray) -> AdaptiveRun:
    """An :class:`AdaptiveRun` holding ``tokens`` ``(B, L)``, its other arrays zero (the kernels fill them)."""
    B, L = tokens.shape
    return AdaptiveRun(tokens, np.zeros((B, L), dtype=np.int64), np.zeros(B, dtype=np.int64), np.zeros(B),
                       np.zeros(B, dtype=np.bool_), np.zeros(B))


def make_rule(rule: str, confidence: str, sizes: np.ndarray, gamma_grid: int, priority: np.ndarray, *,
              block: int | None = None) -> Rule:
    """The :class:`Rule` of the adaptive rule ``rule`` with the confidence ``confidence`` (names as in
    :data:`RULE_CODES`, :data:`CONFIDENCE_CODES`), arrays made contiguous int64; ``block`` ``B``
    (``None``: ``L``, one block)."""
    need_entropy = rule == "entropy-sum" or confidence == "neg-entropy"
    return Rule(RULE_CODES[rule], Confidence(CONFIDENCE_CODES[confidence], need_entropy),
                np.ascontiguousarray(sizes, np.int64), int(gamma_grid), np.ascontiguousarray(priority, np.int64),
                len(priority) if block is None else int(block))


@jit
def _smallest(keys, nm, k, bufk, bufi):
    """Indices of the ``k`` smallest of ``keys[:nm]`` (distinct) into ``bufi[:k]``, ascending."""
    cnt = 0
    for i in range(nm):
        kv = keys[i]
        if cnt == k:
            if kv >= bufk[k - 1]:
                continue
            p = k - 1
        else:
            p = cnt
            cnt += 1
        while p > 0 and bufk[p - 1] > kv:
            bufk[p] = bufk[p - 1]
            bufi[p] = bufi[p - 1]
            p -= 1
        bufk[p] = kv
        bufi[p] = i


@jit
def _entropy_prefix(cand, order, count, ent_int, gamma_int, sel):
    """The longest prefix of ``cand[order[:count]]`` with cumulative entropy ``<= gamma`` (at least one) into ``sel``."""
    r = 0
    total = 0
    for i in range(count):
        j = cand[order[i]]
        total += ent_int[j]
        if i > 0 and total > gamma_int:
            break
        sel[r] = j
        r += 1
    return r


_NONE = np.iinfo(np.int64).max  # the key of a revealed position in the scans below: never the smallest


@jit(inline=True)
def first_masked(values, sign, rev, prio, lo, hi):
    """``(j, key)``: the masked position of ``lo..hi-1`` with the smallest key ``sign values[j] L + prio[j]``
    (distinct keys; ``j = -1`` when none is masked).

    One pass over views that start at ``lo`` (their indices are known non-negative, so the loop
    carries no index checks) with the revealed positions' keys replaced rather than branched over:
    at ``L = 512`` half the cost of the plain loop over ``lo..hi-1``.
    """
    L = rev.shape[0]
    vs, rs, ps = values[lo:hi], rev[lo:hi], prio[lo:hi]
    best = -1
    best_key = _NONE
    for i in range(hi - lo):
        key = sign * vs[i] * L + ps[i]
        if rs[i]:
            key = _NONE
        if key < best_key:
            best, best_key = i, key
    return (best + lo if best >= 0 else -1), best_key


@jit
def _threshold_select(rule, post, lo, hi, sel):
    """The threshold rule: every masked ``j`` of the block ``lo..hi-1`` with confidence ``>= gamma``
    into ``sel`` (in position order), or else the first in the order ``(-confidence, priority)``; returns their number."""
    rev, conf_int = post.revealed, post.confidence
    gamma_int = rule.gamma
    r = 0
    cs, rs = conf_int[lo:hi], rev[lo:hi]
    for i in range(hi - lo):
        if cs[i] >= gamma_int and not rs[i]:
            sel[r] = lo + i
            r += 1
    if r == 0:
        sel[0] = first_masked(conf_int, -1, rev, rule.priority, lo, hi)[0]
        r = 1
    return r


@jit(inline=True)
def _entropy_single(ent_int, rev, prio, lo, hi, gamma_int):
    """The entropy-sum rule's first position when it reveals only one, else ``-1``.

    The two masked positions of the block ``lo..hi-1`` first in the order ``(entropy, priority)``
    (one pass keeping the two smallest of the distinct keys ``entropy L + priority``, over views as in
    :func:`first_masked`); the step reveals only the first when there is no second or when the two
    entropies sum to more than ``gamma``. Inlined into :func:`_sequence` on plain arrays: a call with
    the step's tuples costs more than the pass (each array of a tuple argument is reference-counted
    on entry and exit).
    """
    L = rev.shape[0]
    vs, rs, ps = ent_int[lo:hi], rev[lo:hi], prio[lo:hi]
    j1 = j2 = -1
    k1 = k2 = _NONE
    for i in range(hi - lo):
        key = vs[i] * L + ps[i]
        if rs[i]:
            key = _NONE
        if key < k2:
            if key < k1:
                j2, k2 = j1, k1
                j1, k1 = i, key
            else:
                j2, k2 = i, key
    if j1 < 0:
        return -1
    if j2 < 0 or vs[j1] + vs[j2] > gamma_int:
        return j1 + lo
    return -1


@jit
def _select(rule, post, k, lo, hi, scratch):
    """Positions of the block ``lo..hi-1`` revealed by this step into ``scratch.chosen`` (sorted by position);
    returns their number.

    Order: ``(-confidence, priority)`` for top-k and threshold, ``(entropy, priority)`` for the
    entropy-sum rule (lower first); ``priority`` is the seeded tie rank. Keys are distinct.
    ``k``: top-k's size of this step. Threshold takes one pass; an entropy-sum step that reveals
    one position is taken by :func:`_sequence` before (:func:`_entropy_single`); the others sort
    (partially) the keys of all masked positions.
    """
    sel = scratch.chosen
    code = rule.code
    if code == _THRESHOLD:
        return _threshold_select(rule, post, lo, hi, sel)
    rev, conf_int, ent_int = post.revealed, post.confidence, post.entropy
    prio, gamma_int = rule.priority, rule.gamma
    cand, keys = scratch.candidates, scratch.keys
    bufk, bufi = scratch.best_keys, scratch.best_index
    L = rev.shape[0]
    nm = 0
    for j in range(lo, hi):
        if not rev[j]:
            cand[nm] = j
            if code == _ENTROPY:
                keys[nm] = ent_int[j] * L + prio[j]
            else:
                keys[nm] = -conf_int[j] * L + prio[j]
            nm += 1
    if code == _TOPK:
        r = min(k, nm)
        if r <= _PARTIAL:
            _smallest(keys, nm, r, bufk, bufi)
            for i in range(r):
                sel[i] = cand[bufi[i]]
        else:
            order = np.argsort(keys[:nm])
            for i in range(r):
                sel[i] = cand[order[i]]
    else:
        first = min(_PARTIAL, nm)
        _smallest(keys, nm, first, bufk, bufi)
        r = _entropy_prefix(cand, bufi, first, ent_int, gamma_int, sel)
        if r == first and first < nm:  # the bound admits more than the partial pass found: full order
            r = _entropy_prefix(cand, np.argsort(keys[:nm]), nm, ent_int, gamma_int, sel)
    sel[:r].sort()
    return r


@jit(inline=True)
def masked_span(rev, first, last):
    """``(a, b)``: the first and the last masked position of ``first..last`` (which holds one).

    Kept from step to step within a block, both ends only move inward (a monotone sampler never
    masks a position again), so a block costs ``O(B)`` here in all, and each step scans only
    ``a..b`` instead of the whole block: the same positions in the same order, revealed ones skipped.
    """
    while rev[first]:
        first += 1
    while rev[last]:
        last -= 1
    return first, last


@jit(inline=True)
def start(lang, conf, x, post, work):
    """A new sequence: nothing revealed, the all-masked marginals (``initial``)."""
    post.revealed[:] = False
    post.new[:] = False
    initial(lang, conf, x, post, work)


@jit(inline=True)
def end_step(lang, conf, x, sel, post, work, term, dead):
    """After a step set the values of its positions ``sel`` (sorted): add the chain-rule factors to
    ``term`` and update the marginals (``refresh``), mark the positions revealed; once outside
    ``supp q`` (now or before) ``term`` is NaN and every masked marginal uniform. Returns ``(term, dead)``."""
    r = sel.shape[0]
    if not dead:
        term, ok = refresh(lang, conf, x, sel, r, post, work, term)
        dead = not ok
    for i in range(r):
        post.revealed[sel[i]] = True
        post.new[sel[i]] = False
    if dead:
        term = np.nan
        uniform_all(post, conf)
    return term, dead


@jit
def _sequence(lang, rule, sample, seq, post, work, scratch):
    """Run one sequence (``seq.tokens`` written when ``sample``); returns its :class:`SequenceResult`."""
    x, U, step_of = seq.tokens, seq.uniforms, seq.steps
    marg, rev, newf, ent = post.marginals, post.revealed, post.new, post.entropy
    sizes, conf, code, prio = rule.sizes, rule.confidence, rule.code, rule.priority
    sel = scratch.chosen
    L = x.shape[0]
    start(lang, conf, x, post, work)
    dead = False
    calls = 0
    term = 0.0
    logp = 0.0
    n_rev = 0
    t = 0
    B = rule.block
    first = last = 0
    while n_rev < L:
        lo = (n_rev // B) * B  # blocks are revealed in order: the current one holds position n_rev
        if n_rev == lo:
            t = 0  # a new block: its step sizes start again
            first, last = lo, lo + B - 1
        first, last = masked_span(rev, first, last)
        k = 0
        if code == _TOPK:
            while sizes[t] == 0:
                t += 1
            k = sizes[t]
            t += 1
        calls += 1
        j = _entropy_single(ent, rev, prio, first, last + 1, rule.gamma) if code == _ENTROPY else -1
        if j >= 0:  # an entropy-sum step that reveals one (most of them): no ranking
            sel[0] = j
            r = 1
        else:
            r = _select(rule, post, k, first, last + 1, scratch)
        if not dead:
            selected_rows(lang, x, sel, r, post, work)
        for i in range(r):
            j = sel[i]
            if sample:
                x[j] = inverse_cdf(marg[j], U[j])
            pj = marg[j, x[j]]
            if pj > 0.0:
                lq = np.log(pj)
                term -= lq
                logp += lq
            else:
                term -= np.inf
                logp = -np.inf
            step_of[j] = calls
            newf[j] = True
        term, dead = end_step(lang, conf, x, sel[:r], post, work, term, dead)
        n_rev += r
    return SequenceResult(calls, term, dead, logp)


@jit(inline=True)
def store(run, b, out):
    """Sequence ``b``'s :class:`SequenceResult` ``out`` into the run (an :class:`AdaptiveRun`)."""
    run.calls[b] = out.calls
    run.chain_rule[b] = out.chain_rule
    run.outside_support[b] = out.outside_support
    run.log_p[b] = out.log_p


@jit(nogil=True)
def _kernel(lang, rule, sample, uniforms, run, vocab_size, lo, hi):
    """Sequences ``lo..hi-1`` of ``run`` (an :class:`AdaptiveRun`); releases the GIL so threads run chunks in parallel."""
    L = uniforms.shape[1]
    post = new_posterior(L, vocab_size)
    work = new_workspace(lang, L, vocab_size)
    scratch = Selection(np.empty(L, dtype=np.int64), np.empty(L, dtype=np.int64), np.empty(L, dtype=np.int64),
                        np.empty(_PARTIAL, dtype=np.int64), np.empty(_PARTIAL, dtype=np.int64))
    for b in range(lo, hi):
        store(run, b, _sequence(lang, rule, sample, Sequence(run.tokens[b], uniforms[b], run.steps[b]), post, work,
                                scratch))


def adaptive_run(language, rule: Rule, tokens: np.ndarray, uniforms: np.ndarray, *, sample: bool,
                 path: str = "auto") -> AdaptiveRun:
    """Run the oracle adaptive ``rule`` (:func:`make_rule`) on ``B`` sequences; returns an :class:`AdaptiveRun`.

    ``sample=True`` draws the tokens (written into ``tokens``, ``(B, L)`` int64, which the result
    holds) by the float64 inverse CDF at ``uniforms`` ``(B, L)``; ``sample=False`` replays the rule
    along the given ``tokens`` (scoring). ``path`` as in
    :func:`~numerics.sampling._adaptive_paths.path_arrays`.
    """
    if tokens.ndim != 2 or tokens.dtype != np.int64 or not tokens.flags.c_contiguous:
        raise ValueError("tokens must be a C-contiguous (B, L) int64 array (the kernel writes into it)")
    B, L = tokens.shape
    lang = path_arrays(language, L, path)
    run = new_run(tokens)
    args = (lang, rule, bool(sample), np.ascontiguousarray(uniforms, np.float64), run, int(language.vocab_size))
    run_chunks(_kernel, B, args)
    return run
