//! TCP Prague, the scalable (L4S) congestion controller of
//! draft-briscoe-iccrg-prague-congestion-control-04 (De Schepper, Tilmans, Briscoe, Goel; the
//! latest revision, July 2024): the `prague` flavor.
//!
//! Section numbers below are those of revision -04 where other implementations that cite it
//! confirm them (§2.4.2, §2.4.4); elsewhere the draft's section is named by its subject, in
//! words. The draft describes the defaults of its reference implementation (Linux's
//! `tcp_prague`), so where a value comes from that implementation this module says so.
//!
//! # What it does
//!
//! - **Identifier and feedback** (the draft's packet identification and ECN feedback sections;
//!   RFC 9331 §4.1, RFC 9768): the flow's data carries ECT(1) and its receiver feeds CE back with
//!   Accurate ECN. The catalogue entry says `l4s`, which is what makes the transport do both; the
//!   controller only reads the feedback.
//! - **Congestion estimate** (the draft's moving average of ECN feedback, DCTCP's RFC 8257 §3.3
//!   kept; [`crate::marked_fraction`]): per observation window of one RTT,
//!   `α ← (1 − g)·α + g·M`, g = 1/16, with `M` the fraction of acknowledged bytes that were
//!   CE-marked: [`AckSample::ce_bytes`], Accurate ECN's exact CE byte count. With classic feedback
//!   (no AccECN negotiated: `ce_bytes` is 0 while ECE is set) every byte of an ACK carrying ECE
//!   counts as marked, which with RFC 3168's latched ECE drives α toward 1 and so toward a classic
//!   halving per episode (the draft's fall-back to classic ECN behaviour when AccECN is not
//!   negotiated). α is not updated before the first CE feedback (the reference implementation's
//!   `saw_ce`), so the first reduction uses `alpha_init` (1: a halving, as classic ECN would).
//! - **Multiplicative decrease on ECN feedback** (§2.4.2): on an ECN congestion event
//!   ([`LossKind::Ecn`]), `cwnd ← cwnd·(1 − α/2)`, then no further decrease for one round trip
//!   "even if it receives further ECN feedback": the next reduction needs snd.una past the snd.nxt
//!   of the last one (and, while RTT-independent, the reference RTT elapsed since it). A
//!   suppressed event returns the current cwnd, which the transport applies as no change.
//! - **Response to loss** (the draft's loss response; RFC 9331 §4.3 requires an L4S sender to
//!   respond to loss as a classic one would): Reno's halving,
//!   `ssthresh = max(FlightSize/2, 2·MSS)` (RFC 5681 §3.1 eq. 4, [`crate::reno::halve_flight`]).
//! - **Additive increase** (the draft's additive increase): Reno's slow start
//!   ([`crate::reno::slow_start_first`]), then one MSS per RTT counted per byte
//!   ([`crate::growth::PerRttIncrease`]); only the unmarked bytes of an ACK earn increase, as the
//!   reference implementation does (the increase per RTT then scales with 1 − p, which keeps a
//!   flow growing at marking levels near saturation).
//! - **Reduced RTT-dependence** (§2.4.4): below the reference RTT `rtt_ref` (default 25 ms) a flow
//!   grows as if its RTT were `rtt_ref`: the increase per RTT is scaled by `(srtt/rtt_ref)²`, so
//!   the *rate* (cwnd/srtt) grows by MSS/rtt_ref² per second whatever the RTT; and both the α
//!   update and the decrease happen at most once per `rtt_ref` rather than once per RTT, so the
//!   equilibrium rate under the same marking probability is the same too. It applies only after
//!   slow start and `rtt_transition_rounds` (default 500) rounds of congestion avoidance (the
//!   reference implementation's transition: short flows keep their own RTT's responsiveness).
//! - **Pacing** (the draft's pacing section): always paced at `gain · window / srtt`, gain 2 while
//!   cwnd is below half of ssthresh (slow start: two segments per ACK) and 1 otherwise (the
//!   reference implementation's 200% / 100%). Set on every ACK that delivers data, from the window
//!   before that ACK's own reduction (if any): the next ACK brings the rate down to the reduced
//!   window.
//! - **Reduced minimum window** (the draft's scaling down to fractional windows): cwnd itself
//!   stays at least 2 MSS (the transport's window is whole bytes and
//!   [`CongestionControl::ssthresh`] returns at least 2 MSS), but Prague keeps the window it wants
//!   when that is below 2 MSS as a fractional window and paces at it: a window of 0.5 MSS sends
//!   one segment every two srtt. Reductions and increases apply to the fractional window until it
//!   climbs back to 2 MSS. Its floor, `min_cwnd_segments` (default 1/16 MSS), is ours: the
//!   reference implementation has none beyond its fixed-point arithmetic;
//!   `min_cwnd_segments = 2` turns fractional windows off.
//! - **Fall-back on detection of a classic ECN AQM** (optional, off by default:
//!   `classic_ecn_detection = 1`; the draft's optional classic ECN AQM detection, whose design is
//!   Briscoe and Ahmed, "TCP Prague Fall-back on Detection of a Classic ECN AQM",
//!   arXiv:1911.00710; RFC 9331 §4.3 asks for the fall-back): a classic AQM's queue is deep and
//!   varies, an L4S AQM's shallow and steady, so from the first CE feedback on, once per round
//!   trip of congestion avoidance, a score moves by the logarithms of the RTT's slow mean
//!   deviation and of the queue depth against their references (750 µs, 2 ms), between two
//!   sticky margins ([`crate::classic_ecn_detection`]). The ECN reduction then uses
//!   `α_eff = max(α, c)`, `c` the score clamped to [0, 1]: `α/2` on an L4S path, Reno's halving
//!   on a classic one. Packets stay ECT(1) (the detection changes the response, not the
//!   identifier).
//!
//! # Not implemented
//!
//! Of the classic ECN AQM detection, only the paper's version-2 algorithm is modelled: not the
//! improvements and alternative detection ideas it outlines, nor the reference
//! implementation's per-ACK averaging gain that scales with the window (a fixed gain per round
//! trip here; see [`crate::classic_ecn_detection`]).

use crate::classic_ecn_detection::ClassicEcnDetector;
use crate::growth::PerRttIncrease;
use crate::marked_fraction::MarkedFraction;
use crate::reno::{halve_flight, slow_start_first};
use crate::{
    AckSample, CcError, CongestionControl, CwndEvent, CwndState, Duration, LossEvent, LossKind, ParamInfo, Params,
    SimTime,
};

/// Default estimation gain g, dimensionless (the draft's moving average of ECN feedback: 1/16,
/// DCTCP's RFC 8257 §3.3 value).
pub const DEFAULT_G: f64 = 1.0 / 16.0;

/// Default initial α, dimensionless: the first ECN reduction halves cwnd, as classic ECN would.
pub const DEFAULT_ALPHA_INIT: f64 = 1.0;

/// Default reference RTT of the reduced RTT-dependence, milliseconds (§2.4.4: 25 ms).
pub const DEFAULT_RTT_REF_MS: f64 = 25.0;

/// Default number of congestion-avoidance rounds before the reduced RTT-dependence applies (the
/// reference implementation's `prague_rtt_transition`).
pub const DEFAULT_RTT_TRANSITION_ROUNDS: f64 = 500.0;

/// Default floor of the fractional window, in MSS (ours; see the module documentation).
pub const DEFAULT_MIN_CWND_SEGMENTS: f64 = 1.0 / 16.0;

/// Default pacing gain while cwnd < ssthresh/2 (the reference implementation's 200%).
pub const DEFAULT_PACING_SS_GAIN: f64 = 2.0;

/// Default pacing gain otherwise (the reference implementation's 100%).
pub const DEFAULT_PACING_CA_GAIN: f64 = 1.0;

/// Default of the classic ECN AQM detection: off (0), so Prague's response is the scalable one
/// whatever the bottleneck unless the scenario asks for the fall-back.
pub const DEFAULT_CLASSIC_ECN_DETECTION: f64 = 0.0;

/// The smallest cwnd itself, in MSS: below it the window is fractional and only the pacing rate
/// shrinks further.
const WHOLE_CWND_FLOOR_SEGMENTS: u64 = 2;

/// The `prague` flavor's tunable parameters, with defaults (listed in the registry's catalogue).
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "g",
        default: DEFAULT_G,
        doc: "estimation gain g of α ← (1 − g)·α + g·M, per observation window (the draft's moving \
              average of ECN feedback, RFC 8257 §3.3's g); 0 < g ≤ 1",
    },
    ParamInfo {
        name: "alpha_init",
        default: DEFAULT_ALPHA_INIT,
        doc: "α until the first CE feedback, the fraction the first reduction uses; 0 ≤ alpha_init ≤ 1",
    },
    ParamInfo {
        name: "rtt_ref_ms",
        default: DEFAULT_RTT_REF_MS,
        doc: "reference RTT of the reduced RTT-dependence (draft §2.4.4), milliseconds: below it the \
              flow grows and reduces as if its RTT were this; 0 turns RTT independence off; 0 ≤ rtt_ref_ms ≤ 1000",
    },
    ParamInfo {
        name: "rtt_transition_rounds",
        default: DEFAULT_RTT_TRANSITION_ROUNDS,
        doc: "rounds of congestion avoidance before the reduced RTT-dependence applies (the reference \
              implementation's transition), whole number ≥ 0",
    },
    ParamInfo {
        name: "min_cwnd_segments",
        default: DEFAULT_MIN_CWND_SEGMENTS,
        doc: "floor of the fractional window paced below 2 MSS (the draft's scaling down to \
              fractional windows), in MSS; 2 turns fractional windows off; 0.001 ≤ min_cwnd_segments ≤ 2",
    },
    ParamInfo {
        name: "pacing_ss_gain",
        default: DEFAULT_PACING_SS_GAIN,
        doc: "pacing rate as a multiple of cwnd/srtt while cwnd < ssthresh/2; 0 < pacing_ss_gain ≤ 10",
    },
    ParamInfo {
        name: "pacing_ca_gain",
        default: DEFAULT_PACING_CA_GAIN,
        doc: "pacing rate as a multiple of cwnd/srtt otherwise; 0 < pacing_ca_gain ≤ 10",
    },
    ParamInfo {
        name: "classic_ecn_detection",
        default: DEFAULT_CLASSIC_ECN_DETECTION,
        doc: "1 turns on the fall-back on detection of a classic ECN AQM (Briscoe & Ahmed, \
              arXiv:1911.00710; RFC 9331 §4.3): a deep, varying queue with CE marks moves the \
              ECN response from α/2 to Reno's halving; 0 (default) or 1",
    },
];

/// The parameter names [`Prague::new`] accepts.
const PARAM_NAMES: &[&str] = &[
    "g",
    "alpha_init",
    "rtt_ref_ms",
    "rtt_transition_rounds",
    "min_cwnd_segments",
    "pacing_ss_gain",
    "pacing_ca_gain",
    "classic_ecn_detection",
];

/// The TCP Prague controller. See the module documentation.
#[derive(Debug, Clone)]
pub struct Prague {
    /// α and its observation window.
    estimate: MarkedFraction,
    /// When the current observation window opened; `None` before the first ACK.
    window_opened_at: Option<SimTime>,
    /// CE feedback has been seen on this connection: α is updated only from then on.
    saw_ce: bool,
    /// Reference RTT of the reduced RTT-dependence; zero when it is off.
    rtt_ref: Duration,
    /// Congestion-avoidance rounds before the reduced RTT-dependence applies.
    transition_rounds: u64,
    /// Rounds (of one RTT each: snd.una passing the round's snd.nxt) ended outside slow start.
    ca_rounds: u64,
    /// The current round ends when snd.una passes this; `None` before the first ACK.
    round_end: Option<u64>,
    /// snd.nxt when cwnd was last reduced for ECN: no other reduction until snd.una passes it.
    reduction_end: Option<u64>,
    /// When cwnd was last reduced for ECN.
    reduced_at: Option<SimTime>,
    /// snd.una of the latest ACK, bytes.
    snd_una: u64,
    /// snd.nxt of the latest ACK, bytes.
    snd_nxt: u64,
    /// Smoothed RTT of the latest ACK that had one.
    srtt: Option<Duration>,
    /// Congestion-avoidance growth with its carried fraction of a byte.
    growth: PerRttIncrease,
    /// The window Prague wants when it is below the 2-MSS cwnd floor, bytes (fractional);
    /// `None` when cwnd itself is the window.
    frac_cwnd_bytes: Option<f64>,
    /// Floor of the fractional window, in MSS.
    min_cwnd_segments: f64,
    /// Pacing gain while cwnd < ssthresh/2.
    pacing_ss_gain: f64,
    /// Pacing gain otherwise.
    pacing_ca_gain: f64,
    /// The classic ECN AQM detector; `None` when the detection is off.
    classic_ecn: Option<ClassicEcnDetector>,
}

impl Prague {
    /// A Prague controller from the scenario's parameters (see [`PARAMS`]).
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] for a value
    /// outside the range its documentation gives.
    pub fn new(params: &Params) -> Result<Prague, CcError> {
        params.expect_only("prague", PARAM_NAMES)?;
        let g = params.get_or("g", DEFAULT_G);
        if !(g > 0.0 && g <= 1.0) {
            return Err(bad("g", g, "must be in (0, 1]"));
        }
        let alpha_init = params.get_or("alpha_init", DEFAULT_ALPHA_INIT);
        if !(0.0..=1.0).contains(&alpha_init) {
            return Err(bad("alpha_init", alpha_init, "must be in [0, 1]"));
        }
        let rtt_ref_ms = params.get_or("rtt_ref_ms", DEFAULT_RTT_REF_MS);
        if !(0.0..=1000.0).contains(&rtt_ref_ms) {
            return Err(bad("rtt_ref_ms", rtt_ref_ms, "must be in [0, 1000]"));
        }
        let rounds = params.get_or("rtt_transition_rounds", DEFAULT_RTT_TRANSITION_ROUNDS);
        if !(rounds >= 0.0 && rounds.fract() == 0.0 && rounds <= 1e12) {
            return Err(bad("rtt_transition_rounds", rounds, "must be a whole number ≥ 0"));
        }
        let min_cwnd_segments = params.get_or("min_cwnd_segments", DEFAULT_MIN_CWND_SEGMENTS);
        if !(0.001..=2.0).contains(&min_cwnd_segments) {
            return Err(bad("min_cwnd_segments", min_cwnd_segments, "must be in [0.001, 2]"));
        }
        let pacing_ss_gain = params.get_or("pacing_ss_gain", DEFAULT_PACING_SS_GAIN);
        if !(pacing_ss_gain > 0.0 && pacing_ss_gain <= 10.0) {
            return Err(bad("pacing_ss_gain", pacing_ss_gain, "must be in (0, 10]"));
        }
        let pacing_ca_gain = params.get_or("pacing_ca_gain", DEFAULT_PACING_CA_GAIN);
        if !(pacing_ca_gain > 0.0 && pacing_ca_gain <= 10.0) {
            return Err(bad("pacing_ca_gain", pacing_ca_gain, "must be in (0, 10]"));
        }
        let detection = params.get_or("classic_ecn_detection", DEFAULT_CLASSIC_ECN_DETECTION);
        if detection != 0.0 && detection != 1.0 {
            return Err(bad("classic_ecn_detection", detection, "must be 0 (off) or 1 (on)"));
        }
        Ok(Prague {
            estimate: MarkedFraction::new(g, alpha_init),
            window_opened_at: None,
            saw_ce: false,
            rtt_ref: Duration::from_secs_f64(rtt_ref_ms / 1e3),
            transition_rounds: rounds as u64,
            ca_rounds: 0,
            round_end: None,
            reduction_end: None,
            reduced_at: None,
            snd_una: 0,
            snd_nxt: 0,
            srtt: None,
            growth: PerRttIncrease::new(),
            frac_cwnd_bytes: None,
            min_cwnd_segments,
            pacing_ss_gain,
            pacing_ca_gain,
            classic_ecn: (detection == 1.0).then(ClassicEcnDetector::new),
        })
    }

    /// The current estimate α of the fraction of CE-marked bytes, in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.estimate.alpha()
    }

    /// The classic ECN AQM detector, when `classic_ecn_detection = 1`.
    pub fn classic_ecn(&self) -> Option<&ClassicEcnDetector> {
        self.classic_ecn.as_ref()
    }

    /// The α an ECN reduction uses: α itself, or with the classic ECN AQM detection on
    /// `max(α, c)`, `c` how classic the bottleneck looks (see the module documentation).
    pub fn reduction_alpha(&self) -> f64 {
        match &self.classic_ecn {
            Some(d) => self.alpha().max(d.classic_fraction()),
            None => self.alpha(),
        }
    }

    /// The window Prague is running at, bytes: the fractional window when below the 2-MSS cwnd
    /// floor, cwnd otherwise.
    pub fn window_bytes(&self, st: &CwndState) -> f64 {
        self.frac_cwnd_bytes.unwrap_or(st.cwnd_bytes as f64)
    }

    /// The reduced RTT-dependence applies now (§2.4.4): it is on, slow start is over and the
    /// transition rounds have passed.
    pub fn rtt_independent(&self, st: &CwndState) -> bool {
        self.rtt_ref > Duration::ZERO && !st.in_slow_start() && self.ca_rounds >= self.transition_rounds
    }

    /// Additive increase per RTT, in MSS (§2.4.4): `(srtt/rtt_ref)²` while RTT-independent and
    /// srtt is below the reference RTT, 1 otherwise.
    pub fn increase_per_rtt_segments(&self, st: &CwndState) -> f64 {
        match self.srtt {
            Some(srtt) if self.rtt_independent(st) && srtt < self.rtt_ref => {
                let ratio = srtt.as_secs_f64() / self.rtt_ref.as_secs_f64();
                ratio * ratio
            }
            _ => 1.0,
        }
    }

    /// A round trip has passed since `since` for the purposes of α updates and reductions: always
    /// once the caller's per-RTT condition holds, and while RTT-independent also the reference
    /// RTT (§2.4.4: a flow below `rtt_ref` reacts as often as one at `rtt_ref`).
    fn virtual_rtt_elapsed(&self, st: &CwndState, now: SimTime, since: SimTime) -> bool {
        !self.rtt_independent(st) || now.saturating_since(since) >= self.rtt_ref
    }

    /// §2.4.2: a decrease is allowed when none happened in the last round trip.
    fn may_reduce(&self, st: &CwndState, now: SimTime) -> bool {
        let round_passed = self.reduction_end.is_none_or(|end| self.snd_una > end);
        let virtual_passed = self.reduced_at.is_none_or(|t| self.virtual_rtt_elapsed(st, now, t));
        round_passed && virtual_passed
    }

    /// Make `window_bytes` the window: below the 2-MSS floor it becomes the fractional window
    /// (no lower than `min_cwnd_segments`) and cwnd the floor. Returns the cwnd, bytes.
    fn set_window(&mut self, st: &CwndState, window_bytes: f64) -> u64 {
        let floor = (WHOLE_CWND_FLOOR_SEGMENTS * st.mss_bytes) as f64;
        if window_bytes < floor {
            self.frac_cwnd_bytes = Some(window_bytes.max(self.min_cwnd_segments * st.mss_bytes as f64));
            WHOLE_CWND_FLOOR_SEGMENTS * st.mss_bytes
        } else {
            self.frac_cwnd_bytes = None;
            window_bytes as u64
        }
    }

    /// Pacing, always: `gain · window / srtt` (see the module documentation). Nothing before the
    /// first RTT sample.
    fn update_pacing(&self, st: &mut CwndState) {
        let Some(srtt) = self.srtt.filter(|d| *d > Duration::ZERO) else { return };
        let gain = if st.cwnd_bytes < st.ssthresh_bytes / 2 { self.pacing_ss_gain } else { self.pacing_ca_gain };
        let rate_bps = gain * self.window_bytes(st) * 8.0 / srtt.as_secs_f64();
        st.pacing_rate_bps = Some((rate_bps as u64).max(1));
    }
}

/// Bytes an ACK reports as CE-marked: Accurate ECN's CE byte count when it has one, otherwise
/// (classic feedback) all its bytes when it carries ECE.
pub fn marked_bytes(ack: &AckSample) -> u64 {
    if ack.ce_bytes > 0 {
        ack.ce_bytes
    } else if ack.ece {
        ack.bytes_acked
    } else {
        0
    }
}

impl CongestionControl for Prague {
    fn name(&self) -> &'static str {
        "prague"
    }

    /// Additive increase goes on through the transport's CWR after an ECN reduction (see the
    /// trait method): the once-per-RTT limit is on reductions, not on growth.
    fn grows_during_ecn_cwr(&self) -> bool {
        true
    }

    fn on_handshake_rtt(&mut self, st: &mut CwndState, rtt: Duration, _now: SimTime) {
        self.srtt = Some(rtt);
        self.update_pacing(st);
    }

    /// Rounds, the α estimate (once per round trip; once per reference RTT while
    /// RTT-independent, §2.4.4) and the pacing rate.
    fn pkts_acked(&mut self, st: &mut CwndState, ack: &AckSample) {
        self.snd_una = ack.snd_una;
        self.snd_nxt = ack.snd_nxt;
        if ack.srtt.is_some() {
            self.srtt = ack.srtt;
        }
        let marked = marked_bytes(ack);
        self.saw_ce |= marked > 0;

        let window = self.window_bytes(st);
        if let Some(d) = self.classic_ecn.as_mut() {
            d.on_ack(ack, window);
        }
        match self.round_end {
            Some(end) if ack.snd_una > end => {
                if !st.in_slow_start() {
                    self.ca_rounds += 1;
                    // One round trip of evidence, once CE shows there is an ECN AQM at all.
                    if let (Some(d), true, Some(min_rtt)) = (self.classic_ecn.as_mut(), self.saw_ce, ack.min_rtt) {
                        d.end_round(min_rtt);
                    }
                }
                self.round_end = Some(ack.snd_nxt);
            }
            Some(_) => {}
            None => self.round_end = Some(ack.snd_nxt),
        }

        let opened_at = *self.window_opened_at.get_or_insert(ack.now);
        self.estimate.count(ack.bytes_acked, marked, ack.snd_nxt);
        if self.estimate.window_passed(ack.snd_una) && self.virtual_rtt_elapsed(st, ack.now, opened_at) {
            self.estimate.close_window(ack.snd_nxt, self.saw_ce);
            self.window_opened_at = Some(ack.now);
        }
        self.update_pacing(st);
    }

    /// Reno's slow start, then `increase_per_rtt_segments` MSS per RTT, from the ACK's unmarked
    /// bytes, while the window limits the sender.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample) {
        let window = self.window_bytes(st);
        // Window-limited: the transport saw a full window, or the window was within one MSS of
        // full when this ACK arrived. The second covers a sender held back by pacing at exactly
        // window/srtt, which seldom finds the window full yet is using all of it.
        let limited = ack.cwnd_limited || (ack.prior_in_flight_bytes + st.mss_bytes) as f64 > window;
        if limited {
            let unmarked = ack.bytes_acked - marked_bytes(ack).min(ack.bytes_acked);
            let a = self.increase_per_rtt_segments(st);
            if let Some(frac) = self.frac_cwnd_bytes {
                // a MSS per window of bytes acknowledged, but at most a MSS per MSS acknowledged:
                // one ACK of a whole segment on a window of a quarter segment must not add four.
                let mss = st.mss_bytes as f64;
                let grown = frac + a * mss * unmarked as f64 / frac.max(mss);
                self.set_window(st, grown);
            } else if let Some(left) = slow_start_first(st, unmarked) {
                self.growth.apply(st, a, left);
            }
        }
        self.update_pacing(st);
    }

    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        self.growth.reset();
        match ev.kind {
            // §2.4.2: cwnd · (1 − α/2), at most once per round trip; α at least the classic
            // fraction when the classic ECN AQM detection is on.
            LossKind::Ecn => {
                if !self.may_reduce(st, ev.now) {
                    return st.cwnd_bytes.max(WHOLE_CWND_FLOOR_SEGMENTS * st.mss_bytes);
                }
                self.reduction_end = Some(self.snd_nxt);
                self.reduced_at = Some(ev.now);
                let reduced = self.window_bytes(st) * (1.0 - self.reduction_alpha() / 2.0);
                self.set_window(st, reduced)
            }
            // Reno's halving; a fractional window halves too.
            LossKind::FastRetransmit => {
                if let Some(frac) = self.frac_cwnd_bytes {
                    self.set_window(st, frac / 2.0);
                }
                halve_flight(st, ev)
            }
            // After a timeout slow start restarts from the loss window (RFC 5681 §3.1).
            LossKind::Timeout => {
                self.frac_cwnd_bytes = None;
                halve_flight(st, ev)
            }
        }
    }

    fn cwnd_event(&mut self, _st: &mut CwndState, ev: CwndEvent, _now: SimTime) {
        if ev == CwndEvent::Loss {
            self.frac_cwnd_bytes = None;
        }
    }

    /// Linux's `tcp_reno_undo_cwnd`, and the fractional window is forgotten once cwnd is above
    /// the floor again.
    fn undo_cwnd(&mut self, st: &mut CwndState, prior_cwnd_bytes: u64) {
        st.cwnd_bytes = st.cwnd_bytes.max(prior_cwnd_bytes);
        if st.cwnd_bytes > WHOLE_CWND_FLOOR_SEGMENTS * st.mss_bytes {
            self.frac_cwnd_bytes = None;
        }
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "prague", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classic_ecn_detection::STICKY_WIDTH;
    use crate::growth::testing::{self, MSS};
    use crate::reno::Reno;
    use crate::CaState;
    use proptest::prelude::*;

    fn prague(pairs: &[(&str, f64)]) -> Prague {
        Prague::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())).unwrap()
    }

    /// A sender that keeps its window full, acknowledged one MSS per ACK, `rtt` per window.
    struct Flow {
        st: CwndState,
        una: u64,
        nxt: u64,
        now: SimTime,
        rtt: Duration,
        /// The path's minimum RTT (the ACKs' min_rtt); `rtt` at the start.
        base_rtt: Duration,
        /// ECN reductions that took effect (the window shrank).
        reductions: u32,
    }

    impl Flow {
        fn new(cwnd_segments: u64, rtt: Duration) -> Flow {
            let st = CwndState::new(cwnd_segments * MSS, MSS);
            Flow { st, una: 0, nxt: cwnd_segments * MSS, now: SimTime::ZERO, rtt, base_rtt: rtt, reductions: 0 }
        }

        /// One ACK of one MSS, `ce_bytes` of it reported CE by AccECN (`classic`: reported by ECE
        /// alone, ce_bytes 0), processed in the transport's order: pkts_acked, then an ECN
        /// event if the ACK reports CE, else cong_avoid; then the window is refilled.
        fn ack(&mut self, p: &mut Prague, ce_bytes: u64, classic: bool) {
            self.ack_segments(p, 1, ce_bytes, classic);
        }

        /// [`Flow::ack`] for an ACK of `segments` MSS (the ACKs for the others were lost).
        fn ack_segments(&mut self, p: &mut Prague, segments: u64, ce_bytes: u64, classic: bool) {
            let window = p.window_bytes(&self.st).max(1.0);
            let acked = (segments * MSS).min(self.nxt - self.una).max(MSS);
            self.now += Duration((self.rtt.as_nanos() as f64 * acked as f64 / window) as u64);
            let prior_in_flight = self.nxt - self.una;
            self.una += acked;
            self.nxt = self.nxt.max(self.una);
            let a = AckSample {
                now: self.now,
                bytes_acked: acked,
                rtt: Some(self.rtt),
                min_rtt: Some(self.base_rtt),
                srtt: Some(self.rtt),
                one_way_delay: None,
                prior_in_flight_bytes: prior_in_flight,
                in_flight_bytes: prior_in_flight.saturating_sub(acked),
                snd_una: self.una,
                snd_nxt: self.nxt,
                ece: ce_bytes > 0,
                ce_bytes: if classic { 0 } else { ce_bytes },
                cwnd_limited: true,
                state: CaState::Open,
            };
            p.pkts_acked(&mut self.st, &a);
            if a.ece {
                self.ecn(p);
            } else {
                p.cong_avoid(&mut self.st, &a);
            }
            self.nxt = self.nxt.max(self.una + self.st.cwnd_bytes);
        }

        /// An ECN congestion event applied as the transport applies it.
        fn ecn(&mut self, p: &mut Prague) {
            let before = p.window_bytes(&self.st);
            let ev = testing::loss(self.now, LossKind::Ecn, &self.st);
            let ss = p.ssthresh(&self.st, &ev);
            assert!(ss >= 2 * MSS, "ssthresh {ss} below 2 MSS");
            self.st.ssthresh_bytes = ss;
            self.st.cwnd_bytes = self.st.cwnd_bytes.min(ss);
            if p.window_bytes(&self.st) < before {
                self.reductions += 1;
            }
        }

        /// One window's worth of unmarked ACKs.
        fn clean_rtt(&mut self, p: &mut Prague) {
            let n = (p.window_bytes(&self.st) / MSS as f64).ceil().max(1.0) as u64;
            for _ in 0..n {
                self.ack(p, 0, false);
            }
        }
    }

    /// Drive `windows` observation windows of `n` one-MSS ACKs each, the first `marked` of every
    /// window reported CE by AccECN; snd.nxt is the window's end while it is acknowledged.
    fn drive(p: &mut Prague, st: &mut CwndState, una: &mut u64, windows: usize, n: u64, marked: u64) {
        for _ in 0..windows {
            let nxt = *una + n * MSS;
            for i in 0..n {
                *una += MSS;
                let mut a = testing::ack(SimTime::ZERO, MSS, Duration::from_millis(10));
                a.snd_una = *una;
                a.snd_nxt = nxt;
                a.ce_bytes = if i < marked { MSS } else { 0 };
                a.ece = i < marked;
                p.pkts_acked(st, &a);
            }
        }
    }

    #[test]
    fn alpha_waits_for_the_first_ce_then_follows_the_ewma() {
        let mut p = prague(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut una = 0;
        drive(&mut p, &mut st, &mut una, 5, 20, 0);
        assert_eq!(p.alpha(), 1.0, "no CE feedback yet: α keeps its initial value");
        // Windows of 20 ACKs, the first 5 CE-marked (F = 1/4). Window k closes on the first ACK
        // of window k + 1, which is in it: the first closing holds one marked ACK of 20 (the
        // first CE feedback, which lets α move), every later one 5 of 20.
        drive(&mut p, &mut st, &mut una, 10, 20, 5);
        let g = DEFAULT_G;
        let mut expect = (1.0 - g) * 1.0 + g * (1.0 / 20.0);
        for _ in 1..10 {
            expect = (1.0 - g) * expect + g * 0.25;
        }
        assert!((p.alpha() - expect).abs() < 1e-12, "α = {}, closed form {expect}", p.alpha());
        drive(&mut p, &mut st, &mut una, 300, 20, 5);
        assert!((p.alpha() - 0.25).abs() < 1e-6, "α converges to F: {}", p.alpha());
    }

    #[test]
    fn classic_feedback_counts_every_byte_of_an_ece_ack() {
        // ECE with no AccECN byte count: the whole ACK is marked.
        let mut a = testing::ack(SimTime::ZERO, 3 * MSS, Duration::from_millis(10));
        a.ece = true;
        assert_eq!(marked_bytes(&a), 3 * MSS);
        // AccECN reports the exact CE bytes, ECE derived from them.
        a.ce_bytes = MSS;
        assert_eq!(marked_bytes(&a), MSS);
        a.ece = false;
        a.ce_bytes = 0;
        assert_eq!(marked_bytes(&a), 0);

        // Under classic feedback every ACK of a marked window carries ECE (RFC 3168's latch):
        // α climbs toward 1, so the reductions become classic halvings.
        let mut p = prague(&[("alpha_init", 0.0)]);
        let mut f = Flow::new(20, Duration::from_millis(10));
        f.st.ssthresh_bytes = f.st.cwnd_bytes;
        for _ in 0..20 {
            for _ in 0..20 {
                f.ack(&mut p, MSS, true);
            }
        }
        assert!(p.alpha() > 0.7, "α = {}", p.alpha());
    }

    #[test]
    fn ecn_reduction_is_alpha_scaled_and_once_per_rtt() {
        let mut p = prague(&[("alpha_init", 0.5)]);
        let mut f = Flow::new(100, Duration::from_millis(10));
        f.st.ssthresh_bytes = f.st.cwnd_bytes;
        f.clean_rtt(&mut p);
        let w0 = f.st.cwnd_bytes;
        // A marked ACK: cwnd · (1 − α/2). It also closes an observation window (one marked MSS
        // among the window's bytes), so α has just moved a little below its initial 0.5.
        f.ack(&mut p, MSS, false);
        assert_eq!(f.reductions, 1);
        assert!(p.alpha() < 0.5 && p.alpha() > 0.46, "α = {}", p.alpha());
        assert_eq!(f.st.cwnd_bytes, (w0 as f64 * (1.0 - p.alpha() / 2.0)) as u64);
        // More marks within the same round trip: suppressed (§2.4.2).
        let after_first = f.st.cwnd_bytes;
        for _ in 0..30 {
            f.ack(&mut p, MSS, false);
        }
        assert_eq!(f.reductions, 1, "one reduction per round trip");
        assert_eq!(f.st.cwnd_bytes, after_first);
        // Once snd.una passes the snd.nxt of the reduction, the next mark reduces again.
        while f.una <= p.reduction_end.unwrap() {
            f.ack(&mut p, 0, false);
        }
        f.ack(&mut p, MSS, false);
        assert_eq!(f.reductions, 2);
    }

    #[test]
    fn loss_halves_like_reno_whatever_alpha() {
        let mut p = prague(&[("alpha_init", 0.0)]);
        let st = testing::ca_state(100);
        let ev = testing::loss(SimTime::ZERO, LossKind::Ecn, &st);
        assert_eq!(p.ssthresh(&st, &ev), 100 * MSS, "α = 0: an ECN event does not reduce");
        for kind in [LossKind::FastRetransmit, LossKind::Timeout] {
            let ev = testing::loss(SimTime::ZERO, kind, &st);
            assert_eq!(p.ssthresh(&st, &ev), 50 * MSS, "{kind:?}");
        }
        let small = testing::ca_state(3);
        let ev = testing::loss(SimTime::ZERO, LossKind::FastRetransmit, &small);
        assert_eq!(p.ssthresh(&small, &ev), 2 * MSS, "Reno's 2-MSS floor");
    }

    #[test]
    fn rate_growth_per_second_is_rtt_independent_below_the_reference_rtt() {
        // Congestion avoidance for one second at 5 ms and at 25 ms base RTT, RTT independence
        // in force from the start. Rate growth = cwnd growth / RTT.
        fn rate_growth(cc: &mut dyn CongestionControl, rtt_ms: u64) -> f64 {
            let rtt = Duration::from_millis(rtt_ms);
            let mut st = testing::ca_state(100);
            cc.on_handshake_rtt(&mut st, rtt, SimTime::ZERO);
            for _ in 0..1000 / rtt_ms {
                testing::one_rtt(cc, &mut st, rtt);
            }
            (st.cwnd_bytes - 100 * MSS) as f64 / MSS as f64 / rtt.as_secs_f64()
        }
        let args = [("rtt_transition_rounds", 0.0)];
        let p5 = rate_growth(&mut prague(&args), 5);
        let p25 = rate_growth(&mut prague(&args), 25);
        // At the reference RTT: 1 MSS per RTT (a little less: the window grows within the RTT),
        // 40 RTTs, 40 MSS per 25 ms.
        assert!((p25 / (40.0 / 0.025) - 1.0).abs() < 0.02, "25 ms: {p25} MSS/s per s");
        assert!((p5 / p25 - 1.0).abs() < 0.05, "Prague: 5 ms {p5} vs 25 ms {p25}");
        let r5 = rate_growth(&mut Reno::new("reno", &Params::default()).unwrap(), 5);
        let r25 = rate_growth(&mut Reno::new("reno", &Params::default()).unwrap(), 25);
        assert!(r5 / r25 > 20.0, "Reno's rate grows (25/5)² = 25 times faster at 5 ms: {r5} vs {r25}");
        // Without RTT independence Prague grows like Reno.
        let off = [("rtt_ref_ms", 0.0)];
        let o5 = rate_growth(&mut prague(&off), 5);
        assert!((o5 / r5 - 1.0).abs() < 0.01, "rtt_ref_ms = 0: {o5} vs Reno {r5}");
    }

    #[test]
    fn rtt_independence_waits_for_the_transition_rounds_and_spaces_reductions() {
        let mut p = prague(&[("rtt_transition_rounds", 10.0)]);
        let mut f = Flow::new(50, Duration::from_millis(5));
        f.st.ssthresh_bytes = f.st.cwnd_bytes;
        f.clean_rtt(&mut p);
        assert!(!p.rtt_independent(&f.st));
        assert_eq!(p.increase_per_rtt_segments(&f.st), 1.0);
        for _ in 0..11 {
            f.clean_rtt(&mut p);
        }
        assert!(p.rtt_independent(&f.st));
        assert!((p.increase_per_rtt_segments(&f.st) - 0.04).abs() < 1e-12, "(5/25)²");
        // Marks on every ACK for 100 ms: one reduction per 25 ms reference RTT, not per 5 ms RTT.
        let start = f.now;
        while f.now.saturating_since(start) < Duration::from_millis(100) {
            f.ack(&mut p, MSS, false);
        }
        assert!((4..=5).contains(&f.reductions), "{} reductions in 100 ms", f.reductions);
    }

    #[test]
    fn slow_start_and_additive_increase_count_only_unmarked_bytes() {
        let mut p = prague(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut a = testing::ack(SimTime::ZERO, 2 * MSS, Duration::from_millis(10));
        a.ce_bytes = MSS;
        a.ece = true;
        p.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 11 * MSS, "slow start on the one unmarked MSS");
        a.ce_bytes = 2 * MSS;
        p.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 11 * MSS, "a fully marked ACK earns nothing");
    }

    #[test]
    fn no_growth_when_the_application_limits_the_sender() {
        let mut p = prague(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        let mut a = testing::ack(SimTime::ZERO, 2 * MSS, Duration::from_millis(10));
        a.cwnd_limited = false;
        a.prior_in_flight_bytes = 3 * MSS;
        p.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 10 * MSS);
        // Paced at window/srtt, the window within one MSS of full counts as limiting.
        a.prior_in_flight_bytes = 9 * MSS + 1;
        p.cong_avoid(&mut st, &a);
        assert_eq!(st.cwnd_bytes, 12 * MSS);
    }

    #[test]
    fn paced_always_at_twice_the_window_in_slow_start_and_once_in_avoidance() {
        let mut p = prague(&[]);
        let rtt = Duration::from_millis(10);
        let mut st = CwndState::new(10 * MSS, MSS);
        p.cong_avoid(&mut st, &testing::ack(SimTime::ZERO, MSS, rtt));
        assert_eq!(st.pacing_rate_bps, None, "no RTT sample yet");
        assert_eq!(st.cwnd_bytes, 11 * MSS, "slow start");
        p.pkts_acked(&mut st, &testing::ack(SimTime::ZERO, MSS, rtt));
        assert_eq!(st.pacing_rate_bps, Some(2 * 11 * MSS * 8 * 100));
        st.cwnd_bytes = 10 * MSS;
        st.ssthresh_bytes = 10 * MSS;
        p.pkts_acked(&mut st, &testing::ack(SimTime::ZERO, MSS, rtt));
        assert_eq!(st.pacing_rate_bps, Some(10 * MSS * 8 * 100));
        // The handshake's RTT paces the very first window.
        let mut q = prague(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        q.on_handshake_rtt(&mut st, Duration::from_millis(20), SimTime::ZERO);
        assert_eq!(st.pacing_rate_bps, Some(2 * 10 * MSS * 8 * 50));
    }

    #[test]
    fn the_window_goes_fractional_below_two_mss_and_paces_at_it() {
        let mut p = prague(&[("alpha_init", 1.0), ("min_cwnd_segments", 0.25)]);
        let mut f = Flow::new(4, Duration::from_millis(10));
        f.st.ssthresh_bytes = f.st.cwnd_bytes;
        // Every byte CE-marked: α stays 1, nothing grows, one halving per round trip.
        let mut windows = vec![];
        for _ in 0..40 {
            f.ack(&mut p, MSS, false);
            assert!(f.st.cwnd_bytes >= 2 * MSS, "cwnd never below 2 MSS");
            let w = p.window_bytes(&f.st) / MSS as f64;
            if windows.last() != Some(&w) {
                windows.push(w);
            }
        }
        assert_eq!(windows, [2.0, 1.0, 0.5, 0.25], "4 MSS halved down to the floor");
        assert_eq!(f.reductions, 4);
        assert_eq!(f.st.cwnd_bytes, 2 * MSS);
        let rate = f.st.pacing_rate_bps.unwrap();
        assert_eq!(rate, (0.25 * MSS as f64 * 8.0 / 0.010) as u64, "paced at the fractional window");
        // Without marks it grows back by at most one MSS per segment acknowledged and leaves the
        // fractional regime at 2 MSS.
        f.ack(&mut p, 0, false);
        assert_eq!(p.window_bytes(&f.st), 1.25 * MSS as f64);
        f.ack(&mut p, 0, false);
        assert_eq!(p.frac_cwnd_bytes, None);
        assert_eq!(f.st.cwnd_bytes, 2 * MSS);
        // With min_cwnd_segments = 2 the window never goes fractional.
        let mut q = prague(&[("alpha_init", 1.0), ("min_cwnd_segments", 2.0)]);
        let st = testing::ca_state(2);
        let ev = testing::loss(SimTime::ZERO, LossKind::Ecn, &st);
        assert_eq!(q.ssthresh(&st, &ev), 2 * MSS);
        assert_eq!(q.window_bytes(&st), (2 * MSS) as f64);
    }

    #[test]
    fn a_timeout_or_an_undo_leaves_the_fractional_regime() {
        let mut p = prague(&[("alpha_init", 1.0)]);
        let st = testing::ca_state(2);
        p.ssthresh(&st, &testing::loss(SimTime::ZERO, LossKind::Ecn, &st));
        assert!(p.frac_cwnd_bytes.is_some());
        p.ssthresh(&st, &testing::loss(SimTime::ZERO, LossKind::Timeout, &st));
        assert_eq!(p.frac_cwnd_bytes, None);
        let mut p = prague(&[("alpha_init", 1.0)]);
        let mut st = testing::ca_state(2);
        p.ssthresh(&st, &testing::loss(SimTime::ZERO, LossKind::Ecn, &st));
        p.undo_cwnd(&mut st, 8 * MSS);
        assert_eq!(st.cwnd_bytes, 8 * MSS);
        assert_eq!(p.frac_cwnd_bytes, None);
    }

    /// `rounds` round trips of a path with base RTT 20 ms whose RTT samples alternate between
    /// `20 + lo_ms` and `20 + hi_ms` (the queue), one ACK in `mark_every` CE-marked (AccECN; 0:
    /// none).
    /// Returns the window just before and just after the last reduction, MSS.
    fn run_path(p: &mut Prague, f: &mut Flow, rounds: usize, lo_ms: f64, hi_ms: f64, mark_every: u64) -> (f64, f64) {
        let mut last = (0.0, 0.0);
        let mut i = 0u64;
        for _ in 0..rounds {
            let n = (p.window_bytes(&f.st) / MSS as f64).ceil().max(1.0) as u64;
            for _ in 0..n {
                let q = if i.is_multiple_of(2) { lo_ms } else { hi_ms };
                f.rtt = Duration::from_secs_f64((20.0 + q) / 1e3);
                let before = p.window_bytes(&f.st);
                let reductions = f.reductions;
                f.ack(p, if mark_every > 0 && i.is_multiple_of(mark_every) { MSS } else { 0 }, false);
                if f.reductions > reductions {
                    last = (before / MSS as f64, p.window_bytes(&f.st) / MSS as f64);
                }
                i += 1;
            }
        }
        last
    }

    fn flow_at_20ms(cwnd_segments: u64) -> Flow {
        let mut f = Flow::new(cwnd_segments, Duration::from_millis(20));
        f.st.ssthresh_bytes = f.st.cwnd_bytes;
        f
    }

    #[test]
    fn a_deep_varying_queue_with_marks_moves_the_score_to_classic_and_the_response_to_halving() {
        // A classic AQM's queue: 4 to 16 ms (σ = 6 ms = 8·V0, τ ≈ 10 ms = 5·D0), one ACK in 50
        // marked (α settles near 2%).
        let mut p = prague(&[("classic_ecn_detection", 1.0), ("alpha_init", 0.0)]);
        let mut f = flow_at_20ms(100);
        let d = p.classic_ecn().unwrap();
        assert_eq!(d.score(), -STICKY_WIDTH, "a connection starts fully L4S");
        // The first rounds: the score climbs through the L4S sticky margin.
        run_path(&mut p, &mut f, 3, 4.0, 16.0, 50);
        let early = p.classic_ecn().unwrap().score();
        assert!(early > -STICKY_WIDTH && early < 0.0, "score after 3 rounds {early}");
        let (before, after) = run_path(&mut p, &mut f, 40, 4.0, 16.0, 50);
        let d = p.classic_ecn().unwrap();
        assert_eq!(d.score(), 1.0 + STICKY_WIDTH, "fully classic: σ {} s", d.variation_s());
        assert!(p.alpha() < 0.1, "α itself stays small: {}", p.alpha());
        assert_eq!(p.reduction_alpha(), 1.0);
        assert!((after / before - 0.5).abs() < 0.01, "a halving: {before:.1} → {after:.1} MSS");

        // The same path without the detection: α/2, a reduction of a few percent.
        let mut q = prague(&[("alpha_init", 0.0)]);
        let mut g = flow_at_20ms(100);
        let (before, after) = run_path(&mut q, &mut g, 43, 4.0, 16.0, 50);
        assert!(q.classic_ecn().is_none());
        assert!(after / before > 0.9, "scalable: {before:.1} → {after:.1} MSS, α {}", q.alpha());
    }

    #[test]
    fn a_shallow_steady_l4s_queue_keeps_the_response_scalable() {
        // An L4S AQM's queue: 0.2 to 0.8 ms (σ = 0.3 ms, τ ≈ 0.5 ms < D0), one ACK in 5 marked.
        let mut p = prague(&[("classic_ecn_detection", 1.0), ("alpha_init", 0.0)]);
        let mut f = flow_at_20ms(100);
        let (before, after) = run_path(&mut p, &mut f, 60, 0.2, 0.8, 5);
        let d = p.classic_ecn().unwrap();
        assert_eq!(d.score(), -STICKY_WIDTH, "stays L4S");
        assert_eq!(d.classic_fraction(), 0.0);
        assert_eq!(p.reduction_alpha(), p.alpha());
        let expect = 1.0 - p.alpha() / 2.0;
        assert!((after / before - expect).abs() < 0.02, "α/2 = {}: {before:.1} → {after:.1} MSS", p.alpha() / 2.0);
    }

    #[test]
    fn no_ce_feedback_no_evidence() {
        // A deep varying queue without any CE mark (a drop-tail FIFO): the score does not move.
        let mut p = prague(&[("classic_ecn_detection", 1.0)]);
        let mut f = flow_at_20ms(50);
        run_path(&mut p, &mut f, 30, 4.0, 16.0, 0);
        assert_eq!(p.classic_ecn().unwrap().score(), -STICKY_WIDTH);
    }

    #[test]
    fn parameters_are_validated() {
        for (name, v) in [
            ("g", 0.0),
            ("g", 1.5),
            ("alpha_init", -0.1),
            ("alpha_init", 1.1),
            ("rtt_ref_ms", -1.0),
            ("rtt_ref_ms", 2000.0),
            ("rtt_transition_rounds", -1.0),
            ("rtt_transition_rounds", 1.5),
            ("min_cwnd_segments", 0.0),
            ("min_cwnd_segments", 3.0),
            ("pacing_ss_gain", 0.0),
            ("pacing_ca_gain", 11.0),
            ("classic_ecn_detection", 0.5),
            ("classic_ecn_detection", 2.0),
        ] {
            let p = Params::from_pairs(vec![(name.to_string(), v)]);
            match Prague::new(&p) {
                Err(CcError::BadParam { param, .. }) => assert_eq!(param, name),
                other => panic!("{name} = {v}: expected BadParam, got {other:?}"),
            }
        }
        assert!(matches!(
            Prague::new(&Params::from_pairs(vec![("k".into(), 1.0)])),
            Err(CcError::UnknownParam { .. })
        ));
        let names: Vec<_> = PARAMS.iter().map(|p| p.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Random CE marks (quarters of each ACK's bytes marked, AccECN or classic feedback) on
        /// ACKs of 1 to 4 segments (lost ACKs fold their bytes and CE counts into the next), an
        /// ECN event on every marked ACK, occasional losses: cwnd never below 2 MSS, the window
        /// never below its floor, α in [0, 1], and at most one ECN reduction per round trip.
        #[test]
        fn prague_under_random_marks(
            marks in proptest::collection::vec((1u64..=4, 0u64..=4), 200..1500),
            classic in any::<bool>(),
            rtt_ms in 1u64..60,
            losses in proptest::collection::vec(0usize..1500, 0..4),
            init in 2u64..40,
        ) {
            let mut p = prague(&[("rtt_transition_rounds", 0.0), ("min_cwnd_segments", 0.125)]);
            let mut f = Flow::new(init, Duration::from_millis(rtt_ms));
            // Reductions counted per round: a round ends when snd.una passes the snd.nxt of the
            // previous reduction.
            let mut round_end: Option<u64> = None;
            for (i, &(segments, quarters)) in marks.iter().enumerate() {
                let ce = quarters * segments * MSS / 4;
                let before = f.reductions;
                if losses.contains(&i) {
                    let ev = testing::loss(f.now, LossKind::FastRetransmit, &f.st);
                    let ss = p.ssthresh(&f.st, &ev);
                    f.st.ssthresh_bytes = ss;
                    f.st.cwnd_bytes = ss;
                }
                f.ack_segments(&mut p, segments, ce, classic);
                if f.reductions > before {
                    if let Some(end) = round_end {
                        prop_assert!(f.una > end, "second reduction in one round trip at ACK {}", i);
                    }
                    round_end = Some(p.snd_nxt);
                }
                prop_assert!(f.st.cwnd_bytes >= 2 * MSS);
                prop_assert!(p.window_bytes(&f.st) >= 0.125 * MSS as f64 - 1e-9);
                prop_assert!((0.0..=1.0).contains(&p.alpha()));
                if let Some(r) = f.st.pacing_rate_bps {
                    prop_assert!(r >= 1);
                }
            }
        }
    }
}
