"""Training loop of the MDM and the AR baseline (single process, or DDP under ``torchrun``).

The recipe is MDLM's (NEURAL.md): AdamW, linear warm-up then cosine, gradient clipping, EMA of
the weights (used for evaluation and sampling), bf16 autocast for the trunk on CUDA only (the
output layer and the log-softmax stay float32), stratified training times, continuous-time NELBO.

Determinism and resumption: the batch order of epoch ``e`` is a permutation seeded by
``(seed, e)`` and the noise (times, masks, dropout) of step ``s`` by ``(seed, s)``, generated for
the *global* batch and sliced per rank, so an interrupted run resumed from its checkpoint and a
DDP run over ``k`` processes follow the same trajectory as one uninterrupted single-process run
(up to the floating-point order of the gradient all-reduce).

Checkpoints (``OUT/checkpoint.pt``) hold the config, model, EMA and optimizer states, the step and
the validation history; they are written atomically (temporary file + rename), so an interruption
never leaves a half-written file. ``OUT/metrics.json`` is the small, human-readable summary.
"""

from __future__ import annotations

import copy
import io
import math
import os
import pickle
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

from numerics.languages.hmm import Language
from numerics.provenance import atomic_write_bytes, atomic_write_json, provenance

from .config import RunConfig, run_config_from_dict
from .data import Dataset, language_fingerprint, load_or_make_dataset, resolve_language
from .model import Transformer, ar_nll, draw_masks, mdm_nelbo, stratified_times

__all__ = [
    "CheckpointError",
    "Checkpoint",
    "TrainResult",
    "train",
    "load_checkpoint",
    "lr_at",
    "pick_device",
    "validate",
    "CHECKPOINT_NAME",
]

CHECKPOINT_NAME = "checkpoint.pt"
_FORMAT = "mdm-theory-checkpoint/1"
_VAL_SEED = 2_718_281  # validation noise is fixed so that evaluations at different steps compare


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: unreadable, truncated, of another format or another config."""


def pick_device(requested: str | None = None) -> torch.device:
    """``requested`` if given, else CUDA when available (the local rank's GPU under DDP), else CPU."""
    if requested:
        return torch.device(requested)
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return torch.device("cpu")


def lr_at(step: int, cfg) -> float:
    """Learning rate of optimizer step ``step`` (0-based): linear warm-up from ``lr_min`` over
    ``ceil(warmup_frac * steps)`` steps, then cosine from ``lr`` down to ``lr_min`` at ``steps``."""
    warm = math.ceil(cfg.warmup_frac * cfg.steps)
    if step < warm:
        return cfg.lr_min + (cfg.lr - cfg.lr_min) * (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, cfg.steps - warm))
    return cfg.lr_min + 0.5 * (cfg.lr - cfg.lr_min) * (1.0 + math.cos(math.pi * progress))


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence(list(parts)).generate_state(1, dtype=np.uint64)[0] >> 1)


# ------------------------------------------------------------------------------ checkpoints
@dataclass
class Checkpoint:
    """A loaded checkpoint: its config, step, weights (raw and EMA), optimizer state, history."""

    config: RunConfig
    step: int
    complete: bool
    model_state: dict
    ema_state: dict | None
    optimizer_state: dict | None
    history: list[dict]
    ema_updates: int
    language_fingerprint: str | None
    path: Path | None = None

    def build_model(self, device: str | torch.device = "cpu", use_ema: bool = True) -> Transformer:
        """The network with EMA weights (if kept and ``use_ema``), in eval mode."""
        model = Transformer(self.config.model)
        state = self.ema_state if (use_ema and self.ema_state is not None) else self.model_state
        _load_state(model, state, self.path)
        return model.to(device).eval()


def _load_state(module: Any, state: Any, path: Path | None) -> None:
    """``module.load_state_dict(state)``; weights that do not fit the saved config are a :class:`CheckpointError`."""
    try:
        module.load_state_dict(state)
    except (RuntimeError, ValueError, TypeError, KeyError) as exc:
        raise CheckpointError(f"checkpoint {str(path)!r} holds weights that do not fit its config: {exc}") from exc


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint written by :func:`train`; any damage is a :class:`CheckpointError`."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r}")
    try:
        raw = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CheckpointError(
            f"checkpoint {str(path)!r} is corrupt or truncated ({type(exc).__name__}: {exc}); "
            "delete it to start the run again"
        ) from exc
    if not isinstance(raw, dict) or raw.get("format") != _FORMAT:
        raise CheckpointError(f"{str(path)!r} is not an mdm-theory checkpoint (format {_FORMAT})")
    try:
        return Checkpoint(
            config=run_config_from_dict(raw["config"]),
            step=int(raw["step"]),
            complete=bool(raw["complete"]),
            model_state=raw["model"],
            ema_state=raw.get("ema"),
            optimizer_state=raw.get("optimizer"),
            history=list(raw.get("history", [])),
            ema_updates=int(raw.get("ema_updates", 0)),
            language_fingerprint=raw.get("language_fingerprint"),
            path=path,
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise CheckpointError(f"checkpoint {str(path)!r} is incomplete or malformed: {exc}") from exc


def _save_checkpoint(path: Path, payload: dict) -> None:
    buf = io.BytesIO()
    torch.save(payload, buf)
    atomic_write_bytes(path, buf.getvalue())


# ------------------------------------------------------------------------------ validation
@torch.no_grad()
def validate(model: Transformer, data: np.ndarray, cfg: RunConfig, device, *, rank: int = 0, world: int = 1,
             batch_size: int = 256) -> dict[str, float]:
    """Validation loss per token on ``data`` ``(n, L)``: the NELBO (MDM) or exact NLL (AR).

    The MDM's times and masks for the whole set come from one fixed generator (independent of the
    step and the number of ranks), stratified over the set. Returns the mean, its standard error
    over sequences, and the count. Under DDP each rank takes a slice and the sums are all-reduced.
    """
    model.eval()
    n, L = data.shape
    if model.is_mdm:
        g = torch.Generator().manual_seed(_VAL_SEED)
        t_all = stratified_times(n, g, cfg.train.t_min)
        mask_all = draw_masks(t_all, L, cfg.train.noise_eps, g)
    lo, hi = rank * n // world, (rank + 1) * n // world
    total = torch.zeros(3, dtype=torch.float64, device=device)  # sum, sum of squares, count
    for s in range(lo, hi, batch_size):
        e = min(hi, s + batch_size)
        x = torch.as_tensor(data[s:e], dtype=torch.long, device=device)
        with _autocast(device):
            if model.is_mdm:
                per = mdm_nelbo(model, x, t_all[s:e].to(device), mask_all[s:e].to(device))
            else:
                per = ar_nll(model, x) / L
        per = per.double()
        total += torch.stack([per.sum(), (per**2).sum(), torch.tensor(float(e - s), device=device, dtype=torch.float64)])
    if world > 1:
        dist.all_reduce(total)
    s1, s2, cnt = total.tolist()
    mean = s1 / cnt
    var = max(0.0, s2 / cnt - mean**2)
    return {"loss": mean, "stderr": math.sqrt(var / max(1.0, cnt - 1)), "sequences": int(cnt)}


def _autocast(device: torch.device):
    """bf16 autocast on CUDA only (CPU runs in float32)."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


class _Objective(nn.Module):
    """The training loss as a module, so that DDP wraps (and synchronises) exactly what runs."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, x, t=None, mask=None):
        if self.model.is_mdm:
            return mdm_nelbo(self.model, x, t, mask).mean()
        return ar_nll(self.model, x).mean() / x.shape[1]


# ------------------------------------------------------------------------------ training
@dataclass
class TrainResult:
    """What a call to :func:`train` left behind."""

    out_dir: Path
    checkpoint: Path
    step: int
    complete: bool
    seconds: float
    history: list[dict] = field(default_factory=list)

    @property
    def final(self) -> dict[str, Any] | None:
        return self.history[-1] if self.history else None


def _reference(language: Language, ds: Dataset, L: int) -> dict[str, float]:
    """The language's own figures: exact entropy rate over ``L`` tokens when available, and the
    exact NLL per token of the validation sequences."""
    ref = {"data_nll": ds.val_nll_per_token, "data_ppl": math.exp(ds.val_nll_per_token)}
    try:
        from numerics.exact.entropy import entropy_rate

        est = entropy_rate(language, L)  # exact for n-grams; an HMM would need Monte Carlo (skipped)
        ref.update(entropy_rate=est.value, true_ppl=math.exp(est.value), entropy_method=est.method)
    except (ImportError, ValueError):
        pass
    return ref


def train(
    cfg: RunConfig,
    out_dir: str | Path,
    *,
    language: Language | None = None,
    max_minutes: float | None = None,
    stop_after: int | None = None,
    device: str | None = None,
    progress: bool = True,
    data_root: str | Path | None = None,
) -> TrainResult:
    """Train (or resume) the run ``cfg`` in ``out_dir``.

    Parameters
    ----------
    language : optional
        The language object; by default ``cfg.language`` is resolved (preset name or ``.npz``).
    max_minutes : optional
        Wall-clock budget of this call; the run checkpoints and returns (``complete=False``) when
        it is spent, and a later call resumes it.
    stop_after : optional
        Stop (checkpointed, resumable) after this optimizer step -- used to test resumption.
    data_root : optional
        Where data sets are stored (default ``out_dir/../data``, shared by runs side by side).

    Under ``torchrun`` (``WORLD_SIZE > 1``) it trains with DDP (NCCL on CUDA, gloo on CPU);
    rank 0 writes the files.
    """
    t_start = time.monotonic()
    out_dir = Path(out_dir)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    dev = pick_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    tc = cfg.train
    if tc.batch_size % world:
        raise ValueError(f"batch size {tc.batch_size} is not divisible by the {world} DDP processes")
    language = language if language is not None else resolve_language(cfg.language)
    if language.vocab_size != cfg.model.vocab_size:
        raise ValueError(f"config vocab_size {cfg.model.vocab_size} != language vocabulary {language.vocab_size}")
    fingerprint = language_fingerprint(language)
    data_root = Path(data_root) if data_root is not None else out_dir.parent / "data"
    # Drawing the data set runs numba's OpenMP kernels, which reset the process's OpenMP thread
    # count (torch's too): keep torch's, or a run that drew its data and one that loaded it (a
    # resumed run) would sum float32 in different orders and not resume to the same weights.
    threads = torch.get_num_threads()
    if rank == 0:
        ds = load_or_make_dataset(language, cfg.model.length, cfg.data, data_root)
    if world > 1:
        dist.barrier()
    if rank != 0:
        ds = load_or_make_dataset(language, cfg.model.length, cfg.data, data_root)
    if ds.train.shape[0] < tc.batch_size:
        raise ValueError(f"n_train = {ds.train.shape[0]} is smaller than the batch size {tc.batch_size}")
    reference = _reference(language, ds, cfg.model.length)
    torch.set_num_threads(threads)

    torch.manual_seed(tc.seed)
    model = Transformer(cfg.model).to(dev)
    ema = copy.deepcopy(model).eval().requires_grad_(False) if tc.ema_decay > 0 else None
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=tc.betas, weight_decay=tc.weight_decay)
    step, history, ema_updates = 0, [], 0
    ckpt_path = out_dir / CHECKPOINT_NAME
    if ckpt_path.exists():
        ck = load_checkpoint(ckpt_path, map_location=dev)
        if ck.config != cfg:
            raise CheckpointError(
                f"{str(ckpt_path)!r} belongs to a run with a different config; use another output folder "
                f"(found {ck.config.to_dict()}, asked {cfg.to_dict()})"
            )
        if ck.language_fingerprint not in (None, fingerprint):
            raise CheckpointError(f"{str(ckpt_path)!r} was trained on a different language than {cfg.language!r}")
        _load_state(model, ck.model_state, ckpt_path)
        if ema is not None and ck.ema_state is not None:
            _load_state(ema, ck.ema_state, ckpt_path)
        if ck.optimizer_state is not None:
            _load_state(opt, ck.optimizer_state, ckpt_path)
        step, history, ema_updates = ck.step, ck.history, ck.ema_updates
    objective = _Objective(model)
    if world > 1:
        objective = nn.parallel.DistributedDataParallel(objective, device_ids=[dev.index] if dev.type == "cuda" else None)

    def save(complete: bool) -> None:
        if rank != 0:
            return
        _save_checkpoint(ckpt_path, {
            "format": _FORMAT, "config": cfg.to_dict(), "step": step, "complete": complete,
            "model": model.state_dict(), "ema": ema.state_dict() if ema is not None else None,
            "ema_updates": ema_updates, "optimizer": opt.state_dict(), "history": history,
            "language_fingerprint": fingerprint, "provenance": provenance(),
        })
        atomic_write_json(out_dir / "metrics.json", {
            "config": cfg.to_dict(), "step": step, "complete": complete, "world_size": world,
            "device": str(dev), "parameters": model.num_params(), "reference": reference,
            "history": history, "provenance": provenance(),
        })

    def evaluate(final: bool) -> dict:
        net = ema if ema is not None else model
        n_eval = ds.val.shape[0] if final else tc.eval_sequences
        v = validate(net, ds.val[:n_eval], cfg, dev, rank=rank, world=world, batch_size=max(64, 2 * tc.batch_size // world))
        data_nll = float(-ds.val_loglik[:n_eval].mean() / cfg.model.length)
        row = {"step": step, "val_loss": v["loss"], "val_stderr": v["stderr"], "val_sequences": v["sequences"],
               "val_ppl": math.exp(v["loss"]), "data_nll": data_nll, "data_ppl": math.exp(data_nll),
               "ppl_ratio": math.exp(v["loss"] - data_nll), "seconds": time.monotonic() - t_start,
               "final": final, "bound": "nelbo" if model.is_mdm else "exact-nll"}
        if "true_ppl" in reference:
            row["ppl_ratio_entropy"] = math.exp(v["loss"] - reference["entropy_rate"])
        model.train()
        return row

    B, b = tc.batch_size, tc.batch_size // world
    L, n_train = cfg.model.length, ds.train.shape[0]
    per_epoch = n_train // B
    perm_cache: dict[int, torch.Tensor] = {}
    bar = None
    if progress and rank == 0:
        from tqdm import tqdm

        bar = tqdm(total=tc.steps, initial=step, desc=f"train {cfg.model.kind}", dynamic_ncols=True)
    complete = step >= tc.steps
    model.train()
    try:
        while step < tc.steps:
            epoch, k = divmod(step, per_epoch)
            if epoch not in perm_cache:
                perm_cache.clear()
                perm_cache[epoch] = torch.randperm(n_train, generator=torch.Generator().manual_seed(_seed(tc.seed, 1, epoch)))
            idx = perm_cache[epoch][k * B : (k + 1) * B][rank * b : (rank + 1) * b]
            x = torch.as_tensor(ds.train[idx.numpy()], dtype=torch.long).to(dev, non_blocking=True)
            g = torch.Generator().manual_seed(_seed(tc.seed, 2, step))
            torch.manual_seed(_seed(tc.seed, 3, step, rank))  # dropout
            if model.is_mdm:
                t = stratified_times(B, g, tc.t_min)
                mask = draw_masks(t, L, tc.noise_eps, g)
                args = (t[rank * b : (rank + 1) * b].to(dev), mask[rank * b : (rank + 1) * b].to(dev))
            else:
                args = ()
            lr = lr_at(step, tc)
            for group in opt.param_groups:
                group["lr"] = lr
            with _autocast(dev):
                loss = objective(x, *args)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
            opt.step()
            step += 1
            if ema is not None:
                ema_updates += 1
                decay = min(tc.ema_decay, (1 + ema_updates) / (10 + ema_updates))
                with torch.no_grad():
                    for pe, pm in zip(ema.parameters(), model.parameters()):
                        pe.lerp_(pm, 1.0 - decay)
            if step % 10 == 0 or step == tc.steps:  # a host sync: not every step on a GPU
                lv = loss.item()
                if not math.isfinite(lv):
                    raise FloatingPointError(f"training loss became {lv} at step {step}")
                if bar is not None:
                    bar.set_postfix(loss=f"{lv:.4f}", lr=f"{lr:.2e}", gnorm=f"{float(gnorm):.2f}", refresh=False)
            if bar is not None:
                bar.update(1)
            if step % tc.eval_every == 0 and step < tc.steps:
                history.append(evaluate(final=False))
                if bar is not None:
                    r = history[-1]
                    bar.write(f"step {step}: val {r['val_loss']:.4f} ppl {r['val_ppl']:.4f} vs data {r['data_ppl']:.4f} "
                              f"(ratio {r['ppl_ratio']:.4f})")
            if step % tc.checkpoint_every == 0 and step < tc.steps:
                save(False)
            over = max_minutes is not None and (time.monotonic() - t_start) > 60.0 * max_minutes
            if world > 1 and max_minutes is not None:  # every rank stops at the same step
                flag = torch.tensor([float(over)], device=dev)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                over = bool(flag.item())
            if over or (stop_after is not None and step >= stop_after):
                break
        complete = step >= tc.steps
        if complete and not (history and history[-1].get("final")):
            history.append(evaluate(final=True))
        save(complete)
    except KeyboardInterrupt:
        save(False)
        raise
    finally:
        if bar is not None:
            bar.close()
    return TrainResult(out_dir, ckpt_path, step, complete, time.monotonic() - t_start, history)
