//! The QUIC data receiver: packet-number tracking and ACK generation (RFC 9000 §13.2), stream
//! reassembly, flow-control credit (§4) and ECN counts (§13.4).
//!
//! # How a caller drives it
//!
//! ```text
//! on_packet(now, &p)     for every 1-RTT packet that arrives; returns stream bytes delivered in order
//! poll_ack(now)          after every on_packet and handle_timeout: the ACK to send, if any
//! handle_timeout(now)    when now >= poll_timeout() (the max_ack_delay deadline)
//! ```
//!
//! # When an ACK is sent (RFC 9000 §13.2.1–§13.2.2, draft-ietf-quic-ack-frequency §6)
//!
//! Every [`QuicPacket`] is ack-eliciting (a STREAM or PING frame). An ACK is due at once when,
//! since the last ACK sent:
//!
//! - `ack_eliciting_threshold` new ack-eliciting packets have arrived (RFC 9000 §13.2.2: 2; the
//!   extension's Ack-Eliciting Threshold + 1);
//! - a packet arrives out of order, by [`QuicConfig::reordering_threshold`] `N`:
//!   - `N = 1`, RFC 9000 §13.2.1: its number is below the largest received, or above the
//!     largest + 1 (a gap opens; before any packet, a first packet numbered above 0);
//!   - `N > 1`, draft-ietf-quic-ack-frequency §6.2: with Largest Acked the largest number of the
//!     last ACK sent and the Unreported Missing the numbers above `Largest Acked − N` not yet
//!     received, when the largest received is at least `N` above the smallest Unreported
//!     Missing (the sender can now declare it lost), or the packet's number is at most
//!     `Largest Acked − N` (the sender has likely declared it lost spuriously);
//!   - `N = 0`: never (the extension's Reordering Threshold 0);
//! - ECN is on and the packet is CE-marked (RFC 9000 §13.2.1: "SHOULD be acknowledged
//!   immediately"). With `ack_eliciting_threshold > 2` only a CE packet that follows a non-CE
//!   one does (draft-ietf-quic-ack-frequency §6.3), so that a marking queue does not undo the
//!   ACK thinning; the counts in the next ACK still carry every mark.
//!
//! Otherwise the ACK is due `max_ack_delay` after the first packet it will acknowledge arrived
//! ([`QuicReceiver::poll_timeout`]). A packet whose number was received before (the network
//! duplicated it) is counted but neither acknowledged anew nor a reason to acknowledge
//! (RFC 9000 §13.2.1 acknowledges ack-eliciting packets once; §13.4.1: it does not change the
//! ECN counts either); its stream bytes are duplicate bytes.
//!
//! # ACK ranges (RFC 9000 §13.2.3–§13.2.4)
//!
//! The received numbers are kept as at most [`MAX_ACK_RANGES`] ranges: when a new gap makes
//! more, the oldest range is forgotten and numbers below the oldest range kept are refused from
//! then on (§13.2.3's "minimum packet number"), so an ACK never claims a packet it did not get and
//! never fails to claim one whose data was delivered. A refused packet is counted in
//! [`QuicReceiverStats::discarded_packets`]; its data, unacknowledged, is sent again. The oldest
//! range has been acknowledged before unless `ack_eliciting_threshold` exceeds
//! [`MAX_ACK_RANGES`] (each range holds a packet received since, so at least 32 packets came
//! after it).
//!
//! # Flow control (RFC 9000 §4.1–§4.2)
//!
//! The application reads in-order data at once, so the credit is what has been delivered plus
//! the window: MAX_DATA = delivered + `max_data_bytes`, MAX_STREAM_DATA = delivered +
//! `max_stream_data_bytes` (one stream carries every byte), `u64::MAX` when unlimited. Every
//! ACK carries both values; [`AckFrame::credit_update`] is set when either rose above the value
//! the previous ACK carried (or the initial transport parameter, before the first), i.e. the
//! frames are sent with every ACK that raises the credit (§4.2 leaves the trigger to the
//! receiver).

use ccarena_cc::SimTime;

use super::{AckFrame, EcnCounts, PnRange, QuicConfig, QuicPacket, MAX_ACK_RANGES};
use crate::segment::Ecn;
use crate::udt::ranges::RangeSet;

/// Counters of what a [`QuicReceiver`] received and sent.
#[derive(Clone, Copy, Debug, Default)]
pub struct QuicReceiverStats {
    /// Packets received, duplicates included.
    pub packets_received: u64,
    /// Packets whose number had been received before (the network duplicated them).
    pub duplicate_packets: u64,
    /// Stream bytes received, duplicates included.
    pub bytes_received: u64,
    /// Stream bytes received that had arrived before (spurious retransmissions, duplicates).
    pub duplicate_bytes: u64,
    /// Packets received CE (every arrival, duplicates included: what the queues marked).
    pub ce_packets: u64,
    /// Stream bytes in packets received CE.
    pub ce_bytes: u64,
    /// ACK frames sent.
    pub acks_sent: u64,
    /// Stream bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// Packets refused because their number lies below the oldest ACK range kept (see the
    /// module doc); also in `packets_received` (and their bytes in `bytes_received`, though
    /// neither duplicate nor delivered).
    pub discarded_packets: u64,
    /// Packets carrying stream bytes beyond the MAX_DATA or MAX_STREAM_DATA last advertised (a
    /// FLOW_CONTROL_ERROR in RFC 9000 §4.1; a sender that honours the credit sends none). Their
    /// data is accepted.
    pub beyond_credit_packets: u64,
}

/// The data receiver of a QUIC connection's one stream: tracks the packet numbers received,
/// reassembles stream bytes, and produces ACK frames with ECN counts and flow-control credit.
#[derive(Debug)]
pub struct QuicReceiver {
    cfg: QuicConfig,
    stats: QuicReceiverStats,
    /// Packet numbers received, at most [`MAX_ACK_RANGES`] ranges (half-open).
    pns: RangeSet,
    /// Numbers below this were forgotten with their range; packets below it are refused.
    pn_floor: u64,
    /// Largest packet number received and when it arrived.
    largest: Option<(u64, SimTime)>,
    /// Largest Acknowledged of the last ACK sent.
    largest_acked: Option<u64>,
    /// Ack-eliciting packets received since the last ACK sent.
    unacked_packets: u32,
    /// When the first of them arrived (the max_ack_delay timer starts there).
    first_unacked_at: Option<SimTime>,
    /// An ACK is due now (threshold, reordering, CE, or the timer fired).
    ack_due: bool,
    /// The last new packet was CE-marked (draft-ietf-quic-ack-frequency §6.3).
    last_ce: bool,
    /// Cumulative ECN counts of new packets (RFC 9000 §13.4.1).
    ecn: EcnCounts,
    /// Stream bytes delivered in order: every byte below this offset.
    delivered_bytes: u64,
    /// Stream bytes received above `delivered_bytes` (out of order), half-open ranges.
    stream_ooo: RangeSet,
    /// MAX_DATA and MAX_STREAM_DATA last advertised (the initial transport parameters before
    /// the first ACK).
    advertised_max_data: u64,
    advertised_max_stream_data: u64,
}

impl QuicReceiver {
    /// A receiver with nothing received. `cfg` should pass [`QuicConfig::validate`]
    /// (an `ack_eliciting_threshold` of 0 acts as 1).
    pub fn new(cfg: QuicConfig) -> QuicReceiver {
        QuicReceiver {
            cfg,
            stats: QuicReceiverStats::default(),
            pns: RangeSet::new(),
            pn_floor: 0,
            largest: None,
            largest_acked: None,
            unacked_packets: 0,
            first_unacked_at: None,
            ack_due: false,
            last_ce: false,
            ecn: EcnCounts::default(),
            delivered_bytes: 0,
            stream_ooo: RangeSet::new(),
            advertised_max_data: window_edge(0, cfg.max_data_bytes),
            advertised_max_stream_data: window_edge(0, cfg.max_stream_data_bytes),
        }
    }

    /// Take in packet `p` arriving at `now`. Returns the stream bytes it made deliverable in
    /// order (0 for a duplicate, a refused packet, or data above a hole), which the application
    /// reads at once.
    pub fn on_packet(&mut self, now: SimTime, p: &QuicPacket) -> u64 {
        let len = p.len as u64;
        self.stats.packets_received += 1;
        self.stats.bytes_received += len;
        let ce = p.ecn == Ecn::Ce;
        if ce {
            self.stats.ce_packets += 1;
            self.stats.ce_bytes += len;
        }
        if p.pn < self.pn_floor {
            self.stats.discarded_packets += 1;
            return 0;
        }
        if self.pns.contains(p.pn) {
            self.stats.duplicate_packets += 1;
            self.stats.duplicate_bytes += len;
            return 0;
        }

        let gap_or_late = self.rfc9000_out_of_order(p.pn);
        self.pns.insert(p.pn, p.pn + 1);
        self.trim_ranges();
        if self.largest.is_none_or(|(l, _)| p.pn > l) {
            self.largest = Some((p.pn, now));
        }
        match p.ecn {
            Ecn::Ect0 => self.ecn.ect0 += 1,
            Ecn::Ect1 => self.ecn.ect1 += 1,
            Ecn::Ce => self.ecn.ce += 1,
            Ecn::NotEct => {}
        }

        self.unacked_packets += 1;
        self.first_unacked_at.get_or_insert(now);
        if self.unacked_packets >= self.cfg.ack_eliciting_threshold
            || self.reordering_ack(p.pn, gap_or_late)
            || self.ce_ack(ce)
        {
            self.ack_due = true;
        }
        self.last_ce = ce;

        if p.end() > self.advertised_max_data.min(self.advertised_max_stream_data) {
            self.stats.beyond_credit_packets += 1;
        }
        self.receive_stream(p.offset, p.end(), len)
    }

    /// The ACK to send now, if one is due (see the module doc); each due ACK is returned once,
    /// and then nothing until a new packet arrives. `now` gives the ACK delay (RFC 9000 §13.2.5:
    /// from the largest acknowledged packet's arrival).
    pub fn poll_ack(&mut self, now: SimTime) -> Option<AckFrame> {
        let mut ack = AckFrame::EMPTY;
        self.poll_ack_into(now, &mut ack).then_some(ack)
    }

    /// [`QuicReceiver::poll_ack`] written into `out` (a frame is about 600 bytes: a caller that
    /// reuses one, as the simulator reuses its packets' boxes, copies none); returns whether an
    /// ACK was due. Only `out.ranges[..out.range_count]` is written.
    pub fn poll_ack_into(&mut self, now: SimTime, out: &mut AckFrame) -> bool {
        if self.unacked_packets == 0 {
            return false;
        }
        if !self.ack_due && self.poll_timeout().is_none_or(|t| now < t) {
            return false;
        }
        let Some((largest, largest_at)) = self.largest else { return false };
        let mut range_count = 0;
        for (slot, (s, e)) in out.ranges.iter_mut().zip(self.pns.iter_rev()) {
            *slot = PnRange { smallest: s, largest: e - 1 };
            range_count += 1;
        }
        let max_data = window_edge(self.delivered_bytes, self.cfg.max_data_bytes);
        let max_stream_data = window_edge(self.delivered_bytes, self.cfg.max_stream_data_bytes);
        let credit_update = max_data > self.advertised_max_data || max_stream_data > self.advertised_max_stream_data;
        self.advertised_max_data = max_data;
        self.advertised_max_stream_data = max_stream_data;
        self.largest_acked = Some(largest);
        self.unacked_packets = 0;
        self.first_unacked_at = None;
        self.ack_due = false;
        self.stats.acks_sent += 1;
        out.largest = largest;
        out.ack_delay = now.saturating_since(largest_at);
        out.range_count = range_count;
        out.ecn = self.cfg.ecn.is_on().then_some(self.ecn);
        out.largest_received_at = largest_at;
        out.max_data = max_data;
        out.max_stream_data = max_stream_data;
        out.credit_update = credit_update;
        true
    }

    /// When the delayed ACK falls due: `max_ack_delay` after the first packet not yet
    /// acknowledged arrived; `None` when every packet has been acknowledged.
    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.first_unacked_at.map(|t| t + self.cfg.max_ack_delay)
    }

    /// Make the delayed ACK due when its deadline has passed (call when `now >= poll_timeout()`,
    /// then [`QuicReceiver::poll_ack`]).
    pub fn handle_timeout(&mut self, now: SimTime) {
        if self.poll_timeout().is_some_and(|t| now >= t) {
            self.ack_due = true;
        }
    }

    /// The counters.
    pub fn stats(&self) -> &QuicReceiverStats {
        &self.stats
    }

    /// The configuration given to [`QuicReceiver::new`].
    pub fn config(&self) -> &QuicConfig {
        &self.cfg
    }

    /// Stream bytes delivered in order so far (the offset below which every byte arrived).
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// Stream ranges held above a hole (received out of order, not yet deliverable). A driver
    /// facing untrusted peers bounds its memory by refusing, before [`QuicReceiver::on_packet`],
    /// a packet that would open another range beyond its cap (the udp backend's sink does, as for
    /// TCP); a refused packet is not acknowledged, so its sender sends the data again.
    pub fn out_of_order_ranges(&self) -> usize {
        self.stream_ooo.range_count()
    }

    /// The cumulative ECN counts of the packets received (RFC 9000 §13.4.1), whether or not ECN
    /// is reported.
    pub fn ecn_counts(&self) -> EcnCounts {
        self.ecn
    }

    /// RFC 9000 §13.2.1's out-of-order test for a new packet `pn`, before it is recorded: below
    /// the largest received, or above it with missing packets in between (packet numbers
    /// start at 0).
    fn rfc9000_out_of_order(&self, pn: u64) -> bool {
        match self.largest {
            Some((l, _)) => pn < l || pn > l + 1,
            None => pn > 0,
        }
    }

    /// Whether new packet `pn`, already recorded, makes an ACK due for reordering
    /// (see the module doc; `gap_or_late` is RFC 9000's test).
    fn reordering_ack(&self, pn: u64, gap_or_late: bool) -> bool {
        let n = self.cfg.reordering_threshold as u64;
        match n {
            0 => false,
            1 => gap_or_late,
            _ => {
                // draft-ietf-quic-ack-frequency §6.2.
                let Some((largest_unacked, _)) = self.largest else { return false };
                let late = self.largest_acked.is_some_and(|la| la >= n && pn <= la - n);
                // Unreported Missing start above Largest Reported Missing = Largest Acked − N.
                let lower = self.largest_acked.map_or(0, |la| (la + 1).saturating_sub(n)).max(self.pn_floor);
                let smallest_missing = self.pns.next_absent(lower);
                late || (smallest_missing < largest_unacked && largest_unacked - smallest_missing >= n)
            }
        }
    }

    /// Whether a new packet, CE-marked when `ce`, makes an ACK due for ECN (see the module doc).
    fn ce_ack(&self, ce: bool) -> bool {
        ce && self.cfg.ecn.is_on() && (self.cfg.ack_eliciting_threshold <= 2 || !self.last_ce)
    }

    /// Forget the oldest ranges beyond [`MAX_ACK_RANGES`], raising the floor to the oldest kept.
    fn trim_ranges(&mut self) {
        while self.pns.range_count() > MAX_ACK_RANGES {
            let Some((second_start, _)) = self.pns.iter().nth(1) else { break };
            self.pns.remove_below(second_start);
            self.pn_floor = second_start;
        }
    }

    /// Record stream bytes `[offset, end)` (`len` of them) and deliver the in-order prefix;
    /// returns the bytes newly delivered.
    fn receive_stream(&mut self, offset: u64, end: u64, len: u64) -> u64 {
        let start = offset.max(self.delivered_bytes);
        let mut new_bytes = 0;
        if end > start {
            let before = self.stream_ooo.len();
            self.stream_ooo.insert(start, end);
            new_bytes = self.stream_ooo.len() - before;
        }
        self.stats.duplicate_bytes += len - new_bytes;
        let first = self.stream_ooo.iter().next();
        match first {
            Some((s, e)) if s == self.delivered_bytes => {
                self.stream_ooo.remove_below(e);
                self.delivered_bytes = e;
                self.stats.delivered_bytes += e - s;
                e - s
            }
            _ => 0,
        }
    }
}

/// The flow-control limit for `delivered` bytes read and a window of `window_bytes`
/// (RFC 9000 §4.1: an absolute stream offset); `u64::MAX` when unlimited.
fn window_edge(delivered: u64, window_bytes: Option<u64>) -> u64 {
    window_bytes.map_or(u64::MAX, |w| delivered.saturating_add(w))
}
