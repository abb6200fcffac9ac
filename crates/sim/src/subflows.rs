//! The `subflows` table: one row per MPTCP subflow per sample instant (docs/engine-spec.md,
//! "Tables"), what the per-subflow goodput, window and RTT figures are drawn from. Single-path
//! flows have no rows.

use crate::flow::MptcpFlow;
use crate::table::{Column, Table};

/// Accumulates the subflow rows while the run goes.
#[derive(Debug, Default)]
pub struct SubflowSampler {
    interval_s: f64,
    /// Per (flow, subflow): subflow bytes received in order at the last sample.
    last_delivered: Vec<Vec<u64>>,
    time_s: Vec<f64>,
    flow: Vec<f64>,
    subflow: Vec<f64>,
    goodput_bps: Vec<f64>,
    delivered_bytes: Vec<f64>,
    sent_bytes: Vec<f64>,
    cwnd_bytes: Vec<f64>,
    srtt_s: Vec<f64>,
    inflight_bytes: Vec<f64>,
    retransmits: Vec<f64>,
    rto_count: Vec<f64>,
    bytes_scheduled: Vec<f64>,
    bytes_reinjected: Vec<f64>,
    stale: Vec<f64>,
    opportunistic_retransmits: Vec<f64>,
    opportunistic_bytes: Vec<f64>,
    penalisations: Vec<f64>,
}

impl SubflowSampler {
    /// A sampler for a run of `n_flows` flows sampled every `interval_s` seconds.
    pub fn new(n_flows: usize, interval_s: f64) -> SubflowSampler {
        SubflowSampler { interval_s, last_delivered: vec![Vec::new(); n_flows], ..SubflowSampler::default() }
    }

    /// Record a row per subflow of MPTCP flow `index` at `time_s`. A subflow that has not
    /// joined yet has no row.
    pub fn sample(&mut self, time_s: f64, index: usize, m: &MptcpFlow) {
        let n = m.sender.subflow_count();
        let last = &mut self.last_delivered[index];
        last.resize(n, 0);
        for (i, last_delivered) in last.iter_mut().enumerate() {
            let stats = m.sender.subflow_stats(i);
            if !stats.joined {
                continue;
            }
            let s = m.sender.subflow(i);
            let delivered = m.receiver.subflow(i).rcv_nxt();
            let cw = s.cwnd();
            self.time_s.push(time_s);
            self.flow.push(index as f64);
            self.subflow.push(i as f64);
            self.goodput_bps.push(delivered.saturating_sub(*last_delivered) as f64 * 8.0 / self.interval_s);
            *last_delivered = delivered;
            self.delivered_bytes.push(delivered as f64);
            self.sent_bytes.push(s.stats().bytes_sent as f64);
            self.cwnd_bytes.push(cw.cwnd_bytes as f64);
            self.srtt_s.push(s.srtt().map_or(f64::NAN, |d| d.as_secs_f64()));
            self.inflight_bytes.push(s.in_flight_bytes() as f64);
            self.retransmits.push(s.stats().segments_retransmitted as f64);
            self.rto_count.push(s.stats().rto_count as f64);
            self.bytes_scheduled.push(stats.bytes_scheduled as f64);
            self.bytes_reinjected.push(stats.bytes_reinjected as f64);
            self.stale.push(if stats.stale { 1.0 } else { 0.0 });
            self.opportunistic_retransmits.push(stats.opportunistic_retransmits as f64);
            self.opportunistic_bytes.push(stats.opportunistic_bytes as f64);
            self.penalisations.push(stats.penalisations as f64);
        }
    }

    /// One sampler from the samplers of a run split over threads (`crate::parallel`): the rows
    /// of each MPTCP flow from the copy that ran both its ends (`flow_part[f]`: the partition
    /// keeps an MPTCP connection's hosts together), in the order one thread records them
    /// (instant, flow, subflow).
    pub fn merge(parts: &[&SubflowSampler], flow_part: &[u16]) -> SubflowSampler {
        let mut rows: Vec<(usize, usize)> = Vec::new();
        for (p, s) in parts.iter().enumerate() {
            rows.extend((0..s.flow.len()).filter(|&r| flow_part[s.flow[r] as usize] as usize == p).map(|r| (p, r)));
        }
        // Stable: a flow's subflows keep their order.
        rows.sort_by(|&(pa, ra), &(pb, rb)| {
            let (a, b) = (parts[pa], parts[pb]);
            a.time_s[ra].total_cmp(&b.time_s[rb]).then(a.flow[ra].total_cmp(&b.flow[rb]))
        });
        let mut out = SubflowSampler { interval_s: parts[0].interval_s, ..SubflowSampler::default() };
        for (p, r) in rows {
            let s = parts[p];
            out.time_s.push(s.time_s[r]);
            out.flow.push(s.flow[r]);
            out.subflow.push(s.subflow[r]);
            out.goodput_bps.push(s.goodput_bps[r]);
            out.delivered_bytes.push(s.delivered_bytes[r]);
            out.sent_bytes.push(s.sent_bytes[r]);
            out.cwnd_bytes.push(s.cwnd_bytes[r]);
            out.srtt_s.push(s.srtt_s[r]);
            out.inflight_bytes.push(s.inflight_bytes[r]);
            out.retransmits.push(s.retransmits[r]);
            out.rto_count.push(s.rto_count[r]);
            out.bytes_scheduled.push(s.bytes_scheduled[r]);
            out.bytes_reinjected.push(s.bytes_reinjected[r]);
            out.stale.push(s.stale[r]);
            out.opportunistic_retransmits.push(s.opportunistic_retransmits[r]);
            out.opportunistic_bytes.push(s.opportunistic_bytes[r]);
            out.penalisations.push(s.penalisations[r]);
        }
        out
    }

    /// The table: `time_s, flow, subflow, goodput_bps` (the subflow's in-order bytes per
    /// second over the last interval), `delivered_bytes, sent_bytes, cwnd_bytes, srtt_s,
    /// inflight_bytes, retransmits, rto_count` (cumulative counts), `bytes_scheduled,
    /// bytes_reinjected` (connection bytes first sent on, and reinjected onto, the subflow),
    /// `stale` (1 while the connection considers it failed) and `opportunistic_retransmits,
    /// opportunistic_bytes, penalisations` (cumulative: segments and connection bytes resent on
    /// the subflow by opportunistic retransmission, times its cwnd was halved for holding up the
    /// connection window; all 0 unless the flow's `mptcp.opportunistic` is on:
    /// `ccarena_transport::mptcp::SubflowStats`).
    pub fn table(&self) -> Table {
        let col = |v: &Vec<f64>| Column::F64(v.clone());
        Table {
            columns: vec![
                ("time_s", col(&self.time_s)),
                ("flow", col(&self.flow)),
                ("subflow", col(&self.subflow)),
                ("goodput_bps", col(&self.goodput_bps)),
                ("delivered_bytes", col(&self.delivered_bytes)),
                ("sent_bytes", col(&self.sent_bytes)),
                ("cwnd_bytes", col(&self.cwnd_bytes)),
                ("srtt_s", col(&self.srtt_s)),
                ("inflight_bytes", col(&self.inflight_bytes)),
                ("retransmits", col(&self.retransmits)),
                ("rto_count", col(&self.rto_count)),
                ("bytes_scheduled", col(&self.bytes_scheduled)),
                ("bytes_reinjected", col(&self.bytes_reinjected)),
                ("stale", col(&self.stale)),
                ("opportunistic_retransmits", col(&self.opportunistic_retransmits)),
                ("opportunistic_bytes", col(&self.opportunistic_bytes)),
                ("penalisations", col(&self.penalisations)),
            ],
        }
    }
}
