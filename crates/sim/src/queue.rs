//! Queue disciplines: the admission decision at a link's egress queue.
//!
//! A discipline looks at an arriving packet and the queue it finds (waiting packets and bytes,
//! the one being serialized excluded, as a Linux qdisc's backlog excludes the NIC's) and returns
//! a [`Verdict`]: enqueue it, enqueue it marked CE, or drop it.

use crate::spec::{Discipline, QueueSpec};

/// What a queue discipline decides for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Enqueue unchanged.
    Enqueue,
    /// Enqueue with the ECN Congestion Experienced codepoint set (RFC 3168 §5).
    Mark,
    /// Refuse.
    Drop,
}

/// A queue discipline's state and limits.
#[derive(Clone, Debug)]
pub enum Aqm {
    /// Tail drop: refuse an arrival when the waiting packets already reach `limit_packets`, or
    /// when it would push the waiting bytes past `limit_bytes`. With an ECN threshold K, an
    /// ECN-capable arrival that is admitted while at least K packets (or bytes) wait is marked CE:
    /// the step marking on the instantaneous queue that DCTCP needs (RFC 8257 §3.1; Alizadeh et
    /// al., SIGCOMM 2010 §3.1). Packets that are not ECN-capable are never marked and are dropped
    /// only at the limit.
    DropTail {
        /// Limit on waiting packets.
        limit_packets: Option<u64>,
        /// Limit on waiting bytes.
        limit_bytes: Option<u64>,
        /// Mark ECT arrivals CE when at least this many packets wait.
        ecn_threshold_packets: Option<u64>,
        /// Mark ECT arrivals CE when at least this many bytes wait.
        ecn_threshold_bytes: Option<u64>,
    },
}

impl Aqm {
    /// The discipline a validated [`QueueSpec`] describes.
    pub fn from_spec(q: &QueueSpec) -> Aqm {
        match q.discipline {
            Discipline::Droptail => Aqm::DropTail {
                limit_packets: q.limit_packets,
                limit_bytes: q.limit_bytes,
                ecn_threshold_packets: q.ecn_threshold_packets,
                ecn_threshold_bytes: q.ecn_threshold_bytes,
            },
        }
    }

    /// The verdict for an arriving packet of `size_bytes`, ECN-capable if `ect`, given the packets
    /// and bytes waiting.
    pub fn admit(&mut self, waiting_packets: u64, waiting_bytes: u64, size_bytes: u64, ect: bool) -> Verdict {
        match *self {
            Aqm::DropTail { limit_packets, limit_bytes, ecn_threshold_packets, ecn_threshold_bytes } => {
                let fits = if let Some(limit) = limit_packets {
                    waiting_packets < limit
                } else if let Some(limit) = limit_bytes {
                    waiting_bytes + size_bytes <= limit
                } else {
                    true
                };
                if !fits {
                    return Verdict::Drop;
                }
                let above_k = ecn_threshold_packets.is_some_and(|k| waiting_packets >= k)
                    || ecn_threshold_bytes.is_some_and(|k| waiting_bytes >= k);
                if ect && above_k {
                    Verdict::Mark
                } else {
                    Verdict::Enqueue
                }
            }
        }
    }

    /// Change the limits (scheduled events); `None` leaves a limit unchanged. ECN thresholds are
    /// kept.
    pub fn set_limits(&mut self, packets: Option<u64>, bytes: Option<u64>) {
        let Aqm::DropTail { limit_packets, limit_bytes, .. } = self;
        if packets.is_some() {
            *limit_packets = packets;
            *limit_bytes = None;
        } else if bytes.is_some() {
            *limit_bytes = bytes;
            *limit_packets = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn droptail(limit_packets: Option<u64>, limit_bytes: Option<u64>) -> Aqm {
        Aqm::DropTail { limit_packets, limit_bytes, ecn_threshold_packets: None, ecn_threshold_bytes: None }
    }

    #[test]
    fn droptail_in_packets_refuses_at_the_limit() {
        let mut q = droptail(Some(2), None);
        assert_eq!(q.admit(0, 0, 1500, false), Verdict::Enqueue);
        assert_eq!(q.admit(1, 1500, 1500, true), Verdict::Enqueue);
        assert_eq!(q.admit(2, 3000, 1500, false), Verdict::Drop);
    }

    #[test]
    fn droptail_in_bytes_refuses_what_would_overflow() {
        let mut q = droptail(None, Some(3000));
        assert_eq!(q.admit(1, 1500, 1500, false), Verdict::Enqueue);
        assert_eq!(q.admit(1, 1600, 1500, false), Verdict::Drop);
        assert_eq!(q.admit(5, 2900, 100, false), Verdict::Enqueue);
    }

    #[test]
    fn ecn_threshold_in_packets_marks_ect_at_or_above_k() {
        let mut q = Aqm::DropTail { limit_packets: Some(10), limit_bytes: None, ecn_threshold_packets: Some(3), ecn_threshold_bytes: None };
        assert_eq!(q.admit(2, 3000, 1500, true), Verdict::Enqueue);
        assert_eq!(q.admit(3, 4500, 1500, true), Verdict::Mark);
        assert_eq!(q.admit(9, 13500, 1500, true), Verdict::Mark);
        // Non-ECT packets are not marked and are dropped only at the limit; ECT ones too.
        assert_eq!(q.admit(9, 13500, 1500, false), Verdict::Enqueue);
        assert_eq!(q.admit(10, 15000, 1500, true), Verdict::Drop);
        assert_eq!(q.admit(10, 15000, 1500, false), Verdict::Drop);
    }

    #[test]
    fn ecn_threshold_in_bytes_marks_on_waiting_bytes() {
        let mut q = Aqm::DropTail { limit_packets: Some(100), limit_bytes: None, ecn_threshold_packets: None, ecn_threshold_bytes: Some(3000) };
        assert_eq!(q.admit(1, 2999, 1500, true), Verdict::Enqueue);
        assert_eq!(q.admit(2, 3000, 1500, true), Verdict::Mark);
    }

    #[test]
    fn set_limits_keeps_the_ecn_threshold() {
        let mut q = Aqm::DropTail { limit_packets: Some(10), limit_bytes: None, ecn_threshold_packets: Some(3), ecn_threshold_bytes: None };
        q.set_limits(Some(20), None);
        assert_eq!(q.admit(15, 0, 1500, true), Verdict::Mark);
    }
}
