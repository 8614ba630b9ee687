"""The command line's searches from Python, with its names and defaults.

::

    from validation.api import calibrate, steps_needed

    steps_needed("interval", 40, "ser", 0.1)                                 # mdm-theory steps-needed
    steps_needed("interval", 40, "ser", 0.1, lossless="assd,autospec")       # ... --lossless assd,autospec
    calibrate("2gram", 64, "ter", 0.01, ["random", "topk"], relative=True)   # mdm-theory calibrate

* :func:`steps_needed` -- the smallest number of steps ``N`` at which a sampler (the oracle's, or
  the factorized sampler with your own denoiser) meets a SER, TER or KL target
  (:mod:`validation.steps_needed`), and with ``lossless`` the lossless decoders beside it (no steps,
  SER = 0, their expected calls: ``StepsNeeded.lossless``);
* :func:`calibrate` -- the cheapest setting of each sampler family (random, topk, threshold,
  entropy-sum, llada, fast-dllm, eb, remdm, ...) meeting a target, with the Pareto front of calls
  against the metric (:mod:`validation.calibrate`).

They live in ``validation``, not in ``numerics``, because they search over ``numerics``' metrics
through the sweep's point configuration (``numerics`` never imports ``validation``); every sampler
by name is ``numerics.make_sampler``.
"""

from __future__ import annotations

from validation.calibrate import Calibration, calibrate
from validation.steps_needed import StepsNeeded, steps_needed

__all__ = ["Calibration", "StepsNeeded", "calibrate", "steps_needed"]
