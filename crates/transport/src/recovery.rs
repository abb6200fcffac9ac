//! Loss-recovery modes and the window arithmetic each uses during recovery.
//!
//! The sender's state machine (in [`crate::sender`]) decides *when* recovery starts and ends; this
//! module holds *what* each mode is and the pieces of arithmetic that are worth testing alone:
//! Proportional Rate Reduction (RFC 6937) and NewReno's partial-ACK deflation (RFC 6582).

use std::fmt;
use std::str::FromStr;

/// How the sender repairs losses detected by duplicate ACKs or SACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecoveryMode {
    /// Fast retransmit, then cwnd = 1 MSS and slow start, retransmitting everything outstanding
    /// (go-back-N); no fast recovery (Jacobson 1988).
    Tahoe,
    /// Fast retransmit and fast recovery with window inflation; the first ACK of new data ends
    /// recovery (RFC 5681 §3.2).
    Reno,
    /// Fast recovery that stays until everything outstanding at its start is acknowledged,
    /// retransmitting one hole per partial ACK (RFC 6582).
    NewReno,
    /// SACK scoreboard and pipe-based recovery (RFC 2018, RFC 6675).
    Sack,
    /// `Sack` with Proportional Rate Reduction of the window during recovery (RFC 6937).
    Prr,
    /// What Linux does by default: SACK, loss detection by RACK (RFC 8985 §6, time-based,
    /// instead of the duplicate-ACK threshold), Tail Loss Probes (RFC 8985 §7) and PRR.
    Linux,
}

/// Every mode, in the order the catalogue lists them.
pub const ALL_RECOVERY_MODES: [RecoveryMode; 6] = [
    RecoveryMode::Tahoe,
    RecoveryMode::Reno,
    RecoveryMode::NewReno,
    RecoveryMode::Sack,
    RecoveryMode::Prr,
    RecoveryMode::Linux,
];

impl RecoveryMode {
    /// The name as a scenario spells it: `"tahoe"`, `"reno"`, `"newreno"`, `"sack"`, `"prr"` or
    /// `"linux"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryMode::Tahoe => "tahoe",
            RecoveryMode::Reno => "reno",
            RecoveryMode::NewReno => "newreno",
            RecoveryMode::Sack => "sack",
            RecoveryMode::Prr => "prr",
            RecoveryMode::Linux => "linux",
        }
    }

    /// True for the modes that read SACK blocks (`sack`, `prr`, `linux`). The others behave as if
    /// SACK had not been negotiated.
    pub fn uses_sack(self) -> bool {
        matches!(
            self,
            RecoveryMode::Sack | RecoveryMode::Prr | RecoveryMode::Linux
        )
    }

    /// True for the modes that shape the window in recovery with PRR (`prr`, `linux`).
    pub fn uses_prr(self) -> bool {
        matches!(self, RecoveryMode::Prr | RecoveryMode::Linux)
    }

    /// True for the mode that detects losses with RACK and probes tails with TLP (`linux`).
    pub fn uses_rack_tlp(self) -> bool {
        self == RecoveryMode::Linux
    }
}

impl fmt::Display for RecoveryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error parsing a [`RecoveryMode`]: the name given is not one of the six.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseRecoveryModeError {
    /// The name that was given.
    pub given: String,
}

impl fmt::Display for ParseRecoveryModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = ALL_RECOVERY_MODES.iter().map(|m| m.as_str()).collect();
        write!(
            f,
            "unknown recovery mode '{}' (choose one of: {})",
            self.given,
            names.join(", ")
        )
    }
}

impl std::error::Error for ParseRecoveryModeError {}

impl FromStr for RecoveryMode {
    type Err = ParseRecoveryModeError;

    /// Parse a mode name (exact, lower case).
    ///
    /// # Errors
    /// [`ParseRecoveryModeError`] naming the input and listing the choices.
    fn from_str(s: &str) -> Result<RecoveryMode, ParseRecoveryModeError> {
        ALL_RECOVERY_MODES
            .iter()
            .copied()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ParseRecoveryModeError {
                given: s.to_string(),
            })
    }
}

/// Proportional Rate Reduction state (RFC 6937 §3.1), in bytes.
///
/// At the start of recovery `prr_delivered = prr_out = 0` and `RecoverFS = snd.nxt − snd.una`.
/// On every ACK in recovery, with `DeliveredData` the bytes newly acknowledged or SACKed:
///
/// ```text
/// prr_delivered += DeliveredData
/// if pipe > ssthresh:   sndcnt = CEIL(prr_delivered · ssthresh / RecoverFS) − prr_out
/// else (PRR-SSRB):      sndcnt = MIN(ssthresh − pipe, MAX(prr_delivered − prr_out, DeliveredData) + MSS)
/// cwnd = pipe + sndcnt
/// ```
///
/// and every transmission adds to `prr_out`. `CEIL` rounds up to a whole MSS: the sender sends
/// whole segments, so this makes a byte-counting sender follow the RFC's segment-counted examples
/// exactly. As in RFC 6937bis (and Linux), when nothing has been sent yet and `sndcnt` is 0, one
/// MSS is allowed so the fast retransmission goes out on the ACK that starts recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// Bytes delivered to the receiver since recovery started.
    pub prr_delivered: u64,
    /// Bytes sent since recovery started.
    pub prr_out: u64,
    /// FlightSize at the start of recovery, bytes.
    pub recover_fs: u64,
}

impl Prr {
    /// Start a recovery episode with `recover_fs = snd.nxt − snd.una` bytes.
    pub fn start(&mut self, recover_fs: u64) {
        *self = Prr {
            prr_delivered: 0,
            prr_out: 0,
            recover_fs,
        };
    }

    /// One ACK in recovery that delivered `delivered` bytes; `pipe` is the RFC 6675 pipe after
    /// the ACK was processed. Returns `sndcnt` in bytes; the caller sets `cwnd = pipe + sndcnt`.
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64) -> u64 {
        self.prr_delivered += delivered;
        let mut sndcnt = if pipe > ssthresh {
            // Proportional part: CEIL(prr_delivered · ssthresh / RecoverFS), rounded up to a
            // whole segment.
            let fs = self.recover_fs.max(1) as u128;
            let target = (self.prr_delivered as u128 * ssthresh as u128).div_ceil(fs);
            let target = (target.div_ceil(mss as u128) * mss as u128).min(u64::MAX as u128) as u64;
            target.saturating_sub(self.prr_out)
        } else {
            // PRR-SSRB (slow-start reduction bound).
            let limit = self
                .prr_delivered
                .saturating_sub(self.prr_out)
                .max(delivered)
                + mss;
            (ssthresh - pipe).min(limit)
        };
        if sndcnt == 0 && self.prr_out == 0 {
            sndcnt = mss;
        }
        sndcnt
    }

    /// `bytes` were (re)transmitted during recovery.
    pub fn on_sent(&mut self, bytes: u64) {
        self.prr_out += bytes;
    }
}

/// NewReno's window deflation on a partial ACK (RFC 6582 §3.2 step 6): deflate by the bytes the
/// ACK newly acknowledged and, when at least one MSS was acknowledged, add one MSS back. Never
/// below one MSS.
pub fn newreno_partial_ack_cwnd(cwnd: u64, newly_acked: u64, mss: u64) -> u64 {
    let mut w = cwnd.saturating_sub(newly_acked);
    if newly_acked >= mss {
        w = w.saturating_add(mss);
    }
    w.max(mss)
}

/// NewReno's window at the end of recovery (RFC 6582 §3.2 step 6, full ACK, option 1):
/// `min(ssthresh, max(FlightSize, MSS) + MSS)`. Chosen over plain `ssthresh` because it cannot
/// release a burst when little is left in flight.
pub fn newreno_full_ack_cwnd(ssthresh: u64, flight_size: u64, mss: u64) -> u64 {
    ssthresh
        .min(flight_size.max(mss).saturating_add(mss))
        .max(mss)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn parse_and_print_round_trip() {
        for m in ALL_RECOVERY_MODES {
            assert_eq!(m.as_str().parse::<RecoveryMode>(), Ok(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        let err = "cubic".parse::<RecoveryMode>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown recovery mode 'cubic' (choose one of: tahoe, reno, newreno, sack, prr, linux)"
        );
    }

    #[test]
    fn prr_proportional_phase_sends_half_of_delivered() {
        // ssthresh 10, RecoverFS 20 (segments): one segment out for every two delivered.
        let mut p = Prr::default();
        p.start(20 * MSS);
        let mut sent = Vec::new();
        let mut pipe = 19 * MSS;
        for _ in 0..6 {
            pipe -= MSS; // each ACK delivers one segment
            let s = p.on_ack(MSS, pipe, 10 * MSS, MSS);
            sent.push(s / MSS);
            p.on_sent(s);
            pipe += s;
        }
        // CEIL(1·10/20)=1 → 1; CEIL(2/2)=1 → 0; CEIL(3/2)=2 → 1; ...
        assert_eq!(sent, vec![1, 0, 1, 0, 1, 0]);
    }

    #[test]
    fn prr_ssrb_catches_up_to_ssthresh() {
        let mut p = Prr::default();
        p.start(20 * MSS);
        p.on_sent(MSS);
        // pipe 7 < ssthresh 10: limit = max(4 − 1, 4) + 1 = 5, sndcnt = min(10 − 7, 5) = 3 segments.
        assert_eq!(p.on_ack(4 * MSS, 7 * MSS, 10 * MSS, MSS), 3 * MSS);
        p.on_sent(3 * MSS);
        // pipe 2, prr_delivered 6, prr_out 4, DeliveredData 2: SSRB allows
        // max(6 − 4, 2) + 1 = 3 (the conservative bound would allow 2).
        assert_eq!(p.on_ack(2 * MSS, 2 * MSS, 10 * MSS, MSS), 3 * MSS);
    }

    #[test]
    fn prr_forces_the_first_retransmission() {
        let mut p = Prr::default();
        p.start(20 * MSS);
        // pipe > ssthresh and nothing delivered yet: proportional part is 0, forced to 1 MSS.
        assert_eq!(p.on_ack(0, 16 * MSS, 10 * MSS, MSS), MSS);
    }

    #[test]
    fn newreno_window_helpers() {
        assert_eq!(newreno_partial_ack_cwnd(13 * MSS, 4 * MSS, MSS), 10 * MSS);
        assert_eq!(newreno_partial_ack_cwnd(13 * MSS, 500, MSS), 12_500);
        assert_eq!(newreno_partial_ack_cwnd(MSS, 10 * MSS, MSS), MSS);
        assert_eq!(newreno_full_ack_cwnd(10 * MSS, 20 * MSS, MSS), 10 * MSS);
        assert_eq!(newreno_full_ack_cwnd(10 * MSS, 2 * MSS, MSS), 3 * MSS);
        assert_eq!(newreno_full_ack_cwnd(10 * MSS, 0, MSS), 2 * MSS);
    }
}
