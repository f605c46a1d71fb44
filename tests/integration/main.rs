//! The integration tests: one test binary (the ripgrep layout), one module per area, with the
//! helpers they share in [`common`]. They start the real binary alone, under real `mpirun`, under
//! a real local Slurm (`ci/slurm/start.sh`) and in headless Chromium.
//!
//! Run them all with `cargo test --release --all-features --test integration`, one area with
//! `… --test integration ddp::`, one test with its full name (`… --test integration
//! ddp::report_and_compare_handle_the_step_metrics`).
//!
//! All tests share one process and run on cargo's default threads (one per CPU): whatever is
//! process-wide is shared by every module, so
//! - MPI jobs, and any launch of the binary that a test starts itself, hold [`common::mpi_lock`]
//!   (`common::mpirun_with` and its siblings take it; never take it around them);
//! - the tests that measure real runs for their statistics and those that keep every core busy
//!   hold [`common::quiet`];
//! - no test changes the process's environment or working directory: a child gets its
//!   variables through its own `Command`, its directory through `current_dir`.

mod common;

mod bad_input;
mod ceilings;
mod ceilings_gpu;
mod ceilings_loaded;
mod ceilings_network;
mod compare;
mod context;
mod cuda;
mod ddp;
mod device_check;
mod fuzz_inputs;
mod gemm_providers;
mod golden;
mod hardening;
mod history;
mod hostile;
#[cfg(feature = "mpi")]
mod hybrid_binding;
mod layering;
mod links;
mod measurement;
mod nccl_capture;
mod nccl_report;
mod noise;
mod readers;
mod replay;
mod report;
mod report_browser;
mod report_ceilings;
mod representative;
mod rocm;
mod run_mpi;
mod scripts;
mod slurm;
mod sweep;
mod verdicts;
mod watchdog;
