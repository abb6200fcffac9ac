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

from ccarena.analysis import verdict
from ccarena.report import answer, calibration_section as calibration, plots, reuse, topology_figure
from ccarena.report.compare import insert_section
from ccarena.report.datacenter_section import datacenter_content
from ccarena.report.figures import Figure, draw_figures
from ccarena.report.study_sections import study_content
from ccarena.report.html_tables import Cell, aggregate_rows, region_rows, summary_rows
from ccarena.report.terminal import short_names
from ccarena.store import atomic_write_bytes


@dataclass
class Section:
    """One part of the experiment in the report: its tables and figures.

    ``key`` suffixes the element ids ("" for a scenario without parts, so ids stay ``summary``,
    ``aggregate``, ``regions``); ``studies`` are the study tables (:mod:`ccarena.report.study_sections`)
    as ``(id, title, caption, (headings, rows))``; ``verdict`` the sentences that open the section
    and ``verdict_notes`` what stands next to them (identical repeats, differing defaults, ECN
    without marking): :mod:`ccarena.analysis.verdict`.
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
    verdict: list[str] | None = None
    verdict_notes: list[str] | None = None
    question: str = ""
    key_figure: Figure | None = None
    csv: dict[str, str] | None = None
    answer_title: str = "Per flavor"


def build_section(part: Any, figures_dir: Path, scenario_description: str = "",
                  pool: Any = None) -> Section:
    """Tables and figures of one part (a :class:`ccarena.results.PartResult`); the per-run tables
    are also written as CSV files beside ``figures_dir`` (linked from the page). ``pool``: worker
    processes to share the per-run figures with (:func:`ccarena.report.figures.draw_figures`)."""
    params = part.parameters
    summary = part.summary
    prefix = f"{part.part}__" if part.part else ""
    drawing = topology_figure.report_figure(part, figures_dir, prefix)  # the report opens with the network
    # The study figures before the others: a shared pool's workers build the other parts first,
    # and take this part's per-run figures only when they are done (draw_figures submits them).
    studies, study_figures = study_content(part, figures_dir, prefix)
    dc_table, dc_figures = datacenter_content(part, figures_dir, prefix)
    figures = draw_figures(part, figures_dir, prefix=prefix, pool=pool)
    agg = None
    if params or (len(summary) and int(summary["repeat"].max()) > 0):
        agg = aggregate_rows(part.aggregate(), params)
    # The figures that answer the question first (Figure.overview), then the network and details.
    everything = sorted(drawing + study_figures + dc_figures + figures, key=lambda f: not f.overview)
    key_index = answer.key_figure_index([f.file for f in everything])
    key_figure = everything.pop(key_index) if key_index is not None else None
    csv = _write_csv(part, figures_dir.parent, prefix)
    found = verdict.part_verdict(part)
    return Section(
        key=f"-{part.part}" if part.part else "",
        title=part.part, description=str(part.meta.get("description", "")),
        summary=summary_rows(summary, params), aggregate=agg,
        regions=region_rows(part.regions) if len(part.regions) else None,
        studies=studies, figures=everything, datacenter=dc_table,
        answer=answer.answer_rows(summary, params) if len(summary) else None,
        verdict=found.sentences(short_names(found.parameters), max_points=12,
                                more="({n} points: the table below has each one's numbers)") or None,
        verdict_notes=found.notes or None,
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
        # Runs whose stored files cannot be read (ccarena.results.Result.damaged).
        left_out=[(run_id, err.path.name, err.why)
                  for run_id, err in getattr(result, "damaged", {}).items()],
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
    atomically; returns its path.

    Beside the page goes the fingerprint of its inputs (:mod:`ccarena.report.reuse`), taken
    before drawing, so that a later ``ccarena run`` of the same finished experiment keeps the page
    instead of drawing it again (:func:`ccarena.report.reuse.is_current`)."""
    path = Path(path) if path is not None else result.root / "report.html"
    inputs = reuse.fingerprint(result.root, path, formats)
    reuse.forget(path)
    plots.EXTRA_FORMATS[:] = [f for f in formats if f != "png"]
    try:
        _write_report(result, path)
    finally:
        plots.EXTRA_FORMATS.clear()
    reuse.record(path, inputs)
    return path


def _write_report(result: Any, path: Path) -> Path:
    # One colour per flavor across every figure of the page, in the order flavors appear.
    plots.set_flavor_order(result.summary["flavor"].astype(str).tolist() if len(result.summary) else [])
    description = str(result.experiment.get("scenario", {}).get("description", ""))
    sections = _sections(result, path.parent / "figures", description)
    page = render_html(result, sections)
    page = calibration.insert_section(page, result, path.parent / "figures")
    page = insert_section(page, result, path.parent / "figures")
    atomic_write_bytes(path, page.encode("utf-8"))
    return path


def _sections(result: Any, figures_dir: Path, description: str) -> list[Section]:
    """One :class:`Section` per part with runs, in the parts' order. With several parts and
    more than one core, the parts are built side by side: the part of most runs here, each other
    in a worker process (spawned: matplotlib is not thread-safe; :data:`ccarena.workers.WORKER_CONTEXT`,
    which does not import the caller's ``__main__``) that reads the stored results itself and
    draws with this page's flavor colours and formats. Those workers then draw the largest part's
    per-run figures with it."""
    import os

    parts = [part for part in result.parts() if part.run_ids]
    cores = os.cpu_count() or 1
    if len(parts) < 2 or cores < 2:
        return [build_section(part, figures_dir, description) for part in parts]
    from concurrent.futures import ProcessPoolExecutor

    from ccarena.workers import WORKER_CONTEXT

    here = max(range(len(parts)), key=lambda i: len(parts[i].run_ids))
    others = [i for i in range(len(parts)) if i != here]
    sections: dict[int, Any] = {}
    with ProcessPoolExecutor(max_workers=min(cores - 1, len(others)) or 1,
                             mp_context=WORKER_CONTEXT) as pool:
        futures = {i: pool.submit(build_part_section, type(result), str(result.root), parts[i].part,
                                  str(figures_dir), description, plots.flavor_slots(),
                                  list(plots.EXTRA_FORMATS)) for i in others}
        # The same workers take the per-run figures of this part once the other parts are
        # built; those none has started by then are drawn here (ccarena.report.figures.gather).
        sections[here] = build_section(parts[here], figures_dir, description, pool=pool)
        for i, future in futures.items():
            sections[i] = future.result()
    return [sections[i] for i in range(len(parts))]


def build_part_section(result_type: Any, root: str, part: str, figures_dir: str, description: str,
                       slots: dict[str, int], extra_formats: list[str]) -> Section:
    """:func:`build_section` of the part named ``part`` of the experiment at ``root``, read as
    ``result_type(root)`` (a :class:`ccarena.results.Result`), in a worker process of
    :func:`_sections`: ``slots`` (:func:`ccarena.report.plots.flavor_slots`) and
    ``extra_formats`` carry the page's flavor colours and figure formats over."""
    plots.restore_flavor_slots(slots)
    plots.EXTRA_FORMATS[:] = extra_formats
    try:
        (chosen,) = [p for p in result_type(root).parts() if p.part == part]
        return build_section(chosen, Path(figures_dir), description)
    finally:
        plots.EXTRA_FORMATS.clear()
