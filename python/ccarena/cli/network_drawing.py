"""``ccarena topo SCENARIO``: describe a scenario's network and draw it (SVG, PNG or PDF)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ccarena.cli.console import stdout
from ccarena.errors import UserError


def topo(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="Drawing: .svg, .png or .pdf [default: <scenario>-topology.svg]."),
    part: Optional[str] = typer.Option(None, "--part", help="The part whose network to draw [default: the first]."),
) -> None:
    """Draw the scenario's network: layers for trees (hosts at the bottom), link classes coloured
    with their rates, and describe it.

    Examples:

      ccarena topo examples/quickstart.toml

      ccarena topo fat-tree.toml --out topo.png
    """
    from ccarena.report.topology_figure import write_topology
    from ccarena.scenario import load_scenario

    loaded = load_scenario(scenario)
    parts = {p.name: p for p in loaded.parts}
    if part is not None and part not in parts:
        raise UserError(f"--part: no part '{part}'; parts: {', '.join(parts)}")
    topology = (parts[part] if part is not None else loaded.parts[0]).scenario.topology
    for line in topology.describe():
        stdout.print(line, highlight=False)
    path = write_topology(topology, out if out is not None else Path(f"{scenario.stem}-topology.svg"))
    stdout.print(f"drawing: {path}", highlight=False, soft_wrap=True)
