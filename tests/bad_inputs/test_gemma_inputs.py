"""Bad input of ``exact --noise uniform --sampler gemma-renoise`` (issue 31): named errors, exit code 2, nothing computed."""

from __future__ import annotations

import pytest

from tests.bad_inputs._helpers import refused

GEMMA = ["exact", "--language", "2gram", "-L", "2", "--noise", "uniform", "--sampler", "gemma-renoise"]

CASES = [
    ("oracle alpha 1", [*GEMMA, "--committed", "yes", "--oracle-alpha", "1"], r"oracle alpha must be in \[0, 1\)"),
    ("a negative entropy bound", [*GEMMA, "--committed", "no", "--gamma", "-0.1"], r"entropy-bound must be >= 0"),
    ("t-min above t-max", [*GEMMA, "--committed", "no", "--t-min", "0.9"], r"0 < t-min <= t-max"),
    ("a zero temperature", [*GEMMA, "--committed", "no", "--t-min", "0"], r"0 < t-min <= t-max"),
    ("a step cap of 0", [*GEMMA, "--committed", "yes", "--step-cap", "0"], r"step cap must be an integer >= 1"),
    ("a negative halting entropy", [*GEMMA, "--committed", "yes", "--halt-entropy", "-1"], r"halt-entropy must be >= 0"),
    ("no variant", GEMMA, r"needs --noise uniform and --committed yes\|no"),
    ("a variant without the sampler", ["exact", "--language", "2gram", "-L", "2", "-N", "2", "--committed", "yes"],
     r"are for it only"),
    ("masked noise", ["exact", "--language", "2gram", "-L", "2", "--sampler", "gemma-renoise", "--committed", "yes"],
     r"needs --noise uniform"),
    ("steps", [*GEMMA, "--committed", "yes", "-N", "4"], r"takes no -N or decoder option"),
    ("a method it has not", [*GEMMA, "--committed", "yes", "--method", "dp"], r"supports --method auto, enumerate, mc"),
    ("enumeration beyond its canvases", [*GEMMA[:4], "4", *GEMMA[5:], "--committed", "yes", "--method", "enumerate"],
     r"needs V\^L <= 729, got 8\^4"),
]


@pytest.mark.parametrize(("args", "pattern"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused(args, pattern):
    refused(args, pattern)
