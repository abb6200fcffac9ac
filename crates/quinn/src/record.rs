//! What a run over quinn returns: per-sample rows on the run's time grid and the totals, for the
//! per-flow tables every ccarena backend fills (goodput, RTT samples, cwnd from the controller,
//! losses, congestion events).

use std::time::Duration;

/// The sender's connection on the time grid (`Connection::stats()` and the controller's
/// `metrics()`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SenderSample {
    /// Seconds since the run's time zero.
    pub time_s: f64,
    /// Stream bytes the application had handed to quinn.
    pub written_bytes: u64,
    /// UDP payload bytes sent (every packet: data, retransmissions, ACKs, handshake).
    pub sent_bytes: u64,
    /// UDP datagrams sent.
    pub sent_packets: u64,
    /// Congestion window from the controller, bytes (QUIC packet bytes, RFC 9002 §7).
    pub cwnd_bytes: u64,
    /// ssthresh from the controller, bytes; `None` before the first reduction or when the
    /// controller keeps none (quinn's BBR).
    pub ssthresh_bytes: Option<u64>,
    /// Pacing rate the controller asks for, bits per second (quinn paces at its own rate).
    pub pacing_rate_bps: Option<u64>,
    /// quinn's smoothed_rtt (RFC 9002 §5.3), seconds (the initial RTT, 333 ms, before a sample).
    pub srtt_s: f64,
    /// quinn's min_rtt (RFC 9002 §5.2), seconds.
    pub min_rtt_s: f64,
    /// Packets quinn declared lost (RFC 9002 §6.1).
    pub lost_packets: u64,
    /// Bytes in those packets.
    pub lost_bytes: u64,
    /// Congestion events quinn raised (each loss batch with ack-eliciting packets, each ECN-CE
    /// increase; a recovery period may hold several).
    pub congestion_events: u64,
    /// The path MTU quinn uses, bytes.
    pub mtu: u16,
}

/// The sink's delivered bytes on the time grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SinkSample {
    /// Seconds since the run's time zero.
    pub time_s: f64,
    /// Stream bytes delivered in order to the application so far.
    pub delivered_bytes: u64,
}

/// RTT samples (RFC 9002 §5.1 latest_rtt, one per ACK batch) summarized; milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RttSummary {
    /// Number of samples.
    pub samples: u64,
    /// Smallest, ms (NaN with no sample, as every field below).
    pub min_ms: f64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Median (nearest rank), ms.
    pub p50_ms: f64,
    /// 95th percentile (nearest rank), ms.
    pub p95_ms: f64,
    /// 99th percentile (nearest rank), ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
}

impl RttSummary {
    /// Summarize `samples` (any order).
    pub fn from_samples(samples: &[Duration]) -> RttSummary {
        if samples.is_empty() {
            let nan = f64::NAN;
            return RttSummary { samples: 0, min_ms: nan, mean_ms: nan, p50_ms: nan, p95_ms: nan, p99_ms: nan, max_ms: nan };
        }
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        // Nearest-rank percentile: the smallest sample with at least p% of samples at or below.
        let rank = |p: f64| ms[((p / 100.0 * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
        RttSummary {
            samples: ms.len() as u64,
            min_ms: ms[0],
            mean_ms: ms.iter().sum::<f64>() / ms.len() as f64,
            p50_ms: rank(50.0),
            p95_ms: rank(95.0),
            p99_ms: rank(99.0),
            max_ms: ms[ms.len() - 1],
        }
    }
}

/// The sender's record of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct SendRecord {
    /// `"quinn"` or `"quinn-native"` ([`crate::QuicImpl::name`]).
    pub implementation: &'static str,
    /// Whose code decided the window: `"ccarena cubic in quinn"`, `"quinn's cubic"`.
    pub controller: String,
    /// The flavor.
    pub flavor: String,
    /// The address the sink was reached at.
    pub peer: String,
    /// Stream bytes the run was to send (`None`: until the stop time).
    pub bytes_target: Option<u64>,
    /// Stream bytes handed to quinn.
    pub stream_bytes_written: u64,
    /// Every written byte was acknowledged and the stream finished (quinn's `Finished`).
    pub completed: bool,
    /// Seconds from the connection attempt to the stream's last acknowledgement.
    pub completion_time_s: Option<f64>,
    /// Seconds from the connection attempt to the handshake's completion.
    pub handshake_s: Option<f64>,
    /// Seconds the sender ran (connection attempt to close).
    pub duration_s: f64,
    /// Stream bytes over the completion time, bits per second (`None` if not completed).
    pub goodput_bps: Option<f64>,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP datagrams sent.
    pub packets_sent: u64,
    /// Packets quinn declared lost.
    pub lost_packets: u64,
    /// Bytes in them (what quinn retransmits, frame by frame; it counts no retransmitted bytes).
    pub lost_bytes: u64,
    /// Congestion events quinn raised.
    pub congestion_events: u64,
    /// Of those, raised by loss / by ECN-CE, as the controller was told.
    pub loss_events: u64,
    /// See [`SendRecord::loss_events`].
    pub ecn_events: u64,
    /// Persistent congestion declared (RFC 9002 §7.6).
    pub persistent_congestions: u64,
    /// PTO expiries: quinn does not expose them (`None`).
    pub pto_count: Option<u64>,
    /// Per-ACK RTT samples summarized.
    pub rtt: RttSummary,
    /// The samples on the time grid.
    pub samples: Vec<SenderSample>,
    /// The sending thread's CPU time (user + system) over the run, seconds.
    pub sender_cpu_s: f64,
    /// The path MTU at the end, bytes.
    pub mtu: u16,
}

/// The sink's record of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct SinkRecord {
    /// The address the sink was bound to.
    pub local_addr: String,
    /// A connection was accepted.
    pub connected: bool,
    /// Stream bytes delivered in order.
    pub delivered_bytes: u64,
    /// The stream's FIN arrived with everything before it.
    pub finished: bool,
    /// Seconds from the connection's acceptance to the stream's end (or the last byte).
    pub duration_s: f64,
    /// Delivered bytes over that time, bits per second.
    pub goodput_bps: f64,
    /// Why the connection ended (quinn's `ConnectionError`, e.g. closed by the application).
    pub close_reason: Option<String>,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// UDP datagrams received.
    pub datagrams_received: u64,
    /// The samples on the time grid.
    pub samples: Vec<SinkSample>,
    /// The sink thread's CPU time over the run, seconds.
    pub cpu_s: f64,
}
