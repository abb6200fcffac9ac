//! The simulator's queue disciplines: the spec's [`QueueSpec`] turned into a `ccarena-link`
//! [`Qdisc`] of [`Packet`]s (the disciplines themselves live in `ccarena_link::qdisc`, shared with
//! the relay).

use ccarena_link::qdisc::codel::CodelConfig;
use ccarena_link::qdisc::fq::FqConfig;
use ccarena_link::qdisc::pie::PieConfig;
use ccarena_link::qdisc::red::RedConfig;
use ccarena_link::qdisc::{Limit, QueuedPacket};
use ccarena_link::{Qdisc, QdiscConfig, SplitMix64};

use crate::packet::{Packet, Payload};
use crate::spec::{Discipline, QueueSpec, RedSpec};

pub use ccarena_link::qdisc::Verdict;

/// The largest packet CoDel and FQ-CoDel assume (`maxpacket`, RFC 8289 §4.2): the simulator's
/// full-sized TCP segment is 1448 + 52 bytes.
pub const MTU_BYTES: u64 = 1500;

impl QueuedPacket for Packet {
    #[inline]
    fn size_bytes(&self) -> u64 {
        u64::from(self.size_bytes)
    }

    /// The flow index: every packet of a flow in one direction shares it.
    #[inline]
    fn flow_hash(&self) -> u64 {
        u64::from(self.flow)
    }

    /// Only ECN-capable data segments are ECT (ACKs and datagrams are not, RFC 3168 §6.1.4).
    #[inline]
    fn ect(&self) -> bool {
        matches!(self.payload, Payload::Data(seg) if seg.ect)
    }

    #[inline]
    fn set_ce(&mut self) {
        if let Payload::Data(seg) = &mut self.payload {
            seg.ce = true;
        }
    }
}

/// The hard limit of a validated queue spec.
pub fn limit(q: &QueueSpec) -> Limit {
    match (q.limit_packets, q.limit_bytes) {
        (Some(p), _) => Limit::Packets(p),
        (None, Some(b)) => Limit::Bytes(b),
        (None, None) => Limit::Unlimited,
    }
}

/// RED's parameters in the shared crate's form.
pub fn red_config(red: &RedSpec) -> RedConfig {
    let (min_th, max_th, in_bytes) = match (red.min_th_packets, red.max_th_packets) {
        (Some(lo), Some(hi)) => (lo, hi, false),
        _ => (red.min_th_bytes.unwrap_or(0), red.max_th_bytes.unwrap_or(0), true),
    };
    RedConfig {
        min_th,
        max_th,
        in_bytes,
        max_p: red.max_p,
        w_q: red.w_q,
        gentle: red.gentle,
        ecn: red.ecn,
        idle_packet_bytes: red.idle_packet_bytes,
        wait: red.wait,
        adaptive: red.adaptive,
    }
}

/// The discipline a validated [`QueueSpec`] describes.
pub fn qdisc_config(q: &QueueSpec) -> QdiscConfig {
    let droptail = QdiscConfig::DropTail { ecn_threshold_packets: q.ecn_threshold_packets, ecn_threshold_bytes: q.ecn_threshold_bytes };
    match q.discipline {
        Discipline::Droptail => droptail,
        Discipline::Red => q.red.as_ref().map_or(droptail, |r| QdiscConfig::Red(red_config(r))),
        Discipline::Codel => {
            let c = q.codel.as_ref().expect("validated: codel present");
            QdiscConfig::Codel(CodelConfig { target_ns: c.target_ns, interval_ns: c.interval_ns, ecn: c.ecn, mtu_bytes: MTU_BYTES })
        }
        Discipline::FqCodel => {
            let c = q.fq_codel.as_ref().expect("validated: fq_codel present");
            QdiscConfig::FqCodel(
                FqConfig { flows: c.flows, quantum_bytes: c.quantum_bytes },
                CodelConfig { target_ns: c.target_ns, interval_ns: c.interval_ns, ecn: c.ecn, mtu_bytes: MTU_BYTES },
            )
        }
        Discipline::Pie => {
            let c = q.pie.as_ref().expect("validated: pie present");
            QdiscConfig::Pie(PieConfig {
                target_ns: c.target_ns,
                tupdate_ns: c.tupdate_ns,
                alpha: c.alpha,
                beta: c.beta,
                max_burst_ns: c.max_burst_ns,
                ecn: c.ecn,
                mean_packet_bytes: MTU_BYTES,
            })
        }
        Discipline::Fq => {
            let c = q.fq.as_ref().expect("validated: fq present");
            QdiscConfig::Fq(FqConfig { flows: c.flows, quantum_bytes: c.quantum_bytes })
        }
    }
}

/// The queue a validated [`QueueSpec`] describes, drawing from `rng` (the queue's own stream).
pub fn qdisc(q: &QueueSpec, rng: SplitMix64) -> Qdisc<Packet> {
    Qdisc::new(&qdisc_config(q), limit(q), rng)
}
