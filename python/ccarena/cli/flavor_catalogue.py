"""``ccarena flavors [NAME]``: the catalogue of flavors (TCP congestion controllers, UDT, UDP
transports) with their families, or one flavor's parameters, defaults and source."""

from __future__ import annotations

from typing import Optional

import typer

from ccarena.cli.console import stdout


def flavors(
    name: Optional[str] = typer.Argument(None, help="One flavor: its parameters, defaults and "
                                                    "source [default: list every flavor]."),
) -> None:
    """List every flavor (TCP congestion controllers from the engine, UDT, UDP transports) with
    its family, or show one flavor's parameters.

    Examples:

      ccarena flavors

      ccarena flavors cubic
    """
    from ccarena.flavors import catalogue_rows, describe

    if name is not None:
        for line in describe(name, width=stdout.width):
            stdout.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    from rich import box
    from rich.table import Table

    # Names and families are never cut (they are what one types); the source takes what is left.
    table = Table(title="flavors", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  caption="`ccarena flavors NAME`: what a flavor does, its parameters and source",
                  caption_justify="left")
    rows = catalogue_rows()
    widths = [max(len(heading), *(len(r[i]) for r in rows))
              for i, heading in enumerate(("name", "family", "recovery"))]
    for heading, wide in zip(("name", "family", "recovery"), widths):
        table.add_column(heading, no_wrap=True, min_width=wide)
    # Each boundary between columns takes 3 characters (padding, rule, padding).
    rest = max(stdout.width - sum(widths) - 3 * len(widths), 10)
    table.add_column("source", no_wrap=True, overflow="ellipsis", max_width=rest)
    for row in rows:
        table.add_row(*row)
    stdout.print(table, highlight=False)
