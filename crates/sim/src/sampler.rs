//! Periodic samples: per-flow and per-queue time series, stored as columns while the run goes.
//!
//! Sampling is per interval, never per packet: the per-packet path only bumps counters, and a
//! sample turns counter differences into rates.

use ccarena_cc::{CaState, SimTime};
use ccarena_link::Aqm;

use crate::link::Link;
use crate::spec::LinkSpec;
use crate::table::{Column, Table};

/// One flow's state at a sample instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowSample {
    /// Flow index.
    pub flow: u32,
    /// In-order payload delivered to the receiving application, cumulative, bytes.
    pub delivered_bytes: u64,
    /// Payload put on the wire by the sender, retransmissions included, cumulative, bytes.
    pub sent_bytes: u64,
    /// cwnd, bytes (NaN for UDP).
    pub cwnd_bytes: f64,
    /// ssthresh, bytes (NaN while infinite, and for UDP).
    pub ssthresh_bytes: f64,
    /// Smoothed RTT, s (NaN before the first sample).
    pub srtt_s: f64,
    /// RTT variation, s.
    pub rttvar_s: f64,
    /// Retransmission timeout, s.
    pub rto_s: f64,
    /// Bytes in flight (RFC 6675 pipe).
    pub inflight_bytes: f64,
    /// Pacing rate, bits/s (NaN when not pacing).
    pub pacing_rate_bps: f64,
    /// Retransmitted segments, cumulative.
    pub retransmits: f64,
    /// Congestion-avoidance state code (0 open … 4 loss), NaN for UDP.
    pub ca_state: f64,
}

/// Code for a [`CaState`] in the `ca_state` column.
pub fn ca_state_code(s: CaState) -> f64 {
    match s {
        CaState::Open => 0.0,
        CaState::Disorder => 1.0,
        CaState::Cwr => 2.0,
        CaState::Recovery => 3.0,
        CaState::Loss => 4.0,
    }
}

/// Columns of the per-flow sample table, in order.
const FLOW_COLUMNS: [&str; 15] = [
    "time_s", "flow", "goodput_bps", "throughput_bps", "delivered_bytes", "sent_bytes", "cwnd_bytes",
    "ssthresh_bytes", "srtt_s", "rttvar_s", "rto_s", "inflight_bytes", "pacing_rate_bps", "retransmits", "ca_state",
];

/// Columns of the per-queue sample table, in order.
const QUEUE_COLUMNS: [&str; 13] = [
    "time_s", "link", "backlog_bytes", "backlog_packets", "drops", "marks", "arrivals", "departures",
    "sojourn_mean_s", "red_avg", "early_drops", "aqm_prob_classic", "aqm_prob_l4s",
];

/// One link's queue at a sample instant (cumulative counters as the link keeps them).
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueSample {
    /// Link index.
    pub link: u32,
    /// Bytes waiting.
    pub backlog_bytes: u64,
    /// Packets waiting.
    pub backlog_packets: u64,
    /// Packets dropped by the discipline, cumulative.
    pub drops: u64,
    /// Packets marked CE by the discipline, cumulative.
    pub marks: u64,
    /// Packets offered, cumulative.
    pub arrivals: u64,
    /// Packets that left the queue, cumulative.
    pub departures: u64,
    /// Sum of sojourn times of departed packets, cumulative, ns.
    pub sojourn_total_ns: u64,
    /// RED's average queue in its thresholds' unit (packets or bytes); NaN for DropTail.
    pub red_avg: f64,
    /// RED's early (unforced) drops, cumulative; part of `drops`.
    pub early_drops: u64,
    /// The probability the AQM drops or marks a Classic packet with: DualPI2's p_C = p'²
    /// (RFC 9332 §2.1), PIE's drop probability (RFC 8033 §4.2); NaN for the other disciplines.
    pub aqm_prob_classic: f64,
    /// DualPI2's coupled L4S marking probability p_CL = min(k·p', 1) (RFC 9332 §2.1), the floor
    /// of every L4S packet's marking probability (the native step adds to it per packet); NaN
    /// for the other disciplines.
    pub aqm_prob_l4s: f64,
}

/// The AQM's (classic, L4S) probabilities of [`QueueSample`] for `link` as it stands: PI2 and
/// PIE update their probability lazily, at the first arrival or departure after each update
/// instant, so the value is the one in force at the link's last packet event.
fn aqm_probabilities(link: &Link) -> (f64, f64) {
    match link.qdisc().aqm() {
        Some(Aqm::DualPi2(d)) => (d.p_classic(), d.p_coupled()),
        Some(Aqm::Pie(p)) => (p.drop_prob(), f64::NAN),
        _ => (f64::NAN, f64::NAN),
    }
}

/// Bytes per table [`Sampler::reserve`] reserves at most.
pub const MAX_RESERVED_BYTES: usize = 64 << 20;

/// Accumulates sample rows; turns cumulative counters into per-interval rates.
#[derive(Debug)]
pub struct Sampler {
    interval_s: f64,
    /// Rows as they are recorded, one array per row in [`FLOW_COLUMNS`] order: one sequential
    /// stream of writes. (One vector per column was 15 streams whose large, identically
    /// aligned buffers fall in the same cache sets and evict each other: at 10,000 flows, most
    /// of the run's D1 misses.) Turned into columns when a table is asked for.
    flows: Vec<[f64; 15]>,
    /// Rows in [`QUEUE_COLUMNS`] order, as `flows`.
    queues: Vec<[f64; 13]>,
    last_flow: Vec<(u64, u64)>,
    last_queue: Vec<(u64, u64)>,
    /// Indices of the links whose queues are sampled, ascending.
    sampled_links: Vec<u32>,
}

impl Sampler {
    /// A sampler for `n_flows` flows and the spec's `links` (those whose [`LinkSpec::sample`]
    /// is not false), sampling every `interval_s` seconds.
    pub fn new(n_flows: usize, links: &[LinkSpec], interval_s: f64) -> Sampler {
        Sampler {
            interval_s,
            flows: Vec::new(),
            queues: Vec::new(),
            last_flow: vec![(0, 0); n_flows],
            last_queue: vec![(0, 0); links.len()],
            sampled_links: (0..links.len() as u32).filter(|&i| links[i as usize].sampled()).collect(),
        }
    }

    /// Reserve room for `samples` sample instants (the run's duration over its interval): rows
    /// are written at every sample for the whole run, and growing by doubling copies every row
    /// written so far again and again (at 1,000 flows, a third of the run's last-level cache
    /// misses). At most [`MAX_RESERVED_BYTES`] per table are reserved up front (address space
    /// only: untouched pages cost no memory); past that the rows grow as usual.
    pub fn reserve(&mut self, samples: usize) {
        let queue_rows = samples.saturating_mul(self.sampled_links.len()).min(MAX_RESERVED_BYTES / size_of::<[f64; 13]>());
        let flow_rows = samples.saturating_mul(self.last_flow.len()).min(MAX_RESERVED_BYTES / size_of::<[f64; 15]>());
        self.queues.reserve_exact(queue_rows);
        self.flows.reserve_exact(flow_rows);
    }

    /// Record a row for every sampled link at `now` (`time_s` in seconds), bringing each up to
    /// `now` first. Links not sampled are left alone: they are advanced lazily when next touched.
    pub fn sample_queues(&mut self, now: SimTime, time_s: f64, links: &mut [Link]) {
        for k in 0..self.sampled_links.len() {
            let i = self.sampled_links[k];
            let link = &mut links[i as usize];
            link.advance(now);
            let c = link.counters();
            let (aqm_prob_classic, aqm_prob_l4s) = aqm_probabilities(link);
            let row = QueueSample {
                link: i,
                backlog_bytes: link.queued_bytes(),
                backlog_packets: link.queued_packets(),
                drops: c.packets_dropped_queue,
                marks: c.packets_marked,
                arrivals: c.packets_in,
                departures: c.departures,
                sojourn_total_ns: c.sojourn_total_ns,
                red_avg: link.red_avg(now),
                early_drops: c.packets_dropped_early,
                aqm_prob_classic,
                aqm_prob_l4s,
            };
            self.queue(time_s, &row);
        }
    }

    /// Record one flow's row at `time_s`.
    pub fn flow(&mut self, time_s: f64, s: &FlowSample) {
        let (last_delivered, last_sent) = self.last_flow[s.flow as usize];
        self.last_flow[s.flow as usize] = (s.delivered_bytes, s.sent_bytes);
        self.flows.push([
            time_s,
            s.flow as f64,
            (s.delivered_bytes - last_delivered) as f64 * 8.0 / self.interval_s,
            (s.sent_bytes - last_sent) as f64 * 8.0 / self.interval_s,
            s.delivered_bytes as f64,
            s.sent_bytes as f64,
            s.cwnd_bytes,
            s.ssthresh_bytes,
            s.srtt_s,
            s.rttvar_s,
            s.rto_s,
            s.inflight_bytes,
            s.pacing_rate_bps,
            s.retransmits,
            s.ca_state,
        ]);
    }

    /// Record one queue's row at `time_s`.
    pub fn queue(&mut self, time_s: f64, q: &QueueSample) {
        let (last_departures, last_sojourn) = self.last_queue[q.link as usize];
        self.last_queue[q.link as usize] = (q.departures, q.sojourn_total_ns);
        let departed = q.departures - last_departures;
        let sojourn_mean_s =
            if departed == 0 { f64::NAN } else { (q.sojourn_total_ns - last_sojourn) as f64 / departed as f64 / 1e9 };
        self.queues.push([
            time_s,
            q.link as f64,
            q.backlog_bytes as f64,
            q.backlog_packets as f64,
            q.drops as f64,
            q.marks as f64,
            q.arrivals as f64,
            q.departures as f64,
            sojourn_mean_s,
            q.red_avg,
            q.early_drops as f64,
            q.aqm_prob_classic,
            q.aqm_prob_l4s,
        ]);
    }

    /// One sampler from the samplers of a run split over threads (`crate::parallel`): every
    /// copy samples every flow and every sampled link at the same instants, so their rows
    /// align; each row is taken from the copy that ran it, a flow's delivery columns
    /// (`goodput_bps`, `delivered_bytes`) from its receiving host's copy
    /// (`flow_parts[f].1`), its other columns from its sending host's (`.0`), a queue's row
    /// from its link's sending node's (`link_part`).
    ///
    /// # Panics
    /// If the copies' rows do not align (not copies of one run).
    pub fn merge(parts: &[&Sampler], flow_parts: &[(u16, u16)], link_part: &[u16]) -> Sampler {
        let first = parts[0];
        assert!(parts.iter().all(|p| p.flows.len() == first.flows.len() && p.queues.len() == first.queues.len()), "unaligned sample rows");
        let flows = (0..first.flows.len())
            .map(|r| {
                let (sender, receiver) = flow_parts[first.flows[r][1] as usize];
                let mut row = parts[sender as usize].flows[r];
                let delivered = &parts[receiver as usize].flows[r];
                row[2] = delivered[2];
                row[4] = delivered[4];
                row
            })
            .collect();
        let queues = (0..first.queues.len()).map(|r| parts[link_part[first.queues[r][1] as usize] as usize].queues[r]).collect();
        Sampler {
            interval_s: first.interval_s,
            flows,
            queues,
            last_flow: first.last_flow.clone(),
            last_queue: first.last_queue.clone(),
            sampled_links: first.sampled_links.clone(),
        }
    }

    /// The per-flow sample table.
    pub fn flow_table(&self) -> Table {
        columns_of(&FLOW_COLUMNS, &self.flows)
    }

    /// The per-queue sample table.
    pub fn queue_table(&self) -> Table {
        columns_of(&QUEUE_COLUMNS, &self.queues)
    }
}

/// The table with column `names[c]` holding every row's value `c`.
fn columns_of<const N: usize>(names: &[&'static str; N], rows: &[[f64; N]]) -> Table {
    Table { columns: names.iter().enumerate().map(|(c, &name)| (name, Column::F64(rows.iter().map(|r| r[c]).collect()))).collect() }
}
