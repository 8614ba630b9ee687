"""Wall-clock of MDM sampling (``ddpm_cache``, ``N`` steps) against AR decoding (KV cache).

The protocol of NEURAL.md: same device, batch size, dtype and attention backend for both;
warm-up runs excluded; the device synchronized around the timed region; the median of several
repeats; seconds per batch and per sequence, NFE for the MDM and decode steps (``L``) for the AR.
The analogue of the paper's Inference Time Comparison (batch 16, MDM at 512 steps vs AR).
Timing does not depend on the weights (NFE depends only on the schedule, ``L`` and the batch), so
untrained networks of the right shape give the same figures as trained ones.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np
import torch

from .model import Transformer
from .sample import sample_ar, sample_mdm

__all__ = ["TimingRow", "time_mdm", "time_ar", "compare_sampling"]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class TimingRow:
    """One timed sampler.

    Attributes
    ----------
    model : {"mdm", "ar"}
    length, batch : int
    steps : int
        ``N`` for the MDM, ``L`` decode steps for the AR.
    nfe : float
        Mean network calls per batch over the timed repeats (AR: ``L``).
    seconds_per_batch : float
        Median over ``repeats`` timed runs (after ``warmup`` untimed ones).
    seconds_per_sequence : float
    times : list of float
    device, dtype : str
    """

    model: str
    length: int
    batch: int
    steps: int
    nfe: float
    seconds_per_batch: float
    seconds_per_sequence: float
    times: list
    repeats: int
    warmup: int
    device: str
    dtype: str


def _timed(fn, device, repeats: int, warmup: int):
    for _ in range(warmup):
        fn()
    times, extra = [], []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        out = fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
        extra.append(out)
    return times, extra


def _dtype(device: torch.device) -> str:
    return "bf16-autocast (output layer float32)" if device.type == "cuda" else "float32"


def time_mdm(model: Transformer, *, batch: int, steps: int, length: int | None = None, repeats: int = 5,
             warmup: int = 1, seed: int = 0, schedule: str = "mdlm", draw: str = "float64") -> TimingRow:
    """Time ``ddpm_cache`` sampling of one batch with ``steps`` steps."""
    from .evaluate import _sampler_schedule

    dev = next(model.parameters()).device
    L = length or model.cfg.length
    sched = _sampler_schedule(schedule, steps)
    rng = np.random.default_rng(seed)

    def run():
        res = sample_mdm(model, sched, batch, rng, length=L, batch_size=batch, cache=True, draw=draw)
        return float(np.mean(res.nfe))

    times, nfes = _timed(run, dev, repeats, warmup)
    med = statistics.median(times)
    return TimingRow("mdm", L, batch, steps, float(np.mean(nfes)), med, med / batch, times, repeats, warmup,
                     str(dev), _dtype(dev))


def time_ar(model: Transformer, *, batch: int, length: int | None = None, repeats: int = 5, warmup: int = 1,
            seed: int = 0, draw: str = "float64") -> TimingRow:
    """Time KV-cached AR decoding of one batch of ``length`` tokens."""
    dev = next(model.parameters()).device
    L = length or model.cfg.length
    rng = np.random.default_rng(seed)

    def run():
        return float(sample_ar(model, batch, rng, length=L, batch_size=batch, draw=draw).decode_steps)

    times, nfes = _timed(run, dev, repeats, warmup)
    med = statistics.median(times)
    return TimingRow("ar", L, batch, L, float(np.mean(nfes)), med, med / batch, times, repeats, warmup,
                     str(dev), _dtype(dev))


def compare_sampling(mdm: Transformer, ar: Transformer, *, batch: int = 16, steps=(512,), length: int | None = None,
                     repeats: int = 5, warmup: int = 1, seed: int = 0) -> dict:
    """MDM at each of ``steps`` and the AR model, same batch and length; ratios ``mdm / ar``."""
    if not mdm.is_mdm or ar.is_mdm:
        raise ValueError("compare_sampling needs an MDM first and an AR model second")
    ar_row = time_ar(ar, batch=batch, length=length, repeats=repeats, warmup=warmup, seed=seed)
    rows = [time_mdm(mdm, batch=batch, steps=int(n), length=length, repeats=repeats, warmup=warmup, seed=seed)
            for n in steps]
    return {
        "ar": ar_row,
        "mdm": rows,
        "speedup_vs_ar": {str(r.steps): ar_row.seconds_per_batch / r.seconds_per_batch for r in rows},
    }
