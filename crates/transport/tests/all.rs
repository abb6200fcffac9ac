//! Every integration test of this crate, as one test binary: one link instead of one per file
//! (each linked the crate and its dependencies again, most of the README test command's build
//! time). cargo-nextest still runs each test in its own process. A new test file is added here
//! (tests/python/test_architecture.py fails on a file left out: `autotests = false` would skip it).

mod mptcp_net;
mod support;

mod accecn;
mod api;
mod dsack;
mod ecn;
mod hooks;
mod linux_host;
mod mptcp;
mod mptcp_autotuning;
mod mptcp_proptest;
mod multiple_losses;
mod perf;
mod prr;
mod quic_proptest;
mod quic_receiver;
mod quic_recovery;
mod rack_tlp;
mod rate_and_pacing;
mod rcvbuf_autotuning;
mod sack_compression;
mod receiver;
mod rto;
mod transfer_proptest;
mod udt;
