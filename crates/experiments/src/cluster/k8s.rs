//! Kubernetes: an experiment's shards as an Indexed Job (one completion
//! index per shard) with the experiment and the files it names in a
//! ConfigMap and the shard stores on a ReadWriteMany volume, and a merge
//! Job — built from Kubernetes' own API types (k8s-openapi).

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

use crate::commands::{MergeArgs, ReportArgs};
use crate::session::{RunArgs, Shard, ShardIndex};

#[derive(Args, Debug, Clone)]
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

/// The files an experiment needs beside it (profiles and a topology named
/// by relative path), as (path relative to the experiment, text).
pub fn companion_files(file: &Path, text: &str) -> Result<Vec<(String, String)>, String> {
    let v: toml::Value = toml::from_str(text).map_err(|e| format!("{}: {e}", file.display()))?;
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
            return Err(format!("{}: profiles: {n:?} is outside the experiment's directory; copy it beside the experiment file (the pods see only that directory)", file.display()));
        }
        let t = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
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

pub const EXPERIMENT_DIR: &str = "/experiment";
pub const RESULTS_DIR: &str = "/results";

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
    let volumes = volumes(&config_name, &claim_name, items);
    let security = security_context(a);
    let run = RunArgs {
        file: format!("{EXPERIMENT_DIR}/{file_name}"),
        parallel: a.parallel,
        db: PathBuf::from(format!("{RESULTS_DIR}/shard-{{shard}}.db")),
        keep_failed: false,
        shard: Some(Shard { index: ShardIndex::Auto, of: a.shards }),
        pcap: None,
        traces: None,
        live: None,
        pump: aerolink_net::lab::PumpMode::Thread,
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

/// The pods' volumes: the experiment's files, the results volume, the
/// TUN device.
fn volumes(config_name: &str, claim_name: &str, items: Vec<KeyToPath>) -> Vec<Volume> {
    vec![
        Volume { name: "experiment".into(), config_map: Some(ConfigMapVolumeSource { name: config_name.to_string(), items: Some(items), ..Default::default() }), ..Default::default() },
        Volume { name: "results".into(), persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource { claim_name: claim_name.to_string(), read_only: None }), ..Default::default() },
        Volume { name: "tun".into(), host_path: Some(HostPathVolumeSource { path: "/dev/net/tun".into(), type_: Some("CharDevice".into()) }), ..Default::default() },
    ]
}

/// Where a container sees the volumes (the shards also the TUN device).
fn mounts(tun: bool) -> Vec<VolumeMount> {
    let mut m = vec![
        VolumeMount { name: "experiment".into(), mount_path: EXPERIMENT_DIR.into(), read_only: Some(true), ..Default::default() },
        VolumeMount { name: "results".into(), mount_path: RESULTS_DIR.into(), ..Default::default() },
    ];
    if tun {
        m.push(VolumeMount { name: "tun".into(), mount_path: "/dev/net/tun".into(), ..Default::default() });
    }
    m
}

/// What aerolink needs in a pod: namespaces and mounts of /run/netns
/// (SYS_ADMIN), links, addresses, routes and nftables rules (NET_ADMIN),
/// the TUN device, and root in the container — or privileged, or an
/// ordinary user in a user namespace of its own (--rootless).
fn security_context(a: &K8sArgs) -> SecurityContext {
    if a.privileged {
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
    }
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
