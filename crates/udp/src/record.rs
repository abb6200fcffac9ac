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
    /// The sending thread's CPU time (user + system, `getrusage(RUSAGE_THREAD)`) over the same
    /// interval as `duration_s`, seconds; NaN where the kernel does not report it. Counts the
    /// transport, the `sendto`/`recvfrom` system calls and softirq work that ran in this thread's
    /// context; not the receiver, nor softirq work that ran elsewhere (docs/metrics.md, "CPU").
    pub sender_cpu_s: f64,
    /// Mean CPU clock over the transfer (readings at its start and end), MHz; NaN if unknown.
    pub cpu_mhz: f64,
    /// `sender_cpu_s / duration_s · 100`: percent of one core.
    pub cpu_percent: f64,
    /// CPU cycles per bit delivered, as seed 001 (Table 1) reports it: [`mhz_per_mbps`].
    pub mhz_per_mbps: f64,
}

/// Seed 001's MHz per Mbps (Gupta, Ansari, Cottrell, Hughes-Jones, SLAC 2004, Table 1): the CPU
/// fraction (`cpu_s / wall_s`, of one core) times the clock (MHz) over the goodput (Mbit/s). The
/// wall time cancels: it is `cpu_s · mhz / delivered Mbit`, CPU cycles per bit delivered.
/// NaN when any input is missing or the goodput or wall time is not positive.
pub fn mhz_per_mbps(cpu_s: f64, wall_s: f64, mhz: f64, goodput_bps: f64) -> f64 {
    if !(cpu_s.is_finite() && mhz.is_finite() && wall_s > 0.0 && goodput_bps > 0.0) {
        return f64::NAN;
    }
    (cpu_s / wall_s) * mhz / (goodput_bps / 1e6)
}

/// The calling thread's user + system CPU time, seconds (`getrusage(RUSAGE_THREAD)`, Linux);
/// `None` if the call fails.
pub fn thread_cpu_s() -> Option<f64> {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(ru.ru_utime) + secs(ru.ru_stime))
}

/// The CPU clock now, MHz: the mean over CPUs of cpufreq's `scaling_cur_freq` where the kernel
/// has cpufreq, else of `/proc/cpuinfo`'s "cpu MHz" lines; `None` if neither is readable.
pub fn cpu_mhz_now() -> Option<f64> {
    let mut khz = Vec::new();
    for cpu in 0..4096 {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq");
        match std::fs::read_to_string(&path) {
            Ok(s) => khz.extend(s.trim().parse::<f64>().ok()),
            Err(_) if cpu == 0 => break,
            Err(_) => {
                if !std::path::Path::new(&format!("/sys/devices/system/cpu/cpu{cpu}")).exists() {
                    break;
                }
            }
        }
    }
    if !khz.is_empty() {
        return Some(khz.iter().sum::<f64>() / khz.len() as f64 / 1e3);
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: Vec<f64> = info
        .lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split(':').nth(1)?.trim().parse().ok())
        .collect();
    (!mhz.is_empty()).then(|| mhz.iter().sum::<f64>() / mhz.len() as f64)
}

/// CPU time and clock at the start of an interval; [`CpuMeter::finish`] gives the interval's.
#[derive(Clone, Copy, Debug)]
pub struct CpuMeter {
    cpu_s: Option<f64>,
    mhz: Option<f64>,
}

impl CpuMeter {
    /// Read the calling thread's CPU time and the clock now.
    pub fn start() -> CpuMeter {
        CpuMeter { cpu_s: thread_cpu_s(), mhz: cpu_mhz_now() }
    }

    /// `(CPU seconds since start, mean MHz of the start and end readings)`, NaN where unknown.
    /// Call on the thread that called [`CpuMeter::start`].
    pub fn finish(&self) -> (f64, f64) {
        let cpu = match (self.cpu_s, thread_cpu_s()) {
            (Some(a), Some(b)) => (b - a).max(0.0),
            _ => f64::NAN,
        };
        let mhz = match (self.mhz, cpu_mhz_now()) {
            (Some(a), Some(b)) => (a + b) / 2.0,
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => f64::NAN,
        };
        (cpu, mhz)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mhz_per_mbps_is_cycles_per_bit() {
        // 5% of a 3060 MHz core moving 248.4 Mbit/s: 0.05 · 3060 / 248.4 = 0.616 cycles per bit.
        let v = mhz_per_mbps(0.5, 10.0, 3060.0, 248.4e6);
        assert!((v - 0.05 * 3060.0 / 248.4).abs() < 1e-12, "{v}");
        // The wall time cancels: cycles spent over bits delivered.
        let bits = 248.4e6 * 10.0;
        assert!((v - 0.5 * 3060e6 / bits).abs() < 1e-12);
        assert!(mhz_per_mbps(f64::NAN, 1.0, 3000.0, 1e6).is_nan());
        assert!(mhz_per_mbps(1.0, 1.0, 3000.0, 0.0).is_nan());
    }

    #[test]
    fn the_meter_counts_this_threads_work() {
        let meter = CpuMeter::start();
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let (cpu_s, mhz) = meter.finish();
        assert!(cpu_s > 0.0 && cpu_s < 1.0, "{cpu_s}");
        assert!(mhz.is_nan() || mhz > 0.0);
    }
}
