"""The floor of every decoder as claims: ParallelBench's ``L*_T``, its monotonicity, and Chen-Cong-Li's DP above it.

``L*_T`` and the SER floor are the exact optimal decoder's values
(:func:`numerics.exact.optimal_decoder.optimal_decoder`, a DP over revealed sets and values) on
tiny random languages (:func:`theory.related_info.random_language`):

* ``PB.2`` (ParallelBench 2510.04767 Thm 2 [R]): ``L*_{T+1} <= L*_T``;
* ``PB.1.ccl`` ([D], ParallelBench Thm 1 with the oracle, i.e. (I1)): Chen-Cong-Li's optimal
  ``T``-block random-order schedule (the left-Riemann DP on the information curve) is a random
  mixture of ``T``-call decoders, so its expected conditional KL is ``>= L*_T``;
* ``OPT.ser``  ([D], (I3)): the SER floor is at most ``1 - exp(-L*_T)`` (the KL-optimal policy's SER
  obeys the certificate, and the SER floor is at most that policy's SER); vacuous where it is 1.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from numerics.exact.optimal_decoder import MAX_STATES, optimal_decoder
from numerics.exact.schedule_opt import information_curve, optimal_blocks

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, register, require
from .related_info import random_language

__all__: list[str] = []

_params = {"language": "tiny language (n-gram, HMM or Markov chain)", "L": "length", "T": "call budget"}
_DOC = ("L*_T and the SER floor come from the exact optimal decoder (numerics/exact/optimal_decoder.py, checked "
        "against brute force over every policy). ")


def _gen(rng: np.random.Generator) -> dict:
    language, L = random_language(rng, markov_max_length=5, table_max_length=5)
    return {"language": language, "L": L, "T": int(rng.integers(1, L))}


def _domain(inst) -> None:
    L, T = int(inst["L"]), int(inst["T"])
    require(1 <= T < L, f"need 1 <= T < L, got T = {T}, L = {L}")
    require((inst["language"].vocab_size + 1) ** L <= MAX_STATES, "the optimal decoder's state space is too large")


def _floor(inst, metric: str):
    return optimal_decoder(inst["language"], int(inst["L"]), int(inst["T"]) + 1, metric).values


def _pb2(inst):
    v = _floor(inst, "kl")
    T = int(inst["T"])
    return v[T], v[T - 1]


def _ccl(inst):
    T = int(inst["T"])
    curve = information_curve(inst["language"], int(inst["L"]))
    return _floor(inst, "kl")[T - 1], optimal_blocks(curve, T).error(T).value


def _ser(inst):
    T = int(inst["T"])
    return _floor(inst, "ser")[T - 1], -math.expm1(-_floor(inst, "kl")[T - 1])


_L = lambda t: S.fn("L^*")(t)
register(Claim(
    id="PB.2", paper="ParallelBench 2510.04767, Theorem 2 [R]", title="L*_{T+1} <= L*_T: one more call never hurts",
    lhs=_L(S.tex("T") + 1), rhs=_L(S.tex("T")), relation="<=", evaluate=_pb2, domain=_domain, generate=_gen,
    doc=_DOC + "Both sides from one DP.", parameters=_params, atol=ATOL_CANCEL,
))
register(Claim(
    id="PB.1.ccl", paper="ParallelBench Thm 1 with the oracle (I1) vs Chen-Cong-Li 2511.04647's DP [D]",
    title="L*_T <= Chen-Cong-Li's optimal T-block random-order E_sigma KL",
    lhs=_L(S.tex("T")), rhs=S.fn(r"\min_{k_1..k_T} E_\sigma KL")(S.tex("q")), relation="<=", evaluate=_ccl,
    domain=_domain, generate=_gen,
    doc=_DOC + "Right: optimal_blocks on the exact information curve (a random order is a mixture of T-call "
    "decoders, each paying its (I1) sum).", parameters=_params, atol=ATOL_CANCEL,
))
register(Claim(
    id="OPT.ser", paper="the SER certificate (I3) applied to the KL-optimal decoder [D]",
    title="SER floor in T calls <= 1 - exp(-L*_T)",
    lhs=S.fn("SER^*")(S.tex("T")), rhs=1 - sp.exp(-_L(S.tex("T"))), relation="<=", evaluate=_ser, domain=_domain,
    generate=_gen, doc=_DOC + "Vacuous where the right side is 1.", parameters=_params, atol=ATOL_CANCEL,
    vacuous_at=1.0,
))
