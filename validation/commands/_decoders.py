"""The decoder options every command shares, parsed in one place.

:func:`decoder_options` adds ``--block-length``, ``--remasking``, ``--temperature``,
``--threshold``, ``--factor``, ``--remdm-variant`` and ``--eta`` to a click
command and hands the command one :class:`DecoderOptions` (argument ``decoder_opts``);
:func:`build_decoder` turns it, with the command's ``--sampler``, ``-N``, ``--schedule``,
``--gamma`` and ``--tie-seed`` (shared with the adaptive rules), into a :mod:`numerics.sampling.decoders` sampler or a
``click.UsageError`` (exit code 2, nothing computed or written) that names the bad input.
:meth:`DecoderOptions.fields` hands the same options to a :class:`validation.sweep.PointConfig`
(``exact``, ``sweep``), which builds and checks the decoder itself; :func:`check_decoder_method`
refuses a method no decoder has (``closed-form``) on the command line.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import click

from numerics.sampling.decoders import DECODER_NAMES, REMASKINGS, REMDM_VARIANTS

BLOCK_RULES = ("topk", "threshold", "entropy-sum")  # the adaptive rules that take --block-length too

__all__ = ["BLOCK_RULES", "DECODER_FIELDS", "DECODER_NAMES", "DecoderOptions", "build_decoder", "check_decoder_method",
           "decoder_options"]


@dataclass(frozen=True)
class DecoderOptions:
    """The decoder options as given (``None`` = not given)."""

    block_length: int | None = None
    remasking: str | None = None
    temperature: float | None = None
    threshold: float | None = None
    factor: float | None = None
    remdm_variant: str | None = None
    eta: float | None = None

    def given(self) -> list[str]:
        return [f"--{k.replace('_', '-')}" for k, v in self.__dict__.items() if v is not None]

    def fields(self) -> dict:
        """The options as :class:`validation.sweep.PointConfig` fields (the same names; ``None`` = not given)."""
        return dict(self.__dict__)


#: The decoder option names, one place: :class:`DecoderOptions`' fields, which are also
#: :class:`validation.sweep.PointConfig`'s decoder fields (sweep imports this tuple).
DECODER_FIELDS = tuple(f.name for f in fields(DecoderOptions))


def check_decoder_method(sampler: str, method: str) -> None:
    """A ``click.UsageError`` for a method the decoders do not have (``closed-form``)."""
    from numerics.metrics import DECODER_METHODS

    if sampler in DECODER_NAMES and method not in DECODER_METHODS:
        raise click.UsageError(f"--method {method}: a decoder is computed by one of {', '.join(DECODER_METHODS)}")


_OPTIONS = (
    click.option("--block-length", type=int, default=None,
                 help="Decoders and the adaptive rules (topk, threshold, entropy-sum): semi-autoregressive block "
                      "length B (must divide L; topk: N divisible by L/B, fixed counts) [default: L, one block]."),
    click.option("--remasking", type=click.Choice(["low-confidence", "random"]), default=None,
                 help="llada: score of a drawn value, its probability (low-confidence) or a fresh uniform "
                      "(random)  [default: low-confidence]."),
    click.option("--temperature", type=float, default=None,
                 help="Decoders: temperature T >= 0 of the draws (0 = greedy argmax)  [default: 1]."),
    click.option("--threshold", type=float, default=None,
                 help="fast-dllm: reveal every drawn value of probability >= TAU (in (0, 1]), at least one."),
    click.option("--factor", type=float, default=None,
                 help="fast-dllm: reveal the largest prefix with c_(j) >= 1 - F/(j+1) (F > 0), at least one."),
    click.option("--remdm-variant", type=click.Choice(list(REMDM_VARIANTS)), default=None,
                 help="remdm: sigma = min(eta, sigma_max) (cap), eta * sigma_max (rescale), or loop (alpha held at "
                      "0.9 for t in [0.05, 0.55], remasking min(eta, sigma_max) there)  [default: cap]."),
    click.option("--eta", type=float, default=None, help="remdm: remasking strength eta in [0, 1]."),
)


def decoder_options(f):
    """Add the decoder options to a click command; it receives ``decoder_opts`` (:class:`DecoderOptions`)."""
    names = [o.name for o in (opt(lambda: None).__click_params__[0] for opt in _OPTIONS)]

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        kwargs["decoder_opts"] = DecoderOptions(**{k: kwargs.pop(k) for k in names})
        return f(*args, **kwargs)

    for opt in reversed(_OPTIONS):
        wrapper = opt(wrapper)
    return wrapper


def build_decoder(sampler: str, opts: DecoderOptions, *, steps: int | None, schedule: str, gamma: float | None,
                  length: int, tie_seed: int = 0):
    """The decoder of the options, checked against ``length`` (``click.UsageError`` naming any bad input);
    ``tie_seed`` is the command's ``--tie-seed``, shared with the adaptive rules."""
    from numerics.sampling.decoders import make_decoder
    from numerics.schedules import make_schedule

    if sampler not in DECODER_NAMES:
        given = [o for o in opts.given() if not (o == "--block-length" and sampler in BLOCK_RULES)]
        if given:
            raise click.UsageError(f"{', '.join(given)} apply to the decoders ({', '.join(DECODER_NAMES)}), "
                                   f"not to --sampler {sampler}")
        return None
    try:
        if opts.remasking is not None and opts.remasking not in REMASKINGS:
            raise ValueError(f"unknown remasking {opts.remasking!r}")
        decoder = make_decoder(
            sampler, steps=steps if sampler == "llada" else None,
            schedule=make_schedule(schedule, steps) if sampler == "remdm" else None,
            block_length=opts.block_length, remasking=opts.remasking, temperature=opts.temperature,
            threshold=opts.threshold, factor=opts.factor, gamma=gamma if sampler == "eb" else None,
            variant=opts.remdm_variant, eta=opts.eta, tie_seed=tie_seed)
        if sampler != "eb" and gamma is not None:
            raise ValueError(f"--gamma applies to eb (and threshold / entropy-sum), not to {sampler}")
        decoder.blocks(length)
        if sampler == "llada":
            decoder.fixed_steps(length)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    return decoder
