//! `aerolink experiment slurm | k8s`: one experiment sharded over a
//! cluster's own scheduler. Slurm gets a job array (one task per shard)
//! and a merge job that runs after it; Kubernetes gets an Indexed Job
//! (one completion index per shard) with the experiment in a ConfigMap and
//! the shard stores on a volume, and a merge Job. Every aerolink command
//! the scripts and manifests launch is rendered from the same typed
//! arguments the command line parses ([`RunArgs::to_args`]), and the
//! manifests are built from Kubernetes' own API types (k8s-openapi).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapVolumeSource, Container, HostPathVolumeSource, KeyToPath, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSpec,
    PodTemplateSpec, SeccompProfile, SecurityContext, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::user;
use crate::experiment::{RunArgs, Shard, ShardIndex};
use crate::results::{MergeArgs, ReportArgs};

#[derive(Args, Debug)]
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

#[derive(Args, Debug)]
pub struct K8sArgs {
    /// The experiment file; it and the profile and topology files it names
    /// (beside it) go into a ConfigMap.
    pub file: String,
    /// How many shards: completions of the Indexed Job.
    #[arg(long, value_name = "N")]
    pub shards: usize,
    /// The container image with aerolink in it (see Containerfile).
    #[arg(long)]
    pub image: String,
    /// The Kubernetes namespace.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// Where the manifests go (default k8s-NAME, NAME the experiment's).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Pods at the same time (default: all N). One shard per node keeps
    /// runs from disturbing each other's timing.
    #[arg(long)]
    pub parallelism: Option<i32>,
    /// Runs at the same time within a pod (experiment run --parallel).
    #[arg(long)]
    pub parallel: Option<usize>,
    /// The storage class of the results volume (ReadWriteMany: every pod
    /// writes its own store on it). Default: the cluster's default class.
    #[arg(long)]
    pub storage_class: Option<String>,
    /// The results volume's size.
    #[arg(long, default_value = "1Gi")]
    pub volume_size: String,
    /// Run the pods privileged instead of with the NET_ADMIN and SYS_ADMIN
    /// capabilities: needed where the runtime mounts /proc/sys read-only
    /// and the experiment's chain forwards (topology = "ifc").
    #[arg(long, conflicts_with = "rootless")]
    pub privileged: bool,
    /// Run the pods as an ordinary user (65534) without added capabilities:
    /// aerolink enters a user namespace of its own. Needs nodes that allow
    /// unprivileged user namespaces, seccomp Unconfined (asked for here),
    /// and /dev/net/tun usable in the pod (docs/guide.md §6).
    #[arg(long)]
    pub rootless: bool,
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

fn check_shards(n: usize) -> anyhow::Result<()> {
    if n == 0 || n > 10_000 {
        return Err(user("--shards: expected 1 to 10000"));
    }
    Ok(())
}

fn quote(args: &[String]) -> String {
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
    let run = RunArgs { file: file.display().to_string(), parallel: a.parallel, db: dir.join("shard-{shard}.db"), keep_failed: false, shard: Some(Shard { index: ShardIndex::Auto, of: n }) };
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

fn write(path: &Path, text: &str, exec: bool) -> anyhow::Result<()> {
    std::fs::write(path, text).map_err(|e| user(format!("{}: {e}", path.display())))?;
    if exec {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|e| user(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|e| user(format!("{}: {e}", p.display())))
}

pub fn slurm(a: SlurmArgs) -> anyhow::Result<i32> {
    check_shards(a.shards)?;
    let e = crate::experiment::load(&a.file)?;
    let file = absolute(Path::new(&a.file))?;
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(format!("slurm-{}", e.name)));
    std::fs::create_dir_all(&dir).map_err(|err| user(format!("--dir {}: {err}", dir.display())))?;
    let dir = absolute(&dir)?;
    let exe = std::env::current_exe()?;
    let s = slurm_scripts(&a, &e.name, &exe, &file, &dir);
    let (array, merge, submit) = (dir.join("shards.sbatch"), dir.join("merge.sbatch"), dir.join("submit.sh"));
    write(&array, &s.array, true)?;
    write(&merge, &s.merge, true)?;
    write(&submit, &s.submit, true)?;
    let mut jobs = None;
    if a.submit {
        let sbatch = |args: &[&str]| -> anyhow::Result<String> {
            let o = std::process::Command::new("sbatch").args(args).output().map_err(|err| user(format!("sbatch: {err} (is Slurm installed? scripts/slurm-local.sh sets up a one-node Slurm)")))?;
            if !o.status.success() {
                return Err(user(format!("sbatch {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim())));
            }
            Ok(String::from_utf8_lossy(&o.stdout).trim().split(';').next().unwrap_or("").to_string())
        };
        let array_id = sbatch(&["--parsable", &array.display().to_string()])?;
        let merge_id = sbatch(&["--parsable", &format!("--dependency=afterany:{array_id}"), &merge.display().to_string()])?;
        jobs = Some((array_id, merge_id));
    }
    let report = dir.join(format!("{}.html", e.name));
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "experiment": e.name, "shards": a.shards, "dir": dir, "array_script": array, "merge_script": merge, "submit_script": submit,
                "merged_db": dir.join(format!("{}.db", e.name)), "report": report,
                "array_job": jobs.as_ref().map(|j| &j.0), "merge_job": jobs.as_ref().map(|j| &j.1),
            }))?
        );
    } else {
        println!("{}: {} shards as a Slurm job array in {}", e.name, a.shards, dir.display());
        match &jobs {
            Some((arr, m)) => println!("submitted: array job {arr} ({} tasks), merge job {m} after it; the report will be {}", a.shards, report.display()),
            None => println!("submit: {}   (the array, then the merge and report once it is done: {})", submit.display(), report.display()),
        }
    }
    Ok(0)
}

/// The files an experiment needs beside it (profiles and a topology named
/// by relative path), as (path relative to the experiment, text).
fn companion_files(file: &Path, text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let v: toml::Value = toml::from_str(text).map_err(|e| user(format!("{}: {e}", file.display())))?;
    let base = file.parent().unwrap_or(Path::new("."));
    let mut names: Vec<String> = v.get("profiles").and_then(|p| p.as_array()).map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()).unwrap_or_default();
    if let Some(t) = v.get("topology").and_then(|t| t.as_str()) {
        names.push(t.to_string());
    }
    let mut out = Vec::new();
    for n in names {
        let p = base.join(&n);
        if !p.is_file() {
            continue; // a built-in name
        }
        let rel = Path::new(&n);
        if rel.is_absolute() || rel.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return Err(user(format!("{}: profiles: {n:?} is outside the experiment's directory; copy it beside the experiment file (the pods see only that directory)", file.display())));
        }
        let t = std::fs::read_to_string(&p).map_err(|e| user(format!("{}: {e}", p.display())))?;
        out.push((n, t));
    }
    Ok(out)
}

/// The Kubernetes objects of an experiment: its ConfigMap, the results
/// volume's claim and the Indexed Job (experiment.yaml); the merge Job
/// (merge.yaml).
pub struct Manifests {
    pub config: ConfigMap,
    pub claim: PersistentVolumeClaim,
    pub job: Job,
    pub merge: Job,
}

const EXPERIMENT_DIR: &str = "/experiment";
const RESULTS_DIR: &str = "/results";

pub fn k8s_manifests(a: &K8sArgs, name: &str, file_name: &str, text: &str, companions: &[(String, String)]) -> Manifests {
    let base = format!("aerolink-{}", name.to_ascii_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    let meta = |n: &str| ObjectMeta {
        name: Some(n.to_string()),
        namespace: Some(a.namespace.clone()),
        labels: Some(BTreeMap::from([("app.kubernetes.io/name".to_string(), "aerolink".to_string()), ("aerolink/experiment".to_string(), base.clone())])),
        ..Default::default()
    };
    // ConfigMap keys may not hold '/': each file gets a key, mounted at its path.
    let key = |p: &str| p.replace('/', "__");
    let mut data = BTreeMap::from([(key(file_name), text.to_string())]);
    let mut items = vec![KeyToPath { key: key(file_name), path: file_name.to_string(), mode: None }];
    for (p, t) in companions {
        data.insert(key(p), t.clone());
        items.push(KeyToPath { key: key(p), path: p.clone(), mode: None });
    }
    let config_name = format!("{base}-experiment");
    let claim_name = format!("{base}-results");
    let config = ConfigMap { metadata: meta(&config_name), data: Some(data), ..Default::default() };
    let claim = PersistentVolumeClaim {
        metadata: meta(&claim_name),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteMany".into()]),
            storage_class_name: a.storage_class.clone(),
            resources: Some(VolumeResourceRequirements { requests: Some(BTreeMap::from([("storage".to_string(), Quantity(a.volume_size.clone()))])), ..Default::default() }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let volumes = vec![
        Volume { name: "experiment".into(), config_map: Some(ConfigMapVolumeSource { name: config_name.clone(), items: Some(items), ..Default::default() }), ..Default::default() },
        Volume { name: "results".into(), persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource { claim_name: claim_name.clone(), read_only: None }), ..Default::default() },
        Volume { name: "tun".into(), host_path: Some(HostPathVolumeSource { path: "/dev/net/tun".into(), type_: Some("CharDevice".into()) }), ..Default::default() },
    ];
    let mounts = |tun: bool| {
        let mut m = vec![
            VolumeMount { name: "experiment".into(), mount_path: EXPERIMENT_DIR.into(), read_only: Some(true), ..Default::default() },
            VolumeMount { name: "results".into(), mount_path: RESULTS_DIR.into(), ..Default::default() },
        ];
        if tun {
            m.push(VolumeMount { name: "tun".into(), mount_path: "/dev/net/tun".into(), ..Default::default() });
        }
        m
    };
    // What aerolink needs: namespaces and mounts of /run/netns (SYS_ADMIN),
    // links, addresses, routes and nftables rules (NET_ADMIN), the TUN
    // device, and root in the container.
    let security = if a.privileged {
        SecurityContext { privileged: Some(true), run_as_user: Some(0), ..Default::default() }
    } else if a.rootless {
        SecurityContext {
            run_as_user: Some(65534),
            run_as_group: Some(65534),
            run_as_non_root: Some(true),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities { add: None, drop: Some(vec!["ALL".into()]) }),
            // The default profile refuses unshare(CLONE_NEWUSER) without
            // CAP_SYS_ADMIN.
            seccomp_profile: Some(SeccompProfile { type_: "Unconfined".into(), localhost_profile: None }),
            ..Default::default()
        }
    } else {
        SecurityContext { run_as_user: Some(0), capabilities: Some(Capabilities { add: Some(vec!["NET_ADMIN".into(), "SYS_ADMIN".into()]), drop: None }), ..Default::default() }
    };
    let run = RunArgs {
        file: format!("{EXPERIMENT_DIR}/{file_name}"),
        parallel: a.parallel,
        db: PathBuf::from(format!("{RESULTS_DIR}/shard-{{shard}}.db")),
        keep_failed: false,
        shard: Some(Shard { index: ShardIndex::Auto, of: a.shards }),
    };
    let shard_container = Container {
        name: "shard".into(),
        image: Some(a.image.clone()),
        command: Some(vec!["aerolink".into()]),
        args: Some(run.to_args()),
        security_context: Some(security),
        volume_mounts: Some(mounts(true)),
        ..Default::default()
    };
    let n = a.shards as i32;
    let job = Job {
        metadata: meta(&base),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n),
            parallelism: Some(a.parallelism.unwrap_or(n).clamp(1, n)),
            // A shard is resumable: a pod that dies is started again and
            // skips what its store holds.
            backoff_limit: Some(3 * n),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: meta(&base).labels, ..Default::default() }),
                spec: Some(PodSpec { restart_policy: Some("Never".into()), containers: vec![shard_container], volumes: Some(volumes.clone()), ..Default::default() }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    let merged = PathBuf::from(format!("{RESULTS_DIR}/{name}.db"));
    let merge_args = MergeArgs { inputs: (1..=a.shards).map(|i| PathBuf::from(format!("{RESULTS_DIR}/shard-{i}.db"))).collect(), output: merged.clone(), force: false, json: false };
    let report = ReportArgs { db: merged, output: PathBuf::from(format!("{RESULTS_DIR}/{name}.html")), experiment: None, compare: vec![], json: false };
    let plain = |name: &str, args: Vec<String>| Container {
        name: name.into(),
        image: Some(a.image.clone()),
        command: Some(vec!["aerolink".into()]),
        args: Some(args),
        volume_mounts: Some(mounts(false)),
        ..Default::default()
    };
    let merge = Job {
        metadata: meta(&format!("{base}-merge")),
        spec: Some(JobSpec {
            backoff_limit: Some(2),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: meta(&base).labels, ..Default::default() }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".into()),
                    init_containers: Some(vec![plain("merge", merge_args.to_args())]),
                    containers: vec![plain("report", report.to_args())],
                    volumes: Some(volumes.into_iter().filter(|v| v.name != "tun").collect()),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    Manifests { config, claim, job, merge }
}

/// Several objects as one YAML stream.
pub fn yaml_stream(docs: &[serde_yaml_ng::Value]) -> String {
    docs.iter().map(|d| serde_yaml_ng::to_string(d).expect("Kubernetes objects serialise")).collect::<Vec<_>>().join("---\n")
}

fn to_value<T: serde::Serialize>(t: &T) -> serde_yaml_ng::Value {
    serde_yaml_ng::to_value(t).expect("Kubernetes objects serialise")
}

impl Manifests {
    pub fn experiment_yaml(&self) -> String {
        yaml_stream(&[to_value(&self.config), to_value(&self.claim), to_value(&self.job)])
    }
    pub fn merge_yaml(&self) -> String {
        yaml_stream(&[to_value(&self.merge)])
    }
}

pub fn k8s(a: K8sArgs) -> anyhow::Result<i32> {
    check_shards(a.shards)?;
    let e = crate::experiment::load(&a.file)?;
    let path = Path::new(&a.file);
    let text = std::fs::read_to_string(path).map_err(|err| user(format!("{}: {err}", a.file)))?;
    let companions = companion_files(path, &text)?;
    let file_name = path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_else(|| "experiment.toml".into());
    let m = k8s_manifests(&a, &e.name, &file_name, &text, &companions);
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(format!("k8s-{}", e.name)));
    std::fs::create_dir_all(&dir).map_err(|err| user(format!("--dir {}: {err}", dir.display())))?;
    let (exp, merge) = (dir.join("experiment.yaml"), dir.join("merge.yaml"));
    write(&exp, &m.experiment_yaml(), false)?;
    write(&merge, &m.merge_yaml(), false)?;
    let job = m.job.metadata.name.clone().unwrap_or_default();
    println!("{}: {} shards as a Kubernetes Indexed Job, in {}", e.name, a.shards, dir.display());
    println!("  kubectl apply -f {}", exp.display());
    println!("  kubectl -n {} wait --for=condition=complete --timeout=24h job/{job}", a.namespace);
    println!("  kubectl apply -f {}", merge.display());
    println!("  kubectl -n {} wait --for=condition=complete job/{job}-merge", a.namespace);
    println!("the merged store and report are {RESULTS_DIR}/{}.db and .html on the volume {job}-results", e.name);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The arguments a script or manifest launches, parsed back by our own
    /// command line: the same `experiment run` as typed.
    fn parse_run(args: &[String]) -> RunArgs {
        let mut argv = vec!["aerolink".to_string()];
        argv.extend(args.iter().cloned());
        match crate::Cli::try_parse_from(&argv).expect("our own command line parses") {
            crate::Cli { cmd: crate::Cmd::Experiment { what: crate::experiment::ExperimentCmd::Run(r) }, .. } => r,
            other => panic!("not experiment run: {other:?}"),
        }
    }

    fn k8s_args(privileged: bool) -> K8sArgs {
        K8sArgs {
            file: "exp.toml".into(),
            shards: 4,
            image: "registry.example/aerolink:1".into(),
            namespace: "lab".into(),
            dir: None,
            parallelism: Some(2),
            parallel: Some(3),
            storage_class: Some("nfs".into()),
            volume_size: "2Gi".into(),
            privileged,
            rootless: false,
        }
    }

    #[test]
    fn manifests_round_trip_through_the_kubernetes_types() {
        let companions = vec![("profiles/x.toml".to_string(), "name = \"x\"\n".to_string())];
        let m = k8s_manifests(&k8s_args(false), "Ifc Web", "exp.toml", "name = \"ifc-web\"\n", &companions);
        let docs: Vec<serde_yaml_ng::Value> = m.experiment_yaml().split("---\n").map(|d| serde_yaml_ng::from_str(d).unwrap()).collect();
        assert_eq!(docs.len(), 3);
        let config: ConfigMap = serde_yaml_ng::from_value(docs[0].clone()).unwrap();
        let claim: PersistentVolumeClaim = serde_yaml_ng::from_value(docs[1].clone()).unwrap();
        let job: Job = serde_yaml_ng::from_value(docs[2].clone()).unwrap();
        assert_eq!((config, claim, job.clone()), (m.config.clone(), m.claim.clone(), m.job.clone()));
        assert_eq!(docs[2]["kind"], "Job");
        assert_eq!(docs[2]["apiVersion"], "batch/v1");
        let merge: Job = serde_yaml_ng::from_str(&m.merge_yaml()).unwrap();
        assert_eq!(merge, m.merge);

        // What the Job runs: an Indexed Job of 4, 2 at a time, each pod the
        // shard its completion index names.
        let spec = job.spec.unwrap();
        assert_eq!((spec.completion_mode.as_deref(), spec.completions, spec.parallelism), (Some("Indexed"), Some(4), Some(2)));
        assert_eq!(job.metadata.name.as_deref(), Some("aerolink-ifc-web"));
        let pod = spec.template.spec.unwrap();
        let c = &pod.containers[0];
        let run = parse_run(c.args.as_ref().unwrap());
        assert_eq!(run.shard, Some(Shard { index: ShardIndex::Auto, of: 4 }));
        assert_eq!((run.file.as_str(), run.db.to_str().unwrap(), run.parallel), ("/experiment/exp.toml", "/results/shard-{shard}.db", Some(3)));
        // JOB_COMPLETION_INDEX is 0-based: pod 0 runs shard 1.
        let env = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "0".to_string());
        assert_eq!(run.shard.unwrap().resolve(env), Ok(1));
        // The privileges, said plainly.
        let caps = c.security_context.as_ref().unwrap().capabilities.as_ref().unwrap().add.clone().unwrap();
        assert_eq!(caps, vec!["NET_ADMIN".to_string(), "SYS_ADMIN".to_string()]);
        assert!(c.volume_mounts.as_ref().unwrap().iter().any(|m| m.mount_path == "/dev/net/tun"));
        // The experiment and its profile mounted where the file says.
        let cm = pod.volumes.unwrap().into_iter().find_map(|v| v.config_map).unwrap();
        let paths: Vec<String> = cm.items.unwrap().into_iter().map(|i| i.path).collect();
        assert_eq!(paths, vec!["exp.toml".to_string(), "profiles/x.toml".to_string()]);
        // The merge: every shard's store, then the report.
        let mp = merge.spec.unwrap().template.spec.unwrap();
        let margs = mp.init_containers.unwrap()[0].args.clone().unwrap();
        assert_eq!(&margs[..4], &["results", "merge", "-o", "/results/Ifc Web.db"]);
        assert_eq!(margs.len(), 4 + 4);
        assert_eq!(mp.containers[0].args.clone().unwrap()[0], "report");
    }

    #[test]
    fn rootless_pods_ask_for_no_capability() {
        let mut a = k8s_args(false);
        a.rootless = true;
        let m = k8s_manifests(&a, "x", "exp.toml", "", &[]);
        let yaml = m.experiment_yaml();
        let job: Job = serde_yaml_ng::from_str(yaml.split("---\n").nth(2).unwrap()).unwrap();
        let sc = job.spec.unwrap().template.spec.unwrap().containers[0].security_context.clone().unwrap();
        assert_eq!((sc.run_as_user, sc.run_as_non_root, sc.allow_privilege_escalation, sc.privileged), (Some(65534), Some(true), Some(false), None));
        assert_eq!(sc.capabilities.unwrap().add, None);
        assert_eq!(sc.seccomp_profile.unwrap().type_, "Unconfined");
    }

    #[test]
    fn privileged_pods_when_asked() {
        let m = k8s_manifests(&k8s_args(true), "x", "exp.toml", "", &[]);
        let c = &m.job.spec.unwrap().template.spec.unwrap().containers[0];
        assert_eq!(c.security_context.as_ref().unwrap().privileged, Some(true));
    }

    #[test]
    fn the_slurm_array_runs_each_shard_by_its_task_id() {
        let a = SlurmArgs { file: "e.toml".into(), shards: 3, dir: None, partition: Some("lab".into()), time: Some("1:00:00".into()), parallel: None, share_nodes: false, submit: false, json: false };
        let s = slurm_scripts(&a, "web", Path::new("/opt/aerolink"), Path::new("/data/e x.toml"), Path::new("/data/out"));
        assert!(
            s.array.contains("#SBATCH --array=1-3\n") && s.array.contains("#SBATCH --exclusive\n") && s.array.contains("#SBATCH --partition=lab\n") && s.array.contains("#SBATCH --time=1:00:00\n")
        );
        let exec = s.array.lines().find_map(|l| l.strip_prefix("exec ")).unwrap();
        let argv = shlex::split(exec).unwrap();
        assert_eq!(argv[0], "/opt/aerolink");
        let run = parse_run(&argv[1..]);
        assert_eq!(run.file, "/data/e x.toml");
        assert_eq!(run.db, PathBuf::from("/data/out/shard-{shard}.db"));
        let env = |k: &str| (k == "SLURM_ARRAY_TASK_ID").then(|| "3".to_string());
        assert_eq!(run.shard.unwrap().resolve(env), Ok(3));
        assert!(s.merge.contains("results merge -o /data/out/web.db \"${stores[@]}\""), "{}", s.merge);
        assert!(s.merge.contains("report --db /data/out/web.db -o /data/out/web.html"));
        assert!(s.submit.contains("--dependency=afterany:"));
    }

    #[test]
    fn the_merge_job_merges_the_shard_stores_that_exist() {
        // The merge script itself, run by bash with `echo` as aerolink: it
        // names the stores that exist and says which shard stored nothing.
        let dir = std::env::temp_dir().join(format!("aerolink-merge-script-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("with space")).unwrap();
        let out = dir.join("with space");
        std::fs::write(out.join("shard-1.db"), "").unwrap();
        std::fs::write(out.join("shard-3.db"), "").unwrap();
        let a = SlurmArgs { file: "e.toml".into(), shards: 3, dir: None, partition: None, time: None, parallel: None, share_nodes: false, submit: false, json: false };
        let s = slurm_scripts(&a, "web", Path::new("/bin/echo"), Path::new("/data/e.toml"), &out);
        let o = std::process::Command::new("bash").arg("-c").arg(&s.merge).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{stderr}");
        let merge_line = stdout.lines().next().unwrap();
        assert!(merge_line.starts_with("results merge -o") && merge_line.ends_with(&format!("{0}/shard-1.db {0}/shard-3.db", out.display())), "{merge_line}");
        assert!(stderr.contains("shard 2 stored nothing") && !stderr.contains("shard 1 ") && !stderr.contains("shard 3 "), "{stderr}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_shard_from_the_environment_is_checked() {
        let auto = Shard { index: ShardIndex::Auto, of: 2 };
        assert!(auto.resolve(|_| None).unwrap_err().contains("neither SLURM_ARRAY_TASK_ID"));
        assert!(auto.resolve(|k| (k == "SLURM_ARRAY_TASK_ID").then(|| "5".into())).unwrap_err().contains("not one of 1 to 2"));
        assert!(auto.resolve(|k| (k == "SLURM_ARRAY_TASK_ID").then(|| "x".into())).unwrap_err().contains("not a shard number"));
        assert_eq!(auto.resolve(|k| (k == "JOB_COMPLETION_INDEX").then(|| "1".into())), Ok(2));
    }
}
