//! YeAH-TCP, "Yet Another Highspeed TCP" (Baiocchi, Castellani and Vacirca, PFLDnet 2007): the
//! `yeah` controller.
//!
//! # What it does
//!
//! YeAH runs one of two growth rules, chosen once per RTT from a Vegas-like estimate of its own
//! queue, as the paper describes:
//!
//! - `RTT_base` is the smallest RTT seen, `RTT_min` the smallest RTT of the last round;
//!   `Q = (RTT_min − RTT_base) · cwnd / RTT_min` is the number of its packets queued at the
//!   bottleneck, and `L = (RTT_min − RTT_base) / RTT_base` the queueing delay relative to the
//!   propagation delay.
//! - **Fast mode** while `Q < Q_max` and `L < 1/φ`: Scalable TCP's increase (cwnd grows by
//!   0.01 segment per acknowledged segment, i.e. 1% per RTT; never slower than Reno's one segment
//!   per RTT).
//! - **Slow mode** otherwise: Reno's increase, plus *precautionary decongestion*: when
//!   `Q > Q_max`, cwnd is reduced by Q (at most half of it, never below the Reno-emulation
//!   window) and ssthresh set to the result, which empties the queue YeAH itself built.
//! - **Reno emulation**: `reno_count` follows the window a Reno flow would have while YeAH is in
//!   slow mode; decongestion never goes below it, so YeAH keeps its share against Reno flows that
//!   fill the queue. `doing_reno_now` counts consecutive slow-mode rounds; after ρ of them YeAH
//!   assumes it competes with loss-based flows. After ζ consecutive fast-mode rounds the
//!   emulation is reset.
//! - **Loss**: if YeAH has not been in slow mode for ρ rounds, it removes only its own queue:
//!   `cwnd − max(Q, cwnd/2^δ)` (at most half the window); otherwise it halves like Reno.
//!
//! Constants: Q_max = 80 packets, φ = 8, ρ = 16, ζ = 50, δ = 3 (minimum loss
//! reduction cwnd/8), ε = 1 (decongestion removes at most cwnd/2), γ = 1 (the whole queue is
//! removed per decongestion).
//!
//! # Choices
//!
//! - Q and L use [`RoundRtt`] (Vegas's once-per-RTT measurement, reused by composition, as the
//!   paper builds YeAH on Vegas's RTT measurement): `RTT_min` is the round's minimum sample, and a
//!   round needs [`crate::vegas::MIN_ROUND_SAMPLES`] samples to count.
//! - Slow start is Reno's; a timeout halves FlightSize as Reno does.
//! - Scalable's 0.01 per segment is counted in bytes with Reno's byte counter over
//!   `min(cwnd, 100 segments)`: 1 MSS per 100 MSS acknowledged above 100 segments, Reno below.

use crate::reno::{cong_avoid_ai, halve_flight, slow_start};
use crate::vegas::{queued_packets, RoundRtt, MIN_ROUND_SAMPLES};
use crate::{AckSample, CcError, CongestionControl, CwndState, LossEvent, LossKind, ParamInfo, Params};

/// Default Q_max, packets: the most of its own packets YeAH lets queue.
pub const DEFAULT_Q_MAX: f64 = 80.0;

/// Default φ: fast mode requires queueing delay < RTT_base / φ.
pub const DEFAULT_PHI: f64 = 8.0;

/// Default ρ, rounds: slow-mode rounds in a row after which YeAH halves on loss like Reno.
pub const DEFAULT_RHO: f64 = 16.0;

/// Default ζ, rounds: fast-mode rounds in a row after which the Reno emulation is reset.
pub const DEFAULT_ZETA: f64 = 50.0;

/// Scalable TCP's increase, segments acknowledged per segment of growth: a = 0.01 (Kelly 2003).
const STCP_SEGMENTS_PER_INCREASE: u64 = 100;

/// δ: a loss removes at least cwnd / 2^δ = cwnd/8.
const LOSS_MIN_REDUCTION_SHIFT: u32 = 3;

/// ε: decongestion removes at most cwnd / 2^ε = cwnd/2.
const DECONGESTION_MAX_SHIFT: u32 = 1;

/// γ: decongestion removes Q / γ, the whole queue.
const DECONGESTION_QUEUE_DIVISOR: f64 = 1.0;

/// Windows and the Reno emulation never go below this many segments.
const MIN_WINDOW_SEGMENTS: f64 = 2.0;

/// The `yeah` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "q_max",
        default: DEFAULT_Q_MAX,
        doc: "Q_max, packets: fast mode needs its queue Q < Q_max, and decongestion removes Q \
              when Q > Q_max (Baiocchi et al. 2007); > 0",
    },
    ParamInfo {
        name: "phi",
        default: DEFAULT_PHI,
        doc: "φ: fast mode needs L = (RTT_min - RTT_base)/RTT_base < 1/φ; > 0",
    },
    ParamInfo {
        name: "rho",
        default: DEFAULT_RHO,
        doc: "ρ, rounds: after this many slow-mode rounds in a row a loss halves cwnd as Reno \
              (competing with loss-based flows) instead of removing only the queue; >= 1",
    },
    ParamInfo {
        name: "zeta",
        default: DEFAULT_ZETA,
        doc: "ζ, rounds: this many fast-mode rounds in a row reset the Reno emulation; >= 1",
    },
];

const PARAM_NAMES: &[&str] = &["q_max", "phi", "rho", "zeta"];

/// The growth rule in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    SlowStart,
    Fast,
    Slow,
}

/// The YeAH controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Yeah {
    q_max: f64,
    phi: f64,
    rho: u32,
    zeta: u32,
    rtt: RoundRtt,
    mode: Mode,
    /// Q of the last measured round, packets.
    last_queue: f64,
    /// The Reno-emulation window, packets.
    reno_count: f64,
    /// Fast-mode rounds in a row.
    fast_count: u32,
    /// Slow-mode rounds in a row.
    doing_reno_now: u32,
    ca_acc_bytes: u64,
    decongestions: u64,
}

impl Yeah {
    /// A YeAH controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// out of range.
    pub fn new(params: &Params) -> Result<Yeah, CcError> {
        params.expect_only("yeah", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "yeah", param, value, reason };
        let q_max = params.get_or("q_max", DEFAULT_Q_MAX);
        if !(q_max.is_finite() && q_max > 0.0) {
            return Err(bad("q_max", q_max, "must be a finite number > 0"));
        }
        let phi = params.get_or("phi", DEFAULT_PHI);
        if !(phi.is_finite() && phi > 0.0) {
            return Err(bad("phi", phi, "must be a finite number > 0"));
        }
        let rounds = |name: &'static str, default: f64| {
            let v = params.get_or(name, default);
            if v.is_finite() && v >= 1.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
                Ok(v as u32)
            } else {
                Err(bad(name, v, "must be a whole number of rounds >= 1"))
            }
        };
        Ok(Yeah {
            q_max,
            phi,
            rho: rounds("rho", DEFAULT_RHO)?,
            zeta: rounds("zeta", DEFAULT_ZETA)?,
            rtt: RoundRtt::new(),
            mode: Mode::SlowStart,
            last_queue: 0.0,
            reno_count: MIN_WINDOW_SEGMENTS,
            fast_count: 0,
            doing_reno_now: 0,
            ca_acc_bytes: 0,
            decongestions: 0,
        })
    }

    /// Q of the last measured round, packets.
    pub fn queue_estimate(&self) -> f64 {
        self.last_queue
    }

    /// Precautionary decongestions so far.
    pub fn decongestions(&self) -> u64 {
        self.decongestions
    }

    /// Once per round: choose the mode from Q and L; decongest in slow mode.
    fn on_round_end(&mut self, st: &mut CwndState, min_rtt: crate::Duration) {
        let Some(base) = self.rtt.base_rtt() else { return };
        let cwnd = st.cwnd_packets();
        let queue = queued_packets(cwnd, base, min_rtt);
        let level = min_rtt.as_nanos().saturating_sub(base.as_nanos()) as f64 / base.as_nanos().max(1) as f64;
        self.last_queue = queue;
        if st.in_slow_start() {
            return;
        }
        if queue < self.q_max && level < 1.0 / self.phi {
            self.mode = Mode::Fast;
            self.fast_count += 1;
            if self.fast_count > self.zeta {
                self.reno_count = MIN_WINDOW_SEGMENTS;
                self.fast_count = 0;
            }
            self.doing_reno_now = 0;
            return;
        }
        self.mode = Mode::Slow;
        if queue > self.q_max && cwnd > self.reno_count {
            let reduction = (queue / DECONGESTION_QUEUE_DIVISOR)
                .min(cwnd / f64::from(1u32 << DECONGESTION_MAX_SHIFT));
            let new_cwnd = (cwnd - reduction).max(self.reno_count).max(MIN_WINDOW_SEGMENTS);
            st.cwnd_bytes = (new_cwnd * st.mss_bytes as f64) as u64;
            st.ssthresh_bytes = st.cwnd_bytes;
            self.decongestions += 1;
        }
        self.reno_count = if self.reno_count <= MIN_WINDOW_SEGMENTS {
            (st.cwnd_packets() / 2.0).max(MIN_WINDOW_SEGMENTS)
        } else {
            self.reno_count + 1.0
        };
        self.doing_reno_now = self.doing_reno_now.saturating_add(1);
    }
}

impl CongestionControl for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        self.rtt.on_ack(ack);
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        if ack.cwnd_limited {
            let mut acked = ack.bytes_acked;
            if st.in_slow_start() {
                self.mode = Mode::SlowStart;
                acked = slow_start(st, acked);
            } else if self.mode == Mode::SlowStart {
                self.mode = Mode::Fast;
            }
            if acked > 0 {
                // Fast: Scalable's 1% per RTT (Reno's one MSS below 100 segments); slow: Reno.
                let w = match self.mode {
                    Mode::Fast => st.cwnd_bytes.min(STCP_SEGMENTS_PER_INCREASE * st.mss_bytes),
                    _ => st.cwnd_bytes,
                };
                cong_avoid_ai(st, w, &mut self.ca_acc_bytes, acked);
            }
        }
        if let Some(round) = self.rtt.end_round(ack) {
            if round.samples >= MIN_ROUND_SAMPLES {
                self.on_round_end(st, round.min_rtt);
            }
        }
    }

    /// Remove only the own queue, `max(Q, cwnd/8)` but at most half, unless YeAH has
    /// been in slow mode for ρ rounds (competing with loss-based flows): then halve. A timeout is
    /// Reno's FlightSize/2.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.ca_acc_bytes = 0;
        self.fast_count = 0;
        self.reno_count = (self.reno_count / 2.0).max(MIN_WINDOW_SEGMENTS);
        if ev.kind == LossKind::Timeout {
            return halve_flight(st, ev);
        }
        let cwnd = st.cwnd_packets();
        let half = (cwnd / 2.0).max(MIN_WINDOW_SEGMENTS);
        let reduction = if self.doing_reno_now < self.rho {
            self.last_queue.min(half).max(cwnd / f64::from(1u32 << LOSS_MIN_REDUCTION_SHIFT))
        } else {
            half
        };
        let keep = (cwnd - reduction).max(MIN_WINDOW_SEGMENTS);
        (keep * st.mss_bytes as f64) as u64
    }

    /// `"slow_start"`, `"fast"` (Scalable increase) or `"slow"` (Reno increase, decongestion).
    fn mode(&self) -> &'static str {
        match self.mode {
            Mode::SlowStart => "slow_start",
            Mode::Fast => "fast",
            Mode::Slow => "slow",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vegas::test_support::{ack, PathSim, MSS};
    use crate::{Duration, SimTime};

    fn yeah(pairs: &[(&str, f64)]) -> Yeah {
        Yeah::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn fast_mode_on_an_empty_path_grows_one_percent_per_rtt() {
        let mut cc = yeah(&[]);
        let mut st = CwndState::new(300 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(ms(100), 1000);
        path.run_until(&mut cc, &mut st, 1_000_000_000);
        assert_eq!(cc.mode(), "fast");
        let w0 = st.cwnd_packets();
        path.run_until(&mut cc, &mut st, 2_000_000_000); // ten more round trips
        let w1 = st.cwnd_packets();
        // 1% per RTT compounded over ~10 RTTs: ~3 packets per RTT at 300.
        assert!(w1 / w0 > 1.07 && w1 / w0 < 1.13, "{w0} -> {w1}");
    }

    #[test]
    fn below_one_hundred_segments_fast_mode_is_at_least_reno() {
        let mut cc = yeah(&[]);
        let mut st = CwndState::new(20 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        cc.mode = Mode::Fast;
        for _ in 0..20 {
            cc.cong_avoid(&mut st, &ack(0, MSS, None, 0, 0));
        }
        assert_eq!(st.cwnd_bytes, 21 * MSS);
    }

    #[test]
    fn a_queue_beyond_the_thresholds_switches_to_slow_mode_and_decongests() {
        // 300 packets on a 150-packet path: Q ≈ 150 > Q_max = 80, L ≈ 1 > 1/8.
        let mut cc = yeah(&[]);
        let mut st = CwndState::new(300 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(ms(30), 150);
        let mut modes = Vec::new();
        while path.now_ns < 3_000_000_000 {
            path.step(&mut cc, &mut st);
            modes.push((cc.mode(), st.cwnd_packets(), cc.queue_estimate()));
        }
        assert!(cc.decongestions() >= 1);
        // The first decongestion removed the queue estimate (at most half the window).
        let first_slow = modes.iter().position(|m| m.0 == "slow").expect("slow mode");
        assert!(modes[first_slow].1 < 200.0, "{:?}", modes[first_slow]);
        // Having emptied its queue, YeAH went back to fast mode and keeps Q within [0, Q_max].
        assert!(modes[first_slow..].iter().any(|m| m.0 == "fast"));
        let tail = &modes[modes.len() / 2..];
        assert!(tail.iter().all(|m| m.2 <= 100.0), "{:?}", tail.iter().map(|m| m.2).fold(0.0, f64::max));
        assert!(!st.in_slow_start());
    }

    #[test]
    fn delay_level_alone_selects_slow_mode() {
        // A 20-packet path: a 30-packet window queues only ~10 packets (< Q_max) but the
        // queueing delay is half the base RTT (L = 0.5 > 1/8): slow mode, no decongestion.
        let mut cc = yeah(&[]);
        let mut st = CwndState::new(30 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(ms(40), 20);
        for _ in 0..300 {
            path.step(&mut cc, &mut st);
            st.cwnd_bytes = 30 * MSS;
        }
        assert_eq!(cc.mode(), "slow");
        assert_eq!(cc.decongestions(), 0);
    }

    #[test]
    fn loss_removes_the_queue_or_halves_when_competing_with_reno() {
        let ev = LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size_bytes: 0, in_flight_bytes: 0 };
        let st = CwndState::new(400 * MSS, MSS);
        let mut cc = yeah(&[]);
        cc.last_queue = 70.0;
        assert_eq!(cc.ssthresh(&st, &ev), 330 * MSS, "removes Q = 70");
        cc.last_queue = 10.0;
        assert_eq!(cc.ssthresh(&st, &ev), 350 * MSS, "at least cwnd/8 = 50");
        cc.last_queue = 300.0;
        assert_eq!(cc.ssthresh(&st, &ev), 200 * MSS, "at most half");
        cc.last_queue = 10.0;
        cc.doing_reno_now = DEFAULT_RHO as u32;
        assert_eq!(cc.ssthresh(&st, &ev), 200 * MSS, "ρ slow rounds: Reno's half");
        let t = LossEvent { kind: LossKind::Timeout, flight_size_bytes: 100 * MSS, ..ev };
        assert_eq!(cc.ssthresh(&st, &t), 50 * MSS);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Yeah::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("q_max", 0.0)]), Err(CcError::BadParam { param: "q_max", .. })));
        assert!(matches!(p(&[("phi", -1.0)]), Err(CcError::BadParam { param: "phi", .. })));
        assert!(matches!(p(&[("rho", 1.5)]), Err(CcError::BadParam { param: "rho", .. })));
        assert!(matches!(p(&[("zeta", 0.0)]), Err(CcError::BadParam { param: "zeta", .. })));
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(p(&[]).unwrap().mode(), "slow_start");
    }
}
