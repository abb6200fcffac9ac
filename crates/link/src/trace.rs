//! A link whose capacity follows a trace instead of a constant rate: when a packet that is ready
//! to leave at some instant has left.
//!
//! Two kinds of trace:
//!
//! - **Delivery opportunities** (Mahimahi's format; Netravali et al., "Mahimahi: Accurate
//!   Record-and-Replay for HTTP", USENIX ATC 2015, §3 LinkShell, and `mm-link(1)`): a sorted list
//!   of millisecond timestamps, each an instant at which [`OPPORTUNITY_BYTES`] may leave; several equal
//!   timestamps are several opportunities at that instant. Accounting is in bytes, as
//!   `mm-link(1)` documents: one opportunity carries up to 1500 bytes, so it may carry several
//!   small packets, and a packet larger than what is left of an opportunity continues in the
//!   next one; the packet has left at the opportunity that carries its last byte. Bytes of an
//!   opportunity that nothing waiting can use are wasted (no credit is saved for later). Looped,
//!   the trace repeats with a period equal to its last timestamp (as mm-link wraps around); not
//!   looped, there is no opportunity after the last one (mm-link's `--once`): packets still
//!   queued then never leave.
//! - **Rate steps**: a piecewise-constant rate, `(time_ns, rate_bps)` rows from time 0; a packet
//!   is serialized bit by bit at whatever the rate is while it is on the wire (a rate of 0 pauses
//!   it). The last row marks the trace's end: looped, the trace repeats with a period equal to
//!   the last row's time (the last row's rate is not used); not looped, the last row's rate holds
//!   for ever after. A single row is a constant rate.
//!
//! One difference from Mahimahi, from its millisecond clock: mm-link processes the opportunities
//! due at an instant before it enqueues a packet arriving at that same instant, so the packet
//! cannot use them; here a packet ready at exactly an opportunity's instant uses it. With
//! nanosecond arrivals the two differ only for packets arriving exactly on a millisecond.
//!
//! Times are absolute ns on the caller's clock, with the trace's time 0 at an `origin`
//! ([`TraceTransmitter::set_origin`]); the simulator's origin is 0, the relay's the run's start.

use serde::{Deserialize, Serialize};

use crate::field_error::FieldError;

/// Bytes one delivery opportunity carries (Mahimahi's `PACKET_SIZE`, an Ethernet MTU).
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// "Never": the time a packet leaves when the trace has no capacity left for it, ns.
pub const NEVER_NS: u64 = u64::MAX;

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u128 = 1_000_000_000;

/// Why a trace is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError(pub String);

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TraceError {}

/// A parsed, checked trace (see the module docs for the two kinds and their semantics).
#[derive(Clone, Debug, PartialEq)]
pub enum RateTrace {
    /// Delivery opportunities of [`OPPORTUNITY_BYTES`] each.
    Opportunities {
        /// Opportunity instants from the trace's start, non-decreasing, ns.
        times_ns: Vec<u64>,
        /// Repeat with period `times_ns.last()`.
        looped: bool,
    },
    /// A piecewise-constant rate.
    Steps {
        /// `(time_ns, rate_bps)`: from `time_ns` on, until the next row, the rate is `rate_bps`.
        /// Times strictly increasing, the first 0.
        steps: Vec<(u64, u64)>,
        /// Repeat with period = the last row's time (only with two rows or more).
        looped: bool,
    },
}

impl RateTrace {
    /// A Mahimahi trace from its millisecond timestamps (the file's lines, in order).
    ///
    /// # Errors
    /// An empty list, a timestamp smaller than the one before it, or (looped) a last timestamp
    /// of 0, which would repeat the whole trace at one instant (an infinite rate).
    pub fn opportunities_ms(times_ms: &[u64], looped: bool) -> Result<RateTrace, TraceError> {
        if times_ms.is_empty() {
            return Err(TraceError("no delivery opportunities".into()));
        }
        if let Some(i) = times_ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(TraceError(format!(
                "timestamps must not decrease: entry {} ({} ms) follows {} ms",
                i + 1,
                times_ms[i + 1],
                times_ms[i]
            )));
        }
        let last = *times_ms.last().expect("not empty");
        if looped && last == 0 {
            return Err(TraceError("a looped trace needs a last timestamp after 0 ms (its period)".into()));
        }
        let times_ns = times_ms
            .iter()
            .map(|&ms| ms.checked_mul(NS_PER_MS).ok_or_else(|| TraceError(format!("timestamp {ms} ms is too large"))))
            .collect::<Result<Vec<u64>, TraceError>>()?;
        Ok(RateTrace::Opportunities { times_ns, looped })
    }

    /// A rate-steps trace from `(time_ns, rate_bps)` rows.
    ///
    /// # Errors
    /// No rows, a first row not at time 0, times not strictly increasing, or a trace whose
    /// capacity is 0 for ever after some point (looped: a period with only zero rates; not
    /// looped: a last rate of 0 is allowed, it is an outage that never ends).
    pub fn steps(steps: &[(u64, u64)], looped: bool) -> Result<RateTrace, TraceError> {
        let Some(&(first, _)) = steps.first() else { return Err(TraceError("no rate steps".into())) };
        if first != 0 {
            return Err(TraceError(format!("the first step must be at time 0, not {first} ns")));
        }
        if let Some(i) = steps.windows(2).position(|w| w[1].0 <= w[0].0) {
            return Err(TraceError(format!("step times must increase: step {} ({} ns) follows {} ns", i + 1, steps[i + 1].0, steps[i].0)));
        }
        let trace = RateTrace::Steps { steps: steps.to_vec(), looped: looped && steps.len() > 1 };
        if trace.looping() && trace.period_capacity_bit_ns() == 0 {
            return Err(TraceError("a looped trace needs a positive rate somewhere before its last step".into()));
        }
        Ok(trace)
    }

    /// True when the trace repeats.
    pub fn looping(&self) -> bool {
        match self {
            RateTrace::Opportunities { looped, .. } | RateTrace::Steps { looped, .. } => *looped,
        }
    }

    /// The trace's length (its period when looped), ns: the last timestamp or the last row's
    /// time.
    pub fn length_ns(&self) -> u64 {
        match self {
            RateTrace::Opportunities { times_ns, .. } => *times_ns.last().expect("checked non-empty"),
            RateTrace::Steps { steps, .. } => steps.last().expect("checked non-empty").0,
        }
    }

    /// Capacity over one period, bit·ns (rate × time, so bits × 10⁹).
    fn period_capacity_bit_ns(&self) -> u128 {
        match self {
            RateTrace::Opportunities { times_ns, .. } => u128::from(times_ns.len() as u64 * OPPORTUNITY_BYTES * 8) * NS_PER_S,
            RateTrace::Steps { steps, .. } => {
                steps.windows(2).map(|w| u128::from(w[0].1) * u128::from(w[1].0 - w[0].0)).sum()
            }
        }
    }

    /// The mean rate over the trace's length, bits per second (the rate itself for a single
    /// step; 0 for a trace of zero length, which only a non-looped trace can have). The one rate
    /// to quote for a trace link (reports, RED's idle estimate).
    pub fn mean_rate_bps(&self) -> u64 {
        if let RateTrace::Steps { steps, .. } = self {
            if steps.len() == 1 {
                return steps[0].1;
            }
        }
        let length = self.length_ns();
        if length == 0 {
            return 0;
        }
        (self.period_capacity_bit_ns() / u128::from(length)) as u64
    }

    /// Bytes the trace can carry in `[from_ns, to_ns)` of its own time (origin 0): for
    /// opportunities, [`OPPORTUNITY_BYTES`] per opportunity in the interval; for steps, the integral of
    /// the rate, rounded down. What a link that never runs out of packets delivers.
    pub fn capacity_bytes(&self, from_ns: u64, to_ns: u64) -> u64 {
        if to_ns <= from_ns {
            return 0;
        }
        match self {
            RateTrace::Opportunities { .. } => {
                let tx = TraceTransmitter::new(self.clone(), 0);
                let (a, b) = (tx.first_opportunity_at_or_after(from_ns), tx.first_opportunity_at_or_after(to_ns));
                (b - a) * OPPORTUNITY_BYTES
            }
            RateTrace::Steps { .. } => ((self.bit_ns_until(to_ns) - self.bit_ns_until(from_ns)) / (8 * NS_PER_S)) as u64,
        }
    }

    /// Steps only: the capacity in `[0, t_ns)`, bit·ns.
    fn bit_ns_until(&self, t_ns: u64) -> u128 {
        let RateTrace::Steps { steps, looped } = self else { unreachable!("steps only") };
        let mut total = 0u128;
        let mut t = t_ns;
        if *looped {
            let period = self.length_ns();
            total += u128::from(t / period) * self.period_capacity_bit_ns();
            t %= period;
        }
        for (i, &(start, rate)) in steps.iter().enumerate() {
            if start >= t {
                break;
            }
            let end = steps.get(i + 1).map_or(t, |s| s.0.min(t));
            total += u128::from(rate) * u128::from(end - start);
        }
        total
    }
}

/// The transmitter of a trace link: when each packet, taken in order, has left. Holds what a
/// delivery-opportunity trace must remember between packets (the next unused opportunity and
/// the bytes left in the last one used); a rate-steps trace needs nothing beyond the instant the
/// previous packet left, which the caller passes as part of `ready_ns`.
#[derive(Clone, Debug)]
pub struct TraceTransmitter {
    trace: RateTrace,
    origin_ns: u64,
    /// Opportunities: index (counted over repetitions) of the next unused one.
    next_opportunity: u64,
    /// Opportunities: bytes left unused in opportunity `next_opportunity − 1`.
    leftover_bytes: u64,
}

impl TraceTransmitter {
    /// A transmitter running `trace` with its time 0 at `origin_ns` (absolute ns).
    pub fn new(trace: RateTrace, origin_ns: u64) -> TraceTransmitter {
        TraceTransmitter { trace, origin_ns, next_opportunity: 0, leftover_bytes: 0 }
    }

    /// The trace it runs.
    pub fn trace(&self) -> &RateTrace {
        &self.trace
    }

    /// The trace's time 0, absolute ns.
    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }

    /// Restart the trace at `origin_ns` (absolute ns): opportunities used so far are forgotten.
    /// For a relay that learns the run's start after its first frames.
    pub fn set_origin(&mut self, origin_ns: u64) {
        self.origin_ns = origin_ns;
        self.next_opportunity = 0;
        self.leftover_bytes = 0;
    }

    /// When a packet of `bytes` that may start leaving at `ready_ns` (it is at the head of the
    /// queue and the packet before it has left) has left, absolute ns, or [`NEVER_NS`] if the
    /// trace ends first. Packets must be passed in departure order with non-decreasing
    /// `ready_ns`, each exactly once.
    pub fn depart(&mut self, ready_ns: u64, bytes: u64) -> u64 {
        let (end, next, leftover) = self.compute(ready_ns, bytes);
        self.next_opportunity = next;
        self.leftover_bytes = leftover;
        end
    }

    /// What [`TraceTransmitter::depart`] would return, without using the trace up.
    pub fn peek_departure(&self, ready_ns: u64, bytes: u64) -> u64 {
        self.compute(ready_ns, bytes).0
    }

    /// (departure ns, next unused opportunity, bytes left in the one before it).
    fn compute(&self, ready_ns: u64, bytes: u64) -> (u64, u64, u64) {
        match &self.trace {
            RateTrace::Opportunities { .. } => self.compute_opportunities(ready_ns, bytes.max(1)),
            RateTrace::Steps { .. } => (self.compute_steps(ready_ns, bytes.max(1)), 0, 0),
        }
    }

    fn compute_opportunities(&self, ready_ns: u64, bytes: u64) -> (u64, u64, u64) {
        let mut need = bytes;
        let first = if self.leftover_bytes > 0 && ready_ns <= self.opportunity_ns(self.next_opportunity - 1) {
            // The packet was waiting when the last opportunity came: it takes what is left of it.
            if need <= self.leftover_bytes {
                return (self.opportunity_ns(self.next_opportunity - 1), self.next_opportunity, self.leftover_bytes - need);
            }
            need -= self.leftover_bytes;
            self.next_opportunity
        } else {
            self.next_opportunity.max(self.first_opportunity_at_or_after(ready_ns))
        };
        let used = need.div_ceil(OPPORTUNITY_BYTES);
        let last = first + used - 1;
        (self.opportunity_ns(last), last + 1, used * OPPORTUNITY_BYTES - need)
    }

    /// Absolute time of opportunity `k` (counted over repetitions), or [`NEVER_NS`] past the end
    /// of a trace that does not loop.
    fn opportunity_ns(&self, k: u64) -> u64 {
        let RateTrace::Opportunities { times_ns, looped } = &self.trace else { unreachable!("opportunities only") };
        let n = times_ns.len() as u64;
        let (cycle, i) = (k / n, (k % n) as usize);
        if cycle > 0 && !looped {
            return NEVER_NS;
        }
        let period = *times_ns.last().expect("checked non-empty");
        cycle
            .checked_mul(period)
            .and_then(|c| c.checked_add(times_ns[i]))
            .and_then(|t| t.checked_add(self.origin_ns))
            .unwrap_or(NEVER_NS)
    }

    /// Index (counted over repetitions) of the first opportunity at or after `t_ns` (absolute);
    /// past the end of a trace that does not loop, the number of opportunities.
    fn first_opportunity_at_or_after(&self, t_ns: u64) -> u64 {
        let RateTrace::Opportunities { times_ns, looped } = &self.trace else { unreachable!("opportunities only") };
        let n = times_ns.len() as u64;
        let rel = t_ns.saturating_sub(self.origin_ns);
        if !looped {
            return times_ns.partition_point(|&x| x < rel) as u64;
        }
        let period = *times_ns.last().expect("checked non-empty");
        let (cycle, r) = (rel / period, rel % period);
        if r == 0 && cycle > 0 {
            // The previous repetition's opportunities at its end fall on this very instant.
            let at_end = times_ns.iter().rev().take_while(|&&x| x == period).count() as u64;
            return cycle * n - at_end;
        }
        cycle * n + times_ns.partition_point(|&x| x < r) as u64
    }

    /// Rate steps: the instant the last bit of `bytes` leaves when serialization starts at
    /// `ready_ns`, rounded up to a whole ns (a link never runs faster than its rate).
    fn compute_steps(&self, ready_ns: u64, bytes: u64) -> u64 {
        let RateTrace::Steps { steps, looped } = &self.trace else { unreachable!("steps only") };
        let mut need = u128::from(bytes) * 8 * NS_PER_S; // bit·ns still to serialize
        let mut t = ready_ns.max(self.origin_ns);
        if *looped {
            // Whole periods carry the same from any phase: skip them, keeping some work to do.
            let per_period = self.trace.period_capacity_bit_ns();
            let skip = (need - 1) / per_period;
            if skip > 0 {
                let Some(jump) = u64::try_from(skip).ok().and_then(|s| s.checked_mul(self.trace.length_ns())) else { return NEVER_NS };
                let Some(t2) = t.checked_add(jump) else { return NEVER_NS };
                t = t2;
                need -= skip * per_period;
            }
        }
        loop {
            let (rate, step_end) = self.step_at(steps, *looped, t);
            if rate > 0 {
                let room = u128::from(rate) * u128::from(step_end - t);
                if need <= room || step_end == NEVER_NS {
                    let d = need.div_ceil(u128::from(rate));
                    return u64::try_from(d).ok().and_then(|d| t.checked_add(d)).unwrap_or(NEVER_NS);
                }
                need -= room;
            } else if step_end == NEVER_NS {
                return NEVER_NS;
            }
            t = step_end;
        }
    }

    /// The rate at absolute `t_ns` (not before the origin) and when its step ends (absolute ns,
    /// [`NEVER_NS`] for the last step of a trace that does not loop).
    fn step_at(&self, steps: &[(u64, u64)], looped: bool, t_ns: u64) -> (u64, u64) {
        let rel = t_ns - self.origin_ns;
        if looped {
            let period = steps.last().expect("checked non-empty").0;
            let (cycle_start, r) = (t_ns - rel % period, rel % period);
            let i = steps.partition_point(|s| s.0 <= r) - 1; // < len − 1, as r < period
            return (steps[i].1, cycle_start.saturating_add(steps[i + 1].0));
        }
        let i = steps.partition_point(|s| s.0 <= rel) - 1;
        let end = steps.get(i + 1).map_or(NEVER_NS, |s| self.origin_ns.saturating_add(s.0));
        (steps[i].1, end)
    }
}

/// A link's capacity trace ([`crate::trace`]): exactly one of `opportunities_ms` and `steps` is
/// non-null. Every key is required.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Mahimahi delivery opportunities: the trace file's millisecond timestamps in order, each an
    /// instant at which 1500 bytes may leave (byte accounting, as mm-link). Kept in ms, as in the
    /// file, so a long trace stays compact.
    pub opportunities_ms: Option<Vec<u64>>,
    /// Rate steps `[time_ns, rate_bps]`, the first at 0, times increasing; the last row marks
    /// the trace's end (its period when looped).
    pub steps: Option<Vec<(u64, u64)>>,
    /// Repeat the trace (period: the last timestamp or the last step's time). Not looped, a
    /// Mahimahi trace has no capacity after its last opportunity and rate steps keep the last
    /// rate.
    #[serde(rename = "loop")]
    pub looped: bool,
}

impl TraceSpec {
    /// The checked trace.
    ///
    /// # Errors
    /// Neither or both kinds given, or a trace [`RateTrace`] refuses; the error names the key at
    /// fault (empty for the object itself).
    pub fn rate_trace(&self) -> Result<RateTrace, FieldError> {
        match (&self.opportunities_ms, &self.steps) {
            (Some(o), None) => RateTrace::opportunities_ms(o, self.looped).map_err(|e| FieldError::new("opportunities_ms", e.0)),
            (None, Some(s)) => RateTrace::steps(s, self.looped).map_err(|e| FieldError::new("steps", e.0)),
            _ => Err(FieldError::new("", "set exactly one of opportunities_ms and steps")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::transmission_ns;

    const MS: u64 = NS_PER_MS;

    fn opp(times_ms: &[u64], looped: bool) -> TraceTransmitter {
        TraceTransmitter::new(RateTrace::opportunities_ms(times_ms, looped).unwrap(), 0)
    }

    #[test]
    fn each_full_size_packet_takes_one_opportunity_and_equal_timestamps_are_several() {
        // Two opportunities at 1 ms, one at 3 ms, period 5 ms.
        let mut tx = opp(&[1, 1, 3, 5], true);
        assert_eq!(tx.depart(0, 1500), MS);
        assert_eq!(tx.depart(0, 1500), MS, "the second opportunity at the same instant");
        assert_eq!(tx.depart(0, 1500), 3 * MS);
        assert_eq!(tx.depart(0, 1500), 5 * MS);
        // Looped: the next cycle starts at 5 ms, its opportunities at 6, 6, 8, 10 ms.
        assert_eq!(tx.depart(0, 1500), 6 * MS);
        assert_eq!(tx.depart(0, 1500), 6 * MS);
        assert_eq!(tx.depart(0, 1500), 8 * MS);
        // A packet ready after an opportunity waits for the next one; the skipped one is wasted.
        assert_eq!(tx.depart(9 * MS, 1500), 10 * MS);
        assert_eq!(tx.depart(10 * MS + 1, 1500), 11 * MS);
        // Far ahead: cycle 40 (from 200 ms), its opportunity at 3 ms.
        assert_eq!(tx.depart(202 * MS, 1500), 203 * MS);
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_two_as_in_mahimahi() {
        let mut tx = opp(&[1, 2, 3, 4], true);
        // Three 500-byte packets waiting at 0 fill the opportunity at 1 ms.
        assert_eq!(tx.depart(0, 500), MS);
        assert_eq!(tx.depart(MS, 500), MS);
        assert_eq!(tx.depart(MS, 500), MS);
        // A 1000-byte packet then starts in the opportunity at 2 ms, leaving 500 bytes there; a
        // 1200-byte packet that was waiting takes those and 700 of the one at 3 ms.
        assert_eq!(tx.depart(MS, 1000), 2 * MS);
        assert_eq!(tx.depart(2 * MS, 1200), 3 * MS);
        // A packet arriving after the 3 ms opportunity cannot use its 800 bytes left.
        assert_eq!(tx.depart(3 * MS + 1, 100), 4 * MS);
        // One arriving before the opportunity at 4 ms came can still use what is left of it.
        assert_eq!(tx.depart(4 * MS, 1400), 4 * MS);
        // A 3000-byte frame (a GSO batch) takes two whole opportunities.
        assert_eq!(tx.depart(4 * MS, 3000), 6 * MS);
    }

    #[test]
    fn a_trace_that_does_not_loop_ends_and_one_that_loops_counts_every_opportunity() {
        let mut once = opp(&[0, 2, 2], false);
        assert_eq!(once.depart(0, 1500), 0);
        assert_eq!(once.depart(0, 1500), 2 * MS);
        assert_eq!(once.depart(0, 1500), 2 * MS);
        assert_eq!(once.depart(0, 1500), NEVER_NS);
        assert_eq!(once.depart(5 * MS, 1), NEVER_NS);
        // Looped, with an opportunity at 0 and one at the period: both happen at 2 ms, 4 ms, …
        let t = RateTrace::opportunities_ms(&[0, 2], true).unwrap();
        assert_eq!(t.capacity_bytes(0, 10 * MS), 9 * 1500, "0, 2, 2, 4, 4, 6, 6, 8, 8");
        assert_eq!(t.capacity_bytes(2 * MS, 4 * MS), 2 * 1500);
        let mut looped = TraceTransmitter::new(t, 0);
        let times: Vec<u64> = (0..7).map(|_| looped.depart(0, 1500) / MS).collect();
        assert_eq!(times, vec![0, 2, 2, 4, 4, 6, 6]);
        // Saturated for 1 s on a trace of 4 opportunities per 4 ms: exactly 1000 packets leave
        // at or before 1 s, and the capacity count agrees.
        let t = RateTrace::opportunities_ms(&[1, 2, 2, 4], true).unwrap();
        let mut tx = TraceTransmitter::new(t.clone(), 0);
        let mut left = 0;
        while tx.depart(0, 1500) <= 1_000 * MS {
            left += 1;
        }
        assert_eq!(left, 1000);
        assert_eq!(t.capacity_bytes(0, 1_000 * MS + 1), 1000 * 1500);
        assert_eq!(t.mean_rate_bps(), 4 * 1500 * 8 * 1000 / 4);
    }

    #[test]
    fn the_origin_shifts_the_trace() {
        let mut tx = TraceTransmitter::new(RateTrace::opportunities_ms(&[1, 2], true).unwrap(), 100 * MS);
        assert_eq!(tx.depart(0, 1500), 101 * MS, "ready before the origin: waits for the trace");
        tx.set_origin(200 * MS);
        assert_eq!(tx.depart(150 * MS, 1500), 201 * MS);
    }

    #[test]
    fn bad_traces_are_refused() {
        assert!(RateTrace::opportunities_ms(&[], true).is_err());
        assert!(RateTrace::opportunities_ms(&[3, 2], true).unwrap_err().0.contains("must not decrease"));
        assert!(RateTrace::opportunities_ms(&[0, 0], true).is_err());
        assert!(RateTrace::opportunities_ms(&[0, 0], false).is_ok());
        assert!(RateTrace::steps(&[], false).is_err());
        assert!(RateTrace::steps(&[(5, 1)], false).is_err());
        assert!(RateTrace::steps(&[(0, 1), (0, 2)], false).is_err());
        assert!(RateTrace::steps(&[(0, 0), (10, 5)], true).is_err(), "looped with no capacity");
        assert!(RateTrace::steps(&[(0, 0), (10, 5)], false).is_ok());
    }

    #[test]
    fn one_rate_step_is_a_constant_rate() {
        let tx = TraceTransmitter::new(RateTrace::steps(&[(0, 12_345_678)], true).unwrap(), 0);
        for (t, b) in [(0, 1500), (7, 52), (1_000_003, 9000)] {
            assert_eq!(tx.peek_departure(t, b), t + transmission_ns(b, 12_345_678));
        }
        assert_eq!(tx.trace().mean_rate_bps(), 12_345_678);
    }

    #[test]
    fn a_packet_is_serialized_across_rate_steps_and_pauses_at_zero() {
        // 12 Mbps for 1 ms, 0 for 1 ms, 6 Mbps until 4 ms (the period).
        let steps = [(0, 12_000_000), (MS, 0), (2 * MS, 6_000_000), (4 * MS, 99)];
        let tx = TraceTransmitter::new(RateTrace::steps(&steps, true).unwrap(), 0);
        // 1500 bytes = 12 000 bits: 1 ms at 12 Mbps.
        assert_eq!(tx.peek_departure(0, 1500), MS);
        // From 0.5 ms: 6000 bits by 1 ms, pause, 6000 bits at 6 Mbps = 1 ms: leaves at 3 ms.
        assert_eq!(tx.peek_departure(MS / 2, 1500), 3 * MS);
        // Ready during the pause: starts at 2 ms.
        assert_eq!(tx.peek_departure(MS + 5, 750), 3 * MS);
        // Looped: 3.5 ms → 4 ms gives 3000 bits; the next cycle's first 0.75 ms the other 9000.
        assert_eq!(tx.peek_departure(3 * MS + MS / 2, 1500), 4 * MS + 3 * MS / 4);
        // Whole periods skipped: a period carries 24 000 bits; 10 periods and 1 ms more.
        assert_eq!(tx.peek_departure(0, 10 * 3000 + 1500), 41 * MS);
        // Not looped: the last row's rate holds after the end.
        let once = TraceTransmitter::new(RateTrace::steps(&steps, false).unwrap(), 0);
        assert_eq!(once.peek_departure(4 * MS, 1), 4 * MS + transmission_ns(1, 99));
        let dead = TraceTransmitter::new(RateTrace::steps(&[(0, 8_000_000), (MS, 0)], false).unwrap(), 0);
        assert_eq!(dead.peek_departure(0, 1000), MS);
        assert_eq!(dead.peek_departure(0, 1001), NEVER_NS);
    }

    #[test]
    fn step_capacity_is_the_rate_integral() {
        let steps = [(0, 8_000_000), (1_000 * MS, 16_000_000), (3_000 * MS, 0)];
        let looped = RateTrace::steps(&steps, true).unwrap();
        assert_eq!(looped.capacity_bytes(0, 1_000 * MS), 1_000_000);
        assert_eq!(looped.capacity_bytes(500 * MS, 1_500 * MS), 500_000 + 1_000_000);
        // The next cycle starts at 3 s with 8 Mbps again.
        assert_eq!(looped.capacity_bytes(3_000 * MS, 4_000 * MS), 1_000_000);
        let once = RateTrace::steps(&steps, false).unwrap();
        assert_eq!(once.capacity_bytes(3_000 * MS, 4_000 * MS), 0);
        assert_eq!(looped.mean_rate_bps(), (8_000_000 + 2 * 16_000_000) / 3);
    }
}
