"""Exact numerics of masked diffusion: languages, the oracle denoiser, schedules, exact KL/TER/SER.

Never imports torch or matplotlib (a test checks this).
"""

from .forward_backward import Posterior, forward_backward_numpy, masked_forward_backward
from .hmm import HMM, Language, NGram, load_language_file
from .schedules import Schedule, from_u, make_schedule

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
]
