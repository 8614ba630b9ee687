"""Exact numerics of masked diffusion, in four wings: ``languages`` (what is sampled), ``inference``
(masked forward-backward: the oracle posterior), ``sampling`` (denoisers, samplers, Monte Carlo) and
``exact`` (exact KL/TER/SER); plus ``schedules``, ``estimate`` and ``provenance`` shared by all, and
the facade above them: :func:`point_metrics` (every metric of one point by the best method,
:mod:`numerics.metrics`) with its method policy (:mod:`numerics.methods`). A walkthrough:
docs/getting-started.md.

Never imports torch or matplotlib (a test checks this).
"""

from numerics.estimate import Estimate, Metric, Unavailable
from numerics.exact.dp import dp_metrics, dp_output_law
from numerics.exact.entropy import data_perplexity, entropy_rate, ngram_sequence_entropy, sequence_entropy
from numerics.exact.enumerate import enumerate_metrics, enumerate_output_law, instance_output_law
from numerics.exact.information_curve import (
    InformationCurve,
    JensenBound,
    information_curve_table,
    jensen_bound_from_curve,
)
from numerics.exact.interval import interval_ser, interval_validity, prob_distinct_steps, sequence_collision_probability
from numerics.exact.markov import MarkovChain, information_curve_markov, jensen_bound_markov, markov_chain_of
from numerics.exact.output_law import ExactMetrics, OutputLaw, law_metrics
from numerics.exact.summary import LanguageSummary, language_summary
from numerics.inference import Posterior, forward_backward_numpy, log_likelihood, log_q, masked_forward_backward
from numerics.languages.generators import random_hmm, random_ngram
from numerics.languages.hmm import HMM, Language, NGram, load_language_file
from numerics.languages.interval import IntervalLanguage, SparseHMM, whole_intervals
from numerics.languages.presets import PRESETS, load_language, preset_names
from numerics.methods import MethodChoice, choose_method
from numerics.metrics import PointMethod, PointMetrics, exact_entropy, exact_metrics, jensen_bound, point_metrics
from numerics.sampling.adaptive import AdaptiveSampler
from numerics.sampling.decoders import DECODER_NAMES, make_decoder
from numerics.sampling.denoiser import Denoiser, OracleDenoiser
from numerics.sampling.montecarlo import (
    gen_ppl_mc,
    kl_jensen_bound_mc,
    nfe_comparison,
    ser_mc,
)
from numerics.sampling.named import ALL_SAMPLERS, make_sampler
from numerics.sampling.samplers import RandomOrder, Sampler, SampleResult, sample_factorized, sample_oracle
from numerics.schedules import Schedule, from_u, make_schedule

__all__ = [
    "HMM",
    "NGram",
    "Language",
    "load_language_file",
    "Posterior",
    "masked_forward_backward",
    "log_likelihood",
    "log_q",
    "forward_backward_numpy",
    "Schedule",
    "from_u",
    "make_schedule",
    "IntervalLanguage",
    "SparseHMM",
    "whole_intervals",
    "sequence_entropy",
    "ngram_sequence_entropy",
    "entropy_rate",
    "data_perplexity",
    "PRESETS",
    "load_language",
    "preset_names",
    "random_ngram",
    "random_hmm",
    "language_summary",
    "LanguageSummary",
    "OutputLaw",
    "ExactMetrics",
    "law_metrics",
    "enumerate_output_law",
    "enumerate_metrics",
    "instance_output_law",
    "dp_output_law",
    "dp_metrics",
    "InformationCurve",
    "JensenBound",
    "information_curve_table",
    "jensen_bound_from_curve",
    "MarkovChain",
    "markov_chain_of",
    "jensen_bound_markov",
    "information_curve_markov",
    "interval_ser",
    "interval_validity",
    "prob_distinct_steps",
    "sequence_collision_probability",
    # samplers, Monte Carlo metrics and the facade (docs/getting-started.md)
    "Estimate",
    "Metric",
    "Unavailable",
    "Denoiser",
    "OracleDenoiser",
    "Sampler",
    "RandomOrder",
    "AdaptiveSampler",
    "make_sampler",
    "make_decoder",
    "ALL_SAMPLERS",
    "DECODER_NAMES",
    "SampleResult",
    "sample_factorized",
    "sample_oracle",
    "ser_mc",
    "gen_ppl_mc",
    "kl_jensen_bound_mc",
    "nfe_comparison",
    "MethodChoice",
    "choose_method",
    "PointMethod",
    "PointMetrics",
    "point_metrics",
    "exact_metrics",
    "exact_entropy",
    "jensen_bound",
]
