//! `scalebench links`: every pair of ranks exchanges messages on a schedule of concurrent
//! disjoint pairs (or mpiGraph's shift rounds), rank 0 gathers the N×N matrix, the attribution
//! names suspects, and each suspect is re-measured in isolation (a link alone; a node or block
//! against known-good partners) before it is named. Writes `links.json`.
//!
//! One exchange goes through a [`Transport`]: [`mpi`] (host buffers, `--backend cpu`) or
//! [`nccl`] (ncclSend/ncclRecv between GPUs, `--backend cuda`); the rest is shared.

mod deadline;
mod floor;
mod mpi;
#[cfg(any(feature = "cuda", feature = "rocm"))]
mod nccl;

use crate::comm::mpi::MpiComm;
use crate::comm::HostComm;
use crate::links::attribution::{self, Matrix, Settings, Suspect};
use crate::links::{schedule, LinksError};
use crate::params::BackendKind;
use crate::results::links::{
    LinksFile, SwitchRecord, LINKS_CHART, LINKS_FILE, LINKS_FORMAT_VERSION,
};
use crate::run::error::RunError;
use crate::topology::switches::{self, Leaf};
use ::mpi::traits::*;
use std::path::PathBuf;

/// Which rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Concurrent disjoint pairs, every pair once (a 1-factorisation).
    RoundRobin,
    /// mpiGraph's shift rounds: rank r sends to r+D while receiving from r−D, all ranks busy.
    Shift,
    /// Per rail: the same local rank (GPU or NIC index) across nodes, rails side by side.
    Rail,
}

impl Schedule {
    pub fn name(self) -> &'static str {
        match self {
            Schedule::RoundRobin => "round_robin",
            Schedule::Shift => "shift",
            Schedule::Rail => "rail",
        }
    }
}

/// Test-only: the pair whose exchanges take `times` as long (the ranks of the pair sleep
/// inside the timed region), so a test can prove that a slow link is named as a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowPair {
    pub a: usize,
    pub b: usize,
    pub times: f64,
}

impl SlowPair {
    /// `slow_link:A:B:TIMES`.
    pub fn parse(s: &str) -> Option<SlowPair> {
        let mut it = s.strip_prefix("slow_link:")?.split(':');
        let a = it.next()?.parse().ok()?;
        let b = it.next()?.parse().ok()?;
        let times: f64 = it.next()?.parse().ok()?;
        (it.next().is_none() && a != b && (1.0..=1000.0).contains(&times)).then_some(SlowPair {
            a,
            b,
            times,
        })
    }
    fn hits(&self, x: usize, y: usize) -> bool {
        (x, y) == (self.a, self.b) || (x, y) == (self.b, self.a)
    }
}

/// Draws the heat map of a links file as SVG text (the report's; handed over by the edge,
/// since `run` does not import `report`).
pub type HeatMap = fn(&LinksFile) -> Result<String, String>;

/// What `scalebench links` (measuring) is asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// `cpu`: MPI between host buffers; `cuda`: NCCL send/recv between GPUs, one per rank.
    pub backend: BackendKind,
    pub schedule: Schedule,
    pub bidirectional: bool,
    pub message_bytes: u64,
    pub iters: u32,
    pub warmup: u32,
    pub out: Option<PathBuf>,
    pub fault: Option<String>,
    pub settings: Settings,
    pub json: bool,
    /// Writes `links.svg` beside links.json when given.
    pub heat_map: Option<HeatMap>,
    /// Leaf switches in topology.conf's syntax; without it, Slurm's (`scontrol show
    /// topology`) inside a Slurm job.
    pub topology: Option<PathBuf>,
    /// The absolute floor: an inter-node cell below this fraction of the slower host's link
    /// ceiling is a finding; `None`: off.
    pub floor_fraction: Option<f64>,
    /// The sysfs tree each host leader reads its link ceiling from (`/sys`; tests give a tree).
    pub sysfs_root: PathBuf,
    /// `--op-timeout`: a rank stuck longer in the start-up or one round ends itself with one
    /// sentence (exit 4).
    pub op_timeout: std::time::Duration,
}

/// What the checks before MPI found: the test fault and the topology file's leaves.
#[derive(Debug)]
struct Checked {
    slow: Option<SlowPair>,
    /// Test-only (`--fault hang_start:R`): the launcher's rank R blocks before `MPI_Init`,
    /// so the others hang in its start-up fence, a start-up hang the watchdog must end.
    hang_start: Option<u32>,
    leaves: Option<Vec<Leaf>>,
}

/// How one exchange moves the bytes and is timed: MPI between host buffers (wall clock) or
/// NCCL send/recv between GPUs (CUDA events on the stream). Everything around it — schedules,
/// handshakes, the fault, medians, the confirmation pass, attribution — is shared.
pub(super) trait Transport {
    /// `from` sends the message to `to` once (this rank is one of them). The seconds on the
    /// rank that times the cell, `None` on the other. `stretch`: the test fault's extra time,
    /// as a multiple of the exchange's own, spent inside the timed region on the timing rank.
    fn one_way(&mut self, from: usize, to: usize, stretch: f64) -> Option<f64>;
    /// Sends to `to` while receiving from `from` (the same rank in a bidirectional pair), once:
    /// the seconds until both completed on this rank (the cell `from → me`).
    fn both_ways(&mut self, from: usize, to: usize, stretch: f64) -> f64;
    /// What links.json and the output say about it.
    fn describe(&self) -> TransportInfo;
}

/// The transport as results record it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TransportInfo {
    /// `mpi` or `nccl`.
    pub name: &'static str,
    /// The library's version, where known (NCCL's).
    pub version: Option<String>,
    /// The STAND-IN label when the CUDA libraries were scalebench's CPU test doubles.
    pub standin: Option<String>,
}

/// One rank's exchanges: the times of the cells it timed, medians over the timed iterations.
struct Exchanger<'a> {
    world: &'a ::mpi::topology::SimpleCommunicator,
    me: usize,
    iters: u32,
    warmup: u32,
    slow: Option<SlowPair>,
    transport: &'a mut dyn Transport,
    /// Re-armed for each round: a round stuck past `op_timeout` ends the rank with a sentence.
    deadline: &'a deadline::Deadline,
    op_timeout: std::time::Duration,
}

impl Exchanger<'_> {
    /// Both ranks start each exchange together: a zero-byte handshake.
    fn handshake(&self, peer: usize) {
        let p = self.world.process_at_rank(peer as i32);
        let mut none = [0u8; 0];
        ::mpi::request::scope(|scope| {
            let r = p.immediate_receive_into(scope, &mut none[..]);
            let s = p.immediate_send(scope, &[0u8; 0][..]);
            r.wait();
            s.wait();
        });
    }

    /// The fault's extra time on exchanges with `peer`, as a multiple of their own.
    fn stretch(&self, peer: usize) -> f64 {
        self.slow
            .filter(|f| f.hits(self.me, peer))
            .map_or(0.0, |f| f.times - 1.0)
    }

    /// `from` sends to `to`: the median seconds on the rank that times it, `None` on the other.
    fn one_way(&mut self, from: usize, to: usize) -> Option<f64> {
        let peer = if self.me == from { to } else { from };
        let stretch = self.stretch(peer);
        let mut times = Vec::new();
        for i in 0..self.warmup + self.iters {
            self.handshake(peer);
            let s = self.transport.one_way(from, to, stretch);
            if let Some(s) = s.filter(|_| i >= self.warmup) {
                times.push(s);
            }
        }
        (!times.is_empty()).then(|| median(&mut times))
    }

    /// Sends to `to` while receiving from `from`: the median seconds of the cell `from → me`.
    fn both_ways(&mut self, from: usize, to: usize) -> f64 {
        let stretch = self.stretch(from);
        let mut times = Vec::new();
        for i in 0..self.warmup + self.iters {
            let s = self.transport.both_ways(from, to, stretch);
            if i >= self.warmup {
                times.push(s);
            }
            // Each iteration starts together: a straggler's late start is not the link's.
            self.world.barrier();
        }
        median(&mut times)
    }
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Cells this rank measured: (from, to, seconds).
type Cells = Vec<(usize, usize, f64)>;

/// Runs `rounds` of pairs (every rank calls it with the same rounds); a barrier between rounds.
fn measure_rounds(
    ex: &mut Exchanger<'_>,
    rounds: &[Vec<(usize, usize)>],
    bidirectional: bool,
) -> Cells {
    let me = ex.me;
    let mut cells = Vec::new();
    for (k, round) in rounds.iter().enumerate() {
        ex.deadline.arm(
            format!("round {} of {} of the pair exchanges", k + 1, rounds.len()),
            ex.op_timeout,
        );
        ex.world.barrier();
        let Some(&(a, b)) = round.iter().find(|(a, b)| *a == me || *b == me) else {
            // Idle this round (odd N, or not in an isolated pair): the others' barriers.
            if bidirectional {
                for _ in 0..ex.warmup + ex.iters {
                    ex.world.barrier();
                }
            }
            continue;
        };
        let peer = if a == me { b } else { a };
        if bidirectional {
            cells.push((peer, me, ex.both_ways(peer, peer)));
        } else {
            for (from, to) in [(a, b), (b, a)] {
                if let Some(s) = ex.one_way(from, to) {
                    cells.push((from, to, s));
                }
            }
        }
    }
    cells
}

/// The shift rounds: every rank sends to r+D and receives from r−D at once.
fn measure_shift(ex: &mut Exchanger<'_>, n: usize) -> Cells {
    let me = ex.me;
    (1..n)
        .map(|d| {
            ex.deadline.arm(
                format!("shift round {d} of {} of the pair exchanges", n - 1),
                ex.op_timeout,
            );
            ex.world.barrier();
            let (to, from) = ((me + d) % n, (me + n - d) % n);
            (from, me, ex.both_ways(from, to))
        })
        .collect()
}

/// Every rank's node, on every rank: Slurm's node name where the job runs under Slurm (a local
/// test cluster's nodes share one host), else the host name; and whether distinct nodes share
/// a host (emulated nodes).
fn nodes(comm: &MpiComm) -> (Vec<String>, bool) {
    let host = crate::topology::hostname();
    let node = std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| host.clone());
    let mut all = serde_json::to_vec(
        &comm
            .gather_bytes(format!("{node}\n{host}").as_bytes())
            .into_iter()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect::<Vec<_>>(),
    )
    .unwrap_or_default();
    comm.broadcast_bytes(&mut all);
    let pairs: Vec<String> = serde_json::from_slice(&all).unwrap_or_default();
    let split: Vec<(String, String)> = pairs
        .iter()
        .map(|p| {
            let (n, h) = p.split_once('\n').unwrap_or((p, p));
            (n.to_string(), h.to_string())
        })
        .collect();
    let emulated = split
        .iter()
        .any(|(n, h)| split.iter().any(|(m, g)| m != n && g == h));
    (split.into_iter().map(|(n, _)| n).collect(), emulated)
}

/// Each rank's index among the ranks of its node, in rank order (its rail).
fn local_ranks(nodes: &[String]) -> Vec<usize> {
    (0..nodes.len())
        .map(|r| nodes[..r].iter().filter(|n| **n == nodes[r]).count())
        .collect()
}

/// Gathers every rank's cells at rank 0 as an N×N matrix of seconds.
fn gather(comm: &MpiComm, cells: &Cells, n: usize) -> Vec<Option<f64>> {
    let bytes: Vec<u8> = cells
        .iter()
        .flat_map(|&(f, t, s)| {
            [
                (f as u64).to_le_bytes(),
                (t as u64).to_le_bytes(),
                s.to_le_bytes(),
            ]
            .concat()
        })
        .collect();
    let mut m = vec![None; n * n];
    for part in comm.gather_bytes(&bytes) {
        for c in part.chunks_exact(24) {
            let word = |i: usize| <[u8; 8]>::try_from(&c[i * 8..i * 8 + 8]).unwrap_or([0; 8]);
            let (f, t) = (
                u64::from_le_bytes(word(0)) as usize,
                u64::from_le_bytes(word(1)) as usize,
            );
            m[f * n + t] = Some(f64::from_le_bytes(word(2)));
        }
    }
    m
}

/// The rank pairs that confirm a suspect in isolation: a link alone; a node or a block's ends
/// against the two best nodes not under suspicion.
fn confirmation_pairs(s: &Suspect, good: &[usize]) -> Vec<(usize, usize)> {
    let pair = |x: usize, y: usize| (x.min(y), x.max(y));
    match *s {
        Suspect::Link { a, b } => vec![pair(a, b)],
        Suspect::Node { node } => good.iter().take(2).map(|&g| pair(node, g)).collect(),
        Suspect::Block { first, last } => good
            .iter()
            .take(2)
            .zip([first, last])
            .map(|(&g, m)| pair(m, g))
            .collect(),
    }
}

/// The checks that need no MPI; the test fault, parsed.
fn check(req: &Request) -> Result<Checked, RunError> {
    req.settings.check()?;
    crate::links::check_out(req.out.as_deref())?;
    if req.iters == 0 {
        return Err(LinksError::Iters(req.iters).into());
    }
    if req.message_bytes == 0 || req.message_bytes > 1 << 30 {
        return Err(LinksError::Size(req.message_bytes).into());
    }
    match req.backend {
        BackendKind::Cpu => {}
        BackendKind::Cuda if !cfg!(feature = "cuda") => return Err(RunError::NoCuda),
        BackendKind::Cuda => {
            if let Some(m) = cuda_size_refusal(req.message_bytes) {
                return Err(RunError::Refused { message: m });
            }
        }
        BackendKind::Rocm if !cfg!(feature = "rocm") => return Err(RunError::NoRocm),
        BackendKind::Rocm => {
            if let Some(m) = cuda_size_refusal(req.message_bytes) {
                return Err(RunError::Refused { message: m });
            }
        }
    }
    let bad = |f: &str| RunError::Links(LinksError::Fault(f.to_string()));
    let (slow, hang_start) = match req.fault.as_deref() {
        None => (None, None),
        Some(f) => match f.strip_prefix("hang_start:") {
            Some(r) => (None, Some(r.parse::<u32>().map_err(|_| bad(f))?)),
            None => (Some(SlowPair::parse(f).ok_or_else(|| bad(f))?), None),
        },
    };
    // Every rank reads the file, so all refuse alike before MPI starts.
    let leaves = match &req.topology {
        Some(path) => Some(
            switches::read_file(path)
                .map_err(|e| RunError::Links(LinksError::Topology(e.to_string())))?,
        ),
        None => None,
    };
    Ok(Checked {
        slow,
        hang_start,
        leaves,
    })
}

/// NCCL and RCCL move the message as 4-byte words (`ncclInt32`): the sentence for a size
/// that is not.
fn cuda_size_refusal(bytes: u64) -> Option<String> {
    (bytes % 4 != 0).then(|| {
        format!("--size {bytes}: --backend cuda and rocm send whole 4-byte words (ncclInt32): give a multiple of 4 bytes, e.g. 1MiB")
    })
}

/// Runs `scalebench links` in this process (one MPI rank). Exit 1 when a confirmed suspect is
/// named, 0 when healthy.
pub fn command(req: &Request) -> Result<u8, RunError> {
    let checked = check(req)?;
    // Armed before MPI_Init: a start-up that hangs (emulated nodes whose shared memory
    // collides) ends with a sentence, not silently (issue 45).
    let deadline = deadline::Deadline::start();
    deadline.arm(
        "the start-up (MPI_Init, the node names and the link ceilings)".into(),
        req.op_timeout,
    );
    if checked.hang_start.is_some() && checked.hang_start == deadline::launcher_rank() {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    // Emulated nodes started by hand (no profile wrapper): their own shared-memory directory.
    crate::run::shm::apply_node_local_shm();
    let universe = ::mpi::initialize().ok_or(RunError::MpiInitialised)?;
    let world = universe.world();
    let comm = MpiComm::new(&world);
    let result = measure(req, checked, &world, &comm, &deadline);
    deadline.disarm();
    if let Err(e) = &result {
        // Said before MPI_Finalize: a rank that exits first (and so makes mpirun end the job)
        // cannot cut rank 0 off before it has printed the sentence the ranks agreed on.
        if comm.rank() == 0 {
            crate::exit::report(e);
        }
    }
    result
}

fn measure(
    req: &Request,
    checked: Checked,
    world: &::mpi::topology::SimpleCommunicator,
    comm: &MpiComm,
    deadline: &deadline::Deadline,
) -> Result<u8, RunError> {
    let (me, n) = (comm.rank() as usize, comm.size() as usize);
    let slow = checked.slow;
    if n < 2 {
        // Every rank knows the size: all refuse alike, before any buffer or GPU.
        return Err(RunError::Links(LinksError::OneRank { ranks: n }));
    }
    if let Some(f) = slow.filter(|f| f.a >= n || f.b >= n) {
        return Err(RunError::Links(LinksError::FaultRanks {
            a: f.a,
            b: f.b,
            ranks: n,
        }));
    }
    let (hosts, emulated_nodes) = nodes(comm);
    let local = local_ranks(&hosts);
    // Read before any exchange: sysfs reads are quick, and rank 0 needs them to plan the
    // re-measurement of what falls below the floor.
    let link_gbps = floor::gather_links(comm, &hosts, local[me] == 0, &req.sysfs_root);
    let rail_rounds = schedule::per_rail(&local);
    if req.schedule == Schedule::Rail && rail_rounds.is_empty() {
        // every rank has the same node list, so every rank refuses alike (before any GPU opens)
        return Err(RunError::Links(LinksError::RailOneNode {
            ranks: n,
            node: hosts[0].clone(),
        }));
    }
    let mut over_mpi;
    #[cfg(feature = "cuda")]
    let mut over_nccl;
    #[cfg(feature = "rocm")]
    let mut over_rccl;
    let transport: &mut dyn Transport = match req.backend {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            over_nccl = nccl::NcclTransport::<crate::backend::cuda::CudaBackend>::open(
                world,
                comm,
                local[me],
                req.message_bytes,
            )?;
            &mut over_nccl
        }
        #[cfg(feature = "rocm")]
        BackendKind::Rocm => {
            over_rccl = nccl::NcclTransport::<crate::backend::rocm::RocmBackend>::open(
                world,
                comm,
                local[me],
                req.message_bytes,
            )?;
            &mut over_rccl
        }
        // `check` refused the others before MPI started.
        _ => {
            over_mpi = mpi::MpiTransport {
                world,
                me,
                send: vec![0xa5; req.message_bytes as usize],
                recv: vec![0; req.message_bytes as usize],
            };
            &mut over_mpi
        }
    };
    let how = transport.describe();
    let mut ex = Exchanger {
        world,
        me,
        iters: req.iters,
        warmup: req.warmup,
        slow,
        transport,
        deadline,
        op_timeout: req.op_timeout,
    };
    let cells = match req.schedule {
        Schedule::RoundRobin => {
            measure_rounds(&mut ex, &schedule::round_robin(n), req.bidirectional)
        }
        Schedule::Shift => measure_shift(&mut ex, n),
        Schedule::Rail => measure_rounds(&mut ex, &rail_rounds, req.bidirectional),
    };
    ex.deadline.arm(
        "the gathering of the cells and the attribution".into(),
        req.op_timeout,
    );
    let seconds = gather(comm, &cells, n);
    let gbps: Vec<Option<f64>> = seconds
        .iter()
        .map(|s| s.map(|s| req.message_bytes as f64 / s / 1e9))
        .collect();

    // Rank 0 attributes (rows in topology order: a switch's nodes side by side), holds the
    // cells to the floor, and tells every rank which pairs (as ranks) to re-measure in
    // isolation (each pair once, whichever finding asked for it).
    let mut plan = Vec::new();
    let analysis = if me == 0 {
        let topo = Topology::find(checked.leaves, req.topology.as_deref(), &hosts);
        let o = &topo.order;
        let a = attribution::analyse(
            &fabric(&permute(&gbps, o), &reorder(&hosts, o), o),
            &req.settings,
        );
        let good = good_nodes(&a);
        let floor_pass = floor::first_pass(
            req.floor_fraction,
            req.message_bytes,
            &all_cells(&gbps, &hosts),
            &hosts,
            link_gbps,
        );
        let mut wanted: Vec<(usize, usize)> = Vec::new();
        for p in a
            .findings
            .iter()
            .flat_map(|f| confirmation_pairs(&f.suspect, &good))
            // The attribution's rows are topology positions; the plan names ranks.
            .map(|(x, y)| (o[x].min(o[y]), o[x].max(o[y])))
            .chain(floor_pass.pairs.iter().flatten().copied())
        {
            if !wanted.contains(&p) {
                wanted.push(p);
            }
        }
        plan.extend(
            wanted
                .into_iter()
                .flat_map(|(x, y)| [(x as u64).to_le_bytes(), (y as u64).to_le_bytes()].concat()),
        );
        Some((a, topo, floor_pass))
    } else {
        None
    };
    comm.broadcast_bytes(&mut plan);
    let pairs: Vec<(usize, usize)> = plan
        .chunks_exact(16)
        .map(|c| {
            let w =
                |i: usize| u64::from_le_bytes(<[u8; 8]>::try_from(&c[i..i + 8]).unwrap_or([0; 8]));
            (w(0) as usize, w(8) as usize)
        })
        .collect();
    // Every rank has the same plan, so all skip together when nothing is suspect.
    let iso = if pairs.is_empty() {
        vec![None; n * n]
    } else {
        let cells = measure_rounds(&mut ex, &schedule::isolated(&pairs), req.bidirectional);
        gather(comm, &cells, n)
    };
    // Every exchange is over before any rank tears its transport down: a rank idle in the
    // isolated pass leaves the gather early, and an NCCL communicator aborted while a pair still
    // exchanges fails that pair.
    world.barrier();
    let Some((a, topo, floor_pass)) = analysis else {
        return Ok(crate::exit::EXIT_OK);
    };
    let mut file = assemble(req, &hosts, &gbps, &iso, &a, &topo, slow.is_some());
    file.emulated_nodes = emulated_nodes;
    file.transport = Some(how.name.into());
    file.nccl_version = how.version;
    file.standin = how.standin;
    let iso_gbps: Vec<Option<f64>> = iso
        .iter()
        .map(|s| s.map(|s| req.message_bytes as f64 / s / 1e9))
        .collect();
    file.floor = Some(floor::record(
        floor_pass,
        &all_cells(&gbps, &hosts).names,
        &iso_gbps,
    ));
    // The floor is absolute and re-measured like the attribution's suspects: a confirmed cell
    // below it fails the run as a confirmed suspect does.
    let below_floor = file
        .floor
        .as_ref()
        .is_some_and(|f| f.findings.iter().any(|x| x.confirmed));
    let code = if below_floor || file.findings.iter().any(|f| f.confirmed) {
        1
    } else {
        0
    };
    let out = req.out.clone().unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&out).map_err(|source| {
        RunError::Results(crate::results::io::ResultsError::Io {
            path: out.clone(),
            source,
        })
    })?;
    let text = file.to_json_bytes();
    crate::results::io::write_atomic(&out.join(LINKS_FILE), &text)?;
    // The matrix is the measurement; a chart that cannot be drawn is said, not fatal.
    let chart = match req.heat_map.map(|draw| draw(&file)) {
        Some(Ok(svg)) => {
            crate::results::io::write_atomic(&out.join(LINKS_CHART), svg.as_bytes())?;
            true
        }
        Some(Err(e)) => {
            eprintln!("scalebench links: {LINKS_CHART} not drawn: {e}");
            false
        }
        None => false,
    };
    if req.json {
        println!("{}", String::from_utf8_lossy(&text));
    } else {
        print!("{}", render(&file, &out, chart));
    }
    Ok(code)
}

/// The job's leaf switches and the row order they give (identity when none is known).
struct Topology {
    /// `file: PATH`, `slurm: scontrol show topology`, or `not known: why` (under Slurm).
    source: Option<String>,
    /// The leaves holding this job's nodes, only those nodes listed.
    leaves: Vec<Leaf>,
    order: Vec<usize>,
}

impl Topology {
    /// From the file read before MPI, else Slurm's (rank 0 only: one scontrol per job).
    fn find(
        from_file: Option<Vec<Leaf>>,
        path: Option<&std::path::Path>,
        nodes: &[String],
    ) -> Topology {
        let (source, all) = match from_file {
            Some(l) => (
                Some(format!(
                    "file: {}",
                    path.map(|p| p.display().to_string()).unwrap_or_default()
                )),
                l,
            ),
            None => match switches::from_slurm() {
                Some(Ok(l)) => (Some("slurm: scontrol show topology".to_string()), l),
                Some(Err(why)) => (Some(format!("not known: {why}")), Vec::new()),
                None => (None, Vec::new()),
            },
        };
        Topology::of(source, &all, nodes)
    }

    /// Keeps the leaves (and their nodes) this job uses; orders rows by them.
    fn of(source: Option<String>, all: &[Leaf], nodes: &[String]) -> Topology {
        let leaves: Vec<Leaf> = all
            .iter()
            .map(|l| Leaf {
                name: l.name.clone(),
                nodes: l
                    .nodes
                    .iter()
                    .filter(|n| nodes.contains(n))
                    .cloned()
                    .collect(),
            })
            .filter(|l| !l.nodes.is_empty())
            .collect();
        let source = match source {
            Some(s) if leaves.is_empty() && !all.is_empty() => {
                Some(format!("not known: {s} lists none of this job's nodes"))
            }
            s => s,
        };
        let order = if leaves.is_empty() {
            (0..nodes.len()).collect()
        } else {
            switches::order(nodes, &leaves)
        };
        Topology {
            source,
            leaves,
            order,
        }
    }

    /// Where a block's nodes hang: under one switch (all or some of its nodes) or across
    /// several; `None` without a topology.
    fn place(&self, block_nodes: &[String]) -> Option<String> {
        if self.leaves.is_empty() {
            return None;
        }
        let mut names: Vec<&Leaf> = Vec::new();
        for n in block_nodes {
            if let Some(l) = self.leaves.iter().find(|l| l.nodes.contains(n)) {
                if !names.iter().any(|x| x.name == l.name) {
                    names.push(l);
                }
            }
        }
        let mut distinct: Vec<&String> = block_nodes.iter().collect();
        distinct.sort();
        distinct.dedup();
        Some(match names.as_slice() {
            [] => "under no switch the topology lists".into(),
            [l] if l.nodes.len() == distinct.len() => {
                format!(
                    "all of switch {} ({})",
                    l.name,
                    crate::units::count(l.nodes.len(), "node", "nodes")
                )
            }
            [l] => format!(
                "under switch {} ({} of its {})",
                l.name,
                distinct.len(),
                crate::units::count(l.nodes.len(), "node", "nodes")
            ),
            many => format!(
                "across switches {}",
                many.iter()
                    .map(|l| l.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}

/// Row `p` of the result is row `order[p]` of `v` (a square matrix, row-major).
fn permute(v: &[Option<f64>], order: &[usize]) -> Vec<Option<f64>> {
    let n = order.len();
    (0..n * n)
        .map(|k| v[order[k / n] * n + order[k % n]])
        .collect()
}

fn reorder<T: Clone>(v: &[T], order: &[usize]) -> Vec<T> {
    order.iter().map(|&r| v[r].clone()).collect()
}

/// The attribution's matrix: inter-node cells only when the job spans several hosts (same-host
/// pairs go through shared memory, not the fabric); all cells on one host. Names are `host:rank`,
/// `ranks[i]` the rank of row i (rows may be in topology order).
fn fabric(gbps: &[Option<f64>], hosts: &[String], ranks: &[usize]) -> Matrix {
    let n = hosts.len();
    let several = hosts.iter().any(|h| h != &hosts[0]);
    Matrix {
        names: (0..n)
            .map(|i| format!("{}:{}", hosts[i], ranks[i]))
            .collect(),
        gbps: (0..n * n)
            .map(|k| gbps[k].filter(|_| !several || hosts[k / n] != hosts[k % n]))
            .collect(),
    }
}

/// Every measured cell, names `host:rank` (the floor picks the inter-node ones itself).
fn all_cells(gbps: &[Option<f64>], hosts: &[String]) -> Matrix {
    Matrix {
        names: (0..hosts.len())
            .map(|r| format!("{}:{r}", hosts[r]))
            .collect(),
        gbps: gbps.to_vec(),
    }
}

/// Nodes not under suspicion, best first.
fn good_nodes(a: &attribution::Analysis) -> Vec<usize> {
    let suspect = |i: usize| {
        a.findings.iter().any(|f| match f.suspect {
            Suspect::Node { node } => node == i,
            Suspect::Link { a, b } => a == i || b == i,
            Suspect::Block { first, last } => (first..=last).contains(&i),
        })
    };
    let mut good: Vec<usize> = (0..a.send_ratio.len()).filter(|&i| !suspect(i)).collect();
    let score = |i: usize| a.send_ratio[i] * a.recv_ratio[i];
    good.sort_by(|&x, &y| score(y).total_cmp(&score(x)));
    good
}

fn assemble(
    req: &Request,
    hosts: &[String],
    gbps: &[Option<f64>],
    iso: &[Option<f64>],
    a: &attribution::Analysis,
    topo: &Topology,
    faulted: bool,
) -> LinksFile {
    let n = hosts.len();
    // The attribution's rows are in topology order; the file keeps rank order.
    let o = &topo.order;
    let m = fabric(&permute(gbps, o), &reorder(hosts, o), o);
    let iso = permute(iso, o);
    let good = good_nodes(a);
    let findings = a
        .findings
        .iter()
        .map(|f| {
            // Isolated bandwidth of the confirming pairs, as a fraction of the matrix median.
            let mut ratios: Vec<f64> = confirmation_pairs(&f.suspect, &good)
                .into_iter()
                .flat_map(|(x, y)| [iso[x * n + y], iso[y * n + x]])
                .flatten()
                .map(|s| req.message_bytes as f64 / s / 1e9 / a.median_gbps)
                .collect();
            let isolated = (!ratios.is_empty()).then(|| median(&mut ratios));
            let confirmed = isolated.is_some_and(|r| r < 1.0 - req.settings.min_effect);
            let mut text = f.describe(&m.names);
            let block = match f.suspect {
                Suspect::Block { first, last } => (first..=last).map(|p| o[p]).collect(),
                _ => Vec::new(),
            };
            let block_nodes: Vec<String> = block.iter().map(|&r| hosts[r].clone()).collect();
            if let Some(place) = topo.place(&block_nodes).filter(|_| !block.is_empty()) {
                text.push_str(&format!("; {place}"));
            }
            match isolated {
                Some(r) if confirmed => text.push_str(&format!("; isolated: {:.0} %, confirmed", r * 100.0)),
                Some(r) => text.push_str(&format!(
                    "; isolated: {:.0} %, not confirmed (slow only under the round's load: contention)",
                    r * 100.0
                )),
                None => text.push_str("; no isolated re-test possible (no good partner)"),
            }
            let mut rec = super::link_record::link_finding(f, isolated, confirmed, text);
            rec.ranks = rec.ranks.iter().map(|&p| o[p]).collect();
            rec.members = block;
            rec
        })
        .collect();
    let several = hosts.iter().any(|h| h != &hosts[0]);
    LinksFile {
        links_format_version: LINKS_FORMAT_VERSION,
        generator: crate::results::io::this_generator(),
        schedule: req.schedule.name().into(),
        bidirectional: req.bidirectional || req.schedule == Schedule::Shift,
        message_bytes: req.message_bytes,
        iters: req.iters,
        warmup: req.warmup,
        hosts: hosts.to_vec(),
        emulated_nodes: false,
        analysed: if several { "inter_node" } else { "intra_node" }.into(),
        matrix_gbps: (0..n).map(|i| gbps[i * n..(i + 1) * n].to_vec()).collect(),
        median_gbps: a.median_gbps.is_finite().then_some(a.median_gbps),
        residual_spread: a.residual_spread.is_finite().then_some(a.residual_spread),
        findings,
        note: a.note.clone(),
        fault: faulted.then(|| req.fault.clone()).flatten(),
        simulated: None,
        transport: None,
        nccl_version: None,
        standin: None,
        topology: topo.source.clone(),
        switches: topo
            .leaves
            .iter()
            .map(|l| SwitchRecord {
                name: l.name.clone(),
                nodes: l.nodes.clone(),
            })
            .collect(),
        order: if o.iter().enumerate().all(|(p, &r)| p == r) {
            Vec::new()
        } else {
            o.clone()
        },
        floor: None,
    }
}

/// The median as printed: the attribution's, else (too few pairs for it, e.g. one rank per
/// node on two nodes) the median of the measured cells, said as such, never a bare `?`.
fn median_words(f: &LinksFile) -> String {
    if let Some(m) = f.median_gbps {
        return format!("median {m:.2} GB/s");
    }
    let mut v: Vec<f64> = f
        .matrix_gbps
        .iter()
        .flatten()
        .filter_map(|c| *c)
        .filter(|g| g.is_finite())
        .collect();
    if v.is_empty() {
        return "no pair measured".into();
    }
    v.sort_by(f64::total_cmp);
    format!(
        "median {:.2} GB/s of {} measured (too few pairs for the attribution)",
        crate::stats::quantile_sorted(&v, 0.5),
        crate::units::count(v.len(), "cell", "cells")
    )
}

/// The findings as printed.
fn render(f: &LinksFile, out: &std::path::Path, chart: bool) -> String {
    let mut s = format!(
        "{} ranks on {}, {} {} schedule, {} B messages over {}: {} ({} pairs analysed)\n",
        f.hosts.len(),
        {
            let mut h = f.hosts.clone();
            h.sort();
            h.dedup();
            if f.emulated_nodes {
                crate::units::count(h.len(), "emulated node", "emulated nodes")
            } else {
                crate::units::count(h.len(), "host", "hosts")
            }
        },
        if f.bidirectional {
            "bidirectional"
        } else {
            "unidirectional"
        },
        f.schedule,
        f.message_bytes,
        f.transport_words().unwrap_or_else(|| "MPI".into()),
        median_words(f),
        f.analysed.replace('_', "-"),
    );
    if let Some(label) = &f.standin {
        s.push_str(label);
        s.push('\n');
    }
    if let Some(t) = &f.topology {
        s.push_str(&format!("node order: {t}"));
        if !f.switches.is_empty() {
            s.push_str(&format!(
                " ({} under {})",
                crate::units::count(
                    f.switches.iter().map(|l| l.nodes.len()).sum(),
                    "node",
                    "nodes"
                ),
                crate::units::count(f.switches.len(), "switch", "switches")
            ));
        }
        s.push('\n');
    }
    if let Some(note) = &f.note {
        s.push_str(&format!("no verdict: {note}\n"));
    } else if f.findings.is_empty() {
        s.push_str("healthy: no node, link or block named\n");
    }
    for x in &f.findings {
        s.push_str(&x.text);
        s.push('\n');
    }
    if let Some(fl) = &f.floor {
        s.push_str(&floor::render(fl));
    }
    s.push_str(&format!("wrote {}", out.join(LINKS_FILE).display()));
    if chart {
        s.push_str(&format!(" and {}", out.join(LINKS_CHART).display()));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank's rail is its index among its node's ranks, whatever order the ranks were placed
    /// in; the rail rounds then pair only equal rails on different nodes.
    #[test]
    fn rails_pair_the_same_local_rank_across_nodes() {
        let nodes: Vec<String> = ["a", "b", "a", "b", "c", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let local = local_ranks(&nodes);
        assert_eq!(local, vec![0, 0, 1, 1, 0, 1]);
        let rounds = schedule::per_rail(&local);
        let mut pairs: Vec<(usize, usize)> = rounds.iter().flatten().copied().collect();
        pairs.sort_unstable();
        // rail 0: ranks 0, 1, 4; rail 1: ranks 2, 3, 5 — every pair of a rail once
        assert_eq!(pairs, vec![(0, 1), (0, 4), (1, 4), (2, 3), (2, 5), (3, 5)]);
        for (a, b) in pairs {
            assert_ne!(nodes[a], nodes[b]);
            assert_eq!(local[a], local[b]);
        }
        // one node: no pair, which `links` refuses with a sentence
        let one: Vec<String> = vec!["a".into(); 4];
        assert!(schedule::per_rail(&local_ranks(&one)).is_empty());
    }

    fn request(backend: BackendKind, message_bytes: u64) -> Request {
        Request {
            backend,
            schedule: Schedule::RoundRobin,
            bidirectional: false,
            message_bytes,
            iters: 3,
            warmup: 1,
            out: None,
            fault: Some("slow_link:1:2:5".into()),
            settings: Settings::default(),
            json: false,
            heat_map: None,
            topology: None,
            floor_fraction: Some(0.5),
            sysfs_root: PathBuf::from("/sys"),
            op_timeout: std::time::Duration::from_secs(120),
        }
    }

    /// Refused before MPI starts, each with its sentence: ROCm in a build without it, a size NCCL
    /// cannot send as 4-byte words, CUDA in a build without it; the CPU and CUDA paths pass
    /// with the fault parsed.
    #[test]
    fn backends_and_sizes_are_checked_before_mpi() {
        let rocm = check(&request(BackendKind::Rocm, 1 << 20));
        if cfg!(feature = "rocm") {
            assert!(rocm.is_ok());
            let e = check(&request(BackendKind::Rocm, 1001)).unwrap_err();
            assert!(e.to_string().contains("whole 4-byte words"), "{e}");
        } else {
            assert!(matches!(rocm.unwrap_err(), RunError::NoRocm));
        }
        let want = Some(SlowPair {
            a: 1,
            b: 2,
            times: 5.0,
        });
        assert_eq!(check(&request(BackendKind::Cpu, 1001)).unwrap().slow, want);
        let cuda = check(&request(BackendKind::Cuda, 1001));
        let e = cuda.unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::EXIT_BAD_INPUT);
        if cfg!(feature = "cuda") {
            assert_eq!(
                e.to_string(),
                "--size 1001: --backend cuda and rocm send whole 4-byte words (ncclInt32): give a multiple of 4 bytes, e.g. 1MiB"
            );
            assert_eq!(
                check(&request(BackendKind::Cuda, 1 << 20)).unwrap().slow,
                want
            );
        } else {
            assert!(matches!(e, RunError::NoCuda), "{e}");
        }
    }

    /// A topology file is read on every rank before MPI: one that cannot be read is refused
    /// with its file and line.
    #[test]
    fn a_bad_topology_file_is_refused_before_mpi() {
        let dir = std::env::temp_dir().join(format!("sb-topo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.conf");
        std::fs::write(&path, "SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n[2-\n").unwrap();
        let mut r = request(BackendKind::Cpu, 1 << 20);
        r.topology = Some(path.clone());
        let e = check(&r).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::EXIT_BAD_INPUT);
        assert!(
            e.to_string()
                .starts_with(&format!("--topology {}:2: unclosed '['", path.display())),
            "{e}"
        );
        std::fs::write(&path, "SwitchName=s1 Nodes=n[1-2]\n").unwrap();
        assert_eq!(check(&r).unwrap().leaves.unwrap()[0].nodes, ["n1", "n2"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn leaf(name: &str, nodes: &[String]) -> Leaf {
        Leaf {
            name: name.into(),
            nodes: nodes.to_vec(),
        }
    }

    /// Only the leaves (and nodes) of this job are kept; a block is placed under its switch.
    #[test]
    fn the_topology_keeps_this_jobs_leaves_and_places_blocks() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = vec![
            leaf("s1", &n(&["a1", "a2", "a3"])),
            leaf("s2", &n(&["b1", "b2"])),
            leaf("s3", &n(&["c1"])),
        ];
        let nodes = n(&["b1", "a1", "b2", "a2"]);
        let t = Topology::of(Some("file: t".into()), &all, &nodes);
        assert_eq!(
            t.leaves,
            vec![leaf("s1", &n(&["a1", "a2"])), leaf("s2", &n(&["b1", "b2"]))]
        );
        assert_eq!(t.order, vec![1, 3, 0, 2]);
        assert_eq!(
            t.place(&n(&["a1", "a2"])).unwrap(),
            "all of switch s1 (2 nodes)"
        );
        assert_eq!(
            t.place(&n(&["b1"])).unwrap(),
            "under switch s2 (1 of its 2 nodes)"
        );
        assert_eq!(
            t.place(&n(&["a2", "b1"])).unwrap(),
            "across switches s1, s2"
        );
        let none = Topology::of(Some("file: t".into()), &all, &n(&["x", "y"]));
        assert_eq!(none.order, vec![0, 1]);
        assert_eq!(
            none.source.unwrap(),
            "not known: file: t lists none of this job's nodes"
        );
        assert!(Topology::of(None, &[], &nodes).place(&n(&["a1"])).is_none());
    }

    /// The point of the topology: Slurm placed ranks round-robin over 64 nodes under 8 leaf
    /// switches (rank r on leaf r mod 8), and one leaf is slow toward the rest (60 %, 5 %
    /// log-normal noise). In topology order its 8 nodes are neighbours and the attribution
    /// names one block, exactly that leaf; in rank order they are scattered and no such block
    /// can be found. Rates over 1,000 seeds are printed (run with --nocapture).
    #[test]
    fn a_slow_leaf_scattered_in_rank_order_is_one_block_in_topology_order() {
        use crate::links::simulate::Scenario;
        let (nodes_n, leaves_n, slow_leaf) = (64usize, 8usize, 3usize);
        let names: Vec<String> = (0..nodes_n).map(|r| format!("n{r}")).collect();
        let leaves: Vec<Leaf> = (0..leaves_n)
            .map(|j| {
                let on: Vec<String> = (0..nodes_n)
                    .filter(|r| r % leaves_n == j)
                    .map(|r| names[r].clone())
                    .collect();
                leaf(&format!("s{j}"), &on)
            })
            .collect();
        let topo = Topology::of(Some("file: t".into()), &leaves, &names);
        let o = &topo.order;
        let mut want: Vec<usize> = (0..nodes_n).filter(|r| r % leaves_n == slow_leaf).collect();
        want.sort_unstable();
        // The slow leaf's rows in topology order.
        let (first, last) = (slow_leaf * 8, slow_leaf * 8 + 7);
        assert!((first..=last).all(|p| o[p] % leaves_n == slow_leaf));
        let seeds = 1000u64;
        let (mut in_topology, mut in_rank_order) = (0u64, 0u64);
        for seed in 0..seeds {
            // The matrix as the fabric behaves, in topology order, then laid out by rank.
            let sim = Scenario {
                slow_blocks: vec![(first, last, 0.6)],
                ..Scenario::healthy(nodes_n, seed, 0.05)
            }
            .matrix();
            let mut by_rank = vec![None; nodes_n * nodes_n];
            for p in 0..nodes_n {
                for q in 0..nodes_n {
                    by_rank[o[p] * nodes_n + o[q]] = sim.gbps[p * nodes_n + q];
                }
            }
            let a = attribution::analyse(
                &fabric(&permute(&by_rank, o), &reorder(&names, o), o),
                &Settings::default(),
            );
            let right = |a: &attribution::Analysis, order: &[usize]| match a.findings.as_slice() {
                [f] => match f.suspect {
                    Suspect::Block { first, last } => {
                        let mut m: Vec<usize> = (first..=last).map(|p| order[p]).collect();
                        m.sort_unstable();
                        m == want
                    }
                    _ => false,
                },
                _ => false,
            };
            in_topology += right(&a, o) as u64;
            let ident: Vec<usize> = (0..nodes_n).collect();
            let b = attribution::analyse(&fabric(&by_rank, &names, &ident), &Settings::default());
            in_rank_order += right(&b, &ident) as u64;
        }
        eprintln!("slow leaf named as one block: topology order {in_topology}/{seeds}, rank order {in_rank_order}/{seeds}");
        assert!(
            in_topology * 100 >= seeds * 99,
            "topology order: {in_topology}/{seeds}"
        );
        assert_eq!(in_rank_order, 0, "rank order cannot see a scattered block");
    }

    /// The printed summary names the transport, and a stand-in run carries the label on a line
    /// of its own.
    #[test]
    fn the_output_names_the_transport() {
        let mut f = crate::results::links::test_file(
            vec!["a".into(), "b".into()],
            vec![vec![None, Some(10.0)], vec![Some(9.0), None]],
            9.5,
        );
        let out = std::path::Path::new("o");
        let text = render(&f, out, false);
        assert!(
            text.contains("1048576 B messages over MPI: median 9.50 GB/s"),
            "{text}"
        );
        f.transport = Some("nccl".into());
        f.nccl_version = Some("2.28.3".into());
        f.standin = Some("STAND-IN: doubles".into());
        let text = render(&f, out, false);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("over STAND-IN NCCL 2.28.3 send/recv, one GPU per rank: median"),
            "{text}"
        );
        assert_eq!(lines[1], "STAND-IN: doubles");
    }
}
