//! The QUIC data sender: loss detection (RFC 9002 §6, pseudocode Appendix A) and congestion
//! control (RFC 9002 §7, Appendix B) around any [`CongestionControl`], for one bulk stream.
//!
//! # How a caller drives it
//!
//! As the TCP [`crate::Sender`]: `app_write`/`app_stop`; `on_ack` for every ACK frame;
//! `handle_timeout` when `now ≥ poll_timeout()`; after each of these, `poll_transmit` until
//! `None`.
//!
//! # Packets and stream data
//!
//! Packet numbers start at 0 and grow by one per packet, never reused (RFC 9000 §12.3), so there is
//! no Karn's rule: every ACK whose largest acknowledged packet is newly acknowledged gives an RTT
//! sample (RFC 9002 §5.1). Each packet carries one STREAM frame of at most `max_payload_bytes`:
//! data declared lost first (RFC 9000 §13.3: lost frames' data goes in new packets), then new data.
//! The sender keeps the stream bytes acknowledged (so data acknowledged in another packet is
//! never sent again) and the lost bytes awaiting retransmission as byte-range sets.
//!
//! Bytes in flight count each packet's stream payload (`len`), as the TCP sender counts segment
//! payload, so cwnd, pacing and the controllers' byte counts speak the same unit as for TCP; a PING
//! probe (no stream data) counts 1 byte so it is in flight and arms the PTO like any packet
//! (RFC 9002 counts whole packets; headers are left out here, as in TCP's accounting).
//!
//! # Sending (RFC 9002 §7, §7.7; RFC 9000 §4.1)
//!
//! A packet is sent when `bytes_in_flight + its size ≤ cwnd` (§7: a sender MUST NOT exceed the
//! window), except PTO probes and the one packet §7.3.2 allows on entering recovery, which this
//! sender does send (it carries the lost data, repairing the loss a round trip sooner). New data
//! must end within the peer's credit, `min(MAX_DATA, MAX_STREAM_DATA)` (RFC 9000 §4.1; the initial
//! credit is the config's, each ACK frame's values raise it and never lower it); retransmitted data
//! lies below it already. Packets are paced (§7.7) at the controller's `pacing_rate_bps` if it sets
//! one, else, with [`QuicConfig::pacing`] and after the first RTT sample, at
//! `PACING_GAIN_QUARTERS/4 · cwnd · 8 / smoothed_rtt` bit/s; before the first sample, unpaced.
//! When there is nothing to send and the window is not full (and flow control is not what holds
//! data back) the delivery-rate estimator is marked app-limited.
//!
//! # ACKs (Appendix A.7 `OnAckReceived`)
//!
//! largest_acked = max; the packets newly acknowledged by the ranges are taken out of flight; an
//! ACK that newly acknowledges nothing only updates the flow-control credit (as A.7 returns early).
//! RTT sample from the largest acknowledged if newly acknowledged ([`QuicRtt`], §5). ECN counts
//! (§7.1, RFC 9000 §13.4.1): a CE count above the largest seen is a congestion event dated by the
//! largest newly acknowledged packet's send time. Then `DetectAndRemoveLostPackets` (A.10): a
//! packet at or below largest_acked is lost when sent at least `max(9/8·max(latest_rtt,
//! smoothed_rtt), kGranularity)` ago or when largest_acked ≥ pn + 3; otherwise the loss timer is
//! set to its send time plus that delay. pto_count is reset (A.7).
//!
//! # Congestion control (Appendix B)
//!
//! Hooks in the TCP sender's order: the delivery-rate sample; `pkts_acked` on every ACK that
//! newly acknowledges, with every newly acknowledged byte (DCTCP's and Prague's marked fraction
//! needs them all); state transitions and congestion events; `cong_control`, and unless the
//! controller took over cwnd (BBR) the reduced window and `cong_avoid`.
//!
//! - Congestion event (B.6 `OnCongestionEvent(sent_time)`): nothing if `sent_time ≤
//!   congestion_recovery_start_time`; else recovery starts now, `ssthresh = cc.ssthresh(...)`
//!   with `flight_size_bytes = cwnd` (B.6 scales the window, not the flight) and
//!   `cwnd = max(ssthresh, kMinimumWindow)` (never raised by a reduction), state Recovery for
//!   loss, Cwr for CE. With L4S ECN a controller may decline a CE reduction (an ssthresh of at
//!   least cwnd, as TCP Prague does), and then no recovery period starts, as in the TCP sender.
//! - Recovery ends (state Open, after `CompleteCwr` for Cwr) when a packet sent after it started
//!   is acknowledged (§7.3.2).
//! - Growth (B.5 `OnPacketsAcked`): `cong_avoid` gets only the bytes of packets sent after the
//!   recovery start (all of them outside recovery), and none on an ACK that starts a congestion
//!   event; it is not called in Recovery, nor in Cwr unless the controller grows during ECN
//!   reductions ([`CongestionControl::grows_during_ecn_cwr`], then with every acknowledged byte).
//! - Persistent congestion (§7.6, B.8): among the packets newly declared lost, two sent after the
//!   first RTT sample, more than `(smoothed + max(4·rttvar, kGranularity) + max_ack_delay) · 3`
//!   apart, with no packet between them acknowledged: cwnd = kMinimumWindow (even for a
//!   controller that owns cwnd, as the TCP sender's RTO collapses it), the recovery start is
//!   forgotten, the controller gets `cwnd_event(Loss)` and `set_state(Loss)`; growth resumes
//!   from there (slow start), and the state returns to Open once a packet sent after it is
//!   acknowledged.
//! - ECN feedback to the controller: `ece` when the CE count rose; `ce_bytes` = the rise in CE
//!   packets × the newly acknowledged bytes per newly acknowledged packet, capped at the newly
//!   acknowledged bytes. QUIC's ECN counts are per packet, not per byte, so this is an estimate
//!   of the marked bytes for the scalable controllers that read it (Prague, DCTCP).
//!
//! RFC 9002 compares send times with the recovery start time (`sent_time ≤
//! congestion_recovery_start_time`) and with the first RTT sample's time (§7.6.2). Packet numbers
//! follow send order, so this sender keeps each of those instants as the first packet number sent
//! after it and compares packet numbers: the same test with an infinitely fine clock. In a
//! simulator a retransmission often leaves at the very instant its loss was declared; compared by
//! time it would count as sent before the recovery period, and its ACK would not end it.
//!
//! # Timers (A.8 `SetLossDetectionTimer`, A.9 `OnLossDetectionTimeout`)
//!
//! The loss timer when set; else, with packets in flight, the PTO: the last ack-eliciting send
//! plus `pto_duration · 2^pto_count` (no handshake, so no anti-deadlock PTO with nothing in
//! flight); also the pacer's release when data waits for it. A PTO expiry increments pto_count and
//! allows [`PTO_PROBE_PACKETS`] (2) probes that bypass cwnd and pacing: lost or new data if there
//! is any, else the oldest unacknowledged stream data again (nothing is marked lost), else a PING.
//! A PTO does not change cwnd (§6.2).
//!
//! # Sequence numbers for controllers
//!
//! Controllers that track rounds by sequence number (CUBIC's HyStart, Vegas) read
//! [`AckSample::snd_una`]/[`AckSample::snd_nxt`]. QUIC has no byte sequence that every
//! transmission advances, so this sender counts one: the "tx offset", the bytes sent so far
//! (retransmissions and PINGs included), which each packet remembers at its sending. snd_nxt is
//! that count; snd_una is the tx offset of the oldest packet still outstanding (neither
//! acknowledged nor lost), or snd_nxt when none is. Both are monotone, as in TCP.
//!
//! # Spurious losses
//!
//! A packet declared lost is remembered for one PTO duration (without backoff); an ACK of it in
//! that time counts a spurious loss and marks its data acknowledged (so it is not sent again).
//! The window reduction is not undone (RFC 9002 leaves that open).
//!
//! Not modelled: ECN validation (RFC 9000 §13.4.2: the counts are trusted), the handshake's
//! packet number spaces and anti-deadlock PTO, ACK-of-ACK, and cwnd restart after idle.

use std::collections::VecDeque;

use ccarena_cc::time::NANOS_PER_SEC;
use ccarena_cc::{
    AckSample, CaState, CongestionControl, CwndEvent, CwndState, Duration, LossEvent, LossKind, RateSample,
    SimTime,
};

use super::{
    AckFrame, QuicConfig, QuicPacket, QuicRtt, GRANULARITY, PACING_GAIN_QUARTERS, PACKET_THRESHOLD,
    PERSISTENT_CONGESTION_THRESHOLD, TIME_THRESHOLD,
};
use crate::pacing::Pacer;
use crate::rate::{RateEstimator, TxStamp};
use crate::sender::SenderEcn;
use crate::udt::ranges::RangeSet;

/// Probe packets a PTO expiry allows (RFC 9002 §6.2.4: one or two; §A.9
/// `SendOneOrTwoAckElicitingPackets`). Two, so one lost probe does not cost another PTO.
pub const PTO_PROBE_PACKETS: u32 = 2;

/// Counters of what the sender has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuicSenderStats {
    /// Stream bytes sent, retransmissions and probes included.
    pub bytes_sent: u64,
    /// Stream bytes sent again after being declared lost.
    pub bytes_retransmitted: u64,
    /// Packets sent (PING probes included).
    pub packets_sent: u64,
    /// Packets carrying retransmitted stream data (data declared lost).
    pub packets_retransmitted: u64,
    /// Packets declared lost.
    pub packets_declared_lost: u64,
    /// Stream bytes in packets declared lost.
    pub bytes_declared_lost: u64,
    /// Probe timeouts that fired.
    pub pto_count: u64,
    /// Probe packets sent.
    pub probes_sent: u64,
    /// Congestion events started by loss (RFC 9002 §7.3.2; not counting losses inside a recovery
    /// period, which start none).
    pub loss_congestion_events: u64,
    /// Congestion events started by CE counts (RFC 9002 §7.1).
    pub ecn_congestion_events: u64,
    /// Persistent congestion declared (RFC 9002 §7.6).
    pub persistent_congestions: u64,
    /// Packets declared lost and later acknowledged.
    pub spurious_losses: u64,
    /// ACK frames received.
    pub acks_received: u64,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// CE-marked packets the ACKs' ECN counts reported (the rise of the largest CE count seen).
    pub ce_packets_reported: u64,
    /// Stream bytes a probe sent again without their being declared lost (the oldest
    /// unacknowledged data, RFC 9002 §6.2.4).
    pub bytes_probe_resent: u64,
    /// PING probes sent (probes with no stream data to carry).
    pub pings_sent: u64,
}

/// What an ACK frame did, for the caller's bookkeeping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuicAckOutcome {
    /// RTT sample the ACK produced (the largest acknowledged packet was newly acknowledged).
    pub rtt: Option<Duration>,
    /// Stream bytes carried by the packets this ACK newly acknowledged (a byte carried by two
    /// acknowledged packets counts twice).
    pub bytes_newly_acked: u64,
    /// Stream bytes carried by the packets this ACK newly declared lost.
    pub bytes_newly_lost: u64,
    /// Packets newly acknowledged.
    pub packets_newly_acked: u64,
    /// Packets newly declared lost.
    pub packets_newly_lost: u64,
    /// Stream bytes acknowledged for the first time (the growth of the acknowledged byte set).
    pub stream_bytes_newly_acked: u64,
}

/// A sent packet's fate so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PktState {
    /// In flight: neither acknowledged nor declared lost.
    Outstanding,
    Acked,
    Lost,
}

/// What the sender remembers of a sent packet (RFC 9002 §A.1.1 `SentPacket`).
#[derive(Clone, Copy, Debug)]
struct SentPacket {
    time_sent: SimTime,
    /// Stream bytes `[offset, offset + len)`; `len` 0 for a PING.
    offset: u64,
    len: u32,
    /// Bytes counted in flight: `len`, or 1 for a PING.
    size: u64,
    state: PktState,
    stamp: TxStamp,
    /// The tx offset (bytes sent before this packet): its place in the snd_una/snd_nxt sequence.
    tx_offset: u64,
}

/// A packet declared lost, kept for a while to tell a spurious loss.
#[derive(Clone, Copy, Debug)]
struct LostPacket {
    pn: u64,
    declared_at: SimTime,
    offset: u64,
    len: u32,
}

/// What to put in the next packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Stream data declared lost, sent again.
    Lost { offset: u64, len: u32 },
    /// Stream data never sent.
    New { offset: u64, len: u32 },
    /// A probe resending unacknowledged data not declared lost.
    ProbeResend { offset: u64, len: u32 },
    /// A probe with no data: PING.
    Ping,
}

impl Chunk {
    fn offset_len(self) -> (u64, u32) {
        match self {
            Chunk::Lost { offset, len } | Chunk::New { offset, len } | Chunk::ProbeResend { offset, len } => {
                (offset, len)
            }
            Chunk::Ping => (0, 0),
        }
    }

    /// Bytes counted in flight.
    fn size(self) -> u64 {
        (self.offset_len().1 as u64).max(1)
    }
}

/// What the packets newly acknowledged by one ACK add up to.
#[derive(Clone, Copy, Debug, Default)]
struct NewlyAcked {
    packets: u64,
    /// In-flight bytes (sizes) of every newly acknowledged packet.
    bytes: u64,
    /// In-flight bytes of those sent after the recovery start (B.5: they may grow cwnd).
    growth_bytes: u64,
    stream_bytes: u64,
    new_stream_bytes: u64,
    /// The largest newly acknowledged packet number.
    largest_pn: Option<u64>,
    /// The ACK's largest acknowledged packet is among them: (its send time).
    largest_acked_time_sent: Option<SimTime>,
    /// A packet sent after the current episode (Recovery, Cwr, Loss) began was acknowledged.
    ends_episode: bool,
}

/// What one run of `DetectAndRemoveLostPackets` found.
#[derive(Clone, Copy, Debug, Default)]
struct LostBatch {
    packets: u64,
    /// In-flight bytes of the lost packets.
    bytes: u64,
    stream_bytes: u64,
    /// The newest lost packet (B.8 `OnPacketsLost` dates the event by its send time).
    largest_pn: Option<u64>,
    persistent: bool,
}

/// The QUIC data sender. See the module documentation.
#[derive(Debug)]
pub struct QuicSender {
    cfg: QuicConfig,
    mss: u64,
    cc: Box<dyn CongestionControl>,
    st: CwndState,
    rtt: QuicRtt,
    rate: RateEstimator,
    pacer: Pacer,
    /// Sent packets from `base_pn` to `next_pn − 1`; acknowledged and lost ones are popped from
    /// the front, so the front (if any) is the oldest outstanding packet.
    sent: VecDeque<SentPacket>,
    base_pn: u64,
    next_pn: u64,
    largest_acked: Option<u64>,
    bytes_in_flight: u64,
    /// A.1.2 loss_time: when the time threshold declares the next packet lost.
    loss_time: Option<SimTime>,
    time_of_last_ack_eliciting: Option<SimTime>,
    pto_count: u32,
    /// Probes the last PTO expiry still allows.
    probes_due: u32,
    /// Probes resend unacknowledged data from this stream offset up (reset per PTO expiry).
    probe_cursor: u64,
    /// The first packet number sent after the first RTT sample (§7.6.2: only such packets count
    /// for persistent congestion).
    first_sample_pn: Option<u64>,
    /// Recently lost packets, oldest declaration first, to detect spurious losses.
    lost_recent: VecDeque<LostPacket>,
    /// Bytes declared lost by the loss timer, for the next rate sample's loss count.
    pending_lost_for_rate: u64,
    // Stream bookkeeping.
    bytes_offered: u64,
    next_offset: u64,
    acked: RangeSet,
    to_retransmit: RangeSet,
    /// Peer's MAX_DATA and MAX_STREAM_DATA: absolute stream offsets (RFC 9000 §4.1).
    max_data: u64,
    max_stream_data: u64,
    /// The last candidate search found new data held back by flow control.
    flow_limited: bool,
    // Congestion control.
    state: CaState,
    /// B.2 congestion_recovery_start_time, as the first packet number sent after it (module
    /// docs); `None` before any event and after persistent congestion.
    recovery_start_pn: Option<u64>,
    /// The first packet number sent after the current Recovery, Cwr or Loss episode began.
    episode_start_pn: u64,
    /// The current Cwr episode lets the controller keep growing.
    cwr_grows: bool,
    /// §7.3.2: one packet may be sent on entering recovery whatever cwnd says.
    recovery_send_allowed: bool,
    /// The window a congestion event wants, applied after `cong_control` unless the controller
    /// owns cwnd.
    pending_cwnd: Option<u64>,
    /// Largest CE count seen in an ACK frame (A.1.2 ecn_ce_counters).
    largest_ce: u64,
    cc_owns_cwnd: bool,
    cwnd_limited: bool,
    paced_data_waiting: bool,
    /// Running count of bytes sent: snd_nxt for controllers.
    tx_bytes: u64,
    last_rate_sample: Option<RateSample>,
    stats: QuicSenderStats,
}

impl QuicSender {
    /// A sender with nothing offered yet, calling `cc.init` at `now`.
    ///
    /// # Panics
    /// If `cfg` fails [`QuicConfig::validate`] (callers taking configs from users validate first).
    pub fn new(cfg: QuicConfig, mut cc: Box<dyn CongestionControl>, now: SimTime) -> QuicSender {
        if let Err(e) = cfg.validate() {
            panic!("invalid QuicConfig: {e}");
        }
        let mss = cfg.max_payload_bytes as u64;
        let mut st = CwndState::new(cfg.initial_cwnd_bytes, mss);
        cc.init(&mut st, now);
        QuicSender {
            cfg,
            mss,
            cc,
            st,
            rtt: QuicRtt::new(cfg.initial_rtt),
            rate: RateEstimator::new(),
            pacer: Pacer::new(),
            sent: VecDeque::new(),
            base_pn: 0,
            next_pn: 0,
            largest_acked: None,
            bytes_in_flight: 0,
            loss_time: None,
            time_of_last_ack_eliciting: None,
            pto_count: 0,
            probes_due: 0,
            probe_cursor: 0,
            first_sample_pn: None,
            lost_recent: VecDeque::new(),
            pending_lost_for_rate: 0,
            bytes_offered: 0,
            next_offset: 0,
            acked: RangeSet::new(),
            to_retransmit: RangeSet::new(),
            max_data: cfg.max_data_bytes.unwrap_or(u64::MAX),
            max_stream_data: cfg.max_stream_data_bytes.unwrap_or(u64::MAX),
            flow_limited: false,
            state: CaState::Open,
            recovery_start_pn: None,
            episode_start_pn: 0,
            cwr_grows: false,
            recovery_send_allowed: false,
            pending_cwnd: None,
            largest_ce: 0,
            cc_owns_cwnd: false,
            cwnd_limited: false,
            paced_data_waiting: false,
            tx_bytes: 0,
            last_rate_sample: None,
            stats: QuicSenderStats::default(),
        }
    }

    /// The application offers `bytes` more stream bytes (saturating). Bulk flows pass
    /// `u64::MAX / 4`.
    pub fn app_write(&mut self, bytes: u64) {
        self.bytes_offered = self.bytes_offered.saturating_add(bytes);
    }

    /// Offer no stream data beyond what has been sent once; what was sent is still delivered
    /// (lost data is retransmitted).
    pub fn app_stop(&mut self) {
        self.bytes_offered = self.next_offset;
    }

    /// Give back the storage of the sent-packet and lost-packet lists once the stream is
    /// complete ([`QuicSender::is_complete`]) and they are empty (capacity only: a list still
    /// holding a packet keeps it, for a late ACK to find); nothing before.
    pub fn release_storage(&mut self) {
        if !self.is_complete() {
            return;
        }
        if self.sent.is_empty() {
            self.sent = VecDeque::new();
        }
        if self.lost_recent.is_empty() {
            self.lost_recent = VecDeque::new();
        }
    }

    /// True when at least one byte was offered and every offered byte has been acknowledged.
    pub fn is_complete(&self) -> bool {
        self.bytes_offered > 0 && self.acked.contains_range(0, self.bytes_offered)
    }

    /// Stream bytes the application has offered.
    pub fn bytes_offered(&self) -> u64 {
        self.bytes_offered
    }

    /// Process an ACK frame arriving at `now` (RFC 9002 §A.7 `OnAckReceived`; see the module
    /// documentation for the order of things). A frame acknowledging a packet number never sent
    /// is ignored (RFC 9000 §13.1 makes it a connection error), and so is one with no range.
    /// A malformed frame from a hostile or broken peer (RFC 9000 §19.3.1 wants the ranges
    /// descending and separated by gaps) never panics: [`sanitize_ack`] keeps its first
    /// [`super::MAX_ACK_RANGES`] ranges clipped to descend without overlap, and its largest
    /// acknowledged is then the first kept range's.
    #[must_use]
    pub fn on_ack(&mut self, now: SimTime, ack: &AckFrame) -> QuicAckOutcome {
        self.stats.acks_received += 1;
        // A well-formed frame (every frame a conforming receiver sends) is read in place; only a
        // malformed one is copied and repaired.
        let repaired;
        let ack = if is_well_formed(ack) {
            ack
        } else {
            let Some(a) = sanitize_ack(ack) else { return QuicAckOutcome::default() };
            repaired = a;
            &repaired
        };
        if ack.largest >= self.next_pn {
            return QuicAckOutcome::default();
        }
        // RFC 9000 §4.1: credit only grows (a reordered older frame must not take it back).
        self.max_data = self.max_data.max(ack.max_data);
        self.max_stream_data = self.max_stream_data.max(ack.max_stream_data);
        self.largest_acked = Some(self.largest_acked.map_or(ack.largest, |l| l.max(ack.largest)));

        let prior_state = self.state;
        let prior_in_flight = self.bytes_in_flight;
        self.rate.begin_ack();
        self.detect_spurious(ack);
        let acked = self.take_newly_acked(now, ack);
        let mut outcome = QuicAckOutcome {
            packets_newly_acked: acked.packets,
            bytes_newly_acked: acked.stream_bytes,
            stream_bytes_newly_acked: acked.new_stream_bytes,
            ..QuicAckOutcome::default()
        };
        if acked.packets == 0 {
            self.pop_front();
            return outcome;
        }

        // §5.1: a sample only when the largest acknowledged is newly acknowledged (every packet
        // this sender sends is ack-eliciting).
        let rtt_sample = acked.largest_acked_time_sent.map(|t| now.saturating_since(t));
        if let Some(r) = rtt_sample {
            self.rtt.on_sample(r, ack.ack_delay, self.cfg.max_ack_delay);
            self.stats.rtt_samples += 1;
            self.first_sample_pn.get_or_insert(self.next_pn);
        }
        outcome.rtt = rtt_sample;

        let (ece, ce_bytes) = self.read_ecn(ack, &acked);
        let lost = self.detect_lost(now);
        self.pop_front();
        outcome.bytes_newly_lost = lost.stream_bytes;
        outcome.packets_newly_lost = lost.packets;

        let newly_lost_for_rate = lost.bytes + std::mem::take(&mut self.pending_lost_for_rate);
        let rs = self.rate.generate(self.rtt.min_rtt(), acked.bytes, newly_lost_for_rate, rtt_sample);
        self.last_rate_sample = Some(rs);
        let mut sample = AckSample {
            now,
            bytes_acked: acked.bytes,
            rtt: rtt_sample,
            min_rtt: self.rtt.min_rtt(),
            srtt: self.srtt(),
            one_way_delay: acked.largest_acked_time_sent.map(|t| ack.largest_received_at.saturating_since(t)),
            prior_in_flight_bytes: prior_in_flight,
            in_flight_bytes: self.bytes_in_flight,
            snd_una: self.snd_una(),
            snd_nxt: self.tx_bytes,
            ece,
            ce_bytes,
            cwnd_limited: self.cwnd_limited,
            state: prior_state,
        };
        self.cc.pkts_acked(&mut self.st, &sample);

        // §7.3.2: the episode ends once a packet sent after it began is acknowledged; a new
        // event on this ACK may start another.
        if acked.ends_episode && matches!(self.state, CaState::Recovery | CaState::Cwr | CaState::Loss) {
            self.end_episode(now);
        }
        let mut growth_bytes = acked.growth_bytes;
        // A.7 order: ECN's event, then the losses' (whose packets, sent before now, then fall in
        // the recovery period just started and start no second one).
        if ece {
            if let Some(pn) = acked.largest_pn {
                if self.on_congestion_event(now, pn, LossKind::Ecn) {
                    growth_bytes = 0;
                }
            }
        }
        if self.on_packets_lost(now, &lost) {
            growth_bytes = 0;
        }

        self.cc_owns_cwnd = self.cc.cong_control(&mut self.st, &sample, &rs);
        let pending = self.pending_cwnd.take();
        if !self.cc_owns_cwnd {
            if let Some(w) = pending {
                self.st.cwnd_bytes = w;
            }
            let grow_bytes = match self.state {
                CaState::Open | CaState::Disorder | CaState::Loss => growth_bytes,
                CaState::Cwr if self.cwr_grows => acked.bytes,
                CaState::Cwr | CaState::Recovery => 0,
            };
            if grow_bytes > 0 {
                sample.bytes_acked = grow_bytes;
                sample.in_flight_bytes = self.bytes_in_flight;
                self.cc.cong_avoid(&mut self.st, &sample);
            }
        }
        self.st.cwnd_bytes = self.st.cwnd_bytes.max(self.mss);
        self.cwnd_limited = false;
        // A.7: pto_count is reset by an ACK that newly acknowledges (the peer is validated).
        self.pto_count = 0;
        self.prune_lost_recent(now);
        outcome
    }

    /// Mark the packets `ack` newly acknowledges, in descending packet number order within each
    /// range: out of flight, their stream data acknowledged, delivered to the rate estimator.
    fn take_newly_acked(&mut self, now: SimTime, ack: &AckFrame) -> NewlyAcked {
        let mut out = NewlyAcked::default();
        let Some(last_pn) = self.next_pn.checked_sub(1) else { return out };
        for r in ack.ranges() {
            // Ranges descend (`on_ack` repaired any frame that did not): once one ends below
            // the oldest packet remembered, so do the rest. A receiver keeps reporting old
            // ranges (no ACK-of-ACK here), so most frames end with a run of them.
            if r.largest < self.base_pn {
                break;
            }
            let lo = r.smallest.max(self.base_pn);
            let hi = r.largest.min(last_pn);
            if lo > hi {
                continue;
            }
            for pn in (lo..=hi).rev() {
                let i = (pn - self.base_pn) as usize;
                let p = self.sent[i];
                if p.state != PktState::Outstanding {
                    continue;
                }
                self.sent[i].state = PktState::Acked;
                self.bytes_in_flight -= p.size;
                out.packets += 1;
                out.bytes += p.size;
                out.stream_bytes += p.len as u64;
                if self.recovery_start_pn.is_none_or(|r| pn >= r) {
                    out.growth_bytes += p.size;
                }
                if pn >= self.episode_start_pn {
                    out.ends_episode = true;
                }
                out.largest_pn = Some(out.largest_pn.map_or(pn, |l| l.max(pn)));
                if pn == ack.largest {
                    out.largest_acked_time_sent = Some(p.time_sent);
                }
                let end = p.offset + p.len as u64;
                let before = self.acked.len();
                self.acked.insert(p.offset, end);
                out.new_stream_bytes += self.acked.len() - before;
                self.to_retransmit.remove(p.offset, end);
                self.rate.on_delivered(now, p.tx_offset + p.size, p.size, p.time_sent, &p.stamp);
            }
        }
        out
    }

    /// An ACK of a packet already declared lost: the loss was spurious. Its data is now known
    /// delivered, so it leaves the retransmission queue.
    fn detect_spurious(&mut self, ack: &AckFrame) {
        if self.lost_recent.is_empty() {
            return;
        }
        let (acked, to_retransmit, stats) = (&mut self.acked, &mut self.to_retransmit, &mut self.stats);
        // One walk up the (descending) ranges from the lowest serves every lost packet, as
        // `lost_recent` ascends in packet number (a packet is declared lost only along with
        // every older outstanding one); a packet below the one before restarts the walk.
        let ranges = ack.ranges();
        let mut k = ranges.len();
        let mut prev_pn = 0;
        self.lost_recent.retain(|l| {
            if l.pn < prev_pn {
                k = ranges.len();
            }
            prev_pn = l.pn;
            // ranges[k - 1] is the lowest range not wholly below the packet.
            while k > 0 && ranges[k - 1].largest < l.pn {
                k -= 1;
            }
            let hit = k > 0 && ranges[k - 1].smallest <= l.pn;
            if hit {
                stats.spurious_losses += 1;
                let end = l.offset + l.len as u64;
                acked.insert(l.offset, end);
                to_retransmit.remove(l.offset, end);
            }
            !hit
        });
    }

    /// Forget lost packets declared more than one PTO duration ago (a late ACK of them is not
    /// looked for any longer).
    fn prune_lost_recent(&mut self, now: SimTime) {
        let keep = self.rtt.pto_duration(self.cfg.max_ack_delay);
        while self.lost_recent.front().is_some_and(|l| l.declared_at + keep < now) {
            self.lost_recent.pop_front();
        }
    }

    /// Drop acknowledged and lost packets from the front of the sent list.
    fn pop_front(&mut self) {
        while self.sent.front().is_some_and(|p| p.state != PktState::Outstanding) {
            self.sent.pop_front();
            self.base_pn += 1;
        }
    }

    /// The ECN counts of `ack` (RFC 9002 §7.1, §A.7 `ProcessECN`; RFC 9000 §13.4.1): whether the
    /// CE count rose above the largest seen, and the estimated CE-marked bytes (module docs).
    fn read_ecn(&mut self, ack: &AckFrame, acked: &NewlyAcked) -> (bool, u64) {
        if !self.cfg.ecn.is_on() {
            return (false, 0);
        }
        let Some(counts) = ack.ecn else { return (false, 0) };
        if counts.ce <= self.largest_ce {
            return (false, 0);
        }
        let rise = counts.ce - self.largest_ce;
        self.largest_ce = counts.ce;
        self.stats.ce_packets_reported += rise;
        let per_packet = acked.bytes as u128 / acked.packets.max(1) as u128;
        let ce_bytes = (rise as u128 * per_packet).min(acked.bytes as u128) as u64;
        (true, ce_bytes)
    }

    /// RFC 9002 §A.10 `DetectAndRemoveLostPackets`: declare lost the outstanding packets at or
    /// below largest_acked that the time or packet threshold condemns, and set the loss timer for
    /// the others. Also finds whether the lost packets show persistent congestion (§7.6.2).
    fn detect_lost(&mut self, now: SimTime) -> LostBatch {
        self.loss_time = None;
        let mut batch = LostBatch::default();
        let Some(largest) = self.largest_acked else { return batch };
        let latest = self.rtt.latest().unwrap_or(Duration::ZERO);
        let base_delay = latest.max(self.rtt.smoothed());
        let loss_delay = Duration(
            (base_delay.0 as u128 * TIME_THRESHOLD.0 as u128 / TIME_THRESHOLD.1 as u128).min(u64::MAX as u128)
                as u64,
        )
        .max(GRANULARITY);
        let pc_duration = self.persistent_congestion_duration();
        // Send time of the oldest lost packet of the current run (no acknowledged packet since).
        let mut run_start: Option<SimTime> = None;
        for i in 0..self.sent.len() {
            let pn = self.base_pn + i as u64;
            if pn > largest {
                break;
            }
            let p = self.sent[i];
            match p.state {
                PktState::Acked => {
                    run_start = None;
                    continue;
                }
                PktState::Lost => continue,
                PktState::Outstanding => {}
            }
            let deadline = p.time_sent + loss_delay;
            if deadline > now && largest < pn + PACKET_THRESHOLD {
                self.loss_time = Some(self.loss_time.map_or(deadline, |t| t.min(deadline)));
                continue;
            }
            self.declare_lost(now, pn, i);
            batch.packets += 1;
            batch.bytes += p.size;
            batch.stream_bytes += p.len as u64;
            batch.largest_pn = Some(pn);
            if self.first_sample_pn.is_some_and(|f| pn >= f) {
                match run_start {
                    Some(s) if p.time_sent.saturating_since(s) > pc_duration => batch.persistent = true,
                    Some(_) => {}
                    None => run_start = Some(p.time_sent),
                }
            }
        }
        batch
    }

    /// Mark packet `pn` (at `sent[i]`) lost: out of flight, its unacknowledged data queued for
    /// retransmission.
    fn declare_lost(&mut self, now: SimTime, pn: u64, i: usize) {
        let p = self.sent[i];
        self.sent[i].state = PktState::Lost;
        self.bytes_in_flight -= p.size;
        self.stats.packets_declared_lost += 1;
        self.stats.bytes_declared_lost += p.len as u64;
        let end = p.offset + p.len as u64;
        let mut from = p.offset;
        while let Some((s, e)) = self.acked.first_gap(from, end) {
            self.to_retransmit.insert(s, e);
            from = e;
        }
        if p.len > 0 {
            self.lost_recent.push_back(LostPacket { pn, declared_at: now, offset: p.offset, len: p.len });
        }
    }

    /// (smoothed_rtt + max(4·rttvar, kGranularity) + max_ack_delay) · kPersistentCongestionThreshold
    /// (RFC 9002 §7.6.1).
    fn persistent_congestion_duration(&self) -> Duration {
        self.rtt.pto_duration(self.cfg.max_ack_delay).saturating_mul(PERSISTENT_CONGESTION_THRESHOLD)
    }

    /// RFC 9002 §B.8 `OnPacketsLost`: a congestion event dated by the newest lost packet, then
    /// persistent congestion. Returns whether either changed the window (then this ACK grows
    /// nothing).
    fn on_packets_lost(&mut self, now: SimTime, lost: &LostBatch) -> bool {
        let Some(pn) = lost.largest_pn else { return false };
        let started = self.on_congestion_event(now, pn, LossKind::FastRetransmit);
        if lost.persistent {
            self.stats.persistent_congestions += 1;
            self.cc.cwnd_event(&mut self.st, CwndEvent::Loss, now);
            // Collapsed even for a controller that owns cwnd, as the TCP sender's RTO does; its
            // next `cong_control` rebuilds the window from its model.
            self.st.cwnd_bytes = self.cfg.minimum_window_bytes();
            self.pending_cwnd = None;
            self.recovery_start_pn = None;
            self.recovery_send_allowed = false;
            self.episode_start_pn = self.next_pn;
            self.set_state(CaState::Loss, now);
        }
        started || lost.persistent
    }

    /// RFC 9002 §B.6 `OnCongestionEvent(sent_time)`, the packet sent at `sent_time` being `pn`.
    /// Returns whether a new recovery period started (the window reduction itself waits in
    /// `pending_cwnd`).
    fn on_congestion_event(&mut self, now: SimTime, pn: u64, kind: LossKind) -> bool {
        if self.recovery_start_pn.is_some_and(|r| pn < r) {
            return false;
        }
        let ev = LossEvent {
            now,
            kind,
            flight_size_bytes: self.st.cwnd_bytes,
            in_flight_bytes: self.bytes_in_flight,
        };
        let ssthresh = self.cc.ssthresh(&self.st, &ev);
        if kind == LossKind::Ecn && self.cfg.ecn == SenderEcn::L4s && ssthresh >= self.st.cwnd_bytes {
            return false;
        }
        self.recovery_start_pn = Some(self.next_pn);
        self.episode_start_pn = self.next_pn;
        self.st.ssthresh_bytes = ssthresh;
        let floor = self.cfg.minimum_window_bytes();
        self.pending_cwnd = Some(ssthresh.max(floor).min(self.st.cwnd_bytes.max(floor)));
        if kind == LossKind::Ecn {
            self.stats.ecn_congestion_events += 1;
            self.cwr_grows = self.cc.grows_during_ecn_cwr();
            self.recovery_send_allowed = false;
            self.set_state(CaState::Cwr, now);
        } else {
            self.stats.loss_congestion_events += 1;
            self.cwr_grows = false;
            self.recovery_send_allowed = true;
            self.set_state(CaState::Recovery, now);
        }
        true
    }

    /// The Recovery, Cwr or Loss episode is over (§7.3.2).
    fn end_episode(&mut self, now: SimTime) {
        if self.state == CaState::Cwr {
            self.cc.cwnd_event(&mut self.st, CwndEvent::CompleteCwr, now);
        }
        self.recovery_send_allowed = false;
        self.cwr_grows = false;
        self.set_state(CaState::Open, now);
    }

    fn set_state(&mut self, new: CaState, now: SimTime) {
        if new != self.state {
            self.state = new;
            self.cc.set_state(&mut self.st, new, now);
        }
    }

    /// The next packet allowed at `now`, or `None`. Call repeatedly until `None` after every
    /// [`QuicSender::on_ack`], [`QuicSender::handle_timeout`] and [`QuicSender::app_write`].
    /// See the module documentation for what is sent and when.
    #[must_use]
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<QuicPacket> {
        self.paced_data_waiting = false;
        let probe = self.probes_due > 0;
        let chunk = match self.next_chunk() {
            Some(c) => c,
            None if probe => self.probe_chunk(),
            None => {
                // draft-cheng §3.3: nothing to send, window not full: app-limited (not when flow
                // control holds the data back, as the TCP sender counts that apart).
                if !self.flow_limited && self.bytes_in_flight + self.mss <= self.st.cwnd_bytes {
                    self.rate.mark_app_limited(self.bytes_in_flight);
                }
                return None;
            }
        };
        let size = chunk.size();
        let rate = self.pacing_rate_bps();
        if !probe {
            if self.bytes_in_flight + size > self.st.cwnd_bytes && !self.recovery_send_allowed {
                self.cwnd_limited = true;
                return None;
            }
            if rate.is_some() && !self.pacer.ready(now) {
                self.paced_data_waiting = true;
                return None;
            }
        }
        Some(self.send(now, chunk, probe, rate))
    }

    /// Put `chunk` in a new packet at `now`.
    fn send(&mut self, now: SimTime, chunk: Chunk, probe: bool, rate: Option<u64>) -> QuicPacket {
        let (offset, len) = chunk.offset_len();
        let size = chunk.size();
        if self.bytes_in_flight == 0 {
            self.cc.cwnd_event(&mut self.st, CwndEvent::TxStart, now);
        }
        let stamp = self.rate.on_send(now, self.bytes_in_flight);
        let end = offset + len as u64;
        match chunk {
            Chunk::Lost { .. } => {
                self.to_retransmit.remove(offset, end);
                self.stats.bytes_retransmitted += len as u64;
                self.stats.packets_retransmitted += 1;
            }
            Chunk::New { .. } => self.next_offset = end,
            Chunk::ProbeResend { .. } => {
                self.probe_cursor = end;
                self.stats.bytes_probe_resent += len as u64;
            }
            Chunk::Ping => self.stats.pings_sent += 1,
        }
        if probe {
            self.probes_due -= 1;
            self.stats.probes_sent += 1;
        }
        self.recovery_send_allowed = false;
        let pn = self.next_pn;
        self.next_pn += 1;
        self.sent.push_back(SentPacket {
            time_sent: now,
            offset,
            len,
            size,
            state: PktState::Outstanding,
            stamp,
            tx_offset: self.tx_bytes,
        });
        self.bytes_in_flight += size;
        self.tx_bytes += size;
        self.time_of_last_ack_eliciting = Some(now);
        self.pacer.on_send(now, size, rate);
        self.stats.bytes_sent += len as u64;
        self.stats.packets_sent += 1;
        QuicPacket {
            pn,
            offset,
            len,
            sent_at: now,
            ecn: self.cfg.ecn.codepoint(),
            retransmit: matches!(chunk, Chunk::Lost { .. } | Chunk::ProbeResend { .. }),
        }
    }

    /// Lost data first (RFC 9000 §13.3), then new data within the offered bytes and the peer's
    /// credit (RFC 9000 §4.1), at most one packet's worth.
    fn next_chunk(&mut self) -> Option<Chunk> {
        if let Some((s, e)) = self.to_retransmit.first_range() {
            return Some(Chunk::Lost { offset: s, len: (e - s).min(self.mss) as u32 });
        }
        self.flow_limited = false;
        if self.next_offset < self.bytes_offered {
            let credit = self.max_data.min(self.max_stream_data);
            // The send buffer holds the stream from its acknowledged prefix on; a bulk
            // application keeps it full, so new data ends within it.
            let buffered = self.cfg.sndbuf_bytes.map_or(u64::MAX, |b| self.acked_prefix().saturating_add(b));
            let end = self.bytes_offered.min(credit).min(buffered).min(self.next_offset + self.mss);
            if end > self.next_offset {
                return Some(Chunk::New { offset: self.next_offset, len: (end - self.next_offset) as u32 });
            }
            self.flow_limited = true;
        }
        None
    }

    /// Stream bytes acknowledged from offset 0 without a gap: what the send buffer has released.
    fn acked_prefix(&self) -> u64 {
        match self.acked.first_range() {
            Some((0, end)) => end,
            _ => 0,
        }
    }

    /// A probe with no lost or new data to carry (RFC 9002 §6.2.4): the oldest unacknowledged
    /// data from the probe cursor up (wrapping to the start, so a second probe may repeat the
    /// first's data when there is no other), else a PING.
    fn probe_chunk(&self) -> Chunk {
        let gap = self
            .acked
            .first_gap(self.probe_cursor, self.next_offset)
            .or_else(|| self.acked.first_gap(0, self.next_offset));
        match gap {
            Some((s, e)) => Chunk::ProbeResend { offset: s, len: (e - s).min(self.mss) as u32 },
            None => Chunk::Ping,
        }
    }

    /// The pacing rate (RFC 9002 §7.7), bits per second of stream payload; `None`: unpaced.
    pub fn pacing_rate_bps(&self) -> Option<u64> {
        if let Some(r) = self.st.pacing_rate_bps.filter(|r| *r > 0) {
            return Some(r);
        }
        if !self.cfg.pacing || !self.rtt.has_sample() {
            return None;
        }
        let srtt_ns = self.rtt.smoothed().0.max(1);
        // The same quotient in u64 when nothing overflows (every realistic window): a 128-bit
        // division costs a library call, and this runs on every poll.
        let scale = 8 * PACING_GAIN_QUARTERS * NANOS_PER_SEC;
        if let (Some(num), Some(den)) = (self.st.cwnd_bytes.checked_mul(scale), srtt_ns.checked_mul(4)) {
            return Some((num / den).max(1));
        }
        let bps = self.st.cwnd_bytes as u128 * scale as u128 / (4 * srtt_ns as u128);
        Some(bps.clamp(1, u64::MAX as u128) as u64)
    }

    /// When [`QuicSender::handle_timeout`] (loss timer or PTO, §A.8) or
    /// [`QuicSender::poll_transmit`] (a pacing release, reported only when the last poll found
    /// data waiting for it) must be called next; `None` when nothing is pending.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        let timer = match self.loss_time {
            Some(t) => Some(t),
            None if self.bytes_in_flight > 0 => self.time_of_last_ack_eliciting.map(|t| t + self.pto()),
            None => None,
        };
        let pace = self.paced_data_waiting.then(|| self.pacer.release_time());
        match (timer, pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fire what is due at `now` (RFC 9002 §A.9 `OnLossDetectionTimeout`): the loss timer
    /// declares the packets it waited for lost (a congestion event, possibly persistent
    /// congestion); else a due PTO increments pto_count and allows [`PTO_PROBE_PACKETS`] probes.
    /// Harmless when nothing is due.
    pub fn handle_timeout(&mut self, now: SimTime) {
        if let Some(t) = self.loss_time {
            if now >= t {
                let lost = self.detect_lost(now);
                self.pop_front();
                self.pending_lost_for_rate += lost.bytes;
                self.on_packets_lost(now, &lost);
                if let Some(w) = self.pending_cwnd.take() {
                    if !self.cc_owns_cwnd {
                        self.st.cwnd_bytes = w;
                    }
                }
            }
            return;
        }
        if self.bytes_in_flight == 0 {
            return;
        }
        let Some(last) = self.time_of_last_ack_eliciting else { return };
        if now >= last + self.pto() {
            self.pto_count += 1;
            self.stats.pto_count += 1;
            self.probes_due = PTO_PROBE_PACKETS;
            self.probe_cursor = 0;
        }
    }

    /// Let the pacer make up to `burst` of late polling back-to-back
    /// ([`Pacer::with_burst`]); for drivers on a real clock (the udp backend). The simulator
    /// leaves it at zero.
    pub fn set_pacing_burst(&mut self, burst: Duration) {
        self.pacer.set_burst(burst);
    }

    /// The window state (cwnd, ssthresh, MSS = max_payload_bytes, pacing rate).
    pub fn cwnd(&self) -> &CwndState {
        &self.st
    }

    /// smoothed_rtt (RFC 9002 §5.3), `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.has_sample().then(|| self.rtt.smoothed())
    }

    /// rttvar (RFC 9002 §5.3), `None` before the first sample.
    pub fn rttvar(&self) -> Option<Duration> {
        self.rtt.has_sample().then(|| self.rtt.rttvar())
    }

    /// min_rtt (RFC 9002 §5.2), `None` before the first sample.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.rtt.min_rtt()
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &QuicRtt {
        &self.rtt
    }

    /// The current PTO, backoff included: `pto_duration · 2^pto_count` (RFC 9002 §6.2.1),
    /// saturating.
    pub fn pto(&self) -> Duration {
        let factor = 1u64.checked_shl(self.pto_count).unwrap_or(u64::MAX);
        self.rtt.pto_duration(self.cfg.max_ack_delay).saturating_mul(factor)
    }

    /// PTO expiries since the last ACK that newly acknowledged a packet (RFC 9002 §6.2.1).
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// Bytes in flight: stream payload of packets neither acknowledged nor declared lost (a PING
    /// counts 1).
    pub fn in_flight_bytes(&self) -> u64 {
        self.bytes_in_flight
    }

    /// Congestion-avoidance state: Open, Recovery (loss), Cwr (CE) or Loss (persistent
    /// congestion).
    pub fn ca_state(&self) -> CaState {
        self.state
    }

    /// Counters.
    pub fn stats(&self) -> &QuicSenderStats {
        &self.stats
    }

    /// The controller's flavor name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// The controller's internal mode (BBR's `"PROBE_BW"`), empty if it has none.
    pub fn cc_mode(&self) -> &'static str {
        self.cc.mode()
    }

    /// The configuration the sender was built with.
    pub fn config(&self) -> &QuicConfig {
        &self.cfg
    }

    /// The next packet number to be sent.
    pub fn next_pn(&self) -> u64 {
        self.next_pn
    }

    /// Largest packet number acknowledged so far.
    pub fn largest_acked(&self) -> Option<u64> {
        self.largest_acked
    }

    /// The time-threshold loss timer (RFC 9002 §A.10 loss_time), if set.
    pub fn loss_time(&self) -> Option<SimTime> {
        self.loss_time
    }

    /// The stream offset the next new data starts at (bytes sent at least once).
    pub fn next_stream_offset(&self) -> u64 {
        self.next_offset
    }

    /// Stream bytes acknowledged.
    pub fn stream_bytes_acked(&self) -> u64 {
        self.acked.len()
    }

    /// Stream bytes declared lost and not yet sent again.
    pub fn pending_retransmit_bytes(&self) -> u64 {
        self.to_retransmit.len()
    }

    /// The peer's flow-control limit on the stream offset: `min(MAX_DATA, MAX_STREAM_DATA)`
    /// (RFC 9000 §4.1); `u64::MAX` when unlimited.
    pub fn flow_credit(&self) -> u64 {
        self.max_data.min(self.max_stream_data)
    }

    /// snd_una as controllers see it: the tx offset of the oldest outstanding packet (module
    /// docs), or [`QuicSender::snd_nxt`] when none is.
    pub fn snd_una(&self) -> u64 {
        self.sent.front().map_or(self.tx_bytes, |p| p.tx_offset)
    }

    /// snd_nxt as controllers see it: bytes sent so far (every packet, PINGs as 1 byte).
    pub fn snd_nxt(&self) -> u64 {
        self.tx_bytes
    }

    /// The delivery-rate sample of the latest ACK that newly acknowledged something.
    pub fn last_rate_sample(&self) -> Option<&RateSample> {
        self.last_rate_sample.as_ref()
    }

    /// True when the controller's `cong_control` took over the window on the latest ACK.
    pub fn cc_owns_cwnd(&self) -> bool {
        self.cc_owns_cwnd
    }
}

/// True when `ack` is what [`sanitize_ack`] would return unchanged: 1 to
/// [`super::MAX_ACK_RANGES`] ranges, each `smallest ≤ largest` and wholly below the one before,
/// the first's largest the frame's largest.
fn is_well_formed(ack: &AckFrame) -> bool {
    let n = ack.range_count as usize;
    if n == 0 || n > super::MAX_ACK_RANGES || ack.ranges[0].largest != ack.largest {
        return false;
    }
    let ranges = &ack.ranges[..n];
    ranges.iter().all(|r| r.smallest <= r.largest) && ranges.windows(2).all(|w| w[1].largest < w[0].smallest)
}

/// `ack` made safe to process, whatever arrived: at most [`super::MAX_ACK_RANGES`] ranges (a
/// larger `range_count` is cut), each `smallest ≤ largest`, each wholly below the one before it
/// (a range that overlaps or lies above its predecessor is clipped to below it, or dropped when
/// nothing is left: RFC 9000 §19.3.1 sends them descending and disjoint), and `largest` the first
/// kept range's largest. Adjacent ranges are kept as they are (nothing they acknowledge is lost).
/// `None` when no range is left. A well-formed frame keeps its ranges and largest.
pub fn sanitize_ack(ack: &AckFrame) -> Option<AckFrame> {
    let mut out = *ack;
    let mut n = 0usize;
    // Exclusive bound on the next range's largest: the previous range's smallest (the loop ends
    // when that is 0, so the bound is at least 1).
    let mut ceiling: Option<u64> = None;
    for r in ack.ranges.iter().take((ack.range_count as usize).min(super::MAX_ACK_RANGES)) {
        let largest = ceiling.map_or(r.largest, |c| r.largest.min(c - 1));
        if r.smallest > largest {
            continue;
        }
        out.ranges[n] = super::PnRange { smallest: r.smallest, largest };
        n += 1;
        if r.smallest == 0 {
            break;
        }
        ceiling = Some(r.smallest);
    }
    if n == 0 {
        return None;
    }
    for slot in &mut out.ranges[n..] {
        *slot = super::PnRange::default();
    }
    out.range_count = n as u8;
    out.largest = out.ranges[0].largest;
    Some(out)
}
