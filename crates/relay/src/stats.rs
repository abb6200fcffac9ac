//! What the relay counted, and the stats JSON it is reported as.
//!
//! ```json
//! {"pipes": [{"name": "left0->r0",
//!             "a_to_b": {"frames": 123, "bytes": 456, "dropped_loss": 1, "dropped_overflow": 0,
//!                        "lateness_ns": {"mean": 12000, "p50": 9000, "p99": 80000, "p999": 200000, "max": 400000}},
//!             "b_to_a": {...}}],
//!  "wall_s": 12.3}
//! ```

use serde_json::{json, Value};

use crate::histogram::Histogram;

/// One direction's counters.
#[derive(Clone, Debug, Default)]
pub struct DirectionStats {
    /// Frames sent on (handed to the out-interface; a qdisc there may still drop them).
    pub frames: u64,
    /// Bytes of those frames (Ethernet header included, virtio header not).
    pub bytes: u64,
    /// Frames dropped by the configured random loss.
    pub dropped_loss: u64,
    /// Frames dropped because the queue was full (`max_queue_frames`, or the byte limit), the
    /// socket's receive buffer overflowed before the relay read them, or they were too large.
    pub dropped_overflow: u64,
    /// Frames the out-interface refused (ENOBUFS from its qdisc, ENETDOWN, ...); not in `frames`.
    pub send_errors: u64,
    /// Frames that came without a usable kernel receive timestamp, timed from when they were read.
    pub untimestamped: u64,
    /// Frames still queued when the relay stopped (neither sent nor dropped).
    pub left_queued: u64,
    /// Real-time scheduling was asked for but refused (no CAP_SYS_NICE): timing is less tight.
    pub realtime_denied: bool,
    /// Lateness of every sent frame: send time − (receive time + delay), ns.
    pub lateness: Histogram,
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
}

impl DirectionStats {
    fn to_value(&self) -> Value {
        let s = self.lateness.summary();
        json!({
            "frames": self.frames,
            "bytes": self.bytes,
            "dropped_loss": self.dropped_loss,
            "dropped_overflow": self.dropped_overflow,
            "lateness_ns": {"mean": s.mean_ns, "p50": s.p50_ns, "p99": s.p99_ns, "p999": s.p999_ns, "max": s.max_ns},
        })
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
        json!({"pipes": pipes, "wall_s": self.wall_s}).to_string()
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
        let stats = RelayStats { pipes: vec![PipeStats { name: "left0->r0".into(), a_to_b: a, b_to_a: DirectionStats::default() }], wall_s: 1.5 };
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
        let keys: Vec<&String> = ab.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 5);
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
        let stats = RelayStats { pipes: vec![PipeStats { name: "p".into(), a_to_b: DirectionStats::default(), b_to_a: b }], wall_s: 0.0 };
        let text = stats.anomalies().unwrap();
        assert!(text.starts_with("p b_to_a: 2 send errors"), "{text}");
        let stats = RelayStats {
            pipes: vec![PipeStats { name: "q".into(), a_to_b: DirectionStats { realtime_denied: true, ..Default::default() }, b_to_a: DirectionStats::default() }],
            wall_s: 0.0,
        };
        assert!(stats.anomalies().unwrap().contains("q a_to_b: real-time scheduling refused"));
    }
}
