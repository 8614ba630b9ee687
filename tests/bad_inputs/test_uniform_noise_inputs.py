"""Bad input of uniform-noise diffusion (issue 31): named errors, exit code 2, nothing computed.

Command line: a noise kind a command does not support, a sampler or method uniform noise does not have,
an exact method that does not fit. API: ``alpha`` outside [0, 1] and a canvas token outside the vocabulary.
"""

from __future__ import annotations

import numpy as np
import pytest

from numerics.inference.soft_evidence import uniform_noise_posterior
from numerics.languages.presets import load_language
from tests.bad_inputs._helpers import refused

EXACT = ["exact", "--language", "2gram", "-L", "3", "-N", "2"]

CASES = [
    ("an unknown noise kind", [*EXACT, "--noise", "gaussian"], r"'gaussian' is not one of 'mask', 'uniform'"),
    ("a decoder under uniform noise", [*EXACT, "--noise", "uniform", "--sampler", "topk"],
     r"--noise uniform supports --sampler random \(the factorized reverse process\) and gemma-renoise only"),
    ("a method uniform noise has not", [*EXACT, "--noise", "uniform", "--method", "dp"],
     r"--noise uniform supports --method auto, enumerate, mc, not 'dp'"),
    ("enumeration beyond its canvases", ["exact", "--language", "2gram", "-L", "5", "-N", "2", "--noise", "uniform",
                                         "--method", "enumerate"], r"needs V\^L <= 4096 canvases, got 8\^5"),
    ("a gamma under uniform noise", [*EXACT, "--noise", "uniform", "--gamma", "0.5"], r"takes no --gamma"),
    ("uniform noise beyond memory", ["exact", "--language", "2gram", "-L", "100000000", "-N", "2", "--noise", "uniform",
                                     "--samples", "100000"], r"--noise uniform \(100000 samples, L = 100000000.*needs about"),
    ("uniform noise without steps", ["exact", "--language", "2gram", "-L", "3", "--noise", "uniform"],
     r"-N / --n-steps is required with --noise uniform"),
]


@pytest.mark.parametrize(("args", "pattern"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused(args, pattern):
    refused(args, pattern)


@pytest.mark.parametrize(("canvas", "alpha", "pattern"), [
    ([[0, 1, 2]], 1.01, r"alpha must lie in \[0, 1\]"),
    ([[0, 1, 2]], -1e-9, r"alpha must lie in \[0, 1\]"),
    ([[0, 8, 2]], 0.5, r"canvas token 8 at sequence 0, position 1 is outside the vocabulary 0..7"),
])
def test_api_refuses(canvas, alpha, pattern):
    with pytest.raises(ValueError, match=pattern):
        uniform_noise_posterior(load_language("2gram"), np.array(canvas), alpha)
