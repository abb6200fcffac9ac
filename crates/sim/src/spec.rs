//! The resolved run spec the engine executes: every value explicit, no defaults.
//!
//! The format is documented in `docs/engine-spec.md`; this module is its Rust mirror, except the
//! queue and trace objects and a link's wire keys, which are the link crate's
//! (`ccarena_link::QueueSpec`, `TraceSpec` and `WireSpec`, shared with the relay) and checked there. [`Spec::validate`] checks each section with its own validator. The Python
//! front end resolves every default and sends a spec that names all fields, so the engine rejects
//! both unknown and missing fields ([`Spec::from_json`]); [`Spec::validate`] then checks the values
//! (called once, by `Simulation::new`), reporting the first problem as `path: message`.

use std::collections::BTreeMap;
use std::fmt;

use ccarena_cc::coupled::Coupling;
use ccarena_cc::{new_controller, Params};
use ccarena_link::required::present;
use ccarena_transport::mptcp::{Scheduler, DSS_DATA_OPTION_BYTES, MAX_SUBFLOWS};
use ccarena_transport::RecoveryMode;
use serde::{Deserialize, Serialize};

// The queue, trace and wire formats are the link crate's (`ccarena_link::{QueueSpec, TraceSpec, WireSpec}`), re-exported so a
// spec user finds every type of the spec here.
pub use ccarena_link::qdisc::codel::CodelConfig;
pub use ccarena_link::qdisc::fq::{FqCodelSpec, FqConfig};
pub use ccarena_link::qdisc::pie::PieConfig;
pub use ccarena_link::qdisc::red::RedSpec;
pub use ccarena_link::{Discipline, QueueSpec, TraceSpec, WireSpec};

/// The spec format version this engine reads.
pub const SPEC_FORMAT: u32 = 1;

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Must equal [`SPEC_FORMAT`].
    pub format: u32,
    /// Run seed; every random stream derives from it.
    pub seed: u64,
    /// Simulated time to run, ns.
    pub duration_ns: u64,
    /// Interval between samples, ns.
    pub sample_interval_ns: u64,
    /// Hosts and routers; referenced by index.
    pub nodes: Vec<NodeSpec>,
    /// Directed links; referenced by index.
    pub links: Vec<LinkSpec>,
    /// Static routes: at `node`, packets for host `dst` leave on `link`. Without `routing` this
    /// is the complete table (one entry per node and destination on every flow's path; the last
    /// entry for a (node, dst) wins). With `routing` the engine computes the routes and these
    /// entries are static overrides: all entries for one (node, dst) together replace that
    /// node's computed next-hop set for `dst` (docs/engine-spec.md, "Routing").
    pub routes: Vec<RouteSpec>,
    /// Routes computed by the engine (shortest paths by hop count with equal-cost multipath),
    /// or null/absent for the static `routes` table alone.
    #[serde(default)]
    pub routing: Option<RoutingSpec>,
    /// Traffic.
    pub flows: Vec<FlowSpec>,
    /// Scheduled link changes, in any order (applied in time order, ties in list order). Required;
    /// may be empty.
    pub events: Vec<EventSpec>,
    /// Forwarding jitter on every link, as a fraction in [0, 1] of a packet's serialization time:
    /// each packet reaches the far end a uniform random time in [0, fraction × its serialization
    /// time) after its propagation delay, never before the packet ahead of it. Null/absent or 0:
    /// none (every packet exactly on time). Breaks the phase lock of flows whose paths have equal
    /// rates and delays at a DropTail queue (Floyd & Jacobson, "On Traffic Phase Effects in
    /// Packet-Switched Gateways", 1992; docs/engine-spec.md).
    #[serde(default)]
    pub link_jitter: Option<f64>,
    /// Packet capture: links whose packets are written to pcap files (docs/engine-spec.md,
    /// "Packet capture"). Null/absent: none. The files go to the directory the caller gives
    /// [`Simulation::start_capture`](crate::Simulation::start_capture); without one, nothing is
    /// captured.
    #[serde(default)]
    pub pcap: Option<PcapSpec>,
}

/// The links a run captures, and the size limit of each file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PcapSpec {
    /// Indices of the links (directions) to capture, each to a file of its own; unique, at
    /// least one.
    pub links: Vec<usize>,
    /// Size limit of each file, bytes (its 24-byte header included; at least 1024): past it the
    /// file stops growing and the packets not written are counted.
    pub max_bytes: u64,
}

/// Routing computed by the engine: for each destination host, a breadth-first search by hop
/// count over the links that are up; a node's next-hop set for a destination is every link to a
/// neighbour one hop closer (hosts other than the destination never forward).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// How a node picks one link from a next-hop set of more than one.
    pub mode: RoutingMode,
}

/// How a node chooses among equal-cost next hops.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RoutingMode {
    /// Hash-threshold ECMP (RFC 2992) on a seeded, per-node-salted hash of the flow's 5-tuple
    /// (Linux `fib_multipath_hash_policy = 1`): one path per flow and direction, no reordering.
    Ecmp,
    /// Per-packet spraying: each packet draws its next hop uniformly from the node's own
    /// random stream.
    Spray,
}

/// A node.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Host or router.
    pub kind: NodeKind,
}

/// What a node does.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Runs flow endpoints; forwards others' packets only if a static table (no `routing`) says so.
    Host,
    /// Forwards only.
    Router,
}

/// One direction of a link: egress queue at `from`, serialization at `rate_bps`, then `delay_ns`
/// of propagation to `to`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Name for reports.
    pub name: String,
    /// Sending node index.
    pub from: usize,
    /// Receiving node index.
    pub to: usize,
    /// Serialization rate, bits per second.
    pub rate_bps: u64,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// The wire's impairments: the flat keys `loss` (required), `duplicate`, `reorder` and
    /// `reorder_delay_ns` (optional), the link crate's format ([`WireSpec`]) and checks.
    #[serde(flatten)]
    pub wire: WireSpec,
    /// The egress queue.
    pub queue: QueueSpec,
    /// Record this link's queue in the `queues` samples. Optional: absent or null = true (every
    /// link sampled); a front end turns it off for links nobody asked about (access links), whose
    /// rows would dominate the samples at thousands of hosts.
    #[serde(default)]
    pub sample: Option<bool>,
    /// The link's capacity over time, instead of the constant `rate_bps` (which then is the
    /// rate quoted for the link: the front end gives the trace's mean). Optional: absent or null
    /// = a constant rate.
    #[serde(default)]
    pub trace: Option<TraceSpec>,
}

impl LinkSpec {
    /// The link's duplication and reordering processes, drawing from `duplicate` and `reorder`
    /// (the run's streams for this link, `ccarena_link::LinkStreams::simulator`; none drawn while
    /// both probabilities are 0).
    pub fn impairments(&self, duplicate: ccarena_link::SplitMix64, reorder: ccarena_link::SplitMix64) -> ccarena_link::WireImpairments {
        self.wire.impairments(self.delay_ns, duplicate, reorder)
    }

    /// True when the link's queue is sampled ([`LinkSpec::sample`], default true).
    pub fn sampled(&self) -> bool {
        self.sample.unwrap_or(true)
    }
}

/// A scheduled change to one link.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    /// When the change applies, ns (before any packet event at that instant).
    pub time_ns: u64,
    /// Index of the (directed) link it changes.
    pub link: usize,
    /// The new values; null keeps a value.
    pub set: LinkChangeSpec,
}

/// New values for a link. Every key is required; at least one is non-null.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkChangeSpec {
    /// New serialization rate, bits/s: applies to packets that start serialization from now on.
    #[serde(deserialize_with = "present")]
    pub rate_bps: Option<u64>,
    /// New propagation delay, ns: applies to packets that start propagating from now on.
    #[serde(deserialize_with = "present")]
    pub delay_ns: Option<u64>,
    /// New wire loss probability: applies to packets that start serialization from now on.
    #[serde(deserialize_with = "present")]
    pub loss: Option<f64>,
    /// New queue limit, waiting packets (the queue must be limited in packets).
    #[serde(deserialize_with = "present")]
    pub limit_packets: Option<u64>,
    /// New queue limit, waiting bytes (the queue must be limited in bytes).
    #[serde(deserialize_with = "present")]
    pub limit_bytes: Option<u64>,
    /// New RED thresholds in packets, lower and upper (a RED queue whose thresholds are in
    /// packets; both or neither, min < max). Optional: absent or null keeps them.
    #[serde(default)]
    pub red_min_th_packets: Option<u64>,
    /// See [`LinkChangeSpec::red_min_th_packets`].
    #[serde(default)]
    pub red_max_th_packets: Option<u64>,
    /// New RED thresholds in bytes, lower and upper (a RED queue whose thresholds are in bytes;
    /// both or neither, min < max). Optional: absent or null keeps them.
    #[serde(default)]
    pub red_min_th_bytes: Option<u64>,
    /// See [`LinkChangeSpec::red_min_th_bytes`].
    #[serde(default)]
    pub red_max_th_bytes: Option<u64>,
    /// Take the link down (`false`) or bring it back up (`true`). Down: every packet queued or
    /// on the wire is dropped (`down_drops_packets`) and packets offered later are dropped too;
    /// with `routing` the routes are recomputed over the up links at that instant. Optional:
    /// absent or null leaves the link's state alone.
    #[serde(default)]
    pub up: Option<bool>,
}

impl LinkChangeSpec {
    /// The new RED thresholds `(min_th, max_th)` in the queue's threshold unit, if the change sets
    /// them (validation guarantees one complete pair at most).
    pub fn red_thresholds(&self) -> Option<(u64, u64)> {
        match (self.red_min_th_packets, self.red_max_th_packets, self.red_min_th_bytes, self.red_max_th_bytes) {
            (Some(lo), Some(hi), _, _) | (_, _, Some(lo), Some(hi)) => Some((lo, hi)),
            _ => None,
        }
    }
}

/// A static route entry.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// Node the entry belongs to.
    pub node: usize,
    /// Destination host.
    pub dst: usize,
    /// Link to send on (its `from` must be `node`).
    pub link: usize,
}

/// A flow.
// One per flow, read once to build it: the size of the TCP variant costs nothing that boxing it
// (and every match on it) would repay.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FlowSpec {
    /// Bulk TCP.
    Tcp(TcpFlowSpec),
    /// UDP constant bit rate.
    UdpCbr(CbrFlowSpec),
    /// UDT: reliable transfer over UDP with UDT's rate-based congestion control.
    Udt(UdtFlowSpec),
}

/// A bulk TCP transfer.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpFlowSpec {
    /// Unique flow name.
    pub name: String,
    /// Sending host.
    pub src: usize,
    /// Receiving host.
    pub dst: usize,
    /// When the application starts, ns.
    pub start_ns: u64,
    /// When the application stops offering data, ns; null = never.
    pub stop_ns: Option<u64>,
    /// Bytes to transfer; null = unlimited.
    pub bytes: Option<u64>,
    /// Congestion controller name.
    pub flavor: String,
    /// Controller parameters.
    pub params: BTreeMap<String, f64>,
    /// Loss recovery: tahoe | reno | newreno | sack | prr | linux.
    pub recovery: String,
    /// Maximum segment size (payload), bytes.
    pub mss_bytes: u32,
    /// Header bytes added to each data segment on the wire.
    pub header_bytes: u32,
    /// Bytes of an ACK on the wire without SACK blocks.
    pub ack_bytes: u32,
    /// Initial window, segments (RFC 6928: 10).
    pub initial_cwnd_packets: u32,
    /// Lower bound on the RTO, ns.
    pub min_rto_ns: u64,
    /// RTO before the first RTT sample, ns.
    pub initial_rto_ns: u64,
    /// Upper bound on the RTO, ns.
    pub max_rto_ns: u64,
    /// Clock granularity G of RFC 6298, ns.
    pub clock_granularity_ns: u64,
    /// Duplicate ACKs (or SACKed segments) that trigger fast retransmit.
    pub dupthresh: u32,
    /// Delayed-ACK timeout, ns.
    pub delayed_ack_ns: u64,
    /// Full segments per delayed ACK.
    pub ack_every_segments: u32,
    /// ECN negotiated (RFC 3168).
    pub ecn: bool,
    /// Receive buffer, bytes: the receiver advertises its free space as the receive window
    /// (RFC 9293 §3.8.6) and the sender keeps at most that much outstanding. Null = unlimited.
    #[serde(default)]
    pub rwnd_bytes: Option<u64>,
    /// Send buffer, bytes: the sender holds at most this much unacknowledged data, which caps
    /// what is outstanding. Null = unlimited.
    #[serde(default)]
    pub sndbuf_bytes: Option<u64>,
    /// The connection was opened before the flow starts, over the idle path (as the kernel
    /// backend's senders connect before t0): its SYN → SYN-ACK round trip, one header-only
    /// segment (`ack_bytes`) each way over the flow's data and ACK paths with every queue
    /// empty, is the sender's first RTT sample, taken at the flow's start before any data
    /// (`Sender::on_handshake_rtt`: SRTT, RTTVAR, RTO, the minimum RTT, and what a controller
    /// reads at connection start, such as BBR's RTprop), dated t0 (the run's start: the
    /// connection opened before it, so BBR's RTprop ages from t0). False (the default): no handshake;
    /// the first RTT sample is the first data ACK's.
    #[serde(default)]
    pub handshake_rtt: bool,
    /// The sender's RTO rule: `rfc6298` (the default: `max(min_rto, SRTT + max(G, 4·RTTVAR))`)
    /// or `linux` (Linux's `tcp_rtt_estimator`: `SRTT + rttvar`, rttvar floored at `min_rto_ns`
    /// and decaying once per RTT; see `ccarena_transport::rtt`). Single-path TCP only: QUIC and
    /// MPTCP flows ignore it, as they ignore `quickack_segments`.
    #[serde(default = "default_rto_rule")]
    pub rto_rule: String,
    /// Linux's quick-ACK mode: the receiver acknowledges each of the first this many in-order
    /// segments at once (again after data has been idle longer than `min_rto_ns`), then delays
    /// ACKs as usual; 0 (the default) = off, the RFC 5681 receiver. Linux grants 16. At most
    /// [`MAX_QUICKACK_SEGMENTS`]. Above 0 the receiver is Linux's in one more way: it ACKs a
    /// sub-MSS in-order segment at once (`Receiver::set_ack_short_segments`).
    #[serde(default)]
    pub quickack_segments: u32,
    /// Linux's receive-buffer autotuning (`tcp_moderate_rcvbuf`, the default `tcp_rmem`;
    /// `ccarena_transport::RcvBufAutotuning::LINUX`): the receiver's window starts at the
    /// 65,160 bytes a Linux SYN-ACK offers and grows as Linux's does — two MSS per segment
    /// received up to a clamp that each RTT's delivered bytes raise (dynamic right-sizing), to
    /// at most a 32 MB buffer — and each segment that grows it is ACKed at once. False (the
    /// default): the window is `rwnd_bytes`. Not with `rwnd_bytes`. On an MPTCP connection, its
    /// shared buffer is tuned as Linux's MPTCP tunes it, once per largest subflow RTT
    /// (`ccarena_transport::mptcp::MptcpReceiver::set_rcvbuf_autotuning`). QUIC flows ignore it.
    #[serde(default)]
    pub rcvbuf_autotuning: bool,
    /// Linux's SACK compression (`ccarena_transport::SackCompression::LINUX`: above a hole,
    /// three ACKs at once per RCV.NXT, then one per min(1 ms, RTT/20), at once after 44 held
    /// back; net/ipv4/tcp_input.c `__tcp_ack_snd_check`, Linux ≥ 4.18). False (the default):
    /// every out-of-order segment is acknowledged at once (RFC 5681 §4.2). Single-path TCP
    /// only: QUIC and MPTCP flows ignore it.
    #[serde(default)]
    pub sack_compression: bool,
    /// The sender starts this long after `start_ns`, ns, as a real host's application does (the
    /// front end's `linux` host model draws it per flow: the kernel backend's senders send their
    /// first segment 0.6–2 ms after their scheduled start). The flow's samples, `start_s` and
    /// completion time still count from `start_ns`, as the kernel backend's do. 0 (the default):
    /// the sender starts at `start_ns`. Must end before `stop_ns`.
    #[serde(default)]
    pub start_delay_ns: u64,
    /// Run the flow as a Multipath TCP connection (RFC 8684); null = single-path TCP.
    #[serde(default)]
    pub mptcp: Option<MptcpSpec>,
    /// Run the flow as a QUIC connection (RFC 9000, RFC 9002) with the same controller; null =
    /// TCP. A QUIC flow ignores the TCP-only fields (`recovery`, `dupthresh`, the RTO bounds,
    /// `delayed_ack_ns`, `ack_every_segments`, `handshake_rtt`).
    #[serde(default)]
    pub quic: Option<QuicSpec>,
}

fn default_rto_rule() -> String {
    "rfc6298".to_string()
}

/// Largest `quickack_segments` a flow takes (the run spec's bound).
pub const MAX_QUICKACK_SEGMENTS: u32 = 1000;

/// A flow's QUIC settings (docs/engine-spec.md, "flows"). Its packets have the wire size the
/// flow's TCP segments would have (`mss_bytes + header_bytes`): the stream bytes per packet are
/// that less QUIC's headers ([`ccarena_transport::quic::DATA_OVERHEAD_BYTES`]). The connection's
/// flow-control window is the flow's `rwnd_bytes`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QuicSpec {
    /// The receiver's max_ack_delay, ns (RFC 9000 §18.2: 25 ms).
    pub max_ack_delay_ns: u64,
    /// Ack-eliciting packets per immediate ACK (RFC 9000 §13.2.2: 2; the ACK-frequency
    /// extension changes it).
    pub ack_eliciting_threshold: u32,
    /// Gap that makes the receiver ACK at once: 1 = RFC 9000 §13.2.1; 0 = never
    /// (draft-ietf-quic-ack-frequency §6.2).
    pub reordering_threshold: u32,
    /// RTT assumed before the first sample, ns (RFC 9002 §6.2.2: 333 ms).
    pub initial_rtt_ns: u64,
    /// The stream's flow-control window, bytes; null = unlimited.
    #[serde(default)]
    pub max_stream_data_bytes: Option<u64>,
    /// Pace at 1.25·cwnd/srtt when the controller sets no rate (RFC 9002 §7.7).
    pub pacing: bool,
}

/// Largest ACK-eliciting or reordering threshold a QUIC flow takes, packets (the scenario
/// schema's bound).
pub const MAX_QUIC_PACKET_THRESHOLD: u32 = 1000;

impl QuicSpec {
    /// Stream bytes a packet of flow `f` carries: the TCP segment's wire size less QUIC's
    /// headers; 0 when that leaves nothing.
    pub fn payload_bytes(f: &TcpFlowSpec) -> u32 {
        (f.mss_bytes + f.header_bytes).saturating_sub(ccarena_transport::quic::DATA_OVERHEAD_BYTES)
    }

    /// Checks relative to the flow. Paths are relative to the flow.
    fn validate(&self, f: &TcpFlowSpec) -> Result<(), SpecError> {
        if f.mptcp.is_some() {
            return Err(err("quic", "a flow is QUIC or Multipath TCP, not both".to_string()));
        }
        if QuicSpec::payload_bytes(f) == 0 {
            return Err(err("mss_bytes", format!("a QUIC packet's headers take {} bytes: mss_bytes + header_bytes must be larger", ccarena_transport::quic::DATA_OVERHEAD_BYTES)));
        }
        if !(1..=MAX_QUIC_PACKET_THRESHOLD).contains(&self.ack_eliciting_threshold) {
            return Err(err("quic.ack_eliciting_threshold", format!("must be 1..={MAX_QUIC_PACKET_THRESHOLD}")));
        }
        if self.reordering_threshold > MAX_QUIC_PACKET_THRESHOLD {
            return Err(err("quic.reordering_threshold", format!("must be 0..={MAX_QUIC_PACKET_THRESHOLD}")));
        }
        if self.initial_rtt_ns == 0 {
            return Err(err("quic.initial_rtt_ns", "must be positive".to_string()));
        }
        if self.max_stream_data_bytes.is_some_and(|w| w < QuicSpec::payload_bytes(f) as u64) {
            return Err(err("quic.max_stream_data_bytes", "must be at least one packet's stream bytes (or null for unlimited)".to_string()));
        }
        Ok(())
    }
}

/// A TCP flow's Multipath TCP settings (docs/engine-spec.md, "flows").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MptcpSpec {
    /// Subflows, 1..=32; each has its own 5-tuple, so ECMP hashes each separately.
    pub subflows: u8,
    /// `lia`, `olia`, `balia` (coupled; the flow's flavor must be `reno`) or `uncoupled` (every
    /// subflow runs the flow's flavor on its own).
    pub coupling: String,
    /// `minrtt` (lowest smoothed RTT first) or `roundrobin`.
    pub scheduler: String,
    /// Subflows after the first start this long after it, ns.
    pub join_delay_ns: u64,
    /// Opportunistic retransmission and penalisation of slow subflows when the connection
    /// window blocks new data (Raiciu et al., NSDI 2012, §4.2; out-of-tree Linux MPTCP v0.9x
    /// only): [`ccarena_transport::mptcp::MptcpConfig::opportunistic`]. Default off.
    #[serde(default)]
    pub opportunistic: bool,
    /// Each subflow's TCP source port, subflow 0 first, or null (the default) for the engine's
    /// own: ECMP then hashes subflow `i` on (source host, destination host, TCP, `source_ports[i]`,
    /// destination port 5201) and a capture shows that port, so a user steers each subflow's
    /// path (docs/engine-spec.md, "flows"). When given: one port per subflow, distinct, each in
    /// 1..=65535 ([`check_source_ports`]).
    #[serde(default)]
    pub source_ports: Option<Vec<u32>>,
}

/// The one rule for an MPTCP flow's explicit `source_ports` (`subflows` its subflow count):
/// exactly one port per subflow, every port in 1..=65535, no port twice. Signed, so the front
/// end's scenario check (through the bindings) reports a negative port as given.
///
/// # Errors
/// A one-line message saying what is wrong and the fix (the caller names the field).
pub fn check_source_ports(ports: &[i64], subflows: u8) -> Result<(), String> {
    if ports.len() != usize::from(subflows) {
        return Err(format!("gives {} ports for {subflows} subflows: give one source port per subflow", ports.len()));
    }
    if let Some(p) = ports.iter().find(|&&p| !(1..=i64::from(u16::MAX)).contains(&p)) {
        return Err(format!("{p} is not a TCP port: give ports in 1..65535"));
    }
    if let Some(p) = ports.iter().enumerate().find_map(|(i, p)| ports[..i].contains(p).then_some(p)) {
        return Err(format!("port {p} is given twice: each subflow needs its own source port (its own 5-tuple); give distinct ports"));
    }
    Ok(())
}

impl MptcpSpec {
    /// The coupling, parsed.
    ///
    /// # Errors
    /// A message naming the valid couplings.
    pub fn coupling(&self) -> Result<Coupling, String> {
        self.coupling.parse()
    }

    /// The scheduler, parsed.
    ///
    /// # Errors
    /// A message naming the valid schedulers.
    pub fn scheduler(&self) -> Result<Scheduler, String> {
        self.scheduler.parse()
    }

    /// Checks relative to the flow (`flavor` its controller). Paths are relative to the flow.
    fn validate(&self, flavor: &str) -> Result<(), SpecError> {
        if self.subflows == 0 || self.subflows as usize > MAX_SUBFLOWS {
            return Err(err("mptcp.subflows", format!("must be 1..={MAX_SUBFLOWS}")));
        }
        let coupling = self.coupling().map_err(|e| err("mptcp.coupling", e))?;
        self.scheduler().map_err(|e| err("mptcp.scheduler", e))?;
        if let Some(ports) = &self.source_ports {
            let ports: Vec<i64> = ports.iter().map(|&p| i64::from(p)).collect();
            check_source_ports(&ports, self.subflows).map_err(|e| err("mptcp.source_ports", e))?;
        }
        if let Some(want) = coupling.subflow_flavor().filter(|&w| w != flavor) {
            let what = if want == "reno" { "Reno's increase" } else { "Vegas's windows" };
            return Err(err("mptcp.coupling", format!("{} couples {what}: the flow's flavor must be {want}, not {flavor}", coupling.name())));
        }
        Ok(())
    }
}

/// A UDP constant-bit-rate flow.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CbrFlowSpec {
    /// Unique flow name.
    pub name: String,
    /// Sending host.
    pub src: usize,
    /// Receiving host.
    pub dst: usize,
    /// First datagram, ns.
    pub start_ns: u64,
    /// No datagram at or after this time, ns; null = never.
    pub stop_ns: Option<u64>,
    /// Payload rate, bits per second.
    pub rate_bps: u64,
    /// Payload per datagram, bytes.
    pub packet_bytes: u32,
    /// IP + UDP header bytes added on the wire.
    pub header_bytes: u32,
}

/// A bulk UDT transfer (draft-gg-udt-03): UDT's own packets, ACK every SYN, NAK, ACK2 and EXP
/// (`ccarena_transport::udt`), rate-controlled by the `udt` controller (`ccarena_cc::udt`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UdtFlowSpec {
    /// Unique flow name.
    pub name: String,
    /// Sending host.
    pub src: usize,
    /// Receiving host.
    pub dst: usize,
    /// When the application starts, ns.
    pub start_ns: u64,
    /// When the application stops offering data, ns; null = never.
    pub stop_ns: Option<u64>,
    /// Bytes to transfer; null = unlimited.
    pub bytes: Option<u64>,
    /// Parameters of the `udt` controller (`beta`, `decrease`, `initial_cwnd`, `seed`).
    pub params: BTreeMap<String, f64>,
    /// Payload bytes per data packet.
    pub mss_bytes: u32,
    /// IP + UDP + UDT header bytes of every packet (20 + 8 + 16 = 44); ACK2 packets are this size
    /// and NAKs this plus their loss list.
    pub header_bytes: u32,
    /// Bytes of a full ACK on the wire (header + 6 × 4 bytes of ACK fields = 68).
    pub ack_bytes: u32,
    /// SYN: the ACK period and rate-control interval, ns (draft-gg-udt-03: 10 ms).
    pub syn_interval_ns: u64,
    /// Maximum flow window: the receiver's buffer and the window at which slow start ends,
    /// packets (UDT4's default is 25 600).
    pub flow_window_packets: u32,
    /// RTT both ends assume before measuring one, ns (UDT4: 10·SYN = 100 ms).
    pub initial_rtt_ns: u64,
    /// Lower bound on the EXP timeout before its ExpCount multiplier, ns (draft-gg-udt-03 §4:
    /// "e.g., 0.5 second").
    pub min_exp_ns: u64,
}

impl UdtFlowSpec {
    /// The controller parameters as the cc crate takes them.
    pub fn cc_params(&self) -> Params {
        Params::from_pairs(self.params.iter().map(|(k, v)| (k.clone(), *v)).collect())
    }
}

impl FlowSpec {
    /// The flow's name.
    pub fn name(&self) -> &str {
        match self {
            FlowSpec::Tcp(f) => &f.name,
            FlowSpec::UdpCbr(f) => &f.name,
            FlowSpec::Udt(f) => &f.name,
        }
    }

    /// (source host, destination host).
    pub fn endpoints(&self) -> (usize, usize) {
        match self {
            FlowSpec::Tcp(f) => (f.src, f.dst),
            FlowSpec::UdpCbr(f) => (f.src, f.dst),
            FlowSpec::Udt(f) => (f.src, f.dst),
        }
    }

    /// (start, stop) in ns: the application's schedule, from which samples and completion
    /// times count.
    pub fn schedule(&self) -> (u64, Option<u64>) {
        match self {
            FlowSpec::Tcp(f) => (f.start_ns, f.stop_ns),
            FlowSpec::UdpCbr(f) => (f.start_ns, f.stop_ns),
            FlowSpec::Udt(f) => (f.start_ns, f.stop_ns),
        }
    }

    /// When the flow's sender starts, ns: its scheduled start plus a TCP flow's
    /// `start_delay_ns`.
    pub fn sender_start_ns(&self) -> u64 {
        match self {
            FlowSpec::Tcp(f) => f.sender_start_ns(),
            other => other.schedule().0,
        }
    }
}

impl TcpFlowSpec {
    /// When the sender starts, ns: `start_ns + start_delay_ns` (saturating).
    pub fn sender_start_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.start_delay_ns)
    }

    /// The controller parameters as the cc crate takes them.
    pub fn cc_params(&self) -> Params {
        Params::from_pairs(self.params.iter().map(|(k, v)| (k.clone(), *v)).collect())
    }

    /// The sender's RTO rule parsed from `rto_rule`.
    ///
    /// # Errors
    /// A [`SpecError`] at `rto_rule` for a name other than `rfc6298` or `linux`.
    pub fn rto_rule(&self) -> Result<ccarena_transport::rtt::RtoRule, SpecError> {
        self.rto_rule.parse().map_err(|message| err("rto_rule", message))
    }

    /// The transport's fields: a known TCP flavor with valid parameters, a known recovery mode,
    /// positive sizes and counts, RTO bounds in order, buffers of at least one segment. Paths
    /// are relative to the flow.
    fn validate(&self) -> Result<(), SpecError> {
        new_controller(&self.flavor, &self.cc_params()).map_err(|e| err("flavor", e.to_string()))?;
        if let Some(info) = ccarena_cc::catalogue().iter().find(|c| c.name == self.flavor && c.transport != "tcp") {
            return Err(err("flavor", format!("flavor '{}' runs on its own transport: use a flow of kind \"{}\"", self.flavor, info.transport)));
        }
        self.recovery.parse::<RecoveryMode>().map_err(|e| err("recovery", e.to_string()))?;
        if self.mss_bytes == 0 {
            return Err(err("mss_bytes", "must be positive"));
        }
        if self.initial_cwnd_packets == 0 {
            return Err(err("initial_cwnd_packets", "must be positive"));
        }
        if self.dupthresh == 0 {
            return Err(err("dupthresh", "must be positive"));
        }
        if self.ack_every_segments == 0 {
            return Err(err("ack_every_segments", "must be positive"));
        }
        if self.min_rto_ns == 0 || self.min_rto_ns > self.max_rto_ns {
            return Err(err("min_rto_ns", "must be positive and at most max_rto_ns"));
        }
        self.rto_rule()?;
        if self.rcvbuf_autotuning && self.rwnd_bytes.is_some() {
            return Err(err("rcvbuf_autotuning", "cannot be set with rwnd_bytes (autotuning sizes the window)".to_string()));
        }
        if self.quickack_segments > MAX_QUICKACK_SEGMENTS {
            return Err(err("quickack_segments", format!("must be 0..={MAX_QUICKACK_SEGMENTS} (0 = off)")));
        }
        if self.bytes == Some(0) {
            return Err(err("bytes", "must be positive (or null for unlimited)"));
        }
        if self.rwnd_bytes.is_some_and(|w| w < self.mss_bytes as u64) {
            return Err(err("rwnd_bytes", "must be at least mss_bytes (or null for unlimited)"));
        }
        if self.sndbuf_bytes.is_some_and(|w| w < self.mss_bytes as u64) {
            return Err(err("sndbuf_bytes", "must be at least mss_bytes (or null for unlimited)"));
        }
        if let Some(q) = &self.quic {
            q.validate(self)?;
        }
        if let Some(m) = &self.mptcp {
            m.validate(&self.flavor)?;
            if self.mss_bytes <= DSS_DATA_OPTION_BYTES {
                return Err(err("mss_bytes", format!("an MPTCP subflow carries a {}-byte DSS option in each segment: the MSS must be larger", DSS_DATA_OPTION_BYTES)));
            }
        }
        Ok(())
    }
}

impl CbrFlowSpec {
    /// The transport's fields: a positive rate and datagram size. Paths are relative to the flow.
    fn validate(&self) -> Result<(), SpecError> {
        if self.rate_bps == 0 {
            return Err(err("rate_bps", "must be positive"));
        }
        if self.packet_bytes == 0 {
            return Err(err("packet_bytes", "must be positive"));
        }
        Ok(())
    }
}

impl UdtFlowSpec {
    /// The transport's fields: valid `udt` controller parameters, positive sizes and intervals,
    /// a flow window of at least 2 packets. Paths are relative to the flow.
    fn validate(&self) -> Result<(), SpecError> {
        ccarena_cc::udt::Udt::new(&self.cc_params()).map_err(|e| err("params", e.to_string()))?;
        if self.mss_bytes == 0 {
            return Err(err("mss_bytes", "must be positive"));
        }
        if self.syn_interval_ns == 0 {
            return Err(err("syn_interval_ns", "must be positive"));
        }
        if self.flow_window_packets < 2 {
            return Err(err("flow_window_packets", "must be at least 2"));
        }
        if self.initial_rtt_ns == 0 {
            return Err(err("initial_rtt_ns", "must be positive"));
        }
        if self.bytes == Some(0) {
            return Err(err("bytes", "must be positive (or null for unlimited)"));
        }
        Ok(())
    }
}

/// A problem with a spec: where (`flows[0].flavor`) and what.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    /// Path of the offending field, e.g. `links[3].rate_bps`; empty for a parse error.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

impl SpecError {
    /// The same error with `prefix` put in front of its path (`prefix.path`, or `prefix` alone
    /// for an error about the object itself): section validators report paths relative to the
    /// object they check.
    fn under(self, prefix: &str) -> SpecError {
        let ccarena_link::FieldError { field, message } = ccarena_link::FieldError::new(self.path, self.message).under(prefix);
        SpecError { path: field, message }
    }
}

impl From<ccarena_link::FieldError> for SpecError {
    /// A link-format error, its field as the path.
    fn from(e: ccarena_link::FieldError) -> SpecError {
        SpecError { path: e.field, message: e.message }
    }
}

pub(crate) fn err(path: impl Into<String>, message: impl Into<String>) -> SpecError {
    SpecError { path: path.into(), message: message.into() }
}

/// A link's queue: exactly one limit (the engine always limits a queue), then the link
/// crate's checks ([`QueueSpec::validate`]). Paths are relative to the queue.
fn validate_queue(q: &QueueSpec) -> Result<(), SpecError> {
    if q.limit_packets.is_some() == q.limit_bytes.is_some() {
        return Err(err("", "set exactly one of limit_packets and limit_bytes"));
    }
    q.validate().map_err(SpecError::from)
}

/// Check an event's new RED thresholds: the link's queue is RED, one complete pair is given, in
/// the unit of the queue's own thresholds, with min_th < max_th.
fn validate_red_change(c: &LinkChangeSpec, link: &LinkSpec, index: usize) -> Result<(), SpecError> {
    let Some(red) = link.queue.red.as_ref().filter(|_| link.queue.discipline == Discipline::Red) else {
        return Err(err("set", format!("link {index}'s queue is not RED: it has no thresholds to change")));
    };
    let in_packets = red.min_th_packets.is_some();
    let (lo, hi, lo_name, hi_name, other) = if in_packets {
        (c.red_min_th_packets, c.red_max_th_packets, "red_min_th_packets", "red_max_th_packets", [c.red_min_th_bytes, c.red_max_th_bytes])
    } else {
        (c.red_min_th_bytes, c.red_max_th_bytes, "red_min_th_bytes", "red_max_th_bytes", [c.red_min_th_packets, c.red_max_th_packets])
    };
    if other.iter().any(Option::is_some) {
        let unit = if in_packets { "packets; set red_min_th_packets and red_max_th_packets" } else { "bytes; set red_min_th_bytes and red_max_th_bytes" };
        return Err(err("set", format!("link {index}'s RED thresholds are in {unit}")));
    }
    match (lo, hi) {
        (Some(lo), Some(hi)) if hi > lo => Ok(()),
        (Some(lo), Some(_)) => Err(err(format!("set.{hi_name}"), format!("must be greater than {lo_name} ({lo})"))),
        _ => Err(err("set", format!("set both {lo_name} and {hi_name}, or neither"))),
    }
}

impl Spec {
    /// Parse a spec from JSON: structure only (unknown and missing fields are errors), no value
    /// checks. [`Simulation::new`](crate::Simulation::new) validates, once, before it builds a run.
    ///
    /// # Errors
    /// [`SpecError`] with an empty path for malformed JSON and unknown or missing fields.
    pub fn from_json(json: &str) -> Result<Spec, SpecError> {
        serde_json::from_str(json).map_err(|e| err("", format!("invalid spec: {e}")))
    }

    /// The spec as JSON, every field named (null where a value is absent), as [`Spec::from_json`]
    /// reads it back.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a spec always serializes")
    }

    /// Parse and check one queue object (`links[i].queue`, JSON) as [`Spec::validate`] checks a
    /// link's queue: exactly one limit, then [`QueueSpec::validate`]. For a front end that
    /// checks a scenario's queue before it builds a whole spec.
    ///
    /// # Errors
    /// [`SpecError`] with a path relative to the queue (`codel.target_ns`; empty for a parse
    /// error or the queue itself).
    pub fn validate_queue_json(json: &str) -> Result<(), SpecError> {
        let q: QueueSpec = serde_json::from_str(json).map_err(|e| err("", format!("invalid queue: {e}")))?;
        validate_queue(&q)
    }

    /// Parse `json` as a spec ([`Spec::from_json`]: structure only, no value checks) and write it
    /// back ([`Spec::to_json`]): what the engine understood, field for field, so a front end can
    /// check that its own spec model and this one agree.
    ///
    /// # Errors
    /// As [`Spec::from_json`].
    pub fn roundtrip_json(json: &str) -> Result<String, SpecError> {
        Ok(Spec::from_json(json)?.to_json())
    }

    /// Check values and references: indices in range, positive rates, probabilities in [0, 1],
    /// exactly one queue limit, the queue's discipline ([`QueueSpec::validate`]), known flavors
    /// and recovery modes, a route for every hop of every flow's path in both directions, and
    /// events that name a link and set valid values (a queue limit in the queue's own unit).
    /// Sections are checked in document order, each by its own validator.
    ///
    /// # Errors
    /// The first problem found, as a [`SpecError`] naming the field.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.validate_run()?;
        self.validate_nodes()?;
        for (i, l) in self.links.iter().enumerate() {
            self.validate_link(l).map_err(|e| e.under(&format!("links[{i}]")))?;
        }
        let table = self.validate_routes()?;
        let mut flow_names = std::collections::HashSet::new();
        for (i, f) in self.flows.iter().enumerate() {
            if !flow_names.insert(f.name()) {
                return Err(err(format!("flows[{i}].name"), format!("duplicate flow name '{}'", f.name())));
            }
            self.validate_flow(f, table.as_deref()).map_err(|e| e.under(&format!("flows[{i}]")))?;
        }
        for (i, e) in self.events.iter().enumerate() {
            self.validate_event(e).map_err(|e| e.under(&format!("events[{i}]")))?;
        }
        Ok(())
    }

    /// The run's own fields: format, duration, jitter, sampling interval.
    fn validate_run(&self) -> Result<(), SpecError> {
        if self.format != SPEC_FORMAT {
            return Err(err("format", format!("this engine reads format {SPEC_FORMAT}, got {}", self.format)));
        }
        if self.duration_ns == 0 {
            return Err(err("duration_ns", "must be positive"));
        }
        if let Some(j) = self.link_jitter {
            if !(0.0..=1.0).contains(&j) {
                return Err(err("link_jitter", format!("{j} is not in [0, 1]")));
            }
        }
        if self.sample_interval_ns == 0 {
            return Err(err("sample_interval_ns", "must be positive"));
        }
        if let Some(p) = &self.pcap {
            self.validate_pcap(p).map_err(|e| e.under("pcap"))?;
        }
        Ok(())
    }

    /// The captured links exist, each once, and the size limit holds a file header and records.
    fn validate_pcap(&self, p: &PcapSpec) -> Result<(), SpecError> {
        if p.links.is_empty() {
            return Err(err("links", "name at least one link to capture, or leave pcap null"));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, &l) in p.links.iter().enumerate() {
            if l >= self.links.len() {
                return Err(err(format!("links[{i}]"), format!("link {l} does not exist (the run has {} links)", self.links.len())));
            }
            if !seen.insert(l) {
                return Err(err(format!("links[{i}]"), format!("link {l} is listed twice")));
            }
        }
        if p.max_bytes < 1024 {
            return Err(err("max_bytes", format!("{} is below the smallest file, 1024 bytes", p.max_bytes)));
        }
        Ok(())
    }

    /// Node names are unique.
    fn validate_nodes(&self) -> Result<(), SpecError> {
        let mut names = std::collections::HashSet::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if !names.insert(node.name.as_str()) {
                return Err(err(format!("nodes[{i}].name"), format!("duplicate node name '{}'", node.name)));
            }
        }
        Ok(())
    }

    /// One link: its ends, rate, trace, wire loss and impairments, and its queue (exactly one
    /// limit, then the link crate's checks). Paths are relative to the link.
    fn validate_link(&self, l: &LinkSpec) -> Result<(), SpecError> {
        let n = self.nodes.len();
        if l.from >= n {
            return Err(err("from", format!("node index {} out of range (0..{n})", l.from)));
        }
        if l.to >= n {
            return Err(err("to", format!("node index {} out of range (0..{n})", l.to)));
        }
        if l.from == l.to {
            return Err(err("to", "a link must join two different nodes"));
        }
        if l.rate_bps == 0 {
            return Err(err("rate_bps", "must be positive"));
        }
        if let Some(trace) = &l.trace {
            trace.rate_trace().map_err(|e| SpecError::from(e).under("trace"))?;
        }
        l.wire.validate()?;
        validate_queue(&l.queue).map_err(|e| e.under("queue"))
    }

    /// The static routes; returns the complete table (node × destination → link) when the
    /// routes are the whole table (no `routing`), for [`Spec::validate_flow`] to walk.
    fn validate_routes(&self) -> Result<Option<Vec<Option<usize>>>, SpecError> {
        // Without `routing` the routes are the whole table and every flow's path is checked here;
        // with it, the engine computes the table and checks the paths (`crate::routing`).
        let n = self.nodes.len();
        let mut table = self.routing.is_none().then(|| vec![None; n * n]);
        for (i, r) in self.routes.iter().enumerate() {
            let p = |f: &str| format!("routes[{i}].{f}");
            if r.node >= n {
                return Err(err(p("node"), format!("node index {} out of range", r.node)));
            }
            if r.dst >= n {
                return Err(err(p("dst"), format!("node index {} out of range", r.dst)));
            }
            if r.link >= self.links.len() {
                return Err(err(p("link"), format!("link index {} out of range", r.link)));
            }
            if self.links[r.link].from != r.node {
                return Err(err(p("link"), format!("link {} does not leave node {}", r.link, r.node)));
            }
            if let Some(table) = &mut table {
                table[r.node * n + r.dst] = Some(r.link);
            }
        }
        Ok(table)
    }

    /// One flow: its hosts, schedule, path in both directions over the static `table` (when
    /// given), and its transport's fields. Paths are relative to the flow.
    fn validate_flow(&self, f: &FlowSpec, table: Option<&[Option<usize>]>) -> Result<(), SpecError> {
        let n = self.nodes.len();
        let (src, dst) = f.endpoints();
        for (field, node) in [("src", src), ("dst", dst)] {
            if node >= n {
                return Err(err(field, format!("node index {node} out of range")));
            }
            if self.nodes[node].kind != NodeKind::Host {
                return Err(err(field, format!("node '{}' is a router, not a host", self.nodes[node].name)));
            }
        }
        if src == dst {
            return Err(err("dst", "a flow needs two different hosts"));
        }
        let (start, stop) = f.schedule();
        if stop.is_some_and(|stop| stop <= start) {
            return Err(err("stop_ns", "must be after start_ns"));
        }
        if stop.is_some_and(|stop| stop <= f.sender_start_ns()) {
            return Err(err("start_delay_ns", "the sender must start before stop_ns"));
        }
        if let Some(table) = table {
            for (a, b) in [(src, dst), (dst, src)] {
                self.check_path(table, a, b).map_err(|m| err("dst", m))?;
            }
        }
        match f {
            FlowSpec::Tcp(t) => t.validate(),
            FlowSpec::UdpCbr(c) => c.validate(),
            FlowSpec::Udt(u) => u.validate(),
        }
    }

    /// One scheduled change: its link, and values the link can take (rate not on a traced link,
    /// a limit in the queue's unit, RED thresholds on a RED queue, RED's max_th within the new
    /// limit). Paths are relative to the event.
    fn validate_event(&self, e: &EventSpec) -> Result<(), SpecError> {
        let Some(link) = self.links.get(e.link) else {
            return Err(err("link", format!("link index {} out of range (0..{})", e.link, self.links.len())));
        };
        let c = &e.set;
        let sets_red = [c.red_min_th_packets, c.red_max_th_packets, c.red_min_th_bytes, c.red_max_th_bytes].iter().any(Option::is_some);
        if c.rate_bps.is_none() && c.delay_ns.is_none() && c.loss.is_none() && c.limit_packets.is_none() && c.limit_bytes.is_none() && !sets_red && c.up.is_none() {
            return Err(err("set", "changes nothing: give at least one non-null value"));
        }
        if c.rate_bps == Some(0) {
            return Err(err("set.rate_bps", "must be positive"));
        }
        if c.rate_bps.is_some() && link.trace.is_some() {
            return Err(err("set.rate_bps", "the link's rate follows a trace; a rate change cannot apply to it"));
        }
        if let Some(loss) = c.loss {
            ccarena_link::wire_spec::probability("loss", loss).map_err(|e| SpecError::from(e).under("set"))?;
        }
        let in_packets = link.queue.limit_packets.is_some();
        if c.limit_packets.is_some() && !in_packets {
            return Err(err("set.limit_packets", format!("link {}'s queue is limited in bytes; set limit_bytes", e.link)));
        }
        if c.limit_bytes.is_some() && in_packets {
            return Err(err("set.limit_bytes", format!("link {}'s queue is limited in packets; set limit_packets", e.link)));
        }
        if sets_red {
            validate_red_change(c, link, e.link)?;
        }
        // RED needs max_th ≤ limit after the change too (checked when both are in one unit);
        // an event that also sets the thresholds is checked against its own.
        if let Some(red) = &link.queue.red {
            let new_limit = c.limit_packets.or(c.limit_bytes);
            if let (Some(limit), Some(old_max_th)) = (new_limit, red.max_th_in_limit_unit(c.limit_packets, c.limit_bytes)) {
                let max_th = c.red_thresholds().map_or(old_max_th, |(_, hi)| hi);
                if limit < max_th {
                    let field = if c.limit_packets.is_some() { "set.limit_packets" } else { "set.limit_bytes" };
                    return Err(err(field, format!("{limit} is below the RED queue's max_th ({max_th}); RED needs max_th ≤ limit")));
                }
            }
        }
        Ok(())
    }

    fn check_path(&self, table: &[Option<usize>], src: usize, dst: usize) -> Result<(), String> {
        let n = self.nodes.len();
        let mut at = src;
        for _ in 0..n {
            if at == dst {
                return Ok(());
            }
            match table[at * n + dst] {
                Some(l) => at = self.links[l].to,
                None => {
                    return Err(format!(
                        "no route from '{}' to '{}' (at node '{}')",
                        self.nodes[src].name, self.nodes[dst].name, self.nodes[at].name
                    ))
                }
            }
        }
        Err(format!("routing loop between '{}' and '{}'", self.nodes[src].name, self.nodes[dst].name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{cbr_flow, link_event, make_red, red_bytes, tcp_flow, udt_flow, Dumbbell};

    /// A spec that uses every kind of struct and every optional value, both null and set.
    fn full_spec() -> Spec {
        let d = Dumbbell::new(3, 10_000_000, 5_000_000, 50);
        let mut tcp = tcp_flow("tcp", d.left(0), d.right(0), "cubic");
        tcp.params.insert("beta".into(), 0.7);
        tcp.stop_ns = Some(4_000_000_000);
        tcp.bytes = Some(123_456);
        let mut cbr = cbr_flow("cbr", d.left(1), d.right(1), 1_000_000, 1200);
        cbr.stop_ns = Some(3_000_000_000);
        let udt = udt_flow("udt", d.left(2), d.right(2));
        let mut s = d.spec(42, 5_000_000_000, 100_000_000, vec![FlowSpec::Tcp(tcp), FlowSpec::UdpCbr(cbr), FlowSpec::Udt(udt)]);
        make_red(&mut s.links[0].queue, red_bytes(15_000, 45_000));
        s.links[1].queue.ecn_threshold_packets = Some(20);
        s.links[1].wire.loss = 0.0125;
        s.links[1].wire.duplicate = 0.01;
        s.links[1].wire.reorder = 0.05;
        s.links[1].wire.reorder_delay_ns = Some(2_000_000);
        s.events.push(link_event(1_000_000_000, 0, |c| c.loss = Some(0.3)));
        s.events.push(link_event(2_000_000_000, 0, |c| c.up = Some(false)));
        // The dumbbell's table, now as static overrides of computed routes.
        s.routing = Some(RoutingSpec { mode: RoutingMode::Spray });
        s
    }

    #[test]
    fn roundtrip_is_lossless_and_names_every_field() {
        let spec = full_spec();
        spec.validate().expect("valid");
        let json = spec.to_json();
        let back = Spec::roundtrip_json(&json).expect("parses");
        assert_eq!(back, json, "serialize → parse → serialize is the identity");
        assert_eq!(Spec::from_json(&back).unwrap(), spec);
        // Absent values are written as null, not left out: DropTail's `red` included.
        let v: serde_json::Value = serde_json::from_str(&back).unwrap();
        let droptail = &v["links"][1]["queue"];
        assert_eq!(droptail.get("red"), Some(&serde_json::Value::Null), "{droptail}");
        assert_eq!(droptail.get("limit_bytes"), Some(&serde_json::Value::Null));
        assert_eq!(v["flows"][2].get("stop_ns"), Some(&serde_json::Value::Null));
        assert_eq!(v["events"][0]["set"].get("rate_bps"), Some(&serde_json::Value::Null));
    }

    #[test]
    fn linux_host_fields_default_when_absent_and_are_checked() {
        let spec = full_spec();
        // A spec written before `rto_rule` and `quickack_segments` existed still loads.
        let mut v: serde_json::Value = serde_json::from_str(&spec.to_json()).unwrap();
        let flow = v["flows"][0].as_object_mut().unwrap();
        flow.remove("rto_rule").expect("written");
        flow.remove("quickack_segments").expect("written");
        let old = Spec::from_json(&v.to_string()).expect("an old spec loads");
        let FlowSpec::Tcp(f) = &old.flows[0] else { panic!("tcp flow") };
        assert_eq!((f.rto_rule.as_str(), f.quickack_segments), ("rfc6298", 0));
        assert_eq!(f.rto_rule().unwrap(), ccarena_transport::rtt::RtoRule::Rfc6298);
        let with = |edit: &dyn Fn(&mut TcpFlowSpec)| {
            let mut s = full_spec();
            let FlowSpec::Tcp(f) = &mut s.flows[0] else { panic!("tcp flow") };
            edit(f);
            s.validate()
        };
        assert!(with(&|f| { f.rto_rule = "linux".into(); f.quickack_segments = 16; }).is_ok());
        let e = with(&|f| f.rto_rule = "bsd".into()).unwrap_err();
        assert!(e.path.ends_with("rto_rule") && e.message.contains("linux"), "{e}");
        let e = with(&|f| f.quickack_segments = MAX_QUICKACK_SEGMENTS + 1).unwrap_err();
        assert!(e.path.ends_with("quickack_segments"), "{e}");
    }

    /// A link's wire keys stay flat on the link (the engine spec's shape, which the front end
    /// writes and fingerprints), written with every key, and an unknown key on a link is still
    /// refused by name although the wire is a flattened struct.
    #[test]
    fn a_links_wire_keys_are_flat_and_unknown_keys_are_refused() {
        let spec = full_spec();
        let v: serde_json::Value = serde_json::from_str(&spec.to_json()).unwrap();
        let link = v["links"][1].as_object().unwrap();
        let keys: Vec<&str> = link.keys().map(String::as_str).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let mut expected = ["name", "from", "to", "rate_bps", "delay_ns", "loss", "duplicate", "reorder", "reorder_delay_ns", "queue", "sample", "trace"];
        expected.sort_unstable();
        assert_eq!(sorted, expected, "{keys:?}");
        assert_eq!((&link["loss"], &link["duplicate"], &link["reorder"], &link["reorder_delay_ns"]), (&0.0125.into(), &0.01.into(), &0.05.into(), &2_000_000.into()));
        assert_eq!(v["links"][0]["reorder_delay_ns"], serde_json::Value::Null, "absent is written as null");
        // The optional wire keys may be left out; `loss` may not.
        let mut old = v.clone();
        for key in ["duplicate", "reorder", "reorder_delay_ns"] {
            old["links"][0].as_object_mut().unwrap().remove(key);
        }
        assert_eq!(Spec::from_json(&old.to_string()).unwrap().links[0].wire, WireSpec::with_loss(0.0));
        old["links"][0].as_object_mut().unwrap().remove("loss");
        let e = Spec::from_json(&old.to_string()).unwrap_err();
        assert!(e.message.contains("missing field `loss`"), "{e}");
        let mut typo = v.clone();
        typo["links"][2].as_object_mut().unwrap().insert("los".into(), 0.1.into());
        let e = Spec::from_json(&typo.to_string()).unwrap_err();
        assert!(e.message.contains("unknown field `los`"), "{e}");
        // Each probability is checked once, by the link crate, under the link's path.
        for (key, value) in [("loss", 1.5), ("duplicate", -0.5), ("reorder", 2.0)] {
            let mut bad = v.clone();
            bad["links"][1][key] = value.into();
            let e = Spec::from_json(&bad.to_string()).unwrap().validate().unwrap_err();
            assert_eq!(e.to_string(), format!("links[1].{key}: {value} is not a probability in [0, 1]"));
        }
    }

    #[test]
    fn roundtrip_checks_structure_not_values() {
        let mut spec = full_spec();
        spec.links[0].rate_bps = 0;
        let json = spec.to_json();
        assert_eq!(Spec::roundtrip_json(&json).unwrap(), json, "a zero rate is a value problem, not a parse error");
        let e = Spec::roundtrip_json(&json.replace("\"seed\":42", "\"seed\":42,\"extra\":1")).unwrap_err();
        assert!(e.message.contains("unknown field `extra`"), "{e}");
    }
}
