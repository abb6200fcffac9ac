//! What each flow and link reports: one named row per flow and per link at the end of a run, and
//! one per flow at each sample instant (columns documented in `docs/engine-spec.md`).
//!
//! A row is a struct whose field names are the column names; `table!` turns a slice of rows into
//! a [`Table`] in the documented column order, so no value is placed by position.

use ccarena_cc::{Duration, SimTime};
use ccarena_link::qdisc::dualpi2::{Class, DualPi2};
use ccarena_link::Aqm;
use ccarena_transport::{PacketCounters, ReceivedPacketCounters};

use crate::flow::{CbrFlow, Flow, MptcpFlow, QuicFlow, TcpFlow, Transfer, UdtFlow};
use crate::link::Link;
use crate::sampler::{ca_state_code, FlowSample};
use crate::spec::{FlowSpec, LinkSpec, TcpFlowSpec};
use crate::table::{Column, Table};

/// A value type that makes a column.
trait Cell: Sized {
    fn column(values: Vec<Self>) -> Column;
}

impl Cell for f64 {
    fn column(values: Vec<f64>) -> Column {
        Column::F64(values)
    }
}

impl Cell for String {
    fn column(values: Vec<String>) -> Column {
        Column::Str(values)
    }
}

/// `table!(rows; a, b, c)`: a [`Table`] with columns `a`, `b`, `c` (in that order) taken from the
/// like-named fields of each row.
macro_rules! table {
    ($rows:expr; $($field:ident),+ $(,)?) => {
        Table { columns: vec![$((stringify!($field), Cell::column($rows.iter().map(|r| r.$field.clone()).collect()))),+] }
    };
}

/// A flow's summary row (the `flows` table). Counts are f64 so a column can hold NaN where a
/// value does not apply to the flow's kind.
#[derive(Clone, Debug)]
pub struct FlowRow {
    /// Flow index.
    pub flow: f64,
    /// The spec's flow name.
    pub name: String,
    /// `tcp`, `udt` or `udp_cbr`.
    pub kind: String,
    /// Congestion controller (`udt` for UDT, `udp-cbr` for CBR).
    pub flavor: String,
    /// Loss recovery (`nak` for UDT, empty for CBR).
    pub recovery: String,
    /// Application start, s.
    pub start_s: f64,
    /// Completion, stop or run end (whichever is first), s.
    pub end_s: f64,
    /// Bytes the application offered.
    pub bytes_offered: f64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: f64,
    /// Payload bytes retransmitted.
    pub bytes_retransmitted: f64,
    /// In-order payload bytes delivered to the receiving application.
    pub bytes_delivered: f64,
    /// Data packets sent.
    pub packets_sent: f64,
    /// Data packets retransmitted.
    pub packets_retransmitted: f64,
    /// Data packets received.
    pub packets_received: f64,
    /// Data packets that never arrived: sent minus received.
    pub packets_lost: f64,
    /// Retransmission timeouts (UDT: EXP timeouts).
    pub rto_count: f64,
    /// Fast recoveries (UDT: congestion periods).
    pub fast_recoveries: f64,
    /// Timeouts found spurious.
    pub spurious_rtos: f64,
    /// Payload bytes received more than once.
    pub duplicate_bytes_received: f64,
    /// Start to last byte acknowledged, s; NaN unless finished.
    pub completion_time_s: f64,
    /// Smallest RTT sample, s.
    pub rtt_min_s: f64,
    /// Mean RTT sample, s.
    pub rtt_mean_s: f64,
    /// Median RTT sample, s.
    pub rtt_p50_s: f64,
    /// 95th percentile RTT sample, s.
    pub rtt_p95_s: f64,
    /// 99th percentile RTT sample, s.
    pub rtt_p99_s: f64,
    /// RTT samples taken.
    pub rtt_samples: f64,
    /// Data packets the receiver got CE-marked (RFC 3168 §5), duplicates included; 0 for flows
    /// whose packets are never ECN-capable (UDT, UDP CBR).
    pub ce_packets: f64,
    /// Payload bytes of the data packets the receiver got CE-marked, duplicates included.
    pub ce_bytes: f64,
    /// Subflows of an MPTCP connection; 1 for single-path TCP, NaN for UDT and UDP CBR.
    pub subflows: f64,
    /// How an MPTCP connection couples its subflows (`lia`, `olia`, `balia`, `uncoupled`);
    /// empty for every other flow.
    pub coupling: String,
    /// Connection bytes reinjected onto another subflow after a subflow's timeout (MPTCP; 0 for
    /// single-path TCP, NaN for UDT and UDP CBR).
    pub bytes_reinjected: f64,
    /// Mean time a segment that arrived out of order at the connection level waited for the
    /// data before it (head-of-line blocking across subflows), s; NaN when none waited or the
    /// flow is not MPTCP.
    pub reorder_delay_mean_s: f64,
    /// Longest such wait, s; NaN when none waited or the flow is not MPTCP.
    pub reorder_delay_max_s: f64,
}

/// A link's summary row (the `links` table).
#[derive(Clone, Debug)]
pub struct LinkRow {
    /// Link index.
    pub link: f64,
    /// The spec's link name.
    pub name: String,
    /// Serialization rate in the spec, bits/s.
    pub rate_bps: f64,
    /// Propagation delay in the spec, ns.
    pub delay_ns: f64,
    /// Packets offered to the queue.
    pub packets_in: f64,
    /// Bytes offered to the queue.
    pub bytes_in: f64,
    /// Packets that reached the far end.
    pub packets_delivered: f64,
    /// Packets the queue dropped.
    pub packets_dropped_queue: f64,
    /// Packets the queue marked CE.
    pub packets_marked: f64,
    /// Packets lost on the wire.
    pub packets_lost_wire: f64,
    /// Packets lost to the link being down (queued or on the wire when it went down, or offered
    /// while down).
    pub down_drops_packets: f64,
    /// Packets that arrived over this link at a node with no route to their destination.
    pub no_route_drops_packets: f64,
    /// Packets waiting at the end.
    pub packets_queued_end: f64,
    /// Packets propagating at the end.
    pub packets_in_flight_end: f64,
    /// Bytes serialized.
    pub bytes_transmitted: f64,
    /// Busy time over elapsed time; NaN at time 0.
    pub utilization: f64,
    /// Packets the wire delivered twice (each counted once; its copy is in `packets_delivered`).
    pub packets_duplicated: f64,
    /// Packets the wire held back so later ones overtook them.
    pub packets_reordered: f64,
    /// DualPI2's L4S queue (ECT(1) and CE packets; RFC 9332 §2.1); NaN for other disciplines.
    pub l4s: ClassSummary,
    /// DualPI2's Classic queue (Not-ECT and ECT(0) packets); NaN for other disciplines.
    pub classic: ClassSummary,
}

/// One of DualPI2's two queues (RFC 9332 §2.1) in the `links` table, as the columns
/// `l4s_<field>` and `classic_<field>`; every value NaN on a link whose discipline is not
/// DualPI2, the sojourns NaN when no packet left the queue. Sojourn: from enqueue to the start
/// of transmission, one value per departure, quantiles to within 1.6% ([`ccarena_link::Histogram`]).
#[derive(Clone, Copy, Debug)]
pub struct ClassSummary {
    /// Packets that left the queue for the transmitter.
    pub packets_departed: f64,
    /// Packets the AQM marked CE (they departed too).
    pub packets_marked: f64,
    /// Packets dropped: refused at the shared limit or dropped by the AQM at dequeue.
    pub packets_dropped: f64,
    /// Mean sojourn, s.
    pub sojourn_mean_s: f64,
    /// Shortest sojourn, s.
    pub sojourn_min_s: f64,
    /// 5th percentile of the sojourns, s.
    pub sojourn_p5_s: f64,
    /// 10th percentile of the sojourns, s.
    pub sojourn_p10_s: f64,
    /// 25th percentile of the sojourns, s.
    pub sojourn_p25_s: f64,
    /// Median sojourn, s.
    pub sojourn_p50_s: f64,
    /// 75th percentile of the sojourns, s.
    pub sojourn_p75_s: f64,
    /// 90th percentile of the sojourns, s.
    pub sojourn_p90_s: f64,
    /// 95th percentile of the sojourns, s.
    pub sojourn_p95_s: f64,
    /// 99th percentile of the sojourns, s.
    pub sojourn_p99_s: f64,
    /// Longest sojourn, s.
    pub sojourn_max_s: f64,
}

/// `$m!($($args)*; <every ClassSummary field>)`: the field list written once, for the `links`
/// table's per-class columns.
macro_rules! with_class_fields {
    ($m:ident!($($args:tt)*)) => {
        $m!($($args)*; packets_departed, packets_marked, packets_dropped, sojourn_mean_s, sojourn_min_s,
            sojourn_p5_s, sojourn_p10_s, sojourn_p25_s, sojourn_p50_s, sojourn_p75_s, sojourn_p90_s,
            sojourn_p95_s, sojourn_p99_s, sojourn_max_s)
    };
}

/// `class_columns!(rows, l4s; a, b)`: the columns `l4s_a`, `l4s_b` from `row.l4s.a`, `row.l4s.b`.
macro_rules! class_columns {
    ($rows:expr, $class:ident; $($field:ident),+) => {
        vec![$((concat!(stringify!($class), "_", stringify!($field)), Column::F64($rows.iter().map(|r| r.$class.$field).collect()))),+]
    };
}

impl ClassSummary {
    /// Every value NaN: a link whose discipline has no classes.
    pub const NAN: ClassSummary = ClassSummary {
        packets_departed: f64::NAN,
        packets_marked: f64::NAN,
        packets_dropped: f64::NAN,
        sojourn_mean_s: f64::NAN,
        sojourn_min_s: f64::NAN,
        sojourn_p5_s: f64::NAN,
        sojourn_p10_s: f64::NAN,
        sojourn_p25_s: f64::NAN,
        sojourn_p50_s: f64::NAN,
        sojourn_p75_s: f64::NAN,
        sojourn_p90_s: f64::NAN,
        sojourn_p95_s: f64::NAN,
        sojourn_p99_s: f64::NAN,
        sojourn_max_s: f64::NAN,
    };

    /// `class`'s queue of `aqm`: its counters and its sojourn histogram.
    pub fn of(aqm: &DualPi2, class: Class) -> ClassSummary {
        let c = match class {
            Class::L4s => aqm.l4s_counters(),
            Class::Classic => aqm.classic_counters(),
        };
        let h = aqm.sojourn_histogram(class);
        let q = |p: f64| h.quantile(p) / 1e9;
        ClassSummary {
            packets_departed: c.departed as f64,
            packets_marked: c.marked as f64,
            packets_dropped: (c.dropped_limit + c.dropped_aqm) as f64,
            sojourn_mean_s: h.mean() / 1e9,
            sojourn_min_s: h.min() / 1e9,
            sojourn_p5_s: q(0.05),
            sojourn_p10_s: q(0.10),
            sojourn_p25_s: q(0.25),
            sojourn_p50_s: q(0.50),
            sojourn_p75_s: q(0.75),
            sojourn_p90_s: q(0.90),
            sojourn_p95_s: q(0.95),
            sojourn_p99_s: q(0.99),
            sojourn_max_s: if h.count() == 0 { f64::NAN } else { h.max_ns() as f64 / 1e9 },
        }
    }
}

/// The `flows` table.
pub fn flow_table(rows: &[FlowRow]) -> Table {
    table!(rows;
        flow, name, kind, flavor, recovery, start_s, end_s, bytes_offered, bytes_sent, bytes_retransmitted,
        bytes_delivered, packets_sent, packets_retransmitted, packets_received, packets_lost, rto_count,
        fast_recoveries, spurious_rtos, duplicate_bytes_received, completion_time_s, rtt_min_s, rtt_mean_s,
        rtt_p50_s, rtt_p95_s, rtt_p99_s, rtt_samples, ce_packets, ce_bytes, subflows, coupling,
        bytes_reinjected, reorder_delay_mean_s, reorder_delay_max_s,
    )
}

/// The `links` table.
pub fn link_table(rows: &[LinkRow]) -> Table {
    let mut table = table!(rows;
        link, name, rate_bps, delay_ns, packets_in, bytes_in, packets_delivered, packets_dropped_queue,
        packets_marked, packets_lost_wire, down_drops_packets, no_route_drops_packets, packets_queued_end, packets_in_flight_end, bytes_transmitted,
        utilization, packets_duplicated, packets_reordered,
    );
    table.columns.extend(with_class_fields!(class_columns!(rows, l4s)));
    table.columns.extend(with_class_fields!(class_columns!(rows, classic)));
    table
}

/// A row with every value NaN and no names: the base each kind fills in.
fn nan_row(index: usize) -> FlowRow {
    let nan = f64::NAN;
    FlowRow {
        flow: index as f64,
        name: String::new(),
        kind: String::new(),
        flavor: String::new(),
        recovery: String::new(),
        start_s: nan,
        end_s: nan,
        bytes_offered: nan,
        bytes_sent: nan,
        bytes_retransmitted: nan,
        bytes_delivered: nan,
        packets_sent: nan,
        packets_retransmitted: nan,
        packets_received: nan,
        packets_lost: nan,
        rto_count: nan,
        fast_recoveries: nan,
        spurious_rtos: nan,
        duplicate_bytes_received: nan,
        completion_time_s: nan,
        rtt_min_s: nan,
        rtt_mean_s: nan,
        rtt_p50_s: nan,
        rtt_p95_s: nan,
        rtt_p99_s: nan,
        rtt_samples: nan,
        ce_packets: nan,
        ce_bytes: nan,
        subflows: nan,
        coupling: String::new(),
        bytes_reinjected: nan,
        reorder_delay_mean_s: nan,
        reorder_delay_max_s: nan,
    }
}

/// Fill in what every reliable transfer reports the same way: end, delivery, completion and the
/// RTT distribution.
fn transfer_fields(row: &mut FlowRow, t: &Transfer, start_ns: u64, stop_end_s: f64) {
    row.end_s = t.completed_at.map(|c| c.as_secs_f64()).unwrap_or(stop_end_s);
    row.bytes_delivered = t.delivered_bytes as f64;
    row.completion_time_s = t.completed_at.map_or(f64::NAN, |c| (c - SimTime(start_ns)).as_secs_f64());
    let h = &t.rtt;
    row.rtt_min_s = h.min() / 1e9;
    row.rtt_mean_s = h.mean() / 1e9;
    row.rtt_p50_s = h.quantile(0.5) / 1e9;
    row.rtt_p95_s = h.quantile(0.95) / 1e9;
    row.rtt_p99_s = h.quantile(0.99) / 1e9;
    row.rtt_samples = h.count() as f64;
}

/// Flow `index`'s summary row at `now`.
pub fn flow_row(index: usize, flow: &Flow, spec: &FlowSpec, now: SimTime) -> FlowRow {
    let (start_ns, stop_ns) = spec.schedule();
    let end_s = now.as_secs_f64();
    // Stop time (within the run), else the run's end; a finished transfer ends at completion.
    let stop_end_s = stop_ns.map(|s| (s as f64 / 1e9).min(end_s)).unwrap_or(end_s);
    // A transfer that has not started reports what it would hold at its start.
    let built;
    let flow = match flow {
        Flow::Idle { run_seed } => {
            built = Flow::build(index, spec, *run_seed).expect("checked when the simulation was built");
            &built
        }
        other => other,
    };
    let mut row = nan_row(index);
    row.name = spec.name().to_string();
    row.start_s = start_ns as f64 / 1e9;
    match (flow, spec) {
        (Flow::Tcp(t), FlowSpec::Tcp(ts)) => tcp_fields(&mut row, t, &ts.flavor, &ts.recovery),
        (Flow::Mptcp(m), FlowSpec::Tcp(ts)) => mptcp_fields(&mut row, m, ts),
        (Flow::Quic(q), FlowSpec::Tcp(ts)) => quic_fields(&mut row, q, &ts.flavor),
        (Flow::Udt(u), FlowSpec::Udt(_)) => udt_fields(&mut row, u),
        (Flow::Cbr(c), _) => cbr_fields(&mut row, c),
        _ => unreachable!("flow kinds follow the spec"),
    }
    match flow {
        Flow::Tcp(t) => transfer_fields(&mut row, &t.transfer, start_ns, stop_end_s),
        Flow::Udt(u) => transfer_fields(&mut row, &u.transfer, start_ns, stop_end_s),
        Flow::Mptcp(m) => transfer_fields(&mut row, &m.transfer, start_ns, stop_end_s),
        Flow::Quic(q) => transfer_fields(&mut row, &q.transfer, start_ns, stop_end_s),
        Flow::Cbr(_) => row.end_s = stop_end_s,
        Flow::Idle { .. } => unreachable!("built above"),
    }
    row
}

fn tcp_fields(row: &mut FlowRow, t: &TcpFlow, flavor: &str, recovery: &str) {
    let st = t.sender.stats();
    let r = t.receiver.stats();
    row.kind = "tcp".to_string();
    row.flavor = flavor.to_string();
    row.recovery = recovery.to_string();
    row.bytes_offered = t.sender.bytes_offered().min(t.transfer.bytes.unwrap_or(u64::MAX)) as f64;
    row.bytes_sent = st.bytes_sent as f64;
    row.bytes_retransmitted = st.bytes_retransmitted as f64;
    row.packets_sent = st.segments_sent as f64;
    row.packets_retransmitted = st.segments_retransmitted as f64;
    row.packets_received = r.segments_received as f64;
    // Duplicates are counted once each on both sides, so spurious retransmissions cancel.
    row.packets_lost = st.segments_sent.saturating_sub(r.segments_received) as f64;
    row.rto_count = st.rto_count as f64;
    row.fast_recoveries = st.fast_recoveries as f64;
    row.spurious_rtos = st.spurious_rtos as f64;
    row.duplicate_bytes_received = r.duplicate_bytes as f64;
    row.ce_packets = r.ce_segments as f64;
    row.ce_bytes = r.ce_bytes as f64;
    row.subflows = 1.0;
    row.bytes_reinjected = 0.0;
}

/// An MPTCP connection's row: its subflows' counters summed, the connection's own delivery
/// (`transfer_fields`), reinjections and data-level reordering waits.
fn mptcp_fields(row: &mut FlowRow, m: &MptcpFlow, spec: &TcpFlowSpec) {
    let sum = |f: &dyn Fn(&ccarena_transport::SenderStats, &ccarena_transport::ReceiverStats) -> u64| {
        (0..m.sender.subflow_count()).map(|i| f(m.sender.subflow(i).stats(), m.receiver.subflow(i).stats())).sum::<u64>() as f64
    };
    row.kind = "tcp".to_string();
    row.flavor = spec.flavor.clone();
    row.recovery = spec.recovery.clone();
    row.bytes_offered = m.sender.bytes_offered().min(m.transfer.bytes.unwrap_or(u64::MAX)) as f64;
    row.bytes_sent = sum(&|s, _| s.bytes_sent);
    row.bytes_retransmitted = sum(&|s, _| s.bytes_retransmitted);
    row.packets_sent = sum(&|s, _| s.segments_sent);
    row.packets_retransmitted = sum(&|s, _| s.segments_retransmitted);
    row.packets_received = sum(&|_, r| r.segments_received);
    row.packets_lost = (row.packets_sent - row.packets_received).max(0.0);
    row.rto_count = sum(&|s, _| s.rto_count);
    row.fast_recoveries = sum(&|s, _| s.fast_recoveries);
    row.spurious_rtos = sum(&|s, _| s.spurious_rtos);
    row.duplicate_bytes_received = sum(&|_, r| r.duplicate_bytes) + m.receiver.duplicate_data_bytes() as f64;
    row.ce_packets = sum(&|_, r| r.ce_segments);
    row.ce_bytes = sum(&|_, r| r.ce_bytes);
    let mptcp = spec.mptcp.as_ref().expect("an MPTCP flow");
    row.subflows = mptcp.subflows as f64;
    row.coupling = mptcp.coupling.clone();
    row.bytes_reinjected = (0..m.sender.subflow_count()).map(|i| m.sender.subflow_stats(i).bytes_reinjected).sum::<u64>() as f64;
    let w = m.receiver.reorder_stats();
    if w.segments_delayed > 0 {
        row.reorder_delay_mean_s = w.total_delay_ns as f64 / w.segments_delayed as f64 / 1e9;
        row.reorder_delay_max_s = w.max_delay_ns as f64 / 1e9;
    }
}

/// A row's sent, retransmitted, received, lost and duplicate counters from the totals of a
/// transport that counts in packets (QUIC's, UDT's). Lost is sent less received: duplicates are
/// counted once each on both sides, so spurious retransmissions cancel.
fn packet_fields(row: &mut FlowRow, st: PacketCounters, r: ReceivedPacketCounters) {
    row.bytes_sent = st.bytes_sent as f64;
    row.bytes_retransmitted = st.bytes_retransmitted as f64;
    row.packets_sent = st.packets_sent as f64;
    row.packets_retransmitted = st.packets_retransmitted as f64;
    row.packets_received = r.packets_received as f64;
    row.packets_lost = st.packets_sent.saturating_sub(r.packets_received) as f64;
    row.duplicate_bytes_received = r.duplicate_bytes as f64;
}

/// A QUIC connection's row: `kind` "quic", `recovery` "rfc9002"; `rto_count` counts probe
/// timeouts (a PTO does not collapse the window as an RTO does, RFC 9002 §6.2) and
/// `fast_recoveries` the congestion events that losses started; no spurious-timeout detection.
fn quic_fields(row: &mut FlowRow, q: &QuicFlow, flavor: &str) {
    let st = q.sender.stats();
    let r = q.receiver.stats();
    row.kind = "quic".to_string();
    row.flavor = flavor.to_string();
    row.recovery = "rfc9002".to_string();
    row.bytes_offered = q.sender.bytes_offered().min(q.transfer.bytes.unwrap_or(u64::MAX)) as f64;
    packet_fields(row, st.packet_counters(), r.packet_counters());
    row.rto_count = st.pto_count as f64;
    row.fast_recoveries = st.loss_congestion_events as f64;
    row.ce_packets = r.ce_packets as f64;
    row.ce_bytes = r.ce_bytes as f64;
    row.subflows = 1.0;
    row.bytes_reinjected = 0.0;
}

fn udt_fields(row: &mut FlowRow, u: &UdtFlow) {
    let st = u.sender.stats();
    let r = u.receiver.stats();
    row.kind = "udt".to_string();
    row.flavor = "udt".to_string();
    row.recovery = "nak".to_string();
    row.bytes_offered = u.sender.bytes_offered().min(u.transfer.bytes.unwrap_or(u64::MAX)) as f64;
    packet_fields(row, st.packet_counters(), r.packet_counters());
    // EXP timeouts; congestion periods (NAKs that started one); no spurious timeout detection.
    row.rto_count = st.exp_timeouts as f64;
    row.fast_recoveries = u.sender.cc().stats().congestion_periods as f64;
    // UDT's packets are Not-ECT: no queue marks them.
    row.ce_packets = 0.0;
    row.ce_bytes = 0.0;
}

fn cbr_fields(row: &mut FlowRow, c: &CbrFlow) {
    let pb = c.packet_bytes as f64;
    row.kind = "udp_cbr".to_string();
    row.flavor = "udp-cbr".to_string();
    row.bytes_offered = c.sent as f64 * pb;
    row.bytes_sent = c.sent as f64 * pb;
    row.bytes_retransmitted = 0.0;
    row.bytes_delivered = c.received as f64 * pb;
    row.packets_sent = c.sent as f64;
    row.packets_retransmitted = 0.0;
    row.packets_received = c.received as f64;
    row.packets_lost = c.sent.saturating_sub(c.received) as f64;
    row.duplicate_bytes_received = 0.0;
    row.rtt_samples = 0.0;
    // Datagrams are Not-ECT (RFC 3168 §6.1.4 leaves them out): no queue marks them.
    row.ce_packets = 0.0;
    row.ce_bytes = 0.0;
}

/// Link `index`'s summary row at `now` (after [`Link::advance`] to `now`); `no_route_drops` is
/// the engine's count of packets that arrived over it and had no route onward.
pub fn link_row(index: usize, link: &Link, spec: &LinkSpec, now: SimTime, no_route_drops: u64) -> LinkRow {
    let c = link.counters();
    let elapsed_ns = now.as_nanos();
    let (l4s, classic) = match link.qdisc().aqm() {
        Some(Aqm::DualPi2(d)) => (ClassSummary::of(d, Class::L4s), ClassSummary::of(d, Class::Classic)),
        _ => (ClassSummary::NAN, ClassSummary::NAN),
    };
    LinkRow {
        link: index as f64,
        name: spec.name.clone(),
        rate_bps: spec.rate_bps as f64,
        delay_ns: spec.delay_ns as f64,
        packets_in: c.packets_in as f64,
        bytes_in: c.bytes_in as f64,
        packets_delivered: c.packets_delivered as f64,
        packets_dropped_queue: c.packets_dropped_queue as f64,
        packets_marked: c.packets_marked as f64,
        packets_lost_wire: c.packets_lost_wire as f64,
        down_drops_packets: c.packets_dropped_down as f64,
        no_route_drops_packets: no_route_drops as f64,
        packets_queued_end: link.queued_packets() as f64,
        packets_in_flight_end: link.in_pipe_packets() as f64,
        bytes_transmitted: c.bytes_transmitted as f64,
        // Busy time over elapsed time: right when events change the rate.
        utilization: if elapsed_ns > 0 { link.busy_ns(now) as f64 / elapsed_ns as f64 } else { f64::NAN },
        packets_duplicated: c.packets_duplicated as f64,
        packets_reordered: c.packets_reordered as f64,
        l4s,
        classic,
    }
}

/// Flow `index`'s row at a sample instant.
pub fn flow_sample(index: usize, flow: &Flow) -> FlowSample {
    let nan = f64::NAN;
    match flow {
        Flow::Tcp(t) => {
            let s = &t.sender;
            let cw = s.cwnd();
            let secs = |d: Option<Duration>| d.map_or(nan, |d| d.as_secs_f64());
            FlowSample {
                flow: index as u32,
                delivered_bytes: t.transfer.delivered_bytes,
                sent_bytes: s.stats().bytes_sent,
                cwnd_bytes: cw.cwnd_bytes as f64,
                ssthresh_bytes: if cw.ssthresh_bytes == u64::MAX { nan } else { cw.ssthresh_bytes as f64 },
                srtt_s: secs(s.srtt()),
                rttvar_s: secs(s.rttvar()),
                rto_s: s.rto().as_secs_f64(),
                inflight_bytes: s.in_flight_bytes() as f64,
                pacing_rate_bps: cw.pacing_rate_bps.map_or(nan, |r| r as f64),
                retransmits: s.stats().segments_retransmitted as f64,
                ca_state: ca_state_code(s.ca_state()),
            }
        }
        Flow::Udt(u) => {
            let s = &u.sender;
            FlowSample {
                flow: index as u32,
                delivered_bytes: u.transfer.delivered_bytes,
                sent_bytes: s.stats().bytes_sent,
                // The window new packets are held to: min(congestion, flow window).
                cwnd_bytes: (s.window_packets() * s.config().mss_bytes as u64) as f64,
                ssthresh_bytes: nan,
                srtt_s: s.rtt().as_secs_f64(),
                rttvar_s: s.rtt_var().as_secs_f64(),
                rto_s: s.exp_period().as_secs_f64(),
                inflight_bytes: s.unacked_bytes() as f64,
                pacing_rate_bps: s.cwnd().pacing_rate_bps.map_or(nan, |r| r as f64),
                retransmits: s.stats().packets_retransmitted as f64,
                ca_state: nan,
            }
        }
        Flow::Mptcp(m) => mptcp_sample(index, m),
        Flow::Quic(q) => {
            let s = &q.sender;
            let cw = s.cwnd();
            let secs = |d: Option<Duration>| d.map_or(nan, |d| d.as_secs_f64());
            FlowSample {
                flow: index as u32,
                delivered_bytes: q.transfer.delivered_bytes,
                sent_bytes: s.stats().bytes_sent,
                cwnd_bytes: cw.cwnd_bytes as f64,
                ssthresh_bytes: if cw.ssthresh_bytes == u64::MAX { nan } else { cw.ssthresh_bytes as f64 },
                srtt_s: secs(s.srtt()),
                rttvar_s: secs(s.rttvar()),
                // The probe timeout in force (with its backoff): QUIC's counterpart of the RTO.
                rto_s: s.pto().as_secs_f64(),
                inflight_bytes: s.in_flight_bytes() as f64,
                // The rate the sender paces at: the controller's, or RFC 9002 §7.7's
                // 1.25·cwnd/srtt.
                pacing_rate_bps: s.pacing_rate_bps().map_or(nan, |r| r as f64),
                retransmits: s.stats().packets_retransmitted as f64,
                ca_state: ca_state_code(s.ca_state()),
            }
        }
        // Between the flow's scheduled start and its sender's (`start_delay_ns`): nothing sent
        // or delivered yet, no window or RTT to show.
        Flow::Idle { .. } => FlowSample {
            flow: index as u32,
            delivered_bytes: 0,
            sent_bytes: 0,
            cwnd_bytes: nan,
            ssthresh_bytes: nan,
            srtt_s: nan,
            rttvar_s: nan,
            rto_s: nan,
            inflight_bytes: 0.0,
            pacing_rate_bps: nan,
            retransmits: 0.0,
            ca_state: nan,
        },
        Flow::Cbr(c) => FlowSample {
            flow: index as u32,
            delivered_bytes: c.received * c.packet_bytes as u64,
            sent_bytes: c.sent * c.packet_bytes as u64,
            cwnd_bytes: nan,
            ssthresh_bytes: nan,
            srtt_s: nan,
            rttvar_s: nan,
            rto_s: nan,
            inflight_bytes: nan,
            pacing_rate_bps: nan,
            retransmits: nan,
            ca_state: nan,
        },
    }
}

/// An MPTCP connection's row at a sample instant: the connection's delivery, its joined
/// subflows' windows, flight and sending summed, the smallest of their smoothed RTTs (the path
/// the minrtt scheduler prefers), and subflow 0's RTO and state.
fn mptcp_sample(index: usize, m: &MptcpFlow) -> FlowSample {
    let nan = f64::NAN;
    let joined: Vec<usize> = (0..m.sender.subflow_count()).filter(|&i| m.sender.subflow_stats(i).joined).collect();
    let sum = |f: &dyn Fn(&ccarena_transport::Sender) -> u64| joined.iter().map(|&i| f(m.sender.subflow(i))).sum::<u64>();
    let first = m.sender.subflow(0);
    let srtt = joined.iter().filter_map(|&i| m.sender.subflow(i).srtt()).min();
    FlowSample {
        flow: index as u32,
        delivered_bytes: m.transfer.delivered_bytes,
        sent_bytes: sum(&|s| s.stats().bytes_sent),
        cwnd_bytes: sum(&|s| s.cwnd().cwnd_bytes) as f64,
        ssthresh_bytes: nan,
        srtt_s: srtt.map_or(nan, |d| d.as_secs_f64()),
        rttvar_s: first.rttvar().map_or(nan, |d| d.as_secs_f64()),
        rto_s: first.rto().as_secs_f64(),
        inflight_bytes: sum(&|s| s.in_flight_bytes()) as f64,
        pacing_rate_bps: nan,
        retransmits: sum(&|s| s.stats().segments_retransmitted) as f64,
        ca_state: ca_state_code(first.ca_state()),
    }
}
