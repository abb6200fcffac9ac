//! Which ECN-capable packets a marking threshold applies to: the L4S modes of the single-queue
//! disciplines (DropTail's step marking, CoDel's and FQ-CoDel's `ce_threshold`).
//!
//! A shallow marking threshold suits scalable congestion controls (DCTCP, Prague) and hurts
//! Classic ones, which halve on every mark (RFC 8257 §3.1 vs RFC 3168 §6.1.2). RFC 9331 §5.1
//! gives the network the means to tell them apart: ECT(1) (and CE) identify L4S packets. Linux's
//! FQ-CoDel applies its `ce_threshold` to every ECT packet, or, with `ce_threshold_selector
//! 0x1/0x1` on the ECN field, only to packets whose ECN field has the ECT(1) bit set — ECT(1) and
//! CE, RFC 9331's identifier (tc-fq_codel(8); Linux commits e72aeb9ee0e3 and dfcb63ce1de6, 2021).
//! [`EcnSelector`] is that choice, by name.

use serde::{Deserialize, Serialize};

use super::interface::QueuedPacket;

/// The packets a marking threshold applies to: the engine spec's `"all"` or `"l4s"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnSelector {
    /// Every packet (only ECT ones can be marked): DCTCP-style step marking (RFC 8257 §3.1),
    /// Linux's `ce_threshold` without a selector.
    #[default]
    All,
    /// Only packets carrying the L4S identifier, ECT(1) or CE (RFC 9331 §5.1,
    /// [`QueuedPacket::l4s`]); Classic packets (Not-ECT, ECT(0)) pass the threshold unmarked.
    L4s,
}

impl EcnSelector {
    /// True when the threshold applies to `pkt`. Marking still needs an ECT packet
    /// ([`QueuedPacket::ect`]): a CE packet is selected by `L4s` but has nothing left to mark.
    #[inline]
    pub fn selects<P: QueuedPacket>(self, pkt: &P) -> bool {
        match self {
            EcnSelector::All => true,
            EcnSelector::L4s => pkt.l4s(),
        }
    }

    /// The name the spec uses.
    pub fn name(self) -> &'static str {
        match self {
            EcnSelector::All => "all",
            EcnSelector::L4s => "l4s",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::test_packets::FlagPkt;

    #[test]
    fn l4s_selects_ect1_and_ce_only_and_names_round_trip() {
        let not_ect = FlagPkt::default();
        let ect0 = FlagPkt { ect: true, ..FlagPkt::default() };
        let ect1 = FlagPkt { ect: true, l4s: true, ..FlagPkt::default() };
        let ce = FlagPkt { l4s: true, ..FlagPkt::default() };
        assert!([&not_ect, &ect0, &ect1, &ce].iter().all(|p| EcnSelector::All.selects(*p)));
        let picked: Vec<bool> = [&not_ect, &ect0, &ect1, &ce].iter().map(|p| EcnSelector::L4s.selects(*p)).collect();
        assert_eq!(picked, [false, false, true, true]);
        for s in [EcnSelector::All, EcnSelector::L4s] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.name()));
            assert_eq!(serde_json::from_str::<EcnSelector>(&format!("\"{}\"", s.name())).unwrap(), s);
        }
        assert!(serde_json::from_str::<EcnSelector>("\"ect1\"").is_err());
    }
}
