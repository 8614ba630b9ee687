"""Bad decoder options on every subcommand that takes ``--sampler llada|fast-dllm|eb|remdm``.

A block length that does not divide ``L``, steps not divisible by the number of blocks, a negative
temperature, a threshold or factor out of range, an unknown remasking mode: a named error, exit
code 2, nothing written (checked on the sweep's output folder).
"""

from __future__ import annotations

import pytest

from tests.bad_inputs._helpers import refused

#: (what is wrong, extra arguments, the message that names it, subcommands it applies to)
CASES = [
    ("block length", ["--sampler", "llada", "--block-length", "3"], r"block_length 3 does not divide the length L = 4",
     ("exact", "sweep", "steps-needed")),
    ("steps vs blocks", ["--sampler", "llada", "--block-length", "1"],
     r"steps N = 2 is not divisible by the number of blocks L/B = 4", ("exact", "sweep")),
    ("temperature", ["--sampler", "llada", "--temperature", "-0.5"], r"temperature must be a finite number >= 0",
     ("exact", "sweep", "steps-needed")),
    ("threshold", ["--sampler", "fast-dllm", "--threshold", "1.5"], r"threshold tau must be in \(0, 1\]",
     ("exact", "sweep")),
    ("factor", ["--sampler", "fast-dllm", "--factor", "0"], r"factor f must be a finite number > 0",
     ("exact", "sweep")),
    ("remasking", ["--sampler", "llada", "--remasking", "lowest"], r"'lowest' is not one of 'low-confidence', 'random'",
     ("exact", "sweep", "steps-needed")),
    ("eta", ["--sampler", "remdm", "--eta", "2"], r"eta must be in \[0, 1\]", ("exact", "sweep", "steps-needed")),
    ("option of another sampler", ["--sampler", "random", "--remasking", "random"], r"--remasking apply to the decoders",
     ("exact", "sweep", "steps-needed")),
    ("klass threshold", ["--sampler", "klass", "--threshold", "0"], r"threshold", ("exact", "sweep")),
    ("klass history", ["--sampler", "klass", "--kl-steps", "0"], r"kl.steps", ("exact", "sweep")),
    ("credit decay", ["--sampler", "credit", "--credit-decay", "1.5"], r"credit.decay", ("exact", "sweep")),
    ("credit power", ["--sampler", "credit", "--credit-power", "0"], r"credit.power", ("exact", "sweep")),
    ("prophet gap", ["--sampler", "prophet", "--gap", "-1"], r"gap", ("exact", "sweep", "steps-needed")),
    ("dinfer run threshold", ["--sampler", "dinfer", "--run-threshold", "1.5"], r"run.threshold", ("exact", "sweep")),
    ("option of another decoder", ["--sampler", "dinfer", "--gap", "1"], r"gap", ("exact", "sweep")),
]

BASE = {
    "exact": ["exact", "--language", "2gram", "-L", "4", "-N", "2"],
    "sweep": ["sweep", "--languages", "2gram", "--lengths", "4", "-N", "2"],
    "steps-needed": ["steps-needed", "--language", "2gram", "-L", "4", "--metric", "ser", "--target", "0.1"],
}

PARAMS = [pytest.param(cmd, extra, pattern, id=f"{cmd}-{what}") for what, extra, pattern, cmds in CASES for cmd in cmds]


@pytest.mark.parametrize("cmd, extra, pattern", PARAMS)
def test_bad_decoder_option_is_named_exit_2_nothing_written(tmp_path, cmd, extra, pattern):
    args = [*BASE[cmd], *extra] + (["--out", str(tmp_path / "t.jsonl")] if cmd == "sweep" else [])
    error = refused(args, pattern)
    assert error["exit_code"] == 2
    assert not any(tmp_path.iterdir())


def test_steps_needed_refuses_to_fix_the_knob_it_searches():
    """steps-needed is calibrate's one-family case: fast-dllm's threshold is searched, so fixing it is refused."""
    error = refused([*BASE["steps-needed"], "--sampler", "fast-dllm", "--threshold", "0.9"], r"do not fix it")
    assert error["exit_code"] == 2
