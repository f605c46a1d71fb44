//! scalebench: scaling studies for GPU clusters.
//!
//! Data flows one way:
//!
//! ```text
//! config → plan → launch → run (backend, workload, measure) → results → report / compare
//! ```
//!
//! - [`config`]: sweep specs, a TOML file as written resolved into axes (errors name file:line).
//! - [`plan`]: what to measure: `run` options and specs expanded into cases and launches.
//! - [`launch`]: running a plan's launches: local `mpirun`, Slurm/UGE/PBS scripts, collect.
//! - [`run`]: one MPI job that measures cases ([`run::job`], feature `mpi`), and its watchdog.
//! - [`topology`]: rank and node identity, hwloc discovery, CPU binding, host facts.
//! - [`backend`]: where buffers live and who moves them (CPU: MPI + CPU GEMM; CUDA: NCCL + cuBLAS).
//! - [`comm`]: the control plane (barriers, agreement, gathering what rank 0 records).
//! - [`workload`]: collectives, matmul, batch_matmul, ddp_step, with exact validation.
//! - [`measure`]: the timing loop, the same for every backend and workload.
//! - [`results`]: the versioned results format and crash-safe I/O.
//! - [`report`]: what people read (the live table; reports from results files).
//! - [`compare`]: regression comparison of results files and the CI gate's verdict.
//! - [`present`]: the document both of them build, rendered as text, Markdown and HTML.
//!
//! Leaves every stage may use: [`params`] (the shared vocabulary and case identity),
//! [`stats`] (pure statistics), [`units`] (byte sizes), [`error`] (the error type and exit
//! codes). The edge: [`cli`] (command-line definitions) and the binary in `main.rs`.
//!
//! `report` and `compare` read only results files, so they build and run without MPI.
//! The same map, with the files outside `src/`, is in `docs/architecture.md`.

pub mod backend;
pub mod cli;
pub mod comm;
pub mod compare;
pub mod config;
pub mod error;
pub mod launch;
pub mod measure;
pub mod params;
pub mod plan;
pub mod present;
pub mod report;
pub mod results;
pub mod run;
pub mod stats;
pub mod topology;
pub mod units;
pub mod workload;
