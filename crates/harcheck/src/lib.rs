//! The HAR 1.2 schema check that `crates/cli/tests/browser.rs` runs on
//! every HAR the browser workload writes, with formats (date-time, uri,
//! ipv4/ipv6) checked: the `jsonschema` crate's validator behind one
//! non-generic type.
//!
//! Why a crate of its own: `jsonschema`'s generic code is instantiated
//! where it is called. Called from the browser test, a plain `cargo test
//! --release` built that test in 121 s on 2 cores (219 s of CPU); here,
//! at opt-level 0 (Cargo.toml's profile), the test builds in 3.6 s. (`make
//! test`'s builds, through clippy-driver, did not pay it: 3.2 s either
//! way; docs/measurements.md, 2026-11-29 late night.) A HAR of a page is
//! checked in milliseconds either way.

use serde_json::Value;

/// A compiled schema.
pub struct Schema(jsonschema::Validator);

impl Schema {
    /// Compiles `text` (a JSON Schema) with format checks on.
    pub fn new(text: &str) -> Result<Schema, String> {
        let schema: Value = serde_json::from_str(text).map_err(|e| format!("the schema is not JSON: {e}"))?;
        jsonschema::options().should_validate_formats(true).build(&schema).map(Schema).map_err(|e| format!("the schema does not compile: {e}"))
    }

    /// Up to `most` of what `doc` breaks, each with where (empty: valid).
    pub fn errors(&self, doc: &Value, most: usize) -> Vec<String> {
        self.0.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path)).take(most).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_checked_and_each_error_says_where() {
        let s = Schema::new(r#"{"type": "object", "properties": {"t": {"type": "string", "format": "date-time"}, "ip": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}}"#).unwrap();
        assert!(s.errors(&serde_json::json!({"t": "2026-11-29T23:00:00.000Z", "ip": "198.18.0.2"}), 5).is_empty());
        let e = s.errors(&serde_json::json!({"t": "yesterday", "ip": "nowhere"}), 5);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().any(|e| e.ends_with("at /t")), "{e:?}");
        assert!(matches!(Schema::new("{"), Err(e) if e.contains("not JSON")));
    }
}
