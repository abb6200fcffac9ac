//! The engine's one view of a reliable transfer's two ends, whatever the transport.
//!
//! TCP ([`TcpFlow`]) and UDT ([`UdtFlow`]) are both sans-IO pairs of a sender and a receiver that
//! take packets and timer ticks and emit packets and a next deadline. [`Endpoint`] is that shape;
//! the engine drives every transfer through it with one send loop, one timer handler and one
//! arrival path (`engine.rs`), so the two transports cannot drift apart in how they are driven.

use ccarena_cc::{Duration, SimTime};
use ccarena_transport::quic::AckFrame;
use ccarena_transport::udt::{ToReceiver, ToSender};

use crate::flow::{MptcpFlow, QuicFlow, TcpFlow, Transfer, UdtFlow};
use crate::packet::{Packet, Payload};
use crate::pool::BoxPool;

/// Bytes a SACK option adds to an ACK: 2 for kind and length, 8 per block (RFC 2018 §3).
const SACK_OPTION_HEADER_BYTES: u32 = 2;
const SACK_BLOCK_BYTES: u32 = 8;
/// Bytes the AccECN option adds to an ACK that carries it: kind, length and three 24-bit byte
/// counters (RFC 9768 §3.2.3). The ACE field lives in the header's flags: no bytes.
const ACCECN_OPTION_BYTES: u32 = 11;

/// One end of a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The data sender, on the transfer's `src` host.
    Sender,
    /// The data receiver, on the transfer's `dst` host.
    Receiver,
}

impl Side {
    /// The host this end lives on.
    pub fn host(self, t: &Transfer) -> u32 {
        match self {
            Side::Sender => t.src,
            Side::Receiver => t.dst,
        }
    }

    /// The host this end sends to (the other end's).
    pub fn peer_host(self, t: &Transfer) -> u32 {
        match self {
            Side::Sender => t.dst,
            Side::Receiver => t.src,
        }
    }

    /// The time of this end's earliest pending timer entry in the heap (lazy timers, `event.rs`).
    pub fn timer_at(self, t: &mut Transfer) -> &mut SimTime {
        match self {
            Side::Sender => &mut t.sender_timer_at,
            Side::Receiver => &mut t.receiver_timer_at,
        }
    }
}

/// A reliable transfer as the engine drives it: a sans-IO sender and receiver pair plus the
/// engine's bookkeeping ([`Transfer`]).
pub trait Endpoint {
    /// Hosts, sizes, timers and delivery counters.
    fn transfer(&mut self) -> &mut Transfer;

    /// The next packet `side` sends at `now`, as (headers, wire size in bytes); `None` when it
    /// has nothing more to send now.
    /// `acks` is the run's pool of TCP ACK boxes ([`AckBoxes`]).
    fn poll_packet(&mut self, side: Side, now: SimTime, acks: &mut AckBoxes) -> Option<(Payload, u32)>;

    /// When `side` next needs [`Endpoint::handle_timeout`], if ever.
    fn poll_timeout(&self, side: Side) -> Option<SimTime>;

    /// Let `side` act on its due timers.
    fn handle_timeout(&mut self, side: Side, now: SimTime);

    /// Hand `payload`, which reached its destination host at `now`, to the end it is for; returns
    /// that end (whose output the engine then sends). Panics on another transport's payload (a
    /// routing bug: packets carry their flow's index). Takes the payload so its box, if any,
    /// can be reused (a TCP ACK's goes back to `acks`).
    fn receive(&mut self, now: SimTime, payload: Payload, acks: &mut AckBoxes) -> Side;

    /// The application offers `bytes` more bytes.
    fn app_write(&mut self, bytes: u64);

    /// The application stops offering data.
    fn app_stop(&mut self);
}

/// `with_endpoint!(flow, ep => body)`: run `body` with `ep` bound to the [`Endpoint`] of `flow`
/// (a `&mut Flow` of a transfer), dispatched statically per transport so the per-packet path
/// pays no virtual call. Panics for a CBR flow, which has no transport endpoints, and for a
/// transfer that has not started (no packet or timer reaches it before then).
macro_rules! with_endpoint {
    ($flow:expr, $ep:ident => $body:expr) => {
        match $flow {
            $crate::flow::Flow::Tcp(t) => {
                let $ep = &mut **t;
                $body
            }
            $crate::flow::Flow::Udt(u) => {
                let $ep = &mut **u;
                $body
            }
            $crate::flow::Flow::Mptcp(m) => {
                let $ep = &mut **m;
                $body
            }
            $crate::flow::Flow::Quic(q) => {
                let $ep = &mut **q;
                $body
            }
            $crate::flow::Flow::Cbr(_) => unreachable!("a CBR flow has no transport endpoints"),
            $crate::flow::Flow::Idle { .. } => unreachable!("a transfer has endpoints from its start"),
        }
    };
}
pub(crate) use with_endpoint;

/// Collect into `out` every packet `side` of `ep` (flow index `flow`) sends at `now`, and note its
/// next deadline. Returns the host the packets leave from and, if the heap needs a new timer
/// entry for `side`, its time (see `timer_to_arm`).
#[inline]
pub fn drain<E: Endpoint>(
    ep: &mut E,
    side: Side,
    now: SimTime,
    flow: u32,
    out: &mut Vec<Packet>,
    acks: &mut AckBoxes,
) -> (u32, Option<SimTime>) {
    let dst = side.peer_host(ep.transfer());
    while let Some((payload, size_bytes)) = ep.poll_packet(side, now, acks) {
        out.push(Packet { flow, dst, size_bytes, payload });
    }
    let want = ep.poll_timeout(side);
    let t = ep.transfer();
    (side.host(t), timer_to_arm(side.timer_at(t), want, now))
}

/// When to schedule an endpoint's timer event, if a new entry is needed: `want` (the endpoint's
/// `poll_timeout`) clamped to at least 1 ns after `now`, so a timer that stays due cannot spin at
/// one instant, and only when earlier than the endpoint's earliest pending entry `armed_at`, which
/// is then updated. Later deadlines need no entry: the pending one fires early and re-arms (lazy
/// timers, see `event.rs`).
fn timer_to_arm(armed_at: &mut SimTime, want: Option<SimTime>, now: SimTime) -> Option<SimTime> {
    let at = want?.max(now + Duration(1));
    if at < *armed_at {
        *armed_at = at;
        Some(at)
    } else {
        None
    }
}

/// Wire bytes of the AccECN option, when `ack` carries one.
fn accecn_option_bytes(ack: &ccarena_transport::AckSegment) -> u32 {
    if ack.accecn.is_some_and(|f| f.option.is_some()) {
        ACCECN_OPTION_BYTES
    } else {
        0
    }
}

/// Wire bytes of SACK blocks on an ACK that carries `sack_count` of them.
fn sack_option_bytes(sack_count: u8) -> u32 {
    if sack_count > 0 {
        SACK_OPTION_HEADER_BYTES + SACK_BLOCK_BYTES * sack_count as u32
    } else {
        0
    }
}

/// Boxes of TCP ACKs that reached their sender, reused by the next ACK any receiver sends: one
/// pool for the run, last in first out, so the box an ACK arrived in, still in the cache, carries
/// the next ACK of whatever flow sends one; a pool per flow would hand out a box untouched since
/// that flow's previous ACK (at 10,000 flows, a cache miss or two per ACK). The boxes' contents
/// are overwritten whole, so which box carries an ACK changes nothing else.
#[derive(Debug, Default)]
pub struct AckBoxes(pub BoxPool<ccarena_transport::AckSegment>);

/// Record the completion time of a finite transfer once its sender has everything acknowledged;
/// true on the ACK that completed it.
fn note_completion(t: &mut Transfer, now: SimTime, sender_complete: bool) -> bool {
    let done = t.completed_at.is_none() && t.bytes.is_some() && sender_complete;
    if done {
        t.completed_at = Some(now);
    }
    done
}

/// What the engine notes when an ACK reached an MPTCP or QUIC sender: the ACK's RTT sample
/// (`rtt`, if it gave one) into the flow's histogram, and the completion of a finite transfer;
/// true on the ACK that completed it. (TCP's `receive` does the same in line, in the branch
/// that also feeds its receiver's RTT estimate: the hottest arm, left as it was.)
#[inline(always)]
fn note_ack(t: &mut Transfer, now: SimTime, rtt: Option<Duration>, sender_complete: bool) -> bool {
    if let Some(rtt) = rtt {
        t.rtt.record(rtt.as_nanos());
    }
    note_completion(t, now, sender_complete)
}

/// The [`Endpoint`] methods that every transport's flow implements alike: `transfer`, its own
/// field, and the rest by handing the call to its `sender` or `receiver` (every transport's ends
/// have `poll_timeout`, `handle_timeout`, `app_write` and `app_stop` of the same meaning; they
/// share no trait, so one definition is expanded into each impl).
macro_rules! delegate_to_ends {
    () => {
        fn transfer(&mut self) -> &mut Transfer {
            &mut self.transfer
        }

        #[inline]
        fn poll_timeout(&self, side: Side) -> Option<SimTime> {
            match side {
                Side::Sender => self.sender.poll_timeout(),
                Side::Receiver => self.receiver.poll_timeout(),
            }
        }

        fn handle_timeout(&mut self, side: Side, now: SimTime) {
            match side {
                Side::Sender => self.sender.handle_timeout(now),
                Side::Receiver => self.receiver.handle_timeout(now),
            }
        }

        fn app_write(&mut self, bytes: u64) {
            self.sender.app_write(bytes);
        }

        fn app_stop(&mut self) {
            self.sender.app_stop();
        }
    };
}

impl Endpoint for TcpFlow {
    #[inline]
    fn poll_packet(&mut self, side: Side, now: SimTime, acks: &mut AckBoxes) -> Option<(Payload, u32)> {
        match side {
            Side::Sender => {
                let seg = self.sender.poll_transmit(now)?;
                Some((Payload::Data(seg), seg.len + self.transfer.header_bytes))
            }
            Side::Receiver => {
                let ack = self.receiver.poll_ack(now)?;
                let option_bytes = sack_option_bytes(ack.sack_count) + accecn_option_bytes(&ack);
                self.acks_sent += 1;
                let boxed = acks.0.take(ack);
                Some((Payload::Ack(boxed), self.transfer.ack_bytes + option_bytes))
            }
        }
    }

    delegate_to_ends!();

    fn receive(&mut self, now: SimTime, payload: Payload, acks: &mut AckBoxes) -> Side {
        match payload {
            Payload::Data(seg) => {
                self.transfer.delivered_bytes += self.receiver.on_segment(now, &seg);
                Side::Receiver
            }
            Payload::Ack(ack) => {
                let outcome = self.sender.on_ack(now, &ack);
                acks.0.put(ack);
                if let Some(rtt) = outcome.rtt {
                    self.transfer.rtt.record(rtt.as_nanos());
                    // The receiver's RTT estimate (autotuning's period, SACK compression's
                    // bound): Linux's receiver times each round trip from the timestamp its
                    // ACK gets echoed, one sample per echo, the queue the data waited in
                    // included — the round trip this ACK closes, give or take one RTT.
                    self.receiver.on_rcv_rtt_sample(rtt);
                }
                if note_completion(&mut self.transfer, now, self.sender.is_complete()) {
                    self.sender.release_storage();
                }
                Side::Sender
            }
            other => unreachable!("TCP flow got {other:?}"),
        }
    }
}

impl Endpoint for UdtFlow {
    #[inline]
    fn poll_packet(&mut self, side: Side, now: SimTime, _acks: &mut AckBoxes) -> Option<(Payload, u32)> {
        let t = &self.transfer;
        match side {
            Side::Sender => {
                let p = self.sender.poll_transmit(now)?;
                let size_bytes = match p {
                    ToReceiver::Data(d) => d.len + t.header_bytes,
                    ToReceiver::Ack2(_) => t.header_bytes,
                };
                Some((Payload::UdtToReceiver(p), size_bytes))
            }
            Side::Receiver => {
                let p = self.receiver.poll_transmit(now)?;
                let size_bytes = match p {
                    ToSender::Ack(_) => t.ack_bytes,
                    ToSender::Nak(n) => t.header_bytes + n.loss_info_bytes(),
                };
                Some((Payload::UdtToSender(self.ack_boxes.take(p)), size_bytes))
            }
        }
    }

    delegate_to_ends!();

    fn receive(&mut self, now: SimTime, payload: Payload, _acks: &mut AckBoxes) -> Side {
        match payload {
            Payload::UdtToReceiver(ToReceiver::Data(d)) => {
                self.transfer.delivered_bytes += self.receiver.on_data(now, &d);
                Side::Receiver
            }
            Payload::UdtToReceiver(ToReceiver::Ack2(a)) => {
                if let Some(rtt) = self.receiver.on_ack2(now, &a) {
                    self.transfer.rtt.record(rtt.as_nanos());
                }
                Side::Receiver
            }
            Payload::UdtToSender(p) => {
                match &*p {
                    ToSender::Ack(a) => self.sender.on_ack(now, a),
                    ToSender::Nak(n) => self.sender.on_nak(now, n),
                }
                self.ack_boxes.put(p);
                note_completion(&mut self.transfer, now, self.sender.is_complete());
                Side::Sender
            }
            other => unreachable!("UDT flow got {other:?}"),
        }
    }
}

impl Endpoint for MptcpFlow {
    // Out of line, as `receive`: inlined, the MPTCP arm of every dispatch grew the engine's
    // per-packet functions past LLVM's inlining budget, and single-path TCP paid (+2.5%
    // instructions on a dumbbell of two CUBIC flows).
    #[inline(never)]
    fn poll_packet(&mut self, side: Side, now: SimTime, _acks: &mut AckBoxes) -> Option<(Payload, u32)> {
        match side {
            Side::Sender => {
                let d = self.sender.poll_transmit(now)?;
                let size_bytes = d.seg.len + self.transfer.header_bytes;
                Some((Payload::MptcpData(self.data_boxes.take(d)), size_bytes))
            }
            Side::Receiver => {
                let a = self.receiver.poll_ack(now)?;
                let size_bytes = self.transfer.ack_bytes + sack_option_bytes(a.ack.sack_count) + accecn_option_bytes(&a.ack);
                self.acks_sent += 1;
                Some((Payload::MptcpAck(self.ack_boxes.take(a)), size_bytes))
            }
        }
    }

    delegate_to_ends!();

    #[inline(never)]
    fn receive(&mut self, now: SimTime, payload: Payload, _acks: &mut AckBoxes) -> Side {
        match payload {
            Payload::MptcpData(d) => {
                self.transfer.delivered_bytes += self.receiver.on_segment(now, &d);
                self.data_boxes.put(d);
                Side::Receiver
            }
            Payload::MptcpAck(a) => {
                let outcome = self.sender.on_ack(now, &a);
                let subflow = a.subflow;
                self.ack_boxes.put(a);
                if let Some(rtt) = outcome.rtt {
                    // The subflow receiver's RTT estimate, as a TCP flow's (TcpFlow::receive).
                    self.receiver.on_rcv_rtt_sample(subflow, rtt);
                }
                if note_ack(&mut self.transfer, now, outcome.rtt, self.sender.is_complete()) {
                    self.release_storage();
                }
                Side::Sender
            }
            other => unreachable!("MPTCP flow got {other:?}"),
        }
    }
}

impl Endpoint for QuicFlow {
    // Out of line, as MPTCP's: keeps the single-path TCP arms of the engine's dispatch small.
    #[inline(never)]
    fn poll_packet(&mut self, side: Side, now: SimTime, _acks: &mut AckBoxes) -> Option<(Payload, u32)> {
        match side {
            Side::Sender => {
                let p = self.sender.poll_transmit(now)?;
                let size_bytes = p.len + self.transfer.header_bytes;
                Some((Payload::QuicData(self.data_boxes.take(p)), size_bytes))
            }
            Side::Receiver => {
                // Written straight into a reused box: a frame is about 600 bytes.
                let mut boxed = self.ack_boxes.take_or(|| Box::new(AckFrame::EMPTY));
                if !self.receiver.poll_ack_into(now, &mut boxed) {
                    self.ack_boxes.put(boxed);
                    return None;
                }
                self.acks_sent += 1;
                let size_bytes = boxed.wire_bytes();
                Some((Payload::QuicAck(boxed), size_bytes))
            }
        }
    }

    delegate_to_ends!();

    #[inline(never)]
    fn receive(&mut self, now: SimTime, payload: Payload, _acks: &mut AckBoxes) -> Side {
        match payload {
            Payload::QuicData(p) => {
                self.transfer.delivered_bytes += self.receiver.on_packet(now, &p);
                self.data_boxes.put(p);
                Side::Receiver
            }
            Payload::QuicAck(a) => {
                let outcome = self.sender.on_ack(now, &a);
                self.ack_boxes.put(a);
                if note_ack(&mut self.transfer, now, outcome.rtt, self.sender.is_complete()) {
                    self.release_storage();
                }
                Side::Sender
            }
            other => unreachable!("QUIC flow got {other:?}"),
        }
    }
}
