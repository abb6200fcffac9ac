//! UDT's native rate control, DAIMD (AIMD with decreasing increases): the `udt` controller.
//!
//! Sources: Gu and Grossman, "UDT: UDP-based data transfer for high-speed wide area networks",
//! Computer Networks 51(7), 2007, §3 (the control law x ← x + α(x) every SYN, x ← (1 − 1/9)·x on
//! a loss report); draft-gg-udt-03 (2010) §6 (the sender's and receiver's algorithms: periodic ACK
//! every SYN carrying the packet arrival speed and the packet-pair link capacity, NAK, ACK2, EXP);
//! and Gu, "The UDT Congestion Control Algorithm" (2009), which spells out the native control
//! step by step (its §3 "When an ACK comes", §4 "When an NAK comes", §5 "Retransmission"). Section
//! numbers below refer to that last document unless they say otherwise.
//!
//! # What it does
//!
//! UDT controls the **packet sending period** SND (seconds between two packet departures) and,
//! as a secondary limit, a window CWND of unacknowledged packets.
//!
//! - **Slow start** (§3): SND = 0 (no pacing); CWND starts at 2 packets and grows by the number
//!   of packets each ACK newly acknowledges. It ends, once per connection, at the first NAK or
//!   when CWND exceeds the maximum window; then SND = 1/AS, where AS is the packet arrival speed
//!   the receiver measured (during slow start packets arrive in bursts at the bottleneck rate, so
//!   this starts the regular phase near the link rate).
//! - **Increase** (§3, draft-gg-udt-03 §6): at most once per SYN (10 ms), on the first ACK at or
//!   after SYN since the last increase,
//!   `inc = max(10^⌈log10((B − C)·MSS·8)⌉ · β / MSS, 1/MSS)` packets (`inc = 1/MSS` when B ≤ C),
//!   with B the packet-pair link capacity and C = 1/SND the current sending rate, both in packets
//!   per second, β = 1.5·10⁻⁶; then `SND ← SND·SYN / (SND·inc + SYN)`, i.e. the rate grows by
//!   inc packets per SYN. The increase steps down by decades as the spare capacity B − C shrinks.
//! - **Window** (§3): `CWND = AS·(RTT + SYN) + 16` packets on every ACK after slow start.
//! - **Decrease** (§4): a NAK whose largest lost sequence number is above LastDecSeq (the
//!   largest sequence number sent at the last decrease) starts a new *congestion period*:
//!   `SND ← 1.125·SND` (the rate falls by 1/9), AvgNAKNum is updated, NAKCount and DecCount are
//!   reset to 1, and DecRandom is drawn uniformly from 1..=AvgNAKNum. Later NAKs of the same
//!   period decrease SND by 1.125 again on every DecRandom-th NAK, at most 5 more times (so a
//!   period never more than halves the rate: 1.125⁶ ≈ 2). The random spacing is UDT's remedy for
//!   synchronized flows.
//! - **Timeout** (§5): the EXP timer ends slow start if it is still on; otherwise the rate is
//!   left unchanged, as in UDT 4.4 and in the last UDT4 release (4.11), where the halving of
//!   UDT 4.5 is commented out. §5 recommends 4.5's halving (SND·2), but with nothing bounding SND
//!   it starves the very retransmissions the timeout queued: under 30 % loss both ways a 300 KB
//!   transfer stalled for good once 79 timeouts had doubled SND 78 times.
//!
//! # How UDT's inputs arrive through the [`CongestionControl`] hooks
//!
//! The UDT transport (`ccarena_transport::udt`) owns a concrete [`Udt`] and calls:
//!
//! | UDT needs | passed as |
//! |---|---|
//! | ACK event, its time | [`CongestionControl::cong_control`], [`AckSample::now`] |
//! | packets newly acknowledged (slow-start growth) | [`AckSample::bytes_acked`] (cumulative advance; UDT has no SACK) |
//! | RTT (the receiver's ACK/ACK2 estimate, smoothed again by the sender) | [`AckSample::srtt`] |
//! | packet arrival speed AS | [`RateSample::delivery_rate_bps`] = AS·MSS·8 (0: no estimate) |
//! | maximum window (ends slow start) | [`CwndState::ssthresh_bytes`]: UDT's slow-start threshold *is* its maximum flow window |
//! | EXP timeout | [`CongestionControl::cwnd_event`] with [`CwndEvent::Loss`] |
//! | link capacity B (packet pair) | [`Udt::on_link_capacity`] — the trait has no field for it |
//! | NAK with its largest lost sequence number | [`Udt::on_nak`] — [`LossEvent`] carries no sequence number |
//! | SYN | [`Udt::set_syn_interval`] (default [`DEFAULT_SYN`]) |
//!
//! Through the trait alone (e.g. from the TCP sender), [`CongestionControl::ssthresh`] stands in
//! for a NAK: without the lost sequence number it starts a new congestion period when at least one
//! smoothed RTT has passed since the last decrease (a packet sent after the decrease cannot be
//! reported lost sooner), and the new period is applied to the window state on the next ACK,
//! because `ssthresh` cannot write [`CwndState`]. The link capacity is then unknown and the
//! increase is the minimum 1/MSS per SYN.
//!
//! The controller writes `pacing_rate_bps = MSS·8/SND` (payload bits per second; `None` while
//! SND = 0) and `cwnd_bytes = CWND·MSS`, clamped to [2 packets, maximum window].
//!
//! # Choices where the sources leave room
//!
//! - MSS in the increase formula is the payload per packet ([`CwndState::mss_bytes`]); UDT4 uses
//!   its packet size including headers (1500 B). The difference (3 % for 1456 + 44 B) only moves
//!   the decade boundaries of `inc` by 3 %.
//! - AvgNAKNum is smoothed as `⌈7/8·AvgNAKNum + 1/8·NAKCount⌉` (the sources say "update
//!   AvgNAKNum" without a formula; 7/8 is the smoothing UDT uses for every other estimate).
//! - "NAKCount == DecCount·DecRandom" is evaluated as "NAKCount is a multiple of DecRandom",
//!   which gives the decreases on "the 1st, 2nd, 4th, 6th, … NAKs" of §4's example for
//!   DecRandom = 2 and, unlike the literal test, keeps decreasing for DecRandom = 1.
//! - The receiver's AS and B are smoothed here, `A ← (7A + a)/8`, `B ← (7B + b)/8`
//!   (draft-gg-udt-03 §6.2, sender steps 7–8), starting from the first sample; samples of 0 (the
//!   receiver had no valid estimate) are ignored.
//! - When slow start ends with no AS yet, SND = (RTT + SYN)/CWND (the rate that sends one window
//!   per RTT + SYN).
//! - UDT4's "no increase in the SYN after a NAK" and its cap of the spare capacity at B/9 after a
//!   decrease are not in the published algorithm and are not implemented.
//! - DecRandom comes from a SplitMix64 generator seeded by the `seed` parameter (mixed with the
//!   flow's identity by [`Udt::mix_seed`]), never from the OS.

use ccarena_rng::SplitMix64;
use crate::{
    AckSample, CcError, CongestionControl, CwndEvent, CwndState, Duration, LossEvent, LossKind, ParamInfo,
    Params, RateSample, SimTime,
};

/// SYN, the rate-control interval and ACK period (Gu 2009 §2.1; draft-gg-udt-03 §4: 0.01 s).
pub const DEFAULT_SYN: Duration = Duration::from_millis(10);

/// Default β of the increase formula, dimensionless (Gu 2009 §3: "Beta is a constant value of
/// 0.0000015"; Gu & Grossman 2007 §3.3).
pub const DEFAULT_BETA: f64 = 0.000_001_5;

/// Default SND multiplier on a decrease (Gu 2009 §4: SND = SND·1.125): the rate becomes 8/9 of
/// what it was, a decrease by 1/9 (Gu & Grossman 2007 §3.3).
pub const DEFAULT_DECREASE: f64 = 1.125;

/// Default initial CWND, packets (Gu 2009 Implementation Note 1.1: "CWND is set at 2").
pub const DEFAULT_INITIAL_CWND: f64 = 2.0;

/// Default seed of the DecRandom generator.
pub const DEFAULT_SEED: f64 = 1.0;

/// The `udt` flavor's tunable parameters, with defaults (listed in the registry's catalogue).
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "beta",
        default: DEFAULT_BETA,
        doc: "β of the increase inc = max(10^ceil(log10((B−C)·MSS·8))·β/MSS, 1/MSS) packets per \
              SYN (Gu 2009 §3; draft-gg-udt-03); must be > 0",
    },
    ParamInfo {
        name: "decrease",
        default: DEFAULT_DECREASE,
        doc: "factor applied to the packet sending period SND on a decrease: the rate falls to \
              1/decrease of itself, 1/1.125 = 8/9 by default (Gu 2009 §4); must be > 1",
    },
    ParamInfo {
        name: "initial_cwnd",
        default: DEFAULT_INITIAL_CWND,
        doc: "window at the start of slow start, packets (Gu 2009 note 1.1: 2); must be >= 1",
    },
    ParamInfo {
        name: "seed",
        default: DEFAULT_SEED,
        doc: "seed of the generator drawing DecRandom, uniform in 1..=AvgNAKNum (Gu 2009 §4); a \
              non-negative integer. The simulator mixes in the flow's identity",
    },
];

/// The parameter names [`Udt::new`] accepts (the names in [`PARAMS`]).
const PARAM_NAMES: &[&str] = &["beta", "decrease", "initial_cwnd", "seed"];

/// CWND = AS·(RTT + SYN) + this, packets (Gu 2009 §3; draft-gg-udt-03 §6).
pub const WINDOW_HEADROOM_PACKETS: f64 = 16.0;

/// CWND's lower threshold, packets (Gu 2009 §1: "In UDT, the lower threshold is 2").
pub const MIN_CWND_PACKETS: f64 = 2.0;

/// Decreases after the first one that a congestion period may make (Gu 2009 §4: "DecCount <= 5";
/// 1.125⁶ ≈ 2, so a period never more than halves the rate).
pub const MAX_EXTRA_DECREASES: u32 = 5;

/// Weight of the old value in the EWMA of AvgNAKNum, AS and B (draft-gg-udt-03 §6.2: 7/8).
const EWMA_OLD: f64 = 0.875;

/// Where the controller is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// SND = 0, CWND grows by the packets acknowledged (§3).
    SlowStart,
    /// DAIMD rate control (§3, §4).
    RateControl,
}

/// Counters of what the controller did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdtCcStats {
    /// Rate increases applied (one per SYN at most).
    pub increases: u64,
    /// Decreases by the `decrease` factor (NAKs and the first of each congestion period).
    pub decreases: u64,
    /// Congestion periods begun.
    pub congestion_periods: u64,
    /// NAKs handled.
    pub naks: u64,
    /// EXP timeouts handled.
    pub timeouts: u64,
}

/// UDT's native congestion control (DAIMD rate control plus window). See the module
/// documentation for the algorithm and for how its inputs arrive.
#[derive(Clone, Debug)]
pub struct Udt {
    /// β of the increase formula.
    beta: f64,
    /// SND multiplier of a decrease.
    decrease: f64,
    /// CWND at the start, packets.
    initial_cwnd: f64,
    /// SYN.
    syn: Duration,
    phase: Phase,
    /// SND, seconds between packet departures; 0 = unpaced (slow start).
    snd_s: f64,
    /// CWND, packets.
    cwnd_pkts: f64,
    /// Smoothed packet arrival speed A, packets/s; 0 = no sample yet.
    arrival_pps: f64,
    /// Smoothed link capacity B, packets/s; 0 = no sample yet.
    capacity_pps: f64,
    /// Smoothed RTT from the latest ACK, seconds; `None` before the first.
    rtt_s: Option<f64>,
    /// When the rate was last increased (the SYN clock); `None` before the first ACK.
    last_rc: Option<SimTime>,
    /// LastDecSeq as a byte offset: snd_nxt at the last decrease; a lost packet whose offset is at
    /// or above it was sent after that decrease.
    last_dec_snd_nxt: u64,
    /// When the last decrease happened (for the trait-only NAK path).
    last_dec_time: Option<SimTime>,
    /// NAKCount: NAKs in the current congestion period.
    nak_count: u32,
    /// AvgNAKNum: smoothed NAKs per congestion period.
    avg_nak_num: u32,
    /// DecCount: decreases in the current congestion period.
    dec_count: u32,
    /// DecRandom: decrease on every DecRandom-th NAK of the period.
    dec_random: u32,
    rng: SplitMix64,
    stats: UdtCcStats,
}

impl Udt {
    /// A UDT controller from the scenario's parameters (see [`PARAMS`]); unset parameters take
    /// their defaults. SYN is [`DEFAULT_SYN`] until [`Udt::set_syn_interval`].
    ///
    /// # Errors
    /// [`CcError::UnknownParam`] for a name not in [`PARAMS`]; [`CcError::BadParam`] when `beta`
    /// is not a finite number > 0, `decrease` not a finite number > 1, `initial_cwnd` < 1, or
    /// `seed` not a non-negative integer.
    pub fn new(params: &Params) -> Result<Udt, CcError> {
        params.expect_only("udt", PARAM_NAMES)?;
        let beta = params.get_or("beta", DEFAULT_BETA);
        if !(beta.is_finite() && beta > 0.0) {
            return Err(bad("beta", beta, "must be a finite number > 0"));
        }
        let decrease = params.get_or("decrease", DEFAULT_DECREASE);
        if !(decrease.is_finite() && decrease > 1.0) {
            return Err(bad("decrease", decrease, "must be a finite number > 1"));
        }
        let initial_cwnd = params.get_or("initial_cwnd", DEFAULT_INITIAL_CWND);
        if !(initial_cwnd.is_finite() && initial_cwnd >= 1.0) {
            return Err(bad("initial_cwnd", initial_cwnd, "must be at least 1 packet"));
        }
        let seed = params.get_or("seed", DEFAULT_SEED);
        if !(seed >= 0.0 && seed.fract() == 0.0 && seed < 2f64.powi(64)) {
            return Err(bad("seed", seed, "must be a non-negative integer"));
        }
        Ok(Udt {
            beta,
            decrease,
            initial_cwnd,
            syn: DEFAULT_SYN,
            phase: Phase::SlowStart,
            snd_s: 0.0,
            cwnd_pkts: initial_cwnd,
            arrival_pps: 0.0,
            capacity_pps: 0.0,
            rtt_s: None,
            last_rc: None,
            last_dec_snd_nxt: 0,
            last_dec_time: None,
            nak_count: 1,
            avg_nak_num: 1,
            dec_count: 0,
            dec_random: 1,
            rng: SplitMix64::new(seed as u64),
            stats: UdtCcStats::default(),
        })
    }

    /// Use `syn` as SYN (the rate-control interval; the transport's ACK period). Call before the
    /// first ACK.
    pub fn set_syn_interval(&mut self, syn: Duration) {
        self.syn = Duration(syn.as_nanos().max(1));
    }

    /// Mix `id` (e.g. a hash of the run seed and the flow) into the DecRandom generator's seed, so
    /// that flows with the same `seed` parameter do not draw the same DecRandom sequence.
    pub fn mix_seed(&mut self, id: u64) {
        self.rng.salt(id);
        self.rng.next_u64();
    }

    /// A new link capacity sample b from the receiver's packet-pair estimate (draft-gg-udt-03
    /// §6.2, carried in every ACK), in payload bits per second (packets/s · MSS · 8):
    /// B ← (7B + b)/8. Zero is ignored. Call before [`CongestionControl::cong_control`] for the ACK
    /// that carried it.
    pub fn on_link_capacity(&mut self, capacity_bps: u64, mss_bytes: u64) {
        if capacity_bps > 0 {
            let b = capacity_bps as f64 / (8.0 * mss_bytes.max(1) as f64);
            self.capacity_pps = ewma(self.capacity_pps, b);
        }
    }

    /// A NAK arrived (Gu 2009 §4): `largest_lost_offset` is the byte offset of the largest
    /// sequence number it reports lost, `snd_nxt` the offset one past the largest byte sent so
    /// far (LastDecSeq when this NAK decreases the rate). Ends slow start (SND = 1/AS) or applies
    /// the congestion-period decrease rules, and writes the new rate into `st`.
    pub fn on_nak(&mut self, st: &mut CwndState, now: SimTime, largest_lost_offset: u64, snd_nxt: u64) {
        let new_period = largest_lost_offset >= self.last_dec_snd_nxt;
        self.nak(now, new_period, snd_nxt);
        self.apply(st);
    }

    /// The packet sending period SND; zero while unpaced (slow start).
    pub fn snd_period(&self) -> Duration {
        Duration::from_secs_f64(self.snd_s)
    }

    /// True while in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.phase == Phase::SlowStart
    }

    /// The smoothed link capacity B the controller uses, packets/s (0 before any sample).
    pub fn link_capacity_pps(&self) -> f64 {
        self.capacity_pps
    }

    /// The smoothed packet arrival speed A the controller uses, packets/s (0 before any sample).
    pub fn arrival_rate_pps(&self) -> f64 {
        self.arrival_pps
    }

    /// Counters.
    pub fn stats(&self) -> &UdtCcStats {
        &self.stats
    }

    /// inc, packets per SYN, for link capacity `b_pps` and sending rate `c_pps` (Gu 2009 §3):
    /// `1/MSS` if B ≤ C, else `max(10^⌈log10((B − C)·MSS·8)⌉·β/MSS, 1/MSS)`.
    pub fn increase_packets(&self, b_pps: f64, c_pps: f64, mss_bytes: u64) -> f64 {
        let mss = mss_bytes.max(1) as f64;
        let min_inc = 1.0 / mss;
        if b_pps <= c_pps {
            return min_inc;
        }
        let spare_bits = (b_pps - c_pps) * mss * 8.0;
        (10f64.powf(spare_bits.log10().ceil()) * self.beta / mss).max(min_inc)
    }

    /// The common part of a NAK (§4): slow start ends with SND = 1/AS; otherwise the
    /// congestion-period rules.
    fn nak(&mut self, now: SimTime, new_period: bool, snd_nxt: u64) {
        self.stats.naks += 1;
        if self.phase == Phase::SlowStart {
            self.end_slow_start();
            return;
        }
        if new_period {
            self.stats.congestion_periods += 1;
            let avg = EWMA_OLD * self.avg_nak_num as f64 + (1.0 - EWMA_OLD) * self.nak_count as f64;
            self.avg_nak_num = (avg.ceil() as u32).max(1);
            self.nak_count = 1;
            self.dec_count = 1;
            self.dec_random = 1 + (self.rng.next_u64() % self.avg_nak_num as u64) as u32;
            self.decrease_rate(now, snd_nxt);
        } else {
            self.nak_count += 1;
            if self.dec_count <= MAX_EXTRA_DECREASES && self.nak_count.is_multiple_of(self.dec_random) {
                self.dec_count += 1;
                self.decrease_rate(now, snd_nxt);
            }
        }
    }

    /// SND ← decrease·SND and LastDecSeq ← snd_nxt.
    fn decrease_rate(&mut self, now: SimTime, snd_nxt: u64) {
        self.snd_s *= self.decrease;
        self.last_dec_snd_nxt = snd_nxt;
        self.last_dec_time = Some(now);
        self.stats.decreases += 1;
    }

    /// Leave slow start (§3, §4): SND = 1/AS, or one window per RTT + SYN without an AS.
    fn end_slow_start(&mut self) {
        self.phase = Phase::RateControl;
        self.snd_s = if self.arrival_pps > 0.0 {
            1.0 / self.arrival_pps
        } else {
            (self.rtt_s.unwrap_or(0.0) + self.syn.as_secs_f64()) / self.cwnd_pkts.max(MIN_CWND_PACKETS)
        };
    }

    /// The maximum window in packets (ssthresh; infinite when ssthresh is).
    fn max_window_pkts(st: &CwndState) -> f64 {
        if st.ssthresh_bytes == u64::MAX {
            f64::INFINITY
        } else {
            st.ssthresh_bytes as f64 / st.mss_bytes.max(1) as f64
        }
    }

    /// Write CWND and the pacing rate into `st`.
    fn apply(&self, st: &mut CwndState) {
        let mss = st.mss_bytes.max(1);
        let w = self.cwnd_pkts.min(Self::max_window_pkts(st)).max(MIN_CWND_PACKETS);
        st.cwnd_bytes = ((w * mss as f64) as u64).max(mss);
        st.pacing_rate_bps = if self.snd_s > 0.0 {
            Some(((mss as f64 * 8.0 / self.snd_s).round() as u64).max(1))
        } else {
            None
        };
    }
}

impl CongestionControl for Udt {
    fn name(&self) -> &'static str {
        "udt"
    }

    /// Slow start: SND = 0 (no pacing), CWND = `initial_cwnd` packets.
    fn init(&mut self, st: &mut CwndState, _now: SimTime) {
        self.phase = Phase::SlowStart;
        self.snd_s = 0.0;
        self.cwnd_pkts = self.initial_cwnd;
        self.apply(st);
    }

    /// Never called: [`CongestionControl::cong_control`] owns the window.
    fn cong_avoid(&mut self, _st: &mut CwndState, _ack: &AckSample) {}

    /// A NAK or timeout without sequence information (the trait-only path; the UDT transport
    /// calls [`Udt::on_nak`] and `cwnd_event` instead). A timeout is handled as by the EXP timer;
    /// any other event as a NAK that starts a new congestion period if at least one smoothed RTT
    /// has passed since the last decrease. The new SND reaches `st` on the next ACK. Returns
    /// ssthresh unchanged: UDT has none besides its maximum window.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64 {
        if ev.kind == LossKind::Timeout {
            self.timeout();
        } else {
            let rtt = Duration::from_secs_f64(self.rtt_s.unwrap_or(0.0));
            let new_period = self.last_dec_time.is_none_or(|t| ev.now >= t + rtt);
            // snd_nxt is not known here; LastDecSeq is not used on this path.
            self.nak(ev.now, new_period, 0);
        }
        st.ssthresh_bytes
    }

    /// An EXP timeout ([`CwndEvent::Loss`], §5): end slow start; the rate is otherwise unchanged.
    fn cwnd_event(&mut self, st: &mut CwndState, ev: CwndEvent, _now: SimTime) {
        if ev == CwndEvent::Loss {
            self.timeout();
            self.apply(st);
        }
    }

    /// UDT's "when an ACK comes" (§3): smooth AS, update CWND, and once per SYN increase the rate
    /// (or, in slow start, grow CWND by the packets acknowledged and end slow start above the
    /// maximum window). Always returns `true`: the controller owns cwnd and pacing.
    fn cong_control(&mut self, st: &mut CwndState, ack: &AckSample, rs: &RateSample) -> bool {
        let mss = st.mss_bytes.max(1);
        if rs.delivery_rate_bps > 0 {
            let a = rs.delivery_rate_bps as f64 / (8.0 * mss as f64);
            self.arrival_pps = ewma(self.arrival_pps, a);
        }
        if let Some(srtt) = ack.srtt {
            self.rtt_s = Some(srtt.as_secs_f64());
        }
        let rtt_syn = self.rtt_s.unwrap_or(0.0) + self.syn.as_secs_f64();
        match self.phase {
            Phase::SlowStart => {
                self.cwnd_pkts += ack.bytes_acked as f64 / mss as f64;
                if self.cwnd_pkts > Self::max_window_pkts(st) {
                    self.end_slow_start();
                }
            }
            Phase::RateControl => {
                self.cwnd_pkts = self.arrival_pps * rtt_syn + WINDOW_HEADROOM_PACKETS;
            }
        }
        let due = self.last_rc.is_none_or(|t| ack.now >= t + self.syn);
        if due {
            self.last_rc = Some(ack.now);
            if self.phase == Phase::RateControl && self.snd_s > 0.0 {
                let syn = self.syn.as_secs_f64();
                let inc = self.increase_packets(self.capacity_pps, 1.0 / self.snd_s, mss);
                self.snd_s = self.snd_s * syn / (self.snd_s * inc + syn);
                self.stats.increases += 1;
            }
        }
        self.apply(st);
        true
    }

    /// `"slow_start"` or `"rate_control"`.
    fn mode(&self) -> &'static str {
        match self.phase {
            Phase::SlowStart => "slow_start",
            Phase::RateControl => "rate_control",
        }
    }
}

impl Udt {
    /// EXP timeout (§5): ends slow start; no change to the rate after it (UDT 4.4, UDT4 4.11).
    fn timeout(&mut self) {
        self.stats.timeouts += 1;
        if self.phase == Phase::SlowStart {
            self.end_slow_start();
        }
    }
}

/// `old·7/8 + new/8`, or `new` when there is no old value yet.
fn ewma(old: f64, new: f64) -> f64 {
    if old > 0.0 {
        EWMA_OLD * old + (1.0 - EWMA_OLD) * new
    } else {
        new
    }
}

fn bad(param: &'static str, value: f64, reason: &'static str) -> CcError {
    CcError::BadParam { flavor: "udt", param, value, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1500 B packets make the increase table of Gu & Grossman (2007) exact.
    const MSS: u64 = 1500;
    const SYN_S: f64 = 0.01;

    fn udt(pairs: &[(&str, f64)]) -> Udt {
        Udt::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())).unwrap()
    }

    fn ms(v: u64) -> SimTime {
        SimTime(v * 1_000_000)
    }

    fn ack(now: SimTime, bytes_acked: u64, srtt_ms: u64) -> AckSample {
        crate::growth::testing::ack(now, bytes_acked, Duration::from_millis(srtt_ms))
    }

    /// A UDT ACK's receive-rate report: AS packets/s as payload bits/s.
    fn rate(as_pps: f64) -> RateSample {
        let bps = (as_pps * MSS as f64 * 8.0).round() as u64;
        RateSample {
            delivered_bytes: 16 * MSS,
            interval: Duration::from_secs_f64(16.0 / as_pps.max(1e-9)),
            delivery_rate_bps: bps,
            prior_delivered_bytes: 0,
            total_delivered_bytes: 0,
            is_app_limited: false,
            rtt: None,
            newly_lost_bytes: 0,
            newly_acked_bytes: 0,
            tx_in_flight_bytes: 0,
            lost_bytes: 0,
        }
    }

    fn pps_to_bps(pps: f64) -> u64 {
        (pps * MSS as f64 * 8.0).round() as u64
    }

    /// A controller in rate control at `c_pps`, with link capacity `b_pps` known, its SYN clock
    /// started at time 0. Returns it with its window state.
    fn in_rate_control(b_pps: f64, c_pps: f64) -> (Udt, CwndState) {
        let mut cc = udt(&[]);
        let mut st = CwndState::new(2 * MSS, MSS);
        st.ssthresh_bytes = 100_000 * MSS;
        cc.init(&mut st, SimTime::ZERO);
        cc.on_link_capacity(pps_to_bps(b_pps), MSS);
        cc.cong_control(&mut st, &ack(SimTime::ZERO, 0, 100), &rate(c_pps));
        cc.on_nak(&mut st, SimTime(1), 0, 0); // ends slow start: SND = 1/AS = 1/C
        assert!(!cc.in_slow_start());
        assert!((1.0 / cc.snd_s - c_pps).abs() < 1e-6 * c_pps);
        (cc, st)
    }

    #[test]
    fn increase_follows_the_decade_table() {
        // Gu & Grossman 2007, Table 1 (MSS = 1500 B): spare capacity B − C in Mbps → inc in
        // packets per SYN.
        let cc = udt(&[]);
        let mbps_to_pps = |m: f64| m * 1e6 / (MSS as f64 * 8.0);
        for (spare_mbps, inc) in [
            (0.05, 1.0 / 1500.0),
            (0.1, 1.0 / 1500.0),
            (0.5, 0.001),
            (1.0, 0.001),
            (5.0, 0.01),
            (50.0, 0.1),
            (100.0, 0.1),
            (150.0, 1.0),
            (999.0, 1.0),
            (5000.0, 10.0),
        ] {
            let b = 100_000.0;
            let got = cc.increase_packets(b, b - mbps_to_pps(spare_mbps), MSS);
            assert!(
                (got - inc).abs() < 1e-9 * inc.max(1.0),
                "spare {spare_mbps} Mbps: inc {got}, want {inc}"
            );
        }
        // No spare capacity (or an overestimated rate): the minimum, 1/MSS.
        assert_eq!(cc.increase_packets(1000.0, 1000.0, MSS), 1.0 / 1500.0);
        assert_eq!(cc.increase_packets(0.0, 5.0, MSS), 1.0 / 1500.0);
        // β is the parameter: the increase scales with it above the floor.
        let cc = udt(&[("beta", 3e-6)]);
        assert!((cc.increase_packets(100_000.0, 100_000.0 - mbps_to_pps(500.0), MSS) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_rate_grows_by_inc_packets_per_syn_once_per_syn() {
        // B = 1 Gbps of 1500 B packets (83 333 pkt/s); C = 10 000 pkt/s: spare 880 Mbps → inc 1.
        let b = 1e9 / (MSS as f64 * 8.0);
        let (mut cc, mut st) = in_rate_control(b, 10_000.0);
        let c0 = 1.0 / cc.snd_s;
        // An ACK 10 ms after the SYN clock started: one increase, SND = SND·SYN/(SND·inc + SYN),
        // i.e. the rate grows by inc/SYN = 100 pkt/s.
        cc.cong_control(&mut st, &ack(ms(10), 0, 100), &rate(c0));
        let c1 = 1.0 / cc.snd_s;
        assert!((c1 - c0 - 1.0 / SYN_S).abs() < 1e-6, "{c0} -> {c1}");
        // More ACKs within the same SYN: no further increase.
        cc.cong_control(&mut st, &ack(ms(15), 0, 100), &rate(c1));
        cc.cong_control(&mut st, &ack(ms(19), 0, 100), &rate(c1));
        assert_eq!(1.0 / cc.snd_s, c1);
        assert_eq!(cc.stats().increases, 1, "no increase in slow start, one per SYN after it");
        // The pacing rate is the payload rate MSS·8/SND.
        let want = (MSS as f64 * 8.0 / cc.snd_s).round() as u64;
        assert_eq!(st.pacing_rate_bps, Some(want));
    }

    #[test]
    fn increases_decrease_as_the_rate_nears_the_capacity() {
        // DAIMD: starting at 10 % of a 1 Gbps link with no loss, the per-SYN gain is 1 packet
        // while the spare capacity exceeds 100 Mbps, 0.1 packet down to 10 Mbps spare, 0.01 below
        // that; the rate approaches B but never overshoots it by more than one step.
        let b = 1e9 / (MSS as f64 * 8.0);
        let (mut cc, mut st) = in_rate_control(b, b / 10.0);
        let mut steps: Vec<(f64, f64)> = Vec::new(); // (spare Mbps before, gain pkt/s)
        for k in 1..=6000u64 {
            let before = 1.0 / cc.snd_s;
            cc.cong_control(&mut st, &ack(ms(10 * k), 0, 100), &rate(before));
            let after = 1.0 / cc.snd_s;
            steps.push(((b - before) * MSS as f64 * 8.0 / 1e6, after - before));
        }
        for &(spare, gain) in &steps {
            let inc = if spare > 100.0 {
                1.0
            } else if spare > 10.0 {
                0.1
            } else if spare > 1.0 {
                0.01
            } else if spare > 0.1 {
                0.001
            } else {
                1.0 / 1500.0
            };
            assert!(
                (gain - inc / SYN_S).abs() < 1e-6 * (1.0 + gain),
                "spare {spare} Mbps: gain {gain} pkt/s"
            );
        }
        // Beyond B only the minimum 1/MSS per SYN remains (6.7 pkt/s per second): without a loss
        // the rate creeps past B, slowly.
        let last = 1.0 / cc.snd_s;
        let crossed = steps.iter().position(|&(spare, _)| spare <= 0.0).expect("reached B");
        let creep = (steps.len() - crossed) as f64 / 1500.0 / SYN_S;
        assert!(crossed < 4000, "B reached after {crossed} SYNs");
        assert!(last > b && last <= b + creep + 1.0, "rate after 60 s: {last} of {b}");
    }

    #[test]
    fn slow_start_grows_by_packets_acked_then_hands_over_at_the_arrival_speed() {
        let mut cc = udt(&[]);
        let mut st = CwndState::new(10 * MSS, MSS);
        st.ssthresh_bytes = 100 * MSS; // the maximum window
        cc.init(&mut st, SimTime::ZERO);
        assert_eq!(st.cwnd_bytes, 2 * MSS, "Gu 2009 note 1.1: CWND starts at 2");
        assert_eq!(st.pacing_rate_bps, None, "SND = 0 in slow start");
        assert_eq!(cc.mode(), "slow_start");
        let mut acked = 0;
        for (i, n) in [2u64, 4, 8, 16, 32].into_iter().enumerate() {
            cc.cong_control(&mut st, &ack(ms(100 * (i as u64 + 1)), n * MSS, 100), &rate(20_000.0));
            acked += n;
            assert_eq!(st.cwnd_bytes, (2 + acked) * MSS);
            assert_eq!(st.pacing_rate_bps, None);
        }
        // 64 more: CWND = 128 > 100, slow start ends; SND = 1/AS (AS smoothed: 20 000 pkt/s).
        cc.cong_control(&mut st, &ack(ms(600), 64 * MSS, 100), &rate(20_000.0));
        assert_eq!(cc.mode(), "rate_control");
        assert!((cc.snd_period().as_secs_f64() - 1.0 / 20_000.0).abs() < 1e-9);
        assert_eq!(st.cwnd_bytes, 100 * MSS, "clamped to the maximum window");
        // From now on CWND = AS·(RTT + SYN) + 16 = 20 000 · 0.11 + 16 = 2216, clamped at 100.
        st.ssthresh_bytes = 10_000 * MSS;
        cc.cong_control(&mut st, &ack(ms(605), 0, 100), &rate(20_000.0));
        assert!(st.cwnd_bytes.abs_diff(2216 * MSS) <= 1, "{}", st.cwnd_bytes);
    }

    #[test]
    fn a_nak_in_slow_start_ends_it_without_a_decrease() {
        let mut cc = udt(&[]);
        let mut st = CwndState::new(2 * MSS, MSS);
        cc.init(&mut st, SimTime::ZERO);
        cc.cong_control(&mut st, &ack(ms(100), 30 * MSS, 100), &rate(50_000.0));
        cc.on_nak(&mut st, ms(101), 10 * MSS, 40 * MSS);
        assert_eq!(cc.mode(), "rate_control");
        assert_eq!(cc.stats().decreases, 0);
        assert!((cc.snd_period().as_secs_f64() - 1.0 / 50_000.0).abs() < 1e-9);
        assert_eq!(st.pacing_rate_bps, Some(50_000 * MSS * 8));
        // Without any arrival-speed estimate: one window per RTT + SYN.
        let mut cc = udt(&[]);
        let mut st = CwndState::new(2 * MSS, MSS);
        cc.init(&mut st, SimTime::ZERO);
        cc.cong_control(&mut st, &ack(ms(100), 20 * MSS, 100), &rate(0.0));
        cc.on_nak(&mut st, ms(101), 0, 22 * MSS);
        assert!((cc.snd_period().as_secs_f64() - 0.11 / 22.0).abs() < 1e-9);
    }

    #[test]
    fn a_congestion_period_decreases_by_one_ninth_then_randomly_at_most_halving() {
        let mut seen_dec_random = std::collections::BTreeSet::new();
        for seed in 0..40u64 {
            let (mut cc, mut st) = in_rate_control(100_000.0, 10_000.0);
            cc.mix_seed(seed);
            // Warm up AvgNAKNum with periods of 6 NAKs, so that DecRandom has room to vary.
            let mut seq = 0;
            for _ in 0..12 {
                seq += 1_000 * MSS;
                for j in 0..6 {
                    cc.on_nak(&mut st, ms(1), seq - j * MSS, seq + 10 * MSS);
                }
            }
            cc.snd_s = 1e-4;
            let periods = cc.stats().congestion_periods;
            let rate0 = 1.0 / cc.snd_s;
            // First NAK of a period (its loss is above LastDecSeq): rate × 8/9.
            seq += 1_000 * MSS;
            cc.on_nak(&mut st, ms(1), seq, seq + 10 * MSS);
            assert!(((1.0 / cc.snd_s) / rate0 - 8.0 / 9.0).abs() < 1e-12);
            assert_eq!(cc.stats().congestion_periods, periods + 1);
            assert_eq!((cc.nak_count, cc.dec_count), (1, 1));
            assert_eq!(cc.avg_nak_num, 6);
            let d = cc.dec_random;
            assert!((1..=6).contains(&d));
            seen_dec_random.insert(d);
            // 40 more NAKs of losses sent before the decrease (below LastDecSeq): a decrease on
            // every DecRandom-th NAK of the period, at most 5 more.
            let mut extra = 0;
            for i in 2..=41u32 {
                let before = cc.stats().decreases;
                cc.on_nak(&mut st, ms(1 + i as u64), seq - i as u64 * MSS, seq + 20 * MSS);
                let decreased = cc.stats().decreases > before;
                let expect = i % d == 0 && extra < MAX_EXTRA_DECREASES;
                assert_eq!(decreased, expect, "seed {seed}: NAK {i} with DecRandom {d}");
                extra += u32::from(decreased);
            }
            assert_eq!(extra, MAX_EXTRA_DECREASES);
            assert_eq!(cc.stats().congestion_periods, periods + 1);
            let total = rate0 * cc.snd_s;
            assert!((total - 1.125f64.powi(6)).abs() < 1e-9, "a period at most halves the rate: ×{total}");
            // A NAK of a packet sent after the last decrease starts a new period.
            let last_dec = cc.last_dec_snd_nxt;
            assert_eq!(last_dec, seq + 20 * MSS);
            cc.on_nak(&mut st, ms(100), last_dec, last_dec + 500 * MSS);
            assert_eq!(cc.stats().congestion_periods, periods + 2);
            assert_eq!(cc.last_dec_snd_nxt, last_dec + 500 * MSS);
        }
        assert!(seen_dec_random.len() >= 5, "DecRandom varies with the seed: {seen_dec_random:?}");
    }

    #[test]
    fn dec_random_is_uniform_over_one_to_avg_nak_num_and_deterministic() {
        // Periods of 9 NAKs each: AvgNAKNum climbs from 1 towards 9 by ⌈7/8·avg + 9/8⌉.
        let run = |mix: u64| {
            let (mut cc, mut st) = in_rate_control(100_000.0, 10_000.0);
            cc.mix_seed(mix);
            let mut draws = Vec::new();
            let mut avgs = Vec::new();
            let mut seq = 0;
            for _ in 0..400 {
                seq += 1000 * MSS;
                cc.on_nak(&mut st, ms(1), seq, seq + 10 * MSS);
                draws.push(cc.dec_random);
                avgs.push(cc.avg_nak_num);
                for _ in 1..9 {
                    cc.on_nak(&mut st, ms(1), seq - MSS, seq + 10 * MSS);
                }
                // keep SND from growing without bound (irrelevant to the draws)
                cc.snd_s = 1e-4;
            }
            (draws, avgs)
        };
        let (draws, avgs) = run(7);
        let mut expect_avg = 1.0f64;
        let mut count = 1.0;
        for &a in &avgs {
            expect_avg = (0.875 * expect_avg + 0.125 * count).ceil();
            count = 9.0;
            assert_eq!(a as f64, expect_avg);
        }
        assert_eq!(*avgs.last().unwrap(), 9);
        // Once AvgNAKNum = 9, DecRandom covers 1..=9 roughly evenly.
        let tail: Vec<u32> = draws.iter().zip(&avgs).filter(|(_, a)| **a == 9).map(|(d, _)| *d).collect();
        assert!(tail.len() > 300);
        for v in 1..=9u32 {
            let n = tail.iter().filter(|d| **d == v).count() as f64;
            let e = tail.len() as f64 / 9.0;
            assert!((n - e).abs() < 0.5 * e, "value {v}: {n} draws, expected ≈{e:.0}");
        }
        assert!(tail.iter().all(|d| (1..=9).contains(d)));
        // Same seed, same draws; another flow identity, other draws.
        assert_eq!(run(7).0, draws);
        assert_ne!(run(8).0, draws);
    }

    #[test]
    fn window_tracks_arrival_speed_times_rtt_plus_syn() {
        let (mut cc, mut st) = in_rate_control(100_000.0, 10_000.0);
        // AS smoothed towards 30 000 pkt/s: A ← 7/8·A + 1/8·a from A = 10 000.
        cc.cong_control(&mut st, &ack(ms(3), 0, 50), &rate(30_000.0));
        let a = 0.875 * 10_000.0 + 0.125 * 30_000.0;
        assert!((cc.arrival_rate_pps() - a).abs() < 1e-6);
        let w = (a * (0.05 + 0.01) + 16.0) * MSS as f64;
        assert_eq!(st.cwnd_bytes, w as u64);
        // B is smoothed the same way; zero samples are ignored.
        cc.on_link_capacity(0, MSS);
        assert_eq!(cc.link_capacity_pps(), 100_000.0);
        cc.on_link_capacity(pps_to_bps(20_000.0), MSS);
        assert!((cc.link_capacity_pps() - 90_000.0).abs() < 1e-6);
    }

    #[test]
    fn timeout_ends_slow_start_and_otherwise_keeps_the_rate() {
        let (mut cc, mut st) = in_rate_control(100_000.0, 10_000.0);
        let snd = cc.snd_s;
        cc.cwnd_event(&mut st, CwndEvent::Loss, ms(5));
        assert_eq!(cc.snd_s, snd);
        assert_eq!(st.pacing_rate_bps, Some(10_000 * MSS * 8));
        assert_eq!(cc.stats().timeouts, 1);
        let mut cc = udt(&[]);
        let mut st = CwndState::new(2 * MSS, MSS);
        cc.init(&mut st, SimTime::ZERO);
        cc.cong_control(&mut st, &ack(ms(100), 0, 100), &rate(8_000.0));
        cc.cwnd_event(&mut st, CwndEvent::Loss, ms(500));
        assert_eq!(cc.mode(), "rate_control");
        assert!((cc.snd_period().as_secs_f64() - 1.0 / 8_000.0).abs() < 1e-9);
    }

    #[test]
    fn trait_only_loss_path_decreases_and_keeps_ssthresh() {
        let (mut cc, st) = in_rate_control(100_000.0, 10_000.0);
        let snd = cc.snd_s;
        let ev = LossEvent {
            now: ms(1_000),
            kind: LossKind::FastRetransmit,
            flight_size_bytes: 100 * MSS,
            in_flight_bytes: 100 * MSS,
        };
        assert_eq!(cc.ssthresh(&st, &ev), st.ssthresh_bytes);
        assert!((cc.snd_s - 1.125 * snd).abs() < 1e-15);
        assert_eq!(cc.stats().congestion_periods, 1);
        // Within one RTT (100 ms) of that decrease: the same period.
        let ev2 = LossEvent { now: ms(1_050), ..ev };
        cc.ssthresh(&st, &ev2);
        assert_eq!(cc.stats().congestion_periods, 1);
        let ev3 = LossEvent { now: ms(1_200), ..ev };
        cc.ssthresh(&st, &ev3);
        assert_eq!(cc.stats().congestion_periods, 2);
        let ev4 = LossEvent { kind: LossKind::Timeout, ..ev3 };
        let before = cc.snd_s;
        cc.ssthresh(&st, &ev4);
        assert_eq!(cc.snd_s, before);
        assert_eq!(cc.stats().timeouts, 1);
    }

    #[test]
    fn parameters_are_validated() {
        let p = |pairs: &[(&str, f64)]| {
            Udt::new(&Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
        };
        let bad_param = |r: Result<Udt, CcError>, name: &str| match r {
            Err(CcError::BadParam { flavor: "udt", param, .. }) => assert_eq!(param, name),
            other => panic!("expected BadParam for {name}, got {other:?}"),
        };
        bad_param(p(&[("beta", 0.0)]), "beta");
        bad_param(p(&[("beta", f64::NAN)]), "beta");
        bad_param(p(&[("decrease", 1.0)]), "decrease");
        bad_param(p(&[("decrease", f64::INFINITY)]), "decrease");
        bad_param(p(&[("initial_cwnd", 0.5)]), "initial_cwnd");
        bad_param(p(&[("seed", -1.0)]), "seed");
        bad_param(p(&[("seed", 1.5)]), "seed");
        assert!(matches!(p(&[("alpha", 1.0)]), Err(CcError::UnknownParam { flavor: "udt", .. })));
        let cc = p(&[("beta", 3e-6), ("decrease", 1.25), ("initial_cwnd", 16.0), ("seed", 9.0)]).unwrap();
        assert_eq!((cc.beta, cc.decrease, cc.initial_cwnd), (3e-6, 1.25, 16.0));
        let cc = p(&[]).unwrap();
        assert_eq!((cc.beta, cc.decrease, cc.initial_cwnd), (1.5e-6, 1.125, 2.0));
        assert_eq!(cc.name(), "udt");
        let names: Vec<_> = PARAMS.iter().map(|i| i.name).collect();
        assert_eq!(names, PARAM_NAMES);
    }
}
