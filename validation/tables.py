"""Flat tables of results for pandas, polars, R or a spreadsheet: Parquet and CSV, one row per point.

A results table (:mod:`validation.sweep`: one JSON object per line, nested) is flattened to one row
per point (docs/schema.md lists the columns):

* the config: ``language``, ``ser_language``, ``length``, ``n_steps`` (the config's ``steps``),
  ``schedule``, ``method_requested`` (the config's ``method``), ``samples``, ``seed``,
  ``batch_size`` and any other config field under its own name, plus ``config_hash``;
* the point: ``method`` (the method that ran), ``schedule_name``, ``sampler_name``, ``tie_seed``, ``elapsed_s``;
* every estimate ``M`` of the result (``kl``, ``ser``, ...): ``M_value``, ``M_stderr``,
  ``M_ci_low``, ``M_ci_high``, ``M_confidence``, ``M_method``, ``M_samples``, ``M_exact`` and
  ``M_null_reason`` (the estimate's ``null_reason`` as JSON text, empty when nothing is null);
* provenance: ``commit`` and ``versions`` (JSON text of the package versions).

Both files are written atomically (:func:`numerics.provenance.atomic_write_bytes`); a null is an
empty CSV cell and a Parquet null.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from numerics.estimate import ESTIMATE_FIELDS, is_estimate_record
from numerics.provenance import NULL_REASON, atomic_write_bytes

__all__ = ["CONFIG_COLUMNS", "flatten_point", "write_tables"]

#: Config fields renamed in the tables (the JSON keeps the config's own names, which its hash covers).
CONFIG_COLUMNS = {"steps": "n_steps", "method": "method_requested"}


def flatten_point(config: dict, result: dict, provenance: dict | None = None, config_hash: str | None = None) -> dict:
    """One flat row (module docstring) from a point's config, its JSON result and provenance."""
    row: dict[str, Any] = {CONFIG_COLUMNS.get(k, k): v for k, v in config.items()}
    if config_hash is not None:
        row["config_hash"] = config_hash
    for key in ("method", "schedule_name", "sampler_name", "tie_seed", "elapsed_s"):
        if key in result:
            row[key] = result[key]
    for name, value in result.items():
        if not is_estimate_record(value):
            continue
        for field in ESTIMATE_FIELDS:
            row[f"{name}_{field}"] = value.get(field)
        reasons = value.get(NULL_REASON)
        row[f"{name}_{NULL_REASON}"] = json.dumps(reasons, sort_keys=True) if reasons else None
    provenance = provenance or {}
    row["commit"] = provenance.get("commit")
    row["versions"] = json.dumps(provenance.get("versions", {}), sort_keys=True)
    return row


def _columns(rows: list[dict]) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r))
    return list(seen)


def write_tables(rows: Iterable[dict], stem: str | Path) -> tuple[Path, Path]:
    """Write flat ``rows`` to ``STEM.parquet`` and ``STEM.csv`` (same columns, first-seen order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(rows)
    stem = Path(stem)
    columns = _columns(rows)
    table = pa.table({c: pa.array([r.get(c) for r in rows]) for c in columns})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    parquet = atomic_write_bytes(stem.with_name(stem.name + ".parquet"), buffer.getvalue())
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in columns})
    return parquet, atomic_write_bytes(stem.with_name(stem.name + ".csv"), text.getvalue().encode())
