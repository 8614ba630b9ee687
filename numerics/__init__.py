"""Exact numerics of masked diffusion: languages, the oracle denoiser, schedules, exact KL/TER/SER.

Never imports torch or matplotlib (a test checks this).
"""

from .forward_backward import Posterior, forward_backward_numpy, masked_forward_backward
from .hmm import HMM, Language, NGram, load_language_file
from .schedules import Schedule, from_u, make_schedule
from .interval import IntervalLanguage, SparseHMM, whole_intervals
from .entropy import data_perplexity, entropy_rate, ngram_sequence_entropy, sequence_entropy
from .presets import PRESETS, LanguageSummary, language_summary, load_language, preset_names, random_hmm, random_ngram

__all__ = [
    "HMM",
    "NGram",
    "Language",
    "load_language_file",
    "Posterior",
    "masked_forward_backward",
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
]
