"""Bad input of the revising decoders on ``exact`` (issue 31): a named error, exit code 2, nothing computed.

An editing threshold out of [0, 1], an editing cap below 0, a reviser's own option given to another sampler
and another sampler's option (or ``--gamma``) given to a reviser, a method the chain has not, the exact chain
beyond its size, a block length that does not divide ``L``, a Monte Carlo run beyond memory.
"""

from __future__ import annotations

import pytest

from tests.bad_inputs._helpers import refused

EXACT = ["exact", "--language", "2gram-pruned", "-L", "3"]

CASES = [
    ("an edit threshold above 1", [*EXACT, "--sampler", "llada21", "--edit-threshold", "1.5"],
     r"--edit-threshold 1\.5: the llada21 edit threshold must be in \[0, 1\]"),
    ("an edit threshold below 0", [*EXACT, "--sampler", "llada21", "--edit-threshold", "-0.1"],
     r"--edit-threshold -0\.1: the llada21 edit threshold must be in \[0, 1\]"),
    ("a remask threshold above 1", [*EXACT, "--sampler", "wino", "--remask-threshold", "2"],
     r"--remask-threshold 2\.0: the wino remask threshold must be in \[0, 1\]"),
    ("a reviser threshold above 1", [*EXACT, "--sampler", "wino", "--threshold", "1.2"],
     r"--threshold 1\.2: the wino threshold must be in \[0, 1\]"),
    ("an editing cap below 0", [*EXACT, "--sampler", "llada21", "--edit-cap", "-1"],
     r"--edit-cap -1: the llada21 edit cap must be >= 0"),
    ("a step cap of 0", [*EXACT, "--sampler", "wino", "--step-cap", "0"], r"--step-cap 0: the wino step cap must be >= 1"),
    ("a reviser option to a decoder", [*EXACT, "-N", "3", "--sampler", "llada", "--edit-cap", "2"],
     r"--edit-cap: an option of the revising decoders \(llada21, wino\) only, not of --sampler llada"),
    ("a reviser option to random order", [*EXACT, "-N", "3", "--edit-threshold", "0.5"],
     r"--edit-threshold: an option of the revising decoders .* not of --sampler random"),
    ("llada21's option to wino", [*EXACT, "--sampler", "wino", "--edit-cap", "2"],
     r"--sampler wino does not take --edit-cap \(it takes --block-length, --temperature, --threshold, "
     r"--remask-threshold, --step-cap\)"),
    ("a decoder option to a reviser", [*EXACT, "--sampler", "llada21", "--remasking", "random"],
     r"--sampler llada21 does not take --remasking"),
    ("gamma to a reviser", [*EXACT, "--sampler", "wino", "--gamma", "0.5"], r"--sampler wino does not take --gamma"),
    ("a method the chain has not", [*EXACT, "--sampler", "llada21", "--method", "dp"],
     r"--method dp: a revising decoder is computed by the exact chain over canvases \(enumerate\) or Monte Carlo"),
    ("the exact chain beyond its size", ["exact", "--language", "2gram-pruned", "-L", "5", "--sampler", "wino",
                                         "--method", "enumerate"], r"V\^L = 8\^5 canvases; at most 4096"),
    ("a block length that does not divide L", [*EXACT, "--sampler", "llada21", "--block-length", "2"],
     r"block_length 2 does not divide L = 3"),
    ("a reviser under uniform noise", [*EXACT, "--sampler", "llada21", "--noise", "uniform"],
     r"--noise uniform supports --sampler random and gemma-renoise only, not 'llada21'"),
    ("Monte Carlo beyond memory", ["exact", "--language", "2gram-pruned", "-L", "100000000", "--sampler", "wino",
                                   "--block-length", "1", "--samples", "100000"],
     r"wino by Monte Carlo \(100000 samples, L = 100000000\).*needs about"),
]


@pytest.mark.parametrize(("args", "pattern"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused(args, pattern):
    assert refused(args, pattern)["exit_code"] == 2
