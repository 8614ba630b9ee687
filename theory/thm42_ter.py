"""Theorem 4.2 / B.13: ``log TER(p) <= log TER(q) + eps_learning + 4 eps log|V|`` with ``N(eps, n)`` steps.

``log TER(p) - log TER(q) = KL(q || p) / L`` (natural logs), so Lemma B.12's
``KL(q||p) <= 4 eps L log|V| + L eps_learning`` divided by ``L`` is the theorem: for ``L >= L_0(eps, n)``
the B.12 schedule with its ``N(eps, n)`` steps (independent of ``L``) keeps the TER gap below
``4 eps log|V| + eps_learning``. :func:`theorem42_constants` gives every explicit constant
(docs/derivations.md, B.12); the oracle check on the Table 1 2-gram uses numerics' exact Markov
chain rule at ``L = L_0`` and ``2 L_0``.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from numerics.exact.markov import jensen_bound_markov
from numerics.languages.presets import load_language

from . import symbols as S
from .b12_explicit_schedule import (
    B12_PARAMS,
    b12_constants,
    b12_domain,
    b12_length_threshold,
    b12_schedule,
    b12_sides,
    gen_b12,
)
from .claims import ATOL_CANCEL
from .family import ClaimFamily
from .instances import markov_domain
from .parameters import Parameter

__all__ = ["Theorem42Constants", "theorem42_constants"]


class Theorem42Constants(dict):
    """``eps, n, N, N_bound, L_0, c`` and the bound ``4 eps log|V| + eps_learning`` on ``log TER(p) - log TER(q)``."""


def theorem42_constants(eps: float, n: int, V: int, eps_learning: float = 0.0) -> Theorem42Constants:
    """Every explicit constant of Lemma B.12 / Theorem 4.2 for ``(eps, n, |V|)`` (docs/derivations.md)."""
    return Theorem42Constants(**b12_constants(eps, n), V=V, ter_gap_bound=4 * eps * math.log(V) + eps_learning)


def _t42(inst):
    V = inst["V"]
    return (b12_sides(inst)["dependencies"] * math.log(V) / inst["L"] + inst["eps_learning"],
            inst["eps_learning"] + 4 * inst["eps"] * math.log(V))


def _gen_42_markov(rng: np.random.Generator) -> dict:
    eps = float(rng.choice([0.5, 0.3, 0.25]))
    L = b12_length_threshold(eps, 2) * int(rng.integers(1, 3))
    return {"eps": eps, "n": 2, "L": L, "V": 8, "eps_learning": 0.0, "language": load_language("2gram")}


def _markov_domain(inst) -> None:
    b12_domain(inst)
    markov_domain(inst)


def _t42_markov(inst):
    lang, L, eps = inst["language"], int(inst["L"]), float(inst["eps"])
    jensen = jensen_bound_markov(lang, L, b12_schedule(eps, 2)).total.value
    return jensen / L, 4 * eps * math.log(lang.vocab_size)


t42 = ClaimFamily("4.2", "Theorem 4.2 / B.13", domain=b12_domain)
t42.statement(
    "log TER(p) <= log TER(q) + eps_learning + 4 eps log|V| with N(eps, n) steps, L >= L_0",
    sp.log(S.tex(r"\mathrm{TER}(p)")) - sp.log(S.tex(r"\mathrm{TER}(q)")), "<=", S.eps_l + 4 * S.eps * sp.log(S.V),
    _t42, generate=gen_b12, steps=("B.12", "4.2.markov"),
    doc=("log TER(p) - log TER(q) = KL(q||p) / L. The left side is the certificate of Lemmas B.2 + B.9 "
         "divided by L (E_tau sum (|tau_i| - D_i) exact), the right side the theorem's bound. "
         "Constants: theory.thm42_ter.theorem42_constants."),
    parameters=B12_PARAMS,
    constants=lambda v: dict(theorem42_constants(float(v["eps"]), v["n"], v["V"], float(v["eps_learning"]))),
)
t42.step(
    "markov", "Oracle, 2-gram preset, B.12 schedule, L >= L_0: E_tau KL(q || p(.|tau)) / L <= 4 eps log|V|",
    S.fn("E_tau")(S.KLq(S.tex("q"), S.tex(r"p(\cdot|\tau)"))) / S.L, "<=", 4 * S.eps * sp.log(S.V), _t42_markov,
    paper="proof of Theorem 4.2 / B.13 (oracle, the 2-gram preset at L >= L_0)", atol=ATOL_CANCEL,
    domain=_markov_domain, generate=_gen_42_markov,
    parameters={
        "eps": Parameter("epsilon in (0, 1)"),
        "L": Parameter("length, >= L_0 (default L_0(eps, 2))", default=lambda v: b12_length_threshold(float(v["eps"]), 2)),
        "n": Parameter("n-gram order", default=2, fixed=True),
        "V": Parameter("vocabulary size of the 2-gram preset", default=8, fixed=True),
        "eps_learning": Parameter("the oracle", default=0.0, fixed=True),
        "language": Parameter("the Table 1 2-gram preset", default=lambda v: load_language("2gram"), fixed=True),
    },
    doc=("The Table 1 2-gram (V = 8) at L = L_0(eps, 2) or 2 L_0 under the B.12 schedule: the exact "
         "E_tau KL(q||p(.|tau)) (>= KL(q||p) = L (log TER(p) - log TER(q))) from the Markov chain rule, "
         "divided by L, against the theorem's 4 eps log|V|."),
)
