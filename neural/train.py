"""Training loop of the MDM and the AR baseline (single process, or DDP under ``torchrun``).

The recipe is MDLM's (docs/neural.md): AdamW, linear warm-up then cosine, gradient clipping, EMA
of the weights (used for evaluation and sampling), bf16 autocast for the trunk on CUDA only (the
output layer and the log-softmax stay float32), the continuous-time NELBO of
:mod:`neural.diffusion`.

Determinism and resumption: the batch order of epoch ``e`` is a permutation seeded by
``(seed, e)`` and the noise (times or counts, masks, dropout) of step ``s`` by ``(seed, s)``,
generated for the *global* batch and sliced per rank, so an interrupted run resumed from its
checkpoint and a DDP run over ``k`` processes follow the same trajectory as one uninterrupted
single-process run (up to the floating-point order of the gradient all-reduce).

Checkpoints (``OUT/checkpoint.pt``) hold the config, model, EMA and optimizer states, the step,
the learning-rate segments and the validation history; they are written atomically (temporary
file + rename), so an interruption never leaves a half-written file. ``OUT/metrics.json`` is the
small, human-readable summary. Re-running into ``OUT`` with another config is refused with the
differing fields named, except a larger ``train.train_steps`` on a finished run, which extends it.

Every tensor of a checkpoint (weights, EMA weights, optimizer moments) is written with its
SHA-256 (``checksums``) and verified on load: a flipped bit that leaves a weight finite (0.05 ->
3e36) is a :class:`CheckpointError` naming the tensor, not a silently different network. A
checkpoint written before checksums existed loads with a warning. The network a checkpoint's
config describes is sized against this machine's memory before it is built
(:func:`numerics.machine.check_memory`).

One run folder has one writer: :func:`train` holds ``OUT/checkpoint.pt.lock`` (POSIX advisory,
:mod:`filelock`, released when the process exits, even by SIGKILL) from reading the checkpoint to
its last save; a second ``train`` on the same folder is refused at once (:class:`RunBusyError`)
instead of both writing it.

The loop reads as nanoGPT's ``train.py``: set up (devices, data, state), then one short function
per concern -- the batch, the step, the EMA, validation, saving.
"""

from __future__ import annotations

import copy
import hashlib
import io
import math
import pickle
import re
import signal
import threading
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from filelock import FileLock, Timeout
from torch import nn

from numerics.exact.entropy import entropy_rate
from numerics.languages.hmm import Language
from numerics.machine import GuardError, check_memory, env_value, transformer_bytes
from numerics.provenance import atomic_write_bytes, atomic_write_json, check_writable_file, provenance

from .config import RunConfig, TrainConfig, config_differences, run_config_from_dict
from .data import Dataset, language_fingerprint, load_or_make_dataset, resolve_language
from .diffusion import Objective, objective_for
from .model import Transformer, build_model

__all__ = [
    "CHECKPOINT_NAME",
    "TIMING_FIELDS",
    "Checkpoint",
    "RunBusyError",
    "CheckpointError",
    "TrainResult",
    "load_checkpoint",
    "lr_at",
    "pick_device",
    "train",
    "validate",
]

CHECKPOINT_NAME = "checkpoint.pt"
_FORMAT = "mdm-theory-checkpoint/2"  # 2: train_steps (was steps), LR segments, two model classes
_VAL_SEED = 2_718_281  # validation noise is fixed so that evaluations at different steps compare

#: The fields of a validation-history row that measure the process that logged it (wall-clock and
#: CPU time, counted from the start of that call to :func:`train`): two runs of one config differ
#: in these and in nothing else, whether or not one of them was interrupted and resumed.
TIMING_FIELDS = frozenset({"seconds", "tokens_per_second", "cpu_seconds"})


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: unreadable, truncated, of another format or another config."""


class RunBusyError(OSError):
    """Another process is training into the same run folder (it holds the folder's lock)."""


def pick_device(requested: str | None = None) -> torch.device:
    """``requested`` if given, else CUDA when available (the local rank's GPU under DDP), else CPU.

    ``cuda`` without an index is the local rank's GPU too (``cuda:0`` outside DDP): ``torch.cuda.set_device``
    refuses a device without an index (torch 2.11 on an H200: "Expected a torch.device with a specified index").

    A device torch does not know (``tpu9``) or this machine does not have (``cuda`` without a GPU,
    ``cuda:3`` on a machine with one) is a :class:`~numerics.machine.GuardError` naming ``--device``.
    """
    if not requested:
        if torch.cuda.is_available():
            return torch.device("cuda", env_value("LOCAL_RANK"))
        return torch.device("cpu")
    try:
        dev = torch.device(requested)
    except (RuntimeError, ValueError, TypeError):
        raise GuardError(f"--device {requested!r} is not a device: use cpu, cuda or cuda:K (K a GPU index)") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if dev.index is None:  # plain "cuda": the local rank's GPU, as the default (torch.cuda.set_device needs an index)
            dev = torch.device("cuda", env_value("LOCAL_RANK"))
        if count == 0 or dev.index >= count:
            raise GuardError(f"--device {requested}: this machine has {count} CUDA device(s)"
                             + ("; use --device cpu" if count == 0 else f"; use cuda:0 to cuda:{count - 1}"))
    elif dev.type not in ("cpu", "mps", "xpu"):
        raise GuardError(f"--device {requested!r}: mdm-theory trains and samples on cpu or cuda")
    elif dev.type != "cpu" and not getattr(torch, dev.type).is_available():
        raise GuardError(f"--device {requested}: no {dev.type} device on this machine; use --device cpu")
    return dev


def run_lock(out_dir: str | Path) -> FileLock:
    """The lock of a run folder (``OUT/checkpoint.pt.lock``): one writer at a time (module docstring)."""
    out_dir = Path(out_dir)
    check_writable_file(out_dir / CHECKPOINT_NAME)  # a folder on the way that is a file: named, nothing made
    out_dir.mkdir(parents=True, exist_ok=True)
    return FileLock(out_dir / f"{CHECKPOINT_NAME}.lock", timeout=0)


def lr_at(step: int, cfg: TrainConfig, start: int = 0) -> float:
    """Learning rate of optimizer step ``step`` (0-based) in the segment that began at ``start``.

    Linear warm-up from ``lr_min`` over ``ceil(warmup_frac * n)`` steps, then a cosine from ``lr``
    down to ``lr_min`` at ``train_steps``, where ``n = train_steps - start`` is the segment's
    length. A straight run has one segment (``start = 0``); extending a finished run to more
    steps opens a new segment at its old end (a warm restart over the added steps).
    """
    n = cfg.train_steps - start
    k = step - start
    warm = math.ceil(cfg.warmup_frac * n)
    if k < warm:
        return cfg.lr_min + (cfg.lr - cfg.lr_min) * (k + 1) / warm
    progress = min(1.0, (k - warm) / max(1, n - warm))
    return cfg.lr_min + 0.5 * (cfg.lr - cfg.lr_min) * (1.0 + math.cos(math.pi * progress))


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence(list(parts)).generate_state(1, dtype=np.uint64)[0] >> 1)


def _autocast(device: torch.device):
    """bf16 autocast on CUDA only (CPU runs in float32)."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


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
    segments: list[int] = field(default_factory=lambda: [0])
    path: Path | None = None

    def build_model(self, device: str | torch.device = "cpu", use_ema: bool = True) -> Transformer:
        """The network with EMA weights (if kept and ``use_ema``), in eval mode."""
        model = build_model(self.config.model)
        state = self.ema_state if (use_ema and self.ema_state is not None) else self.model_state
        _load_state(model, state, self.path)
        return model.to(device).eval()


def _tensors(tree: Any, prefix: str = ""):
    """``(dotted name, tensor)`` of every tensor in a nested dict/list (a state dict, an optimizer state)."""
    if isinstance(tree, torch.Tensor):
        yield prefix, tree
    elif isinstance(tree, dict):
        for k, v in tree.items():
            yield from _tensors(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(tree, (list, tuple)):
        for k, v in enumerate(tree):
            yield from _tensors(v, f"{prefix}[{k}]")


def _digest(tensor: torch.Tensor) -> str:
    """SHA-256 of a tensor's dtype, shape and bytes (any dtype and device)."""
    t = tensor.detach().reshape(-1).contiguous().cpu()
    h = hashlib.sha256(f"{t.dtype} {tuple(tensor.shape)}\n".encode())
    h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


_CHECKED_PARTS = ("model", "ema", "optimizer")  # the payload's parts whose tensors carry checksums


def _checksums(payload: dict) -> dict[str, str]:
    """``{"model.NAME": sha256, "ema.NAME": ..., "optimizer.state.0.exp_avg": ...}`` of a payload's tensors."""
    return {name: _digest(t) for part in _CHECKED_PARTS for name, t in _tensors(payload.get(part), part)}


def _verify_checksums(raw: dict, path: Path) -> None:
    """Compare every tensor with its stored SHA-256: a :class:`CheckpointError` naming the first that differs;
    a checkpoint without checksums (written before they existed) loads with a warning."""
    stored = raw.get("checksums")
    if stored is None:
        warnings.warn(f"checkpoint {str(path)!r} carries no checksums of its tensors (written before mdm-theory "
                      "stored them): a damaged weight cannot be detected; resume or retrain the run to add them",
                      stacklevel=3)
        return
    found = _checksums(raw)
    if not isinstance(stored, dict) or set(stored) != set(found):
        missing = sorted(set(found) ^ set(stored if isinstance(stored, dict) else ()))[:3]
        raise CheckpointError(f"checkpoint {str(path)!r} does not hold the tensors its checksums list "
                              f"(differences: {missing}); the file was damaged or edited")
    for name, digest in found.items():
        if stored[name] != digest:
            raise CheckpointError(f"checkpoint {str(path)!r}: tensor {name} does not match its checksum (SHA-256 "
                                  f"{digest[:12]}... written as {str(stored[name])[:12]}...): the file was damaged "
                                  "or edited after it was written; restore it or retrain")


def _check_size(cfg: RunConfig, path: Path) -> None:
    """Refuse a config whose network (one sequence through it) cannot fit in this machine's memory."""
    m = cfg.model
    try:
        check_memory(transformer_bytes(1, m.length, m.width, m.n_heads, m.n_layers, m.vocab_size)
                     + 4.0 * (m.length + 1) * m.width,  # the position tables
                     f"the network of checkpoint {str(path)!r} (L = {m.length}, width {m.width}, {m.n_layers} blocks)",
                     "its config was damaged, or it belongs to a larger machine")
    except GuardError as exc:
        raise CheckpointError(str(exc)) from None


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
    except pickle.UnpicklingError as exc:
        refused = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        if refused is None:  # bytes that are no pickle at all
            why = re.search(r"WeightsUnpickler error:\s*(\S[^\n]*)", str(exc))
            raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or truncated (UnpicklingError: "
                                  f"{why.group(1) if why else str(exc).strip().splitlines()[0]})") from exc
        raise CheckpointError(  # weights_only refused an object: code would run on loading it
            f"checkpoint {str(path)!r} holds Python objects that a weights-only load refuses to build (a foreign "
            f"or malicious file; nothing in it was run): it asks for {refused.group(1)}") from exc
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as exc:  # UnpicklingError: above
        raise CheckpointError(
            f"checkpoint {str(path)!r} is corrupt or truncated ({type(exc).__name__}: {exc})") from exc
    if not isinstance(raw, dict) or raw.get("format") != _FORMAT:
        raise CheckpointError(f"{str(path)!r} is not an mdm-theory checkpoint (format {_FORMAT})")
    _verify_checksums(raw, path)
    try:
        ck = Checkpoint(
            config=run_config_from_dict(raw["config"]),
            step=int(raw["step"]),
            complete=bool(raw["complete"]),
            model_state=raw["model"],
            ema_state=raw.get("ema"),
            optimizer_state=raw.get("optimizer"),
            history=list(raw.get("history", [])),
            ema_updates=int(raw.get("ema_updates", 0)),
            language_fingerprint=raw.get("language_fingerprint"),
            segments=[int(s) for s in raw.get("segments", [0])],
            path=path,
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise CheckpointError(f"checkpoint {str(path)!r} is incomplete or malformed: {exc}") from exc
    _check_size(ck.config, path)
    _check_finite(ck, path)
    return ck


def _check_finite(ck: Checkpoint, path: Path) -> None:
    """Refuse weights holding NaN or inf: such a network still samples (garbage, with confident numbers)."""
    for part, state in (("weights", ck.model_state), ("EMA weights", ck.ema_state)):
        if not isinstance(state, dict):
            continue
        for name, tensor in state.items():
            if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                bad = int((~torch.isfinite(tensor)).sum())
                raise CheckpointError(f"checkpoint {str(path)!r} holds non-finite {part}: {name} has {bad} NaN/inf "
                                      f"entr{'y' if bad == 1 else 'ies'} of {tensor.numel()}; a network with them "
                                      "computes nothing meaningful (the run diverged or the file was damaged)")


def _save_checkpoint(path: Path, payload: dict) -> None:
    buf = io.BytesIO()
    torch.save({**payload, "checksums": _checksums(payload)}, buf)
    atomic_write_bytes(path, buf.getvalue())


def _resume_segments(ck: Checkpoint, cfg: RunConfig, path: Path) -> list[int]:
    """The LR segments to continue ``ck`` under ``cfg``; :class:`CheckpointError` naming any other difference.

    The same config resumes (or finds finished) the run; a larger ``train.train_steps`` on a
    finished run opens a new segment at its end. Anything else would silently mix two runs.
    """
    diffs = config_differences(ck.config, cfg)
    if not diffs:
        return list(ck.segments)
    names = [d[0] for d in diffs]
    old_n, new_n = ck.config.train.train_steps, cfg.train.train_steps
    if names == ["train.train_steps"] and new_n > old_n:
        if not ck.complete:
            raise CheckpointError(
                f"{str(path)!r} is a run in progress at step {ck.step} of {old_n}; finish it "
                f"(train_steps={old_n}) before extending it to {new_n} steps")
        return [*ck.segments, old_n]
    listed = "; ".join(f"{name}: {old!r} in the run, {new!r} asked" for name, old, new in diffs)
    hint = (" (a run can only be extended: train_steps larger than the finished run's)"
            if names == ["train.train_steps"] else "")
    raise CheckpointError(f"{str(path)!r} belongs to a run with another config ({listed}){hint}; "
                          "use another output folder or the run's own config")


# ------------------------------------------------------------------------------ validation
@torch.no_grad()
def validate(model: Transformer, data: np.ndarray, loglik: np.ndarray, device, *, rank: int = 0, world: int = 1,
             tokens_per_batch: int = 16_384) -> dict[str, float]:
    """Validation loss per token on ``data`` ``(n, L)`` and its paired gap to the exact ``-log q(x) / L``.

    MDM: the NELBO by one random order per sequence with all ``L`` terms
    (:func:`neural.diffusion.order_nelbo`; the orders of the whole set come from one fixed
    generator, independent of the step and the number of ranks). AR: the exact
    ``-log p_theta(x) / L``. ``loglik`` ``(n,)`` holds the exact ``log q(x)``. Returns the mean
    loss and its standard error, the mean gap ``loss - (-log q(x) / L)`` (an estimate of
    ``KL(q || p_theta) / L``, plus the NELBO's looseness for an MDM) and its standard error over
    sequences, and the count. Under DDP each rank takes a slice and the sums are all-reduced.
    """
    was_training = model.training
    model.eval()
    n, L = data.shape
    objective = objective_for(model.kind)
    noise = objective.validation_draw(n, L, torch.Generator().manual_seed(_VAL_SEED))
    ref = torch.as_tensor(-np.asarray(loglik, dtype=np.float64) / L)
    batch = max(1, tokens_per_batch // (L * objective.copies(L)))
    lo, hi = rank * n // world, (rank + 1) * n // world
    total = torch.zeros(5, dtype=torch.float64, device=device)  # sums of loss, loss^2, gap, gap^2, count
    for s in range(lo, hi, batch):
        e = min(hi, s + batch)
        x = torch.as_tensor(data[s:e], dtype=torch.long, device=device)
        with _autocast(device):
            per = objective.validation_loss(model, x, None if noise is None else noise[s:e]).double()
        gap = per - ref[s:e].to(device)
        total += torch.stack([per.sum(), (per**2).sum(), gap.sum(), (gap**2).sum(),
                              torch.tensor(float(e - s), device=device, dtype=torch.float64)])
    if world > 1:
        dist.all_reduce(total)
    s1, s2, g1, g2, cnt = total.tolist()
    model.train(was_training)

    def stderr(a, b):
        mean = a / cnt
        return math.sqrt(max(0.0, b / cnt - mean**2) / max(1.0, cnt - 1))

    return {"loss": s1 / cnt, "stderr": stderr(s1, s2), "gap": g1 / cnt, "gap_stderr": stderr(g1, g2),
            "sequences": int(cnt)}


# ------------------------------------------------------------------------------ set-up
@dataclass(frozen=True)
class _Processes:
    """This process's place in a (possibly DDP) run."""

    world: int
    rank: int
    device: torch.device

    @property
    def main(self) -> bool:
        return self.rank == 0


def _setup_processes(device: str | None) -> _Processes:
    world = env_value("WORLD_SIZE")
    rank = env_value("RANK")
    dev = pick_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    return _Processes(world, rank, dev)


def _load_data(cfg: RunConfig, language: Language, procs: _Processes, root: Path) -> Dataset:
    """The run's data set: drawn and stored by rank 0, then read by the others."""
    if procs.main:
        ds = load_or_make_dataset(language, cfg.model.length, cfg.data, root)
    if procs.world > 1:
        dist.barrier()
    if not procs.main:
        ds = load_or_make_dataset(language, cfg.model.length, cfg.data, root)
    if ds.train.shape[0] < cfg.train.batch_size:
        raise ValueError(f"n_train = {ds.train.shape[0]} is smaller than the batch size {cfg.train.batch_size}")
    return ds


def _reference(language: Language, ds: Dataset, L: int) -> dict[str, Any]:
    """The language's own figures: the exact NLL per token of the validation sequences, and the
    exact entropy rate over ``L`` tokens where the language has one (n-grams)."""
    ref: dict[str, Any] = {"data_nll": ds.val_nll_per_token, "data_ppl": math.exp(ds.val_nll_per_token)}
    try:
        est = entropy_rate(language, L)
    except ValueError:  # no exact entropy (an HMM): the validation sequences' exact NLL is the reference
        return ref
    ref.update(entropy_rate=est.value, true_ppl=math.exp(est.value), entropy_method=est.method)
    return ref


@dataclass
class _State:
    """Everything that changes during training (and is saved in the checkpoint)."""

    model: Transformer
    ema: Transformer | None
    opt: torch.optim.Optimizer
    step: int = 0
    history: list = field(default_factory=list)
    ema_updates: int = 0
    segments: list = field(default_factory=lambda: [0])
    tokens: int = 0  # tokens trained on by this call
    loop_seconds: float = 0.0  # wall-clock of this call's optimizer steps (validation excluded)
    loop_cpu_seconds: float = 0.0
    compiled: bool = False  # whether this call's steps ran through torch.compile


def _initial_state(cfg: RunConfig, dev: torch.device, ckpt_path: Path, fingerprint: str) -> _State:
    """A fresh model, EMA and optimizer, or the checkpoint's when ``ckpt_path`` exists."""
    tc = cfg.train
    torch.manual_seed(tc.seed)
    model = build_model(cfg.model).to(dev)
    ema = copy.deepcopy(model).eval().requires_grad_(False) if tc.ema_decay > 0 else None
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=tc.betas, weight_decay=tc.weight_decay)
    state = _State(model, ema, opt)
    if not ckpt_path.exists():
        return state
    try:
        ck = load_checkpoint(ckpt_path, map_location=dev)
    except CheckpointError as exc:  # training's way out: this run folder's own checkpoint is unusable
        raise CheckpointError(f"{exc}; delete it (or use another --out) to start the run again") from exc
    state.segments = _resume_segments(ck, cfg, ckpt_path)
    if ck.language_fingerprint not in (None, fingerprint):
        raise CheckpointError(f"{str(ckpt_path)!r} was trained on a different language than {cfg.language!r}")
    _load_state(model, ck.model_state, ckpt_path)
    if ema is not None and ck.ema_state is not None:
        _load_state(ema, ck.ema_state, ckpt_path)
    if ck.optimizer_state is not None:
        _load_state(opt, ck.optimizer_state, ckpt_path)
    state.step, state.history, state.ema_updates = ck.step, ck.history, ck.ema_updates
    return state


class _Loss(nn.Module):
    """The training loss as a module, so that DDP wraps (and synchronises) exactly what runs."""

    def __init__(self, model: Transformer, objective: Objective):
        super().__init__()
        self.model = model
        self.objective = objective

    def forward(self, x, noise=None):
        return self.objective.loss(self.model, x, noise).mean()


# ------------------------------------------------------------------------------ one step
class _Batches:
    """Global batch ``step`` of the seeded epoch permutations, this rank's slice, on the device."""

    def __init__(self, ds: Dataset, cfg: RunConfig, procs: _Processes):
        self.train, self.cfg, self.procs = ds.train, cfg, procs
        self.per_epoch = ds.train.shape[0] // cfg.train.batch_size
        self._perm: tuple[int, torch.Tensor] | None = None

    def rows(self, step: int) -> slice:
        b = self.cfg.train.batch_size // self.procs.world
        return slice(self.procs.rank * b, (self.procs.rank + 1) * b)

    def __call__(self, step: int) -> torch.Tensor:
        B = self.cfg.train.batch_size
        epoch, k = divmod(step, self.per_epoch)
        if self._perm is None or self._perm[0] != epoch:
            g = torch.Generator().manual_seed(_seed(self.cfg.train.seed, 1, epoch))
            self._perm = (epoch, torch.randperm(self.train.shape[0], generator=g))
        idx = self._perm[1][k * B : (k + 1) * B][self.rows(step)]
        return torch.as_tensor(self.train[idx.numpy()], dtype=torch.long).to(self.procs.device, non_blocking=True)


def _noise(objective: Objective, cfg: RunConfig, step: int, rows: slice):
    """The noise of global batch ``step`` (seeded by ``(seed, step)``), this rank's rows."""
    noise = objective.draw(cfg.train.batch_size, cfg.model.length, torch.Generator().manual_seed(_seed(cfg.train.seed, 2, step)))
    return None if noise is None else type(noise)(noise.mask[rows], noise.weight[rows])


def _compile_unavailable(device: torch.device) -> str | None:
    """Why ``torch.compile`` cannot build kernels here (``None``: it can)."""
    if device.type != "cpu":
        return None
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
    except Exception as exc:  # noqa: BLE001 -- any failure to find one means: train eager
        return f"no C++ compiler for torch.compile on the CPU ({exc})"
    return None


def _eager_fallback(why: str) -> None:
    warnings.warn(f"torch.compile failed, training eager instead: {why}", RuntimeWarning, stacklevel=3)


def _compiled(loss_fn: nn.Module, device: torch.device) -> nn.Module:
    """``loss_fn`` through ``torch.compile``; ``loss_fn`` itself, with a warning, where torch cannot compile."""
    why_not = _compile_unavailable(device)
    if why_not is None:
        try:
            return torch.compile(loss_fn)
        except Exception as exc:  # noqa: BLE001 -- whatever stops torch.compile, the run trains eager
            why_not = f"{type(exc).__name__}: {exc}"
    _eager_fallback(why_not)
    return loss_fn


def _optimizer_step(state: _State, loss_fn: nn.Module, x: torch.Tensor, noise, cfg: RunConfig, dev) -> tuple:
    """One AdamW step at the scheduled learning rate, with gradient clipping; returns (loss, lr, grad norm)."""
    lr = lr_at(state.step, cfg.train, state.segments[-1])
    for group in state.opt.param_groups:
        group["lr"] = lr
    with _autocast(dev):
        loss = loss_fn(x, noise)
    state.opt.zero_grad(set_to_none=True)
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(state.model.parameters(), cfg.train.grad_clip)
    state.opt.step()
    state.step += 1
    return loss, lr, gnorm


@torch.no_grad()
def _ema_update(state: _State, decay_max: float) -> None:
    """EMA with MDLM's warm-up: ``decay = min(decay_max, (1 + n) / (10 + n))``."""
    if state.ema is None:
        return
    state.ema_updates += 1
    decay = min(decay_max, (1 + state.ema_updates) / (10 + state.ema_updates))
    torch._foreach_lerp_(list(state.ema.parameters()), list(state.model.parameters()), 1.0 - decay)


# ------------------------------------------------------------------------------ reporting
def _evaluate(state: _State, ds: Dataset, cfg: RunConfig, procs: _Processes, final: bool, started: float) -> dict:
    """One row of the validation history (EMA weights when kept).

    Every field is a function of the config, the data and the step, except :data:`TIMING_FIELDS`:
    ``seconds`` since this call started, and the ``tokens_per_second`` and ``cpu_seconds`` of this
    call's optimizer steps (a resumed run counts from its resumption).
    """
    tc = cfg.train
    net = state.ema if state.ema is not None else state.model
    n_eval = ds.val.shape[0] if final else tc.eval_sequences
    v = validate(net, ds.val[:n_eval], ds.val_loglik[:n_eval], procs.device, rank=procs.rank, world=procs.world)
    data_nll = float(-ds.val_loglik[:n_eval].mean() / cfg.model.length)
    return {"step": state.step, "val_loss": v["loss"], "val_stderr": v["stderr"], "val_sequences": v["sequences"],
            "val_ppl": math.exp(v["loss"]), "data_nll": data_nll, "data_ppl": math.exp(data_nll),
            "gap": v["gap"], "gap_stderr": v["gap_stderr"], "ppl_ratio": math.exp(v["gap"]),
            "ppl_ratio_ci": [math.exp(v["gap"] - 1.96 * v["gap_stderr"]), math.exp(v["gap"] + 1.96 * v["gap_stderr"])],
            "seconds": time.monotonic() - started, "final": final,
            "bound": {"mdm": "nelbo", "ar": "exact-nll"}[cfg.model.kind],
            "tokens_per_second": state.tokens / state.loop_seconds if state.loop_seconds > 0 else None,
            "cpu_seconds": state.loop_cpu_seconds}


def _payload(state: _State, cfg: RunConfig, complete: bool, fingerprint: str) -> dict:
    return {"format": _FORMAT, "config": cfg.to_dict(), "step": state.step, "complete": complete,
            "model": state.model.state_dict(), "ema": state.ema.state_dict() if state.ema is not None else None,
            "ema_updates": state.ema_updates, "optimizer": state.opt.state_dict(), "history": state.history,
            "segments": state.segments, "language_fingerprint": fingerprint, "provenance": provenance()}


def _save(out_dir: Path, state: _State, cfg: RunConfig, procs: _Processes, complete: bool, fingerprint: str,
          reference: dict) -> None:
    if not procs.main:
        return
    _save_checkpoint(out_dir / CHECKPOINT_NAME, _payload(state, cfg, complete, fingerprint))
    atomic_write_json(out_dir / "metrics.json", {
        "config": cfg.to_dict(), "step": state.step, "complete": complete, "world_size": procs.world,
        "device": str(procs.device), "threads": torch.get_num_threads(), "compiled": state.compiled,
        "parameters": state.model.num_params(),
        "segments": state.segments, "reference": reference, "history": state.history, "provenance": provenance(),
    })


def _progress_bar(enabled: bool, cfg: RunConfig, state: _State):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=cfg.train.train_steps, initial=state.step, desc=f"train {cfg.model.kind}", dynamic_ncols=True)


def _report(bar, row: dict) -> None:
    if bar is not None:
        tps = row.get("tokens_per_second")
        bar.write(f"step {row['step']}: val {row['val_loss']:.4f} ppl {row['val_ppl']:.4f} vs data {row['data_ppl']:.4f} "
                  f"(ratio {row['ppl_ratio']:.4f})" + (f", {tps:,.0f} tokens/s" if tps else ""))


class _StopSignals:
    """SIGTERM and SIGINT ask the loop to stop after the step it is in, checkpointed (a context manager).

    A scheduler's SIGTERM (``timeout``, Slurm, Kubernetes) or a Ctrl-C no longer loses the run:
    :attr:`received` is set and the loop saves at the next step boundary, where the state is whole,
    so the resumed run is bit for bit the uninterrupted one. A second signal of either kind acts at
    once, as without this handler (the last checkpoint stands). Installed only in the main thread.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.received is None:
            self.received = signal.Signals(signum)
            return
        self.__exit__()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        signal.raise_signal(signum)

    def __exit__(self, *exc: Any) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()


def _out_of_time(started: float, max_minutes: float | None, procs: _Processes, signalled: bool = False) -> bool:
    """Whether the wall-clock budget is spent or a stop signal came (every DDP rank agrees, so all
    stop at the same step)."""
    if max_minutes is None and procs.world == 1:
        return signalled
    over = signalled or (max_minutes is not None and (time.monotonic() - started) > 60.0 * max_minutes)
    if procs.world > 1:
        flag = torch.tensor([float(over)], device=procs.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        over = bool(flag.item())
    return over


# ------------------------------------------------------------------------------ training
@dataclass
class TrainResult:
    """What a call to :func:`train` left behind.

    ``tokens_per_second`` and ``cpu_seconds`` cover this call's optimizer steps only (validation
    and data preparation excluded; compiling, with ``TrainConfig.compile``, included);
    ``cpu_seconds`` is the process CPU time (all threads). ``compiled``: whether the steps ran
    through ``torch.compile``. ``stopped_by``: the signal (``"SIGTERM"``, ``"SIGINT"``) that
    stopped the run at a step boundary, checkpointed; ``None`` otherwise.
    """

    out_dir: Path
    checkpoint: Path
    step: int
    complete: bool
    seconds: float
    history: list[dict] = field(default_factory=list)
    tokens_per_second: float | None = None
    cpu_seconds: float = 0.0
    compiled: bool = False
    stopped_by: str | None = None

    @property
    def final(self) -> dict[str, Any] | None:
        return self.history[-1] if self.history else None


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
    """Train (or resume, or extend) the run ``cfg`` in ``out_dir``.

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
    rank 0 writes the files, holding the folder's lock (:func:`run_lock`): a second process
    training into ``out_dir`` meanwhile is refused with :class:`RunBusyError`. SIGTERM or SIGINT
    during the loop stops it after the current step with a checkpoint (:class:`_StopSignals`;
    ``TrainResult.stopped_by`` names the signal).
    """
    if max_minutes is not None and not (math.isfinite(max_minutes) and max_minutes >= 0):
        raise GuardError(f"--max-minutes {max_minutes}: the wall-clock budget must be a finite number of minutes >= 0 "
                         "(0: stop after the first step)")
    if env_value("RANK") != 0:
        return _train(cfg, Path(out_dir), language, max_minutes, stop_after, device, progress, data_root)
    lock = run_lock(out_dir)
    try:
        lock.acquire()
    except Timeout:
        raise RunBusyError(f"another mdm-theory train is writing the run folder {str(out_dir)!r} (it holds "
                           f"{lock.lock_file}); wait for it to finish, or train into another --out") from None
    try:
        return _train(cfg, Path(out_dir), language, max_minutes, stop_after, device, progress, data_root)
    finally:
        lock.release()


def _train(cfg: RunConfig, out_dir: Path, language: Language | None, max_minutes: float | None,
           stop_after: int | None, device: str | None, progress: bool, data_root: str | Path | None) -> TrainResult:
    """:func:`train`'s run, its folder's lock held (rank 0)."""
    started = time.monotonic()
    out_dir = Path(out_dir)
    owns_group = env_value("WORLD_SIZE") > 1 and not dist.is_initialized()
    procs = _setup_processes(device)
    tc = cfg.train
    if tc.batch_size % procs.world:
        raise ValueError(f"batch size {tc.batch_size} is not divisible by the {procs.world} DDP processes")
    language = language if language is not None else resolve_language(cfg.language)
    if language.vocab_size != cfg.model.vocab_size:
        raise ValueError(f"config vocab_size {cfg.model.vocab_size} != language vocabulary {language.vocab_size}")
    fingerprint = language_fingerprint(language)
    # Drawing the data set runs numba's OpenMP kernels, which reset the process's OpenMP thread
    # count (torch's too): keep torch's, or a run that drew its data and one that loaded it (a
    # resumed run) would sum float32 in different orders and not resume to the same weights.
    threads = torch.get_num_threads()
    ds = _load_data(cfg, language, procs, Path(data_root) if data_root is not None else out_dir.parent / "data")
    reference = _reference(language, ds, cfg.model.length)
    torch.set_num_threads(threads)
    state = _initial_state(cfg, procs.device, out_dir / CHECKPOINT_NAME, fingerprint)
    objective = objective_for(cfg.model.kind, tc)
    loss_fn: nn.Module = _Loss(state.model, objective)
    if procs.world > 1:
        loss_fn = nn.parallel.DistributedDataParallel(
            loss_fn, device_ids=[procs.device.index] if procs.device.type == "cuda" else None)
    eager_loss = loss_fn
    if tc.compile:
        loss_fn = _compiled(loss_fn, procs.device)
        state.compiled = loss_fn is not eager_loss
    batches = _Batches(ds, cfg, procs)
    bar = _progress_bar(progress and procs.main, cfg, state)

    def save(complete: bool) -> None:
        _save(out_dir, state, cfg, procs, complete, fingerprint, reference)

    resumed_at = (state.step, len(state.history))
    state.model.train()
    stop = _StopSignals()
    try:
        stop.__enter__()
        while state.step < tc.train_steps:
            t0, c0 = time.perf_counter(), time.process_time()
            x = batches(state.step)
            noise = _noise(objective, cfg, state.step, batches.rows(state.step))
            torch.manual_seed(_seed(tc.seed, 3, state.step, procs.rank))  # dropout
            try:
                loss, lr, gnorm = _optimizer_step(state, loss_fn, x, noise, cfg, procs.device)
            except Exception as exc:  # compiling happens in the first compiled step, which updates nothing
                if loss_fn is eager_loss or state.tokens > 0:
                    raise
                _eager_fallback(f"{type(exc).__name__}: {exc}")
                loss_fn, state.compiled = eager_loss, False
                torch.manual_seed(_seed(tc.seed, 3, state.step, procs.rank))
                loss, lr, gnorm = _optimizer_step(state, loss_fn, x, noise, cfg, procs.device)
            _ema_update(state, tc.ema_decay)
            if state.step % 10 == 0 or state.step == tc.train_steps:  # a host sync: not every step on a GPU
                lv = loss.item()
                if not math.isfinite(lv):
                    raise FloatingPointError(f"training loss became {lv} at step {state.step}")
                if bar is not None:
                    bar.set_postfix(loss=f"{lv:.4f}", lr=f"{lr:.2e}", gnorm=f"{float(gnorm):.2f}", refresh=False)
            state.tokens += cfg.model.length * tc.batch_size
            state.loop_seconds += time.perf_counter() - t0
            state.loop_cpu_seconds += time.process_time() - c0
            if bar is not None:
                bar.update(1)
            if state.step % tc.eval_every == 0 and state.step < tc.train_steps:
                state.history.append(_evaluate(state, ds, cfg, procs, False, started))
                _report(bar, state.history[-1])
            if state.step % tc.checkpoint_every == 0 and state.step < tc.train_steps:
                save(False)
            if (_out_of_time(started, max_minutes, procs, stop.received is not None)
                    or (stop_after is not None and state.step >= stop_after)):
                break
        complete = state.step >= tc.train_steps
        if complete and not (state.history and state.history[-1].get("final")
                             and state.history[-1]["step"] == state.step):
            state.history.append(_evaluate(state, ds, cfg, procs, True, started))
            _report(bar, state.history[-1])
        if (state.step, len(state.history)) != resumed_at or not (out_dir / CHECKPOINT_NAME).exists():
            save(complete)  # a finished run found again is left untouched (its file hash keys caches)
    finally:  # a second signal (KeyboardInterrupt) may land mid-step: the last whole checkpoint stands
        stop.__exit__()
        if bar is not None:
            bar.close()
    tps = state.tokens / state.loop_seconds if state.loop_seconds > 0 else None
    if owns_group:
        # a gloo group left to the interpreter's exit can abort a rank ("terminate called without an
        # active exception"): the ranks meet, then the group this call created is torn down
        dist.barrier()
        dist.destroy_process_group()
    return TrainResult(out_dir, out_dir / CHECKPOINT_NAME, state.step, complete, time.monotonic() - started,
                       state.history, tps, state.loop_cpu_seconds, state.compiled,
                       stop.received.name if stop.received is not None and not complete else None)
