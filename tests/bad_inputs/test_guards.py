"""Issue 19's classes of bad input, per subcommand: data lost, silent wrong answers, hangs and
memory blow-ups, tracebacks and unclear messages.

Every case is refused before anything is computed or written (:func:`tests.bad_inputs._helpers.refused`:
``--json`` error object and text, non-zero exit, no traceback); the data-loss cases also check the
file that was in the way is byte for byte what it was. Sizes that drive memory are refused against
a machine of :data:`MACHINE_GIB` (``MDM_THEORY_MEMORY_GIB``), so the refusals do not depend on the
machine the suite runs on. The SIGTERM training case is in ``test_killed_runs.py``, the checkpoint
cases (NaN weights, a malicious pickle) in ``test_checkpoints.py``.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from tests.bad_inputs._helpers import invoke, refused
from tests.strict_json import strict_json
from validation.guards import GuardError, check_increasing, guard_output

MACHINE_GIB = 16  # the machine the size refusals are computed against (half of it is the limit)

HMM = {"initial": np.array([0.5, 0.5]), "transition": np.array([[0.9, 0.1], [0.2, 0.8]]),
       "emission": np.array([[0.7, 0.3], [0.4, 0.6]])}
NGRAM = {"order": np.int64(2), "initial": np.array([0.5, 0.5]), "conditional": np.array([[0.9, 0.1], [0.2, 0.8]])}


@pytest.fixture(autouse=True)
def sixteen_gib(monkeypatch):
    monkeypatch.setenv("MDM_THEORY_MEMORY_GIB", str(MACHINE_GIB))
    monkeypatch.delenv("MDM_THEORY_MAX_SECONDS", raising=False)  # the default one-hour Monte Carlo limit


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Files in the way of outputs, and language files that cannot mean one thing."""
    d = tmp_path_factory.mktemp("guards")
    (d / "notes.txt").write_text("my notes: do not lose them\n")
    (d / "link.jsonl").symlink_to(d / "notes.txt")
    (d / "data.json").write_text(json.dumps({"mine": [1, 2, 3]}))
    (d / "table.csv").write_text("a,b\n1,2\n")
    np.savez(d / "lang.npz", **HMM)
    np.savez(d / "both.npz", **HMM, order=np.int64(2), conditional=NGRAM["conditional"])
    np.savez(d / "order_1e5.npz", **{**NGRAM, "order": np.int64(10**5)})
    np.savez(d / "order_1e18.npz", **{**NGRAM, "order": np.int64(10**18)})
    header = io.BytesIO()  # a member whose .npy header declares 10^6 x 10^6 float64 (7.3 TiB), with no data
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    with zipfile.ZipFile(d / "huge_header.npz", "w") as z:
        for key in ("initial", "emission"):
            buf = io.BytesIO()
            np.save(buf, HMM[key])
            z.writestr(f"{key}.npy", buf.getvalue())
        z.writestr("transition.npy", header.getvalue() + b"\0" * 64)
    rng = np.random.default_rng(0)  # a dense 400-state HMM: 160000 multiply-adds per message step
    transition, emission = rng.random((400, 400)), rng.random((400, 4))
    np.savez(d / "hmm400.npz", initial=np.full(400, 1 / 400), transition=transition / transition.sum(1, keepdims=True),
             emission=emission / emission.sum(1, keepdims=True))
    (d / "bad_table.jsonl").write_text(json.dumps({"config": {}, "config_hash": "0", "result": {}, "row_hash": "0"}) + "\n")
    (d / "bad_link.jsonl").symlink_to(d / "bad_table.jsonl")
    (d / "report").mkdir()
    (d / "report" / "index.html").write_text("<html><title>my own page</title></html>\n")
    (d / "run").mkdir()
    (d / "run" / "metrics.json").write_text(json.dumps({"loss": 0.5}))
    return d


SWEEP = ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2"]

# (id, args, pattern, file that must be left as it was or None); {d} is the folder of `files`
DATA_LOST = [
    ("sweep over a text file with --drop-bad-rows", [*SWEEP, "--drop-bad-rows", "--out", "{d}/notes.txt"],
     r"--out .*notes\.txt exists and is not an mdm-theory sweep table .*a text file", "notes.txt"),
    ("sweep through a symlink to a text file", [*SWEEP, "--drop-bad-rows", "--out", "{d}/link.jsonl"],
     r"through the symbolic link .*link\.jsonl -> .*notes\.txt\) exists and is not an mdm-theory sweep table",
     "notes.txt"),
    ("sweep over its input language", ["sweep", "--languages", "{d}/lang.npz", "--lengths", "3", "-N", "2",
                                       "--out", "{d}/lang.npz"],
     r"--out .*lang\.npz is the same file as the input --language", "lang.npz"),
    ("sweep whose CSV copy is another file", [*SWEEP, "--out", "{d}/table.jsonl"],
     r"table\.csv exists and is not the CSV copy of a sweep table", "table.csv"),
    ("bench sweep over a text file", ["bench", "sweep", "--quick", "--presets", "2gram", "--out", "{d}/notes.txt"],
     r"is not an mdm-theory sweep table", "notes.txt"),
    ("export over a text file", ["languages", "export", "2gram", "{d}/notes.txt"],
     r"FILE .*notes\.txt exists and is not a language \.npz file", "notes.txt"),
    ("counterexamples over another JSON", ["counterexamples", "--lemma", "A.1", "--budget", "1", "--out", "{d}/data.json"],
     r"data\.json exists and is not an mdm-theory counterexamples file .*a JSON object of another program", "data.json"),
    ("report over another page", ["report", "--tiny", "--only", "lemmas", "--out", "{d}/report"],
     r"index\.html exists and is not an mdm-theory report page", "report/index.html"),
    ("train over another metrics.json", ["train", "--language", "2gram", "--config", "tiny", "--train-steps", "1",
                                         "--out", "{d}/run"], r"metrics\.json exists and is not an mdm-theory", "run/metrics.json"),
]

WRONG_ANSWERS = [
    ("language file with both HMM and n-gram keys", ["exact", "--language", "{d}/both.npz", "-L", "3", "-N", "2"],
     r"holds both an HMM .* and an n-gram .*ambiguous"),
    ("both kinds of keys for languages", ["languages", "--language", "{d}/both.npz"], r"holds both an HMM"),
    ("SER language of another vocabulary", ["exact", "--language", "2gram", "--ser-language", "interval", "-L", "3",
                                            "-N", "2"], r"--ser-language: interval has a vocabulary of 16 tokens, but 2gram"),
    ("an A:B pair of two vocabularies", ["sweep", "--languages", "2gram:interval", "--lengths", "3", "-N", "2",
                                         "--out", "{d}/pair.jsonl"], r"--language A:B: interval has a vocabulary"),
    ("sweep -N with a repeat and disorder", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "16,4,4,8",
                                             "--out", "{d}/t.jsonl"], r"-N is not increasing: 4 comes after 16 .*-N 4,8,16\?"),
    ("sweep -N with a repeat", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "2,4,4", "--out", "{d}/t.jsonl"],
     r"-N lists 4 twice .*did you mean -N 2,4\?"),
    ("sweep --lengths out of order", ["sweep", "--languages", "2gram", "--lengths", "8,4", "-N", "2",
                                      "--out", "{d}/t.jsonl"], r"-L is not increasing"),
    ("evaluate --steps with a repeat", ["evaluate", "{d}/lang.npz", "--steps", "4,2,2"], r"-N is not increasing"),
    ("bench sampling -N out of order", ["bench", "sampling", "--config", "tiny", "-N", "8,4"], r"-N is not increasing"),
    ("SER target above 1", ["steps-needed", "--language", "2gram", "-L", "3", "--metric", "ser", "--target", "1.5"],
     r"--target 1\.5 is outside SER's range \[0, 1\]: every sampler meets it at N = 1"),
    ("SER target above 1 for a checkpoint's search", ["steps-needed", "--checkpoint", "{d}/lang.npz", "--metric", "ser",
                                                      "--target", "2"], r"--target 2\.0 is outside SER's range"),
]

HANGS = [
    ("n-gram order 10^18", ["exact", "--language", "{d}/order_1e18.npz", "-L", "3", "-N", "2"],
     r"expected V\^\(n-1\) = 2\^999999999999999999 rows .*does not fit a table of 2 rows"),
    ("ellipsis to 2^40 (arithmetic count)", ["sweep", "--languages", "2gram", "--lengths", "3", "-N",
                                             "8,16,...,1099511627775", "--out", "{d}/t.jsonl"],
     r"neither a doubling pattern nor an arithmetic one of at most 10000 values \(it would list 137438953471\)"),
    ("-N doubling to 2^40", ["sweep", "--languages", "2gram", "--lengths", "3", "-N", "8,16,...,1099511627776",
                             "--out", "{d}/t.jsonl"], r"-N 33554432 is too many steps: a schedule holds at most N = 16777216"),
    ("C.1 at L = 10^6 in rationals", ["bounds", "--lemma", "C.1", "--L", "1000000", "--N", "1000"],
     r"C\.1 at L = 1000000 runs the multiplicity recursion .*use --length up to 1000"),
    ("C.5 at l = 2000", ["bounds", "--lemma", "C.5", "--l", "2000", "--N", "10"],
     r"C\.5 at l = 2000 runs the multiplicity recursion .*use --l up to 1000"),
    ("C.1 at L = 500, N = 1000 in rationals", ["bounds", "--lemma", "C.1", "--L", "500", "--N", "1000"],
     r"in exact rationals at L = 500 with 1000 step probabilities: .*add --float"),
    ("Monte Carlo on a 400-state HMM at L = 1024", ["exact", "--language", "{d}/hmm400.npz", "-L", "1024", "-N", "16"],
     r"Monte Carlo on .*hmm400\.npz \(400 states, W = 160000 multiply-adds .*\) at L = 1024 with 1000 samples would take "
     r"about [0-9.]+ h on one thread .*use fewer --samples \([0-9]+ fit the limit\).*MDM_THEORY_MAX_SECONDS"),
    ("an adaptive rule's Monte Carlo on it", ["exact", "--language", "{d}/hmm400.npz", "-L", "1024", "-N", "16",
                                              "--sampler", "topk"], r"Monte Carlo of an adaptive rule on .* would take about"),
    ("a sweep with one such point, refused before the first", ["sweep", "--languages", "2gram,{d}/hmm400.npz", "--lengths",
                                                             "1024", "-N", "16", "--out", "{d}/t.jsonl"],
     r"point .*hmm400\.npz L = 1024 N = 16: Monte Carlo on .* would take about"),
    ("steps-needed on it", ["steps-needed", "--language", "{d}/hmm400.npz", "-L", "1024", "--metric", "ser",
                            "--target", "0.1"], r"Monte Carlo on .*hmm400\.npz .* would take about"),
    ("forward-backward with 10^5 states", ["bench", "forward-backward", "--states", "100000"],
     # 24 S^2 + 16 B L S bytes = 2.4e11 + 1.64e11 = 376 GiB
     (r"bench forward-backward \(100000 states, L = 512, batch 200\) needs about 376 GiB of memory, more than "
      r"this machine's limit of 8 GiB \(50% of 16 GiB\); use fewer --states")),
    ("sampling at L = 10^8, batch 1000", ["bench", "sampling", "--config", "tiny", "-L", "100000000", "--batch", "1000"],
     r"sampling the mdm model \(batch 1000 x L = 100000000.*GiB of memory.*use a smaller --batch or -L"),
    ("train at L = 10^8", ["train", "--language", "2gram", "--config", "tiny", "-L", "100000000", "--out", "{d}/big"],
     r"the training data set \(512 \+ 64 sequences of L = 100000000\) needs about 858 GiB.*use a smaller -L"),
    ("train at batch 10^6", ["train", "--language", "2gram", "--config", "tiny", "--batch-size", "1000000",
                             "--n-train", "1000000", "--out", "{d}/big"], r"one training step .*GiB of memory"),
]

MESSAGES = [
    ("bench sampling batch 10^7 (was a traceback)", ["bench", "sampling", "--config", "tiny", "--batch", "10000000"],
     r"sampling the mdm model \(batch 10000000 x L = 8.*needs about 320 GiB"),
    ("n-gram order 10^5 (was an int-string error)", ["exact", "--language", "{d}/order_1e5.npz", "-L", "3", "-N", "2"],
     r"expected V\^\(n-1\) = 2\^99999 rows"),
    (".npy header of 10^6 x 10^6", ["exact", "--language", "{d}/huge_header.npz", "-L", "3", "-N", "2"],
     r"huge_header\.npz': array 'transition' declares shape \(1000000, 1000000\) of float64 \(7\.45e\+03 GiB\).*not read"),
    (".npy header for train", ["train", "--language", "{d}/huge_header.npz", "--config", "tiny", "--out", "{d}/r2"],
     r"array 'transition' declares shape"),
    ("a symlinked table with a bad row names --drop-bad-rows", [*SWEEP, "--out", "{d}/bad_link.jsonl"],
     r"bad_table\.jsonl: 1 bad row\(s\): line 1: config does not hash .*rerun with --drop-bad-rows(?!.*on_bad_rows)"),
    ("evaluate CKPT --out CKPT (the checkpoint replaced by JSON)",
     ["evaluate", "{d}/lang.npz", "--out", "{d}/lang.npz"], r"--out .*lang\.npz is the same file as the input CHECKPOINT"),
]

CASES = {"data lost": DATA_LOST, "silent wrong answer": WRONG_ANSWERS, "hang or memory": HANGS,
         "traceback or unclear message": MESSAGES}


def _args(args, d):
    return [a.replace("{d}", str(d)) for a in args]


@pytest.mark.parametrize("args, pattern, kept", [c[1:] for c in DATA_LOST], ids=[c[0] for c in DATA_LOST])
def test_no_command_writes_over_a_file_of_another_kind(files, args, pattern, kept):
    before = (files / kept).read_bytes()
    listing = sorted(p.name for p in files.rglob("*"))
    error = refused(_args(args, files), pattern)
    assert error["type"] == "GuardError" or "is not an mdm-theory" in error["message"] or "same file" in error["message"]
    assert (files / kept).read_bytes() == before
    assert sorted(p.name for p in files.rglob("*")) == listing  # nothing new: no table, no lock, no flat copy


@pytest.mark.parametrize("args, pattern", [c[1:] for c in WRONG_ANSWERS + HANGS + MESSAGES],
                         ids=[c[0] for c in WRONG_ANSWERS + HANGS + MESSAGES])
def test_an_input_that_cannot_mean_what_was_typed_is_refused(files, args, pattern):
    refused(_args(args, files), pattern)


def test_every_class_covers_the_subcommands_it_applies_to():
    """The count the issue asks for: cases per class, and the subcommands each class reaches."""
    def command(args):
        return " ".join(args[:2]) if args[0] in ("bench", "languages") and args[1] in (
            "sweep", "sampling", "forward-backward", "export") else args[0]

    reached = {name: {command(c[1]) for c in cases} for name, cases in CASES.items()}
    assert reached["data lost"] >= {"sweep", "bench sweep", "languages export", "counterexamples", "report", "train"}
    assert reached["silent wrong answer"] >= {"exact", "sweep", "evaluate", "steps-needed", "languages", "bench sampling"}
    assert reached["hang or memory"] >= {"exact", "sweep", "bounds", "bench forward-backward", "bench sampling", "train",
                                         "steps-needed"}
    assert reached["traceback or unclear message"] >= {"bench sampling", "exact", "train", "sweep", "evaluate"}


def test_the_same_file_a_sweep_wrote_is_its_own_kind_and_is_resumed(tmp_path):
    """The guard lets a command write over its own output: a sweep table, an exported language."""
    table = tmp_path / "t.jsonl"
    assert invoke([*SWEEP, "--out", table, "--json"]).exit_code == 0
    r = invoke([*SWEEP[:-1], "2,3", "--out", table, "--json"])
    assert r.exit_code == 0, r.output
    assert strict_json(r.stdout)["skipped"] == 1
    out = tmp_path / "2gram.npz"
    for _ in range(2):
        assert invoke(["languages", "export", "2gram", out]).exit_code == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")  # an empty file holds nothing to lose
    assert invoke([*SWEEP, "--out", empty, "--json"]).exit_code == 0


def test_guard_output_and_check_increasing_directly(tmp_path):
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(GuardError, match=r"--out .*x\.txt exists and is not an mdm-theory evaluate result"):
        guard_output(tmp_path / "x.txt", "evaluation")
    assert guard_output(tmp_path / "new.json", "evaluation") == tmp_path / "new.json"
    assert check_increasing([2, 4, 8], "-N") == [2, 4, 8]
    with pytest.raises(GuardError, match=r"did you mean -N 2,4,8\?"):
        check_increasing([8, 2, 4], "-N")
