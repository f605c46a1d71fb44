//! Helpers the commands share: running a scheduler tool, advice when a submission fails,
//! reading a run's jobs file.

use super::{JobsFile, JOBS_FILE};
use crate::launch::error::{LaunchError, Result};
use crate::launch::rundir::{self};
use std::path::Path;
use std::process::Command;

/// A scheduler tool (`sbatch`, `qsub`, `squeue`) that could not be run or failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The tool did not answer within its time limit (`timeout` exits with 124).
    #[error("{program} did not answer within {timeout_s} s: {stderr}")]
    TimedOut {
        program: String,
        timeout_s: u64,
        stderr: String,
    },
    /// The tool exited with `code` (or "a signal").
    #[error("{program} exited with {code}: {stderr}")]
    Failed {
        program: String,
        code: String,
        stderr: String,
    },
}

pub(crate) fn run_tool(
    program: &str,
    args: &[String],
    timeout_s: u64,
) -> std::result::Result<String, ToolError> {
    let out = Command::new("timeout")
        .arg(timeout_s.to_string())
        .arg(program)
        .args(args)
        .output()
        .map_err(|source| ToolError::Spawn {
            program: program.to_string(),
            source,
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let program = program.to_string();
        return Err(match out.status.code() {
            Some(124) => ToolError::TimedOut {
                program,
                timeout_s,
                stderr,
            },
            code => ToolError::Failed {
                program,
                code: code.map_or("a signal".into(), |c| c.to_string()),
                stderr,
            },
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Pure: what most likely made a submission fail, from the tool's error, as advice.
pub(crate) fn submit_hint(e: &ToolError, slurm_conf_set: bool) -> String {
    let text = match e {
        ToolError::Spawn { program, .. } => {
            return format!("{program} is not on PATH here: submit from a login node of the cluster (or install its client tools)");
        }
        ToolError::TimedOut { .. } => {
            return "the scheduler did not answer: is its controller up and reachable from here? (try `sinfo`)".into();
        }
        ToolError::Failed { stderr, .. } => stderr.to_lowercase(),
    };
    if text.contains("configuration source") || text.contains("slurm.conf") {
        return if slurm_conf_set {
            "Slurm cannot read its configuration: check that SLURM_CONF names a readable slurm.conf"
                .into()
        } else {
            "no Slurm configuration: export SLURM_CONF=/path/to/slurm.conf (the local cluster prints it: eval \"$(bash ci/slurm/start.sh 2)\")".into()
        };
    }
    if [
        "unable to contact",
        "connection refused",
        "socket timed out",
        "communication",
    ]
    .iter()
    .any(|k| text.contains(k))
    {
        return "the scheduler is unreachable: is its controller up? (try `sinfo`; the local cluster: bash ci/slurm/start.sh 2)".into();
    }
    if text.contains("account") || text.contains("association") {
        return "the account was rejected: give one you may charge with --account (Slurm: sacctmgr show assoc user=$USER)".into();
    }
    if text.contains("partition") || text.contains("qos") {
        return "the partition (or QOS) was rejected: give a valid --partition (sinfo -s lists them)".into();
    }
    if text.contains("node configuration") || text.contains("more processors") {
        return "the cluster has no nodes this large: check the profile's cores_per_node, gpus_per_node and memory".into();
    }
    "the scheduler's own message is above".into()
}

/// The run's jobs file, named in the error when it is not a submitted run.
pub(super) fn read_jobs(dir: &Path) -> Result<JobsFile> {
    rundir::read_json(&dir.join(JOBS_FILE)).map_err(|e| LaunchError::NotASubmittedRun {
        dir: dir.to_path_buf(),
        source: Box::new(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(stderr: &str) -> ToolError {
        ToolError::Failed {
            program: "sbatch".into(),
            code: "1".into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn a_failed_submit_names_its_likely_cause() {
        let no_conf = failed("sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\nsbatch: error: fetch_config: DNS SRV lookup failed\nsbatch: error: _establish_config_source: failed to fetch config\nsbatch: fatal: Could not establish a configuration source");
        let h = submit_hint(&no_conf, false);
        assert!(
            h.contains("export SLURM_CONF=") && h.contains("start.sh"),
            "{h}"
        );
        assert!(submit_hint(&no_conf, true).contains("readable slurm.conf"));
        let down = failed("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)");
        assert!(submit_hint(&down, true).contains("unreachable"));
        let acct = failed("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified");
        assert!(submit_hint(&acct, true).contains("--account"));
        let part =
            failed("sbatch: error: Batch job submission failed: Invalid partition name specified");
        assert!(submit_hint(&part, true).contains("--partition"));
        let spawn = ToolError::Spawn {
            program: "sbatch".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert!(submit_hint(&spawn, false).contains("not on PATH"));
        let slow = ToolError::TimedOut {
            program: "sbatch".into(),
            timeout_s: 60,
            stderr: String::new(),
        };
        assert!(submit_hint(&slow, true).contains("did not answer"));
        assert!(submit_hint(&failed("odd"), true).contains("message is above"));
    }
}
