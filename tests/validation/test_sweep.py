"""The resumable sweep table, the point evaluation, and smoke runs of the CLI commands."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from numerics.provenance import NotRegularFileError
from numerics.sampling.registry import DECODER_FIELDS
from validation.cli import main
from validation.commands.exact import parse_int_list
from validation.sweep import CorruptRowsError, PointConfig, evaluate_point, grid, read_table, run_sweep

METRICS = ("kl", "kl_jensen_bound", "log_ter_gap", "ter", "ter_data", "ser", "gen_ppl", "gen_ppl_data", "nfe")


class Interrupt(Exception):
    pass


def fake_evaluate(calls, fail_at=None):
    def evaluate(cfg):
        if fail_at is not None and len(calls) == fail_at:
            raise Interrupt("simulated crash")
        calls.append(cfg)
        return {"value": cfg.length * 1000 + cfg.n_steps}
    return evaluate


def test_sweep_resumes_without_recomputing(tmp_path):
    out = tmp_path / "t.jsonl"
    configs = grid(["2gram", "3gram:3gram-pruned"], [4, 8], [2, 3], method="mc", samples=10)
    assert len(configs) == 8 and configs[-1].ser_language == "3gram-pruned"
    calls: list = []
    with pytest.raises(Interrupt):
        run_sweep(configs, out, evaluate=fake_evaluate(calls, fail_at=3))
    rows, bad = read_table(out)
    assert len(rows) == 3 and not bad  # every finished point was written
    calls2: list = []
    report = run_sweep(configs, out, evaluate=fake_evaluate(calls2))
    assert report.skipped == 3 and report.computed == 5
    assert calls2 == configs[3:]  # nothing recomputed
    rows, bad = read_table(out)
    assert [r.result["value"] for r in rows] == [c.length * 1000 + c.n_steps for c in configs]
    assert all(r.provenance["versions"]["numpy"] for r in rows)
    again = run_sweep(configs, out, evaluate=fake_evaluate([]))
    assert again.computed == 0 and again.skipped == 8


def test_sweep_detects_bad_rows(tmp_path):
    out = tmp_path / "t.jsonl"
    configs = grid(["2gram"], [4], [2, 3, 4], method="mc", samples=10)
    run_sweep(configs, out, evaluate=fake_evaluate([]))
    lines = out.read_text().splitlines()
    edited = json.loads(lines[0])
    edited["config"]["steps"] = 99  # config no longer matches its hash
    tampered = json.loads(lines[1])
    tampered["result"]["value"] = -1  # result no longer matches its row hash
    out.write_text("\n".join([json.dumps(edited), json.dumps(tampered), lines[2], '{"truncated": ']) + "\n")
    rows, bad = read_table(out)
    assert len(rows) == 1 and [k for k, _ in bad] == [1, 2, 4]
    with pytest.raises(CorruptRowsError, match="line 1: config does not hash"):
        run_sweep(configs, out, evaluate=fake_evaluate([]))
    calls: list = []
    report = run_sweep(configs, out, on_bad_rows="drop", evaluate=fake_evaluate(calls))
    assert report.computed == 2 and len(report.bad_rows) == 3
    assert sorted(c.n_steps for c in calls) == [2, 3]
    rows, bad = read_table(out)
    assert len(rows) == 3 and not bad


def test_point_config_validation():
    with pytest.raises(ValueError, match="method"):
        PointConfig("2gram", 4, 2, method="magic")
    with pytest.raises(ValueError, match="steps"):
        PointConfig("2gram", 4, 0)
    a, b = PointConfig("2gram", 4, 2), PointConfig("2gram", 4, 3)
    assert a.rng("s").random() != b.rng("s").random()
    assert a.rng("s").random() == PointConfig("2gram", 4, 2).rng("s").random()


def test_evaluate_point_exact_and_mc_keep_the_two_kls_apart():
    ex = evaluate_point(PointConfig("2gram", 3, 2))
    assert ex["method"] == "dp"  # auto: the DP is estimated faster than enumeration here
    for k in METRICS:
        assert ex[k]["stderr"] == 0.0, k
    assert ex["kl"]["value"] <= ex["kl_jensen_bound"]["value"]
    assert ex["log_ter_gap"]["value"] == pytest.approx(ex["kl"]["value"] / 3, rel=1e-12)
    mc = evaluate_point(PointConfig("3gram", 32, 4, method="mc", samples=40, ser_language="3gram-pruned"))
    assert mc["kl"]["value"] is None and "unavailable" in mc["kl"]["method"]
    assert mc["kl_jensen_bound"]["value"] > 0 and mc["kl_jensen_bound"]["samples"] == 40
    assert mc["ser"]["samples"] == 40 and mc["ter_data"]["stderr"] == 0.0
    mk = evaluate_point(PointConfig("2gram", 32, 4, method="mc", samples=10))
    assert mk["kl_jensen_bound"]["method"] == "markov-chain-rule" and mk["kl_jensen_bound"]["stderr"] == 0.0


def test_parse_int_list():
    assert parse_int_list("8,16,...,2048") == [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    assert parse_int_list("2,4,...,10") == [2, 4, 6, 8, 10]  # doubling misses 10: arithmetic
    assert parse_int_list("1, 3") == [1, 3]
    for bad in ("8,...,64", "8,16,...,100", "a,b"):
        with pytest.raises(click.BadParameter):
            parse_int_list(bad)


def test_cli_exact_json():
    r = CliRunner().invoke(main, ["exact", "--language", "2gram", "-L", "3", "-N", "2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["inputs"]["length"] == 3 and d["method"] == "dp"
    assert all({"value", "stderr", "method"} <= set(d[k]) for k in METRICS)
    r = CliRunner().invoke(main, ["exact", "--language", "nope", "-L", "3", "-N", "2"])
    assert r.exit_code != 0 and "preset" in r.output


def test_cli_sweep_resumes(tmp_path):
    out = tmp_path / "s.jsonl"
    args = ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "1,2,...,4", "--out", str(out), "--json"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.splitlines()[-1])["computed"] == 3
    r = CliRunner().invoke(main, args)
    assert json.loads(r.output.splitlines()[-1])["skipped"] == 3
    out.write_text(out.read_text() + "garbage\n")
    r = CliRunner().invoke(main, args)
    assert r.exit_code != 0 and "bad row" in r.output


def test_cli_bench_sweep_smoke(tmp_path):
    r = CliRunner().invoke(main, ["bench", "sweep", "--quick", "--presets", "2gram", "--samples", "8", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output.splitlines()[-1])
    assert d["computed"] == 3 and d["length"] == 128 and math.isfinite(d["total_s"])


_WRITER = """
import sys, time
from validation.sweep import grid, run_sweep
length, out = int(sys.argv[1]), sys.argv[2]
def evaluate(cfg):
    time.sleep(0.02)
    return {"value": cfg.length * 1000 + cfg.n_steps}
configs = grid(["2gram"], [length], list(range(1, 13)), method="mc", samples=10)
report = run_sweep(configs, out, evaluate=evaluate)
print(report.computed)
"""


def test_two_concurrent_sweeps_into_one_table_keep_every_row(tmp_path):
    """Issue 12: two processes, different grids, one --out: all 24 rows are kept (12 were lost before)."""
    out = tmp_path / "shared.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(L), str(out)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for L in (64, 128)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    assert [int(o.strip()) for o, _ in outputs] == [12, 12]
    rows, bad = read_table(out)
    assert not bad
    assert sorted(r.result["value"] for r in rows) == sorted(L * 1000 + N for L in (64, 128) for N in range(1, 13))


def test_sweep_refuses_a_target_that_is_not_a_regular_file(tmp_path):
    """``--out /dev/null`` (or a directory) is refused before anything is computed; the target is left alone."""
    calls: list = []
    configs = grid(["2gram"], [4], [2], method="mc", samples=10)
    for target in (Path(os.devnull), tmp_path):
        with pytest.raises(NotRegularFileError, match="not a regular file"):
            run_sweep(configs, target, evaluate=fake_evaluate(calls))
    assert calls == [] and stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert not (tmp_path.parent / f"{tmp_path.name}.lock").exists()


def test_a_sweep_writes_flat_parquet_and_csv_beside_the_table(tmp_path):
    """Issue 13: tables other tools read directly, one row per point, config columns + value, stderr, ci, method."""
    import csv

    import pyarrow.parquet as pq

    out = tmp_path / "t.jsonl"
    configs = grid(["2gram:2gram-pruned"], [3], [1, 2], method="auto") + grid(["2gram"], [8], [2], method="mc", samples=10)
    report = run_sweep(configs, out)
    assert report.tables == (str(tmp_path / "t.parquet"), str(tmp_path / "t.csv"))
    table = pq.read_table(tmp_path / "t.parquet").to_pylist()
    rows, _ = read_table(out)
    assert len(table) == len(rows) == 3
    for flat, row in zip(table, rows):
        assert flat["language"] == row.config["language"] and flat["n_steps"] == row.config["steps"]
        assert flat["method_requested"] == row.config["method"] and flat["config_hash"] == row.config_hash
        assert flat["method"] == row.result["method"] and flat["commit"] == row.provenance["commit"]
        for metric in ("ser", "kl_jensen_bound", "gen_ppl"):
            for field in ("value", "stderr", "ci_low", "ci_high", "method", "samples", "exact"):
                assert flat[f"{metric}_{field}"] == row.result[metric][field], (metric, field)
    assert table[2]["kl_value"] is None and "exact law" in json.loads(table[2]["kl_null_reason"])["value"]
    for flat in table:  # every sampler option its own column, null where the point did not set it
        assert flat["sampler"] == "random" and all(flat[k] is None for k in ("gamma", *DECODER_FIELDS))
    with open(tmp_path / "t.csv", newline="") as fh:
        text_rows = list(csv.DictReader(fh))
    assert [r["n_steps"] for r in text_rows] == ["1", "2", "2"]
    assert float(text_rows[0]["ser_value"]) == table[0]["ser_value"] and text_rows[2]["kl_value"] == ""


def _without_timing(rows):
    return {r.config_hash: {k: v for k, v in r.result.items() if k != "elapsed_s"} for r in rows}


def test_the_dask_executor_writes_the_same_table_as_the_local_one(tmp_path):
    """Issue 13: points as independent Dask tasks streamed into the same resumable table, value for value."""
    from distributed import Client, LocalCluster

    configs = (grid(["2gram:2gram-pruned"], [3], [1, 2, 3]) + grid(["3gram"], [12], [2, 4], method="mc", samples=20)
               + grid(["interval"], [10], [2, 4]))
    local = run_sweep(configs, tmp_path / "local.jsonl")
    with LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        first = run_sweep(configs[:4], tmp_path / "dask.jsonl", executor="dask", client=client)
        rest = run_sweep(configs, tmp_path / "dask.jsonl", executor="dask", client=client)  # resumes
    assert local.computed == 7 and (first.computed, rest.computed, rest.skipped) == (4, 3, 4)
    local_rows, bad = read_table(tmp_path / "local.jsonl")
    dask_rows, bad2 = read_table(tmp_path / "dask.jsonl")
    assert not bad and not bad2 and len(dask_rows) == 7
    assert _without_timing(dask_rows) == _without_timing(local_rows)


_DIES_ONCE = """
import os, sys
from pathlib import Path

def evaluate(cfg, marks=Path(sys.argv[2])):
    (marks / f"start-{cfg.n_steps}-{os.getpid()}").touch()
    if cfg.n_steps == 3 and not (marks / "died").exists():
        (marks / "died").write_text(str(os.getpid()))
        os._exit(1)  # the worker process dies mid-point
    return {"value": cfg.length * 1000 + cfg.n_steps}

if __name__ == "__main__":  # the workers re-import this file: only the client imports the engine
    from distributed import Client, LocalCluster
    from validation.sweep import grid, run_sweep

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
            Client(cluster) as client:
        report = run_sweep(grid(["2gram"], [4], [1, 2, 3, 4], method="mc", samples=10), sys.argv[1],
                           evaluate=evaluate, executor="dask", client=client)
    print(report.computed)
"""


def test_a_point_whose_dask_worker_dies_is_retried_and_the_table_stays_whole(tmp_path):
    script, marks, out = tmp_path / "dies_once.py", tmp_path / "marks", tmp_path / "t.jsonl"
    script.write_text(_DIES_ONCE)
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, str(script), str(out), str(marks)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "4" and (marks / "died").exists()
    runs: dict[str, list[str]] = {}
    for p in marks.glob("start-*"):
        runs.setdefault(p.name.split("-")[1], []).append(p.name.split("-")[2])
    dead = (marks / "died").read_text()
    assert sorted(runs) == ["1", "2", "3", "4"] and len(runs["3"]) == 2
    # a point runs again only when the dead worker held it (mid-point, or finished but not yet fetched)
    assert all(len(pids) == 1 or (len(pids) == 2 and dead in pids) for pids in runs.values()), runs
    rows, bad = read_table(out)
    assert not bad and sorted(r.result["value"] for r in rows) == [4001, 4002, 4003, 4004]


def test_cli_sweep_on_a_dask_scheduler(tmp_path):
    from distributed import LocalCluster

    args = ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "1,2", "--out", str(tmp_path / "t.jsonl"), "--json"]
    bad = CliRunner().invoke(main, [*args, "--scheduler", "tcp://127.0.0.1:1"])
    assert bad.exit_code == 2 and "--executor dask" in bad.stdout
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None) as cluster:
        r = CliRunner().invoke(main, [*args, "--executor", "dask", "--scheduler", cluster.scheduler_address])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["computed"] == 2 and len(read_table(tmp_path / "t.jsonl")[0]) == 2


# Config dicts and hashes written by the code before `steps` was renamed `n_steps` and the tie seed
# became an option (commit 95f339f), recorded here literally: old tables must stay resumable.
_OLD_ROWS = [
    ({"language": "2gram", "length": 8, "steps": 4, "schedule": "linear", "method": "mc", "samples": 10, "seed": 0,
      "ser_language": None, "batch_size": 1}, "61321075578e0123"),
    ({"language": "2gram", "length": 4, "steps": 2, "schedule": "linear", "method": "auto", "samples": 1000, "seed": 0,
      "ser_language": None, "batch_size": 1, "sampler": "topk", "gamma": None, "confidence": "maxprob"},
     "c955aad5b19728c4"),
    ({"language": "interval", "length": 10, "steps": 3, "schedule": "linear", "method": "auto", "samples": 1000,
      "seed": 0, "ser_language": None, "batch_size": 1, "sampler": "threshold", "gamma": 0.9, "confidence": "margin"},
     "86f7416a16b1a7e7"),
]


@pytest.mark.parametrize("old, old_hash", _OLD_ROWS)
def test_an_old_table_row_still_matches_its_hash_and_is_skipped(tmp_path, old, old_hash):
    """The rename steps -> n_steps and the tie_seed option keep every old config hash (tables resume)."""
    from numerics.provenance import config_hash, to_jsonable
    from validation.sweep import SweepRow, _append_row, _row_hash

    cfg = PointConfig.from_dict(old)
    assert cfg.n_steps == old["steps"] and cfg.tie_seed == 0
    assert to_jsonable(cfg.as_dict()) == old and config_hash(cfg.as_dict()) == old_hash
    out = tmp_path / "old.jsonl"
    _append_row(out, SweepRow(old, old_hash, {"value": 1}, _row_hash(old, {"value": 1})))
    calls: list = []
    report = run_sweep([cfg], out, evaluate=fake_evaluate(calls))
    assert report.skipped == 1 and report.computed == 0 and calls == []
    if cfg.sampler != "random":  # another tie seed is another point
        assert config_hash(replace(cfg, tie_seed=3).as_dict()) != old_hash


def test_every_flat_row_carries_the_sampler_and_its_tie_seed(tmp_path):
    from validation.tables import flatten_point

    cfg = PointConfig("2gram", 3, 2, sampler="topk", tie_seed=2)
    result = evaluate_point(cfg)
    flat = flatten_point(cfg.as_dict(), json.loads(json.dumps(result, default=float)))
    assert flat["tie_seed"] == 2 and flat["sampler_name"].startswith("topk")
    assert flat["kl_value"] == flat["kl_chain_rule_value"] or math.isclose(flat["kl_value"], flat["kl_chain_rule_value"],
                                                                            rel_tol=1e-12)


#: Configs with their config hash and first ``rng("kl")`` draw as 18407ad computed them (printed by that
#: commit's ``PointConfig``, before the decoder options became one ``options`` mapping): old tables and
#: their random streams must resolve unchanged.
OLD_HASHES = [
    (dict(language="2gram", length=8, n_steps=4), "ab8899132533e5c5", 497817295262809659),
    (dict(language="2gram", length=8, n_steps=4, sampler="topk", confidence="margin", block_length=4),
     "a5060adab62c43c0", 2602755054084978078),
    (dict(language="2gram", length=8, n_steps=1, sampler="threshold", gamma=0.7, tie_seed=3),
     "e0bed5f56b0aad92", 3067979837194756069),
    (dict(language="2gram", length=8, n_steps=4, sampler="llada", block_length=4, remasking="random", temperature=0.5),
     "70e47f770c35fed7", 1936005247965602210),
    (dict(language="2gram", length=8, n_steps=1, sampler="fast-dllm", threshold=0.9), "5b9e16c7da2e7c41",
     3376108860196976506),
    (dict(language="2gram", length=8, n_steps=1, sampler="fast-dllm", factor=1.5, temperature=0.0),
     "16c17b03884044b6", 459636346870318409),
    (dict(language="2gram", length=8, n_steps=1, sampler="eb", gamma=0.5, block_length=2), "92c4d9897217ed30",
     4329175835330801067),
    (dict(language="2gram", ser_language="2gram-pruned", length=8, n_steps=4, sampler="remdm", remdm_variant="rescale",
          eta=0.3, schedule="cosine"), "aa99f24abce5e2b2", 1346382876262976792),
]


@pytest.mark.parametrize("kwargs, old_hash, old_draw", OLD_HASHES, ids=lambda v: str(v)[:40])
def test_point_config_hashes_and_streams_as_before_the_options_mapping(kwargs, old_hash, old_draw):
    from numerics.provenance import config_hash, to_jsonable

    cfg = PointConfig(**kwargs)
    assert config_hash(to_jsonable(cfg.as_dict())) == old_hash
    assert cfg.rng("kl").integers(0, 2**62) == old_draw
    assert PointConfig.from_dict(cfg.as_dict()) == cfg  # a stored row's flat config resolves to the same point
    opts = {k: v for k, v in kwargs.items() if k in DECODER_FIELDS}
    rest = {k: v for k, v in kwargs.items() if k not in DECODER_FIELDS}
    assert PointConfig(**rest, options=opts) == cfg  # the mapping and the flat keywords are one config


def test_point_config_options_replace_pickle_and_one_build():
    import dataclasses
    import pickle

    cfg = PointConfig("2gram", 8, 4, sampler="llada", block_length=4)
    assert cfg.block_length == 4 and cfg.eta is None and dict(cfg.options) == {"block_length": 4}
    assert cfg.make_sampler() is cfg.make_sampler()  # built once, in the constructor
    wider = dataclasses.replace(cfg, block_length=None, temperature=0.5)
    assert dict(wider.options) == {"temperature": 0.5} and wider.make_sampler().block_length is None
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and back.make_sampler() == cfg.make_sampler()
    with pytest.raises(TypeError, match="unknown option"):
        PointConfig("2gram", 8, 4, treshold=0.5)
    with pytest.raises(ValueError, match="apply to the decoders"):
        PointConfig("2gram", 8, 4, eta=0.5)
    with pytest.raises(ValueError, match="the llada decoder does not take eta"):
        PointConfig("2gram", 8, 4, sampler="llada", eta=0.5)


def test_sweep_takes_a_comma_list_of_every_sampler_option(tmp_path):
    """Issue 34: an option a sweep varies is a comma list; the grid is crossed with every combination and
    each row's flat copy carries each option in its own column."""
    import pyarrow.parquet as pq

    out = tmp_path / "t.jsonl"
    r = CliRunner().invoke(main, ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "1", "--sampler", "threshold",
                                  "--gamma", "0.5,0.7", "--confidence", "maxprob,margin", "--block-length", "1,3",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    got = sorted((row["gamma"], row["confidence"], row["block_length"]) for row in rows)
    assert got == sorted((g, c, b) for g in (0.5, 0.7) for c in ("maxprob", "margin") for b in (1, 3))
    bad = CliRunner().invoke(main, ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "1", "--sampler", "llada",
                                    "--remasking", "low-confidence,lowest", "--out", str(tmp_path / "u.jsonl")])
    assert bad.exit_code == 2 and "'lowest' is not one of" in bad.output and not (tmp_path / "u.jsonl").exists()
