"""Bad input to the lossless decoders (issue 32): a named error, exit code 2, nothing written.

A draft length of 0 or above ``L``, an unknown base sampler for spiffy (or a bad option of its base), a language whose joint density
the oracle cannot evaluate (the interval language at ``l = 7``: no dense HMM form), and the same through
``bench lossless`` and ``calibrate --lossless``; each checked with and without ``--json``
(:func:`tests.bad_inputs._helpers.refused`).
"""

from __future__ import annotations

import os

import pytest

from tests.bad_inputs._helpers import invoke, refused

BASE = ["lossless", "--language", "2gram", "-L", "8", "--samples", "4"]

CASES = [
    ("draft length 0", [*BASE, "--decoder", "assd", "-k", "0"], r"assd: draft length 0 must be an integer in 1\.\.L = 8"),
    ("draft length above L", [*BASE, "--decoder", "self-spec", "-k", "9"],
     r"self-spec: draft length 9 must be an integer in 1\.\.L = 8"),
    ("spiffy draft above its N", [*BASE, "--decoder", "spiffy", "-N", "3", "-k", "4"], r"draft length 4 must be .* 1\.\.L = 3"),
    ("unknown base sampler", [*BASE, "--decoder", "spiffy", "-N", "4", "--base", "remdm"],
     r"spiffy: unknown base sampler 'remdm'; spiffy is lossless over \('random', 'llada', 'fast-dllm'"),
    ("spiffy base without its steps", [*BASE, "--decoder", "spiffy", "--base", "llada"],
     r"spiffy needs the base sampler's steps N \(-N\): llada takes steps"),
    ("spiffy base given steps it has no use for", [*BASE, "--decoder", "spiffy", "--base", "fast-dllm", "-N", "4"],
     r"spiffy: the base sampler fast-dllm takes no steps N"),
    ("spiffy base option unknown", [*BASE, "--decoder", "spiffy", "--base", "fast-dllm", "--base-option", "gamma=1"],
     r"--base-option 'gamma=1': fast-dllm takes no option 'gamma'"),
    ("spiffy base option not a number", [*BASE, "--decoder", "spiffy", "--base", "eb", "--base-option", "gamma=x"],
     r"--base-option 'gamma=x': gamma must be float"),
    ("spiffy base option out of range", [*BASE, "--decoder", "spiffy", "--base", "fast-dllm", "--base-option",
                                          "threshold=2"], r"spiffy: base sampler fast-dllm: .*threshold"),
    ("spiffy base with two rules", [*BASE, "--decoder", "spiffy", "--base", "fast-dllm", "--base-option",
                                    "threshold=0.9", "--base-option", "factor=1"],
     r"spiffy: base sampler fast-dllm: fast-dllm takes exactly one of threshold.*--base-option NAME=VALUE"),
    ("spiffy base too wide to enumerate", [*BASE, "--decoder", "spiffy", "--base", "fast-dllm", "--base-option",
                                           "threshold=0.9"],
     r"spiffy over fast-dllm enumerates the V\^B = 8\^8 draws"),
    ("spiffy without its base's steps", [*BASE, "--decoder", "spiffy"], r"spiffy needs the base sampler's steps N"),
    ("an order for another decoder", [*BASE, "--decoder", "autospec", "--order", "random"],
     r"autospec has no order option \(only assd\)"),
    ("an unknown order", [*BASE, "--decoder", "assd", "--order", "backwards"], r"'backwards' is not one of"),
    ("a base for another decoder", [*BASE, "--decoder", "assd", "--base", "random"], r"assd has no base sampler"),
    ("no joint density", ["lossless", "--language", "interval-l7", "-L", "14", "--decoder", "autospec", "--samples", "4"],
     r"the oracle cannot evaluate the joint density of interval language"),
    ("bench: unknown decoder", ["bench", "lossless", "--decoders", "assd,nope", "-L", "8", "--samples", "4"],
     r"unknown lossless decoder\(s\) \['nope'\]"),
    ("calibrate: spiffy on the front", ["calibrate", "--language", "2gram", "-L", "4", "--metric", "ser", "--target",
                                         "0.1", "--lossless", "spiffy", "--samples", "4"], r"spiffy's output law is its base"),
]


@pytest.mark.parametrize("args, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_lossless_input_is_refused_with_a_named_error(args, pattern, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    refused(args, pattern)
    assert invoke(args).exit_code == 2
    assert os.listdir(tmp_path) == []  # nothing written
