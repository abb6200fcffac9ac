//! Queue disciplines: the admission decision at a link's egress queue.

use crate::spec::{Discipline, QueueSpec};

/// A queue discipline's state and limits.
#[derive(Clone, Debug)]
pub enum Aqm {
    /// Tail drop: refuse an arrival when the waiting packets already reach `limit_packets`, or
    /// when it would push the waiting bytes past `limit_bytes`.
    DropTail {
        /// Limit on waiting packets.
        limit_packets: Option<u64>,
        /// Limit on waiting bytes.
        limit_bytes: Option<u64>,
    },
}

impl Aqm {
    /// The discipline a validated [`QueueSpec`] describes.
    pub fn from_spec(q: &QueueSpec) -> Aqm {
        match q.discipline {
            Discipline::Droptail => Aqm::DropTail { limit_packets: q.limit_packets, limit_bytes: q.limit_bytes },
        }
    }

    /// Should an arriving packet of `size_bytes` be admitted, given the packets and bytes waiting
    /// (the one being serialized excluded, as a Linux qdisc's backlog excludes the NIC's)?
    pub fn admit(&mut self, waiting_packets: u64, waiting_bytes: u64, size_bytes: u64) -> bool {
        match *self {
            Aqm::DropTail { limit_packets, limit_bytes } => {
                if let Some(limit) = limit_packets {
                    waiting_packets < limit
                } else if let Some(limit) = limit_bytes {
                    waiting_bytes + size_bytes <= limit
                } else {
                    true
                }
            }
        }
    }

    /// Change the limits (scheduled events); `None` leaves a limit unchanged.
    pub fn set_limits(&mut self, packets: Option<u64>, bytes: Option<u64>) {
        let Aqm::DropTail { limit_packets, limit_bytes } = self;
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

    #[test]
    fn droptail_in_packets_refuses_at_the_limit() {
        let mut q = Aqm::DropTail { limit_packets: Some(2), limit_bytes: None };
        assert!(q.admit(0, 0, 1500));
        assert!(q.admit(1, 1500, 1500));
        assert!(!q.admit(2, 3000, 1500));
    }

    #[test]
    fn droptail_in_bytes_refuses_what_would_overflow() {
        let mut q = Aqm::DropTail { limit_packets: None, limit_bytes: Some(3000) };
        assert!(q.admit(1, 1500, 1500));
        assert!(!q.admit(1, 1600, 1500));
        assert!(q.admit(5, 2900, 100));
    }
}
