"""The decoder test cases, one table for every decoder test (exact methods, compiled kernels, metrics).

Each row names a sampler of the registry (:data:`numerics.sampling.registry.DECODERS`) with its
options, ``steps`` N (the schedule's for ``remdm``) and tie seed; :func:`decoders_at` builds the rows
that fit a length ``L`` (a block length dividing ``L``, ``N`` divisible by the number of blocks).
A new decoder adds its rows here and every decoder test runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from numerics.sampling.registry import DECODERS
from numerics.schedules import make_schedule


@dataclass(frozen=True)
class Case:
    """One row: ``name`` (the registry's), ``options``, ``steps`` N, the ``schedule`` (``remdm``),
    ``tie_seed`` and ``tags`` (``metrics``: the point-metrics test's subset; ``full``: also on a
    full-support language at ``L = 3``; ``history``: a rule of numerics.sampling.history_decoders)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    steps: int = 2
    schedule: str = "linear"
    tie_seed: int | None = 0
    tags: frozenset[str] = frozenset()

    def build(self, length: int):
        """The sampler at ``length`` (a ``ValueError`` when the row does not fit it)."""
        spec = DECODERS[self.name]
        return spec.build(self.options, steps=self.steps, schedule=make_schedule(self.schedule, self.steps),
                          tie_seed=self.tie_seed, length=length)

    def fits(self, length: int) -> bool:
        try:
            self.build(length)
        except ValueError:
            return False
        return True


M, F = frozenset({"metrics"}), frozenset({"metrics", "full"})
H = frozenset({"history"})  # a rule with a history (numerics.exact.history): only where asked for by this tag

CASES = [
    Case("llada", {"block_length": 2}, steps=4),
    Case("llada", tie_seed=3, tags=F),
    Case("llada", {"remasking": "random"}),
    Case("llada", {"block_length": 2, "remasking": "random", "temperature": 0.5}, steps=4, tags=M),
    Case("llada", {"temperature": 0}, tie_seed=3),
    Case("llada", {"temperature": 0.7}, tie_seed=None),
    Case("llada", steps=6),
    Case("llada", {"block_length": 4, "remasking": "random"}, steps=6),
    Case("llada", {"block_length": 6, "temperature": 0.5}, steps=12, tie_seed=None),
    Case("llada", {"temperature": 0}, steps=4, tie_seed=3),
    Case("fast-dllm", {"threshold": 0.6}),
    Case("fast-dllm", {"factor": 1.5, "block_length": 2}),
    Case("fast-dllm", {"threshold": 0.5, "temperature": 0}),
    Case("fast-dllm", {"factor": 1.5, "temperature": 0.7}, tags=F),
    Case("fast-dllm", {"threshold": 0.4, "block_length": 4}),
    Case("fast-dllm", {"factor": 1.0}),
    Case("fast-dllm", {"factor": 0.5, "temperature": 0}),
    Case("eb", {"gamma": 0.4}),
    Case("eb", {"gamma": 0.8, "temperature": 0.5, "block_length": 2}),
    Case("eb", {"gamma": 0.6, "temperature": 0}, tags=M),
    Case("eb", {"gamma": 0.7, "block_length": 6}),
    Case("eb", {"gamma": 0.3, "temperature": 2.0}),
    Case("llada2", {"threshold": 0.6}, steps=4),
    Case("llada2", {"threshold": 0.7, "block_length": 2, "temperature": 0.5}, steps=4, tags=M),
    Case("llada2", {"threshold": 0.65, "temperature": 0}, steps=2, tags=F),
    Case("llada2", {"block_length": 4}, steps=6),
    Case("dream", steps=3),
    Case("dream", {"alg": "maskgit-plus"}, steps=4, tags=M),
    Case("dream", {"alg": "margin", "temperature": 0.5}, steps=2),
    Case("dream", {"alg": "entropy", "temperature": 0}, steps=4, tags=F),
    Case("dream", {"alg": "maskgit-plus", "alg_temp": 0.5}, steps=3, tags=M),
    Case("dream", {"alg": "entropy", "alg_temp": 0.1, "temperature": 0.7}, steps=2),
    Case("dus", {"block_length": 4}, tags=M),
    Case("dus", {"block_length": 2, "temperature": 0.5}),
    Case("dus", {"temperature": 0}, tags=M),
    Case("dus", {"block_length": 4, "temperature": 1.5}),
    Case("fast-dllm-v2", {"block_length": 4, "sub_block": 2, "threshold": 0.6}, tags=M),
    Case("fast-dllm-v2", {"block_length": 4, "sub_block": 4, "temperature": 0}),
    Case("fast-dllm-v2", {"block_length": 4, "sub_block": 1, "temperature": 0.7}),
    Case("fast-dllm-v2", {"block_length": 12, "sub_block": 4, "threshold": 0.5}),
    Case("sdar", {"block_length": 2}, steps=4, tags=M),
    Case("sdar", {"threshold": 0.6}, steps=4),
    Case("sdar", {"threshold": 1.0, "temperature": 0.5}, steps=2),
    Case("sdar", {"block_length": 2, "threshold": 0.7, "temperature": 0}, steps=4),
    Case("dinfer", {"run_threshold": 0.5, "threshold": 0.8}, tags=M),
    Case("dinfer", {"block_length": 2, "temperature": 0}),
    Case("dinfer", {"run_threshold": 0.3, "temperature": 0.5}, tags=F),
    Case("dinfer", {"block_length": 4, "threshold": 0.6, "run_threshold": 0.6, "temperature": 1.5}),
    Case("klass", {"threshold": 0.5, "kl": 0.05, "temperature": 0.5}, steps=4, tags=H),
    Case("klass", {"threshold": 0.6, "block_length": 2, "temperature": 1.0, "kl_steps": 1}, steps=4, tags=H),
    Case("klass", {"threshold": 0.6, "temperature": 0}, steps=3, tags=H),
    Case("credit", {"threshold": 0.7, "temperature": 1.0}, tags=H),
    Case("credit", {"threshold": 0.8, "block_length": 2, "temperature": 0.5, "credit_alpha": 2.0}, tags=H),
    Case("credit", {"threshold": 0.6}, tags=H),
    Case("prophet", {"gap": 0.5, "temperature": 1.0}, steps=4, tags=H),
    Case("prophet", {"gap": 1.0, "block_length": 2, "temperature": 0.7}, steps=4, tags=H),
    Case("prophet", {"gap": 0.0}, steps=4, tags=H),
    Case("info-gain", {"temperature": 1.0}, steps=2, tags=H),
    Case("info-gain", {"block_length": 2, "temperature": 0.5}, steps=4, tags=H),
    Case("remdm", {"eta": 0.3}, steps=3),
    Case("remdm", {"remdm_variant": "rescale", "eta": 0.5, "temperature": 0.8}, steps=3, schedule="cosine"),
    Case("remdm", {"remdm_variant": "rescale", "eta": 0.4}, steps=3, tags=F),
    Case("remdm", {"eta": 0.2}, steps=6),
    Case("remdm", {"remdm_variant": "rescale", "eta": 0.6, "temperature": 0.7}, steps=6, schedule="cosine"),
]


def decoders_at(length: int, tag: str | None = None) -> list:
    """The decoders of the rows that fit ``length`` (with ``tag``: only the rows so tagged; the ``history``
    rows, whose exact law is not the block decoders' DP, only with that tag)."""
    return [c.build(length) for c in CASES
            if (tag in c.tags if tag is not None else "history" not in c.tags) and c.fits(length)]

