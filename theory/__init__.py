"""Symbolic and numeric forms of the lemmas and theorems of arXiv 2502.09622 (no torch, no matplotlib).

Every lemma, theorem and key proof step is a :class:`~theory.claims.Claim` in
:data:`~theory.claims.REGISTRY`, filled when the lemma modules below are imported. One module
per statement of the paper (with its proof steps), named after it:

* Appendix A: :mod:`~theory.a1_total_correlation`, :mod:`~theory.a2_chernoff`, :mod:`~theory.a3_pinsker`;
* Appendix B (positive result): :mod:`~theory.b2_b3_chain_rule`, :mod:`~theory.b8_dependencies`,
  :mod:`~theory.b9_expected_dependencies`, :mod:`~theory.b10_separator_chernoff`,
  :mod:`~theory.b11_dependencies`, :mod:`~theory.b12_explicit_schedule`, :mod:`~theory.thm42_ter`;
* Appendix C (SER): :mod:`~theory.c1_union_bound`, :mod:`~theory.c2_one_at_a_time`, :mod:`~theory.thm43_ser`,
  :mod:`~theory.c5_distinct_steps`, :mod:`~theory.c6_interval_errors`, :mod:`~theory.c7_interval_language`,
  :mod:`~theory.thm44_ser_lower`.

Exact quantities they share: :mod:`~theory.information` (entropy, KL, total correlation),
:mod:`~theory.separators` (Definitions B.4/B.5, the exact law of ``(S_i, |tau_i|, D_i)``),
:mod:`~theory.collision` (step multiplicities: ``l! e_l(pi)``, ``E[2^{-c}]``), :mod:`~theory.brute`
(brute-force sampler laws), :mod:`~theory.instances` (shared random instances).

Other papers' bounds on the same numbers are claims too: :mod:`~theory.related` (docs/theory-related.md).

Building blocks: :mod:`~theory.claims` (the :class:`Claim` type, the registry, :func:`check`),
:mod:`~theory.family` (a statement and its proof steps registered with their shared fields written
once), :mod:`~theory.parameters` (each claim's fields, defaults and command-line options),
:mod:`~theory.symbols` (the sympy names of the statements).

``check(claim, instance)`` evaluates one; :mod:`theory.search` runs many and hunts for violations.
"""

from . import (  # noqa: F401  (importing a lemma module registers its claims)
    a1_total_correlation,
    a2_chernoff,
    a3_pinsker,
    b2_b3_chain_rule,
    b8_dependencies,
    b9_expected_dependencies,
    b10_separator_chernoff,
    b11_dependencies,
    b12_explicit_schedule,
    c1_union_bound,
    c2_one_at_a_time,
    c5_distinct_steps,
    c6_interval_errors,
    c7_interval_language,
    related,  # noqa: F401  (other papers' bounds as claims: docs/theory-related.md)
    thm42_ter,
    thm43_ser,
    thm44_ser_lower,
)
from .b11_dependencies import b11_bound, pair_bound
from .b12_explicit_schedule import (
    b12_length_threshold,
    b12_schedule,
    b12_solve_eps,
    b12_steps,
)
from .c6_interval_errors import c6_bound
from .c7_interval_language import EPS_MAX, P_E_PAPER, p_e
from .claims import REGISTRY, CheckResult, Claim, check, claims, get
from .collision import collision_probability, distinct_probability, interval_validity
from .thm42_ter import Theorem42Constants, theorem42_constants
from .thm43_ser import thm43_ser_bound
from .thm44_ser_lower import (
    Threshold,
    arg_constant_l10,
    c9_argument_constant,
    c9_argument_limit,
    c9_bound,
    oracle_ser,
    true_threshold,
)

__all__ = [
    # the registry
    "Claim",
    "CheckResult",
    "REGISTRY",
    "check",
    "claims",
    "get",
    # exact quantities and explicit constants the experiments use
    "distinct_probability",
    "collision_probability",
    "interval_validity",
    "b11_bound",
    "pair_bound",
    "b12_schedule",
    "b12_steps",
    "b12_length_threshold",
    "b12_solve_eps",
    "Theorem42Constants",
    "theorem42_constants",
    "thm43_ser_bound",
    "c6_bound",
    "EPS_MAX",
    "P_E_PAPER",
    "p_e",
    "c9_bound",
    "Threshold",
    "c9_argument_constant",
    "c9_argument_limit",
    "arg_constant_l10",
    "oracle_ser",
    "true_threshold",
]
