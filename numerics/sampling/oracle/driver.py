"""The reveal process of the oracle factorized sampler, sequence by sequence: sampling and scoring.

One pass over a sequence processes its reveal steps in order (``docs/methods/sampling.md``). At
step ``i`` the new positions ``j_1 < .. < j_k`` (``tau_i``) need the posterior marginals
``q(x_j | x_{tau_<i})``: the forward and backward messages under the *old* evidence (positions
revealed at steps ``< i``), from the message store of :mod:`numerics.messages.store`.
The new positions are swept left to right with two forward vectors: ``alpha_old`` (old evidence;
gives the sampler's marginal ``q(x_j | x_{tau_<i})``) and ``alpha_new`` (old evidence plus the
new tokens to the left; gives the chain-rule factor ``q(x_j | x_{tau_<i}, x_{j_1..j_{m-1}})``).
Hence per sequence (:class:`RevealScores`)

* ``log p(x | tau) = sum_i sum_{j in tau_i} log q(x_j | x_{tau_<i})`` (the factorized law of the
  instance; ``-inf`` outside its support),
* ``log q(x) = sum_i sum_m log q(x_{j_m} | x_{tau_<i}, x_{j_<m})`` (chain rule, a check), and
* ``log q(x) - log p(x | tau) = sum_i [log q(x_{tau_i} | x_{tau_<i}) - sum_{j in tau_i} log q(x_j | x_{tau_<i})]``
  accumulated term by term (no cancellation of two large numbers; steps revealing one position
  contribute exactly 0): the per-sample term of the Jensen bound ``E_tau KL(q || p(.|tau))``.

A sampled step whose new tokens are jointly impossible (a chain-rule factor 0) leaves the
sequence outside ``supp q``; from the next step on it draws uniformly, the convention of
:mod:`numerics.sampling.samplers`.

A sampling pass (:func:`reveal_sample`) draws from the marginals under the old evidence only;
``alpha_new`` and the chain rule serve it just to find jointly impossible tokens. For a language
of full support (:func:`full_support`: ``q(x) > 0`` for every ``x``) there are none, so its
sampling pass skips them (:attr:`RevealMode.chain_rule`; the same tokens). The store's messages
restart at n-gram separators, so an impossible step cannot be found later from the old evidence
alone: a language with zeros keeps the chain rule.

The plain reference is the generic sampler with the NumPy masked forward-backward; the tests
compare the two sample by sample. Sequences run in parallel chunks (:mod:`numerics._threads`).

For a dense HMM and a dense-layout n-gram :func:`reveal_sequence` is compiled without numba's
reference counts (:func:`~numerics.messages.dispatch.by_kind`, ``_nrt=False``; it allocates
nothing), and with it, by numba's inheritance of that flag, the message walks it calls
(:func:`~numerics.messages.store.advance`, ``alpha_query``, ``beta_query``): their row
views (``msgs.alpha[cur]``, ``msgs.beta[r]``) and tuple fields took two atomic operations each per
crossing, about a fifth of the hmm passes and 4-8% of the 4gram ones (paired, one thread). A sparse
n-gram keeps them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numerics._jit import jit
from numerics._threads import run_chunks
from numerics.draws import inverse_cdf
from numerics.languages.arrays import HMMArrays, KernelArrays, NGramArrays, SparseNGramArrays, kernel_arrays
from numerics.languages.hmm import Language
from numerics.messages.dispatch import by_kind
from numerics.messages.jumps import language_powers, no_powers
from numerics.messages.steps import Evidence, copy_into, observe, token_marginal
from numerics.messages.store import (
    Messages,
    Scratch,
    advance,
    alpha_between,
    alpha_query,
    beta_query,
    invalidate,
    invalidate_alpha,
    invalidate_beta,
    new_messages,
    new_scratch,
)

__all__ = [
    "RevealScores", "SequenceScore", "RevealVectors", "RevealMode", "SequenceArrays", "RevealBatch", "Workspace",
    "new_workspace", "reveal_sequence", "reveal_sample", "reveal_score", "full_support",
]


class RevealScores(NamedTuple):
    """Per-sequence scores of tokens ``x`` under reveal steps ``tau`` (module docstring).

    Attributes
    ----------
    log_p : (B,) float64
        ``log p(x | tau)``, the factorized law of the instance (NaN when single-reveal steps were skipped).
    log_q : (B,) float64
        ``log q(x)`` by the chain rule along the reveal order; ``-inf`` outside ``supp q`` (NaN when skipped).
    jensen : (B,) float64
        ``log q(x) - log p(x | tau)`` accumulated step by step: the Jensen-bound term.
    """

    log_p: np.ndarray
    log_q: np.ndarray
    jensen: np.ndarray


class SequenceScore(NamedTuple):
    """The three scores of one sequence (fields as in :class:`RevealScores`)."""

    log_p: float
    log_q: float
    jensen: float


class RevealVectors(NamedTuple):
    """The vectors of the reveal loop of :func:`reveal_sequence`.

    Attributes
    ----------
    alpha_old, alpha_new : (S,) float64
        Forward messages under the old evidence, and under the old evidence plus the new tokens
        to the left (module docstring).
    marginal : (V,) float64
        An unnormalized token posterior.
    uniform : (V,) float64
        ``1 / V`` everywhere: the draw of an undefined posterior.
    alpha_stop : (S,) float64
        ``alpha`` (old evidence) at the last observed position before the latest new position
        (:func:`~numerics.messages.store.alpha_between`).
    """

    alpha_old: np.ndarray
    alpha_new: np.ndarray
    marginal: np.ndarray
    uniform: np.ndarray
    alpha_stop: np.ndarray


class RevealMode(NamedTuple):
    """What a reveal pass does (the same for every sequence of a batch).

    Attributes
    ----------
    sample : bool
        Draw the tokens (``x[j]`` is the inverse CDF at ``U[j]`` of its marginal) instead of reading them.
    chain_rule : bool
        Run ``alpha_new`` and the chain rule (``log q``, the Jensen term, finding jointly impossible
        tokens); without it ``log_q`` and ``jensen`` are NaN. Only a sampling pass on a language of
        :func:`full_support` may leave it out (module docstring).
    skip_single : bool
        Scoring: a step revealing one position only invalidates messages (its Jensen term is
        exactly 0); ``log_p`` and ``log_q`` are then NaN.
    vocab_size : int
        ``V``.
    """

    sample: bool
    chain_rule: bool
    skip_single: bool
    vocab_size: int


class SequenceArrays(NamedTuple):
    """One sequence of a batch.

    Attributes
    ----------
    reveal_steps : (L,) int64
        ``tau``: the step revealing each position.
    order_idx : (L,) int64
        The positions sorted by (step, position).
    tokens : (L,) int64
        ``x``: written when sampling, else read.
    uniforms : (L,) float64
        The token draws' uniforms (read only when sampling).
    """

    reveal_steps: np.ndarray
    order_idx: np.ndarray
    tokens: np.ndarray
    uniforms: np.ndarray


class RevealBatch(NamedTuple):
    """A batch of sequences: ``reveal_steps``, ``tokens`` and ``uniforms``, each ``(B, L)`` (as in :class:`SequenceArrays`)."""

    reveal_steps: np.ndarray
    tokens: np.ndarray
    uniforms: np.ndarray


class Workspace(NamedTuple):
    """The reused memory of one thread: :class:`~numerics.messages.store.Messages`,
    :class:`~numerics.messages.store.Scratch` and :class:`RevealVectors`."""

    msgs: Messages
    scratch: Scratch
    vectors: RevealVectors


@jit
def new_workspace(length, n_states, vocab_size):
    """A :class:`Workspace` for sequences of ``length`` positions (inside or outside numba)."""
    uniform = np.empty(vocab_size)
    for v in range(vocab_size):
        uniform[v] = 1.0 / vocab_size
    vectors = RevealVectors(np.empty(n_states), np.empty(n_states), np.empty(vocab_size), uniform, np.empty(n_states))
    return Workspace(new_messages(length, n_states), new_scratch(n_states), vectors)


def _reveal_sequence(lang, powers, mode, seq, work):
    """Run the reveal steps of one sequence ``seq`` (:class:`SequenceArrays`); returns its :class:`SequenceScore`.

    ``mode`` (:class:`RevealMode`) says whether the tokens are drawn or read; ``work`` is a
    :class:`Workspace` (its messages as in :mod:`~numerics.messages.store`).
    """
    reveal_steps, order_idx, x, U = seq.reveal_steps, seq.order_idx, seq.tokens, seq.uniforms
    msgs, scratch, vectors = work.msgs, work.scratch, work.vectors
    sample, skip_single = mode.sample, mode.skip_single
    chain = mode.chain_rule
    L = reveal_steps.shape[0]
    V = vectors.marginal.shape[0]
    va, vn, m, keep = vectors.alpha_old, vectors.alpha_new, vectors.marginal, vectors.alpha_stop
    aval, bval = msgs.alpha_valid, msgs.beta_valid
    aval[:] = False
    bval[:] = False
    dead = False
    log_p_tau = np.nan if skip_single else 0.0
    log_q = 0.0 if chain and not skip_single else np.nan
    jensen = 0.0 if chain else np.nan
    ptr = 0
    while ptr < L:
        i = reveal_steps[order_idx[ptr]]
        end = ptr
        while end < L and reveal_steps[order_idx[end]] == i:
            end += 1
        new = Evidence(reveal_steps, x, i + 1, -1)  # the evidence after this step (its observed positions)
        if skip_single and end - ptr == 1:  # contributes exactly 0 to the Jensen term: only invalidate
            invalidate(lang, new, msgs, order_idx[ptr])
            ptr = end
            continue
        if dead:  # uniform draws (the samplers' convention for an undefined posterior)
            for r in range(ptr, end):
                j = order_idx[r]
                if sample:
                    x[j] = inverse_cdf(vectors.uniform, U[j])
                log_p_tau += np.log(1.0 / V)
            ptr = end
            continue
        old = Evidence(reveal_steps, x, i, -1)
        # backward messages (old evidence) at every new position, right to left
        for r in range(end - 1, ptr - 1, -1):
            beta_query(lang, powers, old, msgs, scratch, order_idx[r])
        j1 = order_idx[ptr]
        stop = alpha_query(lang, powers, old, msgs, scratch, va, j1, keep)
        for r in range(ptr, end):  # the alphas the new tokens change (the betas after the draws)
            invalidate_alpha(lang, new, msgs, order_idx[r])
        prev = -1
        step_dead = False
        for r in range(ptr, end):
            j = order_idx[r]
            if r == ptr:
                if chain:
                    copy_into(va, vn)
            else:
                shielded, stop = alpha_between(lang, powers, old, msgs, scratch, va, prev, j, stop, keep)
                if chain and not step_dead:
                    if shielded:  # a known window between prev and j: the new tokens to the left do not matter
                        copy_into(va, vn)
                    else:
                        advance(lang, powers, Evidence(reveal_steps, x, i + 1, j), msgs, scratch, vn, prev, j, True)
            prev = j
            tot_old = token_marginal(lang, va, msgs.beta[j], m)  # q(x_j = . | x_{tau_<i}), unnormalized
            if sample:
                x[j] = inverse_cdf(m, U[j])
            xj = x[j]
            lo = np.log(m[xj] / tot_old) if m[xj] > 0.0 else -np.inf
            log_p_tau += lo
            if not chain:
                if r == ptr:  # alpha at j1 under the new evidence (no new token to its left): kept for the next steps
                    copy_into(va, vn)
                    observe(lang, vn, xj)
                    copy_into(vn, msgs.alpha[j])
                    aval[j] = True
                continue
            if step_dead:
                continue
            if r > ptr:  # chain-rule factor q(x_j | x_{tau_<i}, new tokens to the left)
                tot_new = token_marginal(lang, vn, msgs.beta[j], m)
                ln = np.log(m[xj] / tot_new) if (tot_new > 0.0 and m[xj] > 0.0) else -np.inf
            else:
                ln = lo
            if ln == -np.inf:
                step_dead = True
                continue
            log_q += ln
            jensen += ln - lo
            observe(lang, vn, xj)
            copy_into(vn, msgs.alpha[j])
            aval[j] = True
        for r in range(ptr, end):
            invalidate_beta(lang, new, msgs, order_idx[r])
        if step_dead:  # the revealed tokens are jointly impossible: outside supp q from here on
            dead = True
            log_q = -np.inf
            jensen = np.nan
            aval[j1:] = False
        ptr = end
    return SequenceScore(log_p_tau, log_q, jensen)


# the same loop for every kind; the dense HMM and dense n-gram ones without reference counts (module docstring)
_reveal_sequence_nrt_free = jit(nrt=False)(_reveal_sequence)
reveal_sequence = by_kind(_reveal_sequence_nrt_free, _reveal_sequence_nrt_free, jit(_reveal_sequence))


@jit(nogil=True)
def _reveal_chunk(lang, powers, mode, batch, scores, lo, hi):
    """Sequences ``lo..hi-1`` of ``batch`` (:class:`RevealBatch`) into ``scores``; releases the GIL so threads run chunks in parallel."""
    L = batch.reveal_steps.shape[1]
    work = new_workspace(L, lang.initial.shape[0], mode.vocab_size)
    for b in range(lo, hi):
        steps = batch.reveal_steps[b]
        seq = SequenceArrays(steps, np.argsort(steps * L + np.arange(L)), batch.tokens[b], batch.uniforms[b])
        out = reveal_sequence(lang, powers, mode, seq, work)
        scores.log_p[b] = out.log_p
        scores.log_q[b] = out.log_q
        scores.jensen[b] = out.jensen


def _run(language: Language, sample: bool, skip_single: bool, reveal_steps: np.ndarray, x: np.ndarray, U: np.ndarray,
         layout: str) -> RevealScores:
    B = reveal_steps.shape[0]
    scores = RevealScores(np.empty(B), np.empty(B), np.empty(B))
    lang = kernel_arrays(language, layout)
    powers = no_powers() if isinstance(lang, SparseNGramArrays) else language_powers(language, reveal_steps.shape[1])
    mode = RevealMode(sample, not (sample and full_support(lang)), skip_single, language.vocab_size)
    run_chunks(_reveal_chunk, B, (lang, powers, mode, RevealBatch(reveal_steps, x, U), scores))
    return scores


def full_support(lang: KernelArrays) -> bool:
    """Whether ``q(x) > 0`` for every sequence ``x`` (sufficient conditions, from the kernel arrays).

    Dense HMM: every emission positive (some state path has positive probability). n-gram: every
    conditional positive and every token the newest of some window of positive initial mass. A
    sparse n-gram has zeros by construction: False.
    """
    if isinstance(lang, HMMArrays):
        return bool(np.all(lang.emission_t > 0.0))
    if isinstance(lang, NGramArrays):
        V = lang.conditional.shape[1]
        return bool(np.all(lang.conditional > 0.0) and np.all(lang.initial.reshape(-1, V).sum(axis=0) > 0.0))
    return False


def _check_steps(reveal_steps: np.ndarray) -> np.ndarray:
    reveal_steps = np.ascontiguousarray(reveal_steps, dtype=np.int64)
    if reveal_steps.ndim != 2 or reveal_steps.shape[1] < 1:
        raise ValueError(f"reveal_steps must be (B, L) with L >= 1, got shape {reveal_steps.shape}")
    if reveal_steps.size and reveal_steps.min() < 1:
        raise ValueError("reveal steps must be >= 1")
    return reveal_steps


def reveal_sample(language: Language, reveal_steps: np.ndarray, uniforms: np.ndarray, *, layout: str = "auto") -> np.ndarray:
    """Tokens of the oracle factorized sampler for given ``reveal_steps`` and token ``uniforms`` (both ``(B, L)``).

    Position ``j`` (revealed at step ``reveal_steps[b, j]``) gets the float64 inverse CDF at
    ``uniforms[b, j]`` of ``q(x_j | x_{tau_<i})``; see the module docstring. ``layout``: the
    n-gram layout of :func:`~numerics.languages.arrays.kernel_arrays` (``auto``: sparse when the
    conditional is mostly zeros).
    """
    reveal_steps = _check_steps(reveal_steps)
    U = np.ascontiguousarray(uniforms, dtype=np.float64)
    if U.shape != reveal_steps.shape:
        raise ValueError(f"uniforms {U.shape} and reveal_steps {reveal_steps.shape} differ in shape")
    x = np.zeros(reveal_steps.shape, dtype=np.int64)
    _run(language, True, False, reveal_steps, x, U, layout)
    return x


def reveal_score(language: Language, reveal_steps: np.ndarray, tokens: np.ndarray, *, chain: bool = False,
                 layout: str = "auto") -> RevealScores:
    """Per sequence ``log p(x | tau)``, ``log q(x)`` and the Jensen term ``log q(x) - log p(x | tau)``.

    ``tokens`` ``x`` are given (e.g. ``x ~ q`` for the Jensen bound); ``reveal_steps`` is the
    instance ``tau``. Steps revealing a single position contribute exactly 0 to the Jensen term;
    unless ``chain=True`` they are skipped (only their invalidations are kept), which makes the
    cost scale with the number of multi-position steps, and ``log_p``, ``log_q`` are then NaN.
    ``log q(x)`` comes from the chain rule along the reveal order and is ``-inf`` for ``x``
    outside ``supp q``. ``layout`` as in :func:`reveal_sample`.
    """
    reveal_steps = _check_steps(reveal_steps)
    x = np.ascontiguousarray(tokens, dtype=np.int64)
    if x.shape != reveal_steps.shape:
        raise ValueError(f"tokens {x.shape} and reveal_steps {reveal_steps.shape} differ in shape")
    V = language.vocab_size
    if np.any((x < 0) | (x >= V)):
        raise ValueError(f"tokens must be in 0..{V - 1}")
    return _run(language, False, not chain, reveal_steps, x.copy(), np.zeros(reveal_steps.shape), layout)
