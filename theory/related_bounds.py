"""Other papers' bounds on the factorization error, as plain numeric functions (docs/theory-related.md).

Each function returns a :class:`Bound`: the value, whether it is vacuous (no better than a bound
that holds trivially, which is named), and where it comes from with how sure we are of it:
``[R]`` restated by a secondary source, ``[V]`` read in the paper, ``[D]`` derived here from the
exact identities (I1)-(I4) (docs/methods/schedules.md). Where a paper's constant could not be
recovered the function says so in ``source`` and implements only what was derived.

Notation (the project's): ``q`` is the data law, ``p`` the sampler's; all logs natural.
``sum_mi = sum_i I(X_i ; X_{-i}) = L Z_L``, ``tc = sum_j Z_j``, ``dtc = L Z_L - tc``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

KL_ROUNDOFF = 1e-12  # a KL summed in float64 from O(1) terms is off by ~1e-15 (it can read -1e-16 at 0)

__all__ = [
    "Bound",
    "cai_li_iteration_bound",
    "ccl_dtc_bound",
    "ccl_dtc_factor",
    "ccl_geometric_sizes",
    "ccl_steps_bound",
    "ccl_tc_bound",
    "ccl_tc_factor",
    "dyadic_ceiling",
    "eb_certificate",
    "fast_dllm_greedy_condition",
    "fast_dllm_kl_bound",
    "fast_dllm_kl_formula",
    "fast_dllm_lp_bound",
    "fast_dllm_tv_bound",
    "iid_mi_bound",
    "li_cai_bound",
    "ordering_bound",
    "ser_certificate",
]


@dataclass(frozen=True)
class Bound:
    """A bound at one point.

    Attributes
    ----------
    value : float
        The bound.
    vacuous : bool
        ``value >= trivial``: the bound says nothing that ``trivial`` does not; report it as
        vacuous, never as "holds".
    trivial : float
        The bound that holds trivially for the same quantity (e.g. ``TC`` for an expected KL of a
        random order, 1 for a probability); ``inf`` when none is known.
    source : str
        Paper, statement, and tag (``[R]``, ``[V]``, ``[D]``).
    """

    value: float
    vacuous: bool
    trivial: float
    source: str


def _bound(value: float, trivial: float, source: str) -> Bound:
    return Bound(float(value), bool(value >= trivial), float(trivial), source)


def _check_int(name: str, x, lo: int = 1) -> int:
    if int(x) != x or x < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {x!r}")
    return int(x)


def dyadic_ceiling(s: int) -> int:
    """``2^ceil(log2 s)`` for an integer ``s >= 1``, exactly (integer bit length, no float log)."""
    return 1 << (_check_int("s_max", s) - 1).bit_length()


def li_cai_bound(sum_mi: float, length: int, s_max: int, tc: float = math.inf) -> Bound:
    """Li-Cai Theorem 1 with the oracle (``eps_train = 0``): ``(2^ceil(log2 s_max) - 1)/L * sum_mi``.

    Bounds ``E_M KL(q || p_M)`` for deterministic block sizes with maximum ``s_max`` and a
    uniformly random order (arXiv 2505.21400, [R]). ``tc`` (the one-step error, which bounds every
    such schedule) marks it vacuous.
    """
    L = _check_int("length", length)
    return _bound((dyadic_ceiling(s_max) - 1) / L * sum_mi, tc, "Li-Cai 2505.21400 Thm 1 [R]")


def ordering_bound(sum_mi: float, length: int, s_max: int, tc: float = math.inf) -> Bound:
    """``(s_max - 1)/L * sum_mi = (s_max - 1) Z_L``: each block's error is at most ``(k_t - 1)`` times
    its rise of ``Z``, which telescopes ([D], docs/theory-related.md); never above Li-Cai's."""
    L = _check_int("length", length)
    return _bound((_check_int("s_max", s_max) - 1) / L * sum_mi, tc, "(I4) ordering below Li-Cai Thm 1 [D]")


def iid_mi_bound(sum_mi: float, pi: Sequence[float], tc: float = math.inf) -> Bound:
    """``E_tau KL <= max_i pi_i * sum_mi`` for the i.i.d. step assignment ([D]).

    ``E_tau KL = L`` times the left-Riemann error of ``g(a) = E Z_{1+Bin(L-1,a)}`` (non-decreasing,
    ``g(0) = 0``, ``g(1) = Z_L``), so it is at most ``L max_i pi_i (g(1) - g(0))``. It is the
    L-free, tokens-per-step form (``L max pi = L/N`` for the linear schedule) of the bounds
    Lavenant-Zanella announce (2510.25544, [R]); their constants were not recovered.
    """
    return _bound(float(np.max(np.asarray(pi, dtype=np.float64))) * sum_mi, tc,
                  "our L-free bound in the form of Lavenant-Zanella 2510.25544 [D]")


def _sizes(sizes: Sequence[int], length: int) -> np.ndarray:
    k = np.asarray(sizes, dtype=np.int64)
    if k.ndim != 1 or k.size < 1 or np.any(k < 1) or int(k.sum()) != length:
        raise ValueError(f"block sizes must be integers >= 1 summing to L = {length}, got {list(sizes)!r}")
    return k


def ccl_dtc_factor(sizes: Sequence[int]) -> float:
    """``rho_DTC = max_t (k_t - 1) / (s_{t-1} + 1)`` (0 for single-token blocks)."""
    k = _sizes(sizes, int(np.sum(sizes)))
    s = np.concatenate([[0], np.cumsum(k)[:-1]])
    return float(np.max((k - 1) / (s + 1)))


def ccl_tc_factor(sizes: Sequence[int]) -> float:
    """``rho_TC = max_t (k_t - 1) / (L - s_{t-1} - 1)`` over blocks with ``k_t >= 2`` (0 if none)."""
    k = _sizes(sizes, int(np.sum(sizes)))
    L = int(k.sum())
    s = np.concatenate([[0], np.cumsum(k)[:-1]])
    big = k >= 2
    return float(np.max((k[big] - 1) / (L - s[big] - 1))) if np.any(big) else 0.0


def ccl_dtc_bound(sizes: Sequence[int], dtc: float, tc: float = math.inf) -> Bound:
    """``E_sigma KL <= rho_DTC * DTC`` for deterministic sizes, random order ([D]).

    From (I4), ``E KL = sum_t sum_{r<k_t} (k_t - r) f(s_{t-1} + r)`` and ``DTC = sum_j j f(j)``;
    ``(k - r)/(s + r)`` is largest at ``r = 1``. The shape of Chen-Cong-Li's DTC bound
    (2511.04647, [R]; their statement and constants were not recovered).
    """
    return _bound(ccl_dtc_factor(sizes) * dtc, tc, "Chen-Cong-Li 2511.04647 DTC bound, our derivation [D]")


def ccl_tc_bound(sizes: Sequence[int], tc: float) -> Bound:
    """``E_sigma KL <= rho_TC * TC`` ([D]; ``TC = sum_j (L - j) f(j)``, ``(k-r)/(L-s-r)`` largest at ``r = 1``)."""
    return _bound(ccl_tc_factor(sizes) * tc, tc, "Chen-Cong-Li 2511.04647 TC bound, our derivation [D]")


def ccl_geometric_sizes(eps: float, length: int, kind: str) -> np.ndarray:
    """Block sizes with ``rho_DTC <= eps`` (``kind="dtc"``: ``k = 1 + floor(eps (s+1))``, growing) or
    ``rho_TC <= eps`` (``kind="tc"``: ``k = 1 + floor(eps (L-s-1))``, shrinking), capped at ``L - s``."""
    if not 0 < eps <= 1:
        raise ValueError(f"eps must lie in (0, 1], got {eps!r}")
    L = _check_int("length", length)
    if kind not in ("dtc", "tc"):
        raise ValueError(f"kind must be 'dtc' or 'tc', got {kind!r}")
    out, s = [], 0
    while s < L:
        base = s + 1 if kind == "dtc" else L - s - 1
        k = min(1 + math.floor(eps * base), L - s)
        out.append(k)
        s += k
    return np.array(out, dtype=np.int64)


def ccl_steps_bound(eps: float, length: int, kind: str) -> int:
    """Upper bound on ``len(ccl_geometric_sizes(eps, L, kind))`` ([D], docs/theory-related.md).

    ``dtc``: ``ceil(1/eps) + ceil(log(max((L+1) eps, 1)) / log(1 + eps))`` (one token per step
    until ``s + 1 >= 1/eps``, then ``s + 1`` grows by ``1 + eps`` per step);
    ``tc``: ``1 + ceil(log(L - 1) / -log(1 - eps))`` (``m - 1`` remaining shrinks by ``1 - eps``),
    ``2`` for ``L = 2`` and ``1`` for ``L = 1`` (and ``eps = 1``: one step).
    The ``O((1 + log L)/eps)`` of Chen-Cong-Li ([R]).
    """
    L = _check_int("length", length)
    if kind == "dtc":
        return math.ceil(1 / eps) + math.ceil(math.log(max((L + 1) * eps, 1.0)) / math.log1p(eps))
    if kind == "tc":
        if L <= 2 or eps >= 1:
            return min(L, 2) if eps < 1 else 1
        return 1 + math.ceil(math.log(L - 1) / -math.log1p(-eps))
    raise ValueError(f"kind must be 'dtc' or 'tc', got {kind!r}")


def fast_dllm_greedy_condition(n: int, eps: float) -> bool:
    """Fast-dLLM Thm 1 (1): ``(n + 1) eps <= 1`` makes greedy parallel decoding equal greedy joint decoding ([V])."""
    return (_check_int("n", n) + 1) * eps <= 1


def _binary_entropy(e: float) -> float:
    return float(-e * math.log(e) - (1 - e) * math.log1p(-e)) if 0 < e < 1 else 0.0


def fast_dllm_kl_formula(n: int, eps: float, vocab: int) -> float:
    """``(n-1)(H_b(eps) + eps log(|V|-1))`` for any ``eps`` in ``(0, 1)``: the statement as printed,
    without the range ``eps <= 1 - 1/|V|`` its proof needs (claim ``FastdLLM.1.kl``)."""
    return (n - 1) * (_binary_entropy(eps) + eps * math.log(vocab - 1))


def fast_dllm_kl_bound(n: int, eps: float, vocab: int) -> Bound:
    """Fast-dLLM Thm 1 (2): ``KL(joint || product) < (n-1)(H_b(eps) + eps log(|V|-1))`` ([V]).

    Valid only for ``eps <= 1 - 1/|V|`` (docs/findings.md: the proof's monotonicity step; it
    fails e.g. at ``|V| = 2``, ``eps = 0.6``); trivial bound ``(n-1) log|V|``.
    """
    n, V = _check_int("n", n, 2), _check_int("vocab", vocab, 2)
    if not eps <= 1 - 1 / V:
        raise ValueError(f"the Fast-dLLM KL bound needs eps <= 1 - 1/|V| = {1 - 1 / V!r}, got {eps!r} "
                         "(docs/findings.md)")
    return _bound(fast_dllm_kl_formula(n, eps, V), (n - 1) * math.log(V), "Fast-dLLM 2505.22618 Thm 1 (2), forward KL [V]")


def fast_dllm_tv_bound(n: int, eps: float) -> Bound:
    """Fast-dLLM Thm 1 (2): ``TV(joint, product) < (3n - 1) eps / 2`` ([V]); trivial bound 1."""
    return _bound((3 * _check_int("n", n, 2) - 1) * eps / 2, 1.0, "Fast-dLLM 2505.22618 Thm 1 (2), TV [V]")


def fast_dllm_lp_bound(n: int, eps: float, p: float) -> Bound:
    """Fast-dLLM Thm 1 (2): ``||joint - product||_p < ((n-1)^p + 2n)^(1/p) eps`` ([V]); trivial ``2^(1/p)``."""
    n = _check_int("n", n, 2)
    if not p >= 1:
        raise ValueError(f"p must be >= 1, got {p!r}")
    return _bound(((n - 1) ** p + 2 * n) ** (1 / p) * eps, 2 ** (1 / p), "Fast-dLLM 2505.22618 Thm 1 (2), L_p [V]")


def eb_certificate(entropies: Sequence[float]) -> Bound:
    """EB-Sampler's certificate ``TC(X_U | .) <= sum_{l in U} H_l - max_{l in U} H_l`` ([M], exact fact).

    Trivial bound: ``sum_l H_l`` (``TC <= sum H - H(X_U)``, ``H(X_U) >= 0``).
    """
    h = np.asarray(entropies, dtype=np.float64)
    if h.ndim != 1 or h.size < 1:
        raise ValueError("entropies must be a non-empty vector")
    return Bound(float(h.sum() - h.max()), False, float(h.sum()), "EB-Sampler 2505.24857 [M]; exact")


def cai_li_iteration_bound(entropy: float, kl: float, gamma: float) -> Bound:
    """``E_q[T] <= 1 + (H(q) + KL(q || p)) / gamma`` for the *threshold-crossing* entropy-sum rule ([D]).

    The rule reveals masked positions in order of increasing predicted entropy up to and
    including the first at which the cumulative entropy exceeds ``gamma``; every iteration but
    the last reveals predicted entropy ``> gamma``, and along data trajectories the predicted
    entropies sum to ``H(q) + KL(q || p)`` by (I1). Cai-Li's ``O~(H(X)/eps)`` (2603.22248, [R])
    has this shape; their log factors, constants and gamma/eps map were not recovered. The
    "stay <= gamma" variant has no bound of this form (docs/theory-related.md).
    """
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    return _bound(1 + (entropy + kl) / gamma, math.inf, "Cai-Li 2603.22248, our derivation [D]")


def ser_certificate(kl: float) -> Bound:
    """(I3): ``SER(p) <= 1 - exp(-KL(q || p))`` (and ``<= 1 - exp(-E_tau KL)``); trivial bound 1 ([D]).

    A KL computed as a float sum is about ``-1e-16`` where it is exactly 0; it is used as given
    (the certificate is then ``-1e-16``), and only values below ``-KL_ROUNDOFF`` are refused.
    """
    if not kl >= -KL_ROUNDOFF:  # also refuses NaN
        raise ValueError(f"a KL divergence is >= 0, got {kl!r}")
    return _bound(-math.expm1(-kl), 1.0, "(I3) SER certificate [D]")
