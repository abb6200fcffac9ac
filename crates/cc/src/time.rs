//! Integer-nanosecond time, shared by every ccarena crate.
//!
//! There is no floating-point clock anywhere in ccarena: a [`SimTime`] is a count of nanoseconds
//! since the start of a run (or of a connection's clock when a real socket drives the transport),
//! and a [`Duration`] is a count of nanoseconds between two such instants. A `u64` of nanoseconds
//! covers 584 years, so overflow is not a practical concern; arithmetic saturates instead of
//! wrapping so that a bug shows as a clamped value, not as a time in the far past.

use std::ops::{Add, AddAssign, Sub};

/// Nanoseconds per second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// An instant: nanoseconds since the start of the clock that drives the code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl SimTime {
    /// The start of the clock.
    pub const ZERO: SimTime = SimTime(0);
    /// A time later than any event of a run; used as "never".
    pub const NEVER: SimTime = SimTime(u64::MAX);

    /// Nanoseconds since the start of the clock.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the start of the clock, as a float (for reporting only, never for ordering).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// Time elapsed since `earlier`, or zero when `earlier` is later than `self`.
    pub fn saturating_since(self, earlier: SimTime) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span; used as "infinite".
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Duration {
        Duration(ms * 1_000_000)
    }

    /// A span of `us` microseconds.
    pub const fn from_micros(us: u64) -> Duration {
        Duration(us * 1_000)
    }

    /// A span of `s` whole seconds.
    pub const fn from_secs(s: u64) -> Duration {
        Duration(s * NANOS_PER_SEC)
    }

    /// A span of `s` seconds, rounded to the nearest nanosecond (negative values give zero).
    pub fn from_secs_f64(s: f64) -> Duration {
        Duration((s * NANOS_PER_SEC as f64).round().max(0.0) as u64)
    }

    /// The span in nanoseconds.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// The span in seconds, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// Multiply by an integer factor, saturating at [`Duration::MAX`].
    pub fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }

    /// The time needed to serialize `bytes` bytes at `rate_bps` bits per second, rounded up to a
    /// whole nanosecond so that a link never runs faster than its rate.
    pub fn transmission(bytes: u64, rate_bps: u64) -> Duration {
        debug_assert!(rate_bps > 0);
        let bits = bytes as u128 * 8 * NANOS_PER_SEC as u128;
        Duration(bits.div_ceil(rate_bps as u128) as u64)
    }
}

impl Add<Duration> for SimTime {
    type Output = SimTime;
    fn add(self, d: Duration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for SimTime {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<SimTime> for SimTime {
    type Output = Duration;
    /// Elapsed time; saturates at zero (use [`SimTime::saturating_since`] to make that explicit).
    fn sub(self, earlier: SimTime) -> Duration {
        self.saturating_since(earlier)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, o: Duration) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_time_rounds_up() {
        // 1500 B at 1 Gbps is exactly 12 µs; at 3 bps it is 4000 s exactly.
        assert_eq!(Duration::transmission(1500, 1_000_000_000), Duration::from_micros(12));
        assert_eq!(Duration::transmission(1500, 3), Duration::from_secs(4000));
        // 1 B at 3 Gbps is 2.666.. ns: rounded up to 3.
        assert_eq!(Duration::transmission(1, 3_000_000_000), Duration(3));
    }

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(SimTime(5) - SimTime(9), Duration::ZERO);
        assert_eq!(SimTime::NEVER + Duration(1), SimTime::NEVER);
    }
}
