"""Other papers' bounds on the same exact numbers (docs/theory-related.md): the public entry point.

Importing this module registers the claims of

* :mod:`theory.related_schedules`: Li-Cai Theorem 1 (``LiCai.1``), Chen-Cong-Li's exact
  characterization and TC/DTC bounds (``CCL.*``), our reading of Lavenant-Zanella (``LZ.1``);
* :mod:`theory.related_step`: Fast-dLLM Theorem 1 (``FastdLLM.1``), EB-Sampler's certificate
  (``EB.1``), the SER certificate (``SER.1``);
* :mod:`theory.related_adaptive`: Cai-Li's entropy-sum rule (``CaiLi.1``);
* :mod:`theory.related_runtimes`: DUS's step cost (``DUS.1``), the information-gain score (``IG.1``),
  Fast-dLLM Theorem 1's tightness (``FastdLLM.1.tight``), the first reveals of LLaDA's confidence rule
  (``Prox.1``, ``Prox.2``), AATU's anchor (``AATU.1``);

and re-exports the bounds as plain functions (:mod:`theory.related_bounds`) for experiments to
overlay on exact curves, each returning a :class:`Bound` that says whether it is vacuous.
"""

from __future__ import annotations

from . import related_adaptive, related_calls, related_lossless, related_runtimes, related_schedules, related_step  # noqa: F401  (fill the registry)
from .related_adaptive import AdaptiveLaw, entropy_sum_law
from .related_bounds import (
    Bound,
    cai_li_iteration_bound,
    ccl_dtc_bound,
    ccl_dtc_factor,
    ccl_geometric_sizes,
    ccl_steps_bound,
    ccl_tc_bound,
    ccl_tc_factor,
    dyadic_ceiling,
    eb_certificate,
    fast_dllm_greedy_condition,
    fast_dllm_kl_bound,
    fast_dllm_kl_formula,
    fast_dllm_lp_bound,
    fast_dllm_tv_bound,
    iid_mi_bound,
    li_cai_bound,
    ordering_bound,
    ser_certificate,
)
from .related_info import Informations, informations

__all__ = [
    "AdaptiveLaw",
    "Bound",
    "Informations",
    "cai_li_iteration_bound",
    "ccl_dtc_bound",
    "ccl_dtc_factor",
    "ccl_geometric_sizes",
    "ccl_steps_bound",
    "ccl_tc_bound",
    "ccl_tc_factor",
    "dyadic_ceiling",
    "eb_certificate",
    "entropy_sum_law",
    "fast_dllm_greedy_condition",
    "fast_dllm_kl_bound",
    "fast_dllm_kl_formula",
    "fast_dllm_lp_bound",
    "fast_dllm_tv_bound",
    "iid_mi_bound",
    "informations",
    "li_cai_bound",
    "ordering_bound",
    "ser_certificate",
]
