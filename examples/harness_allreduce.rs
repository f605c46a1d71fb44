//! The harness's own measurement of allreduce latency without the `scalebench run` job around
//! it: the CPU backend, the workload's case runner (buffers, validation) and the isolated
//! timing loop, called directly on MPI_COMM_WORLD. `ci/bench.sh` runs it beside the raw OSU
//! loop (examples/osu_allreduce.rs) and the full binary, so a gap between the raw loop and
//! `scalebench run` can be placed: in the measuring code (this program is slow too) or in the
//! job around it (this program matches the raw loop). Same sizes, counts and output format as
//! the raw loop.
//!
//!     mpirun -np 2 target/release/examples/harness_allreduce

use scalebench::backend::cpu::CpuBackend;
use scalebench::backend::DevicePlan;
use scalebench::comm::mpi::MpiComm;
use scalebench::comm::HostComm;
use scalebench::measure::IterPolicy;
use scalebench::params::{CaseParams, ReduceOp, Timing, Workload};
use scalebench::workload::{run_case, RunSettings};

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let comm = MpiComm::new(&world);
    let mut backend = CpuBackend::new(&world, DevicePlan::unbound(1, 1)).expect("CPU backend");
    let settings = RunSettings {
        policy: IterPolicy {
            iters: Some(1000),
            warmup: Some(100),
            time_budget_s: 0.1,
            batches: None,
        },
        check_iters: 1,
        gemm: Default::default(),
        buffer_offset: Default::default(),
        thread_level: None,
        ceilings: false,
    };
    if comm.is_root() {
        println!(
            "# scalebench measuring loop without the job, allreduce f32 sum, {} ranks",
            comm.size()
        );
        println!("# {:>10} {:>14}", "size (B)", "avg lat (us)");
    }
    let mut bytes = 8u64;
    while bytes <= 16 << 10 {
        let params = CaseParams {
            timing: Timing::Isolated,
            op: Some(ReduceOp::Sum),
            in_place: Some(false),
            requested_bytes: Some(bytes),
            ..CaseParams::new(Workload::Allreduce, 1, comm.size())
        };
        let m = run_case(&mut backend, &comm, &params, &settings).expect("the case runs");
        assert_eq!(m.wrong, 0, "allreduce result");
        if let Some(t) = m.timing {
            println!("  {:>10} {:>14.3}", bytes, t.time_s * 1e6);
        }
        bytes *= 2;
    }
}
