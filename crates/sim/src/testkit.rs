//! Spec builders for tests and benchmarks.
//!
//! Real runs get their specs from the Python front end, which owns every default. Tests and
//! benchmarks in Rust need specs too; these builders write them out with the same Linux-like
//! values the front end uses (README.md, "Scenario reference": MSS 1448, IW 10, min RTO 200 ms, initial RTO 1 s,
//! delayed ACK every 2nd segment or 40 ms), every one visible here.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use ccarena_link::qdisc::dualpi2::DualPi2Config;
use ccarena_link::MTU_BYTES;
use crate::table::{Column, Results};
use crate::spec::{
    CbrFlowSpec, CodelConfig, Discipline, FqCodelSpec, FqConfig, PieConfig, EventSpec, FlowSpec, LinkChangeSpec, LinkSpec, NodeKind, NodeSpec, QueueSpec, RedSpec, WireSpec,
    RouteSpec, RoutingMode, RoutingSpec, Spec, TcpFlowSpec, UdtFlowSpec, SPEC_FORMAT,
};

/// Milliseconds to nanoseconds.
pub const fn ms(v: u64) -> u64 {
    v * 1_000_000
}

/// Seconds to nanoseconds.
pub const fn secs(v: u64) -> u64 {
    v * 1_000_000_000
}

/// Megabits per second to bits per second.
pub const fn mbps(v: u64) -> u64 {
    v * 1_000_000
}

/// A TCP flow spec with Linux-like transport settings, the flavor's own loss recovery, and ECN
/// on exactly when the catalogue says the flavor needs it (as the front end does).
pub fn tcp_flow(name: &str, src: usize, dst: usize, flavor: &str) -> TcpFlowSpec {
    let info = ccarena_cc::catalogue().iter().find(|f| f.name == flavor);
    let recovery = info.map_or("linux", |f| f.default_recovery);
    let needs_ecn = info.is_some_and(|f| f.needs_ecn);
    TcpFlowSpec {
        name: name.to_string(),
        src,
        dst,
        start_ns: 0,
        stop_ns: None,
        bytes: None,
        flavor: flavor.to_string(),
        params: BTreeMap::new(),
        recovery: recovery.to_string(),
        mss_bytes: 1448,
        header_bytes: 52,
        ack_bytes: 52,
        initial_cwnd_packets: 10,
        min_rto_ns: ms(200),
        initial_rto_ns: secs(1),
        max_rto_ns: secs(60),
        clock_granularity_ns: ms(1),
        dupthresh: 3,
        delayed_ack_ns: ms(40),
        ack_every_segments: 2,
        ecn: needs_ecn,
        rwnd_bytes: None,
        sndbuf_bytes: None,
        handshake_rtt: false,
        rto_rule: "rfc6298".to_string(),
        quickack_segments: 0,
        rcvbuf_autotuning: false,
        sack_compression: false,
        start_delay_ns: 0,
        mptcp: None,
        quic: None,
    }
}

/// [`tcp_flow`] run as a QUIC connection with RFC 9000's and RFC 9002's defaults: max_ack_delay
/// 25 ms, an ACK every 2 ack-eliciting packets and at once on a gap, initial RTT 333 ms, no
/// stream window, paced.
pub fn quic_flow(name: &str, src: usize, dst: usize, flavor: &str) -> TcpFlowSpec {
    TcpFlowSpec {
        quic: Some(crate::spec::QuicSpec {
            max_ack_delay_ns: ms(25),
            ack_eliciting_threshold: 2,
            reordering_threshold: 1,
            initial_rtt_ns: ms(333),
            max_stream_data_bytes: None,
            pacing: true,
        }),
        ..tcp_flow(name, src, dst, flavor)
    }
}

/// [`tcp_flow`] run as a Multipath TCP connection of `subflows` subflows coupled by `coupling`
/// (`lia`, `olia`, `balia`, `uncoupled`), the `minrtt` scheduler, subflows joining at once.
pub fn mptcp_flow(name: &str, src: usize, dst: usize, flavor: &str, subflows: u8, coupling: &str) -> TcpFlowSpec {
    TcpFlowSpec {
        mptcp: Some(crate::spec::MptcpSpec {
            subflows,
            coupling: coupling.to_string(),
            scheduler: "minrtt".to_string(),
            join_delay_ns: 0,
            opportunistic: false,
            source_ports: None,
        }),
        ..tcp_flow(name, src, dst, flavor)
    }
}

/// A UDP CBR flow spec (28 header bytes: IPv4 + UDP).
pub fn cbr_flow(name: &str, src: usize, dst: usize, rate_bps: u64, packet_bytes: u32) -> CbrFlowSpec {
    CbrFlowSpec { name: name.to_string(), src, dst, start_ns: 0, stop_ns: None, rate_bps, packet_bytes, header_bytes: 28 }
}

/// A UDT flow spec with UDT4's defaults: 1500-byte packets (1456 payload + 44 bytes of IPv4, UDP
/// and UDT headers), 68-byte ACKs, SYN 10 ms, a 25 600-packet maximum flow window, an initial RTT
/// of 10·SYN, and the draft's 0.5 s minimum EXP timeout; the `udt` controller with its defaults.
pub fn udt_flow(name: &str, src: usize, dst: usize) -> UdtFlowSpec {
    UdtFlowSpec {
        name: name.to_string(),
        src,
        dst,
        start_ns: 0,
        stop_ns: None,
        bytes: None,
        params: BTreeMap::new(),
        mss_bytes: 1456,
        header_bytes: 44,
        ack_bytes: 68,
        syn_interval_ns: ms(10),
        flow_window_packets: 25_600,
        initial_rtt_ns: ms(100),
        min_exp_ns: ms(500),
    }
}

/// RED with thresholds in packets and Floyd & Jacobson's suggested parameters (max_p 0.1, w_q
/// 0.002; 1993 §6 and §11), gentle (Floyd 2000), no ECN, 1500-byte typical packets.
pub fn red_packets(min_th: u64, max_th: u64) -> RedSpec {
    RedSpec {
        min_th_packets: Some(min_th),
        max_th_packets: Some(max_th),
        min_th_bytes: None,
        max_th_bytes: None,
        max_p: 0.1,
        w_q: 0.002,
        gentle: true,
        ecn: false,
        idle_packet_bytes: 1500,
        wait: false,
        adaptive: false,
    }
}

/// [`red_packets`] with the thresholds in bytes.
pub fn red_bytes(min_th_bytes: u64, max_th_bytes: u64) -> RedSpec {
    RedSpec { min_th_packets: None, max_th_packets: None, min_th_bytes: Some(min_th_bytes), max_th_bytes: Some(max_th_bytes), ..red_packets(0, 0) }
}

/// Make `queue` a RED queue with `red` (keeping its hard limit; no DropTail ECN threshold).
pub fn make_red(queue: &mut QueueSpec, red: RedSpec) {
    make_discipline(queue, Discipline::Droptail, false);
    queue.discipline = Discipline::Red;
    queue.ecn_threshold_packets = None;
    queue.ecn_threshold_bytes = None;
    queue.red = Some(red);
}

/// A DropTail queue of `limit_packets` packets, without ECN marking: the queue of every link the
/// builders here make, until a test changes it ([`make_discipline`]).
pub fn droptail_queue(limit_packets: u64) -> QueueSpec {
    QueueSpec {
        discipline: Discipline::Droptail,
        limit_packets: Some(limit_packets),
        limit_bytes: None,
        ecn_threshold_packets: None,
        ecn_threshold_bytes: None,
        ecn_threshold_selector: None,
        red: None,
        codel: None,
        fq_codel: None,
        pie: None,
        fq: None,
        dualpi2: None,
    }
}

/// Make `queue` a queue of discipline `d` with its primary source's default parameters (the
/// values the front end writes): CoDel 5 ms / 100 ms (RFC 8289 §4), FQ-CoDel 5 ms / 100 ms,
/// 1024 flows, 1500-byte quantum (RFC 8290 §5.2), PIE 15 ms / 15 ms, α 0.125, β 1.25, 150 ms
/// burst (RFC 8033 §4), FQ 1024 flows, 1500-byte quantum, DualPI2 RFC 9332's (its
/// `Default`: 15 ms / 16 ms, α 0.16, β 3.2, k 2, 1 ms step; `ecn` unused); `ecn` as given. Keeps the hard limit;
/// clears the DropTail ECN threshold. RED takes [`make_red`] instead.
pub fn make_discipline(queue: &mut QueueSpec, d: Discipline, ecn: bool) {
    queue.discipline = d;
    queue.ecn_threshold_packets = None;
    queue.ecn_threshold_bytes = None;
    queue.ecn_threshold_selector = None;
    queue.red = None;
    queue.codel = (d == Discipline::Codel).then_some(CodelConfig { target_ns: ms(5), interval_ns: ms(100), ecn, mtu_bytes: MTU_BYTES, ce_threshold: None });
    queue.fq_codel = (d == Discipline::FqCodel).then_some(FqCodelSpec {
        target_ns: ms(5),
        interval_ns: ms(100),
        flows: 1024,
        quantum_bytes: 1500,
        ecn,
        ce_threshold_ns: None,
        ce_threshold_selector: None,
    });
    queue.pie = (d == Discipline::Pie).then_some(PieConfig {
        target_ns: ms(15),
        tupdate_ns: ms(15),
        alpha: 0.125,
        beta: 1.25,
        max_burst_ns: ms(150),
        ecn,
        mean_packet_bytes: MTU_BYTES,
    });
    queue.fq = (d == Discipline::Fq).then_some(FqConfig { flows: 1024, quantum_bytes: 1500 });
    queue.dualpi2 = (d == Discipline::DualPi2).then(DualPi2Config::default);
}

/// A scheduled change of `link` at `time_ns`: the fields `set` fills in, every other one null.
/// `link_event(secs(10), 0, |c| c.rate_bps = Some(mbps(4)))`.
pub fn link_event(time_ns: u64, link: usize, set: impl FnOnce(&mut LinkChangeSpec)) -> EventSpec {
    let mut change = LinkChangeSpec::default();
    set(&mut change);
    EventSpec { time_ns, link, set: change }
}

/// A dumbbell: `pairs` left hosts → router `r0` → bottleneck → router `r1` → `pairs` right hosts.
///
/// Node indices: left hosts `0..pairs`, `r0` = `pairs`, `r1` = `pairs + 1`, right hosts
/// `pairs + 2 ..`. Use [`Dumbbell::left`] and [`Dumbbell::right`] rather than arithmetic.
#[derive(Clone, Debug)]
pub struct Dumbbell {
    /// Host pairs.
    pub pairs: usize,
    /// Bottleneck rate, bits/s (both directions).
    pub bottleneck_rate_bps: u64,
    /// Bottleneck one-way propagation delay, ns.
    pub bottleneck_delay_ns: u64,
    /// Random loss on the forward (left → right) bottleneck direction only.
    pub bottleneck_loss: f64,
    /// Bottleneck queue limit, packets (both directions).
    pub bottleneck_queue_packets: u64,
    /// Access link rate, bits/s.
    pub access_rate_bps: u64,
    /// Access link one-way delay, ns (per left host; right hosts use the same unless overridden).
    pub access_delay_ns: Vec<u64>,
    /// Access queue limit, packets.
    pub access_queue_packets: u64,
}

impl Dumbbell {
    /// A dumbbell with 1 Gbps / 0 delay access links and deep (10 000 packet) access queues.
    pub fn new(pairs: usize, rate_bps: u64, delay_ns: u64, queue_packets: u64) -> Dumbbell {
        Dumbbell {
            pairs,
            bottleneck_rate_bps: rate_bps,
            bottleneck_delay_ns: delay_ns,
            bottleneck_loss: 0.0,
            bottleneck_queue_packets: queue_packets,
            access_rate_bps: 1_000_000_000,
            access_delay_ns: vec![0; pairs],
            access_queue_packets: 10_000,
        }
    }

    /// Node index of left host `i`.
    pub fn left(&self, i: usize) -> usize {
        i
    }

    /// Node index of right host `i`.
    pub fn right(&self, i: usize) -> usize {
        self.pairs + 2 + i
    }

    /// Index of the forward (left → right) bottleneck link in the spec's link list.
    pub fn bottleneck_link(&self) -> usize {
        0
    }

    /// The spec with `flows`, run for `duration_ns`, sampling every `sample_interval_ns`.
    pub fn spec(&self, seed: u64, duration_ns: u64, sample_interval_ns: u64, flows: Vec<FlowSpec>) -> Spec {
        let p = self.pairs;
        let (r0, r1) = (p, p + 1);
        let mut nodes = Vec::new();
        for i in 0..p {
            nodes.push(NodeSpec { name: format!("left{i}"), kind: NodeKind::Host });
        }
        nodes.push(NodeSpec { name: "r0".into(), kind: NodeKind::Router });
        nodes.push(NodeSpec { name: "r1".into(), kind: NodeKind::Router });
        for i in 0..p {
            nodes.push(NodeSpec { name: format!("right{i}"), kind: NodeKind::Host });
        }
        let link = |name: String, from: usize, to: usize, rate: u64, delay: u64, loss: f64, limit: u64| LinkSpec {
            name,
            from,
            to,
            rate_bps: rate,
            delay_ns: delay,
            wire: WireSpec::with_loss(loss),
            queue: droptail_queue(limit),
            sample: None,
            trace: None,
        };
        let mut links = vec![
            link("r0->r1".into(), r0, r1, self.bottleneck_rate_bps, self.bottleneck_delay_ns, self.bottleneck_loss, self.bottleneck_queue_packets),
            link("r1->r0".into(), r1, r0, self.bottleneck_rate_bps, self.bottleneck_delay_ns, 0.0, self.bottleneck_queue_packets),
        ];
        let mut routes = Vec::new();
        let hosts: Vec<usize> = (0..p).map(|i| self.left(i)).chain((0..p).map(|i| self.right(i))).collect();
        for i in 0..p {
            let (l, r) = (self.left(i), self.right(i));
            let d = self.access_delay_ns[i];
            let up = links.len();
            links.push(link(format!("left{i}->r0"), l, r0, self.access_rate_bps, d, 0.0, self.access_queue_packets));
            links.push(link(format!("r0->left{i}"), r0, l, self.access_rate_bps, d, 0.0, self.access_queue_packets));
            links.push(link(format!("right{i}->r1"), r, r1, self.access_rate_bps, d, 0.0, self.access_queue_packets));
            links.push(link(format!("r1->right{i}"), r1, r, self.access_rate_bps, d, 0.0, self.access_queue_packets));
            for &dst in &hosts {
                if dst != l {
                    routes.push(RouteSpec { node: l, dst, link: up });
                }
                if dst != r {
                    routes.push(RouteSpec { node: r, dst, link: up + 2 });
                }
            }
            routes.push(RouteSpec { node: r0, dst: l, link: up + 1 });
            routes.push(RouteSpec { node: r1, dst: r, link: up + 3 });
            routes.push(RouteSpec { node: r0, dst: r, link: 0 });
            routes.push(RouteSpec { node: r1, dst: l, link: 1 });
        }
        Spec { format: SPEC_FORMAT, seed, duration_ns, sample_interval_ns, nodes, links, routes, routing: None, flows, events: Vec::new(), link_jitter: None, pcap: None }
    }
}

/// A k-ary fat-tree (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity Data Center Network
/// Architecture", SIGCOMM 2008, §3): k pods of k/2 edge and k/2 aggregation switches, (k/2)²
/// core switches, k³/4 hosts (k/2 per edge switch). Edge switch e of a pod joins every
/// aggregation switch of its pod; aggregation switch a of every pod joins core switches
/// a·k/2 .. a·k/2 + k/2 − 1. Every link has the same rate, delay and DropTail queue.
///
/// Node indices: hosts `0..k³/4` (host j of edge e of pod p is `(p·k/2 + e)·k/2 + j`), then edge,
/// aggregation and core switches. Each cable is two directed links, the upward one first.
#[derive(Clone, Debug)]
pub struct FatTree {
    /// Switch ports; even, ≥ 2.
    pub k: usize,
    /// Every link's rate, bits/s.
    pub rate_bps: u64,
    /// Every link's one-way propagation delay, ns.
    pub delay_ns: u64,
    /// Every queue's limit, packets.
    pub queue_packets: u64,
}

impl FatTree {
    /// A fat-tree with `k`-port switches and uniform links.
    pub fn new(k: usize, rate_bps: u64, delay_ns: u64, queue_packets: u64) -> FatTree {
        assert!(k >= 2 && k.is_multiple_of(2), "k must be even and at least 2");
        FatTree { k, rate_bps, delay_ns, queue_packets }
    }

    /// Number of hosts, k³/4.
    pub fn hosts(&self) -> usize {
        self.k * self.k * self.k / 4
    }

    /// Node index of host `i` (`0..hosts()`).
    pub fn host(&self, i: usize) -> usize {
        i
    }

    /// The pod of host `i`.
    pub fn pod_of(&self, i: usize) -> usize {
        i / (self.k * self.k / 4)
    }

    /// Node index of core switch `c` (`0..k²/4`).
    pub fn core(&self, c: usize) -> usize {
        self.hosts() + self.k * self.k + c
    }

    /// Node index of aggregation switch `a` of pod `p`.
    pub fn agg(&self, p: usize, a: usize) -> usize {
        self.hosts() + self.k * self.k / 2 + p * self.k / 2 + a
    }

    /// The spec with `flows`, computed ECMP routing (`routing.mode = "ecmp"`) and no static
    /// routes.
    pub fn spec(&self, seed: u64, duration_ns: u64, sample_interval_ns: u64, flows: Vec<FlowSpec>) -> Spec {
        let (k, h) = (self.k, self.k / 2);
        let n_hosts = self.hosts();
        let edge = |p: usize, e: usize| n_hosts + p * h + e;
        let mut nodes: Vec<NodeSpec> = (0..n_hosts).map(|i| NodeSpec { name: format!("h{i}"), kind: NodeKind::Host }).collect();
        for (role, count) in [("edge", k * h), ("agg", k * h), ("core", h * h)] {
            nodes.extend((0..count).map(|i| NodeSpec { name: format!("{role}{i}"), kind: NodeKind::Router }));
        }
        let mut links = Vec::new();
        let mut cable = |a: usize, b: usize| {
            for (from, to) in [(a, b), (b, a)] {
                links.push(LinkSpec {
                    name: format!("{}->{}", nodes[from].name, nodes[to].name),
                    from,
                    to,
                    rate_bps: self.rate_bps,
                    delay_ns: self.delay_ns,
                    wire: WireSpec::with_loss(0.0),
                    queue: droptail_queue(self.queue_packets),
                    sample: None,
                    trace: None,
                });
            }
        };
        for p in 0..k {
            for e in 0..h {
                for j in 0..h {
                    cable((p * h + e) * h + j, edge(p, e));
                }
                for a in 0..h {
                    cable(edge(p, e), self.agg(p, a));
                }
            }
            for a in 0..h {
                for c in 0..h {
                    cable(self.agg(p, a), self.core(a * h + c));
                }
            }
        }
        ecmp_spec(seed, duration_ns, sample_interval_ns, nodes, links, flows)
    }
}

/// Two disjoint two-hop paths between host 0 (`h0`) and host 1 (`h1`): through router 2 and
/// through router 3, each path's four links (out and back) of `rate_bps` with a DropTail queue
/// of `queue_packets`, and engine routing with hash ECMP, so each flow's (or MPTCP subflow's)
/// data and ACKs follow their 5-tuple's hash. Link `4·k + i` is the `i`-th of path `k`'s links:
/// h0 → router, router → h1, h1 → router, router → h0.
#[derive(Clone, Debug)]
pub struct TwoPaths {
    /// Every link's rate, bits/s.
    pub rate_bps: u64,
    /// Each path's round-trip propagation delay, ns (a quarter on each of its four links).
    pub rtt_ns: [u64; 2],
    /// Every queue's limit, packets.
    pub queue_packets: u64,
}

impl TwoPaths {
    /// The spec with `flows`, sampled every 100 ms, no capture.
    pub fn spec(&self, seed: u64, duration_ns: u64, flows: Vec<FlowSpec>) -> Spec {
        let router = |name: &str| NodeSpec { name: name.into(), kind: NodeKind::Router };
        let host = |name: &str| NodeSpec { name: name.into(), kind: NodeKind::Host };
        let nodes = vec![host("h0"), host("h1"), router("path0"), router("path1")];
        let mut links = Vec::new();
        for (r, rtt_ns) in [(2, self.rtt_ns[0]), (3, self.rtt_ns[1])] {
            for (from, to) in [(0, r), (r, 1), (1, r), (r, 0)] {
                links.push(LinkSpec {
                    name: format!("{from}->{to}"),
                    from,
                    to,
                    rate_bps: self.rate_bps,
                    delay_ns: rtt_ns / 4,
                    wire: WireSpec::with_loss(0.0),
                    queue: droptail_queue(self.queue_packets),
                    sample: None,
                    trace: None,
                });
            }
        }
        ecmp_spec(seed, duration_ns, 100_000_000, nodes, links, flows)
    }
}

/// A spec of `nodes` and `links` with engine routing by hash ECMP (no static routes), `flows`,
/// no events, jitter or capture.
fn ecmp_spec(seed: u64, duration_ns: u64, sample_interval_ns: u64, nodes: Vec<NodeSpec>, links: Vec<LinkSpec>,
             flows: Vec<FlowSpec>) -> Spec {
    Spec {
        format: SPEC_FORMAT,
        seed,
        duration_ns,
        sample_interval_ns,
        nodes,
        links,
        routes: Vec::new(),
        routing: Some(RoutingSpec { mode: RoutingMode::Ecmp }),
        flows,
        events: Vec::new(),
        link_jitter: None,
        pcap: None,
    }
}

/// A memory figure of this process from `/proc/self/status` in KiB (`"VmHWM"`: peak resident,
/// `"VmRSS"`: resident now), or 0 where it cannot be read (not Linux). For the benchmarks.
pub fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.strip_prefix(field).is_some_and(|rest| rest.starts_with(':')))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// A hash of every value of every result table (column names and values, f64s by their bits):
/// two builds that give the same one computed bit-identical results. For the benchmarks, which
/// print it so an optimization can be checked not to change a run.
pub fn fingerprint(res: &Results) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    for table in [&res.flows, &res.samples, &res.queues, &res.links] {
        for (name, column) in &table.columns {
            name.hash(&mut h);
            match column {
                Column::F64(v) => v.iter().for_each(|x| x.to_bits().hash(&mut h)),
                Column::Str(v) => v.hash(&mut h),
            }
        }
    }
    h.finish()
}
