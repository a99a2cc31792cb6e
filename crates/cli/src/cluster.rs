//! `aerolink experiment slurm | k8s`: one experiment sharded over a
//! cluster's own scheduler — the scripts and manifests are built by
//! `aerolink_experiments::cluster`; here they are written, and submitted (Slurm)
//! or their kubectl commands printed.

use std::path::{Path, PathBuf};

use aerolink_experiments::cluster::k8s::{companion_files, RESULTS_DIR};
pub use aerolink_experiments::cluster::k8s::{k8s_manifests, K8sArgs};
pub use aerolink_experiments::cluster::slurm::{slurm_scripts, SlurmArgs};

use crate::error::user;

fn check_shards(n: usize) -> anyhow::Result<()> {
    if n == 0 || n > 10_000 {
        return Err(user("--shards: expected 1 to 10000"));
    }
    Ok(())
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
    let e = aerolink_experiments::experiment::Experiment::load(&a.file)?;
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

pub fn k8s(a: K8sArgs) -> anyhow::Result<i32> {
    check_shards(a.shards)?;
    let e = aerolink_experiments::experiment::Experiment::load(&a.file)?;
    let path = Path::new(&a.file);
    let text = std::fs::read_to_string(path).map_err(|err| user(format!("{}: {err}", a.file)))?;
    let companions = companion_files(path, &text).map_err(user)?;
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
    use aerolink_experiments::session::{RunArgs, Shard, ShardIndex};
    use clap::Parser;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};

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
