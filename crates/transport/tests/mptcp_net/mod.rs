//! Test network for MPTCP: an [`MptcpSender`] and an [`MptcpReceiver`] joined by one pair of
//! one-way channels per subflow (the transport tests' [`Channel`]: delay, optional rate and
//! queue, seeded loss and reordering), and a per-subflow time after which its path drops
//! everything in both directions (a link going down).
//!
//! As it runs it checks: every segment lies inside the offered data and below the connection
//! window's right edge; every transmission of a subflow segment (retransmissions included)
//! carries the same DSN mapping; the receiver's returned counts match its DATA_ACK's advance,
//! and it delivers only bytes some segment carried to it.

#![allow(dead_code)]

use std::collections::HashMap;

use ccarena_cc::coupled::Coupling;
use ccarena_cc::{new_controller, CongestionControl, Duration, Params, SimTime};
use ccarena_transport::mptcp::{DssAck, DssData, MptcpConfig, MptcpReceiver, MptcpSender, Scheduler};
use ccarena_transport::RecoveryMode;

use crate::support::{receiver_cfg_for, sender_cfg, Channel, LinkCfg};

/// A connection config: `n` subflows, Linux recovery, Reno-sized defaults, unlimited buffers,
/// no join delay, stale after 4 RTOs.
pub fn config(n: u8, scheduler: Scheduler) -> MptcpConfig {
    let mut sender = sender_cfg(RecoveryMode::Linux);
    sender.max_rto = Duration::from_secs(4);
    MptcpConfig {
        sender,
        receiver: receiver_cfg_for(RecoveryMode::Linux),
        subflows: n,
        coupling: Coupling::Uncoupled,
        scheduler,
        join_delay: Duration::ZERO,
        rcvbuf_bytes: None,
        sndbuf_bytes: None,
        stale_loss_count: 4,
        opportunistic: false,
    }
}

/// One Reno controller per subflow.
pub fn renos(n: u8) -> Vec<Box<dyn CongestionControl>> {
    (0..n).map(|_| new_controller("reno", &Params::default()).unwrap()).collect()
}

/// The network and its two ends.
pub struct Net {
    pub tx: MptcpSender,
    pub rx: MptcpReceiver,
    pub now: SimTime,
    pub data: Vec<Channel<DssData>>,
    pub acks: Vec<Channel<DssAck>>,
    /// Path `i` drops everything sent at or after this time.
    pub dead_from: Vec<Option<SimTime>>,
    /// Every data segment sent, with its time.
    pub sent_log: Vec<(SimTime, DssData)>,
    /// Every ACK sent, with its time.
    pub ack_log: Vec<(SimTime, DssAck)>,
    /// (subflow, subflow seq) → (dsn, len) of its first transmission.
    mappings: HashMap<(u8, u64), (u64, u32)>,
    /// carried[b]: connection byte b arrived in some segment.
    carried: Vec<bool>,
    /// Connection bytes the receiver delivered.
    pub delivered: u64,
    /// Largest `data_nxt − data_una` seen at the sender (connection bytes outstanding).
    pub max_outstanding: u64,
}

impl Net {
    /// Subflow `i` runs over `paths[i]` = (data link, ACK link); `seed` drives the faults.
    pub fn new(cfg: MptcpConfig, ccs: Vec<Box<dyn CongestionControl>>, paths: &[(LinkCfg, LinkCfg)], seed: u64) -> Net {
        assert_eq!(paths.len(), cfg.subflows as usize);
        let mix = |i: usize, k: u64| seed ^ k.wrapping_mul(i as u64 + 1);
        Net {
            tx: MptcpSender::new(cfg, ccs, SimTime::ZERO),
            rx: MptcpReceiver::new(cfg),
            now: SimTime::ZERO,
            data: paths.iter().enumerate().map(|(i, p)| Channel::new(p.0, mix(i, 0xD1B5_4A32_D192_ED03))).collect(),
            acks: paths.iter().enumerate().map(|(i, p)| Channel::new(p.1, mix(i, 0x8CB9_2BA7_2F3D_8DD7))).collect(),
            dead_from: vec![None; paths.len()],
            sent_log: Vec::new(),
            ack_log: Vec::new(),
            mappings: HashMap::new(),
            carried: Vec::new(),
            delivered: 0,
            max_outstanding: 0,
        }
    }

    fn dead(&self, i: usize) -> bool {
        self.dead_from[i].is_some_and(|t| self.now >= t)
    }

    /// Let the sender send all it may now.
    pub fn pump(&mut self) {
        while let Some(d) = self.tx.poll_transmit(self.now) {
            let mss = self.tx.config().sender.mss_bytes;
            assert!(d.seg.len > 0 && d.seg.len <= mss, "segment of {} bytes", d.seg.len);
            let dsn_end = d.dsn + d.seg.len as u64;
            assert!(dsn_end <= self.tx.bytes_offered(), "DSN beyond the offered data");
            assert!(dsn_end <= self.tx.data_right_edge(), "DSN beyond the connection window");
            let m = *self.mappings.entry((d.subflow, d.seg.seq)).or_insert((d.dsn, d.seg.len));
            assert_eq!(m, (d.dsn, d.seg.len), "a retransmission carries its first mapping");
            self.sent_log.push((self.now, d));
            self.max_outstanding = self.max_outstanding.max(self.tx.data_nxt() - self.tx.data_una());
            let i = d.subflow as usize;
            if !self.dead(i) {
                self.data[i].send(self.now, d, d.seg.len as u64 + 40);
            }
        }
    }

    fn receive(&mut self, d: DssData) {
        let (start, end) = (d.dsn as usize, d.dsn as usize + d.seg.len as usize);
        if self.carried.len() < end {
            self.carried.resize(end, false);
        }
        self.carried[start..end].iter_mut().for_each(|b| *b = true);
        let before = self.rx.data_rcv_nxt();
        let got = self.rx.on_segment(self.now, &d);
        let after = self.rx.data_rcv_nxt();
        assert_eq!(after - before, got, "returned count matches the DATA_ACK's advance");
        assert!(
            self.carried[before as usize..after as usize].iter().all(|b| *b),
            "delivered [{before}, {after}) but not every byte of it arrived"
        );
        self.delivered += got;
        self.send_acks();
    }

    fn send_acks(&mut self) {
        while let Some(a) = self.rx.poll_ack(self.now) {
            self.ack_log.push((self.now, a));
            let i = a.subflow as usize;
            if !self.dead(i) {
                self.acks[i].send(self.now, a, 40);
            }
        }
    }

    /// Process the next instant at which anything happens. False when nothing is pending.
    pub fn step(&mut self) -> bool {
        let t = self
            .data
            .iter()
            .map(Channel::next_time)
            .chain(self.acks.iter().map(Channel::next_time))
            .chain([self.tx.poll_timeout(), self.rx.poll_timeout()])
            .flatten()
            .min();
        let Some(t) = t else { return false };
        self.now = self.now.max(t);
        for i in 0..self.data.len() {
            while let Some(d) = self.data[i].pop_due(self.now) {
                self.receive(d);
            }
        }
        for i in 0..self.acks.len() {
            while let Some(a) = self.acks[i].pop_due(self.now) {
                let _ = self.tx.on_ack(self.now, &a);
                self.pump();
            }
        }
        self.rx.handle_timeout(self.now);
        self.send_acks();
        self.tx.handle_timeout(self.now);
        self.pump();
        true
    }

    /// Run until `until` or nothing is pending.
    pub fn run_until(&mut self, until: SimTime) {
        while self.next_time().is_some_and(|t| t <= until) {
            self.step();
        }
        self.now = self.now.max(until);
    }

    fn next_time(&self) -> Option<SimTime> {
        self.data
            .iter()
            .map(Channel::next_time)
            .chain(self.acks.iter().map(Channel::next_time))
            .chain([self.tx.poll_timeout(), self.rx.poll_timeout()])
            .flatten()
            .min()
    }

    /// Offer `bytes`, stop, and run until complete or `limit`. True if complete.
    pub fn transfer(&mut self, bytes: u64, limit: SimTime) -> bool {
        self.tx.app_write(bytes);
        self.pump();
        while !self.tx.is_complete() && self.now < limit && self.step() {}
        self.tx.is_complete()
    }

    /// Connection bytes sent on subflow `i` as new (non-retransmitted) segments.
    pub fn new_bytes_on(&self, i: u8) -> u64 {
        self.sent_log.iter().filter(|(_, d)| d.subflow == i && !d.seg.retransmit).map(|(_, d)| d.seg.len as u64).sum()
    }
}
