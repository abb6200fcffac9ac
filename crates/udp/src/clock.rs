//! The clocks every end of a connection shares: `CLOCK_MONOTONIC` in nanoseconds (the clock a
//! run's `t0` is read on), the sample grid scenario flows are measured on, and the keepalive
//! period after which an idle end sends a PING.

use std::time::Duration;

/// Idle time after which a PING goes out (keepalive), on every end.
pub const KEEPALIVE: Duration = Duration::from_secs(1);

/// `CLOCK_MONOTONIC` now, nanoseconds: the clock the parent's `t0` is read on (Python's
/// `time.monotonic_ns`), and the one `std::time::Instant` uses on Linux.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The sample instants `t0 + k·interval` for `k ≥ max(1, ⌈start/interval⌉)` while
/// `k·interval ≤ duration` (the kernel backend's generator and the simulator's sampler use the
/// same grid).
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    t0_ns: u64,
    interval_ns: u64,
    duration_ns: u64,
    k: u64,
}

impl Schedule {
    /// The grid of a run starting at `t0_ns` (CLOCK_MONOTONIC) for a flow starting `start_ns`
    /// after it. `interval_ns` is at least 1.
    pub fn new(t0_ns: u64, interval_ns: u64, duration_ns: u64, start_ns: u64) -> Schedule {
        let interval_ns = interval_ns.max(1);
        Schedule { t0_ns, interval_ns, duration_ns, k: start_ns.div_ceil(interval_ns).max(1) }
    }

    /// The run's end, `t0 + duration`, CLOCK_MONOTONIC ns.
    pub fn end_ns(&self) -> u64 {
        self.t0_ns + self.duration_ns
    }

    /// When the next sample is due (or the run's end once every sample is taken), ns.
    pub fn next_ns(&self) -> u64 {
        (self.t0_ns + self.k * self.interval_ns).min(self.end_ns())
    }

    /// A sample is due at `t_ns`.
    pub fn due(&self, t_ns: u64) -> bool {
        self.k * self.interval_ns <= self.duration_ns && t_ns >= self.t0_ns + self.k * self.interval_ns
    }

    /// Take the due sample: its time since `t0`, seconds.
    pub fn take(&mut self) -> f64 {
        let time_s = (self.k * self.interval_ns) as f64 / 1e9;
        self.k += 1;
        time_s
    }
}
