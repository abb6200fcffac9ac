//! Congestion controllers for ccarena.
//!
//! One trait, [`CongestionControl`], and one file per flavor. A controller is plain state plus
//! arithmetic: it owns no clock, no RNG and no handle to a simulator or a socket. Everything it
//! needs (the current time, RTT samples, bytes newly acknowledged, delivery-rate samples, ECN
//! echoes) is passed into its hooks by the transport, which is what lets the same controller run in
//! the simulator and on real UDP sockets.
//!
//! Windows are in bytes (`cwnd_bytes`); where a source speaks in packets the controller converts
//! with [`CwndState::mss_bytes`]. Times are integer nanoseconds ([`SimTime`], [`Duration`]); rates are
//! bits per second.
//!
//! # The hooks, and how each family plugs in
//!
//! The hooks are named after Linux's `struct tcp_congestion_ops` (include/net/tcp.h), whose names
//! the whole field knows:
//!
//! | hook | called by the transport | default |
//! |---|---|---|
//! | [`init`](CongestionControl::init) | once, before the first segment | nothing |
//! | [`pkts_acked`](CongestionControl::pkts_acked) | on every ACK that newly acknowledges data (cumulatively or by SACK), with the RTT sample if Karn's rule allows one, in every [`CaState`] | nothing |
//! | [`cong_avoid`](CongestionControl::cong_avoid) | on such an ACK when not in recovery/loss/CWR: slow start and congestion avoidance | required |
//! | [`ssthresh`](CongestionControl::ssthresh) | when a congestion event starts (fast retransmit, RTO, ECN echo): returns the new ssthresh | required |
//! | [`set_state`](CongestionControl::set_state) | on every [`CaState`] transition | nothing |
//! | [`cwnd_event`](CongestionControl::cwnd_event) | on [`CwndEvent`]s (restart after idle, CWR complete, CE seen, ...) | nothing |
//! | [`undo_cwnd`](CongestionControl::undo_cwnd) | when a reduction proves spurious (Eifel, RFC 3522) | `max(cwnd, prior cwnd)` |
//! | [`cong_control`](CongestionControl::cong_control) | on every ACK, before anything else; returning `true` takes over cwnd and pacing completely (no `cong_avoid`, no PRR) | `false` |
//!
//! - **Loss-based AIMD and its relatives** (Reno, CUBIC, BIC, HighSpeed, H-TCP, Scalable, ...):
//!   `cong_avoid` grows the window, `ssthresh` shrinks it. The transport's loss recovery (Reno,
//!   NewReno, SACK, PRR) drives cwnd during recovery and sets `cwnd = ssthresh` when it ends, as
//!   Linux does. Reno's pieces ([`reno::slow_start`], [`reno::cong_avoid_ai`]) are free functions so
//!   other flavors reuse them by composition.
//! - **Delay-based** (Vegas, FAST, LEDBAT, TCP-LP, NV, CDG): per-ACK RTT samples arrive in
//!   [`AckSample::rtt`] (and the receiver-stamped one-way delay in [`AckSample::one_way_delay`] for
//!   LEDBAT and TCP-LP). Per-RTT decisions mark a round with [`AckSample::snd_nxt`] and end it when
//!   [`AckSample::snd_una`] passes the mark, exactly like Linux Vegas's `beg_snd_nxt`.
//! - **Model-based** (BBR v1/v3): implement `cong_control`, read [`RateSample`] (delivery rate,
//!   app-limited flag, losses) and set both `cwnd_bytes` and `pacing_rate_bps` in [`CwndState`];
//!   return `true` so the transport applies neither `cong_avoid` nor PRR.
//! - **ECN-based** (DCTCP): [`AckSample::ece`] says whether the ACK echoed CE; count the bytes acked
//!   with ECE per window in `pkts_acked` and reduce in `ssthresh` when the transport signals an ECN
//!   congestion event ([`LossKind::Ecn`]). DCTCP's receiver side (ECE mirroring each segment's
//!   CE, RFC 8257 §3.2) is the transport receiver's DCTCP echo mode, chosen for flavors whose
//!   catalogue entry has `needs_ecn`; [`CwndEvent::EcnIsCe`]/[`CwndEvent::EcnNoCe`] are not raised.
//! - **Rate-based** (UDT's DAIMD): set `pacing_rate_bps` to the sending rate and `cwnd_bytes` to the
//!   flow window from `cong_control`; the SYN-interval (10 ms) rate update is done on the first ACK
//!   at or after each SYN boundary using [`AckSample::now`], so no timer is needed in the trait.

pub mod bbr;
pub mod bbr3;
mod bbr_common;
pub mod bic;
pub mod classic_ecn_detection;
pub mod cdg;
pub mod compound;
pub mod coupled;
pub mod cubic;
pub mod dctcp;
pub mod fast;
pub mod growth;
pub mod highspeed;
pub mod hstcp_lp;
pub mod htcp;
pub mod hystart;
pub mod hybla;
pub mod illinois;
pub mod ledbat;
pub mod lp;
pub mod ltcp;
pub mod marked_fraction;
pub mod nv;
pub mod params;
pub mod prague;
pub mod registry;
pub mod reno;
pub mod scalable;
pub mod time;
pub mod udt;
pub mod vegas;
pub mod wvegas;
pub mod veno;
pub mod westwood;
pub mod yeah;

pub use params::{ParamInfo, Params};
pub use registry::{catalogue, is_l4s_flow, new_controller, FlavorInfo};
pub use time::{Duration, SimTime};

use std::fmt;

/// One subflow of a Multipath TCP connection as a coupled controller ([`coupled`]) sees it: plain numbers the connection reads
/// from its subflows' senders before each hook.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowView {
    /// The subflow's congestion window, bytes. During fast recovery the transport gives the
    /// subflow's ssthresh instead: the window is inflated there and no longer says what the
    /// subflow sends per RTT (RFC 6356 §4).
    pub cwnd_bytes: u64,
    /// The subflow's MSS, bytes.
    pub mss_bytes: u64,
    /// The subflow's smoothed RTT (RFC 6298); `None` before its first sample.
    pub srtt: Option<Duration>,
    /// Bytes acknowledged on the subflow since its last congestion event (OLIA's ℓ2,r).
    pub acked_since_loss_bytes: u64,
    /// Bytes acknowledged on the subflow between its last two congestion events (OLIA's ℓ1,r),
    /// the subflow's start counting as one (after its first event: the bytes acknowledged before
    /// it, as the authors' Linux implementation counts); 0 before its first event. OLIA ranks
    /// paths by `max(ℓ1, ℓ2)`, so only the larger of the two matters.
    pub acked_between_losses_bytes: u64,
    /// The subflow is established and not failed: only active subflows enter the sums.
    pub active: bool,
}

/// The window state a controller reads and writes; owned by the transport, lent to every hook.
///
/// The transport owns it (as Linux's `tcp_sock` owns `snd_cwnd`) because loss recovery (NewReno's
/// inflation, PRR) must also set cwnd while the controller is not in charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CwndState {
    /// Congestion window, bytes. Never below one MSS.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes. `u64::MAX` until the first congestion event.
    pub ssthresh_bytes: u64,
    /// Maximum segment size, bytes (payload per full segment).
    pub mss_bytes: u64,
    /// Pacing rate requested by the controller, bits per second; `None` sends at the window's pace.
    pub pacing_rate_bps: Option<u64>,
}

impl CwndState {
    /// A fresh window of `initial_cwnd_bytes` with an infinite ssthresh and no pacing.
    pub fn new(initial_cwnd_bytes: u64, mss_bytes: u64) -> CwndState {
        CwndState {
            cwnd_bytes: initial_cwnd_bytes,
            ssthresh_bytes: u64::MAX,
            mss_bytes,
            pacing_rate_bps: None,
        }
    }

    /// True while cwnd < ssthresh (RFC 5681 §3.1: slow start).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }

    /// cwnd in MSS-sized packets (fractional), for controllers whose sources speak in packets.
    pub fn cwnd_packets(&self) -> f64 {
        self.cwnd_bytes as f64 / self.mss_bytes as f64
    }
}

/// The congestion-avoidance state of a connection, named as Linux names them (`tcp_ca_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaState {
    /// Nothing wrong: ACKs arrive in order.
    Open,
    /// Dupacks or SACKs seen, not yet enough to declare a loss.
    Disorder,
    /// cwnd being reduced for an ECN echo (RFC 3168 §6.1.2), no loss.
    Cwr,
    /// Fast retransmit done; repairing losses (RFC 5681 §3.2, RFC 6582, RFC 6675).
    Recovery,
    /// After an RTO (or Tahoe's fast retransmit): slow start from the loss window.
    Loss,
}

/// Events outside the ACK clock that a controller may care about (Linux `tcp_ca_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CwndEvent {
    /// First transmission after the connection was idle (nothing in flight).
    TxStart,
    /// cwnd restarted after an idle period longer than the RTO (RFC 5681 §4.1).
    CwndRestart,
    /// The CWR state finished (the reduced window has been reached).
    CompleteCwr,
    /// An RTO fired; the window is about to collapse to the loss window.
    Loss,
    /// The receiver began seeing CE marks.
    EcnIsCe,
    /// The receiver stopped seeing CE marks.
    EcnNoCe,
}

/// What started a congestion event, passed to [`CongestionControl::ssthresh`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossKind {
    /// Loss inferred from dupacks or SACK (fast retransmit).
    FastRetransmit,
    /// The retransmission timer expired.
    Timeout,
    /// An ACK echoed ECN CE (RFC 3168 §6.1.2); no packet was lost.
    Ecn,
}

/// A congestion event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LossEvent {
    /// When the event was detected.
    pub now: SimTime,
    /// What caused it.
    pub kind: LossKind,
    /// FlightSize (RFC 5681 §3.1): bytes sent but not cumulatively acknowledged, at the event.
    pub flight_size_bytes: u64,
    /// Bytes in flight by the RFC 6675 `pipe` estimate, at the event.
    pub in_flight_bytes: u64,
}

/// One ACK's worth of information for the controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckSample {
    /// When the ACK arrived.
    pub now: SimTime,
    /// Bytes newly delivered by this ACK: cumulative advance plus newly SACKed bytes.
    pub bytes_acked: u64,
    /// Round-trip time sample from a segment this ACK newly covers that was never retransmitted
    /// (Karn's rule); `None` when no such segment exists.
    pub rtt: Option<Duration>,
    /// Smallest RTT sample seen on the connection so far.
    pub min_rtt: Option<Duration>,
    /// Smoothed RTT (RFC 6298) after this sample.
    pub srtt: Option<Duration>,
    /// One-way delay of the acknowledged segment: receiver's receive stamp minus the sender's send
    /// stamp. In a simulator both clocks agree; on real hosts it carries an unknown constant offset,
    /// which LEDBAT and TCP-LP cancel by subtracting the minimum.
    pub one_way_delay: Option<Duration>,
    /// Bytes in flight (RFC 6675 `pipe`) before this ACK was processed.
    pub prior_in_flight_bytes: u64,
    /// Bytes in flight after this ACK was processed.
    pub in_flight_bytes: u64,
    /// Highest cumulatively acknowledged sequence number (byte offset) after this ACK.
    pub snd_una: u64,
    /// Next sequence number (byte offset) to be sent for the first time.
    pub snd_nxt: u64,
    /// The ACK carried ECN-Echo.
    pub ece: bool,
    /// Bytes this ACK newly reports as received with the CE codepoint: with Accurate ECN
    /// feedback, the increase of the receiver's CE byte counter (RFC 9768 §3.2.2.2, `r.ceb`)
    /// since the last ACK the sender processed; 0 with classic (RFC 3168) or DCTCP echo, whose
    /// controllers read [`AckSample::ece`]. Scalable (L4S) controllers estimate the marked
    /// fraction from it.
    pub ce_bytes: u64,
    /// The sender was limited by cwnd (not by the application or pacing) since the last ACK;
    /// window growth should only happen when this is true (RFC 7661).
    pub cwnd_limited: bool,
    /// The connection's state when the ACK arrived.
    pub state: CaState,
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation), produced for every ACK that
/// delivers data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over the sample's interval.
    pub delivered_bytes: u64,
    /// The sample's interval: max(send elapsed, ACK elapsed) of the packet it is measured over.
    pub interval: Duration,
    /// `delivered_bytes / interval` in bits per second, or 0 when the interval is zero.
    pub delivery_rate_bps: u64,
    /// Connection-total delivered bytes when the measured packet was sent (BBR's round counter).
    pub prior_delivered_bytes: u64,
    /// Connection-total delivered bytes now.
    pub total_delivered_bytes: u64,
    /// The measured packet was sent while the application, not the network, limited sending.
    pub is_app_limited: bool,
    /// RTT of the measured packet, if Karn's rule allows it.
    pub rtt: Option<Duration>,
    /// Bytes newly marked lost by this ACK.
    pub newly_lost_bytes: u64,
    /// Bytes newly delivered (acked or SACKed) by this ACK.
    pub newly_acked_bytes: u64,
    /// Bytes in flight (RFC 6675 pipe) when the measured packet was sent, that packet included
    /// (draft-ietf-ccwg-bbr `RS.tx_in_flight`); 0 when the ACK delivered nothing.
    pub tx_in_flight_bytes: u64,
    /// Bytes declared lost between the measured packet's transmission and this ACK, this ACK's
    /// newly lost bytes included (draft-ietf-ccwg-bbr `RS.lost` = `C.lost − P.lost`); 0 when the
    /// ACK delivered nothing.
    pub lost_bytes: u64,
}

/// Errors constructing a controller.
#[derive(Clone, Debug, PartialEq)]
pub enum CcError {
    /// No flavor of that name; `suggestion` is the closest known name, if any is close.
    UnknownFlavor { name: String, suggestion: Option<&'static str> },
    /// The flavor has no parameter of that name.
    UnknownParam { flavor: &'static str, param: String, known: Vec<&'static str> },
    /// The parameter's value is outside its valid range.
    BadParam { flavor: &'static str, param: &'static str, value: f64, reason: &'static str },
}

impl fmt::Display for CcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CcError::UnknownFlavor { name, suggestion: Some(s) } => {
                write!(f, "unknown flavor '{name}' (did you mean '{s}'?)")
            }
            CcError::UnknownFlavor { name, suggestion: None } => write!(f, "unknown flavor '{name}'"),
            CcError::UnknownParam { flavor, param, known } => write!(
                f,
                "flavor '{flavor}' has no parameter '{param}' (it has: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ),
            CcError::BadParam { flavor, param, value, reason } => {
                write!(f, "flavor '{flavor}': parameter '{param}' = {value}: {reason}")
            }
        }
    }
}

impl std::error::Error for CcError {}

/// A congestion controller. See the crate documentation for when each hook is called and how each
/// family of controllers uses them.
pub trait CongestionControl: Send + fmt::Debug {
    /// The flavor's name as the scenario spells it (`"cubic"`).
    fn name(&self) -> &'static str;

    /// Called once before the first transmission; may adjust the initial window.
    fn init(&mut self, _st: &mut CwndState, _now: SimTime) {}

    /// The connection's handshake measured `rtt` (the SYN → SYN-ACK round trip) before any data
    /// was sent; called right after [`CongestionControl::init`], and only for a flow that models
    /// one. Linux takes that sample (`tcp_ack_update_rtt` on the SYN-ACK) before it initializes
    /// the congestion control module, so a module that reads `srtt` or the minimum RTT at
    /// connection start (BBR's `bbr_init`) starts from the handshake's RTT rather than from the
    /// first data ACK's. Default: nothing (the sample still reaches every later [`AckSample`]
    /// through the transport's RTT estimator).
    fn on_handshake_rtt(&mut self, _st: &mut CwndState, _rtt: Duration, _now: SimTime) {}

    /// Per-ACK bookkeeping in every state: RTT samples, ECE counting, delay filters.
    fn pkts_acked(&mut self, _st: &mut CwndState, _ack: &AckSample) {}

    /// Window growth on an ACK that newly delivers data, outside recovery: slow start below
    /// ssthresh, congestion avoidance above it.
    fn cong_avoid(&mut self, st: &mut CwndState, ack: &AckSample);

    /// A congestion event started: return the new ssthresh in bytes (at least 2 MSS). The
    /// transport then drives cwnd through recovery and sets cwnd to this value when recovery ends.
    fn ssthresh(&mut self, st: &CwndState, ev: &LossEvent) -> u64;

    /// The connection moved to `new` state.
    fn set_state(&mut self, _st: &mut CwndState, _new: CaState, _now: SimTime) {}

    /// An event outside the ACK clock happened.
    fn cwnd_event(&mut self, _st: &mut CwndState, _ev: CwndEvent, _now: SimTime) {}

    /// The last reduction was spurious: restore the window. `prior_cwnd_bytes` is cwnd before the
    /// reduction. Linux's `tcp_reno_undo_cwnd`: never shrink, return to the prior window.
    fn undo_cwnd(&mut self, st: &mut CwndState, prior_cwnd_bytes: u64) {
        st.cwnd_bytes = st.cwnd_bytes.max(prior_cwnd_bytes);
    }

    /// Full control of cwnd and pacing from delivery-rate samples (BBR, UDT). Return `true` when
    /// this controller has set the window and pacing rate itself; the transport then skips
    /// `cong_avoid` and its own recovery window arithmetic (PRR, inflation).
    fn cong_control(&mut self, _st: &mut CwndState, _ack: &AckSample, _rs: &RateSample) -> bool {
        false
    }

    /// Whether window growth (`cong_avoid`) continues while the transport is in CWR after an
    /// ECN reduction. Classic controllers say no: RFC 3168 §6.1.2 reduces once per window, and
    /// Linux makes no increase while a window reduction is under way. A scalable (L4S)
    /// controller is marked several times per round trip by design and its reductions are small
    /// (RFC 9331 §4.3), so stopping its additive increase for a round trip after each would
    /// starve it, longest-RTT flows most; TCP Prague keeps growing (its reference implementation
    /// owns the whole ACK path through Linux's `cong_control` hook).
    fn grows_during_ecn_cwr(&self) -> bool {
        false
    }

    /// A short name for the controller's internal mode, for sampling (BBR's `"PROBE_BW"`);
    /// empty when the controller has no modes beyond slow start and congestion avoidance.
    fn mode(&self) -> &'static str {
        ""
    }

    /// An MPTCP connection lends this subflow's controller a snapshot of every subflow of the
    /// connection (`subflows`; this one is `subflows[me]`) before each ACK and timeout it hands
    /// the subflow's sender, so a coupled controller ([`coupled`]) can compute its linked
    /// increase. Default: ignored (an uncoupled controller needs nothing of the others).
    fn set_coupling_view(&mut self, _subflows: &[SubflowView], _me: usize) {}
}
