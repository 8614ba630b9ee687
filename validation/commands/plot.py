"""``mdm-theory plot``: draw a sweep table or a calibrate result (:mod:`validation.plot`)."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import emit, json_option

__all__ = ["plot_cmd"]


@click.command("plot")
@click.argument("results", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--x", "x", required=True, help="Column on the x axis (e.g. calls, n_steps, length).")
@click.option("--y", "y", required=True, help="Column on the y axis (e.g. ser, kl, ter; an estimate gets error bars).")
@click.option("--by", default="", help="Comma-separated columns: one labelled series per combination "
                                        "(e.g. sampler,block_length).")
@click.option("--logx", is_flag=True, help="x on a log2 scale.")
@click.option("--logy", is_flag=True, help="y on a log scale.")
@click.option("--title", default=None, help="Title of the figure.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output stem: STEM.png and STEM.svg  [default: RESULTS without its suffix, then _Y_vs_X].")
@json_option
def plot_cmd(results: Path, x: str, y: str, by: str, logx: bool, logy: bool, title: str | None, out: Path | None,
             as_json: bool) -> None:
    """Draw any sweep table (.jsonl) or calibrate result (calibrate --json) as PNG and SVG, with matplotlib.

    Each row's estimates are plotted with their intervals as error bars (exact values have none);
    --by splits the rows into labelled series; the caption under the figure names the methods, the
    Monte Carlo sample counts and what the bars are. An existing output is replaced only if this
    command wrote it.
    """
    import io

    import matplotlib.pyplot as plt

    from numerics.provenance import atomic_write_bytes
    from validation.guards import guard_output
    from validation.plot import CREATOR, load_rows, plot_rows

    stem = out if out is not None else results.with_name(f"{results.stem}_{y}_vs_{x}")
    paths = {ext: stem.with_name(f"{stem.name}.{ext}") for ext in ("png", "svg")}
    for p in paths.values():
        guard_output(p, "plot figure", option="--out", inputs={"RESULTS": results})
    columns = [b.strip() for b in by.split(",") if b.strip()]
    try:
        rows = load_rows(results)
        fig, caption = plot_rows(rows, x, y, columns, logx=logx, logy=logy, title=title)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        for ext, p in paths.items():
            buffer = io.BytesIO()
            meta = {"Software": CREATOR} if ext == "png" else {"Creator": CREATOR, "Date": None}
            fig.savefig(buffer, format=ext, dpi=120, metadata=meta)
            atomic_write_bytes(p, buffer.getvalue())
    finally:
        plt.close(fig)
    result = {"png": str(paths["png"]), "svg": str(paths["svg"]), "rows": len(rows), "caption": caption}
    emit(result, as_json, f"wrote {paths['png']} and {paths['svg']} ({len(rows)} rows)\n{caption}")


COMMANDS = [plot_cmd]
