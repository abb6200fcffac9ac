//! The link model ccarena's simulator (`crates/sim`) and its relay (`crates/relay`, the kernel
//! backend's link emulator) share, so both make the same decisions for the same arrivals.
//!
//! - [`qdisc`]: queue disciplines behind one enqueue/dequeue interface, generic over the packet
//!   type ([`qdisc::QueuedPacket`]): DropTail with DCTCP step marking, RED (gentle, Adaptive),
//!   CoDel, FQ-CoDel, PIE and FQ.
//! - [`wire`]: the transmitter's serialization time and random loss on the wire.
//! - [`impair`]: duplication and reordering on the wire (netem's `duplicate`, reordering by
//!   holding a packet back).
//! - [`trace`]: a transmitter whose capacity follows a trace (Mahimahi delivery opportunities or
//!   rate steps) instead of a constant rate.
//! - [`rng`]: the seeded SplitMix64 streams every random process draws from.
//! - [`histogram`]: the log-linear histogram of nanosecond values (RTTs, the relay's lateness).
//!
//! Time is plain `u64` nanoseconds (the simulator's `SimTime`, the relay's CLOCK_MONOTONIC);
//! rates are bits per second. Nothing here reads a clock or does I/O.

pub mod histogram;
pub mod impair;
pub mod qdisc;
pub mod rng;
pub mod trace;
pub mod wire;

pub use histogram::{Histogram, Summary};
pub use impair::{Impairment, WireImpairments};
pub use qdisc::{Qdisc, QdiscConfig, QdiscCounters, QueuedPacket, Verdict};
pub use rng::{LinkStreams, SplitMix64, StreamKind};
pub use trace::{RateTrace, TraceError, TraceTransmitter};
