"""``ccarena identify TRACE``: which congestion controller produced a trace
(:mod:`ccarena.identify`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from ccarena.cli.console import stdout


def identify(
    trace: Path = typer.Argument(..., help="A run or experiment directory, an iperf3 JSON, a "
                                           "pcap/pcapng or a directory of one capture point's "
                                           "files (a run's pcap/), or one flow's samples "
                                           "(.parquet/.csv)."),
    flow: Optional[str] = typer.Option(None, "--flow", metavar="N|NAME", help="The flow: index or name [default: "
                                                            "the trace's only flow]."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON object (best, confidence, "
                                                        "ranking, features, path)."),
    exclude: Optional[List[str]] = typer.Option(None, "--exclude", metavar="FLAVOR", help="Leave this flavor out "
                                                "of the library (repeatable)."),
    top: int = typer.Option(5, "--top", min=1, metavar="N", help="Rows of the ranking shown."),
) -> None:
    """Identify the congestion controller of one TCP flow of a trace.

    Estimates the path the flow saw (base RTT, bottleneck rate, buffer, random loss), replays it
    on the simulator with every catalogue flavor, and ranks the flavors by the distance between
    the trace's features and each replay's (decrease factor at loss, growth between losses,
    RTT inflation, cwnd variation, ProbeRTT dips, start-up ramp, response to ECN marks). The
    answer is `unknown` when no replay comes close, and "unknown, closest: FLAVOR" when the
    best is farther from the trace than that flavor's replays are from each other. Flavors that behave alike on the path (HyBla and Reno at a short
    RTT) are tied; the catalogue's order decides between them.

    Examples:

      ccarena identify results/quickstart/runs/r0 --flow 0

      ccarena identify iperf3.json --json

      ccarena identify capture.pcap --flow 0 --exclude cubic

      ccarena identify results/captured/runs/r0/pcap
    """
    from ccarena.identify import identify as run_identification
    from ccarena.identify.classify import LOW_CONFIDENCE

    result = run_identification(trace, flow, exclude=exclude or ())
    if json_out:
        print(json.dumps(result.as_json(), indent=2))
        return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    import textwrap

    width = stdout.width

    def say(text: str) -> None:
        for line in textwrap.wrap(text, width=width, subsequent_indent="  ",
                                  break_on_hyphens=False):
            stdout.print(line, highlight=False, markup=False, soft_wrap=True)

    say(f"trace: {result.source}")
    say(f"path: {result.path.describe()}")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("rank", justify="right")
    table.add_column("flavor", no_wrap=True)
    table.add_column("best variant", no_wrap=True)
    table.add_column("distance", justify="right")
    table.add_column("score", justify="right")
    for i, c in enumerate(result.ranking[:top], start=1):
        # Text, not markup: a variant's name has brackets ("cubic[linux]").
        table.add_row(str(i), c.flavor, Text(c.variant), f"{c.distance:.2f}", f"{c.score:.2f}")
    stdout.print(table, highlight=False)
    if result.best != "unknown" and not result.confident:
        # A guess: a flavor not in the library, or one this trace cannot tell from another.
        say(f"answer: unknown, closest: {result.best} (confidence {result.confidence:.2f} < "
            f"{LOW_CONFIDENCE}, {result.wall_s:.1f} s)")
    else:
        say(f"answer: {result.best} (confidence {result.confidence:.2f}, {result.wall_s:.1f} s)")
    say(f"evidence: {result.evidence}")
