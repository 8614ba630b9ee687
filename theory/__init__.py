"""Symbolic and numeric forms of the lemmas and theorems of arXiv 2502.09622 (no torch, no matplotlib).

Every lemma, theorem and key proof step is a :class:`~theory.claims.Claim` in
:data:`~theory.claims.REGISTRY` (filled when the modules below are imported):

* :mod:`theory.information`: Lemmas A.1, A.3;
* :mod:`theory.chernoff`: Lemmas A.2, B.10;
* :mod:`theory.separators`: Definitions B.4/B.5 and the exact law of ``(S_i, |tau_i|, D_i)``;
* :mod:`theory.kl_chain`: Lemmas B.2, B.3, B.8, B.9 (against exact sampler laws);
* :mod:`theory.positive`: Lemmas B.11, B.12, Theorem 4.2;
* :mod:`theory.collision`: Lemmas C.1, C.5, C.6;
* :mod:`theory.negative`: Lemma C.2, Theorem 4.3, Example C.7, Theorem 4.4.

``check(claim, instance)`` evaluates one; :mod:`theory.search` runs many and hunts for violations.
"""

from .claims import REGISTRY, CheckResult, Claim, check, claims, get
from . import chernoff, collision, information, kl_chain, negative, positive  # noqa: E402,F401  (fill the registry)
from . import related  # noqa: E402,F401  (other papers' bounds: docs/theory-related.md)

__all__ = ["Claim", "CheckResult", "REGISTRY", "check", "claims", "get"]
