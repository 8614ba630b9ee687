"""Exact metrics of the oracle factorized sampler: enumeration, DP, information curve, Markov chain rule,
interval-language closed forms, and exact sequence entropies."""

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
from numerics.exact.interval_metrics import interval_jensen_bound, interval_metrics, interval_pairs
from numerics.exact.markov import MarkovChain, information_curve_markov, jensen_bound_markov, markov_chain_of
from numerics.exact.output_law import ExactMetrics, OutputLaw, law_metrics
from numerics.exact.schedule_opt import (
    block_error,
    information_curve,
    lz_schedule,
    optimal_blocks,
    optimize_iid_schedule,
)

__all__ = [
    "dp_metrics", "dp_output_law",
    "data_perplexity", "entropy_rate", "ngram_sequence_entropy", "sequence_entropy",
    "enumerate_metrics", "enumerate_output_law", "instance_output_law",
    "InformationCurve", "JensenBound", "information_curve_table", "jensen_bound_from_curve",
    "interval_ser", "interval_validity", "prob_distinct_steps", "sequence_collision_probability",
    "interval_jensen_bound", "interval_metrics", "interval_pairs",
    "MarkovChain", "information_curve_markov", "jensen_bound_markov", "markov_chain_of",
    "ExactMetrics", "OutputLaw", "law_metrics",
    "block_error", "information_curve", "lz_schedule", "optimal_blocks", "optimize_iid_schedule",
]
