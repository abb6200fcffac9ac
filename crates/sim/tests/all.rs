//! Every integration test of this crate, as one test binary: one link instead of one per file
//! (each linked the crate and its dependencies again, most of the README test command's build
//! time). cargo-nextest still runs each test in its own process. A new test file is added here
//! (tests/python/test_architecture.py fails on a file left out: `autotests = false` would skip it).

mod common;

mod aqm;
mod codel_ce_threshold;
mod conservation;
mod determinism;
mod dsack_reordering;
mod dualpi2_classes;
mod ecn_codepoints;
mod events;
mod flavor_bbr;
mod flavor_bbr3;
mod flavor_bic;
mod flavor_cdg;
mod flavor_compound;
mod flavor_dctcp;
mod flavor_fast;
mod flavor_highspeed;
mod flavor_hstcp_lp;
mod flavor_htcp;
mod flavor_hybla;
mod flavor_illinois;
mod flavor_ledbat;
mod flavor_lp;
mod flavor_ltcp;
mod flavor_nv;
mod flavor_scalable;
mod flavor_udt;
mod flavor_vegas;
mod flavor_veno;
mod flavor_westwood;
mod flavor_yeah;
mod flavors_fill_link;
mod l4s;
mod link_reordering;
mod mixed_flavors;
mod mptcp;
mod mptcp_linux_host;
mod mptcp_opportunistic;
mod mptcp_source_ports;
mod mptcp_wvegas;
mod pcap;
mod phase_effects;
mod prague_classic_ecn;
mod parallel;
mod quic;
mod rcvbuf_autotuning;
mod red;
mod red_sack_recovery;
mod reno_mathis;
mod routing;
mod same_flavor_fairness;
mod scale_state;
mod start_delay;
mod steady_state_allocations;
mod trace_link;
mod udp_cbr;
mod window_limits;
