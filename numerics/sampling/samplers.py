"""Samplers of the factorized reverse process (``docs/methods/sampling.md``), for any denoiser.

Every sampler here has one signature, ``(denoiser, schedule, n, length, rng, *, batch_size, ...)``,
and returns a :class:`SampleResult`. The denoiser is anything implementing
:class:`numerics.sampling.denoiser.Denoiser` (``denoiser(tokens, mask) -> (B, L, V)`` probabilities), so an
oracle and a trained network run through exactly the same code.

The process (an *instance* tau is an i.i.d. assignment of positions to steps, Definition B.1):

1. every position ``j`` gets a reveal step ``reveal_steps[j]`` in ``1..N`` with ``P(step = i) = pi_i``,
   independently (:meth:`Schedule.sample_steps`);
2. at step ``i`` the positions of ``tau_i`` are drawn **independently** from the denoiser's
   marginals given the tokens revealed at steps ``< i``.

Draws (``draw=``):

* ``"float64"`` (default): steps by the float64 inverse CDF of ``u``, then one uniform
  ``U[b, j]`` per position, drawn up front, and the token is the float64 inverse CDF of the
  marginal at ``U[b, j]`` (a token of probability 0 has an empty interval and is never drawn).
  The random stream is ``reveal_steps = schedule.sample_steps(rng, (B, L))`` then ``U = rng.random((B, L))``
  per batch, so the fast oracle path (:func:`sample_oracle`) reproduces the generic path
  sample by sample, not only in law.
* ``"float32"``: MDLM's ``ddpm_cache`` update reproduced for the float32 ablation (``docs/methods/sampling.md``): at each
  step every masked position draws one class among ``V`` tokens and ``[m]`` with weights
  ``p(v) (m_t - m_s)`` and ``m_s`` (``m = 1 - u``, masking probabilities), by float32 Gumbel-max
  ``argmax(w / (1e-10 - log(U + 1e-10)))`` with float32 uniforms. Same law in exact arithmetic;
  in float32 rare tokens are under-drawn at many steps.

Network calls (``cache=``): with ``cache=True`` (``ddpm_cache``) the denoiser is called at step 1
and again at a step only when the batch changed since the last call, so a batch costs
``NFE = 1 + #{i < N : tau_i non-empty in the batch}`` calls (``docs/methods/sampling.md``); with
``cache=False`` it is called at every step (``NFE = N``). ``SampleResult.nfe`` holds the realized
count of every batch.

Undefined posteriors: on a pruned language, tokens revealed together can be jointly impossible;
the sequence is then outside ``supp q`` whatever follows, and the oracle posterior given such
tokens is undefined (:class:`OracleDenoiser` with ``strict=False`` returns NaN rows). Convention:
a marginal row that is not finite, or sums to 0, is *undefined* and the token is drawn uniformly
from ``0..V-1`` (through the same inverse CDF). No metric depends on this choice (SER and KL only
see ``p`` on ``supp q``); it only keeps the sampler defined.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from numerics.draws import draw_inverse_cdf, gumbel_argmax_float32
from numerics.languages.hmm import Language
from numerics.sampling.denoiser import Denoiser, OracleDenoiser
from numerics.sampling.oracle import reveal_sample
from numerics.sampling.oracle.chain import chain_reveal_sample
from numerics.schedules import Schedule

__all__ = [
    "Sampler",
    "RandomOrder",
    "SampleResult",
    "sample_factorized",
    "sample_one_at_a_time",
    "sample_oracle",
    "ddpm_cache_nfe",
    "DRAWS",
    "PATHS",
]

DRAWS = ("float64", "float32")
PATHS = ("auto", "generic", "oracle")


@dataclass(frozen=True, eq=False)
class SampleResult:
    """Samples of a factorized sampler and how they were produced.

    Attributes
    ----------
    tokens : (n, L) int64
        The sampled sequences.
    reveal_steps : (n, L) int64
        ``reveal_steps[b, j]`` = the step ``i`` in ``1..N`` at which position ``j`` was revealed
        (``tau_i = {j : reveal_steps[b, j] = i}``).
    nfe : (n_batches,) int64
        Realized network calls of each batch (``ddpm_cache`` or uncached, see ``cache``).
    batch_sizes : (n_batches,) int64
        Sequences in each batch (the cache is shared by a batch, so NFE depends on it).
    n_steps : int
        ``N``.
    cache : bool
    draw : str
        ``"float64"`` or ``"float32"``.
    path : str
        ``"generic"`` (denoiser calls), ``"oracle-ngram"`` / ``"oracle-hmm"`` (fast exact kernels)
        or ``"one-at-a-time"``.
    nfe_sequence : (n,) int64 or None
        Denoiser calls each sequence needed on its own (adaptive samplers, whose sequences stop
        at different steps); ``None`` for the i.i.d.-schedule samplers, whose calls a batch shares.
    log_p : (n,) float64 or None
        ``log p(x)`` of each output along its one reveal path, where the sampler computed it while
        sampling (a path-deterministic decoder on its compiled path, :mod:`numerics.sampling.decoders`);
        ``None`` else.
    """

    tokens: np.ndarray
    reveal_steps: np.ndarray
    nfe: np.ndarray
    batch_sizes: np.ndarray
    n_steps: int
    cache: bool
    draw: str
    path: str
    nfe_sequence: np.ndarray | None = None
    log_p: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.tokens.shape[0]

    @property
    def length(self) -> int:
        return self.tokens.shape[1]

    @property
    def mean_nfe(self) -> float:
        """Mean realized network calls per batch."""
        return float(np.mean(self.nfe))

    @property
    def calls(self) -> np.ndarray:
        """``(n,)`` network calls per sequence, one name for every sampler: ``nfe_sequence`` where
        sequences stop on their own, else each sequence's batch count (a call serves its whole batch)."""
        if self.nfe_sequence is not None:
            return self.nfe_sequence
        return np.repeat(self.nfe, self.batch_sizes)


class Sampler(abc.ABC):
    """A rule that decides which masked positions each step reveals, for any denoiser.

    Every sampler has one method, ``sample(denoiser, n, length, rng, *, batch_size=None,
    path="auto") -> SampleResult``; the denoiser is anything following
    :class:`numerics.sampling.denoiser.Denoiser` (the oracle or a trained network), and
    ``path="auto"`` takes a fast exact kernel for the oracle where one exists. :class:`RandomOrder`
    is the i.i.d. schedule sampler of this module; the confidence-based rules are in
    :mod:`numerics.sampling.adaptive`.
    """

    kind: ClassVar[str]

    @abc.abstractmethod
    def sample(self, denoiser: Denoiser, n: int, length: int, rng: np.random.Generator, *,
               batch_size: int | None = None, path: str = "auto") -> SampleResult:
        """``n`` sequences of ``length`` tokens (see the class docstring)."""

    @property
    @abc.abstractmethod
    def label(self) -> str:
        """A short human description (rule and parameters)."""


@dataclass(frozen=True)
class RandomOrder(Sampler):
    """The i.i.d. schedule sampler: :func:`sample_factorized` with ``schedule``, ``cache`` and ``draw``."""

    schedule: Schedule
    cache: bool = True
    draw: str = "float64"
    kind: ClassVar[str] = "random"

    @property
    def label(self) -> str:
        return f"random, {self.schedule.name}"

    def sample(self, denoiser: Denoiser, n: int, length: int, rng: np.random.Generator, *,
               batch_size: int | None = None, path: str = "auto") -> SampleResult:
        return sample_factorized(denoiser, self.schedule, n, length, rng, batch_size=batch_size, cache=self.cache,
                                 draw=self.draw, path=path)


def _check_args(schedule: Schedule, n: int, length: int, rng: np.random.Generator, batch_size: int | None) -> int:
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a numerics.schedules.Schedule, got {type(schedule).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if int(n) != n or n < 1:
        raise ValueError(f"need n >= 1 sequences, got {n!r}")
    if int(length) != length or length < 1:
        raise ValueError(f"need length >= 1, got {length!r}")
    bs = int(n) if batch_size is None else batch_size
    if int(bs) != bs or bs < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    return int(bs)


def _batches(n: int, batch_size: int) -> list[int]:
    return [min(batch_size, n - start) for start in range(0, n, batch_size)]


def ddpm_cache_nfe(reveal_steps: np.ndarray, n_steps: int) -> int:
    """Network calls of ``ddpm_cache`` for one batch with reveal steps ``reveal_steps`` (any shape).

    ``1 + #{i < N : some position of the batch is revealed at step i}`` (``docs/methods/sampling.md``).
    """
    revealing = np.unique(reveal_steps)
    return int(1 + np.count_nonzero(revealing < n_steps))


def _call(denoiser: Denoiser, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    probs = np.asarray(denoiser(tokens, mask))
    if probs.shape != tokens.shape + (denoiser.vocab_size,):
        raise ValueError(
            f"denoiser returned shape {probs.shape}, expected {tokens.shape + (denoiser.vocab_size,)} (B, L, V)"
        )
    return probs


def _run_generic(denoiser: Denoiser, reveal_steps: np.ndarray, uniforms: np.ndarray, n_steps: int, cache: bool) -> tuple[np.ndarray, int]:
    """Reveal ``reveal_steps``-scheduled positions with float64 inverse-CDF draws; returns (tokens, nfe)."""
    tokens = np.zeros(reveal_steps.shape, dtype=np.int64)
    mask = np.ones(reveal_steps.shape, dtype=bool)
    probs = None
    nfe = 0
    for i in range(1, n_steps + 1):
        if probs is None or not cache:
            probs = _call(denoiser, tokens, mask)
            nfe += 1
        b, j = np.nonzero(reveal_steps == i)
        if b.size:
            tokens[b, j] = draw_inverse_cdf(probs[b, j], uniforms[b, j])
            mask[b, j] = False
            probs = None  # the batch changed: the cache is stale
    return tokens, nfe


def _run_gumbel32(
    denoiser: Denoiser, schedule: Schedule, batch: int, length: int, rng: np.random.Generator, cache: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """MDLM's float32 Gumbel-max ``ddpm_cache`` update (module docstring); returns (tokens, reveal_steps, nfe)."""
    V = denoiser.vocab_size
    tokens = np.zeros((batch, length), dtype=np.int64)
    reveal_steps = np.zeros((batch, length), dtype=np.int64)
    mask = np.ones((batch, length), dtype=bool)
    move = (1.0 - schedule.u).astype(np.float32)  # masking probability 1 - alpha(t_i), as MDLM holds it
    probs = None
    nfe = 0
    for i in range(1, schedule.n_steps + 1):
        if probs is None or not cache:
            probs = _call(denoiser, tokens, mask)
            nfe += 1
        b, j = np.nonzero(mask)
        p32 = probs[b, j].astype(np.float32)
        undefined = ~np.all(np.isfinite(p32), axis=1) | (p32.sum(axis=1) <= 0)
        p32[undefined] = np.float32(1.0 / V)
        weights = np.empty((b.size, V + 1), dtype=np.float32)
        weights[:, :V] = p32 * (move[i - 1] - move[i])
        weights[:, V] = move[i]
        choice = gumbel_argmax_float32(weights, rng)
        hit = choice < V
        if np.any(hit):
            tokens[b[hit], j[hit]] = choice[hit]
            reveal_steps[b[hit], j[hit]] = i
            mask[b[hit], j[hit]] = False
            probs = None
    if np.any(mask):  # u_N = 1 gives [m] weight 0 at step N; cannot happen unless every token weight underflowed
        raise FloatingPointError("float32 draw left positions masked after the last step")
    return tokens, reveal_steps, nfe


def _is_oracle(denoiser: Denoiser) -> bool:
    return isinstance(denoiser, OracleDenoiser)


def sample_factorized(
    denoiser: Denoiser,
    schedule: Schedule,
    n: int,
    length: int,
    rng: np.random.Generator,
    *,
    batch_size: int | None = None,
    cache: bool = True,
    draw: str = "float64",
    path: str = "auto",
) -> SampleResult:
    """Sample ``n`` sequences of ``length`` tokens with the factorized reverse process.

    Parameters
    ----------
    denoiser : Denoiser
        ``denoiser(tokens, mask) -> (B, L, V)`` marginals; :class:`OracleDenoiser` for the oracle.
    schedule : Schedule
        Supplies ``pi`` (reveal-step law) and ``N``.
    n, length : int
    rng : numpy.random.Generator
    batch_size : int, optional
        Sequences per batch (default: all ``n`` in one batch). Batches share the ``ddpm_cache``.
    cache : bool
        ``ddpm_cache`` semantics (module docstring); ``False`` calls the denoiser at every step.
    draw : {"float64", "float32"}
        Exact float64 inverse-CDF draws, or MDLM's float32 Gumbel-max (ablation only).
    path : {"auto", "generic", "oracle"}
        ``"oracle"`` runs the fast exact kernels of :func:`sample_oracle` (oracle denoiser and
        float64 draws only; same random stream, so the same samples); ``"auto"`` picks it for an
        :class:`OracleDenoiser` with float64 draws and the generic loop otherwise.

    Returns
    -------
    SampleResult
    """
    bs = _check_args(schedule, n, length, rng, batch_size)
    if draw not in DRAWS:
        raise ValueError(f"unknown draw {draw!r}; choose one of {DRAWS}")
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}; choose one of {PATHS}")
    if not isinstance(denoiser, Denoiser):
        raise TypeError(f"{type(denoiser).__name__} does not implement the Denoiser protocol (vocab_size, __call__)")
    fast = path == "oracle" or (path == "auto" and _is_oracle(denoiser) and draw == "float64")
    if fast:
        if not _is_oracle(denoiser) or draw != "float64":
            raise ValueError("path='oracle' needs an OracleDenoiser and draw='float64'")
        return sample_oracle(denoiser.language, schedule, n, length, rng, batch_size=bs, cache=cache)
    N = schedule.n_steps
    tok, stp, nfe = [], [], []
    for B in _batches(int(n), bs):
        if draw == "float64":
            reveal_steps = schedule.sample_steps(rng, (B, length))
            uniforms = rng.random((B, length))
            tokens, calls = _run_generic(denoiser, reveal_steps, uniforms, N, cache)
        else:
            tokens, reveal_steps, calls = _run_gumbel32(denoiser, schedule, B, length, rng, cache)
        tok.append(tokens)
        stp.append(reveal_steps)
        nfe.append(calls)
    return SampleResult(
        np.concatenate(tok), np.concatenate(stp), np.asarray(nfe, dtype=np.int64),
        np.asarray(_batches(int(n), bs), dtype=np.int64), N, cache, draw, "generic",
    )


def _random_order_steps(rng: np.random.Generator, batch: int, length: int) -> np.ndarray:
    """Steps ``1..L`` forming a uniformly random permutation of the positions, per row."""
    order = np.argsort(rng.random((batch, length)), axis=1)
    reveal_steps = np.empty((batch, length), dtype=np.int64)
    np.put_along_axis(reveal_steps, order, np.arange(1, length + 1)[None, :], axis=1)
    return reveal_steps


def sample_one_at_a_time(
    denoiser: Denoiser,
    n: int,
    length: int,
    rng: np.random.Generator,
    *,
    batch_size: int | None = None,
    cache: bool = True,
    path: str = "auto",
) -> SampleResult:
    """The AR limit: ``N = L`` steps revealing one uniformly random new position each.

    Every step draws a single token from its exact conditional, so with the oracle the output
    law is exactly ``q`` (chain rule) and the SER is 0. Random stream per batch: the order
    (``rng.random((B, L))`` argsorted) then ``U = rng.random((B, L))``. ``path`` as in
    :func:`sample_factorized`.
    """
    schedule = Schedule(np.linspace(0.0, 1.0, length + 1), f"one-at-a-time(L={length})")  # only N is used
    bs = _check_args(schedule, n, length, rng, batch_size)
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}; choose one of {PATHS}")
    fast = path == "oracle" or (path == "auto" and _is_oracle(denoiser))
    if fast and not _is_oracle(denoiser):
        raise ValueError("path='oracle' needs an OracleDenoiser")
    tok, stp, nfe = [], [], []
    for B in _batches(int(n), bs):
        reveal_steps = _random_order_steps(rng, B, length)
        uniforms = rng.random((B, length))
        if fast:
            tokens = reveal_sample(denoiser.language, reveal_steps, uniforms)
            calls = ddpm_cache_nfe(reveal_steps, length) if cache else length
        else:
            tokens, calls = _run_generic(denoiser, reveal_steps, uniforms, length, cache)
        tok.append(tokens)
        stp.append(reveal_steps)
        nfe.append(calls)
    return SampleResult(
        np.concatenate(tok), np.concatenate(stp), np.asarray(nfe, dtype=np.int64),
        np.asarray(_batches(int(n), bs), dtype=np.int64), length, cache, "float64",
        "one-at-a-time" + ("-oracle" if fast else ""),
    )


def sample_oracle(
    language: Language,
    schedule: Schedule,
    n: int,
    length: int,
    rng: np.random.Generator,
    *,
    batch_size: int | None = None,
    cache: bool = True,
) -> SampleResult:
    """The factorized sampler with the oracle denoiser of ``language``, by fast exact kernels.

    Same random stream and the same draws as ``sample_factorized(OracleDenoiser(language,
    strict=False), ..., path="generic")``: identical samples up to float64 round-off of the
    marginals (an inverse-CDF boundary within ~1e-15 of a uniform). Instead of one masked
    forward-backward per step it keeps, per sequence, forward and backward messages that stay
    valid until a reveal invalidates them, recomputes only what a query needs, and for n-grams
    restarts at the nearest separator (a run of ``n-1`` revealed tokens, Definition B.4) instead
    of the sequence end. See :mod:`numerics.sampling.oracle`. A first-order chain in the sparse layout
    (a word-level fitted bigram) is sampled by the closed-form posterior of
    :mod:`numerics.sampling.oracle.chain` instead (same draws). The NFE reported is what
    ``ddpm_cache`` (or the uncached sampler) would have spent on the same batch.
    """
    if not hasattr(language, "kernel_language"):
        raise TypeError(f"language must be a language (numerics.languages.Language), got {type(language).__name__}")
    language = language.kernel_language()  # the kernels' form (the interval language: its minimal HMM)
    bs = _check_args(schedule, n, length, rng, batch_size)
    N = schedule.n_steps
    sizes = _batches(int(n), bs)
    stp, uni = [], []
    for B in sizes:  # the generic path's random stream, batch by batch; one kernel call for all batches
        stp.append(schedule.sample_steps(rng, (B, length)))
        uni.append(rng.random((B, length)))
    nfe = [ddpm_cache_nfe(s, N) if cache else N for s in stp]
    reveal_steps = np.concatenate(stp)
    uniforms = np.concatenate(uni)
    tokens = chain_reveal_sample(language, reveal_steps, uniforms)  # a sparse first-order chain: closed form
    if tokens is None:
        tokens = reveal_sample(language, reveal_steps, uniforms)
    path = f"oracle-{language.kind}"
    return SampleResult(
        tokens, reveal_steps, np.asarray(nfe, dtype=np.int64), np.asarray(sizes, dtype=np.int64), N, cache, "float64", path
    )
