"""``mdm-theory train``, ``mdm-theory evaluate`` and ``mdm-theory bench sampling`` (the ``neural`` package)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from ._common import AliasOption, emit, json_option, progress_option, show_progress
from ._decoders import DECODER_NAMES, decoder_options

__all__ = ["COMMANDS", "BENCH_COMMANDS"]


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise click.BadParameter(f"expected integers >= 1, got {text!r}")
    return values


# ``train`` options that override one field of the preset: option name -> (section, field)
_OVERRIDES = {
    "length": ("model", "length"),
    "width": ("model", "width"),
    "depth": ("model", "n_layers"),
    "heads": ("model", "n_heads"),
    "lr": ("train", "lr"),
    "train_steps": ("train", "train_steps"),
    "batch_size": ("train", "batch_size"),
    "n_train": ("data", "n_train"),
}


def _overrides(values: dict) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for option, (section, name) in _OVERRIDES.items():
        if values.get(option) is not None:
            out.setdefault(section, {})[name] = values[option]
    return out


@click.command("train")
@click.option("--language", required=True, help="Preset name (e.g. 2gram) or a language .npz file.")
@click.option("--model", "kind", type=click.Choice(["mdm", "ar"]), default="mdm", show_default=True,
              help="Masked diffusion model or its autoregressive baseline.")
@click.option("--config", "preset", type=click.Choice(["cpu-small", "paper", "tiny"]), default="cpu-small",
              show_default=True, help="Named sizes the overrides below start from.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Run folder (checkpoint.pt, metrics.json); default runs/LANGUAGE-MODEL-CONFIG-sSEED.")
@click.option("--max-minutes", type=click.FloatRange(min=0, max=1e9), default=None,
              help="Stop (checkpointed, resumable) after this long (minutes; 0: after the first step).")
@click.option("--seed", type=int, default=0, show_default=True, help="Initialisation and noise seed.")
@click.option("-L", "--length", type=int, default=None, help="Override the sequence length L.")
@click.option("--width", type=int, default=None, help="Override the hidden size d.")
@click.option("--depth", type=int, default=None, help="Override the number of transformer blocks.")
@click.option("--heads", type=int, default=None, help="Override the number of attention heads.")
@click.option("--lr", type=float, default=None, help="Override the peak learning rate.")
@click.option("--train-steps", type=int, default=None,
              help="Override the number of optimizer steps; larger than a finished run's, it extends the run.")
@click.option("--batch-size", type=int, default=None, help="Override the global batch size.")
@click.option("--n-train", type=int, default=None, help="Override the number of training sequences.")
@click.option("--threads", type=click.IntRange(min=1, max=4096), default=None,
              help="torch CPU threads (default: torch's choice).")
@click.option("--device", default=None, help="cpu, cuda, cuda:1 ... (default: CUDA when available).")
@progress_option
@json_option
def train_cmd(language, kind, preset, out, max_minutes, seed, threads, device, progress, as_json, **sizes):
    """Train (or resume, or extend) an MDLM-style MDM or its AR baseline on a language.

    The overrides are stored in the checkpoint's config. Re-running the same command resumes from
    OUT/checkpoint.pt; a different config is refused with the differing fields named, except a
    larger --train-steps on a finished run, which extends it. Under torchrun
    (``torchrun --nproc_per_node K -m validation.cli train ...``) it trains with DDP.
    """
    import torch

    from neural.config import make_config
    from neural.data import resolve_language
    from neural.train import CheckpointError, pick_device, train
    from numerics.machine import env_value
    from validation.guards import check_training, guard_output

    pick_device(device)  # a device torch does not know, or this machine lacks: refused before anything is drawn
    if threads is not None:
        torch.set_num_threads(threads)
    lang = resolve_language(language)
    try:
        cfg = make_config(preset, language=language, kind=kind, vocab_size=lang.vocab_size, seed=seed,
                          overrides=_overrides(sizes))
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    check_training(cfg)  # before the data set is drawn
    name = Path(language).stem if language.endswith(".npz") else language
    out = Path(out) if out else Path("runs") / f"{name}-{kind}-{preset}-s{seed}"
    guard_output(out / "metrics.json", "run metrics", inputs={"--language": language})
    try:
        result = train(cfg, out, language=lang, max_minutes=max_minutes, device=device, progress=show_progress(progress))
    except CheckpointError as exc:
        raise click.ClickException(str(exc)) from None
    if env_value("RANK") != 0:
        return
    final = result.final or {}
    summary = {"out": str(result.out_dir), "checkpoint": str(result.checkpoint), "step": result.step,
               "complete": result.complete, "seconds": result.seconds, "tokens_per_second": result.tokens_per_second,
               "cpu_seconds": result.cpu_seconds, "config": cfg.to_dict(), "final": final,
               "stopped_by": result.stopped_by}
    planned = cfg.train.train_steps
    why = (f"; stopped by {result.stopped_by}" if result.stopped_by
           else f"; --max-minutes {max_minutes:g} reached" if max_minutes else "")
    done = "" if result.complete else f" ({result.step} of {planned} planned steps{why})"
    human = (f"{'complete' if result.complete else 'stopped'} at step {result.step} in {_duration(result.seconds)}"
             f"{done}; checkpoint {result.checkpoint}")
    if not result.complete and not result.stopped_by:
        human += "\nrerun the same command to resume from the checkpoint"
    if result.stopped_by:
        human += f"\nstopped by {result.stopped_by}: the checkpoint is whole; rerun the same command to resume"
    if result.tokens_per_second:
        human += f"\n{result.tokens_per_second:,.0f} tokens/s, {result.cpu_seconds:.0f} CPU-seconds in optimizer steps"
    if final:
        at = "" if final.get("step") == result.step else f" at step {final.get('step')} (the last validation)"
        human += (f"\nvalidation{at} {final['bound']}: {final['val_loss']:.4f} nats/token (+- {final['val_stderr']:.4f}), "
                  f"perplexity {final['val_ppl']:.4f} vs data {final['data_ppl']:.4f} (ratio {final['ppl_ratio']:.4f})")
    elif not result.complete:
        human += (f"\nno validation yet: the first comes at step {min(cfg.train.eval_every, planned)} "
                  f"(validations every {cfg.train.eval_every} steps and at the end)")
    emit(summary, as_json, human)
    if result.stopped_by:  # the status a scheduler expects of a process its signal ended: 128 + signal number
        import signal
        import sys

        sys.exit(128 + signal.Signals[result.stopped_by].value)


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: a run's wall-clock for a person."""
    s = int(round(seconds))
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


@click.command("evaluate")
@click.argument("checkpoint", type=click.Path(exists=True))
@click.option("-N", "--n-steps", "--steps", "n_steps", cls=AliasOption, hidden_aliases=("--steps",),
              default="8,16,32,64,128,256,512,1024,2048", show_default=True,
              help="Comma-separated sampling step counts N (ignored for an AR checkpoint).")
@click.option("--samples", type=click.IntRange(min=1), default=256, show_default=True, help="Sequences sampled per point.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every random draw.")
@click.option("--schedule", default="mdlm", show_default=True,
              help="mdlm (log-linear times down to 1e-5, as MDLM samples) or a numerics schedule name.")
@click.option("--draw", type=click.Choice(["float64", "float32"]), default="float64", show_default=True,
              help="Exact float64 inverse-CDF draws, or MDLM's float32 Gumbel-max (ablation).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="Sampling batch (default: all samples at once).")
@click.option("--eps-sequences", type=click.IntRange(min=1), default=256, show_default=True,
              help="True sequences whose random masks measure eps_learning (MDM).")
@click.option("--oracle", is_flag=True, help="Also run the oracle denoiser through the same sampler.")
@click.option("--sampler", type=click.Choice(["random", *DECODER_NAMES]), default="random", show_default=True,
              help="random: the factorized sampler (ddpm_cache, --schedule); llada (N steps), fast-dllm "
                   "(--threshold or --factor), eb (--gamma), remdm (N steps of --schedule, --eta): the decoders of "
                   "docs/methods/decoders.md, run with the learned denoiser (and the oracle with --oracle).")
@click.option("--gamma", type=float, default=None, help="eb: the entropy bound gamma (nats).")
@click.option("--tie-seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Decoders: seed of the tie priority (reported in sampler_parameters).")
@decoder_options
@click.option("--learning", is_flag=True,
              help="Also measure the learning part of the Jensen bound at every N (MDM).")
@click.option("--device", default=None, help="cpu, cuda, ... (default: CUDA when available).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Also write the result JSON here.")
@json_option
def evaluate_cmd(checkpoint, n_steps, samples, seed, schedule, draw, batch_size, eps_sequences, oracle, sampler, gamma,
                 tie_seed, decoder_opts, learning, device, out, as_json):
    """Generative perplexity and SER vs steps (exact ground truth), NFE, and eps_learning of a checkpoint."""
    from neural.evaluate import evaluate_checkpoint
    from numerics.provenance import atomic_write_json, check_writable_file, provenance
    from validation.guards import check_increasing, guard_output

    if out:
        guard_output(out, "evaluation", inputs={"CHECKPOINT": [checkpoint, Path(checkpoint) / "checkpoint.pt"]})
        check_writable_file(out)  # before the evaluation, not after it
    steps = check_increasing(_int_list(n_steps), "-N")
    decoders = _evaluate_decoders(checkpoint, sampler, decoder_opts, steps, schedule, gamma, tie_seed, draw, learning)
    result = evaluate_checkpoint(checkpoint, steps, samples=samples, seed=seed, schedule=schedule,
                                 draw=draw, batch_size=batch_size, eps_sequences=eps_sequences, device=device,
                                 oracle=oracle, learning=learning, decoders=decoders)
    result["provenance"] = provenance()
    if out:
        atomic_write_json(out, result)
    lines = [f"{result['model']} on {result['language']} ({result['samples']} samples, draw {draw})",
             f"true samples: gen ppl {result['reference']['true_samples']['gen_ppl']:.4f}"]
    infinite = False
    for r in result["rows"]:
        infinite = infinite or not math.isfinite(r["gen_ppl"])
        who = r.get("denoiser", "ar")
        lines.append(f"  {who:6s} N={r['n_steps']:5d} NFE={r['nfe']:8.1f}  gen ppl {r['gen_ppl']:.4f} "
                     f"[{r['gen_ppl_ci'][0]:.4f}, {r['gen_ppl_ci'][1]:.4f}]  SER {r['ser']:.4f} "
                     f"[{r['ser_ci'][0]:.4f}, {r['ser_ci'][1]:.4f}]"
                     + (f"  learning part {r['learning_part']['value']:.2e}" if "learning_part" in r else ""))
    if infinite:
        lines.append("gen ppl inf: some samples fall outside the language's support (probability 0 under q, counted "
                     "in SER), so exp(E[-log q(x)] / L) is infinite; the JSON's gen_ppl_valid is the same over the "
                     "valid samples")
    if "eps_learning" in result:
        e = result["eps_learning"]
        lines.append(f"eps_learning: mean {e['mean']:.3e} (+- {e['stderr']:.1e}), q90 {e['quantiles']['q90']:.3e}, "
                     f"q99 {e['quantiles']['q99']:.3e}, max {e['max']:.3e} over {e['positions']} positions")
    emit(result, as_json, "\n".join(lines))


def _evaluate_decoders(checkpoint, sampler, opts, steps, schedule, gamma, tie_seed, draw, learning):
    """``evaluate --sampler DECODER``: ``{N: decoder}`` checked against the checkpoint's length before any
    sampling (``click.UsageError``, exit 2, nothing written); ``None`` for the factorized sampler."""
    if sampler not in DECODER_NAMES:
        if opts.given() or gamma is not None:
            given = opts.given() + (["--gamma"] if gamma is not None else [])
            raise click.UsageError(f"{', '.join(given)} apply to the decoders ({', '.join(DECODER_NAMES)}), "
                                   "not to --sampler random")
        return None
    if draw != "float64":
        raise click.UsageError("--draw float32 is the factorized sampler's ablation; the decoders draw in float64")
    if learning:
        raise click.UsageError("--learning measures the factorized sampler's Jensen bound, not a decoder's")
    from neural.sample import sampler_schedule
    from neural.train import load_checkpoint
    from numerics.sampling.registry import DECODERS

    spec = DECODERS[sampler]
    ck = load_checkpoint(checkpoint)
    if ck.config.model.kind != "mdm":
        raise click.UsageError(f"--sampler {sampler} decodes a masked diffusion model; {checkpoint} holds a "
                               f"{ck.config.model.kind} model")
    L = ck.config.model.length
    out = {}
    try:
        for N in steps:
            dec = spec.build({**opts, "gamma": gamma}, steps=N if "steps" in spec.needs else None,
                             schedule=sampler_schedule(schedule, N) if "schedule" in spec.needs else None,
                             tie_seed=tie_seed, length=L)
            out[N] = dec
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    return out


@click.command("sampling")
@click.option("--mdm", "mdm_ckpt", type=click.Path(exists=True), default=None, help="MDM checkpoint.")
@click.option("--ar", "ar_ckpt", type=click.Path(exists=True), default=None, help="AR checkpoint.")
@click.option("--config", "preset", type=click.Choice(["cpu-small", "paper", "tiny"]), default="cpu-small",
              show_default=True, help="Network shapes when no checkpoints are given (untrained weights).")
@click.option("--vocab", type=int, default=8, show_default=True, help="Vocabulary of the untrained networks.")
@click.option("-L", "--length", type=int, default=None, help="Sequence length (default: the config's).")
@click.option("--batch", type=int, default=16, show_default=True, help="Sequences per sampled batch.")
@click.option("-N", "--n-steps", "--steps", "n_steps", cls=AliasOption, hidden_aliases=("--steps",), default="512",
              show_default=True, help="Comma-separated MDM step counts N.")
@click.option("--repeats", type=int, default=3, show_default=True, help="Timed repeats (the median is reported).")
@click.option("--warmup", type=int, default=1, show_default=True, help="Untimed warm-up runs.")
@click.option("--device", default=None, help="cpu, cuda, ... (default: CUDA when available).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Also write the result JSON here.")
@json_option
def bench_sampling_cmd(mdm_ckpt, ar_ckpt, preset, vocab, length, batch, n_steps, repeats, warmup, device, out, as_json):
    """Wall-clock of MDM ddpm_cache sampling vs KV-cached AR decoding (median of repeats, NFE)."""
    import torch

    from neural.config import make_config
    from neural.model import build_model
    from neural.timing import compare_sampling
    from neural.train import load_checkpoint, pick_device
    from numerics.provenance import atomic_write_json, provenance
    from validation.guards import check_increasing, check_transformer, guard_output

    if out:
        guard_output(out, "sampling benchmark", inputs={"--mdm": mdm_ckpt, "--ar": ar_ckpt})
    dev = pick_device(device)
    models, source = {}, {}
    for kind, path in (("mdm", mdm_ckpt), ("ar", ar_ckpt)):
        if path:
            ck = load_checkpoint(path)
            if ck.config.model.kind != kind:
                raise click.BadParameter(f"--{kind} {path} holds a {ck.config.model.kind} model")
            models[kind], source[kind] = ck.build_model(dev), str(path)
        else:
            cfg = make_config(preset, language="untrained", kind=kind, vocab_size=vocab)
            torch.manual_seed(0)
            models[kind], source[kind] = build_model(cfg.model).to(dev).eval(), f"untrained {preset}"
    steps = check_increasing(_int_list(n_steps), "-N")
    for kind, model in models.items():
        c = model.cfg
        check_transformer(batch, length or c.length, c.width, c.n_heads, c.n_layers, c.vocab_size,
                          f"sampling the {kind} model", "use a smaller --batch or -L")
    res = compare_sampling(models["mdm"], models["ar"], batch=batch, n_steps=steps, length=length,
                           repeats=repeats, warmup=warmup)
    result = {**res, "weights": source, "provenance": provenance()}
    if out:
        atomic_write_json(out, result)
    a = res["ar"]
    lines = [f"device {a.device}, batch {batch}, length {a.length}, {a.dtype}",
             f"  AR  (KV cache, {a.n_steps} decode steps): {a.seconds_per_batch:.3f} s/batch"]
    for r in res["mdm"]:
        ratio = a.seconds_per_batch / r.seconds_per_batch if r.seconds_per_batch > 0 else math.inf
        lines.append(f"  MDM (ddpm_cache, N={r.n_steps}, NFE {r.nfe:.1f}): {r.seconds_per_batch:.3f} s/batch "
                     f"(AR/MDM = {ratio:.2f}x)")
    emit(result, as_json, "\n".join(lines))


COMMANDS = [train_cmd, evaluate_cmd]
BENCH_COMMANDS = [bench_sampling_cmd]
