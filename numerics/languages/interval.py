"""The Theorem 4.4 language (Example C.7 / Note C.8): pairs inside an interval share one bit.

Direct construction (Example C.7, ``docs/methods/exact.md``). Positions are cut into intervals of ``l``
consecutive positions; intervals are independent. Inside an interval every pair of positions
``(j, k)``, ``j < k``, owns one uniform bit ``b_jk``, all pair bits independent. The token at
position ``r`` is an integer in ``0..2^(l-1) - 1`` read as ``l - 1`` bits, one per *partner*:

    x_r = sum_{k != r} b_{min(r,k) max(r,k)} * 2^(idx_r(k)),   idx_r(k) = k if k < r else k - 1

(0-based positions inside the interval; bit ``i`` of ``x_r`` belongs to the ``i``-th partner in
increasing order, which is Note C.8's "column ``r`` above the diagonal, then row ``r``").
A sequence is *valid* (in the support) iff for every pair the two copies of its bit agree; every
valid interval has probability ``2^-(l(l-1)/2)``.

Lengths that are not a multiple of ``l``. The language of length ``L`` is the law of the first
``L`` tokens of ``ceil(L/l)`` independent intervals: the last, partial interval of ``m = L mod l``
positions keeps its pair bits among those ``m`` positions (which must agree) and its bits for
partners beyond the end are free uniform bits. This is exactly what the HMMs below produce when
stopped after ``L`` positions. Closed forms that need whole intervals (Definition C.4, Lemma C.6,
the exact SER ``1 - E[2^-c]^(L/l)``) call :func:`whole_intervals`, which raises a ``ValueError``.

HMM forms (Note C.8). The hidden state at position ``r`` of an interval is ``(r, bits)``:

* :meth:`IntervalLanguage.paper_hmm`: ``bits`` = rows ``0..r`` of the upper-triangular bit matrix
  ``M`` (``M[j, k] = b_jk``); moving to ``r + 1`` keeps them and draws row ``r + 1`` fresh; after
  the last position the state resets to ``r = 0`` with a fresh row 0. Undrawn rows are not part of
  the state, so there are ``sum_r 2^(sum_{i <= r} (l - 1 - i))`` states (2704 for ``l = 5``).
* :meth:`IntervalLanguage.minimal_hmm`: ``bits`` = only the pairs still needed, those with
  ``j <= r <= k`` (the bits the token at ``r`` shows, and those crossing to later positions):
  ``sum_r 2^(r (l - r) + (l - 1 - r))`` states (544 for ``l = 5``). It is minimal among HMMs
  whose emission is a function of the state: the state at ``r`` must determine every bit the
  token at ``r`` shares with another position (it is independent of the other positions' tokens
  given the state), and every such bit is a uniform bit independent of the others.

Both have deterministic emissions and at most ``2^(l-1)`` successors per state, held in a
:class:`SparseHMM` (padded successor lists); :meth:`SparseHMM.to_hmm` gives the dense
:class:`~numerics.languages.hmm.HMM` the rest of the engine takes, refused above ``DENSE_MAX_STATES``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from numerics.languages.hmm import (
    FILE_LOADERS,
    HMM,
    _check_distribution,
    _check_sample_args,
    _sample_rows,
)

__all__ = [
    "IntervalLanguage",
    "SparseHMM",
    "whole_intervals",
    "DENSE_MAX_STATES",
]

DENSE_MAX_STATES = 4096  # a dense S x S float64 transition above this is > 128 MiB; refuse it
_MAX_L = 7  # 2^(l(l-1)/2) valid intervals: l = 7 is already 2^21; larger l is refused up front


def whole_intervals(length: int, l: int) -> int:
    """Number of intervals ``L / l``; ``ValueError`` when ``l`` does not divide ``L``.

    For the closed forms that assume whole intervals (Definition C.4: ``1..L`` cut into ``L/l``
    intervals), e.g. the exact SER ``1 - (E[2^-c])^(L/l)`` of Example C.7 and Lemma C.6.
    """
    if int(l) != l or l < 2:
        raise ValueError(f"interval length l must be an integer >= 2, got {l!r}")
    if int(length) != length or length < 1:
        raise ValueError(f"length L must be a positive integer, got {length!r}")
    if length % l:
        raise ValueError(
            f"length L = {length} is not a multiple of the interval length l = {l}: the closed form "
            f"assumes whole intervals (Definition C.4); use L = {l * (length // l)} or {l * (length // l + 1)}, "
            "or an exact method on the truncated language"
        )
    return int(length) // int(l)


@dataclass(frozen=True, eq=False)
class SparseHMM:
    """An HMM with deterministic emissions and a padded sparse successor list.

    Attributes
    ----------
    initial : (S,) float64
        Law of the state at position 1.
    successors : (S, K) int64
        ``successors[s, i]`` is the ``i``-th possible next state of ``s`` (padding: any index with
        probability 0).
    probs : (S, K) float64
        ``probs[s, i] = q(z_{j+1} = successors[s, i] | z_j = s)``; rows sum to 1.
    emits : (S,) int64
        The token state ``s`` emits with probability 1.
    vocab_size : int
    """

    initial: np.ndarray
    successors: np.ndarray
    probs: np.ndarray
    emits: np.ndarray
    vocab_size: int

    def __post_init__(self) -> None:
        initial = _check_distribution("initial", self.initial, 1)
        probs = _check_distribution("probs", self.probs, 2)
        S = initial.shape[0]
        successors = np.asarray(self.successors, dtype=np.int64)
        emits = np.asarray(self.emits, dtype=np.int64)
        if successors.shape != probs.shape or probs.shape[0] != S:
            raise ValueError(f"successors {successors.shape} and probs {probs.shape} must both be ({S}, K)")
        if np.any((successors < 0) | (successors >= S)):
            raise ValueError(f"successors has a state index outside 0..{S - 1}")
        if emits.shape != (S,) or np.any((emits < 0) | (emits >= self.vocab_size)):
            raise ValueError(f"emits must be ({S},) tokens in 0..{self.vocab_size - 1}")
        for name, arr in (("successors", successors), ("emits", emits)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "vocab_size", int(self.vocab_size))

    kind = "sparse-hmm"

    @property
    def n_states(self) -> int:
        return self.initial.shape[0]

    def kernel_language(self) -> HMM:
        """The dense :class:`~numerics.languages.hmm.HMM` the compiled kernels read (:meth:`to_hmm`, once)."""
        return self._dense

    @functools.cached_property
    def _dense(self) -> HMM:
        return self.to_hmm()

    def arrays(self) -> dict[str, np.ndarray]:
        """The dense HMM's ``initial``, ``transition``, ``emission`` (the file format has no sparse form)."""
        return self.kernel_language().arrays()

    def save(self, path) -> None:
        """Write the dense HMM's ``.npz`` (:meth:`arrays`)."""
        np.savez(path, **self.arrays())

    def transition_csr(self) -> scipy.sparse.csr_matrix:
        """The ``(S, S)`` transition matrix as a scipy CSR matrix (duplicate slots summed)."""
        S, K = self.successors.shape
        rows = np.repeat(np.arange(S), K)
        return scipy.sparse.csr_matrix(
            (self.probs.ravel(), (rows, self.successors.ravel())), shape=(S, S)
        )

    def to_hmm(self, max_states: int = DENSE_MAX_STATES) -> HMM:
        """The same language as a dense :class:`~numerics.languages.hmm.HMM` (``ValueError`` above ``max_states``)."""
        S = self.n_states
        if S > max_states:
            raise ValueError(
                f"this HMM has {S} states; a dense transition matrix would take {S * S * 8 / 2**20:.0f} MiB "
                f"(limit max_states = {max_states}); use the sparse form"
            )
        transition = self.transition_csr().toarray()
        emission = np.zeros((S, self.vocab_size))
        emission[np.arange(S), self.emits] = 1.0
        return HMM(self.initial, transition, emission)

    def log_prob(self, tokens: np.ndarray) -> np.ndarray:
        """``log q(x)`` of fully observed sequences ``tokens`` ``(B, L)``: a scaled sparse forward pass.

        ``-inf`` for impossible sequences. Tokens outside ``0..V-1`` are a ``ValueError``.
        """
        x = _check_tokens(tokens, self.vocab_size)
        B, L = x.shape
        T_t = self.transition_csr().T.tocsr()  # (S, S): alpha_next^T = T^T @ alpha^T
        loglik = np.zeros(B)
        alpha = self.initial[None, :] * (self.emits[None, :] == x[:, :1])  # (B, S)
        for j in range(L):
            if j:
                alpha = (T_t @ alpha.T).T * (self.emits[None, :] == x[:, j : j + 1])
            c = alpha.sum(axis=1)
            dead = c == 0.0
            loglik[dead] = -np.inf
            c[dead] = 1.0
            with np.errstate(divide="ignore"):  # log(1) = 0 for the dead rows, already -inf
                loglik += np.log(c)
            alpha = alpha / c[:, None]
        return loglik

    def sample(self, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` sequences of ``length`` tokens (float64 inverse CDF); ``(n, length)`` int64."""
        _check_sample_args(n, length, rng)
        z = _sample_rows(np.broadcast_to(self.initial, (n, self.n_states)), rng)
        out = np.empty((n, length), dtype=np.int64)
        for j in range(length):
            if j:
                z = self.successors[z, _sample_rows(self.probs[z], rng)]
            out[:, j] = self.emits[z]
        return out


def _check_tokens(tokens: np.ndarray, vocab_size: int) -> np.ndarray:
    x = np.asarray(tokens)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] < 1 or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"tokens must be a (B, L) integer array with L >= 1, got {x.dtype} {x.shape}")
    if np.any((x < 0) | (x >= vocab_size)):
        bad = tuple(int(i) for i in np.argwhere((x < 0) | (x >= vocab_size))[0])
        raise ValueError(f"token {int(x[bad])} at {bad} is outside 0..{vocab_size - 1}")
    return x.astype(np.int64, copy=False)


@dataclass(frozen=True)
class IntervalLanguage:
    """Example C.7 with interval length ``l`` (vocabulary ``2^(l-1)``); see the module docstring.

    Parameters
    ----------
    l : int
        Interval length, ``2 <= l <= 7`` (the paper's Theorem 4.4 uses ``l = 5``, vocabulary 16).
    """

    l: int

    def __post_init__(self) -> None:
        if int(self.l) != self.l or not 2 <= self.l <= _MAX_L:
            raise ValueError(f"interval length l must be an integer in 2..{_MAX_L}, got {self.l!r}")
        object.__setattr__(self, "l", int(self.l))

    kind = "interval"

    # ----- what the engine asks of every language (numerics.languages.hmm.Language) ------------
    def kernel_language(self) -> HMM:
        """The dense form of :meth:`minimal_hmm` (built once) that the compiled kernels read.

        ``ValueError`` above ``DENSE_MAX_STATES`` states (``l >= 6``): the closed forms and the
        direct sampler take any ``l``, the kernels only the dense form.
        """
        return self._dense

    @functools.cached_property
    def _dense(self) -> HMM:
        return self.minimal_hmm().to_hmm()

    def to_hmm(self) -> HMM:
        """The same law as a dense :class:`~numerics.languages.hmm.HMM` (:meth:`kernel_language`)."""
        return self.kernel_language()

    def arrays(self) -> dict[str, np.ndarray]:
        """What an ``.npz`` file of this language holds: ``interval_l`` (the structure, not the HMM)."""
        return {"interval_l": np.int64(self.l)}

    def save(self, path) -> None:
        """Write ``.npz`` with the key ``interval_l``; it loads back as this :class:`IntervalLanguage`."""
        np.savez(path, **self.arrays())

    # ----- the direct construction -------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return 2 ** (self.l - 1)

    @property
    def pairs(self) -> list[tuple[int, int]]:
        """The pairs ``(j, k)``, ``j < k``, of positions inside an interval, row-major."""
        return [(j, k) for j in range(self.l) for k in range(j + 1, self.l)]

    def tokens_from_bits(self, bits: np.ndarray) -> np.ndarray:
        """Tokens ``(..., l)`` of intervals whose pair bits are ``bits`` ``(..., l(l-1)/2)`` (order :attr:`pairs`)."""
        bits = np.asarray(bits, dtype=np.int64)
        out = np.zeros(bits.shape[:-1] + (self.l,), dtype=np.int64)
        for p, (j, k) in enumerate(self.pairs):
            out[..., j] += bits[..., p] << (k - 1)  # partner k > j is x_j's bit k - 1
            out[..., k] += bits[..., p] << j  # partner j < k is x_k's bit j
        return out

    def interval_support(self) -> np.ndarray:
        """All ``2^(l(l-1)/2)`` valid intervals, ``(K, l)`` int64, each of probability ``2^-(l(l-1)/2)``.

        Enumerated from the pair bits (the integer ``m`` has bit ``p`` = bit of pair ``p``).
        """
        P = len(self.pairs)
        m = np.arange(2**P, dtype=np.int64)
        return self.tokens_from_bits((m[:, None] >> np.arange(P)) & 1)

    def n_free_bits(self, length: int) -> int:
        """Number of pair bits that the first ``length`` tokens show (each once): ``log2 |support|``.

        ``(L // l) * l(l-1)/2 + m(l-1) - m(m-1)/2`` with ``m = L mod l`` (the partial interval's pairs
        with a first position inside the sequence).
        """
        l = self.l
        m = length % l
        return (length // l) * (l * (l - 1) // 2) + m * (l - 1) - m * (m - 1) // 2

    def is_valid(self, tokens: np.ndarray) -> np.ndarray:
        """``(B,)`` bool: every pair bit agrees in its two copies (a partial last interval included)."""
        x = _check_tokens(tokens, self.vocab_size)
        B, L = x.shape
        l = self.l
        n_int = -(-L // l)
        pad = np.zeros((B, n_int * l), dtype=np.int64)
        pad[:, :L] = x
        blocks = pad.reshape(B, n_int, l)
        present = (np.arange(n_int * l) < L).reshape(n_int, l)  # (n_int, l)
        ok = np.ones(B, dtype=bool)
        for j, k in self.pairs:
            agree = ((blocks[:, :, j] >> (k - 1)) & 1) == ((blocks[:, :, k] >> j) & 1)
            checked = present[:, k]  # both ends inside the sequence (j < k)
            ok &= np.all(agree | ~checked[None, :], axis=1)
        return ok

    def log_prob(self, tokens: np.ndarray) -> np.ndarray:
        """Exact ``log q(x)``: ``-n_free_bits(L) log 2`` on the support, ``-inf`` off it."""
        x = _check_tokens(tokens, self.vocab_size)
        valid = self.is_valid(x)
        return np.where(valid, -self.n_free_bits(x.shape[1]) * math.log(2.0), -np.inf)

    def sequence_entropy(self, length: int) -> float:
        """Exact ``H(X_1..X_L) = n_free_bits(L) log 2`` nats (the law is uniform on its support)."""
        if int(length) != length or length < 1:
            raise ValueError(f"length must be a positive integer, got {length!r}")
        return self.n_free_bits(int(length)) * math.log(2.0)

    def sample(self, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` sequences of ``length`` tokens, ``(n, length)`` int64: uniform pair bits, truncated."""
        _check_sample_args(n, length, rng)
        n_int = -(-length // self.l)
        bits = rng.integers(0, 2, size=(n, n_int, len(self.pairs)), dtype=np.int64)
        return self.tokens_from_bits(bits).reshape(n, n_int * self.l)[:, :length]

    # ----- HMM forms (Note C.8) ----------------------------------------------------------------
    def paper_hmm(self) -> SparseHMM:
        """Note C.8's HMM: state ``(r, rows 0..r of M)``; see the module docstring."""
        l = self.l
        return _pair_state_hmm(self, [[(j, k) for (j, k) in self.pairs if j <= r] for r in range(l)])

    def minimal_hmm(self) -> SparseHMM:
        """The HMM that keeps only the bits still needed: state ``(r, {b_jk : j <= r <= k})``."""
        l = self.l
        return _pair_state_hmm(self, [[(j, k) for (j, k) in self.pairs if j <= r <= k] for r in range(l)])

    @property
    def n_states(self) -> int:
        """States of :meth:`minimal_hmm`, the form the kernels read (as ``n_states`` of every language)."""
        return self.state_count("minimal")

    def state_count(self, form: str = "minimal") -> int:
        """State count of :meth:`minimal_hmm` (``form="minimal"``) or :meth:`paper_hmm` (``"paper"``)."""
        l = self.l
        if form == "minimal":
            return sum(2 ** (r * (l - r) + (l - 1 - r)) for r in range(l))
        if form == "paper":
            return sum(2 ** sum(l - 1 - i for i in range(r + 1)) for r in range(l))
        raise ValueError(f"form must be 'minimal' or 'paper', got {form!r}")


def _pair_state_hmm(lang: IntervalLanguage, state_pairs: Sequence[Sequence[tuple[int, int]]]) -> SparseHMM:
    """Build the HMM whose state at interval position ``r`` holds the bits of ``state_pairs[r]``.

    Requirements (checked): ``state_pairs[r]`` holds every pair that involves ``r`` (so the state
    determines the token), and every pair of ``state_pairs[r+1]`` is either in ``state_pairs[r]``
    (copied) or has first position ``r+1`` (drawn fresh, uniform); ``state_pairs[0]`` is row 0.
    The state ``(r, m)`` (bit ``p`` of ``m`` = bit of ``state_pairs[r][p]``) has index ``offset[r] + m``.
    """
    l = lang.l
    sizes = [2 ** len(P) for P in state_pairs]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    S = int(offsets[-1])
    if list(state_pairs[0]) != [(0, k) for k in range(1, l)]:
        raise ValueError("the state at r = 0 must hold exactly row 0 of the bit matrix")
    emits = np.empty(S, dtype=np.int64)
    succ_blocks, n_succ = [], []
    for r in range(l):
        P = list(state_pairs[r])
        m = np.arange(sizes[r], dtype=np.int64)
        bits = (m[:, None] >> np.arange(len(P))) & 1  # (n_r, |P|)
        where = {pair: i for i, pair in enumerate(P)}
        token = np.zeros(sizes[r], dtype=np.int64)
        for k in range(l):
            if k == r:
                continue
            pair = (min(r, k), max(r, k))
            if pair not in where:
                raise ValueError(f"state at r = {r} lacks the bit of pair {pair} that its token shows")
            token += bits[:, where[pair]] << (k if k < r else k - 1)
        emits[offsets[r] : offsets[r + 1]] = token
        nxt = (r + 1) % l
        Q = list(state_pairs[nxt])
        base = np.zeros(sizes[r], dtype=np.int64)
        fresh_pos = []
        for q, pair in enumerate(Q):
            if nxt != 0 and pair in where:
                base += bits[:, where[pair]] << q
            elif pair[0] == nxt:
                fresh_pos.append(q)
            else:
                raise ValueError(f"pair {pair} of the state at r = {nxt} is neither kept nor fresh")
        f = np.arange(2 ** len(fresh_pos), dtype=np.int64)
        fresh = (((f[:, None] >> np.arange(len(fresh_pos))) & 1) << np.asarray(fresh_pos, dtype=np.int64)).sum(
            axis=1
        )
        succ_blocks.append(offsets[nxt] + base[:, None] + fresh[None, :])
        n_succ.append(len(f))
    K = max(n_succ)
    successors = np.zeros((S, K), dtype=np.int64)
    probs = np.zeros((S, K))
    for r in range(l):
        lo, hi, k = offsets[r], offsets[r + 1], n_succ[r]
        successors[lo:hi, :k] = succ_blocks[r]
        probs[lo:hi, :k] = 1.0 / k
    initial = np.zeros(S)
    initial[: sizes[0]] = 1.0 / sizes[0]
    return SparseHMM(initial, successors, probs, emits, lang.vocab_size)


def _load_interval_file(arrays: dict, path: str) -> IntervalLanguage:
    """The interval language of an ``.npz`` holding ``interval_l`` (``IntervalLanguage.save``)."""
    l = arrays["interval_l"]
    if l.shape != () or l.dtype.kind not in "iu":
        raise ValueError(f"interval_l in {path!r} must be one integer, got an array of shape {l.shape} "
                         f"and dtype {l.dtype}")
    return IntervalLanguage(l.item())


FILE_LOADERS[frozenset({"interval_l"})] = _load_interval_file
