//! ccarena's userspace link emulator (the *relay*): a bump-in-the-wire that emulates each link of
//! the kernel backend — queue discipline (DropTail, RED, PIE, CoDel, FQ-CoDel, FQ, with ECN
//! marking), transmitter at the link rate, random wire loss and propagation delay, with the
//! simulator's link model ([`emulated_path`]) — or, beside a kernel shaper, only its delay.
//!
//! A dedicated network namespace holds two veth ends per emulated link (a *pipe*). For each end the
//! relay opens an AF_PACKET raw socket bound to that interface (ETH_P_ALL, PACKET_IGNORE_OUTGOING so
//! it never reads its own sends). Every frame arriving at `a` is offered to the `a → b` direction's
//! [`EmulatedPath`], which decides from the frame's arrival time whether the queue drops it, whether
//! the wire loses it, and when it reaches the far end; the relay sends it out of `b` at that
//! instant, and vice versa. A discipline that decides when a frame leaves the queue (CoDel,
//! FQ-CoDel, FQ) has the link hold the frame until the transmitter takes it ([`direction`]); a
//! frame the discipline marks gets CE in its IP header ([`ecn`]). Each direction's loss draws from its own seeded SplitMix64 stream.
//! The relay measures its own error: the *lateness* of each frame, send time − due time, reported
//! as mean/p50/p99/p99.9/max per direction; it also samples each queue on a fixed grid
//! ([`sampler`]), applies the link's scheduled changes of rate, delay, loss and queue limit at
//! their instants ([`EmulatedPath::apply_change`], the scenario's `[[events]]`), and counts what the
//! link did ([`LinkCounters`]).
//!
//! # Design
//!
//! **The link is computed, not timed.** The model runs on the kernel's receive timestamps, so the
//! queue's decisions, the due times and the queue samples are what the simulator's link would give
//! for the same arrivals, whatever the relay's own scheduling did; the relay's scheduling shows
//! only as lateness. Serializing in the relay, rather than leaving the rate to htb or tbf, is what
//! makes 1 Gbit/s possible on a virtual machine: a kernel shaper arms a high-resolution timer per
//! packet when backlogged, and on the project's VMs each costs 10–40 µs of CPU in the thread that
//! handed it the packet (measured, 1 Gbit/s, 50 ms: with htb behind it the relay used a whole core
//! and sent frames 75 ms late at the median; serializing itself, 0.1 ms, at two-thirds of a core).
//!
//! **A bounded number of worker threads, each serving many directions with one epoll loop**
//! ([`worker`]; by default one per CPU). A direction — receiving on one socket, its queue, sending
//! on another — is touched only by its worker, so there are no locks and no hand-off between
//! threads. Directions are dealt round-robin, so the data and the ACK direction of a pipe run on
//! different CPUs when there are two; on the project's 2-core machines both cores then work at
//! once. (Each `send` also carries the receiving host's input path, since veth delivers inside
//! the sender's softirq, so one core for everything would be too tight.) A k = 4 fat-tree (96
//! directions) runs on two threads instead of 96. An idle worker blocks in the kernel.
//!
//! **A worker wakes only when frames are due, and at most every `min_wake_interval_ns` on its
//! timer.** With a fixed delay frames leave in arrival order, so each direction is a FIFO
//! ([`DelayLine`]) and its next event is always its head's due time; the worker's next timed
//! wake-up is the earliest of its directions'. A turn of a direction: send every due frame
//! (reading the clock per frame, so each lateness is its own; at most 64 before reading), drain
//! its socket with `recvmmsg` (32 frames per call). The worker then waits in `epoll_pwait2`
//! (nanosecond timeout, timer slack 1 ns) until the earliest head is due — but no sooner than
//! 200 µs after its previous timed wake-up: a wake-up costs 25–45 µs of CPU on a VM, so waking for
//! every frame (every 12 µs at 1 Gbit/s) cannot keep up, while a batch every 200 µs costs a few
//! percent and adds at most that much lateness. It does *not* wake for arrivals on a direction
//! with frames queued: such a frame waits in the socket's receive buffer with its kernel
//! timestamp and cannot be due before the head; it does wake for arrivals on an empty direction.
//! A direction is served at least every 2 ms while it holds frames, so the receive buffer (64
//! MiB, SO_RCVBUFFORCE) only ever holds a few milliseconds of traffic. See [`schedule`].
//!
//! **Real-time scheduling, awake CPUs, no page faults.** The tail of the lateness is not timer
//! error but the thread waiting for a CPU. The threads run SCHED_FIFO (priority 10 by default,
//! `rt_priority`; beside CPU-bound work on two cores, p99 at 100 Mbit/s was 0.4–0.7 ms with
//! normal scheduling and under 0.15 ms with SCHED_FIFO); they sleep between batches, so they take
//! only the CPU their traffic needs. While it runs the relay holds `/dev/cpu_dma_latency` at 0
//! ([`sys::CpuLatencyHold`], `keep_cpus_awake`), so idle CPUs poll instead of halting (p99.99
//! wake-up latency 0.6 ms instead of 4 ms on the project's VMs). Each direction's buffer is sized
//! for everything its link can hold and touched before the relay reports ready. What remains is
//! the hypervisor taking a CPU away (steal time): frames due meanwhile are late by that much.
//!
//! **Receive time is the kernel's timestamp (SO_TIMESTAMPNS), not a clock read after `recv`.**
//! The kernel stamps a frame when it reaches the relay's interface, so a frame that waited in the
//! socket buffer — because the thread was asleep until the head's due time, or descheduled — is
//! still due when the model says, and its lateness shows the relay's real error instead of hiding
//! the wait. The stamps are CLOCK_REALTIME, converted to CLOCK_MONOTONIC — the relay's one clock
//! for due times and lateness — with an offset re-read at every receive batch; a stamp that is
//! missing or implausible (more than 1 s old, as after a wall-clock step) falls back to the read
//! time and is counted.
//!
//! **Frames pass unchanged, offloads or not.** Sockets use PACKET_VNET_HDR: a GSO frame of up to
//! 64 KB or a frame whose checksum is left to offload is sent on with the same metadata instead of
//! being refused or arriving with a bad checksum; the model counts a GSO frame as the packets it
//! stands for ([`frame`]). Frames up to 65535 bytes of IP packet pass.
//!
//! **Capture without I/O on the forwarding path.** A captured direction records each frame's
//! headers where the simulator does — when the link starts serializing it, stamped with the
//! model's instant on the run's clock — into a pcap file per direction ([`capture`]); records
//! are copied into a 1 MiB chunk and a thread per file writes full chunks, so a worker never
//! waits on the file system.
//!
//! The caller should disable IPv6 on the relay namespace's interfaces (they would otherwise send
//! their own router solicitations into the emulated links) and spawn the relay from a long-lived
//! thread: the parent-death signal ([`ProcessGuard`]) fires when the spawning *thread* exits.

pub mod capture;
pub mod config;
pub mod delay_line;
pub mod direction;
pub mod ecn;
pub mod frame;
pub mod histogram;
pub mod emulated_path;
pub mod process;
pub mod relay;
pub mod rng;
pub mod sampler;
pub mod schedule;
pub mod stats;
pub mod sys;
pub mod worker;

pub use capture::{CaptureConfig, CaptureStats, LinkCapture};
pub use config::{Config, ConfigError, DirectionConfig, PipeConfig};
pub use delay_line::DelayLine;
pub use histogram::{Histogram, Summary};
pub use emulated_path::{Departure, Fate, FrameInfo, LinkChange, Offered, LinkCounters, EmulatedPath, LinkParams, QueueLimit, QueueSample};
pub use process::ProcessGuard;
pub use relay::{OpenError, Relay};
pub use rng::{Loss, SplitMix64};
pub use schedule::Tuning;
pub use stats::{DirectionStats, PipeStats, RelayStats};
