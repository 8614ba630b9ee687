"""One decoder point from a decoder object: a thin caller of :func:`numerics.metrics.point_metrics`.

Every metric of a decoder of :mod:`numerics.sampling.decoders` (exact law on tiny cases, Monte
Carlo otherwise, reverse KL and TV where they exist) is computed in one home,
:func:`numerics.metrics.point_metrics` (its ``decoder`` kind). The command line reaches it through
:class:`validation.sweep.PointConfig` (``exact`` / ``sweep --sampler llada|fast-dllm|eb|remdm``);
this module serves callers that hold a decoder object rather than options (``mdm-theory bench
decoders``).
"""

from __future__ import annotations

import time
import zlib
from typing import Any

import numpy as np

from numerics.metrics import DECODER_METHODS, choose_decoder_method
from numerics.provenance import to_jsonable

__all__ = ["DECODER_METHODS", "choose_decoder_method", "decoder_point"]


def decoder_point(language: str, length: int, decoder, *, method: str = "auto", samples: int = 1000, seed: int = 0,
                  ser_language: str | None = None) -> dict[str, Any]:
    """All metrics of one decoder point as a JSON-ready dict: ``inputs`` (the language, ``L``, every
    decoder parameter, the method asked for, samples, seed), ``method``, ``sampler_name``, every
    metric of :class:`numerics.metrics.PointMetrics` and ``elapsed_s``.

    Random streams: ``default_rng([seed, crc32(point key | stream)])`` per named stream
    (:data:`numerics.metrics.STREAMS`), the key made of the language names, ``L`` and the parameters.
    """
    from numerics.languages.presets import load_language
    from numerics.metrics import point_metrics

    t0 = time.perf_counter()
    lang = load_language(language)
    ser = None if ser_language in (None, language) else load_language(ser_language)
    key = f"{language}|{ser_language}|{length}|{sorted(decoder.parameters().items())}"

    def streams(name: str) -> np.random.Generator:
        return np.random.default_rng([int(seed), zlib.crc32(f"{key}|{name}".encode())])

    m = point_metrics(lang, length, decoder, method=method, samples=samples, rng=streams, ser_language=ser,
                      names=(language, ser_language))
    inputs = {"language": language, "ser_language": ser_language, "length": int(length), **m.how.parameters,
              "method": method, "samples": int(samples), "seed": int(seed)}
    out = {"inputs": inputs, "method": m.how.method, "sampler_name": m.how.sampler}
    return {**out, **{k: to_jsonable(v) for k, v in m.metrics().items()}, "elapsed_s": time.perf_counter() - t0}
