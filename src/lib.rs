//! scalebench: scaling studies for GPU clusters.
//!
//! Data flows one way:
//!
//! ```text
//! cli → plan → run { topology, backend, workload, measure } → results → report
//! ```
//!
//! - [`params`]: the shared vocabulary (workloads, types, topologies) and case identity.
//! - [`plan`]: what to measure, expanded into cases.
//! - [`run`]: one MPI job that measures cases ([`run::job`], feature `mpi`).
//! - [`topology`]: rank and node identity, CPU affinity, host facts.
//! - [`backend`]: where buffers live and who moves them (CPU: MPI + CPU GEMM; CUDA: NCCL + cuBLAS).
//! - [`comm`]: the control plane (barriers, agreement, gathering what rank 0 records).
//! - [`workload`]: collectives, matmul, batch_matmul, with exact validation.
//! - [`measure`]: the timing loop; [`stats`]: pure statistics.
//! - [`results`]: the versioned results format and crash-safe I/O.
//! - [`report`]: what people read (the live table; reports from results files).
//!
//! `report` and `compare` read only results files, so they build and run without MPI.

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
pub mod report;
pub mod results;
pub mod run;
pub mod stats;
pub mod topology;
pub mod units;
pub mod workload;
