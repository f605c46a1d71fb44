//! Site profiles: what a cluster needs in a job script (partition, account, GPU request
//! syntax, CPUs and memory per GPU, modules, container wrapper, environment), as data.
//!
//! Shipped profiles live in `profiles/*.toml` and are built into the binary; `--profile` takes
//! one of their names or a path to a profile file. A spec's `[submit]` table and command-line
//! options override single fields.

use super::shell;
use crate::config::line_col;
use crate::params::{BackendKind, Binding, LaunchShape, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Which scheduler a profile targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    Slurm,
    Uge,
    Pbs,
}

/// A scheduler name that is none of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheduler '{}': expected slurm, uge or pbs", crate::units::shorten(.0))]
pub struct UnknownScheduler(pub String);

impl std::str::FromStr for Scheduler {
    type Err = UnknownScheduler;
    fn from_str(s: &str) -> Result<Self, UnknownScheduler> {
        match s {
            "slurm" => Ok(Scheduler::Slurm),
            "uge" | "sge" => Ok(Scheduler::Uge),
            "pbs" => Ok(Scheduler::Pbs),
            _ => Err(UnknownScheduler(s.to_string())),
        }
    }
}

/// How a Slurm site wants GPUs requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GpuRequest {
    /// `--gres=gpu[:TYPE]:N` per node (Puhti, Mahti, Sulis).
    Gres,
    /// `--gpus-per-node=N` (LUMI).
    GpusPerNode,
    /// `--gpus-per-task=N`.
    GpusPerTask,
    /// No GPU request (CPU nodes).
    None,
}

/// A site profile. Every field is optional in override tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Profile {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub scheduler: Scheduler,
    /// Slurm partition, UGE queue or PBS queue.
    #[serde(default)]
    pub partition: Option<String>,
    #[serde(default)]
    pub account: Option<String>,
    /// GPUs in one node (0 on CPU nodes).
    #[serde(default)]
    pub gpus_per_node: u32,
    /// CPU cores in one node.
    pub cores_per_node: u32,
    #[serde(default = "default_gpu_request")]
    pub gpu_request: GpuRequest,
    /// GPU type for `--gres=gpu:TYPE:N` (Slurm) or `-l gpu_type=` (UGE).
    #[serde(default)]
    pub gpu_type: Option<String>,
    /// CPU cores per GPU (default: cores per node / GPUs per node).
    #[serde(default)]
    pub cpus_per_gpu: Option<u32>,
    /// Memory per GPU (e.g. `60G`), per CPU in MB, or per node (`0` = all).
    #[serde(default)]
    pub mem_per_gpu: Option<String>,
    #[serde(default)]
    pub mem_per_cpu: Option<String>,
    #[serde(default)]
    pub mem_per_node: Option<String>,
    /// Cores kept free (`first_per_numa` or a cpulist), passed to scalebench's binding.
    #[serde(default)]
    pub reserved_cores: Option<crate::topology::binding::Reserved>,
    /// NUMA nodes in one node, each an equal contiguous block of its cores (needed with
    /// `gpu_numa`: it places the cores the job script binds to).
    #[serde(default)]
    pub numa_domains: Option<u32>,
    /// The NUMA node of each GPU of a node, by GPU number (LUMI: `[3, 3, 1, 1, 0, 0, 2, 2]`).
    /// When set, `binding = "gpu"` puts device `i` on the usable cores of NUMA node
    /// `gpu_numa[i]`, in the job script (`srun --cpu-bind=mask_cpu:`) and in each rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_numa: Vec<u32>,
    /// Environment modules to load.
    #[serde(default)]
    pub modules: Vec<String>,
    /// A wrapper every rank runs under, e.g. `["singularity", "exec", "--nv", "/images/x.sif"]`.
    #[serde(default)]
    pub container: Vec<String>,
    /// Extra environment for the job.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The launcher and its options: default `srun --mpi=pmix` (Slurm) or `mpirun` (UGE, PBS).
    #[serde(default)]
    pub launcher: Vec<String>,
    /// Slurm: pass `--cpu-bind=none` so scalebench's own binding applies (needs a task plugin).
    #[serde(default = "yes")]
    pub cpu_bind_none: bool,
    /// Job time limit in minutes (default: from the spec's launch timeout).
    #[serde(default)]
    pub time_limit_min: Option<u32>,
    /// scalebench's path on the cluster (default: this binary's path).
    #[serde(default)]
    pub scalebench: Option<String>,
    /// UGE parallel environment (default `parallel`).
    #[serde(default)]
    pub pe: Option<String>,
    /// Extra scheduler directives, written as given after `#SBATCH`/`#$`/`#PBS`.
    #[serde(default)]
    pub directives: Vec<String>,
}

fn default_gpu_request() -> GpuRequest {
    GpuRequest::GpusPerNode
}
fn yes() -> bool {
    true
}

/// The profiles built into the binary.
pub(crate) const BUILT_IN: &[(&str, &str)] = &[
    ("puhti", include_str!("../../profiles/puhti.toml")),
    ("mahti", include_str!("../../profiles/mahti.toml")),
    ("lumi", include_str!("../../profiles/lumi.toml")),
    ("sulis", include_str!("../../profiles/sulis.toml")),
    ("apocrita", include_str!("../../profiles/apocrita.toml")),
    (
        "pbs-example",
        include_str!("../../profiles/pbs-example.toml"),
    ),
    (
        "local-slurm",
        include_str!("../../profiles/local-slurm.toml"),
    ),
];

/// Why a profile cannot be used; every message names the origin, line or field and the fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProfileError {
    /// The profile's TOML does not parse or has an unknown, missing or mistyped field.
    #[error("{origin}:{line}:{column}: {}", source.message().trim())]
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A profile that parsed but failed [`Profile::check`].
    #[error("{origin}: {source}")]
    Invalid {
        origin: String,
        #[source]
        source: Box<ProfileError>,
    },
    /// A profile file that exists but cannot be read (not a regular file, not UTF-8, I/O).
    #[error("--profile {0}")]
    Input(Box<crate::results::io::ResultsError>),
    /// Neither a built-in profile's name nor an existing file.
    #[error("--profile {name}: no such built-in profile or file: built-in profiles are {}", built_in.join(", "))]
    Unknown { name: String, built_in: Vec<String> },
    /// A value that would reach a scheduler directive or the environment unsafely.
    #[error(transparent)]
    Unsafe(#[from] shell::ShellError),
    /// An extra directive holding a control character, which would start a new script line.
    #[error("directive '{}' has a control character (e.g. a newline): give one directive per list entry", directive.escape_debug())]
    ControlCharacter { directive: String },
    #[error("cores_per_node must be at least 1")]
    NoCores,
    /// `gpu_numa` without `numa_domains`, or with a length or node number that does not fit.
    #[error("gpu_numa: {problem}")]
    GpuNuma { problem: String },
    /// `gpu_numa` and `reserved_cores` leave a GPU without a core to bind to.
    #[error("gpu_numa: {source}")]
    GpuNumaBinding {
        #[source]
        source: crate::topology::binding::BindError,
    },
    /// The profile could not be turned back into a table to apply overrides.
    #[error(transparent)]
    Encode(#[from] toml::ser::Error),
    /// An override table whose values do not fit the profile's fields.
    #[error("{}", source.message().trim())]
    Override {
        #[source]
        source: Box<toml::de::Error>,
    },
}

/// Parses and checks a profile; errors name `origin`, the line and the fix.
pub(crate) fn parse(origin: &str, text: &str) -> Result<Profile, ProfileError> {
    let p: Profile = toml::from_str(text).map_err(|source| {
        let (line, column) = source.span().map_or((1, 1), |s| line_col(text, s.start));
        ProfileError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            source: Box::new(source),
        }
    })?;
    p.check().map_err(|e| ProfileError::Invalid {
        origin: origin.to_string(),
        source: Box::new(e),
    })?;
    Ok(p)
}

/// A built-in profile by name, or a profile file by path.
pub(crate) fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
    if let Some((_, text)) = BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
        return parse(&format!("built-in profile {name_or_path}"), text);
    }
    let path = Path::new(name_or_path);
    if path.exists() {
        // The regular-file check every input takes: a FIFO would block here for ever.
        let text = crate::results::io::read_input_text(path)
            .map_err(|e| ProfileError::Input(Box::new(e)))?;
        return parse(&path.display().to_string(), &text);
    }
    Err(ProfileError::Unknown {
        name: name_or_path.to_string(),
        built_in: BUILT_IN.iter().map(|(n, _)| n.to_string()).collect(),
    })
}

impl Profile {
    /// Checks every value that reaches a scheduler directive, and the environment names.
    pub(crate) fn check(&self) -> Result<(), ProfileError> {
        let fields = [
            ("partition", &self.partition),
            ("account", &self.account),
            ("gpu_type", &self.gpu_type),
            ("mem_per_gpu", &self.mem_per_gpu),
            ("mem_per_cpu", &self.mem_per_cpu),
            ("mem_per_node", &self.mem_per_node),
            ("pe", &self.pe),
        ];
        for (what, v) in fields {
            if let Some(v) = v {
                shell::directive_value(what, v)?;
            }
        }
        for m in &self.modules {
            shell::directive_value("module", m)?;
        }
        for (k, v) in &self.env {
            shell::env_name(k)?;
            shell::control_free(&format!("env.{k}"), v)?;
        }
        // Every other value that reaches the job script's lines.
        for (key, list) in [("container", &self.container), ("launcher", &self.launcher)] {
            for (i, v) in list.iter().enumerate() {
                shell::control_free(&format!("{key}[{i}]"), v)?;
            }
        }
        let text = [
            ("name", Some(&self.name)),
            ("description", self.description.as_ref()),
            ("scalebench", self.scalebench.as_ref()),
        ];
        for (key, v) in text {
            if let Some(v) = v {
                shell::control_free(key, v)?;
            }
        }
        for d in &self.directives {
            if d.chars().any(|c| c.is_control()) {
                return Err(ProfileError::ControlCharacter {
                    directive: d.clone(),
                });
            }
        }
        if self.cores_per_node == 0 {
            return Err(ProfileError::NoCores);
        }
        self.check_gpu_numa()
    }

    /// A GPU → NUMA map must name a NUMA node for every GPU, each within `numa_domains`,
    /// and leave every GPU a usable core.
    fn check_gpu_numa(&self) -> Result<(), ProfileError> {
        if self.gpu_numa.is_empty() {
            return Ok(());
        }
        let problem = |problem: String| Err(ProfileError::GpuNuma { problem });
        let Some(domains) = self.numa_domains.filter(|&n| n > 0) else {
            return problem(
                "set numa_domains (the NUMA nodes in one node) so the map can place cores".into(),
            );
        };
        if self.cores_per_node % domains != 0 {
            return problem(format!(
                "cores_per_node {} does not split evenly over numa_domains {domains}: fix either",
                self.cores_per_node
            ));
        }
        if self.gpu_numa.len() != self.gpus_per_node as usize {
            return problem(format!(
                "lists {} but gpus_per_node is {}: give one NUMA node per GPU",
                crate::units::count(self.gpu_numa.len(), "GPU", "GPUs"),
                self.gpus_per_node
            ));
        }
        if let Some(n) = self.gpu_numa.iter().find(|&&n| n >= domains) {
            return problem(format!(
                "NUMA node {n} is beyond numa_domains {domains}: number NUMA nodes from 0"
            ));
        }
        self.gpu_cpus(self.gpus_per_node).map(|_| ())
    }

    /// Each GPU's cores under `gpu` binding by the profile's map, for `devices` GPUs of a node
    /// (core numbers, one thread per core), computed by the same binding code the ranks run.
    fn gpu_cpus(&self, devices: u32) -> Result<Vec<Vec<u32>>, ProfileError> {
        use crate::topology::binding::{decide, BindRequest};
        let domains = self.numa_domains.unwrap_or(1).max(1);
        let node = crate::topology::machine::Machine::synthetic(
            &self.name,
            1,
            domains,
            self.cores_per_node / domains,
            1,
        );
        (0..devices)
            .map(|device| {
                decide(
                    &node,
                    &BindRequest {
                        policy: Binding::Gpu,
                        devices_on_node: devices,
                        device,
                        host_share: (0, 1),
                        reserved: self.reserved_cores.clone().unwrap_or_default(),
                        gpu_numa: self.gpu_numa.clone(),
                    },
                )
                .map(|d| d.cpus.unwrap_or_default())
                .map_err(|source| ProfileError::GpuNumaBinding { source })
            })
            .collect()
    }

    /// Slurm's `--cpu-bind` for a launch, if any. With a GPU → NUMA map, `binding = "gpu"`
    /// and whole nodes of GPUs, srun binds each task to its GPU's cores (a hybrid task to all
    /// of them), so that the rank starts, allocates and initialises MPI and the collective
    /// library on its GPU's NUMA node before it binds its own threads to the same cores.
    /// Otherwise `--cpu-bind=none` when the profile asks for it: the ranks bind themselves.
    /// A part of a node gets no masks: its allocation need not own those cores.
    pub(crate) fn slurm_cpu_bind(
        &self,
        shape: &LaunchShape,
    ) -> Result<Option<String>, ProfileError> {
        if !self.cpu_bind_none {
            return Ok(None);
        }
        let by_map = !self.gpu_numa.is_empty()
            && shape.binding == Binding::Gpu
            && shape.backend != BackendKind::Cpu
            && shape.devices_per_node == self.gpus_per_node;
        if !by_map {
            return Ok(Some("--cpu-bind=none".into()));
        }
        let per_gpu = self.gpu_cpus(shape.devices_per_node)?;
        let masks: Vec<String> = match shape.topology {
            Topology::Pure => per_gpu.iter().map(|c| hex_mask(c)).collect(),
            Topology::Hybrid => vec![hex_mask(&per_gpu.concat())],
        };
        Ok(Some(format!("--cpu-bind=mask_cpu:{}", masks.join(","))))
    }

    /// Applies an override table (a spec's `[submit]`): its keys replace this profile's.
    pub(crate) fn apply(&self, overrides: &toml::Table) -> Result<Profile, ProfileError> {
        let mut base = toml::Table::try_from(self)?;
        for (k, v) in overrides {
            if k == "profile" || k == "scheduler_profile" {
                continue;
            }
            base.insert(k.clone(), v.clone());
        }
        let p: Profile =
            toml::Value::Table(base)
                .try_into()
                .map_err(|e| ProfileError::Override {
                    source: Box::new(e),
                })?;
        p.check()?;
        Ok(p)
    }

    /// CPU cores each device gets.
    pub(crate) fn cpus_per_device(&self, devices_per_node: u32) -> u32 {
        self.cpus_per_gpu
            .unwrap_or(self.cores_per_node / devices_per_node.max(1))
            .max(1)
    }
}

/// A Slurm CPU mask: hexadecimal, bit `c` for CPU `c`, no leading zeros (`[1, 2, 3]` → `e`).
fn hex_mask(cpus: &[u32]) -> String {
    let Some(&top) = cpus.iter().max() else {
        return "0".into();
    };
    (0..=top / 4)
        .rev()
        .map(|nibble| {
            let v = (0..4)
                .filter(|b| cpus.contains(&(nibble * 4 + b)))
                .fold(0u32, |v, b| v | 1 << b);
            format!("{v:x}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_profile_parses() {
        for (name, _) in BUILT_IN {
            let p = load(name).unwrap();
            assert_eq!(&p.name, name);
        }
        assert_eq!(load("lumi").unwrap().gpu_request, GpuRequest::GpusPerNode);
        assert_eq!(load("puhti").unwrap().gpu_type.as_deref(), Some("v100"));
        assert_eq!(load("apocrita").unwrap().scheduler, Scheduler::Uge);
        let e = load("nowhere").unwrap_err();
        assert!(matches!(e, ProfileError::Unknown { .. }));
        assert!(e.to_string().contains("built-in profiles are"));
    }

    #[test]
    fn hostile_profile_values_are_refused() {
        let base = "name = \"x\"\nscheduler = \"slurm\"\ncores_per_node = 4\n";
        for (extra, needle) in [
            ("account = \"a; rm -rf /\"\n", "account"),
            ("partition = \"$(id)\"\n", "partition"),
            ("modules = [\"gcc`id`\"]\n", "module"),
            ("[env]\n\"A;B\" = \"x\"\n", "environment variable name"),
            ("directives = [\"--x\\nrm -rf /\"]\n", "control character"),
            ("reserved_cores = \"a-b\"\n", "not a CPU list"),
        ] {
            let e = parse("p.toml", &format!("{base}{extra}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{extra}: {e}");
        }
        let e = parse("p.toml", &format!("{base}partiton = \"x\"\n")).unwrap_err();
        assert!(matches!(
            e,
            ProfileError::Syntax {
                line: 4,
                column: 1,
                ..
            }
        ));
        let e = e.to_string();
        assert!(
            e.starts_with("p.toml:4:1:") && e.contains("unknown field"),
            "{e}"
        );
    }

    #[test]
    fn overrides_replace_fields_and_are_checked() {
        let p = load("puhti").unwrap();
        let mut t = toml::Table::new();
        t.insert("account".into(), toml::Value::String("project_42".into()));
        assert_eq!(p.apply(&t).unwrap().account.as_deref(), Some("project_42"));
        t.insert("account".into(), toml::Value::String("x y".into()));
        assert!(p.apply(&t).is_err());
        assert_eq!(p.cpus_per_device(4), 10);
        assert_eq!(load("local-slurm").unwrap().cpus_per_device(2), 1);
    }

    fn shape(topology: Topology, devices_per_node: u32, binding: Binding) -> LaunchShape {
        LaunchShape {
            backend: BackendKind::Rocm,
            topology,
            nodes: 2,
            devices_per_node,
            binding,
            placement: crate::params::Placement::Fill,
            nccl_algo: None,
            nccl_proto: None,
        }
    }

    #[test]
    fn lumi_gpu_binding_gives_srun_the_documented_masks() {
        let p = load("lumi").unwrap();
        // The LUMI user guide's masks, GCD 0 to 7 (the rocm note), for one task per GCD and
        // their union for one task driving all eight.
        let documented =
            "fe000000000000,fe00000000000000,fe0000,fe000000,fe,fe00,fe00000000,fe0000000000";
        assert_eq!(
            p.slurm_cpu_bind(&shape(Topology::Pure, 8, Binding::Gpu))
                .unwrap()
                .unwrap(),
            format!("--cpu-bind=mask_cpu:{documented}")
        );
        assert_eq!(
            p.slurm_cpu_bind(&shape(Topology::Hybrid, 8, Binding::Gpu))
                .unwrap()
                .unwrap(),
            "--cpu-bind=mask_cpu:fefefefefefefefe"
        );
        // Other bindings, part of a node, or no map: the ranks bind themselves.
        for s in [
            shape(Topology::Pure, 8, Binding::Core),
            shape(Topology::Pure, 4, Binding::Gpu),
        ] {
            assert_eq!(
                p.slurm_cpu_bind(&s).unwrap().as_deref(),
                Some("--cpu-bind=none")
            );
        }
        let puhti = load("puhti").unwrap();
        assert_eq!(
            puhti
                .slurm_cpu_bind(&shape(Topology::Pure, 4, Binding::Gpu))
                .unwrap()
                .as_deref(),
            Some("--cpu-bind=none")
        );
        assert_eq!(hex_mask(&[1, 2, 3]), "e");
        assert_eq!(hex_mask(&[0, 64]), "10000000000000001");
    }

    #[test]
    fn a_gpu_numa_map_that_does_not_fit_is_refused() {
        let base = "name = \"x\"\nscheduler = \"slurm\"\ncores_per_node = 8\ngpus_per_node = 2\n";
        for (extra, needle) in [
            ("gpu_numa = [0, 1]\n", "set numa_domains"),
            (
                "numa_domains = 3\ngpu_numa = [0, 1]\n",
                "does not split evenly",
            ),
            (
                "numa_domains = 2\ngpu_numa = [0]\n",
                "lists 1 GPU but gpus_per_node is 2",
            ),
            (
                "numa_domains = 2\ngpu_numa = [0, 2]\n",
                "NUMA node 2 is beyond",
            ),
            (
                "numa_domains = 2\ngpu_numa = [0, 1]\nreserved_cores = \"4-7\"\n",
                "NUMA node 1, which has no usable core",
            ),
        ] {
            let e = parse("p.toml", &format!("{base}{extra}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("p.toml: gpu_numa") && e.contains(needle),
                "{extra}: {e}"
            );
        }
        let ok = parse(
            "p.toml",
            &format!("{base}numa_domains = 2\ngpu_numa = [1, 0]\n"),
        );
        assert_eq!(ok.unwrap().gpu_numa, vec![1, 0]);
    }
}
