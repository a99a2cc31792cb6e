//! The result store: one SQLite file.
//!
//! Schema (also in docs/guide.md):
//!
//! ```sql
//! experiments(name PRIMARY KEY, file, description, baseline, spec_toml, updated_at)
//! runs(id PRIMARY KEY, run_key UNIQUE,          -- stable hash of what ran
//!      experiment, profile, profile_hash, profile_json,
//!      workload, protocol, params,              -- e.g. web, h2, "10x100KB"
//!      workload_json, knobs_json, seed, rep,
//!      aerolink_version, host, started_at, duration_s,
//!      ok, error,                               -- ok = 1, or 0 with the reason
//!      setup_ms, teardown_ms, wire_bytes_down, wire_bytes_up,
//!      link_drops_loss, link_drops_queue, result_json)
//! metrics(run_id REFERENCES runs(id), name, value, PRIMARY KEY(run_id, name))
//! ```
//! Every figure a run measured is a row of `metrics` (`plt_ms`, `ttfb_ms`,
//! `connections`, `goodput_bps`, …); the client's full JSON is kept in
//! `runs.result_json`.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::metric::{Metric, Metrics};
use crate::series::Series;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file is not a database, or SQLite failed.
    #[error("{path}: {}", explain(source))]
    Sqlite { path: String, source: rusqlite::Error },
}

impl StoreError {
    /// The disk (or the file system's quota) is full.
    pub fn is_full(&self) -> bool {
        let StoreError::Sqlite { source, .. } = self;
        source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
    }
}

/// SQLite's reason, with what it means for a store where SQLite's own
/// words are cryptic.
fn explain(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
            format!("another process holds the store locked ({e}; waited {} s)", BUSY_TIMEOUT.as_secs())
        }
        Some(rusqlite::ErrorCode::DiskFull) => format!("the disk is full ({e}); what was stored before is kept: free space and run again to resume"),
        Some(rusqlite::ErrorCode::NotADatabase) => format!("not an aerolink store ({e})"),
        Some(rusqlite::ErrorCode::ReadOnly) | Some(rusqlite::ErrorCode::PermissionDenied) | Some(rusqlite::ErrorCode::CannotOpen) => format!("cannot write the store here ({e})"),
        _ => e.to_string(),
    }
}

/// How long a writer waits for another to finish its transaction.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub struct Store {
    conn: Connection,
    path: String,
}

/// One run as stored.
#[derive(Clone, Debug, Serialize, Default)]
pub struct RunRow {
    pub id: i64,
    pub run_key: String,
    pub experiment: String,
    pub profile: String,
    pub profile_hash: String,
    pub workload: String,
    pub protocol: String,
    pub params: String,
    pub knobs_json: String,
    pub workload_json: String,
    pub seed: i64,
    pub rep: i64,
    pub aerolink_version: String,
    pub host: String,
    /// The machine a run ran on: cores and kernel ("2 cores, Linux
    /// 6.18.44"), empty for runs stored before it was recorded.
    pub machine: String,
    pub started_at: String,
    pub duration_s: f64,
    pub ok: bool,
    pub error: Option<String>,
    pub setup_ms: f64,
    pub teardown_ms: f64,
    pub wire_bytes_down: i64,
    pub wire_bytes_up: i64,
    pub metrics: Metrics,
    /// Decoded from `protocol` and `knobs_json` when the run is read.
    #[serde(skip)]
    pub series: Series,
    #[serde(skip)]
    pub result_json: String,
    #[serde(skip)]
    pub profile_json: String,
}

impl RunRow {
    /// The stored result as its workload's type; `None` for a failed run or
    /// a row whose workload or result no longer decodes.
    pub fn result(&self) -> Option<crate::workload::WorkloadResult> {
        let w: crate::workload::Workload = serde_json::from_str(&self.workload_json).ok()?;
        w.decode(&self.result_json).ok()
    }

    /// The row with its [`Series`] decoded from its protocol and knobs (the
    /// store does this for every run it reads).
    pub fn with_series(mut self) -> RunRow {
        self.series = Series::decode(&self.protocol, &self.knobs_json);
        self
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ExperimentRow {
    pub name: String,
    pub file: String,
    pub description: String,
    pub baseline: Option<String>,
    pub updated_at: String,
    /// The experiment file's text as last run (its findings are read from it).
    #[serde(skip)]
    pub spec_toml: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS experiments (
  name TEXT PRIMARY KEY, file TEXT NOT NULL, description TEXT NOT NULL,
  baseline TEXT, spec_toml TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, run_key TEXT NOT NULL UNIQUE, experiment TEXT NOT NULL,
  profile TEXT NOT NULL, profile_hash TEXT NOT NULL, profile_json TEXT NOT NULL,
  workload TEXT NOT NULL, protocol TEXT NOT NULL, params TEXT NOT NULL,
  workload_json TEXT NOT NULL, knobs_json TEXT NOT NULL, seed INTEGER NOT NULL, rep INTEGER NOT NULL,
  aerolink_version TEXT NOT NULL, host TEXT NOT NULL, started_at TEXT NOT NULL, duration_s REAL NOT NULL,
  ok INTEGER NOT NULL, error TEXT,
  setup_ms REAL, teardown_ms REAL, wire_bytes_down INTEGER, wire_bytes_up INTEGER,
  link_drops_loss INTEGER, link_drops_queue INTEGER, result_json TEXT, machine TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY (run_id, name));
CREATE INDEX IF NOT EXISTS runs_by_experiment ON runs(experiment);
CREATE TABLE IF NOT EXISTS probe_records (
  log TEXT NOT NULL, n INTEGER NOT NULL, t REAL NOT NULL, kind TEXT NOT NULL, record_json TEXT NOT NULL,
  PRIMARY KEY (log, n));
";

/// One run as the store keeps it (built by [`crate::record`]).
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub run_key: String,
    pub experiment: String,
    pub profile: String,
    pub profile_hash: String,
    pub profile_json: String,
    pub workload: String,
    pub protocol: String,
    pub params: String,
    pub workload_json: String,
    pub knobs_json: String,
    pub seed: u64,
    pub rep: u32,
    pub host: String,
    pub machine: String,
    pub started_at: String,
    pub duration_s: f64,
    pub outcome: crate::runner::RunOutcome,
    pub metrics: Metrics,
}

impl Store {
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let p = path.display().to_string();
        let wrap = |source| StoreError::Sqlite { path: p.clone(), source };
        let conn = Connection::open(path).map_err(wrap)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(wrap)?;
        // Write-ahead log: readers (a report while the experiment runs) see
        // the last committed runs and never block the writers; a writer
        // killed mid-transaction leaves the file as it was.
        let _mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).map_err(wrap)?;
        conn.execute_batch("PRAGMA foreign_keys = ON;").map_err(wrap)?;
        conn.execute_batch(SCHEMA).map_err(wrap)?;
        // Stores from before `machine` was recorded get the column (empty).
        let has_machine: bool = conn.prepare("SELECT 1 FROM pragma_table_info('runs') WHERE name = 'machine'").and_then(|mut st| st.exists([])).map_err(wrap)?;
        if !has_machine {
            conn.execute_batch("ALTER TABLE runs ADD COLUMN machine TEXT NOT NULL DEFAULT ''").map_err(wrap)?;
        }
        Ok(Store { conn, path: p })
    }

    /// Keeps one record of a probe log (`aerolink probe run --db`); a
    /// record already there (same log, same number) is kept as it was.
    pub fn insert_probe_record(&self, log: &str, n: u64, t: f64, kind: &str, json: &str) -> Result<(), StoreError> {
        self.conn
            .execute("INSERT OR IGNORE INTO probe_records (log, n, t, kind, record_json) VALUES (?1, ?2, ?3, ?4, ?5)", rusqlite::params![log, n as i64, t, kind, json])
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// The probe logs the store holds, by name.
    pub fn probe_logs(&self) -> Result<Vec<String>, StoreError> {
        let mut st = self.conn.prepare("SELECT DISTINCT log FROM probe_records ORDER BY log").map_err(|e| self.wrap(e))?;
        let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(|e| self.wrap(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.wrap(e))
    }

    /// The records of one probe log as JSON lines, in order.
    pub fn probe_records(&self, log: &str) -> Result<Vec<String>, StoreError> {
        let mut st = self.conn.prepare("SELECT record_json FROM probe_records WHERE log = ?1 ORDER BY n").map_err(|e| self.wrap(e))?;
        let rows = st.query_map([log], |r| r.get::<_, String>(0)).map_err(|e| self.wrap(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.wrap(e))
    }

    fn wrap(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite { path: self.path.clone(), source }
    }

    pub fn record_experiment(&self, name: &str, file: &str, description: &str, baseline: Option<&str>, spec: &str, now: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO experiments(name, file, description, baseline, spec_toml, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(name) DO UPDATE SET file = ?2, description = ?3, baseline = ?4, spec_toml = ?5, updated_at = ?6",
                params![name, file, description, baseline, spec, now],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// Whether a successful run with this key is stored.
    pub fn has_ok(&self, key: &str) -> Result<bool, StoreError> {
        let r: Option<i64> = self.conn.query_row("SELECT ok FROM runs WHERE run_key = ?1", params![key], |r| r.get(0)).optional().map_err(|e| self.wrap(e))?;
        Ok(r == Some(1))
    }

    /// Stores a run, replacing an earlier failed attempt with the same key.
    pub fn insert_run(&mut self, r: &RunRecord) -> Result<i64, StoreError> {
        let o = &r.outcome;
        let tx = self.conn.transaction().map_err(|e| StoreError::Sqlite { path: self.path.clone(), source: e })?;
        tx.execute("DELETE FROM runs WHERE run_key = ?1", params![r.run_key]).map_err(|e| StoreError::Sqlite { path: self.path.clone(), source: e })?;
        tx.execute(
            "INSERT INTO runs(run_key, experiment, profile, profile_hash, profile_json, workload, protocol, params, workload_json, knobs_json,
               seed, rep, aerolink_version, host, started_at, duration_s, ok, error, setup_ms, teardown_ms, wire_bytes_down, wire_bytes_up,
               link_drops_loss, link_drops_queue, result_json, machine)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
            params![
                r.run_key,
                r.experiment,
                r.profile,
                r.profile_hash,
                r.profile_json,
                r.workload,
                r.protocol,
                r.params,
                r.workload_json,
                r.knobs_json,
                r.seed as i64,
                r.rep as i64,
                env!("CARGO_PKG_VERSION"),
                r.host,
                r.started_at,
                r.duration_s,
                o.ok as i64,
                o.error,
                o.setup_ms,
                o.teardown_ms,
                o.wire_bytes_down as i64,
                o.wire_bytes_up as i64,
                o.link_drops_loss as i64,
                o.link_drops_queue as i64,
                serde_json::to_string(&o.result).expect("a result serializes"),
                r.machine
            ],
        )
        .map_err(|e| StoreError::Sqlite { path: self.path.clone(), source: e })?;
        let id = tx.last_insert_rowid();
        for (k, v) in &r.metrics {
            if v.is_finite() {
                tx.execute("INSERT INTO metrics(run_id, name, value) VALUES (?1, ?2, ?3)", params![id, k.name(), v]).map_err(|e| StoreError::Sqlite { path: self.path.clone(), source: e })?;
            }
        }
        tx.commit().map_err(|e| StoreError::Sqlite { path: self.path.clone(), source: e })?;
        Ok(id)
    }

    pub fn experiments(&self) -> Result<Vec<ExperimentRow>, StoreError> {
        let mut st = self.conn.prepare("SELECT name, file, description, baseline, updated_at, spec_toml FROM experiments ORDER BY name").map_err(|e| self.wrap(e))?;
        let rows = st
            .query_map([], |r| Ok(ExperimentRow { name: r.get(0)?, file: r.get(1)?, description: r.get(2)?, baseline: r.get(3)?, updated_at: r.get(4)?, spec_toml: r.get(5)? }))
            .map_err(|e| self.wrap(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.wrap(e))?;
        Ok(rows)
    }

    /// Runs of one experiment (or all), with their metrics.
    /// Read in one transaction: a snapshot, however many writers commit
    /// meanwhile (every run with exactly the metrics stored with it).
    pub fn runs(&self, experiment: Option<&str>) -> Result<Vec<RunRow>, StoreError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.wrap(e))?;
        let mut st = tx
            .prepare(
                "SELECT id, run_key, experiment, profile, profile_hash, workload, protocol, params, knobs_json, seed, rep, aerolink_version, host,
                        started_at, duration_s, ok, error, setup_ms, teardown_ms, wire_bytes_down, wire_bytes_up, result_json, profile_json, workload_json, machine
                 FROM runs WHERE (?1 IS NULL OR experiment = ?1) ORDER BY id",
            )
            .map_err(|e| self.wrap(e))?;
        let mut rows = st
            .query_map(params![experiment], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    run_key: r.get(1)?,
                    experiment: r.get(2)?,
                    profile: r.get(3)?,
                    profile_hash: r.get(4)?,
                    workload: r.get(5)?,
                    protocol: r.get(6)?,
                    params: r.get(7)?,
                    knobs_json: r.get(8)?,
                    seed: r.get(9)?,
                    rep: r.get(10)?,
                    aerolink_version: r.get(11)?,
                    host: r.get(12)?,
                    started_at: r.get(13)?,
                    duration_s: r.get(14)?,
                    ok: r.get::<_, i64>(15)? == 1,
                    error: r.get(16)?,
                    setup_ms: r.get::<_, Option<f64>>(17)?.unwrap_or(0.0),
                    teardown_ms: r.get::<_, Option<f64>>(18)?.unwrap_or(0.0),
                    wire_bytes_down: r.get::<_, Option<i64>>(19)?.unwrap_or(0),
                    wire_bytes_up: r.get::<_, Option<i64>>(20)?.unwrap_or(0),
                    result_json: r.get::<_, Option<String>>(21)?.unwrap_or_default(),
                    profile_json: r.get(22)?,
                    workload_json: r.get(23)?,
                    machine: r.get(24)?,
                    metrics: Metrics::new(),
                    series: Series::default(),
                }
                .with_series())
            })
            .map_err(|e| self.wrap(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.wrap(e))?;
        let mut m = tx.prepare("SELECT name, value FROM metrics WHERE run_id = ?1").map_err(|e| self.wrap(e))?;
        for row in rows.iter_mut() {
            let kv = m.query_map(params![row.id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))).map_err(|e| self.wrap(e))?;
            for x in kv {
                let (k, v) = x.map_err(|e| self.wrap(e))?;
                // A name outside the set (a browser protocol other than
                // h1/h2/h3 stored by its own name before the set was
                // closed) is not read.
                if let Ok(k) = k.parse::<Metric>() {
                    row.metrics.insert(k, v);
                }
            }
        }
        drop(m);
        drop(st);
        tx.commit().map_err(|e| self.wrap(e))?;
        Ok(rows)
    }
}

/// What [`Store::merge_from`] did.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Merged {
    /// Runs copied in (new keys, or a success replacing a failure).
    pub added: usize,
    /// Runs already here (same key, and this store's is no worse).
    pub kept: usize,
}

/// Why two stores should not be merged without being told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The same experiment name from different experiment files (by
    /// content).
    Spec { experiment: String },
    /// Runs made by different aerolink versions.
    Version { here: Vec<String>, there: Vec<String> },
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::Spec { experiment } => write!(f, "experiment {experiment} comes from a different experiment file (its text differs)"),
            Mismatch::Version { here, there } => write!(f, "runs made by aerolink {} and {}", here.join(", "), there.join(", ")),
        }
    }
}

impl Store {
    /// What would make merging `other` into this store mix different
    /// experiments or versions (empty: nothing).
    pub fn mismatches(&self, other: &Store) -> Result<Vec<Mismatch>, StoreError> {
        let mut out = Vec::new();
        let here: BTreeMap<String, String> = self.experiments()?.into_iter().map(|e| (e.name, e.spec_toml)).collect();
        for e in other.experiments()? {
            if here.get(&e.name).is_some_and(|s| *s != e.spec_toml) {
                out.push(Mismatch::Spec { experiment: e.name });
            }
        }
        let versions = |s: &Store| -> Result<Vec<String>, StoreError> {
            let mut st = s.conn.prepare("SELECT DISTINCT aerolink_version FROM runs ORDER BY 1").map_err(|e| s.wrap(e))?;
            let v = st.query_map([], |r| r.get::<_, String>(0)).map_err(|e| s.wrap(e))?.collect::<Result<Vec<_>, _>>().map_err(|e| s.wrap(e));
            v
        };
        let (a, b) = (versions(self)?, versions(other)?);
        if !a.is_empty() && !b.is_empty() && a != b {
            out.push(Mismatch::Version { here: a, there: b });
        }
        Ok(out)
    }

    /// Copies `other`'s experiments and runs (with their metrics) into this
    /// store, in one transaction. A run whose key is already here is kept,
    /// unless this one failed and `other`'s succeeded; so merging is
    /// idempotent and never duplicates a run. Each run keeps its host.
    pub fn merge_from(&mut self, other: &Path) -> Result<Merged, StoreError> {
        let wrap = |e| StoreError::Sqlite { path: self.path.clone(), source: e };
        self.conn.execute("ATTACH DATABASE ?1 AS src", params![other.display().to_string()]).map_err(wrap)?;
        let result = (|| -> Result<Merged, rusqlite::Error> {
            let tx = self.conn.transaction()?;
            tx.execute(
                "INSERT INTO experiments(name, file, description, baseline, spec_toml, updated_at)
                 SELECT name, file, description, baseline, spec_toml, updated_at FROM src.experiments WHERE true
                 ON CONFLICT(name) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)",
                [],
            )?;
            const COLS: &str = "run_key, experiment, profile, profile_hash, profile_json, workload, protocol, params, workload_json, knobs_json,
               seed, rep, aerolink_version, host, started_at, duration_s, ok, error, setup_ms, teardown_ms, wire_bytes_down, wire_bytes_up,
               link_drops_loss, link_drops_queue, result_json, machine";
            let candidates: Vec<(i64, String, bool)> = {
                let mut st = tx.prepare("SELECT id, run_key, ok FROM src.runs ORDER BY id")?;
                let v = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? == 1)))?.collect::<Result<Vec<_>, _>>()?;
                v
            };
            let mut m = Merged::default();
            for (id, key, ok) in candidates {
                let here: Option<bool> = tx.query_row("SELECT ok FROM runs WHERE run_key = ?1", params![key], |r| Ok(r.get::<_, i64>(0)? == 1)).optional()?;
                match here {
                    Some(true) => {
                        m.kept += 1;
                        continue;
                    }
                    Some(false) if !ok => {
                        m.kept += 1;
                        continue;
                    }
                    Some(false) => {
                        tx.execute("DELETE FROM runs WHERE run_key = ?1", params![key])?;
                    }
                    None => {}
                }
                tx.execute(&format!("INSERT INTO runs({COLS}) SELECT {COLS} FROM src.runs WHERE id = ?1"), params![id])?;
                let new_id = tx.last_insert_rowid();
                tx.execute("INSERT INTO metrics(run_id, name, value) SELECT ?1, name, value FROM src.metrics WHERE run_id = ?2", params![new_id, id])?;
                m.added += 1;
            }
            tx.commit()?;
            Ok(m)
        })();
        let detach = self.conn.execute("DETACH DATABASE src", []);
        let m = result.map_err(wrap)?;
        detach.map_err(wrap)?;
        Ok(m)
    }
}
