"""``ccarena trace gen KIND --out FILE``: write a synthetic capacity trace in Mahimahi's format
(:mod:`ccarena.traces.generate`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ccarena import units
from ccarena.errors import UserError

PARAMS = {
    "on-off": {"rate": "12Mbps", "off_rate": "0", "on": "2s", "off": "500ms"},
    "gilbert-elliott": {"good_rate": "24Mbps", "bad_rate": "3Mbps", "p_bad": 0.05, "p_good": 0.2},
    "random-walk": {"rate": "12Mbps", "min_rate": "1Mbps", "max_rate": "48Mbps", "sigma": 0.2},
}
"""Each kind's options and their defaults (as written on the command line)."""


def _rate(option: str, value: str) -> int:
    if value.strip() in ("0", "0bps"):
        return 0
    try:
        return units.parse_rate_bps(value)
    except units.UnitError as err:
        raise UserError(f"--{option.replace('_', '-')}: {err}") from None


def _time(option: str, value: str) -> int:
    try:
        return units.parse_time_ns(value)
    except units.UnitError as err:
        raise UserError(f"--{option.replace('_', '-')}: {err}") from None


def gen(
    kind: str = typer.Argument(..., help="on-off, gilbert-elliott or random-walk."),
    out: Path = typer.Option(..., "--out", "-o", help="The trace file to write (Mahimahi format)."),
    duration: str = typer.Option("30s", "--duration", help="Length of the trace (its period when looped)."),
    seed: int = typer.Option(1, "--seed", help="Seed of the random process."),
    step: Optional[str] = typer.Option(None, "--step", help="How long each rate holds (whole ms) "
                                       "[default: 10ms for on-off, 100ms otherwise]."),
    rate: Optional[str] = typer.Option(None, "--rate", help="on-off: the on rate [12Mbps]; random-walk: the start [12Mbps]."),
    off_rate: Optional[str] = typer.Option(None, "--off-rate", help="on-off: the off rate [0]."),
    on: Optional[str] = typer.Option(None, "--on", help="on-off: mean on period [2s]."),
    off: Optional[str] = typer.Option(None, "--off", help="on-off: mean off period [500ms]."),
    good_rate: Optional[str] = typer.Option(None, "--good-rate", help="gilbert-elliott: the good state's rate [24Mbps]."),
    bad_rate: Optional[str] = typer.Option(None, "--bad-rate", help="gilbert-elliott: the bad state's rate [3Mbps]."),
    p_bad: Optional[float] = typer.Option(None, "--p-bad", help="gilbert-elliott: P(good → bad) per step [0.05]."),
    p_good: Optional[float] = typer.Option(None, "--p-good", help="gilbert-elliott: P(bad → good) per step [0.2]."),
    min_rate: Optional[str] = typer.Option(None, "--min-rate", help="random-walk: lower bound [1Mbps]."),
    max_rate: Optional[str] = typer.Option(None, "--max-rate", help="random-walk: upper bound [48Mbps]."),
    sigma: Optional[float] = typer.Option(None, "--sigma", help="random-walk: std. dev. of the log-rate step [0.2]."),
) -> None:
    """Write a synthetic capacity trace (Mahimahi format: one millisecond timestamp per 1500-byte
    delivery opportunity) for a link's rate = { trace = "FILE" }.

    Examples:

      ccarena trace gen random-walk --out traces/walk.mahi --duration 60s --seed 3

      ccarena trace gen on-off --out outage.mahi --rate 20Mbps --on 3s --off 1s

      ccarena trace gen gilbert-elliott --out ge.mahi --good-rate 30Mbps --bad-rate 2Mbps
    """
    from ccarena.traces import generate as gen_mod  # numpy: only when a trace is made

    if kind not in PARAMS:
        raise UserError(f"KIND: unknown trace kind '{kind}'; one of {', '.join(gen_mod.KINDS)}")
    given = {"rate": rate, "off_rate": off_rate, "on": on, "off": off, "good_rate": good_rate,
             "bad_rate": bad_rate, "p_bad": p_bad, "p_good": p_good, "min_rate": min_rate,
             "max_rate": max_rate, "sigma": sigma}
    for name, value in given.items():
        if value is not None and name not in PARAMS[kind]:
            raise UserError(f"--{name.replace('_', '-')}: not an option of {kind} (its options: "
                            f"{', '.join('--' + p.replace('_', '-') for p in PARAMS[kind])})")
    values = {name: given[name] if given[name] is not None else default for name, default in PARAMS[kind].items()}
    params: dict[str, object] = {}
    for name, value in values.items():
        if name.endswith("rate"):
            params[f"{name}_bps"] = _rate(name, str(value))
        elif name in ("on", "off"):
            params[f"{name}_ns"] = _time(name, str(value))
        else:
            params[name] = float(value)  # type: ignore[arg-type]
    try:
        times = gen_mod.generate(kind, duration_ns=_time("duration", duration), seed=seed,
                                 step_ns=_time("step", step) if step is not None else None, **params)
    except ValueError as err:
        raise UserError(f"{kind}: {err}") from None
    try:
        gen_mod.write_mahimahi(out, times)
    except OSError as err:
        raise UserError(f"--out: cannot write {out} ({err.strerror})") from None
    mean_mbps = len(times) * gen_mod.MTU_BITS / (times[-1] / 1000) / 1e6 if times[-1] else float("nan")
    print(f"{out}: {len(times)} delivery opportunities over {times[-1] / 1000:g} s, mean {mean_mbps:.2f} Mbps")
