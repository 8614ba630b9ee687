"""Claims of the schedule papers on exact numbers: Li-Cai Theorem 1, Chen-Cong-Li's information curve
and TC/DTC bounds, and our reading of Lavenant-Zanella (docs/theory-related.md).

Left sides are exact expected KLs of the oracle sampler with a uniformly random order:

* deterministic block sizes (Li-Cai's sampler): the left-Riemann error of ``Z``
  (:func:`numerics.exact.schedule_opt.block_error`), itself checked against enumeration of every
  ordered partition by claim ``CCL.1``;
* i.i.d. steps (the paper's sampler): the Markov chain rule
  (:func:`numerics.exact.markov.jensen_bound_markov`) or enumeration of every step assignment.

Right sides use ``TC``, ``DTC`` and ``sum_i I(X_i ; X_{-i})`` from subset entropies
(:mod:`theory.related_info`), not from ``Z``. Instances: random token-level Markov chains
(``L <= 48``) and tiny n-grams / HMMs (``V^L`` small).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from numerics.exact.enumerate import enumerate_output_law, instance_output_law
from numerics.exact.joint_table import joint_table, subset_entropies
from numerics.exact.markov import jensen_bound_markov
from numerics.exact.schedule_opt import block_error, information_curve
from numerics.schedules import from_u

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, probability_vector, register, require
from .related_bounds import (
    ccl_dtc_bound,
    ccl_geometric_sizes,
    ccl_steps_bound,
    ccl_tc_bound,
    dyadic_ceiling,
    iid_mi_bound,
    li_cai_bound,
    ordering_bound,
)
from .related_info import (
    MAX_TABLE_LENGTH,
    informations,
    is_markov,
    random_language,
    random_sizes,
)

__all__ = ["expected_kl_blocks", "expected_kl_blocks_enumerated"]

MAX_ENUMERATED_LENGTH = 4  # CCL.1 enumerates every ordered partition: at most L! = 24 instance laws
ATOL_ENTROPY_SUMS = 1e-11  # identities between sums of up to ~100 entropies of up to ~100 nats (1e-13 each)

E_sigma_KL = S.fn("E_sigma")(S.fn("KL")(S.tex("q"), S.tex(r"p_\sigma")))
E_tau_KL = S.fn("E_tau")(S.fn("KL")(S.tex("q"), S.tex(r"p(\cdot|\tau)")))
SUM_MI = S.tex(r"\sum_i I(X_i;X_{-i})")
TC, DTC = S.tex(r"\mathrm{TC}"), S.tex(r"\mathrm{DTC}")
s_max = S.tex(r"s_{\max}")
Z_L = S.tex("Z_L")


def expected_kl_blocks(language, length: int, sizes) -> float:
    """``E_sigma KL(q || p_sigma)`` of deterministic sizes: the left-Riemann error of the exact ``Z``."""
    return block_error(information_curve(language, length), list(sizes)).total.value


def expected_kl_blocks_enumerated(language, length: int, sizes) -> float:
    """The same by brute force: the mean of ``KL(q || p(.|partition))`` over every ordered partition
    with these block sizes (each equally likely under a uniformly random order)."""
    L = int(length)
    q = joint_table(language, L)
    parts = set()
    for order in itertools.permutations(range(L)):
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        parts.add(tuple(tuple(sorted(order[a:b])) for a, b in itertools.pairwise(bounds)))
    return float(np.mean([instance_output_law(q, None, p).kl for p in parts]))


# ---------------------------------------------------------------------------------------------
# instances


def _blocks_domain(inst) -> None:
    lang, L, sizes = inst["language"], inst["L"], inst["sizes"]
    require(int(L) == L and L >= 1, f"L must be an integer >= 1, got {L!r}")
    require(is_markov(lang) or L <= MAX_TABLE_LENGTH,
            f"a language that is not a token-level Markov chain needs L <= {MAX_TABLE_LENGTH} (joint table)")
    require(len(sizes) >= 1 and all(int(k) == k and k >= 1 for k in sizes) and sum(sizes) == L,
            f"sizes must be integers >= 1 summing to L = {L}, got {sizes!r}")


def _gen_blocks(rng: np.random.Generator) -> dict:
    lang, L = random_language(rng)
    return {"language": lang, "L": L, "sizes": random_sizes(rng, L)}


def _gen_enumerated(rng: np.random.Generator) -> dict:
    lang, L = random_language(rng, markov_max_length=MAX_ENUMERATED_LENGTH, table_max_length=MAX_ENUMERATED_LENGTH)
    return {"language": lang, "L": L, "sizes": random_sizes(rng, L)}


def _enumerated_domain(inst) -> None:
    _blocks_domain(inst)
    require(inst["L"] <= MAX_ENUMERATED_LENGTH, f"enumeration over orders needs L <= {MAX_ENUMERATED_LENGTH}")


def _info(inst):
    return informations(inst["language"], inst["L"])


def _lhs(inst) -> float:
    return expected_kl_blocks(inst["language"], inst["L"], inst["sizes"])


_BLOCKS_DOC = (
    "Random token-level Markov chains (V 2..4, L <= 48) and tiny n-grams/HMMs (V^L small); block sizes "
    "balanced, geometric or random. Left: exact E_sigma KL(q || p_sigma) of the oracle with these "
    "deterministic sizes and a uniformly random order, the left-Riemann error of the exact information "
    "curve Z (numerics.exact.schedule_opt; equal to enumeration of every ordered partition, claim CCL.1). "
    "TC, DTC and sum_i I(X_i; X_-i) on the right come from subset entropies, not from Z."
)
_blocks_params = {"language": "MarkovChain, NGram or HMM", "L": "length", "sizes": "block sizes k_1..k_T (sum L)"}

# ---------------------------------------------------------------------------------------------
# Li-Cai Theorem 1 and the ordering below it

register(Claim(
    id="LiCai.1", paper="Li-Cai 2505.21400, Theorem 1 [R]",
    title="E_M KL <= (2^ceil(log2 s_max) - 1)/L sum_i I(X_i; X_-i) (oracle, eps_train = 0)",
    lhs=E_sigma_KL, rhs=(2 ** S.fn("ceil")(S.fn("log2")(s_max)) - 1) / S.L * SUM_MI, relation="<=",
    evaluate=lambda inst: (_lhs(inst), li_cai_bound(_info(inst).sum_mi, inst["L"], max(inst["sizes"])).value),
    domain=_blocks_domain, generate=_gen_blocks,
    doc=_BLOCKS_DOC + " Statement restated by a secondary source (papernotes) [R]; eps_train = 0 for the oracle. "
    "Corollary 1's constant C_1 is not recovered and not checked.",
    steps=("LiCai.1.ordering", "LiCai.1.dyadic"), parameters=_blocks_params, atol=ATOL_CANCEL,
))
register(Claim(
    id="LiCai.1.ordering", paper="proof of Li-Cai Theorem 1 (our (I4) ordering) [D]",
    title="E_M KL <= (s_max - 1)/L sum_i I(X_i; X_-i) = (s_max - 1) Z_L",
    lhs=E_sigma_KL, rhs=(s_max - 1) / S.L * SUM_MI, relation="<=",
    evaluate=lambda inst: (_lhs(inst), ordering_bound(_info(inst).sum_mi, inst["L"], max(inst["sizes"])).value),
    domain=_blocks_domain, generate=_gen_blocks,
    doc=_BLOCKS_DOC + " Each block's error is at most (k_t - 1)(Z_{s_t} - Z_{s_{t-1}}), which telescopes to "
    "(s_max - 1) Z_L, and L Z_L = sum_i I(X_i; X_-i) (docs/theory-related.md).",
    parameters=_blocks_params, atol=ATOL_CANCEL,
))


def _dyadic(inst, exact: bool = False):
    s = int(inst["s_max"])
    return (Fraction(s - 1), Fraction(dyadic_ceiling(s) - 1)) if exact else (float(s - 1), float(dyadic_ceiling(s) - 1))


def _dyadic_domain(inst) -> None:
    require(int(inst["s_max"]) == inst["s_max"] and inst["s_max"] >= 1, "s_max must be an integer >= 1")


register(Claim(
    id="LiCai.1.dyadic", paper="proof of Li-Cai Theorem 1 (the recursion's dyadic rounding) [D]",
    title="s_max - 1 <= 2^ceil(log2 s_max) - 1: the ordering bound is never above Li-Cai's",
    lhs=s_max - 1, rhs=2 ** S.fn("ceil")(S.fn("log2")(s_max)) - 1, relation="<=",
    evaluate=_dyadic, exact=lambda inst: _dyadic(inst, True), domain=_dyadic_domain,
    generate=lambda rng: {"s_max": int(rng.choice([int(rng.integers(1, 70)), int(rng.integers(1, 10**9))]))},
    doc="Exact integers; 2^ceil(log2 s) is computed from the bit length of s - 1 (no floating log).",
    parameters={"s_max": "largest block size"},
))

# ---------------------------------------------------------------------------------------------
# Chen-Cong-Li: the exact characterization, the area identities, TC/DTC bounds

register(Claim(
    id="CCL.1", paper="Chen-Cong-Li 2511.04647, exact characterization [R]",
    title="E_sigma KL = left-Riemann error of the information curve Z (I4)",
    lhs=E_sigma_KL, rhs=S.tex(r"\sum_t \sum_{m<k_t} (Z_{s_{t-1}+m+1} - Z_{s_{t-1}+1})"), relation="==",
    evaluate=lambda inst: (expected_kl_blocks_enumerated(inst["language"], inst["L"], inst["sizes"]), _lhs(inst)),
    domain=_enumerated_domain, generate=_gen_enumerated,
    doc="Tiny languages, L <= 4. Left: brute force, the mean over every ordered partition with the given block "
    "sizes of KL(q || p(.|partition)) with the sampler's product law (numerics.exact.enumerate). Right: "
    "sum_t sum_{m<k_t} (Z_{s_{t-1}+m+1} - Z_{s_{t-1}+1}) from the exact Z. Chen-Cong-Li describe the "
    "minimal expected KL as a left-Riemann error [R]; this identity is our reconstruction (I4).",
    steps=("CCL.1.tc", "CCL.1.dtc", "CCL.1.mi"), parameters=_blocks_params, atol=ATOL_CANCEL,
))


def _curve(inst):
    return information_curve(inst["language"], inst["L"])


def _identity_domain(inst) -> None:
    _blocks_domain({**inst, "sizes": (inst["L"],)})


def _gen_identity(rng: np.random.Generator) -> dict:
    lang, L = random_language(rng)
    return {"language": lang, "L": L}


_identity_params = {"language": "MarkovChain, NGram or HMM", "L": "length"}
for _id, _title, _lhs_expr, _rhs_expr, _fn in (
    ("CCL.1.tc", "sum_j Z_j = TC (the area under Z)", S.tex(r"\sum_j Z_j"), TC,
     lambda inst: (_curve(inst).total_correlation, _info(inst).tc)),
    ("CCL.1.dtc", "L Z_L - TC = DTC (the area between Z and Z_L)", S.L * Z_L - TC, DTC,
     lambda inst: (inst["L"] * float(_curve(inst).z[-1]) - _curve(inst).total_correlation, _info(inst).dtc)),
    ("CCL.1.mi", "L Z_L = sum_i I(X_i; X_-i) = TC + DTC", S.L * Z_L, SUM_MI,
     lambda inst: (inst["L"] * float(_curve(inst).z[-1]), _info(inst).sum_mi)),
):
    register(Claim(
        id=_id, paper="Chen-Cong-Li 2511.04647, information curve facts [R]/[D]", title=_title,
        lhs=_lhs_expr, rhs=_rhs_expr, relation="==", evaluate=_fn, domain=_identity_domain, generate=_gen_identity,
        doc="Left from the exact information curve (Markov closed form or joint table); right from subset "
        "entropies (theory.related_info).", parameters=_identity_params, atol=ATOL_ENTROPY_SUMS,
    ))

_CCL_DOC = (" Chen-Cong-Li bound the error by TC and DTC with schedules of O((1 + log L)/eps) steps [R]; their "
            "statement and constants were not recovered. Checked here: our derivation from (I4), "
            "E KL = sum_t sum_{r<k_t} (k_t - r) f(s_{t-1}+r), with DTC = sum_j j f(j) and TC = sum_j (L - j) f(j).")
for _id, _kind, _plain, _factor, _base, _bound in (
    ("CCL.2", "DTC", "(k_t - 1)/(s_{t-1} + 1)", r"\frac{k_t - 1}{s_{t-1} + 1}", DTC,
     lambda inst: ccl_dtc_bound(inst["sizes"], _info(inst).dtc).value),
    ("CCL.3", "TC", "(k_t - 1)/(L - s_{t-1} - 1)", r"\frac{k_t - 1}{L - s_{t-1} - 1}", TC,
     lambda inst: ccl_tc_bound(inst["sizes"], _info(inst).tc).value),
):
    register(Claim(
        id=_id, paper=f"Chen-Cong-Li 2511.04647, {_kind} upper bound (our derivation) [D]",
        title=f"E_sigma KL <= max_t {_plain} * {_kind}",
        lhs=E_sigma_KL, rhs=S.tex(r"\max_t " + _factor) * _base, relation="<=",
        evaluate=lambda inst, bound=_bound: (_lhs(inst), bound(inst)),
        domain=_blocks_domain, generate=_gen_blocks, doc=_BLOCKS_DOC + _CCL_DOC,
        steps=(f"{_id}.steps",), parameters=_blocks_params, atol=ATOL_CANCEL,
    ))


def _steps_domain(inst) -> None:
    require(0 < inst["eps"] <= 1, "eps must lie in (0, 1]")
    require(int(inst["L"]) == inst["L"] and inst["L"] >= 1, "L must be an integer >= 1")


for _kind, _id in (("dtc", "CCL.2.steps"), ("tc", "CCL.3.steps")):
    register(Claim(
        id=_id, paper=f"Chen-Cong-Li 2511.04647, O((1 + log L)/eps) steps ({_kind.upper()} schedule) [D]",
        title=f"the geometric {_kind.upper()} schedule with factor <= eps has at most the stated number of steps",
        lhs=S.tex("T(\\epsilon, L)"), rhs=S.tex(f"T_{{{_kind}}}^{{bound}}(\\epsilon, L)"), relation="<=",
        evaluate=lambda inst, k=_kind: (float(len(ccl_geometric_sizes(inst["eps"], inst["L"], k))),
                                         float(ccl_steps_bound(inst["eps"], inst["L"], k))),
        domain=_steps_domain,
        generate=lambda rng: {"eps": float(rng.choice([rng.uniform(0.001, 1.0), 1 / int(rng.integers(1, 40))])),
                              "L": int(rng.choice([rng.integers(1, 64), rng.integers(64, 5000)]))},
        doc="Exact integers: the schedule of theory.related_bounds.ccl_geometric_sizes counted, against "
        "ccl_steps_bound (derivation in docs/theory-related.md).",
        parameters={"eps": "factor bound", "L": "length"},
    ))

# ---------------------------------------------------------------------------------------------
# Lavenant-Zanella (our reading): an L-free bound for i.i.d. steps, and the information profile


def _iid_domain(inst) -> None:
    _blocks_domain({**inst, "sizes": (inst["L"],)})
    probability_vector("pi", inst["pi"])


def _iid_lhs(inst) -> float:
    pi = np.asarray(inst["pi"], dtype=np.float64)
    sched = from_u(np.concatenate([[0.0], np.cumsum(pi) / pi.sum()]))
    if is_markov(inst["language"]):
        return jensen_bound_markov(inst["language"], inst["L"], sched).total.value
    return enumerate_output_law(inst["language"], inst["L"], sched).kl_jensen_bound.value


def _gen_iid(rng: np.random.Generator) -> dict:
    lang, L = random_language(rng, table_max_length=4)
    N = int(rng.integers(1, 5 if not is_markov(lang) else 40))
    pi = rng.dirichlet(np.full(N, float(rng.choice([0.5, 5.0]))))
    return {"language": lang, "L": L, "pi": pi}


register(Claim(
    id="LZ.1", paper="Lavenant-Zanella 2510.25544, L-free error bound (our form) [D]",
    title="E_tau KL <= max_i pi_i * sum_i I(X_i; X_-i) (i.i.d. steps; L max pi = tokens per step)",
    lhs=E_tau_KL, rhs=S.tex(r"\max_i \pi_i") * SUM_MI, relation="<=",
    evaluate=lambda inst: (_iid_lhs(inst), iid_mi_bound(_info(inst).sum_mi, inst["pi"]).value),
    domain=_iid_domain, generate=_gen_iid,
    doc="Lavenant-Zanella announce KL bounds that depend only on the average number of tokens per iteration, "
    "not on L [R]; their statement and constants were not recovered. Checked here: our bound of that form. "
    "E_tau KL is L times the left-Riemann error of g(a) = E Z_{1+Bin(L-1,a)} (non-decreasing, g(0) = 0, "
    "g(1) = Z_L). Left: Markov chain rule (numerics.exact.markov) or enumeration of every step assignment "
    "(tiny tables); right: subset entropies.",
    steps=("LZ.1.profile",), free={"pi": "simplex"},
    parameters={"language": "MarkovChain, NGram or HMM", "L": "length", "pi": "step probabilities"}, atol=ATOL_CANCEL,
))


def _profile(inst):
    """``Z_{i+1} - Z_i`` and the mean of ``I(X_a ; X_b | X_S)`` over ``|S| = i - 1``, ``a != b`` outside ``S``."""
    L, i = int(inst["L"]), int(inst["i"])
    z = information_curve(inst["language"], L).z
    H = subset_entropies(joint_table(inst["language"], L))
    vals = []
    for S_ in itertools.combinations(range(L), i - 1):
        m = sum(1 << j for j in S_)
        for a, b in itertools.permutations([j for j in range(L) if j not in S_], 2):
            vals.append(H[m | 1 << a] + H[m | 1 << b] - H[m | 1 << a | 1 << b] - H[m])
    return float(z[i] - z[i - 1]), float(np.mean(vals))


def _profile_domain(inst) -> None:
    require(int(inst["L"]) == inst["L"] and 2 <= inst["L"] <= MAX_TABLE_LENGTH, f"L must be in 2..{MAX_TABLE_LENGTH}")
    require(int(inst["i"]) == inst["i"] and 1 <= inst["i"] <= inst["L"] - 1, "i must be in 1..L-1")


def _gen_profile(rng: np.random.Generator) -> dict:
    lang, L = random_language(rng, markov_max_length=MAX_TABLE_LENGTH, table_max_length=5)
    return {"language": lang, "L": L, "i": int(rng.integers(1, L))}


register(Claim(
    id="LZ.1.profile", paper="Lavenant-Zanella 2510.25544, information profile (our reading) [D]",
    title="f(i) = Z_{i+1} - Z_i = mean of I(X_a; X_b | X_S) over |S| = i-1 and a != b outside S",
    lhs=S.tex("Z_{i+1} - Z_i"), rhs=S.fn("E")(S.tex(r"I(X_a;X_b|X_S)")), relation="==",
    evaluate=_profile, domain=_profile_domain, generate=_gen_profile,
    doc="Tiny tables (L <= 6): left from the exact curve, right by enumerating every S and ordered pair from "
    "subset entropies. The profile is the increment of Z by the chain rule of mutual information.",
    parameters={"language": "language", "L": "length", "i": "profile index"}, atol=ATOL_ENTROPY_SUMS,
))
