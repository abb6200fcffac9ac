//! A directed link: an egress queue, a transmitter that serializes at the link rate, and a pipe
//! that delays by the propagation delay (htsim's Queue + Pipe).
//!
//! The link is advanced lazily: a packet leaves the queue when the transmitter frees up, and that
//! instant is fully determined by the queue's contents, so the link computes the departures that
//! happened since it was last touched whenever it is touched again (an arrival, a sample, a
//! pipe-head event). Packets in the pipe arrive in FIFO order, so the link needs exactly one
//! pending event, for the head of its pipe, not one per packet in flight.

use std::collections::VecDeque;

use ccarena_cc::{Duration, SimTime};

use crate::packet::{Packet, Payload};
use crate::queue::{Aqm, Verdict};
use crate::rng::Rng;

/// Cumulative per-link counters. Conservation: `packets_in = packets_delivered +
/// packets_dropped_queue + packets_lost_wire + queued + in pipe` at every instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Packets offered to the queue.
    pub packets_in: u64,
    /// Bytes offered to the queue.
    pub bytes_in: u64,
    /// Packets that reached the far end.
    pub packets_delivered: u64,
    /// Packets refused by the queue discipline.
    pub packets_dropped_queue: u64,
    /// Packets the queue discipline admitted with CE set (ECN marking; they are still delivered).
    pub packets_marked: u64,
    /// Packets serialized but lost on the wire (random loss).
    pub packets_lost_wire: u64,
    /// Packets that left the queue (started serialization).
    pub departures: u64,
    /// Bytes serialized.
    pub bytes_transmitted: u64,
    /// Sum of queueing delays of departed packets, ns.
    pub sojourn_total_ns: u64,
}

/// One direction of a link.
#[derive(Debug)]
pub struct Link {
    /// Sending node.
    pub from: u32,
    /// Receiving node.
    pub to: u32,
    rate_bps: u64,
    delay: Duration,
    loss: f64,
    rng: Rng,
    aqm: Aqm,
    queue: VecDeque<Packet>,
    queued_bytes: u64,
    tx_free_at: SimTime,
    pipe: VecDeque<(SimTime, Packet)>,
    last_arrival: SimTime,
    /// Time of this link's earliest pending arrival event in the engine's heap (`NEVER` if none).
    pub scheduled_at: SimTime,
    counters: LinkCounters,
}

impl Link {
    /// A link from `from` to `to` with the given rate (bits/s), delay, loss probability, queue
    /// discipline and loss RNG stream.
    pub fn new(from: u32, to: u32, rate_bps: u64, delay: Duration, loss: f64, aqm: Aqm, rng: Rng) -> Link {
        Link {
            from,
            to,
            rate_bps,
            delay,
            loss,
            rng,
            aqm,
            queue: VecDeque::new(),
            queued_bytes: 0,
            tx_free_at: SimTime::ZERO,
            pipe: VecDeque::new(),
            last_arrival: SimTime::ZERO,
            scheduled_at: SimTime::NEVER,
            counters: LinkCounters::default(),
        }
    }

    /// Offer `pkt` to the queue at `now`. Returns false when the discipline drops it. A packet
    /// the discipline marks has CE set on its data segment (only ECT data segments are marked).
    pub fn enqueue(&mut self, now: SimTime, mut pkt: Packet) -> bool {
        self.advance(now);
        self.counters.packets_in += 1;
        self.counters.bytes_in += pkt.size_bytes as u64;
        let ect = matches!(pkt.payload, Payload::Data(seg) if seg.ect);
        match self.aqm.admit(self.queue.len() as u64, self.queued_bytes, pkt.size_bytes as u64, ect) {
            Verdict::Enqueue => {}
            Verdict::Mark => {
                if let Payload::Data(seg) = &mut pkt.payload {
                    seg.ce = true;
                }
                self.counters.packets_marked += 1;
            }
            Verdict::Drop => {
                self.counters.packets_dropped_queue += 1;
                return false;
            }
        }
        pkt.enqueued_at = now;
        self.queued_bytes += pkt.size_bytes as u64;
        self.queue.push_back(pkt);
        self.advance(now);
        true
    }

    /// Move every packet whose serialization starts at or before `now` from the queue to the pipe.
    pub fn advance(&mut self, now: SimTime) {
        while let Some(head) = self.queue.front() {
            let start = self.tx_free_at.max(head.enqueued_at);
            if start > now {
                break;
            }
            let pkt = self.queue.pop_front().expect("front exists");
            let size = pkt.size_bytes as u64;
            self.queued_bytes -= size;
            let end = start + Duration::transmission(size, self.rate_bps);
            self.tx_free_at = end;
            self.counters.departures += 1;
            self.counters.bytes_transmitted += size;
            self.counters.sojourn_total_ns += (start - pkt.enqueued_at).as_nanos();
            if self.loss > 0.0 && self.rng.bernoulli(self.loss) {
                self.counters.packets_lost_wire += 1;
                continue;
            }
            // A link does not reorder: if the delay was lowered mid-run, later packets wait.
            let arrival = (end + self.delay).max(self.last_arrival);
            self.last_arrival = arrival;
            self.pipe.push_back((arrival, pkt));
        }
    }

    /// When the next packet reaches the far end, if any is queued or in the pipe.
    pub fn next_arrival(&self) -> Option<SimTime> {
        if let Some((t, _)) = self.pipe.front() {
            return Some(*t);
        }
        self.queue.front().map(|head| {
            let start = self.tx_free_at.max(head.enqueued_at);
            (start + Duration::transmission(head.size_bytes as u64, self.rate_bps) + self.delay)
                .max(self.last_arrival)
        })
    }

    /// Append to `out` every packet that has reached the far end by `now`.
    pub fn take_arrivals(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.advance(now);
        while let Some((t, _)) = self.pipe.front() {
            if *t > now {
                break;
            }
            let (_, pkt) = self.pipe.pop_front().expect("front exists");
            self.counters.packets_delivered += 1;
            out.push(pkt);
        }
    }

    /// Packets waiting in the queue (not counting the one being serialized).
    pub fn queued_packets(&self) -> u64 {
        self.queue.len() as u64
    }

    /// Bytes waiting in the queue.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    /// Packets serialized (or being serialized) and not yet arrived.
    pub fn in_pipe_packets(&self) -> u64 {
        self.pipe.len() as u64
    }

    /// Cumulative counters.
    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// Serialization rate, bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StreamKind;
    use ccarena_transport::DataSegment;

    fn pkt(size: u32) -> Packet {
        Packet { flow: 0, dst: 1, size_bytes: size, enqueued_at: SimTime::ZERO, payload: Payload::Datagram { seq: 0 } }
    }

    fn link(limit: u64, loss: f64) -> Link {
        Link::new(
            0,
            1,
            8_000_000, // 1 byte per µs
            Duration::from_millis(1),
            loss,
            Aqm::DropTail { limit_packets: Some(limit), limit_bytes: None, ecn_threshold_packets: None, ecn_threshold_bytes: None },
            Rng::stream(1, StreamKind::LinkLoss, 0),
        )
    }

    #[test]
    fn departure_is_serialization_then_propagation() {
        let mut l = link(10, 0.0);
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        // first: 1000 µs serialization + 1 ms; second waits for the first.
        assert_eq!(l.next_arrival(), Some(SimTime(2_000_000)));
        let mut out = Vec::new();
        l.take_arrivals(SimTime(2_000_000), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(l.next_arrival(), Some(SimTime(3_000_000)));
        l.take_arrivals(SimTime(3_000_000), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(l.counters().sojourn_total_ns, 1_000_000);
    }

    #[test]
    fn queue_limit_excludes_the_packet_being_serialized() {
        let mut l = link(2, 0.0);
        // first starts serializing at once; two more wait; the fourth is dropped.
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(l.enqueue(SimTime::ZERO, pkt(1000)));
        assert!(!l.enqueue(SimTime::ZERO, pkt(1000)));
        assert_eq!(l.queued_packets(), 2);
        // after the first finishes (1 ms), the second is serializing and one waits: room for one.
        assert!(l.enqueue(SimTime(1_000_000), pkt(1000)));
        assert!(!l.enqueue(SimTime(1_000_000), pkt(1000)));
    }

    #[test]
    fn counters_conserve_packets() {
        let mut l = link(5, 0.3);
        let mut out = Vec::new();
        for i in 0..200u64 {
            l.enqueue(SimTime(i * 500_000), pkt(1000));
            l.take_arrivals(SimTime(i * 500_000), &mut out);
        }
        let c = *l.counters();
        assert!(c.packets_lost_wire > 0 && c.packets_dropped_queue > 0);
        assert_eq!(
            c.packets_in,
            c.packets_delivered + c.packets_dropped_queue + c.packets_lost_wire + l.queued_packets() + l.in_pipe_packets()
        );
        assert_eq!(out.len() as u64, c.packets_delivered);
    }

    #[test]
    fn marking_sets_ce_on_ect_data_and_counts_it() {
        let mut l = Link::new(
            0,
            1,
            8_000_000,
            Duration::from_millis(1),
            0.0,
            Aqm::DropTail { limit_packets: Some(10), limit_bytes: None, ecn_threshold_packets: Some(1), ecn_threshold_bytes: None },
            Rng::stream(1, StreamKind::LinkLoss, 0),
        );
        let data = |ect: bool| Packet {
            flow: 0,
            dst: 1,
            size_bytes: 1000,
            enqueued_at: SimTime::ZERO,
            payload: Payload::Data(DataSegment { seq: 0, len: 948, ts_val: SimTime::ZERO, ect, ce: false, cwr: false, retransmit: false }),
        };
        // First serializes at once, second waits (0 waiting on arrival: not marked), third and
        // fourth find one or more waiting: the ECT one is marked, the non-ECT one is not.
        assert!(l.enqueue(SimTime::ZERO, data(true)));
        assert!(l.enqueue(SimTime::ZERO, data(true)));
        assert!(l.enqueue(SimTime::ZERO, data(true)));
        assert!(l.enqueue(SimTime::ZERO, data(false)));
        assert_eq!(l.counters().packets_marked, 1);
        let mut out = Vec::new();
        l.take_arrivals(SimTime(10_000_000), &mut out);
        let ce: Vec<bool> = out.iter().map(|p| matches!(p.payload, Payload::Data(s) if s.ce)).collect();
        assert_eq!(ce, vec![false, false, true, false]);
    }
}
