"""Lossless decoders with the oracle: exact output law, a random number of rounds and calls (class D).

DECODERS.md section 11, ``docs/methods/lossless.md``. Each decoder reads the oracle through the
queries of :mod:`numerics.inference.queries` (the left-to-right predictive filter; the masked
forward-backward for Spiffy's canvases; ASSD in a random order on the per-position message store,
:mod:`numerics.sampling._assd_store`) and reports per sequence

* ``rounds``: sequential network passes (a pass that evaluates many positions or a batch of states
  at once counts one round), and
* ``calls``: network evaluations, a verification counted as the method counts it (below).

The decoders, with the order of generation left to right (the committed positions are a prefix ``x_<p``;
ASSD's default order is a uniformly random permutation ``sigma``, the same rule with ``x_<p`` read as
``x_{sigma(<p)}`` and the window as the order's next ``w`` positions):

* :class:`Assd` (any-subset speculative decoding, Guo & Ermon, arXiv 2504.20456): draft the next
  ``w = min(k, L - p)`` positions independently from their marginals ``q(x_j | x_<p)`` (one pass),
  verify with the joint density in one causal pass (``q(x_j | x_<p, y_<j)`` for every drafted ``j``),
  accept ``y_j`` with probability ``min(1, q/p)`` in order, and at the first rejection draw from the
  residual ``(q - p)_+``. Output law exactly ``q``. Calls: 2 per round (1 when ``w = 1``, whose draft is
  exact); since the first drafted token is always accepted (its draft law is its conditional), a round
  of 2 calls yields at least 2 tokens and calls never exceed ``L``.
* :class:`SelfSpec` (``LinearSpec``): draft the argmax of each of the next ``w`` marginals (one pass),
  verify with the causal left-to-right argmax ``argmax q(x_j | x_<p, y_<j)`` (one pass); keep the
  longest agreeing prefix and the verifier's token at the first disagreement. Output: exactly greedy
  left-to-right decoding (a point mass). Calls 2 per round (1 when ``w = 1``).
* :class:`Autospec` (sequence-level self-speculation with shared randomness): one uniform ``u_j`` per
  position is drawn up front; the speculation ``z`` starts as the inverse-CDF draws of the marginals
  ``q(x_j)`` (one pass of ``L`` queries); each round queries, in parallel, the conditional of every
  uncommitted position given the committed prefix and the speculation before it, redraws
  ``z'_j = F^{-1}(u_j)`` from it, commits the longest prefix on which ``z'`` agrees with ``z`` plus the
  first disagreeing ``z'_j`` (its conditioning is then exact), and speculates ``z'`` for the rest
  (past a speculated token of conditional probability 0 the conditionals are taken with it masked).
  The output is the sequential inverse-CDF sampler at ``u``: exactly ``q``. Calls: the conditionals
  queried (``L - p`` a round). This is the autospeculation principle of Anari et al. (arXiv
  2511.07869: the speculation is built from the same oracle and accepted at the sequence level); the
  paper's own pseudo-code was not available when this was written, so the rule above is this
  engine's, and its rounds are *measured* against the paper's ``O~(sqrt(L))`` claim, not assumed.
* :class:`Spiffy` (Agrawal et al., arXiv 2509.18085), lossless with respect to a base sampler of the
  registry (``random``: the i.i.d. schedule sampler over ``N`` steps, below; a block decoder such as
  ``llada`` or ``fast-dllm``: :class:`BlockChain`, its step law enumerated): from a canvas whose marginals
  are known, draft ``D`` base steps with those (stale) marginals, evaluate the ``D`` drafted canvases in
  one batched pass, accept step ``j`` with ``min(1, P/Q)`` (the base step's value law with fresh
  marginals over the stale ones; the reveal sets have the same law in both), and at the first
  rejection redraw the step's values from the residual ``(P - Q)_+`` (exactly, by rejection from
  ``P``). A chain of drafts (a draft graph of one path). Output law exactly the base sampler's.
  Rounds: sequential passes (one per round, plus one to evaluate a redrawn canvas); calls: canvases
  evaluated (``D`` per round).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from numerics._jit import jit
from numerics.draws import inverse_cdf
from numerics.inference.forward_backward import masked_forward_backward
from numerics.inference.queries import PrefixOracle, _kernel_hmm
from numerics.sampling.registry import DecoderSpec, Option, spec
from numerics.schedules import Schedule

__all__ = ["ASSD_ORDERS", "ASSD_STORE_BYTES", "LOSSLESS", "MAX_STEP_DRAWS", "SPIFFY_BASES", "Assd", "Autospec", "BlockChain", "LosslessError",
           "LosslessSample", "SelfSpec", "Spiffy", "lossless_spec",
           "inverse_cdf_numpy", "inverse_cdf_vec"]

#: The base samplers Spiffy is lossless over (the registry's names): the random-order sampler, and the
#: block decoders whose exact law the engine's DP computes (numerics.exact.decoders).
SPIFFY_BASES = ("random", "llada", "fast-dllm", "eb", "llada2", "dream", "dus", "sdar", "dinfer")


class LosslessError(ValueError):
    """A lossless decoder's parameter does not fit (named cause)."""


@dataclass(frozen=True)
class LosslessSample:
    """``n`` sequences of a lossless decoder and what each cost.

    Attributes
    ----------
    tokens : (n, L) int64
    rounds : (n,) int64
        Sequential network passes.
    calls : (n,) int64
        Network evaluations (a verification counted as the method counts it; module docstring).
    """

    tokens: np.ndarray
    rounds: np.ndarray
    calls: np.ndarray


@jit
def _inverse_cdf_all(weights, uniforms, out):
    """``out[r] = inverse_cdf(weights[r], uniforms[r])`` for every row of ``weights`` ``(n, V)``."""
    for r in range(weights.shape[0]):
        out[r] = inverse_cdf(weights[r], uniforms[r])


def inverse_cdf_vec(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """:func:`numerics.draws.inverse_cdf` of every row of ``probs`` ``(..., V)`` at ``u`` ``(...)``: ``(...)`` int64.

    The index ``v`` with ``c_{v-1} <= u c_{V-1} < c_v`` (cumulative sums left to right); should
    ``u c_{V-1}`` round up to the total, the last index of positive weight. Rows need a positive sum.
    The engine's compiled inverse CDF over the flattened rows; :func:`inverse_cdf_numpy` is its twin.
    """
    V = probs.shape[-1]
    flat = np.ascontiguousarray(probs, dtype=np.float64).reshape(-1, V)
    out = np.empty(flat.shape[0], dtype=np.int64)
    _inverse_cdf_all(flat, np.ascontiguousarray(u, dtype=np.float64).reshape(-1), out)
    return out.reshape(probs.shape[:-1])


def inverse_cdf_numpy(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The plain NumPy twin of :func:`inverse_cdf_vec` (cumulative sums and one comparison per index)."""
    c = np.cumsum(probs, axis=-1)
    idx = (c <= (u * c[..., -1])[..., None]).sum(axis=-1)
    V = probs.shape[-1]
    over = idx >= V
    if np.any(over):
        last = V - 1 - np.argmax((probs[over] > 0)[..., ::-1], axis=-1)
        idx[over] = last
    return idx


def _check_width(k: int, length: int, name: str) -> None:
    if int(k) != k or not 1 <= k <= length:
        raise LosslessError(f"{name}: draft length {k!r} must be an integer in 1..L = {length}")


def _take(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``a[b, m, idx[b, m]]`` of ``a`` ``(B, K, V)``."""
    return np.take_along_axis(a, idx[..., None], axis=-1)[..., 0]


def _first_false(ok: np.ndarray) -> np.ndarray:
    """Index of the first False of each row of ``ok`` ``(B, K)`` (``K`` when none)."""
    return np.where(ok.all(axis=1), ok.shape[1], np.argmin(ok, axis=1))


@dataclass(frozen=True)
class _LeftToRight:
    """The loop shared by the prefix decoders: per round a window of ``w = min(k, L - p)`` positions."""

    draft_length: int
    kind: ClassVar[str] = "lossless"

    @property
    def label(self) -> str:
        return f"{self.name}, k={self.draft_length}"

    def check_length(self, length: int) -> None:
        _check_width(self.draft_length, length, self.name)

    def sample(self, language, length: int, n: int, rng: np.random.Generator) -> LosslessSample:
        """``n`` sequences of ``length`` tokens (``rng``: every draw)."""
        self.check_length(length)
        oracle = PrefixOracle.of(language)
        tokens = np.zeros((n, length), dtype=np.int64)
        rounds = np.zeros(n, dtype=np.int64)
        calls = np.zeros(n, dtype=np.int64)
        pos = np.zeros(n, dtype=np.int64)
        f = oracle.start(n)
        rows = np.arange(n)
        while rows.size:
            width = np.minimum(self.draft_length, length - pos[rows])
            new, count, cost = self._round(oracle, f, width, rng)
            for m in range(int(count.max())):
                sel = m < count
                tokens[rows[sel], pos[rows[sel]] + m] = new[sel, m]
                g, _ = oracle.advance(f, new[:, m])
                f = np.where(sel[:, None], g, f)
            pos[rows] += count
            rounds[rows] += cost
            calls[rows] += cost
            alive = pos[rows] < length
            rows, f = rows[alive], f[alive]
        return LosslessSample(tokens, rounds, calls)

    def _round(self, oracle, f, width, rng):  # pragma: no cover - abstract
        raise NotImplementedError


#: ASSD's orders of generation: a uniformly random permutation per sequence (any subset), or left to right.
ASSD_ORDERS = ("random", "left-to-right")
#: Most bytes of ASSD's per-sequence message stores in a random order (``n L (2 S + 2) 8``); above, the
#: forward-backward per canvas (:meth:`Assd.sample_forward_backward`, the same sequences, ``O(L^2)`` each).
ASSD_STORE_BYTES = 1 << 30


@dataclass(frozen=True)
class Assd(_LeftToRight):
    """Any-subset speculative decoding (module docstring); ``draft_length`` = ``k``, ``order`` of generation
    (:data:`ASSD_ORDERS`): ``random`` (a uniform permutation ``sigma`` per sequence, drawn first) or
    ``left-to-right`` (the prefix filter's fast path)."""

    order: str = "random"
    name: ClassVar[str] = "assd"

    def __post_init__(self) -> None:
        if self.order not in ASSD_ORDERS:
            raise LosslessError(f"assd: unknown order {self.order!r}; choose one of {ASSD_ORDERS}")

    @property
    def label(self) -> str:
        return f"assd, k={self.draft_length}" + (", random order" if self.order == "random" else "")

    def sample(self, language, length: int, n: int, rng: np.random.Generator) -> LosslessSample:
        """``n`` sequences of ``length`` tokens (``rng``: every draw, the orders first).

        Random order: on the per-position message store (:mod:`numerics.sampling._assd_store`) when the
        stores of the ``n`` sequences fit in :data:`ASSD_STORE_BYTES`, else by a masked forward-backward
        per canvas (:meth:`sample_forward_backward`); the same draws in the same order, so the same
        sequences up to round-off in the posteriors.
        """
        if self.order == "left-to-right":
            return super().sample(language, length, n, rng)
        self.check_length(length)
        from numerics.languages.arrays import SparseNGramArrays, kernel_arrays
        from numerics.sampling._assd_store import store_bytes

        arrays = kernel_arrays(_kernel_hmm(language))
        if store_bytes(n, length, arrays.initial.shape[0]) > ASSD_STORE_BYTES:
            return self.sample_forward_backward(language, length, n, rng)
        return self._sample_store(language, arrays, isinstance(arrays, SparseNGramArrays), length, n, rng)

    def _sample_store(self, language, arrays, sparse: bool, length: int, n: int, rng) -> LosslessSample:
        from numerics._threads import run_chunks
        from numerics.messages.jumps import language_powers, no_powers
        from numerics.sampling import _assd_store as ks

        powers = no_powers() if sparse else language_powers(_kernel_hmm(language), length)
        V = language.vocab_size
        order = np.argsort(rng.random((n, length)), axis=1)  # a uniform permutation per sequence
        st = ks.new_stores(order, arrays.initial.shape[0])
        rounds = np.zeros(n, dtype=np.int64)
        pos = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        while rows.size:
            b = rows.size
            at_pos = pos[rows]
            width = np.minimum(self.draft_length, length - at_pos)
            K = int(width.max())
            at = np.minimum(at_pos[:, None] + np.arange(K)[None, :], length - 1)
            win = np.take_along_axis(order[rows], at, axis=1)  # (b, K): the window's positions in order
            inside = np.arange(K)[None, :] < width[:, None]
            marg = np.empty((b, K, V))
            run_chunks(ks.assd_draft, b, (arrays, powers, st, rows, at_pos, win, width, marg))  # the draft pass
            y = inverse_cdf_vec(marg, rng.random((b, K)))
            cond = marg.copy()  # canvas 0 is the draft's own (its conditional is the draft law); past the width: unread
            if K > 1:  # the verify pass
                run_chunks(ks.assd_verify, b, (arrays, powers, st, rows, at_pos, win, width, y, cond))
            count = self._accept(marg, cond, y, width, inside, rng)
            run_chunks(ks.assd_commit, b, (arrays, st, rows, at_pos, win, width, y, count))
            pos[rows] += count
            rounds[rows] += np.where(width == 1, 1, 2)
            rows = rows[pos[rows] < length]
        return LosslessSample(st.tokens, rounds, rounds.copy())

    @staticmethod
    def _accept(marg, cond, y, width, inside, rng) -> np.ndarray:
        """Speculative rejection of the drafts ``y`` ``(b, K)``: the tokens committed per row (``y`` redrawn in place
        from the residual ``(q - p)_+`` at the first rejection)."""
        ratio = _take(cond, y) / _take(marg, y)
        r = _first_false((rng.random(ratio.shape) < ratio) | ~inside)
        rejected = r < width
        if np.any(rejected):
            j = np.flatnonzero(rejected)
            y[j, r[j]] = inverse_cdf_vec(np.maximum(cond[j, r[j]] - marg[j, r[j]], 0.0), rng.random(j.size))
        return np.where(rejected, r + 1, width)

    def sample_forward_backward(self, language, length: int, n: int, rng: np.random.Generator) -> LosslessSample:
        """Random order by a masked forward-backward of every canvas (``O(L)`` per query): the reference of the
        message-store path, and its fallback for stores above :data:`ASSD_STORE_BYTES`."""
        self.check_length(length)
        lang = _kernel_hmm(language)
        order = np.argsort(rng.random((n, length)), axis=1)  # a uniform permutation per sequence
        tokens = np.zeros((n, length), dtype=np.int64)
        masked = np.ones((n, length), dtype=np.bool_)
        rounds = np.zeros(n, dtype=np.int64)
        pos = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        while rows.size:
            b = rows.size
            width = np.minimum(self.draft_length, length - pos[rows])
            K = int(width.max())
            at = np.minimum(pos[rows][:, None] + np.arange(K)[None, :], length - 1)
            win = np.take_along_axis(order[rows], at, axis=1)  # (b, K): the window's positions in order
            inside = np.arange(K)[None, :] < width[:, None]
            bi = np.arange(b)[:, None]
            marg = _marginals(lang, tokens[rows], masked[rows])[bi, win]  # the draft pass: (b, K, V)
            y = inverse_cdf_vec(marg, rng.random((b, K)))
            # the verify pass: canvas m observes the window's drafts before m, q(x_{win m} | x_S, y_<m); canvas 0
            # is the draft's own canvas (its conditional is the draft law), so canvases 1 .. K-1 are computed
            vt = np.repeat(tokens[rows][:, None], K - 1, axis=1)
            vm = np.repeat(masked[rows][:, None], K - 1, axis=1)
            for mm in range(K - 1):  # draft mm is observed in the canvases m > mm
                later = np.arange(mm, K - 1)[None, :]
                vt[bi, later, win[:, mm:mm + 1]] = y[:, mm:mm + 1]
                vm[bi, later, win[:, mm:mm + 1]] = False
            cond = np.empty_like(marg)
            cond[:, 0] = marg[:, 0]
            if K > 1:
                fresh = _marginals(lang, vt.reshape(b * (K - 1), length), vm.reshape(b * (K - 1), length))
                cond[:, 1:] = fresh.reshape(b, K - 1, length, -1)[bi, np.arange(K - 1)[None, :], win[:, 1:]]
            count = self._accept(marg, cond, y, width, inside, rng)
            commit = np.arange(K)[None, :] < count[:, None]
            ci, cm = np.nonzero(commit)
            tokens[rows[ci], win[ci, cm]] = y[ci, cm]
            masked[rows[ci], win[ci, cm]] = False
            pos[rows] += count
            rounds[rows] += np.where(width == 1, 1, 2)
            rows = rows[pos[rows] < length]
        return LosslessSample(tokens, rounds, rounds.copy())

    def _round(self, oracle, f, width, rng):
        K = int(width.max())
        marg = oracle.ahead(f, K)
        y = inverse_cdf_vec(marg, rng.random(marg.shape[:2]))
        cond, ok = oracle.along(f, y)
        py, cy = _take(marg, y), _take(cond, y)
        ratio = np.where(ok, cy / py, 0.0)
        inside = np.arange(K)[None, :] < width[:, None]
        accept = (rng.random(ratio.shape) < ratio) | ~inside
        r = _first_false(accept)
        rejected = r < width
        count = np.where(rejected, r + 1, width)
        if np.any(rejected):
            b = np.flatnonzero(rejected)
            resid = np.maximum(cond[b, r[b]] - marg[b, r[b]], 0.0)
            y[b, r[b]] = inverse_cdf_vec(resid, rng.random(b.size))
        return y, count, np.where(width == 1, 1, 2)


@dataclass(frozen=True)
class SelfSpec(_LeftToRight):
    """``LinearSpec`` self-speculation (module docstring); lossless w.r.t. greedy left-to-right decoding."""

    name: ClassVar[str] = "self-spec"

    def _round(self, oracle, f, width, rng):
        K = int(width.max())
        y = np.argmax(oracle.ahead(f, K), axis=-1)
        cond, _ = oracle.along(f, y)
        yh = np.argmax(cond, axis=-1)
        inside = np.arange(K)[None, :] < width[:, None]
        r = _first_false((y == yh) | ~inside)
        disagree = r < width
        count = np.where(disagree, r + 1, width)
        b = np.flatnonzero(disagree)
        y[b, r[b]] = yh[b, r[b]]
        return y, count, np.where(width == 1, 1, 2)


def greedy_left_to_right(language, length: int) -> np.ndarray:
    """The greedy left-to-right sequence ``x_i = argmax_v q(v | x_<i)`` (lowest index on ties): ``(L,)``."""
    oracle = PrefixOracle.of(language)
    f = oracle.start(1)
    out = np.empty(length, dtype=np.int64)
    for i in range(length):
        out[i] = int(np.argmax(oracle.law(f)[0]))
        f, _ = oracle.advance(f, out[i:i + 1])
    return out


@dataclass(frozen=True)
class Autospec:
    """Sequence-level self-speculation with shared uniforms (module docstring)."""

    kind: ClassVar[str] = "lossless"
    name: ClassVar[str] = "autospec"

    @property
    def label(self) -> str:
        return "autospec"

    def check_length(self, length: int) -> None:
        if int(length) != length or length < 1:
            raise LosslessError(f"autospec: length must be a positive integer, got {length!r}")

    def sample(self, language, length: int, n: int, rng: np.random.Generator) -> LosslessSample:
        self.check_length(length)
        oracle = PrefixOracle.of(language)
        u = rng.random((n, length))
        return self.run(oracle, u)

    @staticmethod
    def run(oracle: PrefixOracle, u: np.ndarray) -> LosslessSample:
        """The decoder at the uniforms ``u`` ``(n, L)`` (deterministic given ``u``)."""
        n, L = u.shape
        z = inverse_cdf_vec(oracle.ahead(oracle.start(n), L), u)  # the first speculation: the marginals
        rounds = np.ones(n, dtype=np.int64)
        calls = np.full(n, L, dtype=np.int64)
        pos = np.zeros(n, dtype=np.int64)
        f = oracle.start(n)
        rows = np.arange(n)
        while rows.size:
            p = pos[rows]
            W = L - int(p.min())
            idx = p[:, None] + np.arange(W)[None, :]
            inside = idx < L
            idx = np.minimum(idx, L - 1)
            spec = np.take_along_axis(z[rows], idx, axis=1)
            cond, _, kept = oracle.along(f, spec, filters=True)  # past an impossible token: as if masked
            new = inverse_cdf_vec(cond, np.take_along_axis(u[rows], idx, axis=1))
            r = _first_false((new == spec) | ~inside)
            width = L - p
            count = np.where(r < width, r + 1, width)
            rounds[rows] += 1
            calls[rows] += width
            go = np.flatnonzero(count < width)  # the rows that go on: commit through the first disagreement
            f, _ = oracle.advance(kept[r[go], go], new[go, r[go]])
            rr, cc = np.nonzero(inside)  # (idx is clipped at L - 1 outside: write the inside entries only)
            z[rows[rr], idx[rr, cc]] = new[rr, cc]
            pos[rows] += count
            rows = rows[go]
        return LosslessSample(z, rounds, calls)


#: Most value assignments ``V^B`` of one step's candidates a block base enumerates (its step law).
MAX_STEP_DRAWS = 1 << 12


class BlockChain:
    """A block decoder of the registry (``llada``, ``fast-dllm``, ...) as a Markov chain on states, one
    step a network call: the base sampler Spiffy keeps the law of.

    A state is ``(codes, block, step)``: ``codes`` the canvas as a tuple (``V`` = masked), the current
    block and the step within it, advanced as the decoder's own sampler advances them (its block
    cursor: a block ends after its fixed steps, or, for a rule that stops there, when it has no
    masked position). :meth:`law` is the step's law given the canvas's marginals, by enumerating the
    ``V^m`` draws of the ``m`` candidates and the rule's selection through ``select_rows`` (random
    scores: a uniform subset of the rule's count; Dream's random selection: its ``selection_law``).
    """

    def __init__(self, decoder, length: int, vocab_size: int):
        self.decoder, self.L, self.V = decoder, int(length), int(vocab_size)
        self.B = decoder.block_of(self.L)
        self.fixed = decoder.fixed_steps(self.L)
        self.prio = decoder.priority(self.L)
        self.n_blocks = self.L // self.B
        if self.V ** self.B > MAX_STEP_DRAWS:
            most = max((b for b in range(1, self.B) if self.V ** b <= MAX_STEP_DRAWS), default=0)
            raise LosslessError(
                f"spiffy over {decoder.name} enumerates the V^B = {self.V}^{self.B} draws of a step, beyond "
                f"{MAX_STEP_DRAWS}: its acceptance ratio is the law of the step's next canvas, a sum over every draw "
                f"of the block's masked positions through the rule's selection, and no bounded form of it is built "
                f"for the block rules; use a block length B with V^B <= {MAX_STEP_DRAWS}"
                + (f" (here B <= {most}: --base-option block_length=B)" if most else "")
                + ", or spiffy over random, which runs at scale")

    def start(self) -> tuple:
        return ((self.V,) * self.L, 0, 0)

    def done(self, state: tuple) -> bool:
        return state[1] >= self.n_blocks

    def canvas(self, state: tuple) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens, masked)`` of a state's canvas (masked tokens 0)."""
        codes = np.array(state[0], dtype=np.int64)
        masked = codes == self.V
        return np.where(masked, 0, codes), masked

    def _advance(self, codes: tuple, block: int, step: int) -> tuple:
        step += 1
        cols = range(block * self.B, (block + 1) * self.B)
        if (self.fixed is not None and step >= self.fixed.size) or (
                self.decoder.stops_when_empty and all(codes[j] != self.V for j in cols)):
            block, step = block + 1, 0
        return (codes, block, step)

    def law(self, state: tuple, marg: np.ndarray) -> dict:
        """``{next state: probability}`` of one step from ``state`` given the marginals ``marg`` ``(L, V)``
        of every masked position (the other rows are not read)."""
        from numerics.sampling.block_decoder import StepRows, step_rows

        codes, block, step = state
        d, V = self.decoder, self.V
        cand = np.array([j for j in range(block * self.B, (block + 1) * self.B) if codes[j] == V], dtype=np.int64)
        m = cand.size
        if m == 0:
            return {self._advance(codes, block, step): 1.0}
        rows = step_rows(marg[cand], d.temperature)
        grid = np.indices((V,) * m).reshape(m, -1).T
        w = np.prod(rows.draw_law[np.arange(m)[None, :], grid], axis=1)
        grid, w = grid[w > 0], w[w > 0]
        prio = self.prio[cand]
        if d.random_selection:
            choices = [d.selection_law(rows, y, prio, step, self.fixed) for y in grid]
        else:
            many = StepRows(*(np.broadcast_to(a, (grid.shape[0],) + a.shape) for a in rows))
            u = np.zeros(grid.shape) if d.random_scores else None  # random scores: only the count is read here
            chosen = d.select_rows(many, grid, u, prio, np.ones(grid.shape, dtype=bool), np.full(grid.shape[0], step),
                                   self.fixed)
            if d.random_scores:  # a uniformly random subset of the rule's count
                subsets = [np.array(c, dtype=np.int64) for c in itertools.combinations(range(m), int(chosen[0].sum()))]
                choices = [[(D, 1.0 / len(subsets)) for D in subsets]] * grid.shape[0]
            else:
                choices = [[(np.flatnonzero(c), 1.0)] for c in chosen]
        out: dict = {}
        for y, wy, ch in zip(grid, w, choices):
            for D, wd in ch:
                nxt = list(codes)
                for i in D:
                    nxt[cand[i]] = int(y[i])
                key = self._advance(tuple(nxt), block, step)
                out[key] = out.get(key, 0.0) + float(wy) * wd
        return out


def _draw(law: dict, rng: np.random.Generator):
    """One key of ``law`` ``{key: weight}`` (weights need not sum to 1) by the engine's inverse CDF."""
    keys = list(law)
    return keys[int(inverse_cdf_vec(np.array([[law[k] for k in keys]]), np.array([rng.random()]))[0])]


@dataclass(frozen=True)
class Spiffy:
    """Spiffy over a base sampler (module docstring): ``base`` (``random``, or a block decoder of the
    registry, :data:`SPIFFY_BASES`, built by ``numerics.sampling.registry.spec(base).build`` with
    ``base_options``), its ``schedule`` of ``N`` steps (``random``; the ``N`` of a base that takes
    steps) and the draft length ``D`` (base steps drafted per round)."""

    schedule: Schedule | None = None
    draft_length: int = 4
    base: str = "random"
    base_options: tuple = ()
    kind: ClassVar[str] = "lossless"
    name: ClassVar[str] = "spiffy"

    def __post_init__(self) -> None:
        if self.base not in SPIFFY_BASES:
            raise LosslessError(f"spiffy: unknown base sampler {self.base!r}; spiffy is lossless over {SPIFFY_BASES}")
        if self.base == "random" and self.base_options:
            raise LosslessError("spiffy: the random base sampler takes no options besides its steps N and schedule")

    @functools.cached_property
    def base_sampler(self):
        """The base decoder (``None`` for ``random``), built by the registry; a bad option is a LosslessError."""
        if self.base == "random":
            return None
        s = spec(self.base)
        takes_steps = bool({"steps", "schedule"} & s.needs)
        if takes_steps and self.schedule is None:
            raise LosslessError(f"spiffy needs the base sampler's steps N (-N): {self.base} takes steps")
        if not takes_steps and self.schedule is not None:
            raise LosslessError(f"spiffy: the base sampler {self.base} takes no steps N")
        try:
            return s.build(self.resolved_base_options, steps=None if self.schedule is None else self.schedule.n_steps,
                           schedule=self.schedule, tie_seed=0)
        except ValueError as e:
            raise LosslessError(f"spiffy: base sampler {self.base}: {e} (its options by --base-option NAME=VALUE, "
                                f"NAME one of {s.option_names})") from None

    @property
    def resolved_base_options(self) -> dict:
        """The base's options: :attr:`base_options` over the registry's default preset (``presets`` entry
        ``""``, e.g. fast-dllm's ``threshold = 0.9``) when they set none of the base's knobs (a knob given,
        such as fast-dllm's ``factor``, replaces the preset's)."""
        given = dict(self.base_options)
        s = spec(self.base)
        preset = dict(s.presets).get("", {})
        if {k.name for k in s.knobs} & set(given):
            return given
        return {**preset, **given}

    @property
    def label(self) -> str:
        if self.base != "random":
            return f"spiffy, base {self.base_sampler.label}, D={self.draft_length}"
        return f"spiffy, base {self.base} {self.schedule.name} N={self.schedule.n_steps}, D={self.draft_length}"

    def check_length(self, length: int) -> None:
        if int(length) != length or length < 1:
            raise LosslessError(f"spiffy: length must be a positive integer, got {length!r}")
        if self.base != "random":
            _check_width(self.draft_length, length, "spiffy (D against L)")
            try:
                self.base_sampler.blocks(length)
                self.base_sampler.fixed_steps(length)
            except ValueError as e:
                raise LosslessError(f"spiffy: base sampler {self.base} at L = {length}: {e}") from None
            return
        if self.schedule is None:
            raise LosslessError("spiffy needs the base sampler's steps N (-N)")
        _check_width(self.draft_length, self.schedule.n_steps, "spiffy (D against the base's N steps)")

    def reveal_probs(self) -> np.ndarray:
        """``r_k``: the probability that a still-masked position is revealed at step ``k = 1..N``: ``(N,)``."""
        u = self.schedule.u
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(u[:-1] < 1.0, np.diff(u) / (1.0 - u[:-1]), 1.0)
        return np.clip(r, 0.0, 1.0)

    def _sample_chain(self, lang, length: int, n: int, rng: np.random.Generator) -> LosslessSample:
        """Spiffy over a block base (:class:`BlockChain`): per round draft up to ``D`` base steps with the
        current canvas's marginals, evaluate the drafted canvases in one batched pass, accept drafted
        step ``j`` with ``min(1, P(s') / Q(s'))`` (the step's law with fresh over stale marginals), at the
        first rejection draw the step from ``(P - Q)_+`` (enumerated exactly) and evaluate that canvas."""
        chain = BlockChain(self.base_sampler, length, lang.vocab_size)
        seen: dict = {}  # canvas -> its marginals, and (state, canvas) -> step law: the same numbers, once

        def evaluate(states):  # a network pass (counted by the caller); a canvas seen before is not recomputed
            new = list({s[0] for s in states if s[0] not in seen})
            if new:
                toks, masks = zip(*(chain.canvas((c, 0, 0)) for c in new))
                seen.update(zip(new, _marginals(lang, np.array(toks), np.array(masks))))

        def step_law(state, canvas):
            key = (state, canvas)
            if key not in seen:
                seen[key] = chain.law(state, seen[canvas])
            return seen[key]

        rounds = np.ones(n, dtype=np.int64)  # the first pass: the all-masked canvas
        calls = np.ones(n, dtype=np.int64)
        out = np.empty((n, length), dtype=np.int64)
        for b in range(n):
            state = chain.start()
            evaluate([state])
            while not chain.done(state):
                drafts, stale = [state], []
                while len(stale) < self.draft_length and not chain.done(drafts[-1]):
                    stale.append(step_law(drafts[-1], state[0]))
                    drafts.append(_draw(stale[-1], rng))
                todo = drafts[1:-1] + ([] if chain.done(drafts[-1]) else drafts[-1:])
                if todo:
                    evaluate(todo)  # one batched pass
                    rounds[b] += 1
                    calls[b] += len(todo)
                state = drafts[-1]
                for j in range(1, len(stale)):  # step 0 was drafted with its own (fresh) marginals
                    P, Q, nxt = step_law(drafts[j], drafts[j][0]), stale[j], drafts[j + 1]
                    if rng.random() < min(1.0, P.get(nxt, 0.0) / Q[nxt]):
                        continue
                    state = _draw({k: p - Q.get(k, 0.0) for k, p in P.items() if p > Q.get(k, 0.0)}, rng)
                    if not chain.done(state):  # the redrawn canvas has not been evaluated: one more pass
                        evaluate([state])
                        rounds[b] += 1
                        calls[b] += 1
                    break
            out[b] = np.array(state[0])
        return LosslessSample(out, rounds, calls)

    def sample(self, language, length: int, n: int, rng: np.random.Generator) -> LosslessSample:
        self.check_length(length)
        lang = _kernel_hmm(language)
        if self.base != "random":
            return self._sample_chain(lang, length, n, rng)
        r = self.reveal_probs()
        N, D = r.size, self.draft_length
        rounds = np.ones(n, dtype=np.int64)  # the first pass: the all-masked canvas
        calls = np.ones(n, dtype=np.int64)
        out = np.empty((n, length), dtype=np.int64)
        for b in range(n):  # one chain per sequence: the canvases differ in their masks
            x = np.zeros(length, dtype=np.int64)
            masked = np.ones(length, dtype=np.bool_)
            marg = _marginals(lang, x[None], masked[None])[0]
            k = 0
            while k < N:
                d = min(D, N - k)
                xs, ms, sets = [], [], []
                cx, cm = x, masked
                for j in range(d):
                    S = cm & (rng.random(length) < r[k + j])
                    cx = cx.copy()
                    cx[S] = inverse_cdf_vec(marg[S], rng.random(int(S.sum())))
                    cm = cm & ~S
                    xs.append(cx)
                    ms.append(cm)
                    sets.append(S)
                e = d - 1 + (k + d < N)  # the drafts whose marginals a later step needs
                if e:
                    fresh = _marginals(lang, np.array(xs[:e]), np.array(ms[:e]))  # one batched pass
                    rounds[b] += 1
                    calls[b] += e
                j = _first_rejection(fresh if e else None, marg, xs, sets, rng)
                if j == d:
                    x, masked = xs[d - 1], ms[d - 1]
                    k += d
                    if k < N:
                        marg = fresh[d - 1]
                else:
                    x = xs[j - 1].copy()
                    x[sets[j]] = _residual_draw(fresh[j - 1][sets[j]], marg[sets[j]], rng)
                    masked = ms[j]
                    k += j + 1
                    if k < N:  # the redrawn canvas has not been evaluated: one more pass
                        marg = _marginals(lang, x[None], masked[None])[0]
                        rounds[b] += 1
                        calls[b] += 1
            out[b] = x
        return LosslessSample(out, rounds, calls)


def _marginals(lang, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``q(x_j = v | x_obs)`` of each canvas (the oracle's one pass): ``(B, L, V)``.

    A canvas the base sampler made impossible (``q(x_obs) = 0``, NaN rows) gets the uniform law at
    every position: the samplers' ``"uniform"`` convention (:mod:`numerics.exact.output_law`), so the
    base law Spiffy keeps is ``random``'s under that convention.
    """
    m = masked_forward_backward(lang, tokens, mask).marginals
    return np.where(np.isnan(m), 1.0 / m.shape[-1], m)


def _log_prod(P: np.ndarray, v: np.ndarray) -> float:
    """``log prod_i P[i, v_i]`` (``-inf`` when a factor is 0)."""
    with np.errstate(divide="ignore"):  # a value of probability 0 under P: log 0 = -inf, as meant
        return float(np.sum(np.log(P[np.arange(v.size), v])))


def _first_rejection(fresh, marg, xs, sets, rng) -> int:
    """The first drafted step ``j >= 1`` rejected (``len(xs)`` when none): step ``j`` is accepted with
    probability ``min(1, P(v) / Q(v))``, ``P`` the fresh marginals at draft ``j - 1``, ``Q`` the stale ones."""
    for j in range(1, len(xs)):
        S = sets[j]
        v = xs[j][S]
        logratio = _log_prod(fresh[j - 1][S], v) - _log_prod(marg[S], v)
        if not rng.random() < np.exp(min(0.0, logratio)):
            return j
    return len(xs)


def _residual_draw(P: np.ndarray, Q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of the values of a step's revealed set from ``(prod P - prod Q)_+``, normalized, exactly:
    propose ``v ~ prod P`` and accept with probability ``1 - min(1, prod Q(v) / prod P(v))``."""
    k = P.shape[0]
    while True:
        v = inverse_cdf_vec(P, rng.random(k))
        if rng.random() < 1.0 - np.exp(min(0.0, _log_prod(Q, v) - _log_prod(P, v))):
            return v


# ----- the registry's entries of the lossless decoders (class D) ------------------------------------
# A separate mapping, not entries of DECODERS: every consumer of DECODERS (exact, sweep, the decoder
# test table, the report's families) reads a monotone rule or a factorized sampler whose law the DP
# computes from a denoiser's marginals; a lossless decoder needs the oracle's joint density and has a
# random number of calls (this module, docs/methods/lossless.md). Same DecoderSpec, kind
# "lossless", no knob (its point is (E[calls], SER = 0)); built by lossless_spec(name).build(...).
_DRAFT = Option("draft_length", int, "draft length k: positions (assd, self-spec) or base steps (spiffy) drafted "
                "a round, 1..L (spiffy: 1..N)", default=4, low=1)
_BASE = Option("base", str, "the base sampler spiffy is lossless over", default="random", choices=SPIFFY_BASES)
_ORDER = Option("order", str, "assd's order of generation: random (a uniform permutation per sequence) or "
                "left-to-right", default="random", choices=ASSD_ORDERS)

#: The lossless decoders by command-line name (``mdm-theory lossless --decoder NAME``).
LOSSLESS: dict[str, DecoderSpec] = {s.name: s for s in (
    DecoderSpec("assd", Assd, "lossless", "any-subset speculative decoding: draft k marginals, accept by the joint "
                "density (min(1, q/p)), residual at the first rejection; output law q", (_DRAFT, _ORDER), tie_seed=False),
    DecoderSpec("self-spec", SelfSpec, "lossless", "LinearSpec: draft k argmaxes, keep the prefix the causal argmax "
                "agrees with; exactly greedy left-to-right", (_DRAFT,), tie_seed=False),
    DecoderSpec("autospec", Autospec, "lossless", "sequence-level self-speculation with shared uniforms: all "
                "conditionals of the speculation at once, commit the agreeing prefix; output law q", tie_seed=False),
    DecoderSpec("spiffy", Spiffy, "lossless", "Spiffy: draft k base steps with stale marginals, verify in one batch, "
                "speculative rejection per step; exactly the base sampler's law", (_DRAFT, _BASE),
                tie_seed=False),  # its base's steps N / schedule and options: validation.lossless.build_lossless
)}


def lossless_spec(name: str) -> DecoderSpec:
    """The lossless decoder called ``name``; an unknown name is a :class:`LosslessError` listing them."""
    try:
        return LOSSLESS[name]
    except KeyError:
        raise LosslessError(f"unknown lossless decoder {name!r}; choose one of {tuple(LOSSLESS)}") from None
