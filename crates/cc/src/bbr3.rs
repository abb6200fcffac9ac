//! BBRv3 (Cardwell, Swett, Beshay, draft-ietf-ccwg-bbr, the working group draft after -05): the
//! `bbr3` controller.
//!
//! # What it does
//!
//! BBRv3 keeps v1's model (a max-filtered bandwidth `max_bw`, a min-filtered `min_rtt`) and adds
//! bounds learned from loss (draft §5.5.10):
//!
//! - **long-term**: `inflight_longterm`, the inflight at which a bandwidth probe saw a loss rate
//!   above `LossThresh` = 2% over a round trip (`RS.lost > 2% · RS.tx_in_flight`), set to
//!   `max(RS.tx_in_flight, Beta · TargetInflight())`, Beta = 0.7 (§5.5.10.2); it is raised again
//!   when a probe finds no such loss, slowly at first and doubling each round (§5.3.3.5, §5.3.3.9).
//! - **short-term**: `bw_shortterm` and `inflight_shortterm`, cut once per round trip with loss
//!   when not probing to `max(latest, Beta · previous)` (§5.5.10.3), reset when a probe starts.
//!
//! The state machine (§5.3):
//!
//! | state | pacing_gain | cwnd_gain | rate cap | volume cap | leaves when |
//! |---|---|---|---|---|---|
//! | STARTUP | 4 ln 2 ≈ 2.77 | 2 | – | – | bw plateau (3 rounds < +25%) or > 2% loss with ≥ 6 loss events in a round of recovery |
//! | DRAIN | 0.5 | 2 | bw_shortterm | longterm, shortterm | inflight ≤ BDP, or after 3 rounds |
//! | PROBE_BW_DOWN | 0.9 | 2 | bw_shortterm | longterm, shortterm | inflight ≤ BDP and ≤ 0.85·longterm → CRUISE; probe time → REFILL |
//! | PROBE_BW_CRUISE | 1.0 | 2 | bw_shortterm | 0.85·longterm, shortterm | probe time: 2–3 s or min(BDP, 63) rounds → REFILL |
//! | PROBE_BW_REFILL | 1.0 | 2 | – | longterm | one round → UP |
//! | PROBE_BW_UP | 1.25 | 2.25 | – | longterm | bw plateau, > 2% loss, or (after a too-high probe) reaching longterm → DOWN |
//! | PROBE_RTT | 1.0 | 0.5 | bw_shortterm | 0.85·longterm, shortterm | 200 ms and a round at ½ BDP |
//!
//! PROBE_RTT runs when `min_rtt` was not re-measured for 5 s (`ProbeRTTInterval`); the `min_rtt`
//! filter is 10 s. The pacing rate is `pacing_gain · bw · 0.99` (`PacingMarginPercent` = 1).
//!
//! # Choices and simplifications
//!
//! - **Per-packet loss state.** The draft's `HandleLostPacket(P)` reads `P.tx_in_flight` and
//!   `P.lost` of each lost packet. The transport reports losses per ACK; the check uses the
//!   ACK's rate sample (`RS.tx_in_flight`, `RS.lost`: the stamps of the newest packet this ACK
//!   delivers, [`RateSample::tx_in_flight_bytes`], [`RateSample::lost_bytes`]), as Linux BBRv2
//!   first did. `InflightAtLoss` is computed with that packet as P.
//! - **Selective ACKs** are assumed (`C.has_selective_acks`; the catalogue's default recovery is
//!   `prr`, SACK-based). "Discontiguous lost ranges" for the STARTUP loss exit are counted as ACKs
//!   that newly mark data lost.
//! - **ECN.** The draft specifies no ECN response beyond "MUST treat any CE marks as congestion"
//!   (§3.7). Here an ACK with ECN-Echo counts like a loss for the once-per-round short-term
//!   bound (`is_loss_in_round`), and nothing else; ECN is off unless the scenario turns it on.
//! - **Randomness.** `PickProbeWait`'s draws come from SplitMix64 seeded by the `seed` parameter
//!   and the time of the draw (deterministic, as the simulator requires).
//! - `MarkConnectionAppLimited()` in PROBE_RTT is emulated inside the controller as in `bbr`.
//! - The offload budget is TCP's `3 · send_quantum` (§5.5.8.1).

use ccarena_rng::{splitmix64, unit_f64};
use crate::bbr_common::{
    app_limited, apply_pacing_rate, AckAggregationEpoch, grow_cwnd, initial_pacing_rate_bps, min_pipe, pacing_rate_with_margin_bps,
    reinit_pacing_on_first_rtt, saved_cwnd,
    RoundMaxFilter, FULL_BW_COUNT, FULL_BW_THRESH, INITIAL_RTT_GUESS_S, SEND_QUANTUM_INTERVAL_S,
    SEND_QUANTUM_MAX_BYTES,
};
use crate::{
    AckSample, CaState, CcError, CongestionControl, CwndEvent, CwndState, Duration, LossEvent, ParamInfo, Params,
    RateSample, SimTime,
};

/// STARTUP pacing gain, 4 ln 2 ≈ 2.77: the smallest that doubles the sending rate each round
/// (draft §2.5 `BBR.StartupPacingGain`).
pub const STARTUP_PACING_GAIN: f64 = 2.772_588_722_239_781; // 4 ln 2

/// DRAIN pacing gain (§2.5 `BBR.DrainPacingGain` = 0.5: drains STARTUP's queue in a round).
pub const DRAIN_PACING_GAIN: f64 = 0.5;

/// cwnd gain in every state but PROBE_BW_UP and PROBE_RTT (§2.6 `BBR.DefaultCwndGain` = 2).
pub const DEFAULT_CWND_GAIN: f64 = 2.0;

/// PROBE_BW_DOWN pacing gain (§5.3.3.1: 0.90).
pub const PROBE_DOWN_PACING_GAIN: f64 = 0.90;

/// PROBE_BW_UP pacing gain (§5.3.3.5: 1.25).
pub const PROBE_UP_PACING_GAIN: f64 = 1.25;

/// PROBE_BW_UP cwnd gain (§5.3.3.5: 2.25, so cwnd does not cap the faster sending).
pub const PROBE_UP_CWND_GAIN: f64 = 2.25;

/// PROBE_RTT cwnd gain (§2.16.2 `BBR.ProbeRTTCwndGain` = 0.5: half a BDP in flight).
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;

/// Default maximum tolerated loss rate per round trip while probing (§2.8 `BBR.LossThresh` = 2%).
pub const DEFAULT_LOSS_THRESH: f64 = 0.02;

/// Default multiplicative decrease per lossy round (§2.8 `BBR.Beta` = 0.7).
pub const DEFAULT_BETA: f64 = 0.7;

/// Default headroom left below `inflight_longterm` (§2.8 `BBR.Headroom` = 0.15).
pub const DEFAULT_HEADROOM: f64 = 0.15;

/// Default ProbeRTT interval, seconds (§2.16.2 `BBR.ProbeRTTInterval` = 5 s).
pub const DEFAULT_PROBE_RTT_INTERVAL_S: f64 = 5.0;

/// Default `min_rtt` filter window, seconds (§2.16.1 `BBR.MinRTTFilterLen` = 10 s).
pub const DEFAULT_MIN_RTT_FILTER_S: f64 = 10.0;

/// ProbeRTT minimum duration (§2.16.2 `BBR.ProbeRTTDuration` = 200 ms).
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);

/// `max_bw` filter window, ProbeBW cycles (§2.11 `BBR.MaxBwFilterLen` = 2).
const MAX_BW_FILTER_CYCLES: usize = 2;

/// `extra_acked` filter window, rounds (§2.12 `BBR.ExtraAckedFilterLen` = 10; 1 in STARTUP).
const EXTRA_ACKED_FILTER_ROUNDS: u64 = 10;

/// STARTUP loss exit: at least this many discontiguous lost ranges in a round (§5.3.1.3
/// `BBRStartupFullLossCnt` = 6).
const STARTUP_FULL_LOSS_COUNT: u32 = 6;

/// DRAIN ends after this many rounds even if inflight is still above the BDP (§5.3.2).
const DRAIN_MAX_ROUNDS: u64 = 3;

/// Reno-coexistence bound on rounds between bandwidth probes (§5.3.3.8.3: 62–63; the draft's
/// pseudocode uses 63 with `rounds_since_probe_up` starting at 0 or 1).
const RENO_PROBE_MAX_ROUNDS: u64 = 63;

/// BBR-native time between probes: 2 s plus a uniform draw in [0, 1) s (§5.3.3.8.2 `T_bbr`).
const PROBE_WAIT_BASE: Duration = Duration::from_secs(2);
const PROBE_WAIT_RANDOM: Duration = Duration::from_secs(1);

/// Largest exponent of `inflight_longterm`'s per-round growth in PROBE_BW_UP (§5.3.3.9:
/// `min(bw_probe_up_rounds + 1, 30)`).
const MAX_PROBE_UP_ROUNDS: u32 = 30;

/// TCP offload budget: 3 send quanta (§5.5.8.1).
const OFFLOAD_QUANTA: f64 = 3.0;

/// "Infinity" for volumes and rates.
const INF: u64 = u64::MAX;

/// The `bbr3` flavor's tunable parameters, with defaults (listed in the registry's catalogue).
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "loss_thresh",
        default: DEFAULT_LOSS_THRESH,
        doc: "largest tolerated loss rate per round trip while probing, fraction \
              (draft-ietf-ccwg-bbr §2.8 BBR.LossThresh: 0.02); 0 < loss_thresh < 1",
    },
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "multiplicative decrease of the loss bounds per lossy round (§2.8 BBR.Beta: 0.7); 0 < beta < 1",
    },
    ParamInfo {
        name: "headroom",
        default: DEFAULT_HEADROOM,
        doc: "fraction of inflight_longterm left free in CRUISE and PROBE_RTT (§2.8 BBR.Headroom: 0.15); \
              0 ≤ headroom < 1",
    },
    ParamInfo {
        name: "probe_rtt_interval_s",
        default: DEFAULT_PROBE_RTT_INTERVAL_S,
        doc: "PROBE_RTT runs when min_rtt was not re-measured for this long, seconds \
              (§2.16.2 BBR.ProbeRTTInterval: 5); > 0 and ≤ min_rtt_filter_s",
    },
    ParamInfo {
        name: "min_rtt_filter_s",
        default: DEFAULT_MIN_RTT_FILTER_S,
        doc: "min_rtt filter window, seconds (§2.16.1 BBR.MinRTTFilterLen: 10); > 0",
    },
    ParamInfo {
        name: "seed",
        default: 1.0,
        doc: "seed of the deterministic generator for PickProbeWait's random draws (§5.3.3.8.3); integer ≥ 0",
    },
];

const PARAM_NAMES: &[&str] = &["loss_thresh", "beta", "headroom", "probe_rtt_interval_s", "min_rtt_filter_s", "seed"];

/// BBRv3's states (draft §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Exponential search for bandwidth.
    Startup,
    /// Drain STARTUP's queue.
    Drain,
    /// Decelerate: pace at 0.9·bw until inflight has headroom.
    ProbeBwDown,
    /// Cruise at bw with headroom below inflight_longterm.
    ProbeBwCruise,
    /// Refill the pipe for one round at bw before probing.
    ProbeBwRefill,
    /// Probe: pace at 1.25·bw, raising inflight_longterm.
    ProbeBwUp,
    /// Cut inflight to half a BDP to re-measure min_rtt.
    ProbeRtt,
}

impl State {
    /// The name [`CongestionControl::mode`] reports.
    pub fn name(self) -> &'static str {
        match self {
            State::Startup => "STARTUP",
            State::Drain => "DRAIN",
            State::ProbeBwDown => "PROBE_BW_DOWN",
            State::ProbeBwCruise => "PROBE_BW_CRUISE",
            State::ProbeBwRefill => "PROBE_BW_REFILL",
            State::ProbeBwUp => "PROBE_BW_UP",
            State::ProbeRtt => "PROBE_RTT",
        }
    }

    fn is_probe_bw(self) -> bool {
        matches!(self, State::ProbeBwDown | State::ProbeBwCruise | State::ProbeBwRefill | State::ProbeBwUp)
    }
}

/// What the ACKs now arriving say about bandwidth probing (§2.14 `BBR.ack_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The BBRv3 controller. See the module documentation.
#[derive(Debug, Clone)]
pub struct Bbr3 {
    // Parameters.
    loss_thresh: f64,
    beta: f64,
    headroom: f64,
    probe_rtt_interval: Duration,
    min_rtt_filter: Duration,
    seed: u64,
    // Control.
    state: State,
    pacing_gain: f64,
    cwnd_gain: f64,
    initial_cwnd: u64,
    // Rounds.
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    rounds_since_probe_up: u64,
    cwnd_limited_this_round: bool,
    cwnd_limited_last_round: bool,
    // Bandwidth.
    max_bw_filter: RoundMaxFilter,
    cycle_count: u64,
    max_bw: u64,
    bw_shortterm: u64,
    bw: u64,
    // RTT.
    min_rtt: Option<Duration>,
    min_rtt_stamp: SimTime,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: SimTime,
    probe_rtt_expired: bool,
    // Aggregation.
    extra_acked_epoch: AckAggregationEpoch,
    extra_acked_filter: RoundMaxFilter,
    extra_acked: u64,
    // Startup.
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: u64,
    full_bw_count: u32,
    loss_events_in_round: u32,
    recovery_start_round: Option<u64>,
    // ProbeBW.
    ack_phase: AckPhase,
    is_bw_probe_sample: bool,
    bw_probe_up_acked: u64,
    probe_up_acked_per_inc: u64,
    bw_probe_up_rounds: u32,
    bw_probe_wait: Duration,
    cycle_stamp: SimTime,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,
    drain_start_round: u64,
    // Congestion signals.
    is_loss_in_round: bool,
    loss_round_delivered: u64,
    loss_round_start: bool,
    bw_latest: u64,
    inflight_latest: u64,
    inflight_longterm: u64,
    inflight_shortterm: u64,
    // Undo.
    undo_state: Option<State>,
    undo_bw_shortterm: u64,
    undo_inflight_shortterm: u64,
    undo_inflight_longterm: u64,
    // ProbeRTT, recovery, idle.
    probe_rtt_done_stamp: Option<SimTime>,
    probe_rtt_round_done: bool,
    app_limited_until: Option<u64>,
    prior_cwnd: u64,
    in_loss_recovery: bool,
    idle_restart: bool,
    delivered: u64,
    started: bool,
    has_seen_rtt: bool,
}

impl Bbr3 {
    /// A BBRv3 controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// outside the range its documentation gives.
    pub fn new(params: &Params) -> Result<Bbr3, CcError> {
        params.expect_only("bbr3", PARAM_NAMES)?;
        let loss_thresh = params.get_or("loss_thresh", DEFAULT_LOSS_THRESH);
        if !(loss_thresh > 0.0 && loss_thresh < 1.0) {
            return Err(bad("loss_thresh", loss_thresh, "must be strictly between 0 and 1"));
        }
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta > 0.0 && beta < 1.0) {
            return Err(bad("beta", beta, "must be strictly between 0 and 1"));
        }
        let headroom = params.get_or("headroom", DEFAULT_HEADROOM);
        if !(0.0..1.0).contains(&headroom) {
            return Err(bad("headroom", headroom, "must be in [0, 1)"));
        }
        let filter_s = params.get_or("min_rtt_filter_s", DEFAULT_MIN_RTT_FILTER_S);
        if !(filter_s.is_finite() && filter_s > 0.0) {
            return Err(bad("min_rtt_filter_s", filter_s, "must be a finite number > 0"));
        }
        let interval_s = params.get_or("probe_rtt_interval_s", DEFAULT_PROBE_RTT_INTERVAL_S);
        if !(interval_s > 0.0 && interval_s <= filter_s) {
            return Err(bad("probe_rtt_interval_s", interval_s, "must be > 0 and at most min_rtt_filter_s"));
        }
        let seed = params.get_or("seed", 1.0);
        if !(seed.fract() == 0.0 && seed >= 0.0 && seed < 2f64.powi(53)) {
            return Err(bad("seed", seed, "must be a non-negative integer"));
        }
        Ok(Bbr3 {
            loss_thresh,
            beta,
            headroom,
            probe_rtt_interval: Duration::from_secs_f64(interval_s),
            min_rtt_filter: Duration::from_secs_f64(filter_s),
            seed: seed as u64,
            state: State::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            initial_cwnd: 0,
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            rounds_since_probe_up: 0,
            cwnd_limited_this_round: false,
            cwnd_limited_last_round: false,
            max_bw_filter: RoundMaxFilter::new(MAX_BW_FILTER_CYCLES),
            cycle_count: 0,
            max_bw: 0,
            bw_shortterm: INF,
            bw: 0,
            min_rtt: None,
            min_rtt_stamp: SimTime::ZERO,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: SimTime::ZERO,
            probe_rtt_expired: false,
            extra_acked_epoch: AckAggregationEpoch::default(),
            extra_acked_filter: RoundMaxFilter::new(EXTRA_ACKED_FILTER_ROUNDS as usize),
            extra_acked: 0,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0,
            full_bw_count: 0,
            loss_events_in_round: 0,
            recovery_start_round: None,
            ack_phase: AckPhase::Init,
            is_bw_probe_sample: false,
            bw_probe_up_acked: 0,
            probe_up_acked_per_inc: INF,
            bw_probe_up_rounds: 0,
            bw_probe_wait: Duration::ZERO,
            cycle_stamp: SimTime::ZERO,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            drain_start_round: 0,
            is_loss_in_round: false,
            loss_round_delivered: 0,
            loss_round_start: false,
            bw_latest: 0,
            inflight_latest: 0,
            inflight_longterm: INF,
            inflight_shortterm: INF,
            undo_state: None,
            undo_bw_shortterm: 0,
            undo_inflight_shortterm: 0,
            undo_inflight_longterm: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            app_limited_until: None,
            prior_cwnd: 0,
            in_loss_recovery: false,
            idle_restart: false,
            delivered: 0,
            started: false,
            has_seen_rtt: false,
        })
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The current pacing gain.
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// The current cwnd gain.
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }

    /// `BBR.inflight_longterm`, bytes (`u64::MAX` while unset).
    pub fn inflight_longterm(&self) -> u64 {
        self.inflight_longterm
    }

    /// `BBR.inflight_shortterm`, bytes (`u64::MAX` while unset).
    pub fn inflight_shortterm(&self) -> u64 {
        self.inflight_shortterm
    }

    /// `BBR.bw_shortterm`, bits per second (`u64::MAX` while unset).
    pub fn bw_shortterm(&self) -> u64 {
        self.bw_shortterm
    }

    /// `BBR.max_bw`, bits per second of payload.
    pub fn max_bw(&self) -> u64 {
        self.max_bw
    }

    /// `BBR.bw = min(max_bw, bw_shortterm)`, bits per second.
    pub fn bw(&self) -> u64 {
        self.bw
    }

    /// `BBR.min_rtt`.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// `BBR.full_bw_reached`.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    // ---- helpers ------------------------------------------------------------------------

    /// A uniform draw in [0, 1) from the deterministic generator.
    fn random_unit(&self, now: SimTime, salt: u64) -> f64 {
        unit_f64(splitmix64(self.seed ^ now.as_nanos().rotate_left(23) ^ salt.wrapping_mul(0x2545_F491_4F6C_DD1D)))
    }

    /// `rate_bps · min_rtt · gain` in bytes, or None before min_rtt is known.
    fn bdp_multiple_with(&self, rate_bps: u64, gain: f64) -> Option<f64> {
        self.min_rtt.map(|r| gain * rate_bps as f64 / 8.0 * r.as_secs_f64())
    }

    /// §5.6.4.2 `BDPMultiple(gain)`, bytes.
    fn bdp_multiple(&self, gain: f64) -> u64 {
        match self.bdp_multiple_with(self.bw, gain) {
            None => self.initial_cwnd,
            Some(v) => v as u64,
        }
    }

    /// §5.6.3 `C.send_quantum`, bytes.
    fn send_quantum(&self, st: &CwndState) -> u64 {
        let rate = st.pacing_rate_bps.unwrap_or(0) as f64;
        ((rate / 8.0 * SEND_QUANTUM_INTERVAL_S).min(SEND_QUANTUM_MAX_BYTES) as u64).max(2 * st.mss_bytes)
    }

    /// §5.6.4.2 `QuantizationBudget(inflight_cap)`.
    fn quantization_budget(&self, st: &CwndState, cap: u64) -> u64 {
        let offload = (OFFLOAD_QUANTA * self.send_quantum(st) as f64) as u64;
        let mut cap = cap.max(offload).max(min_pipe(st));
        if self.state == State::ProbeBwUp {
            cap = cap.saturating_add(2 * st.mss_bytes);
        }
        cap
    }

    /// §5.6.4.2 `Inflight(gain)`: gain·BDP with the quantization budget.
    pub fn inflight(&self, st: &CwndState, gain: f64) -> u64 {
        self.quantization_budget(st, self.bdp_multiple(gain))
    }

    /// `Inflight(BBR.max_bw, 1.0)`: the BDP at max_bw (used by `IsTimeToCruise`).
    fn inflight_at_max_bw(&self, st: &CwndState) -> u64 {
        let cap = self.bdp_multiple_with(self.max_bw, 1.0).map_or(self.initial_cwnd, |v| v as u64);
        self.quantization_budget(st, cap)
    }

    /// §5.3.3.9 `InflightWithHeadroom()`.
    fn inflight_with_headroom(&self, st: &CwndState) -> u64 {
        if self.inflight_longterm == INF {
            return INF;
        }
        let headroom = ((self.headroom * self.inflight_longterm as f64) as u64).max(st.mss_bytes);
        self.inflight_longterm.saturating_sub(headroom).max(min_pipe(st))
    }

    /// §5.3.3.8.3 `TargetInflight()`: min(BDP, cwnd).
    fn target_inflight(&self, st: &CwndState) -> u64 {
        self.bdp_multiple(1.0).min(st.cwnd_bytes)
    }

    /// §5.5.10.2 `IsInflightTooHigh()` (selective ACKs assumed).
    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        rs.lost_bytes as f64 > rs.tx_in_flight_bytes as f64 * self.loss_thresh
    }

    fn is_probing_bw(&self) -> bool {
        matches!(self.state, State::Startup | State::ProbeBwRefill | State::ProbeBwUp)
    }

    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_this_round || self.cwnd_limited_last_round
    }

    // ---- state entries ---------------------------------------------------------------------

    fn enter_startup(&mut self) {
        self.state = State::Startup;
        self.pacing_gain = STARTUP_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn enter_drain(&mut self) {
        self.state = State::Drain;
        self.pacing_gain = DRAIN_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.drain_start_round = self.round_count;
    }

    fn enter_probe_bw(&mut self, now: SimTime) {
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.start_probe_bw_down(now);
    }

    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    fn reset_short_term_model(&mut self) {
        self.bw_shortterm = INF;
        self.inflight_shortterm = INF;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// §5.3.3.8.3 `PickProbeWait()`.
    fn pick_probe_wait(&mut self, now: SimTime) {
        self.rounds_since_probe_up = u64::from(self.random_unit(now, 1) >= 0.5);
        self.bw_probe_wait = PROBE_WAIT_BASE + Duration::from_secs_f64(self.random_unit(now, 2) * PROBE_WAIT_RANDOM.as_secs_f64());
    }

    fn start_probe_bw_down(&mut self, now: SimTime) {
        self.reset_congestion_signals();
        self.probe_up_acked_per_inc = INF;
        self.pick_probe_wait(now);
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.state = State::ProbeBwDown;
        self.pacing_gain = PROBE_DOWN_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn start_probe_bw_cruise(&mut self) {
        self.state = State::ProbeBwCruise;
        self.pacing_gain = 1.0;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn start_probe_bw_refill(&mut self) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.state = State::ProbeBwRefill;
        self.pacing_gain = 1.0;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn start_probe_bw_up(&mut self, st: &CwndState, rs: &RateSample) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate_bps;
        self.state = State::ProbeBwUp;
        self.pacing_gain = PROBE_UP_PACING_GAIN;
        self.cwnd_gain = PROBE_UP_CWND_GAIN;
        self.raise_inflight_longterm_slope(st);
    }

    // ---- loss -----------------------------------------------------------------------------

    fn save_cwnd(&mut self, st: &CwndState) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, st.cwnd_bytes, self.in_loss_recovery || self.state == State::ProbeRtt);
    }

    fn restore_cwnd(&self, st: &mut CwndState) {
        st.cwnd_bytes = st.cwnd_bytes.max(self.prior_cwnd);
    }

    /// §5.5.11.1 `SaveStateUponLoss()`.
    fn save_state_upon_loss(&mut self, st: &CwndState) {
        self.save_cwnd(st);
        self.undo_state = None;
        self.undo_bw_shortterm = self.bw_shortterm;
        self.undo_inflight_shortterm = self.inflight_shortterm;
        self.undo_inflight_longterm = self.inflight_longterm;
    }

    /// §5.5.10.2 `NoteLoss()`.
    fn note_loss(&mut self, st: &CwndState) {
        if !self.is_loss_in_round {
            self.loss_round_delivered = self.delivered;
            self.save_state_upon_loss(st);
        }
        self.is_loss_in_round = true;
    }

    /// §5.5.10.2 `HandleLostPacket()`, with the ACK's rate sample standing for the lost packet's
    /// stamps (see the module documentation).
    fn handle_lost(&mut self, st: &CwndState, rs: &RateSample, now: SimTime) {
        self.note_loss(st);
        if !self.is_bw_probe_sample {
            return;
        }
        if self.is_inflight_too_high(rs) {
            let tx_in_flight = self.inflight_at_loss(st, rs);
            self.handle_inflight_too_high(st, rs, tx_in_flight, now);
        }
    }

    /// §5.5.10.2 `InflightAtLoss(P)`: the inflight at which the loss rate crossed LossThresh.
    fn inflight_at_loss(&self, st: &CwndState, rs: &RateSample) -> u64 {
        let size = st.mss_bytes as f64;
        let inflight_prev = (rs.tx_in_flight_bytes as f64 - size).max(0.0);
        let lost_prev = (rs.lost_bytes as f64 - size).max(0.0);
        let lost_prefix = ((self.loss_thresh * inflight_prev - lost_prev) / (1.0 - self.loss_thresh)).max(0.0);
        (inflight_prev + lost_prefix) as u64
    }

    /// §5.5.10.2 `HandleInflightTooHigh()`.
    fn handle_inflight_too_high(&mut self, st: &CwndState, rs: &RateSample, tx_in_flight: u64, now: SimTime) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !rs.is_app_limited {
            let floor = (self.target_inflight(st) as f64 * self.beta) as u64;
            self.inflight_longterm = tx_in_flight.max(floor);
        }
        if self.state == State::ProbeBwUp {
            self.undo_state = Some(State::ProbeBwUp);
            self.start_probe_bw_down(now);
        }
    }

    // ---- per-ACK model and state -------------------------------------------------------------

    /// §5.5.10.3 `UpdateLatestDeliverySignals()`.
    fn update_latest_delivery_signals(&mut self, rs: &RateSample, has_data: bool) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate_bps);
        self.inflight_latest = self.inflight_latest.max(rs.delivered_bytes);
        if has_data && rs.prior_delivered_bytes >= self.loss_round_delivered {
            self.loss_round_delivered = self.delivered;
            self.loss_round_start = true;
        }
    }

    /// §5.5.10.3 `AdvanceLatestDeliverySignals()`.
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate_bps;
            self.inflight_latest = rs.delivered_bytes;
        }
    }

    /// §5.5.1 `UpdateRound()` and §5.5.5 `UpdateMaxBw()`.
    fn update_max_bw(&mut self, rs: &RateSample, has_data: bool, app_limited: bool) {
        self.round_start = false;
        if has_data && rs.prior_delivered_bytes >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
        }
        if rs.delivery_rate_bps > 0 && rs.interval > Duration::ZERO && (rs.delivery_rate_bps >= self.max_bw || !app_limited) {
            self.max_bw = self.max_bw_filter.update(self.cycle_count, rs.delivery_rate_bps);
        }
    }

    /// §5.5.10.3 `UpdateCongestionSignals()` with `AdaptLowerBoundsFromCongestion()`.
    fn update_congestion_signals(&mut self, st: &CwndState, rs: &RateSample, has_data: bool, app_limited: bool) {
        self.update_max_bw(rs, has_data, app_limited);
        if !self.loss_round_start {
            return;
        }
        if !self.is_probing_bw() && self.is_loss_in_round {
            // InitLowerBounds, LossLowerBounds.
            if self.bw_shortterm == INF {
                self.bw_shortterm = self.max_bw;
            }
            if self.inflight_shortterm == INF {
                self.inflight_shortterm = st.cwnd_bytes;
            }
            self.bw_shortterm = self.bw_latest.max((self.beta * self.bw_shortterm as f64) as u64);
            self.inflight_shortterm = self.inflight_latest.max((self.beta * self.inflight_shortterm as f64) as u64);
        }
        self.is_loss_in_round = false;
    }

    /// §5.5.9 `UpdateACKAggregation()`.
    fn update_ack_aggregation(&mut self, st: &CwndState, now: SimTime, newly_acked: u64) {
        let extra = self.extra_acked_epoch.on_ack(now, self.bw, newly_acked).min(st.cwnd_bytes);
        let len = if self.full_bw_reached { EXTRA_ACKED_FILTER_ROUNDS } else { 1 };
        self.extra_acked_filter.update(self.round_count, extra);
        self.extra_acked = self.extra_acked_filter.get_within(self.round_count, len);
    }

    /// §5.3.1.2 `CheckFullBWReached()`.
    fn check_full_bw_reached(&mut self, rs: &RateSample, app_limited: bool) {
        if self.full_bw_now || !self.round_start || app_limited {
            return;
        }
        if rs.delivery_rate_bps as f64 >= self.full_bw as f64 * FULL_BW_THRESH {
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate_bps;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_COUNT;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// §5.3.1.3 `CheckStartupHighLoss()` and §5.3.1 `CheckStartupDone()`.
    fn check_startup_done(&mut self, rs: &RateSample) {
        if self.state == State::Startup && !self.full_bw_reached {
            if rs.newly_lost_bytes > 0 {
                self.loss_events_in_round = self.loss_events_in_round.saturating_add(1);
            }
            let recovery_round_done = self.recovery_start_round.is_some_and(|r| self.round_count > r);
            if self.loss_round_start
                && recovery_round_done
                && self.loss_events_in_round >= STARTUP_FULL_LOSS_COUNT
                && self.is_inflight_too_high(rs)
            {
                self.undo_state = Some(State::Startup);
                self.full_bw_reached = true;
                self.inflight_longterm = self.bdp_multiple(1.0).max(self.inflight_latest);
            }
            if self.loss_round_start {
                self.loss_events_in_round = 0;
            }
        }
        if self.state == State::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    /// §5.3.2 `CheckDrainDone()`.
    fn check_drain_done(&mut self, st: &CwndState, now: SimTime, inflight: u64) {
        if self.state == State::Drain
            && (inflight <= self.inflight(st, 1.0) || self.round_count > self.drain_start_round + DRAIN_MAX_ROUNDS)
        {
            self.enter_probe_bw(now);
        }
    }

    /// §5.3.3.9 `RaiseInflightLongtermSlope()`.
    fn raise_inflight_longterm_slope(&mut self, st: &CwndState) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(MAX_PROBE_UP_ROUNDS);
        self.probe_up_acked_per_inc = (st.cwnd_bytes / growth_this_round).max(st.mss_bytes);
    }

    /// §5.3.3.9 `ProbeInflightLongtermUpward()`.
    fn probe_inflight_longterm_upward(&mut self, st: &CwndState, rs: &RateSample) {
        if !self.is_cwnd_limited() || st.cwnd_bytes < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += rs.newly_acked_bytes;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = self.bw_probe_up_acked / self.probe_up_acked_per_inc;
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm = self.inflight_longterm.saturating_add(delta * st.mss_bytes);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope(st);
        }
    }

    /// §5.3.3.9 `AdaptLongTermModel()`; true when it decided a state transition.
    fn adapt_long_term_model(&mut self, st: &CwndState, rs: &RateSample, app_limited: bool) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !app_limited {
                self.cycle_count += 1; // AdvanceMaxBwFilter
            }
            if self.state.is_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill();
                return true;
            }
        }
        if !self.is_inflight_too_high(rs) {
            if self.inflight_longterm == INF {
                return false;
            }
            if rs.tx_in_flight_bytes > self.inflight_longterm {
                self.inflight_longterm = rs.tx_in_flight_bytes;
            }
            if self.state == State::ProbeBwUp {
                self.probe_inflight_longterm_upward(st, rs);
            }
        }
        false
    }

    /// §5.3.3.8.3 `IsTimeToProbeBW()`: starts REFILL when it is.
    fn is_time_to_probe_bw(&mut self, st: &CwndState, now: SimTime) -> bool {
        let reno_rounds = self.target_inflight(st) / st.mss_bytes;
        let reno_time = self.rounds_since_probe_up >= reno_rounds.min(RENO_PROBE_MAX_ROUNDS);
        if now > self.cycle_stamp + self.bw_probe_wait || reno_time {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// §5.3.3.9 `IsTimeToCruise()`.
    fn is_time_to_cruise(&self, st: &CwndState, inflight: u64) -> bool {
        inflight <= self.inflight_with_headroom(st) && inflight <= self.inflight_at_max_bw(st)
    }

    /// §5.3.3.9 `IsTimeToGoDown()`.
    fn is_time_to_go_down(&mut self, st: &CwndState, rs: &RateSample, inflight: u64) -> bool {
        if self.prev_probe_too_high && inflight >= self.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && st.cwnd_bytes >= self.inflight_longterm {
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate_bps;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    /// §5.3.3.9 `UpdateProbeBWCyclePhase()` (kept in the draft's shape: one arm per state).
    #[allow(clippy::collapsible_match)]
    fn update_probe_bw_cycle_phase(&mut self, st: &CwndState, now: SimTime, rs: &RateSample, inflight: u64, app_limited: bool) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(st, rs, app_limited) {
            return;
        }
        match self.state {
            State::ProbeBwDown => {
                if self.is_time_to_probe_bw(st, now) {
                    return;
                }
                if self.is_time_to_cruise(st, inflight) {
                    self.start_probe_bw_cruise();
                }
            }
            State::ProbeBwCruise => {
                self.is_time_to_probe_bw(st, now);
            }
            State::ProbeBwRefill => {
                if self.round_start {
                    self.is_bw_probe_sample = true;
                    self.start_probe_bw_up(st, rs);
                }
            }
            State::ProbeBwUp => {
                if self.is_time_to_go_down(st, rs, inflight) {
                    self.prev_probe_too_high = false;
                    self.start_probe_bw_down(now);
                }
            }
            _ => {}
        }
    }

    /// §5.3.4.3 `UpdateMinRTT()`.
    fn update_min_rtt(&mut self, now: SimTime, rtt: Option<Duration>) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + self.probe_rtt_interval;
        if let Some(rtt) = rtt {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + self.min_rtt_filter;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// §5.6.4.5 `ProbeRTTCwnd()`.
    fn probe_rtt_cwnd(&self, st: &CwndState) -> u64 {
        self.bdp_multiple(PROBE_RTT_CWND_GAIN).max(min_pipe(st))
    }

    /// §5.3.4.3 `CheckProbeRTT()` with `HandleProbeRTT()`.
    fn check_probe_rtt(&mut self, st: &mut CwndState, now: SimTime, inflight: u64, rs: &RateSample) {
        if self.state != State::ProbeRtt && self.probe_rtt_expired && !self.idle_restart {
            self.state = State::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = PROBE_RTT_CWND_GAIN;
            self.save_cwnd(st);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == State::ProbeRtt {
            // MarkConnectionAppLimited(): C.app_limited = C.delivered + C.inflight.
            self.app_limited_until = Some((self.delivered + inflight).max(1));
            if self.probe_rtt_done_stamp.is_none() && inflight <= self.probe_rtt_cwnd(st) {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round();
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(st, now);
                }
            }
        }
        if rs.delivered_bytes > 0 {
            self.idle_restart = false;
        }
    }

    /// §5.3.4.3 `CheckProbeRTTDone()` and §5.3.4.4 `ExitProbeRTT()`.
    fn check_probe_rtt_done(&mut self, st: &mut CwndState, now: SimTime) {
        if self.probe_rtt_done_stamp.is_some_and(|d| now > d) {
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd(st);
            self.reset_short_term_model();
            if self.full_bw_reached {
                self.start_probe_bw_down(now);
                self.start_probe_bw_cruise();
            } else {
                self.enter_startup();
            }
        }
    }

    // ---- control parameters ------------------------------------------------------------------

    /// §5.6.2 `SetPacingRate()`.
    fn set_pacing_rate(&self, st: &mut CwndState) {
        if self.bw == 0 {
            return;
        }
        let rate = pacing_rate_with_margin_bps(self.pacing_gain, self.bw);
        apply_pacing_rate(st, rate, self.full_bw_reached);
    }

    /// §5.6.4.6 `SetCwnd()` with `BoundCwndForProbeRTT()` and `BoundCwndForModel()` (§5.6.4.7).
    fn set_cwnd(&self, st: &mut CwndState, newly_acked: u64) {
        let max_inflight = self.quantization_budget(st, self.bdp_multiple(self.cwnd_gain).saturating_add(self.extra_acked));
        let mut cwnd =
            grow_cwnd(st, st.cwnd_bytes, newly_acked, max_inflight, self.full_bw_reached, self.delivered, self.initial_cwnd);
        if self.state == State::ProbeRtt {
            cwnd = cwnd.min(self.probe_rtt_cwnd(st));
        }
        // BoundCwndForModel.
        let mut cap = INF;
        if self.state.is_probe_bw() && self.state != State::ProbeBwCruise {
            cap = self.inflight_longterm;
        } else if matches!(self.state, State::ProbeRtt | State::ProbeBwCruise) {
            cap = self.inflight_with_headroom(st);
        }
        cap = cap.min(self.inflight_shortterm).max(min_pipe(st));
        st.cwnd_bytes = cwnd.min(cap).max(st.mss_bytes);
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "bbr3", param, value, reason }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    /// §5.2.1 `OnInit()` and §5.6.2 `InitPacingRate()`.
    fn init(&mut self, st: &mut CwndState, now: SimTime) {
        self.initial_cwnd = st.cwnd_bytes;
        self.min_rtt_stamp = now;
        self.probe_rtt_min_stamp = now;
        self.extra_acked_epoch.set_start(now);
        self.cycle_stamp = now;
        st.pacing_rate_bps = Some(initial_pacing_rate_bps(st.cwnd_bytes, STARTUP_PACING_GAIN, INITIAL_RTT_GUESS_S));
        self.enter_startup();
        self.started = true;
    }

    /// §5.2.1 `OnInit()` with an SRTT: the handshake's RTT is `BBR.min_rtt` and sets the
    /// initial pacing rate (§5.6.2 `InitPacingRate()`); Linux's BBRv3 `bbr_init` also starts its
    /// PROBE_RTT min filter from it (`probe_rtt_min_us = tcp_min_rtt(tp)`).
    fn on_handshake_rtt(&mut self, st: &mut CwndState, rtt: Duration, now: SimTime) {
        if rtt == Duration::ZERO {
            return;
        }
        self.min_rtt = Some(rtt);
        self.min_rtt_stamp = now;
        self.probe_rtt_min_delay = Some(rtt);
        self.probe_rtt_min_stamp = now;
        self.has_seen_rtt = true;
        st.pacing_rate_bps = Some(initial_pacing_rate_bps(self.initial_cwnd, STARTUP_PACING_GAIN, rtt.as_secs_f64()));
    }

    fn cong_avoid(&mut self, _st: &mut CwndState, _ack: &AckSample) {
        // Never called: cong_control takes over on every ACK.
    }

    /// BBR does not use ssthresh: it is left unchanged.
    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        st.ssthresh_bytes
    }

    fn set_state(&mut self, st: &mut CwndState, new: CaState, _now: SimTime) {
        match new {
            // §5.6.4.4 OnEnterFastRecovery.
            CaState::Recovery if !self.in_loss_recovery => {
                self.save_state_upon_loss(st);
                self.in_loss_recovery = true;
                self.recovery_start_round = Some(self.round_count);
            }
            CaState::Loss => {
                self.in_loss_recovery = true;
                self.recovery_start_round = None;
            }
            CaState::Open | CaState::Disorder | CaState::Cwr if self.in_loss_recovery => {
                self.in_loss_recovery = false;
                self.recovery_start_round = None;
                self.restore_cwnd(st);
            }
            _ => {}
        }
    }

    fn cwnd_event(&mut self, st: &mut CwndState, ev: CwndEvent, now: SimTime) {
        match ev {
            // §5.6.4.4 OnEnterRTO: save (the transport then sets the one-packet loss window).
            CwndEvent::Loss => {
                self.save_state_upon_loss(st);
                self.in_loss_recovery = true;
            }
            // §5.4.1 HandleRestartFromIdle.
            CwndEvent::TxStart if self.started && self.bw > 0 => {
                self.idle_restart = true;
                self.extra_acked_epoch.set_start(now);
                if self.state.is_probe_bw() {
                    let rate = pacing_rate_with_margin_bps(1.0, self.bw);
                    st.pacing_rate_bps = Some(rate.max(1));
                } else if self.state == State::ProbeRtt {
                    self.check_probe_rtt_done(st, now);
                }
            }
            _ => {}
        }
    }

    /// §5.2.3 `UpdateOnACK()`; losses this ACK reported are handled first (§5.2.4).
    fn cong_control(&mut self, st: &mut CwndState, ack: &AckSample, rs: &RateSample) -> bool {
        reinit_pacing_on_first_rtt(st, &mut self.has_seen_rtt, ack.srtt, self.initial_cwnd, STARTUP_PACING_GAIN);
        let now = ack.now;
        let inflight = ack.in_flight_bytes;
        let has_data = rs.newly_acked_bytes > 0;
        self.delivered = rs.total_delivered_bytes;
        let app_limited = app_limited(rs, &mut self.app_limited_until);
        if ack.cwnd_limited {
            self.cwnd_limited_this_round = true;
        }
        let mut rs = *rs;
        rs.is_app_limited = app_limited;

        // Per-loss steps (and, by this implementation's choice, ECN-Echo as a congestion signal).
        if rs.newly_lost_bytes > 0 {
            self.handle_lost(st, &rs, now);
        } else if ack.ece {
            self.note_loss(st);
        }

        // UpdateModelAndState.
        self.update_latest_delivery_signals(&rs, has_data);
        self.update_congestion_signals(st, &rs, has_data, app_limited);
        if self.round_start {
            self.cwnd_limited_last_round = std::mem::take(&mut self.cwnd_limited_this_round);
        }
        self.update_ack_aggregation(st, now, rs.newly_acked_bytes);
        self.check_full_bw_reached(&rs, app_limited);
        self.check_startup_done(&rs);
        self.check_drain_done(st, now, inflight);
        self.update_probe_bw_cycle_phase(st, now, &rs, inflight, app_limited);
        self.update_min_rtt(now, rs.rtt);
        self.check_probe_rtt(st, now, inflight, &rs);
        self.advance_latest_delivery_signals(&rs);
        self.bw = self.max_bw.min(self.bw_shortterm);

        // UpdateControlParameters.
        self.set_pacing_rate(st);
        self.set_cwnd(st, rs.newly_acked_bytes);
        true
    }

    /// §5.5.11.2 `HandleSpuriousLossDetection()`.
    fn undo_cwnd(&mut self, st: &mut CwndState, prior_cwnd_bytes: u64) {
        st.cwnd_bytes = st.cwnd_bytes.max(prior_cwnd_bytes).max(self.prior_cwnd);
        self.is_loss_in_round = false;
        self.reset_full_bw();
        self.bw_shortterm = self.bw_shortterm.max(self.undo_bw_shortterm);
        self.inflight_shortterm = self.inflight_shortterm.max(self.undo_inflight_shortterm);
        self.inflight_longterm = self.inflight_longterm.max(self.undo_inflight_longterm);
        match self.undo_state {
            Some(State::Startup) if self.state != State::Startup => {
                self.full_bw_reached = false;
                if self.state != State::ProbeRtt {
                    self.enter_startup();
                }
            }
            Some(State::ProbeBwUp) if self.state != State::ProbeBwUp && self.state != State::ProbeRtt => {
                self.start_probe_bw_refill();
            }
            _ => {}
        }
        self.undo_state = None;
    }

    fn mode(&self) -> &'static str {
        self.state.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const RTT: Duration = Duration::from_millis(40);
    const BW: u64 = 100_000_000;
    /// 100 Mbps × 40 ms.
    const BDP: u64 = 500_000;

    /// One synthetic ACK's inputs.
    #[derive(Clone, Copy)]
    struct Ack {
        dt: Duration,
        bytes: u64,
        rate: u64,
        rtt: Duration,
        inflight: u64,
        newly_lost: u64,
        tx_in_flight: u64,
        lost_since: u64,
        /// Measured over a packet sent just now (this ACK starts a packet-timed round); otherwise
        /// over the packet that started the driver's current round.
        new_round: bool,
        cwnd_limited: bool,
        ece: bool,
    }

    impl Default for Ack {
        fn default() -> Ack {
            Ack {
                dt: Duration::from_millis(4),
                bytes: 10 * MSS,
                rate: BW,
                rtt: RTT,
                inflight: 300 * MSS,
                newly_lost: 0,
                tx_in_flight: 300 * MSS,
                lost_since: 0,
                new_round: false,
                cwnd_limited: true,
                ece: false,
            }
        }
    }

    struct Driver {
        bbr: Bbr3,
        st: CwndState,
        now: SimTime,
        delivered: u64,
        round_base: u64,
    }

    impl Driver {
        fn new(params: Params) -> Driver {
            let mut bbr = Bbr3::new(&params).unwrap();
            let mut st = CwndState::new(10 * MSS, MSS);
            bbr.init(&mut st, SimTime::ZERO);
            Driver { bbr, st, now: SimTime::ZERO, delivered: 0, round_base: 0 }
        }

        fn ack(&mut self, a: Ack) {
            if a.new_round {
                self.round_base = self.delivered;
            }
            let prior = self.round_base;
            self.now += a.dt;
            self.delivered += a.bytes;
            let sample = AckSample {
                now: self.now,
                bytes_acked: a.bytes,
                rtt: Some(a.rtt),
                min_rtt: Some(a.rtt),
                srtt: Some(a.rtt),
                one_way_delay: None,
                prior_in_flight_bytes: a.inflight + a.bytes,
                in_flight_bytes: a.inflight,
                snd_una: self.delivered,
                snd_nxt: self.delivered + a.inflight,
                ece: a.ece,
                ce_bytes: 0,
                cwnd_limited: a.cwnd_limited,
                state: CaState::Open,
            };
            let rs = RateSample {
                delivered_bytes: self.delivered - prior,
                interval: a.rtt,
                delivery_rate_bps: a.rate,
                prior_delivered_bytes: prior,
                total_delivered_bytes: self.delivered,
                is_app_limited: false,
                rtt: Some(a.rtt),
                newly_lost_bytes: a.newly_lost,
                newly_acked_bytes: a.bytes,
                tx_in_flight_bytes: a.tx_in_flight,
                lost_bytes: a.lost_since,
            };
            assert!(self.bbr.cong_control(&mut self.st, &sample, &rs));
        }

        /// A packet-timed round: `n` ACKs over one RTT, the first measured over a packet sent a
        /// round ago (so it starts the round).
        fn round(&mut self, n: u64, a: Ack) {
            let mut first = a;
            first.new_round = true;
            first.dt = Duration(RTT.as_nanos() / n);
            self.ack(first);
            for _ in 1..n {
                self.ack(Ack { dt: Duration(RTT.as_nanos() / n), ..a });
            }
        }

        /// From STARTUP, at a constant bandwidth, to PROBE_BW_CRUISE.
        fn run_to_cruise(&mut self) {
            let mut rounds = 0;
            while self.bbr.state() == State::Startup {
                self.round(10, Ack { inflight: 700 * MSS, ..Ack::default() });
                rounds += 1;
                assert!(rounds < 50);
            }
            assert_eq!(self.bbr.state(), State::Drain);
            self.ack(Ack { inflight: 200 * MSS, ..Ack::default() });
            assert_eq!(self.bbr.state(), State::ProbeBwCruise, "DOWN ends at once: inflight ≤ BDP, no longterm bound");
        }
    }

    #[test]
    fn gains_follow_the_drafts_table() {
        let mut d = Driver::new(Params::default());
        assert_eq!((d.bbr.state(), d.bbr.pacing_gain(), d.bbr.cwnd_gain()), (State::Startup, STARTUP_PACING_GAIN, 2.0));
        assert!((STARTUP_PACING_GAIN - 4.0 * std::f64::consts::LN_2).abs() < 1e-12);
        // Initial pacing after the first RTT sample: 2.77 · IW / SRTT.
        d.ack(Ack { bytes: MSS, rate: 0, ..Ack::default() });
        let want = (STARTUP_PACING_GAIN * 10.0 * MSS as f64 * 8.0 / RTT.as_secs_f64()) as u64;
        assert_eq!(d.st.pacing_rate_bps, Some(want));
        let mut rounds = 0;
        while d.bbr.state() == State::Startup {
            d.round(10, Ack { inflight: 700 * MSS, ..Ack::default() });
            rounds += 1;
        }
        assert_eq!((d.bbr.state(), d.bbr.pacing_gain(), d.bbr.cwnd_gain()), (State::Drain, 0.5, 2.0));
        // Pacing = gain · bw · 99%.
        assert_eq!(d.st.pacing_rate_bps, Some((0.5 * BW as f64 * 0.99) as u64));
        // DRAIN gives up after 3 rounds even with inflight above the BDP.
        for _ in 0..4 {
            d.round(10, Ack { inflight: 700 * MSS, ..Ack::default() });
        }
        assert_eq!((d.bbr.state(), d.bbr.pacing_gain(), d.bbr.cwnd_gain()), (State::ProbeBwDown, 0.9, 2.0));
        d.ack(Ack { inflight: 200 * MSS, ..Ack::default() });
        assert_eq!((d.bbr.state(), d.bbr.pacing_gain(), d.bbr.cwnd_gain()), (State::ProbeBwCruise, 1.0, 2.0));
        // CRUISE until the Reno-coexistence bound: min(BDP in packets, 63) rounds.
        let mut n = 0;
        while d.bbr.state() == State::ProbeBwCruise {
            d.round(10, Ack::default());
            n += 1;
            assert!(n <= 64, "probes within 63 rounds (2.52 s < T_bbr)");
        }
        assert!(n >= 62, "cruised {n} rounds");
        assert_eq!((d.bbr.state(), d.bbr.pacing_gain(), d.bbr.cwnd_gain()), (State::ProbeBwRefill, 1.0, 2.0));
        d.round(10, Ack::default());
        assert_eq!((d.bbr.state(), d.bbr.pacing_gain(), d.bbr.cwnd_gain()), (State::ProbeBwUp, 1.25, 2.25));
        let _ = rounds;
    }

    #[test]
    fn loss_above_two_percent_while_probing_sets_inflight_longterm_and_ends_the_probe() {
        let mut d = Driver::new(Params::default());
        d.run_to_cruise();
        while d.bbr.state() != State::ProbeBwUp {
            d.round(10, Ack::default());
        }
        assert_eq!(d.bbr.inflight_longterm(), INF);
        // 1% loss since the measured packet was sent: tolerated.
        d.ack(Ack { newly_lost: MSS, lost_since: 4 * MSS, tx_in_flight: 400 * MSS, ..Ack::default() });
        assert_eq!(d.bbr.state(), State::ProbeBwUp);
        assert_eq!(d.bbr.inflight_longterm(), INF);
        // 2.5% (10 of 400 packets): too high. (Inflight still high: DOWN does not end at once.)
        d.ack(Ack { newly_lost: MSS, lost_since: 10 * MSS, tx_in_flight: 400 * MSS, inflight: 400 * MSS, ..Ack::default() });
        assert_eq!(d.bbr.state(), State::ProbeBwDown);
        // inflight_longterm = max(InflightAtLoss, Beta · TargetInflight): the inflight at which the
        // loss rate crossed 2% (P = one packet): prev = 399 pkts, lost_prev = 9 pkts,
        // prefix = (0.02 · 399 − 9)/0.98 < 0 → 0, so 399 packets.
        let target = d.bbr.target_inflight(&d.st);
        let want = (399 * MSS).max((0.7 * target as f64) as u64);
        assert_eq!(d.bbr.inflight_longterm(), want);
        // DOWN and CRUISE keep 15% headroom below it: cwnd capped at 0.85 · longterm in CRUISE.
        for _ in 0..5 {
            d.round(10, Ack { inflight: 200 * MSS, ..Ack::default() });
        }
        assert_eq!(d.bbr.state(), State::ProbeBwCruise);
        let headroom = want - ((0.15 * want as f64) as u64).max(MSS);
        assert_eq!(d.st.cwnd_bytes, headroom);
    }

    #[test]
    fn loss_when_not_probing_cuts_the_short_term_bounds_once_per_round() {
        let mut d = Driver::new(Params::default());
        d.run_to_cruise();
        for _ in 0..3 {
            d.round(10, Ack::default());
        }
        let cwnd = d.st.cwnd_bytes;
        assert_eq!((d.bbr.bw_shortterm(), d.bbr.inflight_shortterm()), (INF, INF));
        // A lossy round whose delivery rate and volume fell to 50%: at its end
        // bw_shortterm = max(bw_latest, 0.7 · max_bw), inflight_shortterm = max(latest, 0.7 · cwnd).
        d.ack(Ack { rate: BW / 2, new_round: true, ..Ack::default() });
        d.ack(Ack { newly_lost: MSS, lost_since: MSS, rate: BW / 2, ..Ack::default() });
        for _ in 0..8 {
            d.ack(Ack { rate: BW / 2, ..Ack::default() });
        }
        d.round(10, Ack { rate: BW / 2, ..Ack::default() });
        assert_eq!(d.bbr.bw_shortterm(), (0.7 * BW as f64) as u64);
        assert_eq!(d.bbr.inflight_shortterm(), (0.7 * cwnd as f64) as u64);
        assert_eq!(d.bbr.bw(), (0.7 * BW as f64) as u64, "bw = min(max_bw, bw_shortterm)");
        // Another lossy round: ×0.7 again (floored by the latest delivery signals).
        d.ack(Ack { newly_lost: MSS, lost_since: MSS, rate: BW / 2, ..Ack::default() });
        d.round(10, Ack { rate: BW / 2, ..Ack::default() });
        d.round(10, Ack { rate: BW / 2, ..Ack::default() });
        assert_eq!(d.bbr.bw_shortterm(), (BW / 2).max((0.7 * (0.7 * BW as f64) as u64 as f64) as u64));
        // A probe resets the short-term model (REFILL).
        while d.bbr.state() != State::ProbeBwRefill {
            d.round(10, Ack::default());
        }
        assert_eq!((d.bbr.bw_shortterm(), d.bbr.inflight_shortterm()), (INF, INF));
    }

    #[test]
    fn ecn_echo_counts_as_congestion_for_the_short_term_bounds() {
        // draft §3.7: CE marks MUST be treated as congestion; here like a loss for the
        // once-per-round short-term cut, and for nothing else.
        let mut d = Driver::new(Params::default());
        d.run_to_cruise();
        d.round(10, Ack::default());
        d.ack(Ack { rate: BW / 2, new_round: true, ..Ack::default() });
        d.ack(Ack { rate: BW / 2, ece: true, ..Ack::default() });
        d.round(10, Ack { rate: BW / 2, ..Ack::default() });
        assert_eq!(d.bbr.bw_shortterm(), (0.7 * BW as f64) as u64);
        assert_eq!(d.bbr.inflight_longterm(), INF, "no loss rate: the long-term bound stays unset");
    }

    #[test]
    fn inflight_longterm_grows_one_two_four_packets_per_round_while_probing_up() {
        // (ProbeRTT every 10 s, not 5: this synthetic path never shows a new minimum RTT.)
        let mut d = Driver::new(Params::from_pairs(vec![("probe_rtt_interval_s".into(), 10.0)]));
        d.run_to_cruise();
        // Set a bound in a probe, then come back up to it.
        while d.bbr.state() != State::ProbeBwUp {
            d.round(10, Ack::default());
        }
        d.ack(Ack { newly_lost: MSS, lost_since: 20 * MSS, tx_in_flight: 400 * MSS, ..Ack::default() });
        while d.bbr.state() != State::ProbeBwUp {
            d.round(10, Ack { inflight: 200 * MSS, tx_in_flight: 200 * MSS, ..Ack::default() });
        }
        let start = d.bbr.inflight_longterm();
        // cwnd-limited at the bound: each round grows it by 1, 2, 4, ... MSS (spread over the
        // round: one increase per cwnd/2^k bytes acked).
        let mut growth = Vec::new();
        let mut last = start;
        // Delivery rate still growing 30% a round, so no bandwidth plateau ends the probe.
        let mut rate = BW as f64;
        for _ in 0..4 {
            rate *= 1.3;
            d.round(10, Ack { bytes: d.st.cwnd_bytes / 10, rate: rate as u64, inflight: 200 * MSS, tx_in_flight: 200 * MSS, ..Ack::default() });
            growth.push((d.bbr.inflight_longterm() - last) / MSS);
            last = d.bbr.inflight_longterm();
            if d.bbr.state() != State::ProbeBwUp {
                break;
            }
        }
        // The slope doubles every round (the first full round already has the second step).
        assert_eq!(growth.len(), 4, "still probing: {growth:?}");
        assert!(growth.windows(2).all(|w| w[1] == 2 * w[0]), "growth per round {growth:?}");
        assert!(growth[0] <= 4, "starts slowly: {growth:?}");
    }

    #[test]
    fn probe_rtt_every_five_seconds_at_half_a_bdp() {
        let mut d = Driver::new(Params::default());
        // The first ACK brings the minimum RTT; it is never seen again.
        d.ack(Ack { bytes: MSS, rate: 0, ..Ack::default() });
        let t0 = d.now;
        d.run_to_cruise();
        let longer = RTT + Duration::from_millis(5);
        let mut entered = None;
        while d.now < t0 + Duration::from_secs(6) {
            d.ack(Ack { rtt: longer, ..Ack::default() });
            if d.bbr.state() == State::ProbeRtt {
                entered = Some(d.now);
                break;
            }
        }
        let entered = entered.expect("PROBE_RTT within 6 s");
        let since = entered.saturating_since(t0);
        assert!(since > Duration::from_secs(5) && since <= Duration::from_secs(5) + Duration::from_millis(4), "after {since:?}");
        assert_eq!((d.bbr.pacing_gain(), d.bbr.cwnd_gain()), (1.0, 0.5));
        let half_bdp = (0.5 * d.bbr.bw() as f64 / 8.0 * d.bbr.min_rtt().unwrap().as_secs_f64()) as u64;
        assert_eq!(d.st.cwnd_bytes, half_bdp.min(d.bbr.inflight_with_headroom(&d.st)));
        // 200 ms and a round at that inflight, then back to CRUISE.
        for _ in 0..100 {
            d.ack(Ack { inflight: half_bdp, rtt: RTT, dt: Duration::from_millis(5), new_round: true, ..Ack::default() });
            if d.bbr.state() != State::ProbeRtt {
                break;
            }
        }
        assert_eq!(d.bbr.state(), State::ProbeBwCruise);
        let stay = d.now.saturating_since(entered);
        assert!(stay > Duration::from_millis(200) && stay < Duration::from_millis(260), "stayed {stay:?}");
        assert_eq!(d.bbr.max_bw(), BW, "PROBE_RTT's samples did not lower max_bw");
    }

    #[test]
    fn startup_exits_on_sustained_loss_with_longterm_bound() {
        let mut d = Driver::new(Params::default());
        // Delivery rate doubling every round: no plateau.
        for k in 0..6 {
            d.round(10, Ack { rate: BW >> (8 - k), inflight: 200 * MSS, ..Ack::default() });
        }
        assert_eq!(d.bbr.state(), State::Startup);
        d.bbr.set_state(&mut d.st, CaState::Recovery, d.now);
        // A round in recovery with 5 loss events at 5%: not enough events.
        let lossy = |rate| Ack { rate, inflight: 200 * MSS, newly_lost: MSS, lost_since: 10 * MSS, tx_in_flight: 200 * MSS, ..Ack::default() };
        d.round(10, Ack { rate: BW / 4, inflight: 200 * MSS, ..Ack::default() });
        d.round(5, lossy(BW / 2));
        d.round(1, Ack { rate: BW, inflight: 200 * MSS, ..Ack::default() });
        assert_eq!(d.bbr.state(), State::Startup, "5 loss events in the round: stay");
        // Six: leave.
        d.round(6, lossy(2 * BW));
        d.round(1, lossy(4 * BW));
        // Out of STARTUP (and, inflight being under the BDP, through DRAIN in the same ACK).
        assert_ne!(d.bbr.state(), State::Startup);
        assert!(d.bbr.full_bw_reached());
        // inflight_longterm = max(BDP, inflight_latest): the BDP at the bw of the exit (2·BW, the
        // model's bw before the exiting ACK) over the 40 ms min_rtt.
        assert_eq!(d.bbr.inflight_longterm(), 2 * BDP);
    }

    #[test]
    fn parameters_are_validated() {
        for (name, v) in [("loss_thresh", 0.0), ("beta", 1.0), ("headroom", 1.0), ("probe_rtt_interval_s", 20.0), ("min_rtt_filter_s", -1.0), ("seed", 0.5)] {
            match Bbr3::new(&Params::from_pairs(vec![(name.to_string(), v)])) {
                Err(CcError::BadParam { param, .. }) => assert_eq!(param, name),
                other => panic!("{name} = {v}: expected BadParam, got {other:?}"),
            }
        }
        let names: Vec<_> = PARAMS.iter().map(|p| p.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
