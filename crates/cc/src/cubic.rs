//! CUBIC (RFC 9438) with HyStart++ slow start (RFC 9406): the `cubic` controller.
//!
//! # What it does
//!
//! - **Slow start** (RFC 9438 §4.10): the initial slow start runs HyStart++ (RFC 9406 §4.2):
//!   standard slow start ([`crate::reno::slow_start`], RFC 3465 ABC with L = 2) until the
//!   per-round minimum RTT rises by more than a threshold, then Conservative Slow Start (CSS,
//!   growth divided by 4) for at most 5 rounds, then congestion avoidance with ssthresh = cwnd,
//!   without any loss. Later slow starts (after an RTO) are plain RFC 5681 slow start, as RFC 9406
//!   §4.3 recommends.
//!   With `hystart = 2` the initial slow start instead ends at the first signal of the original
//!   HyStart (Ha & Rhee 2011, [`crate::hystart`]: ACK train or delay increase), straight to
//!   congestion avoidance, as Linux's `tcp_cubic` does.
//! - **Congestion avoidance** (RFC 9438 §4.2–§4.5): cwnd follows
//!   `W_cubic(t) = C·(t − K)³ + W_max` (segments, t in seconds since the congestion-avoidance
//!   epoch started), aiming one RTT ahead, unless the Reno estimate `W_est` is larger (§4.3,
//!   the Reno-friendly region).
//! - **Congestion events** (§4.6–§4.8): ssthresh = β·cwnd, W_max remembered with fast
//!   convergence, the epoch restarted; after an RTO the next epoch starts with K = 0.
//! - **Spurious events** (§4.9): the state before the reduction is kept and restored by
//!   [`CongestionControl::undo_cwnd`].
//!
//! # Units
//!
//! RFC 9438 speaks in segments and seconds; [`CwndState`] holds bytes. CUBIC's own state
//! (`W_max`, `cwnd_prior`, `cwnd_epoch`, `W_est`) is kept in segments as `f64`, exactly as the RFC
//! writes it, and converted with [`CwndState::mss_bytes`] where it meets `cwnd_bytes`. cwnd itself
//! stays an integral number of bytes; the fractional part of each cubic increment is carried in an
//! accumulator so that increments smaller than a byte are not lost. Times come only from
//! [`AckSample::now`] and [`LossEvent::now`]; `t` is converted to seconds as `f64` only to evaluate
//! the cubic.
//!
//! # Choices and simplifications
//!
//! - The RTT of the one-RTT lookahead `W_cubic(t + RTT)` is the **smoothed RTT**
//!   ([`AckSample::srtt`]): RFC 9438 §4.1.2 defines *RTT* as the RFC 6298 smoothed RTT. (Linux
//!   uses the minimum RTT instead; that makes growth slightly less aggressive when a queue builds,
//!   but it is not what the RFC specifies.) When no smoothed RTT exists yet the latest sample, then
//!   the minimum, then zero are used.
//! - ssthresh is computed from cwnd, not from FlightSize (§4.6 allows this provided cwnd does not
//!   grow while the sender is not cwnd-limited, which [`AckSample::cwnd_limited`] guarantees here).
//! - `K = cbrt((W_max − cwnd_epoch)/C)` (RFC 9438 Figure 2). It equals RFC 8312's
//!   `cbrt(W_max·(1 − β)/C)` when cwnd_epoch = β·W_max, and is the correct one when fast
//!   convergence has lowered W_max below the window it was measured at. If a stage starts with
//!   cwnd_epoch ≥ W_max, W_max is raised to cwnd_epoch and K = 0 (probe upward at once).
//! - The Reno-friendly additive factor becomes 1 once `W_est ≥ cwnd_prior` (RFC 9438 §4.3 as
//!   published; earlier drafts compared with W_max). With `alpha_switch = 0` it stays α_cubic =
//!   3(1 − β)/(1 + β) for good, as RFC 8312 §4.2 specifies and Linux's `tcp_cubic` does: a Linux
//!   CUBIC flow beside Reno grows its Reno estimate at about half Reno's rate, so it leaves Reno
//!   more of a shared link than an RFC 9438 flow does.
//! - Periods in which the sender is not cwnd-limited are removed from `t` (§4.2 "MUST NOT include
//!   periods during which cwnd has not been updated due to application-limited behavior"): the
//!   epoch start moves forward by the time between two ACKs when the later one is not
//!   cwnd-limited, and by the idle time on [`CwndEvent::TxStart`].
//! - HyStart++ uses L = 8 for CSS growth (RFC 9406 §4.3, non-paced), but standard slow start
//!   uses the crate's shared [`crate::reno::slow_start`] with ABC L = 2, so `cubic` and `reno`
//!   slow-start identically until HyStart++ intervenes.

use crate::reno::slow_start;
use crate::{
    AckSample, CcError, CongestionControl, CwndEvent, CwndState, Duration, LossEvent, LossKind,
    ParamInfo, Params, SimTime,
};

/// Default cubic scaling constant C, segments/s³ (RFC 9438 §5.1: C SHOULD be 0.4).
pub const DEFAULT_C: f64 = 0.4;

/// Default multiplicative decrease factor β_cubic, dimensionless (RFC 9438 §4.6: SHOULD be 0.7).
pub const DEFAULT_BETA: f64 = 0.7;

/// The `cubic` flavor's tunable parameters, with defaults (listed in the registry's catalogue).
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "c",
        default: DEFAULT_C,
        doc: "cubic scaling constant C, packets/s^3 (RFC 9438 §4.2 eq. 1, §5.1); must be > 0",
    },
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "multiplicative decrease factor β_cubic, dimensionless: ssthresh = β·cwnd \
              (RFC 9438 §4.6); 0 < beta < 1",
    },
    ParamInfo {
        name: "fast_convergence",
        default: 1.0,
        doc: "fast convergence, lowering W_max when a loss comes below the previous one \
              (RFC 9438 §4.7): 1 = on, 0 = off",
    },
    ParamInfo {
        name: "hystart",
        default: 1.0,
        doc: "exit from the initial slow start: 1 = HyStart++ (RFC 9406), 2 = HyStart's ACK \
              train and delay increase, straight to congestion avoidance (Ha & Rhee 2011; \
              Linux's tcp_cubic), 0 = off (plain RFC 5681 slow start)",
    },
    ParamInfo {
        name: "no_loss_growth",
        default: 0.0,
        doc: "least cwnd growth per RTT in congestion avoidance before the first congestion \
              event, a fraction of cwnd: 0 = none (RFC 9438 §4.10, the curve alone); Linux's \
              tcp_cubic grows at least 0.05 (5% per RTT) after HyStart; 0 ≤ x ≤ 0.5",
    },
    ParamInfo {
        name: "alpha_switch",
        default: 1.0,
        doc: "Reno-friendly additive factor: 1 = α_cubic until W_est reaches cwnd_prior, then 1 \
              (RFC 9438 §4.3); 0 = α_cubic = 3(1−β)/(1+β) always (RFC 8312 §4.2; Linux's \
              tcp_cubic)",
    },
    ParamInfo {
        name: "whole_packets",
        default: 0.0,
        doc: "window arithmetic: 0 = in bytes (the RFC's real-valued segments); 1 = in whole \
              packets, as Linux's tcp_cubic keeps snd_cwnd: ssthresh = ⌊cwnd·β⌋ packets and \
              cwnd grows one packet at a time, the fraction carried (at small windows the \
              truncation lowers the average window by several percent)",
    },
];

/// The parameter names [`Cubic::new`] accepts (the names in [`PARAMS`]).
const PARAM_NAMES: &[&str] =
    &["c", "beta", "fast_convergence", "hystart", "no_loss_growth", "alpha_switch", "whole_packets"];

/// Upper bound on cwnd growth over one RTT in congestion avoidance: target ≤ 1.5·cwnd
/// (RFC 9438 §4.2), so CUBIC never grows faster than slow start.
const MAX_TARGET_RATIO: f64 = 1.5;

/// RFC 9406 §4.3: lower bound of the RTT increase (RttThresh) that ends standard slow start.
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);

/// RFC 9406 §4.3: upper bound of RttThresh.
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);

/// RFC 9406 §4.3: RttThresh is lastRoundMinRTT / MIN_RTT_DIVISOR, clamped to the bounds above.
const MIN_RTT_DIVISOR: u64 = 8;

/// RFC 9406 §4.3: RTT samples a round needs before its minimum is trusted for a decision.
const N_RTT_SAMPLE: u32 = 8;

/// RFC 9406 §4.3: Conservative Slow Start grows cwnd this many times more slowly than slow start.
const CSS_GROWTH_DIVISOR: u64 = 4;

/// RFC 9406 §4.3: rounds spent in CSS (the partial round of entry counts) before congestion
/// avoidance.
const CSS_ROUNDS: u32 = 5;

/// RFC 9406 §4.3: L, the per-ACK growth limit in segments for a non-paced sender (L is infinite
/// with pacing; this controller sets no pacing rate).
const CSS_ACK_LIMIT_SEGMENTS: u64 = 8;

/// "infinity" for the RTT variables of RFC 9406 §4.2 (no sample yet).
const INFINITE_RTT: Duration = Duration::MAX;

/// The controller's current growth rule, reported by [`CongestionControl::mode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// cwnd < ssthresh: standard slow start (RFC 5681 §3.1 / RFC 9406 §4.2).
    SlowStart,
    /// HyStart++ Conservative Slow Start (RFC 9406 §4.2).
    Css,
    /// Congestion avoidance on the cubic curve (RFC 9438 §4.4 concave, §4.5 convex).
    Cubic,
    /// Congestion avoidance following the Reno estimate W_est (RFC 9438 §4.3).
    RenoFriendly,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::SlowStart => "slow_start",
            Mode::Css => "css",
            Mode::Cubic => "cubic",
            Mode::RenoFriendly => "reno_friendly",
        }
    }
}

/// One congestion-avoidance stage (RFC 9438 §4.1.2 "t_epoch", "cwnd_epoch", "K", "W_est").
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch {
    /// t_epoch: when the stage started (moved forward past application-limited periods).
    start: SimTime,
    /// K, seconds: time for W_cubic to climb from cwnd_epoch to W_max (RFC 9438 Figure 2).
    k_secs: f64,
    /// cwnd_epoch, segments: cwnd when the stage started.
    cwnd_epoch: f64,
    /// W_est, segments: the Reno-friendly window estimate (RFC 9438 §4.3, Figure 4).
    w_est: f64,
}

/// Where HyStart++ is (RFC 9406 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HyStartPhase {
    /// Standard slow start, watching for an RTT increase.
    SlowStart,
    /// Conservative Slow Start. `baseline` is cssBaselineMinRtt; `rounds` counts the rounds
    /// begun in CSS, the partial round of entry included.
    Css { baseline: Duration, rounds: u32 },
    /// Not in use: disabled, finished, or the connection left its initial slow start.
    Off,
}

/// HyStart++ state (RFC 9406 §4.2), per-round minimum RTTs and the round marker.
#[derive(Clone, Copy, Debug, PartialEq)]
struct HyStart {
    phase: HyStartPhase,
    /// windowEnd: the round ends when snd_una reaches it; `None` before the first ACK.
    window_end: Option<u64>,
    /// lastRoundMinRTT ([`INFINITE_RTT`] when unknown).
    last_round_min_rtt: Duration,
    /// currentRoundMinRTT ([`INFINITE_RTT`] when no sample yet this round).
    current_round_min_rtt: Duration,
    /// rttSampleCount: RTT samples taken this round.
    rtt_sample_count: u32,
    /// Bytes counted toward CSS growth not yet turned into cwnd (the remainder of the division
    /// by [`CSS_GROWTH_DIVISOR`]).
    css_acc_bytes: u64,
}

impl HyStart {
    fn new(enabled: bool) -> HyStart {
        HyStart {
            phase: if enabled { HyStartPhase::SlowStart } else { HyStartPhase::Off },
            window_end: None,
            last_round_min_rtt: INFINITE_RTT,
            current_round_min_rtt: INFINITE_RTT,
            rtt_sample_count: 0,
            css_acc_bytes: 0,
        }
    }
}

/// CUBIC state saved at a congestion event so a spurious one can be undone (RFC 9438 §4.9.2).
#[derive(Clone, Copy, Debug, PartialEq)]
struct UndoState {
    w_max: f64,
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    probe_from_epoch: bool,
    frac_bytes: f64,
}

/// The CUBIC congestion controller (RFC 9438) with HyStart++ (RFC 9406).
///
/// Windows inside are in segments (as in the RFCs); [`CwndState`] is in bytes. See the module
/// documentation for the choices made where the RFCs leave room.
#[derive(Clone, Debug)]
pub struct Cubic {
    /// C, segments/s³ (RFC 9438 §4.2, eq. 1).
    c: f64,
    /// β_cubic (RFC 9438 §4.6).
    beta: f64,
    /// Fast convergence on (RFC 9438 §4.7).
    fast_convergence: bool,
    /// The Reno-friendly α becomes 1 once W_est ≥ cwnd_prior (RFC 9438 §4.3); `false`: α_cubic
    /// always (RFC 8312 §4.2).
    alpha_switch: bool,
    /// Window arithmetic in whole packets (Linux's snd_cwnd), not bytes.
    whole_packets: bool,
    /// Least growth per RTT, a fraction of cwnd, until the first congestion event (0: none).
    no_loss_growth: f64,
    /// A congestion event (loss, ECN, RTO) has happened: `no_loss_growth` no longer applies.
    congested: bool,
    /// W_max, segments: the window at the last congestion event, possibly lowered by fast
    /// convergence; 0 until the first congestion event (undefined in the RFC).
    w_max: f64,
    /// cwnd_prior, segments: cwnd when ssthresh was last set (at a congestion event or at the
    /// HyStart++ exit); 0 until then.
    cwnd_prior: f64,
    /// The current congestion-avoidance stage; `None` until the first ACK of the next one.
    epoch: Option<Epoch>,
    /// The next stage starts with K = 0 and W_max = cwnd_epoch (after an RTO, RFC 9438 §4.8, or
    /// after HyStart++ left slow start without a loss, §4.10).
    probe_from_epoch: bool,
    /// Fraction of a byte of cubic growth not yet added to cwnd, bytes in [0, 1).
    frac_bytes: f64,
    /// When the last ACK (or the restart after idle) was accounted, for removing
    /// application-limited time from t.
    last_ack: Option<SimTime>,
    /// State before the last reduction, for [`CongestionControl::undo_cwnd`].
    undo: Option<UndoState>,
    hystart: HyStart,
    /// The original HyStart (`hystart = 2`) while it still governs the initial slow start;
    /// `None` otherwise.
    classic_hystart: Option<crate::hystart::HyStart>,
    mode: Mode,
}

impl Cubic {
    /// A CUBIC controller from the scenario's parameters (see [`PARAMS`]); unset parameters
    /// take their defaults.
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] when
    /// `c ≤ 0` (or not finite), `beta` is not strictly between 0 and 1, `hystart` is not 0, 1
    /// or 2, or another flag is not 0 or 1.
    pub fn new(params: &Params) -> Result<Cubic, CcError> {
        params.expect_only("cubic", PARAM_NAMES)?;
        let c = params.get_or("c", DEFAULT_C);
        if !(c.is_finite() && c > 0.0) {
            return Err(bad("c", c, "must be a finite number > 0"));
        }
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta > 0.0 && beta < 1.0) {
            return Err(bad("beta", beta, "must be strictly between 0 and 1"));
        }
        let fast_convergence = flag(params, "fast_convergence")?;
        let alpha_switch = flag(params, "alpha_switch")?;
        let whole_packets = flag(params, "whole_packets")?;
        let no_loss_growth = params.get_or("no_loss_growth", 0.0);
        if !(0.0..=0.5).contains(&no_loss_growth) {
            return Err(bad("no_loss_growth", no_loss_growth, "must be between 0 and 0.5"));
        }
        let hystart = params.get_or("hystart", 1.0);
        if ![0.0, 1.0, 2.0].contains(&hystart) {
            return Err(bad("hystart", hystart, "must be 0 (off), 1 (HyStart++) or 2 (HyStart)"));
        }
        Ok(Cubic {
            c,
            beta,
            fast_convergence,
            alpha_switch,
            whole_packets,
            no_loss_growth,
            congested: false,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            probe_from_epoch: false,
            frac_bytes: 0.0,
            last_ack: None,
            undo: None,
            hystart: HyStart::new(hystart == 1.0),
            classic_hystart: (hystart == 2.0).then(crate::hystart::HyStart::new),
            mode: Mode::SlowStart,
        })
    }

    /// α_cubic = 3(1 − β)/(1 + β), segments per RTT (RFC 9438 §4.3): the additive factor giving
    /// the same average window as Reno's AIMD(1, 0.5).
    fn alpha_cubic(&self) -> f64 {
        3.0 * (1.0 - self.beta) / (1.0 + self.beta)
    }

    /// W_cubic(t) = C·(t − K)³ + W_max, segments (RFC 9438 §4.2, Figure 1); `t` in seconds.
    fn w_cubic(&self, t_secs: f64, k_secs: f64) -> f64 {
        let d = t_secs - k_secs;
        self.c * d * d * d + self.w_max
    }

    /// Begin a congestion-avoidance stage at `now` with cwnd = `cwnd_seg` segments
    /// (RFC 9438 §4.2: t_epoch, cwnd_epoch, K by Figure 2; §4.3: W_est = cwnd_epoch;
    /// §4.8/§4.10: K = 0 and W_max = cwnd_epoch after an RTO or a loss-free slow-start exit).
    fn start_epoch(&mut self, now: SimTime, cwnd_seg: f64) -> Epoch {
        let k_secs = if self.probe_from_epoch || self.w_max <= cwnd_seg {
            self.w_max = cwnd_seg;
            0.0
        } else {
            ((self.w_max - cwnd_seg) / self.c).cbrt()
        };
        self.probe_from_epoch = false;
        let epoch = Epoch { start: now, k_secs, cwnd_epoch: cwnd_seg, w_est: cwnd_seg };
        self.epoch = Some(epoch);
        epoch
    }

    /// Remove time during which cwnd could not grow from t (RFC 9438 §4.2, §5.8): push the
    /// epoch start forward by the time since the last accounted ACK.
    fn skip_time_since_last_ack(&mut self, now: SimTime) {
        if let (Some(epoch), Some(last)) = (self.epoch.as_mut(), self.last_ack) {
            epoch.start = (epoch.start + now.saturating_since(last)).min(now);
        }
    }

    /// Congestion avoidance for one ACK of `bytes_acked` bytes (RFC 9438 §4.2–§4.5).
    fn congestion_avoidance(&mut self, st: &mut CwndState, ack: &AckSample, bytes_acked: u64) {
        let mss = st.mss_bytes as f64;
        let cwnd_bytes = st.cwnd_bytes.max(1) as f64;
        let cwnd_seg = cwnd_bytes / mss;
        let mut epoch = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(ack.now, cwnd_seg),
        };
        let t = ack.now.saturating_since(epoch.start).as_secs_f64();
        let rtt = lookahead_rtt(ack).as_secs_f64();

        // §4.2: target = W_cubic(t + RTT), clamped to [cwnd, 1.5·cwnd]; before any congestion
        // event, at least (1 + no_loss_growth)·cwnd (Linux: the curve from K = 0 after HyStart
        // is too flat to find the path's capacity, so it grows by at least 5% per RTT).
        let w_cubic_now = self.w_cubic(t, epoch.k_secs);
        let floor = if self.congested { 1.0 } else { 1.0 + self.no_loss_growth };
        let target = self
            .w_cubic(t + rtt, epoch.k_secs)
            .clamp(floor * cwnd_seg, MAX_TARGET_RATIO * cwnd_seg);

        // §4.3 Figure 4: W_est += α_cubic · segments_acked / cwnd (= bytes_acked / cwnd_bytes);
        // α_cubic becomes 1 once W_est has reached cwnd_prior (RFC 9438), or never (RFC 8312).
        let alpha = if self.alpha_switch && epoch.w_est >= self.cwnd_prior {
            1.0
        } else {
            self.alpha_cubic()
        };
        epoch.w_est += alpha * bytes_acked as f64 / cwnd_bytes;
        self.epoch = Some(epoch);

        // Growth is added in whole bytes, or in whole packets with `whole_packets` (Linux adds
        // one packet once enough ACKs have come, tcp_cong_avoid_ai); the rest is carried.
        let step = if self.whole_packets { mss } else { 1.0 };
        if w_cubic_now < epoch.w_est {
            // §4.3: Reno-friendly region, cwnd = W_est (never shrunk on an ACK).
            self.mode = Mode::RenoFriendly;
            let w_est_bytes = ((epoch.w_est * mss / step).floor() * step) as u64;
            // The faster of the Reno estimate and the no-loss floor.
            self.frac_bytes += (floor - 1.0) * bytes_acked as f64;
            let whole = (self.frac_bytes / step).floor() * step;
            self.frac_bytes -= whole;
            st.cwnd_bytes = st.cwnd_bytes.saturating_add(whole as u64).max(w_est_bytes);
        } else {
            // §4.4/§4.5: cwnd += (target − cwnd)/cwnd per segment acked, i.e.
            // (target − cwnd)·bytes_acked/cwnd in bytes; the fraction of a step is carried.
            self.mode = Mode::Cubic;
            self.frac_bytes += (target - cwnd_seg) * mss * bytes_acked as f64 / cwnd_bytes;
            let whole = (self.frac_bytes / step).floor() * step;
            self.frac_bytes -= whole;
            st.cwnd_bytes = st.cwnd_bytes.saturating_add(whole as u64);
        }
    }

    /// The original HyStart (`hystart = 2`, [`crate::hystart`]) on a slow-start ACK: when one
    /// of its detectors fires, slow start ends with ssthresh = cwnd and the first stage probes
    /// from there (K = 0, RFC 9438 §4.10), as after HyStart++. Returns whether it ended.
    fn classic_hystart_exit(&mut self, st: &mut CwndState, ack: &AckSample) -> bool {
        if st.ssthresh_bytes != u64::MAX {
            self.classic_hystart = None; // not the initial slow start any more
        }
        let Some(hs) = self.classic_hystart.as_mut() else { return false };
        if hs.on_ack(ack, st.cwnd_packets()).is_none() {
            return false;
        }
        self.classic_hystart = None;
        st.ssthresh_bytes = st.cwnd_bytes;
        self.cwnd_prior = st.cwnd_packets();
        self.probe_from_epoch = true;
        self.epoch = None;
        self.mode = Mode::Cubic;
        true
    }

    /// Whether HyStart++ governs this slow start: enabled, not finished, and still the initial
    /// slow start (ssthresh at its initial infinite value, RFC 9406 §4.3).
    fn hystart_active(&mut self, st: &CwndState) -> bool {
        if st.ssthresh_bytes != u64::MAX {
            self.hystart.phase = HyStartPhase::Off;
        }
        self.hystart.phase != HyStartPhase::Off
    }

    /// One ACK in the initial slow start under HyStart++ (RFC 9406 §4.2): grow by the standard or
    /// the conservative rule, track the round's minimum RTT, move between slow start and CSS, and
    /// leave for congestion avoidance (ssthresh = cwnd) after [`CSS_ROUNDS`] rounds of CSS.
    fn hystart_on_ack(&mut self, st: &mut CwndState, ack: &AckSample) {
        let hs = &mut self.hystart;
        let window_end = *hs.window_end.get_or_insert(ack.snd_nxt);

        // Growth.
        if ack.cwnd_limited {
            match hs.phase {
                HyStartPhase::Css { .. } => {
                    // cwnd += min(N, L·SMSS) / CSS_GROWTH_DIVISOR
                    hs.css_acc_bytes += ack.bytes_acked.min(CSS_ACK_LIMIT_SEGMENTS * st.mss_bytes);
                    st.cwnd_bytes += hs.css_acc_bytes / CSS_GROWTH_DIVISOR;
                    hs.css_acc_bytes %= CSS_GROWTH_DIVISOR;
                }
                _ => {
                    slow_start(st, ack.bytes_acked);
                }
            }
        }

        // The round's minimum RTT.
        if let Some(rtt) = ack.rtt {
            hs.current_round_min_rtt = hs.current_round_min_rtt.min(rtt);
            hs.rtt_sample_count += 1;
        }

        // Slow start ↔ CSS, once the round has enough samples.
        if hs.rtt_sample_count >= N_RTT_SAMPLE {
            match hs.phase {
                HyStartPhase::SlowStart
                    if hs.current_round_min_rtt != INFINITE_RTT
                        && hs.last_round_min_rtt != INFINITE_RTT =>
                {
                    // RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR,
                    // MAX_RTT_THRESH))
                    let rtt_thresh = Duration(hs.last_round_min_rtt.as_nanos() / MIN_RTT_DIVISOR)
                        .clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                    if hs.current_round_min_rtt >= hs.last_round_min_rtt + rtt_thresh {
                        hs.phase =
                            HyStartPhase::Css { baseline: hs.current_round_min_rtt, rounds: 1 };
                    }
                }
                HyStartPhase::Css { baseline, .. } if hs.current_round_min_rtt < baseline => {
                    // The RTT increase was spurious: resume slow start (with HyStart++).
                    hs.phase = HyStartPhase::SlowStart;
                }
                _ => {}
            }
        }

        // End of round: windowEnd acknowledged.
        if ack.snd_una >= window_end {
            if let HyStartPhase::Css { baseline, rounds } = hs.phase {
                if rounds >= CSS_ROUNDS {
                    // CSS done: congestion avoidance without a loss. RFC 9438 §4.10: cwnd_prior =
                    // cwnd, and the first stage probes from cwnd_epoch with K = 0.
                    hs.phase = HyStartPhase::Off;
                    st.ssthresh_bytes = st.cwnd_bytes;
                    self.cwnd_prior = st.cwnd_packets();
                    self.probe_from_epoch = true;
                    self.epoch = None;
                    self.mode = Mode::Cubic;
                    return;
                }
                hs.phase = HyStartPhase::Css { baseline, rounds: rounds + 1 };
            }
            hs.last_round_min_rtt = hs.current_round_min_rtt;
            hs.current_round_min_rtt = INFINITE_RTT;
            hs.rtt_sample_count = 0;
            hs.window_end = Some(ack.snd_nxt);
        }

        self.mode = match self.hystart.phase {
            HyStartPhase::Css { .. } => Mode::Css,
            _ => Mode::SlowStart,
        };
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        if !ack.cwnd_limited {
            self.skip_time_since_last_ack(ack.now);
        }
        self.last_ack = Some(ack.now);

        let mut acked = ack.bytes_acked;
        if st.in_slow_start() {
            if self.hystart_active(st) {
                // HyStart++ spends the whole ACK (in slow start or CSS), even if it ends slow
                // start on this ACK.
                self.hystart_on_ack(st, ack);
                return;
            }
            if !ack.cwnd_limited {
                return;
            }
            // HyStart judges the ACK before it grows cwnd; when it ends slow start the ACK goes
            // to congestion avoidance instead.
            if !self.classic_hystart_exit(st, ack) {
                self.mode = Mode::SlowStart;
                acked = slow_start(st, acked);
                if acked == 0 {
                    return;
                }
            }
        }
        if !ack.cwnd_limited {
            return;
        }
        self.congestion_avoidance(st, ack, acked);
    }

    /// RFC 9438 §4.6 multiplicative decrease with §4.7 fast convergence: returns
    /// max(β·cwnd, 2 MSS); W_max becomes cwnd, or cwnd·(1 + β)/2 when cwnd is below the previous
    /// W_max and fast convergence is on. The stage ends; the next one starts on the first ACK in
    /// congestion avoidance, with K = 0 after an RTO (§4.8). HyStart++ ends (RFC 9406 §4.2).
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.undo = Some(UndoState {
            w_max: self.w_max,
            cwnd_prior: self.cwnd_prior,
            epoch: self.epoch,
            probe_from_epoch: self.probe_from_epoch,
            frac_bytes: self.frac_bytes,
        });
        let cwnd_seg = st.cwnd_packets();
        self.w_max = if self.fast_convergence && cwnd_seg < self.w_max {
            cwnd_seg * (1.0 + self.beta) / 2.0
        } else {
            cwnd_seg
        };
        self.cwnd_prior = cwnd_seg;
        self.epoch = None;
        self.frac_bytes = 0.0;
        self.congested = true;
        self.probe_from_epoch = ev.kind == LossKind::Timeout;
        self.hystart.phase = HyStartPhase::Off;
        self.classic_hystart = None;
        self.mode = if ev.kind == LossKind::Timeout { Mode::SlowStart } else { Mode::Cubic };
        let ssthresh_bytes = if self.whole_packets {
            // Linux: ⌊snd_cwnd · β⌋ in whole packets, β in 1/1024ths (717 for 0.7).
            let beta_1024 = (self.beta * 1024.0).round() as u64;
            st.cwnd_bytes / st.mss_bytes * beta_1024 / 1024 * st.mss_bytes
        } else {
            (st.cwnd_bytes as f64 * self.beta) as u64
        };
        ssthresh_bytes.max(2 * st.mss_bytes)
    }

    /// Restart after idle: the idle time is not part of t (RFC 9438 §5.8); after a window
    /// restart (RFC 5681 §4.1) a new congestion-avoidance stage begins from the restart window.
    fn cwnd_event(&mut self, _st: &mut CwndState, ev: CwndEvent, now: SimTime) {
        match ev {
            CwndEvent::TxStart => {
                self.skip_time_since_last_ack(now);
                self.last_ack = Some(now);
            }
            CwndEvent::CwndRestart => self.epoch = None,
            _ => {}
        }
    }

    /// RFC 9438 §4.9.2: if cwnd is below its value before the spurious reduction, restore the
    /// W_max, cwnd_prior, K, t_epoch and W_est saved at the reduction; cwnd = max(cwnd, prior).
    fn undo_cwnd(&mut self, st: &mut CwndState, prior_cwnd_bytes: u64) {
        if let Some(u) = self.undo.take() {
            if st.cwnd_bytes < prior_cwnd_bytes {
                self.w_max = u.w_max;
                self.cwnd_prior = u.cwnd_prior;
                self.epoch = u.epoch;
                self.probe_from_epoch = u.probe_from_epoch;
                self.frac_bytes = u.frac_bytes;
            }
        }
        st.cwnd_bytes = st.cwnd_bytes.max(prior_cwnd_bytes);
    }

    /// `"slow_start"`, `"css"` (HyStart++ Conservative Slow Start), `"cubic"` (concave or convex
    /// region) or `"reno_friendly"`: the growth rule the last ACK used (after a congestion event,
    /// the rule that comes next).
    fn mode(&self) -> &'static str {
        self.mode.name()
    }
}

/// The RTT of the lookahead W_cubic(t + RTT): the smoothed RTT (RFC 9438 §4.1.2), else the latest
/// sample, else the minimum, else zero.
fn lookahead_rtt(ack: &AckSample) -> Duration {
    ack.srtt.or(ack.rtt).or(ack.min_rtt).unwrap_or(Duration::ZERO)
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "cubic", param, value, reason }
}

/// An on/off parameter: 1 is on, 0 is off, anything else is an error; unset, the catalogue's
/// default ([`PARAMS`]), or on for a name it does not list.
fn flag(params: &Params, name: &'static str) -> Result<bool, CcError> {
    let default = PARAMS.iter().find(|p| p.name == name).map_or(1.0, |p| p.default);
    let v = params.get_or(name, default);
    if v == 1.0 {
        Ok(true)
    } else if v == 0.0 {
        Ok(false)
    } else {
        Err(bad(name, v, "must be 0 (off) or 1 (on)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn cubic(pairs: &[(&str, f64)]) -> Cubic {
        Cubic::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .unwrap()
    }

    fn ack_at(now: SimTime, bytes: u64, rtt: Duration) -> AckSample {
        crate::growth::testing::ack(now, bytes, rtt)
    }

    fn loss_at(now: SimTime, kind: LossKind, st: &CwndState) -> LossEvent {
        LossEvent { now, kind, flight_size_bytes: st.cwnd_bytes, in_flight_bytes: st.cwnd_bytes }
    }

    /// A loss at cwnd = `w_max_seg` segments, followed by the transport's cwnd = ssthresh at the
    /// end of recovery. Returns the window state at the start of congestion avoidance.
    fn after_loss(cc: &mut Cubic, w_max_seg: u64) -> CwndState {
        let mut st = CwndState::new(w_max_seg * MSS, MSS);
        st.ssthresh_bytes = st.ssthresh_bytes.min(st.cwnd_bytes);
        let ss = cc.ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::FastRetransmit, &st));
        st.ssthresh_bytes = ss;
        st.cwnd_bytes = ss;
        st
    }

    /// The ACK clock of a window-limited sender: one MSS acknowledged at a time, at the rate
    /// cwnd/RTT, from `start` for `span`. Returns (seconds since the first ACK, cwnd bytes after
    /// the ACK, mode after the ACK) for every ACK.
    fn drive(
        cc: &mut Cubic,
        st: &mut CwndState,
        start: SimTime,
        rtt: Duration,
        span: Duration,
    ) -> Vec<(f64, u64, &'static str)> {
        let mut trace = Vec::new();
        let mut now = start;
        while now < start + span {
            cc.cong_avoid(st, &ack_at(now, MSS, rtt));
            trace.push((now.saturating_since(start).as_secs_f64(), st.cwnd_bytes, cc.mode()));
            now += Duration(rtt.as_nanos() * MSS / st.cwnd_bytes);
        }
        trace
    }

    /// The last trace entry at or before `t` seconds.
    fn at(trace: &[(f64, u64, &'static str)], t: f64) -> (f64, u64, &'static str) {
        *trace.iter().rev().find(|e| e.0 <= t).unwrap()
    }

    #[test]
    fn congestion_avoidance_follows_the_cubic_curve() {
        // W_max = 100 segments, β = 0.7: cwnd_epoch = 70, K = cbrt(30 / 0.4) ≈ 4.22 s, RTT 100 ms.
        let mut cc = cubic(&[]);
        let mut st = after_loss(&mut cc, 100);
        assert_eq!(st.cwnd_bytes, 70 * MSS);
        let rtt = Duration::from_millis(100);
        let start = SimTime(1_000_000_000);
        let trace = drive(&mut cc, &mut st, start, rtt, Duration::from_secs(6));

        let k = (30.0_f64 / 0.4).cbrt();
        assert!((cc.epoch.unwrap().k_secs - k).abs() < 1e-12);
        let w = |t: f64| 0.4 * (t - k).powi(3) + 100.0;
        // cwnd obeys d(cwnd)/dt ≈ (W(t + RTT) − cwnd)/RTT: a first-order lag with time constant
        // RTT driven by the curve one RTT ahead, so it tracks W(t) itself; the residual is
        // O(RTT²·W''), about 0.05 segment here, plus ACK spacing and whole bytes. ±1 MSS of W(t)
        // therefore holds, while dropping the lookahead (target = W(t)) would lag by RTT·W'(t),
        // 2.1 segments at t = 0 and 1.2 at t = 1 s, and fail.
        for t in [0.5, 1.0, 2.0, 3.0, k, k + 0.5, k + 1.0, k + 1.4] {
            let (ts, cwnd, mode) = at(&trace, t);
            let seg = cwnd as f64 / MSS as f64;
            assert!(
                (seg - w(ts)).abs() <= 1.0,
                "t = {ts:.3} s: cwnd = {seg:.2} segments, W(t) = {:.2}",
                w(ts)
            );
            assert_eq!(mode, "cubic", "t = {ts:.3}: W_est must still be below W_cubic");
        }
        // Concave then convex: growth slows toward K and speeds up after it.
        let grow = |a: f64, b: f64| at(&trace, b).1 as f64 - at(&trace, a).1 as f64;
        assert!(grow(0.0, 1.0) > 5.0 * grow(k - 0.5, k + 0.5));
        assert!(grow(k + 0.9, k + 1.4) > grow(k - 0.25, k + 0.25));
    }

    #[test]
    fn multiplicative_decrease_and_fast_convergence() {
        let mut cc = cubic(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        let ss = cc.ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert_eq!(ss, (0.7 * (100 * MSS) as f64) as u64);
        assert_eq!(cc.w_max, 100.0, "first loss: W_max = cwnd");

        // A second loss at 90 segments, below W_max = 100: W_max = 90·(1 + 0.7)/2 = 76.5.
        st.cwnd_bytes = 90 * MSS;
        st.ssthresh_bytes = ss;
        let ss2 = cc.ssthresh(&st, &loss_at(SimTime(1), LossKind::FastRetransmit, &st));
        assert_eq!(ss2, (0.7 * (90 * MSS) as f64) as u64);
        assert!((cc.w_max - 76.5).abs() < 1e-9, "W_max = {}", cc.w_max);
        // The next stage aims at the lowered W_max: K = cbrt((76.5 − 63) / C).
        st.cwnd_bytes = ss2;
        st.ssthresh_bytes = ss2;
        cc.cong_avoid(&mut st, &ack_at(SimTime(2), MSS, Duration::from_millis(10)));
        let k = cc.epoch.unwrap().k_secs;
        assert!((k - ((76.5 - ss2 as f64 / MSS as f64) / 0.4).cbrt()).abs() < 1e-9, "K = {k}");

        // Without fast convergence W_max is simply the window at the loss.
        let mut cc = cubic(&[("fast_convergence", 0.0)]);
        let mut st = CwndState::new(100 * MSS, MSS);
        cc.ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::FastRetransmit, &st));
        st.cwnd_bytes = 90 * MSS;
        cc.ssthresh(&st, &loss_at(SimTime(1), LossKind::FastRetransmit, &st));
        assert_eq!(cc.w_max, 90.0);

        // ssthresh never goes below 2 MSS; β is the parameter.
        let st = CwndState::new(2 * MSS, MSS);
        assert_eq!(cc.ssthresh(&st, &loss_at(SimTime(2), LossKind::FastRetransmit, &st)), 2 * MSS);
        let mut cc = cubic(&[("beta", 0.5)]);
        let st = CwndState::new(100 * MSS, MSS);
        assert_eq!(cc.ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::Ecn, &st)), 50 * MSS);
    }

    #[test]
    fn whole_packets_truncates_ssthresh_and_grows_one_packet_at_a_time() {
        // Linux's arithmetic: ⌊11 · 717/1024⌋ = 7 packets (bytes: 7.7 packets' worth).
        let mut cc = cubic(&[("whole_packets", 1.0), ("alpha_switch", 0.0)]);
        let st = CwndState::new(11 * MSS + MSS / 2, MSS);
        assert_eq!(cc.ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::FastRetransmit, &st)), 7 * MSS);
        assert_eq!(cubic(&[]).ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::FastRetransmit, &st)), (11.5 * 0.7 * MSS as f64) as u64);
        // After the loss cwnd only ever takes whole packets, and still follows W_est's slope
        // (α_cubic ≈ 0.53 packets per RTT) within one packet.
        let mut cc = cubic(&[("whole_packets", 1.0), ("alpha_switch", 0.0)]);
        let mut st = after_loss(&mut cc, 20);
        let rtt = Duration::from_millis(1);
        let trace = drive(&mut cc, &mut st, SimTime::ZERO, rtt, Duration::from_millis(40));
        assert!(trace.iter().all(|(_, cwnd, _)| cwnd % MSS == 0), "a fraction of a packet in cwnd");
        let alpha = 3.0 * 0.3 / 1.7;
        for rtts in [5.0, 15.0, 30.0] {
            let (ts, cwnd, _) = at(&trace, rtts * 1e-3);
            let line = 14.0 + alpha * ts / 1e-3;
            let seg = (cwnd / MSS) as f64;
            assert!(seg <= line && seg > line - 1.0, "{rtts} RTTs: cwnd {seg}, W_est line {line:.2}");
        }
    }

    #[test]
    fn reno_friendly_region_governs_at_small_bdp() {
        // RTT 1 ms, W_max = 20: K = cbrt(6 / 0.4) ≈ 2.47 s = 2466 RTTs, so over tens of RTTs the
        // cubic curve barely moves from 14 while Reno's estimate gains α_cubic ≈ 0.53 per RTT.
        let mut cc = cubic(&[]);
        let mut st = after_loss(&mut cc, 20);
        let rtt = Duration::from_millis(1);
        let trace = drive(&mut cc, &mut st, SimTime::ZERO, rtt, Duration::from_millis(30));
        let alpha = 3.0 * 0.3 / 1.7;
        let k = (6.0_f64 / 0.4).cbrt();
        let w_cubic = |t: f64| 0.4 * (t - k).powi(3) + 20.0;

        // Before W_est reaches cwnd_prior = 20 (after 6/α ≈ 11.3 RTTs): W_est = 14 + α·t/RTT.
        for rtts in [3.0, 6.0, 10.0] {
            let (ts, cwnd, mode) = at(&trace, rtts * 1e-3);
            let seg = cwnd as f64 / MSS as f64;
            let aimd = 14.0 + alpha * ts / 1e-3;
            assert!((seg - aimd).abs() < 0.25, "{rtts} RTTs: cwnd {seg:.2}, W_est line {aimd:.2}");
            assert!(seg > w_cubic(ts + 1e-3) + 1.0, "faster than cubic's own target");
            assert_eq!(mode, "reno_friendly");
        }
        // Once W_est ≥ cwnd_prior, α = 1: one segment per RTT, like Reno.
        let per_rtt = (at(&trace, 0.025).1 - at(&trace, 0.015).1) as f64 / MSS as f64 / 10.0;
        assert!((per_rtt - 1.0).abs() < 0.05, "growth {per_rtt:.3} segments per RTT");
        assert_eq!(at(&trace, 0.025).2, "reno_friendly");
    }

    #[test]
    fn rfc8312_reno_friendly_factor_stays_alpha_cubic_past_cwnd_prior() {
        // As `reno_friendly_region_governs_at_small_bdp`, but with alpha_switch = 0 (RFC 8312
        // §4.2, Linux's tcp_cubic): W_est keeps growing by α_cubic ≈ 0.53 segments per RTT after
        // it passes cwnd_prior = 20, where RFC 9438 §4.3 switches to 1.
        let alpha = 3.0 * 0.3 / 1.7;
        let rtt = Duration::from_millis(1);
        let growth = |pairs: &[(&str, f64)]| {
            let mut cc = cubic(pairs);
            let mut st = after_loss(&mut cc, 20);
            let trace = drive(&mut cc, &mut st, SimTime::ZERO, rtt, Duration::from_millis(40));
            assert_eq!(at(&trace, 0.035).2, "reno_friendly");
            // Per RTT between 20 and 35 RTTs, past W_est = cwnd_prior (≈ 11.3 RTTs).
            (at(&trace, 0.035).1 - at(&trace, 0.020).1) as f64 / MSS as f64 / 15.0
        };
        let linux = growth(&[("alpha_switch", 0.0)]);
        assert!((linux - alpha).abs() < 0.03, "growth {linux:.3} segments per RTT, α {alpha:.3}");
        let rfc9438 = growth(&[]);
        assert!((rfc9438 - 1.0).abs() < 0.05, "growth {rfc9438:.3} segments per RTT");
    }

    #[test]
    fn no_loss_growth_floor_applies_until_the_first_congestion_event() {
        // After a loss-free slow-start exit the curve starts flat (K = 0, W_max = cwnd): with
        // no_loss_growth = 0.05 cwnd still grows by 5% per RTT, as Linux's tcp_cubic.
        let rtt = Duration::from_millis(40);
        let run = |pairs: &[(&str, f64)]| {
            let mut cc = cubic(pairs);
            let mut st = CwndState::new(80 * MSS, MSS);
            st.ssthresh_bytes = st.cwnd_bytes; // as HyStart leaves it
            cc.cwnd_prior = 80.0;
            cc.probe_from_epoch = true;
            let trace = drive(&mut cc, &mut st, SimTime::ZERO, rtt, Duration::from_millis(400));
            (cc, st, at(&trace, 0.4).1 as f64 / MSS as f64)
        };
        // 10 RTTs: 80·1.05^10 ≈ 130 (the per-ACK increments compound a little faster).
        let (mut cc, mut st, linux) = run(&[("no_loss_growth", 0.05)]);
        assert!((125.0..140.0).contains(&linux), "cwnd {linux:.1} after 10 RTTs");
        // RFC 9438: the curve (80 + 0.4·0.44³) is below the Reno estimate, which gains one
        // segment per RTT (α = 1 as W_est ≥ cwnd_prior): 90.
        let (_, _, rfc) = run(&[]);
        assert!(rfc <= 91.0, "cwnd {rfc:.1} after 10 RTTs");
        // After a congestion event the floor is gone: back to the curve and W_est.
        let ss = cc.ssthresh(&st, &loss_at(SimTime(1_000_000_000), LossKind::FastRetransmit, &st));
        st.ssthresh_bytes = ss;
        st.cwnd_bytes = ss;
        let before = st.cwnd_bytes;
        drive(&mut cc, &mut st, SimTime(1_000_000_000), rtt, Duration::from_millis(200));
        let grown = (st.cwnd_bytes - before) as f64 / before as f64;
        assert!(grown < 0.1, "grew {:.0}% in 5 RTTs", 100.0 * grown);
    }

    #[test]
    fn classic_hystart_ends_slow_start_on_an_ack_train_without_css() {
        // Flat 50 ms RTT: HyStart++ sees no delay increase and keeps slow-starting
        // (`hystart_stays_in_slow_start_with_flat_rtt`), but once a generation's ACKs come less
        // than 2 ms apart (more than 25 per RTT) their train outlasts minRTT/2 and the original
        // HyStart (hystart = 2) ends slow start: ssthresh = cwnd, straight to congestion
        // avoidance probing from that window (K = 0), no CSS.
        let mut cc = cubic(&[("hystart", 2.0)]);
        let (st, trace) = drive_slow_start(&mut cc, 8, |_| Duration::from_millis(50));
        let exit = trace.iter().position(|a| a.ssthresh != u64::MAX).expect("left slow start");
        assert!(trace.iter().all(|a| a.mode != "css"));
        // Generation 2 has 40 ACKs 1.25 ms apart: its train passes 25 ms at its 22nd ACK.
        assert_eq!(trace[exit].generation, 2);
        let first_of_gen = trace.iter().position(|a| a.generation == 2).unwrap();
        assert_eq!(exit - first_of_gen, 21);
        assert_eq!(trace[exit].ssthresh, trace[exit].cwnd_before, "ssthresh = cwnd at the exit");
        assert!(trace[exit..].iter().all(|a| a.mode == "cubic" || a.mode == "reno_friendly"));
        assert!(st.cwnd_bytes < 2 * trace[exit].ssthresh, "no more doubling");
        let ep = cc.epoch.unwrap();
        assert_eq!(ep.k_secs, 0.0);
        assert_eq!(cc.w_max, ep.cwnd_epoch);

        // HyStart++ on the same run stays in slow start.
        let mut cc = cubic(&[]);
        let (st, _) = drive_slow_start(&mut cc, 8, |_| Duration::from_millis(50));
        assert_eq!(st.ssthresh_bytes, u64::MAX);
    }

    /// One ACK of a slow-start run.
    #[derive(Clone, Copy, Debug)]
    struct SsAck {
        /// The sender's generation: gen g is the data sent in reply to gen g − 1's ACKs.
        generation: usize,
        /// The HyStart++ round by RFC 9406 §4.2's definition (windowEnd = SND.NXT at the start of
        /// the round; the round ends when windowEnd is acknowledged), computed by the test.
        round: usize,
        /// 1-based index of this ACK's RTT sample within its round.
        sample: u32,
        /// This ACK acknowledged windowEnd: the round ends with it.
        ends_round: bool,
        rtt: Duration,
        mode: &'static str,
        cwnd_before: u64,
        cwnd_after: u64,
        ssthresh: u64,
    }

    /// A window-limited sender in its initial slow start, one MSS per ACK, for `generations`
    /// generations (gen 0: the initial window of 10 segments). Every segment of gen g sees the
    /// RTT `rtt_of_gen(g)`; sequence numbers are real, so HyStart++ marks its rounds itself from
    /// snd_una/snd_nxt. Its rounds do not line up with the generations: a round ends when the
    /// data outstanding at its start is acknowledged, before the data sent in reply to the rest of
    /// the generation is.
    fn drive_slow_start(
        cc: &mut Cubic,
        generations: usize,
        rtt_of_gen: impl Fn(usize) -> Duration,
    ) -> (CwndState, Vec<SsAck>) {
        let mut st = CwndState::new(10 * MSS, MSS);
        let (mut una, mut nxt) = (0, 10 * MSS);
        let (mut round, mut sample, mut window_end) = (0, 0, nxt);
        let mut now = SimTime::ZERO;
        let mut trace = Vec::new();
        for generation in 0..generations {
            let rtt = rtt_of_gen(generation);
            let gen_end = nxt;
            let n = (gen_end - una) / MSS;
            while una < gen_end {
                now += Duration(rtt.as_nanos() / n);
                una += MSS;
                let mut a = ack_at(now, MSS, rtt);
                a.snd_una = una;
                a.snd_nxt = nxt;
                let cwnd_before = st.cwnd_bytes;
                cc.cong_avoid(&mut st, &a);
                sample += 1;
                let ends_round = una >= window_end;
                trace.push(SsAck {
                    generation,
                    round,
                    sample,
                    ends_round,
                    rtt,
                    mode: cc.mode(),
                    cwnd_before,
                    cwnd_after: st.cwnd_bytes,
                    ssthresh: st.ssthresh_bytes,
                });
                if ends_round {
                    (round, sample, window_end) = (round + 1, 0, nxt);
                }
                nxt = nxt.max(una + st.cwnd_bytes);
            }
        }
        (st, trace)
    }

    /// The minimum RTT of each HyStart++ round in `trace`.
    fn round_min_rtts(trace: &[SsAck]) -> Vec<Duration> {
        let mut mins = vec![INFINITE_RTT; trace.last().unwrap().round + 1];
        for a in trace {
            mins[a.round] = mins[a.round].min(a.rtt);
        }
        mins
    }

    #[test]
    fn hystart_stays_in_slow_start_with_flat_rtt() {
        let mut cc = cubic(&[]);
        // 50 ms with 0–2 ms of jitter, below RttThresh = max(4, min(50/8, 16)) = 6.25 ms.
        let (st, trace) =
            drive_slow_start(&mut cc, 8, |g| Duration::from_millis(50 + (g % 3) as u64));
        assert!(trace
            .iter()
            .all(|a| a.mode == "slow_start" && a.cwnd_after - a.cwnd_before == MSS));
        assert_eq!(st.ssthresh_bytes, u64::MAX);
        // Every acked byte was added: cwnd doubles each generation (10 · 2^8 segments).
        assert_eq!(st.cwnd_bytes, 10 * 256 * MSS);
    }

    #[test]
    fn hystart_rtt_increase_enters_css_then_congestion_avoidance_without_loss() {
        let mut cc = cubic(&[]);
        // 50 ms for generations 0–3, then 60 ms: +10 ms > RttThresh = 6.25 ms.
        let (st, trace) =
            drive_slow_start(&mut cc, 14, |g| Duration::from_millis(if g < 4 { 50 } else { 60 }));
        let mins = round_min_rtts(&trace);
        // The first round whose minimum exceeds the previous one's by RttThresh.
        let rise = (1..mins.len())
            .find(|&r| mins[r] >= mins[r - 1] + Duration::from_micros(6250))
            .unwrap();

        // CSS starts at that round's N_RTT_SAMPLE-th sample, not before.
        let entry = trace.iter().position(|a| a.mode == "css").expect("entered CSS");
        assert_eq!((trace[entry].round, trace[entry].sample), (rise, N_RTT_SAMPLE));
        assert_eq!(trace[entry].generation, 4);
        assert!(trace[..entry].iter().all(|a| a.mode == "slow_start" && a.ssthresh == u64::MAX));

        // In CSS, an ACK of one MSS grows cwnd by MSS / CSS_GROWTH_DIVISOR instead of MSS.
        let in_css: Vec<_> = trace.iter().filter(|a| a.mode == "css").collect();
        assert!(in_css.len() > 100);
        for a in &in_css[1..] {
            assert_eq!(a.cwnd_after - a.cwnd_before, MSS / 4);
        }

        // At the end of the CSS_ROUNDS-th round in CSS (the partial round of entry counts) slow
        // start ends with ssthresh = cwnd, without any loss.
        let exit = trace.iter().position(|a| a.ssthresh != u64::MAX).expect("left slow start");
        assert!(trace[exit].ends_round);
        assert_eq!(trace[exit].round, rise + CSS_ROUNDS as usize - 1);
        assert_eq!(trace[exit].ssthresh, trace[exit].cwnd_after, "ssthresh = cwnd at the exit");
        assert!(trace[entry..exit].iter().all(|a| a.mode == "css"));
        assert_eq!(st.ssthresh_bytes, trace[exit].cwnd_after);
        assert!(trace[exit + 1..].iter().all(|a| a.mode == "cubic" || a.mode == "reno_friendly"));
        // RFC 9438 §4.10: the first stage probes from the exit window (W_max = cwnd_epoch, K = 0).
        let ep = cc.epoch.unwrap();
        assert_eq!(ep.k_secs, 0.0);
        assert_eq!(cc.w_max, ep.cwnd_epoch);
        assert_eq!(cc.cwnd_prior, trace[exit].cwnd_after as f64 / MSS as f64);
    }

    #[test]
    fn hystart_resumes_slow_start_when_rtt_falls_below_the_css_baseline() {
        let mut cc = cubic(&[]);
        // A bump: 60 ms in generations 4 and 5 only.
        let (st, trace) = drive_slow_start(&mut cc, 10, |g| {
            Duration::from_millis(if g == 4 || g == 5 { 60 } else { 50 })
        });
        let entry = trace.iter().position(|a| a.mode == "css").expect("entered CSS");
        let baseline = Duration::from_millis(60);
        // Back to slow start at the first ACK after which its round has N_RTT_SAMPLE samples and a
        // minimum below cssBaselineMinRtt.
        let mut round_min = INFINITE_RTT;
        let expected = (entry + 1..trace.len())
            .find(|&i| {
                if trace[i].sample == 1 {
                    round_min = INFINITE_RTT;
                }
                round_min = round_min.min(trace[i].rtt);
                trace[i].round > trace[entry].round
                    && trace[i].sample >= N_RTT_SAMPLE
                    && round_min < baseline
            })
            .unwrap();
        let back = trace.iter().skip(entry).position(|a| a.mode == "slow_start").unwrap() + entry;
        assert_eq!(back, expected);
        assert!(trace[entry..back].iter().all(|a| a.mode == "css"));
        assert!(trace[back..].iter().all(|a| a.mode == "slow_start"));
        assert_eq!(st.ssthresh_bytes, u64::MAX);
    }

    #[test]
    fn hystart_off_or_loss_means_plain_slow_start() {
        let rtt = |r: usize| Duration::from_millis(if r < 4 { 50 } else { 60 });
        let mut cc = cubic(&[("hystart", 0.0)]);
        let (st, trace) = drive_slow_start(&mut cc, 8, rtt);
        assert!(trace.iter().all(|a| a.mode == "slow_start"));
        assert_eq!(st.cwnd_bytes, 10 * 256 * MSS);

        // A loss during slow start ends HyStart++ for good (RFC 9406 §4.2, §4.3).
        let mut cc = cubic(&[]);
        let st = CwndState::new(40 * MSS, MSS);
        cc.ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::FastRetransmit, &st));
        assert_eq!(cc.hystart.phase, HyStartPhase::Off);
    }

    #[test]
    fn timeout_restarts_the_curve_from_the_new_window() {
        let mut cc = cubic(&[]);
        let mut st = CwndState::new(100 * MSS, MSS);
        let ss = cc.ssthresh(&st, &loss_at(SimTime::ZERO, LossKind::Timeout, &st));
        st.ssthresh_bytes = ss;
        st.cwnd_bytes = MSS; // the transport's loss window
        let rtt = Duration::from_millis(10);
        let mut now = SimTime::ZERO;
        while st.in_slow_start() {
            now += Duration::from_millis(1);
            cc.cong_avoid(&mut st, &ack_at(now, MSS, rtt));
            assert!(st.cwnd_bytes <= ss || !st.in_slow_start());
        }
        assert_eq!(cc.mode(), "slow_start");
        cc.cong_avoid(&mut st, &ack_at(now, MSS, rtt));
        // §4.8: K = 0 and W_max = cwnd_epoch, not the 100 segments before the timeout.
        let ep = cc.epoch.unwrap();
        assert_eq!(ep.k_secs, 0.0);
        assert_eq!(ep.cwnd_epoch, ss as f64 / MSS as f64);
        assert_eq!(cc.w_max, ep.cwnd_epoch);
        assert_eq!(ep.w_est, ep.cwnd_epoch + 3.0 * 0.3 / 1.7 * MSS as f64 / ss as f64);
    }

    #[test]
    fn undo_restores_the_state_before_a_spurious_reduction() {
        let mut cc = cubic(&[]);
        let mut st = after_loss(&mut cc, 120);
        let rtt = Duration::from_millis(20);
        drive(&mut cc, &mut st, SimTime::ZERO, rtt, Duration::from_secs(1));
        let (w_max, epoch, cwnd) = (cc.w_max, cc.epoch, st.cwnd_bytes);
        let ss = cc.ssthresh(&st, &loss_at(SimTime(2_000_000_000), LossKind::FastRetransmit, &st));
        assert_ne!(cc.w_max, w_max);
        st.cwnd_bytes = ss;
        cc.undo_cwnd(&mut st, cwnd);
        assert_eq!(st.cwnd_bytes, cwnd);
        assert_eq!(cc.w_max, w_max);
        assert_eq!(cc.epoch, epoch);
        assert_eq!(cc.cwnd_prior, 120.0);
        // Nothing saved any more: a second undo only applies max(cwnd, prior).
        cc.undo_cwnd(&mut st, cwnd + MSS);
        assert_eq!(st.cwnd_bytes, cwnd + MSS);
        assert_eq!(cc.w_max, w_max);
    }

    #[test]
    fn application_limited_time_is_not_part_of_t() {
        let mut cc = cubic(&[]);
        let mut st = after_loss(&mut cc, 100);
        let rtt = Duration::from_millis(100);
        cc.cong_avoid(&mut st, &ack_at(SimTime(0), MSS, rtt));
        let start = cc.epoch.unwrap().start;
        let cwnd = st.cwnd_bytes;
        let mut a = ack_at(SimTime(3_000_000_000), MSS, rtt);
        a.cwnd_limited = false;
        cc.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, cwnd, "no growth when not cwnd-limited");
        assert_eq!(cc.epoch.unwrap().start, start + Duration::from_secs(3));
        // Idle, then a restart: the idle time is skipped too.
        cc.cwnd_event(&mut st, CwndEvent::TxStart, SimTime(5_000_000_000));
        assert_eq!(cc.epoch.unwrap().start, start + Duration::from_secs(5));
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Cubic::new(&Params::from_pairs(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        let bad_param = |r: Result<Cubic, CcError>, name: &str| match r {
            Err(CcError::BadParam { flavor: "cubic", param, .. }) => assert_eq!(param, name),
            other => panic!("expected BadParam for {name}, got {other:?}"),
        };
        bad_param(p(&[("c", 0.0)]), "c");
        bad_param(p(&[("c", -0.4)]), "c");
        bad_param(p(&[("c", f64::NAN)]), "c");
        bad_param(p(&[("c", f64::INFINITY)]), "c");
        bad_param(p(&[("beta", 0.0)]), "beta");
        bad_param(p(&[("beta", 1.0)]), "beta");
        bad_param(p(&[("beta", 1.5)]), "beta");
        bad_param(p(&[("beta", f64::NAN)]), "beta");
        bad_param(p(&[("fast_convergence", 0.5)]), "fast_convergence");
        bad_param(p(&[("hystart", 3.0)]), "hystart");
        bad_param(p(&[("hystart", 0.5)]), "hystart");
        bad_param(p(&[("alpha_switch", 2.0)]), "alpha_switch");
        bad_param(p(&[("no_loss_growth", -0.1)]), "no_loss_growth");
        bad_param(p(&[("no_loss_growth", 0.6)]), "no_loss_growth");
        assert!(matches!(p(&[("gamma", 1.0)]), Err(CcError::UnknownParam { flavor: "cubic", .. })));

        let cc =
            p(&[("c", 0.8), ("beta", 0.5), ("fast_convergence", 0.0), ("hystart", 0.0)]).unwrap();
        assert_eq!((cc.c, cc.beta, cc.fast_convergence), (0.8, 0.5, false));
        assert_eq!(cc.hystart.phase, HyStartPhase::Off);
        let cc = p(&[]).unwrap();
        assert_eq!((cc.c, cc.beta, cc.fast_convergence), (0.4, 0.7, true));
        assert_eq!(cc.name(), "cubic");
        // The catalogue's list and the accepted names agree.
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
