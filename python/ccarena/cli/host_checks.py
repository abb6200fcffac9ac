"""``ccarena doctor`` and ``ccarena calibrate``: what this machine's Linux TCP stack offers the
kernel backend (or clean up after killed runs), and how closely the simulator matches it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ccarena.cli.console import stderr, stdout
from ccarena.cli.exits import EXIT_ENGINE_FAULT, interrupted_status


def doctor(
    cleanup: bool = typer.Option(False, "--cleanup",
                                 help="Remove every leftover ccarena namespace, link and process."),
    tag: Optional[str] = typer.Option(None, "--tag",
                                      help="With --cleanup: only runs whose tag starts with TAG."),
) -> None:
    """Check what the kernel backend can use here (root, namespaces, qdiscs, netem or the relay,
    nftables, tools, congestion controllers, MPTCP, the ECN modes its TCP negotiates — classic
    RFC 3168 and Accurate ECN, RFC 9768, for kernel.ecn — and TCP Prague), or clean up after
    killed runs.

    Examples:

      ccarena doctor

      ccarena doctor --cleanup
    """
    from ccarena.backends.kernel.doctor import cleanup_report, doctor_table

    if cleanup:
        lines, ok = cleanup_report(tag)
        for line in lines:
            stdout.print(line, highlight=False)
        if not ok:
            raise typer.Exit(EXIT_ENGINE_FAULT)
        return
    stdout.print(doctor_table())


def calibrate(
    quick: bool = typer.Option(False, "--quick", help="The quick suite: 1 BDP only, shorter runs "
                                                      "(under 3 minutes; the full suite under 15)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="Experiment directory [default: RESULTS/ccarena-calibration"
                                            "[-quick]]."),
    results: Path = typer.Option(Path("results"), "--results", help="Parent of the experiment directory."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1,
                                       help="Worker processes for the simulator's runs [default: all "
                                            "cores]; kernel runs go one at a time."),
    repeats: int = typer.Option(1, "--repeats", "-r", min=1,
                                help="Runs per cell on each backend, each with its own seed; cells "
                                     "compare the means (a 30 s deep-buffer pair is decided by its "
                                     "start-up: repeats narrow that spread, at N times the time)."),
    resume: bool = typer.Option(False, "--resume",
                                help="Keep runs already complete in the directory (after Ctrl-C); "
                                     "by default every run is done again."),
    report: bool = typer.Option(True, "--report/--no-report", help="Write report.html and figures."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
    reference: Optional[str] = typer.Option(None, "--reference",
                                            help="ns3: run the cells on ns-3 3.44 (pip install "
                                                 "'ccarena[ns3]') beside the simulator with host = "
                                                 "rfc, instead of the kernel (no root needed)."),
) -> None:
    """Check the simulator against this machine's Linux TCP stack (needs root), or against ns-3.

    Runs a fixed suite of small dumbbell scenarios (20 Mbit/s, 40 ms RTT) on the simulator and on
    the kernel backend for every flavor the kernel offers: single-flow utilization and RTT floor,
    same-flavor pairs, every mixed pair at 0.5, 1 and 4 BDP of buffer (1 BDP with --quick), and 1%
    random loss. Prints, per cell, sim vs kernel (the first flow's share, the total goodput, the
    utilization, the RTT floor) with the difference and a verdict against the bands, and stores
    the table as calibration.parquet beside the runs.

    The exit status is 0 whether or not every cell is within its band: a calibration is a
    measurement, and the cells outside are named.

    Examples:

      sudo ccarena calibrate --quick

      sudo ccarena calibrate --out results/calibration -j 2

      sudo ccarena calibrate --repeats 3

      ccarena calibrate --reference ns3 --quick
    """
    if reference is not None:
        from ccarena.references.ns3_suite import calibrate_against

        calibrate_against(reference, quick=quick, out=out, results=results, jobs=jobs,
                          resume=resume, quiet=quiet, repeats=repeats)
        return
    from ccarena.analysis.calibration_cells import CALIBRATION_NAME, verdict_line
    from ccarena.executor.calibration_runs import run_calibration
    from ccarena.report import write_report
    from ccarena.report.calibration_section import bands_text
    from ccarena.report.calibration_section import terminal_table as calibration_terminal_table
    from ccarena.results import Result

    from rich.console import Console

    root = out if out is not None else results / (CALIBRATION_NAME + ("-quick" if quick else ""))
    outcome, table = run_calibration(root, quick=quick, repeats=repeats, jobs=jobs, resume=resume,
                                     console=stderr.get(), show_progress=not quiet)
    if outcome.interrupted:
        done = len(outcome.completed) + len(outcome.skipped)
        print(f"interrupted: {done} of {len(outcome.plans)} runs complete, kept in {root}; "
              "run `ccarena calibrate --resume` with the same options to finish the rest",
              file=sys.stderr, flush=True)
        raise typer.Exit(interrupted_status())
    narrow = Console(width=80, force_terminal=stdout.is_terminal)
    if len(table):
        narrow.print(calibration_terminal_table(table))
    narrow.print(bands_text(), highlight=False)
    narrow.print(verdict_line(table), highlight=False)
    if report and (root / "summary.parquet").is_file():
        stdout.print(f"report: {write_report(Result(root, outcome))}", soft_wrap=True)
    stdout.print(f"results: {root}", soft_wrap=True)
    outcome.raise_for_failures()
