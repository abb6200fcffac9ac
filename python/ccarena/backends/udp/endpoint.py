"""One end of a udp-backend TCP flow, run as a process inside a flow's namespace:
``ip netns exec NS python3 -S endpoint.py CONFIG_JSON``.

Roles (``config["role"]``): ``stream-recv`` binds a sink (``ccarena._engine.UdpSink``), prints
``ready`` and counts what arrives; ``stream-send`` runs the flow's sender
(``ccarena._engine.udp_stream_send``); ``quinn-recv`` and ``quinn-send`` are a QUIC flow's ends
on quinn (``quinn_sink``, ``quinn_send``; :mod:`.quinn_flows`), the sender waiting for the
flow's start. Both sample at ``t0 + k·interval`` on ``CLOCK_MONOTONIC``
and write one JSON object to ``config["out"]`` at their end, in the format of the kernel backend's
generator (:mod:`ccarena.backends.kernel.trafficgen`): ``{"ok": true, "samples": [...], ...}`` or
``{"ok": false, "error": "<one line>"}``.

The compiled engine is loaded from ``config["engine"]`` (its file, as the parent imported it), so
the process needs neither ``site`` nor the ccarena package on its path. It dies with its parent
(``PR_SET_PDEATHSIG``, the generator's :func:`~ccarena.backends.kernel.trafficgen.die_with_parent`)
and a SIGTERM or SIGINT ends it (the engine checks for signals about every 100 ms).
"""

from __future__ import annotations

import importlib.util
import json
import signal
import sys
from pathlib import Path
from types import ModuleType

TRAFFICGEN = Path(__file__).resolve().parents[1] / "kernel" / "trafficgen.py"


def _load(name: str, path: str | Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stream_recv(engine: ModuleType, cfg: dict, gen: ModuleType) -> dict:
    try:
        sink = engine.UdpSink(f"{cfg['bind']}:{cfg['port']}", cfg)
    except engine.TransferError as err:
        return {"ok": False, "error": str(err)}
    print("ready", flush=True)
    return sink.run()


def stream_send(engine: ModuleType, cfg: dict, gen: ModuleType) -> dict:
    """The sender, with its CPU cost measured as the kernel backend's generator measures a TCP
    sender's (:class:`~ccarena.backends.kernel.trafficgen.CpuMeter`: this process's user +
    system time; the engine's sender runs on this process's thread). The interval is the flow's
    sending time: its completion time, else start to stop (or to the run's end) (the wait for the start costs no CPU)."""
    meter = gen.CpuMeter()
    meter.begin()
    try:
        result = engine.udp_stream_send(cfg["bind"], f"{cfg['peer']}:{cfg['port']}", cfg)
    except engine.TransferError as err:
        return {"ok": False, "error": str(err)}
    meter.end()
    if result.get("ok") and meter.result is not None:
        cpu = dict(meter.result)
        active = result.get("completion_time_s")
        if active is None:
            end_ns = cfg["stop_ns"] if cfg.get("stop_ns") is not None else cfg.get("duration_ns")
            if end_ns is not None:
                active = (int(end_ns) - int(cfg["start_ns"])) / 1e9
        if active:
            cpu["wall_s"] = float(active)
        result["cpu"] = cpu
    return result


def quinn_recv(engine: ModuleType, cfg: dict, gen: ModuleType) -> dict:
    """quinn's sink: serves the run's certificate, prints ``ready`` once bound, returns its record
    (``quinn_sink``'s) when the connection ends or at the run's end."""
    options = {"bind": f"{cfg['bind']}:{cfg['port']}", "cert_der": Path(cfg["cert_file"]).read_bytes(),
               "key_der": Path(cfg["key_file"]).read_bytes(), "interval_ns": cfg["interval_ns"],
               "t0_mono_ns": cfg["t0_mono_ns"], "duration_ns": cfg["duration_ns"],
               "handshake_timeout_s": cfg["handshake_timeout_s"],
               "on_bound": lambda addr: print("ready", flush=True)}
    try:
        return engine.quinn_sink(options)
    except (ValueError, ConnectionError, OSError) as err:
        return {"ok": False, "error": str(err)}


def quinn_send(engine: ModuleType, cfg: dict, gen: ModuleType) -> dict:
    """quinn's sender: waits for the flow's start, sends until its stop (or the run's end, or its
    ``bytes``), returns its record (``quinn_send``'s) with this process's CPU cost as
    :func:`stream_send` measures it."""
    gen.sleep_until(int(cfg["t0_mono_ns"]) + int(cfg["start_ns"]))
    end_ns = cfg["stop_ns"] if cfg.get("stop_ns") is not None else cfg["duration_ns"]
    options = {"peer": f"{cfg['peer']}:{cfg['port']}", "cert_der": Path(cfg["cert_file"]).read_bytes(),
               "impl": cfg["impl"], "flavor": cfg["flavor"], "params": cfg["params"],
               "bytes": cfg.get("bytes"), "duration_ns": int(end_ns), "interval_ns": cfg["interval_ns"],
               "t0_mono_ns": cfg["t0_mono_ns"], "bind": f"{cfg['bind']}:0",
               "initial_window_bytes": cfg["initial_window_bytes"], "initial_mtu": cfg["initial_mtu"]}
    meter = gen.CpuMeter()
    meter.begin()
    try:
        result = engine.quinn_send(options)
    except (ValueError, ConnectionError, OSError) as err:
        return {"ok": False, "error": str(err)}
    meter.end()
    if meter.result is not None:
        active = result.get("completion_time_s") or (int(end_ns) - int(cfg["start_ns"])) / 1e9
        result["cpu"] = {**meter.result, "wall_s": float(active)}
    return result


ROLES = {"stream-recv": stream_recv, "stream-send": stream_send,
         "quinn-recv": quinn_recv, "quinn-send": quinn_send}


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    gen = _load("ccarena_trafficgen", TRAFFICGEN)
    gen.die_with_parent(int(cfg["parent_pid"]))
    signal.signal(signal.SIGTERM, gen._on_signal)
    signal.signal(signal.SIGINT, gen._on_signal)
    return gen.measure_and_report(
        cfg, lambda: ROLES[cfg["role"]](_load("ccarena._engine", cfg["engine"]), cfg, gen))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
