"""ParallelBench's list tasks (numerics.exact.parallelbench): the closed forms derived in its docstring against
the engine's exact SER (the decoders' DP on the task's table), on a grid of ``n``, ``k``, ``tau`` and ``f``
that crosses every boundary of the closed forms (``tau = (n-1)/n``, ``f = (n+1)/n``, ``tau = 1/2``, ``f = 3/2``)."""

from __future__ import annotations

import numpy as np
import pytest

from numerics.exact.parallelbench import closed_form_accuracy, engine_ser, parallelbench_table, task_table
from tests.tolerances import RTOL_EXACT


def test_the_table_of_every_task_and_rule():
    rows = parallelbench_table(4)
    assert len(rows) == 4 * (3 + 4 + 3)
    for r in rows:
        assert r.engine == pytest.approx(r.closed_form, rel=RTOL_EXACT, abs=1e-14), r
    sers = {(r.task, r.rule, r.parameter): r.engine for r in rows}
    # by hand, n = 4, k = 2: P(Y = 3) = 3/64 at m = 4 (one replacement among the two revealed), P(Y <= 2) = 243/256
    # continues to m = 2, where exactly one of the two draws is the replacement with probability 1/2
    assert sers["replace-random", "top-k", 2.0] == pytest.approx(1 - (3 / 64 + 243 / 256 / 2), rel=1e-14)
    assert sers["shuffle", "top-k", 2.0] == pytest.approx(1 - 3 / 4 * 1 / 2, rel=1e-14)  # (4*3/16) (2*1/4)


@pytest.mark.parametrize("n", [3, 5, 6])
def test_replace_random_on_a_grid(n):
    ks = [k for k in range(1, n + 1) if n % k == 0]
    for k in ks:
        cf = 1 - closed_form_accuracy("replace-random", "top-k", n, k)
        assert engine_ser("replace-random", "top-k", n, k) == pytest.approx(cf, rel=RTOL_EXACT, abs=1e-14), k
    edge = (n - 1) / n
    for tau in (edge - 1e-6, edge, edge + 1e-6):
        cf = 1 - closed_form_accuracy("replace-random", "threshold", n, tau)
        assert engine_ser("replace-random", "threshold", n, tau) == cf, tau
    for f in ((n + 1) / n - 1e-6, (n + 1) / n, 0.5):
        assert engine_ser("replace-random", "factor", n, f) == 1 - closed_form_accuracy("replace-random", "factor", n, f)


def test_shuffle_at_three_and_the_boundaries():
    for k in (1, 3):
        cf = 1 - closed_form_accuracy("shuffle", "top-k", 3, k)
        assert engine_ser("shuffle", "top-k", 3, k) == pytest.approx(cf, rel=RTOL_EXACT, abs=1e-14)
    assert 1 - closed_form_accuracy("shuffle", "top-k", 3, 3) == pytest.approx(1 - 6 / 27, rel=1e-14)
    for tau in (0.5, 0.5 + 1e-6):
        assert engine_ser("shuffle", "threshold", 3, tau) == 1 - closed_form_accuracy("shuffle", "threshold", 3, tau)
    for f in (1.5 - 1e-6, 1.5):
        assert engine_ser("shuffle", "factor", 3, f) == 1 - closed_form_accuracy("shuffle", "factor", 3, f)


def test_tables_are_the_tasks():
    assert task_table("shuffle", 3).sum() == pytest.approx(1.0) and np.count_nonzero(task_table("shuffle", 3)) == 6
    assert np.count_nonzero(task_table("replace-random", 5)) == 5
    with pytest.raises(ValueError, match="unknown ParallelBench task"):
        task_table("sort", 3)
