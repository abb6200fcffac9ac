//! What the relay counted, and the stats JSON it is reported as.
//!
//! ```json
//! {"pipes": [{"name": "left0->r0",
//!             "a_to_b": {"frames": 123, "bytes": 456, "dropped_queue": 2, "dropped_loss": 1,
//!                        "dropped_overflow": 0, "send_errors": 0, "untimestamped": 0, "left_queued": 0,
//!                        "lateness_ns": {"mean": 12000, "p50": 9000, "p99": 80000, "p999": 200000, "max": 400000},
//!                        "link": {"arrivals": 126, "drops": 2, "early_drops": 1, "marks": 5,
//!                                 "departures": 124, "departed_bytes": 185000,
//!                                 "lost_wire": 1, "sojourn_total_ns": 5000000, "busy_ns": 1480000,
//!                                 "duplicated": 0, "reordered": 0, "backlog_packets_end": 0},
//!                        "samples": {"t_ns": [...], "backlog_packets": [...], "backlog_bytes": [...],
//!                                    "arrivals": [...], "drops": [...], "early_drops": [...],
//!                                    "marks": [...], "departures": [...],
//!                                    "departed_bytes": [...], "lost_wire": [...],
//!                                    "sojourn_total_ns": [...], "busy_ns": [...],
//!                                    "duplicated": [...], "reordered": [...]},
//!                        "samples_skipped": 0},
//!             "b_to_a": {...}}],
//!  "wall_s": 12.3, "cpu_latency_held": true}
//! ```
//!
//! A direction whose discipline has a probability of its own also has, in `samples`,
//! `"aqm_prob_classic"` (DualPI2's p_C = p'², RFC 9332 §2.1; PIE's drop probability, RFC 8033
//! §4.2) and, for DualPI2, `"aqm_prob_l4s"` (p_CL = min(k·p', 1)): probabilities in [0, 1] at each
//! instant, as the simulator's `queues` table has them. A DualPI2 direction also has, per class
//! (`l4s_`, `classic_`; RFC 9332 §2.1: L4S = ECT(1) and CE), cumulative packet counts in `samples`
//! (`l4s_departed`, `l4s_marked`, `l4s_dropped` — at the shared limit or by the AQM —,
//! `l4s_sojourn_total_ns`, then the same for `classic_`; the two classes add up to `departures`,
//! `marks` and `drops`), and in `link` the run's totals per class:
//! `"l4s": {"enqueued", "dropped_limit", "dropped_aqm", "marked", "departed", "sojourn_total_ns",
//! "sojourn_ns": {"mean", "min", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "max"}}`
//! and `"classic": {...}` — the sojourn (enqueue to start of serialization) of every packet that
//! left the queue during the relay's whole run, ns, the percentiles to within one histogram bucket
//! (≤ 1.6%), `null` when none left it (`ccarena_link::qdisc::dualpi2`; the simulator's
//! `links` table's per-class columns are computed the same way).
//!
//! A captured direction ([`crate::capture`]) also has `"pcap": {"packets_written": 120,
//! "packets_over_limit": 0, "bytes": 11000, "error": null}` (the simulator's capture summary).
//!
//! `frames`/`bytes` count what was sent on (Ethernet bytes); `dropped_*` are frames. `link` and
//! `samples` are the emulated link's packet counters ([`crate::emulated_path::LinkCounters`]; a GSO batch
//! counts as its segments): conservation holds as `arrivals = drops + departures +
//! backlog_packets_end`; `duplicated` and `reordered` count departed packets the wire sent twice
//! or held back (`ccarena_link::impair`). `samples` is columnar, one entry per grid instant (absent without a
//! sampling grid).

use serde_json::{json, Value};

use ccarena_link::qdisc::dualpi2::ClassCounters;

use crate::capture::CaptureStats;
use crate::histogram::Histogram;
use crate::emulated_path::{LinkCounters, QueueSample};

/// The sojourn percentiles of a DualPI2 class the stats report (the simulator's `links` columns
/// `sojourn_p5_s` … `sojourn_p99_s`): (JSON key, quantile).
const SOJOURN_QUANTILES: [(&str, f64); 8] =
    [("p5", 0.05), ("p10", 0.10), ("p25", 0.25), ("p50", 0.50), ("p75", 0.75), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99)];

/// One of DualPI2's two queues over a whole run (RFC 9332 §2.1): its cumulative counters and the
/// sojourn (enqueue to the start of serialization, ns) of every packet that left it.
#[derive(Clone, Debug, Default)]
pub struct ClassStats {
    /// The class's counters (`ccarena_link::qdisc::dualpi2::ClassCounters`), packets and ns.
    pub counters: ClassCounters,
    /// The sojourns, one value per departure, ns.
    pub sojourn: Histogram,
}

impl ClassStats {
    /// The class's JSON object (the shape in this module's docs); sojourn figures `null` when no
    /// packet left the queue.
    fn to_value(&self) -> Value {
        let c = &self.counters;
        let h = &self.sojourn;
        let mut sojourn = json!({"mean": h.mean(), "min": h.min(),
                                 "max": if h.count() == 0 { f64::NAN } else { h.max_ns() as f64 }});
        for (key, q) in SOJOURN_QUANTILES {
            sojourn[key] = Value::from(h.quantile(q));
        }
        json!({"enqueued": c.enqueued, "dropped_limit": c.dropped_limit, "dropped_aqm": c.dropped_aqm,
               "marked": c.marked, "departed": c.departed, "sojourn_total_ns": c.sojourn_total_ns,
               "sojourn_ns": sojourn})
    }
}

/// One direction's counters.
#[derive(Clone, Debug, Default)]
pub struct DirectionStats {
    /// Frames sent on (handed to the out-interface; a qdisc there may still drop them).
    pub frames: u64,
    /// Bytes of those frames (Ethernet header included, virtio header not).
    pub bytes: u64,
    /// Frames the emulated queue dropped (its limit, or its AQM). On a link that holds frames
    /// (CoDel, FQ-CoDel, FQ) these are the discipline's drops in packets (a GSO batch counts as
    /// its segments), as frames it drops inside the queue are not seen one by one.
    pub dropped_queue: u64,
    /// Frames lost on the emulated wire (the configured random loss).
    pub dropped_loss: u64,
    /// Frames the relay itself could not hold: its delay line was full (`max_queue_frames`, or
    /// the byte limit), the socket's receive buffer overflowed before the relay read them, or
    /// they were too large. Each is an emulation error, not a modelled loss.
    pub dropped_overflow: u64,
    /// Frames the out-interface refused (ENOBUFS from its qdisc, ENETDOWN, ...); not in `frames`.
    pub send_errors: u64,
    /// Frames that came without a usable kernel receive timestamp, timed from when they were read.
    pub untimestamped: u64,
    /// Frames still queued when the relay stopped (neither sent nor dropped).
    pub left_queued: u64,
    /// Real-time scheduling was asked for but refused (no CAP_SYS_NICE): timing is less tight.
    pub realtime_denied: bool,
    /// Lateness of every sent frame: send time − due time (when the emulated link delivers it), ns.
    pub lateness: Histogram,
    /// The emulated link's counters at the end.
    pub link: LinkCounters,
    /// Packets waiting in the emulated queue at the end.
    pub backlog_packets_end: u64,
    /// The queue on the sampling grid (empty without one).
    pub samples: Vec<QueueSample>,
    /// Grid instants left out because the row limit was reached.
    pub samples_skipped: u64,
    /// What its pcap capture wrote (None: not captured).
    pub capture: Option<CaptureStats>,
    /// DualPI2's L4S queue over the run (None: another discipline).
    pub l4s: Option<ClassStats>,
    /// DualPI2's Classic queue over the run (None: another discipline).
    pub classic: Option<ClassStats>,
}

/// Both directions of one pipe.
#[derive(Clone, Debug)]
pub struct PipeStats {
    /// The pipe's name from the config.
    pub name: String,
    /// Frames from a to b.
    pub a_to_b: DirectionStats,
    /// Frames from b to a.
    pub b_to_a: DirectionStats,
}

/// Everything a run of the relay counted.
#[derive(Clone, Debug)]
pub struct RelayStats {
    /// Per pipe, in config order.
    pub pipes: Vec<PipeStats>,
    /// How long the relay served, s.
    pub wall_s: f64,
    /// /dev/cpu_dma_latency was held at 0 while serving.
    pub cpu_latency_held: bool,
}

impl DirectionStats {
    fn to_value(&self) -> Value {
        let s = self.lateness.summary();
        let l = &self.link;
        let mut v = json!({
            "frames": self.frames,
            "bytes": self.bytes,
            "dropped_queue": self.dropped_queue,
            "dropped_loss": self.dropped_loss,
            "dropped_overflow": self.dropped_overflow,
            "send_errors": self.send_errors,
            "untimestamped": self.untimestamped,
            "left_queued": self.left_queued,
            "lateness_ns": {"mean": s.mean_ns, "p50": s.p50_ns, "p99": s.p99_ns, "p999": s.p999_ns, "max": s.max_ns},
            "link": {"arrivals": l.arrivals, "drops": l.drops, "early_drops": l.early_drops, "marks": l.marks,
                     "departures": l.departures,
                     "departed_bytes": l.departed_bytes, "lost_wire": l.lost_wire,
                     "sojourn_total_ns": l.sojourn_total_ns, "busy_ns": l.busy_ns,
                     "duplicated": l.duplicated, "reordered": l.reordered,
                     "backlog_packets_end": self.backlog_packets_end},
        });
        if !self.samples.is_empty() || self.samples_skipped > 0 {
            let col = |f: fn(&QueueSample) -> u64| Value::from(self.samples.iter().map(f).collect::<Vec<u64>>());
            v["samples"] = json!({
                "t_ns": col(|r| r.t_ns),
                "backlog_packets": col(|r| r.backlog_packets),
                "backlog_bytes": col(|r| r.backlog_bytes),
                "arrivals": col(|r| r.counters.arrivals),
                "drops": col(|r| r.counters.drops),
                "early_drops": col(|r| r.counters.early_drops),
                "marks": col(|r| r.counters.marks),
                "departures": col(|r| r.counters.departures),
                "departed_bytes": col(|r| r.counters.departed_bytes),
                "lost_wire": col(|r| r.counters.lost_wire),
                "sojourn_total_ns": col(|r| r.counters.sojourn_total_ns),
                "busy_ns": col(|r| r.counters.busy_ns),
                "duplicated": col(|r| r.counters.duplicated),
                "reordered": col(|r| r.counters.reordered),
            });
            if self.samples.iter().any(|r| r.aqm_prob_classic.is_some() || r.aqm_prob_l4s.is_some()) {
                let prob = |f: fn(&QueueSample) -> Option<f64>| Value::from(self.samples.iter().map(f).collect::<Vec<Option<f64>>>());
                v["samples"]["aqm_prob_classic"] = prob(|r| r.aqm_prob_classic);
                v["samples"]["aqm_prob_l4s"] = prob(|r| r.aqm_prob_l4s);
            }
            if self.samples.iter().any(|r| r.l4s.is_some()) {
                type Of = fn(&QueueSample) -> Option<ClassCounters>;
                for (prefix, of) in [("l4s", (|r| r.l4s) as Of), ("classic", (|r| r.classic) as Of)] {
                    let class_col = |f: fn(&ClassCounters) -> u64| {
                        Value::from(self.samples.iter().map(|r| of(r).as_ref().map(f)).collect::<Vec<Option<u64>>>())
                    };
                    v["samples"][format!("{prefix}_departed")] = class_col(|c| c.departed);
                    v["samples"][format!("{prefix}_marked")] = class_col(|c| c.marked);
                    v["samples"][format!("{prefix}_dropped")] = class_col(|c| c.dropped_limit + c.dropped_aqm);
                    v["samples"][format!("{prefix}_sojourn_total_ns")] = class_col(|c| c.sojourn_total_ns);
                }
            }
            v["samples_skipped"] = self.samples_skipped.into();
        }
        if let Some(c) = &self.l4s {
            v["link"]["l4s"] = c.to_value();
        }
        if let Some(c) = &self.classic {
            v["link"]["classic"] = c.to_value();
        }
        if let Some(c) = &self.capture {
            v["pcap"] = json!({"packets_written": c.packets_written, "packets_over_limit": c.packets_over_limit,
                               "bytes": c.bytes_written, "error": c.error});
        }
        v
    }
}

impl RelayStats {
    /// The stats JSON (the shape in this module's docs; lateness figures are 0 for a direction
    /// that sent nothing).
    pub fn to_json(&self) -> String {
        let pipes: Vec<Value> = self
            .pipes
            .iter()
            .map(|p| json!({"name": p.name, "a_to_b": p.a_to_b.to_value(), "b_to_a": p.b_to_a.to_value()}))
            .collect();
        json!({"pipes": pipes, "wall_s": self.wall_s, "cpu_latency_held": self.cpu_latency_held}).to_string()
    }

    /// Lines about what the JSON leaves out and a user should know (send errors, frames without a
    /// kernel timestamp, real-time scheduling refused), or `None` when there is nothing to say.
    pub fn anomalies(&self) -> Option<String> {
        let mut lines = Vec::new();
        for p in &self.pipes {
            for (dir, d) in [("a_to_b", &p.a_to_b), ("b_to_a", &p.b_to_a)] {
                if d.send_errors + d.untimestamped > 0 {
                    lines.push(format!(
                        "{} {dir}: {} send errors, {} frames without a kernel timestamp",
                        p.name, d.send_errors, d.untimestamped
                    ));
                }
                if d.dropped_overflow > 0 {
                    lines.push(format!("{} {dir}: {} frames lost inside the relay (not by the emulated link)", p.name, d.dropped_overflow));
                }
                if d.samples_skipped > 0 {
                    lines.push(format!("{} {dir}: {} queue samples left out (row limit)", p.name, d.samples_skipped));
                }
                if let Some(c) = &d.capture {
                    if let Some(e) = &c.error {
                        lines.push(format!("{} {dir}: pcap capture stopped: {e}", p.name));
                    } else if c.packets_over_limit > 0 {
                        lines.push(format!("{} {dir}: pcap file full, {} frames not captured", p.name, c.packets_over_limit));
                    }
                }
                if d.realtime_denied {
                    lines.push(format!("{} {dir}: real-time scheduling refused, ran with normal priority", p.name));
                }
            }
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_agreed_shape() {
        let mut a = DirectionStats { frames: 3, bytes: 4500, dropped_loss: 1, ..Default::default() };
        for v in [1_000, 2_000, 30_000] {
            a.lateness.record(v);
        }
        a.link = LinkCounters { arrivals: 5, drops: 1, departures: 4, departed_bytes: 6000, lost_wire: 1, sojourn_total_ns: 7, busy_ns: 48, ..Default::default() };
        a.samples = vec![QueueSample { t_ns: 10, backlog_packets: 2, backlog_bytes: 3000, counters: a.link, ..Default::default() }, QueueSample { t_ns: 20, ..Default::default() }];
        let stats = RelayStats { pipes: vec![PipeStats { name: "left0->r0".into(), a_to_b: a, b_to_a: DirectionStats::default() }], wall_s: 1.5, cpu_latency_held: true };
        let v: Value = serde_json::from_str(&stats.to_json()).unwrap();
        assert_eq!(v["wall_s"], 1.5);
        let p = &v["pipes"][0];
        assert_eq!(p["name"], "left0->r0");
        let ab = &p["a_to_b"];
        assert_eq!((ab["frames"].as_u64(), ab["bytes"].as_u64(), ab["dropped_loss"].as_u64(), ab["dropped_overflow"].as_u64()), (Some(3), Some(4500), Some(1), Some(0)));
        let l = &ab["lateness_ns"];
        assert_eq!((l["mean"].as_u64(), l["max"].as_u64()), (Some(11_000), Some(30_000)));
        assert!(l["p50"].as_u64().unwrap() >= 2_000 && l["p50"].as_u64().unwrap() < 2_100);
        assert_eq!(l["p99"].as_u64(), Some(30_000));
        assert_eq!(v["cpu_latency_held"], true);
        assert_eq!(ab["link"]["arrivals"].as_u64(), Some(5));
        assert_eq!(ab["samples"]["t_ns"], json!([10, 20]));
        assert_eq!(ab["samples"]["backlog_bytes"], json!([3000, 0]));
        assert_eq!(ab["samples"]["drops"], json!([1, 0]));
        assert!(p["b_to_a"].get("samples").is_none());
        // DropTail: no probability, no classes.
        assert!(ab["samples"].get("aqm_prob_classic").is_none() && ab["samples"].get("l4s_departed").is_none());
        assert!(ab["link"].get("l4s").is_none());
        let lkeys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        for k in ["mean", "p50", "p99", "p999", "max"] {
            assert!(lkeys.contains(&k));
        }
        assert_eq!(p["b_to_a"]["lateness_ns"]["p99"].as_u64(), Some(0));
        assert!(stats.anomalies().is_none());
    }

    #[test]
    fn anomalies_name_the_direction() {
        let b = DirectionStats { send_errors: 2, ..Default::default() };
        let stats = RelayStats { pipes: vec![PipeStats { name: "p".into(), a_to_b: DirectionStats::default(), b_to_a: b }], wall_s: 0.0, cpu_latency_held: false };
        let text = stats.anomalies().unwrap();
        assert!(text.starts_with("p b_to_a: 2 send errors"), "{text}");
        let stats = RelayStats {
            pipes: vec![PipeStats { name: "q".into(), a_to_b: DirectionStats { realtime_denied: true, ..Default::default() }, b_to_a: DirectionStats::default() }],
            wall_s: 0.0,
            cpu_latency_held: false,
        };
        assert!(stats.anomalies().unwrap().contains("q a_to_b: real-time scheduling refused"));
    }

    #[test]
    fn a_captured_direction_reports_its_file() {
        let full = CaptureStats { packets_written: 7, packets_over_limit: 3, bytes_written: 1000, error: None };
        let stats = RelayStats {
            pipes: vec![PipeStats { name: "r0->r1".into(), a_to_b: DirectionStats { capture: Some(full), ..Default::default() }, b_to_a: DirectionStats::default() }],
            wall_s: 0.0,
            cpu_latency_held: true,
        };
        let v: Value = serde_json::from_str(&stats.to_json()).unwrap();
        assert_eq!(v["pipes"][0]["a_to_b"]["pcap"], json!({"packets_written": 7, "packets_over_limit": 3, "bytes": 1000, "error": null}));
        assert!(v["pipes"][0]["b_to_a"].get("pcap").is_none());
        assert_eq!(stats.anomalies().unwrap(), "r0->r1 a_to_b: pcap file full, 3 frames not captured");
    }
}
