"""Languages: distributions over token sequences given by hidden Markov models.

:class:`HMM` (dense), :class:`NGram` (sparse successor layout), the interval language of the
paper's Theorem 4.4 (:class:`IntervalLanguage`, its HMM form :class:`SparseHMM`), and the paper's
random languages (:mod:`numerics.languages.generators`) and presets (Table 1,
:mod:`numerics.languages.presets`, which also
summarizes a language with the inference and exact wings). :func:`kernel_arrays` hands the
compiled kernels a language's arrays with its kind resolved once (:mod:`numerics.languages.arrays`).
:func:`fit_text` fits an n-gram language to a text (:mod:`numerics.languages.fit`).
"""

from numerics.languages.arrays import HMMArrays, NGramArrays, kernel_arrays
from numerics.languages.fit import FittedLanguage, fit_bytes, fit_text
from numerics.languages.generators import random_hmm, random_ngram, random_rows
from numerics.languages.hmm import HMM, Language, NGram, load_language_file
from numerics.languages.interval import IntervalLanguage, SparseHMM, whole_intervals

__all__ = [
    "HMM", "NGram", "Language", "load_language_file",
    "IntervalLanguage", "SparseHMM", "whole_intervals",
    "HMMArrays", "NGramArrays", "kernel_arrays",
    "random_hmm", "random_ngram", "random_rows",
    "FittedLanguage", "fit_bytes", "fit_text",
]
