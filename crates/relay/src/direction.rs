//! One direction of one pipe, run by its own thread: read frames from the in-interface, hold each
//! for the delay, write it to the out-interface, and count.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::delay_line::DelayLine;
use crate::rng::Loss;
use crate::schedule::{next_step, Step, Tuning};
use crate::stats::DirectionStats;
use crate::sys::{self, PacketSocket, RxBatch, VNET_HDR_LEN};

/// Frames read per `recvmmsg` call.
const RX_BATCH: usize = 32;
/// Frames sent before reading again: bounds how long sending starves reading under overload.
const MAX_SEND_BURST: usize = 64;
/// Frames read before going back to sending: bounds how long a burst of arrivals delays due frames.
const MAX_DRAIN_FRAMES: usize = 256;
/// The delay line's buffer starts this big and doubles as needed, bytes.
const INITIAL_LINE_BYTES: usize = 4 << 20;
/// A direction never holds more frame bytes than this (on top of `max_queue_frames`), bytes.
pub const MAX_LINE_BYTES: usize = 1 << 30;
/// A kernel timestamp further than this in the past is not trusted (a wall-clock step, or a
/// timestamp in another clock), ns.
const MAX_TIMESTAMP_AGE_NS: i128 = 1_000_000_000;

/// One direction, ready to run.
pub struct Direction {
    rx: PacketSocket,
    tx: PacketSocket,
    delay_ns: u64,
    loss: Loss,
    line: DelayLine,
    tuning: Tuning,
    stats: DirectionStats,
}

impl Direction {
    /// A direction reading from `rx`, writing to `tx`, holding frames for `delay_ns`, dropping
    /// them per `loss`, holding at most `max_queue_frames`.
    pub fn new(rx: PacketSocket, tx: PacketSocket, delay_ns: u64, loss: Loss, max_queue_frames: usize, tuning: Tuning) -> Direction {
        Direction {
            rx,
            tx,
            delay_ns,
            loss,
            line: DelayLine::new(max_queue_frames, INITIAL_LINE_BYTES, MAX_LINE_BYTES),
            tuning,
            stats: DirectionStats::default(),
        }
    }

    /// Serve until `halt` is set; returns the counters.
    ///
    /// # Errors
    /// An unexpected OS error from receiving (sending errors are counted, not fatal).
    pub fn run(mut self, halt: &AtomicBool) -> io::Result<DirectionStats> {
        sys::precise_timers_for_this_thread();
        if self.tuning.rt_priority > 0 && sys::make_this_thread_realtime(self.tuning.rt_priority).is_err() {
            self.stats.realtime_denied = true;
        }
        let mut batch = RxBatch::new(RX_BATCH);
        while !halt.load(Ordering::Relaxed) {
            // Send what is due (at most a burst, so arrivals are still read under overload and
            // the queue, not the socket buffer, is where a backlog builds and overflows). The
            // clock is read per frame so each lateness is its own.
            let mut burst = 0;
            let step = loop {
                let now = sys::mono_ns();
                let step = next_step(now, self.line.head_due_ns(), &self.tuning);
                if step != Step::Send || burst == MAX_SEND_BURST {
                    break step;
                }
                self.send_head(now);
                burst += 1;
            };
            // Then read what arrived, before any wait: a spin or sleep must never starve reading.
            self.drain(&mut batch)?;
            match step {
                Step::Send => {}
                Step::SpinUntil(t) => {
                    while sys::mono_ns() < t {
                        std::hint::spin_loop();
                    }
                }
                Step::SleepUntil(t) => {
                    sys::sleep_until_mono(t);
                }
                Step::AwaitTraffic(timeout_ns) => {
                    // The drain above may have queued frames: only block if it did not.
                    if self.line.is_empty() {
                        sys::wait_readable(self.rx.as_raw_fd(), timeout_ns)?;
                    }
                }
            }
        }
        self.stats.dropped_overflow += self.rx.take_kernel_drops();
        self.stats.left_queued = self.line.len() as u64;
        Ok(self.stats)
    }

    fn send_head(&mut self, now_ns: u64) {
        let Some((due_ns, hdr_and_frame)) = self.line.head() else { return };
        match self.tx.send(hdr_and_frame) {
            Ok(()) => {
                self.stats.frames += 1;
                self.stats.bytes += (hdr_and_frame.len() - VNET_HDR_LEN) as u64;
                self.stats.lateness.record(now_ns - due_ns);
            }
            Err(_) => self.stats.send_errors += 1,
        }
        self.line.pop();
    }

    /// Move every frame waiting in the socket (up to [`MAX_DRAIN_FRAMES`]) into the delay line.
    fn drain(&mut self, batch: &mut RxBatch) -> io::Result<()> {
        let mut taken = 0;
        while taken < MAX_DRAIN_FRAMES {
            let n = batch.receive(&self.rx)?;
            if n == 0 {
                break;
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
                if self.loss.drop_this() {
                    self.stats.dropped_loss += 1;
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
                };
                let due_ns = (rx_mono as u64).saturating_add(self.delay_ns);
                if self.line.push(due_ns, f.hdr_and_frame).is_err() {
                    self.stats.dropped_overflow += 1;
                }
            }
            taken += n;
            if n < RX_BATCH {
                break;
            }
        }
        Ok(())
    }
}
