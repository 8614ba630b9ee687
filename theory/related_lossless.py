"""Lossless decoders' guarantees as claims (DECODERS.md section 11, docs/methods/lossless.md).

* ``ASSD.1`` (Guo & Ermon 2504.20456, abstract [R]): any-subset speculative decoding's network calls
  never exceed the number of tokens: the largest ``calls`` in the support of its exact law
  (:func:`numerics.exact.lossless.assd_law`, enumeration on a tiny language) against ``L``.
  Step ``ASSD.1.exact`` ([R]): its output law is ``q`` (``TV(p, q) = 0`` up to round-off).
* ``AN.sqrt`` (Anari et al. 2511.07869, abstract [R]): with an any-order oracle (exact conditional
  marginals given any subset), issuing oracle calls in parallel, a sample of ``q`` exactly in
  ``O~(L^(1/2))`` expected parallel rounds (polylogarithmic factors hidden; no assumption on ``q``
  beyond the oracle). Checked against the engine's autospec rule (:class:`numerics.sampling.lossless.Autospec`,
  *not* necessarily the paper's pseudo-code, which this engine did not have): the exponent of its
  expected rounds fitted by Monte Carlo over ``L = 8 .. 64`` on a random 2-gram, the lower end of
  its 95% interval against 1/2 (a polylog factor adds about ``1 / ln L`` to a fitted exponent, so
  a lower end above 1/2 is a finding to examine, not a disproof). Found false *for the engine's rule*
  on a slowly mixing chain (pinned): the rule is not the paper's algorithm. Step ``AN.sqrt.exact`` ([D]): the
  rule's output law is ``q`` (enumeration of its uniforms' cells, :func:`numerics.exact.lossless.autospec_law`).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from numerics.exact.lossless import assd_law, autospec_law
from numerics.languages.hmm import NGram
from numerics.sampling.lossless import Autospec

from . import symbols as S
from .claims import ATOL_CANCEL, Claim, register, require
from .instances import random_ngram

__all__: list[str] = []

_FIT_LENGTHS = (8, 16, 32, 64)
_FIT_SAMPLES = 64


def _tiny_gen(rng: np.random.Generator) -> dict:
    V = int(rng.integers(2, 4))
    L = int(rng.integers(2, 5 if V == 2 else 4))
    return {"language": random_ngram(rng, int(rng.integers(2, 4)), V, prune=float(rng.choice([0.0, 0.2]))),
            "L": L, "k": int(rng.integers(1, L + 1))}


def _tiny_domain(inst) -> None:
    L, k = int(inst["L"]), int(inst["k"])
    require(1 <= k <= L, f"need a draft length 1 <= k <= L, got k = {k}, L = {L}")
    require(inst["language"].vocab_size ** L <= 4096, "the exact law enumerates V^L sequences: a tiny case only")


def _tv(law) -> float:
    return 0.5 * float(np.abs(law.p - law.q).sum())


def _assd_calls(inst):
    law = assd_law(inst["language"], int(inst["L"]), int(inst["k"]))
    return max(c for _, c in law.cost), int(inst["L"])


register(Claim(
    id="ASSD.1", paper="Guo & Ermon 2504.20456, ASSD's efficiency guarantee [R]",
    title="ASSD's network calls never exceed the number of tokens L", lhs=S.fn(r"\max calls")(S.tex("k")),
    rhs=S.tex("L"), relation="<=", evaluate=_assd_calls, domain=_tiny_domain, generate=_tiny_gen,
    doc="Left: the largest calls in the support of ASSD's exact law (numerics/exact/lossless.py, every draft, accept "
    "and residual enumerated, conditionals from the brute-force table); 2 calls a round of 2 or more drafts, each "
    "such round yielding at least 2 tokens (the first draft is exact).", steps=("ASSD.1.exact",),
    parameters={"language": "tiny n-gram", "L": "length", "k": "draft length"},
))
register(Claim(
    id="ASSD.1.exact", paper="Guo & Ermon 2504.20456, ASSD samples the joint exactly [R]",
    title="ASSD's output law is q: TV(p, q) = 0", lhs=S.fn("TV")(S.tex("p"), S.tex("q")), rhs=sp.Integer(0),
    relation="<=", evaluate=lambda inst: (_tv(assd_law(inst["language"], int(inst["L"]), int(inst["k"]))), 0.0),
    domain=_tiny_domain, generate=_tiny_gen, atol=ATOL_CANCEL,
    doc="Left: total variation between ASSD's exact output law and the table q, both by enumeration.",
    parameters={"language": "tiny n-gram", "L": "length", "k": "draft length"},
))


def _fit_gen(rng: np.random.Generator) -> dict:
    return {"language": random_ngram(rng, 2, int(rng.integers(2, 5)), prune=float(rng.choice([0.0, 0.2]))),
            "seed": int(rng.integers(0, 2**31))}


def _fit_domain(inst) -> None:
    require(inst["language"].order == 2, "the exponent is fitted on a 2-gram (a token-level Markov chain)")


def fitted_exponent(language, seed: int, lengths=_FIT_LENGTHS, samples: int = _FIT_SAMPLES) -> tuple[float, float]:
    """Autospec's ``E[rounds]`` exponent over ``lengths`` by Monte Carlo: ``(exponent, stderr)`` (weighted
    least squares on the log means, delta-method variances)."""
    x, y, w = [], [], []
    for L in lengths:
        r = Autospec().sample(language, L, samples, np.random.default_rng([seed, L])).rounds.astype(float)
        m, se = r.mean(), r.std(ddof=1) / np.sqrt(r.size)
        x.append(np.log(L))
        y.append(np.log(m))
        w.append((m / se) ** 2 if se > 0 else 1e12)
    X = np.stack([np.ones(len(x)), np.array(x)], axis=1)
    W = np.array(w)
    cov = np.linalg.inv(X.T @ (W[:, None] * X))
    return float((cov @ X.T @ (W * np.array(y)))[1]), float(np.sqrt(cov[1, 1]))


def _sqrt(inst):
    b, se = fitted_exponent(inst["language"], int(inst["seed"]))
    return b - 1.96 * se, 0.5


#: A slowly mixing chain (it flips with probability 0.98): the engine's rule needs rounds growing like
#: L^0.8 on it, so the rule is not Anari et al.'s algorithm (whose bound holds for every q).
_ALTERNATING = NGram(2, np.array([0.5, 0.5]), np.array([[0.02, 0.98], [0.98, 0.02]]))

register(Claim(
    id="AN.sqrt", paper="the engine's autospec rule against Anari et al. 2511.07869's bound [D] (not the paper's algorithm)",
    title="the engine's autospec rule in O~(L^(1/2)) expected rounds, as Anari et al.'s algorithm is (the fitted "
          "exponent's lower 95% end)",
    lhs=S.fn(r"\underline{b}")(S.tex("L")), rhs=sp.Rational(1, 2), relation="<=", evaluate=_sqrt,
    domain=_fit_domain, generate=_fit_gen, steps=("AN.sqrt.exact",),
    doc="Left: lower end of the 95% interval of the exponent b in E[rounds] ~ L^b of the engine's autospec rule "
    f"(Monte Carlo, {_FIT_SAMPLES} samples at L = {', '.join(map(str, _FIT_LENGTHS))}). Assumptions of the paper: "
    "exact conditional marginals given any subset (the oracle here), oracle calls in parallel, expectation over the "
    "algorithm's randomness, polylog factors hidden. The rule checked is the engine's (docs/methods/lossless.md), "
    "and it is found false for it: on a slowly mixing chain its rounds grow faster than L^(1/2) (pinned), so "
    "the engine's autospec is not the paper's algorithm, whose bound is for every q; the paper is not contradicted.",
    parameters={"language": "random 2-gram", "seed": "Monte Carlo seed"}, expect="false",
    counterexamples=({"language": _ALTERNATING, "seed": 0},),
))
register(Claim(
    id="AN.sqrt.exact", paper="the engine's autospec rule samples q exactly [D]",
    title="autospec's output law is q: TV(p, q) = 0", lhs=S.fn("TV")(S.tex("p"), S.tex("q")), rhs=sp.Integer(0),
    relation="<=", evaluate=lambda inst: (_tv(autospec_law(inst["language"], int(inst["L"]))), 0.0),
    domain=_tiny_domain, generate=_tiny_gen, atol=ATOL_CANCEL,
    doc="Left: total variation between the exact output law (enumeration of the uniforms' cells) and q.",
    parameters={"language": "tiny n-gram", "L": "length", "k": "unused (draft length of the shared generator)"},
))
