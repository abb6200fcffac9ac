//! H-TCP (Leith and Shorten, "H-TCP: TCP for high-speed and long-distance networks",
//! PFLDnet 2004): the `htcp` controller.
//!
//! # What it does
//!
//! AIMD whose increase depends on the time Δ since the last congestion event, and whose
//! decrease adapts to the path's buffering (Leith & Shorten 2004):
//!
//! - **Mode switch / increase function** (mode switch): `α^H(Δ) = 1` for Δ ≤ Δ_L, and
//!   `α^H(Δ) = 1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)²` for Δ > Δ_L, Δ in seconds, Δ_L = 1 s. For
//!   the first second after a congestion event H-TCP grows like Reno; after that its increase
//!   grows quadratically with time, so a flow on a large path reclaims bandwidth quickly while
//!   flows that see frequent losses (small paths) stay in the Reno-like mode.
//! - **Adaptive backoff** (adaptive backoff): on a congestion event `cwnd ← β·cwnd` with
//!   `β = RTT_min/RTT_max`, clamped to [0.5, 0.8]. With a drop-tail buffer RTT_max − RTT_min is
//!   the time to drain a full buffer, and a backoff by RTT_min/RTT_max just empties it, keeping
//!   the link busy (deep buffer → 0.5, like Reno; shallow buffer → up to 0.8).
//!   When the throughput measured just before a congestion event differs by more than
//!   Δ_B = 20% from the one before the previous event, β = 0.5 (network conditions changed: back
//!   off like Reno to let flows converge).
//! - **Increase scaling** (with the adaptive backoff): the increase actually applied is
//!   `α = 2(1 − β)·α^H(Δ)` packets per RTT, so that the flow's average share does not depend on
//!   its β (with β = 0.5, α = α^H).
//!
//! # Choices
//!
//! - RTT_min is the connection's minimum RTT; RTT_max is the largest RTT sample since the last
//!   congestion event (the current queue, not one from long ago), and is restarted at each event.
//! - The throughput B is measured per round trip (bytes acknowledged between the ACK that started
//!   the round and the one that acknowledged its last byte, over the time between them); B at a
//!   congestion event is the last completed round's. At the first congestion event there is no
//!   earlier B to compare with, so β = β_min (0.5) there, as after any detected change (unless the
//!   throughput check is off, `delta_b = 0`).
//! - Δ is measured from the start of the last congestion event (the [`LossEvent::now`] of the
//!   last ssthresh call), from the first ACK before any.
//! - The increase is counted per byte acknowledged (RFC 3465 ABC), α packets per window.
//! - The RTT-scaling option of the later H-TCP Internet-Draft (α proportional to RTT) is not part
//!   of the PFLDnet 2004 algorithm and is not implemented.

use crate::growth::PerRttIncrease;
use crate::reno::cwnd_limited_slow_start_first;
use crate::{
    AckSample, CcError, CongestionControl, CwndState, Duration, LossEvent, ParamInfo, Params,
    SimTime,
};

/// Default Δ_L, seconds (Leith & Shorten 2004, mode switch: 1 s): the Reno-like period after a
/// congestion event.
pub const DEFAULT_DELTA_L_SECS: f64 = 1.0;

/// Default lower clamp of β (adaptive backoff: 0.5, Reno's backoff).
pub const DEFAULT_BETA_MIN: f64 = 0.5;

/// Default upper clamp of β (adaptive backoff: 0.8).
pub const DEFAULT_BETA_MAX: f64 = 0.8;

/// Default Δ_B, relative throughput change that resets β to β_min (adaptive backoff: 0.2).
pub const DEFAULT_DELTA_B: f64 = 0.2;

/// Coefficient of the linear term of α^H(Δ), packets per RTT per second (mode switch: 10).
const ALPHA_LINEAR: f64 = 10.0;

/// The quadratic term of α^H(Δ) is ((Δ − Δ_L)/ALPHA_QUAD_DIVISOR)² (mode switch: 2).
const ALPHA_QUAD_DIVISOR: f64 = 2.0;

/// The `htcp` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "delta_l",
        default: DEFAULT_DELTA_L_SECS,
        doc: "Δ_L, seconds: Reno-like increase for this long after a congestion event \
              (Leith & Shorten 2004, mode switch); >= 0",
    },
    ParamInfo {
        name: "beta_min",
        default: DEFAULT_BETA_MIN,
        doc: "lower clamp of the backoff β = RTT_min/RTT_max, and β after a throughput change \
              (adaptive backoff); 0 < beta_min <= beta_max",
    },
    ParamInfo {
        name: "beta_max",
        default: DEFAULT_BETA_MAX,
        doc: "upper clamp of the backoff β (adaptive backoff); beta_min <= beta_max < 1",
    },
    ParamInfo {
        name: "delta_b",
        default: DEFAULT_DELTA_B,
        doc: "Δ_B, relative change of the throughput between congestion events above which β = \
              beta_min (adaptive backoff); > 0, or 0 to disable the check",
    },
    ParamInfo {
        name: "adaptive_backoff",
        default: 1.0,
        doc: "adaptive backoff β = RTT_min/RTT_max (Leith & Shorten 2004): 1 = on, \
              0 = off (β = beta_min always)",
    },
];

/// The parameter names [`Htcp::new`] accepts.
const PARAM_NAMES: &[&str] = &["delta_l", "beta_min", "beta_max", "delta_b", "adaptive_backoff"];

/// The per-round throughput measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Round {
    /// The round ends when snd_una reaches this.
    end_seq: u64,
    /// When the round started.
    start: SimTime,
    /// Bytes acknowledged in the round so far.
    bytes: u64,
}

/// The H-TCP congestion controller (Leith & Shorten 2004).
#[derive(Clone, Debug)]
pub struct Htcp {
    delta_l_secs: f64,
    beta_min: f64,
    beta_max: f64,
    delta_b: f64,
    adaptive_backoff: bool,
    /// The current backoff factor β (the one the next α scaling uses).
    beta: f64,
    /// Start of the last congestion event; the first ACK's time before any.
    last_event: Option<SimTime>,
    /// Largest RTT sample since the last congestion event.
    rtt_max: Option<Duration>,
    /// Smallest RTT sample of the connection.
    rtt_min: Option<Duration>,
    round: Option<Round>,
    /// Throughput of the last completed round, bytes/s.
    last_round_bps: Option<f64>,
    /// B(k): throughput just before the previous congestion event, bytes/s.
    throughput_at_last_event: Option<f64>,
    growth: PerRttIncrease,
}

impl Htcp {
    /// An H-TCP controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`], or [`CcError::BadParam`] for a value outside its range.
    pub fn new(params: &Params) -> Result<Htcp, CcError> {
        params.expect_only("htcp", PARAM_NAMES)?;
        let delta_l_secs = params.get_or("delta_l", DEFAULT_DELTA_L_SECS);
        if !(delta_l_secs.is_finite() && delta_l_secs >= 0.0) {
            return Err(bad("delta_l", delta_l_secs, "must be a finite number >= 0"));
        }
        let beta_min = params.get_or("beta_min", DEFAULT_BETA_MIN);
        if !(beta_min > 0.0 && beta_min < 1.0) {
            return Err(bad("beta_min", beta_min, "must be strictly between 0 and 1"));
        }
        let beta_max = params.get_or("beta_max", DEFAULT_BETA_MAX);
        if !(beta_max >= beta_min && beta_max < 1.0) {
            return Err(bad("beta_max", beta_max, "must be >= beta_min and < 1"));
        }
        let delta_b = params.get_or("delta_b", DEFAULT_DELTA_B);
        if !(delta_b.is_finite() && delta_b >= 0.0) {
            return Err(bad("delta_b", delta_b, "must be a finite number >= 0 (0 = off)"));
        }
        let v = params.get_or("adaptive_backoff", 1.0);
        let adaptive_backoff = if v == 1.0 {
            true
        } else if v == 0.0 {
            false
        } else {
            return Err(bad("adaptive_backoff", v, "must be 0 (off) or 1 (on)"));
        };
        Ok(Htcp {
            delta_l_secs,
            beta_min,
            beta_max,
            delta_b,
            adaptive_backoff,
            beta: beta_min,
            last_event: None,
            rtt_max: None,
            rtt_min: None,
            round: None,
            last_round_bps: None,
            throughput_at_last_event: None,
            growth: PerRttIncrease::new(),
        })
    }

    /// α^H(Δ), packets per RTT (mode switch): 1 for Δ ≤ Δ_L, else
    /// `1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)²`; `delta_secs` is Δ in seconds.
    pub fn alpha_h(&self, delta_secs: f64) -> f64 {
        let d = delta_secs - self.delta_l_secs;
        if d <= 0.0 {
            1.0
        } else {
            1.0 + ALPHA_LINEAR * d + (d / ALPHA_QUAD_DIVISOR).powi(2)
        }
    }

    /// The increase applied, packets per RTT (adaptive backoff): `2(1 − β)·α^H(Δ)`.
    pub fn alpha(&self, delta_secs: f64) -> f64 {
        2.0 * (1.0 - self.beta) * self.alpha_h(delta_secs)
    }

    /// The backoff factor from the RTTs (adaptive backoff): RTT_min/RTT_max clamped to
    /// [β_min, β_max]; β_min when either is unknown or adaptive backoff is off.
    pub fn beta_from_rtts(&self, rtt_min: Option<Duration>, rtt_max: Option<Duration>) -> f64 {
        match (self.adaptive_backoff, rtt_min, rtt_max) {
            (true, Some(lo), Some(hi)) if hi.as_nanos() > 0 => {
                (lo.as_secs_f64() / hi.as_secs_f64()).clamp(self.beta_min, self.beta_max)
            }
            _ => self.beta_min,
        }
    }

    /// The backoff factor β currently in force.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Per-round throughput bookkeeping (every state).
    fn track_round(&mut self, ack: &AckSample) {
        match self.round.as_mut() {
            None => {
                self.round = Some(Round { end_seq: ack.snd_nxt, start: ack.now, bytes: 0 });
            }
            Some(r) => {
                r.bytes += ack.bytes_acked;
                if ack.snd_una >= r.end_seq {
                    let secs = ack.now.saturating_since(r.start).as_secs_f64();
                    if secs > 0.0 && r.bytes > 0 {
                        self.last_round_bps = Some(r.bytes as f64 / secs);
                    }
                    *r = Round { end_seq: ack.snd_nxt, start: ack.now, bytes: 0 };
                }
            }
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    /// RTT_min, RTT_max and the per-round throughput, from every ACK.
    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        if self.last_event.is_none() {
            self.last_event = Some(ack.now);
        }
        if let Some(rtt) = ack.rtt {
            self.rtt_max = Some(self.rtt_max.map_or(rtt, |m| m.max(rtt)));
            self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
        }
        if let Some(m) = ack.min_rtt {
            self.rtt_min = Some(self.rtt_min.map_or(m, |x| x.min(m)));
        }
        self.track_round(ack);
    }

    /// Slow start below ssthresh; above it α = 2(1 − β)·α^H(Δ) packets per RTT.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let Some(acked) = cwnd_limited_slow_start_first(st, ack) else {
            return;
        };
        let since = self.last_event.map_or(0.0, |t| ack.now.saturating_since(t).as_secs_f64());
        let alpha = self.alpha(since);
        self.growth.apply(st, alpha, acked);
    }

    /// β from RTT_min/RTT_max (or β_min after a throughput change of more than Δ_B, and at the
    /// first event); returns β·cwnd (at least 2 MSS). Δ and RTT_max restart.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        let b_now = self.last_round_bps;
        let changed = self.delta_b > 0.0
            && match (self.throughput_at_last_event, b_now) {
                (Some(prev), Some(now)) if prev > 0.0 => ((now - prev) / prev).abs() > self.delta_b,
                _ => true,
            };
        self.beta =
            if changed { self.beta_min } else { self.beta_from_rtts(self.rtt_min, self.rtt_max) };
        if b_now.is_some() {
            self.throughput_at_last_event = b_now;
        }
        self.last_event = Some(ev.now);
        self.rtt_max = None;
        self.growth.reset();
        ((st.cwnd_bytes as f64 * self.beta) as u64).max(2 * st.mss_bytes)
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "htcp", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growth::testing::{ack, ca_state, MSS};
    use crate::LossKind;

    fn htcp(pairs: &[(&str, f64)]) -> Htcp {
        Htcp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn secs(s: f64) -> SimTime {
        SimTime((s * 1e9) as u64)
    }

    fn event(now: SimTime, st: &CwndState) -> LossEvent {
        LossEvent {
            now,
            kind: LossKind::FastRetransmit,
            flight_size_bytes: st.cwnd_bytes,
            in_flight_bytes: st.cwnd_bytes,
        }
    }

    /// A window-limited flow's ACK clock for `pkts_acked`: rounds of `w` one-MSS ACKs spread
    /// over `rtt`, with snd_una/snd_nxt advancing so that rounds are recognised.
    struct Clock {
        now: SimTime,
        una: u64,
    }

    impl Clock {
        fn rounds(&mut self, cc: &mut Htcp, st: &mut CwndState, rtt: Duration, w: u64, n: u64) {
            for _ in 0..n * w {
                self.now += Duration(rtt.as_nanos() / w);
                self.una += MSS;
                let mut a = ack(self.now, MSS, rtt);
                a.snd_una = self.una;
                a.snd_nxt = self.una + w * MSS;
                cc.pkts_acked(st, &a);
            }
        }
    }

    #[test]
    fn alpha_follows_the_time_since_the_last_congestion_event() {
        let cc = htcp(&[]);
        // Δ ≤ Δ_L: Reno-like.
        for d in [0.0, 0.5, 1.0] {
            assert_eq!(cc.alpha_h(d), 1.0);
        }
        // α^H = 1 + 10(Δ − 1) + ((Δ − 1)/2)².
        for (d, want) in [(1.5, 6.0625), (2.0, 11.25), (3.0, 22.0), (5.0, 45.0), (11.0, 126.0)] {
            assert!((cc.alpha_h(d) - want).abs() < 1e-12, "α^H({d}) = {}", cc.alpha_h(d));
        }
        // Strictly increasing past Δ_L.
        let mut prev = 1.0;
        for i in 1..100 {
            let a = cc.alpha_h(1.0 + i as f64 * 0.1);
            assert!(a > prev);
            prev = a;
        }
        // Scaled by 2(1 − β): β = 0.5 leaves it unchanged.
        assert_eq!(cc.beta(), 0.5);
        assert_eq!(cc.alpha(3.0), 22.0);
        let cc = htcp(&[("delta_l", 2.0)]);
        assert_eq!(cc.alpha_h(2.0), 1.0);
        assert!((cc.alpha_h(4.0) - 22.0).abs() < 1e-12);
    }

    #[test]
    fn window_growth_per_rtt_follows_alpha_of_delta() {
        let mut cc = htcp(&[]);
        let mut st = ca_state(1000);
        let rtt = ms(100);
        // A congestion event at t = 0 (β = 0.5 at the first one), then measure growth over the
        // RTT that starts at t.
        cc.ssthresh(&st, &event(SimTime::ZERO, &st));
        st = ca_state(1000);
        for t in [0.2, 2.0, 4.0] {
            let before = st.cwnd_packets();
            let start = secs(t);
            let n = st.cwnd_bytes / MSS;
            for i in 0..n {
                let now = start + Duration(rtt.as_nanos() * i / n);
                cc.cong_avoid(&mut st, &ack(now, MSS, rtt));
            }
            let grown = st.cwnd_packets() - before;
            let expect = cc.alpha(t + 0.05);
            assert!(
                (grown - expect).abs() < 0.05 * expect + 0.05,
                "t = {t}: grew {grown:.2}, α ≈ {expect:.2}"
            );
        }
    }

    #[test]
    fn beta_is_rtt_min_over_rtt_max_clamped() {
        let cc = htcp(&[]);
        assert_eq!(cc.beta_from_rtts(Some(ms(100)), Some(ms(400))), 0.5);
        assert_eq!(cc.beta_from_rtts(Some(ms(100)), Some(ms(200))), 0.5);
        assert!((cc.beta_from_rtts(Some(ms(100)), Some(ms(150))) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(cc.beta_from_rtts(Some(ms(100)), Some(ms(110))), 0.8);
        assert_eq!(cc.beta_from_rtts(None, Some(ms(110))), 0.5);
        let off = htcp(&[("adaptive_backoff", 0.0)]);
        assert_eq!(off.beta_from_rtts(Some(ms(100)), Some(ms(110))), 0.5);
    }

    #[test]
    fn backoff_adapts_to_the_queue_seen_since_the_last_event() {
        let mut cc = htcp(&[]);
        let mut st = ca_state(100);
        let mut c = Clock { now: SimTime::ZERO, una: 0 };
        // 100 packets per round; the RTT swings from 100 to 125 ms as a queue builds.
        c.rounds(&mut cc, &mut st, ms(100), 100, 3);
        c.rounds(&mut cc, &mut st, ms(125), 100, 1);
        // First event: no earlier throughput to compare with → β_min.
        let ss = cc.ssthresh(&st, &event(c.now, &st));
        assert_eq!(cc.beta(), 0.5);
        assert_eq!(ss, 50 * MSS);
        // The same cycle again: same throughput, RTT_min/RTT_max = 100/125 = 0.8.
        c.rounds(&mut cc, &mut st, ms(100), 100, 3);
        c.rounds(&mut cc, &mut st, ms(125), 100, 1);
        let ss = cc.ssthresh(&st, &event(c.now, &st));
        assert!((cc.beta() - 0.8).abs() < 1e-12, "β = {}", cc.beta());
        assert_eq!(ss, 80 * MSS);
        // RTT_max restarted at the event: a 140 ms maximum now gives β = 100/140.
        c.rounds(&mut cc, &mut st, ms(100), 100, 3);
        c.rounds(&mut cc, &mut st, ms(140), 100, 1);
        cc.ssthresh(&st, &event(c.now, &st));
        assert!((cc.beta() - 100.0 / 140.0).abs() < 1e-9, "β = {}", cc.beta());
        // A deeper queue: clamped to 0.5.
        c.rounds(&mut cc, &mut st, ms(100), 100, 3);
        c.rounds(&mut cc, &mut st, ms(300), 100, 1);
        cc.ssthresh(&st, &event(c.now, &st));
        assert_eq!(cc.beta(), 0.5);
        // A shallow one: clamped to 0.8.
        c.rounds(&mut cc, &mut st, ms(100), 100, 3);
        c.rounds(&mut cc, &mut st, ms(105), 100, 1);
        cc.ssthresh(&st, &event(c.now, &st));
        assert_eq!(cc.beta(), 0.8);
        // The throughput before this event is 40% below the one before the last: conditions
        // changed, β = β_min whatever the RTTs say.
        c.rounds(&mut cc, &mut st, ms(100), 60, 3);
        c.rounds(&mut cc, &mut st, ms(105), 60, 1);
        cc.ssthresh(&st, &event(c.now, &st));
        assert_eq!(cc.beta(), 0.5);
        // Steady again at the new throughput: the RTTs decide.
        c.rounds(&mut cc, &mut st, ms(100), 60, 3);
        c.rounds(&mut cc, &mut st, ms(105), 60, 1);
        cc.ssthresh(&st, &event(c.now, &st));
        assert_eq!(cc.beta(), 0.8);
        // α scales by 2(1 − β).
        assert!((cc.alpha(3.0) - 2.0 * 0.2 * 22.0).abs() < 1e-9);

        // With the throughput check off, only the RTTs count.
        let mut cc = htcp(&[("delta_b", 0.0)]);
        let mut c = Clock { now: SimTime::ZERO, una: 0 };
        c.rounds(&mut cc, &mut st, ms(100), 100, 2);
        c.rounds(&mut cc, &mut st, ms(140), 100, 1);
        cc.ssthresh(&st, &event(c.now, &st));
        assert!((cc.beta() - 100.0 / 140.0).abs() < 1e-9, "β = {}", cc.beta());
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Htcp::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        for (name, v) in [
            ("delta_l", -1.0),
            ("beta_min", 0.0),
            ("beta_min", 1.0),
            ("beta_max", 0.4),
            ("beta_max", 1.0),
            ("delta_b", -0.1),
            ("adaptive_backoff", 0.5),
        ] {
            match p(&[(name, v)]) {
                Err(CcError::BadParam { flavor: "htcp", param, .. }) => assert_eq!(param, name),
                other => panic!("expected BadParam for {name} = {v}, got {other:?}"),
            }
        }
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { .. })));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
        assert_eq!(htcp(&[]).name(), "htcp");
    }
}
