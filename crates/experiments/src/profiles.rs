//! Finding a profile by built-in name or file, with overrides; trace files
//! named in a profile file are read relative to it.

use std::path::Path;

use aerolink_link::profile::Override;
use aerolink_link::{builtin, Profile, ProfileError};

/// A profile that cannot be had. Every variant is the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Neither a built-in name nor an existing file.
    #[error("{name}: no such built-in profile or file; built-ins: {builtins}")]
    NotFound { name: String, builtins: String },
    /// The file exists but cannot be read.
    #[error("{file}: cannot read: {source}")]
    Read { file: String, source: std::io::Error },
    /// The profile's text is not valid (names the file, key and what is
    /// allowed).
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

/// Loads a built-in profile by name, or a profile file, with `overrides`
/// applied on top.
pub fn load_profile(name_or_file: &str, overrides: &[Override]) -> Result<Profile, LoadError> {
    if let Some(text) = builtin::get(name_or_file) {
        let mut load = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
        return Ok(Profile::parse(text, name_or_file, overrides, &mut load)?);
    }
    let path = Path::new(name_or_file);
    if !path.exists() {
        return Err(LoadError::NotFound { name: name_or_file.to_string(), builtins: builtin::names().collect::<Vec<_>>().join(", ") });
    }
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read { file: name_or_file.to_string(), source })?;
    let dir = path.parent().map(|p| p.to_path_buf()).unwrap_or_default();
    let mut load = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(|e| e.to_string());
    Ok(Profile::parse(&text, name_or_file, overrides, &mut load)?)
}

/// Loads a profile named in a file at `dir`: a `.toml` name is looked up
/// next to that file first, anything else is a built-in name or a path.
pub fn load_profile_near(dir: &Path, name: &str, overrides: &[Override]) -> Result<Profile, LoadError> {
    let candidate = dir.join(name);
    if name.ends_with(".toml") && candidate.exists() {
        load_profile(&candidate.to_string_lossy(), overrides)
    } else {
        load_profile(name, overrides)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_files_and_missing_names() {
        assert_eq!(load_profile("mss", &[]).unwrap().name, "mss");
        let e = load_profile("nope", &[]).unwrap_err().to_string();
        assert!(e.starts_with("nope: no such built-in profile or file; built-ins: ") && e.contains("da2gc"), "{e}");
        let dir = std::env::temp_dir().join(format!("aerolink-profiles-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("p.toml"), "name = \"p\"\n[link]\nrate = { trace = \"t.trace\" }\n").unwrap();
        std::fs::write(dir.join("t.trace"), "1\n2\n").unwrap();
        let p = load_profile_near(&dir, "p.toml", &[]).unwrap();
        assert_eq!(p.name, "p");
        std::fs::write(dir.join("bad.toml"), "[link]\nrate = \"fast\"\n").unwrap();
        let e = load_profile_near(&dir, "bad.toml", &[]).unwrap_err();
        assert!(matches!(e, LoadError::Profile(ref p) if p.key == "link.rate"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
