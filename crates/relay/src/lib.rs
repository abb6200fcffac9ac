//! ccarena's userspace delay relay: a bump-in-the-wire that emulates propagation delay (and random
//! loss) for the kernel backend on kernels without netem.
//!
//! A dedicated network namespace holds two veth ends per emulated link (a *pipe*). For each end the
//! relay opens an AF_PACKET raw socket bound to that interface (ETH_P_ALL, PACKET_IGNORE_OUTGOING so
//! it never reads its own sends). Every frame arriving at `a` leaves through `b` exactly `delay_ns`
//! after it arrived, and vice versa; each direction may drop frames with a fixed probability from
//! its own seeded SplitMix64 stream, and holds at most `max_queue_frames` (more are dropped and
//! counted). The relay measures its own error: the *lateness* of each frame, send time − (receive
//! time + delay), reported as mean/p50/p99/p99.9/max per direction.
//!
//! # Design
//!
//! **One thread per direction, each doing both the receiving and the sending of its direction.**
//! A direction's frames are read from one socket and written to another, and its queue is touched
//! by nobody else, so there are no locks, no cross-thread hand-off and no wake-ups between threads.
//! On the project's 2-core machines the data direction and the ACK direction of a fast flow then
//! run on both cores at once, and a busy direction cannot make another pipe's frames late. (A
//! single epoll + timerfd loop would serialise everything on one core; at 1 Gbit/s each `send`
//! also carries the receiving host's whole TCP input path, since veth delivers inside the sender's
//! softirq, so one core is too tight.) Idle threads cost nothing: they block in the kernel.
//!
//! **A thread wakes only when a frame is due.** With a fixed delay frames leave in arrival order,
//! so each direction is a FIFO ([`DelayLine`]) and the next event is always the head's due time.
//! A thread's loop: send every due frame (reading the clock per frame, so each lateness is its
//! own), drain the socket with `recvmmsg` (32 frames per call), then sleep with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` (timer slack 1 ns) until the new head is due.
//! It does *not* wake for arrivals while frames are queued: an arriving frame waits in the socket's
//! receive buffer with its kernel timestamp and cannot be due before the head. Sleeps are capped at
//! 2 ms so the receive buffer (64 MiB, SO_RCVBUFFORCE) only ever holds a few milliseconds of
//! traffic, and sending stops after 64 frames to read, so under overload the backlog builds (and
//! overflows, counted) in the relay's queue rather than unseen in the socket. With nothing queued
//! the thread blocks in `ppoll` on the socket. An optional busy-wait for the last `spin_ns` before
//! a frame is due trades CPU for ~10 µs of median lateness; it is off by default. See [`schedule`].
//!
//! **Real-time scheduling (SCHED_FIFO priority 10 by default, `rt_priority`).** The tail of the
//! lateness is not timer error but the thread waiting for a CPU: beside CPU-bound work on two
//! cores, p99 at 100 Mbit/s was 0.4–0.7 ms with normal scheduling and under 0.15 ms with SCHED_FIFO.
//! The threads sleep between frames, so they take only the CPU their traffic needs (about 7 % of
//! a core at 100 Mbit/s), and the kernel's RT throttling still reserves time for everything else.
//! Without the privilege the relay runs normally and says so on stderr.
//!
//! **Receive time is the kernel's timestamp (SO_TIMESTAMPNS), not a clock read after `recv`.**
//! The kernel stamps a frame when it reaches the relay's interface, so a frame that waited in the
//! socket buffer — because the thread was asleep until the head's due time, or descheduled — is
//! still due at arrival + delay, and its lateness shows the relay's real error instead of hiding
//! the wait. (Reading the clock after `recv` would make the sleep-until-due design above add up to
//! 2 ms of unmeasured delay.) The stamps are CLOCK_REALTIME, converted to CLOCK_MONOTONIC — the
//! relay's one clock for due times and lateness — with an offset re-read at every receive batch;
//! a stamp that is missing or implausible (more than 1 s old, as after a wall-clock step) falls
//! back to the read time and is counted.
//!
//! **Frames pass unchanged, offloads or not.** Sockets use PACKET_VNET_HDR: a GSO frame of up to
//! 64 KB or a frame whose checksum is left to offload is sent on with the same metadata instead of
//! being refused or arriving with a bad checksum. Frames up to 65535 bytes of IP packet pass.
//!
//! The caller should disable IPv6 on the relay namespace's interfaces (they would otherwise send
//! their own router solicitations into the emulated links) and spawn the relay from a long-lived
//! thread: the parent-death signal ([`ProcessGuard`]) fires when the spawning *thread* exits.

pub mod config;
pub mod delay_line;
pub mod direction;
pub mod histogram;
pub mod process;
pub mod relay;
pub mod rng;
pub mod schedule;
pub mod stats;
pub mod sys;

pub use config::{Config, ConfigError, DirectionConfig, PipeConfig};
pub use delay_line::DelayLine;
pub use histogram::{Histogram, Summary};
pub use process::ProcessGuard;
pub use relay::{OpenError, Relay};
pub use rng::{Loss, SplitMix64};
pub use schedule::Tuning;
pub use stats::{DirectionStats, PipeStats, RelayStats};
