//! One experiment sharded over a cluster's own scheduler: Slurm ([`slurm`])
//! or Kubernetes ([`k8s`]). The binary writes what these build, and
//! submits it when asked.

pub mod k8s;
pub mod slurm;
