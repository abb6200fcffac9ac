//! Test harness: a sender and a receiver joined by two in-memory one-way channels, with no
//! simulator. Each channel has a propagation delay, an optional serialization rate and queue
//! limit, and seeded random loss, reordering and duplication from a splitmix64 generator.
//!
//! The harness checks, as it runs, that every byte the receiver delivers to the application was
//! carried by some data segment that actually reached it.

#![allow(dead_code)]

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use ccarena_cc::{
    new_controller, AckSample, CaState, CongestionControl, CwndState, Duration, LossEvent, Params,
    RateSample, SimTime,
};
use ccarena_transport::{
    AckSegment, DataSegment, Receiver, ReceiverConfig, RecoveryMode, Sender, SenderConfig,
};

/// MSS used by the tests unless they say otherwise.
pub const MSS: u32 = 1000;

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for fault injection.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// One direction of the path.
#[derive(Clone, Copy, Debug)]
pub struct LinkCfg {
    pub delay: Duration,
    /// Serialization rate of the payload (bits/s); `None` for infinitely fast.
    pub rate_bps: Option<u64>,
    /// Packets waiting for serialization beyond which arrivals are dropped (tail drop).
    pub queue_limit: Option<usize>,
    /// Probability a packet is lost.
    pub loss: f64,
    /// Probability a packet is delayed by an extra uniform [0, reorder_extra) (reordering).
    pub reorder: f64,
    pub reorder_extra: Duration,
    /// Probability a packet is delivered twice.
    pub dup: f64,
}

impl LinkCfg {
    pub fn clean(delay: Duration) -> LinkCfg {
        LinkCfg {
            delay,
            rate_bps: None,
            queue_limit: None,
            loss: 0.0,
            reorder: 0.0,
            reorder_extra: Duration::ZERO,
            dup: 0.0,
        }
    }
}

struct Entry<T> {
    at: SimTime,
    order: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.order) == (o.at, o.order)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.order).cmp(&(self.at, self.order))
    }
}

/// A one-way channel.
pub struct Channel<T> {
    pub cfg: LinkCfg,
    rng: Rng,
    heap: BinaryHeap<Entry<T>>,
    order: u64,
    busy_until: SimTime,
    departures: VecDeque<SimTime>,
    pub sent: u64,
    pub dropped: u64,
}

impl<T: Copy> Channel<T> {
    pub fn new(cfg: LinkCfg, seed: u64) -> Channel<T> {
        Channel {
            cfg,
            rng: Rng::new(seed),
            heap: BinaryHeap::new(),
            order: 0,
            busy_until: SimTime::ZERO,
            departures: VecDeque::new(),
            sent: 0,
            dropped: 0,
        }
    }

    pub fn send(&mut self, now: SimTime, item: T, bytes: u64) {
        self.sent += 1;
        let mut depart = now;
        if let Some(rate) = self.cfg.rate_bps {
            while self.departures.front().is_some_and(|d| *d <= now) {
                self.departures.pop_front();
            }
            if self
                .cfg
                .queue_limit
                .is_some_and(|l| self.departures.len() > l)
            {
                self.dropped += 1;
                return;
            }
            depart = now.max(self.busy_until) + Duration::transmission(bytes.max(1), rate);
            self.busy_until = depart;
            self.departures.push_back(depart);
        }
        if self.rng.chance(self.cfg.loss) {
            self.dropped += 1;
            return;
        }
        let copies = if self.rng.chance(self.cfg.dup) { 2 } else { 1 };
        for _ in 0..copies {
            let mut at = depart + self.cfg.delay;
            if self.rng.chance(self.cfg.reorder) {
                at += Duration(self.rng.below(self.cfg.reorder_extra.0));
            }
            self.order += 1;
            self.heap.push(Entry {
                at,
                order: self.order,
                item,
            });
        }
    }

    pub fn next_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.at)
    }

    pub fn pop_due(&mut self, now: SimTime) -> Option<T> {
        if self.heap.peek().is_some_and(|e| e.at <= now) {
            self.heap.pop().map(|e| e.item)
        } else {
            None
        }
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// The sender's view after one ACK.
#[derive(Clone, Copy, Debug)]
pub struct AckTrace {
    pub now: SimTime,
    pub ack: u64,
    pub state: CaState,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub in_flight: u64,
    pub rate: Option<RateSample>,
}

/// What happens to a data segment on its way (besides the channel's random faults).
pub enum Fate {
    Deliver,
    Drop,
    MarkCe,
}

pub type DataFilter = Box<dyn FnMut(&DataSegment) -> Fate>;

/// Two endpoints and the path between them.
pub struct Pair {
    pub sender: Sender,
    pub receiver: Receiver,
    pub now: SimTime,
    pub data: Channel<DataSegment>,
    pub acks: Channel<AckSegment>,
    pub filter: DataFilter,
    /// Every segment the sender emitted, with its send time.
    pub sent_log: Vec<(SimTime, DataSegment)>,
    /// Every ACK the receiver emitted, with its send time.
    pub ack_log: Vec<(SimTime, AckSegment)>,
    /// Sender state after every ACK.
    pub trace: Vec<AckTrace>,
    /// In-order delivery ranges reported by the receiver.
    pub delivered: Vec<(u64, u64)>,
    /// carried[i]: byte i was in some segment that reached the receiver.
    carried: Vec<bool>,
    pub events: u64,
    /// (seq, ts_val) of every segment that reached the receiver.
    pub received: Vec<(u64, SimTime)>,
}

pub fn sender_cfg(recovery: RecoveryMode) -> SenderConfig {
    SenderConfig {
        mss_bytes: MSS,
        initial_cwnd_bytes: 10 * MSS as u64,
        min_rto: Duration::from_millis(200),
        initial_rto: Duration::from_secs(1),
        max_rto: Duration::from_secs(60),
        clock_granularity: Duration::from_millis(1),
        recovery,
        dupthresh: 3,
        ecn: ccarena_transport::SenderEcn::Off,
        initial_rwnd_bytes: None,
        sndbuf_bytes: None,
    }
}

/// The receiver a `mode` sender talks to: D-SACK on for `linux` (as the simulator does).
pub fn receiver_cfg_for(mode: RecoveryMode) -> ReceiverConfig {
    ReceiverConfig {
        dsack: mode == RecoveryMode::Linux,
        ..receiver_cfg()
    }
}

pub fn receiver_cfg() -> ReceiverConfig {
    ReceiverConfig {
        mss_bytes: MSS,
        delayed_ack: Duration::from_millis(40),
        ack_every_segments: 2,
        ecn: ccarena_transport::EcnMode::Off,
        rcvbuf_bytes: None,
        dsack: false,
    }
}

/// The Reno-family controller whose name matches the recovery mode (Reno for sack/prr).
pub fn controller_for(mode: RecoveryMode) -> Box<dyn CongestionControl> {
    let name = match mode {
        RecoveryMode::Tahoe => "tahoe",
        RecoveryMode::Reno => "reno",
        RecoveryMode::NewReno => "newreno",
        RecoveryMode::Sack | RecoveryMode::Prr | RecoveryMode::Linux => "reno",
    };
    new_controller(name, &Params::default()).expect("reno-family controller")
}

impl Pair {
    pub fn new(
        scfg: SenderConfig,
        cc: Box<dyn CongestionControl>,
        rcfg: ReceiverConfig,
        fwd: LinkCfg,
        rev: LinkCfg,
        seed: u64,
    ) -> Pair {
        Pair {
            sender: Sender::new(scfg, cc, SimTime::ZERO),
            receiver: Receiver::new(rcfg),
            now: SimTime::ZERO,
            data: Channel::new(fwd, seed ^ 0xD1B5_4A32_D192_ED03),
            acks: Channel::new(rev, seed ^ 0x8CB9_2BA7_2F3D_8DD7),
            filter: Box::new(|_| Fate::Deliver),
            sent_log: Vec::new(),
            ack_log: Vec::new(),
            trace: Vec::new(),
            delivered: Vec::new(),
            carried: Vec::new(),
            events: 0,
            received: Vec::new(),
        }
    }

    /// A pair with the default configs for `mode` and clean links of `one_way` delay.
    pub fn simple(mode: RecoveryMode, one_way: Duration) -> Pair {
        Pair::new(
            sender_cfg(mode),
            controller_for(mode),
            receiver_cfg_for(mode),
            LinkCfg::clean(one_way),
            LinkCfg::clean(one_way),
            1,
        )
    }

    /// Let the sender send everything it may now.
    pub fn pump(&mut self) {
        while let Some(seg) = self.sender.poll_transmit(self.now) {
            assert!(seg.len > 0 && seg.len <= self.sender.config().mss_bytes);
            assert!(
                seg.end() <= self.sender.bytes_offered(),
                "sent beyond what was offered"
            );
            self.sent_log.push((self.now, seg));
            let mut seg = seg;
            match (self.filter)(&seg) {
                Fate::Drop => continue,
                Fate::MarkCe => seg.ecn = ccarena_transport::Ecn::Ce,
                Fate::Deliver => {}
            }
            self.data.send(self.now, seg, seg.len as u64);
        }
    }

    fn receive(&mut self, seg: DataSegment) {
        self.received.push((seg.seq, seg.ts_val));
        let end = seg.end() as usize;
        if self.carried.len() < end {
            self.carried.resize(end, false);
        }
        for b in &mut self.carried[seg.seq as usize..end] {
            *b = true;
        }
        let before = self.receiver.rcv_nxt();
        let d = self.receiver.on_segment(self.now, &seg);
        let after = self.receiver.rcv_nxt();
        assert_eq!(after - before, d, "returned count matches rcv_nxt advance");
        if d > 0 {
            assert!(
                self.carried[before as usize..after as usize]
                    .iter()
                    .all(|b| *b),
                "receiver delivered [{before}, {after}) but not every byte of it arrived"
            );
            match self.delivered.last_mut() {
                Some(last) if last.1 == before => last.1 = after,
                _ => self.delivered.push((before, after)),
            }
        }
        if let Some(a) = self.receiver.poll_ack(self.now) {
            self.send_ack(a);
        }
    }

    fn send_ack(&mut self, a: AckSegment) {
        self.ack_log.push((self.now, a));
        self.acks.send(self.now, a, 40 + 8 * a.sack_count as u64);
    }

    /// Process the next instant at which anything happens. False when nothing is pending.
    pub fn step(&mut self) -> bool {
        let t = [
            self.data.next_time(),
            self.acks.next_time(),
            self.sender.poll_timeout(),
            self.receiver.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = t else { return false };
        self.now = self.now.max(t);
        self.events += 1;
        while let Some(seg) = self.data.pop_due(self.now) {
            self.receive(seg);
        }
        while let Some(a) = self.acks.pop_due(self.now) {
            let _ = self.sender.on_ack(self.now, &a);
            let cw = self.sender.cwnd();
            self.trace.push(AckTrace {
                now: self.now,
                ack: a.ack,
                state: self.sender.ca_state(),
                cwnd: cw.cwnd_bytes,
                ssthresh: cw.ssthresh_bytes,
                in_flight: self.sender.in_flight_bytes(),
                rate: self.sender.last_rate_sample().copied(),
            });
            self.pump();
        }
        self.receiver.handle_timeout(self.now);
        if let Some(a) = self.receiver.poll_ack(self.now) {
            self.send_ack(a);
        }
        self.sender.handle_timeout(self.now);
        self.pump();
        true
    }

    /// Offer `bytes` and run until the sender is complete or `limit` passes. True if complete.
    pub fn transfer(&mut self, bytes: u64, limit: SimTime) -> bool {
        self.sender.app_write(bytes);
        self.pump();
        while !self.sender.is_complete() && self.now <= limit {
            if !self.step() {
                break;
            }
            assert!(self.events < 5_000_000, "runaway event loop");
        }
        self.sender.is_complete()
    }

    /// Run until `t` (inclusive) or nothing is pending.
    pub fn run_until(&mut self, t: SimTime) {
        loop {
            let next = [
                self.data.next_time(),
                self.acks.next_time(),
                self.sender.poll_timeout(),
                self.receiver.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(n) if n <= t => {
                    self.step();
                }
                _ => break,
            }
        }
        self.now = self.now.max(t);
    }

    /// The delivered ranges concatenate to exactly [0, n).
    pub fn assert_delivered_exactly(&self, n: u64) {
        let mut expect = 0;
        for &(a, b) in &self.delivered {
            assert_eq!(
                a, expect,
                "delivered ranges not contiguous: {:?}",
                self.delivered
            );
            expect = b;
        }
        assert_eq!(expect, n, "delivered {expect} of {n} bytes");
        assert_eq!(self.receiver.rcv_nxt(), n);
    }
}

/// A controller that owns the window: fixed cwnd and pacing rate, via `cong_control`.
#[derive(Debug, Clone)]
pub struct FixedRate {
    pub cwnd_bytes: u64,
    pub rate_bps: u64,
}

impl CongestionControl for FixedRate {
    fn name(&self) -> &'static str {
        "fixed-rate"
    }

    fn init(&mut self, st: &mut CwndState, _now: SimTime) {
        st.cwnd_bytes = self.cwnd_bytes;
        st.pacing_rate_bps = Some(self.rate_bps);
    }

    fn cong_avoid(&mut self, _st: &mut CwndState, _ack: &AckSample) {}

    fn ssthresh(&mut self, st: &CwndState, _ev: &LossEvent) -> u64 {
        st.ssthresh_bytes
    }

    fn cong_control(&mut self, st: &mut CwndState, _ack: &AckSample, _rs: &RateSample) -> bool {
        st.cwnd_bytes = self.cwnd_bytes;
        st.pacing_rate_bps = Some(self.rate_bps);
        true
    }
}

/// An ACK built by hand: cumulative `ack`, SACK `blocks` (at most three), echoing `ts_ecr`
/// (received at `ts_ecr` too, so the one-way delay reads zero).
pub fn ack_seg(ack: u64, blocks: &[(u64, u64)], ts_ecr: SimTime) -> AckSegment {
    let mut sack = [ccarena_transport::SackBlock::default(); ccarena_transport::MAX_SACK_BLOCKS];
    for (i, &(start, end)) in blocks.iter().enumerate() {
        sack[i] = ccarena_transport::SackBlock { start, end };
    }
    AckSegment {
        ack,
        sack,
        sack_count: blocks.len() as u8,
        ts_ecr,
        ts_recv: ts_ecr,
        ece: false,
        accecn: None,
        rwnd_bytes: u64::MAX,
    }
}

/// Every segment the sender will send at `now`.
pub fn drain(s: &mut Sender, now: SimTime) -> Vec<DataSegment> {
    let mut v = Vec::new();
    while let Some(seg) = s.poll_transmit(now) {
        v.push(seg);
        assert!(v.len() < 100_000, "poll_transmit never returned None");
    }
    v
}

pub fn ms(v: u64) -> SimTime {
    SimTime(v * 1_000_000)
}

/// Linux's MSS on this project's kernel runs (1448 payload bytes: 1500 less IP, TCP and the
/// timestamp option), for the tests that replay measured Linux receivers.
pub const LINUX_MSS: u32 = 1448;

/// Data segment `n` of a Linux-MSS stream: bytes `n·1448 .. (n+1)·1448`, Not-ECT, sent at 0.
pub fn linux_seg(n: u64) -> DataSegment {
    let len = LINUX_MSS;
    DataSegment { seq: n * len as u64, len, ts_val: SimTime::ZERO, ecn: ccarena_transport::Ecn::NotEct, cwr: false, retransmit: false }
}

/// The shared test receiver (delayed ACK 40 ms, every 2nd segment) with Linux's MSS and
/// D-SACK, as the `linux` host's receivers run.
pub fn linux_receiver_cfg() -> ReceiverConfig {
    ReceiverConfig { mss_bytes: LINUX_MSS, dsack: true, ..receiver_cfg() }
}
