"""Run dumbbell cells on ns-3 (the ``ns3`` wheel, 3.44; its cppyy bindings), one process for a list
of cells: ``python3 -m ccarena.references.ns3_cell CELLS`` with CELLS a JSON list (or ``-`` to read
it from standard input); prints one JSON list of results on standard output.

This is the subprocess entry of :mod:`ccarena.references.ns3_suite`: loading ns-3 into cppyy
JIT-compiles headers (seconds, ~300 MB: :data:`NS3_MODULES`), which stays out of ccarena's own
process. The
dumbbell is written in C++ (compiled once per process by cppyy) because ns-3's templates
(``CreateObject<T>``, ``GetObject<T>``) and trace callbacks are plain there.

A cell (every field required; times in seconds, rates in bit/s)::

    {"rate_bps", "bottleneck_delay_s", "access_rate_bps", "access_delay_s", "queue_packets",
     "access_queue_packets", "loss", "duration_s", "seed", "mss_bytes", "initial_cwnd_packets",
     "min_rto_s", "delayed_ack_s", "ack_every_segments",
     "flows": [{"ns3_type", "start_s", "sack", "prr"}, ...]}

The network: flow i's sender on node left_i, an access link (rate, delay,
DropTail of ``access_queue_packets``) to router L, the bottleneck (rate, delay, DropTail of
``queue_packets`` in the PointToPointNetDevice's own queue, the traffic-control layer removed so no
fq_codel sits in front of it) to router R, an access link to right_i, where a PacketSink counts
the bytes delivered in order. ``loss`` drops that fraction of packets at random where the forward
bottleneck ends (ns-3's RateErrorModel, per packet). Each sender is a socket created before the
run with its own congestion control (TcpSocketBase::SetCongestionControlAlgorithm with the
``ns3_type``, e.g. ``ns3::TcpCubic``), SACK on or off and PRR or classic recovery (RFC 6937 /
RFC 6675 §5), filled whenever it has room (a bulk transfer).

A result: ``{"flows": [{"rx_bytes", "goodput_bps", "rtt_min_s", "rtt_mean_s", "rtt_samples",
"rto_count", "fast_recoveries"}], "bottleneck_drops", "events_wall_s"}`` (RTOs and fast
recoveries: entries into ns-3's CA_LOSS and CA_RECOVERY states); goodput =
8 · rx_bytes / (duration − start), ccarena's ``goodput_mean_bps`` definition; RTT from the
socket's per-ACK RTT samples (the ``LastRTT`` trace, a traced value: it fires when a sample
differs from the previous one, so the mean weights a run of equal samples once).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

CELL_CPP = r"""
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include <algorithm>
#include <limits>
#include <vector>

namespace ccarena_ns3
{
using namespace ns3;

struct RttStats
{
    uint64_t n = 0;
    double sum = 0;
    double min = std::numeric_limits<double>::infinity();
    uint32_t rtos = 0;
    uint32_t recoveries = 0;
};

static std::vector<RttStats> g_rtt;
static uint64_t g_drops = 0;

static void
OnDrop(Ptr<const Packet>)
{
    g_drops++;
}

static void
OnRtt(uint32_t flow, Time, Time sample)
{
    if (sample.IsStrictlyPositive())
    {
        RttStats& s = g_rtt[flow];
        double v = sample.GetSeconds();
        s.n++;
        s.sum += v;
        s.min = std::min(s.min, v);
    }
}

static void
OnCongState(uint32_t flow, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t state)
{
    if (state == TcpSocketState::CA_LOSS)
    {
        g_rtt[flow].rtos++;
    }
    else if (state == TcpSocketState::CA_RECOVERY)
    {
        g_rtt[flow].recoveries++;
    }
}

// A bulk sender over a socket made (and configured) before the run: BulkSendApplication makes
// its own socket when it starts, too late to set SACK per flow.
class PresetBulkSender : public Application
{
  public:
    void Setup(Ptr<Socket> socket, Address peer, uint32_t chunk)
    {
        m_socket = socket;
        m_peer = peer;
        m_chunk = chunk;
    }

  private:
    void StartApplication() override
    {
        m_socket->SetConnectCallback(MakeCallback(&PresetBulkSender::Connected, this),
                                     MakeNullCallback<void, Ptr<Socket>>());
        m_socket->SetSendCallback(MakeCallback(&PresetBulkSender::Fill, this));
        m_socket->Connect(m_peer);
    }

    void StopApplication() override
    {
        m_socket->Close();
    }

    void Connected(Ptr<Socket> socket)
    {
        Fill(socket, socket->GetTxAvailable());
    }

    void Fill(Ptr<Socket> socket, uint32_t)
    {
        while (socket->GetTxAvailable() > 0)
        {
            uint32_t n = std::min(socket->GetTxAvailable(), m_chunk);
            if (socket->Send(Create<Packet>(n)) <= 0)
            {
                break;
            }
        }
    }

    Ptr<Socket> m_socket;
    Address m_peer;
    uint32_t m_chunk = 0;
};

static void
SetDefaults(uint32_t mss, uint32_t iw, double minRto, double delAck, uint32_t ackEvery)
{
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(iw));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(ackEvery));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Seconds(delAck)));
    // ccarena's flows are bounded by cwnd alone (no rwnd, no send buffer): 64 MB is far above
    // any window these cells reach.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(64u << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(64u << 20));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(minRto)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
}

// Out: per flow rx_bytes, rtt_min_s, rtt_mean_s, rtt_samples, RTOs, fast recoveries (6 doubles
// each), then the bottleneck queue's drops.
std::vector<double>
RunCell(double rateBps, double bottleneckDelayS, double accessRateBps, double accessDelayS,
        uint32_t queuePackets, uint32_t accessQueuePackets, double loss, double durationS,
        uint32_t seed, uint32_t mss, uint32_t iw, double minRto, double delAck, uint32_t ackEvery,
        std::vector<std::string> types, std::vector<double> starts, std::vector<int> sack,
        std::vector<int> prr)
{
    uint32_t nFlows = types.size();
    SetDefaults(mss, iw, minRto, delAck, ackEvery);
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);
    Ipv4AddressGenerator::Reset();
    g_rtt.assign(nFlows, RttStats());

    NodeContainer routers;
    routers.Create(2);
    NodeContainer left;
    left.Create(nFlows);
    NodeContainer right;
    right.Create(nFlows);
    InternetStackHelper stack;
    stack.Install(routers);
    stack.Install(left);
    stack.Install(right);

    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(rateBps))));
    bottleneck.SetChannelAttribute("Delay", TimeValue(Seconds(bottleneckDelayS)));
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                        QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queuePackets)));
    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(accessRateBps))));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(accessDelayS)));
    access.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                    QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, accessQueuePackets)));

    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.0");
    NetDeviceContainer all;
    all.Add(core);
    address.Assign(core);
    std::vector<Ipv4Address> sinks;
    for (uint32_t i = 0; i < nFlows; i++)
    {
        address.NewNetwork();
        NetDeviceContainer l = access.Install(left.Get(i), routers.Get(0));
        address.Assign(l);
        address.NewNetwork();
        NetDeviceContainer r = access.Install(routers.Get(1), right.Get(i));
        Ipv4InterfaceContainer ri = address.Assign(r);
        sinks.push_back(ri.GetAddress(1));
        all.Add(l);
        all.Add(r);
    }
    // Address assignment installs fq_codel on every device without a queue disc; remove it so
    // the device's DropTail queue is the only queue, as in ccarena's DropTail links.
    TrafficControlHelper tch;
    tch.Uninstall(all);
    g_drops = 0;
    bool countsDrops = routers.Get(0)->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext(
        "TcDrop", MakeCallback(&OnDrop));
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    if (loss > 0)
    {
        Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
        em->SetAttribute("ErrorRate", DoubleValue(loss));
        em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
        core.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
    }

    std::vector<Ptr<PacketSink>> apps;
    uint16_t port = 5000;
    for (uint32_t i = 0; i < nFlows; i++)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(right.Get(i));
        sinkApp.Start(Seconds(0));
        apps.push_back(DynamicCast<PacketSink>(sinkApp.Get(0)));

        Ptr<Socket> s = Socket::CreateSocket(left.Get(i), TcpSocketFactory::GetTypeId());
        Ptr<TcpSocketBase> tcp = DynamicCast<TcpSocketBase>(s);
        s->SetAttribute("Sack", BooleanValue(sack[i] != 0));
        ObjectFactory cc;
        cc.SetTypeId(types[i]);
        tcp->SetCongestionControlAlgorithm(cc.Create<TcpCongestionOps>());
        ObjectFactory rec;
        rec.SetTypeId(prr[i] ? "ns3::TcpPrrRecovery" : "ns3::TcpClassicRecovery");
        tcp->SetRecoveryAlgorithm(rec.Create<TcpRecoveryOps>());
        s->TraceConnectWithoutContext("LastRTT", MakeBoundCallback(&OnRtt, i));
        s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, i));
        Ptr<PresetBulkSender> app = CreateObject<PresetBulkSender>();
        app->Setup(s, InetSocketAddress(sinks[i], port), 64 * mss);
        left.Get(i)->AddApplication(app);
        app->SetStartTime(Seconds(starts[i]));
        port++;
    }
    Simulator::Stop(Seconds(durationS));
    Simulator::Run();
    std::vector<double> out;
    for (uint32_t i = 0; i < nFlows; i++)
    {
        const RttStats& r = g_rtt[i];
        out.push_back(double(apps[i]->GetTotalRx()));
        out.push_back(r.n ? r.min : std::numeric_limits<double>::quiet_NaN());
        out.push_back(r.n ? r.sum / r.n : std::numeric_limits<double>::quiet_NaN());
        out.push_back(double(r.n));
        out.push_back(double(r.rtos));
        out.push_back(double(r.recoveries));
    }
    // Without a queue disc the device stops the traffic-control layer's queue when full and the
    // layer drops what arrives then: the drops of a DropTail queue, counted at the layer.
    out.push_back(countsDrops ? double(g_drops) : std::numeric_limits<double>::quiet_NaN());
    Simulator::Destroy();
    return out;
}
} // namespace ccarena_ns3
"""
"""The dumbbell in C++ (compiled by cppyy on first use): ``ccarena_ns3::RunCell``."""

_FIELDS = 6
"""Doubles per flow in RunCell's result."""


NS3_MODULES = ("core", "network", "stats", "bridge", "mobility", "internet", "point-to-point",
               "traffic-control", "applications")
"""The ns-3 libraries the dumbbell needs, in dependency order. Loading only these (not the whole
wheel, as ``from ns import ns`` does) halves the start-up: ~27 s and ~310 MB instead of ~45 s
and ~640 MB on this machine."""


def _ns3_prefix() -> Path:
    """The wheel's ns-3 tree (``site-packages/ns3``: include/, lib64/).

    Raises:
        ImportError: the ``ns3`` wheel is not installed.
    """
    spec = importlib.util.find_spec("ns")
    if spec is None or spec.origin is None:
        raise ImportError("ns-3 is not installed (pip install 'ccarena[ns3]')")
    return Path(spec.origin).resolve().parent.parent / "ns3"


def _compiled() -> Any:
    """``ccarena_ns3`` from cppyy, after loading :data:`NS3_MODULES` and compiling
    :data:`CELL_CPP` (once per process)."""
    import cppyy
    import libcppyy

    if hasattr(cppyy.gbl, "ccarena_ns3"):
        return cppyy.gbl.ccarena_ns3
    libcppyy.AddSmartPtrType("Ptr")  # as the wheel's own loader does
    prefix = _ns3_prefix()
    cppyy.add_include_path(str(prefix / "include"))
    libdir = next(d for d in (prefix / "lib64", prefix / "lib") if d.is_dir())
    cppyy.add_library_path(str(libdir))
    for module in NS3_MODULES:
        pattern = re.compile(rf"libns3\.[0-9.]+-{re.escape(module)}\.so$")
        cppyy.load_library(str(next(p for p in libdir.iterdir() if pattern.match(p.name))))
    cppyy.cppdef(CELL_CPP)
    return cppyy.gbl.ccarena_ns3


def run_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """Run one cell (the module docstring's fields) on ns-3 and return its result.

    Raises:
        KeyError: a field is missing.
        ImportError: ns-3 (the ``ns3`` wheel) is not installed.
    """
    import cppyy

    lib = _compiled()
    std = cppyy.gbl.std
    flows = cell["flows"]
    started = time.perf_counter()
    raw = lib.RunCell(
        float(cell["rate_bps"]), float(cell["bottleneck_delay_s"]), float(cell["access_rate_bps"]),
        float(cell["access_delay_s"]), int(cell["queue_packets"]), int(cell["access_queue_packets"]),
        float(cell["loss"]), float(cell["duration_s"]), int(cell["seed"]), int(cell["mss_bytes"]),
        int(cell["initial_cwnd_packets"]), float(cell["min_rto_s"]), float(cell["delayed_ack_s"]),
        int(cell["ack_every_segments"]),
        std.vector[std.string]([str(f["ns3_type"]) for f in flows]),
        std.vector[float]([float(f["start_s"]) for f in flows]),
        std.vector[int]([int(bool(f["sack"])) for f in flows]),
        std.vector[int]([int(bool(f["prr"])) for f in flows]))
    values = [float(v) for v in raw]
    out = []
    for i, flow in enumerate(flows):
        rx, rtt_min, rtt_mean, samples, rtos, recoveries = values[_FIELDS * i:_FIELDS * (i + 1)]
        active = float(cell["duration_s"]) - float(flow["start_s"])
        out.append({"rx_bytes": rx, "goodput_bps": 8 * rx / active if active > 0 else float("nan"),
                    "rtt_min_s": rtt_min, "rtt_mean_s": rtt_mean, "rtt_samples": samples,
                    "rto_count": rtos, "fast_recoveries": recoveries})
    return {"flows": out, "bottleneck_drops": values[-1],
            "events_wall_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    """The subprocess entry: run the cells given as JSON (argument, or ``-`` for standard input)
    and print their results as one JSON list (NaN written as ``NaN``). Exit 2 on bad input."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m ccarena.references.ns3_cell CELLS_JSON|-", file=sys.stderr)
        return 2
    text = sys.stdin.read() if args[0] == "-" else args[0]
    try:
        cells = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"cells: not JSON ({exc}); fix: pass a JSON list of cells", file=sys.stderr)
        return 2
    if isinstance(cells, dict):
        cells = [cells]
    results = [run_cell(cell) for cell in cells]
    json.dump(results, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
