"""``mdm-theory bench sparse-ngram`` at tiny sizes: one JSON object, the sparse forward-backward equal
to the dense one, the oracle point's time and memory reported, bad sizes refused."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from validation.cli import main

# one xdist worker compiles these numba kernels once for the group (pytest runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("sparse-chain-kernels")


def test_bench_sparse_ngram_tiny():
    r = CliRunner().invoke(main, ["bench", "sparse-ngram", "-V", "64", "--nonzeros", "120", "-L", "16", "-B", "3",
                                  "--samples", "4", "-N", "4", "--dense-batch", "2", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["vocab"] == 64 and out["density"] <= 0.05
    assert out["dense_is_estimate"] is False and out["max_abs_diff_sparse_vs_dense"] == 0.0
    assert out["point"]["samples"] == 4 and out["point"]["seconds"] > 0 and out["point"]["max_rss_mib"] > 0
    assert out["point"]["ser"]["samples"] == 4
    ref = out["point"]["reference"]  # the chain sampler against the message store, same inputs
    assert ref["samples"] == 20 and ref["tokens_differing"] == 0 and ref["chain_speedup"] > 0
    assert out["point"]["chain_cut"] >= 1


def test_bench_sparse_ngram_estimate_and_bad_input():
    r = CliRunner().invoke(main, ["bench", "sparse-ngram", "-V", "64", "--nonzeros", "120", "-L", "8", "-B", "2",
                                  "--samples", "2", "-N", "2", "--dense-batch", "0", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["dense_is_estimate"] is True and out["max_abs_diff_sparse_vs_dense"] is None
    r = CliRunner().invoke(main, ["bench", "sparse-ngram", "-V", "20000", "--json"])
    assert r.exit_code == 2 and "exceeds" in json.loads(r.output)["error"]["message"]
    r = CliRunner().invoke(main, ["bench", "sparse-ngram", "-V", "16", "--nonzeros", "200", "--json"])
    assert r.exit_code == 2 and "too dense" in json.loads(r.output)["error"]["message"]
    r = CliRunner().invoke(main, ["bench", "sparse-ngram", "--language", "no-such-language", "--json"])
    assert r.exit_code == 2 and "neither a language preset" in json.loads(r.output)["error"]["message"]
