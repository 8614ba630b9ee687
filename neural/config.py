"""Dataclass configs of the neural models and their training runs, saved inside every checkpoint.

A run is a :class:`RunConfig`: the language (preset name or ``.npz`` path), the data set
(:class:`DataConfig`), the network (:class:`ModelConfig`) and the optimisation
(:class:`TrainConfig`). Named presets (:data:`PRESETS`) give the two sizes the project uses:

* ``cpu-small`` -- L = 32, width 64, 4 layers, 4 heads, batch 128: one language trains on one
  CPU core in one to three minutes (the report's models).
* ``paper`` -- the paper's Table 2 model (MDLM ``tiny``): L = 512, width 512, 8 heads, 8 layers
  (10 for the 4-gram), dropout 0.1, AdamW 3e-4, 10 % warm-up, cosine decay, EMA 0.9999
  (Tables 3-4 / MDLM ``cosine_decay_warmup``).
* ``tiny`` -- a few thousand parameters, for tests.

Every field is validated in ``__post_init__`` so that a bad config fails before any work starts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

__all__ = [
    "MODEL_KINDS",
    "PRESETS",
    "DataConfig",
    "ModelConfig",
    "RunConfig",
    "TrainConfig",
    "config_differences",
    "make_config",
    "run_config_from_dict",
]

MODEL_KINDS = ("mdm", "ar")


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _in_range(name: str, value: Any, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = True) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
    if not ok:
        lb, rb = "(" if lo_open else "[", ")" if hi_open else "]"
        raise ValueError(f"{name} must be in {lb}{lo}, {hi}{rb}, got {value!r}")


@dataclass(frozen=True)
class ModelConfig:
    """The transformer shared by the MDM and the AR baseline.

    Attributes
    ----------
    kind : {"mdm", "ar"}
        ``mdm``: bidirectional, adaLN-Zero with a learned constant conditioning, input ids
        ``0..V`` (``V`` = mask), SUBS output over ``V + 1`` classes with the mask class at
        probability 0. ``ar``: causal, no modulation, input ids ``0..V`` (``V`` = BOS), output
        over the ``V`` data tokens.
    vocab_size : int
        ``V``, the number of data tokens of the language.
    length : int
        ``L``, the sequence length trained on (rotary embeddings have no hard limit).
    width, n_layers, n_heads : int
        Hidden size ``d``, number of blocks, attention heads (``d / n_heads`` must be even).
    mlp_ratio : int
        MLP hidden size is ``mlp_ratio * d`` (MDLM: 4).
    dropout : float
        Dropout in attention output and MLP (MDLM: 0.1).
    cond_dim : int
        Size of the learned constant conditioning vector of the MDM's adaLN (MDLM: 128).
    absolute_positions : bool
        Add a learned absolute position embedding to the token embedding (MDLM: no, rotary
        only). For languages whose law depends on the absolute position, such as the interval
        language of Theorem 4.4 (intervals start at multiples of ``l``): with rotary embeddings
        alone a bidirectional network sees only relative offsets and must infer the phase from
        the sequence's ends.
    """

    kind: str
    vocab_size: int
    length: int
    width: int = 128
    n_layers: int = 4
    n_heads: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.0
    cond_dim: int = 128
    absolute_positions: bool = False

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"model kind must be one of {MODEL_KINDS}, got {self.kind!r}")
        for name in ("vocab_size", "length", "width", "n_layers", "n_heads", "mlp_ratio", "cond_dim"):
            _positive_int(name, getattr(self, name))
        if self.vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {self.vocab_size}")
        if self.width % self.n_heads:
            raise ValueError(f"width {self.width} is not divisible by n_heads {self.n_heads}")
        if (self.width // self.n_heads) % 2:
            raise ValueError(
                f"head size width / n_heads = {self.width // self.n_heads} must be even for rotary embeddings"
            )
        _in_range("dropout", self.dropout, 0.0, 1.0)
        if not isinstance(self.absolute_positions, bool):
            raise ValueError(f"absolute_positions must be True or False, got {self.absolute_positions!r}")

    @property
    def special_id(self) -> int:
        """The extra input id ``V``: the mask token of the MDM, the BOS token of the AR model."""
        return self.vocab_size

    @property
    def n_inputs(self) -> int:
        return self.vocab_size + 1

    @property
    def n_outputs(self) -> int:
        """``V + 1`` for the MDM (mask class kept, at probability 0), ``V`` for the AR model."""
        return self.vocab_size + 1 if self.kind == "mdm" else self.vocab_size


@dataclass(frozen=True)
class DataConfig:
    """A data set drawn from the language: ``n_train`` + ``n_val`` i.i.d. sequences of length ``L``.

    ``seed`` fixes the data (independent of the training seed), so MDM and AR runs of one language
    see the same sequences.
    """

    n_train: int = 100_000
    n_val: int = 4_096
    seed: int = 1234

    def __post_init__(self) -> None:
        _positive_int("n_train", self.n_train)
        _positive_int("n_val", self.n_val)
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"data seed must be an integer >= 0, got {self.seed!r}")


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation (MDLM's recipe unless noted).

    Attributes
    ----------
    batch_size : int
        Global batch (split evenly over DDP ranks).
    train_steps : int
        Total optimizer steps; the learning-rate schedule spans exactly these (a run extended
        past them restarts the schedule over the added steps, see :func:`neural.train.lr_at`).
    lr, lr_min, betas, weight_decay, grad_clip : AdamW settings; the learning rate warms up
        linearly from ``lr_min`` over ``warmup_frac * train_steps`` steps, then follows a cosine
        down to ``lr_min``.
    ema_decay : float
        EMA of the weights with MDLM's warm-up ``min(decay, (1 + n) / (10 + n))``; the EMA
        weights are the ones evaluated and sampled from. 0 disables it.
    nelbo_estimator : {"time", "count"}
        How the MDM's NELBO is estimated in training (:mod:`neural.diffusion`): MDLM's stratified
        times with weight ``1/t`` (``"time"``), or stratified masked counts with weight ``1/k``
        (``"count"``: the same NELBO for a time-independent denoiser, lower variance).
    count_power : float
        ``"count"`` only: the masked count ``k`` is drawn with probability ``~ k^(-count_power)``
        and reweighted, the same NELBO (:func:`neural.diffusion.count_law`). 0 is uniform; 1 puts
        more of the batch on few masks, where the denoiser learns slowest (measured on the 4-gram
        MDM of the report: 1.41 x the exact perplexity after 3000 steps, against 1.54 uniform).
    compile : bool
        Run the training loss (forward and backward) through ``torch.compile``. Measured on the
        report's ``cpu-small`` MDM at L = 16, batch 256, one CPU thread: 96 ms a step against 134 ms
        eager (1.39 x; AR 93 against 121 ms), after a first step that compiles (about 17 s, 5 s
        when torch's compile cache already holds the graph). On a CPU it needs a C++ compiler;
        where torch cannot compile, the run warns and trains eager, and ``metrics.json`` says which
        (``"compiled"``). Compiled kernels sum in another order, so the flag is part of the config.
    noise_eps : float
        ``eps`` of the log-linear schedule ``alpha_t = 1 - (1 - eps) t`` (``"time"`` only).
    t_min : float
        Training times are stratified over the batch and mapped to ``[t_min, 1)`` (``"time"`` only).
    eval_every : int
        Validation every this many steps (and at the end).
    eval_sequences : int
        Validation sequences used at intermediate evaluations (the final one uses all).
    checkpoint_every : int
        Checkpoint every this many steps (and at the end / on interruption).
    seed : int
        Initialisation and noise seed.
    """

    batch_size: int = 64
    train_steps: int = 2000
    lr: float = 3e-4
    lr_min: float = 1e-6
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    warmup_frac: float = 0.1
    ema_decay: float = 0.9999
    nelbo_estimator: str = "time"
    count_power: float = 0.0
    compile: bool = False
    noise_eps: float = 1e-3
    t_min: float = 1e-3
    eval_every: int = 500
    eval_sequences: int = 1024
    checkpoint_every: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("batch_size", "train_steps", "eval_every", "eval_sequences", "checkpoint_every"):
            _positive_int(name, getattr(self, name))
        _in_range("lr", self.lr, 0.0, 1.0, lo_open=True)
        _in_range("lr_min", self.lr_min, 0.0, self.lr, hi_open=False)
        if len(tuple(self.betas)) != 2:
            raise ValueError(f"betas must be a pair, got {self.betas!r}")
        object.__setattr__(self, "betas", tuple(float(b) for b in self.betas))
        for b in self.betas:
            _in_range("each of betas", b, 0.0, 1.0)
        _in_range("weight_decay", self.weight_decay, 0.0, 1.0)
        _in_range("grad_clip", self.grad_clip, 0.0, float("inf"), lo_open=True)
        _in_range("warmup_frac", self.warmup_frac, 0.0, 1.0)
        _in_range("ema_decay", self.ema_decay, 0.0, 1.0)
        if self.nelbo_estimator not in ("time", "count"):
            raise ValueError(f"nelbo_estimator must be 'time' or 'count', got {self.nelbo_estimator!r}")
        _in_range("count_power", self.count_power, 0.0, 4.0, hi_open=False)
        if self.count_power and self.nelbo_estimator != "count":
            raise ValueError(f"count_power={self.count_power} needs nelbo_estimator='count', got {self.nelbo_estimator!r}")
        if not isinstance(self.compile, bool):  # ValueError like every field: make_config reads TypeError as a bad name
            raise ValueError(f"compile must be True or False, got {self.compile!r}")  # noqa: TRY004
        _in_range("noise_eps", self.noise_eps, 0.0, 1.0)
        _in_range("t_min", self.t_min, 0.0, 1.0, lo_open=True)
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a training run (saved in its checkpoints)."""

    language: str
    model: ModelConfig
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)
    preset: str = "custom"

    def __post_init__(self) -> None:
        if not isinstance(self.language, str) or not self.language:
            raise ValueError(f"language must be a preset name or an .npz path, got {self.language!r}")
        if self.train.eval_sequences > self.data.n_val:
            object.__setattr__(self, "train", replace(self.train, eval_sequences=self.data.n_val))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["train"]["betas"] = list(self.train.betas)
        return d


def run_config_from_dict(d: dict[str, Any]) -> RunConfig:
    """Inverse of :meth:`RunConfig.to_dict` (raises ``ValueError`` on unknown or missing fields)."""
    try:
        return RunConfig(
            language=d["language"],
            model=ModelConfig(**d["model"]),
            train=TrainConfig(**{**d["train"], "betas": tuple(d["train"]["betas"])}),
            data=DataConfig(**d["data"]),
            preset=d.get("preset", "custom"),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a valid run config: {exc}") from exc


# Presets: sizes only; the language fixes vocab_size, the model kind is chosen by the user.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # Sized for a 2-core CPU (the report trains several languages, MDM and AR): L = 32 and a narrow
    # but 4-deep network (measured: 2 blocks plateau near 1.03-1.05 x the exact perplexity on the
    # 2-gram, 3 blocks reach 1.02 in 600 steps but plateau at 1.4 on the interval language, where 4
    # blocks reach 1.01 in 720 steps), the low-variance "count" NELBO estimator, lr 3e-3 and EMA
    # 0.99 for runs of a few hundred to a few thousand steps (MDLM's 3e-4 / 0.9999 suit 10^5
    # steps). Fresh data for every step (n_train = steps x batch), so no dropout. About 0.1
    # CPU-second per step on one core.
    "cpu-small": {
        "model": dict(length=32, width=64, n_layers=4, n_heads=4, dropout=0.0, cond_dim=32),
        "train": dict(batch_size=128, train_steps=1000, lr=3e-3, ema_decay=0.99, nelbo_estimator="count",
                      eval_every=500, eval_sequences=256, checkpoint_every=250),
        "data": dict(n_train=128_000, n_val=1024),
    },
    # The paper's Table 2-4 / MDLM tiny recipe. 200k training sequences, 20 epochs at batch 256.
    "paper": {
        "model": dict(length=512, width=512, n_layers=8, n_heads=8, dropout=0.1, cond_dim=128),
        "train": dict(batch_size=256, train_steps=15_625, lr=3e-4, ema_decay=0.9999, eval_every=1000,
                      eval_sequences=2048, checkpoint_every=1000),
        "data": dict(n_train=200_000, n_val=10_000),
    },
    "tiny": {
        "model": dict(length=8, width=32, n_layers=2, n_heads=2, dropout=0.0, cond_dim=16),
        "train": dict(batch_size=16, train_steps=20, lr=3e-3, ema_decay=0.9, eval_every=10,
                      eval_sequences=64, checkpoint_every=10),
        "data": dict(n_train=512, n_val=64),
    },
}

_DEEPER = {"4gram": 10, "4gram-pruned": 10}  # the paper's 4-gram model has 10 layers


def make_config(
    preset: str,
    *,
    language: str,
    kind: str,
    vocab_size: int,
    seed: int = 0,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> RunConfig:
    """A :class:`RunConfig` from a named preset, with optional per-section ``overrides``.

    ``overrides`` maps ``"model"``, ``"train"`` or ``"data"`` to field values, e.g.
    ``{"train": {"train_steps": 100}}``. Unknown presets, sections or fields raise ``ValueError``.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown config {preset!r}; known: {sorted(PRESETS)}")
    base = {k: dict(v) for k, v in PRESETS[preset].items()}
    if preset == "paper" and language in _DEEPER:
        base["model"]["n_layers"] = _DEEPER[language]
    for section, values in (overrides or {}).items():
        if section not in base:
            raise ValueError(f"unknown config section {section!r}; use model, train or data")
        base[section].update(values)
    base["train"].setdefault("seed", seed)
    if "seed" not in (overrides or {}).get("train", {}):
        base["train"]["seed"] = seed
    try:
        return RunConfig(
            language=language,
            model=ModelConfig(kind=kind, vocab_size=vocab_size, **base["model"]),
            train=TrainConfig(**base["train"]),
            data=DataConfig(**base["data"]),
            preset=preset,
        )
    except TypeError as exc:  # an unknown field name
        raise ValueError(f"bad config field: {exc}") from exc


def config_differences(old: RunConfig, new: RunConfig) -> list[tuple[str, Any, Any]]:
    """The fields where two run configs differ, as ``(dotted name, old value, new value)``, in field order."""
    out: list[tuple[str, Any, Any]] = []

    def walk(prefix: str, a: Any, b: Any) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in dict.fromkeys([*a, *b]):
                walk(f"{prefix}{key}" if not prefix else f"{prefix}.{key}", a.get(key), b.get(key))
        elif a != b:
            out.append((prefix, a, b))

    walk("", old.to_dict(), new.to_dict())
    return out
