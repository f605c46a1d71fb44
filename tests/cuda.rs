//! The CUDA backend through the real binary.
//!
//! Built with `--features cuda` (CI runs `--all-features`): where CUDA cannot start (no driver,
//! as in CI; or no visible device) `run --backend cuda` exits 2 with one sentence, panics
//! nowhere and leaves no results directory. On a machine with a GPU the same tests also run a
//! short validated study on it. Built without the feature, `--backend cuda` is refused with the
//! rebuild command.

mod common;

use common::{mpirun, solo, solo_env, tmpdir, Ran};

/// The run failed cleanly: exit 2, the sentence, no panic, nothing written.
fn refused(ran: &Ran, sentence: &str, out: &std::path::Path) {
    ran.assert_code(2);
    assert!(
        ran.stderr.contains(sentence),
        "expected {sentence:?} in:\n{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
    assert!(!ran.stdout.contains("panicked"), "{}", ran.stdout);
    assert!(!out.exists(), "{} was left behind", out.display());
}

#[cfg(feature = "cuda")]
mod with_feature {
    use super::*;
    use scalebench::backend::cuda::{list_gpus, probe};

    fn driver_here() -> bool {
        probe::libraries().driver
    }

    #[test]
    fn no_driver_exits_2_with_one_sentence() {
        let dir = tmpdir("cuda-nodriver");
        let out = dir.join("out");
        let args = [
            "run",
            "--backend",
            "cuda",
            "-w",
            "allreduce,matmul",
            "--sizes",
            "4KiB",
            "--dims",
            "64",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ];
        if driver_here() {
            // A driver exists: hide every device instead, which must fail the same way.
            let ran = solo_env(&args, &[("CUDA_VISIBLE_DEVICES", "")]);
            refused(&ran, "no CUDA device: ", &out);
        } else {
            refused(&solo(&args), "no CUDA driver found: ", &out);
            refused(&mpirun(2, &args), "no CUDA driver found: ", &out);
        }
    }

    #[test]
    fn too_few_gpus_for_the_requested_devices_is_refused() {
        // Hybrid with more GPUs per node than any machine here has: without a driver the
        // driver sentence comes first; with one, the device sentence names the fix.
        let dir = tmpdir("cuda-toofew");
        let out = dir.join("out");
        let ran = solo(&[
            "run",
            "--backend",
            "cuda",
            "--topology",
            "hybrid",
            "--devices-per-node",
            "4096",
            "-w",
            "allreduce",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ]);
        let sentence = if driver_here() {
            "--devices-per-node"
        } else {
            "no CUDA driver found: "
        };
        refused(&ran, sentence, &out);
    }

    /// `scalebench topo` lists GPUs through `list_gpus`: a sentence where there are none,
    /// real descriptions where there are.
    #[test]
    fn listing_gpus_never_panics() {
        match list_gpus() {
            Err(e) => {
                assert!(
                    e.starts_with("no CUDA driver found: ") || e.starts_with("no CUDA device: "),
                    "{e}"
                );
                assert!(!driver_here() || e.starts_with("no CUDA device: "), "{e}");
            }
            Ok(gpus) => {
                assert!(!gpus.is_empty());
                for g in gpus {
                    assert!(g.memory_bytes > 0 && !g.name.is_empty(), "{g:?}");
                    assert!(
                        g.uuid.starts_with("GPU-") || g.uuid.starts_with("MIG-"),
                        "{g:?}"
                    );
                }
            }
        }
    }

    /// On a GPU machine: every collective and GEMM workload, f32 and f16, validated exactly.
    /// Without a GPU this is the no-driver/no-device refusal again.
    #[test]
    fn short_validated_study_where_a_gpu_exists() {
        let dir = tmpdir("cuda-study");
        let out = dir.join("out");
        let args = [
            "run",
            "--backend",
            "cuda",
            "-w",
            "allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall,matmul,batch_matmul",
            "--dtype",
            "f32,f16",
            "--op",
            "sum,avg",
            "--sizes",
            "4KiB:1MiB:x16",
            "--dims",
            "256",
            "--batch",
            "3",
            "-n",
            "20",
            "--warmup",
            "2",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ];
        let ran = solo(&args);
        let Ok(gpus) = list_gpus() else {
            let sentence = if driver_here() {
                "no CUDA device: "
            } else {
                "no CUDA driver found: "
            };
            refused(&ran, sentence, &out);
            return;
        };
        assert!(!gpus.is_empty());
        ran.assert_code(0);
        let r = common::read_results(&out);
        let prov = r.launches[0].provenance.as_ref().unwrap();
        assert_eq!(prov.backend.kind, "cuda");
        assert!(prov.timer.source.contains("cuEventElapsedTime"));
        assert!(prov.ranks[0].devices[0].name.contains(&gpus[0].pci_bus_id));
        let mut measured = 0;
        for c in &r.cases {
            assert_eq!(c.wrong, 0, "{}: {:?}", c.id, c.message);
            match c.status.as_str() {
                "ok" => measured += 1,
                "skipped" => {
                    let m = c.message.as_deref().unwrap_or("");
                    assert!(
                        c.params.in_place == Some(true) && c.params.workload == "alltoall"
                            || m.contains("rounds down"),
                        "{}: skipped: {m}",
                        c.id
                    );
                }
                s => panic!("{}: {s}: {:?}", c.id, c.message),
            }
            if c.params.workload == "batch_matmul" {
                let names: Vec<&str> = c.phases.iter().map(|p| p.name.as_str()).collect();
                assert_eq!(
                    names,
                    ["scatter", "transfer_compute", "gather", "overlap_hidden"]
                );
            }
        }
        assert!(measured > 0);
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn without_the_feature_cuda_is_refused_with_the_rebuild_command() {
    let dir = tmpdir("cuda-nofeature");
    let out = dir.join("out");
    let ran = solo(&[
        "run",
        "--backend",
        "cuda",
        "-w",
        "allreduce",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(
        &ran,
        "rebuild with `cargo build --release --features cuda`",
        &out,
    );
}
