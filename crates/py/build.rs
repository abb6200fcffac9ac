//! Record the git commit the extension is built from as `CCARENA_GIT_REVISION` (the module's
//! `__git_revision__`): `git rev-parse --short HEAD`, or "unknown" without git or a checkout.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    let revision = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CCARENA_GIT_REVISION={revision}");
    // Rebuild when HEAD moves: HEAD itself (a branch switch) and the branch's ref (a commit).
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={}", Path::new(&dir).join("HEAD").display());
    }
    if let (Some(common), Some(head_ref)) = (git(&["rev-parse", "--git-common-dir"]), git(&["symbolic-ref", "-q", "HEAD"])) {
        let common = Path::new(env!("CARGO_MANIFEST_DIR")).join(common);
        // Only files that exist: cargo reruns a script on every build for a missing one.
        for path in [common.join(&head_ref), common.join("packed-refs")] {
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
