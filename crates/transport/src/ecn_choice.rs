//! Which ECN a TCP flow uses, chosen from its flavor: one rule for every driver of the transport
//! (the simulator's flows, the udp crate's scenario streams), so one scenario runs alike on both.
//!
//! - No ECN: Not-ECT data, no feedback.
//! - An L4S flow ([`ccarena_cc::is_l4s_flow`]: TCP Prague, DCTCP with `ect1 = 1`): ECT(1) data
//!   (RFC 9331 §4.1) and Accurate ECN feedback (RFC 9768).
//! - Another flavor the catalogue says needs ECN (DCTCP): ECT(0) and DCTCP's exact per-segment
//!   echo (RFC 8257 §3.2).
//! - Any other flavor: ECT(0) and RFC 3168's latched ECE.
//!
//! Both ends of a flow run one stack, as with Linux, where the receiving socket's congestion
//! control (tcp_dctcp) chooses the echo.

use ccarena_cc::{CcError, Params};

use crate::receiver::EcnMode;
use crate::sender::SenderEcn;

/// The receiver's ECN feedback for a flow of `flavor` with `params` (see the module
/// documentation); [`EcnMode::Off`] when `ecn_on` is false.
///
/// # Errors
/// [`CcError::BadParam`] when the flavor refuses a parameter that decides the choice (DCTCP's
/// `ect1` not 0 or 1).
pub fn flow_ecn_mode(flavor: &str, params: &Params, ecn_on: bool) -> Result<EcnMode, CcError> {
    if !ecn_on {
        return Ok(EcnMode::Off);
    }
    if ccarena_cc::is_l4s_flow(flavor, params)? {
        return Ok(EcnMode::AccEcn);
    }
    let needs_ecn = ccarena_cc::catalogue().iter().any(|c| c.name == flavor && c.needs_ecn);
    Ok(if needs_ecn { EcnMode::Dctcp } else { EcnMode::Classic })
}

impl EcnMode {
    /// How the sender uses ECN against a receiver giving this feedback: Not-ECT without; ECT(0)
    /// and RFC 3168's response to ECE for classic and DCTCP feedback; ECT(1) and AccECN decoding
    /// for Accurate ECN (RFC 9331 §4.1, RFC 9768 §3.2).
    pub const fn sender_ecn(self) -> SenderEcn {
        match self {
            EcnMode::Off => SenderEcn::Off,
            EcnMode::Classic | EcnMode::Dctcp => SenderEcn::Classic,
            EcnMode::AccEcn | EcnMode::AccEcnAceOnly => SenderEcn::L4s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, f64)]) -> Params {
        Params::from_pairs(pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect())
    }

    #[test]
    fn the_flavor_chooses_the_feedback_and_the_sender_follows() {
        let none = params(&[]);
        assert_eq!(flow_ecn_mode("prague", &none, false), Ok(EcnMode::Off));
        assert_eq!(flow_ecn_mode("prague", &none, true), Ok(EcnMode::AccEcn));
        assert_eq!(flow_ecn_mode("dctcp", &none, true), Ok(EcnMode::Dctcp));
        assert_eq!(flow_ecn_mode("dctcp", &params(&[("ect1", 1.0)]), true), Ok(EcnMode::AccEcn));
        assert_eq!(flow_ecn_mode("cubic", &none, true), Ok(EcnMode::Classic));
        assert!(flow_ecn_mode("dctcp", &params(&[("ect1", 2.0)]), true).is_err());
        assert_eq!(EcnMode::AccEcn.sender_ecn(), SenderEcn::L4s);
        assert_eq!(EcnMode::AccEcnAceOnly.sender_ecn(), SenderEcn::L4s);
        assert_eq!(EcnMode::Dctcp.sender_ecn(), SenderEcn::Classic);
        assert_eq!(EcnMode::Classic.sender_ecn(), SenderEcn::Classic);
        assert_eq!(EcnMode::Off.sender_ecn(), SenderEcn::Off);
    }
}
