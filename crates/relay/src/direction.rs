//! One direction of one pipe, served by a worker thread ([`crate::worker`]): read frames from the in-interface, put each
//! through the emulated link ([`EmulatedPath`]: queue, transmitter, wire loss, delay), write the
//! survivors to the out-interface when they are due, apply the link's scheduled changes, sample
//! the queue, and count.
//!
//! The link model runs on arrival timestamps, so changes and samples must be interleaved with
//! arrivals in time order: before a frame stamped `t` is offered, every change at or before `t`
//! is applied and every sample instant before `t` recorded ([`Direction::catch_up`]); a change
//! comes before a sample at the same instant, as in the simulator. When no later frame comes,
//! a sample is recorded once the socket is empty and a grace period has passed, and a change as
//! soon as it is due (after a drain), since it may retime frames already on the delay line.
//!
//! A discipline that decides at dequeue (CoDel, FQ-CoDel, FQ) makes the link *hold* each frame
//! ([`EmulatedPath::holds_frames`]): the direction copies it into a buffer from its pool, the link
//! keeps it in the discipline until the transmitter takes it, and the direction then moves the
//! survivors to the delay line ([`Direction::collect_departures`]). The link is advanced past
//! the transmitter's next start when no arrival does it: the direction wakes when the next held
//! frame could be due at the earliest (its start plus the delay). A frame the discipline drops
//! inside the queue takes its buffer with it; the pool makes a new one when it runs dry.
//!
//! A frame the wire duplicates is put on the delay line twice, the copy right behind it; a frame
//! it holds back (reordering) goes on a second delay line, `held`, whose frames are all held by
//! the same extra delay and so stay in order among themselves: the direction sends whichever
//! line's head is due first ([`Direction::head_due_ns`]).
//!
//! A frame the discipline marks has CE set in its IP header ([`crate::ecn::set_ce`]); the
//! discipline sees a frame's ECN capability and flow hash from its header ([`crate::ecn::inspect`]).
//!
//! Each queue sample carries the AQM's probabilities and, for DualPI2, its per-class counters
//! ([`crate::emulated_path::QueueSample`]); at the end the stats get DualPI2's per-class totals
//! and sojourn histograms ([`crate::stats::ClassStats`]), read from the link's discipline.
//!
//! A captured direction ([`Direction::with_capture`]) records each frame when the link starts
//! serializing it — as the link decides it (on arrival, or when a holding link hands it out),
//! stamped with the model's start instant on the run's clock, not when it is sent — dropped
//! frames never, wire-lost ones too, marked ones with CE ([`crate::capture`]).

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::capture::LinkCapture;
use crate::delay_line::DelayLine;
use crate::ecn;
use crate::frame::frame_size;
use crate::emulated_path::{Departure, Fate, FrameInfo, LinkChange, EmulatedPath, Offered, QueueLimit};
use ccarena_link::qdisc::dualpi2::{Class, ClassCounters};
use ccarena_link::{Aqm, Impairment};
use crate::sampler::QueueSampler;
use crate::schedule::{next_due, next_step, Due, Step, Tuning};
use crate::stats::{ClassStats, DirectionStats};
use crate::sys::{self, PacketSocket, RxBatch, VNET_HDR_LEN};

/// Frames read per `recvmmsg` call.
const RX_BATCH: usize = 32;
/// Frames sent before reading again: bounds how long sending starves reading under overload.
const MAX_SEND_BURST: usize = 64;
/// Frames read before going back to sending: bounds how long a burst of arrivals delays due frames.
const MAX_DRAIN_FRAMES: usize = 256;
/// The delay line's buffer when nothing better is known (no rate), bytes; it doubles as needed.
const DEFAULT_LINE_BYTES: usize = 4 << 20;
/// A direction never holds more frame bytes than this (on top of `max_queue_frames`), bytes.
pub const MAX_LINE_BYTES: usize = 1 << 30;
/// Bytes a stored frame takes per IP byte at worst (a 52-byte ACK is stored as 76 bytes with its
/// Ethernet and virtio headers), rounded up.
const STORED_PER_IP_BYTE: usize = 2;
/// Stored bytes of a full-size frame (1500 IP bytes, Ethernet and virtio headers).
const FULL_FRAME_STORED_BYTES: usize = 1500 + 14 + VNET_HDR_LEN;
/// Smallest stored frame (a 60-byte minimum Ethernet frame and the virtio header).
const MIN_FRAME_STORED_BYTES: usize = 60 + VNET_HDR_LEN;
/// Extra room in a sized delay line, bytes.
const LINE_SLACK_BYTES: usize = 256 << 10;
/// A kernel timestamp further than this in the past is not trusted (a wall-clock step, or a
/// timestamp in another clock), ns.
const MAX_TIMESTAMP_AGE_NS: i128 = 1_000_000_000;
/// A grid instant is sampled without waiting for a later arrival once the socket is empty and
/// this long has passed: a frame stamped earlier can still be in the kernel's receive path, ns.
const SAMPLE_GRACE_NS: u64 = 2_000_000;
/// Frame buffers a direction whose link holds frames keeps ready at most (more are made as
/// needed); each is sized for a full frame when made.
const MAX_POOLED_FRAMES: usize = 4096;

/// When a direction needs serving again ([`Direction::service`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// At once: a send burst was cut short, or frames just arrived on an empty line.
    Again,
    /// At this CLOCK_MONOTONIC instant, ns: its head frame falls due (or the drain interval
    /// ends, or a scheduled change applies). Frames arriving meanwhile wait in the socket with
    /// their kernel timestamps and cannot be due before the head, so they need no wake-up.
    At(u64),
    /// Nothing queued: when its socket becomes readable, or at this instant (ns) if given, when
    /// a scheduled change applies.
    Idle(Option<u64>),
}

/// One direction, ready to run.
pub struct Direction {
    rx: PacketSocket,
    tx: PacketSocket,
    link: EmulatedPath<Vec<u8>>,
    line: DelayLine,
    /// Frames the wire holds back to be overtaken (empty unless the link reorders).
    held: DelayLine,
    /// Buffers for frames the link holds (empty unless it does).
    pool: Vec<Vec<u8>>,
    /// A copy of a frame being marked on its way to the delay line.
    scratch: Vec<u8>,
    sampler: Option<QueueSampler>,
    /// Scheduled changes, (ns after the start instant, change), in time order.
    changes: Vec<(u64, LinkChange)>,
    next_change: usize,
    /// The start instant, CLOCK_MONOTONIC ns, once known (0 before).
    start_ns: u64,
    tuning: Tuning,
    stats: DirectionStats,
    /// The pcap file of the frames it forwards, if captured.
    capture: Option<LinkCapture>,
}

/// The delay line's starting size for `link`: room for everything the link can hold at once
/// (a delay's worth of frames at the rate plus a full queue), so it never grows mid-run; bytes.
fn line_bytes_for<B: Default>(link: &EmulatedPath<B>) -> usize {
    let p = link.params();
    let Some(rate_bps) = p.rate_bps else { return DEFAULT_LINE_BYTES };
    let in_pipe_ip = u128::from(rate_bps) * u128::from(p.delay_ns) / 8 / 1_000_000_000;
    let queue = match p.limit {
        QueueLimit::Packets(n) => u128::from(n) * FULL_FRAME_STORED_BYTES as u128,
        QueueLimit::Bytes(b) => u128::from(b) * STORED_PER_IP_BYTE as u128,
        QueueLimit::Unlimited => DEFAULT_LINE_BYTES as u128,
    };
    let want = in_pipe_ip * STORED_PER_IP_BYTE as u128 + queue + LINE_SLACK_BYTES as u128;
    want.min(MAX_LINE_BYTES as u128) as usize
}

impl Direction {
    /// A direction reading from `rx`, emulating `link` (with its scheduled `changes`, ns after
    /// the start instant, in time order), writing to `tx`, holding at most `max_queue_frames`
    /// frames, sampling the queue on `sampler`'s grid if given.
    ///
    /// The delay line is sized for everything the link can hold and its memory touched here,
    /// before the relay reports ready, so no allocation or page fault happens mid-run.
    pub fn new(
        rx: PacketSocket,
        tx: PacketSocket,
        link: EmulatedPath<Vec<u8>>,
        changes: Vec<(u64, LinkChange)>,
        max_queue_frames: usize,
        sampler: Option<QueueSampler>,
        tuning: Tuning,
    ) -> Direction {
        let bytes = line_bytes_for(&link);
        let mut line = DelayLine::new(max_queue_frames, bytes, MAX_LINE_BYTES);
        line.prepare(bytes / MIN_FRAME_STORED_BYTES);
        let held_bytes = if link.reorders() { bytes } else { FULL_FRAME_STORED_BYTES };
        let mut held = DelayLine::new(max_queue_frames, held_bytes, MAX_LINE_BYTES);
        held.prepare(held_bytes / MIN_FRAME_STORED_BYTES);
        let pooled = if link.holds_frames() {
            let limit = match link.params().limit {
                QueueLimit::Packets(n) => usize::try_from(n).unwrap_or(usize::MAX),
                QueueLimit::Bytes(b) => usize::try_from(b / 64).unwrap_or(usize::MAX),
                QueueLimit::Unlimited => MAX_POOLED_FRAMES,
            };
            limit.saturating_add(2).min(MAX_POOLED_FRAMES)
        } else {
            0
        };
        let pool = (0..pooled).map(|_| Vec::with_capacity(FULL_FRAME_STORED_BYTES)).collect();
        Direction {
            rx,
            tx,
            link,
            line,
            held,
            pool,
            scratch: Vec::with_capacity(FULL_FRAME_STORED_BYTES),
            sampler,
            changes,
            next_change: 0,
            start_ns: 0,
            tuning,
            stats: DirectionStats::default(),
            capture: None,
        }
    }

    /// This direction, recording every frame its link starts serializing in `capture`.
    #[must_use]
    pub fn with_capture(mut self, capture: Option<LinkCapture>) -> Direction {
        self.capture = capture;
        self
    }

    /// The socket this direction reads, for its worker to wait on.
    pub fn rx_fd(&self) -> RawFd {
        self.rx.as_raw_fd()
    }

    /// The timing knobs this direction was made with.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// Record that its worker thread could not get real-time scheduling.
    pub fn note_realtime_denied(&mut self) {
        self.stats.realtime_denied = true;
    }

    /// One turn of the direction's work: apply the scheduled changes that are due, send the
    /// frames that are due (at most [`MAX_SEND_BURST`]), read what arrived; returns when it
    /// needs serving again. Scheduled changes count from the instant `start` holds
    /// (CLOCK_MONOTONIC ns; 0 = not known yet, none applies until it is). The direction never
    /// batches by itself ([`next_step`] with no previous wake-up): its worker spaces its own
    /// wake-ups ([`crate::worker`]).
    ///
    /// # Errors
    /// An unexpected OS error from receiving (sending errors are counted, not fatal).
    pub fn service(&mut self, batch: &mut RxBatch, start: &AtomicU64) -> io::Result<Next> {
        if self.start_ns == 0 && (self.next_change < self.changes.len() || self.link.has_trace() || self.capture.is_some()) {
            self.start_ns = start.load(Ordering::Relaxed);
            if self.start_ns != 0 {
                self.link.set_trace_origin(self.start_ns); // the trace's time 0, as the simulator's
            }
        }
        // A change that is due may retime frames on the delay line: apply it before sending,
        // after offering what has arrived (which applies it if a later frame came).
        if self.next_change_at().is_some_and(|c| c <= sys::mono_ns()) {
            self.drain(batch)?;
            let now = sys::mono_ns();
            while let Some(c) = self.next_change_at().filter(|&c| c <= now) {
                self.catch_up(c, false);
            }
        }
        // Send what is due (at most a burst, so arrivals are still read under overload). The
        // clock is read per frame so each lateness is its own.
        let mut burst = 0;
        let step = loop {
            let now = sys::mono_ns();
            let step = next_step(now, self.head_due_ns(), 0, &self.tuning);
            if step != Step::Send || burst == MAX_SEND_BURST {
                break step;
            }
            self.send_head(now);
            burst += 1;
        };
        // Then read what arrived, before any wait: a wait must never starve reading.
        let read_at = sys::mono_ns();
        if self.drain(batch)? {
            if self.link.holds_frames() {
                // Every frame that reached the socket by `read_at` has been offered: the link
                // starts what it can by then. A frame stamped earlier but read later will count
                // as arriving at `read_at`, so every sample instant up to it is final now.
                self.catch_up(read_at, true);
                self.link.advance_to(read_at);
                self.collect_departures();
            } else {
                self.catch_up(sys::mono_ns().saturating_sub(SAMPLE_GRACE_NS), true);
            }
        }
        // Wake for a change too: it may move the due times of queued frames; and for the next
        // held frame, at the earliest it can be due.
        let change = self.next_change_at();
        let held = self.link.next_start_ns().map(|s| s.saturating_add(self.link.params().delay_ns));
        let wake = [change, held].into_iter().flatten().min();
        Ok(match step {
            Step::Send => Next::Again,
            Step::SpinUntil(t) | Step::SleepUntil(t) => Next::At(wake.map_or(t, |w| w.min(t))),
            // The drain above may have queued frames: then decide again at once.
            Step::AwaitTraffic(_) if !self.line.is_empty() || !self.held.is_empty() => Next::Again,
            // Frames wait in the link: an arrival meanwhile starts after them, so it needs no
            // wake-up of its own.
            Step::AwaitTraffic(_) if held.is_some() => Next::At(wake.unwrap_or(u64::MAX)),
            Step::AwaitTraffic(_) => Next::Idle(change),
        })
    }

    /// Move the frames the link started serializing to the delay line (marked if the discipline
    /// marked them), and their buffers back to the pool.
    fn collect_departures(&mut self) {
        while let Some((start_ns, Departure { fate, ce, impair, mut body })) = self.link.take_departure_started() {
            if ce && fate != Fate::Dropped {
                ecn::set_ce(&mut body);
            }
            if fate != Fate::Dropped {
                record(&mut self.capture, self.start_ns, start_ns, &body);
            }
            match fate {
                Fate::Deliver { due_ns } => deliver(&mut self.line, &mut self.held, &mut self.stats, due_ns, &body, impair),
                Fate::LostOnWire => self.stats.dropped_loss += 1,
                Fate::Dropped => self.stats.dropped_queue += 1,
            }
            if self.pool.len() < MAX_POOLED_FRAMES {
                body.clear();
                self.pool.push(body);
            }
        }
    }

    /// Stop: offer whatever arrived before the stop (it still counts), make every sample
    /// instant up to now final, and return the counters.
    ///
    /// # Errors
    /// An unexpected OS error from receiving.
    pub fn finish(mut self, batch: &mut RxBatch) -> io::Result<DirectionStats> {
        self.drain(batch)?;
        self.catch_up(sys::mono_ns(), true);
        self.stats.dropped_overflow += self.rx.take_kernel_drops();
        self.stats.left_queued = (self.line.len() + self.held.len()) as u64;
        if self.link.holds_frames() {
            // Frames the discipline dropped inside the queue never come out: count its drops
            // (packets; a GSO batch counts as its segments) and what it still holds.
            self.stats.dropped_queue = self.link.qdisc_counters().dropped;
            self.stats.left_queued += self.link.backlog_packets();
        }
        self.stats.link = *self.link.counters();
        if let Some(Aqm::DualPi2(d)) = self.link.aqm() {
            let class = |counters: &ClassCounters, c| ClassStats { counters: *counters, sojourn: d.sojourn_histogram(c).clone() };
            self.stats.l4s = Some(class(d.l4s_counters(), Class::L4s));
            self.stats.classic = Some(class(d.classic_counters(), Class::Classic));
        }
        self.stats.backlog_packets_end = self.link.backlog_packets();
        if let Some(s) = self.sampler.take() {
            (self.stats.samples, self.stats.samples_skipped) = s.into_rows();
        }
        self.stats.capture = self.capture.take().map(LinkCapture::finish);
        Ok(self.stats)
    }

    /// When the next scheduled change applies, ns (None: no more, or the start is not known).
    fn next_change_at(&self) -> Option<u64> {
        if self.start_ns == 0 {
            return None;
        }
        self.changes.get(self.next_change).map(|(at, _)| self.start_ns.saturating_add(*at))
    }

    /// Apply every change at or before `t_ns` and record every sample instant before it (at it
    /// too with `samples_at_t`), in time order ([`next_due`]).
    fn catch_up(&mut self, t_ns: u64, samples_at_t: bool) {
        loop {
            let sample_at = self.sampler.as_ref().map(QueueSampler::next_instant_ns);
            match next_due(self.next_change_at(), sample_at, t_ns, samples_at_t) {
                Some(Due::Sample) => self.record_sample(),
                Some(Due::Change(at_ns)) => {
                    let (_, change) = self.changes[self.next_change];
                    self.next_change += 1;
                    let dues = self.link.apply_change(at_ns, &change);
                    self.line.retime_tail(&dues);
                    self.collect_departures();
                }
                None => return,
            }
        }
    }

    fn record_sample(&mut self) {
        if let Some(s) = self.sampler.as_mut() {
            s.record_next(&mut self.link);
        }
        self.collect_departures();
    }

    /// The due time of the next frame to send: the earlier of the two lines' heads, ns.
    fn head_due_ns(&self) -> Option<u64> {
        match (self.line.head_due_ns(), self.held.head_due_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn send_head(&mut self, now_ns: u64) {
        // The in-order line first at a tie.
        let line = match (self.line.head_due_ns(), self.held.head_due_ns()) {
            (Some(a), Some(b)) if b < a => &mut self.held,
            (None, Some(_)) => &mut self.held,
            _ => &mut self.line,
        };
        let Some((due_ns, hdr_and_frame)) = line.head() else { return };
        match self.tx.send(hdr_and_frame) {
            Ok(()) => {
                self.stats.frames += 1;
                self.stats.bytes += (hdr_and_frame.len() - VNET_HDR_LEN) as u64;
                self.stats.lateness.record(now_ns.saturating_sub(due_ns));
            }
            Err(_) => self.stats.send_errors += 1,
        }
        line.pop();
    }

    /// Offer every frame waiting in the socket (up to [`MAX_DRAIN_FRAMES`]) to the link and queue
    /// the survivors on the delay line. Returns true if the socket was left empty.
    fn drain(&mut self, batch: &mut RxBatch) -> io::Result<bool> {
        let mut taken = 0;
        while taken < MAX_DRAIN_FRAMES {
            let n = batch.receive(&self.rx)?;
            if n == 0 {
                return Ok(true);
            }
            // Read after the batch arrived: no frame in it can be stamped later than this.
            let now = i128::from(sys::mono_ns());
            let offset = sys::realtime_minus_mono_ns();
            for i in 0..n {
                let f = batch.get(i);
                if f.truncated || f.hdr_and_frame.len() <= VNET_HDR_LEN {
                    self.stats.dropped_overflow += 1;
                    continue;
                }
                let rx_mono = match f.rx_realtime_ns.map(|r| r - offset) {
                    Some(t) if t <= now && now - t <= MAX_TIMESTAMP_AGE_NS => t,
                    // A stamp a hair in the future is the two clocks' conversion rounding.
                    Some(t) if t > now && t - now <= 1_000_000 => now,
                    _ => {
                        self.stats.untimestamped += 1;
                        now
                    }
                } as u64;
                self.catch_up(rx_mono, false);
                let size = frame_size(f.hdr_and_frame);
                let ip = ecn::inspect(f.hdr_and_frame);
                let info = FrameInfo { ip_bytes: size.ip_bytes, packets: size.packets, flow_hash: ip.flow_hash, ect: ip.ect, l4s: ip.l4s };
                if self.link.holds_frames() {
                    let mut body = self.pool.pop().unwrap_or_else(|| Vec::with_capacity(FULL_FRAME_STORED_BYTES));
                    body.extend_from_slice(f.hdr_and_frame);
                    // A refused frame's drop is counted with the discipline's (`finish`).
                    self.link.hold_frame(rx_mono, info, body);
                    self.collect_departures();
                    continue;
                }
                let Offered { fate, ce, impair } = self.link.offer_frame(rx_mono, info);
                if fate == Fate::Dropped {
                    self.stats.dropped_queue += 1;
                    continue;
                }
                let frame = if ce {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(f.hdr_and_frame);
                    ecn::set_ce(&mut self.scratch);
                    &self.scratch[..]
                } else {
                    f.hdr_and_frame
                };
                record(&mut self.capture, self.start_ns, self.link.last_start_ns(), frame);
                match fate {
                    Fate::Deliver { due_ns } => deliver(&mut self.line, &mut self.held, &mut self.stats, due_ns, frame, impair),
                    _ => self.stats.dropped_loss += 1,
                }
            }
            taken += n;
            if n < RX_BATCH {
                return Ok(false);
            }
        }
        Ok(false)
    }
}

/// Record `hdr_and_frame` in `capture` (if capturing) as starting serialization at `start_ns`
/// (CLOCK_MONOTONIC), on the run's clock from `origin_ns` (0 = not known yet: stamped 0, as is a
/// frame before the origin).
#[inline]
fn record(capture: &mut Option<LinkCapture>, origin_ns: u64, start_ns: u64, hdr_and_frame: &[u8]) {
    if let Some(c) = capture.as_mut() {
        let t_ns = if origin_ns == 0 { 0 } else { start_ns.saturating_sub(origin_ns) };
        c.record(t_ns, hdr_and_frame.get(VNET_HDR_LEN..).unwrap_or_default());
    }
}

/// Queue a delivered frame: on the held-back line if the wire holds it back, else on the FIFO
/// line; twice (the copy right behind it) if the wire duplicates it. A frame the line cannot
/// take is counted as an overflow.
fn deliver(line: &mut DelayLine, held: &mut DelayLine, stats: &mut DirectionStats, due_ns: u64, frame: &[u8], impair: Impairment) {
    let line = if impair.reordered() { held } else { line };
    for _ in 0..impair.copies() {
        if line.push(due_ns, frame).is_err() {
            stats.dropped_overflow += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulated_path::LinkParams;
    use crate::rng::{Loss, SplitMix64};

    fn model(rate_bps: Option<u64>, limit: QueueLimit, delay_ns: u64) -> EmulatedPath {
        EmulatedPath::new(LinkParams { rate_bps, limit, delay_ns }, Loss::new(0.0, SplitMix64::new(0)))
    }

    #[test]
    fn the_line_is_sized_for_a_delay_of_traffic_and_a_full_queue() {
        // 1 Gbit/s for 50 ms is 6.25 MB of IP bytes, stored at most twice over; 1000 full frames.
        let b = line_bytes_for(&model(Some(1_000_000_000), QueueLimit::Packets(1000), 50_000_000));
        assert_eq!(b, 2 * 6_250_000 + 1000 * FULL_FRAME_STORED_BYTES + LINE_SLACK_BYTES);
        assert_eq!(line_bytes_for(&model(None, QueueLimit::Unlimited, 50_000_000)), DEFAULT_LINE_BYTES);
        // A satellite link at 10 Gbit/s would need more than the cap: capped.
        assert_eq!(line_bytes_for(&model(Some(10_000_000_000), QueueLimit::Bytes(1 << 30), 600_000_000)), MAX_LINE_BYTES);
    }
}
