"""Reports: the HTML page and the terminal summary of an experiment's stored results.

- :mod:`ccarena.report.html_tables`: table cells;
- :mod:`ccarena.report.terminal`: the terminal summary (fits the terminal's width);
- :mod:`ccarena.report.plots`: the matplotlib figure primitives and the per-run time series;
- :mod:`ccarena.report.sweep_plots`: a metric against a swept parameter (lines, grouped bars);
- :mod:`ccarena.report.palette`: the flavor colours, an object the figures take;
- :mod:`ccarena.report.study_plots`: the study figures (matrix heatmap, goodput per interval, RED);
- :mod:`ccarena.report.figures`: the figures an experiment's report draws;
- :mod:`ccarena.report.study_sections`: the study tables and figures a part asks for;
- :mod:`ccarena.report.compare`: the simulator beside the kernel (``--backend sim,kernel``);
- :mod:`ccarena.report.calibration_section`: ``ccarena calibrate``'s table and share-error heatmap;
- :mod:`ccarena.report.html`: the page (:func:`write_report`).
"""

from typing import Any

__all__ = ["terminal_table", "write_report"]


def __getattr__(name: str) -> Any:
    # The page needs matplotlib (half a second to import): loaded only when a report is written,
    # so `ccarena run --no-report` and the terminal summary start without it. The terminal table
    # (pandas, rich) loads on first use too: `ccarena run` checks --formats (this package) before
    # it starts the engine, and loads the table while the engine works.
    if name == "write_report":
        from ccarena.report.html import write_report

        return write_report
    if name == "terminal_table":
        from ccarena.report.terminal import terminal_table

        return terminal_table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
