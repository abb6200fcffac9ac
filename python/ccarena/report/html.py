"""The report: a self-contained HTML page (figures embedded as PNG data URIs, also written to
``figures/*.png``) with the scenario, the per-run and per-flow summary, the mean ± 95% CI over
repeats, the region table, the study tables and the figures, one section per part.

The page is well-formed XHTML-compatible markup.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from jinja2 import Environment, PackageLoader, select_autoescape

from ccarena.report import answer, calibration, plots, topology_figure
from ccarena.report.compare import insert_section
from ccarena.report.datacenter import datacenter_content
from ccarena.report.figures import Figure, draw_figures
from ccarena.report.studies import study_content
from ccarena.report.tables import Cell, aggregate_rows, region_rows, summary_rows
from ccarena.store import atomic_write_bytes


@dataclass
class Section:
    """One part of the experiment in the report: its tables and figures.

    ``key`` suffixes the element ids ("" for a scenario without parts, so ids stay ``summary``,
    ``aggregate``, ``regions``); ``studies`` are the study tables (:mod:`ccarena.report.studies`)
    as ``(id, title, caption, (headings, rows))``.
    """

    key: str
    title: str
    description: str
    summary: tuple[list[str], list[list[Cell]]]
    aggregate: tuple[list[str], list[list[Cell]]] | None
    regions: tuple[list[str], list[list[Cell]]] | None
    studies: list[tuple[str, str, str, tuple[list[str], list[list[Cell]]]]]
    figures: list[Figure]
    datacenter: tuple[list[str], list[list[Cell]]] | None = None
    answer: tuple[list[str], list[list[Cell]]] | None = None
    sentence: str = ""
    question: str = ""
    key_figure: Figure | None = None
    csv: dict[str, str] | None = None
    answer_title: str = "Per flavor"


def build_section(part: Any, figures_dir: Path, scenario_description: str = "") -> Section:
    """Tables and figures of one part (a :class:`ccarena.results.PartResult`); the per-run tables
    are also written as CSV files beside ``figures_dir`` (linked from the page)."""
    params = part.parameters
    summary = part.summary
    prefix = f"{part.part}__" if part.part else ""
    drawing = topology_figure.report_figure(part, figures_dir, prefix)  # the report opens with the network
    figures = draw_figures(part, figures_dir, prefix=prefix)
    studies, study_figures = study_content(part, figures_dir, prefix)
    dc_table, dc_figures = datacenter_content(part, figures_dir, prefix)
    agg = None
    if params or (len(summary) and int(summary["repeat"].max()) > 0):
        agg = aggregate_rows(part.aggregate(), params)
    everything = drawing + study_figures + dc_figures + figures
    key_index = answer.key_figure_index([f.file for f in everything])
    key_figure = everything.pop(key_index) if key_index is not None else None
    csv = _write_csv(part, figures_dir.parent, prefix)
    return Section(
        key=f"-{part.part}" if part.part else "",
        title=part.part, description=str(part.meta.get("description", "")),
        summary=summary_rows(summary, params), aggregate=agg,
        regions=region_rows(part.regions) if len(part.regions) else None,
        studies=studies, figures=everything, datacenter=dc_table,
        answer=answer.answer_rows(summary, params) if len(summary) else None,
        sentence=answer.answer_sentence(summary, params) if len(summary) else "",
        question=answer.question(part.meta, scenario_description), key_figure=key_figure, csv=csv,
        answer_title="Per sweep point and flavor" if answer.point_keys(summary, params) else "Per flavor")


def _write_csv(part: Any, directory: Path, prefix: str) -> dict[str, str]:
    """The part's summary (and regions) as CSV under ``directory/tables/``; name → relative path."""
    out = {}
    tables = directory / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    for name, frame in (("summary", part.summary), ("regions", part.regions)):
        if len(frame):
            path = tables / f"{prefix}{name}.csv"
            atomic_write_bytes(path, frame.to_csv(index=False).encode("utf-8"))
            out[name] = f"tables/{path.name}"
    return out


def render_html(result: Any, sections: list[Section]) -> str:
    """The report page for ``result`` with its ``sections`` (one per part) embedded."""
    env = Environment(loader=PackageLoader("ccarena.report", "templates"),
                      autoescape=select_autoescape(["html", "j2"]))
    template = env.get_template("report.html.j2")
    experiment = result.experiment
    scenario_text = experiment.get("scenario_text") or json.dumps(experiment["scenario"], indent=2)
    first_spec = experiment["runs"][0]["spec"] if experiment.get("runs") else {}
    return template.render(
        name=result.name,
        description=experiment["scenario"].get("description", ""),
        updated=experiment.get("updated", ""),
        n_runs=len(result.run_ids),
        n_planned=len(experiment.get("runs", [])),
        software=experiment.get("software", {}),
        scenario_text=scenario_text,
        defaults=json.dumps(experiment.get("defaults", {}), indent=2),
        first_spec=json.dumps(first_spec, indent=2),
        sections=sections,
    )


def write_report(result: Any, path: str | Path | None = None,
                 formats: Sequence[str] = ("png",)) -> Path:
    """Draw the figures into ``<experiment>/figures/`` (PNG, plus SVG and/or PDF files when
    ``formats`` names them) and write the report (default ``<experiment>/report.html``)
    atomically; returns its path."""
    path = Path(path) if path is not None else result.root / "report.html"
    plots.EXTRA_FORMATS[:] = [f for f in formats if f != "png"]
    try:
        return _write_report(result, path)
    finally:
        plots.EXTRA_FORMATS.clear()


def _write_report(result: Any, path: Path) -> Path:
    # One colour per flavor across every figure of the page, in the order flavors appear.
    plots.set_flavor_order(result.summary["flavor"].astype(str).tolist() if len(result.summary) else [])
    description = str(result.experiment.get("scenario", {}).get("description", ""))
    sections = [build_section(part, path.parent / "figures", description) for part in result.parts()
                if part.run_ids]
    page = render_html(result, sections)
    page = calibration.insert_section(page, result, path.parent / "figures")
    page = insert_section(page, result, path.parent / "figures")
    atomic_write_bytes(path, page.encode("utf-8"))
    return path
