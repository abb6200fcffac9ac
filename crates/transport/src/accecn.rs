//! The data sender's side of Accurate ECN feedback (RFC 9768 §3.2): turning each ACK's wrapped
//! ACE field and AccECN option byte counters into the CE-marked packets and bytes newly fed back.
//!
//! The receiver's counters (r.cep, r.ceb, r.e0b, r.e1b; see [`crate::receiver`]) reach the
//! sender modulo 8 (ACE) and modulo 2^24 (option fields). The sender keeps full-width copies
//! (s.cep, s.ceb, s.e0b, s.e1b), starting from the receiver's initial values (§3.2.1), and on each
//! ACK adds the least non-negative difference between the field and its copy mod the field's size
//! (RFC 9768 Appendix A.1).
//!
//! ACE wraps after 8 CE marks. The receiver acknowledges at least every 2 CE marks
//! (§3.2.2.5.1), so a jump of 8 or more marks between two processed ACKs means ACKs were lost:
//!
//! - With the AccECN option, the byte counter settles it (RFC 9768 §3.2.2.5: use the option
//!   when present): d.ceb is exact as long as fewer than 2^24 bytes were marked between
//!   processed ACKs, and d.cep is taken as the smallest count congruent to ACE's difference mod
//!   8 that could carry d.ceb bytes in segments of at most one MSS.
//! - Without it, the sender assumes the worst the ACK allows (RFC 9768 §3.2.2.5 and the
//!   conservative algorithm of Appendix A.2): of the d.pkts segments the ACK newly acknowledges
//!   (newly acked bytes / MSS, rounded up), as many marked as ACE's difference mod 8 permits,
//!   `d.cep + 8·⌊(d.pkts − d.cep) / 8⌋`, and each marked segment a full MSS (CE bytes estimated
//!   as d.cep × MSS).
//!
//! An ACK whose cumulative acknowledgment lies below one already processed has been superseded
//! and its feedback is ignored (RFC 9768 Appendix A.1: a negative newlyAckedB). So is an ACK
//! that acknowledges nothing new while an option counter went back by the serial-number rule
//! (a difference of 2^23 or more: RFC 1982 §3.2): it was overtaken by a later ACK with the same
//! cumulative acknowledgment.

use crate::segment::{AccEcnFeedback, AccEcnOption, ACCECN_OPTION_MODULUS, ACE_MODULUS};

/// r.cep's and s.cep's initial value (RFC 9768 §3.2.1: 5, so a zeroed ACE field is detectable).
pub const ACCECN_CEP_INIT: u64 = 5;
/// r.e0b's and r.e1b's initial value, and the sender's copies', bytes (RFC 9768 §3.2.1: 1, so a
/// zeroed option field is detectable); r.ceb and s.ceb start at 0.
pub const ACCECN_ECT_BYTES_INIT: u64 = 1;

/// What one ACK newly fed back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccEcnDelta {
    /// CE-marked packets (d.cep, after the wrap safety rules above).
    pub ce_packets: u64,
    /// CE-marked payload bytes: the option's d.ceb, or d.cep × MSS without it.
    pub ce_bytes: u64,
    /// The bytes are the option's exact count, not an estimate.
    pub exact: bool,
}

/// The sender's AccECN counters (RFC 9768 §3.2.1: s.cep, s.ceb, s.e0b, s.e1b).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccEcnDecoder {
    /// s.cep, from 5.
    cep: u64,
    /// s.ceb, from 0.
    ceb: u64,
    /// s.e0b, from 1.
    e0b: u64,
    /// s.e1b, from 1.
    e1b: u64,
}

impl Default for AccEcnDecoder {
    fn default() -> Self {
        AccEcnDecoder::new()
    }
}

impl AccEcnDecoder {
    /// Counters at their initial values (RFC 9768 §3.2.1).
    pub const fn new() -> AccEcnDecoder {
        AccEcnDecoder { cep: ACCECN_CEP_INIT, ceb: 0, e0b: ACCECN_ECT_BYTES_INIT, e1b: ACCECN_ECT_BYTES_INIT }
    }

    /// CE-marked packets fed back so far (s.cep less its initial value).
    pub fn ce_packets(&self) -> u64 {
        self.cep - ACCECN_CEP_INIT
    }

    /// CE-marked bytes fed back by the option so far (s.ceb).
    pub fn ce_bytes(&self) -> u64 {
        self.ceb
    }

    /// Payload bytes fed back as received ECT(0) and ECT(1) so far (s.e0b and s.e1b less their
    /// initial values).
    pub fn ect_bytes(&self) -> (u64, u64) {
        (self.e0b - ACCECN_ECT_BYTES_INIT, self.e1b - ACCECN_ECT_BYTES_INIT)
    }

    /// Decode one ACK's feedback `fb`. `newly_acked_bytes`: the bytes it newly acknowledges,
    /// cumulatively and by SACK; `superseded`: its cumulative acknowledgment lies below one
    /// already processed; `mss_bytes`: the sender's MSS (at least 1). Returns what it newly fed
    /// back (all zero for a superseded ACK).
    pub fn on_ack(&mut self, fb: &AccEcnFeedback, newly_acked_bytes: u64, superseded: bool, mss_bytes: u64) -> AccEcnDelta {
        if superseded {
            return AccEcnDelta::default();
        }
        let ace_delta = wrapped_delta(u64::from(fb.ace), self.cep, ACE_MODULUS);
        match fb.option {
            Some(opt) => self.with_option(&opt, ace_delta, newly_acked_bytes, mss_bytes),
            None => {
                let d_pkts = newly_acked_bytes.div_ceil(mss_bytes);
                let d_cep = conservative_cep(ace_delta, d_pkts);
                self.cep += d_cep;
                AccEcnDelta { ce_packets: d_cep, ce_bytes: d_cep * mss_bytes, exact: false }
            }
        }
    }

    /// The option's byte counters decide (RFC 9768 §3.2.2.5).
    fn with_option(&mut self, opt: &AccEcnOption, ace_delta: u64, newly_acked_bytes: u64, mss_bytes: u64) -> AccEcnDelta {
        let d_ceb = wrapped_delta(u64::from(opt.ceb), self.ceb, ACCECN_OPTION_MODULUS);
        let d_e0b = wrapped_delta(u64::from(opt.e0b), self.e0b, ACCECN_OPTION_MODULUS);
        let d_e1b = wrapped_delta(u64::from(opt.e1b), self.e1b, ACCECN_OPTION_MODULUS);
        let went_back = |d: u64| d >= ACCECN_OPTION_MODULUS / 2;
        if newly_acked_bytes == 0 && (went_back(d_ceb) || went_back(d_e0b) || went_back(d_e1b)) {
            return AccEcnDelta::default();
        }
        // The fewest marked segments (each at most one MSS) that carry d.ceb bytes, in ACE's
        // residue class mod 8.
        let min_pkts = d_ceb.div_ceil(mss_bytes);
        let wraps = min_pkts.saturating_sub(ace_delta).div_ceil(ACE_MODULUS);
        let d_cep = ace_delta + ACE_MODULUS * wraps;
        self.cep += d_cep;
        self.ceb += d_ceb;
        self.e0b += d_e0b;
        self.e1b += d_e1b;
        AccEcnDelta { ce_packets: d_cep, ce_bytes: d_ceb, exact: true }
    }
}

/// The least non-negative `d` with `local + d ≡ field (mod modulus)` (RFC 9768 Appendix A.1).
fn wrapped_delta(field: u64, local: u64, modulus: u64) -> u64 {
    (field + modulus - local % modulus) % modulus
}

/// RFC 9768 Appendix A.2's conservative d.cep: with ACE's difference `ace_delta` (below 8) and
/// `d_pkts` segments newly acknowledged, the largest count of marks that is congruent to
/// `ace_delta` mod 8 and no more than `d_pkts` (or `ace_delta` itself when `d_pkts` is smaller:
/// marks on duplicate segments acknowledge nothing new).
fn conservative_cep(ace_delta: u64, d_pkts: u64) -> u64 {
    ace_delta + ACE_MODULUS * (d_pkts.saturating_sub(ace_delta) / ACE_MODULUS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn fb(cep: u64, ceb: Option<u64>) -> AccEcnFeedback {
        AccEcnFeedback {
            ace: (cep % 8) as u8,
            option: ceb.map(|c| AccEcnOption { e0b: 1, ceb: (c % (1 << 24)) as u32, e1b: 1 }),
        }
    }

    #[test]
    fn deltas_wrap_modulo_the_field_size() {
        assert_eq!(wrapped_delta(5, 5, 8), 0);
        assert_eq!(wrapped_delta(1, 5, 8), 4);
        assert_eq!(wrapped_delta(4, 13, 8), 7);
        assert_eq!(wrapped_delta(3, (1 << 24) - 2, 1 << 24), 5);
    }

    #[test]
    fn ace_only_takes_the_worst_case_the_ack_allows() {
        // 3 marks by ACE, 2 segments newly acked: duplicates carried the extra marks.
        assert_eq!(conservative_cep(3, 2), 3);
        // 3 by ACE, 10 segments: 3 or 11 possible, 11 > 10, so 3.
        assert_eq!(conservative_cep(3, 10), 3);
        // 3 by ACE, 11 segments: 11.
        assert_eq!(conservative_cep(3, 11), 11);
        // 0 by ACE, 20 segments: 16 (two wraps).
        assert_eq!(conservative_cep(0, 20), 16);
    }

    #[test]
    fn ace_only_decoding_counts_packets_and_estimates_bytes() {
        let mut d = AccEcnDecoder::new();
        // The receiver's r.cep went 5 -> 7 over an ACK for 4 segments.
        let x = d.on_ack(&fb(7, None), 4 * MSS, false, MSS);
        assert_eq!(x, AccEcnDelta { ce_packets: 2, ce_bytes: 2 * MSS, exact: false });
        // 7 -> 17 (ACE 1) over an ACK for 12 segments: ACE says 2, wrap gives 10 <= 12.
        let x = d.on_ack(&fb(17, None), 12 * MSS, false, MSS);
        assert_eq!(x.ce_packets, 10);
        assert_eq!(d.ce_packets(), 12);
    }

    #[test]
    fn the_option_resolves_ace_wrap_exactly() {
        let mut d = AccEcnDecoder::new();
        // 9 marks of a full MSS each: ACE moved by 1 (5 -> 14), the byte counter by 9 MSS.
        let x = d.on_ack(&fb(14, Some(9 * MSS)), 20 * MSS, false, MSS);
        assert_eq!(x, AccEcnDelta { ce_packets: 9, ce_bytes: 9 * MSS, exact: true });
        // No new marks.
        let x = d.on_ack(&fb(14, Some(9 * MSS)), 2 * MSS, false, MSS);
        assert_eq!(x, AccEcnDelta { ce_packets: 0, ce_bytes: 0, exact: true });
    }

    #[test]
    fn the_byte_counter_wraps_at_2_pow_24() {
        let mut d = AccEcnDecoder::new();
        let mut ceb = 0u64;
        let mut cep = 5u64;
        let mut total = 0u64;
        for _ in 0..40 {
            cep += 500;
            ceb += 500 * MSS;
            total += d.on_ack(&fb(cep, Some(ceb)), 500 * MSS, false, MSS).ce_bytes;
        }
        assert!(ceb > 1 << 24, "the field wrapped");
        assert_eq!(total, ceb);
        assert_eq!(d.ce_bytes(), ceb);
        assert_eq!(d.ce_packets(), cep - 5);
    }

    #[test]
    fn superseded_and_overtaken_acks_are_ignored() {
        let mut d = AccEcnDecoder::new();
        let _ = d.on_ack(&fb(8, Some(3 * MSS)), 3 * MSS, false, MSS);
        assert_eq!(d.on_ack(&fb(6, Some(MSS)), 0, true, MSS), AccEcnDelta::default());
        // Same cumulative ACK, older counters: the byte counter went back.
        assert_eq!(d.on_ack(&fb(6, Some(MSS)), 0, false, MSS), AccEcnDelta::default());
        assert_eq!((d.ce_packets(), d.ce_bytes()), (3, 3 * MSS));
    }
}
