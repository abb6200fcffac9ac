"""``ccarena send FILE HOST:PORT`` and ``ccarena recv``: file transfer over ccarena's transport on
UDP (:mod:`ccarena.transfer`), from the sender's and the receiver's side."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ccarena.errors import UserError, printable
from ccarena.transfer.record import human_bytes, record_json, record_table


def _engine() -> Any:
    from ccarena import _engine

    return _engine


def send(
    file: Path = typer.Argument(..., help="The file to send.", show_default=False),
    dest: str = typer.Argument(..., metavar="HOST:PORT", help="The receiver (ccarena recv).",
                               show_default=False),
    flavor: str = typer.Option("cubic", "--flavor", help="Congestion control (ccarena flavors; udt: UDT's own "
                                                              "transport)."),
    recovery: Optional[str] = typer.Option(
        None, "--recovery", help="Loss recovery: tahoe, reno, newreno, sack, prr, linux "
                                 "[default: the flavor's]."),
    json_out: bool = typer.Option(False, "--json", help="Print the record as JSON on stdout."),
    name: Optional[str] = typer.Option(None, "--name", help="Name to store it under [default: "
                                                            "the file's name]."),
    timeout: float = typer.Option(5.0, "--timeout", min=0.1,
                                  help="Seconds to wait for the receiver to answer."),
    limit_rate: Optional[str] = typer.Option(
        None, "--limit-rate", metavar="RATE",
        help="Send at most this many bits per second of file data, e.g. 50Mbps, in bursts "
             "of about 4 ms [default: only congestion control limits it]."),
) -> None:
    """Send FILE to a ccarena receiver over ccarena's transport on UDP.

    The receiver checks the SHA-256 at the end; if a transfer is interrupted (Ctrl-C), the same
    command again sends only what the receiver does not hold yet.

    Examples:

      ccarena send data.bin 192.0.2.7:9000

      ccarena send data.bin localhost:9000 --flavor bbr --json

      ccarena send data.bin 192.0.2.7:9000 --limit-rate 20Mbps
    """
    max_rate_bps = None
    if limit_rate is not None:
        from ccarena.units import UnitError, parse_rate_bps

        try:
            max_rate_bps = parse_rate_bps(limit_rate)
        except UnitError as err:
            raise UserError(f"--limit-rate: {err} (e.g. --limit-rate 50Mbps)") from None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    engine = _engine()
    stderr = Console(stderr=True)
    show = not json_out and stderr.is_terminal
    bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                   TransferSpeedColumn(), TimeRemainingColumn(), console=stderr,
                   disable=not show, transient=True)
    task = bar.add_task(f"{file.name} → {dest}", total=None)

    def progress(acked: int, stream: int, resumed: int, total: int, elapsed_s: float) -> None:
        bar.update(task, total=max(total, 1), completed=resumed + acked)

    with bar:
        try:
            record = engine.udp_send_file(str(file), dest, flavor=flavor, recovery=recovery,
                                          progress=progress, name=name,
                                          handshake_timeout_s=timeout,
                                          max_rate_bps=max_rate_bps)
        except engine.TransferError as err:
            raise UserError(str(err)) from None
        except KeyboardInterrupt:
            print("interrupted: the receiver keeps what arrived; the same command again sends only "
                  "the rest", file=sys.stderr, flush=True)
            raise
    if json_out:
        print(record_json(record), flush=True)
    else:
        Console(width=None if sys.stdout.isatty() else 200).print(record_table(record))


def recv(
    bind: str = typer.Option("0.0.0.0:9000", "--bind", metavar="ADDR:PORT",
                             help="Address and UDP port to listen on."),
    directory: Path = typer.Option(Path("."), "--dir", help="Directory received files go into."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that exist."),
    once: bool = typer.Option(False, "--once", help="Exit after the first transfer ends."),
    json_out: bool = typer.Option(False, "--json", help="Print each finished transfer as JSON "
                                                        "on stdout."),
) -> None:
    """Receive files sent with 'ccarena send' into --dir, until Ctrl-C.

    Files are written only inside --dir, under a plain name, never over an existing file unless
    --force. An interrupted transfer's bytes are kept (hidden .ccarena-part-* files) so the
    sender's rerun resumes. Peers that move no data lose their connection to new senders, and
    partial files are capped per address and in total (docs/udp-wire.md).

    Examples:

      ccarena recv --dir incoming

      ccarena recv --bind 127.0.0.1:9000 --dir /tmp/in --once --json
    """
    from rich.console import Console

    engine = _engine()
    # Names and reasons come from remote peers: no rich markup (a "[link=…]" name would print a
    # hyperlink), and non-printing characters (bidi overrides pass the name check) as escapes.
    stderr = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
    try:
        receiver = engine.UdpReceiver(bind, str(directory), force=force)
    except engine.TransferError as err:
        raise UserError(str(err)) from None
    stderr.print(f"listening on {receiver.local_addr} (UDP), writing into {receiver.dir}")
    failures: list[str] = []

    def on_event(ev: dict[str, Any]) -> None:
        kind = ev["event"]
        if kind == "tick":
            return
        name, reason = printable(str(ev.get("name", ""))), printable(str(ev.get("reason", "")))
        if kind == "started":
            resumed = (f", resuming with {human_bytes(ev['resumed_bytes'])} held"
                       if ev["resumed_bytes"] else "")
            stderr.print(f"{ev['peer']}: receiving {name} "
                         f"({human_bytes(ev['file_bytes'])}{resumed})")
        elif kind == "finished":
            stderr.print(f"{ev['peer']}: {name} complete, "
                         f"{human_bytes(ev['stream_bytes'])} in {ev['duration_s']:.2f} s "
                         f"({ev['goodput_bps'] / 1e6:.1f} Mbit/s), SHA-256 verified")
            if json_out:
                print(record_json(ev), flush=True)
        elif kind == "failed":
            stderr.print(f"{ev['peer']}: {name} not finished: {reason}")
            failures.append(f"{name}: {reason}")

    try:
        receiver.serve(once=once, on_event=on_event)
    except engine.TransferError as err:
        raise UserError(str(err)) from None
    except KeyboardInterrupt:
        stderr.print("stopped; unfinished transfers are kept for a resume")
        raise
    finally:
        dropped = {k: v for k, v in receiver.counters.items()
                   if k not in ("datagrams", "completed", "failed") and v}
        if dropped:
            stderr.print("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    if once and failures:
        raise UserError(failures[0])
