//! A test's scratch file or directory, removed when the test passes,
//! kept (and named on stderr) when it fails, to look at what it left.
//! Shared by the tests of aerolink-experiments and of the `aerolink` binary
//! (crates/cli/tests/common.rs includes this file).

use std::path::{Path, PathBuf};

/// A scratch directory, or a SQLite file with its `-wal` and `-shm`.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Scratch {
    /// Takes charge of `p`, whatever is there.
    pub fn new(p: PathBuf) -> Scratch {
        Scratch(p)
    }

    /// Removes `p` (and a store's `-wal` and `-shm`) if it is there.
    pub fn remove(p: &Path) {
        if p.is_dir() {
            let _ = std::fs::remove_dir_all(p);
        } else {
            for ext in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{ext}", p.display()));
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("scratch kept: {}", self.0.display());
        } else {
            Scratch::remove(&self.0);
        }
    }
}
