//! Flow control on the sending side: how far beyond snd.una new data may go.
//!
//! Two bounds, both in bytes above snd.una:
//!
//! - the peer's receive window SND.WND (RFC 9293 §3.8.6): the sender never has more than the
//!   advertised window outstanding, i.e. new data stays below SND.UNA + SND.WND (RFC 5681 §3:
//!   the sender sends at most min(cwnd, rwnd));
//! - the sender's own send buffer: a bulk application keeps it full, so the bytes held unacked
//!   (and unsent, which is none once the window has room) are at most its size — in effect the
//!   data outstanding is capped at the buffer.
//!
//! The window is taken from an ACK when it is not older than the one that last set it
//! (RFC 9293 §3.10.7.4: SND.WL2 ≤ SEG.ACK; ccarena's ACKs carry no data, so SEG.SEQ never
//! decides). Sender-side silly window syndrome avoidance (RFC 9293 §3.8.6.2.1): a segment
//! shorter than the MSS is sent only when it carries the last offered byte, or when it is at
//! least half (Fs = 1/2) of the largest window the peer has offered. There is no zero-window
//! probing (§3.8.6.1): ccarena's receiving application reads at once, so the window never closes
//! while nothing is in flight.

/// The flow-control state of one sender.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlowControl {
    /// SND.WND, bytes above SND.WL2 (u64::MAX: unlimited).
    snd_wnd: u64,
    /// SND.WL2: the cumulative ACK of the segment that last set the window.
    snd_wl2: u64,
    /// Largest window the peer has offered, bytes (for SWS avoidance).
    max_snd_wnd: u64,
    /// Send buffer, bytes (u64::MAX: unlimited).
    sndbuf: u64,
}

impl FlowControl {
    /// Before any ACK the window is `initial_rwnd` (the peer's handshake window; `None` =
    /// unlimited); `sndbuf` is the send buffer (`None` = unlimited).
    pub fn new(initial_rwnd: Option<u64>, sndbuf: Option<u64>) -> FlowControl {
        let w = initial_rwnd.unwrap_or(u64::MAX);
        FlowControl {
            snd_wnd: w,
            snd_wl2: 0,
            max_snd_wnd: w,
            sndbuf: sndbuf.unwrap_or(u64::MAX),
        }
    }

    /// An ACK with cumulative ACK `ack` advertised `rwnd` bytes: the window update of
    /// RFC 9293 §3.10.7.4.
    pub fn on_ack(&mut self, ack: u64, rwnd: u64) {
        if ack >= self.snd_wl2 {
            self.snd_wl2 = ack;
            self.snd_wnd = rwnd;
            self.max_snd_wnd = self.max_snd_wnd.max(rwnd);
        }
    }

    /// The first byte new data may not reach: min(SND.WL2 + SND.WND, snd.una + sndbuf).
    pub fn limit(&self, snd_una: u64) -> u64 {
        self.snd_wl2
            .saturating_add(self.snd_wnd)
            .min(snd_una.saturating_add(self.sndbuf))
    }

    /// Length of the next new segment starting at `snd_nxt`, with `offered` the end of the
    /// offered data and `mss` the segment size; `None` when flow control holds it back.
    pub fn next_len(&self, snd_una: u64, snd_nxt: u64, offered: u64, mss: u64) -> Option<u32> {
        let want = offered.saturating_sub(snd_nxt).min(mss);
        if want == 0 {
            return None;
        }
        let room = self.limit(snd_una).saturating_sub(snd_nxt);
        let len = want.min(room);
        let max_window = self.max_snd_wnd.min(self.sndbuf);
        let sendable =
            len == want || (len > 0 && len.saturating_mul(2) >= max_window.min(u64::MAX / 2));
        sendable.then_some(len as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn unlimited_by_default() {
        let f = FlowControl::new(None, None);
        assert_eq!(f.next_len(0, 1_000_000, u64::MAX, MSS), Some(MSS as u32));
    }

    #[test]
    fn window_bounds_new_data_above_the_ack_that_set_it() {
        let mut f = FlowControl::new(Some(10 * MSS), None);
        assert_eq!(f.next_len(0, 9 * MSS, u64::MAX, MSS), Some(MSS as u32));
        assert_eq!(f.next_len(0, 10 * MSS, u64::MAX, MSS), None);
        f.on_ack(4 * MSS, 10 * MSS);
        assert_eq!(f.limit(4 * MSS), 14 * MSS);
        // An older ACK (reordered) does not move the window back.
        f.on_ack(2 * MSS, 2 * MSS);
        assert_eq!(f.limit(4 * MSS), 14 * MSS);
        // A shrunken window from a newer ACK is obeyed.
        f.on_ack(5 * MSS, 3 * MSS);
        assert_eq!(f.next_len(5 * MSS, 8 * MSS, u64::MAX, MSS), None);
    }

    #[test]
    fn send_buffer_caps_outstanding_bytes() {
        let f = FlowControl::new(None, Some(5 * MSS));
        assert_eq!(f.next_len(3 * MSS, 7 * MSS, u64::MAX, MSS), Some(MSS as u32));
        assert_eq!(f.next_len(3 * MSS, 8 * MSS, u64::MAX, MSS), None);
    }

    #[test]
    fn silly_window_avoidance() {
        // 400 bytes of room in a 10-MSS window: held back (less than an MSS and than half the
        // largest window) unless it is the last of the data.
        let f = FlowControl::new(Some(10 * MSS), None);
        assert_eq!(f.next_len(0, 9600, u64::MAX, MSS), None);
        assert_eq!(f.next_len(0, 9600, 9900, MSS), Some(300));
        // A window of 1.5 MSS: after one full segment the 500 bytes left are a third of it.
        let f = FlowControl::new(Some(1500), None);
        assert_eq!(f.next_len(0, 0, u64::MAX, MSS), Some(MSS as u32));
        assert_eq!(f.next_len(0, 1000, u64::MAX, MSS), None);
        // A window smaller than the MSS is still used: it is all of the largest window.
        let f = FlowControl::new(Some(800), None);
        assert_eq!(f.next_len(0, 0, u64::MAX, MSS), Some(800));
    }
}
