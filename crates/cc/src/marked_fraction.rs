//! The congestion estimate α of the ECN-scalable controllers: an exponentially weighted moving
//! average of the fraction of acknowledged bytes that were CE-marked, one sample per observation
//! window of about one RTT.
//!
//! DCTCP defines it (RFC 8257 §3.3 steps 1–8) and TCP Prague keeps it unchanged
//! (draft-briscoe-iccrg-prague-congestion-control-04, "Moving Average of ECN Feedback"): the
//! sender counts the bytes acknowledged and, of those, the bytes reported marked; when the ACK
//! that passes `WindowEnd` arrives, with `M` the marked fraction,
//! `α ← (1 − g)·α + g·M`, and the next window ends at the current `SND.NXT`.
//!
//! What counts as "marked" is the caller's: DCTCP's classic per-segment echo marks the bytes of
//! every ACK carrying ECE; Accurate ECN (RFC 9768 §3.2.2.2) reports the CE-marked bytes exactly.
//! When a window closes is also partly the caller's: Prague may hold a window open past one RTT
//! (its reduced RTT-dependence), which is why closing is a separate call.

/// α and the current observation window's counters. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkedFraction {
    /// Estimation gain g, dimensionless, in (0, 1].
    g: f64,
    /// The estimate α, dimensionless, in [0, 1].
    alpha: f64,
    /// `WindowEnd` (byte offset): the window closes once snd.una passes it; `None` before the
    /// first ACK opens the first window.
    window_end: Option<u64>,
    /// `BytesAcked` in the current window, bytes.
    acked_bytes: u64,
    /// `BytesMarked` in the current window, bytes.
    marked_bytes: u64,
}

impl MarkedFraction {
    /// An estimator with gain `g` (in (0, 1]) starting at `alpha_init` (in [0, 1]); the callers
    /// validate both against their own parameter names.
    pub fn new(g: f64, alpha_init: f64) -> MarkedFraction {
        MarkedFraction { g, alpha: alpha_init, window_end: None, acked_bytes: 0, marked_bytes: 0 }
    }

    /// The current estimate α of the fraction of marked bytes, in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Count one ACK: `acked_bytes` newly delivered, `marked_bytes` of them reported CE-marked.
    /// The first ACK opens the first window, ending at its `snd_nxt` (RFC 8257 §3.3 leaves the
    /// initial `WindowEnd` to the implementation).
    pub fn count(&mut self, acked_bytes: u64, marked_bytes: u64, snd_nxt: u64) {
        self.window_end.get_or_insert(snd_nxt);
        self.acked_bytes += acked_bytes;
        self.marked_bytes += marked_bytes;
    }

    /// The current window's data has all been acknowledged: snd.una is past `WindowEnd`
    /// (RFC 8257 §3.3 step 5). False before the first ACK.
    pub fn window_passed(&self, snd_una: u64) -> bool {
        self.window_end.is_some_and(|end| snd_una > end)
    }

    /// Close the current window and open the next, ending at `snd_nxt`. With `update`, α takes
    /// the window's sample, `α ← (1 − g)·α + g·M` (RFC 8257 §3.3 step 6), M clamped to 1 (an
    /// AccECN byte counter may report CE bytes the ACKs counted here did not deliver, e.g. of
    /// duplicates); without it (Prague before its first CE feedback) the window's counts are
    /// dropped. A window that acknowledged nothing leaves α unchanged.
    pub fn close_window(&mut self, snd_nxt: u64, update: bool) {
        if update && self.acked_bytes > 0 {
            let m = (self.marked_bytes as f64 / self.acked_bytes as f64).min(1.0);
            self.alpha = (1.0 - self.g) * self.alpha + self.g * m;
        }
        self.window_end = Some(snd_nxt);
        self.acked_bytes = 0;
        self.marked_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_window_takes_one_ewma_step() {
        let mut e = MarkedFraction::new(1.0 / 16.0, 1.0);
        e.count(1000, 250, 5000);
        assert!(!e.window_passed(5000), "snd.una must pass WindowEnd, not reach it");
        assert!(e.window_passed(5001));
        e.close_window(9000, true);
        assert_eq!(e.alpha(), (15.0 / 16.0) + 0.25 / 16.0);
        // The next window ends at the snd.nxt given when closing.
        assert!(!e.window_passed(9000));
        assert!(e.window_passed(9001));
    }

    #[test]
    fn a_window_without_update_or_without_bytes_leaves_alpha() {
        let mut e = MarkedFraction::new(0.5, 0.5);
        e.count(1000, 1000, 10);
        e.close_window(20, false);
        assert_eq!(e.alpha(), 0.5);
        e.close_window(30, true);
        assert_eq!(e.alpha(), 0.5, "nothing acknowledged in the window");
    }

    #[test]
    fn more_marked_than_acked_counts_as_all_marked() {
        let mut e = MarkedFraction::new(0.5, 0.0);
        e.count(1000, 3000, 10);
        e.close_window(20, true);
        assert_eq!(e.alpha(), 0.5);
    }
}
