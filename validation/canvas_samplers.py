"""The samplers that act on a canvas, not on a monotone reveal path: the revisers and DiffusionGemma's renoise.

The revising decoders (``llada21``, ``wino``: :data:`numerics.sampling.registry.REVISERS`) change revealed
tokens, and ``gemma-renoise`` (:class:`numerics.sampling.gemma.Renoise`) renoises a uniform-noise canvas, so
neither is an entry of :data:`~numerics.sampling.registry.DECODERS` (no DP, no ``select_rows``). This module
says, once for every command (``exact``, ``sweep``, ``steps-needed``, ``calibrate``), which options they take
and how a point of theirs is checked and built:

* :data:`REVISER_FIELDS`: the revisers' options that no decoder has (``edit_threshold``, ``edit_cap``,
  ``remask_threshold``, ``step_cap``), from the registry;
* :data:`GEMMA_OPTIONS` / :data:`GEMMA_FIELDS`: gemma-renoise's options (``committed``, ``step_cap``,
  ``t_max``, ``t_min``, ``halt_entropy``, ``oracle_alpha``; ``--gamma`` is its entropy bound);
* :func:`check_reviser` and :func:`build_renoise`: the options of one point checked (a ``ValueError``
  naming the flag) and the sampler built;
* :func:`gemma_point`: one point of gemma-renoise (the exact chain over canvases, or Monte Carlo).

A reviser's point is :func:`numerics.metrics.point_metrics` of its
:class:`~numerics.sampling.revisers.Reviser` (the exact chain over canvases, or Monte Carlo).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from numerics.sampling.registry import OPTIONS, REVISERS, Option

__all__ = ["GEMMA", "GEMMA_FIELDS", "GEMMA_METHODS", "GEMMA_OPTIONS", "NOISES", "REVISER_FIELDS", "REVISER_NAMES",
           "build_renoise", "check_reviser", "gemma_point", "option_flag"]

#: The noise of the forward process: masked (absorbing) diffusion, or uniform noise (docs/methods/uniform-noise.md).
NOISES = ("mask", "uniform")
REVISER_NAMES = tuple(REVISERS)
#: The revisers' options that no decoder has (a flag of their own), in registry order.
REVISER_FIELDS = tuple(dict.fromkeys(o.name for s in REVISERS.values() for o in s.options if o.name not in OPTIONS))

GEMMA = "gemma-renoise"
GEMMA_METHODS = ("auto", "enumerate", "mc")
#: gemma-renoise's options (its --gamma is the entropy bound), as Options: flag, range, default, class keyword.
GEMMA_OPTIONS: tuple[Option, ...] = (
    Option("committed", str, "keep accepted positions fixed (yes, diffusers) or reselect from scratch each call "
           "(no, SGLang)", choices=("yes", "no"), required=True),
    Option("step_cap", int, "calls at most", default=48, low=1),
    Option("t_max", float, "temperature of the first call", default=0.8, low=0, low_open=True),
    Option("t_min", float, "end of the temperature ramp, 0 < t-min <= t-max", default=0.4, low=0, low_open=True),
    Option("halt_entropy", float, "stop when the mean entropy is below this (nats) and the argmax is unchanged",
           default=0.005, low=0),
    Option("oracle_alpha", float, "the oracle reads the canvas at level alpha k / L, k the positions that kept a "
           "draw", default=0.99, low=0, high=1, high_open=True, param="alpha"),
)
GEMMA_FIELDS = tuple(o.name for o in GEMMA_OPTIONS)


def option_flag(name: str) -> str:
    """The command-line flag of any sampler option (a decoder's, a reviser's or gemma-renoise's)."""
    return "--" + name.replace("_", "-")


def check_reviser(sampler: str, options: Mapping[str, Any], gamma: float | None = None) -> dict:
    """The options of the reviser ``sampler`` checked; a reviser's own option given to another sampler too.

    A reviser's own option given to a sampler that is not a reviser, an option the reviser does not take,
    ``--gamma``, and a value out of its range are each a ``ValueError`` naming the flag. Returns the options.
    """
    given = {k: v for k, v in options.items() if v is not None}
    if sampler not in REVISERS:
        own = [option_flag(k) for k in given if k in REVISER_FIELDS]
        raise ValueError(f"{', '.join(own)}: an option of the revising decoders ({', '.join(REVISER_NAMES)}) only, "
                         f"not of --sampler {sampler}")
    spec = REVISERS[sampler]
    foreign = [option_flag(k) for k in given if k not in spec.option_names]
    if gamma is not None:
        foreign.insert(0, "--gamma")
    if foreign:
        raise ValueError(f"--sampler {sampler} does not take {', '.join(foreign)} (it takes "
                         f"{', '.join(o.flag for o in spec.options)})")
    for k, v in given.items():
        o = spec.option(k)
        if not o.contains(v):
            where = o.range_text()
            where = f"in {where}" if where[0] in "[(" else where
            raise ValueError(f"{o.flag} {v}: the {sampler} {k.replace('_', ' ')} must be {where}")
    return given


def build_renoise(options: Mapping[str, Any], gamma: float | None = None):
    """The :class:`~numerics.sampling.gemma.Renoise` of gemma-renoise's ``options`` (``--gamma``: its entropy
    bound); an option it does not take or a missing ``committed`` is a ``ValueError`` naming the flag."""
    from numerics.sampling.gemma import Renoise

    given = {k: v for k, v in options.items() if v is not None}
    foreign = [option_flag(k) for k in given if k not in GEMMA_FIELDS]
    if foreign:
        raise ValueError(f"--sampler {GEMMA} does not take {', '.join(foreign)} (it takes --gamma, "
                         f"{', '.join(o.flag for o in GEMMA_OPTIONS)})")
    if given.get("committed") not in ("yes", "no"):
        raise ValueError(f"--sampler {GEMMA} needs --committed yes|no (keep accepted positions, or reselect)")
    kw = {o.keyword: given[o.name] for o in GEMMA_OPTIONS if o.name in given and o.name != "committed"}
    return Renoise(given["committed"] == "yes", **({} if gamma is None else {"entropy_bound": gamma}), **kw)


def gemma_point(rn, language: str, length: int, method: str = "auto", samples: int = 1000, seed: int = 0,
                ser_language: str | None = None) -> dict:
    """One point of gemma-renoise ``rn`` with the uniform-noise oracle.

    ``method``: ``enumerate`` (the exact chain over canvases, :func:`numerics.exact.gemma.renoise_exact`),
    ``mc`` (``samples`` runs, seeded by ``[seed, length]``), ``auto`` (the chain when its states fit, else
    Monte Carlo). Returns ``sampler_name``, ``sampler_parameters``, ``method`` and the estimates ``ser``,
    ``kl`` (exact only), ``ter`` (exact only), ``gen_ppl``, ``calls``, ``capped`` (the share of runs that hit
    the step cap), ``calls_law`` (P(calls = t)) and ``elapsed_s``. A size beyond the chain (``enumerate``) or
    the memory is a ``ValueError``.
    """
    import numpy as np

    from numerics.estimate import Estimate, clopper_pearson, mean_estimate
    from numerics.exact.gemma import MAX_CANVASES, ChainTooLarge, renoise_exact
    from numerics.exact.joint_table import joint_table
    from numerics.inference import log_q
    from numerics.languages.presets import load_language
    from numerics.machine import check_memory
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.gemma import sample_renoise

    if method not in GEMMA_METHODS:
        raise ValueError(f"--sampler {GEMMA} supports --method {', '.join(GEMMA_METHODS)}, not {method!r}")
    if length < 1 or samples < 2:
        raise ValueError(f"--sampler {GEMMA} needs -L >= 1 and --samples >= 2")
    lang = load_language(language)
    ser_lang = lang if ser_language is None else load_language(ser_language)
    fits = lang.vocab_size ** length <= MAX_CANVASES
    if method == "enumerate" and not fits:
        raise ValueError(f"--method enumerate with {GEMMA} needs V^L <= {MAX_CANVASES}, got "
                         f"{lang.vocab_size}^{length}")
    started = time.perf_counter()
    ex = None
    if method == "enumerate" or (method == "auto" and fits):
        try:
            ex = renoise_exact(rn, lang, length)
        except ChainTooLarge:  # auto: too many states, Monte Carlo instead
            if method == "enumerate":
                raise
    out: dict = {"sampler_name": rn.name, "sampler_parameters": dict(vars(rn)),
                 "method": "enumerate" if ex is not None else "mc"}
    if ex is not None:
        m = ex.metrics
        out["ser"] = Estimate(float(ex.law.p[joint_table(ser_lang, length) == 0].sum()), 0.0, "canvas-chain")
        out["kl"] = m.kl if m is not None else Estimate(math.inf, 0.0, "canvas-chain")
        if m is not None:
            out.update(ter=m.ter, gen_ppl=m.gen_ppl)
        out["calls"] = ex.expected_calls
        out["capped"] = Estimate(ex.capped, 0.0, "canvas-chain")
        out["calls_law"] = [float(c) for c in ex.calls]
    else:
        check_memory(8.0 * 6 * samples * length * lang.vocab_size, f"{GEMMA} ({samples} samples, L = {length})",
                     "use fewer --samples or a smaller -L")
        s = sample_renoise(rn, lang, samples, length, np.random.default_rng([seed, length]))
        out["ser"] = mc.ser_from_loglik(log_q(ser_lang, s.tokens))
        out["gen_ppl"] = mc.gen_ppl_from_loglik(log_q(lang, s.tokens), length)
        out["calls"] = mean_estimate(s.calls, "mc")
        k = int(s.capped.sum())
        share = k / samples
        out["capped"] = Estimate(share, math.sqrt(share * (1 - share) / samples), "mc (Clopper-Pearson)", samples,
                                 *clopper_pearson(k, samples))
        out["calls_law"] = [float(c) for c in np.bincount(s.calls, minlength=rn.step_cap + 1) / samples]
    out["elapsed_s"] = time.perf_counter() - started
    return out
