"""The report's experiments, one module each (frozen ``Config``, ``run(cfg)``, ``plot(result)``).

==========  ================================================================================
``ter``     TER vs steps: oracle generative perplexity and the Jensen KL bound vs ``N``,
            Theorem 4.2's bound, steps needed vs ``L`` (paper Figure 1, top)
``ser``     SER vs steps on the pruned presets and the exact SER of the ``interval`` language
            with Theorem 4.4's bound; steps needed vs ``L`` with a fitted slope (Figure 1, bottom)
``lemmas``  every claim and proof step of ``theory`` checked: instances, violations, slack
``learned`` trained MDM curves next to the oracle's, with measured ``eps_learning``
``cost``    expected vs measured network calls (NFE) under caching; MDM vs AR timing
``schedules`` exact expected KL vs steps for every schedule (DP optimum, optimized i.i.d., LZ
            reading, B.12, linear, cosine) with Li-Cai's and the TC/DTC bounds
``realtext`` TER and SER vs steps on n-grams fitted to the Lee news corpus (characters, words):
            exact TER bounds, Monte Carlo SER, the paper's sentence checked at two lengths; with
            --train a small learned MDM and AR beside the oracle through the same samplers
``decoders`` the decoders people run (LLaDA blocks/remasking, Fast-dLLM, EB-Sampler, ReMDM):
            error vs calls, calls needed vs L on the interval language, exact bias at N = L
``calls``   how many calls, at best: each family's Pareto front (calibrate), the cheapest setting for
            SER and TER targets, the exact optimal decoder's floor, and the bounds on the same axes
``thresholds`` a threshold is not a dial: the threshold rule's exact SER and calls vs its threshold, one
            line per block length (the SER rises at some steps; why calibrate searches a grid)
``runtimes`` what the runtimes ship: their default decoders' error vs calls, ParallelBench's closed forms
            against the engine, AUP per family
``lossless`` escaping the linear barrier: lossless decoders' expected rounds and calls at SER = 0 vs L beside
            the factorized sampler's steps for SER targets; fitted exponents; Anari et al.'s sqrt(L) claim
``noise``   beyond masking: masked vs uniform-noise factorized sampling with the oracle (exact SER on the
            interval language, Monte Carlo SER and per-token KL bounds on the n-grams, exact KL at tiny L)
==========  ================================================================================
"""

from __future__ import annotations

from types import ModuleType

from . import (
    adaptive,
    calls,
    cost,
    decoders,
    learned,
    lemmas,
    lossless,
    noise,
    realtext,
    runtimes,
    schedules,
    ser,
    ter,
    thresholds,
)
from ._base import ExperimentResult, MissingInput, Plot

__all__ = ["EXPERIMENTS", "SCALES", "config_for", "ExperimentResult", "MissingInput", "Plot"]

EXPERIMENTS: dict[str, ModuleType] = {
    m.NAME: m for m in (ter, ser, lemmas, learned, cost, schedules, adaptive, realtext, decoders, calls, thresholds,
                        runtimes, lossless, noise)
}
SCALES = ("tiny", "default", "full")


def config_for(name: str, scale: str = "default"):
    """The config of experiment ``name`` at ``scale`` (``tiny`` for tests, ``full`` = paper scale)."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; known: {SCALES}")
    module = EXPERIMENTS[name]
    return {"tiny": module.Config.tiny, "default": module.Config, "full": module.Config.full}[scale]()
