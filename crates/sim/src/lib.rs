//! ccarena's packet-level discrete-event simulator.
//!
//! A [`Simulation`] runs one fully resolved [`Spec`] (every value explicit; format in
//! `docs/engine-spec.md`): hosts and routers joined by directed links (rate, propagation delay,
//! random loss, an egress queue: DropTail, RED, CoDel, FQ-CoDel, PIE or FQ from `ccarena-link`), scheduled link changes (a link may also go
//! down and up), routes (a static table, or shortest paths computed with ECMP or per-packet
//! spraying: [`routing`]), and applications (bulk TCP through the
//! `ccarena-transport` sans-IO sender and receiver, UDP CBR, bulk UDT through the transport's
//! `udt` endpoints), and writes pcap files of chosen links ([`pcap`]). Time is integer nanoseconds and
//! events of one instant run in an order fixed by the events themselves ([`event`]); every random
//! process has its own stream, so a spec and seed give bit-identical results, on one thread or
//! split over several ([`parallel`]). [`Simulation::results`] returns columnar tables.

pub mod endpoint;
pub mod engine;
pub mod event;
pub mod fifo;
pub mod flow;
pub mod link;
pub mod packet;
pub mod parallel;
pub mod pcap;
pub mod pool;
pub mod queue;
pub mod results;
pub mod routing;
pub mod sampler;
pub mod spec;
pub mod subflows;
pub mod table;
pub mod testkit;

pub use engine::Simulation;
pub use spec::{Spec, SpecError};
pub use table::{Column, Results, Table};
