//! Every integration test of this crate, as one test binary: one link instead of one per file
//! (each linked the crate and its dependencies again, most of the README test command's build
//! time). cargo-nextest still runs each test in its own process. A new test file is added here.

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
mod quic;
mod red;
mod red_sack_recovery;
mod reno_mathis;
mod routing;
mod same_flavor_fairness;
mod scale_state;
mod trace_link;
mod udp_cbr;
mod window_limits;

/// A file under tests/ that is not a module above would never be built or run (`autotests =
/// false`): each one must be listed.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let listed = include_str!("all.rs");
    for entry in std::fs::read_dir(&dir).expect("tests/ is readable") {
        let path = entry.expect("a directory entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        let is_module = path.extension().is_some_and(|e| e == "rs") || path.join("mod.rs").exists();
        if is_module && stem != "all" {
            assert!(listed.contains(&format!("\nmod {stem};\n")), "tests/{stem} is not listed in tests/all.rs");
        }
    }
}
