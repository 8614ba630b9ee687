"""MDLM-style masked diffusion models and autoregressive baselines (torch), measured against the oracle.

Modules (model / train / sample / data kept apart, nanoGPT style):

* :mod:`neural.config` -- dataclass configs (``cpu-small``, ``paper``, ``tiny``), saved in checkpoints.
* :mod:`neural.model` -- the shared transformer trunk; :class:`MaskedDiffusionTransformer`
  (bidirectional, adaLN-Zero, SUBS) and :class:`AutoregressiveTransformer` (causal, KV cache).
* :mod:`neural.diffusion` -- the noise process (times, counts, masks) and the losses (NELBO, AR NLL).
* :mod:`neural.data` -- seeded data sets drawn from a ``numerics`` language, stored once.
* :mod:`neural.train` -- the training loop (AdamW, warm-up + cosine, EMA, bf16 on CUDA, DDP), checkpoints.
* :mod:`neural.sample` -- the learned denoiser through ``numerics.sampling.samplers``; KV-cached AR decoding.
* :mod:`neural.evaluate` -- generative perplexity / SER vs steps, ``eps_learning`` and the learning
  part of the Jensen bound against the oracle.
* :mod:`neural.timing` -- MDM ``ddpm_cache`` vs AR wall-clock.
"""

from .config import DataConfig, ModelConfig, RunConfig, TrainConfig, make_config
from .diffusion import Autoregressive, MaskedDiffusion, objective_for
from .evaluate import (
                       EpsLearning,
                       LearningPart,
                       SampleQuality,
                       evaluate_checkpoint,
                       learning_part,
                       measure_eps_learning,
                       sample_quality,
)
from .model import AutoregressiveTransformer, KVCache, MaskedDiffusionTransformer, Transformer, build_model
from .sample import TorchDenoiser, sample_ar, sample_mdm, sampler_schedule
from .timing import compare_sampling
from .train import Checkpoint, CheckpointError, load_checkpoint, train

__all__ = [
    "ModelConfig",
    "TrainConfig",
    "DataConfig",
    "RunConfig",
    "make_config",
    "Transformer",
    "MaskedDiffusionTransformer",
    "AutoregressiveTransformer",
    "build_model",
    "KVCache",
    "MaskedDiffusion",
    "Autoregressive",
    "objective_for",
    "train",
    "load_checkpoint",
    "Checkpoint",
    "CheckpointError",
    "TorchDenoiser",
    "sample_mdm",
    "sample_ar",
    "sampler_schedule",
    "measure_eps_learning",
    "learning_part",
    "sample_quality",
    "evaluate_checkpoint",
    "EpsLearning",
    "LearningPart",
    "SampleQuality",
    "compare_sampling",
]
