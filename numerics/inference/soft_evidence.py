"""Forward-backward with soft token evidence: the oracle of uniform-noise diffusion, and masking as its special case.

The evidence at position ``j`` is a likelihood over tokens of the form

    ``l_j(v) = weight_j [v = canvas_j] + floor_j``     (:class:`TokenEvidence`)

and the quantities computed for an HMM / n-gram / interval language ``q`` are

* ``loglik = log sum_x q(x) prod_j l_j(x_j)``;
* ``marginals[j, v] = q(x_j = v | evidence)``, proportional to ``q(x) prod_j l_j(x_j)`` summed over ``x`` with ``x_j = v``;
* ``cavity[j, v]``: the same with the evidence at ``j`` left out, ``q(x_j = v | evidence at every other position)``.

Two evidences of this form (``docs/methods/uniform-noise.md``):

* **masking** (:func:`masked_evidence`): an observed token has ``(weight, floor) = (1, 0)`` (an indicator),
  a masked one ``(0, 1)`` (no evidence). ``loglik = log q(x_obs)``, the marginals are those of
  :func:`numerics.inference.masked_forward_backward`, and the cavity of a fully observed sequence is
  the leave-one-out conditional ``q(x_j | x_{-j})``;
* **uniform noise** (:func:`uniform_noise_evidence`): the canvas ``y`` shows the true token with
  probability ``alpha_j`` and a uniform one otherwise, ``l_j(v) = q(y_j | x_j = v) = alpha_j [v = y_j] +
  (1 - alpha_j) / V``; ``loglik = log q(y)``, the probability of the noisy canvas, and the marginals are
  the oracle denoiser ``q(x_0^j | y)``. ``alpha_j = 1`` is an observed position, ``alpha_j = 0`` a
  masked one (its likelihood is ``1 / V`` instead of 1: ``log q(y)`` is ``log q(x_obs) - (#alpha=0) log V``).

One recursion serves both (an HMM state ``s`` sees ``e_j(s) = sum_v E[s, v] l_j(v) = weight_j E[s, y_j] +
floor_j``, since the rows of ``E`` sum to 1):

* forward: ``p_j = alpha_{j-1} A`` (``p_1 = initial``), ``alpha_j = p_j * e_j / c_j``, ``c_j`` the sum,
  ``loglik = sum_j log c_j``;
* backward: ``beta_L = 1``, ``beta_{j-1} = A (e_j * beta_j)``, normalized by its sum (the scale cancels);
* cavity: ``(p_j * beta_j) @ E`` normalized; marginal: ``cavity * l_j`` normalized.

The message steps (predict ``p A``, pull ``A m``, state evidence, state-to-token sum) are written once
per language kind (:class:`_DenseMessages`, :class:`_NGramMessages`, the n-gram's ``V`` successors per
state instead of a dense ``S x S`` product) and vectorized over the batch with NumPy / BLAS (BLAS at one thread, the batch split in chunks
run on :func:`~numerics._threads.kernel_threads` threads): the reference, and the path of n-grams. A
dense HMM runs the compiled twin :func:`_dense_kernel` (blocks of sequences per ``prange`` iteration,
the same steps), tested against it. An
impossible evidence (some ``c_j = 0``) has ``loglik = -inf`` and NaN marginals; its cavity is still
defined at every position whose *other* evidence is possible (NaN elsewhere). No epsilon anywhere.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import prange

from numerics._jit import jit
from numerics._threads import blas_single_thread, kernel_threads
from numerics.inference.posterior import check_observations
from numerics.languages.hmm import HMM, NGram

__all__ = ["TokenEvidence", "SoftPosterior", "masked_evidence", "uniform_noise_evidence", "evidence_forward_backward",
           "uniform_noise_posterior", "leave_one_out", "check_canvas", "check_alpha"]

_CHUNK_FLOATS = 2**23  # stored predictions of a batch chunk (L * rows * S float64): 64 MiB
_BLOCK_ROWS = 64  # sequences per block of the compiled kernel: dgemm wants a few dozen rows


class TokenEvidence(NamedTuple):
    """Per-position token likelihoods ``l_j(v) = weight_j [v = canvas_j] + floor_j``.

    Attributes
    ----------
    canvas : (B, L) int64
        The token each position shows (``0 .. V-1``; any value where ``weight = 0``).
    weight : (B, L) float64
        Weight of the indicator ``[v = canvas_j]`` (``>= 0``).
    floor : (B, L) float64
        Likelihood every token gets (``>= 0``); ``weight + floor > 0``.
    """

    canvas: np.ndarray
    weight: np.ndarray
    floor: np.ndarray

    def likelihood(self, vocab_size: int) -> np.ndarray:
        """The dense ``(B, L, V)`` array ``l_j(v)``."""
        onehot = self.canvas[..., None] == np.arange(vocab_size)
        return self.weight[..., None] * onehot + self.floor[..., None]


@dataclass(frozen=True)
class SoftPosterior:
    """Result of :func:`evidence_forward_backward`.

    Attributes
    ----------
    loglik : (B,) float64
        ``log sum_x q(x) prod_j l_j(x_j)``: ``log q(x_obs)`` under masking, ``log q(y)`` under uniform
        noise; ``-inf`` when the evidence is impossible.
    marginals : (B, L, V) float64
        ``q(x_j = v | evidence)``; NaN rows for an impossible evidence.
    cavity : (B, L, V) float64
        ``q(x_j = v | evidence at the other positions)``; NaN where that evidence is impossible.
    """

    loglik: np.ndarray
    marginals: np.ndarray
    cavity: np.ndarray


def check_canvas(language, canvas) -> np.ndarray:
    """``canvas`` as a ``(B, L)`` int64 array of tokens in ``0 .. V-1`` (``ValueError`` naming the first
    token outside the vocabulary)."""
    canvas = np.asarray(canvas)
    if canvas.ndim == 1:
        canvas = canvas[None, :]
    if canvas.ndim != 2 or canvas.shape[1] < 1:
        raise ValueError(f"canvas must be a (B, L) array of tokens with L >= 1, got shape {canvas.shape}")
    if not np.issubdtype(canvas.dtype, np.integer):
        raise ValueError(f"canvas tokens must be integers, got dtype {canvas.dtype}")
    V = language.vocab_size
    bad = (canvas < 0) | (canvas >= V)
    if bad.any():
        b, j = np.argwhere(bad)[0]
        raise ValueError(f"canvas token {int(canvas[b, j])} at sequence {b}, position {j} is outside the vocabulary 0..{V - 1}")
    return np.ascontiguousarray(canvas, dtype=np.int64)


def check_alpha(alpha, shape: tuple[int, int]) -> np.ndarray:
    """``alpha`` (a scalar, ``(L,)`` or ``(B, L)``) broadcast to ``shape`` as float64; ``ValueError`` if a
    value is outside ``[0, 1]`` (NaN included)."""
    a = np.asarray(alpha, dtype=np.float64)
    if not np.all((a >= 0.0) & (a <= 1.0)):
        bad = a[~((a >= 0.0) & (a <= 1.0))].ravel()[0]
        raise ValueError(f"alpha must lie in [0, 1] (the probability that a position shows its true token), got {bad!r}")
    try:
        return np.ascontiguousarray(np.broadcast_to(a, shape))
    except ValueError:
        raise ValueError(f"alpha of shape {a.shape} does not broadcast to the canvas shape {shape}") from None


def masked_evidence(language, tokens, mask) -> TokenEvidence:
    """The evidence of masking: ``(weight, floor) = (1, 0)`` where observed, ``(0, 1)`` where masked."""
    obs = check_observations(language, tokens, mask)
    observed = (~obs.mask).astype(np.float64)
    return TokenEvidence(obs.tokens, observed, 1.0 - observed)


def uniform_noise_evidence(language, canvas, alpha) -> TokenEvidence:
    """The evidence of a uniform-noise canvas: ``l_j(v) = alpha_j [v = y_j] + (1 - alpha_j) / V``.

    ``alpha`` is the probability that a position shows its true token (scalar, per position ``(L,)`` or
    per sequence and position ``(B, L)``).
    """
    y = check_canvas(language, canvas)
    a = check_alpha(alpha, y.shape)
    return TokenEvidence(y, a, (1.0 - a) / language.vocab_size)


# ----- message steps, once per language kind ---------------------------------------------------------------


class _DenseMessages:
    """Message steps of a dense HMM: ``p A`` and ``A m`` are BLAS products ``(B, S) @ (S, S)``."""

    def __init__(self, hmm: HMM):
        self.initial = hmm.initial
        self.A = np.ascontiguousarray(hmm.transition)
        self.AT = np.ascontiguousarray(hmm.transition.T)
        self.E = np.ascontiguousarray(hmm.emission)
        self.ET = np.ascontiguousarray(hmm.emission.T)
        self.S, self.V = hmm.n_states, hmm.vocab_size

    def predict(self, alpha):
        return alpha @ self.A

    def pull(self, m):
        return m @ self.AT

    def state_evidence(self, y, a, f):
        """``e(s) = a E[s, y] + f`` per row: ``(B, S)``."""
        return a[:, None] * self.ET[y] + f[:, None]

    def to_tokens(self, g):
        """``g @ E``: ``(B, V)``."""
        return g @ self.E


class _NGramMessages:
    """Message steps of an n-gram over its ``V`` successors per state.

    State ``s = d W + w`` (``d`` the oldest token, ``W = V^(n-2)``) moves on token ``v`` to ``w V + v`` and
    emits ``s % V``. So ``(p A)[w V + v] = sum_d p[d W + w] C[d W + w, v]`` and
    ``(A m)[d W + w] = sum_v C[d W + w, v] m[w V + v]``: ``W`` batched ``(B, V) @ (V, V)`` products.
    """

    def __init__(self, ng: NGram):
        self.initial = ng.initial
        self.S, self.V = ng.n_states, ng.vocab_size
        self.W = self.S // self.V
        C = ng.conditional.reshape(self.V, self.W, self.V)  # [d, w, v]
        self.C = np.ascontiguousarray(C.transpose(1, 0, 2))  # [w, d, v]
        self.CT = np.ascontiguousarray(C.transpose(1, 2, 0))  # [w, v, d]

    def predict(self, alpha):
        B = alpha.shape[0]
        a = alpha.reshape(B, self.V, self.W).transpose(2, 0, 1)  # [w, b, d]
        return np.matmul(a, self.C).transpose(1, 0, 2).reshape(B, self.S)  # [b, w, v]

    def pull(self, m):
        B = m.shape[0]
        mm = m.reshape(B, self.W, self.V).transpose(1, 0, 2)  # [w, b, v]
        return np.matmul(mm, self.CT).transpose(1, 2, 0).reshape(B, self.S)  # [b, d, w]

    def state_evidence(self, y, a, f):
        lik = a[:, None] * (y[:, None] == np.arange(self.V)) + f[:, None]  # (B, V)
        return np.broadcast_to(lik[:, None, :], (lik.shape[0], self.W, self.V)).reshape(-1, self.S)

    def to_tokens(self, g):
        return g.reshape(g.shape[0], self.W, self.V).sum(axis=1)


def _messages(language):
    kl = language.kernel_language()
    if isinstance(kl, NGram):
        return _NGramMessages(kl)
    return _DenseMessages(kl.to_hmm())


# ----- the recursion --------------------------------------------------------------------------------------------


def _normalize_rows(m: np.ndarray) -> np.ndarray:
    """Rows divided by their sums; a row summing to 0 becomes NaN (its conditional law is undefined)."""
    tot = m.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return m / tot


def _chunk(msg, ev: TokenEvidence, loglik, marginals, cavity) -> None:
    y, a, f = ev
    B, L = y.shape
    S, V = msg.S, msg.V
    pred = np.empty((L, B, S))
    logc = np.zeros(B)
    dead = np.zeros(B, dtype=np.bool_)
    alpha = None
    for j in range(L):
        p = np.broadcast_to(msg.initial, (B, S)) if j == 0 else msg.predict(alpha)
        pred[j] = p
        alpha = p * msg.state_evidence(y[:, j], a[:, j], f[:, j])
        c = alpha.sum(axis=1)
        zero = c == 0.0
        dead |= zero
        c[zero] = 1.0  # the row is all 0 already and stays 0 (0 A = 0)
        alpha /= c[:, None]
        logc += np.log(c)
    loglik[:] = np.where(dead, -np.inf, logc)
    beta = np.ones((B, S))
    onehot_ids = np.arange(V)
    for j in range(L - 1, -1, -1):
        if j < L - 1:
            beta = msg.pull(msg.state_evidence(y[:, j + 1], a[:, j + 1], f[:, j + 1]) * beta)
            tot = beta.sum(axis=1, keepdims=True)
            beta = np.divide(beta, tot, out=np.zeros_like(beta), where=tot > 0)  # an impossible suffix stays 0
        cav = _normalize_rows(msg.to_tokens(pred[j] * beta))
        cavity[:, j] = cav
        lik = a[:, j, None] * (y[:, j, None] == onehot_ids) + f[:, j, None]
        marginals[:, j] = _normalize_rows(cav * lik)
    marginals[dead] = np.nan
    bad = ~dead & np.isnan(marginals).any(axis=(1, 2))
    if bad.any():
        b = int(np.flatnonzero(bad)[0])
        raise FloatingPointError(f"sequence {b} has log-likelihood {loglik[b]!r} but undefined posterior marginals: "
                                 "the scaled recursion underflowed (an extremely peaked model)")


class _KernelInputs(NamedTuple):
    """What :func:`_dense_kernel` reads: the HMM (``A``, its transpose, ``E``, its transpose) and the evidence."""

    initial: np.ndarray
    A: np.ndarray
    AT: np.ndarray
    E: np.ndarray
    ET: np.ndarray
    canvas: np.ndarray
    weight: np.ndarray
    floor: np.ndarray


class _KernelOutputs(NamedTuple):
    """What :func:`_dense_kernel` writes (:class:`SoftPosterior`'s arrays and a flag per sequence set when
    a possible sequence's normalizer came out 0: round-off broke the recursion)."""

    loglik: np.ndarray
    marginals: np.ndarray
    cavity: np.ndarray
    unstable: np.ndarray


@jit(parallel=True)
def _dense_kernel(inp, block, out):
    """The recursion of :func:`_chunk` for a dense HMM, compiled: blocks of ``block`` sequences per ``prange``
    iteration, each step one BLAS product ``(nb, S) @ (S, S)`` (``np.dot``; BLAS held at one thread by the
    caller) and loops for the rest, in the same roles as the NumPy twin (module docstring).
    """
    initial, A, AT, E, ET, y, a, f = inp
    loglik, marginals, cavity, unstable = out
    B, L = y.shape
    S, V = E.shape
    nblocks = (B + block - 1) // block
    for k in prange(nblocks):
        b0 = k * block
        nb = min(B, b0 + block) - b0
        pred = np.empty((L, nb, S))
        alpha = np.empty((nb, S))
        logc = np.zeros(nb)
        dead = np.zeros(nb, dtype=np.bool_)
        for j in range(L):
            if j == 0:
                for i in range(nb):
                    for t in range(S):
                        pred[0, i, t] = initial[t]
            else:
                pred[j] = np.dot(alpha, A)
            for i in range(nb):
                yj, aj, fj = y[b0 + i, j], a[b0 + i, j], f[b0 + i, j]
                tot = 0.0
                for s in range(S):
                    v = pred[j, i, s] * (aj * ET[yj, s] + fj)
                    alpha[i, s] = v
                    tot += v
                if tot > 0.0:
                    inv = 1.0 / tot
                    for s in range(S):
                        alpha[i, s] *= inv
                    logc[i] += math.log(tot)
                else:
                    dead[i] = True  # alpha is all 0 and stays 0
        beta = np.ones((nb, S))
        m = np.empty((nb, S))
        g = np.empty((nb, S))
        bad = np.zeros(nb, dtype=np.bool_)
        for j in range(L - 1, -1, -1):
            if j < L - 1:
                for i in range(nb):
                    y1, a1, f1 = y[b0 + i, j + 1], a[b0 + i, j + 1], f[b0 + i, j + 1]
                    for t in range(S):
                        m[i, t] = (a1 * ET[y1, t] + f1) * beta[i, t]
                beta = np.dot(m, AT)
                for i in range(nb):
                    tot = 0.0
                    for s in range(S):
                        tot += beta[i, s]
                    inv = 1.0 / tot if tot > 0.0 else 0.0  # an impossible suffix stays 0
                    for s in range(S):
                        beta[i, s] *= inv
            for i in range(nb):
                for s in range(S):
                    g[i, s] = pred[j, i, s] * beta[i, s]
            cav = np.dot(g, E)
            for i in range(nb):
                b = b0 + i
                tot = 0.0
                for v in range(V):
                    tot += cav[i, v]
                mt = 0.0
                for v in range(V):
                    c = cav[i, v] / tot if tot > 0.0 else np.nan
                    cavity[b, j, v] = c
                    w = c * (a[b, j] * (1.0 if v == y[b, j] else 0.0) + f[b, j])
                    marginals[b, j, v] = w
                    mt += w
                for v in range(V):
                    marginals[b, j, v] = marginals[b, j, v] / mt if mt > 0.0 else np.nan
                bad[i] |= not mt > 0.0
        for i in range(nb):
            b = b0 + i
            loglik[b] = -np.inf if dead[i] else logc[i]
            if dead[i]:
                for j in range(L):
                    for v in range(V):
                        marginals[b, j, v] = np.nan
            elif bad[i]:
                unstable[b] = True


def evidence_forward_backward(language, evidence: TokenEvidence, *, backend: str = "auto") -> SoftPosterior:
    """``loglik``, marginals and cavity marginals of ``language`` under token ``evidence`` (module docstring).

    Parameters
    ----------
    language : HMM, NGram, IntervalLanguage or SparseHMM
        Read through ``language.kernel_language()`` (an n-gram by its successors, anything else dense).
    evidence : TokenEvidence
        From :func:`masked_evidence` or :func:`uniform_noise_evidence` (or any ``weight, floor >= 0``).
    backend : {"auto", "numpy"}
        ``"auto"``: the compiled kernel :func:`_dense_kernel` for a dense HMM (and the interval
        language's HMM form), the NumPy recursion for an n-gram; ``"numpy"``: the NumPy recursion
        (:func:`_chunk`, the twin the kernel is tested against) for every language.
    """
    if backend not in ("auto", "numpy"):
        raise ValueError(f"unknown backend {backend!r}; choose 'auto' or 'numpy'")
    msg = _messages(language)
    y = np.ascontiguousarray(evidence.canvas, dtype=np.int64)
    B, L = y.shape
    a = np.ascontiguousarray(np.broadcast_to(evidence.weight, (B, L)), dtype=np.float64)
    f = np.ascontiguousarray(np.broadcast_to(evidence.floor, (B, L)), dtype=np.float64)
    loglik = np.empty(B)
    marginals = np.empty((B, L, msg.V))
    cavity = np.empty((B, L, msg.V))
    if backend == "auto" and isinstance(msg, _DenseMessages):
        unstable = np.zeros(B, dtype=np.bool_)
        threads = kernel_threads()
        block = max(1, min(_BLOCK_ROWS, -(-B // threads), _CHUNK_FLOATS // (L * msg.S)))
        with blas_single_thread():
            _dense_kernel(_KernelInputs(np.ascontiguousarray(msg.initial), msg.A, msg.AT, msg.E, msg.ET, y, a, f), block,
                          _KernelOutputs(loglik, marginals, cavity, unstable))
        if unstable.any():
            b = int(np.flatnonzero(unstable)[0])
            raise FloatingPointError(f"sequence {b} has log-likelihood {loglik[b]!r} but undefined posterior marginals: "
                                     "the scaled recursion underflowed (an extremely peaked model)")
        return SoftPosterior(loglik, marginals, cavity)
    threads = min(kernel_threads(), B)
    pieces = max(threads, -(-B * L * msg.S // _CHUNK_FLOATS))
    bounds = np.linspace(0, B, pieces + 1).astype(np.int64)

    def run(k: int) -> None:
        s = slice(int(bounds[k]), int(bounds[k + 1]))
        _chunk(msg, TokenEvidence(y[s], a[s], f[s]), loglik[s], marginals[s], cavity[s])

    with blas_single_thread():  # the chunks are the threads (NumPy releases the GIL in BLAS and ufuncs)
        if threads <= 1:
            for k in range(pieces):
                run(k)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(run, range(pieces)))
    return SoftPosterior(loglik, marginals, cavity)


def uniform_noise_posterior(language, canvas, alpha) -> SoftPosterior:
    """The uniform-noise oracle: ``log q(y)``, ``q(x_0^j | y)`` and ``q(x_0^j | y_{-j})`` of canvases ``y``
    whose position ``j`` shows the true token with probability ``alpha_j`` and a uniform token otherwise."""
    return evidence_forward_backward(language, uniform_noise_evidence(language, canvas, alpha))


def leave_one_out(language, tokens, mask=None) -> np.ndarray:
    """``q(x_j = v | x_{S \\ j})`` at every position ``j`` (``(B, L, V)``), ``S`` the observed positions
    (all when ``mask`` is None): the confidence a reviser re-scores a revealed token with. At a masked
    ``j`` it is the posterior marginal ``q(x_j | x_S)``."""
    tokens = np.asarray(tokens)
    if mask is None:
        mask = np.zeros(tokens.shape, dtype=np.bool_)
    return evidence_forward_backward(language, masked_evidence(language, tokens, mask)).cavity
