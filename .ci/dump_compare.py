"""The exactness gate of a kernel change: dump every kernel family's outputs in two trees and compare.

    PYTHONPATH=TREE_A python .ci/dump_compare.py dump a.npz [--samples 4] [--steps 8,64,512,2048] [--length 512]
    PYTHONPATH=TREE_B python .ci/dump_compare.py dump b.npz ...
    python .ci/dump_compare.py compare a.npz b.npz      # exit 1 on any difference

Each preset and its pruned twin (and ``interval``), at each ``N``: the oracle reveal kernels
(``reveal_sample`` tokens; ``reveal_score`` ``log_p``/``log_q``/Jensen terms with and without the
chain rule, on the sampled tokens), the adaptive kernels (topk) and the decoder kernels (llada,
eb) through ``sample`` with their tokens, reveal steps and ``log_p``. The gate: every integer array
identical, every float array within ``ATOL = 1e-12`` absolute (NaN where NaN, ``-inf`` where ``-inf``).
Run it with modest ``--samples`` on a loaded machine: the 4-grams at ``L = 512`` take seconds per ``N``.
Use a separate ``NUMBA_CACHE_DIR`` per tree.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

ATOL = 1e-12


def dump(path: str, samples: int, steps: list[int], length: int, presets: list[str] | None, kernels: str) -> None:
    from numerics.languages.presets import load_language, preset_names
    from numerics.sampling.adaptive import AdaptiveSampler
    from numerics.sampling.decoders import EntropyBound, Llada
    from numerics.sampling.denoiser import OracleDenoiser
    from numerics.sampling.oracle.driver import reveal_sample, reveal_score
    from numerics.schedules import make_schedule

    out: dict[str, np.ndarray] = {}
    names = presets or [n for n in preset_names() if n != "hmm-pruned-paper"]
    for name in names:
        lang = load_language(name)
        for N in steps:
            rng = np.random.default_rng([N, len(name)])
            steps_ = rng.integers(1, N + 1, size=(samples, length))
            uniforms = rng.random((samples, length))
            x = reveal_sample(lang, steps_, uniforms)
            key = f"{name}/N{N}"
            out[f"{key}/reveal_sample"] = x
            for chain in (False, True):
                s = reveal_score(lang, steps_, x, chain=chain)
                for field in ("log_p", "log_q", "jensen"):
                    out[f"{key}/reveal_score_chain{int(chain)}/{field}"] = np.asarray(getattr(s, field))
            if name == "interval" or kernels == "reveal":
                continue
            den = OracleDenoiser(lang, strict=False)
            for label, sampler in (("topk", AdaptiveSampler("topk", schedule=make_schedule("linear", N))),
                                   ("llada", Llada(steps=N)), ("eb", EntropyBound(gamma=1.0))):
                if label == "eb" and N != steps[0]:
                    continue  # eb ignores N
                r = sampler.sample(den, samples, length, np.random.default_rng(N))
                out[f"{key}/{label}/tokens"] = r.tokens
                out[f"{key}/{label}/reveal_steps"] = r.reveal_steps
                if getattr(r, "log_p", None) is not None:
                    out[f"{key}/{label}/log_p"] = np.asarray(r.log_p)
            print(key, flush=True)
    np.savez_compressed(path, **out)


def compare(a_path: str, b_path: str) -> int:
    a, b = np.load(a_path), np.load(b_path)
    problems, worst = [], 0.0
    if set(a.files) != set(b.files):
        problems.append(f"different arrays: {sorted(set(a.files) ^ set(b.files))}")
    for k in sorted(set(a.files) & set(b.files)):
        x, y = a[k], b[k]
        if x.shape != y.shape or x.dtype != y.dtype:
            problems.append(f"{k}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}")
        elif x.dtype.kind in "iub":
            if not np.array_equal(x, y):
                problems.append(f"{k}: {int(np.sum(x != y))} entries differ")
        else:
            same_special = np.array_equal(np.isnan(x), np.isnan(y)) and np.array_equal(np.isinf(x), np.isinf(y)) \
                and np.array_equal(x[np.isinf(x)], y[np.isinf(y)])
            finite = np.isfinite(x) & np.isfinite(y)
            diff = float(np.max(np.abs(x[finite] - y[finite]), initial=0.0))
            worst = max(worst, diff)
            if not same_special or diff > ATOL:
                problems.append(f"{k}: max |diff| {diff:.3g}, same NaN/inf: {same_special}")
    print(f"{len(set(a.files) & set(b.files))} arrays compared, worst float difference {worst:.3g} absolute, "
          f"{len(problems)} problems")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("path")
    d.add_argument("--samples", type=int, default=4)
    d.add_argument("--steps", default="8,64,512,2048")
    d.add_argument("--length", type=int, default=512)
    d.add_argument("--presets", default=None, help="comma-separated (default: every preset but hmm-pruned-paper)")
    d.add_argument("--kernels", choices=("all", "reveal"), default="all",
                   help="reveal: the oracle reveal kernels only (no adaptive and decoder kernels to compile)")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = parser.parse_args()
    if args.cmd == "dump":
        dump(args.path, args.samples, [int(s) for s in args.steps.split(",")], args.length,
             args.presets.split(",") if args.presets else None, args.kernels)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
