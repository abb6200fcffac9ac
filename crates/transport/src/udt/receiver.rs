//! The UDT receiving side (draft-gg-udt-03 §6.2): loss detection and NAKs, periodic ACKs every SYN
//! carrying the receiver's RTT, flow window, packet arrival speed and packet-pair link capacity,
//! and RTT measurement from ACK/ACK2 pairs.
//!
//! # How a caller drives it
//!
//! ```text
//! on_data(now, &pkt)          for every data packet; returns payload bytes delivered in order
//! on_ack2(now, &ack2)         for every ACK2; returns the RTT sample it gave, if any
//! handle_timeout(now)         when now >= poll_timeout() (ACK timer, NAK timer)
//! while let Some(p) = poll_transmit(now) { send p }   after each of the above
//! ```
//!
//! # The algorithm (draft-gg-udt-03 §6.2)
//!
//! - **Data**: a packet 16n + 1 arriving right after 16n records their arrival interval in the
//!   Packet Pair Window; every packet records the interval since the previous arrival in the PKT
//!   History Window. A packet above LRSN + 1 (LRSN: the largest sequence number received) puts
//!   the numbers in between into the loss list and sends them at once in a NAK; a packet below
//!   LRSN is removed from the loss list (or is a duplicate). The application reads in-order data
//!   at once, so the buffer holds only packets above the first hole.
//! - **ACK timer** (every SYN): the ACK number is the first packet not received. No ACK is sent
//!   if that number was already acknowledged by an ACK2, or if it equals the last ACK's number
//!   and less than 2·RTT has passed since. Otherwise the ACK carries a new ACK sequence number,
//!   RTT, RTTVar, the available buffer, AS and B, and is recorded in the ACK History Window.
//! - **ACK2**: rtt = now − the ACK's departure; RTT ← (7·RTT + rtt)/8, RTTVar ← (3·RTTVar +
//!   |RTT − rtt|)/4.
//! - **NAK timer** (every 4·RTT + RTTVar + SYN): every loss-list entry last reported at least
//!   k·RTT ago (k starts at 2 and grows by 1 per report) is reported again.
//!
//! - **Offsets**: a packet carries its stream offset besides its sequence number, and the two must
//!   agree with what is already held: the next in-order packet starts where delivery stands, a
//!   buffered packet ends where its buffered successor starts and starts where its predecessor
//!   ends. A packet that disagrees is dropped and counted (`packets_rejected_offset`), so a forged
//!   or corrupt packet cannot move the delivered count backwards or past bytes that never came. An
//!   in-order packet that agrees with delivery wins over a buffered range that disagrees with it:
//!   that range is put back on the loss list and asked for again (a NAK at once).
//!
//! The pair's first packet must be the packet received just before (the draft says "the last
//! data packet"; requiring it to be 16n keeps a pair broken by a loss out of the window).
//! Not implemented: light ACKs, the connection handshake and keep-alive, message mode.

use std::collections::{BTreeMap, VecDeque};

use ccarena_cc::{Duration, SimTime};

use super::packet::{
    Ack2Packet, AckPacket, DataPacket, LossRange, NakPacket, ToSender, PROBE_INTERVAL_PACKETS,
};
use super::window::{IntervalWindow, INITIAL_PAIR_INTERVAL_NS};
use crate::sender::ConfigError;

/// ACKs remembered for RTT measurement (UDT4's ACK window holds 1024).
pub const ACK_HISTORY: usize = 1024;

/// A loss-list entry is reported again once k·RTT has passed since its last report; k starts at
/// this value (draft-gg-udt-03 §6.2 NAK event: "k is initialized as 2").
pub const INITIAL_NAK_K: u32 = 2;

/// Receiver parameters; every value explicit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdtReceiverConfig {
    /// SYN: the ACK period (draft-gg-udt-03 §4: 0.01 s).
    pub syn_interval: Duration,
    /// Receiver buffer, packets: the largest flow window it advertises. At least 2.
    pub max_flow_window_packets: u32,
    /// RTT before the first ACK2 (UDT4: 10·SYN); RTTVar starts at half of it.
    pub initial_rtt: Duration,
}

impl UdtReceiverConfig {
    /// Check the values.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field that is out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.syn_interval == Duration::ZERO {
            return Err(ConfigError { field: "syn_interval", reason: "must be positive" });
        }
        if self.max_flow_window_packets < 2 {
            return Err(ConfigError { field: "max_flow_window_packets", reason: "must be at least 2" });
        }
        if self.initial_rtt == Duration::ZERO {
            return Err(ConfigError { field: "initial_rtt", reason: "must be positive" });
        }
        Ok(())
    }
}

/// Counters of what the receiver has seen and sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdtReceiverStats {
    /// Data packets received, duplicates included.
    pub packets_received: u64,
    /// Payload bytes received, duplicates included.
    pub bytes_received: u64,
    /// Packets received that had been received before.
    pub duplicate_packets: u64,
    /// Payload bytes of those.
    pub duplicate_bytes: u64,
    /// Packets dropped because they did not fit the receiver buffer.
    pub packets_dropped_buffer: u64,
    /// Packets that arrived above a gap (opening or widening a hole).
    pub out_of_order_packets: u64,
    /// New packets dropped because their stream offset disagreed with the data already held
    /// (forged or corrupt; see the module documentation).
    pub packets_rejected_offset: u64,
    /// Buffered packets put back on the loss list because an in-order packet contradicted
    /// their offsets.
    pub packets_evicted_offset: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// NAK packets sent (immediate and periodic).
    pub naks_sent: u64,
    /// ACK2s received that matched an ACK.
    pub ack2_received: u64,
    /// Packet-pair intervals recorded.
    pub pairs_recorded: u64,
}

/// One loss-list entry: lost packets `[start, end)` (the map key is `start`).
#[derive(Clone, Copy, Debug)]
struct LossEntry {
    end: u64,
    last_feedback: SimTime,
    k: u32,
}

/// A range of consecutive buffered packets (the map key is the first one's sequence number).
#[derive(Clone, Copy, Debug)]
struct Held {
    /// One past the last packet's sequence number.
    end: u64,
    /// Stream offset of the first packet's first byte.
    start_offset: u64,
    /// Stream offset one past the last packet's last byte.
    end_offset: u64,
}

/// One ACK History Window entry.
#[derive(Clone, Copy, Debug)]
struct AckRecord {
    ack_seq: u64,
    ack_no: u64,
    sent_at: SimTime,
}

/// The receiving half of a UDT connection. See the module documentation.
#[derive(Clone, Debug)]
pub struct UdtReceiver {
    cfg: UdtReceiverConfig,
    /// First packet not yet received (the ACK number).
    rcv_nxt: u64,
    /// Stream offset one past the last byte delivered in order.
    delivered_offset: u64,
    /// LRSN, the largest sequence number received.
    lrsn: Option<u64>,
    /// Received packets above `rcv_nxt`, in ranges of consecutive sequence numbers.
    buffered: BTreeMap<u64, Held>,
    buffered_packets: u64,
    /// The receiver's loss list.
    loss: BTreeMap<u64, LossEntry>,
    /// Time and sequence number of the last data packet received.
    last_arrival: Option<(SimTime, u64)>,
    arrivals: IntervalWindow,
    pairs: IntervalWindow,
    ack_history: VecDeque<AckRecord>,
    next_ack_seq: u64,
    /// The largest ACK number acknowledged by an ACK2.
    ack2_ack_no: u64,
    /// (ACK number, departure) of the last ACK sent.
    last_ack: Option<(u64, SimTime)>,
    rtt: Duration,
    rtt_var: Duration,
    next_ack_at: SimTime,
    next_nak_at: SimTime,
    outbox: VecDeque<ToSender>,
    stats: UdtReceiverStats,
}

impl UdtReceiver {
    /// A receiver whose timers start at `now`.
    ///
    /// # Panics
    /// If `cfg` fails [`UdtReceiverConfig::validate`].
    pub fn new(cfg: UdtReceiverConfig, now: SimTime) -> UdtReceiver {
        cfg.validate().expect("valid UDT receiver config");
        let rtt = cfg.initial_rtt;
        let rtt_var = Duration(rtt.as_nanos() / 2);
        let mut r = UdtReceiver {
            cfg,
            rcv_nxt: 0,
            delivered_offset: 0,
            lrsn: None,
            buffered: BTreeMap::new(),
            buffered_packets: 0,
            loss: BTreeMap::new(),
            last_arrival: None,
            arrivals: IntervalWindow::empty(),
            pairs: IntervalWindow::filled_with(INITIAL_PAIR_INTERVAL_NS),
            ack_history: VecDeque::new(),
            next_ack_seq: 1,
            ack2_ack_no: 0,
            last_ack: None,
            rtt,
            rtt_var,
            next_ack_at: now + cfg.syn_interval,
            next_nak_at: SimTime::ZERO,
            outbox: VecDeque::new(),
            stats: UdtReceiverStats::default(),
        };
        r.next_nak_at = now + r.nak_period();
        r
    }

    /// NAK period: 4·RTT + RTTVar + SYN (draft-gg-udt-03 §4).
    pub fn nak_period(&self) -> Duration {
        self.rtt.saturating_mul(4) + self.rtt_var + self.cfg.syn_interval
    }

    /// A data packet arrived at `now`. Returns the payload bytes newly delivered in order.
    #[must_use]
    pub fn on_data(&mut self, now: SimTime, pkt: &DataPacket) -> u64 {
        self.stats.packets_received += 1;
        self.stats.bytes_received += pkt.len as u64;
        let seq = pkt.seq;
        // Packet pair (§6.2 data step 4) and arrival history (step 5).
        if let Some((t, last_seq)) = self.last_arrival {
            let gap = now.saturating_since(t).as_nanos();
            if seq % PROBE_INTERVAL_PACKETS == 1 && last_seq + 1 == seq {
                self.pairs.push(gap);
                self.stats.pairs_recorded += 1;
            }
            self.arrivals.push(gap);
        }
        self.last_arrival = Some((now, seq));

        if seq < self.rcv_nxt {
            return self.duplicate(pkt);
        }
        if seq >= self.rcv_nxt + self.cfg.max_flow_window_packets as u64 {
            self.stats.packets_dropped_buffer += 1;
            return 0;
        }
        let expected = self.lrsn.map_or(0, |l| l + 1);
        if seq < expected && !self.in_loss(seq) {
            // Step 6b: below LRSN and not in the loss list: already received.
            return self.duplicate(pkt);
        }
        if !self.offsets_agree(pkt) {
            self.stats.packets_rejected_offset += 1;
            return 0;
        }
        if seq >= expected {
            // Step 6a: a gap above LRSN is lost; report it at once.
            if seq > expected {
                self.stats.out_of_order_packets += 1;
                self.add_loss(now, expected, seq);
            }
            self.lrsn = Some(seq);
        } else {
            self.remove_loss(seq);
        }
        self.accept(now, pkt)
    }

    fn duplicate(&mut self, pkt: &DataPacket) -> u64 {
        self.stats.duplicate_packets += 1;
        self.stats.duplicate_bytes += pkt.len as u64;
        0
    }

    /// Whether `seq` is on the loss list.
    fn in_loss(&self, seq: u64) -> bool {
        self.loss.range(..=seq).next_back().is_some_and(|(_, e)| seq < e.end)
    }

    /// Put `[start, end)` on the loss list and report it in a NAK at once.
    fn add_loss(&mut self, now: SimTime, start: u64, end: u64) {
        self.loss.insert(start, LossEntry { end, last_feedback: now, k: INITIAL_NAK_K });
        for nak in NakPacket::pack(&[LossRange { start, end }]) {
            self.outbox.push_back(ToSender::Nak(nak));
            self.stats.naks_sent += 1;
        }
    }

    /// Remove `seq` from the loss list (where it is).
    fn remove_loss(&mut self, seq: u64) {
        let Some((&start, &entry)) = self.loss.range(..=seq).next_back() else { return };
        if seq >= entry.end {
            return;
        }
        self.loss.remove(&start);
        if start < seq {
            self.loss.insert(start, LossEntry { end: seq, ..entry });
        }
        if seq + 1 < entry.end {
            self.loss.insert(seq + 1, entry);
        }
    }

    /// Whether a new packet's stream offsets agree with what is held: the next in-order packet
    /// starts where delivery stands; a buffered one starts where the range before it ends and ends
    /// where the range after it starts. (The range after the next in-order packet is checked in
    /// [`UdtReceiver::accept`], where delivery wins.)
    fn offsets_agree(&self, pkt: &DataPacket) -> bool {
        if pkt.seq == self.rcv_nxt {
            return pkt.offset == self.delivered_offset;
        }
        if pkt.offset < self.delivered_offset {
            return false;
        }
        let before = self.buffered.range(..pkt.seq).next_back();
        if before.is_some_and(|(_, h)| h.end == pkt.seq && h.end_offset != pkt.offset) {
            return false;
        }
        self.buffered.get(&(pkt.seq + 1)).is_none_or(|h| h.start_offset == pkt.end())
    }

    /// Store a new packet (its offsets checked) and deliver what became contiguous.
    fn accept(&mut self, now: SimTime, pkt: &DataPacket) -> u64 {
        let before = self.delivered_offset;
        let seq = pkt.seq;
        if seq == self.rcv_nxt {
            self.rcv_nxt = seq + 1;
            self.delivered_offset = pkt.end();
            if let Some((&s, &held)) = self.buffered.first_key_value() {
                if s == self.rcv_nxt {
                    self.buffered.remove(&s);
                    self.buffered_packets -= held.end - s;
                    if held.start_offset == self.delivered_offset {
                        self.rcv_nxt = held.end;
                        self.delivered_offset = held.end_offset;
                    } else {
                        // The held range contradicts data that agrees with delivery: ask again.
                        self.stats.packets_evicted_offset += held.end - s;
                        self.add_loss(now, s, held.end);
                    }
                }
            }
        } else {
            self.buffer(pkt);
        }
        self.delivered_offset - before
    }

    /// Add packet `pkt` (above `rcv_nxt`) to the buffered ranges, merging with its neighbours.
    fn buffer(&mut self, pkt: &DataPacket) {
        self.buffered_packets += 1;
        let seq = pkt.seq;
        let mut held = Held { end: seq + 1, start_offset: pkt.offset, end_offset: pkt.end() };
        let mut start = seq;
        if let Some((&ps, &prev)) = self.buffered.range(..seq).next_back() {
            if prev.end == seq {
                start = ps;
                held.start_offset = prev.start_offset;
                self.buffered.remove(&ps);
            }
        }
        if let Some(&next) = self.buffered.get(&(seq + 1)) {
            self.buffered.remove(&(seq + 1));
            held.end = next.end;
            held.end_offset = next.end_offset;
        }
        self.buffered.insert(start, held);
    }

    /// An ACK2 arrived at `now` (draft-gg-udt-03 §6.2 ACK2 steps 1–4). Returns the RTT sample.
    #[must_use]
    pub fn on_ack2(&mut self, now: SimTime, a: &Ack2Packet) -> Option<Duration> {
        let idx = self.ack_history.iter().rposition(|r| r.ack_seq == a.ack_seq)?;
        let rec = self.ack_history[idx];
        self.ack_history.drain(..=idx);
        self.stats.ack2_received += 1;
        self.ack2_ack_no = self.ack2_ack_no.max(rec.ack_no);
        let sample = now.saturating_since(rec.sent_at);
        let rtt = (self.rtt.as_nanos() * 7 + sample.as_nanos()) / 8;
        self.rtt = Duration(rtt);
        let dev = rtt.abs_diff(sample.as_nanos());
        self.rtt_var = Duration((self.rtt_var.as_nanos() * 3 + dev) / 4);
        Some(sample)
    }

    /// Fire what is due at `now`: the ACK timer and the NAK timer. Harmless when nothing is due.
    pub fn handle_timeout(&mut self, now: SimTime) {
        if now >= self.next_ack_at {
            self.next_ack_at = now + self.cfg.syn_interval;
            self.ack_event(now);
        }
        if now >= self.next_nak_at {
            self.next_nak_at = now + self.nak_period();
            self.nak_event(now);
        }
    }

    /// The ACK event (draft-gg-udt-03 §6.2 ACK steps 1–7).
    fn ack_event(&mut self, now: SimTime) {
        let ack_no = self.rcv_nxt;
        if ack_no == self.ack2_ack_no {
            return;
        }
        if let Some((last_no, t)) = self.last_ack {
            if last_no == ack_no && now.saturating_since(t) < self.rtt.saturating_mul(2) {
                return;
            }
        }
        let ack = AckPacket {
            ack_seq: self.next_ack_seq,
            ack_no,
            rtt: self.rtt,
            rtt_var: self.rtt_var,
            buffer_available_packets: self.flow_window_packets(),
            arrival_rate_pps: self.arrivals.arrival_speed_pps(),
            link_capacity_pps: self.pairs.link_capacity_pps(),
        };
        self.next_ack_seq += 1;
        if self.ack_history.len() == ACK_HISTORY {
            self.ack_history.pop_front();
        }
        self.ack_history.push_back(AckRecord { ack_seq: ack.ack_seq, ack_no, sent_at: now });
        self.last_ack = Some((ack_no, now));
        self.outbox.push_back(ToSender::Ack(ack));
        self.stats.acks_sent += 1;
    }

    /// The NAK event (draft-gg-udt-03 §6.2): report again every entry last reported k·RTT ago.
    fn nak_event(&mut self, now: SimTime) {
        let rtt = self.rtt;
        let mut due = Vec::new();
        for (&start, e) in self.loss.iter_mut() {
            if now.saturating_since(e.last_feedback) >= rtt.saturating_mul(e.k as u64) {
                e.last_feedback = now;
                e.k += 1;
                due.push(LossRange { start, end: e.end });
            }
        }
        for nak in NakPacket::pack(&due) {
            self.outbox.push_back(ToSender::Nak(nak));
            self.stats.naks_sent += 1;
        }
    }

    /// The next control packet to send.
    #[must_use]
    pub fn poll_transmit(&mut self, _now: SimTime) -> Option<ToSender> {
        self.outbox.pop_front()
    }

    /// When [`UdtReceiver::handle_timeout`] must be called next: the ACK timer while there is
    /// something an ACK2 has not confirmed, the NAK timer while the loss list is not empty.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        let ack = (self.rcv_nxt != self.ack2_ack_no).then_some(self.next_ack_at);
        let nak = (!self.loss.is_empty()).then_some(self.next_nak_at);
        match (ack, nak) {
            (Some(a), Some(n)) => Some(a.min(n)),
            (a, n) => a.or(n),
        }
    }

    /// Available buffer, packets: the flow window advertised in ACKs.
    pub fn flow_window_packets(&self) -> u32 {
        (self.cfg.max_flow_window_packets as u64).saturating_sub(self.buffered_packets) as u32
    }

    /// First packet not yet received.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Payload bytes delivered in order so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_offset
    }

    /// Packets in the loss list.
    pub fn loss_list_packets(&self) -> u64 {
        self.loss.iter().map(|(s, e)| e.end - s).sum()
    }

    /// The receiver's RTT estimate.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// The receiver's RTT variance estimate.
    pub fn rtt_var(&self) -> Duration {
        self.rtt_var
    }

    /// The arrival speed the next ACK would carry, packets/s.
    pub fn arrival_speed_pps(&self) -> u32 {
        self.arrivals.arrival_speed_pps()
    }

    /// The link capacity the next ACK would carry, packets/s.
    pub fn link_capacity_pps(&self) -> u32 {
        self.pairs.link_capacity_pps()
    }

    /// Counters.
    pub fn stats(&self) -> &UdtReceiverStats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &UdtReceiverConfig {
        &self.cfg
    }
}
