"""Side by side: each run on the simulator beside the same run on the Linux TCP stack
(``ccarena run FILE --backend sim,kernel``) or on ccarena's own transport over UDP sockets
(``--backend sim,udp``), one section per real backend.

For every pair of runs ``X`` / ``X@kernel`` (or ``X@udp``) in an experiment the report gets: a table per flow
with goodput, mean and minimum RTT, retransmission and loss rates from both backends and the
difference (kernel − sim, absolute and relative); figures of goodput, smoothed RTT and cwnd against
time with both backends on the same axes (simulator solid, kernel dashed, one colour per flow);
and the emulation's own error (the link relay's lateness per link and direction) from the kernel
run's ``run.json``.

Entry point: :func:`insert_section` (called by :func:`ccarena.report.write_report`).
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ccarena import units
from ccarena.analysis import catalogue
from ccarena.backends import compared_backends, sim_twin

COMPARED = ("goodput_mean_bps", "rtt_mean_s", "rtt_min_s", "retransmission_rate", "loss_rate")
"""Per-flow summary columns compared, in the table's order."""

METRICS: dict[str, tuple[str, Any]] = {
    c: (catalogue.metric(c).comparison_heading or catalogue.metric(c).heading,
        catalogue.metric(c).formatter) for c in COMPARED}
"""Per-flow summary columns compared (column → heading, formatter), from
:data:`ccarena.analysis.catalogue.CATALOGUE`."""


REAL_BACKENDS: dict[str, tuple[str, str]] = {
    name: (section.title, section.intro) for name, section in compared_backends().items()}
"""Backends compared with the simulator: section heading and introduction (as each backend
declares them, :func:`ccarena.backends.compared_backends`)."""

FIRST_COMPARED = next(iter(REAL_BACKENDS))
"""The backend a side-by-side function compares with when not told (the kernel)."""


def _slug(backend: str) -> str:
    """What tells ``backend``'s anchor and figure files from another's ("" for the kernel's)."""
    slug = compared_backends()[backend].slug
    return f"-{slug}" if slug else ""


def pairs(run_ids: list[str], backend: str = FIRST_COMPARED) -> list[tuple[str, str]]:
    """``(sim run id, run id on backend)`` for every run present on the simulator and ``backend``."""
    present = set(run_ids)
    out = []
    for run_id in run_ids:
        base, on = sim_twin(run_id)
        if on == backend and base in present:
            out.append((base, run_id))
    return out


def comparison(summary: pd.DataFrame, pair_list: list[tuple[str, str]],
               backend: str = FIRST_COMPARED) -> pd.DataFrame:
    """One row per pair and flow: ``run_id, name, flavor`` and, per metric m, ``m_sim``,
    ``m_<backend>``, ``m_diff`` (backend − sim) and ``m_rel`` (diff / sim)."""
    rows = []
    for sim_id, kernel_id in pair_list:
        s = summary[summary["run_id"] == sim_id]
        k = summary[summary["run_id"] == kernel_id]
        for rec in s.to_dict("records"):
            twin = k[k["flow"] == rec["flow"]]
            if twin.empty:
                continue
            krec = twin.iloc[0].to_dict()
            row: dict[str, Any] = {"run_id": sim_id, "flow": int(rec["flow"]), "name": rec["name"],
                                   "flavor": rec["flavor"]}
            for m in METRICS:
                a, b = float(rec.get(m, math.nan)), float(krec.get(m, math.nan))
                row[f"{m}_sim"], row[f"{m}_{backend}"] = a, b
                row[f"{m}_diff"] = b - a
                row[f"{m}_rel"] = (b - a) / a if a not in (0.0,) and math.isfinite(a) else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def _fmt(fmt: Any, x: float) -> str:
    return "–" if not math.isfinite(x) else fmt(x)


def _signed(fmt: Any, x: float) -> str:
    if not math.isfinite(x):
        return "–"
    return ("+" if x >= 0 else "−") + fmt(abs(x))


def comparison_html(table: pd.DataFrame, backend: str = FIRST_COMPARED) -> str:
    """The comparison as an HTML table (cells carry ``data-col`` and exact ``data-value``)."""
    head = ["run", "flow", "flavor"]
    for m, (label, _) in METRICS.items():
        head += [f"{label} sim", f"{label} {backend}", f"{backend} − sim"]
    out = ['<table class="side-by-side"><thead><tr>']
    out += [f"<th>{html.escape(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for rec in table.to_dict("records"):
        cells = [f'<td class="text">{html.escape(str(rec[c]))}</td>' for c in ("run_id", "name", "flavor")]
        for m, (_, fmt) in METRICS.items():
            for suffix in ("sim", backend):
                v = float(rec[f"{m}_{suffix}"])
                cells.append(f'<td data-col="{m}_{suffix}" data-value="{v!r}">{_fmt(fmt, v)}</td>')
            d, rel = float(rec[f"{m}_diff"]), float(rec[f"{m}_rel"])
            rel_text = f" ({100 * rel:+.1f}%)" if math.isfinite(rel) else ""
            cells.append(f'<td data-col="{m}_diff" data-value="{d!r}">{_signed(fmt, d)}{rel_text}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def lateness_html(records: dict[str, dict[str, Any]]) -> str:
    """The relay's lateness per kernel run, link and direction (empty when no run used it)."""
    rows = []
    for run_id, record in records.items():
        emulation = record.get("emulation") or {}
        mech = emulation.get("mechanisms", {})
        for pipe, lat in (emulation.get("lateness_ns") or {}).items():
            if not lat:
                continue
            cells = [run_id, pipe] + [units.format_time(float(lat[q]) / 1e9) if lat.get(q) is not None else "–"
                                      for q in ("mean", "p50", "p99", "p999", "max")]
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        if not emulation.get("lateness_ns") and mech:
            rows.append(f"<tr><td>{html.escape(run_id)}</td><td colspan=\"6\">rate and queue: "
                        f"{html.escape(str(mech.get('rate_and_queue')))}; delay: "
                        f"{html.escape(str(mech.get('delay')))}; loss: {html.escape(str(mech.get('loss')))}</td></tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("run", "link, direction", "mean", "p50", "p99",
                                              "p99.9", "max"))
    return ("<h3>Emulation error: how late the link relay sent frames</h3>"
            "<p>Each frame should leave the relay exactly when the emulated link delivers it (after "
            "its wait in the queue, its serialization and the propagation delay); these are the "
            "measured lateness statistics (the emulation's own error).</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def overlay_figure(sim: pd.DataFrame, kernel: pd.DataFrame, column: str, scale: float, ylabel: str,
                   title: str, names: dict[int, str], flavors: dict[int, str] | None = None,
                   backend: str = FIRST_COMPARED) -> Any:
    """Both backends' ``column`` per flow against time on one axes (sim solid, the real backend's
    run ``kernel`` dashed), coloured by the flow's flavor (``flavors``: flow → flavor; by flow
    index without it)."""
    from ccarena.report import plots

    fig, ax = plots._figure(title, "time (s)", ylabel)
    for frame, style, label in ((sim, "-", "sim"), (kernel, "--", backend)):
        for flow, group in frame.groupby("flow"):
            g = group.sort_values("time_s")
            y = pd.to_numeric(g[column], errors="coerce").to_numpy(dtype=float) * scale
            if not np.any(np.isfinite(y)):
                continue
            flavor = (flavors or {}).get(int(flow))
            ax.plot(g["time_s"], y, style,
                    color=plots.flavor_color(flavor) if flavor else plots.color(int(flow)),
                    label=f"{names.get(int(flow), flow)} ({label})")
    return plots._finish(fig, ax)


def figures(result: Any, pair_list: list[tuple[str, str]], figures_dir: Path,
            max_pairs: int = 4, backend: str = FIRST_COMPARED) -> list[tuple[str, str, bytes]]:
    """``(title, file name, PNG)`` of the overlay figures for up to ``max_pairs`` pairs."""
    from ccarena.report import plots

    out = []
    for sim_id, kernel_id in pair_list[:max_pairs]:
        s = result.store.read_table(sim_id, "samples")
        k = result.store.read_table(kernel_id, "samples")
        flows = result.store.read_table(sim_id, "flows")
        names = dict(zip(flows["flow"].astype(int), flows["name"].astype(str)))
        flavors = dict(zip(flows["flow"].astype(int), flows["flavor"].astype(str)))
        mss = float(flows["mss_bytes"].iloc[0]) if "mss_bytes" in flows else 1448.0
        for key, column, scale, ylabel in (("goodput", "goodput_bps", 1e-6, "goodput (Mbit/s)"),
                                           ("rtt", "srtt_s", 1e3, "smoothed RTT (ms)"),
                                           ("cwnd", "cwnd_bytes", 1 / mss, "cwnd (segments)")):
            title = f"{ylabel.split(' (')[0]}: simulator vs {backend} — {sim_id}"
            fig = overlay_figure(s, k, column, scale, ylabel, title, names, flavors, backend)
            name = f"compare{_slug(backend)}-{sim_id}-{key}.png".replace("/", "_")
            out.append((title, name, plots.save(fig, figures_dir / name)))
    return out


def section_html(result: Any, figures_dir: Path, backend: str = FIRST_COMPARED) -> str:
    """The side-by-side section of the simulator and ``backend`` (a key of
    :data:`REAL_BACKENDS`), or "" when the experiment has no run on both."""
    pair_list = pairs(list(result.run_ids), backend)
    if not pair_list:
        return ""
    table = comparison(result.summary, pair_list, backend)
    records = {k: result.store.read_run_record(k) for _, k in pair_list}
    heading, intro = REAL_BACKENDS[backend]
    anchor = f"side-by-side{_slug(backend)}"
    parts = [f'<section id="{anchor}"><h2>{html.escape(heading)}</h2>',
             f"<p>{html.escape(intro)}</p>",
             comparison_html(table, backend), lateness_html(records)]
    for title, name, png in figures(result, pair_list, figures_dir, backend=backend):
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img src="{uri}" alt="{html.escape(title)}" data-file="figures/{name}" />'
                     f"<figcaption>{html.escape(title)} (figures/{name})</figcaption></figure>")
    parts.append("</section>")
    return "\n".join(parts)


def insert_section(page: str, result: Any, figures_dir: Path) -> str:
    """``page`` with a side-by-side section per real backend inserted before ``</body>``
    (unchanged when the experiment has no pair of runs)."""
    section = "\n".join(filter(None, (section_html(result, figures_dir, b) for b in REAL_BACKENDS)))
    if not section:
        return page
    at = page.rfind("</body>")
    return page[:at] + section + "\n" + page[at:] if at >= 0 else page + section
