//! Page archives: every response a page load needs, from all of its
//! origins, in one JSON file — what `aerolink record` writes, `aerolink
//! replay serve` and the workload server serve, and the corpus generates.
//!
//! ```json
//! {"format": "aerolink-archive/1", "url": "https://www.news.test/",
//!  "source": "corpus page news, generated (seed 0x…)",
//!  "entries": [{"method": "GET", "url": "https://www.news.test/", "status": 200,
//!               "headers": [["content-type", "text/html"]], "body": "<base64>"}]}
//! ```
//!
//! Bodies are stored decoded (no `content-encoding`); the server adds
//! lengths. An entry is found by origin host and path with query, then by
//! path alone (cache-busting queries of recorded pages).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "aerolink-archive/1";

/// An archive that cannot be read: always the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{file}: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("{file}: not an aerolink archive: {why}")]
    Parse { file: String, why: String },
    #[error("{file}: format {found:?}: expected {FORMAT:?}")]
    Format { file: String, found: String },
    #[error("{file}: entries[{index}].url {url:?}: expected an absolute http:// or https:// URL")]
    Url { file: String, index: usize, url: String },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Archive {
    pub format: String,
    /// The page's URL (what a browser navigates to).
    pub url: String,
    /// Where the archive comes from: the corpus generator with its seed, or
    /// the recorded URL, time and browser.
    pub source: String,
    pub entries: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(default = "get")]
    pub method: String,
    pub url: String,
    pub status: u16,
    /// Response headers as recorded (hop-by-hop and length headers are
    /// dropped when served).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(with = "b64")]
    pub body: Vec<u8>,
}

fn get() -> String {
    "GET".into()
}

mod b64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(s.as_bytes()).map_err(serde::de::Error::custom)
    }
}

/// `https://host:port/path?q` → `(scheme, host, path?q)`.
pub fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') { host.split_inclusive(']').next().unwrap_or(host) } else { host.split(':').next().unwrap_or(host) };
    let path = path.split('#').next().unwrap_or(path);
    (!host.is_empty()).then_some((scheme, host, path))
}

impl Archive {
    pub fn load(path: &Path) -> Result<Archive, ArchiveError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ArchiveError::Read { file: file.clone(), source })?;
        let a: Archive = serde_json::from_str(&text).map_err(|e| ArchiveError::Parse { file: file.clone(), why: e.to_string() })?;
        if a.format != FORMAT {
            return Err(ArchiveError::Format { file, found: a.format });
        }
        for (index, e) in a.entries.iter().enumerate() {
            if split_url(&e.url).is_none() {
                return Err(ArchiveError::Url { file, index, url: e.url.clone() });
            }
        }
        Ok(a)
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(self).map_err(std::io::Error::other)?)?;
        std::fs::rename(tmp, path)
    }

    /// The origins' host names, in order of first appearance.
    pub fn hosts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in &self.entries {
            if let Some((_, h, _)) = split_url(&e.url) {
                if !out.iter().any(|x| x == h) {
                    out.push(h.to_string());
                }
            }
        }
        out
    }

    pub fn body_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.body.len() as u64).sum()
    }

    pub fn encode_body(b: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(b)
    }
}

/// Headers a replaying server must not copy from a recording: the server
/// frames the body itself, and bodies are stored decoded.
pub fn served_header(name: &str) -> bool {
    !matches!(
        name.to_ascii_lowercase().as_str(),
        "content-length" | "content-encoding" | "transfer-encoding" | "connection" | "keep-alive" | "alt-svc" | "strict-transport-security" | "upgrade" | "proxy-connection" | "trailer"
    ) && !name.starts_with(':')
}

/// Archives indexed for serving: host → path with query → entry.
#[derive(Default, Clone)]
pub struct Sites {
    by_host: HashMap<String, HashMap<String, Arc<Entry>>>,
}

impl Sites {
    pub fn new(archives: impl IntoIterator<Item = Archive>) -> Sites {
        let mut s = Sites::default();
        for a in archives {
            s.add(a);
        }
        s
    }

    pub fn add(&mut self, a: Archive) {
        for e in a.entries {
            let Some((_, host, path)) = split_url(&e.url) else { continue };
            let (host, path) = (host.to_ascii_lowercase(), path.to_string());
            // The first response recorded for a URL wins (later ones are
            // revalidations or retries).
            self.by_host.entry(host).or_default().entry(path).or_insert_with(|| Arc::new(e));
        }
    }

    pub fn has_host(&self, host: &str) -> bool {
        self.by_host.contains_key(&host.to_ascii_lowercase())
    }

    pub fn hosts(&self) -> impl Iterator<Item = &String> {
        self.by_host.keys()
    }

    /// The entry for `host` (port stripped) and `path_and_query`.
    pub fn find(&self, host: &str, path_and_query: &str) -> Option<Arc<Entry>> {
        let host = host.rsplit_once(':').filter(|(h, p)| !h.is_empty() && p.chars().all(|c| c.is_ascii_digit())).map_or(host, |(h, _)| h).to_ascii_lowercase();
        let paths = self.by_host.get(&host)?;
        if let Some(e) = paths.get(path_and_query) {
            return Some(e.clone());
        }
        let path = path_and_query.split('?').next().unwrap_or(path_and_query);
        paths.get(path).cloned().or_else(|| paths.iter().find(|(k, _)| k.split('?').next() == Some(path)).map(|(_, e)| e.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, body: &str) -> Entry {
        Entry { method: "GET".into(), url: url.into(), status: 200, headers: vec![("content-type".into(), "text/plain".into())], body: body.as_bytes().to_vec() }
    }

    #[test]
    fn urls_split_into_scheme_host_and_path() {
        assert_eq!(split_url("https://www.a.test/x?y=1#f"), Some(("https", "www.a.test", "/x?y=1")));
        assert_eq!(split_url("http://a.test:8080"), Some(("http", "a.test", "/")));
        assert_eq!(split_url("https://[2001:2::2]:443/p"), Some(("https", "[2001:2::2]", "/p")));
        assert_eq!(split_url("ftp://a.test/"), None);
        assert_eq!(split_url("data:text/html,x"), None);
    }

    #[test]
    fn entries_are_found_by_host_and_path_then_by_path_alone() {
        let a = Archive {
            format: FORMAT.into(),
            url: "https://a.test/".into(),
            source: "test".into(),
            entries: vec![entry("https://a.test/", "root"), entry("https://b.test/x.js?v=1", "x1"), entry("https://b.test/x.js?v=2", "x2")],
        };
        let s = Sites::new([a.clone()]);
        assert_eq!(s.find("a.test", "/").unwrap().body, b"root");
        assert_eq!(s.find("A.test:443", "/").unwrap().body, b"root");
        assert_eq!(s.find("b.test", "/x.js?v=2").unwrap().body, b"x2");
        assert!(s.find("b.test", "/x.js?v=9").is_some(), "a cache-busting query falls back to the path");
        assert!(s.find("c.test", "/").is_none());
        assert_eq!(a.hosts(), vec!["a.test", "b.test"]);
    }

    #[test]
    fn an_archive_round_trips_through_its_file_and_bad_files_name_themselves() {
        let dir = std::env::temp_dir().join(format!("aerolink-archive-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = Archive { format: FORMAT.into(), url: "https://a.test/".into(), source: "test".into(), entries: vec![entry("https://a.test/", "\u{0}binary\u{ff}")] };
        let p = dir.join("a.json");
        a.save(&p).unwrap();
        assert_eq!(Archive::load(&p).unwrap(), a);
        std::fs::write(&p, "{\"format\": \"har\"}").unwrap();
        let e = Archive::load(&p).unwrap_err().to_string();
        assert!(e.starts_with(&p.display().to_string()) && e.contains("not an aerolink archive"), "{e}");
        std::fs::write(&p, "{\"format\":\"x\",\"url\":\"u\",\"source\":\"s\",\"entries\":[]}").unwrap();
        assert!(Archive::load(&p).unwrap_err().to_string().contains("expected \"aerolink-archive/1\""));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
