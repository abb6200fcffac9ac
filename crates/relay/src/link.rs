//! The link one direction of a pipe emulates: the simulator's link model (`crates/sim/src/link.rs`,
//! htsim's Queue + Pipe) computed from each frame's arrival time.
//!
//! A frame of `ip_bytes` arriving at `t` meets a DropTail queue, a transmitter serializing at
//! `rate_bps`, random loss on the wire and a propagation delay:
//!
//! - **Queue**: dropped if the frames *waiting* (admitted, serialization not started; the one being
//!   serialized is not counted) already reach `limit` packets, or if its bytes would take the
//!   waiting bytes past `limit` bytes — the simulator's DropTail, decision for decision.
//! - **Transmitter**: serialization starts at `start = max(t, tx_free_at)` and takes
//!   `ceil(ip_bytes · 8 · 10⁹ / rate_bps)` ns; `tx_free_at` becomes the end.
//! - **Wire loss**: each serialized frame is lost with probability `loss` (it still used the link).
//! - **Pipe**: a surviving frame is due at the far end at `end + delay_ns`.
//!
//! With a fixed delay, due times are non-decreasing in arrival order, so the relay's FIFO
//! [`crate::DelayLine`] stays the whole schedule. Without a rate (`rate_bps = None`) there is no
//! queue and no transmitter: each frame is due `delay_ns` after it arrived (delay-only mode, when
//! a kernel qdisc does the rate and queue).
//!
//! Everything is computed from arrival timestamps, never from when the relay got round to a frame,
//! so the queue's decisions do not depend on the relay's own scheduling: the relay's error shows
//! only as *lateness* (sent after the due time), which it measures separately. Samples of the
//! queue at given instants are exact for the same reason ([`LinkModel::sample`]).
//!
//! Why the relay serializes at all rather than leaving the rate to htb or tbf: on the project's
//! virtual machines arming a high-resolution timer costs 10–40 µs of CPU, and a kernel shaper arms
//! one per packet whenever its queue is backlogged (its watchdog waits for the next packet's
//! tokens). At 1 Gbit/s that is ~80,000 timers a second, spent in whichever thread handed the
//! packet to the qdisc — the relay. The relay instead wakes once per batch of due frames.

use std::collections::VecDeque;

use crate::rng::Loss;

/// The queue's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    /// At most this many frames wait (a frame of a GSO batch counts as its segments).
    Packets(u64),
    /// At most this many IP bytes wait.
    Bytes(u64),
    /// No limit (only the relay's own memory bounds apply).
    Unlimited,
}

/// What one direction emulates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    /// Serialization rate, bits per second (IP bytes); `None` = no transmitter and no queue.
    pub rate_bps: Option<u64>,
    /// The DropTail limit of the queue in front of the transmitter (ignored without a rate).
    pub limit: QueueLimit,
    /// Propagation delay, ns.
    pub delay_ns: u64,
}

/// What became of an offered frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Refused by the full queue.
    Dropped,
    /// Serialized, then lost on the wire.
    LostOnWire,
    /// Reaches the far end at this CLOCK_MONOTONIC time, ns.
    Deliver {
        /// When the frame is due to leave the relay, ns.
        due_ns: u64,
    },
}

/// Cumulative counters of one direction (packets are segments: a GSO frame counts as many).
/// Conservation: `arrivals = drops + departures + waiting` at every instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Packets offered to the queue.
    pub arrivals: u64,
    /// Packets the queue refused.
    pub drops: u64,
    /// Packets whose serialization has started.
    pub departures: u64,
    /// IP bytes of those packets.
    pub departed_bytes: u64,
    /// Of the departed packets, those lost on the wire (counted when they depart).
    pub lost_wire: u64,
    /// Sum over departed packets of their time in the queue (start − arrival), ns.
    pub sojourn_total_ns: u64,
}

/// The queue at one instant: what waits, and the counters so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueSample {
    /// The instant, CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// Packets waiting (the one being serialized not counted).
    pub backlog_packets: u64,
    /// IP bytes waiting.
    pub backlog_bytes: u64,
    /// Counters up to and including `t_ns`.
    pub counters: LinkCounters,
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    arrival_ns: u64,
    start_ns: u64,
    ip_bytes: u64,
    packets: u64,
    /// Drawn at admission (streams stay in admission order = departure order), counted when the
    /// frame departs, as the simulator counts it.
    lost_on_wire: bool,
}

/// One direction's link, advanced by arrivals (see the module docs).
#[derive(Debug)]
pub struct LinkModel {
    params: LinkParams,
    loss: Loss,
    tx_free_at_ns: u64,
    last_arrival_ns: u64,
    waiting: VecDeque<Waiting>,
    waiting_packets: u64,
    waiting_bytes: u64,
    counters: LinkCounters,
}

/// Serialization time of `ip_bytes` at `rate_bps`, rounded up to a whole ns (a link never runs
/// faster than its rate), ns.
pub fn transmission_ns(ip_bytes: u64, rate_bps: u64) -> u64 {
    let bits = u128::from(ip_bytes) * 8 * 1_000_000_000;
    bits.div_ceil(u128::from(rate_bps.max(1))) as u64
}

impl LinkModel {
    /// An idle link with `params`, losing frames on the wire per `loss`.
    pub fn new(params: LinkParams, loss: Loss) -> LinkModel {
        LinkModel {
            params,
            loss,
            tx_free_at_ns: 0,
            last_arrival_ns: 0,
            waiting: VecDeque::new(),
            waiting_packets: 0,
            waiting_bytes: 0,
            counters: LinkCounters::default(),
        }
    }

    /// The link's parameters.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// Counters as of the last arrival or sample.
    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// Packets waiting as of the last arrival or sample.
    pub fn backlog_packets(&self) -> u64 {
        self.waiting_packets
    }

    /// Start the serialization of every waiting frame whose start time is at or before `t_ns`.
    pub fn advance(&mut self, t_ns: u64) {
        while let Some(w) = self.waiting.front() {
            if w.start_ns > t_ns {
                break;
            }
            let w = self.waiting.pop_front().expect("front exists");
            self.waiting_packets -= w.packets;
            self.waiting_bytes -= w.ip_bytes;
            self.counters.departures += w.packets;
            self.counters.departed_bytes += w.ip_bytes;
            self.counters.sojourn_total_ns += (w.start_ns - w.arrival_ns) * w.packets;
            if w.lost_on_wire {
                self.counters.lost_wire += w.packets;
            }
        }
    }

    /// Offer a frame of `ip_bytes` IP bytes (`packets` segments, 1 unless it is a GSO batch) that
    /// arrived at `arrival_ns`. Arrivals must be offered in time order; an earlier timestamp than
    /// the previous one (two CPUs' receive paths racing) is treated as simultaneous with it.
    pub fn offer(&mut self, arrival_ns: u64, ip_bytes: u64, packets: u64) -> Fate {
        let t = arrival_ns.max(self.last_arrival_ns);
        self.last_arrival_ns = t;
        let packets = packets.max(1);
        self.advance(t);
        self.counters.arrivals += packets;
        let Some(rate_bps) = self.params.rate_bps else {
            self.counters.departures += packets;
            self.counters.departed_bytes += ip_bytes;
            if self.loss.drop_this() {
                self.counters.lost_wire += packets;
                return Fate::LostOnWire;
            }
            return Fate::Deliver { due_ns: t.saturating_add(self.params.delay_ns) };
        };
        let fits = match self.params.limit {
            QueueLimit::Packets(limit) => self.waiting_packets < limit,
            QueueLimit::Bytes(limit) => self.waiting_bytes + ip_bytes <= limit,
            QueueLimit::Unlimited => true,
        };
        if !fits {
            self.counters.drops += packets;
            return Fate::Dropped;
        }
        let start_ns = self.tx_free_at_ns.max(t);
        let end_ns = start_ns + transmission_ns(ip_bytes, rate_bps);
        self.tx_free_at_ns = end_ns;
        let lost_on_wire = self.loss.drop_this();
        self.waiting.push_back(Waiting { arrival_ns: t, start_ns, ip_bytes, packets, lost_on_wire });
        self.waiting_packets += packets;
        self.waiting_bytes += ip_bytes;
        self.advance(t);
        if lost_on_wire {
            Fate::LostOnWire
        } else {
            Fate::Deliver { due_ns: end_ns.saturating_add(self.params.delay_ns) }
        }
    }

    /// The queue at `t_ns`, which must not be earlier than the last arrival offered (so every
    /// arrival up to `t_ns` must have been offered for the sample to be exact).
    pub fn sample(&mut self, t_ns: u64) -> QueueSample {
        let t = t_ns.max(self.last_arrival_ns);
        self.advance(t);
        QueueSample { t_ns, backlog_packets: self.waiting_packets, backlog_bytes: self.waiting_bytes, counters: self.counters }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use proptest::prelude::*;

    const GBIT: u64 = 1_000_000_000;

    fn link(rate_bps: Option<u64>, limit: QueueLimit, delay_ns: u64) -> LinkModel {
        LinkModel::new(LinkParams { rate_bps, limit, delay_ns }, Loss::new(0.0, SplitMix64::new(1)))
    }

    fn due(f: Fate) -> u64 {
        match f {
            Fate::Deliver { due_ns } => due_ns,
            other => panic!("expected delivery, got {other:?}"),
        }
    }

    #[test]
    fn transmission_time_rounds_up_like_the_simulator() {
        assert_eq!(transmission_ns(1500, GBIT), 12_000);
        assert_eq!(transmission_ns(1500, 3), 4_000_000_000_000);
        assert_eq!(transmission_ns(1, 3 * GBIT), 3);
    }

    #[test]
    fn an_idle_link_delays_by_serialization_plus_propagation() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 50_000_000);
        assert_eq!(due(l.offer(1_000, 1500, 1)), 1_000 + 12_000 + 50_000_000);
        // Long after: idle again, no queueing.
        assert_eq!(due(l.offer(10_000_000, 1000, 1)), 10_000_000 + 8_000 + 50_000_000);
        assert_eq!(l.counters().sojourn_total_ns, 0);
    }

    #[test]
    fn back_to_back_frames_queue_behind_the_transmitter() {
        // Ten 1500-byte frames at once on 1 Gbit/s: the k-th starts at 12k µs and arrives 12 µs later.
        let mut l = link(Some(GBIT), QueueLimit::Packets(100), 0);
        for k in 0..10u64 {
            assert_eq!(due(l.offer(0, 1500, 1)), 12_000 * (k + 1));
        }
        let s = l.sample(0);
        assert_eq!((s.backlog_packets, s.backlog_bytes, s.counters.departures), (9, 9 * 1500, 1));
        let s = l.sample(12_000 * 5);
        assert_eq!((s.backlog_packets, s.counters.departures), (4, 6));
        // Queueing delays 0, 12, 24, ... 60 µs for the six departed frames.
        assert_eq!(s.counters.sojourn_total_ns, 12_000 * (1 + 2 + 3 + 4 + 5));
        let s = l.sample(1_000_000);
        assert_eq!((s.backlog_packets, s.counters.departures, s.counters.departed_bytes), (0, 10, 15_000));
    }

    #[test]
    fn packet_limit_counts_only_the_waiting_frames() {
        // Limit 3: the first frame goes straight to the transmitter, three wait, the fifth is dropped.
        let mut l = link(Some(GBIT), QueueLimit::Packets(3), 0);
        let fates: Vec<Fate> = (0..5).map(|_| l.offer(0, 1500, 1)).collect();
        assert!(fates[..4].iter().all(|f| matches!(f, Fate::Deliver { .. })));
        assert_eq!(fates[4], Fate::Dropped);
        // Once the head has started, one more fits.
        assert!(matches!(l.offer(12_000, 1500, 1), Fate::Deliver { .. }));
        assert_eq!(l.offer(12_000, 1500, 1), Fate::Dropped);
        assert_eq!(l.counters().drops, 2);
    }

    #[test]
    fn byte_limit_admits_what_fits() {
        let mut l = link(Some(GBIT), QueueLimit::Bytes(3000), 0);
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. })); // on the transmitter
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. })); // 1500 waiting
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. })); // 3000 waiting
        assert_eq!(l.offer(0, 100, 1), Fate::Dropped);
        assert_eq!(l.sample(0).backlog_bytes, 3000);
    }

    #[test]
    fn without_a_rate_frames_are_only_delayed() {
        let mut l = link(None, QueueLimit::Packets(1), 7_000);
        for t in [0u64, 0, 0, 5, 9] {
            assert_eq!(due(l.offer(t, 1500, 1)), t + 7_000);
        }
        let s = l.sample(10);
        assert_eq!((s.backlog_packets, s.counters.arrivals, s.counters.departures, s.counters.drops), (0, 5, 5, 0));
    }

    #[test]
    fn wire_loss_happens_after_serialization() {
        let mut l = LinkModel::new(LinkParams { rate_bps: Some(GBIT), limit: QueueLimit::Packets(100), delay_ns: 0 }, Loss::new(1.0, SplitMix64::new(3)));
        assert_eq!(l.offer(0, 1500, 1), Fate::LostOnWire);
        // The lost frame still held the transmitter for 12 µs.
        let mut k = link(Some(GBIT), QueueLimit::Packets(100), 0);
        k.tx_free_at_ns = l.tx_free_at_ns;
        assert_eq!(due(k.offer(0, 1500, 1)), 24_000);
        assert_eq!((l.counters().departures, l.counters().lost_wire), (1, 1));
    }

    #[test]
    fn a_lost_frame_is_counted_when_it_departs() {
        let mut l = LinkModel::new(LinkParams { rate_bps: Some(GBIT), limit: QueueLimit::Packets(100), delay_ns: 0 }, Loss::new(1.0, SplitMix64::new(3)));
        assert_eq!(l.offer(0, 1500, 1), Fate::LostOnWire);
        assert_eq!(l.offer(0, 1500, 1), Fate::LostOnWire);
        // The second one is still waiting for the transmitter.
        assert_eq!((l.counters().departures, l.counters().lost_wire), (1, 1));
        let s = l.sample(12_000);
        assert_eq!((s.counters.departures, s.counters.lost_wire), (2, 2));
    }

    #[test]
    fn gso_batches_count_as_their_segments() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(3), 0);
        assert!(matches!(l.offer(0, 1500, 1), Fate::Deliver { .. }));
        assert!(matches!(l.offer(0, 4500, 3), Fate::Deliver { .. }));
        assert_eq!(l.offer(0, 1500, 1), Fate::Dropped);
        assert_eq!(l.sample(0).backlog_packets, 3);
        assert_eq!(l.sample(12_000).counters.departures, 4);
    }

    #[test]
    fn late_timestamps_count_as_simultaneous() {
        let mut l = link(Some(GBIT), QueueLimit::Packets(10), 0);
        assert_eq!(due(l.offer(100_000, 1500, 1)), 112_000);
        assert_eq!(due(l.offer(90_000, 1500, 1)), 124_000);
        assert_eq!(l.counters().sojourn_total_ns, 0);
        assert_eq!(l.sample(112_000).counters.sojourn_total_ns, 12_000);
    }

    proptest! {
        /// Conservation at every instant (arrivals = drops + departures + waiting), FIFO (due
        /// times never decrease), the rate is never exceeded, and a frame that finds the queue
        /// below its limit is never dropped.
        #[test]
        fn conserves_orders_and_respects_the_rate(
            gaps in proptest::collection::vec(0u64..40_000, 1..300),
            sizes in proptest::collection::vec(40u64..1501, 300),
            limit in 1u64..20,
            rate_mbps in 1u64..2000,
        ) {
            let rate_bps = rate_mbps * 1_000_000;
            let mut l = link(Some(rate_bps), QueueLimit::Packets(limit), 1_000);
            let (mut t, mut last_due, mut delivered) = (0u64, 0u64, Vec::new());
            for (i, gap) in gaps.iter().enumerate() {
                t += gap;
                let before = l.sample(t).backlog_packets;
                let size = sizes[i];
                match l.offer(t, size, 1) {
                    Fate::Deliver { due_ns } => {
                        prop_assert!(due_ns >= last_due);
                        prop_assert!(due_ns >= t + transmission_ns(size, rate_bps) + 1_000);
                        last_due = due_ns;
                        delivered.push((due_ns - 1_000, size));
                    }
                    Fate::Dropped => prop_assert!(before >= limit),
                    Fate::LostOnWire => prop_assert!(false, "no loss configured"),
                }
                let c = l.counters();
                prop_assert_eq!(c.arrivals, c.drops + c.departures + l.backlog_packets());
            }
            // Ends of serialization are at least one transmission time apart.
            for w in delivered.windows(2) {
                prop_assert!(w[1].0 >= w[0].0 + transmission_ns(w[1].1, rate_bps));
            }
        }
    }
}
