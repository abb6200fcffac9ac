"""``ccarena report``, ``ccarena plot`` and ``ccarena compare``: draw stored experiments again,
any metric against any swept parameter, or two experiments side by side (no simulation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ccarena.cli.console import stderr, stdout
from ccarena.cli.output import print_store_warnings, print_summary, print_wide
from ccarena.errors import UserError


def stop_report_workers(pool: Any, workers: Any) -> None:
    """Stop the report's processes at once after a failure (a damaged store, Ctrl-C), so the
    command exits without waiting for them: ``pool``, spawned by
    :func:`ccarena.report.report_pool.spawn_for` and not yet handed to the workers, and
    ``workers``, from :func:`ccarena.report.html.start_workers`; either may be None (not
    started, or handed over)."""
    from ccarena.report.report_pool import stop_now

    stop_now(pool)
    if workers is not None:
        workers.stop()


def report(
    directory: Path = typer.Argument(..., help="Experiment directory (holds experiment.json)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Where to write the HTML [default: DIRECTORY/report.html]."),
    wide: bool = typer.Option(False, "--wide", help="Show every summary column, however wide."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of a table."),
    formats: str = typer.Option("png", "--formats", help="Figure files: comma-separated png, svg, "
                                                         "pdf (the page embeds the PNGs)."),
) -> None:
    """Rebuild report.html and figures/ from stored results (no simulation).

    Example:

      ccarena report results/quickstart
    """
    from ccarena.report.formats import parse_formats
    from ccarena.report.report_pool import spawn_for
    from ccarena.store.file_formats import check_output_file

    figure_formats = parse_formats(formats)
    pool = workers = None
    if (directory / "experiment.json").is_file():
        # The output is checked before any worker starts (a mistake ends at once); then the
        # workers the report draws with are spawned: their imports (matplotlib, pandas) run
        # beside this process's, and they draw while the summary is printed.
        check_output_file(output if output is not None else directory / "report.html",
                          "--output" if output is not None else "report")
        pool = spawn_for(directory)
    try:
        from ccarena.report import write_report
        from ccarena.report.html import start_workers
        from ccarena.results import Result

        result = Result(directory)
        check_output_file(output if output is not None else result.root / "report.html",
                          "--output" if output is not None else "report")
        result.require_runs()
        workers, pool = start_workers(result, output, figure_formats, pool=pool), None
        print_store_warnings(result)
        print_summary(result, wide, as_json)
    except BaseException:
        stop_report_workers(pool, workers)
        raise
    path = write_report(result, output, formats=figure_formats, workers=workers)
    print_store_warnings(result)
    (stderr if as_json else stdout).print(f"report: {path}", soft_wrap=True)


def plot(
    directory: Path = typer.Argument(..., help="Experiment directory (holds experiment.json)."),
    y: str = typer.Option("goodput", "--y", help="Metric: goodput, throughput, loss, retx, rtt, "
                                                  "rtt_p95, jain, stability, fct, slowdown, or any "
                                                  "summary column."),
    x: Optional[str] = typer.Option(None, "--x", help="Swept parameter (its path, or the path's "
                                                      "last part) or summary column [default: the "
                                                      "first swept parameter (a matrix's pair), "
                                                      "else flavor]."),
    hue: Optional[str] = typer.Option("flavor", "--hue", help="One colour per value of this column."),
    facet: Optional[str] = typer.Option(None, "--facet", help="One panel per value of this column."),
    kind: Optional[str] = typer.Option(None, "--kind", help="line, bar, box, cdf or heatmap "
                                                            "[default: line over a numeric x, "
                                                            "else bar]."),
    part: Optional[str] = typer.Option(None, "--part", help="Plot only this [[parts]] entry "
                                       "[default: one figure per part]."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Figure file without suffix "
                                       "[default: DIRECTORY/figures/plot-[PART-]Y-vs-X]."),
    formats: str = typer.Option("png", "--formats", help="Comma-separated: png, svg, pdf."),
) -> None:
    """Draw any stored metric against any swept parameter or column (no simulation). A matrix's
    runs are labelled by their pair (x = pair: "cubic vs reno"); an experiment with [[parts]]
    gets one figure per part (--part picks one).

    Examples:

      ccarena plot results/reno-vs-loss --y goodput --x loss

      ccarena plot results/matrix --y jain --x flavor --kind bar --formats png,pdf

      ccarena plot results/seed-004 --part matrix --y goodput

      ccarena plot results/dc --y fct --kind cdf
    """
    from ccarena.report import custom_plot, views
    from ccarena.results import Result
    from ccarena.store.file_formats import check_output_file

    fmts = custom_plot.parse_formats(formats)
    result = Result(directory, deep=False)  # the summary is what is drawn
    result.require_runs()
    summary = result.summary
    print_store_warnings(result)
    if not len(summary):
        raise UserError(f"{directory}: no finished runs to plot; run the scenario first")
    chosen = [v for v in views.select(result, part) if len(v.summary)]
    if not chosen:
        raise UserError(f"{directory}: no finished runs in part '{part}' to plot; run it first")
    if out is not None:  # a directory given as the figure's name is refused, not written beside
        check_output_file(out, "--out", example="plot")
    drawn = []
    for view in chosen:
        try:
            drawn.append(_plot_view(view, y, x, hue, facet, kind))
        except UserError as err:
            if len(chosen) == 1:
                raise
            raise UserError(f"{err} (or plot one part with --part NAME)") from None
    targets = []
    for view, (fig, slug) in zip(chosen, drawn):
        if out is not None:
            target = out if len(chosen) == 1 else out.with_name(f"{out.name}-{view.part}")
        else:
            prefix = f"{view.part}-" if len(chosen) > 1 or part else ""
            target = result.root / "figures" / f"plot-{prefix}{slug}"
        for fmt in fmts:  # every file checked before any is written
            check_output_file(target.with_suffix("." + fmt), "--out" if out is not None else "figure",
                              example="plot")
        targets.append(target)
    for (fig, _), target in zip(drawn, targets):
        for written in custom_plot.save_all(fig, target, fmts):
            print(f"figure: {written}", flush=True)


def _plot_view(view: Any, y: str, x: Optional[str], hue: Optional[str], facet: Optional[str],
               kind: Optional[str]) -> tuple[Any, str]:
    """The figure of ``ccarena plot`` for one part (a :class:`ccarena.report.views.View`) and
    the file-name slug ``Y-vs-X``."""
    from ccarena.report import custom_plot

    summary = view.summary
    where = f"part '{view.part}'" if view.part else "this experiment"
    y_col = custom_plot.resolve_column(summary, y, "--y", where)
    x_name = x or (view.parameters[0] if view.parameters else "flavor")
    x_col = custom_plot.resolve_column(summary, x_name, "--x", where) if kind != "cdf" else None
    if kind is None:  # a line needs numbers along x: flavors or labels are bars
        kind = custom_plot.default_kind(summary, x_col)
    hue_col = custom_plot.resolve_column(summary, hue, "--hue", where) if hue else None
    facet_col = custom_plot.resolve_column(summary, facet, "--facet", where) if facet else None
    title = f"{view.name}: {custom_plot.heading(y_col)}" + (f" vs {x_col}" if x_col else " (CDF)")
    fig = custom_plot.plot(summary, y_col, x_col, hue_col, facet_col, kind, title)
    slug = "".join(c if c.isalnum() else "_" for c in f"{y}-vs-{x_col or 'cdf'}")
    return fig, slug


def compare(
    dir_a: Path = typer.Argument(..., help="Experiment A (the reference)."),
    dir_b: Path = typer.Argument(..., help="Experiment B."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Directory for the overlay "
                                       "figures [default: DIR_B/compare]."),
    part: Optional[str] = typer.Option(None, "--part", help="Compare only this [[parts]] entry "
                                       "(an experiment without parts is compared whole) "
                                       "[default: every part both have]."),
    as_json: bool = typer.Option(False, "--json", help="Print the matched rows as JSON."),
    wide: bool = typer.Option(False, "--wide", help="Show every metric, however wide."),
) -> None:
    """Two stored experiments side by side: each metric in A and B and the difference with its
    95% CI, per shared sweep point (matrix pair, part) and flavor; a figure per metric (a numeric
    sweep as lines, A solid and B dashed; flavors or pairs as side-by-side bars, B hatched).

    Examples:

      ccarena compare results/before results/after

      ccarena compare results/seed-004-a results/seed-004-b --part matrix
    """
    from ccarena.report import compare_experiments as cmp
    from ccarena.report import plots
    from ccarena.results import Result

    a, b = Result(dir_a, deep=False), Result(dir_b, deep=False)  # the summaries are compared
    for result in (a, b):
        result.require_runs()
        result.summary  # noqa: B018 (read here: a damaged file is said before the table)
        print_store_warnings(result)
    if not len(a.summary) or not len(b.summary):
        raise UserError(f"{dir_a if not len(a.summary) else dir_b}: no finished runs to compare")
    compared = []
    for label, view_a, view_b in cmp.paired_views(a, b, part):
        if not len(view_a.summary) or not len(view_b.summary):
            empty = dir_a if not len(view_a.summary) else dir_b
            raise UserError(f"{empty}: no finished runs in part '{label}' to compare")
        merged, keys = cmp.compare_table(view_a, view_b)
        compared.append((label, merged, keys))
    if as_json:
        import pandas as pd

        rows = pd.concat([m.assign(part=label) if label else m for label, m, _ in compared],
                         ignore_index=True)
        print(rows.to_json(orient="records", double_precision=15), flush=True)
        return
    name_a, name_b = dir_a.name or "A", dir_b.name or "B"
    if name_a == name_b:
        name_a, name_b = "A", "B"
    # One colour per flavor across the figures, in the order the flavors appear.
    plots.set_flavor_order([*a.summary["flavor"].astype(str), *b.summary["flavor"].astype(str)])
    target = out if out is not None else dir_b / "compare"
    figures = []
    for label, merged, keys in compared:
        table = cmp.terminal_table(merged, keys, name_a, name_b, width=stdout.width, wide=wide,
                                   part=label)
        print_wide(table, wide)
        figures += cmp.write_figures(merged, keys, name_a, name_b, target, part=label)
    for path in figures:
        print(f"figure: {path}", flush=True)
