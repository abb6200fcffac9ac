//! The UDT sending side (draft-gg-udt-03 §6.1 and the sender's control-packet handling of §6.2):
//! rate-paced sending with packet pairs, the sender's loss list, ACK/NAK processing with ACK2
//! replies, and the EXP timer. Rate and window come from the [`Udt`] controller.
//!
//! # How a caller drives it
//!
//! ```text
//! app_write(n) / app_stop()         the application offers bytes
//! on_ack(now, &ack) / on_nak(now, &nak)   for every ACK or NAK that arrives
//! handle_timeout(now)               when now >= poll_timeout() (EXP, pacing release)
//! while let Some(p) = poll_transmit(now) { send p }   after each of the above
//! ```
//!
//! # The algorithm
//!
//! - **Sending** (§6.1): the first packet of the loss list is retransmitted first; otherwise a new
//!   packet is sent if the unacknowledged packets (snd_nxt − snd_una) are fewer than both the
//!   congestion window and the flow window. Packets leave one per SND (the controller's packet
//!   sending period; none while SND = 0), except that a new packet 16n is followed at once by the
//!   next packet: the packet pair the receiver measures the link capacity with. The pair's
//!   second packet still counts as one period, so the mean rate is exactly 1/SND. The release
//!   time is the last packet's slot plus the *current* SND, so a rate change applies at once (a
//!   sender that polls late loses the time, as the TCP pacer does). Retransmissions
//!   are paced but not window-limited. ACK2s are sent at once.
//! - **ACK** (§6.2, sender steps 1–10): acknowledged packets leave the buffer and the loss list;
//!   an ACK2 with the ACK's sequence number is queued; RTT ← (7·RTT + rtt)/8 and RTTVar ←
//!   (3·RTTVar + |RTT − rtt|)/4 from the RTT the ACK carries; the flow window becomes the
//!   receiver's available buffer; the controller then gets the ACK ([`Udt::on_link_capacity`]
//!   with B, `cong_control` with AS as the rate sample, see `ccarena_cc::udt`).
//! - **NAK**: the reported packets join the loss list and the controller's NAK rule runs with the
//!   largest of them ([`Udt::on_nak`]).
//! - **EXP** (draft-gg-udt-03 §4, §6.2): after ExpCount·max(4·RTT + RTTVar + SYN, min_exp) with
//!   no ACK or NAK while packets are unacknowledged, every unacknowledged packet joins the loss
//!   list, the controller gets [`CwndEvent::Loss`], and ExpCount grows; any ACK or NAK resets the
//!   timer and ExpCount to 1.
//!
//! Not implemented: light ACKs, keep-alive packets, the connection-broken check of the EXP
//! event, message mode (TTL drops), the handshake.

use std::collections::VecDeque;

use ccarena_cc::udt::Udt;
use ccarena_cc::{
    AckSample, CaState, CongestionControl, CwndEvent, CwndState, Duration, RateSample, SimTime,
};

use super::packet::{Ack2Packet, AckPacket, DataPacket, NakPacket, ToReceiver, PROBE_INTERVAL_PACKETS};
use super::ranges::RangeSet;
use crate::sender::ConfigError;

/// Sender parameters; every value explicit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdtSenderConfig {
    /// Payload bytes per packet. At least 1.
    pub mss_bytes: u32,
    /// SYN: the rate-control interval, given to the controller (draft-gg-udt-03 §4: 0.01 s).
    pub syn_interval: Duration,
    /// The maximum flow window, packets: the receiver's buffer and the window at which slow start
    /// ends (Gu 2009 §3). At least 2.
    pub max_flow_window_packets: u32,
    /// RTT before the first ACK (UDT4: 10·SYN); RTTVar starts at half of it.
    pub initial_rtt: Duration,
    /// Lower bound on the EXP period before it is multiplied by ExpCount (draft-gg-udt-03 §4:
    /// "a minimum threshold (e.g., 0.5 second)").
    pub min_exp: Duration,
}

impl UdtSenderConfig {
    /// Check the values.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field that is out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, reason| Err(ConfigError { field, reason });
        if self.mss_bytes == 0 {
            return err("mss_bytes", "must be at least 1");
        }
        if self.syn_interval == Duration::ZERO {
            return err("syn_interval", "must be positive");
        }
        if self.max_flow_window_packets < 2 {
            return err("max_flow_window_packets", "must be at least 2");
        }
        if self.initial_rtt == Duration::ZERO {
            return err("initial_rtt", "must be positive");
        }
        Ok(())
    }
}

/// Counters of what the sender has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdtSenderStats {
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes retransmitted.
    pub bytes_retransmitted: u64,
    /// Data packets sent, retransmissions included.
    pub packets_sent: u64,
    /// Data packets retransmitted.
    pub packets_retransmitted: u64,
    /// Packet pairs started (a new packet 16n sent with its partner allowed at once).
    pub probes: u64,
    /// ACKs received.
    pub acks_received: u64,
    /// NAKs received.
    pub naks_received: u64,
    /// Packets reported lost by NAKs (a packet may be counted more than once).
    pub packets_reported_lost: u64,
    /// ACK2s sent.
    pub ack2_sent: u64,
    /// EXP timeouts.
    pub exp_timeouts: u64,
}

/// The sending half of a UDT connection. See the module documentation.
#[derive(Debug)]
pub struct UdtSender {
    cfg: UdtSenderConfig,
    cc: Udt,
    cwnd: CwndState,
    mss: u64,
    bytes_offered: u64,
    app_stopped: bool,
    /// Stream offset of the first byte not yet put in a packet.
    next_offset: u64,
    /// First unacknowledged packet.
    snd_una: u64,
    /// Next new packet.
    snd_nxt: u64,
    /// (offset, len) of packets [snd_una, snd_nxt).
    unacked: VecDeque<(u64, u32)>,
    unacked_bytes: u64,
    /// The sender's loss list.
    loss: RangeSet,
    /// The receiver's advertised available buffer, packets.
    flow_window: u64,
    rtt: Duration,
    rtt_var: Duration,
    /// ACK2s to send.
    ack2_out: VecDeque<u64>,
    /// The pacing slot of the last data packet sent; the next may leave one SND (the current
    /// one) later. `None` before the first.
    slot: Option<SimTime>,
    /// The next data packet completes a packet pair and leaves at once.
    probe_next: bool,
    /// The last poll found a packet waiting for its pacing release.
    paced_waiting: bool,
    /// The window stopped a new packet since the last ACK.
    cwnd_limited: bool,
    /// The EXP timer counts from here.
    exp_base: SimTime,
    exp_count: u32,
    stats: UdtSenderStats,
}

impl UdtSender {
    /// A sender at `now` driven by the controller `cc` (its SYN is set from `cfg`).
    ///
    /// # Panics
    /// If `cfg` fails [`UdtSenderConfig::validate`].
    pub fn new(cfg: UdtSenderConfig, mut cc: Udt, now: SimTime) -> UdtSender {
        cfg.validate().expect("valid UDT sender config");
        let mss = cfg.mss_bytes as u64;
        cc.set_syn_interval(cfg.syn_interval);
        let mut cwnd = CwndState::new(2 * mss, mss);
        // UDT's slow start ends at the maximum window: it is the slow-start threshold.
        cwnd.ssthresh_bytes = cfg.max_flow_window_packets as u64 * mss;
        cc.init(&mut cwnd, now);
        UdtSender {
            cfg,
            cc,
            cwnd,
            mss,
            bytes_offered: 0,
            app_stopped: false,
            next_offset: 0,
            snd_una: 0,
            snd_nxt: 0,
            unacked: VecDeque::new(),
            unacked_bytes: 0,
            loss: RangeSet::new(),
            flow_window: cfg.max_flow_window_packets as u64,
            rtt: cfg.initial_rtt,
            rtt_var: Duration(cfg.initial_rtt.as_nanos() / 2),
            ack2_out: VecDeque::new(),
            slot: None,
            probe_next: false,
            paced_waiting: false,
            cwnd_limited: false,
            exp_base: now,
            exp_count: 1,
            stats: UdtSenderStats::default(),
        }
    }

    /// Offer `bytes` more bytes.
    pub fn app_write(&mut self, bytes: u64) {
        self.bytes_offered = self.bytes_offered.saturating_add(bytes);
        self.app_stopped = false;
    }

    /// Offer nothing beyond what has already been put in packets; those are still delivered.
    pub fn app_stop(&mut self) {
        self.bytes_offered = self.next_offset;
        self.app_stopped = true;
    }

    /// True when every offered byte has been acknowledged and something was offered (or the
    /// application stopped).
    pub fn is_complete(&self) -> bool {
        self.snd_una == self.snd_nxt
            && self.next_offset >= self.bytes_offered
            && (self.bytes_offered > 0 || self.app_stopped)
    }

    /// Stream offset of packet `seq` (unacknowledged), or of the next new packet.
    fn offset_of(&self, seq: u64) -> u64 {
        self.unacked.get((seq - self.snd_una) as usize).map_or(self.next_offset, |p| p.0)
    }

    /// Stream offset of the first unacknowledged byte.
    pub fn snd_una_offset(&self) -> u64 {
        self.offset_of(self.snd_una)
    }

    /// An ACK arrived at `now` (draft-gg-udt-03 §6.2, sender steps 1–10). An ACK for packets
    /// never sent is ignored.
    pub fn on_ack(&mut self, now: SimTime, ack: &AckPacket) {
        if ack.ack_no > self.snd_nxt {
            return;
        }
        self.stats.acks_received += 1;
        self.exp_base = now;
        self.exp_count = 1;
        let prior_in_flight = self.unacked_bytes;
        let prior_delivered = self.snd_una_offset();
        // Steps 1, 9, 10: release the acknowledged packets.
        let mut bytes_acked = 0;
        while self.snd_una < ack.ack_no {
            let (_, len) = self.unacked.pop_front().expect("unacked packet");
            bytes_acked += len as u64;
            self.snd_una += 1;
        }
        self.unacked_bytes -= bytes_acked;
        self.loss.remove_below(self.snd_una);
        // Step 2: ACK2.
        self.ack2_out.push_back(ack.ack_seq);
        // Step 3: RTT and RTTVar from the receiver's value.
        let sample = ack.rtt.as_nanos();
        let dev = self.rtt.as_nanos().abs_diff(sample);
        self.rtt_var = Duration((self.rtt_var.as_nanos() * 3 + dev) / 4);
        self.rtt = Duration((self.rtt.as_nanos() * 7 + sample) / 8);
        // Step 5: flow window.
        self.flow_window = ack.buffer_available_packets as u64;
        // Steps 7, 8 and the rate control: the controller smooths AS and B itself.
        self.cc.on_link_capacity(ack.link_capacity_pps as u64 * self.mss * 8, self.mss);
        let sample_rtt = Some(ack.rtt);
        let a = AckSample {
            now,
            bytes_acked,
            rtt: sample_rtt,
            min_rtt: sample_rtt,
            srtt: Some(self.rtt),
            one_way_delay: None,
            prior_in_flight_bytes: prior_in_flight,
            in_flight_bytes: self.unacked_bytes,
            snd_una: self.snd_una_offset(),
            snd_nxt: self.next_offset,
            ece: false,
            ce_bytes: 0,
            cwnd_limited: std::mem::take(&mut self.cwnd_limited),
            state: CaState::Open,
        };
        // AS as a rate sample: one packet per mean arrival interval.
        let as_pps = ack.arrival_rate_pps as u64;
        let rs = RateSample {
            delivered_bytes: if as_pps > 0 { self.mss } else { 0 },
            interval: 1_000_000_000u64.checked_div(as_pps).map_or(Duration::ZERO, Duration),
            delivery_rate_bps: as_pps * self.mss * 8,
            prior_delivered_bytes: prior_delivered,
            total_delivered_bytes: self.snd_una_offset(),
            is_app_limited: false,
            rtt: sample_rtt,
            newly_lost_bytes: 0,
            newly_acked_bytes: bytes_acked,
            tx_in_flight_bytes: 0,
            lost_bytes: 0,
        };
        self.cc.pkts_acked(&mut self.cwnd, &a);
        self.cc.cong_control(&mut self.cwnd, &a, &rs);
    }

    /// A NAK arrived at `now`: the reported packets join the loss list and the controller's
    /// decrease rule runs (Gu 2009 §4); the EXP timer restarts.
    pub fn on_nak(&mut self, now: SimTime, nak: &NakPacket) {
        self.stats.naks_received += 1;
        self.exp_base = now;
        self.exp_count = 1;
        let mut largest = None;
        for r in nak.ranges() {
            let (s, e) = (r.start.max(self.snd_una), r.end.min(self.snd_nxt));
            if s < e {
                self.loss.insert(s, e);
                self.stats.packets_reported_lost += e - s;
                largest = Some(largest.map_or(e - 1, |l: u64| l.max(e - 1)));
            }
        }
        if let Some(l) = largest {
            let off = self.offset_of(l);
            self.cc.on_nak(&mut self.cwnd, now, off, self.next_offset);
        }
    }

    /// EXP period: ExpCount·max(4·RTT + RTTVar + SYN, min_exp) (draft-gg-udt-03 §4).
    pub fn exp_period(&self) -> Duration {
        let base = self.rtt.saturating_mul(4) + self.rtt_var + self.cfg.syn_interval;
        base.max(self.cfg.min_exp).saturating_mul(self.exp_count as u64)
    }

    /// When the next data packet may leave: one SND (the current one, so that a rate change
    /// applies at once) after the last packet's slot.
    fn release_time(&self) -> SimTime {
        self.slot.map_or(SimTime::ZERO, |s| s + self.cc.snd_period())
    }

    fn exp_deadline(&self) -> Option<SimTime> {
        (self.snd_una < self.snd_nxt).then(|| self.exp_base + self.exp_period())
    }

    /// Fire what is due at `now`: the EXP timer. Harmless when nothing is due; a pacing release
    /// needs no call (the next [`UdtSender::poll_transmit`] at or after it sends).
    pub fn handle_timeout(&mut self, now: SimTime) {
        if self.exp_deadline().is_some_and(|d| now >= d) {
            self.stats.exp_timeouts += 1;
            self.loss.insert(self.snd_una, self.snd_nxt);
            self.cc.cwnd_event(&mut self.cwnd, CwndEvent::Loss, now);
            self.exp_count += 1;
            self.exp_base = now;
        }
    }

    /// The earliest time [`UdtSender::handle_timeout`] (EXP) or [`UdtSender::poll_transmit`] (a
    /// pacing release, when the last poll found a packet waiting) must be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        let pace = self.paced_waiting.then(|| self.release_time());
        match (self.exp_deadline(), pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The window for new packets: min(congestion window, flow window), packets.
    pub fn window_packets(&self) -> u64 {
        (self.cwnd.cwnd_bytes / self.mss).min(self.flow_window)
    }

    /// The next packet to send at `now`, or `None`. Call repeatedly until `None` after every
    /// [`UdtSender::on_ack`], [`UdtSender::on_nak`], [`UdtSender::handle_timeout`] and
    /// [`UdtSender::app_write`].
    #[must_use]
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<ToReceiver> {
        if let Some(ack_seq) = self.ack2_out.pop_front() {
            self.stats.ack2_sent += 1;
            return Some(ToReceiver::Ack2(Ack2Packet { ack_seq }));
        }
        self.paced_waiting = false;
        let retransmit = self.loss.first();
        let new_ok = self.next_offset < self.bytes_offered;
        if retransmit.is_none() {
            if !new_ok {
                return None;
            }
            if self.snd_nxt - self.snd_una >= self.window_packets() {
                self.cwnd_limited = true;
                return None;
            }
        }
        let period = self.cc.snd_period();
        if period > Duration::ZERO && !self.probe_next && now < self.release_time() {
            self.paced_waiting = true;
            return None;
        }
        let pkt = match retransmit {
            Some(seq) => {
                self.loss.pop_first();
                let (offset, len) = self.unacked[(seq - self.snd_una) as usize];
                self.stats.packets_retransmitted += 1;
                self.stats.bytes_retransmitted += len as u64;
                DataPacket { seq, offset, len, timestamp: now, retransmit: true }
            }
            None => {
                if self.snd_una == self.snd_nxt {
                    self.exp_base = now;
                }
                let len = (self.bytes_offered - self.next_offset).min(self.mss) as u32;
                let pkt = DataPacket {
                    seq: self.snd_nxt,
                    offset: self.next_offset,
                    len,
                    timestamp: now,
                    retransmit: false,
                };
                self.unacked.push_back((pkt.offset, len));
                self.unacked_bytes += len as u64;
                self.next_offset += len as u64;
                self.snd_nxt += 1;
                pkt
            }
        };
        // Pacing: one period per packet; a new packet 16n lets its successor leave at once, in a
        // slot one period later, so the mean rate stays 1/SND.
        self.slot = Some(self.slot.map_or(now, |s| now.max(s + period)));
        self.probe_next = !pkt.retransmit && pkt.seq % PROBE_INTERVAL_PACKETS == 0 && !self.probe_next;
        if self.probe_next {
            self.stats.probes += 1;
        }
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += pkt.len as u64;
        Some(ToReceiver::Data(pkt))
    }

    /// The window state: cwnd (the congestion window, bytes), the maximum window as ssthresh,
    /// and the pacing rate (payload bits/s; `None` while unpaced).
    pub fn cwnd(&self) -> &CwndState {
        &self.cwnd
    }

    /// The controller.
    pub fn cc(&self) -> &Udt {
        &self.cc
    }

    /// The flow window the receiver last advertised, packets.
    pub fn flow_window_packets(&self) -> u64 {
        self.flow_window
    }

    /// The sender's RTT estimate.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// The sender's RTT variance estimate.
    pub fn rtt_var(&self) -> Duration {
        self.rtt_var
    }

    /// Payload bytes sent and not yet acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.unacked_bytes
    }

    /// First unacknowledged packet.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Next new packet.
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    /// Packets in the loss list.
    pub fn loss_list_packets(&self) -> u64 {
        self.loss.len()
    }

    /// Total bytes the application offered.
    pub fn bytes_offered(&self) -> u64 {
        self.bytes_offered
    }

    /// Counters.
    pub fn stats(&self) -> &UdtSenderStats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &UdtSenderConfig {
        &self.cfg
    }
}
