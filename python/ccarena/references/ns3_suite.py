"""``ccarena calibrate --reference ns3``: the calibration suite's cells run on ns-3 (3.44, the
``ns3`` wheel: ``pip install 'ccarena[ns3]'``) beside the simulator with ``host = "rfc"`` (the
published models, as ns-3 runs them: :mod:`ccarena.experiment.host_model`), compared cell by
cell and per flavor with calibrate's error metrics and bands
(:mod:`ccarena.analysis.calibration_cells`).

The cells: :func:`ccarena.experiment.calibration_suite.calibration_scenario` for the flavors both
implement (:data:`NS3_TYPES`), keeping every single-flow and loss cell, every same-flavor pair
and every pair with one of :data:`ANCHORS` (the suite's all-pairs grid grows as n²; each flavor
against Reno and CUBIC is what a per-flavor verdict needs). ns-3 runs each cell in a
subprocess (:mod:`ccarena.references.ns3_cell`) from the run's resolved spec: bottleneck
rate, delay, DropTail limit and loss, access links, MSS, IW, minimum RTO, delayed ACK, each flow's
start, controller, and PRR where its resolved recovery has it (SACK always: see
:func:`ns3_cell`).

Known differences between the two setups (docs/fidelity.md lists them with their effect):
ns-3 opens each connection with a SYN handshake at the flow's start (ccarena's ``rfc`` host
sends at once); ns-3's point-to-point device adds a 2-byte PPP header per packet; ns-3's queue
limit counts packets waiting, not the one being serialized; ns-3 has no RACK-TLP (ccarena's
``linux`` recovery, the default of most flavors, is SACK + RACK-TLP + PRR; ns-3 gets SACK + PRR);
each flavor's constants are ns-3's defaults.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from ccarena.analysis.calibration_cells import BANDS, SHARE_MEDIAN_BAND
from ccarena.errors import UserError
from ccarena.executor import ExperimentOutcome, run_experiment
from ccarena.experiment.calibration_suite import calibration_scenario
from ccarena.experiment.expand import RunPlan, expand
from ccarena.flavors import tcp_flavors
from ccarena.runspec import TcpFlowSpec
from ccarena.scenario import load_scenario
from ccarena.store import ExperimentStore

NS3_TYPES: dict[str, str] = {
    "reno": "ns3::TcpNewReno", "newreno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic",
    "bbr": "ns3::TcpBbr", "dctcp": "ns3::TcpDctcp", "highspeed": "ns3::TcpHighSpeed",
    "scalable": "ns3::TcpScalable", "htcp": "ns3::TcpHtcp", "bic": "ns3::TcpBic",
    "westwood": "ns3::TcpWestwoodPlus", "hybla": "ns3::TcpHybla", "illinois": "ns3::TcpIllinois",
    "vegas": "ns3::TcpVegas", "veno": "ns3::TcpVeno", "yeah": "ns3::TcpYeah", "lp": "ns3::TcpLp",
    "ledbat": "ns3::TcpLedbat",
}
"""ccarena flavor → the ns-3 3.44 congestion control (``src/internet/model/tcp-*.cc``) that
implements the same controller. ``reno`` and ``newreno`` differ in ccarena only by their loss
recovery (RFC 5681 vs RFC 6582), which the cell sets apart from the controller."""

ANCHORS = ("reno", "cubic")
"""Every flavor is paired with these (and with itself)."""

REFERENCE_NAME = "ccarena-reference-ns3"
"""Name of a reference experiment (``-quick`` appended for the quick suite)."""
REFERENCE_BACKEND = "ns3"
"""The reference's label in the tables (the simulator's is ``sim``)."""
RESULTS_TABLE = "reference-ns3-runs"
"""Stored per-flow ns-3 results (``reference-ns3-runs.parquet``)."""
CELLS_TABLE = "reference-ns3"
"""Stored per-cell comparison (``reference-ns3.parquet``)."""

_CLASSIC_RECOVERIES = ("tahoe", "reno", "newreno", "sack")
"""ccarena recoveries without PRR (ns-3 then runs its classic recovery, RFC 6675 §5's cwnd =
ssthresh on entry; PRR otherwise)."""
_ACCESS_QUEUE_PACKETS = 1000
"""The access links' DropTail limit in ns-3: deep enough never to drop at 1 Gbit/s."""


def ns3_available() -> bool:
    """True when the ``ns`` package (the ``ns3`` wheel) can be imported by this interpreter
    (looked up, not imported: importing it takes seconds)."""
    return importlib.util.find_spec("ns") is not None


def require_ns3() -> None:
    """Check that ns-3 can run here.

    Raises:
        UserError: the ``ns3`` wheel is not installed in this interpreter.
    """
    if not ns3_available():
        raise UserError("--reference ns3: ns-3 is not installed in this Python; fix: "
                        "pip install 'ccarena[ns3]' (the ns3 wheel, 3.44)")


def ns3_flavors(flavors: list[str] | None = None) -> list[str]:
    """The flavors both ccarena and ns-3 implement, in catalogue order (``flavors`` narrows them).

    Raises:
        UserError: a flavor given is not one ns-3 implements.
    """
    shared = [f for f in tcp_flavors() if f in NS3_TYPES]
    if flavors is None:
        return shared
    unknown = [f for f in flavors if f not in NS3_TYPES]
    if unknown:
        raise UserError(f"--flavors: ns-3 has no {', '.join(unknown)}; fix: choose among "
                        f"{' '.join(shared)}")
    return [f for f in shared if f in set(flavors)]


def reference_scenario(flavors: list[str], quick: bool = False) -> dict[str, Any]:
    """The calibration suite for ``flavors`` with ``host = "rfc"``, cut to the cells of the module
    docstring (singles, losses, same-flavor pairs, pairs with an anchor).

    Raises:
        ValueError: no flavor given.
    """
    scenario = calibration_scenario(flavors, quick=quick)
    anchors = set(ANCHORS)
    kept = []
    for part in scenario["parts"]:
        pair = part["name"].split("-vs-")
        if len(pair) == 1 or pair[0] == pair[1] or anchors & set(pair):
            kept.append(part)
    scenario.update(parts=kept, host="rfc", name=REFERENCE_NAME + ("-quick" if quick else ""),
                    description="ccarena calibrate --reference ns3: the simulator (host = rfc) "
                                "beside ns-3 3.44, cell by cell")
    return scenario


def _node_index(spec: Any, name: str) -> int:
    return next(i for i, n in enumerate(spec.nodes) if n.name == name)


def _link(spec: Any, src: int, dst: int) -> Any:
    return next(link for link in spec.links if link.from_ == src and link.to == dst)


def ns3_cell(plan: RunPlan) -> dict[str, Any]:
    """The ns-3 cell (:mod:`ccarena.references.ns3_cell`'s fields) of a dumbbell run.

    Raises:
        UserError: the run is not a TCP dumbbell (nodes r0, r1) with a packet-limited queue.
    """
    spec = plan.resolved.spec
    try:
        r0, r1 = _node_index(spec, "r0"), _node_index(spec, "r1")
        bottleneck = _link(spec, r0, r1)
    except StopIteration:
        raise UserError(f"{plan.run_id}: not a dumbbell; fix: the ns-3 reference runs the "
                        "calibration suite's dumbbells only") from None
    if bottleneck.queue.limit_packets is None:
        raise UserError(f"{plan.run_id}: topology.bottleneck.queue.limit: ns-3 cells need a limit "
                        "in packets; fix: give it as `Npkt`")
    flows = [f for f in spec.flows if isinstance(f, TcpFlowSpec)]
    first = flows[0]
    access = _link(spec, first.src, r0)
    # SACK on for every flow, also where ccarena's recovery has none (reno, newreno): without it
    # ns-3 3.44 resends segments the receiver holds (docs/fidelity.md: a lone Reno flow's receiver
    # got 7105 data packets for 4174 new ones in 5 s, 9.7 Mbit/s of 20).
    cells_flows = [{"flavor": f.flavor, "ns3_type": NS3_TYPES[f.flavor], "start_s": f.start_ns / 1e9,
                    "sack": True, "prr": f.recovery not in _CLASSIC_RECOVERIES} for f in flows]
    return {
        "rate_bps": bottleneck.rate_bps, "bottleneck_delay_s": bottleneck.delay_ns / 1e9,
        "access_rate_bps": access.rate_bps, "access_delay_s": access.delay_ns / 1e9,
        "queue_packets": bottleneck.queue.limit_packets, "access_queue_packets": _ACCESS_QUEUE_PACKETS,
        "loss": bottleneck.loss, "duration_s": spec.duration_ns / 1e9, "seed": plan.seed % 2**31 or 1,
        "mss_bytes": first.mss_bytes, "initial_cwnd_packets": first.initial_cwnd_packets,
        "min_rto_s": first.min_rto_ns / 1e9, "delayed_ack_s": first.delayed_ack_ns / 1e9,
        "ack_every_segments": first.ack_every_segments, "flows": cells_flows,
    }


def _run_batch(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run ``cells`` in one ns-3 subprocess (this interpreter, ``-m ccarena.references.ns3_cell``).

    Raises:
        RuntimeError: the subprocess failed (its standard error's last lines in the message).
    """
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # so a source checkout works too
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-m", "ccarena.references.ns3_cell", "-"],
                          input=json.dumps(cells), capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-8:])
        raise RuntimeError(f"ns-3 cell process exited with status {done.returncode}:\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_ns3_cells(cells: list[dict[str, Any]], jobs: int = 1) -> list[dict[str, Any]]:
    """Run ``cells`` on ns-3 in ``jobs`` subprocesses (each imports ns-3 once: a few seconds and
    a few hundred MB), results in the cells' order.

    Raises:
        UserError: ns-3 is not installed.
        RuntimeError: a subprocess failed.
    """
    require_ns3()
    jobs = max(1, min(jobs, len(cells)))
    batches = [cells[i::jobs] for i in range(jobs)]
    with ThreadPoolExecutor(jobs) as pool:
        outs = list(pool.map(_run_batch, batches))
    results: list[dict[str, Any]] = [{}] * len(cells)
    for j, out in enumerate(outs):
        for k, result in enumerate(out):
            results[j + k * jobs] = result
    return results


def ns3_rows(plans: list[RunPlan], results: list[dict[str, Any]]) -> pd.DataFrame:
    """Summary-like rows (one per flow) of ns-3 results: ``part``, ``point``, ``run_id``,
    ``backend`` (``"ns3"``), ``flow``, ``flavor``, ``start_s``, ``goodput_mean_bps``,
    ``rtt_min_s``, ``rtt_mean_s``, ``rto_count``, ``fast_recoveries``, ``bottleneck_drops`` (the
    cell's), ``path_loss``, ``queue_packets``, ``bdp_packets``, ``events_wall_s``."""
    rows = []
    for plan, result in zip(plans, results):
        cell = ns3_cell(plan)
        for i, (flow, out) in enumerate(zip(cell["flows"], result["flows"])):
            rows.append({"part": plan.part, "point": plan.point, "run_id": plan.run_id,
                         "backend": REFERENCE_BACKEND, "flow": i, "flavor": flow["flavor"],
                         "start_s": flow["start_s"], "goodput_mean_bps": out["goodput_bps"],
                         "rtt_min_s": out["rtt_min_s"], "rtt_mean_s": out["rtt_mean_s"],
                         "rto_count": out.get("rto_count"), "fast_recoveries": out.get("fast_recoveries"),
                         "bottleneck_drops": result.get("bottleneck_drops"),
                         "path_loss": cell["loss"], "queue_packets": cell["queue_packets"],
                         "bdp_packets": cell["rate_bps"] * 2 * (cell["bottleneck_delay_s"]
                                                                + 2 * cell["access_delay_s"]) / 8 / 1500,
                         "events_wall_s": result["events_wall_s"]})
    return pd.DataFrame(rows)


def _figures(rows: pd.DataFrame) -> dict[str, float]:
    """share, goodput, rtt_floor (single-flow cells) and rtt_mean of one run's flow rows."""
    rows = rows.sort_values("flow")
    goodputs = rows["goodput_mean_bps"].to_numpy(dtype=float)
    total = float(goodputs.sum())
    first = rows.iloc[0]
    return {"share": goodputs[0] / total if len(goodputs) > 1 and total > 0 else math.nan,
            "goodput": total,
            "rtt_floor": float(first["rtt_min_s"]) if len(goodputs) == 1 else math.nan,
            "rtt_mean": float(first["rtt_mean_s"])}


REFERENCE_BANDS: dict[str, float] = {name: BANDS[name] for name in ("share", "goodput", "rtt_floor")}
"""calibrate's bands (:data:`ccarena.analysis.calibration_cells.BANDS`) for the figures both
simulators report (the bottleneck's utilization is not measured on ns-3)."""


def reference_table(sim: pd.DataFrame, ns3: pd.DataFrame) -> pd.DataFrame:
    """One row per cell run on both: ``cell`` (label), ``part``, ``kind`` (single/pair/loss),
    ``first_flavor``, ``second_flavor``, ``buffer_bdp``; per figure f of share, goodput,
    rtt_floor, rtt_mean: ``f_ns3``, ``f_sim``, ``f_error`` (simulator − ns-3; relative to ns-3's
    for goodput and rtt_mean); ``verdict`` ("ok"/"off" against :data:`REFERENCE_BANDS`) and
    ``off`` (figures outside, comma-separated).

    ``sim`` is the simulator's summary (``summary.parquet`` rows, backend ``sim``), ``ns3`` the
    rows of :func:`ns3_rows`; both keyed by (``part``, ``point``).
    """
    out = []
    for (part, point), ref in ns3.groupby(["part", "point"], sort=False):
        mine = sim[(sim["part"].fillna("") == part) & (sim["point"] == point)]
        if not len(mine):
            continue
        ref_fig = _figures(ref)
        sim_fig = _figures(mine[mine["run_id"] == mine["run_id"].iloc[0]])
        ref = ref.sort_values("flow")
        flavors = [str(f) for f in ref["flavor"]]
        loss = float(ref["path_loss"].iloc[0])
        kind = "pair" if len(flavors) > 1 else ("loss" if loss > 0 else "single")
        bdp = round(4 * float(ref["queue_packets"].iloc[0]) / float(ref["bdp_packets"].iloc[0])) / 4
        label = f"{'-vs-'.join(flavors)} {bdp:g} BDP" + (f" {100 * loss:g}% loss" if loss else "")
        row: dict[str, Any] = {"cell": label, "part": part, "kind": kind, "first_flavor": flavors[0],
                               "second_flavor": flavors[1] if len(flavors) > 1 else "",
                               "buffer_bdp": bdp, "_order": int(point)}
        off = []
        for name in ("share", "goodput", "rtt_floor", "rtt_mean"):
            a, b = sim_fig[name], ref_fig[name]
            if not (math.isfinite(a) and math.isfinite(b)):
                err = math.nan
            elif name in ("goodput", "rtt_mean"):
                err = (a - b) / b if b > 0 else math.nan
            else:
                err = a - b
            row.update({f"{name}_{REFERENCE_BACKEND}": b, f"{name}_sim": a, f"{name}_error": err})
            band = REFERENCE_BANDS.get(name)
            if band is not None and math.isfinite(err) and abs(err) > band:
                off.append(name)
        row["verdict"] = "off" if off else "ok"
        row["off"] = ", ".join(off)
        out.append(row)
    if not out:
        return pd.DataFrame(columns=["cell", "part", "kind", "verdict"])
    table = pd.DataFrame(out).sort_values("_order", kind="stable").drop(columns="_order")
    return table.reset_index(drop=True)


def _share_of(table: pd.DataFrame, flavor: str, other: str, backend: str) -> float:
    """``flavor``'s share of the goodput against ``other`` at 1 BDP (NaN if the cell is absent)."""
    pairs = table[(table["kind"] == "pair") & (table["buffer_bdp"] == 1.0)]
    for first, second, flip in ((flavor, other, False), (other, flavor, True)):
        hit = pairs[(pairs["first_flavor"] == first) & (pairs["second_flavor"] == second)]
        if len(hit):
            share = float(hit[f"share_{backend}"].iloc[0])
            return 1 - share if flip and flavor != other else share
    return math.nan


def flavor_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per flavor (in catalogue order): ``flavor``, ``ns3_type``; its share of the goodput
    against each anchor at 1 BDP (``vs_<anchor>_ns3``, ``vs_<anchor>_sim``); the single flow's
    goodput (``goodput_ns3_bps``, ``goodput_sim_bps``) and mean RTT (``rtt_ns3_s``, ``rtt_sim_s``)
    at 1 BDP; ``worst_share_error`` (largest |share error| over the pair cells it is in),
    ``cells`` and ``cells_ok``."""
    rows = []
    flavors = [f for f in tcp_flavors() if f in set(table["first_flavor"]) | set(table["second_flavor"])]
    for flavor in flavors:
        mine = table[(table["first_flavor"] == flavor) | (table["second_flavor"] == flavor)]
        single = table[(table["kind"] == "single") & (table["first_flavor"] == flavor)
                       & (table["buffer_bdp"] == 1.0)]
        row: dict[str, Any] = {"flavor": flavor, "ns3_type": NS3_TYPES.get(flavor, "")}
        for anchor in ANCHORS:
            for backend in (REFERENCE_BACKEND, "sim"):
                row[f"vs_{anchor}_{backend}"] = _share_of(table, flavor, anchor, backend)
        for name, column in (("goodput", "goodput"), ("rtt", "rtt_mean")):
            unit = "_bps" if name == "goodput" else "_s"
            for backend in (REFERENCE_BACKEND, "sim"):
                row[f"{name}_{backend}{unit}"] = (float(single[f"{column}_{backend}"].iloc[0])
                                                  if len(single) else math.nan)
        errs = mine["share_error"].to_numpy(dtype=float)
        errs = np.abs(errs[np.isfinite(errs)])
        row["worst_share_error"] = float(errs.max()) if errs.size else math.nan
        row["cells"] = len(mine)
        row["cells_ok"] = int((mine["verdict"] == "ok").sum())
        rows.append(row)
    return pd.DataFrame(rows)


def _f(value: float, fmt: str) -> str:
    return format(value, fmt) if math.isfinite(value) else "–"


def _percent(fraction: float) -> str:
    return f"{100 * fraction:+.0f}%" if math.isfinite(fraction) else "–"


def terminal_flavor_table(flavors: pd.DataFrame) -> Table:
    """:func:`flavor_table` as a rich table that fits 80 columns (ns-3 | simulator per figure)."""
    table = Table(title="ns-3 3.44 | ccarena sim (host = rfc), per flavor", title_justify="left",
                  padding=(0, 1), show_edge=False)
    table.add_column("flavor")
    for anchor in ANCHORS:
        table.add_column(f"vs {anchor}", justify="right")
    table.add_column("Mbit/s", justify="right")
    table.add_column("RTT ms", justify="right")
    table.add_column("worst", justify="right")
    table.add_column("ok", justify="right")
    for rec in flavors.to_dict("records"):
        cells = [rec["flavor"]]
        for anchor in ANCHORS:
            cells.append(f"{_f(rec[f'vs_{anchor}_ns3'], '.2f')}|{_f(rec[f'vs_{anchor}_sim'], '.2f')}")
        cells.append(f"{_f(rec['goodput_ns3_bps'] / 1e6, '.1f')}|{_f(rec['goodput_sim_bps'] / 1e6, '.1f')}")
        cells.append(f"{_f(rec['rtt_ns3_s'] * 1e3, '.0f')}|{_f(rec['rtt_sim_s'] * 1e3, '.0f')}")
        cells.append(_f(rec["worst_share_error"], ".2f"))
        cells.append(f"{rec['cells_ok']}/{rec['cells']}")
        table.add_row(*cells)
    return table


def terminal_cell_table(table: pd.DataFrame) -> Table:
    """:func:`reference_table` as a rich table that fits 80 columns."""
    out = Table(title="per cell: ns-3 | sim, error = sim − ns-3", title_justify="left",
                padding=(0, 1), show_edge=False)
    for name, justify in (("cell", "left"), ("share", "right"), ("err", "right"),
                          ("Mbit/s", "right"), ("err", "right"), ("", "left")):
        out.add_column(name, justify=justify)  # type: ignore[arg-type]
    for rec in table.to_dict("records"):
        out.add_row(rec["cell"],
                    f"{_f(rec['share_ns3'], '.2f')}|{_f(rec['share_sim'], '.2f')}",
                    _f(rec["share_error"], "+.2f"),
                    f"{_f(rec['goodput_ns3'] / 1e6, '.1f')}|{_f(rec['goodput_sim'] / 1e6, '.1f')}",
                    _percent(rec["goodput_error"]),
                    rec["verdict"])
    return out


_NAMED_OFF = 5
"""Cells off their bands that :func:`verdict_line` names."""


def verdict_line(table: pd.DataFrame) -> str:
    """One sentence: cells in band, the median |share error| over pairs, the (at most
    :data:`_NAMED_OFF`) cells off with the largest share errors."""
    if not len(table):
        return "no cell ran on both ns-3 and the simulator: nothing to compare"
    shares = table["share_error"].to_numpy(dtype=float)
    shares = np.abs(shares[np.isfinite(shares)])
    median = float(np.median(shares)) if shares.size else math.nan
    off = table[table["verdict"] == "off"]
    text = (f"{len(table) - len(off)} of {len(table)} cells within calibrate's bands; median "
            f"|share error| {_f(median, '.3f')} (band {SHARE_MEDIAN_BAND:g})")
    if len(off):  # the worst few by share error: the per-cell table lists every one
        worst = off.assign(_abs=off["share_error"].abs().fillna(0)).sort_values("_abs", ascending=False)
        named = [f"{c} ({o})" for c, o in zip(worst["cell"][:_NAMED_OFF], worst["off"][:_NAMED_OFF])]
        more = len(off) - len(named)
        text += "; off, largest share errors first: " + "; ".join(named) + (f"; {more} more" if more else "")
    return text


def run_reference(root: str | Path, *, quick: bool = False, flavors: list[str] | None = None,
                  jobs: int | None = None, resume: bool = False, console: Console | None = None,
                  show_progress: bool = True) -> tuple[ExperimentOutcome, pd.DataFrame]:
    """Run :func:`reference_scenario` into ``root`` on the simulator and on ns-3, store the ns-3
    rows (:data:`RESULTS_TABLE`) and the comparison (:data:`CELLS_TABLE`).

    Args:
        root: the experiment directory.
        quick: the quick suite (1 BDP, 5/12 s runs).
        flavors: the flavors to check (default: :func:`ns3_flavors`).
        jobs: worker processes for the simulator's runs and ns-3 subprocesses (default: cores).
        resume, console, show_progress: as for :func:`ccarena.executor.run_experiment`.

    Returns:
        The simulator's outcome and :func:`reference_table` (empty if nothing ran on both).

    Raises:
        UserError: ns-3 is not installed, or a flavor ns-3 lacks was asked for.
        RuntimeError: an ns-3 subprocess failed.
    """
    require_ns3()  # before the simulator's runs, not after them
    chosen = ns3_flavors(flavors)
    loaded = load_scenario(reference_scenario(chosen, quick=quick))
    plans = expand(loaded)
    outcome = run_experiment(loaded, root, jobs=jobs, force=not resume, console=console,
                             show_progress=show_progress, backends=["sim"])
    if console is not None and show_progress:
        console.print(f"ns-3: {len(plans)} cells", highlight=False)
    results = run_ns3_cells([ns3_cell(p) for p in plans], jobs=jobs or os.cpu_count() or 1)
    ns3 = ns3_rows(plans, results)
    store = ExperimentStore(root)
    store.write_experiment_table(RESULTS_TABLE, ns3)
    table = pd.DataFrame()
    if (Path(root) / "summary.parquet").is_file():
        table = reference_table(store.read_summary(), ns3)
        store.write_experiment_table(CELLS_TABLE, table)
    return outcome, table


REFERENCES = ("ns3",)
"""What ``ccarena calibrate --reference`` takes."""


def calibrate_against(reference: str, *, quick: bool, out: Path | None, results: Path,
                      jobs: int | None, resume: bool, quiet: bool, repeats: int = 1) -> None:
    """``ccarena calibrate --reference REFERENCE``: :func:`run_reference` into ``out`` (default
    ``RESULTS/ccarena-reference-ns3[-quick]``), then the per-flavor and per-cell tables and the
    verdict on standard output, 80 columns wide.

    Raises:
        UserError: an unknown reference, ``repeats`` other than 1, or ns-3 not installed.
    """
    if repeats != 1:
        raise UserError("--repeats: not with --reference (each cell runs once on each side, "
                        "with the suite's seed); fix: leave --repeats out")
    if reference not in REFERENCES:
        raise UserError(f"--reference: no reference {reference!r}; fix: use one of "
                        f"{', '.join(REFERENCES)}")
    root = out if out is not None else results / (REFERENCE_NAME + ("-quick" if quick else ""))
    progress = Console(stderr=True)
    outcome, table = run_reference(root, quick=quick, jobs=jobs, resume=resume, console=progress,
                                   show_progress=not quiet)
    narrow = Console(width=80, force_terminal=sys.stdout.isatty())
    if len(table):
        narrow.print(terminal_flavor_table(flavor_table(table)))
        narrow.print("vs X: the flavor's share of the goodput against X (1 BDP); Mbit/s, RTT: "
                     "one flow alone (1 BDP); worst: largest |share error| of its pairs; "
                     "ok: its cells within calibrate's bands", highlight=False)
        narrow.print(terminal_cell_table(table))
    narrow.print(verdict_line(table), highlight=False)
    narrow.print(f"results: {root}", soft_wrap=True, highlight=False)
    outcome.raise_for_failures()
