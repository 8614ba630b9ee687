"""The exact output law ``p`` of the factorized oracle sampler and the metrics it determines.

:class:`OutputLaw` is what the exact methods (:func:`numerics.exact.enumerate.enumerate_output_law`,
:func:`numerics.exact.dp.dp_output_law`) compute; :func:`law_metrics` turns it into the metrics of
``docs/methods/exact.md``, each an :class:`~numerics.sampling.denoiser.Estimate` saying how it was obtained.

Undefined branches. When one step reveals tokens that are jointly impossible under ``q`` (a
pruned language), the revealed prefix has ``q(x_R) = 0`` and the oracle posterior of every later
step is undefined (:class:`~numerics.sampling.denoiser.OracleDenoiser` raises). Every completion of such a
prefix lies outside ``supp q``, so none of the metrics depends on what a sampler does there. The
exact methods therefore stop such a branch the first time a later step would reveal something
from it and report its probability as ``undefined_mass``. Two conventions for ``p``
(``UNDEFINED_CONVENTIONS``):

* ``"drop"`` (default): ``p`` holds the law of the outputs of all other branches (including invalid
  outputs produced by a step after which nothing is revealed), so ``p.sum() + undefined_mass = 1``;
* ``"uniform"``: the convention of :mod:`numerics.sampling.samplers` (an undefined posterior row is replaced
  by the uniform law), so every later-revealed token of such a branch is uniform and independent;
  ``p`` then also holds those outputs and sums to 1 (for chi-squared tests of the sampler).

Every metric is the same under both conventions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numerics.estimate import Estimate
from numerics.tolerances import KL_ROUNDOFF_RTOL

__all__ = ["OutputLaw", "ExactMetrics", "law_metrics", "nonnegative_kl", "ser_kl_certificate", "UNDEFINED_CONVENTIONS"]

UNDEFINED_CONVENTIONS = ("drop", "uniform")


def check_undefined_convention(undefined: str) -> str:
    if undefined not in UNDEFINED_CONVENTIONS:
        raise ValueError(f"undefined must be one of {UNDEFINED_CONVENTIONS}, got {undefined!r}")
    return undefined


@dataclass(frozen=True)
class OutputLaw:
    """Exact law of the factorized oracle sampler's output for one ``(q, L, schedule)``.

    Attributes
    ----------
    q : (V,) * L float64
        The data law ``q(x)``.
    p : (V,) * L float64
        ``p(x) = E_tau[p(x | tau)]``, the sampler's output law (the mixture over instances ``tau``,
        Lemma B.2) restricted to branches where the oracle stays defined (module docstring).
    undefined_mass : float
        Probability of the branches on which the oracle became undefined (all outside ``supp q``).
    method : str
        How ``p`` was computed (``"enumerate"`` or ``"dp"``).
    schedule : str
        Name of the schedule (``Schedule.name``) and ``N``.
    undefined : str
        ``"drop"`` or ``"uniform"``: whether ``p`` includes the undefined branches' outputs (module docstring).
    """

    q: np.ndarray
    p: np.ndarray
    undefined_mass: float
    method: str
    schedule: str
    undefined: str = "drop"

    @property
    def length(self) -> int:
        return self.q.ndim

    @property
    def vocab_size(self) -> int:
        return self.q.shape[0]


@dataclass(frozen=True)
class ExactMetrics:
    """The metrics of ``docs/methods/exact.md`` for an exact output law (all natural logs).

    Attributes
    ----------
    kl : Estimate
        ``KL(q || p)`` of the sampler's true (mixture) output law.
    log_ter_gap : Estimate
        ``log TER(p) - log TER(q) = KL(q || p) / L``.
    ter : Estimate
        ``TER(p) = exp(E_{x~q}[-log p(x)] / L)``.
    ter_data : Estimate
        ``TER(q) = exp(H(q) / L)``.
    ser : Estimate
        ``SER(p) = 1 - p(supp q)``, computed as the (positive) mass outside the support plus the
        undefined mass.
    ser_kl_certificate : Estimate
        ``1 - exp(-KL(q || p))``, an upper bound on ``SER(p)`` (:func:`ser_kl_certificate`).
    gen_ppl : Estimate
        ``exp(E_{x~p}[-log q(x)] / L)``; ``inf`` when ``p`` leaves ``supp q``.
    gen_ppl_data : Estimate
        ``exp(E_{x~q}[-log q(x)] / L)``, the same number as ``ter_data``.
    kl_jensen_bound : Estimate or None
        ``E_tau KL(q || p(. | tau))`` (Lemma B.2), an upper bound on ``kl`` — a different
        quantity, kept under its own name; ``None`` when not computed.
    """

    kl: Estimate
    log_ter_gap: Estimate
    ter: Estimate
    ter_data: Estimate
    ser: Estimate
    ser_kl_certificate: Estimate
    gen_ppl: Estimate
    gen_ppl_data: Estimate
    kl_jensen_bound: Estimate | None = None


def _check_no_underflow(p_on_support: np.ndarray) -> None:
    """Raise if the sampler's probability of a supported sequence came out 0 (see :func:`law_metrics`)."""
    if np.any(p_on_support == 0):
        raise FloatingPointError(
            "p(x) = 0 for a sequence x in the support of q: impossible for the oracle sampler, so float64 "
            "underflow (probabilities below ~1e-308); the brute-force methods work in linear space"
        )


def nonnegative_kl(kl: float, scale: float = 1.0) -> float:
    """An exact ``KL >= 0`` as reported: a negative value of round-off size is 0.

    A float64 sum of ``q log(q / p)`` terms for ``p = q`` (or nearly) can come out at ``-1e-16``;
    a value in ``[-KL_ROUNDOFF_RTOL * max(1, scale), 0)`` (``scale``: the entropy ``H(q)`` in nats,
    the size of the terms summed) is reported as 0. A more negative value is no round-off (a law
    that does not sum to 1, a wrong table): ``ValueError``.
    """
    kl = float(kl)
    if kl >= 0 or math.isnan(kl):
        return kl + 0.0  # -0.0 -> 0.0
    tol = KL_ROUNDOFF_RTOL * max(1.0, abs(float(scale)))
    if kl < -tol:
        raise ValueError(f"KL = {kl!r} < 0 beyond round-off (tolerance {tol:.3g}): the laws compared are not "
                         "normalized or not the same support; a KL divergence is never negative")
    return 0.0


def ser_kl_certificate(kl: Estimate) -> Estimate:
    """``1 - exp(-KL(q || p))``, an upper bound on ``SER(p)`` (``docs/methods/exact.md``, (I3)).

    Exact for an exact ``kl``; for a Monte Carlo ``kl`` the delta-method standard error
    ``exp(-KL) se(KL)`` (the interval is then the normal one around the certificate).
    """
    return Estimate(-math.expm1(-kl.value), math.exp(-kl.value) * kl.stderr, kl.method, kl.samples,
                    confidence=kl.confidence)


def _exact(value: float, method: str) -> Estimate:
    return Estimate(float(value), 0.0, method)


def law_metrics(law: OutputLaw, kl_jensen_bound: Estimate | None = None,
                log_p: np.ndarray | None = None) -> ExactMetrics:
    """All metrics of :class:`ExactMetrics` from an exact :class:`OutputLaw` (each exact, stderr 0).

    ``KL(q || p) = sum_{q(x) > 0} q(x) log(q(x) / p(x))``. The oracle sampler gives every ``x`` in
    the support positive probability in every instance (``p(x | tau) >= q(x)^L``), so ``p(x) = 0``
    there can only be float64 underflow: ``FloatingPointError``, never a silent ``inf``. A KL that
    comes out negative by round-off (``-1e-16`` where ``p = q``) is reported as 0
    (:func:`nonnegative_kl`; a larger negative value raises). ``log_p`` (same shape as ``p``): the
    law's logarithm carried in log space by its method, used for the KL where ``p`` itself underflows
    (a decoder at a temperature near 0).
    """
    q, p = law.q.ravel(), law.p.ravel()
    L = law.length
    m = law.method
    on = q > 0
    qs, ps = q[on], p[on]
    entropy = float(-np.sum(qs * np.log(qs)))
    if log_p is None:
        _check_no_underflow(ps)
        log_ps = np.log(ps)
    else:
        log_ps = np.asarray(log_p, dtype=np.float64).ravel()[on]
        if np.any(log_ps == -np.inf):
            raise ValueError("log p(x) = -inf for a sequence x in the support of q: the law carried in log space "
                             "gives it no weight")
    kl = nonnegative_kl(np.sum(qs * (np.log(qs) - log_ps)), entropy)
    dropped = law.undefined_mass if law.undefined == "drop" else 0.0  # "uniform": already in p
    ser = float(dropped + p[~on].sum())
    if ser > 0:
        gen_ppl = math.inf
    else:
        gen_ppl = math.exp(float(-np.sum(ps * np.log(qs))) / L)
    ter_data = math.exp(entropy / L)
    return ExactMetrics(
        kl=_exact(kl, m),
        log_ter_gap=_exact(kl / L, m),
        ter=_exact(math.exp((entropy + kl) / L), m),
        ter_data=_exact(ter_data, "joint-table"),
        ser=_exact(ser, m),
        ser_kl_certificate=ser_kl_certificate(_exact(kl, m)),
        gen_ppl=_exact(gen_ppl, m),
        gen_ppl_data=_exact(ter_data, "joint-table"),
        kl_jensen_bound=kl_jensen_bound,
    )
