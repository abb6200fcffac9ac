//! Every integration test of this crate, as one test binary: one link instead of one per file
//! (each linked the crate and its dependencies again, most of the README test command's build
//! time). cargo-nextest still runs each test in its own process. A new test file is added here.

mod common;

mod ecn;
mod hostile;
mod loopback;
mod service;
mod stream;
mod udt_stream;

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
