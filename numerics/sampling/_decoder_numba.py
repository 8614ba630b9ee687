"""Compiled oracle paths of the block decoders (numba): LLaDA, Fast-dLLM, EB-Sampler and ReMDM.

The same samplers as the generic path of :mod:`numerics.sampling.decoders`, on the same
counter-based random stream (:func:`stream_u` is :func:`numerics.sampling.decoders.stream_uniform`
compiled), so the two paths give the same samples sequence by sequence. The language comes as the
arrays of its path (:func:`~numerics.sampling._adaptive_paths.path_arrays`) and the per-sequence
posterior (marginals and grid values of every masked position, updated after each step from the
positions it revealed) is the adaptive kernels' :class:`~numerics.sampling._adaptive_paths.Posterior`.
What differs from :mod:`numerics.sampling._adaptive_numba` is how a step scores and selects:

* candidates are the masked positions of the current block (blocks left to right, ``B | L``);
* ``low-confidence`` at ``T > 0``: every candidate draws ``x0_j`` from ``r_j ∝ p_j^(1/T)`` at
  ``u(key, call, j, DRAW)`` and scores the grid value of ``p_j(x0_j)``; at ``T = 0`` the draw is
  the grid argmax and the score the grid ``max_v p_j(v)`` (the posterior's ``maxprob``);
  ``random``: the score is ``u(key, call, j, SCORE)`` (compared as its 53-bit integer); ``eb``:
  ``-H(p_j)`` on the grid. Draws that do not depend on the selection are made only for the
  revealed positions (the stream is counter-based, so skipping the others changes nothing);
* the order ``(-score, priority)`` and the count: LLaDA's fixed per-step counts, Fast-dLLM's
  threshold / factor prefix, EB's entropy bound ``sum_{i<n} H_(i) <= gamma``, at least one where
  the counts are not fixed.

ReMDM is not monotone (a revealed token may be remasked), so its step conditions the marginals of
the positions it reveals on the current revealed set from scratch (:func:`condition`), with the
samplers' convention when that set is jointly impossible (every row uniform).

Scoring (``sample=False``, path-deterministic decoders only): the rule replayed along given
sequences, ``log p(x) = sum_t sum_{j in D_t} log r_j(x_j | x_{S_t})``
(:meth:`numerics.sampling.decoders.BlockDecoder.path_log_prob`). A sampling run sums the same
terms along its own samples, so it carries ``log p(x)`` of a path-deterministic decoder's outputs
without a replay. Both return the adaptive kernels' run type,
:class:`~numerics.sampling._adaptive_numba.AdaptiveRun`.

Cost: each step scans only the span of its block from the first to the last masked position
(:func:`~numerics.sampling._adaptive_numba.masked_span`); a step that reveals one position (EB with
``H_(1) > gamma``, Fast-dLLM with at most one score at its bound) picks it in one pass. EB's pick
(:func:`_entropy_single`) runs inside :func:`_decode` on plain arrays, and the posterior's update
(``refresh``, ``selected_rows``) is inlined: at one reveal per call, a numba call that takes the
step's tuples (every array of a tuple argument reference-counted, an atomic operation, on entry and
exit) cost more than the step's own work. For the same reason LLaDA's draw of every candidate
(``_draw``, the inverse CDF indexing ``marg[j]`` in place: :func:`_inverse_cdf_row`) is inlined into
:func:`_score_block`'s loop, which reads the tuples' fields once before it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics._threads import run_chunks
from numerics.draws import inverse_cdf
from numerics.messages.steps import apply_evidence
from numerics.messages.steps import normalize as _normalize
from numerics.sampling._adaptive_numba import (
    AdaptiveRun,
    SequenceResult,
    _smallest,
    end_step,
    first_masked,
    masked_span,
    new_run,
    start,
    store,
)
from numerics.sampling._adaptive_paths import (
    Confidence,
    _chain_row,
    _grid,
    _interval_row,
    _marginal,
    _pull,
    _push,
    _token_at,
    by_path,
    new_posterior,
    new_workspace,
    path_arrays,
    selected_rows,
)

__all__ = ["COUNT_CODES", "SCORE_CODES", "DecoderRule", "RemdmRule", "decoder_run", "remdm_run", "stream_u"]

COUNT_CODES = {"fixed": 0, "threshold": 1, "factor": 2, "entropy": 3, "floored": 4}
SCORE_CODES = {"low-confidence": 0, "random": 1, "entropy": 2, "plan": 3}
_FIXED, _THRESHOLD, _FACTOR, _ENTROPY, _FLOORED = 0, 1, 2, 3, 4
_LOWCONF, _RANDOM, _NEGENT, _PLAN = 0, 1, 2, 3
_PARTIAL = 32  # rank up to this many candidates by one bounded insertion pass, more by a full argsort
_DRAW, _SCORE, _REMASK, _UNMASK = 0, 1, 2, 3  # numerics.sampling.decoders STREAM_*

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11, _FOUR = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11), np.uint64(4)


class DecoderRule(NamedTuple):
    """A monotone block decoder (``llada``, ``fast-dllm``, ``eb``) as the kernel reads it.

    Attributes
    ----------
    count : int
        :data:`COUNT_CODES`: LLaDA's fixed counts, Fast-dLLM threshold or factor, EB's bound, or LLaDA2.0's
        counts floored by a threshold (the top ``max(k_t, #{score > gamma})``, the block ending when empty).
    score : int
        :data:`SCORE_CODES`: ``p_j(x0_j)``, a fresh uniform, or ``-H(p_j)``.
    temperature : float
        ``T >= 0`` of the draws.
    block : int
        ``B`` (divides ``L``).
    counts : (n,) int64
        LLaDA's per-step counts within a block (:func:`~numerics.sampling.decoders.llada_counts`); ``[0]`` else.
    gamma : int
        On the grid: Fast-dLLM's or LLaDA2.0's ``tau`` or EB's ``gamma``; 0 else.
    factor : (B,) int64
        On the grid: ``1 - f / (j + 1)`` at index ``j - 1`` (Fast-dLLM factor); zeros else.
    priority : (L,) int64
        The seeded tie rank of every position (0 first).
    confidence : Confidence
        The posterior's grid values: ``maxprob``, with the entropy when ``eb`` needs it.
    """

    count: int
    score: int
    temperature: float
    block: int
    counts: np.ndarray
    gamma: int
    factor: np.ndarray
    priority: np.ndarray
    confidence: Confidence


class RemdmRule(NamedTuple):
    """ReMDM as the kernel reads it: per step ``i = 1..N`` the remask ``sigma`` and reveal probabilities
    (:func:`~numerics.sampling.decoders.remdm_probabilities`), and ``temperature``."""

    sigma: np.ndarray
    reveal: np.ndarray
    temperature: float
    confidence: Confidence


class Ranking(NamedTuple):
    """Scratch of one step's selection over the candidates (masked positions of the block).

    Attributes
    ----------
    candidates, keys, scores : (B,) int64
        Positions, their distinct sort keys ``-score L + priority`` (lower first; ``random``:
        ``-bits L + priority`` with the score's 53-bit integer, exact for ``L <= 1024``) and grid scores.
    drawn : (B,) int64
        The drawn value of the block's position ``j`` at ``drawn[j % B]`` (``-1``: not drawn yet).
    chosen : (B,) int64
        The step's positions, sorted by position (the first ``r``).
    best_keys, best_index : (_PARTIAL,) int64
        The bounded insertion pass's smallest keys and their indices into ``candidates``.
    row : (V,) float64
        A tempered row.
    """

    candidates: np.ndarray
    keys: np.ndarray
    scores: np.ndarray
    drawn: np.ndarray
    chosen: np.ndarray
    best_keys: np.ndarray
    best_index: np.ndarray
    row: np.ndarray


# ----- the counter-based stream -----------------------------------------------------------------


@jit(inline=True)
def _mix(x):
    """splitmix64's finalizer of ``x + golden`` (uint64, wrapping)."""
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@jit(inline=True)
def _bits(call_key, position, stream):
    """The top 53 bits of ``splitmix64(call_key ^ (4 position + stream))`` as int64."""
    z = _mix(call_key ^ (np.uint64(position) * _FOUR + np.uint64(stream)))
    return np.int64(z >> _S11)


@jit(inline=True)
def _call_key(key, call):
    """``splitmix64(splitmix64(key) ^ call)``: the part of the stream shared by one call of one sequence."""
    return _mix(_mix(key) ^ np.uint64(call))


@jit
def stream_u(key, call, position, stream):
    """``u(key, call, position, stream)`` of :func:`numerics.sampling.decoders.stream_uniform`, one value."""
    return np.float64(_bits(_call_key(key, call), position, stream)) * (1.0 / 9007199254740992.0)


@jit(inline=True)
def _uniform(call_key, position, stream):
    return np.float64(_bits(call_key, position, stream)) * (1.0 / 9007199254740992.0)


# ----- draws ------------------------------------------------------------------------------------


@jit(inline=True)
def _grid_argmax(marg, j):
    """The lowest token whose grid value is the row's largest (the ``T = 0`` draw)."""
    best = 0
    gbest = _grid(marg[j, 0])
    for v in range(1, marg.shape[1]):
        g = _grid(marg[j, v])
        if g > gbest:
            best, gbest = v, g
    return best


@jit
def _tempered(marg, j, T, row):
    """``row = r_j ∝ p_j^(1/T)`` (``T`` not 0 or 1), as :func:`numerics.sampling.decoders.tempered`."""
    V = marg.shape[1]
    top = -np.inf
    for v in range(V):
        lp = np.log(marg[j, v]) if marg[j, v] > 0.0 else -np.inf
        row[v] = lp
        if lp > top:
            top = lp
    total = 0.0
    for v in range(V):
        row[v] = np.exp((row[v] - top) / T)
        total += row[v]
    for v in range(V):
        row[v] /= total


@jit(inline=True)
def _inverse_cdf_row(marg, j, u):
    """:func:`numerics.draws.inverse_cdf` of the row ``marg[j]`` at ``u``, the same operations in the same
    order, indexing ``marg`` in place (inlined: no call, no row view to reference-count)."""
    K = marg.shape[1]
    c = 0.0
    for v in range(K):
        c += marg[j, v]
    target = u * c
    c = 0.0
    idx = 0
    for v in range(K):
        c += marg[j, v]
        if c <= target:
            idx += 1
    if idx >= K:
        idx = K - 1
        while marg[j, idx] <= 0.0:
            idx -= 1
    return idx


@jit(inline=True)
def _draw(marg, j, T, u, row):
    """``x0_j``: the float64 inverse CDF of ``r_j`` at ``u`` (``T = 0``: the grid argmax)."""
    if T == 0.0:
        return _grid_argmax(marg, j)
    if T == 1.0:
        return _inverse_cdf_row(marg, j, u)
    _tempered(marg, j, T, row)
    return inverse_cdf(row, u)


@jit(inline=True)
def _log_r(marg, j, T, v, row):
    """``log r_j(v)`` (``-inf`` where 0)."""
    if T == 0.0:
        return 0.0 if v == _grid_argmax(marg, j) else -np.inf
    if T == 1.0:
        p = marg[j, v]
    else:
        _tempered(marg, j, T, row)
        p = row[v]
    return np.log(p) if p > 0.0 else -np.inf


# ----- one step: candidates, scores, order, count ------------------------------------------------


@jit
def _ranked(rank, nm, want):
    """Indices into the candidates of the ``want`` smallest keys, ascending: a bounded pass or a full argsort."""
    if want <= _PARTIAL:
        _smallest(rank.keys, nm, want, rank.best_keys, rank.best_index)
        return rank.best_index
    return np.argsort(rank.keys[:nm])


@jit
def _prefix(rule, rank, order, n):
    """How many of the first ``n`` ranked candidates ``order[:n]`` the count rule keeps (at least one)."""
    s = rank.scores
    r = 1
    total = 0  # EB: sum of the entropies before the next one
    if rule.count == _ENTROPY:
        total = -s[order[0]]
    while r < n:
        c = s[order[r]]
        if rule.count == _THRESHOLD:
            ok = c >= rule.gamma
        elif rule.count == _FACTOR:
            ok = c >= rule.factor[r]
        else:
            ok = total <= rule.gamma
            total += -c
        if not ok:
            break
        r += 1
    return r


@jit
def _threshold_count(rule, rank, nm):
    """Fast-dLLM's threshold in one pass: every candidate with score ``>= tau`` (a prefix of the order),
    else the first; the indices into ``rank.best_index``, returns their number."""
    s, keys, out = rank.scores, rank.keys, rank.best_index
    r = 0
    best = 0
    for i in range(nm):
        if keys[i] < keys[best]:
            best = i
    for i in range(nm):
        if s[i] >= rule.gamma:
            if r < out.shape[0]:
                out[r] = i
            r += 1
    if r == 0:
        out[0] = best
        r = 1
    return r


@jit
def _choose(rule, rank, nm, step):
    """The positions one step reveals into ``rank.chosen`` (sorted by position); returns their number."""
    sel = rank.chosen
    if rule.count == _FIXED or rule.count == _FLOORED:
        r = min(rule.counts[step], nm)
        if rule.count == _FLOORED:  # every score > tau if at least k_t are: the top max(k_t, #above)
            above = 0
            for i in range(nm):
                above += rank.scores[i] > rule.gamma
            r = max(r, above)
        if r == 0:
            return 0
        order = _ranked(rank, nm, r)
    elif rule.count == _THRESHOLD:
        r = _threshold_count(rule, rank, nm)
        if r > rank.best_index.shape[0]:  # many above tau: every candidate with score >= tau
            r = 0
            for i in range(nm):
                if rank.scores[i] >= rule.gamma:
                    sel[r] = rank.candidates[i]
                    r += 1
            sel[:r].sort()
            return r
        order = rank.best_index
    else:  # EB comes here only for a step that reveals more than one (_decode: _entropy_single)
        first = min(_PARTIAL, nm)
        order = _ranked(rank, nm, first)
        r = _prefix(rule, rank, order, first)
        if r == first and first < nm:  # the rule admits more than the bounded pass ranked
            order = np.argsort(rank.keys[:nm])
            r = _prefix(rule, rank, order, nm)
    for i in range(r):
        sel[i] = rank.candidates[order[i]]
    sel[:r].sort()
    return r


@jit
def _score_block(lang, rule, x, step, post, work, rank):
    """Candidates of the span ``step.lo..step.hi-1`` of the block with their keys, grid scores and (where
    the score needs them) draws; returns their number (EB: a step that reveals more than one,
    :func:`_entropy_single`)."""
    lo, hi, call_key, sample, dead = step.lo, step.hi, step.call_key, step.sample, step.dead
    rev, marg = post.revealed, post.marginals
    prio, T = rule.priority, rule.temperature
    L = rev.shape[0]
    cand, drawn, keys, scores, row = rank.candidates, rank.drawn, rank.keys, rank.scores, rank.row
    ent, conf = post.entropy, post.confidence
    score = rule.score
    draw_all = score == _LOWCONF and T > 0.0
    if draw_all and sample and (rule.count == _THRESHOLD or rule.count == _FACTOR):
        return _score_bounded(lang, rule, x, step, post, work, rank)
    nm = 0
    for j in range(lo, hi):
        if not rev[j]:
            cand[nm] = j
            drawn[j - lo] = -1
            nm += 1
    if draw_all and sample and not dead:
        selected_rows(lang, x, cand, nm, post, work)
    for i in range(nm):  # the tuples' fields as plain arrays: a field read in the loop is reference-counted
        j = cand[i]
        if score == _RANDOM:
            keys[i] = -_bits(call_key, j, _SCORE) * L + prio[j]
            continue
        if score == _PLAN:  # DUS: equal scores, the plan's order is the priority; values drawn on reveal
            scores[i] = 0
            keys[i] = prio[j]
            continue
        if score == _NEGENT:
            c = -ent[j]
        elif draw_all and sample:
            v = _draw(marg, j, T, _uniform(call_key, j, _DRAW), row)
            drawn[j - lo] = v
            c = _grid(marg[j, v])
        else:  # T = 0: the grid argmax's value, the posterior's maxprob
            c = conf[j]
        scores[i] = c
        keys[i] = -c * L + prio[j]
    return nm


@jit(inline=True)
def _entropy_single(ent, rev, prio, lo, hi, gamma):
    """EB's step in one pass when it reveals one position: the first masked position of the span
    ``lo..hi-1`` in the order ``(entropy, priority)``; ``-1`` when the step reveals more.

    EB reveals a second position iff ``H_(1) <= gamma`` (:func:`_prefix`), so one pass for the first
    decides it (:func:`~numerics.sampling._adaptive_numba.first_masked`; the span's two ends are
    masked, so it holds more than one candidate iff ``hi - lo > 1``); the step that reveals more
    ranks every candidate (:func:`_score_block`, :func:`_choose`). Inlined into :func:`_decode` on
    plain arrays: a call with the step's tuples costs more than the pass (each array of a tuple
    argument is reference-counted on entry and exit).
    """
    best = first_masked(ent, 1, rev, prio, lo, hi)[0]
    if hi - lo > 1 and ent[best] <= gamma:
        return -1
    return best


@jit
def _score_bounded(lang, rule, x, step, post, work, rank):
    """Fast-dLLM's candidates and scores, drawing only where a draw can matter; returns their number
    (only the first when the step reveals one).

    A score ``p_j(x0_j)`` is at most ``max_v p_j(v)`` (the posterior's grid ``maxprob``). Beyond the
    first, a revealed candidate needs a score ``>= g`` (``tau``, or the factor's bound at the second,
    ``1 - f/3``), so a candidate with ``maxprob < g`` can only be revealed as the best one, and not
    when its ``maxprob`` is below a score already drawn. Such a candidate is not drawn: it gets a
    score below ``g`` and a key after every drawn one (the prefix stops before it either way), the
    same selection as drawing it. When at most one score is ``>= g`` the second in the order fails
    the test, so the step reveals the first alone: it is handed on as the only candidate, after one
    pass over the span that writes only the draws. Else a second pass ranks every candidate.
    """
    lo, hi, call_key, dead = step.lo, step.hi, step.call_key, step.dead
    marg, rev, cand, prio = post.marginals, post.revealed, rank.candidates, rule.priority
    L = x.shape[0]
    if rule.count == _THRESHOLD:
        g = rule.gamma
    elif rule.factor.shape[0] > 1:
        g = rule.factor[1]
    else:
        g = np.iinfo(np.int64).max
    best = -1  # the largest score drawn so far
    top = -1  # the position of the smallest key: a drawn one (the first candidate is always drawn)
    top_key = 0
    above = 0  # scores >= g
    for j in range(lo, hi):
        if rev[j]:
            continue
        rank.drawn[j - lo] = -1
        m = post.confidence[j]
        if m < best and m < g:
            continue
        if not dead:
            cand[0] = j
            selected_rows(lang, x, cand, 1, post, work)
        v = _draw(marg, j, rule.temperature, _uniform(call_key, j, _DRAW), rank.row)
        rank.drawn[j - lo] = v
        c = _grid(marg[j, v])
        key = -c * L + prio[j]
        if top < 0 or key < top_key:
            top, top_key = j, key
        best = max(best, c)
        above += c >= g
    if above <= 1:  # one reveal: the first in the order, alone
        cand[0], rank.scores[0], rank.keys[0] = top, _grid(marg[top, rank.drawn[top - lo]]), top_key
        return 1
    nm = 0  # more than one may be revealed: every candidate ranked, the undrawn after every drawn one
    for j in range(lo, hi):
        if rev[j]:
            continue
        cand[nm] = j
        v = rank.drawn[j - lo]
        if v < 0:
            rank.scores[nm] = -1
            rank.keys[nm] = L + prio[j]
        else:  # the row selected_rows made current for the draw is still there
            c = _grid(marg[j, v])
            rank.scores[nm] = c
            rank.keys[nm] = -c * L + prio[j]
        nm += 1
    return nm


class Step(NamedTuple):
    """One step of one sequence: ``lo..hi-1`` the span of the block from its first to its last masked
    position (:func:`~numerics.sampling._adaptive_numba.masked_span`), the stream's ``call_key``,
    ``sample`` (else scoring) and ``dead`` (the sequence left ``supp q``: rows uniform, not recomputed)."""

    lo: int
    hi: int
    call_key: np.uint64
    sample: bool
    dead: bool


class SequenceIO(NamedTuple):
    """One sequence's rows of the run: ``tokens`` (written when sampling), ``steps`` (written), each (L,), and its ``key``."""

    tokens: np.ndarray
    steps: np.ndarray
    key: np.uint64


@jit
def _decode(lang, rule, sample, seq, post, work, rank):
    """Run one sequence through every block (sampling or scoring); returns its
    :class:`~numerics.sampling._adaptive_numba.SequenceResult`.

    ``log_p`` adds ``log r_j(x_j | x_{S_t})`` of every revealed value, ``chain_rule`` the joint
    factors ``log q(x_{D_t} | x_{S_t})`` (``refresh``) minus the same; both in sampling and scoring,
    so a sampling run carries ``log p(x)`` of a path-deterministic decoder without a second pass.
    """
    x, step_of, key = seq.tokens, seq.steps, seq.key
    marg, rev, newf, ent = post.marginals, post.revealed, post.new, post.entropy
    conf, T, prio = rule.confidence, rule.temperature, rule.priority
    eb = rule.count == _ENTROPY and rule.score == _NEGENT
    sel = rank.chosen
    L = x.shape[0]
    B = rule.block
    start(lang, conf, x, post, work)
    dead = False
    calls = 0
    logp = 0.0
    term = 0.0
    for blk in range(L // B):
        first, last = blk * B, blk * B + B - 1
        left = B  # masked positions of the block
        step = 0
        while True:
            if rule.count == _FIXED:
                if step >= rule.counts.shape[0]:
                    break
            elif left == 0:
                break
            calls += 1
            ck = _call_key(key, calls)
            step += 1
            if left == 0:  # a fixed-count step on an empty block still costs its call
                continue
            first, last = masked_span(rev, first, last)
            j = _entropy_single(ent, rev, prio, first, last + 1, rule.gamma) if eb else -1
            if j >= 0:  # EB's step that reveals one (most of them): no ranking
                sel[0] = j
                rank.drawn[j - first] = -1
                r = 1
            else:
                nm = _score_block(lang, rule, x, Step(first, last + 1, ck, sample, dead), post, work, rank)
                r = _choose(rule, rank, nm, step - 1)
            if r == 0:
                continue
            if not dead:
                selected_rows(lang, x, sel, r, post, work)
            for i in range(r):
                j = sel[i]
                if sample:
                    v = rank.drawn[j - first]  # a draw made while scoring, or -1
                    if v < 0:
                        v = _draw(marg, j, T, _uniform(ck, j, _DRAW), rank.row)
                    x[j] = v
                lr = _log_r(marg, j, T, x[j], rank.row)
                logp += lr
                term -= lr
                step_of[j] = calls
                newf[j] = True
            term, dead = end_step(lang, conf, x, sel[:r], post, work, term, dead)
            left -= r
    return SequenceResult(calls, term, dead, logp)


@jit(nogil=True)
def _kernel(lang, rule, sample, keys, run, vocab_size, lo, hi):
    """Sequences ``lo..hi-1`` of ``run`` (an :class:`~numerics.sampling._adaptive_numba.AdaptiveRun`);
    releases the GIL for the chunk threads."""
    L = run.tokens.shape[1]
    B = rule.block
    post = new_posterior(L, vocab_size)
    work = new_workspace(lang, L, vocab_size)
    rank = Ranking(np.empty(B, dtype=np.int64), np.empty(B, dtype=np.int64), np.empty(B, dtype=np.int64),
                   np.empty(B, dtype=np.int64), np.empty(B, dtype=np.int64), np.empty(_PARTIAL, dtype=np.int64),
                   np.empty(_PARTIAL, dtype=np.int64), np.empty(vocab_size))
    for b in range(lo, hi):
        store(run, b, _decode(lang, rule, sample, SequenceIO(run.tokens[b], run.steps[b], keys[b]), post, work, rank))


def decoder_run(language, rule: DecoderRule, keys: np.ndarray, tokens: np.ndarray, *, sample: bool,
                path: str = "auto") -> AdaptiveRun:
    """Run the monotone decoder ``rule`` on ``n`` sequences with stream ``keys`` ``(n,)`` uint64.

    ``sample=True`` draws the tokens into ``tokens`` (``(n, L)`` int64, C-contiguous, held by the
    result); ``sample=False`` replays the rule along the given ``tokens``. Either way the run's
    ``log_p`` is ``log p(x)`` along the one reveal path of a path-deterministic rule (the caller
    checks it is one before reading it as ``log p(x)``). ``path`` as in
    :func:`~numerics.sampling._adaptive_paths.path_arrays`.
    """
    if tokens.ndim != 2 or tokens.dtype != np.int64 or not tokens.flags.c_contiguous:
        raise ValueError("tokens must be a C-contiguous (n, L) int64 array (the kernel writes into it)")
    lang = path_arrays(language, tokens.shape[1], path)
    run = new_run(tokens)
    args = (lang, rule, bool(sample), np.ascontiguousarray(keys, np.uint64), run, int(language.vocab_size))
    run_chunks(_kernel, tokens.shape[0], args)
    return run


# ----- ReMDM: conditioning from scratch on the current revealed set -------------------------------


@jit
def _condition_chain(lang, x, post, work, want):
    """``post.marginals[j]`` for every ``j`` with ``want[j]``, given the revealed ``x`` (``post.revealed``);
    returns False when the revealed tokens are jointly impossible (then nothing is written)."""
    rev = post.revealed
    L = rev.shape[0]
    V = work.row.shape[1]
    prev = -1
    for j in range(L):  # q(x_S) > 0: the first revealed token and every link between consecutive ones
        if rev[j]:
            w = lang.powers[j + 1, V, x[j]] if prev < 0 else lang.powers[j - prev, x[prev], x[j]]
            if not w > 0.0:
                return False
            prev = j
    nxt = L
    for j in range(L - 1, -1, -1):
        if rev[j]:
            nxt = j
        else:
            work.right[j] = nxt
    prev = -1
    for j in range(L):
        if rev[j]:
            prev = j
        elif want[j]:
            _chain_row(lang, _token_at(x, prev, V), _token_at(x, work.right[j], V), j - prev, work.right[j] - j,
                       post.marginals, j)
    return True


@jit
def _condition_interval(lang, x, post, work, want):
    rev = post.revealed
    l = lang.interval_length
    for j in range(rev.shape[0]):  # every revealed token consistent with its revealed partners
        if rev[j]:
            if _interval_row(l, x, j, rev, work.row, 0) == 0 or work.row[0, x[j]] == 0.0:
                return False
    for j in range(rev.shape[0]):
        if want[j]:
            _interval_row(l, x, j, rev, post.marginals, j)
    return True


@jit
def _condition_segment(lang, x, post, work, want):
    rev = post.revealed
    alpha, beta, pred = work.alpha, work.beta, work.predictive
    L, S = alpha.shape
    for j in range(L):
        if j == 0:
            pred[:] = lang.initial
        else:
            _push(lang, alpha, j - 1, pred)
        if rev[j]:
            apply_evidence(lang, pred, x[j])
        if _normalize(pred) == 0.0:
            return False
        alpha[j] = pred
    beta[L - 1, :] = 1.0 / S
    for j in range(L - 2, -1, -1):
        _pull(lang, beta, j, x[j + 1] if rev[j + 1] else -1)
    for j in range(L):
        if want[j]:
            _marginal(lang, work, j, post.marginals)
    return True


condition = by_path(_condition_chain, _condition_interval, _condition_segment)


@jit
def _remdm(lang, rule, seq, post, work, want):
    """One ReMDM sequence (a position masked after the last step keeps ``steps`` 0)."""
    x, step_of, key = seq.tokens, seq.steps, seq.key
    marg, rev = post.marginals, post.revealed
    T = rule.temperature
    L = x.shape[0]
    V = marg.shape[1]
    rev[:] = False
    x[:] = 0
    step_of[:] = 0
    row = np.empty(V)
    for i in range(1, rule.sigma.shape[0] + 1):
        ck = _call_key(key, i)
        any_new = False
        for j in range(L):  # the step's coins, from the state before it
            if rev[j]:
                want[j] = False
            else:
                want[j] = _uniform(ck, j, _UNMASK) < rule.reveal[i - 1]
                any_new |= want[j]
        if any_new and not condition(lang, x, post, work, want):
            for j in range(L):
                if want[j]:
                    marg[j, :] = 1.0 / V
        for j in range(L):
            if rev[j]:
                if _uniform(ck, j, _REMASK) < rule.sigma[i - 1]:
                    rev[j] = False
                    x[j] = 0
                    step_of[j] = 0
            elif want[j]:
                x[j] = _draw(marg, j, T, _uniform(ck, j, _DRAW), row)
                step_of[j] = i
        for j in range(L):
            if want[j]:
                rev[j] = True


@jit(nogil=True)
def _remdm_kernel(lang, rule, keys, run, vocab_size, lo, hi):
    L = run.tokens.shape[1]
    post = new_posterior(L, vocab_size)
    work = new_workspace(lang, L, vocab_size)
    want = np.zeros(L, dtype=np.bool_)
    for b in range(lo, hi):
        _remdm(lang, rule, SequenceIO(run.tokens[b], run.steps[b], keys[b]), post, work, want)
        run.calls[b] = rule.sigma.shape[0]
        run.chain_rule[b] = np.nan
        run.log_p[b] = np.nan


def remdm_run(language, rule: RemdmRule, keys: np.ndarray, length: int) -> AdaptiveRun:
    """Sample ``n = keys.size`` sequences of ReMDM ``rule`` (:class:`RemdmRule`) with stream ``keys``;
    a position still masked after the last step (a schedule error) has ``steps`` 0."""
    lang = path_arrays(language, int(length))
    run = new_run(np.zeros((keys.size, int(length)), dtype=np.int64))
    args = (lang, rule, np.ascontiguousarray(keys, np.uint64), run, int(language.vocab_size))
    run_chunks(_remdm_kernel, keys.size, args)
    return run

