//! A launch's settings and the test faults: shared by specs (`config`), plans (`plan`) and
//! the run stage, so they live with the other parameters. How they act lives with the stage
//! that acts (`measure` resolves an [`IterPolicy`], `workload` injects a [`Fault`]).

use super::GemmChoice;

/// How many iterations to run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IterPolicy {
    /// Timed iterations; `None` = automatic (see [`IterPolicy::resolve`]).
    pub iters: Option<u32>,
    /// Warm-up iterations; `None` = automatic.
    pub warmup: Option<u32>,
    /// Automatic mode: the measured phase of one case should take about this long, seconds.
    pub time_budget_s: f64,
    /// Pipelined mode: batches (samples); `None` = min(iters, 20).
    pub batches: Option<u32>,
}

impl Default for IterPolicy {
    fn default() -> Self {
        IterPolicy {
            iters: None,
            warmup: None,
            time_budget_s: 0.5,
            batches: None,
        }
    }
}

/// Settings shared by all cases of a launch.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSettings {
    pub policy: IterPolicy,
    /// Validated iterations after timing (`--check`); 0 disables validation.
    pub check_iters: u32,
    /// CPU GEMM provider (`--gemm`, spec `run.gemm`); plans written before it existed read
    /// as `auto`.
    #[serde(default)]
    pub gemm: GemmChoice,
    /// Where benchmark buffers start after a page boundary (`--buffer-offset`).
    #[serde(default)]
    pub buffer_offset: BufferOffset,
    /// The MPI thread level to initialise with (`--thread-level`, spec `run.thread_level`;
    /// a sweep sets the highest any of its launches needs). `None`: the lowest this launch's
    /// cases need (see `plan::thread_level_needed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_level: Option<super::ThreadLevel>,
    /// Measure each host's ceilings once at the start of the launch (`--no-ceilings`, spec
    /// `run.ceilings = false` turn it off); plans written before it existed measure them.
    #[serde(default = "measure_ceilings_default")]
    pub ceilings: bool,
}

fn measure_ceilings_default() -> bool {
    true
}

/// Where benchmark buffers start after a page boundary (`--buffer-offset`), bytes; to study
/// misalignment, or 4K aliasing with different send and receive offsets, on purpose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BufferOffset {
    /// Send buffers.
    pub send_bytes: u64,
    /// Receive and in-place buffers.
    pub recv_bytes: u64,
}

/// Test-only faults (the hidden `--fault` option), used to prove that failure handling works
/// with the real binary: they make real things go wrong, nothing is faked in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Device 0 feeds one wrong input element, so validation must report a wrong result.
    Corrupt,
    /// The last rank fails to set the case up (the case fails, the launch goes on).
    Fail,
    /// Rank 0 blocks forever before the case (the launch must be timed out).
    Hang,
    /// The last rank blocks forever before the case (rank 0's watchdog must name it).
    HangLast,
    /// Rank 0 stops itself (SIGSTOP) before the case, its watchdog thread with it: another
    /// rank must end the job and keep what finished.
    Freeze,
    /// The last rank aborts the process (the launch crashes).
    Crash,
    /// `slow_comm:MS` (ddp_step): every all-reduce completes no earlier than MS milliseconds
    /// after it started or the previous one completed (a slow, serial link), to prove that the
    /// overlap measurement sees communication the compute cannot hide.
    SlowComm(u32),
    /// The first operation of a collective case sleeps on every rank (a cold first call, like
    /// NCCL's lazy connection set-up): calibration must not shrink the counts for it.
    Cold,
    /// `pause:MS`: every rank sleeps MS milliseconds before the case (a case of known length,
    /// so a test can signal or kill a sweep while it certainly still runs).
    Pause(u32),
}

impl Fault {
    pub fn parse(s: &str) -> Option<Fault> {
        match s {
            "corrupt" => Some(Fault::Corrupt),
            "fail" => Some(Fault::Fail),
            "hang" => Some(Fault::Hang),
            "hang_last" => Some(Fault::HangLast),
            "freeze" => Some(Fault::Freeze),
            "crash" => Some(Fault::Crash),
            "cold" => Some(Fault::Cold),
            _ => {
                let ms = |prefix: &str| {
                    s.strip_prefix(prefix)
                        .and_then(|ms| ms.parse::<u32>().ok())
                        .filter(|ms| (1..=60_000).contains(ms))
                };
                ms("slow_comm:")
                    .map(Fault::SlowComm)
                    .or_else(|| ms("pause:").map(Fault::Pause))
            }
        }
    }
    pub const NAMES: &'static [&'static str] = &[
        "corrupt",
        "fail",
        "hang",
        "hang_last",
        "freeze",
        "crash",
        "cold",
        "slow_comm:MS",
        "pause:MS",
    ];
}
