"""The calibration in the terminal and in the report (``ccarena calibrate``; the report section
appears only for calibration experiments, :func:`ccarena.analysis.calibration_cells.is_calibration`).

The terminal gets one row per cell (80 columns wide) and the overall verdict; the report gets a
heatmap of the first flow's share error (simulator − kernel) per pair and buffer, the same
table with every figure of both backends, and the bands. Both are drawn from
:func:`ccarena.analysis.calibration_cells.calibration_table` of the stored summary, so ``ccarena report``
redraws them from stored results.

Entry points: :func:`terminal_table`, :func:`insert_section` (called by
:func:`ccarena.report.write_report`).
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccarena.analysis import calibration_cells as cal
from ccarena.backends import calibration_backends


def _short_cell(rec: dict[str, Any]) -> str:
    """``cubic/bbr``, ``cubic``, ``cubic 1%`` (random loss): the cell without its buffer (a column of its own)."""
    if rec["kind"] == "pair":
        return f"{rec['first_flavor']}/{rec['second_flavor']}"
    if rec["kind"] == "loss":
        return f"{rec['first_flavor']} {100 * float(rec['loss']):g}%"
    return str(rec["first_flavor"])


def _num(x: float, fmt: str) -> str:
    return "–" if not math.isfinite(x) else format(x, fmt)


def _pair_text(a: float, b: float, fmt: str) -> str:
    if not (math.isfinite(a) or math.isfinite(b)):
        return "–"
    return f"{_num(a, fmt)}/{_num(b, fmt)}"


def _within(rec: dict[str, Any], name: str) -> bool:
    err = float(rec[f"{name}_error"])
    return not math.isfinite(err) or abs(err) <= float(rec[f"{name}_band"])


def terminal_table(table: pd.DataFrame, title: str = "calibration: simulator vs kernel") -> Any:
    """The per-cell table for the terminal (a rich Table, at most 80 columns wide): the first
    flow's share and the total goodput on both backends (sim/kernel) with their errors, the
    utilization error and the RTT floor error; errors outside their bands in red."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left",
              padding=(0, 1), collapse_padding=True, show_edge=False)
    for heading, justify in (("cell", "left"), ("BDP", "right"), ("share s/k", "right"),
                             ("Δ", "right"), ("Mb/s s/k", "right"), ("Δ", "right"),
                             ("util Δ", "right"), ("RTT Δms", "right"), ("", "left")):
        t.add_column(heading, justify=justify, no_wrap=True)  # type: ignore[arg-type]

    def err(rec: dict[str, Any], name: str, text: str) -> Text:
        return Text(text, style="" if _within(rec, name) else "bold red")

    sim, real = calibration_backends()  # the table's column suffixes
    for rec in table.to_dict("records"):
        t.add_row(
            _short_cell(rec), f"{float(rec['buffer_bdp']):g}",
            _pair_text(rec[f"share_{sim}"], rec[f"share_{real}"], ".2f"),
            err(rec, "share", _num(rec["share_error"], "+.2f")),
            _pair_text(rec[f"goodput_{sim}"] / 1e6, rec[f"goodput_{real}"] / 1e6, ".1f"),
            err(rec, "goodput", _num(100 * rec["goodput_error"], "+.1f") + "%"
                if math.isfinite(rec["goodput_error"]) else "–"),
            err(rec, "utilization", _num(rec["utilization_error"], "+.2f")),
            err(rec, "rtt_floor", _num(1e3 * rec["rtt_floor_error"], "+.1f")),
            Text(str(rec["verdict"]), style="green" if rec["verdict"] == "ok" else "bold red"),
        )
    return t


def bands_text() -> str:
    """The bands, as one sentence."""
    return (f"Bands: |share error| ≤ {cal.SHARE_BAND:g} per cell and median ≤ "
            f"{cal.SHARE_MEDIAN_BAND:g}; total goodput within {100 * cal.GOODPUT_BAND:g}% of the "
            f"kernel's; |utilization error| ≤ {cal.UTILIZATION_BAND:g}; |RTT floor error| ≤ "
            f"{1e3 * cal.RTT_FLOOR_BAND_S:g} ms (single-flow cells). Errors are simulator − kernel.")


# ----------------------------------------------------------------------------- report section

def share_heatmap(table: pd.DataFrame, title: str) -> Any | None:
    """A heatmap of the first flow's share error (simulator − kernel): one row per pair, one
    column per buffer (BDP), each cell annotated with its error; None without pair cells."""
    from matplotlib.colors import TwoSlopeNorm

    from ccarena.report import plots

    pairs = table[table["kind"] == "pair"]
    if not len(pairs):
        return None
    rows = list(dict.fromkeys(pairs["flavors"]))
    cols = sorted({float(b) for b in pairs["buffer_bdp"]})
    grid = np.full((len(rows), len(cols)), np.nan)
    for rec in pairs.to_dict("records"):
        grid[rows.index(rec["flavors"]), cols.index(float(rec["buffer_bdp"]))] = float(rec["share_error"])
    fig, ax = plots._figure(title, "buffer (BDP)", "pair (first flow vs second)")
    fig.set_size_inches(1.6 + 1.4 * len(cols), 1.2 + 0.55 * len(rows))
    limit = max(cal.SHARE_BAND * 2, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 0.0)
    image = ax.imshow(grid, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -limit, limit), aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(len(cols)), [f"{c:g}" for c in cols])
    ax.set_yticks(range(len(rows)), [r.replace("-vs-", " vs ") for r in rows])
    for i in range(len(rows)):
        for j in range(len(cols)):
            v = grid[i, j]
            if np.isfinite(v):
                mark = "" if abs(v) <= cal.SHARE_BAND else " ✗"
                ax.text(j, i, f"{v:+.2f}{mark}", ha="center", va="center", fontsize=9,
                        color="white" if abs(v) > 0.6 * limit else "black")
    fig.colorbar(image, ax=ax, label="share error (sim − kernel)")
    fig.tight_layout()
    return fig


def _cell_html(value: float, text: str, col: str, within: bool | None = None) -> str:
    cls = "" if within is None else (' class="ok"' if within else ' class="off"')
    data = repr(float(value)) if isinstance(value, (int, float)) and math.isfinite(value) else "nan"
    return f'<td data-col="{col}" data-value="{data}"{cls}>{html.escape(text)}</td>'


def table_html(table: pd.DataFrame) -> str:
    """The per-cell table with both backends' figures, the errors and the verdicts."""
    head = ["cell", "buffer (BDP)", "share sim", "share kernel", "share error",
            "goodput sim", "goodput kernel", "goodput error", "utilization sim",
            "utilization kernel", "utilization error", "RTT floor sim", "RTT floor kernel",
            "RTT floor error", "verdict"]
    out = ['<div class="scroll"><table class="calibration" id="calibration-table"><thead><tr>']
    th_text = ' class="text"'
    out += [f"<th{th_text if h == 'cell' else ''}>{html.escape(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for rec in table.to_dict("records"):
        cells = [f'<td class="text">{html.escape(str(rec["cell"]))}</td>',
                 _cell_html(rec["buffer_bdp"], f"{float(rec['buffer_bdp']):g}", "buffer_bdp")]
        for name, scale, fmt, efmt, unit in (("share", 1.0, ".3f", "+.3f", ""),
                                             ("goodput", 1e-6, ".2f", "+.1f", " Mb/s"),
                                             ("utilization", 1.0, ".3f", "+.3f", ""),
                                             ("rtt_floor", 1e3, ".2f", "+.2f", " ms")):
            for backend in calibration_backends():  # the table's column suffixes
                v = float(rec[f"{name}_{backend}"])
                cells.append(_cell_html(v, _num(v * scale, fmt) + (unit if math.isfinite(v) else ""),
                                        f"{name}_{backend}"))
            e = float(rec[f"{name}_error"])
            text = "–" if not math.isfinite(e) else (f"{100 * e:+.1f}%" if name == "goodput"
                                                     else _num(e * scale, efmt) + unit)
            cells.append(_cell_html(e, text, f"{name}_error",
                                    _within(rec, name) if math.isfinite(e) else None))
        verdict = str(rec["verdict"]) + (f" ({rec['off']})" if rec["off"] else "")
        cells.append(f'<td class="text {"ok" if rec["verdict"] == "ok" else "off"}" '
                     f'data-col="verdict">{html.escape(verdict)}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


STYLE = ("<style>table.calibration td.off{background:#fbd5d5;font-weight:bold}"
         "table.calibration td.ok{background:#e3f4e1}</style>")


def section_html(result: Any, figures_dir: Path) -> str:
    """The calibration section, or "" when the experiment is not a calibration."""
    from ccarena.report import plots

    if not cal.is_calibration(result.experiment) or not result.run_ids:
        return ""
    table = cal.calibration_table(result.summary)
    if not len(table):
        return ""
    parts = [('<section id="calibration"><h2>Calibration: the simulator against this machine\'s '
              "Linux TCP stack</h2>"),
             ("<p>Each cell of the suite ran on ccarena's simulator and on this machine's kernel "
             "(network namespaces, the same resolved spec and seed). A cell is <em>ok</em> when "
             "every figure it has is within its band, <em>off</em> otherwise; an off cell is a "
             "measured departure of the model from this kernel, not a failure.</p>"),
             f"<p>{html.escape(bands_text())}</p>",
             f'<p class="verdict"><strong>{html.escape(cal.verdict_line(table))}</strong></p>']
    fig = share_heatmap(table, "First flow's share error (sim − kernel)")
    if fig is not None:
        name = "calibration-share-error.png"
        png = plots.save(fig, figures_dir / name)
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img src="{uri}" alt="share error heatmap" data-file="figures/{name}" />'
                     "<figcaption>The first flow's share of the total goodput, simulator − kernel, "
                     f"per pair and buffer; ✗ marks a cell outside ±{cal.SHARE_BAND:g} "
                     f"(figures/{name})</figcaption></figure>")
    parts += [STYLE, table_html(table), "</section>"]
    return "\n".join(parts)


def insert_section(page: str, result: Any, figures_dir: Path) -> str:
    """``page`` with the calibration section inserted after ``<body>``'s header (before the
    first ``<section``), unchanged when the experiment is not a calibration."""
    section = section_html(result, figures_dir)
    if not section:
        return page
    at = page.find("<section")
    if at < 0:
        at = page.rfind("</body>")
    return page[:at] + section + "\n" + page[at:] if at >= 0 else page + section
