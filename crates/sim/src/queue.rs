//! The simulator's queue disciplines: the spec's [`QueueSpec`] (the link crate's format) turned
//! into a `ccarena-link` [`Qdisc`] of [`Packet`]s (the disciplines themselves live in
//! `ccarena_link::qdisc`, shared with the relay).

use ccarena_link::qdisc::QueuedPacket;
use ccarena_link::{Qdisc, QueueSpec, SplitMix64};

use crate::packet::Packet;

pub use ccarena_link::qdisc::Verdict;

impl QueuedPacket for Packet {
    #[inline]
    fn size_bytes(&self) -> u64 {
        u64::from(self.size_bytes)
    }

    /// The flow index, and the MPTCP subflow above it: every packet of a flow (or subflow, which
    /// has its own 5-tuple) in one direction shares it.
    #[inline]
    fn flow_hash(&self) -> u64 {
        u64::from(self.flow) | u64::from(self.payload.subflow()) << 32
    }

    /// Only data packets (TCP segments, QUIC stream packets) are ever ECN-capable (ACKs and
    /// datagrams are Not-ECT, RFC 3168 §6.1.4): those sent ECT(0) or ECT(1), and those already
    /// CE (marking again changes nothing, as when an earlier queue had marked them).
    #[inline]
    fn ect(&self) -> bool {
        self.payload.ecn().is_ect()
    }

    /// A data packet sent ECT(1), or CE-marked (RFC 9331 §5.1's L4S identifier).
    #[inline]
    fn l4s(&self) -> bool {
        self.payload.ecn().is_l4s()
    }

    /// ECT(0) or ECT(1) becomes CE (RFC 3168 §5); a Not-ECT packet is left alone.
    #[inline]
    fn set_ce(&mut self) {
        if let Some(ecn) = self.payload.ecn_mut() {
            *ecn = ecn.marked();
        }
    }
}

/// The queue a validated [`QueueSpec`] describes, drawing from `rng` (the queue's own stream).
pub fn qdisc(q: &QueueSpec, rng: SplitMix64) -> Qdisc<Packet> {
    Qdisc::new(&q.qdisc_config(), q.limit(), rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Payload;
    use ccarena_cc::SimTime;
    use ccarena_transport::{AckSegment, DataSegment, Ecn, SackBlock, MAX_SACK_BLOCKS};

    fn data(ecn: Ecn) -> Packet {
        let seg = DataSegment { seq: 0, len: 1448, ts_val: SimTime::ZERO, ecn, cwr: false, retransmit: false };
        Packet { flow: 0, dst: 1, size_bytes: 1500, payload: Payload::Data(seg) }
    }

    fn codepoint(p: &Packet) -> Ecn {
        match p.payload {
            Payload::Data(seg) => seg.ecn,
            _ => unreachable!("a data packet"),
        }
    }

    #[test]
    fn data_segments_are_classified_and_marked_by_their_codepoint() {
        // (sent as, ect(), l4s(), after set_ce)
        let cases = [
            (Ecn::NotEct, false, false, Ecn::NotEct),
            (Ecn::Ect0, true, false, Ecn::Ce),
            (Ecn::Ect1, true, true, Ecn::Ce),
            (Ecn::Ce, true, true, Ecn::Ce),
        ];
        for (sent, ect, l4s, after) in cases {
            let mut p = data(sent);
            assert_eq!((p.ect(), p.l4s()), (ect, l4s), "{sent:?}");
            p.set_ce();
            assert_eq!(codepoint(&p), after, "{sent:?} marked");
            assert_eq!(p.l4s(), after.is_l4s(), "a marked ECT(0) packet is then L4S-classified (RFC 9331 §5.1)");
        }
    }

    #[test]
    fn acks_and_datagrams_are_never_ecn_capable() {
        let ack = AckSegment {
            ack: 0,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_count: 0,
            ts_ecr: SimTime::ZERO,
            ts_recv: SimTime::ZERO,
            ece: false,
            accecn: None,
            rwnd_bytes: u64::MAX,
        };
        let mut pkts = [
            Packet { flow: 0, dst: 0, size_bytes: 52, payload: Payload::Ack(Box::new(ack)) },
            Packet { flow: 0, dst: 1, size_bytes: 1200, payload: Payload::Datagram { seq: 0 } },
        ];
        for p in &mut pkts {
            assert!(!p.ect() && !p.l4s());
            p.set_ce();
            assert!(!p.ect() && !p.l4s(), "set_ce leaves a Not-ECT packet alone");
        }
    }
}
