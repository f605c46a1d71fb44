//! A minimal allreduce latency loop written the OSU way with raw rsmpi, as the reference the
//! harness is measured against (`ci/bench.sh`): per iteration `t0 = MPI_Wtime(); allreduce;
//! t1 = MPI_Wtime(); barrier`, 100 warm-up + 1000 timed iterations, per-rank mean, then the
//! average over ranks. f32 sum, out of place, sizes 8 B – 16 KiB (×2).
//!
//!     mpirun -np 2 target/release/examples/osu_allreduce

use mpi::collective::SystemOperation;
use mpi::traits::*;

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let rank = world.rank();
    let size = world.size() as f64;
    let (warmup, iters) = (100, 1000);
    let mut bytes = 8usize;
    if rank == 0 {
        println!(
            "# raw rsmpi OSU-style allreduce, f32 sum, {} ranks",
            world.size()
        );
        println!("# {:>10} {:>14}", "size (B)", "avg lat (us)");
    }
    while bytes <= 16 << 10 {
        let n = bytes / 4;
        let send = vec![1.0f32; n];
        let mut recv = vec![0.0f32; n];
        let mut total = 0.0f64;
        for i in 0..warmup + iters {
            let t0 = mpi::time();
            world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
            let t1 = mpi::time();
            if i >= warmup {
                total += t1 - t0;
            }
            world.barrier();
        }
        assert_eq!(recv[0], size as f32, "allreduce result");
        let mine = total / iters as f64;
        let mut sum = 0.0f64;
        world.all_reduce_into(&mine, &mut sum, SystemOperation::sum());
        if rank == 0 {
            println!("  {:>10} {:>14.3}", bytes, sum / size * 1e6);
        }
        bytes *= 2;
    }
}
