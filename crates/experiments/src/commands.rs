//! The typed command lines of aerolink subcommands that other parts of
//! aerolink launch (cluster scripts and manifests): each struct is what the
//! binary's parser fills and what `to_args` renders back, so the two cannot
//! drift. `experiment run`'s is [`crate::session::RunArgs`].

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// The HTML file to write.
    #[arg(short, long, default_value = "report.html")]
    pub output: PathBuf,
    /// Only this experiment.
    #[arg(long)]
    pub experiment: Option<String>,
    /// Compare two stores of the same experiments (two versions, two
    /// machines, before and after a change): per setting, link and series,
    /// both medians and B / A with a 95 % interval; writes the comparison
    /// instead of the report (-o, default compare.html when -o is not
    /// given). E.g. `aerolink report --compare before.db after.db`.
    #[arg(long, num_args = 2, value_names = ["A.db", "B.db"])]
    pub compare: Vec<PathBuf>,
    /// With --compare: print the comparison rows as JSON on standard
    /// output too.
    #[arg(long, requires = "compare")]
    pub json: bool,
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The stores to merge (e.g. shard-*.db).
    #[arg(required = true, value_name = "DB")]
    pub inputs: Vec<PathBuf>,
    /// The merged store (created, or added to).
    #[arg(short, long, value_name = "DB")]
    pub output: PathBuf,
    /// Merge even stores of different experiment files or aerolink versions.
    #[arg(long)]
    pub force: bool,
    /// Print what was merged as JSON.
    #[arg(long)]
    pub json: bool,
}

impl MergeArgs {
    /// `results merge …` after `aerolink`, inputs last.
    pub fn to_args(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["results".into(), "merge".into(), "-o".into(), self.output.display().to_string()];
        if self.force {
            v.push("--force".into());
        }
        if self.json {
            v.push("--json".into());
        }
        v.extend(self.inputs.iter().map(|p| p.display().to_string()));
        v
    }
}

impl ReportArgs {
    /// `report …` after `aerolink`.
    pub fn to_args(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["report".into(), "--db".into(), self.db.display().to_string(), "-o".into(), self.output.display().to_string()];
        if let Some(e) = &self.experiment {
            v.extend(["--experiment".into(), e.clone()]);
        }
        v
    }
}
