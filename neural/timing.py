"""Wall-clock of MDM sampling (``ddpm_cache``, ``N`` steps) against AR decoding (KV cache).

The protocol of docs/neural.md: same device, batch size, dtype and attention backend for both;
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

from .model import AutoregressiveTransformer, MaskedDiffusionTransformer
from .sample import sample_ar, sample_mdm, sampler_schedule

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
    n_steps : int
        ``N`` for the MDM, ``L`` decode steps for the AR.
    nfe : float
        Mean network calls per batch over the timed repeats (AR: ``L``).
    seconds_per_batch : float
        Median over ``repeats`` timed runs (after ``warmup`` untimed ones).
    seconds_per_sequence : float
    times : list of float
    device, dtype : str
    threads : int
        ``torch.get_num_threads()`` while timing (the CPU regime).
    """

    model: str
    length: int
    batch: int
    n_steps: int
    nfe: float
    seconds_per_batch: float
    seconds_per_sequence: float
    times: list
    repeats: int
    warmup: int
    device: str
    dtype: str
    threads: int


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


def time_mdm(model: MaskedDiffusionTransformer, *, batch: int, n_steps: int, length: int | None = None,
             repeats: int = 5, warmup: int = 1, seed: int = 0, schedule: str = "mdlm", draw: str = "float64") -> TimingRow:
    """Time ``ddpm_cache`` sampling of one batch with ``n_steps`` steps."""
    dev = next(model.parameters()).device
    L = length or model.cfg.length
    sched = sampler_schedule(schedule, n_steps)
    rng = np.random.default_rng(seed)

    def run():
        res = sample_mdm(model, sched, batch, rng, length=L, batch_size=batch, cache=True, draw=draw)
        return float(np.mean(res.nfe))

    times, nfes = _timed(run, dev, repeats, warmup)
    med = statistics.median(times)
    return TimingRow("mdm", L, batch, n_steps, float(np.mean(nfes)), med, med / batch, times, repeats, warmup,
                     str(dev), _dtype(dev), torch.get_num_threads())


def time_ar(model: AutoregressiveTransformer, *, batch: int, length: int | None = None, repeats: int = 5, warmup: int = 1,
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
                     str(dev), _dtype(dev), torch.get_num_threads())


def compare_sampling(mdm: MaskedDiffusionTransformer, ar: AutoregressiveTransformer, *, batch: int = 16,
                     n_steps=(512,), length: int | None = None, repeats: int = 5, warmup: int = 1, seed: int = 0) -> dict:
    """MDM at each of ``n_steps`` and the AR model, same batch and length; ``speedup_vs_ar`` is AR time / MDM time."""
    if not isinstance(mdm, MaskedDiffusionTransformer) or not isinstance(ar, AutoregressiveTransformer):
        raise ValueError("compare_sampling needs an MDM first and an AR model second")
    ar_row = time_ar(ar, batch=batch, length=length, repeats=repeats, warmup=warmup, seed=seed)
    rows = [time_mdm(mdm, batch=batch, n_steps=int(n), length=length, repeats=repeats, warmup=warmup, seed=seed)
            for n in n_steps]
    return {
        "ar": ar_row,
        "mdm": rows,
        "speedup_vs_ar": {str(r.n_steps): ar_row.seconds_per_batch / r.seconds_per_batch for r in rows},
    }
