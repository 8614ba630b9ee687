"""``mdm-theory optimal-decoder``: the smallest KL or SER of a stated class of oracle decoders in at most T calls.

Thin CLI over :func:`numerics.exact.optimal_decoder.optimal_decoder` (the DP over revealed sets
and values; its class: :data:`numerics.exact.floors.MARGINAL`), the wider classes' floors of
:mod:`numerics.exact.floors`, and, where the DP is out of reach, the structural floors of
:mod:`numerics.exact.floors_structural`. Sizes are checked before anything is built.
"""

from __future__ import annotations

import math
import time

import click

from validation.commands._common import emit, json_option

__all__ = ["optimal_decoder_cmd"]


@click.command("optimal-decoder")
@click.option("--language", required=True, metavar="NAME|FILE.npz", help="Preset name or .npz language file.")
@click.option("--length", "-L", type=click.IntRange(min=1), required=True,
              help="Sequence length L (the exact DP is tiny: the refusal says its reach, e.g. L <= 6 at V = 8).")
@click.option("--calls", "-T", type=click.IntRange(min=1), required=True, help="Budget: at most T denoiser calls.")
@click.option("--metric", type=click.Choice(["kl", "ser"]), required=True,
              help="kl: KL(q || p) (ParallelBench's L*_T); ser: 1 - p(supp q).")
@click.option("--temperature", type=click.FloatRange(min=0.0), default=1.0, show_default=True,
              help="Value temperature of the wider classes also reported (0: argmax, any tie).")
@json_option
def optimal_decoder_cmd(language, length, calls, metric, temperature, as_json):
    """The smallest KL or SER of monotone decoders with marginal draws, in at most T calls.

    The class: decoders that, with the oracle denoiser, choose which positions to reveal from the
    revealed values, each revealed value drawn independently from its oracle marginal given the
    revealed values (topk, threshold, entropy-sum, a fixed order, ...; the random-order sampler is a
    mixture of them). Decoders outside it can go lower with the same calls: draw-then-select
    (LLaDA low-confidence, Fast-dLLM: SER only) and greedy or tempered values (SER only; their KL is
    never below this class's). Their floors are printed too (draw-then-select and the class at
    --temperature), with the metrics each bounds. Prints the floor for every budget t <= T and the
    optimal policy. Beyond the DP's reach (stated in plain numbers), the floor comes from the
    language's structure: interleaved plans on n-grams (an achievable upper bound on the floor) or
    the product rule on the interval language (exact); other cases are refused.
    """
    from numerics.estimate import Estimate
    from numerics.exact.floors import (
        ANY_VALUES,
        MARGINAL,
        MAX_CLASS_WORK,
        DecoderClass,
        class_floor,
        class_work,
    )
    from numerics.exact.floors_structural import dp_limit_text, structural_floor
    from numerics.exact.optimal_decoder import check_decoder_size, optimal_decoder
    from numerics.exact.output_law import nonnegative_kl
    from numerics.languages.presets import load_language
    from numerics.machine import check_memory
    from numerics.methods import optimal_decoder_bytes

    t0 = time.perf_counter()
    if not math.isfinite(temperature):
        raise click.BadParameter(f"must be a finite number >= 0, got {temperature!r}", param_hint="--temperature")
    lang = load_language(language)
    V = int(lang.vocab_size)
    result = {"language": language, "length": length, "calls": calls, "metric": metric,
              "decoder_class": MARGINAL.description, "dp_limit": dp_limit_text(V, calls)}
    try:
        check_decoder_size(V, length, calls)
    except ValueError:
        why = "a structural floor at any L exists for n-gram and interval languages only"
        try:
            # a policy makes at most L calls (each reveals a position): budgets beyond L have the value at L,
            # so they are not computed or listed (-T 10^8 would otherwise loop and list 10^8 budgets)
            structural = structural_floor(lang, length, min(calls, length), metric)
        except ValueError as exc:
            structural, why = None, str(exc)
        if structural is None:
            raise click.BadParameter(f"the exact DP's state space reaches {result['dp_limit']}, not L = {length}; "
                                     f"{why}", param_hint="--length/--calls") from None
        result |= {"method": "structural", "value": Estimate(float(structural.values[-1]), 0.0, "structural-floor"),
                   "values_by_budget": [float(v) for v in structural.values], "kind": structural.kind,
                   "how": structural.method,
                   "plans": [None if p is None else {"gap": p.gap, "calls": p.calls, "first_call_runs": p.first_call}
                             for p in structural.plans],
                   "elapsed_s": time.perf_counter() - t0}
        emit(result, as_json, _human(result))
        return
    check_memory(optimal_decoder_bytes(V, length, calls), f"optimal-decoder -T {calls} at L = {length}",
                 f"every budget beyond -T {length} (= L: each call reveals a position) has the value at -T {length}")
    r = optimal_decoder(lang, length, calls, metric)
    values, value = [float(v) for v in r.values], r.value
    if metric == "kl":  # exact's rule (nonnegative_kl): a negative KL of round-off size is 0; H(q) <= L log V
        values = [nonnegative_kl(v, length * math.log(V)) for v in values]
        value = Estimate(values[-1], 0.0, r.value.method)
    wider = []
    for cls in (DecoderClass("draw-then-select", temperature), DecoderClass("fixed", temperature)):
        if cls == MARGINAL or metric not in cls.bounds:
            continue
        if class_work(V, length, calls, cls.selection) > MAX_CLASS_WORK:
            wider.append({"class": cls.name, "description": cls.description, "bounds": list(cls.bounds),
                          "values_by_budget": None, "why_not": f"beyond MAX_CLASS_WORK = {MAX_CLASS_WORK}"})
            continue
        f = class_floor(lang, length, calls, cls, metric)
        wider.append({"class": cls.name, "description": cls.description, "bounds": list(cls.bounds),
                      "values_by_budget": [float(v) for v in f.values]})
    wider.append({"class": "any-values", "description": ANY_VALUES, "bounds": ["ser", "kl"],
                  "values_by_budget": [0.0] * calls if metric == "ser" else values})
    result |= {
        "method": "dp", "value": value, "values_by_budget": values,
        "expected_calls": r.expected_calls, "n_states": r.n_states, "wider_classes": wider,
        "policy": [{"revealed": {str(j): int(v) for j, v in s.revealed}, "calls_left": s.calls_left,
                    "reveal": list(s.reveal), "probability": s.probability, "value": s.value} for s in r.policy],
        "elapsed_s": time.perf_counter() - t0,
    }
    emit(result, as_json, _human(result))


def _human(result: dict) -> str:
    unit = " nats" if result["metric"] == "kl" else ""
    by_budget = "  by budget: " + ", ".join(f"T={t + 1}: {v:.6g}" for t, v in enumerate(result["values_by_budget"]))
    head = (f"{result['language']}, L = {result['length']}: the smallest {result['metric'].upper()} in at most "
            f"{result['calls']} calls of the {result['decoder_class']}")
    if result["method"] == "structural":
        return "\n".join([
            f"{head}: {result['value'].value:.6g}{unit} ({result['kind']})",
            by_budget + (f"; every budget T > L = {result['length']} has the value at T = L"
                         if result["calls"] > result["length"] else ""),
            f"  the exact DP reaches {result['dp_limit']}; this floor is structural: {result['how']}",
        ] + [f"  T={t + 1}: gap {p['gap']}, {p['calls']} calls" for t, p in enumerate(result["plans"])
             if p is not None and (t == 0 or result["plans"][t - 1] != p)])
    lines = [f"{head}: {result['value'].value:.6g}{unit} (exact: {result['value'].method})", by_budget]
    for w in result["wider_classes"]:
        vals = ("not computed: " + w["why_not"]) if w["values_by_budget"] is None else ", ".join(
            f"T={t + 1}: {v:.6g}" for t, v in enumerate(w["values_by_budget"]))
        lines.append(f"  wider class {w['class']} (its floor bounds {', '.join(w['bounds']).upper()}): {vals}")
    lines.append(f"  the optimal policy uses {result['expected_calls']:.4g} calls on average; its first steps:")
    for s in result["policy"][:12]:
        seen = ", ".join(f"x{j}={v}" for j, v in s["revealed"].items()) or "nothing revealed"
        lines.append(f"    [{seen}] ({s['calls_left']} calls left, prob {s['probability']:.4g}) -> reveal {s['reveal']}")
    if len(result["policy"]) > 12:
        lines.append(f"    ... {len(result['policy']) - 12} more states (--json lists them all)")
    return "\n".join(lines)
