//! Every integration test of this crate, as one test binary: one link instead of one per file
//! (each linked the crate and its dependencies again, most of the README test command's build
//! time). cargo-nextest still runs each test in its own process. A new test file is added here
//! (tests/python/test_architecture.py fails on a file left out: `autotests = false` would skip it).

mod aqm_samples;
mod capture;
mod equivalence;
mod trace_equivalence;
