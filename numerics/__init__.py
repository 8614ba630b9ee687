"""Exact numerics of masked diffusion, in four wings: ``languages`` (what is sampled), ``inference``
(masked forward-backward: the oracle posterior), ``sampling`` (denoisers, samplers, Monte Carlo) and
``exact`` (exact KL/TER/SER); plus ``schedules``, ``estimate`` and ``provenance`` shared by all, and
the facade above them: :func:`point_metrics` (every metric of one point by the best method,
:mod:`numerics.metrics`) with its method policy (:mod:`numerics.methods`). A walkthrough:
docs/getting-started.md.

The public names below are imported on first use (PEP 562): ``import numerics`` itself imports
nothing heavy (numba, scipy), so it takes well under a second, and ``numerics.point_metrics``
imports what it needs. Never imports torch or matplotlib (a test checks this).
"""

from __future__ import annotations

import importlib
from typing import Any

#: Where each public name lives: module -> names (the explicit re-export of ``__all__``).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "numerics.estimate": ("Estimate", "Metric", "Unavailable"),
    "numerics.exact.dp": ("dp_metrics", "dp_output_law"),
    "numerics.exact.entropy": ("data_perplexity", "entropy_rate", "ngram_sequence_entropy", "sequence_entropy"),
    "numerics.exact.enumerate": ("enumerate_metrics", "enumerate_output_law", "instance_output_law"),
    "numerics.exact.information_curve": ("InformationCurve", "JensenBound", "information_curve_table", "jensen_bound_from_curve"),
    "numerics.exact.interval": ("interval_ser", "interval_validity", "prob_distinct_steps", "sequence_collision_probability"),
    "numerics.exact.markov": ("MarkovChain", "information_curve_markov", "jensen_bound_markov", "markov_chain_of"),
    "numerics.exact.output_law": ("ExactMetrics", "OutputLaw", "law_metrics"),
    "numerics.exact.summary": ("LanguageSummary", "language_summary"),
    "numerics.inference": ("Posterior", "forward_backward_numpy", "log_likelihood", "log_q", "masked_forward_backward"),
    "numerics.languages.generators": ("random_hmm", "random_ngram"),
    "numerics.languages.hmm": ("HMM", "Language", "NGram", "load_language_file"),
    "numerics.languages.interval": ("IntervalLanguage", "SparseHMM", "whole_intervals"),
    "numerics.languages.presets": ("PRESETS", "load_language", "preset_names"),
    "numerics.methods": ("MethodChoice", "choose_method"),
    "numerics.metrics": ("PointMethod", "PointMetrics", "exact_entropy", "exact_metrics", "jensen_bound", "point_metrics"),
    "numerics.sampling.adaptive": ("AdaptiveSampler",),
    "numerics.sampling.decoders": ("DECODER_NAMES", "make_decoder"),
    "numerics.sampling.named": ("ALL_SAMPLERS", "make_sampler"),
    "numerics.sampling.denoiser": ("Denoiser", "OracleDenoiser"),
    "numerics.sampling.revisers": ("Reviser", "sample_reviser"),
    "numerics.exact.revisers": ("reviser_exact",),
    "numerics.sampling.montecarlo": ("gen_ppl_mc", "kl_jensen_bound_mc", "nfe_comparison", "ser_mc"),
    "numerics.sampling.samplers": ("RandomOrder", "Sampler", "SampleResult", "sample_factorized", "sample_oracle"),
    "numerics.schedules": ("Schedule", "from_u", "make_schedule"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'numerics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    "Reviser",
    "reviser_exact",
    "sample_reviser",
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
