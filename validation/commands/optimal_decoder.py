"""``mdm-theory optimal-decoder``: the smallest KL or SER any oracle decoder reaches in at most T calls.

Thin CLI over :func:`numerics.exact.optimal_decoder.optimal_decoder` (the DP over revealed sets
and values); the state space is checked, and a case too large refused, before anything is built.
"""

from __future__ import annotations

import math
import time

import click

from validation.commands._common import emit, json_option

__all__ = ["optimal_decoder_cmd"]


@click.command("optimal-decoder")
@click.option("--language", required=True, metavar="NAME|FILE.npz", help="Preset name or .npz language file.")
@click.option("--length", "-L", type=click.IntRange(min=1), required=True, help="Sequence length L (tiny: (V+1)^L states).")
@click.option("--calls", "-T", type=click.IntRange(min=1), required=True, help="Budget: at most T denoiser calls.")
@click.option("--metric", type=click.Choice(["kl", "ser"]), required=True,
              help="kl: KL(q || p) (ParallelBench's L*_T); ser: 1 - p(supp q).")
@json_option
def optimal_decoder_cmd(language, length, calls, metric, as_json):
    """The floor no decoder can beat: the smallest KL or SER reachable in at most T calls.

    Any decoder that, with the oracle denoiser, picks the next set of positions from the revealed
    values (topk, threshold, entropy-sum, a fixed order, ...) is a policy of this dynamic program
    over (revealed set, revealed values); the random-order sampler is a mixture of such policies.
    Prints the floor for every budget t <= T and the optimal policy: at each reachable state
    (revealed positions and values, calls left) the set it reveals and the state's probability.
    """
    from numerics.estimate import Estimate
    from numerics.exact.optimal_decoder import check_decoder_size, optimal_decoder
    from numerics.exact.output_law import nonnegative_kl
    from numerics.languages.presets import load_language
    from numerics.machine import check_memory
    from numerics.methods import optimal_decoder_bytes

    t0 = time.perf_counter()
    lang = load_language(language)
    try:
        check_decoder_size(lang.vocab_size, length, calls)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--length/--calls") from None
    check_memory(optimal_decoder_bytes(lang.vocab_size, length, calls), f"optimal-decoder -T {calls} at L = {length}",
                 f"every budget beyond -T {length} (= L: each call reveals a position) has the value at -T {length}")
    r = optimal_decoder(lang, length, calls, metric)
    values, value = [float(v) for v in r.values], r.value
    if metric == "kl":  # exact's rule (nonnegative_kl): a negative KL of round-off size is 0; H(q) <= L log V
        values = [nonnegative_kl(v, length * math.log(lang.vocab_size)) for v in values]
        value = Estimate(values[-1], 0.0, r.value.method)
    result = {
        "language": language, "length": length, "calls": calls, "metric": metric,
        "value": value, "values_by_budget": values,
        "expected_calls": r.expected_calls, "n_states": r.n_states,
        "policy": [{"revealed": {str(j): int(v) for j, v in s.revealed}, "calls_left": s.calls_left,
                    "reveal": list(s.reveal), "probability": s.probability, "value": s.value} for s in r.policy],
        "elapsed_s": time.perf_counter() - t0,
    }
    emit(result, as_json, _human(result))


def _human(result: dict) -> str:
    unit = " nats" if result["metric"] == "kl" else ""
    lines = [f"{result['language']}, L = {result['length']}: the smallest {result['metric'].upper()} in at most "
             f"{result['calls']} calls is {result['value'].value:.6g}{unit} (exact: {result['value'].method})",
             "  by budget: " + ", ".join(f"T={t + 1}: {v:.6g}" for t, v in enumerate(result["values_by_budget"])),
             f"  the optimal policy uses {result['expected_calls']:.4g} calls on average; its first steps:"]
    for s in result["policy"][:12]:
        seen = ", ".join(f"x{j}={v}" for j, v in s["revealed"].items()) or "nothing revealed"
        lines.append(f"    [{seen}] ({s['calls_left']} calls left, prob {s['probability']:.4g}) -> reveal {s['reveal']}")
    if len(result["policy"]) > 12:
        lines.append(f"    ... {len(result['policy']) - 12} more states (--json lists them all)")
    return "\n".join(lines)
