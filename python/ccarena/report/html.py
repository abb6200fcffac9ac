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
from ccarena.report.figures import (
    PARALLEL_TASKS_MIN,
    Figure,
    StartedFigures,
    figure_tasks,
    start_figures,
)
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


def part_prefix(part: Any) -> str:
    """The prefix of a part's figure and table files: ``"<part>__"``, or ``""`` for a scenario
    without parts."""
    return f"{part.part}__" if part.part else ""


def build_section(part: Any, figures_dir: Path, scenario_description: str = "",
                  pool: Any = None, started: StartedFigures | None = None) -> Section:
    """Tables and figures of one part (a :class:`ccarena.results.PartResult`); the per-run tables
    are also written as CSV files beside ``figures_dir`` (linked from the page). ``pool``: worker
    processes to share the per-run figures with (:func:`ccarena.report.figures.draw_figures`).
    ``started``: this part's figures already under way (:func:`start_workers`), closed here."""
    params = part.parameters
    summary = part.summary
    prefix = part_prefix(part)
    if started is None:
        # The per-run figures go to the workers first, to draw while this process draws the
        # network and the study figures (a shared pool's workers take them once the other parts
        # are built); without workers, a forked child draws some overview figures meanwhile.
        started = start_figures(part, figures_dir, prefix=prefix, pool=pool)
        started.fork_apart(list(plots.EXTRA_FORMATS))
    try:
        drawing = topology_figure.report_figure(part, figures_dir, prefix)  # the report opens with the network
        studies, study_figures = study_content(part, figures_dir, prefix)
        dc_table, dc_figures = datacenter_content(part, figures_dir, prefix)
        # The tables before the figures are gathered: built while the workers still draw.
        agg = None
        if params or (len(summary) and int(summary["repeat"].max()) > 0):
            agg = aggregate_rows(part.aggregate(), params)
        csv = _write_csv(part, figures_dir.parent, prefix)
        found = verdict.part_verdict(part)
        rows = summary_rows(summary, params)
        answer_rows = answer.answer_rows(summary, params) if len(summary) else None
        figures = started.finish()
    finally:
        started.close()
    # The figures that answer the question first (Figure.overview), then the network and details.
    everything = sorted(drawing + study_figures + dc_figures + figures, key=lambda f: not f.overview)
    key_index = answer.key_figure_index([f.file for f in everything])
    key_figure = everything.pop(key_index) if key_index is not None else None
    return Section(
        key=f"-{part.part}" if part.part else "",
        title=part.part, description=str(part.meta.get("description", "")),
        summary=rows, aggregate=agg,
        regions=region_rows(part.regions) if len(part.regions) else None,
        studies=studies, figures=everything, datacenter=dc_table,
        answer=answer_rows,
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
                 formats: Sequence[str] = ("png",), workers: "ReportWorkers | None" = None) -> Path:
    """Draw the figures into ``<experiment>/figures/`` (PNG, plus SVG and/or PDF files when
    ``formats`` names them) and write the report (default ``<experiment>/report.html``)
    atomically; returns its path.

    ``workers``: the processes :func:`start_workers` started for this page (same ``result``,
    ``path`` and ``formats``), already drawing; closed here. Without them, the page starts its
    own where it has work for them.

    Beside the page goes the fingerprint of its inputs (:mod:`ccarena.report.reuse`), taken
    before drawing, so that a later ``ccarena run`` of the same finished experiment keeps the page
    instead of drawing it again (:func:`ccarena.report.reuse.is_current`)."""
    path = Path(path) if path is not None else result.root / "report.html"
    try:
        inputs = reuse.fingerprint(result.root, path, formats)
        reuse.forget(path)
        plots.EXTRA_FORMATS[:] = [f for f in formats if f != "png"]
        try:
            _write_report(result, path, workers)
        finally:
            plots.EXTRA_FORMATS.clear()
    except BaseException:
        if workers is not None:
            workers.stop()  # Ctrl-C or a failure: not waiting for a part being drawn
        raise
    if workers is not None:
        workers.close()
    reuse.record(path, inputs)
    return path


def _write_report(result: Any, path: Path, workers: "ReportWorkers | None" = None) -> Path:
    # One colour per flavor across every figure of the page, in the order flavors appear.
    _set_flavor_order(result)
    description = _description(result)
    sections = _sections(result, path.parent / "figures", description, workers)
    page = render_html(result, sections)
    page = calibration.insert_section(page, result, path.parent / "figures")
    page = insert_section(page, result, path.parent / "figures")
    atomic_write_bytes(path, page.encode("utf-8"))
    return path


def _set_flavor_order(result: Any) -> None:
    plots.set_flavor_order(result.summary["flavor"].astype(str).tolist() if len(result.summary) else [])


def _description(result: Any) -> str:
    return str(result.experiment.get("scenario", {}).get("description", ""))


class ReportWorkers:
    """Worker processes started for a report before it is drawn (:func:`start_workers`):
    ``pool`` (a :class:`concurrent.futures.ProcessPoolExecutor`, or None) and ``parts``, part name
    → the future of its section, built there (:func:`build_part_section`); ``figures``, part name
    → its figures already under way without a pool (a forked child drawing some:
    :meth:`ccarena.report.figures.StartedFigures.fork_apart`)."""

    def __init__(self, pool: Any, parts: dict[str, Any],
                 figures: dict[str, StartedFigures] | None = None) -> None:
        self.pool, self.parts = pool, parts
        self.figures = figures or {}
        self._released: list[Any] = []

    def release(self) -> None:
        """Let the workers go once every section and figure has come back: each takes ~0.3 s to
        exit (its interpreter frees pandas' and matplotlib's objects), which then overlaps the
        writing of the page instead of following it; :meth:`close` waits for them."""
        self._released = self._process_list()
        if self.pool is not None:
            self.pool.shutdown(wait=False)

    def close(self) -> None:
        """Stop the workers (tasks not started are cancelled; a started one is waited for) and
        wait for them to exit; and any forked child still drawing."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        for process in self._released:
            process.join()
        self._close_figures()

    def stop(self) -> None:
        """Stop the workers at once, whatever they are drawing (Ctrl-C, a failure): as
        :func:`ccarena.report.report_pool.stop_now` does (not imported: that module loads this
        one in the workers), through the pool's process table (no public way before Python 3.14)."""
        processes = self._process_list() or self._released
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        self._close_figures()

    def _close_figures(self) -> None:
        """Close the figures under way that no section took (a failure before it was built)."""
        for started in self.figures.values():
            started.close()
        self.figures.clear()

    def _process_list(self) -> list[Any]:
        """The pool's processes (its process table: empty once it is shut down)."""
        return list((getattr(self.pool, "_processes", None) or {}).values())


def start_workers(result: Any, path: str | Path | None = None,
                  formats: Sequence[str] = ("png",), pool: Any = None) -> ReportWorkers | None:
    """Start the worker processes the page at ``path`` (default ``<experiment>/report.html``)
    will draw with, and give them their work now: ``ccarena run`` and ``ccarena report`` call this
    before printing the summary, so that the workers' start (a spawned interpreter importing
    matplotlib and pandas: ~1.5 s of one core) and their first figures overlap the summary and
    this process's own part. Hand the result to :func:`write_report` (same ``result``, ``path``,
    ``formats``).

    With several parts (and cores), the workers build every part but the one of most runs
    (:func:`_sections`); with one part of at least
    :data:`ccarena.report.figures.PARALLEL_TASKS_MIN` per-run figure tasks, they wait for those
    (:func:`ccarena.report.figures.start_figures`). A page of one part that wants no workers (few
    runs, or runs of many flows) gets its figures started here instead, some drawn by a child
    forked now (:func:`_forked_figures`). None when a page has no work for other processes (one
    core, nothing to fork): it is drawn here.

    ``pool``: workers spawned earlier for this page (:func:`ccarena.report.report_pool.spawn_for`),
    taken over (or shut down when the page wants none)."""
    import os

    cores = os.cpu_count() or 1
    parts = [part for part in result.parts() if part.run_ids]
    if len(parts) >= 2 and cores >= 2:
        here = _largest(parts)
        others = [p for i, p in enumerate(parts) if i != here]
        workers = min(cores - 1, len(others))
    elif len(parts) == 1 and cores >= 2 and figure_tasks(parts[0]) >= PARALLEL_TASKS_MIN:
        others, workers = [], min(cores, figure_tasks(parts[0]))
    else:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        return _forked_figures(result, path, formats)
    path = Path(path) if path is not None else result.root / "report.html"
    figures_dir = path.parent / "figures"
    _set_flavor_order(result)
    if pool is None:
        from concurrent.futures import ProcessPoolExecutor

        from ccarena.workers import WORKER_CONTEXT

        pool = ProcessPoolExecutor(max_workers=workers, mp_context=WORKER_CONTEXT)
        # A worker is spawned per task submitted while none is idle: one to start each now.
        for _ in range(workers - len(others)):
            pool.submit(_loaded)
    extra = [f for f in formats if f != "png"]
    futures = {p.part: pool.submit(build_part_section, type(result), str(result.root), p.part,
                                   str(figures_dir), _description(result), plots.flavor_slots(), extra,
                                   result.run_ids)
               for p in others}
    return ReportWorkers(pool, futures)


def _forked_figures(result: Any, path: str | Path | None,
                    formats: Sequence[str]) -> ReportWorkers | None:
    """For a page of one part that wants no workers: its figures started now, some of them in
    children forked from this process (:func:`ccarena.report.figures.start_figures`,
    :meth:`ccarena.report.figures.StartedFigures.fork_apart`), drawing while the summary is
    printed (here no spinner's thread runs yet, which would forbid the fork); None when there is
    nothing to fork or this process cannot."""
    from ccarena.report.forked import can_fork

    parts = [part for part in result.parts() if part.run_ids]
    if len(parts) != 1 or not can_fork():
        return None
    part = parts[0]
    path = Path(path) if path is not None else result.root / "report.html"
    _set_flavor_order(result)
    extra = [f for f in formats if f != "png"]
    started = start_figures(part, path.parent / "figures", prefix=part_prefix(part),
                            formats=extra)
    started.fork_apart(extra)
    if not started.apart and not started.work.forked:
        started.close()
        return None
    return ReportWorkers(None, {}, {part.part: started})


def _loaded() -> None:
    """A worker's first task when it has no part to build: unpickling it loads this module (and
    matplotlib, pandas) in the worker, ready when the figures come."""


def _largest(parts: list[Any]) -> int:
    """Index of the part of most runs (built in the report's own process)."""
    return max(range(len(parts)), key=lambda i: len(parts[i].run_ids))


def _sections(result: Any, figures_dir: Path, description: str,
              workers: ReportWorkers | None = None) -> list[Section]:
    """One :class:`Section` per part with runs, in the parts' order. With several parts and
    more than one core, the parts are built side by side: the part of most runs here, each other
    in a worker process (spawned: matplotlib is not thread-safe; :data:`ccarena.workers.WORKER_CONTEXT`,
    which does not import the caller's ``__main__``) that reads the stored results itself and
    draws with this page's flavor colours and formats. Those workers then draw the largest part's
    per-run figures with it. ``workers``: the processes :func:`start_workers` started (already
    building the other parts); without them, started here when there are several parts."""
    import os

    parts = [part for part in result.parts() if part.run_ids]
    cores = os.cpu_count() or 1
    if workers is not None and not workers.parts:
        # One part: the workers started for its per-run figures, or its figures already under way.
        sections = [build_section(part, figures_dir, description, pool=workers.pool,
                                  started=workers.figures.pop(part.part, None)) for part in parts]
        workers.release()
        return sections
    if workers is None and (len(parts) < 2 or cores < 2):
        return [build_section(part, figures_dir, description) for part in parts]
    here = _largest(parts)
    if workers is None:
        from concurrent.futures import ProcessPoolExecutor

        from ccarena.workers import WORKER_CONTEXT

        others = [i for i in range(len(parts)) if i != here]
        pool = ProcessPoolExecutor(max_workers=min(cores - 1, len(others)) or 1,
                                   mp_context=WORKER_CONTEXT)
        workers = ReportWorkers(pool, {
            parts[i].part: pool.submit(build_part_section, type(result), str(result.root), parts[i].part,
                                       str(figures_dir), description, plots.flavor_slots(),
                                       list(plots.EXTRA_FORMATS), result.run_ids) for i in others})
        own = True
    else:
        own = False
    try:
        # The same workers take the per-run figures of this part once the other parts are
        # built; those none has started by then are drawn here (ccarena.report.figures.gather).
        sections = {here: build_section(parts[here], figures_dir, description, pool=workers.pool)}
        for i, part in enumerate(parts):
            if i != here:
                sections[i] = workers.parts[part.part].result()
    except BaseException:
        if own:
            workers.stop()
        raise
    if own:
        workers.close()
    else:
        workers.release()
    return [sections[i] for i in range(len(parts))]


def build_part_section(result_type: Any, root: str, part: str, figures_dir: str, description: str,
                       slots: dict[str, int], extra_formats: list[str],
                       checked: Sequence[str] = ()) -> Section:
    """:func:`build_section` of the part named ``part`` of the experiment at ``root``, read as
    ``result_type(root)`` (a :class:`ccarena.results.Result`), in a worker process of
    :func:`_sections`: ``slots`` (:func:`ccarena.report.plots.flavor_slots`) and
    ``extra_formats`` carry the page's flavor colours and figure formats over; ``checked``, the
    runs the page's process found readable (its ``run_ids``), are not verified again."""
    plots.restore_flavor_slots(slots)
    plots.EXTRA_FORMATS[:] = extra_formats
    try:
        (chosen,) = [p for p in result_type(root, checked=checked).parts() if p.part == part]
        return build_section(chosen, Path(figures_dir), description)
    finally:
        plots.EXTRA_FORMATS.clear()
