//! The sending side: congestion window, retransmission timer, loss detection and recovery.
//!
//! # How a caller drives it
//!
//! ```text
//! app_write(n) / app_stop()              the application offers bytes
//! on_ack(now, &ack)                      for every ACK that arrives
//! handle_timeout(now)                    when now >= poll_timeout() (early or late is harmless)
//! while let Some(seg) = poll_transmit(now) { send seg }   after each of the three above
//! poll_timeout()                         when to call handle_timeout next
//! ```
//!
//! # Loss recovery
//!
//! State follows Linux's `tcp_ca_state` ([`CaState`]). Open → Disorder on the first duplicate
//! ACK or SACK; Disorder → Recovery (or Loss for Tahoe) on fast retransmit, which happens on
//! `dupthresh` duplicate ACKs or, in the SACK modes, when RFC 6675's IsLost holds for the first
//! unacknowledged segment. Recovery ends according to the [`RecoveryMode`]:
//!
//! | mode | on entry | during | ends when | cwnd at the end |
//! |---|---|---|---|---|
//! | tahoe | cwnd = 1 MSS, all outstanding marked lost (state Loss) | slow start, go-back-N | snd.una ≥ recover | (slow start goes on) |
//! | reno | cwnd = ssthresh + dupthresh·MSS | +1 MSS per dupack | first ACK of new data | ssthresh |
//! | newreno | as reno; recover = snd.nxt | partial ACK: retransmit next hole, deflate; the RTO timer is restarted on the first partial ACK only (RFC 6582 "Impatient") | snd.una ≥ recover | min(ssthresh, max(FlightSize, MSS) + MSS) |
//! | sack | cwnd = ssthresh | send while cwnd − pipe ≥ 1 MSS, NextSeg rules 1–4 | snd.una ≥ RecoveryPoint | ssthresh |
//! | prr | PRR starts | cwnd = pipe + sndcnt (RFC 6937) | snd.una ≥ RecoveryPoint | ssthresh |
//!
//! The first retransmission of every episode is sent whatever cwnd says (RFC 5681 §3.2 step 2,
//! RFC 6675 step 4.3). A retransmission timeout (RFC 6298 §5) sets cwnd to one MSS, marks every
//! unSACKed byte lost and enters Loss, which lasts until everything outstanding at the timeout is
//! acknowledged; no fast retransmit starts during Loss (RFC 6675 §5.1, RFC 6582 §3.2 step 1), so a
//! go-back-N burst's duplicate ACKs do not halve the window again. In the SACK modes a lost
//! retransmission is detected when more than (DupThresh − 1)·MSS of data sent after it has been
//! SACKed, and sent again; in the others only the timer repairs it.
//!
//! D-SACK (`linux` only; RFC 2883 §4, RFC 3708): an ACK whose first SACK block lies below the
//! cumulative ACK or inside its second block reports a duplicate; that block SACKs nothing.
//! Each fast recovery keeps the window and ssthresh it started from and counts the segments
//! retransmitted since (Linux's `undo_retrans`); each D-SACK at or above the episode's start
//! takes its segments off the count, and when the count reaches 0 every retransmission was
//! spurious: cwnd and ssthresh are restored (never lowered; RFC 4015 §3.2 restores the window),
//! the loss marks RACK made are forgotten and Recovery ends. The record is dropped by a timeout
//! (Eifel's case) or a new window reduction. D-SACKs also feed RACK's reordering window
//! (see `rack`).
//!
//! Window growth: `cong_avoid` is called for ACKs that deliver data in Open, Disorder and Loss —
//! Loss included, because after a timeout the sender slow-starts from the loss window
//! (RFC 5681 §3.1), as Linux does — and never on an ACK that starts or ends Recovery, nor during
//! Recovery or CWR; except that a controller may keep growing through the CWR of an ECN
//! reduction (`CongestionControl::grows_during_ecn_cwr`: TCP Prague).
//!
//! Flow control: new data goes no further than the peer's advertised receive window above the
//! ACK that advertised it and the send buffer above snd.una ([`SenderConfig::sndbuf_bytes`]);
//! see `window`. Retransmissions are never held back by it (they lie below snd.nxt).
//!
//! ECN (RFC 3168 §6.1.2): an ECE in Open or Disorder calls `ssthresh(Ecn)`, sets
//! `cwnd = min(cwnd, ssthresh)` at once (no PRR-style spreading) and enters CWR; the next new
//! data segment carries CWR, and CWR lasts until data beyond everything sent before it is
//! acknowledged, i.e. until the receiver has seen the CWR flag (so at most one reduction per
//! window). Retransmissions are never ECN-capable (RFC 3168 §6.1.5).
//!
//! Accurate ECN ([`SenderEcn::L4s`]): new data is sent ECT(1) (RFC 9331 §4.1); each ACK's ACE
//! field and AccECN option are decoded into the CE-marked bytes newly fed back
//! ([`crate::accecn`]), given to the controller as [`AckSample::ce_bytes`], and `ece` is true
//! when that is more than zero. Such an ACK in Open or Disorder is a congestion event as above
//! (`ssthresh(Ecn)`, CWR state until the window sent before it is acknowledged, so at most one
//! reduction per round trip), but no CWR flag is sent: AccECN feedback is cumulative and never
//! latched (RFC 9768 §3.1.5, the CWR flag being part of ACE).

use ccarena_cc::{
    AckSample, CaState, CongestionControl, CwndEvent, CwndState, Duration, LossEvent, LossKind,
    RateSample, SimTime,
};

use crate::accecn::AccEcnDecoder;
use crate::pacing::Pacer;
use crate::rack::Rack;
use crate::rate::RateEstimator;
use crate::recovery::{newreno_full_ack_cwnd, newreno_partial_ack_cwnd, Prr, RecoveryMode};
use crate::rtt::{RtoRule, RttEstimator};
use crate::scoreboard::{Scoreboard, SegRecord};
use crate::segment::{AckSegment, DataSegment, Ecn};
use crate::window::FlowControl;

/// Sender parameters. Every value is explicit; ccarena's front end fills in Linux-like defaults
/// (MSS 1448 B, IW 10 MSS, min RTO 200 ms, initial RTO 1 s, dupthresh 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SenderConfig {
    /// Maximum segment size: payload bytes per full segment. At least 1.
    pub mss_bytes: u32,
    /// Initial congestion window, bytes (RFC 6928: 10 MSS). At least one MSS.
    pub initial_cwnd_bytes: u64,
    /// Lower bound on the RTO (RFC 6298 §2.4; Linux 200 ms).
    pub min_rto: Duration,
    /// RTO before the first RTT sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: Duration,
    /// Upper bound on the RTO, also after backoff (RFC 6298 §2.5: at least 60 s).
    pub max_rto: Duration,
    /// Clock granularity G in `RTO = SRTT + max(G, 4·RTTVAR)` (RFC 6298 §2.2).
    pub clock_granularity: Duration,
    /// Loss-recovery mode.
    pub recovery: RecoveryMode,
    /// Duplicate ACKs (or SACKed segments above a hole) that declare a loss (RFC 5681: 3).
    pub dupthresh: u32,
    /// How the connection uses ECN: which codepoint data carries and which feedback it reads.
    pub ecn: SenderEcn,
    /// The receive window the peer offered at connection setup (not modelled), bytes: bounds
    /// new data until the first ACK brings the current one. `None`: unlimited.
    pub initial_rwnd_bytes: Option<u64>,
    /// Send buffer, bytes: the data held unacknowledged is at most this (a bulk application
    /// keeps the buffer full, so it caps what is outstanding). `None`: unlimited.
    pub sndbuf_bytes: Option<u64>,
}

/// How a sender uses ECN: the codepoint on its new data and the feedback it reads. The receiver's
/// [`crate::EcnMode`] must match (both ends negotiate it; the simulator runs one stack at both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SenderEcn {
    /// No ECN: data is Not-ECT and ECN feedback is ignored.
    #[default]
    Off,
    /// RFC 3168: data is ECT(0); ECE in an ACK is a congestion signal, answered once per window
    /// with the CWR flag (§6.1.2). DCTCP's receivers (RFC 8257 §3.2) echo into the same ECE.
    Classic,
    /// L4S (RFC 9331 §4.1): data is ECT(1); feedback is Accurate ECN (RFC 9768 §3.2), decoded
    /// into [`AckSample::ce_bytes`]; no CWR flag.
    L4s,
}

impl SenderEcn {
    /// The codepoint new data is sent with (RFC 3168 §5, RFC 9331 §4.1).
    pub const fn codepoint(self) -> Ecn {
        match self {
            SenderEcn::Off => Ecn::NotEct,
            SenderEcn::Classic => Ecn::Ect0,
            SenderEcn::L4s => Ecn::Ect1,
        }
    }

    /// ECN is in use (either kind).
    pub const fn is_on(self) -> bool {
        !matches!(self, SenderEcn::Off)
    }
}

/// Why a [`SenderConfig`] or [`crate::ReceiverConfig`] was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The offending field.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}

impl SenderConfig {
    /// Check the values.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field that is out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, reason| Err(ConfigError { field, reason });
        if self.mss_bytes == 0 {
            return err("mss_bytes", "must be at least 1");
        }
        if self.initial_cwnd_bytes < self.mss_bytes as u64 {
            return err("initial_cwnd_bytes", "must be at least one MSS");
        }
        if self.initial_rto == Duration::ZERO {
            return err("initial_rto", "must be positive");
        }
        if self.max_rto == Duration::ZERO || self.max_rto < self.min_rto {
            return err("max_rto", "must be positive and at least min_rto");
        }
        if self.dupthresh == 0 {
            return err("dupthresh", "must be at least 1");
        }
        if self.initial_rwnd_bytes == Some(0) {
            return err("initial_rwnd_bytes", "must be positive (or None for unlimited)");
        }
        if self.sndbuf_bytes == Some(0) {
            return err("sndbuf_bytes", "must be positive (or None for unlimited)");
        }
        Ok(())
    }
}

/// Counters of what the sender has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes retransmitted.
    pub bytes_retransmitted: u64,
    /// Segments put on the wire, retransmissions included.
    pub segments_sent: u64,
    /// Segments retransmitted.
    pub segments_retransmitted: u64,
    /// Retransmission timeouts (each expiry, backoffs included).
    pub rto_count: u64,
    /// Loss episodes started by duplicate ACKs or SACK (fast retransmit), in every mode (for
    /// tahoe this is the fast retransmit that precedes its slow start).
    pub fast_recoveries: u64,
    /// Timeouts found spurious by the Eifel algorithm (RFC 3522) and undone.
    pub spurious_rtos: u64,
    /// ACKs received.
    pub acks_received: u64,
    /// Duplicate ACKs received (RFC 5681 §2; in the SACK modes, RFC 6675's definition).
    pub dupacks_received: u64,
    /// Window reductions caused by ECN echoes.
    pub ecn_reductions: u64,
    /// CE-marked packets fed back by Accurate ECN (s.cep less its initial value, RFC 9768
    /// §3.2.1); 0 without it.
    pub accecn_ce_packets: u64,
    /// CE-marked payload bytes fed back by Accurate ECN (the sum of every ACK's
    /// [`AckSample::ce_bytes`]); 0 without it.
    pub accecn_ce_bytes: u64,
    /// RTT samples taken (Karn's rule excludes retransmitted segments).
    pub rtt_samples: u64,
    /// Bytes declared lost (by SACK, dupacks or timeouts; a byte can be counted more than once).
    pub bytes_marked_lost: u64,
    /// Tail loss probes sent (RFC 8985 §7; `linux` mode only).
    pub tlp_probes: u64,
    /// ACKs that carried a D-SACK block (RFC 2883; read in `linux` mode only).
    pub dsacks_received: u64,
    /// Segments that D-SACK reported received twice (RFC 3708 §2: each is a spurious
    /// retransmission, or a duplicate the network made).
    pub dsack_segments: u64,
    /// Loss recoveries whose every retransmission D-SACK reported spurious, undone
    /// (RFC 3708 §3, RFC 4015 §3.2; `linux` mode only).
    pub dsack_undos: u64,
}

/// What one ACK did, for the caller's bookkeeping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// RTT sample the ACK produced (Karn's rule), if any.
    pub rtt: Option<Duration>,
    /// Bytes newly acknowledged cumulatively (the advance of snd.una).
    pub bytes_newly_acked: u64,
    /// Bytes newly SACKed (0 in the non-SACK modes).
    pub bytes_newly_sacked: u64,
}

/// The state Eifel (RFC 3522) needs to detect and undo a spurious timeout.
#[derive(Clone, Copy, Debug)]
struct EifelState {
    /// Start of the segment the timeout retransmitted (snd.una at the first expiry).
    seq: u64,
    /// Time of that segment's first retransmission (the timeout's, or an earlier fast
    /// retransmission's): an echo older than this comes from the original transmission.
    retransmit_ts: SimTime,
    prior_cwnd: u64,
    prior_ssthresh: u64,
}

/// D-SACK-based undo of a fast recovery (RFC 3708 §3, with RFC 4015 §3.2's response): the
/// window before the episode, and how many of the episode's retransmissions D-SACK has not yet
/// reported spurious (Linux's `undo_retrans`).
#[derive(Clone, Copy, Debug)]
struct DsackUndo {
    /// snd.una when the episode began: D-SACKs below it are about earlier data.
    start: u64,
    prior_cwnd: u64,
    prior_ssthresh: u64,
    /// Segments retransmitted since the episode began, less those D-SACK reported.
    retrans_segments: u64,
}

/// The sender as an ACK found it, before processing it (`Sender::on_ack`).
#[derive(Clone, Copy, Debug)]
struct AckPrior {
    /// The congestion-avoidance state.
    state: CaState,
    /// Bytes in flight (RFC 6675 pipe).
    pipe_bytes: u64,
    /// snd.una.
    una: u64,
    /// Whether any data was outstanding (snd.nxt > snd.una).
    had_outstanding: bool,
}

/// What an ACK did to the scoreboard (`Sender::update_scoreboard`).
#[derive(Clone, Copy, Debug)]
struct ScoredAck {
    /// Bytes newly delivered, cumulatively or by SACK.
    delivered: u64,
    /// Bytes newly acknowledged cumulatively (the advance of snd.una).
    cum_acked: u64,
    /// Bytes newly SACKed (0 in the non-SACK modes).
    sacked: u64,
    /// Send time of the most recently sent never-retransmitted segment the ACK newly covers,
    /// Karn's rule applied: the RTT sample's start, if any.
    newest_clean_send: Option<SimTime>,
    /// The ACK's D-SACK block (RFC 2883), in the `linux` mode.
    dsack: Option<crate::segment::SackBlock>,
}

/// What an ACK's RACK phase decided for the recovery phase (`Sender::detect_losses`).
#[derive(Clone, Copy, Debug)]
struct AckLosses {
    /// A D-SACK showed the episode's last retransmission spurious: undo the reduction.
    dsack_undo_due: bool,
    /// RACK's reordering window grew on this ACK (then it is not reset on leaving recovery).
    reo_wnd_grew: bool,
}

/// What poll_transmit would send next (RFC 6675 NextSeg).
#[derive(Clone, Copy, Debug)]
enum Candidate {
    /// Retransmit record (absolute index): rule (1), or Reno/NewReno/timeout marks, or rule (3).
    Retransmit(u64),
    /// Rule (4): the one rescue retransmission of an episode.
    Rescue(u64),
    /// New data of this many bytes: rule (2).
    New(u32),
}

/// The sending half of a connection. See the module documentation.
///
/// Laid out for the per-ACK and per-segment path (`repr(C)`, fields in declaration order; issue
/// 35): at 1,000 flows a flow's sender is often cold when its next ACK comes, so what every ACK
/// and every send read or write — sequence numbers, state, flags, timers, window, counters —
/// comes first and shares few cache lines; the RTT, rate and RACK estimators and the scoreboard
/// follow; what only recovery, undo or AccECN use comes last.
#[derive(Debug)]
#[repr(C)]
pub struct Sender {
    snd_una: u64,
    snd_nxt: u64,
    bytes_offered: u64,
    mss: u64,
    /// RFC 6582 `recover` / RFC 6675 RecoveryPoint / Linux high_seq: snd.nxt when the current
    /// Recovery or Loss episode started.
    recover: u64,
    /// snd.nxt when the current CWR episode started.
    cwr_high: u64,
    cc: Box<dyn CongestionControl>,
    dupacks: u32,
    /// Partial ACKs seen in the current NewReno recovery.
    partial_acks_in_recovery: u32,
    state: CaState,
    /// The last NextSeg found new data that the receive window or send buffer held back.
    flow_limited: bool,
    /// The PTO fired: the next poll sends one probe whatever cwnd says (§7.3).
    tlp_probe_due: bool,
    app_stopped: bool,
    /// The current CWR episode was entered for ECN feedback (not after a tail loss probe) and
    /// the controller keeps growing through such an episode
    /// ([`CongestionControl::grows_during_ecn_cwr`], asked once, at the reduction).
    cwr_grows: bool,
    /// Send the next retransmission whatever cwnd says.
    force_rtx: bool,
    cwr_pending: bool,
    cwnd_limited: bool,
    cc_owns_cwnd: bool,
    paced_data_waiting: bool,
    rto_deadline: Option<SimTime>,
    /// The tail-loss-probe timer (PTO, RFC 8985 §7.2).
    pto_deadline: Option<SimTime>,
    /// RACK's reordering timer (RFC 8985 §6.2 step 5).
    rack_deadline: Option<SimTime>,
    /// TLP.end_seq (snd.nxt after the probe) while a probe episode is open, and whether the
    /// probe was a retransmission (TLP.is_retrans).
    tlp_end: Option<(u64, bool)>,
    cwnd: CwndState,
    flow: FlowControl,
    pacer: Pacer,
    stats: SenderStats,
    cfg: SenderConfig,
    rtt: RttEstimator,
    rate: RateEstimator,
    /// RACK state (`linux` mode).
    rack: Rack,
    sb: Scoreboard,
    last_rate_sample: Option<RateSample>,
    eifel: Option<EifelState>,
    /// The undo state of the latest fast recovery (`linux` mode), until it is undone or a
    /// timeout or window reduction supersedes it.
    dsack_undo: Option<DsackUndo>,
    /// The AccECN counters ([`SenderEcn::L4s`] only).
    accecn: Option<AccEcnDecoder>,
    prr: Prr,
    /// RFC 6675 RescueRxt.
    rescue_rxt: Option<u64>,
    /// snd.una at the last timeout, to tell a repeated backoff from a new episode.
    last_rto_una: Option<u64>,
    /// An upper bound on the pacing rate set by the application (`SO_MAX_PACING_RATE`).
    max_pacing_rate_bps: Option<u64>,
}

impl Sender {
    /// A sender with nothing offered yet, calling `cc.init` at `now`.
    ///
    /// # Panics
    /// If `cfg` fails [`SenderConfig::validate`]; callers that take configs from users validate
    /// first.
    pub fn new(cfg: SenderConfig, mut cc: Box<dyn CongestionControl>, now: SimTime) -> Sender {
        if let Err(e) = cfg.validate() {
            panic!("invalid SenderConfig: {e}");
        }
        let mss = cfg.mss_bytes as u64;
        let mut cwnd = CwndState::new(cfg.initial_cwnd_bytes, mss);
        cc.init(&mut cwnd, now);
        Sender {
            cfg,
            mss,
            cc,
            cwnd,
            rtt: RttEstimator::new(
                cfg.min_rto,
                cfg.initial_rto,
                cfg.max_rto,
                cfg.clock_granularity,
            ),
            // Room for the initial window up front: the first flight would grow the queues
            // from empty through every small size (issue 35: start-up reallocations).
            sb: {
                let sb = Scoreboard::with_capacity(cfg.dupthresh, mss, (cfg.initial_cwnd_bytes.div_ceil(mss).min(64) as usize).next_power_of_two());
                let rack = cfg.recovery.uses_rack_tlp();
                sb.for_detectors(rack, cfg.recovery.uses_sack() && !rack)
            },
            rate: RateEstimator::new(),
            pacer: Pacer::new(),
            max_pacing_rate_bps: None,
            prr: Prr::default(),
            flow: FlowControl::new(cfg.initial_rwnd_bytes, cfg.sndbuf_bytes),
            flow_limited: false,
            rack: Rack::default(),
            rack_deadline: None,
            pto_deadline: None,
            tlp_probe_due: false,
            tlp_end: None,
            state: CaState::Open,
            snd_una: 0,
            snd_nxt: 0,
            bytes_offered: 0,
            app_stopped: false,
            rto_deadline: None,
            dupacks: 0,
            recover: 0,
            cwr_high: 0,
            cwr_grows: false,
            force_rtx: false,
            rescue_rxt: None,
            last_rto_una: None,
            partial_acks_in_recovery: 0,
            eifel: None,
            dsack_undo: None,
            cwr_pending: false,
            accecn: (cfg.ecn == SenderEcn::L4s).then(AccEcnDecoder::new),
            cwnd_limited: false,
            cc_owns_cwnd: false,
            paced_data_waiting: false,
            last_rate_sample: None,
            stats: SenderStats::default(),
        }
    }

    /// The connection's handshake measured `rtt` before any data (the SYN → SYN-ACK round trip):
    /// the first RTT measurement (RFC 6298 §2.2: SRTT, RTTVAR and the RTO follow from it; Linux's
    /// `tcp_ack_update_rtt` on the SYN-ACK also feeds its minimum RTT, hence RACK's reordering
    /// window and the delivery-rate sampler's minimum interval), then the controller's
    /// [`CongestionControl::on_handshake_rtt`], as Linux initializes the congestion control
    /// module only once that sample is taken. Call before the first transmission; a zero `rtt`
    /// is ignored.
    pub fn on_handshake_rtt(&mut self, rtt: Duration, now: SimTime) {
        if rtt == Duration::ZERO {
            return;
        }
        self.rtt.on_sample_at(rtt, self.snd_una, self.snd_nxt);
        self.cc.on_handshake_rtt(&mut self.cwnd, rtt, now);
    }

    /// Compute the RTO by `rule` ([`RtoRule::Linux`]: Linux's `tcp_rtt_estimator`, see
    /// [`crate::rtt`]). The timer is armed as before in both: from the time of the ACK that
    /// advances snd.una (RFC 6298 §5.3, Linux's `tcp_rearm_rto`). Call before the first RTT
    /// sample (before [`Sender::on_handshake_rtt`]); later calls are ignored.
    pub fn set_rto_rule(&mut self, rule: RtoRule) {
        if self.rtt.srtt().is_none() {
            self.rtt = self.rtt.clone().with_rule(rule);
        }
    }

    /// The application offers `bytes` more bytes (saturating). Bulk flows pass `u64::MAX / 4`.
    /// Offering again after [`Sender::app_stop`] reopens the stream.
    pub fn app_write(&mut self, bytes: u64) {
        self.bytes_offered = self.bytes_offered.saturating_add(bytes);
        self.app_stopped = false;
    }

    /// Offer nothing beyond what has already been sent once (snd.nxt); what was sent is still
    /// delivered.
    pub fn app_stop(&mut self) {
        self.bytes_offered = self.snd_nxt;
        self.app_stopped = true;
    }

    /// True when every offered byte has been acknowledged and something was offered (or the
    /// application stopped).
    pub fn is_complete(&self) -> bool {
        self.snd_una >= self.bytes_offered && (self.bytes_offered > 0 || self.app_stopped)
    }

    /// Give back the storage kept for data in flight once the transfer is complete
    /// ([`Sender::is_complete`]; [`Scoreboard::release_storage`]); nothing before. Changes no
    /// behaviour: a run of many short flows stops holding each finished flow's largest window.
    pub fn release_storage(&mut self) {
        if self.is_complete() {
            self.sb.release_storage();
        }
    }

    /// Process an ACK arriving at `now`.
    ///
    /// Order, as in Linux's `tcp_ack`: cumulative ACK and SACK scoreboard; RTT sample (Karn);
    /// Eifel check; RTO timer restart (RFC 6298 §5.3) or stop; delivery-rate sample;
    /// `pkts_acked`; loss detection and the recovery state machine; ECN; then `cong_control`,
    /// and unless it returns `true`, the recovery window arithmetic and `cong_avoid`. Each phase
    /// is one private method below, called in that order and marked `#[inline]`: each is called
    /// once, and kept out of line they cost the per-ACK path about 0.6% more instructions.
    ///
    /// An ACK for data never sent (beyond snd.nxt) is ignored.
    #[must_use]
    pub fn on_ack(&mut self, now: SimTime, ack: &AckSegment) -> AckOutcome {
        self.stats.acks_received += 1;
        if ack.ack > self.snd_nxt {
            return AckOutcome::default();
        }
        self.flow.on_ack(ack.ack, ack.rwnd_bytes);
        let prior = AckPrior {
            state: self.state,
            pipe_bytes: self.in_flight_bytes(),
            una: self.snd_una,
            had_outstanding: self.snd_nxt > self.snd_una,
        };

        let scored = self.update_scoreboard(now, ack);
        let rtt_sample = self.take_rtt_sample(now, scored.newest_clean_send);
        self.check_eifel(now, ack);
        self.update_rto_timer(now, &prior);
        let losses = self.detect_losses(now, scored.dsack);
        let rs = self.take_rate_sample(scored.delivered, rtt_sample);
        let (ece, ce_bytes) = self.read_ecn_feedback(ack, &prior, scored.delivered);

        let mut sample = AckSample {
            now,
            bytes_acked: scored.delivered,
            rtt: rtt_sample,
            min_rtt: self.rtt.min_rtt(),
            srtt: self.rtt.srtt(),
            one_way_delay: Some(ack.ts_recv.saturating_since(ack.ts_ecr)),
            prior_in_flight_bytes: prior.pipe_bytes,
            in_flight_bytes: self.in_flight_bytes(),
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            ece,
            ce_bytes,
            cwnd_limited: self.cwnd_limited,
            state: prior.state,
        };
        if scored.delivered > 0 {
            self.cc.pkts_acked(&mut self.cwnd, &sample);
        }

        // `w` is the window the recovery arithmetic wants; it is applied by `update_window` if it
        // changed, unless the controller takes over (a change a hook such as set_state makes to
        // cwnd meanwhile is kept otherwise).
        let w_before = self.cwnd.cwnd_bytes;
        let mut w = w_before;
        self.run_recovery(now, ack, ece, &prior, &scored, losses, &mut w);
        sample.in_flight_bytes = self.in_flight_bytes();
        let recovery_cwnd = (w != w_before).then_some(w);
        self.update_window(now, &sample, &rs, recovery_cwnd, scored.delivered, prior.state);

        AckOutcome {
            rtt: rtt_sample,
            bytes_newly_acked: scored.cum_acked,
            bytes_newly_sacked: scored.sacked,
        }
    }

    /// `on_ack`'s scoreboard phase: the cumulative part, then the SACK blocks (less a D-SACK
    /// block), each newly delivered segment counted into the rate estimator and RACK; then
    /// RFC 6675's IsLost marking (without RACK) or the end of RACK's ACK.
    #[inline]
    fn update_scoreboard(&mut self, now: SimTime, ack: &AckSegment) -> ScoredAck {
        let prior_una = self.snd_una;
        let mut delivered = 0u64;
        // Send time of the most recently sent never-retransmitted segment newly covered, from
        // the cumulative part and from the SACK part.
        let mut cum_clean_send: Option<SimTime> = None;
        let mut cum_covers_retransmission = false;
        let mut sack_clean_send: Option<SimTime> = None;
        self.rate.begin_ack();
        let rack_tlp = self.cfg.recovery.uses_rack_tlp();
        let min_rtt = self.rtt.min_rtt();
        if ack.ack > self.snd_una {
            let (rate, rack) = (&mut self.rate, &mut self.rack);
            self.sb.advance(ack.ack, |rec, was_sacked| {
                cum_covers_retransmission |= rec.ever_retransmitted();
                if !was_sacked {
                    account_delivery(rate, now, rec, &mut delivered, &mut cum_clean_send);
                    if rack_tlp {
                        rack.on_delivered(now, rec.sent_time, rec.end(), rec.ever_retransmitted(), ack.ts_ecr, min_rtt);
                    }
                }
            });
            self.snd_una = ack.ack;
        }
        let cum_acked = self.snd_una - prior_una;
        let mut sacked = 0u64;
        // RFC 2883 §4: a first block below the cumulative ACK, or inside the second block,
        // reports a duplicate (D-SACK); it SACKs nothing new.
        let dsack = if rack_tlp { dsack_block(ack) } else { None };
        if self.cfg.recovery.uses_sack() {
            let blocks = &ack.sack_blocks()[usize::from(dsack.is_some())..];
            for b in blocks {
                let (rate, rack) = (&mut self.rate, &mut self.rack);
                self.sb.sack(b.start, b.end, |rec| {
                    account_delivery(rate, now, rec, &mut sacked, &mut sack_clean_send);
                    if rack_tlp {
                        rack.on_delivered(now, rec.sent_time, rec.end(), rec.ever_retransmitted(), ack.ts_ecr, min_rtt);
                    }
                });
            }
            // RFC 6675's IsLost and lost-retransmission rules; RACK replaces both (as in Linux,
            // where RACK turns the duplicate-ACK threshold off).
            if !rack_tlp {
                self.sb.finish_sack();
            }
            delivered += sacked;
        }
        if rack_tlp {
            self.rack.finish_ack(now);
        }

        // Karn's rule (RFC 6298 §3): a cumulative ACK that also covers a retransmitted segment
        // is ambiguous as a whole (the retransmission may be what moved it, after the later
        // segments waited behind the hole), so its part gives no sample; newly SACKed segments
        // still may.
        if cum_covers_retransmission {
            cum_clean_send = None;
        }
        let newest_clean_send = match (cum_clean_send, sack_clean_send) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        ScoredAck { delivered, cum_acked, sacked, newest_clean_send, dsack }
    }

    /// `on_ack`'s RTT phase (RFC 6298 §3): the sample from the most recently sent segment this
    /// ACK newly covers that was never retransmitted (`newest_clean_send`, from
    /// `update_scoreboard`), fed to the RTT estimator.
    #[inline]
    fn take_rtt_sample(&mut self, now: SimTime, newest_clean_send: Option<SimTime>) -> Option<Duration> {
        let rtt_sample = newest_clean_send.map(|t| now.saturating_since(t));
        if let Some(r) = rtt_sample {
            self.rtt.on_sample_at(r, self.snd_una, self.snd_nxt);
            self.stats.rtt_samples += 1;
        }
        rtt_sample
    }

    /// `on_ack`'s retransmission-timer phase. RFC 6298 §5.2/§5.3: stop when nothing is
    /// outstanding, restart on new data acked — except that NewReno restarts it only on the
    /// first partial ACK of a recovery (RFC 6582 §3.2 step 6, the "Impatient" variant), so that a
    /// window with many holes, repaired one per RTT, falls back to a timeout and slow start
    /// instead of lasting hundreds of RTTs.
    #[inline]
    fn update_rto_timer(&mut self, now: SimTime, prior: &AckPrior) {
        let partial_newreno = self.cfg.recovery == RecoveryMode::NewReno
            && prior.state == CaState::Recovery
            && self.snd_una > prior.una
            && self.snd_una < self.recover;
        let restart = if partial_newreno {
            self.partial_acks_in_recovery += 1;
            self.partial_acks_in_recovery == 1
        } else {
            self.snd_una > prior.una
        };
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
        } else if restart {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// `on_ack`'s RACK phase (RFC 8985, `linux` mode only; nothing otherwise): the D-SACK block's
    /// undo bookkeeping (RFC 3708), the reordering window's adaptation, and RACK's time-based
    /// loss marking.
    #[inline]
    fn detect_losses(&mut self, now: SimTime, dsack: Option<crate::segment::SackBlock>) -> AckLosses {
        let mut losses = AckLosses { dsack_undo_due: false, reo_wnd_grew: false };
        if self.cfg.recovery.uses_rack_tlp() {
            if let Some(d) = dsack {
                losses.dsack_undo_due = self.on_dsack(d);
            }
            losses.reo_wnd_grew = self.rack.on_ack_dsack(self.snd_una, self.snd_nxt, dsack.is_some());
            self.rack_detect_loss(now);
        }
        losses
    }

    /// `on_ack`'s delivery-rate phase: the bytes newly marked lost (by any detector) counted, and
    /// the ACK's rate sample (draft-cheng-iccrg-delivery-rate-estimation) generated and kept.
    #[inline]
    fn take_rate_sample(&mut self, delivered: u64, rtt_sample: Option<Duration>) -> RateSample {
        let newly_lost = self.sb.take_newly_lost();
        self.stats.bytes_marked_lost += newly_lost;
        let rs = self.rate.generate(self.rtt.min_rtt(), delivered, newly_lost, rtt_sample);
        self.last_rate_sample = Some(rs);
        rs
    }

    /// `on_ack`'s ECN phase: whether the ACK signals congestion (`ece`) and the CE-marked bytes
    /// it newly feeds back. Classic: the ACK's ECE, 0 bytes. L4S: the AccECN feedback decoded
    /// ([`crate::accecn`]; `delivered` is the bytes the ACK newly acknowledged, an ACK below
    /// snd.una before it is superseded), congestion when any byte was marked. Off, or an AccECN
    /// sender given an ACK without AccECN fields: nothing.
    #[inline]
    fn read_ecn_feedback(&mut self, ack: &AckSegment, prior: &AckPrior, delivered: u64) -> (bool, u64) {
        match self.cfg.ecn {
            SenderEcn::Off => (false, 0),
            SenderEcn::Classic => (ack.ece, 0),
            SenderEcn::L4s => {
                let (Some(dec), Some(fb)) = (self.accecn.as_mut(), ack.accecn.as_ref()) else {
                    return (false, 0);
                };
                let d = dec.on_ack(fb, delivered, ack.ack < prior.una, self.mss);
                self.stats.accecn_ce_packets += d.ce_packets;
                self.stats.accecn_ce_bytes += d.ce_bytes;
                (d.ce_bytes > 0, d.ce_bytes)
            }
        }
    }

    /// `on_ack`'s recovery phase: duplicate-ACK counting, the recovery state machine (see the
    /// module table), a due D-SACK undo, RACK's reordering-window reset on leaving recovery,
    /// ECN's CWR (RFC 3168 §6.1.2) on an ECN echo when not already reducing, and TLP's
    /// bookkeeping. Writes the window the recovery arithmetic wants into `w`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn run_recovery(
        &mut self,
        now: SimTime,
        ack: &AckSegment,
        ece: bool,
        prior: &AckPrior,
        scored: &ScoredAck,
        losses: AckLosses,
        w: &mut u64,
    ) {
        let rack_tlp = self.cfg.recovery.uses_rack_tlp();
        let cum_advanced = self.snd_una > prior.una;
        let is_dupack = prior.had_outstanding
            && ack.ack == prior.una
            && if self.cfg.recovery.uses_sack() {
                scored.sacked > 0
            } else {
                true
            };
        if is_dupack {
            self.dupacks += 1;
            self.stats.dupacks_received += 1;
        }
        if cum_advanced {
            self.dupacks = 0;
        }
        self.run_state_machine(now, is_dupack, cum_advanced, scored.cum_acked, scored.delivered, w);
        if losses.dsack_undo_due {
            self.dsack_undo(now, w);
        }
        if rack_tlp
            && !losses.reo_wnd_grew
            && matches!(prior.state, CaState::Recovery | CaState::Loss)
            && !matches!(self.state, CaState::Recovery | CaState::Loss)
        {
            self.rack.on_recovery_exit();
        }

        if ece && matches!(self.state, CaState::Open | CaState::Disorder) {
            self.enter_cwr(now, LossKind::Ecn, w);
        }
        if rack_tlp {
            self.tlp_on_ack(now, ack.ack, scored.dsack, cum_advanced || scored.sacked > 0, w);
        }
    }

    /// `on_ack`'s window phase: `cong_control` first; unless the controller takes over, the
    /// window the recovery phase set (`recovery_cwnd`, bytes; `None` when it left cwnd alone)
    /// and `cong_avoid` when data was delivered and both the prior and the current state allow
    /// growth. cwnd never falls below one MSS. Then the probe timeout is re-armed.
    #[inline(always)]
    fn update_window(
        &mut self,
        now: SimTime,
        sample: &AckSample,
        rs: &RateSample,
        recovery_cwnd: Option<u64>,
        delivered: u64,
        prior_state: CaState,
    ) {
        self.cc_owns_cwnd = self.cc.cong_control(&mut self.cwnd, sample, rs);
        if !self.cc_owns_cwnd {
            if let Some(w) = recovery_cwnd {
                self.cwnd.cwnd_bytes = w;
            }
            if delivered > 0 && self.may_grow(prior_state) && self.may_grow(self.state) {
                self.cc.cong_avoid(&mut self.cwnd, sample);
            }
        }
        self.cwnd.cwnd_bytes = self.cwnd.cwnd_bytes.max(self.mss);
        self.cwnd_limited = false;
        self.arm_pto(now);
    }

    /// Window growth is allowed on ACKs in state `s` (see the module documentation): Open,
    /// Disorder and Loss; and CWR after an ECN reduction when the controller keeps growing
    /// through it ([`CongestionControl::grows_during_ecn_cwr`], TCP Prague).
    #[inline]
    fn may_grow(&self, s: CaState) -> bool {
        match s {
            CaState::Open | CaState::Disorder | CaState::Loss => true,
            CaState::Cwr => self.cwr_grows,
            CaState::Recovery => false,
        }
    }

    /// Eifel detection (RFC 3522 §3.2): the first ACK that covers the segment a timeout
    /// retransmitted tells, by its timestamp echo, whether the original or the retransmission
    /// reached the receiver. If the original did, the timeout was spurious: undo it.
    fn check_eifel(&mut self, now: SimTime, ack: &AckSegment) {
        let Some(e) = self.eifel else { return };
        if self.snd_una <= e.seq {
            return;
        }
        self.eifel = None;
        if ack.ts_ecr >= e.retransmit_ts || self.state != CaState::Loss {
            return;
        }
        self.stats.spurious_rtos += 1;
        self.cc.undo_cwnd(&mut self.cwnd, e.prior_cwnd);
        self.cwnd.ssthresh_bytes = e.prior_ssthresh;
        self.sb.clear_lost_marks();
        self.last_rto_una = None;
        self.force_rtx = false;
        let next = self.open_or_disorder();
        self.set_state(next, now);
    }

    /// A D-SACK block `d` arrived (`linux` mode): count it, and against the open undo state
    /// when it reports data of that episode (RFC 3708 §3.2: the retransmission, or its
    /// original, arrived twice, so one retransmission was unnecessary). Returns true when that
    /// leaves none of the episode's retransmissions unaccounted for: undo it.
    fn on_dsack(&mut self, d: crate::segment::SackBlock) -> bool {
        let segments = (d.end - d.start).div_ceil(self.mss).max(1);
        self.stats.dsacks_received += 1;
        self.stats.dsack_segments += segments;
        let Some(u) = self.dsack_undo.as_mut() else { return false };
        if d.start < u.start || u.retrans_segments == 0 {
            return false;
        }
        u.retrans_segments = u.retrans_segments.saturating_sub(segments);
        u.retrans_segments == 0
    }

    /// Every retransmission of the last fast recovery was spurious: restore the window and
    /// ssthresh from before it (RFC 4015 §3.2 step (4) restores the window; as Linux, never
    /// lowering either), forget the loss marks RACK made with its too-small reordering window
    /// (it marks again with the grown one), and leave Recovery.
    fn dsack_undo(&mut self, now: SimTime, w: &mut u64) {
        let Some(u) = self.dsack_undo.take() else { return };
        self.stats.dsack_undos += 1;
        self.cwnd.cwnd_bytes = *w;
        self.cc.undo_cwnd(&mut self.cwnd, u.prior_cwnd);
        self.cwnd.ssthresh_bytes = self.cwnd.ssthresh_bytes.max(u.prior_ssthresh);
        *w = self.cwnd.cwnd_bytes;
        if self.state == CaState::Recovery {
            self.sb.clear_lost_marks();
            self.force_rtx = false;
            self.exit_recovery(now);
        }
    }

    /// Loss detection and state transitions for one ACK (see the module table).
    fn run_state_machine(
        &mut self,
        now: SimTime,
        is_dupack: bool,
        cum_advanced: bool,
        cum_acked: u64,
        delivered: u64,
        w: &mut u64,
    ) {
        let mode = self.cfg.recovery;
        match self.state {
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                let lost = if mode.uses_rack_tlp() {
                    self.sb.pending_retransmit_bytes() > 0
                } else {
                    self.dupacks >= self.cfg.dupthresh
                        || (mode.uses_sack() && self.sb.front_is_lost_by_sack())
                };
                if lost && self.snd_nxt > self.snd_una && self.may_start_episode() {
                    self.enter_fast_retransmit(now, delivered, w);
                } else if self.state == CaState::Cwr {
                    // Held until data *above* the point where CWR began is acknowledged: that
                    // data carried the CWR flag, so the receiver has stopped echoing ECE and
                    // this ACK's ECE (if any) is a new mark, not the old one (as Linux does).
                    if self.snd_una > self.cwr_high {
                        self.cc
                            .cwnd_event(&mut self.cwnd, CwndEvent::CompleteCwr, now);
                        let next = self.open_or_disorder();
                        self.set_state(next, now);
                    }
                } else {
                    let next = self.open_or_disorder();
                    self.set_state(next, now);
                }
            }
            CaState::Recovery => match mode {
                RecoveryMode::Reno => {
                    if cum_advanced {
                        // RFC 5681 §3.2 step 6: the first ACK of new data ends recovery.
                        *w = self.ssthresh_floor();
                        self.exit_recovery(now);
                    } else if is_dupack {
                        *w = w.saturating_add(self.mss);
                    }
                }
                RecoveryMode::NewReno => {
                    if self.snd_una >= self.recover {
                        let flight = self.snd_nxt - self.snd_una;
                        *w = newreno_full_ack_cwnd(self.ssthresh_floor(), flight, self.mss);
                        self.exit_recovery(now);
                    } else if cum_advanced {
                        // Partial ACK: retransmit the next hole, deflate.
                        self.sb.mark_front_for_retransmit();
                        self.force_rtx = true;
                        *w = newreno_partial_ack_cwnd(*w, cum_acked, self.mss);
                    } else if is_dupack {
                        *w = w.saturating_add(self.mss);
                    }
                }
                RecoveryMode::Sack | RecoveryMode::Prr | RecoveryMode::Linux => {
                    if self.snd_una >= self.recover {
                        *w = self.ssthresh_floor();
                        self.exit_recovery(now);
                    } else if mode.uses_prr() {
                        let pipe = self.in_flight_bytes();
                        let sndcnt =
                            self.prr
                                .on_ack(delivered, pipe, self.ssthresh_floor(), self.mss);
                        *w = pipe.saturating_add(sndcnt);
                    }
                }
                RecoveryMode::Tahoe => {
                    // Tahoe never enters Recovery; treat it as Loss if it somehow did.
                    if self.snd_una >= self.recover {
                        self.exit_recovery(now);
                    }
                }
            },
            CaState::Loss => {
                if self.snd_una >= self.recover {
                    self.last_rto_una = None;
                    let next = self.open_or_disorder();
                    self.set_state(next, now);
                }
            }
        }
    }

    /// Fast retransmit: a loss detected by dupacks or SACK starts an episode.
    fn enter_fast_retransmit(&mut self, now: SimTime, delivered: u64, w: &mut u64) {
        let mode = self.cfg.recovery;
        self.stats.fast_recoveries += 1;
        let prior_ssthresh = self.cwnd.ssthresh_bytes;
        // Coming from CWR the window was already reduced for this window of data (RFC 3168
        // §6.1.2: react once), so ssthresh stays.
        if self.state != CaState::Cwr {
            let ev = LossEvent {
                now,
                kind: LossKind::FastRetransmit,
                flight_size_bytes: self.flight_size_for_reduction(),
                in_flight_bytes: self.in_flight_bytes(),
            };
            self.cwnd.ssthresh_bytes = self.cc.ssthresh(&self.cwnd, &ev);
        }
        self.recover = self.snd_nxt;
        self.rescue_rxt = None;
        self.force_rtx = true;
        self.partial_acks_in_recovery = 0;
        // A probe episode ends in the recovery its ACK started: that recovery's reduction is
        // the one for this window (RFC 8985 §7.4.2).
        self.tlp_end = None;
        self.pto_deadline = None;
        let ssthresh = self.ssthresh_floor();
        match mode {
            RecoveryMode::Tahoe => {
                // Go back N from a one-segment window.
                self.sb.mark_all_lost();
                *w = self.mss;
                // A timeout before any progress is then a repeat, not a second reduction.
                self.last_rto_una = Some(self.snd_una);
                self.set_state(CaState::Loss, now);
                return;
            }
            RecoveryMode::Reno | RecoveryMode::NewReno => {
                self.sb.mark_front_for_retransmit();
                *w = ssthresh.saturating_add(self.cfg.dupthresh as u64 * self.mss);
            }
            RecoveryMode::Sack => {
                self.sb.mark_front_for_retransmit();
                *w = ssthresh;
            }
            RecoveryMode::Prr | RecoveryMode::Linux => {
                if mode == RecoveryMode::Linux {
                    self.dsack_undo = Some(DsackUndo {
                        start: self.snd_una,
                        prior_cwnd: self.cwnd.cwnd_bytes,
                        prior_ssthresh,
                        retrans_segments: 0,
                    });
                }
                // RACK has marked what is lost; the others mark the first segment.
                if mode == RecoveryMode::Prr {
                    self.sb.mark_front_for_retransmit();
                }
                self.prr.start(self.snd_nxt - self.snd_una);
                let pipe = self.in_flight_bytes();
                *w = pipe.saturating_add(self.prr.on_ack(delivered, pipe, ssthresh, self.mss));
            }
        }
        self.set_state(CaState::Recovery, now);
    }

    /// RFC 6582 §3.2 step 1 (NewReno only): duplicate ACKs start a new episode only when the
    /// cumulative ACK covers *more than* `recover`, the highest byte sent when the last episode
    /// (fast retransmit or timeout) began; `recover` is kept one past that byte, hence the
    /// strict comparison. This stops the duplicate ACKs of a go-back-N after a timeout from
    /// halving the window again. Without RFC 6582 §4's heuristics, a loss of exactly the first
    /// segment sent after `recover` waits for the timer. `recover == 0`: no episode yet.
    /// Reno and Tahoe have no such guard (as in RFC 5681); the SACK modes need none, since
    /// duplicate segments SACK nothing new and so are not duplicate ACKs (RFC 6675 §2).
    fn may_start_episode(&self) -> bool {
        self.cfg.recovery != RecoveryMode::NewReno
            || self.recover == 0
            || self.snd_una > self.recover
    }

    fn exit_recovery(&mut self, now: SimTime) {
        self.dupacks = 0;
        self.rescue_rxt = None;
        let next = self.open_or_disorder();
        self.set_state(next, now);
    }

    /// ECN echo in Open/Disorder (RFC 3168 §6.1.2): one reduction per window of data.
    /// Also the reduction after a tail loss probe repaired a loss (RFC 8985 §7.4.2, `kind`
    /// FastRetransmit): the same once-per-window cut, without the CWR flag.
    ///
    /// With Accurate ECN ([`SenderEcn::L4s`]) a controller may decline the reduction (an
    /// `ssthresh` of at least cwnd: TCP Prague reduces at most once per its reference RTT): then
    /// nothing changes and no CWR starts, so the next CE feedback is offered again. AccECN has
    /// no CWR flag to send (RFC 9768 §3.1.5), and a CWR held for a round trip after a declined
    /// reduction would space the controller's reductions further apart than it asked.
    fn enter_cwr(&mut self, now: SimTime, kind: LossKind, w: &mut u64) {
        let ev = LossEvent {
            now,
            kind,
            flight_size_bytes: self.flight_size_for_reduction(),
            in_flight_bytes: self.in_flight_bytes(),
        };
        let ssthresh = self.cc.ssthresh(&self.cwnd, &ev);
        if kind == LossKind::Ecn && self.cfg.ecn == SenderEcn::L4s && ssthresh >= self.cwnd.cwnd_bytes {
            return;
        }
        self.cwnd.ssthresh_bytes = ssthresh;
        *w = (*w).min(self.ssthresh_floor());
        // A new reduction: an undo would now restore a window from before it.
        self.dsack_undo = None;
        self.cwr_high = self.snd_nxt;
        self.cwr_grows = kind == LossKind::Ecn && self.cc.grows_during_ecn_cwr();
        if kind == LossKind::Ecn {
            // RFC 9768 §3.1.5: in AccECN mode the CWR flag is part of ACE, never sent as CWR.
            self.cwr_pending = self.cfg.ecn == SenderEcn::Classic;
            self.stats.ecn_reductions += 1;
        }
        self.set_state(CaState::Cwr, now);
    }

    /// RACK loss detection (RFC 8985 §6.2 steps 4–5) and its reordering timer.
    fn rack_detect_loss(&mut self, now: SimTime) {
        self.rack_deadline = None;
        let Some(newest) = self.rack.newest() else { return };
        let in_recovery = matches!(self.state, CaState::Recovery | CaState::Loss);
        let dupthresh_sacked = self.sb.sacked_segments() >= self.cfg.dupthresh as u64;
        let reo_wnd =
            self.rack
                .reo_wnd(in_recovery, dupthresh_sacked, self.rtt.min_rtt(), self.rtt.srtt());
        self.rack_deadline = self
            .sb
            .rack_detect_loss(now, newest, self.rack.wait(reo_wnd));
    }

    /// The end of a TLP episode (RFC 8985 §7.4.2; Linux's `tcp_process_tlp_ack`), on an ACK of
    /// `ack_no` carrying the D-SACK block `dsack` (if any), `progressed` when it advanced snd.una
    /// or SACKed new data. Nothing is decided before the ACK reaches TLP.end_seq. A probe of new
    /// data ends the episode. A retransmitted probe ends it without loss when a D-SACK covers
    /// it (the original arrived too) or when a pure duplicate ACK reaches TLP.end_seq; an ACK
    /// *beyond* TLP.end_seq without that D-SACK says the probe repaired a loss, and the window is
    /// cut once (CWR) unless recovery already did. An ACK exactly at TLP.end_seq that advanced
    /// waits for the next: when the original was only delayed (in a queue), the probe's D-SACK
    /// comes right after it, before any ACK of later data.
    fn tlp_on_ack(&mut self, now: SimTime, ack_no: u64, dsack: Option<crate::segment::SackBlock>, progressed: bool,
                  w: &mut u64) {
        let Some((end, is_retrans)) = self.tlp_end else { return };
        if ack_no < end {
            return;
        }
        if !is_retrans || dsack.is_some_and(|d| d.start < end && d.end >= end) {
            self.tlp_end = None;
        } else if ack_no > end {
            self.tlp_end = None;
            if matches!(self.state, CaState::Open | CaState::Disorder) {
                self.enter_cwr(now, LossKind::FastRetransmit, w);
            }
        } else if !progressed {
            self.tlp_end = None;
        }
    }

    /// Arm (or disarm) the probe timeout (RFC 8985 §7.2): with data outstanding, outside
    /// recovery, no probe episode open: PTO = 2·SRTT, plus the worst-case delayed ACK when one
    /// segment is in flight (1 s before any RTT sample), and never after the RTO.
    fn arm_pto(&mut self, now: SimTime) {
        self.pto_deadline = None;
        let eligible = self.cfg.recovery.uses_rack_tlp()
            && matches!(self.state, CaState::Open | CaState::Disorder | CaState::Cwr)
            && self.snd_nxt > self.snd_una
            && self.tlp_end.is_none()
            && !self.tlp_probe_due;
        if !eligible {
            return;
        }
        let pto = match self.rtt.srtt() {
            Some(srtt) => {
                let mut p = srtt.saturating_mul(2);
                if self.snd_nxt - self.snd_una <= self.mss {
                    p = p + TLP_MAX_ACK_DELAY;
                }
                p
            }
            None => Duration::from_secs(1),
        };
        let at = now + pto;
        self.pto_deadline = Some(self.rto_deadline.map_or(at, |r| at.min(r)));
    }

    /// The PTO fired: send a probe on the next poll (RFC 8985 §7.3).
    fn on_pto(&mut self) {
        self.pto_deadline = None;
        if matches!(self.state, CaState::Open | CaState::Disorder | CaState::Cwr)
            && self.snd_nxt > self.snd_una
            && self.tlp_end.is_none()
        {
            self.tlp_probe_due = true;
        }
    }

    /// RACK's reordering timer fired: detect again, and start recovery if something is lost.
    fn on_rack_timer(&mut self, now: SimTime) {
        self.rack_detect_loss(now);
        let newly_lost = self.sb.take_newly_lost();
        self.stats.bytes_marked_lost += newly_lost;
        if matches!(self.state, CaState::Open | CaState::Disorder | CaState::Cwr)
            && self.sb.pending_retransmit_bytes() > 0
        {
            let mut w = self.cwnd.cwnd_bytes;
            self.enter_fast_retransmit(now, 0, &mut w);
            self.cwnd.cwnd_bytes = w.max(self.mss);
            self.pto_deadline = None;
        }
    }

    /// FlightSize for a window reduction (RFC 5681 eq. 4): the bytes sent and not cumulatively
    /// acknowledged, but never more than cwnd. Duplicate and SACK ACKs clock data out beyond
    /// cwnd when counted as snd.nxt − snd.una (RFC 6675 sends by pipe, which leaves SACKed
    /// bytes out), and RFC 3042 §2 excludes data sent that way from FlightSize; after a long
    /// SACK recovery snd.nxt − snd.una can be many windows, and halving it would *raise*
    /// ssthresh on a loss.
    fn flight_size_for_reduction(&self) -> u64 {
        (self.snd_nxt - self.snd_una).min(self.cwnd.cwnd_bytes)
    }

    /// ssthresh as a window value: never below one MSS.
    fn ssthresh_floor(&self) -> u64 {
        self.cwnd.ssthresh_bytes.max(self.mss)
    }

    fn open_or_disorder(&self) -> CaState {
        if self.dupacks > 0 || self.sb.sacked_bytes() > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        }
    }

    fn set_state(&mut self, new: CaState, now: SimTime) {
        if new != self.state {
            self.state = new;
            self.cc.set_state(&mut self.cwnd, new, now);
        }
    }

    /// The retransmission timer expired (RFC 6298 §5.4–§5.6, RFC 5681 §3.1).
    fn on_rto(&mut self, now: SimTime) {
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
            return;
        }
        self.stats.rto_count += 1;
        // RFC 5681 eq. 4 note: ssthresh is not reduced again when the same segment times out
        // repeatedly. Nor is it when the timeout interrupts a Recovery or CWR episode that has
        // already reduced it for this window of data (as Linux's tcp_enter_loss): FlightSize
        // then counts everything SACK-clocked out during the episode and would overstate it.
        let repeated = self.state == CaState::Loss && self.last_rto_una == Some(self.snd_una);
        let new_reduction = matches!(self.state, CaState::Open | CaState::Disorder)
            || (self.state == CaState::Loss && !repeated);
        // Eifel (RFC 3522) is armed only for a timeout that starts a reduction: undoing one that
        // interrupted fast recovery would restore a recovery-time (inflated) window. RetransmitTS
        // is the segment's first retransmission: an earlier fast retransmit if there was one.
        if new_reduction {
            let retransmit_ts = self.sb.front_retransmitted_at().unwrap_or(now);
            self.eifel = Some(EifelState {
                seq: self.snd_una,
                retransmit_ts,
                prior_cwnd: self.cwnd.cwnd_bytes,
                prior_ssthresh: self.cwnd.ssthresh_bytes,
            });
        } else if !repeated {
            self.eifel = None;
        }
        // The timeout's own undo is Eifel's; a fast recovery it interrupts is not undone.
        self.dsack_undo = None;
        if new_reduction {
            let ev = LossEvent {
                now,
                kind: LossKind::Timeout,
                flight_size_bytes: self.flight_size_for_reduction(),
                in_flight_bytes: self.in_flight_bytes(),
            };
            self.cwnd.ssthresh_bytes = self.cc.ssthresh(&self.cwnd, &ev);
        }
        self.cc.cwnd_event(&mut self.cwnd, CwndEvent::Loss, now);
        // Loss window LW = 1 MSS (RFC 5681 §3.1).
        self.cwnd.cwnd_bytes = self.mss;
        if self.cfg.recovery.uses_rack_tlp() {
            // RFC 8985 §6.3: what was sent within RACK.rtt is not presumed lost yet.
            self.sb.mark_lost_on_rto(now, self.rack.wait(Duration::ZERO));
        } else {
            self.sb.mark_all_lost();
        }
        let newly_lost = self.sb.take_newly_lost();
        self.stats.bytes_marked_lost += newly_lost;
        self.recover = self.snd_nxt;
        self.last_rto_una = Some(self.snd_una);
        self.dupacks = 0;
        self.rescue_rxt = None;
        self.force_rtx = true;
        self.rtt.backoff();
        self.rto_deadline = Some(now + self.rtt.rto());
        self.pto_deadline = None;
        self.rack_deadline = None;
        self.tlp_probe_due = false;
        self.tlp_end = None;
        self.set_state(CaState::Loss, now);
    }

    /// Fire what is due at `now`: the retransmission timer. Harmless when nothing is due, so the
    /// caller may call early or late (lazy timers). A pacing release needs no call: the next
    /// [`Sender::poll_transmit`] at or after it sends.
    pub fn handle_timeout(&mut self, now: SimTime) {
        if self.rto_deadline.is_some_and(|d| now >= d) {
            self.on_rto(now);
        }
        if self.pto_deadline.is_some_and(|d| now >= d) {
            self.on_pto();
        }
        if self.rack_deadline.is_some_and(|d| now >= d) {
            self.on_rack_timer(now);
        }
    }

    /// Cap the pacing rate at `rate_bps` bits per second of payload (`None`: no cap), as Linux's
    /// `SO_MAX_PACING_RATE` socket option does: a pacing controller is paced at the smaller of
    /// its rate and the cap, a window-only controller (Reno, CUBIC) at the cap. (`ccarena send
    /// --limit-rate` does not use it: its token bucket, `ccarena_udp::limit`, lets the driver
    /// send in batches instead of waking once per packet.)
    pub fn set_max_pacing_rate_bps(&mut self, rate_bps: Option<u64>) {
        self.max_pacing_rate_bps = rate_bps.filter(|r| *r > 0);
    }

    /// Let the pacer make up to `burst` of late polling back-to-back ([`Pacer::with_burst`]);
    /// for drivers on a real clock. The simulator leaves it at zero.
    pub fn set_pacing_burst(&mut self, burst: Duration) {
        self.pacer.set_burst(burst);
    }

    /// The rate the next transmission is paced at, bits per second; `None`: unpaced.
    fn pacing_rate_now(&self) -> Option<u64> {
        let cc_rate = self.cwnd.pacing_rate_bps.filter(|r| *r > 0);
        match (cc_rate, self.max_pacing_rate_bps) {
            (Some(r), Some(cap)) => Some(r.min(cap)),
            (r, cap) => r.or(cap),
        }
    }

    /// The earliest time [`Sender::handle_timeout`] (for the RTO) or [`Sender::poll_transmit`]
    /// (for a pacing release, reported only when the last poll found data waiting for it) must
    /// be called; `None` when nothing is pending.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        // The earliest of the armed deadlines, folded by hand: this runs after every packet
        // the sender takes in or sends, and an iterator over the array costs several times more.
        let earliest = |a: Option<SimTime>, b: Option<SimTime>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        let pace = self.paced_data_waiting.then(|| self.pacer.release_time());
        earliest(earliest(self.rto_deadline, pace), earliest(self.pto_deadline, self.rack_deadline))
    }

    /// NextSeg (RFC 6675 §4): what to send next, ignoring the window and pacing.
    fn next_candidate(&mut self) -> Option<Candidate> {
        if let Some(abs) = self.sb.next_lost() {
            return Some(Candidate::Retransmit(abs));
        }
        // Rule (2): new data, as far as the receive window and send buffer allow; when they
        // hold it back, rules (3) and (4) may still retransmit.
        self.flow_limited = false;
        if self.snd_nxt < self.bytes_offered {
            match self
                .flow
                .next_len(self.snd_una, self.snd_nxt, self.bytes_offered, self.mss)
            {
                Some(len) => return Some(Candidate::New(len)),
                None => self.flow_limited = true,
            }
        }
        if self.cfg.recovery.uses_sack() && self.state == CaState::Recovery {
            if let Some(abs) = self.sb.rule3_candidate() {
                return Some(Candidate::Retransmit(abs));
            }
            if self.rescue_rxt.is_none_or(|r| self.snd_una > r) {
                if let Some(abs) = self.sb.rescue_candidate() {
                    return Some(Candidate::Rescue(abs));
                }
            }
        }
        None
    }

    /// The next segment allowed at `now`, or `None`. Call repeatedly until `None` after every
    /// [`Sender::on_ack`], [`Sender::handle_timeout`] and [`Sender::app_write`].
    ///
    /// A segment is sent when there is something to send (NextSeg: lost segments first, then new
    /// data, then in SACK recovery rules 3 and 4), `cwnd − pipe ≥ 1 MSS` (or it is the
    /// episode's forced first retransmission), and the pacer allows it. Segments are at most one
    /// MSS; new data is sent as soon as any is offered (no Nagle).
    #[must_use]
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<DataSegment> {
        self.paced_data_waiting = false;
        let pipe = self.in_flight_bytes();
        // A tail loss probe (RFC 8985 §7.3): new data if the windows allow it, else the last
        // segment again, sent whatever cwnd says.
        let probe = std::mem::take(&mut self.tlp_probe_due);
        let next = match self.next_candidate() {
            Some(Candidate::New(len)) => Some(Candidate::New(len)),
            c if probe => self.sb.last_unsacked().map(Candidate::Retransmit).or(c),
            c => c,
        };
        let Some(cand) = next else {
            // draft-cheng §3.3: nothing to send and the window not full: app-limited (a sender
            // held back by the peer's window is not: Linux counts that apart, as rwnd-limited).
            if pipe + self.mss <= self.cwnd.cwnd_bytes && !self.flow_limited {
                self.rate.mark_app_limited(pipe);
            }
            return None;
        };
        let forced = probe || (self.force_rtx && !matches!(cand, Candidate::New(_)));
        if !forced && pipe + self.mss > self.cwnd.cwnd_bytes {
            self.cwnd_limited = true;
            return None;
        }
        let rate = self.pacing_rate_now();
        if rate.is_some() && !self.pacer.ready(now) {
            self.paced_data_waiting = true;
            return None;
        }
        let stamp = self.rate.on_send(now, pipe);
        let seg = match cand {
            Candidate::Retransmit(abs) | Candidate::Rescue(abs) => {
                if matches!(cand, Candidate::Rescue(_)) {
                    self.rescue_rxt = Some(self.recover);
                }
                let (seq, len) = self.sb.mark_retransmitted(abs, now, stamp, self.snd_nxt);
                self.force_rtx = false;
                if let Some(u) = self.dsack_undo.as_mut() {
                    u.retrans_segments += 1;
                }
                self.stats.bytes_retransmitted += len as u64;
                self.stats.segments_retransmitted += 1;
                DataSegment {
                    seq,
                    len,
                    ts_val: now,
                    ecn: Ecn::NotEct,
                    cwr: false,
                    retransmit: true,
                }
            }
            Candidate::New(len) => {
                if self.snd_nxt == self.snd_una {
                    self.cc.cwnd_event(&mut self.cwnd, CwndEvent::TxStart, now);
                }
                let seq = self.snd_nxt;
                self.sb.push(SegRecord::new(seq, len, now, stamp));
                self.snd_nxt += len as u64;
                let cwr = std::mem::take(&mut self.cwr_pending);
                DataSegment {
                    seq,
                    len,
                    ts_val: now,
                    ecn: self.cfg.ecn.codepoint(),
                    cwr,
                    retransmit: false,
                }
            }
        };
        if self.state == CaState::Recovery && self.cfg.recovery.uses_prr() {
            self.prr.on_sent(seg.len as u64);
        }
        self.pacer.on_send(now, seg.len as u64, rate);
        if probe {
            // §7.3: the probe's episode ends when snd.nxt at this point is acknowledged; the RTO
            // is re-armed behind it.
            self.tlp_end = Some((self.snd_nxt, seg.retransmit));
            self.stats.tlp_probes += 1;
            self.rto_deadline = Some(now + self.rtt.rto());
        } else if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        if !seg.retransmit && !probe && self.cfg.recovery.uses_rack_tlp() {
            self.arm_pto(now);
        }
        self.stats.bytes_sent += seg.len as u64;
        self.stats.segments_sent += 1;
        Some(seg)
    }

    /// The window state (cwnd, ssthresh, MSS, pacing rate).
    pub fn cwnd(&self) -> &CwndState {
        &self.cwnd
    }

    /// Smoothed RTT (RFC 6298), `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// RTT variation (RFC 6298), `None` before the first sample.
    pub fn rttvar(&self) -> Option<Duration> {
        self.rtt.rttvar()
    }

    /// Smallest RTT sample so far.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.rtt.min_rtt()
    }

    /// Current retransmission timeout, backoff included.
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// Bytes in flight by RFC 6675's pipe: sent and not acknowledged or SACKed, not presumed
    /// lost, plus retransmissions presumed in flight.
    pub fn in_flight_bytes(&self) -> u64 {
        self.sb.pipe()
    }

    /// Congestion-avoidance state.
    pub fn ca_state(&self) -> CaState {
        self.state
    }

    /// First byte not yet cumulatively acknowledged.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Next byte to send for the first time.
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    /// Total bytes the application has offered.
    pub fn bytes_offered(&self) -> u64 {
        self.bytes_offered
    }

    /// Counters.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// The controller's internal mode (BBR's `"PROBE_BW"`), empty if it has none.
    pub fn cc_mode(&self) -> &'static str {
        self.cc.mode()
    }

    /// Lend the controller the MPTCP connection's view of its subflows before an ACK or timeout
    /// of this subflow ([`ccarena_cc::CongestionControl::set_coupling_view`]).
    pub fn set_coupling_view(&mut self, subflows: &[ccarena_cc::coupled::SubflowView], me: usize) {
        self.cc.set_coupling_view(subflows, me);
    }

    /// The caller had new data for this sender that its congestion window held back: until the
    /// next ACK, the sender counts as cwnd-limited ([`AckSample::cwnd_limited`], RFC 7661
    /// §4.2), as when [`Sender::poll_transmit`] itself finds data blocked by cwnd. For an MPTCP
    /// connection, whose scheduler hands a subflow data only when its window has room, so the
    /// subflow's own poll never sees data it cannot send (Linux's `tcp_cwnd_validate` counts a
    /// subflow filled to its window as cwnd-limited the same way).
    pub fn note_cwnd_limited(&mut self) {
        self.cwnd_limited = true;
    }

    /// Halve the congestion window (never below one MSS) and set ssthresh to the new window
    /// (at least two MSS), without telling the controller: an MPTCP connection penalising this
    /// subflow for holding up the connection's receive window (Raiciu et al., NSDI 2012, §4.2
    /// "penalizing slow subflows"; the out-of-tree Linux MPTCP v0.9x's
    /// `mptcp_rcv_buf_optimization` writes `snd_cwnd` and `snd_ssthresh` directly the same way).
    /// Data already in flight stays in flight; the subflow sends again once its pipe falls below
    /// the new window.
    pub fn penalize(&mut self) {
        let mss = self.mss;
        self.cwnd.cwnd_bytes = (self.cwnd.cwnd_bytes / 2).max(mss);
        self.cwnd.ssthresh_bytes = self.cwnd.cwnd_bytes.max(2 * mss);
    }

    /// The controller's flavor name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// The configuration the sender was built with.
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// The delivery-rate sample of the latest ACK (its `interval` is zero when the ACK gave no
    /// valid sample), `None` before the first ACK.
    pub fn last_rate_sample(&self) -> Option<&RateSample> {
        self.last_rate_sample.as_ref()
    }

    /// Bytes delivered (cumulatively acknowledged or SACKed) so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.rate.delivered()
    }

    /// Bytes SACKed above snd.una.
    pub fn sacked_bytes(&self) -> u64 {
        self.sb.sacked_bytes()
    }

    /// Bytes declared lost and not yet retransmitted.
    pub fn pending_retransmit_bytes(&self) -> u64 {
        self.sb.pending_retransmit_bytes()
    }

    /// Segments sent and not cumulatively acknowledged.
    pub fn outstanding_segments(&self) -> usize {
        self.sb.len()
    }

    /// True when the controller's `cong_control` took over the window on the latest ACK.
    pub fn cc_owns_cwnd(&self) -> bool {
        self.cc_owns_cwnd
    }

    /// The current PRR counters (meaningful in Recovery with [`RecoveryMode::Prr`]).
    pub fn prr(&self) -> &Prr {
        &self.prr
    }
}

/// RFC 8985 §7.2 WCDelAckT: the worst-case delayed-ACK time added to the PTO when only one
/// segment is in flight (200 ms, as the RFC recommends and Linux uses).
pub const TLP_MAX_ACK_DELAY: Duration = Duration::from_millis(200);


/// The D-SACK block of `ack`, if its first SACK block is one (RFC 2883 §4 / RFC 3708 §2):
/// below the cumulative ACK, or contained in the second block.
fn dsack_block(ack: &AckSegment) -> Option<crate::segment::SackBlock> {
    let blocks = ack.sack_blocks();
    let first = *blocks.first()?;
    let inside_second = blocks
        .get(1)
        .is_some_and(|b| b.start <= first.start && first.end <= b.end);
    (first.end <= ack.ack || inside_second).then_some(first)
}

/// Count a newly delivered record: bytes, the rate sample, and the Karn-eligible send time.
fn account_delivery(
    rate: &mut RateEstimator,
    now: SimTime,
    rec: &SegRecord,
    bytes: &mut u64,
    newest_clean_send: &mut Option<SimTime>,
) {
    let len = rec.len as u64;
    *bytes += len;
    rate.on_delivered(now, rec.end(), len, rec.sent_time, &rec.stamp());
    if !rec.ever_retransmitted() {
        *newest_clean_send =
            Some(newest_clean_send.map_or(rec.sent_time, |t| t.max(rec.sent_time)));
    }
}
