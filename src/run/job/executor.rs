//! The executor: runs a launch's cases once the backend is up, journalling and printing each.

use super::keep::{lock_kept, Kept};
use super::world::fail_alone;
use super::RunOutcome;
use crate::backend::Backend;
use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::exit::{EXIT_CASES_FAILED, EXIT_OK};
use crate::params::{BackendKind, CaseParams, LaunchShape, ThreadLevel};
use crate::results::io::{
    new_results, write_results, Journal, JournalRecord, JOURNAL_FILE, RESULTS_FILE,
};
use crate::results::schema::{
    CaseResult, DeviceTelemetry, LaunchRecord, LaunchStatus, Provenance, RunInfo,
};
use crate::results::{now_unix_s, representative};
use crate::run::console::{summary_line, TablePrinter};
use crate::run::error::{Result, RunError};
use crate::run::watchdog::Watchdog;
use crate::topology::identity::{LauncherEnv, NodeLayout};
use crate::topology::{self, affinity, load};
use crate::workload::{self, RunSettings};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything a launch needs besides its backend.
pub(super) struct Job<'a> {
    pub(super) argv: &'a [String],
    pub(super) quiet: bool,
    pub(super) run_id: String,
    pub(super) out_dir: PathBuf,
    pub(super) watchdog: &'a Watchdog,
    pub(super) op_timeout: Duration,
    pub(super) keep: &'a Arc<Mutex<Kept>>,
    pub(super) settings: &'a RunSettings,
    pub(super) launch_id: String,
    pub(super) comm: &'a MpiComm,
    pub(super) env: &'a LauncherEnv,
    pub(super) layout: &'a NodeLayout,
    pub(super) shape: LaunchShape,
    pub(super) cases: &'a [CaseParams],
    /// Binding notes of this rank (fallbacks, shared cores).
    pub(super) notes: Vec<String>,
    /// The MPI thread level asked for.
    pub(super) thread_level: ThreadLevel,
    /// Where the network ceilings and error counters are read from.
    pub(super) network: &'a crate::topology::ceilings::network::Probe,
}

impl Job<'_> {
    /// Runs every case of the launch: opens the journal, records the launch, measures the
    /// cases in order (rank 0 journals and prints each as it finishes), writes the results.
    pub(super) fn execute<B: Backend>(&self, mut backend: B) -> Result<RunOutcome> {
        let started = now_unix_s();
        let before = Around::now(self.comm.is_root());
        let mut journal = self.open_journal()?;
        let (launch, pending) = self.launch_record(&backend, started);
        // The CPUs rank 0's host runs the job on: their clock is read around every case.
        let clock_cpus = representative_clock_cpus(&launch);
        let run_info = RunInfo {
            run_id: self.run_id.clone(),
            started_unix_s: started,
            written_unix_s: started,
            command_line: self.argv.to_vec(),
            emulated_nodes: self.layout.emulated,
            labels: Default::default(),
        };
        {
            let mut k = lock_kept(self.keep);
            k.results_path = Some(self.out_dir.join(RESULTS_FILE));
            k.journal_path = Some(self.out_dir.join(JOURNAL_FILE));
            if self.comm.is_root() {
                k.run = Some(run_info.clone());
                k.launch = Some(launch.clone());
            }
            k.unstarted.clear();
        }
        append(&mut journal, JournalRecord::Run(run_info.clone()))?;
        append(
            &mut journal,
            JournalRecord::Launch(Box::new(launch.clone())),
        )?;
        if let Some(p) = &launch.provenance {
            self.print(self.header(p, &launch));
        }

        let mut table = TablePrinter::new();
        let mut results: Vec<CaseResult> = Vec::new();
        let mut any_failed = false;
        // Reasons already on screen: the launch's, then each case-specific one once.
        let mut said: Vec<_> = launch.unrepresentative.clone();
        self.watchdog.disarm();
        // Other scalebench processes seen between cases (a short launch can start and end
        // inside this one's window).
        let mut seen = BTreeMap::new();
        let mut ended_read = std::time::Instant::now();
        for params in self.cases {
            let (rec, failed) = self.run_case(&mut backend, params, &launch, &clock_cpus);
            lock_kept(self.keep).current = None;
            if self.comm.is_root() {
                // Running processes only: the end snapshot reads the ended ones' records.
                if load::ended_scan_due(ended_read.elapsed().as_secs_f64()) {
                    seen.extend(load::scalebench_processes());
                    ended_read = std::time::Instant::now();
                } else {
                    seen.extend(load::running_scalebench_processes());
                }
            }
            any_failed |= failed;
            if let Some(rec) = rec {
                append(&mut journal, JournalRecord::Case(Box::new(rec.clone())))?;
                self.print(case_warnings(&rec, &mut said));
                self.print(table.push(&rec));
                lock_kept(self.keep).cases.push(rec.clone());
                results.push(rec);
            }
        }
        self.print(table.flush());
        let mut launch = launch;
        if self.settings.ceilings {
            self.ceilings_after_cases(&mut launch, &mut results, pending);
            // the error counters' end snapshot, before the results are written
            let grew =
                super::net_ceilings::at_end(self.comm, self.network, launch.provenance.as_mut());
            self.print(grew.iter().map(|w| format!("# warning: {w}")).collect());
        }
        self.record_context(&mut launch, &before, started, seen);

        let results_path = if self.comm.is_root() {
            Some(self.finish(&mut journal, launch, run_info, results, started)?)
        } else {
            None
        };
        Ok(RunOutcome {
            exit_code: if any_failed {
                EXIT_CASES_FAILED
            } else {
                EXIT_OK
            },
            results: results_path,
        })
    }

    /// After the cases, the host cache topped up where it needs it (`host_ceilings`), under
    /// its own deadline (`--op-timeout`, which the measuring budget stays well inside): the
    /// measurement times nothing of the cases and sits outside the start-up. Rank 0 puts the
    /// new CPU ceilings in the launch and reads every case's figures against them again.
    fn ceilings_after_cases(
        &self,
        launch: &mut LaunchRecord,
        results: &mut [CaseResult],
        pending: Option<super::host_ceilings::Pending>,
    ) {
        let above = results
            .iter()
            .flat_map(|r| &r.peak)
            .any(|f| f.under_measured);
        self.watchdog.arm(
            "the host's CPU ceilings, measured after the cases".into(),
            self.op_timeout,
        );
        let budget_s = super::host_ceilings::budget_s(
            self.op_timeout.as_secs_f64(),
            super::host_ceilings::in_sweep(),
        );
        let updates = super::host_ceilings::after_cases(self.comm, pending, above, budget_s);
        self.watchdog.disarm();
        let Some(p) = launch.provenance.as_mut() else {
            return;
        };
        if updates.is_empty() {
            return;
        }
        super::host_ceilings::apply(&mut p.ceilings, updates);
        let l = crate::results::ceilings::LaunchCeilings::of(p);
        for r in results.iter_mut() {
            r.peak = crate::results::ceilings::fractions(&r.params, r.busbw_gbps, r.gflops, &l);
        }
        self.print(ceilings_lines(p));
    }

    /// Rank 0 opens the journal in the output directory; every rank learns whether that
    /// worked, so all fail together.
    pub(super) fn open_journal(&self) -> Result<Option<Journal>> {
        let mut journal = None;
        let mut open_err = String::new();
        if self.comm.is_root() {
            match Journal::open(&self.out_dir.join(JOURNAL_FILE)) {
                Ok(j) => journal = Some(j),
                Err(e) => open_err = e.to_string(),
            }
        }
        let mut msg = open_err.into_bytes();
        self.comm.broadcast_bytes(&mut msg);
        if !msg.is_empty() {
            return Err(RunError::Journal {
                reason: String::from_utf8_lossy(&msg).into_owned(),
            });
        }
        Ok(journal)
    }

    /// Prints on rank 0 unless quiet.
    pub(super) fn print(&self, lines: Vec<String>) {
        if self.comm.is_root() && !self.quiet {
            let mut so = std::io::stdout().lock();
            for l in lines {
                let _ = writeln!(so, "{l}");
            }
            let _ = so.flush();
        }
    }

    /// The lines above the live table: what runs where, then every warning.
    pub(super) fn header(&self, p: &Provenance, launch: &LaunchRecord) -> Vec<String> {
        let first = format!(
            "# scalebench {} | {}, {} on {}{} | binding {} | {} | results: {}",
            env!("CARGO_PKG_VERSION"),
            crate::units::count(p.world_size as usize, "rank", "ranks"),
            crate::units::count(p.devices as usize, "device", "devices"),
            crate::units::count(p.nodes as usize, "node", "nodes"),
            if p.emulated_nodes {
                " (emulated on one host)"
            } else {
                ""
            },
            self.shape.binding,
            p.mpi_library
                .as_deref()
                .unwrap_or("MPI")
                .lines()
                .next()
                .unwrap_or(""),
            self.out_dir.display()
        );
        std::iter::once(first)
            .chain(ceilings_lines(p))
            .chain(p.warnings.iter().map(|w| format!("# warning: {w}")))
            .chain(
                launch
                    .unrepresentative
                    .iter()
                    .map(|w| format!("# warning: not representative ({}): {}", w.kind, w.detail)),
            )
            .collect()
    }

    /// Measures one case under the watchdog, with the clock and telemetry around it; returns
    /// rank 0's record of it (`None` on the other ranks) and whether it failed.
    pub(super) fn run_case<B: Backend>(
        &self,
        backend: &mut B,
        params: &CaseParams,
        launch: &LaunchRecord,
        clock_cpus: &[u32],
    ) -> (Option<CaseResult>, bool) {
        let (comm, size) = (self.comm, self.comm.size());
        let mhz0 = topology::cpu_mhz(clock_cpus);
        let t0 = now_unix_s();
        lock_kept(self.keep).current = Some((params.clone(), t0, backend.total_devices(), size));
        self.watchdog.arm(
            format!("case {} ({})", params.id(), params.label()),
            self.op_timeout,
        );
        backend.telemetry_begin();
        backend.capture_begin();
        let outcome = workload::run_case(backend, comm, params, self.settings);
        let nccl = backend.capture_end();
        self.watchdog.disarm();
        let t1 = now_unix_s();
        let mhz1 = topology::cpu_mhz(clock_cpus);
        let telemetry = backend.telemetry_end();
        // Only a GPU backend samples; the kind is the same on every rank.
        let telemetry = if matches!(backend.kind(), BackendKind::Cuda | BackendKind::Rocm) {
            gather_telemetry(comm, &telemetry)
        } else {
            telemetry
        };
        let failed = match &outcome {
            Ok(m) => m.wrong > 0,
            Err(workload::CaseError::Failed(_)) => true,
            Err(workload::CaseError::Skipped(_)) => false,
        };
        if !comm.is_root() {
            return (None, failed);
        }
        let rec = crate::run::record(
            params,
            &self.launch_id,
            t0,
            t1,
            backend.total_devices(),
            size,
            outcome,
        );
        let mut unrepresentative = representative::case_specific(launch, params);
        let host = topology::hostname();
        unrepresentative.extend(representative::frequency_change(&host, &mhz0, &mhz1));
        let mut rec = CaseResult {
            telemetry,
            unrepresentative,
            nccl,
            ..rec
        };
        if let Some(p) = &launch.provenance {
            rec.peak = crate::results::ceilings::fractions(
                &rec.params,
                rec.busbw_gbps,
                rec.gflops,
                &crate::results::ceilings::LaunchCeilings::of(p),
            );
        }
        (Some(rec), failed)
    }

    /// Rank 0 closes the launch (status, times, overhead), journals it and writes the results
    /// file; returns its path.
    pub(super) fn finish(
        &self,
        journal: &mut Option<Journal>,
        mut launch: LaunchRecord,
        run_info: RunInfo,
        results: Vec<CaseResult>,
        started: f64,
    ) -> Result<PathBuf> {
        let finished = now_unix_s();
        self.print(vec![summary_line(&results)]);
        launch.status = LaunchStatus::Ok;
        launch.finished_unix_s = Some(finished);
        launch.wall_s = Some(finished - started);
        let case_time: f64 = results
            .iter()
            .map(|c| c.finished_unix_s - c.started_unix_s)
            .sum();
        launch.overhead_s = Some((finished - started - case_time).max(0.0));
        append(journal, JournalRecord::Launch(Box::new(launch.clone())))?;
        let mut info = run_info;
        info.written_unix_s = finished;
        let path = self.out_dir.join(RESULTS_FILE);
        write_results(&path, &new_results(info, vec![launch], results))?;
        Ok(path)
    }
}

/// The moment a launch starts or its last case ends: this process's CPU time and, at rank 0,
/// a look at the host.
pub(super) struct Around {
    pub(super) at: f64,
    pub(super) cpu_s: f64,
    pub(super) host: Option<load::HostSnapshot>,
}

impl Around {
    pub(super) fn now(root: bool) -> Around {
        Around {
            at: now_unix_s(),
            cpu_s: load::process_cpu_s(),
            host: root.then(load::snapshot),
        }
    }
}

/// The lines that say what makes `rec` unrepresentative beyond what is on screen (`said`,
/// which grows by them): a ddp_step progress thread or a GEMM's threads the launch's
/// One header line per host with the ceilings the figures are read against, or why none were
/// measured.
fn ceilings_lines(p: &Provenance) -> Vec<String> {
    if let Some(why) = &p.ceilings_skipped {
        return vec![format!("# ceilings: {why}")];
    }
    p.ceilings
        .iter()
        .flat_map(|h| {
            let parts: Vec<String> = h
                .ceilings
                .iter()
                .filter(|c| {
                    c.id.ends_with(".all_cpus")
                        || c.id == crate::topology::ceilings::network::LINK_ID
                        || (!c.id.starts_with("net.")
                            && h.ceilings.iter().all(|o| !o.id.ends_with(".all_cpus")))
                })
                .map(|c| match c.value {
                    Some(v) => format!("{} {v:.1} {}", c.id, c.unit.symbol()),
                    None => format!("{} unknown", c.id),
                })
                .collect();
            let how = match &h.measurement {
                Some(m) if m.reused => format!("cached, {} rounds", m.rounds),
                Some(m) => format!("{} rounds, {:.2} s after the cases", m.rounds, h.seconds),
                None => "none cached yet: measured after the cases".to_string(),
            };
            let line = format!(
                "# ceilings of {} (CPUs {}, {how}): {}",
                h.host,
                h.cpus,
                parts.join(", ")
            );
            // a port down or negotiated down, said before the figures it lowers
            std::iter::once(line).chain(
                h.warnings
                    .iter()
                    .map(|w| format!("# warning: {}: {}: {}", h.host, w.subject, w.message)),
            )
        })
        .collect()
}

/// collectives did not have.
pub(super) fn case_warnings(
    rec: &CaseResult,
    said: &mut Vec<crate::results::schema::Unrepresentative>,
) -> Vec<String> {
    let mut out = Vec::new();
    for w in &rec.unrepresentative {
        if !said.contains(w) {
            out.push(format!(
                "# warning: case {} not representative ({}): {}",
                rec.id, w.kind, w.detail
            ));
            said.push(w.clone());
        }
    }
    out
}

/// Appends to rank 0's journal (nothing elsewhere); a failure ends the whole job, see
/// [`fail_alone`](super::world::fail_alone).
fn append(j: &mut Option<Journal>, rec: JournalRecord) -> Result<()> {
    match j {
        Some(j) => j
            .append(&rec)
            .map_err(RunError::from)
            .map_err(|e| fail_alone(e)),
        None => Ok(()),
    }
}

/// At rank 0: the CPUs the ranks on its host may run on (empty on other ranks, whose clock
/// readings are not recorded).
fn representative_clock_cpus(launch: &LaunchRecord) -> Vec<u32> {
    let Some(p) = &launch.provenance else {
        return Vec::new();
    };
    let host = topology::hostname();
    let mut cpus: Vec<u32> = p
        .ranks
        .iter()
        .filter(|r| r.host == host)
        .flat_map(|r| affinity::parse_cpulist(&r.cpus).unwrap_or_default())
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Every rank's device telemetry, at rank 0, in device order (collective).
fn gather_telemetry(comm: &MpiComm, mine: &[DeviceTelemetry]) -> Vec<DeviceTelemetry> {
    let bytes = serde_json::to_vec(mine).unwrap_or_default();
    let mut all: Vec<DeviceTelemetry> = comm
        .gather_bytes(&bytes)
        .iter()
        .flat_map(|b| serde_json::from_slice::<Vec<DeviceTelemetry>>(b).unwrap_or_default())
        .collect();
    all.sort_by_key(|t| t.device);
    all
}
