//! The link model ccarena's simulator (`crates/sim`) and its relay (`crates/relay`, the kernel
//! backend's link emulator) share, so both make the same decisions for the same arrivals.
//!
//! - [`qdisc`]: queue disciplines behind one enqueue/dequeue interface, generic over the packet
//!   type ([`qdisc::QueuedPacket`]): DropTail with DCTCP step marking, RED (gentle, Adaptive),
//!   CoDel, FQ-CoDel, PIE and FQ; and the serde format of a queue ([`QueueSpec`]), with its
//!   validation ([`field_error::FieldError`] names the field at fault), which the simulator's
//!   spec and the relay's config both read.
//! - [`wire`]: the transmitter's serialization time and random loss on the wire.
//! - [`impair`]: duplication and reordering on the wire (netem's `duplicate`, reordering by
//!   holding a packet back).
//! - [`wire_spec`]: the serde format of the wire's impairments ([`WireSpec`]: loss, duplication,
//!   reordering) with their validation, flat keys of the simulator's link and the relay's direction.
//! - [`trace`]: a transmitter whose capacity follows a trace (Mahimahi delivery opportunities or
//!   rate steps) instead of a constant rate, and the trace's serde format ([`TraceSpec`]).
//! - [`streams`]: a link direction's seeded random streams (loss, queue, jitter, duplication,
//!   reordering), drawn from `ccarena_rng`'s SplitMix64, the workspace's one generator.
//! - [`histogram`]: the log-linear histogram of nanosecond values (RTTs, the relay's lateness).
//! - [`capture`]: a link direction's pcap file, bounded in size, written into the caller's sink.
//!
//! Time is plain `u64` nanoseconds (the simulator's `SimTime`, the relay's CLOCK_MONOTONIC);
//! rates are bits per second. Nothing here reads a clock or opens a file.

pub mod capture;
pub mod field_error;
pub mod histogram;
pub mod impair;
pub mod qdisc;
pub mod required;
pub mod streams;
pub mod trace;
pub mod wire;
pub mod wire_spec;

pub use histogram::{Histogram, Summary};
pub use impair::{Impairment, WireImpairments};
pub use field_error::FieldError;
pub use qdisc::{Aqm, AqmMut, Discipline, Qdisc, QdiscConfig, QdiscCounters, QueueSpec, QueuedPacket, Verdict, MTU_BYTES};
// The generator types appear in this crate's constructors, so callers get them from here too.
pub use ccarena_rng::{SplitMix64, StreamKind};
pub use streams::LinkStreams;
pub use trace::{RateTrace, TraceError, TraceSpec, TraceTransmitter};
pub use wire_spec::WireSpec;
