//! Slurm: an experiment's shards as a job array (one task per shard,
//! `experiment run --shard auto/N`), a merge-and-report job after it, and
//! submit.sh — every aerolink command rendered from the typed arguments
//! the command line parses.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::commands::{MergeArgs, ReportArgs};
use crate::session::{RunArgs, Shard, ShardIndex};

#[derive(Args, Debug, Clone)]
pub struct SlurmArgs {
    /// The experiment file. It, and this directory, must be where every
    /// node sees them at the same path (a shared file system).
    pub file: String,
    /// How many shards: tasks of the job array.
    #[arg(long, value_name = "N")]
    pub shards: usize,
    /// Where the scripts, the shard stores and logs, the merged store and
    /// the report go (default slurm-NAME, NAME the experiment's).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// sbatch --partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit of each shard (sbatch --time, e.g. 2:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// Runs at the same time within a shard (experiment run --parallel).
    /// Default: what each node's cores allow.
    #[arg(long)]
    pub parallel: Option<usize>,
    /// Let shards share a node. By default each shard has its node to
    /// itself (sbatch --exclusive): runs of two shards on the same cores
    /// would disturb each other's link timing.
    #[arg(long)]
    pub share_nodes: bool,
    /// Submit at once (sbatch: the array, then the merge after it) and
    /// print the job ids.
    #[arg(long)]
    pub submit: bool,
    /// Print what was written (and submitted) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments as one shell line, each quoted where it must be.
pub fn quote(args: &[String]) -> String {
    args.iter().map(|a| shlex::try_quote(a).map(|q| q.to_string()).unwrap_or_else(|_| a.clone())).collect::<Vec<_>>().join(" ")
}

/// What `experiment slurm` writes.
pub struct SlurmScripts {
    pub array: String,
    pub merge: String,
    pub submit: String,
}

/// The Slurm job array and the merge job for an experiment (paths
/// absolute: the jobs run elsewhere).
pub fn slurm_scripts(a: &SlurmArgs, name: &str, exe: &Path, file: &Path, dir: &Path) -> SlurmScripts {
    let n = a.shards;
    let exe_q = quote(&[exe.display().to_string()]);
    let run = RunArgs {
        file: file.display().to_string(),
        parallel: a.parallel,
        db: dir.join("shard-{shard}.db"),
        keep_failed: false,
        shard: Some(Shard { index: ShardIndex::Auto, of: n }),
        pcap: None,
        traces: None,
        live: None,
        pump: aerolink_net::lab::PumpMode::Thread,
    };
    let mut head = format!(
        "#!/bin/bash\n# aerolink experiment {name}: shard $SLURM_ARRAY_TASK_ID of {n} (written by `aerolink experiment slurm`).\n\
         # aerolink builds network namespaces and TUN devices: it runs as root on the node, or as a user\n\
         # where the kernel allows unprivileged user namespaces and /dev/net/tun is open (docs/guide.md §6).\n\
         #SBATCH --job-name=aerolink-{name}\n#SBATCH --array=1-{n}\n#SBATCH --output={}\n",
        dir.join("shard-%a.log").display()
    );
    if !a.share_nodes {
        head.push_str("#SBATCH --exclusive\n");
    }
    if let Some(p) = &a.partition {
        head.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(t) = &a.time {
        head.push_str(&format!("#SBATCH --time={t}\n"));
    }
    let array = format!("{head}set -euo pipefail\nexec {exe_q} {}\n", quote(&run.to_args()));
    let merged = dir.join(format!("{name}.db"));
    let merge_args = MergeArgs { inputs: vec![], output: merged.clone(), force: false, json: false };
    let report = ReportArgs { db: merged, output: dir.join(format!("{name}.html")), experiment: None, compare: vec![], json: false };
    // The directory quoted, `$i` left to the shell.
    let shard_db = |i: &str| format!("{}\"/shard-{i}.db\"", quote(&[dir.display().to_string()]));
    let merge = format!(
        "#!/bin/bash\n# aerolink experiment {name}: merge the {n} shard stores and write the report (after the array).\n\
         #SBATCH --job-name=aerolink-{name}-merge\n#SBATCH --output={}\n{}set -euo pipefail\nstores=()\nfor i in $(seq 1 {n}); do\n  \
         if [ -e {} ]; then stores+=({}); else echo \"shard $i stored nothing: see {}\" >&2; fi\ndone\n\
         [ ${{#stores[@]}} -gt 0 ] || {{ echo 'no shard stored anything' >&2; exit 1; }}\n\
         {exe_q} {} \"${{stores[@]}}\"\n{exe_q} {}\n",
        dir.join("merge.log").display(),
        a.partition.as_ref().map(|p| format!("#SBATCH --partition={p}\n")).unwrap_or_default(),
        shard_db("$i"),
        shard_db("$i"),
        dir.join("shard-$i.log").display(),
        quote(&merge_args.to_args()),
        quote(&report.to_args()),
    );
    let submit = format!(
        "#!/bin/bash\n# Submits the shards of {name} as a job array, then the merge once they are done (ok or not).\nset -euo pipefail\n\
         array=$(sbatch --parsable {})\nmerge=$(sbatch --parsable --dependency=afterany:${{array%%;*}} {})\necho \"array job $array, merge job $merge\"\n",
        quote(&[dir.join("shards.sbatch").display().to_string()]),
        quote(&[dir.join("merge.sbatch").display().to_string()]),
    );
    SlurmScripts { array, merge, submit }
}
