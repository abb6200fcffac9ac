"""``ccarena import iperf3 FILE.json…``, ``ccarena import flent FILE.flent.gz…`` and ``ccarena
import pcap FILE.pcap…``: real measurements (:mod:`ccarena.importers`) written as an experiment
directory. Heavy modules are loaded inside the commands."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer

from ccarena.errors import UserError
from ccarena.importers.bounded_read import MEMORY_PER_FILE_BYTE


def _run(tool: str, parse: Callable[[Path], Any], files: List[Path], name: Optional[str],
         out: Optional[Path], results: Path, about: Callable[[Any], str],
         max_memory: Optional[str], merged: bool = False) -> None:
    """Import ``files`` (each one run; with ``merged``, all of them one run parsed by ``parse``
    from the first file's name) into the experiment directory and say what was done."""
    from ccarena.errors import printable
    from ccarena.inputs import memory_budget, parse_max_memory
    from ccarena.importers.writer import import_files

    if name is None:
        from ccarena.importers.writer import file_stem

        name = (file_stem(files[0]) if files else "") or tool
    if not name.strip() or "/" in name or name in (".", ".."):
        raise UserError(f"--name: '{name}' cannot name an experiment directory; give a plain name")
    root = out if out is not None else results / name
    with memory_budget(parse_max_memory(max_memory)):
        outcome = import_files(tool, parse, files[:1] if merged else files, root, name, about)
    if outcome.written:
        what = (f"{len(files)} {tool} file(s) merged into one run" if merged else
                f"{len(outcome.written)} of {len(files)} {tool} file(s)")
        print(f"imported {what} into {root} ({outcome.total_runs} runs there)", flush=True)
        print(f"  ccarena report {root}", flush=True)
    sys.stdout.flush()
    for line in outcome.warnings:  # a metric left empty is said, never silent
        print(f"warning: {printable(line)}", file=sys.stderr, flush=True)
    if outcome.problems:
        # One line per file not imported (the files above were imported and are kept).
        raise UserError(outcome.problems[0], outcome.problems[1:])


# The options every ``ccarena import`` command takes, declared once: typer copies an option's
# declaration for each command that takes it, so the commands share none of their state.
_NAME_OPTION: Any = typer.Option(None, "--name",
                                 help="Experiment name [default: the first file's name].")
_OUT_OPTION: Any = typer.Option(None, "--out", "-o",
                                help="Experiment directory [default: RESULTS/<name>].")
_RESULTS_OPTION: Any = typer.Option(Path("results"), "--results",
                                    help="Parent of the experiment directory.")


def _import_command(tool: str, files_help: str, help_text: str) -> Callable[..., None]:
    """The ``ccarena import TOOL FILES…`` command: each file parsed by
    :mod:`ccarena.importers.<tool>` (its ``parse`` and ``about``, loaded when the command runs)
    and written as one run of the experiment; ``files_help`` is the FILES argument's help and
    ``help_text`` the command's (its docstring)."""

    def command(
        files: List[Path] = typer.Argument(..., help=files_help, show_default=False),
        name: Optional[str] = _NAME_OPTION,
        out: Optional[Path] = _OUT_OPTION,
        results: Path = _RESULTS_OPTION,
        max_memory: Optional[str] = typer.Option(
            None, "--max-memory", help="Memory an import may use, e.g. 8GB; a file may be "
                                       f"1/{MEMORY_PER_FILE_BYTE} of it [default: half this "
                                       "machine's memory]."),
    ) -> None:
        parser = importlib.import_module(f"ccarena.importers.{tool}")
        _run(tool, parser.parse, files, name, out, results, parser.about, max_memory)

    command.__name__ = command.__qualname__ = tool
    command.__doc__ = help_text
    return command


iperf3 = _import_command("iperf3", "iperf3 --json output files (one run each).", """\
    Import iperf3 --json results (TCP or UDP, -P N, -R, --bidir) as an experiment: one run per
    file, one flow per stream, a sample per interval; then report, query, plot or compare it.
    Run the client with --get-server-output (server: iperf3 -s -J) for the per-interval goodput of
    an upload; a metric left empty is named in a warning line.

    Importing into the same directory again adds the new files (the same file replaces its run).

    Examples:

      iperf3 -c HOST -t 30 -i 0.1 -C cubic --json --get-server-output > cubic-1.json

      ccarena import iperf3 cubic-*.json --name wan-cubic

      ccarena compare results/wan-cubic-sim results/wan-cubic
    """)
"""``ccarena import iperf3 FILE.json…``: iperf3 ``--json`` output files as an experiment."""

flent = _import_command("flent", "Flent data files (.flent.gz; one run each).", """\
    Import Flent data files as an experiment: one run per file, a flow per throughput series
    (goodput samples) and per ping series (RTT samples).

    Example:

      ccarena import flent rrul-2024-05-01T120000.flent.gz --name home-rrul
    """)
"""``ccarena import flent FILE.flent.gz…``: Flent data files as an experiment."""


def _interval_s(text: str) -> float:
    """``--interval`` in seconds.

    Raises:
        UserError: not a positive time.
    """
    from ccarena.units import UnitError, parse_time_ns

    try:
        interval_ns = parse_time_ns(text)
    except UnitError as err:
        raise UserError(f"--interval: {err}") from None
    if interval_ns <= 0:
        raise UserError(f"--interval: '{text}' is not positive; give a sample interval such as 100ms")
    return interval_ns / 1e9


def pcap(
    files: List[Path] = typer.Argument(..., help="pcap or pcapng captures of TCP flows (one run "
                                                 "each; with --merge, one run).", show_default=False),
    merge: bool = typer.Option(False, "--merge", help="The files are one capture point split "
                                                      "in several files (one per link direction, "
                                                      "as [output] pcap writes them): merge them "
                                                      "by timestamp into one run."),
    interval: str = typer.Option("100ms", "--interval", help="Sample interval."),
    flavor: Optional[str] = typer.Option(None, "--flavor", help="The flows' congestion "
                                         "controller (a TCP header does not say): one name, or "
                                         "one per flow with commas [default: unknown]."),
    name: Optional[str] = _NAME_OPTION,
    out: Optional[Path] = _OUT_OPTION,
    results: Path = _RESULTS_OPTION,
    max_memory: Optional[str] = typer.Option(
        None, "--max-memory", help="Memory an import may use, e.g. 8GB [default: half this "
                                   "machine's memory]."),
) -> None:
    """\
    Import packet captures (pcap, pcapng) of TCP flows as an experiment: one flow per direction
    of a TCP connection that carried data, a sample per --interval with goodput (bytes ACKed),
    throughput, RTT, bytes in flight (the cwnd estimate) and retransmissions; from SACK blocks,
    losses, spurious retransmissions (D-SACK) and recoveries. Capture at the sender, or at a
    bottleneck, with both directions (the data and its ACKs); headers only (-s 128) is enough.

    Examples:

      tcpdump -i eth0 -s 128 -w cubic.pcap tcp port 5201

      ccarena import pcap cubic.pcap --flavor cubic --name wan-cubic

      ccarena import pcap --merge pcap/left0_to_r0.pcap pcap/r0_to_left0.pcap
    """
    parser = importlib.import_module("ccarena.importers.pcap")
    interval_s = _interval_s(interval)
    if merge:
        def parse(_first: Path) -> Any:
            return parser.parse_files(files, interval_s, flavor)
    else:
        def parse(path: Path) -> Any:
            return parser.parse_files([path], interval_s, flavor)
    _run("pcap", parse, files, name, out, results, parser.about, max_memory, merged=merge)
