//! Puts the commit the binary was built from into `AEROLINK_COMMIT` for
//! `aerolink --version`: the short hash, or `unknown` outside a git
//! checkout (a source tarball).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=AEROLINK_COMMIT={commit}");
    // A new commit or another branch changes the hash: watch HEAD, the
    // branch's ref (loose or packed).
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            if Path::new(&dir).join(&r).exists() {
                println!("cargo:rerun-if-changed={dir}/{r}");
            }
        }
        if Path::new(&dir).join("packed-refs").exists() {
            println!("cargo:rerun-if-changed={dir}/packed-refs");
        }
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
}
