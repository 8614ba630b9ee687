"""Bad input of ``sweep``, ``steps-needed`` and ``calibrate`` with the revisers, gemma-renoise and ``--noise
uniform`` (issue 31): a named error, exit code 2, no table written."""

from __future__ import annotations

import pytest

from tests.bad_inputs._helpers import refused

SWEEP = ["sweep", "--language", "2gram-pruned", "-L", "2"]

CASES = [
    ("a reviser option to a decoder", [*SWEEP, "-N", "2", "--sampler", "llada", "--edit-cap", "2"],
     r"--edit-cap: an option of the revising decoders \(llada21, wino\) only, not of --sampler llada"),
    ("a reviser option to random order", [*SWEEP, "-N", "2", "--remask-threshold", "0.5"],
     r"--remask-threshold: an option of the revising decoders .* not of --sampler random"),
    ("a decoder option to a reviser", [*SWEEP, "--sampler", "wino", "--remasking", "random"],
     r"--sampler wino does not take --remasking"),
    ("an edit threshold out of range", [*SWEEP, "--sampler", "llada21", "--edit-threshold", "1.5"],
     r"--edit-threshold 1\.5: the llada21 edit threshold must be in \[0, 1\]"),
    ("one of a threshold list out of range", [*SWEEP, "--sampler", "wino", "--threshold", "0.5,1.5"],
     r"--threshold 1\.5: the wino threshold must be in \[0, 1\]"),
    ("a bad value in an edit-cap list", [*SWEEP, "--sampler", "llada21", "--edit-cap", "2,x"],
     r"'x' is not a valid int"),
    ("an edit cap list with a negative value", [*SWEEP, "--sampler", "llada21", "--edit-cap", "2,-1"],
     r"--edit-cap -1: the llada21 edit cap must be >= 0"),
    ("a tie seed to a reviser", [*SWEEP, "--sampler", "wino", "--tie-seed", "2"],
     r"--sampler wino takes no --tie-seed"),
    ("steps to a reviser", [*SWEEP, "-N", "4", "--sampler", "llada21"], r"--sampler llada21 takes no steps"),
    ("no steps for random", SWEEP, r"-N / --n-steps is required with --sampler random"),
    ("uniform noise with a reviser", [*SWEEP, "--sampler", "llada21", "--noise", "uniform"],
     r"--noise uniform supports --sampler random .* and gemma-renoise, not 'llada21'"),
    ("uniform noise with a decoder", [*SWEEP, "-N", "2", "--sampler", "llada", "--noise", "uniform"],
     r"--noise uniform supports .* not 'llada'"),
    ("gemma-renoise under masking", [*SWEEP, "--sampler", "gemma-renoise", "--committed", "yes"],
     r"--sampler gemma-renoise needs --noise uniform"),
    ("gemma-renoise without its variant", [*SWEEP, "--sampler", "gemma-renoise", "--noise", "uniform"],
     r"--sampler gemma-renoise needs --committed yes\|no"),
    ("a gemma option to random order", [*SWEEP, "-N", "2", "--t-max", "0.9"],
     r"--t-max: option\(s\) of --sampler gemma-renoise only, not of --sampler random"),
    ("a block length that does not divide L", [*SWEEP, "--sampler", "llada21", "--block-length", "3"],
     r"block_length 3 does not divide L = 2"),
    ("the reviser chain beyond its size", ["sweep", "--language", "2gram-pruned", "-L", "5", "--sampler", "wino",
                                           "--method", "enumerate"], r"V\^L = 8\^5 canvases; at most 4096"),
    ("uniform noise with the optimal schedule", [*SWEEP, "-N", "2", "--noise", "uniform", "--schedule", "optimal"],
     r"--noise uniform supports .* other than optimal"),
]


@pytest.mark.parametrize(("args", "pattern"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_and_nothing_written(tmp_path, args, pattern):
    out = tmp_path / "t.jsonl"
    assert refused([*args, "--out", out], pattern)["exit_code"] == 2
    assert list(tmp_path.iterdir()) == []


SEARCH = ["--language", "2gram-pruned", "-L", "2", "--metric", "ser", "--target", "0.1"]

SEARCH_CASES = [
    ("gemma-renoise on steps-needed", ["steps-needed", *SEARCH, "--sampler", "gemma-renoise"],
     r"--sampler gemma-renoise: steps-needed searches a number of steps, and DiffusionGemma's renoise sampler takes "
     r"none"),
    ("a reviser option to random on steps-needed", ["steps-needed", *SEARCH, "--edit-cap", "2"],
     r"--edit-cap: an option of the revising decoders \(llada21, wino\) only, not of --sampler random"),
    ("an edit cap below 0 on steps-needed", ["steps-needed", *SEARCH, "--sampler", "llada21", "--edit-cap", "-1"],
     r"--edit-cap -1: the llada21 edit cap must be >= 0"),
    ("uniform noise with topk on steps-needed", ["steps-needed", *SEARCH, "--sampler", "topk", "--noise", "uniform"],
     r"--noise uniform searches the steps of --sampler random .* not 'topk'"),
    ("uniform noise with the DP on steps-needed", ["steps-needed", *SEARCH, "--noise", "uniform", "--method", "dp"],
     r"--noise uniform supports --method auto, enumerate, mc, not 'dp'"),
    ("an unknown reviser on calibrate", ["calibrate", *SEARCH, "--revisers", "llada22"],
     r"llada22: not a revising decoder; choose from llada21, wino"),
    ("a reviser option without --revisers", ["calibrate", *SEARCH, "--remask-threshold", "0.5"],
     r"--remask-threshold: option\(s\) of the revising decoders .* with --revisers only"),
    ("a remask threshold out of range on calibrate", ["calibrate", *SEARCH, "--revisers", "wino",
                                                      "--remask-threshold", "2"],
     r"--remask-threshold 2\.0: the wino remask threshold must be in \[0, 1\]"),
]


@pytest.mark.parametrize(("args", "pattern"), [c[1:] for c in SEARCH_CASES], ids=[c[0] for c in SEARCH_CASES])
def test_search_refused(args, pattern):
    assert refused(args, pattern)["exit_code"] == 2
