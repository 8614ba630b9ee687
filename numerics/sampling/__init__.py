"""Sampling the factorized reverse process: the denoiser protocol, samplers, the oracle reveal kernels
(:mod:`numerics.sampling.oracle`) and Monte Carlo metrics."""

from numerics.sampling.adaptive import AdaptiveSampler, IntervalOracle, make_sampler
from numerics.sampling.decoders import DECODER_NAMES, BlockDecoder, EntropyBound, FastDllm, Llada, Remdm, make_decoder
from numerics.sampling.denoiser import Denoiser, OracleDenoiser
from numerics.sampling.oracle import RevealScores, reveal_sample, reveal_score
from numerics.sampling.samplers import (
    RandomOrder,
    Sampler,
    SampleResult,
    sample_factorized,
    sample_one_at_a_time,
    sample_oracle,
)

__all__ = [
    "Denoiser", "OracleDenoiser", "SampleResult", "sample_factorized", "sample_one_at_a_time", "sample_oracle",
    "Sampler", "RandomOrder", "AdaptiveSampler", "IntervalOracle", "make_sampler",
    "RevealScores", "reveal_sample", "reveal_score",
    "DECODER_NAMES", "BlockDecoder", "Llada", "FastDllm", "EntropyBound", "Remdm", "make_decoder",
]
