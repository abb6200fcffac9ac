//! The per-transfer record: what a person or a script reads after a transfer, with the same
//! quantities as a simulated flow's (goodput, retransmissions, RTT percentiles, cwnd samples).

use std::time::{Duration, Instant};

/// Most RTT samples kept (4 bytes each); beyond it every other sample is kept, so percentiles
/// stay representative of the whole transfer with bounded memory.
const MAX_RTT_SAMPLES: usize = 1 << 20;
/// Most cwnd samples kept; beyond it the sampling interval doubles and every other one goes.
const MAX_CWND_SAMPLES: usize = 4096;

/// RTT percentiles over a transfer's samples, milliseconds (nearest-rank).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RttSummary {
    /// Samples taken (the sender's RTT samples, Karn's rule).
    pub samples: u64,
    /// Smallest, ms.
    pub min_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
}

/// What one transfer did, from the sender's side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransferRecord {
    /// File name as offered.
    pub name: String,
    /// The receiver's address.
    pub peer: String,
    /// Congestion-control flavor.
    pub flavor: String,
    /// Loss-recovery mode.
    pub recovery: String,
    /// File size, bytes.
    pub file_bytes: u64,
    /// Bytes the receiver already held (resume): not sent.
    pub resumed_bytes: u64,
    /// Bytes this run delivered (file less resumed).
    pub stream_bytes: u64,
    /// From the first DATA to the last ACK, seconds.
    pub duration_s: f64,
    /// `stream_bytes · 8 / duration_s`, bits per second.
    pub goodput_bps: f64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes retransmitted.
    pub bytes_retransmitted: u64,
    /// DATA packets sent.
    pub segments_sent: u64,
    /// DATA packets retransmitted.
    pub retransmissions: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
    /// Fast-recovery episodes.
    pub fast_recoveries: u64,
    /// RTT percentiles.
    pub rtt: RttSummary,
    /// `(seconds since the first DATA, cwnd bytes)`, about every 100 ms.
    pub cwnd_samples: Vec<(f64, u64)>,
    /// SHA-256 of the file, hex; the receiver confirmed it.
    pub sha256: String,
}

/// Collects RTT and cwnd samples during a transfer, in bounded memory.
#[derive(Debug)]
pub struct Recorder {
    start: Instant,
    rtt_us: Vec<u32>,
    rtt_stride: u64,
    rtt_seen: u64,
    cwnd: Vec<(f64, u64)>,
    cwnd_every: Duration,
    next_cwnd: Instant,
}

impl Recorder {
    /// Start recording at `start`.
    pub fn new(start: Instant) -> Recorder {
        Recorder {
            start,
            rtt_us: Vec::new(),
            rtt_stride: 1,
            rtt_seen: 0,
            cwnd: Vec::new(),
            cwnd_every: Duration::from_millis(100),
            next_cwnd: start,
        }
    }

    /// One RTT sample.
    pub fn rtt(&mut self, rtt: Duration) {
        self.rtt_seen += 1;
        if !self.rtt_seen.is_multiple_of(self.rtt_stride) {
            return;
        }
        self.rtt_us.push(rtt.as_micros().min(u32::MAX as u128) as u32);
        if self.rtt_us.len() >= MAX_RTT_SAMPLES {
            let kept: Vec<u32> = self.rtt_us.iter().step_by(2).copied().collect();
            self.rtt_us = kept;
            self.rtt_stride *= 2;
        }
    }

    /// Offer the current cwnd; kept when a sampling interval has passed.
    pub fn cwnd(&mut self, now: Instant, cwnd_bytes: u64) {
        if now < self.next_cwnd {
            return;
        }
        self.next_cwnd = now + self.cwnd_every;
        self.cwnd.push((now.saturating_duration_since(self.start).as_secs_f64(), cwnd_bytes));
        if self.cwnd.len() >= MAX_CWND_SAMPLES {
            let kept: Vec<(f64, u64)> = self.cwnd.iter().step_by(2).copied().collect();
            self.cwnd = kept;
            self.cwnd_every *= 2;
        }
    }

    /// The RTT percentiles and the cwnd samples.
    pub fn finish(mut self) -> (RttSummary, Vec<(f64, u64)>) {
        self.rtt_us.sort_unstable();
        let v = &self.rtt_us;
        let pct = |p: f64| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
            v[rank.min(v.len()) - 1] as f64 / 1000.0
        };
        let rtt = RttSummary {
            samples: self.rtt_seen,
            min_ms: pct(0.0),
            p50_ms: pct(50.0),
            p90_ms: pct(90.0),
            p99_ms: pct(99.0),
            max_ms: pct(100.0),
        };
        (rtt, self.cwnd)
    }
}
