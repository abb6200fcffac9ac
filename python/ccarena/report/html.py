"""The report: a self-contained HTML page (figures embedded as PNG data URIs, also written to
``figures/*.png``) with the scenario, the per-run and per-flow summary, the mean ± 95% CI over
repeats, the region table, the study tables and the figures, one section per part.

The page is well-formed XHTML-compatible markup.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from ccarena.report import calibration, plots, topology_figure
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


def build_section(part: Any, figures_dir: Path) -> Section:
    """Tables and figures of one part (a :class:`ccarena.results.PartResult`)."""
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
    return Section(
        key=f"-{part.part}" if part.part else "",
        title=part.part, description=str(part.meta.get("description", "")),
        summary=summary_rows(summary, params), aggregate=agg,
        regions=region_rows(part.regions) if len(part.regions) else None,
        studies=studies, figures=drawing + study_figures + dc_figures + figures, datacenter=dc_table)


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


def write_report(result: Any, path: str | Path | None = None) -> Path:
    """Draw the figures into ``<experiment>/figures/`` and write the report (default
    ``<experiment>/report.html``) atomically; returns its path."""
    path = Path(path) if path is not None else result.root / "report.html"
    # One colour per flavor across every figure of the page, in the order flavors appear.
    plots.set_flavor_order(result.summary["flavor"].astype(str).tolist() if len(result.summary) else [])
    sections = [build_section(part, path.parent / "figures") for part in result.parts()
                if part.run_ids]
    page = render_html(result, sections)
    page = calibration.insert_section(page, result, path.parent / "figures")
    page = insert_section(page, result, path.parent / "figures")
    atomic_write_bytes(path, page.encode("utf-8"))
    return path
