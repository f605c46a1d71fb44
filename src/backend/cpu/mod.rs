//! The CPU backend: host buffers, MPI collectives, CPU GEMM (the system BLAS or the `gemm`
//! crate, see [`super::gemm`]).
//!
//! Pure MPI (one device per rank): every collective is one MPI call on the rank's buffers, in
//! place through `MPI_IN_PLACE` or out of place.
//!
//! Hybrid (one rank per node driving G devices): each device is a worker of a [`Team`]: the
//! rank's own thread is worker 0, the others are persistent threads, each bound to its device's
//! CPUs and owning its buffers (allocated and zeroed by the worker, so first touch places them
//! near it; the node-level scratch is touched page-part by page-part by all workers).
//! Collectives are hierarchical, one team job each: the workers combine their buffers in shared
//! memory (in parallel, each on its chunk), worker 0 runs one MPI collective among node leaders,
//! and the workers copy the result into their own buffers; phases are separated by spinning
//! one-way flags (see [`super::team`]), so no thread-pool hand-off sits on the timed path. MPI
//! is only called from the main thread (MPI_THREAD_FUNNELED). GEMMs run on a rayon pool bound the same way.
//!
//! One file per job: [`flat`] (pure MPI), [`hier`] (the hybrid path's collectives),
//! [`kernels`] (what the hybrid workers share), [`gemm`] (CPU GEMM) and [`overlap`]
//! (non-blocking all-reduces); this file sets the backend up and implements [`Backend`].

mod flat;
mod gemm;
mod hier;
mod kernels;
mod overlap;

// The hybrid kernels, in scope here for `overlap`, which shares them.
use super::gemm::{self as providers, CblasScalar, GemmEngine};
use super::team::{Team, SPIN};
use super::{
    alignment_policy, Backend, BackendError, BackendResult, BufferOffset, CollectiveCall,
    DeviceError, DevicePlan, GemmBatch, HostBuf, OverlapSettings, PreparedCollective, Unsupported,
};
use crate::params::{BackendKind, CaseParams, Dtype, ReduceOp, Workload};
use crate::results::schema::{
    BackendInfo, DeviceBinding, GemmProvenance, ProgressThreadBinding, TimerInfo,
};
use crate::topology::affinity;
use gemm::gemm_typed;
use kernels::{chunk, copy_range, divide, fold_into, typed, Arith, SyncPtr};
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::Instant;

pub struct CpuBackend {
    comm: SimpleCommunicator,
    rank: u32,
    size: u32,
    g: usize,
    cfg: DevicePlan,
    /// Hybrid: one GEMM thread per device.
    workers: Option<rayon::ThreadPool>,
    /// The GEMM provider (`None`: this launch runs no GEMM).
    gemm: Option<GemmEngine>,
    gemm_provenance: Option<GemmProvenance>,
    /// Hybrid: one collective worker per device (worker 0 is the rank's thread).
    team: Option<Team>,
    /// Node-level buffers for hierarchical collectives, reused across calls.
    scratch: [Option<HostBuf>; 2],
    /// The devices' buffers of the current hierarchical collective, for the workers.
    tables: kernels::PtrTables,
    resolution_s: f64,
    /// Problems met while setting up (e.g. a worker binding that did not take).
    warnings: Vec<String>,
    /// Non-blocking all-reduces in flight (ddp_step; see `overlap.rs`).
    overlap: overlap::State,
    /// Where the progress thread goes if one starts, and whether that is a spare core (see
    /// `topology::binding::progress_thread_cpus`).
    progress_cpus: (Vec<u32>, bool),
    /// A replayed trace's sub-communicators (`None` where this rank is not a member).
    groups: Vec<Option<SimpleCommunicator>>,
    /// The group whose communicator sits in `comm` now, and the job's rank and size.
    active: Option<usize>,
    whole: (u32, u32),
}

impl CpuBackend {
    /// Sets up the backend on `world` (duplicated: data-plane traffic never meets control
    /// messages). Starts and binds the worker threads in hybrid mode.
    pub fn new(world: &SimpleCommunicator, cfg: DevicePlan) -> BackendResult<Self> {
        let comm = world.duplicate();
        let g = cfg.devices_per_rank.max(1);
        let mut warnings = Vec::new();
        // The rank's CPUs as the launcher gave them, before any thread of it is bound.
        let rank_cpus = affinity::current_thread_cpus().unwrap_or_default();
        let progress_cpus = crate::topology::binding::progress_thread_cpus(
            &rank_cpus,
            &cfg.worker_cpus,
            &crate::topology::smt_sibling_groups(),
        );
        let team = start_team(comm.rank(), g, &cfg, &rank_cpus, &mut warnings)?;
        let workers = start_gemm_pool(g, &cfg, &mut warnings)?;
        // After the binding above: a BLAS starts its threads when loaded, and they inherit it.
        let (gemm, gemm_provenance) = match cfg.gemm {
            Some(choice) => {
                let s = providers::set_up(choice, &cfg)?;
                warnings.extend(s.warnings);
                (Some(s.engine), Some(s.provenance))
            }
            None => (None, None),
        };
        let epoch = Instant::now();
        let resolution_s =
            crate::backend::clock::clock_resolution_s(|| epoch.elapsed().as_secs_f64());
        let mut b = CpuBackend {
            rank: comm.rank() as u32,
            size: comm.size() as u32,
            comm,
            g,
            cfg,
            workers,
            gemm,
            gemm_provenance,
            team,
            scratch: [None, None],
            tables: kernels::PtrTables::default(),
            resolution_s,
            warnings,
            overlap: overlap::State::default(),
            progress_cpus,
            groups: Vec::new(),
            active: None,
            whole: (0, 0),
        };
        b.whole = (b.rank, b.size);
        b.check_binding();
        Ok(b)
    }

    /// Warns where a device's thread does not run on the CPUs it asked for.
    fn check_binding(&mut self) {
        for (w, cpus) in self.worker_affinity().into_iter().enumerate() {
            if let Some(Some(want)) = self.cfg.worker_cpus.get(w) {
                let mut want = want.clone();
                want.sort_unstable();
                if cpus != want {
                    self.warnings.push(format!(
                        "device {w} of rank {}: asked for CPUs {}, running on {}",
                        self.rank,
                        affinity::format_cpulist(&want),
                        affinity::format_cpulist(&cpus)
                    ));
                }
            }
        }
    }

    /// CPUs in force for each local device's thread, read back from the OS.
    pub fn worker_affinity(&self) -> Vec<Vec<u32>> {
        match &self.team {
            Some(team) => team.map(|_| affinity::current_thread_cpus().unwrap_or_default()),
            None => vec![affinity::current_thread_cpus().unwrap_or_default()],
        }
    }

    fn raw_comm(&self) -> mpi::ffi::MPI_Comm {
        self.comm.as_raw()
    }
}

/// Hybrid: the collective workers, one per device, each bound to its device's CPUs (an
/// unbound one runs on the rank's CPUs, `rank_cpus`). Workers that share a CPU park at once
/// instead of spinning, and a warning names the launcher options that give each its own.
fn start_team(
    rank: i32,
    g: usize,
    cfg: &DevicePlan,
    rank_cpus: &[u32],
    warnings: &mut Vec<String>,
) -> BackendResult<Option<Team>> {
    Ok(if g > 1 {
        let masks: Vec<Vec<u32>> = (0..g)
            .map(|w| match cfg.worker_cpus.get(w) {
                Some(Some(set)) => set.clone(),
                _ => rank_cpus.to_vec(),
            })
            .collect();
        let spin = match crate::backend::team::shared_cpus(&masks) {
            Some(shared) => {
                warnings.push(shared_team_warning(rank, g, &shared));
                std::time::Duration::ZERO
            }
            None => SPIN,
        };
        let cpus = cfg.worker_cpus.clone();
        let team = Team::start(g, spin, move |w| {
            if let Some(Some(set)) = cpus.get(w) {
                // A failure shows up in the read-back (`check_binding`).
                let _ = affinity::bind_current_thread(set);
            }
        })
        .map_err(|e| BackendError::thread(format!("{g} worker threads"), e))?;
        Some(team)
    } else {
        None
    })
}

/// What a hybrid rank whose `g` workers share `cpus` says, with the fix: the launcher gave
/// the rank fewer CPUs than devices (mpirun binds a rank to one core by default).
fn shared_team_warning(rank: i32, g: usize, cpus: &[u32]) -> String {
    format!(
        "rank {rank}: its {g} hybrid worker threads share {} ({}): they park between phases instead of spinning, so every hand-off waits for a wake-up and collectives measure the scheduler; give the rank a CPU per device: mpirun --bind-to none, or mpirun --map-by ppr:1:node:PE={g} (srun --cpus-per-task={g})",
        crate::units::count(cpus.len(), "CPU", "CPUs"),
        affinity::format_cpulist(cpus)
    )
}

/// Hybrid: the GEMM pool, one thread per device, bound like the team. Pure MPI: binds the rank
/// itself (a failure is a warning) and has no pool.
fn start_gemm_pool(
    g: usize,
    cfg: &DevicePlan,
    warnings: &mut Vec<String>,
) -> BackendResult<Option<rayon::ThreadPool>> {
    Ok(if g > 1 {
        let cpus = cfg.worker_cpus.clone();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(g)
            .thread_name(|i| format!("scalebench-gemm-dev{i}"))
            .start_handler(move |i| {
                if let Some(Some(set)) = cpus.get(i) {
                    // A failure shows up in the read-back (`check_binding`).
                    let _ = affinity::bind_current_thread(set);
                }
            })
            .build()
            .map_err(|e| BackendError::thread(format!("{g} worker threads"), e))?;
        Some(pool)
    } else {
        if let Some(Some(set)) = cfg.worker_cpus.first() {
            if let Err(e) = affinity::bind_current_thread(set) {
                warnings.push(format!(
                    "could not bind rank to CPUs {}: {e}",
                    affinity::format_cpulist(set)
                ));
            }
        }
        None
    })
}

impl Backend for CpuBackend {
    type Buf = HostBuf;
    type Mark = Instant;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn info(&self) -> BackendInfo {
        let gemm = match &self.gemm_provenance {
            Some(p) => match &p.library {
                Some(lib) => format!("{} ({lib})", p.version),
                None => p.version.clone(),
            },
            None => "none set up".into(),
        };
        BackendInfo {
            kind: BackendKind::Cpu,
            detail: format!(
                "MPI collectives on host buffers ({}); GEMM: {gemm}, {} per device; {} per rank{}",
                if self.g > 1 {
                    "hierarchical: shared-memory combine among persistent bound worker threads with a spin-then-park barrier, MPI among node leaders"
                } else {
                    "one MPI call per collective"
                },
                crate::units::count(self.cfg.threads_per_device.max(1), "thread", "threads"),
                crate::units::count(self.g, "device", "devices"),
                if self.g > 1 { " as worker threads" } else { "" }
            ),
        }
    }

    fn timer_info(&self) -> TimerInfo {
        TimerInfo {
            source: "clock_gettime(CLOCK_MONOTONIC) via std::time::Instant".into(),
            resolution_s: self.resolution_s,
        }
    }

    fn local_devices(&self) -> usize {
        self.g
    }

    fn device_index(&self, dev: usize) -> u32 {
        self.rank * self.g as u32 + dev as u32
    }

    fn total_devices(&self) -> u32 {
        self.size * self.g as u32
    }

    fn device_bindings(&self) -> Vec<DeviceBinding> {
        self.worker_affinity()
            .into_iter()
            .enumerate()
            .map(|(w, cpus)| DeviceBinding {
                index: self.device_index(w),
                local_index: self.cfg.local_indices.get(w).copied().unwrap_or(w as u32),
                cpus: affinity::format_cpulist(&cpus),
                name: if self.g > 1 {
                    format!("cpu worker thread {w}")
                } else {
                    "cpu (the rank itself)".into()
                },
            })
            .collect()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn gemm_provenance(&self) -> Option<GemmProvenance> {
        self.gemm_provenance.clone()
    }

    fn progress_thread_binding(&self) -> Option<ProgressThreadBinding> {
        Some(ProgressThreadBinding {
            cpus: affinity::format_cpulist(&self.progress_cpus.0),
            spare: self.progress_cpus.1,
        })
    }

    fn supports(&self, p: &CaseParams) -> Result<(), Unsupported> {
        if matches!(p.dtype, Dtype::F16 | Dtype::Bf16) {
            return Err(CpuUnsupported::NoHalfArithmetic(p.dtype).into());
        }
        if !p.workload.is_collective() && p.dtype == Dtype::I32 {
            return Err(CpuUnsupported::IntegerGemm.into());
        }
        if p.workload == Workload::Broadcast && p.in_place == Some(false) {
            return Err(CpuUnsupported::OutOfPlaceBroadcast.into());
        }
        Ok(())
    }

    fn alloc(&mut self, dev: usize, dtype: Dtype, count: usize) -> BackendResult<HostBuf> {
        self.alloc_at(dev, dtype, count, 0)
    }

    fn alloc_at(
        &mut self,
        dev: usize,
        dtype: Dtype,
        count: usize,
        offset_bytes: u64,
    ) -> BackendResult<HostBuf> {
        let offset = offset_bytes as usize;
        match &self.team {
            // Allocate and zero on the device's own thread (first touch → its NUMA node).
            Some(team) => team
                .map(|w| (w == dev).then(|| HostBuf::zeros_at(dtype, count, offset)))
                .into_iter()
                .flatten()
                .next()
                .expect("device index within the team")
                .map_err(Into::into),
            None => Ok(HostBuf::zeros_at(dtype, count, offset)?),
        }
    }

    fn page_offset_bytes(&self, buf: &HostBuf) -> Option<u64> {
        Some(buf.page_offset_bytes() as u64)
    }

    fn buffer_policy(&self, offset: BufferOffset) -> Option<String> {
        let mut p = alignment_policy(offset.send_bytes as usize, offset.recv_bytes as usize);
        if self.g > 1 {
            p.push_str("; hybrid node scratch: page-aligned, each worker touching its share");
        }
        Some(p)
    }

    fn cache_bytes(&self, _dev: usize) -> Option<u64> {
        // The host's: a CPU device's buffers can sit in any of its caches. Read once (sysfs).
        static LLC: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
        *LLC.get_or_init(crate::topology::ceilings::stream::last_level_cache_bytes)
    }

    fn upload(&mut self, _dev: usize, buf: &mut HostBuf, host: &HostBuf) -> BackendResult<()> {
        if buf.len() != host.len() || buf.dtype() != host.dtype() {
            return Err(BackendError::check(format!(
                "upload of {} {} elements into a buffer of {} {}",
                host.len(),
                host.dtype(),
                buf.len(),
                buf.dtype()
            )));
        }
        buf.copy_from(0, host, 0, host.len());
        Ok(())
    }

    fn download(&mut self, _dev: usize, buf: &HostBuf) -> BackendResult<HostBuf> {
        Ok(buf.clone())
    }

    fn collective(
        &mut self,
        call: &CollectiveCall,
        send: &[HostBuf],
        recv: &mut [HostBuf],
    ) -> BackendResult<()> {
        if self.g == 1 {
            return self.flat(call, send, recv);
        }
        match call.dtype {
            Dtype::F32 => self.hierarchical::<f32>(call, send, recv),
            Dtype::F64 => self.hierarchical::<f64>(call, send, recv),
            Dtype::I32 => self.hierarchical::<i32>(call, send, recv),
            d => Err(BackendError::Unsupported(format!(
                "no {d} on the CPU backend"
            ))),
        }
    }

    fn reduce_scatter_in_place_offset(&self, _device: u32, _recv_count: usize) -> usize {
        0
    }

    fn prepare_collective<'a>(
        &mut self,
        call: &CollectiveCall,
        send: &'a [HostBuf],
        recv: &'a mut [HostBuf],
    ) -> Option<PreparedCollective<'a>> {
        // Hierarchical collectives are several steps and `avg` divides after the call.
        if self.g != 1 || call.op == Some(ReduceOp::Avg) {
            return None;
        }
        Some(PreparedCollective::mpi(self.prepare_flat(call, send, recv)))
    }

    fn gemm(
        &mut self,
        batches: &[GemmBatch],
        a: &[HostBuf],
        b: &[HostBuf],
        c: &mut [HostBuf],
    ) -> BackendResult<()> {
        if self.overlap.polls() {
            return overlap::gemm_polling(self, batches, a, b, c);
        }
        let workers = self.workers.as_ref();
        let engine = self.gemm.as_ref().ok_or_else(|| {
            BackendError::Unsupported(
                "no GEMM provider was set up for this launch (DevicePlan::gemm is None)".into(),
            )
        })?;
        match a.first().map(HostBuf::dtype) {
            Some(Dtype::F32) => gemm_typed::<f32>(engine, workers, batches, a, b, c),
            Some(Dtype::F64) => gemm_typed::<f64>(engine, workers, batches, a, b, c),
            Some(d) => Err(BackendError::Unsupported(format!("CPU GEMM has no {d}"))),
            None => Ok(()),
        }
    }

    fn overlap_support(&self) -> Result<(), Unsupported> {
        Ok(())
    }

    fn set_overlap(&mut self, settings: OverlapSettings) -> BackendResult<()> {
        overlap::configure(self, settings)
    }

    fn allreduce_start(&mut self, call: &CollectiveCall, bufs: Vec<HostBuf>) -> BackendResult<u64> {
        overlap::start(self, call, bufs)
    }

    fn allreduce_wait(&mut self, ticket: u64) -> BackendResult<Vec<HostBuf>> {
        overlap::wait(self, ticket)
    }

    fn copy_within(
        &mut self,
        _dev: usize,
        dst: &mut HostBuf,
        dst_at: usize,
        src: &HostBuf,
        src_at: usize,
        len: usize,
    ) -> BackendResult<()> {
        overlap::copy_within(self, dst, dst_at, src, src_at, len)
    }

    // One MPI_Comm_split per group (collective over the job: every rank calls it for every
    // group, members with colour 0 and their position as key, the others undefined).
    fn set_groups(&mut self, groups: &[Vec<u32>]) -> BackendResult<()> {
        self.use_group(None)?;
        if self.g > 1 {
            return Err(BackendError::Unsupported(
                "sub-communicators on the hybrid topology (one rank driving several devices) \
                 are not replayed yet: use --topology pure"
                    .into(),
            ));
        }
        self.groups.clear();
        for members in groups {
            let at = members.iter().position(|&r| r == self.rank);
            let color = match at {
                Some(_) => mpi::topology::Color::with_value(0),
                None => mpi::topology::Color::undefined(),
            };
            let key = at.map_or(0, |i| i as i32);
            self.groups
                .push(self.comm.split_by_color_with_key(color, key));
        }
        Ok(())
    }

    fn use_group(&mut self, g: Option<usize>) -> BackendResult<()> {
        if self.active == g {
            return Ok(());
        }
        // Back to the job's communicator first, then into the group's.
        if let Some(a) = self.active.take() {
            if let Some(slot) = self.groups.get_mut(a) {
                if let Some(c) = slot.as_mut() {
                    std::mem::swap(&mut self.comm, c);
                }
            }
            (self.rank, self.size) = self.whole;
        }
        let Some(g) = g else { return Ok(()) };
        match self.groups.get_mut(g).and_then(Option::as_mut) {
            Some(c) => {
                std::mem::swap(&mut self.comm, c);
                self.rank = self.comm.rank() as u32;
                self.size = self.comm.size() as u32;
                self.active = Some(g);
                Ok(())
            }
            None => Err(BackendError::Device(DeviceError::Check(format!(
                "rank {} is not a member of group {g}",
                self.whole.0
            )))),
        }
    }

    fn synchronize(&mut self) -> BackendResult<()> {
        Ok(())
    }

    // A bare clock read: converting to seconds waits for `elapsed_s`, outside the timed
    // window (the reference's MPI_Wtime does its few instructions of conversion inside).
    fn mark(&mut self) -> BackendResult<Instant> {
        Ok(Instant::now())
    }

    fn elapsed_s(&mut self, from: Instant, to: Instant) -> BackendResult<f64> {
        Ok(to.saturating_duration_since(from).as_secs_f64())
    }
}

/// Why the CPU backend cannot run a case (it is skipped with this sentence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuUnsupported {
    /// No f16/bf16 arithmetic on the host.
    NoHalfArithmetic(Dtype),
    /// The CPU GEMMs are f32 and f64 only.
    IntegerGemm,
    /// MPI_Bcast has only an in-place form.
    OutOfPlaceBroadcast,
}

impl std::fmt::Display for CpuUnsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CpuUnsupported::NoHalfArithmetic(dtype) => write!(
                f,
                "the CPU backend has no {dtype} arithmetic: use f32, f64 or i32, or --backend cuda"
            ),
            CpuUnsupported::IntegerGemm => f.write_str("CPU GEMM supports f32 and f64, not i32"),
            CpuUnsupported::OutOfPlaceBroadcast => f.write_str(
                "MPI_Bcast has only an in-place form: out-of-place broadcast is measured on the CUDA backend",
            ),
        }
    }
}

impl std::error::Error for CpuUnsupported {}

impl From<CpuUnsupported> for Unsupported {
    fn from(e: CpuUnsupported) -> Unsupported {
        Unsupported::Cpu(e)
    }
}
