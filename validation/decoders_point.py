"""One point of a decoder's metrics (``mdm-theory exact --sampler llada|fast-dllm|eb|remdm``).

:func:`decoder_point` computes, for a language, ``L`` and a decoder of
:mod:`numerics.sampling.decoders`, every metric by the best method there is:

* ``dp`` / ``enumerate`` (tiny sizes, :mod:`numerics.exact.decoders`): the exact output law gives
  forward KL, reverse KL, TV, TER, SER, generative perplexity and the expected calls, all exact;
* ``mc``: the generic sampler with the fastest exact oracle
  (:func:`numerics.sampling.batch_oracles.fastest_oracle`); SER (Clopper-Pearson) and generative
  perplexity with exact ``log q``; calls per sequence (mean and standard error). Where the decoder
  is path-deterministic (``eb``, greedy ``T = 0``), ``log p(x)`` is exact per sample, so reverse
  KL (over ``x ~ p``) and forward KL (over ``x ~ q``) are Monte Carlo estimates; otherwise and for
  TV they are unavailable with the reason.

The row carries every sampler parameter (``inputs``) and the tie seed.
"""

from __future__ import annotations

import math
import time
import zlib
from typing import Any

import numpy as np

from numerics.estimate import CONFIDENCE, Estimate, unavailable_record
from numerics.provenance import to_jsonable

__all__ = ["DECODER_METHODS", "choose_decoder_method", "decoder_point"]

DECODER_METHODS = ("auto", "dp", "enumerate", "mc")


def _est(e: Estimate) -> dict[str, Any]:
    return to_jsonable(e)


def _mean(values: np.ndarray, method: str) -> Estimate:
    n = values.size
    with np.errstate(invalid="ignore"):  # inf terms: the mean is inf, its standard error undefined
        se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 and np.all(np.isfinite(values)) else math.nan
    return Estimate(float(values.mean()), se, method, n, confidence=CONFIDENCE)


def choose_decoder_method(method: str, decoder, vocab: int, length: int) -> str:
    """``auto``: ``dp`` where the exact limits allow it (:mod:`numerics.exact.decoders`), else ``mc``."""
    from numerics.exact import decoders as ex

    if method not in DECODER_METHODS:
        raise ValueError(f"--method {method}: a decoder is computed by one of {DECODER_METHODS}")
    if method != "auto":
        return method
    if decoder.name == "remdm":
        return "dp" if (vocab + 1) ** length <= ex.MAX_REMDM_STATES else "mc"
    B = decoder.block_of(length)
    return "dp" if (vocab + 1) ** length * vocab**B <= ex.MAX_DP_WORK else "mc"


def _rng(seed: int, key: str, stream: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(f"{key}|{stream}".encode())])


def _ter_data(language: Any, length: int) -> Estimate | None:
    """``TER(q) = exp(H(q) / L)`` exactly where the language has an exact entropy (found from the object)."""
    from numerics.metrics import exact_entropy

    H = exact_entropy(language, length)
    return None if H is None else Estimate(math.exp(H.value / length), 0.0, H.method)


def decoder_point(language: str, length: int, decoder, *, method: str = "auto", samples: int = 1000, seed: int = 0,
                  ser_language: str | None = None) -> dict[str, Any]:
    """All metrics of one decoder point (module docstring) as a JSON-ready dict with inputs and timing."""
    from numerics.exact.decoders import decoder_exact
    from numerics.inference import log_q
    from numerics.languages.presets import load_language
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.batch_oracles import fastest_oracle

    t0 = time.perf_counter()
    decoder.blocks(length)  # a block length that does not divide L fails here
    if decoder.name == "llada":
        decoder.fixed_steps(length)
    if int(samples) != samples or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {samples!r}")
    lang = load_language(language)
    same = ser_language in (None, language)
    ser_lang = lang if same else load_language(ser_language)
    chosen = choose_decoder_method(method, decoder, lang.vocab_size, length)
    inputs = {"language": language, "ser_language": ser_language, "length": int(length), **decoder.parameters(),
              "method": method, "samples": int(samples), "seed": int(seed)}
    out: dict[str, Any] = {"inputs": inputs, "method": chosen, "sampler_name": decoder.label}
    if chosen != "mc":
        r = decoder_exact(lang, length, decoder, chosen)
        m = r.metrics
        for k in ("kl", "log_ter_gap", "ter", "ter_data", "ser", "ser_kl_certificate", "gen_ppl", "gen_ppl_data"):
            out[k] = _est(getattr(m, k))
        out["reverse_kl"] = _est(r.divergences.reverse_kl)
        out["tv"] = _est(r.divergences.tv)
        if not same:
            out["ser"] = _est(decoder_exact(ser_lang, length, decoder, chosen).metrics.ser)
        out["calls"] = _est(r.expected_calls)
        out["elapsed_s"] = time.perf_counter() - t0
        return out
    key = f"{language}|{ser_language}|{length}|{sorted(decoder.parameters().items())}"
    L, n = int(length), int(samples)
    run = decoder.sample(fastest_oracle(lang), n, L, _rng(seed, key, "sampler"))
    loglik = log_q(lang, run.tokens)
    out["gen_ppl"] = _est(mc.gen_ppl_from_loglik(loglik, L))
    if same:
        out["ser"] = _est(mc.ser_from_loglik(loglik))
    else:
        ser_run = decoder.sample(fastest_oracle(ser_lang), n, L, _rng(seed, key, "sampler-ser"))
        out["ser"] = _est(mc.ser_mc(ser_lang, ser_run))
    data = lang.sample(n, L, _rng(seed, key, "data"))
    data_ll = log_q(lang, data)
    out["gen_ppl_data"] = _est(mc.gen_ppl_from_loglik(data_ll, L, label="mc, x ~ q"))
    ter_data = _ter_data(lang, L)
    out["ter_data"] = dict(out["gen_ppl_data"]) if ter_data is None else _est(ter_data)
    if decoder.path_deterministic:
        den = fastest_oracle(lang)
        lp = decoder.path_log_prob(den, run.tokens).log_p
        with np.errstate(invalid="ignore"):  # -inf - -inf cannot occur: log p(x) is finite for x ~ p
            out["reverse_kl"] = _est(_mean(lp - loglik, "mc (x ~ p, exact log p(x) along the one reveal path)"))
        lp_data = decoder.path_log_prob(den, data).log_p
        kl = _mean(data_ll - lp_data, "mc (x ~ q, exact log p(x) along the one reveal path)")
        out["kl"] = _est(kl)
        out["log_ter_gap"] = _est(Estimate(kl.value / L, kl.stderr / L, kl.method, n))
    else:
        why = ("p(x) is a mixture over reveal orders or draws (random scores, draw-dependent selection, remasking): "
               "exact only by enumeration at tiny L")
        out["reverse_kl"] = unavailable_record(why)
        out["kl"] = unavailable_record(why)
        out["log_ter_gap"] = unavailable_record(why)
    out["tv"] = unavailable_record("TV(p, q) needs the exact law (an exact method, tiny L)")
    out["ter"] = unavailable_record("TER(p) from a Monte Carlo KL: ter_data * exp(log_ter_gap)")
    out["ser_kl_certificate"] = unavailable_record("the certificate 1 - exp(-KL) needs the exact KL")
    out["calls"] = _est(_mean(run.calls.astype(np.float64), "mc (network calls per sequence)"))
    out["elapsed_s"] = time.perf_counter() - t0
    return out
