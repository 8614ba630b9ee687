"""``mdm-theory bench forward-backward``: our masked forward-backward against hmmlearn, same run, same data.

What is timed (wall clock, warm-up call excluded, best and median of ``--repeats``):

* **ours**: :func:`numerics.masked_forward_backward` on ``B`` sequences (all threads numba has);
* **reference**: hmmlearn's scaled forward-backward (:func:`validation.reference.hmmlearn_forward_backward`)
  one sequence at a time on one thread (BLAS/OpenMP limited with threadpoolctl), the same outputs. Slow at large ``S``, so it runs on the first
  ``--reference-batch`` sequences (default: as many as about 1e10 flops allow, at least 8);
  throughputs are per sequence;
* **gemm rate**: the float64 matrix-multiply rate at the kernel's own shape and threads (``L``
  steps of ``(nb, S) @ (S, S)`` per block, blocks in parallel, nothing else), and a large square
  ``numpy`` product on all threads for comparison. ``gemm_fraction`` = achieved ``4 S^2 L B`` flop/s
  of the whole forward-backward over the former (``gemm_fraction_of_peak``: over the latter).

``--language 4gram`` (or ``2gram``, ``3gram``) benchmarks a random n-gram over ``--vocab`` tokens
(:func:`numerics.languages.generators.random_ngram`: rows ``softmax(2 g)`` with ``g`` standard
normal, entries below 0.005 pruned; ``--states`` is ignored) with the sparse n-gram kernel, and runs the same model as a dense ``V^(n-1)``-state HMM
through the dense kernel: ``sparse_vs_dense_speedup``. Timings on a shared machine are noisy; the
ratios are measured in one run on one machine.
"""

from __future__ import annotations

import os
import statistics
import time

import click
import numpy as np

from ._common import emit, json_option, to_jsonable

__all__ = ["BENCH_COMMANDS", "run_benchmark", "run_sparse_benchmark"]

MAX_ABS_DIFF_OK = 1e-9  # float64 scaled recursions in two orders agree far better than this


def _time(fn, repeats: int) -> tuple[list[float], object]:
    out = fn()  # warm-up (compilation, caches), excluded
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return times, out


def _peak_gemm_flops(repeats: int = 3, n: int = 1024) -> float:
    """float64 rate of a large square numpy product on all threads (best of ``repeats``)."""
    a = np.full((n, n), 1.0 / n)
    best = min(_time(lambda: a @ a, repeats)[0])
    return 2.0 * n**3 / best


def run_benchmark(
    states: int,
    length: int,
    batch: int,
    mask_rate: float,
    vocab: int = 8,
    seed: int = 0,
    language: str = "hmm",
    repeats: int = 5,
    reference_batch: int | None = None,
    progress: bool = True,
    noise: str = "mask",
) -> dict:
    """Time ours and hmmlearn on the same data; returns the figures as a dict (see module docstring)."""
    from threadpoolctl import threadpool_limits
    from tqdm import tqdm

    from numerics._threads import kernel_threads
    from numerics.inference import _dense
    from numerics.inference.forward_backward import masked_forward_backward
    from numerics.inference.posterior import check_observations
    from numerics.languages.generators import random_hmm, random_ngram
    from validation.reference import hmmlearn_forward_backward

    if language == "hmm":
        lang = random_hmm(states, vocab, 1.0, seed=np.random.default_rng([seed, 1]))
    elif language.endswith("gram") and language[:-4].isdigit():
        lang = random_ngram(int(language[:-4]), vocab, 2.0, 0.005, seed=np.random.default_rng([seed, 1]))
    else:
        raise click.BadParameter(f"unknown language {language!r}; use hmm, 2gram, 3gram or 4gram", param_hint="--language")
    rng = np.random.default_rng([seed, 2])
    tokens = lang.sample(batch, length, rng)
    mask = rng.random((batch, length)) < mask_rate
    dense = lang.to_hmm()
    S = dense.n_states
    flops = 4.0 * S * S * length * batch
    if reference_batch is None:
        reference_batch = int(min(batch, max(8, 1e10 // (4.0 * S * S * length))))
    n_ref = min(batch, reference_batch)

    steps = ["ours", "gemm", "reference"] + (["dense"] if lang.kind == "ngram" else []) + (["uniform"] if noise == "uniform" else [])
    bar = tqdm(steps, desc="bench forward-backward", disable=None if progress else True, leave=False)
    result: dict = {
        "language": language,
        "states": S,
        "vocab": lang.vocab_size,
        "length": length,
        "batch": batch,
        "mask_rate": mask_rate,
        "seed": seed,
        "threads": kernel_threads(),
        "repeats": repeats,
    }
    for step in bar:
        bar.set_postfix_str(step)
        if step == "ours":
            times, post = _time(lambda: masked_forward_backward(lang, tokens, mask), repeats)
            result["ours_seconds_best"] = min(times)
            result["ours_seconds_median"] = statistics.median(times)
            result["ours_seq_per_s"] = batch / min(times)
            result["ours_seq_per_s_median"] = batch / statistics.median(times)
        elif step == "gemm":
            block = _dense.block_rows(batch, S, length, store=True)
            gemm_times, _ = _time(lambda: _dense.gemm_probe_seconds(dense.transition, length, batch, block), repeats)
            gemm_s = min(gemm_times)
            result["block_rows"] = block
            result["gemm_flops_same_shape"] = 2.0 * S * S * length * batch / gemm_s
            result["gemm_flops_peak"] = _peak_gemm_flops()
        elif step == "reference":
            with threadpool_limits(limits=1):
                t0 = time.perf_counter()
                ref = hmmlearn_forward_backward(dense, tokens[:n_ref], mask[:n_ref])
                first = time.perf_counter() - t0
                ref_times = [first]
                while len(ref_times) < repeats and sum(ref_times) < 2.0:  # cheap: best of a few more
                    t0 = time.perf_counter()
                    hmmlearn_forward_backward(dense, tokens[:n_ref], mask[:n_ref])
                    ref_times.append(time.perf_counter() - t0)
            result["reference"] = "hmmlearn._hmmc forward_scaling + backward_scaling, 1 thread"
            result["reference_batch"] = n_ref
            result["reference_seconds_best"] = min(ref_times)
            result["reference_seq_per_s"] = n_ref / min(ref_times)
            result["max_abs_diff_loglik"] = float(np.max(np.abs(post.loglik[:n_ref] - ref.loglik)))
            result["max_abs_diff_marginals"] = float(np.max(np.abs(post.marginals[:n_ref] - ref.marginals)))
        elif step == "uniform":  # the soft-evidence forward-backward on the same tokens as a noisy canvas
            from numerics.inference.soft_evidence import uniform_noise_posterior

            alpha = 1.0 - mask_rate
            utimes, _ = _time(lambda: uniform_noise_posterior(lang, tokens, alpha), repeats)
            result["uniform_seconds_best"] = min(utimes)
            result["uniform_seq_per_s"] = batch / min(utimes)
            result["uniform_vs_mask"] = min(utimes) / result["ours_seconds_best"]
        elif step == "dense":
            dtimes, dpost = _time(lambda: _dense.forward_backward_dense(dense, check_observations(dense, tokens, mask)), max(1, min(repeats, 3)))
            result["dense_seconds_best"] = min(dtimes)
            result["dense_seq_per_s"] = batch / min(dtimes)
            result["sparse_vs_dense_speedup"] = min(dtimes) / result["ours_seconds_best"]
            result["max_abs_diff_sparse_vs_dense"] = float(
                max(np.max(np.abs(post.loglik - dpost.loglik)), np.max(np.abs(post.marginals - dpost.marginals)))
            )
    # flops of the dense forward-backward on the dense model (ours, or for an n-gram its dense run)
    dense_seconds = result.get("dense_seconds_best", result["ours_seconds_best"])
    result["achieved_flops"] = flops / dense_seconds
    result["gemm_fraction"] = result["achieved_flops"] / result["gemm_flops_same_shape"]
    result["gemm_fraction_of_peak"] = result["achieved_flops"] / result["gemm_flops_peak"]
    result["speedup"] = result["ours_seq_per_s"] / result["reference_seq_per_s"]
    diffs = [result["max_abs_diff_loglik"], result["max_abs_diff_marginals"], result.get("max_abs_diff_sparse_vs_dense", 0.0)]
    result["max_abs_diff_tolerance"] = MAX_ABS_DIFF_OK
    result["check_passed"] = bool(max(diffs) <= MAX_ABS_DIFF_OK)
    return result


@click.command("forward-backward")
@click.option("--states", "-S", type=click.IntRange(1), default=32, show_default=True, help="hidden states (dense HMM)")
@click.option("--length", "-L", type=click.IntRange(1), default=512, show_default=True)
@click.option("--batch", "-B", type=click.IntRange(1), default=200, show_default=True)
@click.option("--mask-rate", "-R", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True)
@click.option("--vocab", "-V", type=click.IntRange(1), default=8, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--language", default="hmm", show_default=True, help="hmm (random dense, --states) or 2gram/3gram/4gram (random n-gram over --vocab)")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True)
@click.option("--reference-batch", type=click.IntRange(1), default=None, help="sequences for hmmlearn (default: ~1e10 flops' worth, >= 8)")
@click.option("--noise", type=click.Choice(["mask", "uniform"]), default="mask", show_default=True,
              help="uniform: also time the soft-evidence (uniform-noise) forward-backward on the same tokens as a "
                   "canvas at alpha = 1 - R, and its time over the masked one's")
@json_option
def bench_forward_backward(states, length, batch, mask_rate, vocab, seed, language, repeats, reference_batch, noise,
                           as_json):
    """Time the masked forward-backward against hmmlearn (1 thread) on the same data."""
    from validation.guards import check_hmm_inference

    S = states if language == "hmm" else vocab ** max(int(language[:-4]) - 1, 1) if language[:-4].isdigit() else 1
    check_hmm_inference(S, length, batch, "bench forward-backward", "use fewer --states, a smaller --batch or --length")
    r = run_benchmark(states, length, batch, mask_rate, vocab, seed, language, repeats, reference_batch, noise=noise)
    human = (
        f"{r['language']} S={r['states']} V={r['vocab']} L={r['length']} B={r['batch']} R={r['mask_rate']} "
        f"threads={r['threads']}\n"
        f"  ours      {r['ours_seq_per_s']:.1f} seq/s (median {r['ours_seq_per_s_median']:.1f})\n"
        f"  hmmlearn  {r['reference_seq_per_s']:.1f} seq/s on {r['reference_batch']} sequences\n"
        f"  speedup   {r['speedup']:.1f}x   gemm_fraction {r['gemm_fraction']:.2f} "
        f"(of peak {r['gemm_fraction_of_peak']:.2f})\n"
    )
    if "uniform_vs_mask" in r:
        human += (f"  uniform noise {r['uniform_seq_per_s']:.1f} seq/s: {r['uniform_vs_mask']:.2f}x the masked "
                  "forward-backward's time\n")
    if "sparse_vs_dense_speedup" in r:
        human += f"  sparse n-gram vs dense {r['states']}-state kernel: {r['sparse_vs_dense_speedup']:.1f}x\n"
    human += f"  max |ours - reference| {max(r['max_abs_diff_loglik'], r['max_abs_diff_marginals']):.2e} " + (
        "ok" if r["check_passed"] else "MISMATCH"
    )
    emit(r, as_json, human)




def run_sparse_benchmark(vocab: int = 4096, nonzeros: int = 50_000, length: int = 1024, batch: int = 64,
                         mask_rate: float = 0.5, samples: int = 1000, n_steps: int = 64, dense_batch: int = 2,
                         seed: int = 0, language: str | None = None, reference_samples: int = 20) -> dict:
    """The sparse n-gram path on a word-level-like bigram (module docstring of ``bench sparse-ngram``).

    ``language``: a bigram by name or ``.npz`` (e.g. ``lee-word-v4096-2gram``, the word-level fitted
    language) instead of the random sparse one (``vocab``, ``nonzeros`` then unused).

    1. One oracle Monte Carlo point first (so the process's peak memory is the point's): ``samples``
       sequences of the oracle factorized sampler at ``length``, ``n_steps`` (linear schedule), and
       their exact ``log q`` (SER and generative perplexity); wall time (the closed-form chain
       sampler's tables, :mod:`numerics.sampling.oracle.chain`, built inside it: ``tables_seconds``)
       and ``ru_maxrss``. Then the message-store sampler (:func:`numerics.sampling.oracle.reveal_sample`,
       the path before the chain sampler) and the chain sampler on the same ``reference_samples``
       reveal orders and uniforms: seconds per sequence each, their ratio, and the tokens that differ.
    2. The masked forward-backward, sparse layout on ``batch`` sequences, dense layout on the first
       ``dense_batch`` of them (its ``S V`` per masked position), throughput per sequence each, and
       their largest difference on the shared sequences. ``dense_batch = 0``: the dense throughput is
       an estimate from its operation count at the sparse run's rate per operation (labelled so).
    """
    import resource

    from numerics._threads import kernel_threads
    from numerics.inference import log_q
    from numerics.inference._ngram import forward_backward_ngram
    from numerics.inference.posterior import Observations
    from numerics.languages.arrays import SparseNGramArrays, kernel_arrays
    from numerics.languages.generators import random_sparse_ngram
    from numerics.languages.presets import load_language
    from numerics.sampling import montecarlo as mc
    from numerics.sampling.oracle import reveal_sample
    from numerics.sampling.oracle.chain import chain_reveal_sample, chain_tables
    from numerics.sampling.samplers import sample_oracle
    from numerics.schedules import make_schedule

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    if language is None:
        lang = random_sparse_ngram(2, vocab, nonzeros, seed=np.random.default_rng([seed, 1]))
        name = f"random_sparse_ngram(order=2, vocab={vocab}, nonzeros={nonzeros}, zipf=1.1, seed=[{seed}, 1])"
    else:
        try:
            lang, name = load_language(language), language
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--language") from None
        if getattr(lang, "order", None) != 2:
            raise click.BadParameter(f"{language!r} is not a bigram (an order-2 n-gram)", param_hint="--language")
        vocab = lang.vocab_size
    build_s = time.perf_counter() - t0
    nnz = int(np.count_nonzero(lang.conditional))
    if not isinstance(kernel_arrays(lang), SparseNGramArrays):
        raise click.UsageError(f"{nnz} non-zeros of {vocab}^2 is too dense for the sparse layout")
    result: dict = {"vocab": vocab, "nonzeros": nnz, "density": nnz / vocab**2, "threads": kernel_threads(),
                    "language": name, "build_seconds": build_s}
    # 1. one oracle Monte Carlo point
    warm = sample_oracle(lang, make_schedule("linear", 4), 2, 16, np.random.default_rng(0))  # compile, excluded
    log_q(lang, warm.tokens)
    t0 = time.perf_counter()
    tables = chain_tables(lang, length)  # built once per language and length; counted in the point
    tables_s = time.perf_counter() - t0
    run = sample_oracle(lang, make_schedule("linear", n_steps), samples, length, np.random.default_rng([seed, 3]))
    sample_s = time.perf_counter() - t0
    loglik = log_q(lang, run.tokens)
    point_s = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["point"] = {
        "samples": samples, "length": length, "n_steps": n_steps, "schedule": "linear",
        "seconds": point_s, "sampler_seconds": sample_s, "max_rss_mib": rss1, "max_rss_mib_before": rss0,
        "tables_seconds": tables_s, "chain_cut": None if tables is None else tables.cut,
        "chain_memo_tokens": None if tables is None else int(tables.rows.shape[1]),
        "ser": to_jsonable(mc.ser_from_loglik(loglik)), "gen_ppl": to_jsonable(mc.gen_ppl_from_loglik(loglik, length)),
    }
    # the message-store sampler against the chain sampler, same reveal orders and uniforms
    rng = np.random.default_rng([seed, 4])
    R = reference_samples
    steps = make_schedule("linear", n_steps).sample_steps(rng, (R, length))
    U = rng.random((R, length))
    reveal_sample(lang, steps[:1, :16], U[:1, :16])  # compile, excluded
    t0 = time.perf_counter()
    old = reveal_sample(lang, steps, U)
    old_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    new = chain_reveal_sample(lang, steps, U)
    new_s = time.perf_counter() - t0
    result["point"]["reference"] = {
        "samples": R, "message_store_seconds_per_sample": old_s / R,
        "chain_seconds_per_sample": None if new is None else new_s / R,
        "chain_speedup": None if new is None else old_s / new_s,
        "tokens_differing": None if new is None else int(np.count_nonzero(new != old)),
    }
    # 2. forward-backward, sparse against dense
    rng = np.random.default_rng([seed, 2])
    tokens = lang.sample(batch, length, rng)
    obs = Observations(tokens, rng.random((batch, length)) < mask_rate)
    forward_backward_ngram(lang, Observations(tokens[:1, :8], obs.mask[:1, :8]), "sparse")  # compile
    t0 = time.perf_counter()
    sparse = forward_backward_ngram(lang, obs, "sparse")
    sparse_s = time.perf_counter() - t0
    result["sparse_seq_per_s"] = batch / sparse_s
    dense_ops = float(vocab) * vocab * np.count_nonzero(obs.mask) / batch  # S V per masked position, per sequence
    if dense_batch > 0:
        sub = Observations(tokens[:dense_batch], obs.mask[:dense_batch])
        forward_backward_ngram(lang, Observations(tokens[:1, :8], obs.mask[:1, :8]), "dense")  # compile
        t0 = time.perf_counter()
        dense = forward_backward_ngram(lang, sub, "dense")
        dense_s = time.perf_counter() - t0
        result["dense_seq_per_s"] = dense_batch / dense_s
        result["dense_measured_on"] = dense_batch
        result["dense_is_estimate"] = False
        result["max_abs_diff_sparse_vs_dense"] = float(max(np.max(np.abs(sparse.loglik[:dense_batch] - dense.loglik)),
                                                           np.nanmax(np.abs(sparse.marginals[:dense_batch] - dense.marginals))))
    else:
        sparse_ops = float(nnz) * np.count_nonzero(obs.mask) / batch  # at most nnz per masked position
        result["dense_seq_per_s"] = result["sparse_seq_per_s"] * sparse_ops / dense_ops
        result["dense_is_estimate"] = True
        result["max_abs_diff_sparse_vs_dense"] = None
    result["sparse_vs_dense_speedup"] = result["sparse_seq_per_s"] / result["dense_seq_per_s"]
    result.update(length=length, batch=batch, mask_rate=mask_rate, seed=seed,
                  cpu_count=os.cpu_count(), loadavg=os.getloadavg())
    return result


def _num(value, spec: str) -> str:
    """``value`` formatted, or ``inf`` where the JSON record holds ``None`` (an infinite estimate)."""
    return "inf" if value is None else format(value, spec)


@click.command("sparse-ngram")
@click.option("--vocab", "-V", type=click.IntRange(2, 65536), default=4096, show_default=True)
@click.option("--nonzeros", type=click.IntRange(1), default=50_000, show_default=True, help="about this many non-zero conditionals")
@click.option("--length", "-L", type=click.IntRange(1), default=1024, show_default=True)
@click.option("--batch", "-B", type=click.IntRange(1), default=64, show_default=True, help="forward-backward sequences (sparse)")
@click.option("--samples", type=click.IntRange(2), default=1000, show_default=True, help="sequences of the oracle point")
@click.option("-N", "--n-steps", type=click.IntRange(1), default=64, show_default=True, help="reveal steps of the oracle point")
@click.option("--dense-batch", type=click.IntRange(0), default=2, show_default=True,
              help="sequences for the dense layout (0: estimate its throughput from its operation count)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--language", default=None,
              help="a bigram by name or .npz (e.g. lee-word-v4096-2gram) instead of the random sparse one")
@click.option("--reference-samples", type=click.IntRange(1), default=20, show_default=True,
              help="sequences on which the message-store sampler is timed against the chain sampler")
@json_option
def bench_sparse_ngram(vocab, nonzeros, length, batch, samples, n_steps, dense_batch, seed, language, reference_samples,
                       as_json):
    """The sparse n-gram path on a word-level-like bigram: one oracle Monte Carlo point (time, peak
    memory), the chain sampler against the message-store sampler, and the forward-backward against
    the dense layout, same run."""
    if vocab * vocab > 2**28:
        raise click.BadParameter(f"V^2 = {vocab * vocab} exceeds the 2^28 conditional entries the engine holds", param_hint="--vocab")
    r = run_sparse_benchmark(vocab, nonzeros, length, batch, 0.5, samples, n_steps, dense_batch, seed, language,
                             reference_samples)
    p = r["point"]
    ref = p["reference"]
    chain_line = (
        f"  chain sampler (cut-off D={p['chain_cut']}, {p['chain_memo_tokens']} memoized tokens; tables "
        f"{p['tables_seconds']:.1f} s, in the point) vs message store on {ref['samples']} samples: "
        f"{ref['chain_seconds_per_sample']:.3f} vs {ref['message_store_seconds_per_sample']:.3f} s/sample "
        f"({ref['chain_speedup']:.1f}x), {ref['tokens_differing']} tokens differ\n"
        if ref["chain_seconds_per_sample"] is not None else
        f"  chain sampler not applicable (no cut-off): message store {ref['message_store_seconds_per_sample']:.3f} s/sample\n")
    dense_label = "estimate from its operation count" if r["dense_is_estimate"] else f"measured on {r['dense_measured_on']} sequences"
    human = (
        f"bigram V={r['vocab']} nnz={r['nonzeros']} (density {r['density']:.2e}) L={r['length']} threads={r['threads']}\n"
        f"  oracle point: {p['samples']} samples, N={p['n_steps']}: {p['seconds']:.1f} s "
        f"(sampler {p['sampler_seconds']:.1f} s), max RSS {p['max_rss_mib']:.0f} MiB; "
        f"SER {_num(p['ser']['value'], '.3f')}, gen ppl {_num(p['gen_ppl']['value'], '.1f')} (Monte Carlo estimates, "
        f"{p['samples']} samples)\n"
        + chain_line +
        f"  forward-backward: sparse {r['sparse_seq_per_s']:.2f} seq/s, dense {r['dense_seq_per_s']:.4f} seq/s "
        f"({dense_label}): {r['sparse_vs_dense_speedup']:.0f}x\n"
        f"  load {r['loadavg'][0]:.1f} on {r['cpu_count']} CPUs"
    )
    emit(r, as_json, human)


BENCH_COMMANDS = [bench_forward_backward, bench_sparse_ngram]
