//! TCP Vegas (Brakmo and Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global
//! Internet", IEEE JSAC 13(8), 1995): the `vegas` controller, and [`RoundRtt`], the once-per-RTT
//! measurement that Veno, YeAH, Compound, NV, CDG and FAST reuse.
//!
//! # What it does
//!
//! Vegas compares the rate it expects, `Expected = cwnd / BaseRTT`, with the rate it gets,
//! `Actual = cwnd / RTT`, once per round trip, and turns the difference into the number of its own
//! packets sitting in queues: `Diff = (Expected − Actual) · BaseRTT = cwnd · (1 − BaseRTT/RTT)`
//! (§3.2, in packets).
//!
//! - **Congestion avoidance** (§3.2): if `Diff < α` cwnd grows by one MSS over the next RTT; if
//!   `Diff > β` it shrinks by one MSS; otherwise it stays. Vegas thereby keeps between α and β
//!   packets queued at the bottleneck.
//! - **Slow start** (§3.3): exponential growth only every other RTT; in the RTT in between the
//!   window is held so that Expected and Actual are measured on a fixed window. When `Diff > γ`
//!   at the end of such a round Vegas leaves slow start, trimming cwnd by one eighth.
//! - **Loss** (§3.1): a fast retransmit reduces cwnd by one quarter (not Reno's half); a timeout
//!   falls back to Reno (`ssthresh = FlightSize/2`, slow start from one segment).
//!
//! # Choices and simplifications
//!
//! - *RTT of a round*: the paper times one distinguished segment per RTT; ccarena uses the
//!   **minimum** Karn-valid RTT sample of the round (as Linux's tcp_vegas does). The minimum
//!   ignores the occasional ACK held back by the receiver's delayed-ACK timer, which would
//!   otherwise read as several packets of queue.
//! - *BaseRTT* is the smallest RTT sample of the connection.
//! - A round with fewer than [`MIN_ROUND_SAMPLES`] RTT samples (a window of a few segments, whose
//!   delayed ACKs make the minimum meaningless) is governed by Reno's rules for its successor, as
//!   Linux does.
//! - The one-MSS increase is spread over the round with Reno's byte-counting additive increase
//!   ([`crate::reno::cong_avoid_ai`]); the one-MSS decrease is applied when the round ends.
//! - Vegas's own fine-grained retransmission timer (§3.1) belongs to loss recovery, which lives in
//!   the transport; it is not modelled here.
//! - Vegas runs only in the `Open` state; in the other states (and in rounds that began in them)
//!   Reno's growth rules apply, and the measurement restarts when the connection is Open again.

use crate::reno::{cong_avoid_ai, grow, halve_flight, slow_start};
use crate::{
    AckSample, CaState, CcError, CongestionControl, CwndState, Duration, LossEvent, LossKind,
    ParamInfo, Params, SimTime,
};

/// Default α, packets: below this many queued packets Vegas increases (§3.2).
pub const DEFAULT_ALPHA: f64 = 2.0;

/// Default β, packets: above this many queued packets Vegas decreases (§3.2).
pub const DEFAULT_BETA: f64 = 4.0;

/// Default γ, packets: slow start ends when Diff exceeds it (§3.3).
pub const DEFAULT_GAMMA: f64 = 1.0;

/// Default fraction of cwnd removed by a fast retransmit: one quarter (§3.1).
pub const DEFAULT_LOSS_DECREASE: f64 = 0.25;

/// When slow start ends, cwnd is reduced by cwnd / SLOW_START_EXIT_DIVISOR (one eighth, §3.3):
/// the doubling round overshot by up to a window.
const SLOW_START_EXIT_DIVISOR: u64 = 8;

/// A round needs this many RTT samples before its minimum is trusted (fewer: Reno's rules).
pub const MIN_ROUND_SAMPLES: u32 = 3;

/// Vegas never shrinks cwnd below this many segments by its own rules.
const MIN_CWND_SEGMENTS: u64 = 2;

/// The `vegas` flavor's tunable parameters, with defaults.
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "alpha",
        default: DEFAULT_ALPHA,
        doc: "α, packets: increase cwnd by one MSS per RTT while Diff = cwnd(1 - BaseRTT/RTT) < α \
              (Brakmo & Peterson 1995 §3.2); 0 <= alpha <= beta",
    },
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "β, packets: decrease cwnd by one MSS per RTT while Diff > β (§3.2); beta >= alpha",
    },
    ParamInfo {
        name: "gamma",
        default: DEFAULT_GAMMA,
        doc: "γ, packets: leave slow start when Diff > γ (§3.3); >= 0",
    },
    ParamInfo {
        name: "loss_decrease",
        default: DEFAULT_LOSS_DECREASE,
        doc: "fraction of cwnd removed by a fast retransmit (§3.1: one quarter; Reno: 0.5); \
              0 < loss_decrease < 1",
    },
];

const PARAM_NAMES: &[&str] = &["alpha", "beta", "gamma", "loss_decrease"];

/// Statistics of one finished round (one RTT's worth of ACKs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    /// Smallest RTT sample of the round (`Duration::MAX` when `samples == 0`).
    pub min_rtt: Duration,
    /// Largest RTT sample of the round (zero when `samples == 0`).
    pub max_rtt: Duration,
    /// Number of RTT samples in the round.
    pub samples: u32,
    /// Time from the ACK that began the round to the ACK that ended it.
    pub duration: Duration,
    /// Bytes newly delivered by the ACKs after the one that began the round, up to and including
    /// the one that ended it: what the path delivered during `duration`.
    pub acked_bytes: u64,
}

/// Once-per-RTT measurement, as Vegas does it (§3.2; Linux's `beg_snd_nxt`): a round begins at an
/// ACK by remembering snd.nxt, and ends at the first ACK whose snd.una reaches that mark, i.e. once
/// everything that was in flight when it began has been acknowledged. Also tracks BaseRTT, the
/// smallest RTT sample of the connection.
///
/// Feed every ACK that delivers data to [`RoundRtt::on_ack`], then ask [`RoundRtt::end_round`]
/// whether that ACK ended the round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundRtt {
    base_rtt: Option<Duration>,
    /// snd.nxt when the current round began; `None` when no round is under way.
    end_seq: Option<u64>,
    started_at: SimTime,
    min_rtt: Duration,
    max_rtt: Duration,
    samples: u32,
    acked_bytes: u64,
}

impl Default for RoundRtt {
    fn default() -> Self {
        RoundRtt::new()
    }
}

impl RoundRtt {
    /// No samples, no round under way.
    pub fn new() -> RoundRtt {
        RoundRtt {
            base_rtt: None,
            end_seq: None,
            started_at: SimTime::ZERO,
            min_rtt: Duration::MAX,
            max_rtt: Duration::ZERO,
            samples: 0,
            acked_bytes: 0,
        }
    }

    /// BaseRTT: the smallest RTT sample so far, if any.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    /// Forget BaseRTT (after a route change or a long idle period).
    pub fn reset_base(&mut self) {
        self.base_rtt = None;
    }

    /// Account one ACK: its RTT sample (if any) and bytes; begins a round if none is under way.
    pub fn on_ack(&mut self, ack: &AckSample) {
        if let Some(rtt) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
        }
        if self.end_seq.is_none() {
            self.begin(ack);
        } else {
            self.acked_bytes += ack.bytes_acked;
        }
        if let Some(rtt) = ack.rtt {
            self.min_rtt = self.min_rtt.min(rtt);
            self.max_rtt = self.max_rtt.max(rtt);
            self.samples += 1;
        }
    }

    /// If `ack` (already passed to [`RoundRtt::on_ack`]) ends the current round, return its
    /// statistics and begin the next round at this ACK.
    pub fn end_round(&mut self, ack: &AckSample) -> Option<Round> {
        let end = self.end_seq?;
        if ack.snd_una < end {
            return None;
        }
        let round = Round {
            min_rtt: self.min_rtt,
            max_rtt: self.max_rtt,
            samples: self.samples,
            duration: ack.now.saturating_since(self.started_at),
            acked_bytes: self.acked_bytes,
        };
        self.begin(ack);
        Some(round)
    }

    /// Abandon the current round (its samples are not reported); the next ACK begins a new one.
    pub fn restart(&mut self) {
        self.end_seq = None;
    }

    fn begin(&mut self, ack: &AckSample) {
        self.end_seq = Some(ack.snd_nxt);
        self.started_at = ack.now;
        self.min_rtt = Duration::MAX;
        self.max_rtt = Duration::ZERO;
        self.samples = 0;
        self.acked_bytes = 0;
    }
}

/// Packets of a window of `cwnd_packets` queued along the path when the round's RTT is `rtt` and
/// the path's is `base`: `cwnd · (1 − base/rtt)` (Vegas's Diff, §3.2). Zero if `rtt ≤ base`.
pub fn queued_packets(cwnd_packets: f64, base: Duration, rtt: Duration) -> f64 {
    if rtt <= base || rtt.as_nanos() == 0 {
        return 0.0;
    }
    cwnd_packets * (1.0 - base.as_nanos() as f64 / rtt.as_nanos() as f64)
}

/// What the window does until the next round ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Slow start, a growth round: Reno slow start on every ACK.
    SlowStartGrow,
    /// Slow start, a measurement round: the window is held.
    SlowStartHold,
    /// Congestion avoidance, Diff < α: one MSS over this round.
    Increase,
    /// Congestion avoidance, α ≤ Diff ≤ β (or just decreased): hold.
    Hold,
    /// Not enough samples, or not Open: Reno's rules.
    Reno,
}

impl VegasPlan for Plan {
    const RENO: Plan = Plan::Reno;
}

impl Plan {
    fn name(self) -> &'static str {
        match self {
            Plan::SlowStartGrow | Plan::SlowStartHold => "slow_start",
            Plan::Increase => "increase",
            Plan::Hold => "hold",
            Plan::Reno => "reno",
        }
    }
}

/// The TCP Vegas controller. See the module documentation.
#[derive(Clone, Debug)]
pub struct Vegas {
    alpha: f64,
    beta: f64,
    gamma: f64,
    loss_decrease: f64,
    frame: VegasFrame<Plan>,
    /// The last round's Diff, packets (for inspection and tests).
    last_diff: Option<f64>,
}

impl Vegas {
    /// A Vegas controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] when a value
    /// is out of range (`0 ≤ α ≤ β`, `γ ≥ 0`, `0 < loss_decrease < 1`).
    pub fn new(params: &Params) -> Result<Vegas, CcError> {
        params.expect_only("vegas", PARAM_NAMES)?;
        let bad = |param, value, reason| CcError::BadParam { flavor: "vegas", param, value, reason };
        let alpha = params.get_or("alpha", DEFAULT_ALPHA);
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(bad("alpha", alpha, "must be a finite number >= 0"));
        }
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta.is_finite() && beta >= alpha) {
            return Err(bad("beta", beta, "must be a finite number >= alpha"));
        }
        let gamma = params.get_or("gamma", DEFAULT_GAMMA);
        if !(gamma.is_finite() && gamma >= 0.0) {
            return Err(bad("gamma", gamma, "must be a finite number >= 0"));
        }
        let loss_decrease = params.get_or("loss_decrease", DEFAULT_LOSS_DECREASE);
        if !(loss_decrease > 0.0 && loss_decrease < 1.0) {
            return Err(bad("loss_decrease", loss_decrease, "must be strictly between 0 and 1"));
        }
        Ok(Vegas {
            alpha,
            beta,
            gamma,
            loss_decrease,
            frame: VegasFrame::new(Plan::SlowStartGrow),
            last_diff: None,
        })
    }

    /// Diff of the last round that had enough samples, packets.
    pub fn last_diff(&self) -> Option<f64> {
        self.last_diff
    }
}

/// A plan of the Vegas family (Vegas's, wVegas's): what the window does until the next round ends.
pub(crate) trait VegasPlan: Copy {
    /// Reno's rules: before a round with enough samples ends, outside `Open`, after a loss.
    const RENO: Self;
}

/// The state Vegas keeps around its per-round plan `P`, shared by the Vegas family (Vegas,
/// wVegas) by composition, as Linux's YeAH calls `tcp_vegas_*` rather than copying them.
#[derive(Clone, Debug)]
pub(crate) struct VegasFrame<P> {
    /// The once-per-RTT measurement and BaseRTT (§3.2).
    pub(crate) rtt: RoundRtt,
    /// What the window does until the next round ends.
    pub(crate) plan: P,
    /// Vegas's rules apply (the connection is Open).
    pub(crate) enabled: bool,
    /// Bytes ACKed toward the next one-MSS increase of Reno's and Vegas's additive increase.
    pub(crate) ca_acc_bytes: u64,
}

impl<P: VegasPlan> VegasFrame<P> {
    /// A new connection's: Vegas's rules on, starting with `plan`.
    pub(crate) fn new(plan: P) -> VegasFrame<P> {
        VegasFrame { rtt: RoundRtt::new(), plan, enabled: true, ca_acc_bytes: 0 }
    }

    /// Reno's growth for one ACK of `bytes_acked` bytes (slow start, then one MSS per window).
    #[inline]
    pub(crate) fn reno_growth(&mut self, st: &mut CwndState, bytes_acked: u64) {
        grow(st, &mut self.ca_acc_bytes, bytes_acked);
    }

    /// Vegas's increase for one ACK of `bytes_acked` bytes (§3.2, Diff < α): one MSS over a
    /// round, by Reno's additive-increase counter.
    #[inline]
    pub(crate) fn increase(&mut self, st: &mut CwndState, bytes_acked: u64) {
        let w = st.cwnd_bytes;
        cong_avoid_ai(st, w, &mut self.ca_acc_bytes, bytes_acked);
    }

    /// A congestion event: the additive increase restarts and Reno's rules apply until a round
    /// is measured.
    #[inline]
    pub(crate) fn on_loss(&mut self) {
        self.ca_acc_bytes = 0;
        self.plan = P::RENO;
    }

    /// Linux's `tcp_vegas_state`: Vegas's rules run only in `Open`; on returning to it the
    /// measurement restarts, and Reno's rules apply until a round is measured.
    #[inline]
    pub(crate) fn set_state(&mut self, new: CaState) {
        let enabled = new == CaState::Open;
        if enabled && !self.enabled {
            self.rtt.restart();
            self.plan = P::RENO;
        }
        self.enabled = enabled;
    }
}

/// A controller of the Vegas family: its [`VegasFrame`] and the two rules of its own that
/// [`vegas_cong_avoid`] runs, the growth on an ACK and the plan decided when a round ends.
pub(crate) trait VegasRules<P: VegasPlan> {
    /// The controller's Vegas state.
    fn frame(&mut self) -> &mut VegasFrame<P>;
    /// Growth for one cwnd-limited ACK of `bytes_acked` bytes under the current plan.
    fn grow(&mut self, st: &mut CwndState, bytes_acked: u64);
    /// Decide the next round's plan from `round`, which just ended with enough RTT samples;
    /// `base` is BaseRTT.
    fn on_round_end(&mut self, st: &mut CwndState, round: &Round, base: Duration);
}

/// Vegas's `cong_avoid` (§3.2, §3.3; Linux's `tcp_vegas_cong_avoid`) around `cc`'s own rules:
/// Reno's growth while Vegas's rules are off; otherwise the ACK first grows by the plan of the
/// round it belongs to, then, if it ends that round, the next round's plan is decided. A round of
/// fewer than [`MIN_ROUND_SAMPLES`] RTT samples (Linux: `cnt_rtt <= 2`), or with no BaseRTT yet,
/// is followed by Reno's rules.
#[inline]
pub(crate) fn vegas_cong_avoid<P: VegasPlan, C: VegasRules<P>>(cc: &mut C, st: &mut CwndState, ack: &AckSample) {
    if !cc.frame().enabled {
        if ack.cwnd_limited {
            cc.frame().reno_growth(st, ack.bytes_acked);
        }
        return;
    }
    // This ACK still belongs to the round it may end: grow by that round's plan first.
    if ack.cwnd_limited {
        cc.grow(st, ack.bytes_acked);
    }
    if let Some(round) = cc.frame().rtt.end_round(ack) {
        match cc.frame().rtt.base_rtt() {
            Some(base) if round.samples >= MIN_ROUND_SAMPLES => cc.on_round_end(st, &round, base),
            _ => cc.frame().plan = P::RENO,
        }
    }
}

impl VegasRules<Plan> for Vegas {
    #[inline]
    fn frame(&mut self) -> &mut VegasFrame<Plan> {
        &mut self.frame
    }

    /// Decide the next round's plan from the round that just ended (§3.2, §3.3).
    fn on_round_end(&mut self, st: &mut CwndState, round: &Round, base: Duration) {
        let mss = st.mss_bytes;
        let diff = queued_packets(st.cwnd_packets(), base, round.min_rtt);
        self.last_diff = Some(diff);
        if st.in_slow_start() {
            self.frame.plan = match self.frame.plan {
                // A growth round ended: hold the window for one round and measure.
                Plan::SlowStartGrow => Plan::SlowStartHold,
                // A measurement round ended (or Vegas just took over): decide.
                _ if diff > self.gamma => {
                    let cut = st.cwnd_bytes / SLOW_START_EXIT_DIVISOR;
                    st.cwnd_bytes = (st.cwnd_bytes - cut).max(MIN_CWND_SEGMENTS * mss);
                    st.ssthresh_bytes = st.cwnd_bytes;
                    Plan::Hold
                }
                _ => Plan::SlowStartGrow,
            };
            return;
        }
        self.frame.plan = if diff > self.beta {
            st.cwnd_bytes = st.cwnd_bytes.saturating_sub(mss).max(MIN_CWND_SEGMENTS * mss);
            Plan::Hold
        } else if diff < self.alpha {
            Plan::Increase
        } else {
            Plan::Hold
        };
    }

    /// Window growth for one cwnd-limited ACK under the current plan.
    fn grow(&mut self, st: &mut CwndState, bytes_acked: u64) {
        match self.frame.plan {
            Plan::SlowStartGrow => {
                if st.in_slow_start() {
                    slow_start(st, bytes_acked);
                }
            }
            Plan::Increase => self.frame.increase(st, bytes_acked),
            Plan::SlowStartHold | Plan::Hold => {}
            Plan::Reno => self.frame.reno_growth(st, bytes_acked),
        }
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn pkts_acked(&mut self, _st: &mut CwndState, ack: &AckSample) {
        self.frame.rtt.on_ack(ack);
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        vegas_cong_avoid(self, st, ack);
    }


    /// §3.1: a fast retransmit (or an ECN echo, treated alike) removes `loss_decrease` of cwnd;
    /// a timeout is Reno's `FlightSize/2`.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.frame.on_loss();
        match ev.kind {
            LossKind::Timeout => halve_flight(st, ev),
            LossKind::FastRetransmit | LossKind::Ecn => {
                let keep = st.cwnd_bytes as f64 * (1.0 - self.loss_decrease);
                (keep as u64).max(MIN_CWND_SEGMENTS * st.mss_bytes)
            }
        }
    }

    /// Vegas's rules run only in `Open`; the measurement restarts on returning to it.
    fn set_state(&mut self, _st: &mut CwndState, new: CaState, _now: SimTime) {
        self.frame.set_state(new);
    }

    /// `"slow_start"`, `"increase"`, `"hold"` or `"reno"`: the rule for the current round.
    fn mode(&self) -> &'static str {
        if self.frame.enabled {
            self.frame.plan.name()
        } else {
            "reno"
        }
    }
}

/// ACK builders and a small path model shared by the delay-based controllers' unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::VecDeque;

    use crate::{AckSample, CaState, CongestionControl, CwndState, Duration, SimTime};

    /// MSS used by the unit tests, bytes.
    pub const MSS: u64 = 1448;

    /// An Open-state, cwnd-limited ACK at `now_ns` delivering `bytes`, with an RTT sample of
    /// `rtt` (one-way delay `rtt / 2`), snd.una and snd.nxt as given.
    pub fn ack(now_ns: u64, bytes: u64, rtt: Option<Duration>, snd_una: u64, snd_nxt: u64) -> AckSample {
        AckSample {
            now: SimTime(now_ns),
            bytes_acked: bytes,
            rtt,
            min_rtt: rtt,
            srtt: rtt,
            one_way_delay: rtt.map(|r| Duration(r.as_nanos() / 2)),
            prior_in_flight_bytes: snd_nxt - snd_una + bytes,
            in_flight_bytes: snd_nxt - snd_una,
            snd_una,
            snd_nxt,
            ece: false,
            ce_bytes: 0,
            cwnd_limited: true,
            state: CaState::Open,
        }
    }

    /// A window-limited bulk sender over one bottleneck with an infinite FIFO queue: each MSS
    /// segment takes `pkt_ns` to serialize at the bottleneck, then `base_ns` more (propagation
    /// there and back) until its ACK arrives. The receiver acknowledges every second segment.
    /// BDP = `base_ns / pkt_ns` packets; RTT = `base_ns` + service + queueing.
    pub struct PathSim {
        pub base_ns: u64,
        pub pkt_ns: u64,
        pub now_ns: u64,
        pub snd_una: u64,
        pub snd_nxt: u64,
        busy_until: u64,
        /// (end seq, send time, ACK arrival time) of segments in flight.
        flight: VecDeque<(u64, u64, u64)>,
        /// Min, max and last RTT seen (ns).
        pub last_rtt_ns: u64,
    }

    impl PathSim {
        /// A path of `bdp_packets` packets over `base` (propagation round trip).
        pub fn new(base: Duration, bdp_packets: u64) -> PathSim {
            PathSim {
                base_ns: base.as_nanos(),
                pkt_ns: base.as_nanos() / bdp_packets,
                now_ns: 0,
                snd_una: 0,
                snd_nxt: 0,
                busy_until: 0,
                flight: VecDeque::new(),
                last_rtt_ns: 0,
            }
        }

        /// Packets waiting in the bottleneck queue now (not counting the one in service).
        pub fn queue_packets(&self) -> u64 {
            self.flight
                .iter()
                .filter(|(_, _, ack_at)| ack_at.saturating_sub(self.base_ns) > self.now_ns + self.pkt_ns)
                .count() as u64
        }

        /// Send what the window allows, then deliver the next ACK to `cc`; returns it.
        pub fn step(&mut self, cc: &mut dyn CongestionControl, st: &mut CwndState) -> AckSample {
            while self.snd_nxt + MSS <= self.snd_una + st.cwnd_bytes.max(MSS) {
                let depart = self.now_ns.max(self.busy_until) + self.pkt_ns;
                self.busy_until = depart;
                self.snd_nxt += MSS;
                self.flight.push_back((self.snd_nxt, self.now_ns, depart + self.base_ns));
            }
            let n = if self.flight.len() >= 2 { 2 } else { 1 };
            let mut last = (0, 0, 0);
            for _ in 0..n {
                last = self.flight.pop_front().expect("something in flight");
            }
            let (end, sent, ack_at) = last;
            self.now_ns = ack_at;
            let bytes = end - self.snd_una;
            self.snd_una = end;
            let rtt = Duration(ack_at - sent);
            self.last_rtt_ns = rtt.as_nanos();
            let mut a = ack(self.now_ns, bytes, Some(rtt), self.snd_una, self.snd_nxt);
            // One-way delay: half the propagation plus the whole queueing and service time.
            a.one_way_delay = Some(Duration(rtt.as_nanos() - self.base_ns / 2));
            a.prior_in_flight_bytes = self.snd_nxt - self.snd_una + bytes;
            cc.pkts_acked(st, &a);
            cc.cong_avoid(st, &a);
            a
        }

        /// Deliver ACKs until `until_ns`.
        pub fn run_until(&mut self, cc: &mut dyn CongestionControl, st: &mut CwndState, until_ns: u64) {
            while self.now_ns < until_ns {
                self.step(cc, st);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{ack, PathSim, MSS};
    use super::*;

    fn vegas(pairs: &[(&str, f64)]) -> Vegas {
        Vegas::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn round_rtt_reports_min_max_and_delivery_over_one_round() {
        let mut r = RoundRtt::new();
        // First ACK begins the round with mark 10 000.
        let a = ack(1_000, 1000, Some(ms(12)), 1000, 10_000);
        r.on_ack(&a);
        assert_eq!(r.end_round(&a), None);
        let b = ack(2_000, 4000, Some(ms(10)), 5000, 12_000);
        r.on_ack(&b);
        assert_eq!(r.end_round(&b), None);
        let c = ack(5_000, 5000, Some(ms(15)), 10_000, 14_000);
        r.on_ack(&c);
        let round = r.end_round(&c).expect("snd.una reached the mark");
        assert_eq!(round.min_rtt, ms(10));
        assert_eq!(round.max_rtt, ms(15));
        assert_eq!(round.samples, 3);
        assert_eq!(round.duration, Duration(4_000));
        assert_eq!(round.acked_bytes, 9000, "bytes after the first ACK");
        assert_eq!(r.base_rtt(), Some(ms(10)));
        // The next round ends when snd.una reaches 14 000.
        let d = ack(6_000, 2000, None, 12_000, 16_000);
        r.on_ack(&d);
        assert_eq!(r.end_round(&d), None);
    }

    #[test]
    fn queued_packets_is_vegas_diff() {
        // 100 packets, RTT 125 ms over a 100 ms path: 20 packets queued.
        assert!((queued_packets(100.0, ms(100), ms(125)) - 20.0).abs() < 1e-9);
        assert_eq!(queued_packets(100.0, ms(100), ms(90)), 0.0);
    }

    #[test]
    fn settles_with_alpha_to_beta_packets_queued() {
        for (alpha, beta) in [(2.0, 4.0), (1.0, 3.0), (6.0, 8.0)] {
            let mut cc = vegas(&[("alpha", alpha), ("beta", beta)]);
            let mut st = CwndState::new(10 * MSS, MSS);
            let mut path = PathSim::new(ms(50), 100);
            path.run_until(&mut cc, &mut st, 30_000_000_000);
            let mut queues = Vec::new();
            while path.now_ns < 32_000_000_000 {
                path.step(&mut cc, &mut st);
                queues.push(path.queue_packets());
            }
            let mean = queues.iter().sum::<u64>() as f64 / queues.len() as f64;
            assert!(
                mean >= alpha - 1.0 && mean <= beta + 1.0,
                "alpha {alpha} beta {beta}: mean queue {mean:.2} packets"
            );
            assert!(!st.in_slow_start());
        }
    }

    #[test]
    fn congestion_avoidance_moves_one_mss_per_round() {
        let mut cc = vegas(&[]);
        let mut st = CwndState::new(40 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        // An empty 200-packet path: Diff ≈ 0 < α, about one MSS per round trip (50 ms).
        let mut path = PathSim::new(ms(50), 200);
        path.run_until(&mut cc, &mut st, 200_000_000);
        let w0 = st.cwnd_packets();
        path.run_until(&mut cc, &mut st, 1_200_000_000);
        let grown = st.cwnd_packets() - w0;
        assert!((17.0..=21.0).contains(&grown), "grew {grown} packets in ~20 rounds");
        assert_eq!(cc.mode(), "increase");
    }

    #[test]
    fn congestion_avoidance_decreases_one_mss_per_round_when_diff_exceeds_beta() {
        let mut cc = vegas(&[]);
        // 80 packets on a 50-packet path: ~30 queued, far above β.
        let mut st = CwndState::new(80 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        let mut path = PathSim::new(ms(50), 50);
        path.run_until(&mut cc, &mut st, 300_000_000);
        let w0 = st.cwnd_packets();
        path.run_until(&mut cc, &mut st, 1_300_000_000);
        let shrunk = w0 - st.cwnd_packets();
        // A round lasts the queued RTT (~80 ms): about 12 rounds in one second.
        assert!((9.0..=14.0).contains(&shrunk), "shrank {shrunk} packets");
    }

    #[test]
    fn slow_start_grows_every_other_round_and_exits_when_diff_exceeds_gamma() {
        // A very long path (1000 packets): slow start never sees a queue at first.
        let mut cc = vegas(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut path = PathSim::new(ms(100), 1000);
        let mut trace = Vec::new();
        for _ in 0..60 {
            path.step(&mut cc, &mut st);
            trace.push((cc.frame.plan, st.cwnd_bytes / MSS));
        }
        // Growth rounds and hold rounds alternate; the window does not change in a hold round.
        let holds: Vec<_> = trace.iter().filter(|(p, _)| *p == Plan::SlowStartHold).collect();
        assert!(!holds.is_empty());
        let mut last_plan = trace[0].0;
        let mut switches = 0;
        for w in trace.windows(2) {
            if w[1].0 == Plan::SlowStartHold && w[0].0 == Plan::SlowStartHold {
                assert_eq!(w[1].1, w[0].1, "window held in a measurement round: {trace:?}");
            }
            if w[1].0 != last_plan {
                switches += 1;
                last_plan = w[1].0;
            }
        }
        assert!(switches >= 3, "{trace:?}");
        assert!(st.in_slow_start());

        // A 30-packet path: once the held window queues more than γ, cwnd − 1/8 and CA.
        let mut cc = vegas(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut path = PathSim::new(ms(30), 30);
        let mut exit = None;
        while path.now_ns < 2_000_000_000 && exit.is_none() {
            let before = st.cwnd_bytes;
            path.step(&mut cc, &mut st);
            if !st.in_slow_start() {
                exit = Some((before, st.cwnd_bytes));
            }
        }
        let (before, after) = exit.expect("left slow start");
        assert_eq!(after, before - before / 8);
        assert_eq!(st.ssthresh_bytes, after);
        // The round minimum sees the queue only once the held window exceeds the path by γ for a
        // whole round, so the exit comes one or two doublings past the 30-packet BDP.
        assert!((31 * MSS..=4 * 30 * MSS).contains(&before), "{}", before / MSS);
    }

    #[test]
    fn fast_retransmit_removes_a_quarter_timeout_halves() {
        let mut cc = vegas(&[]);
        let st = CwndState::new(100 * MSS, MSS);
        let ev = |kind| LossEvent {
            now: SimTime::ZERO,
            kind,
            flight_size_bytes: 80 * MSS,
            in_flight_bytes: 80 * MSS,
        };
        assert_eq!(cc.ssthresh(&st, &ev(LossKind::FastRetransmit)), 75 * MSS);
        assert_eq!(cc.ssthresh(&st, &ev(LossKind::Timeout)), 40 * MSS);
        let mut reno_like = vegas(&[("loss_decrease", 0.5)]);
        assert_eq!(reno_like.ssthresh(&st, &ev(LossKind::FastRetransmit)), 50 * MSS);
    }

    #[test]
    fn outside_open_it_is_reno_and_restarts_measuring_on_return() {
        let mut cc = vegas(&[]);
        let mut st = CwndState::new(20 * MSS, MSS);
        st.ssthresh_bytes = 2 * MSS;
        cc.set_state(&mut st, CaState::Recovery, SimTime::ZERO);
        assert_eq!(cc.mode(), "reno");
        // Reno AI: one MSS per window acked.
        for i in 0..10 {
            let a = ack(i, 2 * MSS, Some(ms(10)), (i + 1) * 2 * MSS, 100 * MSS);
            cc.pkts_acked(&mut st, &a);
            cc.cong_avoid(&mut st, &a);
        }
        assert_eq!(st.cwnd_bytes, 21 * MSS);
        cc.set_state(&mut st, CaState::Open, SimTime::ZERO);
        assert_eq!(cc.mode(), "reno");
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Vegas::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        assert!(matches!(p(&[("alpha", -1.0)]), Err(CcError::BadParam { param: "alpha", .. })));
        assert!(matches!(p(&[("alpha", 3.0), ("beta", 2.0)]), Err(CcError::BadParam { param: "beta", .. })));
        assert!(matches!(p(&[("gamma", f64::NAN)]), Err(CcError::BadParam { param: "gamma", .. })));
        assert!(matches!(p(&[("loss_decrease", 1.0)]), Err(CcError::BadParam { .. })));
        assert!(matches!(p(&[("delta", 1.0)]), Err(CcError::UnknownParam { .. })));
        let cc = p(&[("alpha", 1.0), ("beta", 3.0)]).unwrap();
        assert_eq!((cc.alpha, cc.beta, cc.gamma), (1.0, 3.0, 1.0));
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
