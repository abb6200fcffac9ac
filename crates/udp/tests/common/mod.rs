//! Test support shared by the udp crate's integration tests (each test file includes it as
//! `mod common;`).

use std::path::{Path, PathBuf};

/// A scratch directory of this test process, removed when dropped (so repeated runs leave no
/// `ccarena-udp-*` directories behind in the system's temporary directory).
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty `ccarena-udp-{tag}-{pid}` directory under the system's temporary directory.
/// Panics if it cannot be created.
pub fn tempdir(tag: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("ccarena-udp-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}
