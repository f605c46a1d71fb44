//! scalebench: scaling studies for GPU clusters.
//!
//! Data flows one way:
//!
//! ```text
//! cli → config → plan → launch → run (topology, backend, comm, workload, measure) → results → report / compare
//! ```
//!
//! - [`cli`] (the edge, with the binary in `main.rs`): clap definitions, turned into the typed
//!   requests the entry points take ([`run::Request`], [`plan::Request`], [`report::Request`],
//!   [`compare::Request`]). Nothing below it imports it.
//! - [`config`]: sweep specs, a TOML file as written resolved into axes (errors name file:line).
//! - [`plan`]: what to measure: `run`'s request and specs expanded into cases and launches.
//! - [`launch`]: running a plan's launches: local `mpirun`, Slurm/UGE/PBS scripts, collect.
//! - [`run`]: one MPI job that measures cases ([`run::job`], feature `mpi`), its watchdog, and
//!   the live table rank 0 prints ([`run::console`]).
//! - [`topology`]: rank and node identity, hwloc discovery, CPU binding, host facts.
//! - [`backend`]: where buffers live and who moves them (CPU: MPI + CPU GEMM; CUDA: NCCL +
//!   cuBLAS), and the resolution of their clocks.
//! - [`comm`]: the control plane (barriers, agreement, gathering what rank 0 records) and the
//!   count of control steps the watchdog reads.
//! - [`workload`]: collectives, matmul, batch_matmul, ddp_step, replay (a trace's
//!   collectives, read by [`trace`]), with exact validation.
//! - [`measure`]: the timing loop, the same for every backend and workload.
//! - [`results`]: the versioned results format and crash-safe I/O.
//! - [`report`]: what people read: reports from results files.
//! - [`compare`]: regression comparison of results files and the CI gate's verdict.
//! - [`history`]: an SQLite index over results files: each case's series across runs and
//!   clusters, its change points, exports; it names `compare --baseline-history`'s runs.
//! - [`present`]: the document both of them build, rendered as text, Markdown and HTML.
//!
//! Leaves every stage may use: [`params`] (the shared vocabulary and case identity, with the
//! launch settings, test faults, collective counts and cpulists that specs, plans and the run
//! stage share), [`host`] (typed host buffers, used by `comm` and `backend`), [`stats`] (pure
//! statistics), [`units`] (byte sizes), and [`exit`] (the exit codes and the report of an error
//! on stderr). Each layer has its own error type (`PlanError`, `LaunchError`, `RunError`, …,
//! wrapping the errors of the layers it calls); [`error`], just below `cli`, is the crate's
//! error built from them, which `main` maps to an exit code. The module graph has no cycle;
//! the `layering` tests of the integration binary (`tests/integration/layering.rs`, with the
//! table of allowed imports) check every import against it: `cargo test --test integration
//! layering::`.
//!
//! `report` and `compare` read only results files, so they build and run without MPI.
//! The same map, with the files outside `src/`, is in `docs/architecture.md`.

#![warn(unreachable_pub)]

pub mod backend;
pub mod cli;
pub mod comm;
pub mod compare;
pub mod config;
pub mod error;
pub mod exit;
pub mod history;
pub mod host;
pub mod launch;
pub mod links;
pub mod measure;
pub mod params;
pub mod plan;
pub mod present;
pub mod report;
pub mod results;
pub mod run;
pub mod stats;
pub mod topology;
pub mod trace;
pub mod units;
pub mod workload;
