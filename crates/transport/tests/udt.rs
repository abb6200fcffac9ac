//! The UDT endpoints (sans-IO) driven through in-memory channels: reliability under random loss,
//! reordering and duplication (every byte delivered exactly once, in order, within a bounded
//! time), and the protocol's mechanisms one at a time: NAK on a gap, ACK every SYN and ACK2, the
//! ACK suppression rules, packet pairs and the capacity estimate, pacing at SND, the flow
//! window, slow start and the EXP timer.

use ccarena_cc::udt::Udt;
use ccarena_cc::{Duration, Params, SimTime};
use ccarena_transport::udt::{
    AckPacket, DataPacket, LossRange, NakPacket, ToReceiver, ToSender, UdtReceiver, UdtReceiverConfig,
    UdtSender, UdtSenderConfig,
};
use proptest::prelude::*;
use crate::support::{Channel, LinkCfg};

const MSS: u32 = 1000;
/// IP + UDP + UDT data header, bytes.
const HEADER: u64 = 44;
const SYN: Duration = Duration::from_millis(10);

fn sender_cfg() -> UdtSenderConfig {
    UdtSenderConfig {
        mss_bytes: MSS,
        syn_interval: SYN,
        max_flow_window_packets: 25_600,
        initial_rtt: Duration::from_millis(100),
        min_exp: Duration::from_millis(300),
    }
}

fn receiver_cfg() -> UdtReceiverConfig {
    UdtReceiverConfig {
        syn_interval: SYN,
        max_flow_window_packets: 25_600,
        initial_rtt: Duration::from_millis(100),
    }
}

fn controller(seed: u64) -> Udt {
    let mut cc = Udt::new(&Params::default()).unwrap();
    cc.mix_seed(seed);
    cc
}

fn ms(v: u64) -> SimTime {
    SimTime(v * 1_000_000)
}

/// A UDT sender and receiver joined by a data channel and a control channel.
struct UdtPair {
    sender: UdtSender,
    receiver: UdtReceiver,
    now: SimTime,
    fwd: Channel<ToReceiver>,
    rev: Channel<ToSender>,
    /// In-order byte ranges the receiver delivered.
    delivered: Vec<(u64, u64)>,
    /// carried[i]: byte i was in some data packet that reached the receiver.
    carried: Vec<bool>,
    /// Every data packet the sender emitted, with its send time.
    sent: Vec<(SimTime, DataPacket)>,
    /// Every control packet the receiver emitted, with its send time.
    ctrl: Vec<(SimTime, ToSender)>,
    /// RTT samples the receiver took from ACK2s.
    rtt_samples: Vec<Duration>,
    /// (arrival time, seq) of every data packet that reached the receiver.
    received: Vec<(SimTime, u64)>,
    /// Drop the first transmission of this packet.
    drop_first_tx_of: Option<u64>,
    /// Checked after every step.
    invariant: Option<fn(&UdtSender)>,
    events: u64,
}

impl UdtPair {
    fn new(fwd: LinkCfg, rev: LinkCfg, seed: u64) -> UdtPair {
        UdtPair::with(sender_cfg(), receiver_cfg(), fwd, rev, seed)
    }

    fn with(
        scfg: UdtSenderConfig,
        rcfg: UdtReceiverConfig,
        fwd: LinkCfg,
        rev: LinkCfg,
        seed: u64,
    ) -> UdtPair {
        UdtPair {
            sender: UdtSender::new(scfg, controller(seed), SimTime::ZERO),
            receiver: UdtReceiver::new(rcfg, SimTime::ZERO),
            now: SimTime::ZERO,
            fwd: Channel::new(fwd, seed ^ 0xD1B5_4A32_D192_ED03),
            rev: Channel::new(rev, seed ^ 0x8CB9_2BA7_2F3D_8DD7),
            delivered: Vec::new(),
            carried: Vec::new(),
            sent: Vec::new(),
            ctrl: Vec::new(),
            rtt_samples: Vec::new(),
            received: Vec::new(),
            drop_first_tx_of: None,
            invariant: None,
            events: 0,
        }
    }

    fn pump_sender(&mut self) {
        while let Some(p) = self.sender.poll_transmit(self.now) {
            let bytes = match p {
                ToReceiver::Data(d) => {
                    assert!(d.len > 0 && d.len <= MSS);
                    assert!(d.end() <= self.sender.bytes_offered(), "sent beyond what was offered");
                    self.sent.push((self.now, d));
                    if self.drop_first_tx_of == Some(d.seq) && !d.retransmit {
                        continue;
                    }
                    d.len as u64 + HEADER
                }
                ToReceiver::Ack2(_) => HEADER,
            };
            self.fwd.send(self.now, p, bytes);
            assert!(self.sent.len() < 10_000_000, "runaway sender");
        }
    }

    fn pump_receiver(&mut self) {
        while let Some(p) = self.receiver.poll_transmit(self.now) {
            self.ctrl.push((self.now, p));
            let bytes = match p {
                ToSender::Ack(_) => HEADER + 24,
                ToSender::Nak(n) => HEADER + n.loss_info_bytes() as u64,
            };
            self.rev.send(self.now, p, bytes);
        }
    }

    fn receive(&mut self, p: ToReceiver) {
        match p {
            ToReceiver::Data(d) => {
                self.received.push((self.now, d.seq));
                let end = d.end() as usize;
                if self.carried.len() < end {
                    self.carried.resize(end, false);
                }
                self.carried[d.offset as usize..end].iter_mut().for_each(|b| *b = true);
                let before = self.receiver.delivered_bytes();
                let n = self.receiver.on_data(self.now, &d);
                let after = self.receiver.delivered_bytes();
                assert_eq!(after - before, n, "returned count matches the delivered offset");
                if n > 0 {
                    assert!(
                        self.carried[before as usize..after as usize].iter().all(|b| *b),
                        "delivered [{before}, {after}) but not every byte of it arrived"
                    );
                    match self.delivered.last_mut() {
                        Some(last) if last.1 == before => last.1 = after,
                        _ => self.delivered.push((before, after)),
                    }
                }
            }
            ToReceiver::Ack2(a) => {
                if let Some(s) = self.receiver.on_ack2(self.now, &a) {
                    self.rtt_samples.push(s);
                }
            }
        }
    }

    fn next_time(&self) -> Option<SimTime> {
        [self.fwd.next_time(), self.rev.next_time(), self.sender.poll_timeout(), self.receiver.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Process the next instant at which anything happens; false when nothing is pending.
    fn step(&mut self) -> bool {
        let Some(t) = self.next_time() else { return false };
        self.now = self.now.max(t);
        self.events += 1;
        while let Some(p) = self.fwd.pop_due(self.now) {
            self.receive(p);
        }
        self.receiver.handle_timeout(self.now);
        self.pump_receiver();
        while let Some(p) = self.rev.pop_due(self.now) {
            match p {
                ToSender::Ack(a) => self.sender.on_ack(self.now, &a),
                ToSender::Nak(n) => self.sender.on_nak(self.now, &n),
            }
        }
        self.sender.handle_timeout(self.now);
        self.pump_sender();
        if let Some(check) = self.invariant {
            check(&self.sender);
        }
        true
    }

    /// Offer `bytes` and run until the sender is complete or `limit` passes. True if complete.
    fn transfer(&mut self, bytes: u64, limit: SimTime) -> bool {
        self.sender.app_write(bytes);
        self.pump_sender();
        while !self.sender.is_complete() && self.now <= limit {
            if !self.step() {
                break;
            }
            assert!(self.events < 20_000_000, "runaway event loop");
        }
        self.sender.is_complete()
    }

    /// Run until `t` or until nothing is pending.
    fn run_until(&mut self, t: SimTime) {
        while self.next_time().is_some_and(|n| n <= t) {
            self.step();
            assert!(self.events < 20_000_000, "runaway event loop");
        }
        self.now = self.now.max(t);
    }

    fn assert_delivered_exactly(&self, n: u64) {
        let mut expect = 0;
        for &(a, b) in &self.delivered {
            assert_eq!(a, expect, "delivered ranges not contiguous: {:?}", self.delivered);
            expect = b;
        }
        assert_eq!(expect, n, "delivered {expect} of {n} bytes");
        assert_eq!(self.receiver.delivered_bytes(), n);
    }

    fn data_sent_between(&self, from: SimTime, to: SimTime) -> Vec<(SimTime, DataPacket)> {
        self.sent.iter().copied().filter(|(t, _)| *t >= from && *t < to).collect()
    }
}

fn link(delay_ms: u64, rate_bps: Option<u64>, queue: Option<usize>) -> LinkCfg {
    LinkCfg { rate_bps, queue_limit: queue, ..LinkCfg::clean(Duration::from_millis(delay_ms)) }
}

/// One random fault scenario.
#[derive(Clone, Debug)]
struct Faults {
    bytes: u64,
    loss_fwd: f64,
    loss_rev: f64,
    reorder: f64,
    reorder_extra_ms: u64,
    dup: f64,
    rate_mbps: u64,
    delay_ms: u64,
    seed: u64,
}

fn faults() -> impl Strategy<Value = Faults> {
    (
        (1u64..400_000, 0.0f64..0.2, 0.0f64..0.2, 0.0f64..0.2),
        (prop_oneof![Just(3u64), Just(30)], 0.0f64..0.05, prop_oneof![Just(10u64), Just(100)]),
        (prop_oneof![Just(5u64), Just(50)], any::<u64>()),
    )
        .prop_map(|((bytes, lf, lr, ro), (rx, dup, rate), (delay, seed))| Faults {
            bytes,
            loss_fwd: lf,
            loss_rev: lr,
            reorder: ro,
            reorder_extra_ms: rx,
            dup,
            rate_mbps: rate,
            delay_ms: delay,
            seed,
        })
}

fn run_faults(f: &Faults) {
    let mut fwd = link(f.delay_ms, Some(f.rate_mbps * 1_000_000), Some(200));
    fwd.loss = f.loss_fwd;
    fwd.reorder = f.reorder;
    fwd.reorder_extra = Duration::from_millis(f.reorder_extra_ms);
    fwd.dup = f.dup;
    let mut rev = link(f.delay_ms, None, None);
    rev.loss = f.loss_rev;
    rev.reorder = f.reorder;
    rev.reorder_extra = Duration::from_millis(f.reorder_extra_ms);
    rev.dup = f.dup;
    let mut p = UdtPair::new(fwd, rev, f.seed);
    let done = p.transfer(f.bytes, SimTime(600 * 1_000_000_000));
    assert!(
        done,
        "{f:?}: not complete by {:?}: una {} nxt {} loss list {} stats {:?}",
        p.now,
        p.sender.snd_una(),
        p.sender.snd_nxt(),
        p.sender.loss_list_packets(),
        p.sender.stats()
    );
    p.assert_delivered_exactly(f.bytes);
    assert_eq!(p.sender.unacked_bytes(), 0);
    assert_eq!(p.sender.loss_list_packets(), 0);
    let st = p.sender.stats();
    assert_eq!(st.bytes_sent, f.bytes + st.bytes_retransmitted, "each byte sent once plus retransmissions");
    // Every delivered byte exactly once: duplicates were received, not delivered.
    let r = p.receiver.stats();
    assert!(r.bytes_received >= f.bytes);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn udt_delivers_every_byte_once_in_order(f in faults()) { run_faults(&f) }
}

#[test]
fn heavy_loss_both_ways_still_completes() {
    for seed in 0..8 {
        let f = Faults {
            bytes: 300_000,
            loss_fwd: 0.3,
            loss_rev: 0.3,
            reorder: 0.1,
            reorder_extra_ms: 30,
            dup: 0.05,
            rate_mbps: 10,
            delay_ms: 20,
            seed,
        };
        run_faults(&f);
    }
}

#[test]
fn lossless_transfer_has_no_retransmissions_and_acks_every_syn() {
    let mut p = UdtPair::new(link(10, Some(100_000_000), None), link(10, None, None), 1);
    assert!(p.transfer(2_000_000, ms(20_000)));
    p.assert_delivered_exactly(2_000_000);
    let st = p.sender.stats();
    assert_eq!((st.packets_retransmitted, st.naks_received, st.exp_timeouts), (0, 0, 0));
    assert_eq!(p.receiver.stats().duplicate_packets, 0);
    // ACKs leave on the SYN timer: consecutive ACKs are at least SYN apart.
    let acks: Vec<SimTime> =
        p.ctrl.iter().filter(|(_, c)| matches!(c, ToSender::Ack(_))).map(|(t, _)| *t).collect();
    assert!(acks.len() > 10);
    assert!(acks.windows(2).all(|w| w[1] - w[0] >= SYN), "ACK spacing below SYN");
    // Every ACK got its ACK2, and the RTT samples are the path's 20 ms (+ serialization).
    assert_eq!(p.sender.stats().ack2_sent, acks.len() as u64);
    // ACK2s queue behind data on the forward path, so samples are 20 ms and up.
    let min = *p.rtt_samples.iter().min().unwrap();
    assert!(min >= Duration::from_millis(20) && min < Duration::from_micros(20_010), "{min:?}");
}

#[test]
fn a_gap_is_reported_at_once_and_repaired() {
    let mut p = UdtPair::new(link(10, Some(100_000_000), None), link(10, None, None), 2);
    p.drop_first_tx_of = Some(5);
    assert!(p.transfer(1_000_000, ms(10_000)));
    p.assert_delivered_exactly(1_000_000);
    // The arrival of packet 6 produced, at that instant, a NAK for exactly packet 5.
    let arrival_of_6 = p.received.iter().find(|(_, s)| *s == 6).unwrap().0;
    let naks: Vec<(SimTime, NakPacket)> = p
        .ctrl
        .iter()
        .filter_map(|(t, c)| if let ToSender::Nak(n) = c { Some((*t, *n)) } else { None })
        .collect();
    assert_eq!(naks.len(), 1, "one loss, one NAK (repaired before the NAK timer)");
    assert_eq!(naks[0].0, arrival_of_6);
    assert_eq!(naks[0].1.ranges(), &[LossRange { start: 5, end: 6 }]);
    // One retransmission: the first packet sent once the NAK arrived (one way, 10 ms later; the
    // NAK ended slow start, so it waits for its pacing slot).
    let rtx: Vec<_> = p.sent.iter().filter(|(_, d)| d.retransmit).collect();
    assert_eq!(rtx.len(), 1);
    assert_eq!(rtx[0].1.seq, 5);
    let nak_arrival = naks[0].0 + Duration::from_millis(10);
    let next = p.sent.iter().find(|(t, _)| *t >= nak_arrival).unwrap();
    assert_eq!(next, rtx[0]);
    assert_eq!(p.receiver.loss_list_packets(), 0);
    assert_eq!(p.sender.stats().packets_reported_lost, 1);
}

#[test]
fn receiver_ack_rules() {
    let mut r = UdtReceiver::new(receiver_cfg(), SimTime::ZERO);
    let data = |seq: u64| DataPacket {
        seq,
        offset: seq * MSS as u64,
        len: MSS,
        timestamp: SimTime::ZERO,
        retransmit: false,
    };
    let acks = |r: &mut UdtReceiver, now: SimTime| {
        r.handle_timeout(now);
        let mut v = Vec::new();
        while let Some(p) = r.poll_transmit(now) {
            if let ToSender::Ack(a) = p {
                v.push(a);
            }
        }
        v
    };
    // Nothing received: no ACK and no timer.
    assert!(acks(&mut r, ms(10)).is_empty());
    assert_eq!(r.poll_timeout(), None);
    for s in 0..3 {
        assert_eq!(r.on_data(ms(12), &data(s)), MSS as u64);
    }
    assert_eq!(r.poll_timeout(), Some(ms(20)));
    let a = acks(&mut r, ms(20));
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].ack_no, a[0].ack_seq), (3, 1));
    // Same ACK number within 2·RTT (RTT 100 ms): suppressed; after 2·RTT: sent again.
    assert!(acks(&mut r, ms(30)).is_empty());
    assert!(acks(&mut r, ms(215)).is_empty());
    let again = acks(&mut r, ms(225));
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].ack_no, again[0].ack_seq), (3, 2));
    // An ACK2 for it: the ACK number is confirmed, no more ACKs, no ACK timer.
    let rtt = r.on_ack2(ms(240), &ccarena_transport::udt::Ack2Packet { ack_seq: 2 }).unwrap();
    assert_eq!(rtt, Duration::from_millis(15));
    assert_eq!(r.rtt(), Duration((100_000_000 * 7 + 15_000_000) / 8));
    assert!(acks(&mut r, ms(1_000)).is_empty());
    assert_eq!(r.poll_timeout(), None);
    // An ACK2 for a forgotten ACK gives nothing.
    assert_eq!(r.on_ack2(ms(1_001), &ccarena_transport::udt::Ack2Packet { ack_seq: 1 }), None);
    // Duplicates are counted, not delivered.
    assert_eq!(r.on_data(ms(1_002), &data(1)), 0);
    assert_eq!(r.stats().duplicate_packets, 1);
}

#[test]
fn periodic_nak_reports_an_unrepaired_loss_after_k_rtt() {
    let mut r = UdtReceiver::new(receiver_cfg(), SimTime::ZERO);
    let data = |seq: u64| DataPacket {
        seq,
        offset: seq * MSS as u64,
        len: MSS,
        timestamp: SimTime::ZERO,
        retransmit: false,
    };
    let _ = r.on_data(ms(1), &data(0));
    let _ = r.on_data(ms(2), &data(3)); // 1 and 2 lost
    let naks = |r: &mut UdtReceiver, now: SimTime| {
        r.handle_timeout(now);
        let mut v = Vec::new();
        while let Some(p) = r.poll_transmit(now) {
            if let ToSender::Nak(n) = p {
                v.push(n);
            }
        }
        v
    };
    let first = naks(&mut r, ms(2));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].ranges(), &[LossRange { start: 1, end: 3 }]);
    assert_eq!(first[0].loss_info_bytes(), 8);
    // NAK timer: period 4·RTT + RTTVar + SYN = 400 + 50 + 10 ms; first fire at 460 ms. The entry
    // was reported at 2 ms and is due again after k·RTT = 200 ms.
    assert_eq!(r.poll_timeout(), Some(ms(10)), "the ACK timer comes first");
    assert!(naks(&mut r, ms(459)).is_empty());
    let second = naks(&mut r, ms(460));
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].ranges(), &[LossRange { start: 1, end: 3 }]);
    // Packet 2 arrives: the entry shrinks to packet 1, keeping its report history (k = 3, so due
    // 300 ms after 460 ms); the next fire at 920 ms reports it.
    let _ = r.on_data(ms(500), &data(2));
    assert_eq!(r.loss_list_packets(), 1);
    assert!(naks(&mut r, ms(919)).is_empty());
    let third = naks(&mut r, ms(920));
    assert_eq!(third[0].ranges(), &[LossRange { start: 1, end: 2 }]);
    assert_eq!(third[0].loss_info_bytes(), 4);
}

#[test]
fn packet_pairs_measure_the_bottleneck() {
    // 100 Mbps bottleneck: 1044 B packets are 83.52 µs apart, 11 973 packets/s.
    // A 2 000-packet window ends slow start without overflowing the 10 000-packet queue.
    let mut scfg = sender_cfg();
    scfg.max_flow_window_packets = 2_000;
    let mut rcfg = receiver_cfg();
    rcfg.max_flow_window_packets = 2_000;
    let mut p = UdtPair::with(scfg, rcfg, link(10, Some(100_000_000), Some(10_000)), link(10, None, None), 3);
    p.sender.app_write(u64::MAX / 4);
    p.pump_sender();
    p.run_until(ms(3_000));
    let b = p.receiver.link_capacity_pps() as f64;
    let expect = 100e6 / (8.0 * (MSS as u64 + HEADER) as f64);
    assert!((b / expect - 1.0).abs() < 0.01, "capacity estimate {b} packets/s, link {expect}");
    assert!(p.receiver.stats().pairs_recorded > 100);
    // The sender's smoothed B follows.
    assert!((p.sender.cc().link_capacity_pps() / expect - 1.0).abs() < 0.02);
    // In rate control, packets 16n and 16n + 1 leave together.
    assert!(!p.sender.cc().in_slow_start());
    let late = p.data_sent_between(ms(2_000), ms(3_000));
    assert_eq!(p.sender.stats().packets_retransmitted, 0);
    let pairs = late
        .windows(2)
        .filter(|w| !w[0].1.retransmit && w[0].1.seq % 16 == 0 && w[1].1.seq == w[0].1.seq + 1)
        .inspect(|w| assert_eq!(w[0].0, w[1].0, "the pair leaves back to back"))
        .count();
    assert!(pairs > 100, "{pairs} pairs");
}

#[test]
fn pacing_sends_one_packet_per_snd_with_pairs_back_to_back() {
    // Put a sender in rate control by hand: an ACK reporting AS = 5 000 packets/s, then a NAK
    // ending slow start: SND = 1/AS = 200 µs.
    let mut s = UdtSender::new(sender_cfg(), controller(9), SimTime::ZERO);
    s.app_write(u64::MAX / 4);
    while s.poll_transmit(SimTime::ZERO).is_some() {}
    let ack = AckPacket {
        ack_seq: 1,
        ack_no: 0,
        rtt: Duration::from_millis(100),
        rtt_var: Duration::from_millis(50),
        buffer_available_packets: 25_000,
        arrival_rate_pps: 5_000,
        link_capacity_pps: 5_000,
    };
    s.on_ack(ms(1), &ack);
    let mut nak = NakPacket::default();
    nak.ranges[0] = LossRange { start: 0, end: 1 };
    nak.count = 1;
    s.on_nak(ms(1), &nak);
    // The window is set on ACKs: one more, within the same SYN (no rate increase).
    s.on_ack(ms(1), &AckPacket { ack_seq: 2, ..ack });
    assert!(!s.cc().in_slow_start());
    assert_eq!(s.cc().snd_period(), Duration::from_micros(200));
    assert_eq!(s.cwnd().pacing_rate_bps, Some(5_000 * MSS as u64 * 8));
    // Drive it for 80 ms with no further feedback (the window, 5 000·0.11 + 16 = 566, is not
    // reached): one packet per 200 µs on average, pairs included.
    let mut t = ms(1);
    let mut out: Vec<(SimTime, DataPacket)> = Vec::new();
    while t < ms(81) {
        while let Some(p) = s.poll_transmit(t) {
            if let ToReceiver::Data(d) = p {
                out.push((t, d));
            }
        }
        t = s.poll_timeout().unwrap();
    }
    let first_new = out.iter().find(|(_, d)| !d.retransmit).unwrap().0;
    assert_eq!(out[0].1.seq, 0, "the reported loss goes first");
    assert!(out[0].1.retransmit);
    let n = out.iter().filter(|(t, _)| *t >= first_new && *t < first_new + Duration::from_millis(40)).count();
    assert!((199..=201).contains(&n), "{n} packets in 40 ms at SND = 200 µs");
    for w in out.windows(2) {
        let ((t0, a), (t1, b)) = (w[0], w[1]);
        if !a.retransmit && a.seq % 16 == 0 {
            assert_eq!((t1, b.seq), (t0, a.seq + 1), "packet pair back to back");
        } else {
            let gap = t1 - t0;
            assert!(
                gap == Duration::from_micros(200) || gap == Duration::from_micros(400),
                "gap {gap:?} after {}",
                a.seq
            );
        }
    }
}

#[test]
fn slow_start_doubles_per_rtt_then_ends_at_the_first_nak() {
    let mut p = UdtPair::new(link(25, Some(100_000_000), Some(60)), link(25, None, None), 5);
    p.sender.app_write(u64::MAX / 4);
    p.pump_sender();
    // Before any loss, the window is 2 + packets acknowledged.
    p.run_until(ms(300));
    assert!(p.sender.cc().in_slow_start());
    assert_eq!(p.sender.cwnd().pacing_rate_bps, None, "unpaced in slow start");
    assert_eq!(p.sender.cwnd().cwnd_bytes, (2 + p.sender.snd_una()) * MSS as u64);
    // The 60-packet queue overflows in slow start; the first NAK ends it.
    p.run_until(ms(3_000));
    assert!(!p.sender.cc().in_slow_start());
    assert!(p.sender.stats().naks_received > 0);
    assert!(p.sender.cwnd().pacing_rate_bps.is_some());
}

#[test]
fn flow_window_stops_new_packets() {
    let mut scfg = sender_cfg();
    scfg.max_flow_window_packets = 20;
    let mut rcfg = receiver_cfg();
    rcfg.max_flow_window_packets = 20;
    let mut p = UdtPair::with(scfg, rcfg, link(50, Some(100_000_000), None), link(50, None, None), 6);
    p.invariant =
        Some(|s| assert!(s.snd_nxt() - s.snd_una() <= 20, "{} unacknowledged", s.snd_nxt() - s.snd_una()));
    assert!(p.transfer(2_000_000, ms(60_000)));
    p.assert_delivered_exactly(2_000_000);
    // Window-limited: about 20 packets per RTT + ACK delay (100 to 110 ms), not the link rate.
    let per_second = p.data_sent_between(ms(3_000), ms(4_000)).len();
    assert!((150..=210).contains(&per_second), "{per_second} packets per second");
}

#[test]
fn exp_timer_resends_everything_unacknowledged_and_backs_off() {
    let mut s = UdtSender::new(sender_cfg(), controller(7), SimTime::ZERO);
    s.app_write(10 * MSS as u64);
    let mut sent = Vec::new();
    while let Some(ToReceiver::Data(d)) = s.poll_transmit(SimTime::ZERO) {
        sent.push(d);
    }
    assert_eq!(sent.len(), 2, "slow start: a window of 2");
    // EXP period: max(4·100 + 50 + 10 ms, 300 ms) = 460 ms, then 2× that.
    assert_eq!(s.poll_timeout(), Some(ms(460)));
    s.handle_timeout(ms(459));
    assert_eq!(s.stats().exp_timeouts, 0);
    s.handle_timeout(ms(460));
    assert_eq!(s.stats().exp_timeouts, 1);
    assert_eq!(s.loss_list_packets(), 2);
    assert!(!s.cc().in_slow_start(), "a timeout ends slow start");
    let mut again = Vec::new();
    let mut t = ms(460);
    while again.len() < 2 {
        match s.poll_transmit(t) {
            Some(ToReceiver::Data(d)) => again.push(d),
            _ => t = s.poll_timeout().unwrap(),
        }
    }
    assert!(again.iter().all(|d| d.retransmit));
    assert_eq!(again.iter().map(|d| d.seq).collect::<Vec<_>>(), vec![0, 1]);
    s.handle_timeout(ms(460 + 919));
    assert_eq!(s.stats().exp_timeouts, 1, "ExpCount 2 doubles the period");
    s.handle_timeout(ms(460 + 920));
    assert_eq!(s.stats().exp_timeouts, 2);
    // An ACK resets the timer and ExpCount.
    let ack = AckPacket {
        ack_seq: 1,
        ack_no: 2,
        rtt: Duration::from_millis(100),
        rtt_var: Duration::from_millis(50),
        buffer_available_packets: 1000,
        arrival_rate_pps: 0,
        link_capacity_pps: 0,
    };
    s.on_ack(ms(2_000), &ack);
    assert_eq!(s.loss_list_packets(), 0);
    // RTT (7·100 + 100)/8 = 100 ms, RTTVar (3·50 + 0)/4 = 37.5 ms: 400 + 37.5 + 10 ms.
    assert_eq!(s.exp_period(), Duration::from_micros(447_500));
}

/// A packet whose stream offset disagrees with the data already held (a forged or corrupt one) is
/// dropped and counted: the delivered count never goes backwards nor past bytes that never came.
/// (The udp sink's fuzz target found a peer moving the delivered count from 15,532,073 back to
/// 58,584 with in-order packets carrying arbitrary offsets.)
#[test]
fn offsets_that_disagree_with_held_data_are_rejected() {
    let mss = MSS as u64;
    let pkt = |seq: u64, offset: u64| DataPacket { seq, offset, len: MSS, timestamp: SimTime::ZERO, retransmit: false };
    let mut r = UdtReceiver::new(receiver_cfg(), SimTime::ZERO);
    assert_eq!(r.on_data(ms(1), &pkt(0, 0)), mss);
    assert_eq!(r.on_data(ms(2), &pkt(1, mss)), mss);
    // In order, but the offset goes back (and forward): dropped, nothing delivered, no state moved.
    assert_eq!(r.on_data(ms(3), &pkt(2, 0)), 0);
    assert_eq!(r.on_data(ms(3), &pkt(2, 1 << 40)), 0);
    assert_eq!((r.delivered_bytes(), r.rcv_nxt()), (2 * mss, 2));
    assert_eq!(r.stats().packets_rejected_offset, 2);
    // The genuine packet 2 is still taken.
    assert_eq!(r.on_data(ms(4), &pkt(2, 2 * mss)), mss);

    // Buffered packets must join their neighbours' offsets: 5 is held, then a 4 or 6 that does
    // not meet it is dropped, and a 3 whose offset goes behind delivery is dropped too.
    assert_eq!(r.on_data(ms(5), &pkt(5, 5 * mss)), 0);
    assert_eq!(r.on_data(ms(5), &pkt(4, 7 * mss)), 0);
    assert_eq!(r.on_data(ms(5), &pkt(6, 99)), 0);
    assert_eq!(r.on_data(ms(5), &pkt(3, mss)), 0);
    assert_eq!(r.stats().packets_rejected_offset, 5);
    assert_eq!(r.loss_list_packets(), 2, "3 and 4 are still missing");
    assert_eq!(r.on_data(ms(6), &pkt(4, 4 * mss)), 0);
    assert_eq!(r.on_data(ms(6), &pkt(3, 3 * mss)), 3 * mss, "3 delivers 3, 4 and 5");
    assert_eq!((r.delivered_bytes(), r.rcv_nxt(), r.loss_list_packets()), (6 * mss, 6, 0));
}

/// A forged range held above a hole does not block the genuine stream: when the in-order packet
/// (which agrees with delivery) contradicts it, the range is put back on the loss list and asked
/// for again, and the retransmitted genuine packets complete delivery.
#[test]
fn a_forged_held_range_is_evicted_and_asked_for_again() {
    let mss = MSS as u64;
    let pkt = |seq: u64, offset: u64| DataPacket { seq, offset, len: MSS, timestamp: SimTime::ZERO, retransmit: false };
    let mut r = UdtReceiver::new(receiver_cfg(), SimTime::ZERO);
    assert_eq!(r.on_data(ms(1), &pkt(0, 0)), mss);
    // A forger gets 2 and 3 in first with offsets of its own.
    assert_eq!(r.on_data(ms(2), &pkt(2, 1_000_000)), 0);
    assert_eq!(r.on_data(ms(2), &pkt(3, 1_000_000 + mss)), 0);
    while r.poll_transmit(ms(2)).is_some() {}
    // The genuine 1 arrives: it is delivered; the forged 2–3 are evicted and NAKed at once.
    assert_eq!(r.on_data(ms(3), &pkt(1, mss)), mss);
    assert_eq!((r.delivered_bytes(), r.rcv_nxt()), (2 * mss, 2));
    assert_eq!(r.stats().packets_evicted_offset, 2);
    assert_eq!(r.loss_list_packets(), 2);
    let naks: Vec<_> = std::iter::from_fn(|| r.poll_transmit(ms(3)))
        .filter_map(|p| match p { ToSender::Nak(n) => Some(n), _ => None })
        .collect();
    assert!(!naks.is_empty(), "the evicted range is reported in a NAK at once");
    // The genuine retransmissions complete the stream.
    assert_eq!(r.on_data(ms(4), &pkt(3, 3 * mss)), 0);
    assert_eq!(r.on_data(ms(4), &pkt(2, 2 * mss)), 2 * mss);
    assert_eq!((r.delivered_bytes(), r.rcv_nxt(), r.loss_list_packets()), (4 * mss, 4, 0));
}
