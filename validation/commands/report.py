"""``mdm-theory report`` (the proof-companion report) and ``mdm-theory docs`` (the docs site)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from validation.setup_text import MAKE_REPORT_MINUTES

from ._common import emit, json_option, progress_option, show_progress

__all__ = ["COMMANDS"]


_REPORT_HELP = f"""Run the experiments that are missing from the cache and write the HTML report.

The default is sized for a 2-core CPU: with --train (as `make report` runs it) about
{MAKE_REPORT_MINUTES} minutes from an empty cache. A re-run or an interrupted run resumes from
the cache. Exit status 1 if an experiment or a part of one raised (the report is written all the
same and shows the traceback).
"""


@click.command("report", help=_REPORT_HELP)
@click.option("--full", "scale", flag_value="full", help="Paper scale (GPU-sized sweeps; hours on a CPU).")
@click.option("--tiny", "scale", flag_value="tiny", hidden=True, help="Seconds-sized smoke run (tests).")
@click.option("--default", "scale", flag_value="default", default=True, hidden=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("report"),
              show_default=True, help="Folder of the report (index.html, figures/, results/).")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder of computed points  [default: OUT/cache].")
@click.option("--only", multiple=True, type=click.Choice(["ter", "ser", "lemmas", "learned", "cost", "schedules", "adaptive", "realtext", "decoders", "calls",
                                                          "thresholds", "runtimes", "lossless", "noise"]),
              help="Run only this experiment (repeatable).")
@click.option("--checkpoint", "checkpoints", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A trained model checkpoint to evaluate against the oracle (repeatable).")
@click.option("--train", type=click.Choice(["default", "all"]), is_flag=False, flag_value="default", default=None,
              help="Train MDMs and AR baselines first (cached): --train for 2gram and interval, "
                   "--train all for every paper language; either also trains the real-text section's models "
                   "(lee-char-2gram; with --full also lee-word-v64-2gram).")
@click.option("--strict", is_flag=True, help="Stop at the first experiment that raises (default: report it).")
@click.option("-j", "--jobs", type=click.IntRange(1), default=1, show_default=True,
              help="Sections run at once (worker processes) after the learned section; make report uses 2.")
@progress_option
@json_option
def report_cmd(scale: str, out_dir: Path, cache_dir: Path | None, only: tuple[str, ...],
               checkpoints: tuple[str, ...], train: str | None, strict: bool, jobs: int, progress: bool | None,
               as_json: bool) -> None:
    """``mdm-theory report`` (help text: ``_REPORT_HELP``)."""
    from validation.guards import guard_output
    from validation.report import build_report

    guard_output(out_dir / "index.html", "report page", option="--out")  # never over another program's page
    _writable_folder(out_dir, "--out")  # before anything is computed
    if cache_dir is not None:
        _writable_folder(cache_dir, "--cache")
    overrides: dict[str, dict] = {}
    if checkpoints or train:
        paths = tuple(str(Path(c).resolve()) for c in checkpoints)
        overrides["learned"] = {"checkpoints": paths, "train": train or ""}
        if train:  # the real-text section's small MDM and AR models (validation/experiments/realtext_learned.py)
            overrides["realtext"] = {"train": True}
        if paths:
            from validation.experiments._engine import checkpoint_kind

            kinds: dict[str, list[str]] = {}
            for p in paths:
                kinds.setdefault(checkpoint_kind(p), []).append(p)
            if kinds.get("mdm") and kinds.get("ar"):  # time the first MDM against the first AR model
                overrides["cost"] = {"mdm_checkpoint": kinds["mdm"][0], "ar_checkpoint": kinds["ar"][0]}
    outcome = build_report(out_dir, scale=scale, cache_dir=cache_dir, only=only or None, overrides=overrides,
                           progress=show_progress(progress), strict=strict, jobs=jobs)
    summary = {
        "index": str(outcome.index),
        "scale": scale,
        "experiments": {n: {"status": r.status, "missing": r.missing, "elapsed_s": r.elapsed_s}
                        for n, r in outcome.results.items()},
        "errors": sorted(outcome.errors),
        "cache": outcome.cache_counts,
    }
    lines = [f"report: {outcome.index}"] + [
        f"  {n:8s} {r.status:12s} {r.elapsed_s:7.1f} s" + (f"  ({len(r.missing)} parts missing)" if r.missing else "")
        for n, r in outcome.results.items()]
    emit(summary, as_json, "\n".join(lines))
    if outcome.errors or any(r.errors for r in outcome.results.values()):
        sys.exit(1)


def _writable_folder(folder: Path, option: str) -> None:
    """Create ``folder`` (and its parents) or refuse it, naming the file in the way or the missing permission."""
    import os

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file, not a folder" if blocker is not None else (exc.strerror or str(exc))
        raise click.BadParameter(f"cannot create {folder}: {why}", param_hint=option) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{folder} is not writable", param_hint=option)


@click.command("docs")
@click.option("--docs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("docs"), show_default=True,
              help="The MkDocs source folder (generated pages go to theory/ and cli.md inside it).")
@click.option("--build/--no-build", default=False, show_default=True, help="Then run `mkdocs build --strict`.")
@click.option("--site", "site_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("site"),
              show_default=True, help="Output folder of the built site.")
@click.option("--check-instances", type=click.IntRange(min=0), default=60, show_default=True,
              help="Generated instances per lemma for its check plot (0: no plots).")
@json_option
def docs_cmd(docs_dir: Path, build: bool, site_dir: Path, check_instances: int, as_json: bool) -> None:
    """Generate the per-lemma pages (from the theory registry) and the CLI reference; optionally build."""
    from validation.docs import build_site, generate_docs

    written = generate_docs(docs_dir, check_instances=check_instances)
    result = {"written": [str(p) for p in written]}
    if build:
        result["site"] = str(build_site(docs_dir.parent / "mkdocs.yml", site_dir))
    emit(result, as_json, "\n".join([f"wrote {p}" for p in written] + ([f"site: {result['site']}"] if build else [])))


COMMANDS = [report_cmd, docs_cmd]
