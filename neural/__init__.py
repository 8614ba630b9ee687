"""MDLM-style masked diffusion models and autoregressive baselines (torch), measured against the oracle.

Modules (model / train / sample / data kept apart, nanoGPT style):

* :mod:`neural.config` -- dataclass configs (``cpu-small``, ``paper``, ``tiny``), saved in checkpoints.
* :mod:`neural.model` -- the shared transformer: MDM (bidirectional, adaLN-Zero, SUBS) and AR (causal, KV cache).
* :mod:`neural.data` -- seeded data sets drawn from a ``numerics`` language, stored once.
* :mod:`neural.train` -- the training loop (AdamW, warm-up + cosine, EMA, bf16 on CUDA, DDP), checkpoints.
* :mod:`neural.sample` -- the learned denoiser through ``numerics.sampling.samplers``; KV-cached AR decoding.
* :mod:`neural.evaluate` -- generative perplexity / SER vs steps, ``eps_learning`` against the oracle.
* :mod:`neural.timing` -- MDM ``ddpm_cache`` vs AR wall-clock.
"""

from .config import DataConfig, ModelConfig, RunConfig, TrainConfig, make_config
from .evaluate import EpsLearning, SampleQuality, evaluate_checkpoint, measure_eps_learning, sample_quality
from .model import KVCache, Transformer
from .sample import TorchDenoiser, sample_ar, sample_mdm
from .timing import compare_sampling
from .train import Checkpoint, CheckpointError, load_checkpoint, train

__all__ = [
    "ModelConfig",
    "TrainConfig",
    "DataConfig",
    "RunConfig",
    "make_config",
    "Transformer",
    "KVCache",
    "train",
    "load_checkpoint",
    "Checkpoint",
    "CheckpointError",
    "TorchDenoiser",
    "sample_mdm",
    "sample_ar",
    "measure_eps_learning",
    "sample_quality",
    "evaluate_checkpoint",
    "EpsLearning",
    "SampleQuality",
    "compare_sampling",
]
