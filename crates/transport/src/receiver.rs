//! The receiving side: reassembly, cumulative and selective acknowledgments, delayed ACKs,
//! timestamp echo and ECN echo.
//!
//! # How a caller drives it
//!
//! ```text
//! on_segment(now, &seg)      for every data segment that arrives; returns bytes delivered in order
//! poll_ack(now)              after every on_segment and handle_timeout: the ACK to send, if any
//! handle_timeout(now)        when now >= poll_timeout() (the delayed-ACK deadline)
//! ```
//!
//! # ACK policy (RFC 5681 §4.2, RFC 1122 §4.2.3.2)
//!
//! In-order data is acknowledged once `ack_every_segments` full segments' worth of bytes is
//! unacknowledged, or `delayed_ack` after the first unacknowledged byte arrived, whichever comes
//! first. An ACK is sent at once for a segment above a hole (out of order), a segment that fills
//! all or part of a hole, a duplicate segment, and (with ECN) a CE-marked segment.
//!
//! # Quick-ACK mode (Linux; [`Receiver::set_quickack`])
//!
//! Off by default. When on, the receiver acknowledges every in-order segment at once for its
//! first `N` ACKs — at the first data segment, and again after data has been idle longer than a
//! given time — and then falls back to the delayed-ACK policy above. This is Linux's quick-ACK
//! mode (net/ipv4/tcp_input.c: `tcp_event_data_recv` calls `tcp_incr_quickack` on the first
//! data and when the gap since the last data exceeds the receiver's RTO; `tcp_incr_quickack`
//! grants `min(16, rcv_wnd / (2·rcv_mss))` quick ACKs, at least 2; net/ipv4/tcp_output.c:
//! `tcp_dec_quickack_mode` spends one per ACK sent). With a receive buffer the grant is bounded
//! by `rcvbuf_bytes / (2·MSS)` as Linux bounds it by the window. Not modelled: quick-ACK
//! entered for CE marks, duplicate or out-of-window data, and Linux's interactive ("pingpong")
//! mode that suspends it.
//!
//! With [`Receiver::set_ack_short_segments`] (Linux; off by default), an in-order segment
//! shorter than the MSS is acknowledged at once: Linux's `tcp_measure_rcv_mss` marks the ACK
//! "pushed" for a sub-MSS segment and `tcp_cleanup_rbuf` (net/ipv4/tcp.c) sends it as soon as
//! the application's read empties the receive queue — at once here, where the application reads
//! in-order data as it arrives. So the short last segment of a transfer does not wait for the
//! delayed-ACK timer (measured here: a 102,400-byte transfer on a 40 ms path completes in 166 ms
//! on Linux, 204 ms without this rule).
//!
//! # SACK (RFC 2018 §4)
//!
//! Up to [`MAX_SACK_BLOCKS`] blocks: the first is the received range containing the segment that
//! triggered the ACK, the others are the most recently reported ranges that it does not contain,
//! newest first (a history of the last 8 first blocks is kept, so merges free slots for older
//! ranges). The receiver never reneges.
//!
//! # D-SACK (RFC 2883 §4)
//!
//! With [`ReceiverConfig::dsack`], a segment that carries bytes already received (below
//! RCV.NXT, or inside a range already held above a hole) is acknowledged at once, and that ACK's
//! first SACK block is the duplicate range (the first contiguous one, if the segment spans
//! several); the SACK blocks that follow are the usual ones, so when the duplicate lies above
//! RCV.NXT the second block is the received range containing it. A D-SACK block is reported
//! once, in the next ACK, and takes one of the [`MAX_SACK_BLOCKS`] slots.
//!
//! # Receive window (RFC 9293 §3.8.6)
//!
//! With a receive buffer (`rcvbuf_bytes`), every ACK advertises the buffer's free space: the
//! receiving application reads in-order data at once, so what occupies the buffer is the
//! out-of-order data held above a hole. The right edge (RCV.NXT + RCV.WND) never moves left: the
//! window shrinks only as RCV.NXT advances into it. Segments beyond the window are still
//! accepted (a sender that honours the window sends none).
//!
//! # Receive-buffer autotuning (Linux; [`Receiver::set_rcvbuf_autotuning`])
//!
//! Off by default. When on (and there is no fixed `rcvbuf_bytes`), the receiver advertises
//! what a Linux 6.x receiver with the default `tcp_rmem` and `tcp_moderate_rcvbuf = 1` does
//! ([`RcvBufAutotuning`] holds the sysctls):
//!
//! - **Start** (`tcp_select_initial_window`, `tcp_init_buffer_space`): the buffer is
//!   `tcp_rmem[1]`; the window a buffer allows is its size times the payload share of the
//!   memory it takes ([`RcvBufAutotuning::window_share_256`], Linux's `scaling_ratio`), and the
//!   window clamp is that less one MSS (the segment `tcp_init_buffer_space` reserves). The
//!   SYN-ACK's window, and the starting `rcv_ssthresh`, is that window capped at 65,535 bytes
//!   (an unscaled SYN window) rounded down to whole MSS: 65,160 bytes for MSS 1448.
//! - **Per segment** (`tcp_grow_window`): each data segment raises `rcv_ssthresh` by two MSS,
//!   up to the clamp, and an ACK advertises min(`rcv_ssthresh`, the free buffer's window) —
//!   so the window grows by two segments per segment received, twice as fast as a sender in
//!   slow start fills it. A segment that raises `rcv_ssthresh` asks for one quick ACK
//!   (Linux's `icsk_ack.quick |= 1`), so while the window grows each segment is ACKed at once.
//! - **Per RTT** (`tcp_rcv_space_adjust`, "dynamic right-sizing"): once an RTT has passed
//!   since the last measurement, the bytes delivered to the application in it (`copied`) are
//!   compared with the largest earlier measurement (`space`, starting at 10 MSS); when more,
//!   the clamp becomes `2·copied·(1 + 2·(copied − space)/space)` (room for a sender that
//!   doubles its rate each RTT) plus the out-of-order data held, as a buffer of at most
//!   `tcp_rmem[2]` ([`RcvBufAutotuning::max_rcvbuf_bytes`]); the buffer never shrinks. The RTT
//!   is the receiver's estimate ([`Receiver::on_rcv_rtt_sample`], Linux's `rcv_rtt_est`): the
//!   samples are full round trips (Linux times them from the timestamps its ACKs get echoed,
//!   so they include the queue the data waited in); a lower sample replaces the estimate at
//!   once, a higher one moves it by 1/8 (`tcp_rcv_rtt_update`, Linux ≥ 6.16). Measured here on
//!   a 20 Mbit/s, 40 ms path with a 4-BDP queue that CUBIC keeps full: the receiver's
//!   `rcv_rtt` (`ss -tin`) 123–199 ms, following the RTT, not its 40 ms minimum; the window
//!   grew to 3.4 MB.
//! - Windows are advertised in units of the window scale (1024 bytes with `tcp_rmem[2]` of
//!   32 MB), rounded up as Linux rounds `rcv_ssthresh` (`ALIGN`).
//!
//! Measured here (Linux 6.18.44, default sysctls: tcp_rmem 4096 131072 33554432,
//! tcp_moderate_rcvbuf 1, tcp_adv_win_scale 1; one CUBIC flow on a `ccarena run --backend
//! kernel` dumbbell with the relay's pcap at the sender, 20 Mbit/s 40 ms and 100 Mbit/s 20 ms):
//! SYN-ACK window 65,160, window scale 1024; the first six ACKs 68,608, 71,680, 74,752,
//! 76,800, 79,872, 80,896, then 80,896 until the second RTT's measurement; then at each RTT the
//! clamp rose to 169,984, 324,608, 541,696 bytes (20 Mbit/s: `copied` 31,856, 57,920, 105,704
//! bytes), each reached two MSS per segment; 22 single-segment ACKs at the start (16 granted +
//! 6 while the window grew). The window stays ~3× the flight, so it does not limit a single
//! flow on these paths.
//!
//! # Timestamps (RFC 7323 §4.3)
//!
//! `TS.Recent` takes a segment's TSval when `TSval ≥ TS.Recent` and `SEG.SEQ ≤ Last.ACK.sent`, so
//! a delayed ACK echoes the earliest unacknowledged segment, a hole-filling segment's TSval is
//! echoed, and out-of-order segments are not. `ts_recv` is the arrival time of the echoed segment.
//!
//! # ECN ([`EcnMode`])
//!
//! Classic (RFC 3168 §6.1.3): a CE-marked segment is acknowledged at once and turns ECE on in
//! every following ACK until a segment carrying CWR arrives (a segment with both turns it off
//! then on again).
//!
//! DCTCP (RFC 8257 §3.2): ECE reflects the CE codepoint of the segments each ACK acknowledges,
//! exactly, and CWR is ignored. The receiver keeps one bit of state, the CE codepoint of the last
//! segment; when a segment arrives whose CE differs from it, the data received before that
//! segment is acknowledged at once with the old state's ECE (if any of it was still
//! unacknowledged), then the state flips and the segment follows the normal delayed-ACK policy.
//! So with delayed ACKs a sender still learns exactly how many bytes were marked.
//!
//! Accurate ECN (RFC 9768 §3.2): the receiver counts CE-marked packets (r.cep, from 5,
//! §3.2.1) and the payload bytes received in each ECN codepoint (r.e0b and r.e1b from 1, r.ceb
//! from 0, §3.2.1); every ACK carries r.cep mod 8 as the ACE field and, unless the mode is
//! [`EcnMode::AccEcnAceOnly`], the three byte counters mod 2^24 as the AccECN option
//! ([`AccEcnFeedback`]). ECE is never set and CWR is ignored (the flags are ACE's). So that a
//! sender can tell how many times ACE wrapped (§3.2.2.5.1), an ACK is sent at once when a
//! CE-marked segment follows one that was not ("change-triggered"), and when
//! [`ACCECN_CE_PER_ACK`] CE-marked segments have arrived since the last ACK
//! ("increment-triggered"): with no ACK lost, ACE then never moves by 8 or more between ACKs.

use std::collections::VecDeque;

use ccarena_cc::{Duration, SimTime};

use crate::accecn::{ACCECN_CEP_INIT, ACCECN_ECT_BYTES_INIT};
use crate::segment::{
    AccEcnFeedback, AccEcnOption, AckSegment, DataSegment, Ecn, SackBlock, ACCECN_OPTION_MODULUS,
    ACE_MODULUS, MAX_SACK_BLOCKS,
};
use crate::sender::ConfigError;

/// Received ranges remembered for SACK reporting, most recent first. More than the three an ACK
/// carries, so that when ranges merge the freed slots are filled with the next most recent
/// (RFC 2018 §4: "as many distinct SACK blocks as possible"); ranges older than this are not
/// reported again until data arrives next to them. Linux keeps 4.
const SACK_HISTORY: usize = 8;

/// CE-marked segments since the last ACK that make an AccECN receiver acknowledge at once
/// (RFC 9768 §3.2.2.5.1's `n`: SHOULD be 2, MUST be 2 to 6, so that ACE, mod 8, cannot wrap
/// between two ACKs).
pub const ACCECN_CE_PER_ACK: u32 = 2;

/// Linux's SACK compression (`tcp_comp_sack_*` sysctls, Linux ≥ 4.18, commit 5d9f4262b7ea
/// "tcp: add SACK compression"; [`Receiver::set_sack_compression`]): while data is held above a
/// hole, the receiver answers the first [`SackCompression::immediate_acks`] out-of-order
/// segments at a given RCV.NXT at once (what the sender's fast retransmit needs) and the
/// later ones with one ACK per [`SackCompression::delay`] (at most an RTT/20), or at once after
/// [`SackCompression::max_compressed`] were held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SackCompression {
    /// Longest a SACK waits (`tcp_comp_sack_delay_ns`; Linux's default 1 ms).
    pub delay: Duration,
    /// Out-of-order segments held back before an ACK goes at once (`tcp_comp_sack_nr`: 44).
    pub max_compressed: u32,
    /// Out-of-order segments per RCV.NXT acknowledged at once (`TCP_FASTRETRANS_THRESH`: 3).
    pub immediate_acks: u32,
}

impl SackCompression {
    /// Linux 6.x's defaults (measured on this project's kernel: `tcp_comp_sack_delay_ns` =
    /// 1000000, `tcp_comp_sack_nr` = 44).
    pub const LINUX: SackCompression =
        SackCompression { delay: Duration::from_micros(1000), max_compressed: 44, immediate_acks: 3 };
}

/// SACK compression's state: the RCV.NXT its counters are for, and the counters.
#[derive(Clone, Copy, Debug, Default)]
struct SackCompressionState {
    rcv_nxt: u64,
    immediate: u32,
    compressed: u32,
}

/// The sysctls of Linux's receive-buffer autotuning ([`Receiver::set_rcvbuf_autotuning`]; the
/// module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcvBufAutotuning {
    /// The buffer a connection starts with, bytes (`net.ipv4.tcp_rmem[1]`; Linux default
    /// 131,072).
    pub initial_rcvbuf_bytes: u64,
    /// The largest buffer autotuning grows to, bytes (`net.ipv4.tcp_rmem[2]`; 33,554,432 since
    /// Linux 6.17, 6 MB before).
    pub max_rcvbuf_bytes: u64,
    /// The share of a buffer's memory that is payload, in 256ths (Linux 6.5+'s
    /// `scaling_ratio`, payload over `skb->truesize`): the window a buffer of `b` bytes allows
    /// is `b·share/256`. 160 fits the 80,896-byte clamp measured here from a 131,072-byte
    /// buffer (1448-byte payloads on a veth); Linux starts at 128 (`tcp_adv_win_scale = 1`).
    pub window_share_256: u32,
    /// The window's unit on the wire, bytes (1 << the window scale the receiver offers: 1024
    /// with `tcp_rmem[2]` of 32 MB, measured).
    pub window_unit_bytes: u64,
}

impl RcvBufAutotuning {
    /// Linux 6.18's defaults as measured on this project's machines (the module documentation).
    pub const LINUX: RcvBufAutotuning = RcvBufAutotuning {
        initial_rcvbuf_bytes: 131_072,
        max_rcvbuf_bytes: 33_554_432,
        window_share_256: 160,
        window_unit_bytes: 1024,
    };

    /// The window a buffer of `buf_bytes` allows, bytes (Linux's `tcp_win_from_space`).
    pub fn window_from_buffer(&self, buf_bytes: u64) -> u64 {
        buf_bytes * self.window_share_256 as u64 / 256
    }

    /// The free window a receiver offers, bytes: what a buffer of `buf_bytes` allows
    /// ([`RcvBufAutotuning::window_from_buffer`]) less the `held_bytes` waiting in it (above a
    /// hole, or for the application), at most `rcv_ssthresh_bytes`, rounded up to the window
    /// scale's unit as Linux's `__tcp_select_window` rounds `rcv_ssthresh`. A TCP receiver and
    /// an MPTCP connection's shared buffer (with a subflow's `rcv_ssthresh`) both offer this.
    #[inline]
    pub fn free_window(&self, buf_bytes: u64, held_bytes: u64, rcv_ssthresh_bytes: u64) -> u64 {
        let w = rcv_ssthresh_bytes.min(self.window_from_buffer(buf_bytes).saturating_sub(held_bytes));
        w.div_ceil(self.window_unit_bytes) * self.window_unit_bytes
    }

    /// The buffer dynamic right-sizing asks for, bytes (Linux's `tcp_rcvbuf_grow`, and MPTCP's
    /// `mptcp_rcvbuf_grow`): `copied` bytes were delivered in the last RTT, `space` the most
    /// before (`copied > space > 0`), `ooo_bytes` are held above a hole. Room for twice the
    /// delivery ("DRS is always one RTT late") plus twice its growth (a sender that doubles its
    /// rate each RTT), at most [`RcvBufAutotuning::max_rcvbuf_bytes`].
    pub fn grown_rcvbuf(&self, copied: u64, space: u64, ooo_bytes: u64) -> u64 {
        let base = 2 * copied as u128;
        let grow = base * (copied - space) as u128 / space as u128;
        let rcvwin = (base + 2 * grow) as u64 + ooo_bytes;
        rcvwin.saturating_mul(256).div_ceil(self.window_share_256 as u64).min(self.max_rcvbuf_bytes)
    }

    /// The window a SYN-ACK offers with MSS `mss_bytes`, bytes: the initial buffer's window,
    /// at most 65,535 (an unscaled SYN window), rounded down to whole segments.
    pub fn initial_window(&self, mss_bytes: u32) -> u64 {
        let mss = mss_bytes as u64;
        let w = self.window_from_buffer(self.initial_rcvbuf_bytes).min(65_535);
        if w > mss { w / mss * mss } else { w }
    }
}

/// Receive-buffer autotuning's state (Linux's `sk_rcvbuf`, `window_clamp`, `rcv_ssthresh`,
/// `rcvq_space`).
#[derive(Clone, Copy, Debug)]
struct Autotune {
    cfg: RcvBufAutotuning,
    /// The buffer, bytes.
    rcvbuf: u64,
    /// Largest window the buffer allows now, bytes.
    window_clamp: u64,
    /// The window's slow-start threshold, bytes: what an ACK advertises at most.
    rcv_ssthresh: u64,
    /// Largest bytes-per-RTT measured so far.
    space: u64,
    /// Where and when the current measurement started (None before the first data).
    space_seq: u64,
    space_time: Option<SimTime>,
    /// Whether this receiver measures its own delivery each RTT (a TCP connection) or its
    /// buffer follows another's measurement (an MPTCP subflow: [`Receiver::follow_rcvbuf`]).
    measures: bool,
}

impl Autotune {
    /// Grow the buffer to `buf` bytes (never shrink it), the window clamp with it.
    fn grow_to(&mut self, buf: u64) {
        if buf > self.rcvbuf {
            self.rcvbuf = buf;
            self.window_clamp = self.cfg.window_from_buffer(buf);
        }
    }
}

/// Receiver parameters. Every value is explicit (Linux-like: delayed ACK 40 ms, every 2nd
/// segment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Maximum segment size, bytes: what a "full-sized segment" is. At least 1.
    pub mss_bytes: u32,
    /// Longest an in-order segment waits for its ACK (RFC 5681 §4.2: under 500 ms; Linux 40 ms).
    /// Zero acknowledges every segment at once.
    pub delayed_ack: Duration,
    /// Acknowledge at least every this many full-sized segments (RFC 5681 §4.2: 2). At least 1.
    pub ack_every_segments: u32,
    /// How CE marks are echoed with ECE.
    pub ecn: EcnMode,
    /// Receive buffer, bytes: the window advertised is the space left in it (see the module
    /// documentation). `None`: unlimited (every ACK advertises `u64::MAX`).
    pub rcvbuf_bytes: Option<u64>,
    /// Report duplicate segments with a D-SACK block (RFC 2883 §4; Linux's `tcp_dsack`, on by
    /// default). `false`: plain SACK (RFC 2018).
    pub dsack: bool,
}

/// How a receiver echoes CE marks (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EcnMode {
    /// No ECN: ECE is never set.
    Off,
    /// RFC 3168 §6.1.3: ECE latched from a CE mark until a segment with CWR arrives.
    Classic,
    /// RFC 8257 §3.2 (DCTCP): ECE mirrors each segment's CE exactly; an immediate ACK on every
    /// change of CE state.
    Dctcp,
    /// RFC 9768 (Accurate ECN): the ACE field and the AccECN option's byte counters in every
    /// ACK.
    AccEcn,
    /// RFC 9768 with the ACE field alone: no ACK carries the AccECN option (as when a path
    /// strips it, §3.2.3.2), so the sender has only the CE packet count mod 8.
    AccEcnAceOnly,
}

impl EcnMode {
    /// Accurate ECN feedback ([`EcnMode::AccEcn`] or [`EcnMode::AccEcnAceOnly`]).
    pub const fn is_accecn(self) -> bool {
        matches!(self, EcnMode::AccEcn | EcnMode::AccEcnAceOnly)
    }
}

impl ReceiverConfig {
    /// Check the values.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field that is out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.mss_bytes == 0 {
            return Err(ConfigError {
                field: "mss_bytes",
                reason: "must be at least 1",
            });
        }
        if self.ack_every_segments == 0 {
            return Err(ConfigError {
                field: "ack_every_segments",
                reason: "must be at least 1",
            });
        }
        if self.rcvbuf_bytes.is_some_and(|b| b < self.mss_bytes as u64) {
            return Err(ConfigError {
                field: "rcvbuf_bytes",
                reason: "must be at least one MSS (or None for unlimited)",
            });
        }
        Ok(())
    }
}

/// Counters of what the receiver has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Data segments received, duplicates included.
    pub segments_received: u64,
    /// Payload bytes received, duplicates included.
    pub bytes_received: u64,
    /// Payload bytes received that had already been received.
    pub duplicate_bytes: u64,
    /// Segments that arrived above a hole.
    pub out_of_order_segments: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// Segments that arrived CE-marked, duplicates included.
    pub ce_segments: u64,
    /// Payload bytes of the segments that arrived CE-marked, duplicates included.
    pub ce_bytes: u64,
}

/// An AccECN receiver's counters (RFC 9768 §3.2.1), kept in full; ACKs carry them modulo the
/// field sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AccEcnCounters {
    /// r.cep: CE-marked packets, from [`ACCECN_CEP_INIT`].
    cep: u64,
    /// r.e0b: payload bytes received ECT(0), from [`ACCECN_ECT_BYTES_INIT`].
    e0b: u64,
    /// r.e1b: payload bytes received ECT(1), from [`ACCECN_ECT_BYTES_INIT`].
    e1b: u64,
    /// r.ceb: payload bytes received CE, from 0.
    ceb: u64,
    /// CE-marked segments since the last ACK (for the increment-triggered ACK).
    ce_since_ack: u32,
    /// The previous segment was CE-marked (for the change-triggered ACK).
    last_was_ce: bool,
}

impl AccEcnCounters {
    fn new() -> AccEcnCounters {
        AccEcnCounters {
            cep: ACCECN_CEP_INIT,
            e0b: ACCECN_ECT_BYTES_INIT,
            e1b: ACCECN_ECT_BYTES_INIT,
            ceb: 0,
            ce_since_ack: 0,
            last_was_ce: false,
        }
    }

    /// Count a data segment of `len_bytes` payload that arrived with `ecn`. Returns true when it
    /// calls for an immediate ACK (RFC 9768 §3.2.2.5.1: change- or increment-triggered).
    fn on_segment(&mut self, ecn: Ecn, len_bytes: u64) -> bool {
        match ecn {
            Ecn::NotEct => {}
            Ecn::Ect0 => self.e0b += len_bytes,
            Ecn::Ect1 => self.e1b += len_bytes,
            Ecn::Ce => {
                self.cep += 1;
                self.ceb += len_bytes;
                self.ce_since_ack += 1;
            }
        }
        let change = ecn.is_ce() && !self.last_was_ce;
        self.last_was_ce = ecn.is_ce();
        change || self.ce_since_ack >= ACCECN_CE_PER_ACK
    }

    /// The feedback an ACK carries now (with the option when `option`), restarting the
    /// increment-triggered count.
    fn feedback(&mut self, option: bool) -> AccEcnFeedback {
        self.ce_since_ack = 0;
        let field = |v: u64| (v % ACCECN_OPTION_MODULUS) as u32;
        AccEcnFeedback {
            ace: (self.cep % ACE_MODULUS) as u8,
            option: option.then(|| AccEcnOption { e0b: field(self.e0b), ceb: field(self.ceb), e1b: field(self.e1b) }),
        }
    }
}

/// The receiving half of a connection. See the module documentation.
#[derive(Clone, Debug)]
pub struct Receiver {
    cfg: ReceiverConfig,
    rcv_nxt: u64,
    /// Received ranges above rcv_nxt: sorted, disjoint, not adjacent.
    ooo: VecDeque<(u64, u64)>,
    /// Bytes in `ooo`: held in the receive buffer until the hole below them fills.
    ooo_bytes: u64,
    /// Right edge of the window last advertised (RCV.NXT + RCV.WND), never moved left.
    rcv_right_edge: u64,
    /// Ranges to report as SACK blocks, most recent first.
    recent: [SackBlock; SACK_HISTORY],
    recent_len: usize,
    ts_recent: SimTime,
    ts_recent_recv: SimTime,
    last_ack_sent: u64,
    unacked_bytes: u64,
    ack_now: bool,
    ack_deadline: Option<SimTime>,
    /// Linux's SACK compression, when on, and its counters.
    sack_compression: Option<(SackCompression, SackCompressionState)>,
    /// Classic: the ECE latch. DCTCP: the CE codepoint of the last segment (RFC 8257 `DCTCP.CE`).
    ece: bool,
    /// DCTCP: the ACK that a change of CE state sent at once, waiting for `poll_ack`.
    state_change_ack: Option<AckSegment>,
    /// The duplicate range the next ACK reports first (RFC 2883 §4).
    dsack: Option<SackBlock>,
    /// AccECN's counters (RFC 9768 §3.2.1), in the AccECN modes only.
    accecn: Option<AccEcnCounters>,
    /// Quick-ACK mode: the ACKs granted on entry (0: off), the idle gap that re-enters it, the
    /// quick ACKs left, and when in-order data last arrived.
    quickack_grant: u32,
    quickack_idle: Option<Duration>,
    quickack_left: u32,
    last_data_at: Option<SimTime>,
    /// ACK a sub-MSS in-order segment at once (Linux's pushed ACK).
    ack_short_segments: bool,
    /// Receive-buffer autotuning (Linux), when on.
    autotune: Option<Autotune>,
    /// The receiver's RTT estimate ([`Receiver::on_rcv_rtt_sample`]): the period of
    /// autotuning's measurement and the bound on SACK compression's delay.
    rcv_rtt: Option<Duration>,
    stats: ReceiverStats,
}

impl Receiver {
    /// A receiver expecting byte 0.
    ///
    /// # Panics
    /// If `cfg` fails [`ReceiverConfig::validate`].
    pub fn new(cfg: ReceiverConfig) -> Receiver {
        if let Err(e) = cfg.validate() {
            panic!("invalid ReceiverConfig: {e}");
        }
        Receiver {
            cfg,
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            ooo_bytes: 0,
            rcv_right_edge: 0,
            recent: [SackBlock::default(); SACK_HISTORY],
            recent_len: 0,
            ts_recent: SimTime::ZERO,
            ts_recent_recv: SimTime::ZERO,
            last_ack_sent: 0,
            unacked_bytes: 0,
            ack_now: false,
            ack_deadline: None,
            sack_compression: None,
            ece: false,
            state_change_ack: None,
            dsack: None,
            accecn: cfg.ecn.is_accecn().then(AccEcnCounters::new),
            quickack_grant: 0,
            quickack_idle: None,
            quickack_left: 0,
            last_data_at: None,
            ack_short_segments: false,
            autotune: None,
            rcv_rtt: None,
            stats: ReceiverStats::default(),
        }
    }

    /// Turn on Linux's quick-ACK mode (see the module documentation): the first `segments`
    /// in-order segments are each acknowledged at once (`0` turns the mode off — the RFC 5681
    /// receiver), bounded by `rcvbuf_bytes / (2·MSS)` (at least 2) when there is a receive
    /// buffer (with autotuning, turned on first, by its initial window / (2·MSS)); and when
    /// `idle_restart` is given, in-order data arriving more than that after the previous
    /// in-order data grants them again (Linux compares with the receiver's RTO).
    pub fn set_quickack(&mut self, segments: u32, idle_restart: Option<Duration>) {
        let by_window = self
            .initial_window()
            .or(self.cfg.rcvbuf_bytes)
            .map_or(u64::MAX, |b| (b / (2 * self.cfg.mss_bytes as u64)).max(2));
        self.quickack_grant = (segments as u64).min(by_window) as u32;
        self.quickack_idle = idle_restart;
    }

    /// Turn on Linux's SACK compression with `params` (see [`SackCompression`]); off (every
    /// out-of-order segment acknowledged at once, RFC 5681 §4.2) until called.
    pub fn set_sack_compression(&mut self, params: SackCompression) {
        self.sack_compression = Some((params, SackCompressionState::default()));
    }

    /// An out-of-order segment arrived: acknowledge it at once, or, with SACK compression,
    /// hold the ACK back as Linux's `__tcp_ack_snd_check` does (the first `immediate_acks` at a
    /// RCV.NXT at once, then one per `min(delay, RTT/20)`, at once after `max_compressed`).
    fn ack_out_of_order(&mut self, now: SimTime) {
        let rcv_nxt = self.rcv_nxt;
        let rtt = self.rcv_rtt;
        let Some((params, st)) = self.sack_compression.as_mut() else {
            self.ack_now = true;
            return;
        };
        if st.rcv_nxt != rcv_nxt {
            *st = SackCompressionState { rcv_nxt, ..SackCompressionState::default() };
        }
        if st.immediate < params.immediate_acks {
            st.immediate += 1;
            self.ack_now = true;
            return;
        }
        if st.compressed >= params.max_compressed {
            self.ack_now = true;
            return;
        }
        st.compressed += 1;
        // Linux: 5% of the RTT, at most the sysctl's delay.
        let delay = rtt.map_or(params.delay, |r| params.delay.min(Duration(r.as_nanos() / 20)));
        let due = now + delay;
        self.ack_deadline = Some(self.ack_deadline.map_or(due, |d| d.min(due)));
    }

    /// Turn on Linux's receive-buffer autotuning with `sysctls` (see the module documentation):
    /// the window starts at [`RcvBufAutotuning::initial_window`] and grows as Linux's does.
    /// Call before any data arrives; it takes the place of a fixed `rcvbuf_bytes`.
    ///
    /// # Panics
    /// If the config has a fixed `rcvbuf_bytes`, or `sysctls` allows no window.
    pub fn set_rcvbuf_autotuning(&mut self, sysctls: RcvBufAutotuning) {
        assert!(self.cfg.rcvbuf_bytes.is_none(), "autotuning replaces a fixed rcvbuf_bytes");
        let mss = self.cfg.mss_bytes as u64;
        let initial = sysctls.initial_window(self.cfg.mss_bytes);
        assert!(initial > 0 && sysctls.window_unit_bytes > 0, "autotuning allows no window");
        // tcp_init_buffer_space reserves one segment below the buffer's window.
        let clamp = sysctls.window_from_buffer(sysctls.initial_rcvbuf_bytes).saturating_sub(mss).max(2 * mss);
        self.autotune = Some(Autotune {
            cfg: sysctls,
            rcvbuf: sysctls.initial_rcvbuf_bytes,
            window_clamp: clamp,
            rcv_ssthresh: initial.min(clamp),
            space: 10 * mss,
            space_seq: 0,
            space_time: None,
            measures: true,
        });
    }

    /// Linux's autotuning on an MPTCP subflow: as [`Receiver::set_rcvbuf_autotuning`] (the
    /// window starts at the SYN-ACK's and `rcv_ssthresh` grows two MSS per segment up to the
    /// clamp), but the subflow does not measure its own delivery: its buffer and clamp grow
    /// when the connection's measurement grows the connection's buffer
    /// ([`Receiver::follow_rcvbuf`]; net/mptcp/protocol.c, `mptcp_rcv_space_adjust` makes the
    /// subflows "follow along").
    ///
    /// # Panics
    /// As [`Receiver::set_rcvbuf_autotuning`].
    pub fn set_rcvbuf_autotuning_follower(&mut self, sysctls: RcvBufAutotuning) {
        self.set_rcvbuf_autotuning(sysctls);
        if let Some(a) = self.autotune.as_mut() {
            a.measures = false;
        }
    }

    /// Grow the autotuned buffer to `rcvbuf_bytes` (and the window clamp with it); never
    /// shrinks it. No effect with autotuning off.
    pub fn follow_rcvbuf(&mut self, rcvbuf_bytes: u64) {
        if let Some(a) = self.autotune.as_mut() {
            a.grow_to(rcvbuf_bytes);
        }
    }

    /// The receiver's configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.cfg
    }

    /// Autotuning's `rcv_ssthresh`, bytes (the most an ACK advertises now); None when off.
    pub fn rcv_ssthresh_bytes(&self) -> Option<u64> {
        self.autotune.map(|a| a.rcv_ssthresh)
    }

    /// A round-trip sample for the receiver's RTT estimate (Linux's `tcp_rcv_rtt_update` with
    /// timestamps, since 6.16: the first sample, or one lower than the estimate, replaces it;
    /// a higher one moves it by 1/8), the period autotuning measures over and the RTT/20 bound
    /// on SACK compression's delay. Until the first sample the buffer does not grow and SACK
    /// compression waits its full `delay`. Linux takes one sample per new echoed timestamp
    /// (`tcp_rcv_rtt_measure_ts`); it skips a higher sample while unread data waits in the
    /// receive queue, which never happens here (the application reads at once).
    pub fn on_rcv_rtt_sample(&mut self, sample: Duration) {
        self.rcv_rtt = Some(match self.rcv_rtt {
            Some(est) if sample >= est => Duration(est.as_nanos() - est.as_nanos() / 8 + sample.as_nanos() / 8),
            _ => sample,
        });
    }

    /// The receiver's RTT estimate ([`Receiver::on_rcv_rtt_sample`]), `None` before a sample.
    pub fn rcv_rtt(&self) -> Option<Duration> {
        self.rcv_rtt
    }

    /// The window the connection's SYN-ACK offered, bytes, with autotuning on (the sender's
    /// window before the first ACK); None otherwise.
    pub fn initial_window(&self) -> Option<u64> {
        self.autotune.map(|a| a.cfg.initial_window(self.cfg.mss_bytes))
    }

    /// Autotuning's buffer now, bytes (Linux's `sk_rcvbuf`); None when off.
    pub fn rcvbuf_bytes(&self) -> Option<u64> {
        self.autotune.map(|a| a.rcvbuf)
    }

    /// A data segment with new bytes arrived (Linux's `tcp_grow_window`): raise `rcv_ssthresh`
    /// by two MSS up to the clamp, asking for a quick ACK when it rose.
    fn autotune_grow(&mut self) {
        let mss = self.cfg.mss_bytes as u64;
        let Some(a) = self.autotune.as_mut() else { return };
        let free = a.cfg.window_from_buffer(a.rcvbuf).saturating_sub(self.ooo_bytes);
        if a.rcv_ssthresh < a.window_clamp && a.rcv_ssthresh < free {
            a.rcv_ssthresh = (a.rcv_ssthresh + 2 * mss).min(a.window_clamp);
            self.quickack_left |= 1;
        }
    }

    /// In-order data was delivered at `now` (Linux's `tcp_rcv_space_adjust`): once an RTT has
    /// passed since the measurement began, grow the buffer if more was delivered than ever.
    fn autotune_measure(&mut self, now: SimTime) {
        let (rcv_nxt, ooo_end, rtt) = (self.rcv_nxt, self.ooo.back().map(|r| r.1), self.rcv_rtt);
        let Some(a) = self.autotune.as_mut().filter(|a| a.measures) else { return };
        let Some(start) = a.space_time else {
            a.space_seq = rcv_nxt;
            a.space_time = Some(now);
            return;
        };
        match rtt {
            Some(rtt) if rtt > Duration::ZERO && now.saturating_since(start) >= rtt => {}
            _ => return,
        }
        let copied = rcv_nxt - a.space_seq;
        if copied > a.space {
            a.grow_to(a.cfg.grown_rcvbuf(copied, a.space, ooo_end.map_or(0, |e| e - rcv_nxt)));
            a.space = copied;
        }
        a.space_seq = rcv_nxt;
        a.space_time = Some(now);
    }

    /// Acknowledge an in-order segment shorter than the MSS at once (Linux; see the module
    /// documentation). Off by default (RFC 5681 §4.2 counts its bytes towards the next ACK).
    pub fn set_ack_short_segments(&mut self, on: bool) {
        self.ack_short_segments = on;
    }

    /// Quick ACKs left before the delayed-ACK policy resumes.
    pub fn quickacks_left(&self) -> u32 {
        self.quickack_left
    }

    /// In-order data arrived at `now`: enter quick-ACK mode at the first data or after an idle
    /// gap (Linux's `tcp_event_data_recv`); true while quick ACKs are left.
    fn quickack_on_data(&mut self, now: SimTime) -> bool {
        if self.quickack_grant == 0 {
            return false;
        }
        let enter = match self.last_data_at {
            None => true,
            Some(t) => self.quickack_idle.is_some_and(|idle| now.saturating_since(t) > idle),
        };
        if enter {
            self.quickack_left = self.quickack_left.max(self.quickack_grant);
        }
        self.last_data_at = Some(now);
        self.quickack_left > 0
    }

    /// A data segment arrived at `now`. Returns the bytes newly delivered in order to the
    /// application (`rcv_nxt` advances by that much). Call [`Receiver::poll_ack`] afterwards.
    #[must_use]
    pub fn on_segment(&mut self, now: SimTime, seg: &DataSegment) -> u64 {
        let len = seg.len as u64;
        self.stats.segments_received += 1;
        self.stats.bytes_received += len;
        let ce = seg.ecn.is_ce();
        if ce {
            self.stats.ce_segments += 1;
            self.stats.ce_bytes += len;
        }
        if let Some(c) = self.accecn.as_mut() {
            if c.on_segment(seg.ecn, len) {
                self.ack_now = true;
            }
        }
        if self.cfg.ecn == EcnMode::Dctcp && ce != self.ece {
            // RFC 8257 §3.2: acknowledge what came before with the old CE state, then flip.
            if self.unacked_bytes > 0 || self.ack_deadline.is_some() || self.ack_now {
                let ack = self.make_ack();
                self.state_change_ack = Some(ack);
            }
            self.ece = ce;
        }
        if seg.ts_val >= self.ts_recent && seg.seq <= self.last_ack_sent {
            self.ts_recent = seg.ts_val;
            self.ts_recent_recv = now;
        }
        if self.cfg.ecn == EcnMode::Classic {
            if seg.cwr {
                self.ece = false;
            }
            if ce {
                self.ece = true;
                self.ack_now = true;
            }
        }
        if self.cfg.delayed_ack == Duration::ZERO {
            self.ack_now = true;
        }
        let end = seg.end();
        if len == 0 {
            return 0;
        }
        if self.cfg.dsack {
            if let Some(d) = self.duplicate_range(seg.seq, end) {
                self.dsack = Some(d);
                self.ack_now = true;
            }
        }
        if end <= self.rcv_nxt {
            self.stats.duplicate_bytes += len;
            self.ack_now = true;
            return 0;
        }
        self.stats.duplicate_bytes += self.rcv_nxt.saturating_sub(seg.seq);
        let start = seg.seq.max(self.rcv_nxt);
        if start == self.rcv_nxt {
            let quick = self.quickack_on_data(now);
            self.autotune_grow();
            if quick || self.quickack_left > 0 || (self.ack_short_segments && len < self.cfg.mss_bytes as u64) {
                self.ack_now = true;
            }
            let filled_hole = !self.ooo.is_empty();
            let mut nxt = end;
            while let Some(&(a, b)) = self.ooo.front() {
                if a > nxt {
                    break;
                }
                self.stats.duplicate_bytes += overlap(start, end, a, b);
                nxt = nxt.max(b);
                self.ooo_bytes -= b - a;
                self.ooo.pop_front();
            }
            let delivered = nxt - self.rcv_nxt;
            self.rcv_nxt = nxt;
            self.forget_acked_blocks();
            self.autotune_measure(now);
            if filled_hole {
                self.ack_now = true;
            } else {
                self.unacked_bytes += end - start;
                if self.unacked_bytes
                    >= self.cfg.ack_every_segments as u64 * self.cfg.mss_bytes as u64
                {
                    self.ack_now = true;
                } else if self.ack_deadline.is_none() {
                    self.ack_deadline = Some(now + self.cfg.delayed_ack);
                }
            }
            delivered
        } else {
            self.stats.out_of_order_segments += 1;
            self.autotune_grow();
            let block = self.insert_ooo(start, end);
            self.note_recent(block);
            self.ack_out_of_order(now);
            0
        }
    }

    /// The first contiguous part of `[s, e)` already received: below rcv_nxt, else the lowest
    /// overlap with a range held above it.
    fn duplicate_range(&self, s: u64, e: u64) -> Option<SackBlock> {
        if s < self.rcv_nxt {
            return Some(SackBlock { start: s, end: e.min(self.rcv_nxt) });
        }
        let i = self.ooo.partition_point(|r| r.1 <= s);
        let &(a, b) = self.ooo.get(i)?;
        (a < e).then(|| SackBlock { start: s.max(a), end: e.min(b) })
    }

    /// Insert `[s, e)` above rcv_nxt, merging with touching ranges; returns the merged range and
    /// counts bytes already held as duplicates.
    fn insert_ooo(&mut self, s: u64, e: u64) -> SackBlock {
        let i = self.ooo.partition_point(|r| r.1 < s);
        let mut j = i;
        let (mut ms, mut me) = (s, e);
        while j < self.ooo.len() && self.ooo[j].0 <= e {
            let (a, b) = self.ooo[j];
            self.stats.duplicate_bytes += overlap(s, e, a, b);
            self.ooo_bytes -= b - a;
            ms = ms.min(a);
            me = me.max(b);
            j += 1;
        }
        if i < j {
            self.ooo[i] = (ms, me);
            self.ooo.drain(i + 1..j);
        } else {
            self.ooo.insert(i, (ms, me));
        }
        self.ooo_bytes += me - ms;
        SackBlock { start: ms, end: me }
    }

    /// Put `block` first in the SACK report order, dropping the entries it now contains.
    fn note_recent(&mut self, block: SackBlock) {
        let mut kept = [SackBlock::default(); SACK_HISTORY];
        kept[0] = block;
        let mut n = 1;
        for b in &self.recent[..self.recent_len] {
            let inside = b.start >= block.start && b.end <= block.end;
            if !inside && n < SACK_HISTORY {
                kept[n] = *b;
                n += 1;
            }
        }
        self.recent = kept;
        self.recent_len = n;
    }

    /// Drop SACK entries now below rcv_nxt.
    fn forget_acked_blocks(&mut self) {
        let mut n = 0;
        for k in 0..self.recent_len {
            if self.recent[k].end > self.rcv_nxt {
                self.recent[n] = self.recent[k];
                n += 1;
            }
        }
        self.recent_len = n;
    }

    /// The ACK to send at `now`, if one is due (an immediate ACK, enough unacknowledged
    /// segments, or the delayed-ACK deadline has passed).
    #[must_use]
    pub fn poll_ack(&mut self, now: SimTime) -> Option<AckSegment> {
        if let Some(ack) = self.state_change_ack.take() {
            return Some(ack);
        }
        let due = self.ack_now || self.ack_deadline.is_some_and(|d| now >= d);
        if !due {
            return None;
        }
        Some(self.make_ack())
    }

    /// Build the ACK for everything received so far and reset the delayed-ACK state.
    fn make_ack(&mut self) -> AckSegment {
        self.ack_now = false;
        self.ack_deadline = None;
        if let Some((_, st)) = self.sack_compression.as_mut() {
            st.compressed = 0;
        }
        self.unacked_bytes = 0;
        // Linux's tcp_dec_quickack_mode: every ACK sent spends one quick ACK.
        self.quickack_left = self.quickack_left.saturating_sub(1);
        self.last_ack_sent = self.rcv_nxt;
        self.stats.acks_sent += 1;
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        let d = usize::from(self.dsack.is_some());
        if let Some(b) = self.dsack.take() {
            sack[0] = b;
        }
        let n = self.recent_len.min(MAX_SACK_BLOCKS - d);
        sack[d..d + n].copy_from_slice(&self.recent[..n]);
        let n = n + d;
        AckSegment {
            ack: self.rcv_nxt,
            sack,
            sack_count: n as u8,
            ts_ecr: self.ts_recent,
            ts_recv: self.ts_recent_recv,
            ece: matches!(self.cfg.ecn, EcnMode::Classic | EcnMode::Dctcp) && self.ece,
            accecn: self.accecn.as_mut().map(|c| c.feedback(self.cfg.ecn == EcnMode::AccEcn)),
            rwnd_bytes: self.advertised_window(),
        }
    }

    /// RCV.WND: the receive buffer's free space — out-of-order data held counts against it,
    /// in-order data is read by the application at once — as a right edge that never moves
    /// left (RFC 9293 §3.8.6: a receiver SHOULD NOT shrink the window). `u64::MAX` without a
    /// buffer limit.
    ///
    /// With autotuning: min(`rcv_ssthresh`, the free buffer's window), rounded up to the
    /// window unit (Linux's `__tcp_select_window`), the same never-shrinking edge.
    fn advertised_window(&mut self) -> u64 {
        let window = self.window_bytes();
        if window != u64::MAX {
            self.rcv_right_edge = self.rcv_nxt + window;
        }
        window
    }

    /// The window the buffer allows now, bytes, before the never-shrink rule; None without a
    /// buffer limit.
    fn free_window(&self) -> Option<u64> {
        if let Some(a) = &self.autotune {
            Some(a.cfg.free_window(a.rcvbuf, self.ooo_bytes, a.rcv_ssthresh))
        } else {
            self.cfg.rcvbuf_bytes.map(|buf| buf.saturating_sub(self.ooo_bytes))
        }
    }

    /// The window the next ACK would advertise, bytes (`u64::MAX` without a buffer limit).
    pub fn window_bytes(&self) -> u64 {
        self.free_window().map_or(u64::MAX, |free| self.rcv_right_edge.max(self.rcv_nxt + free) - self.rcv_nxt)
    }

    /// The delayed-ACK deadline, if an ACK is being delayed.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.ack_deadline
    }

    /// Fire the delayed-ACK timer if it is due; harmless otherwise. Call
    /// [`Receiver::poll_ack`] afterwards.
    pub fn handle_timeout(&mut self, now: SimTime) {
        if self.ack_deadline.is_some_and(|d| now >= d) {
            self.ack_now = true;
        }
    }

    /// Next byte expected in order: everything below it has been delivered.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Ranges received above a hole, in sequence order.
    pub fn out_of_order_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ooo.iter().copied()
    }
}

/// Bytes in both `[s, e)` and `[a, b)`.
fn overlap(s: u64, e: u64, a: u64, b: u64) -> u64 {
    e.min(b).saturating_sub(s.max(a))
}
