//! nccl-tests' size semantics: how many elements a collective moves for a requested size.
//! Shared by planning (sizes are checked before anything runs) and the collectives.

use super::{Dtype, Workload};

/// Element counts and the bandwidth byte count of one collective case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Elements in each device's send buffer.
    pub send_count: u64,
    /// Elements in each device's receive buffer.
    pub recv_count: u64,
    /// S in algbw = S / time.
    pub bytes: u64,
}

/// Why a size does not fit a collective.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    #[error("{bytes} bytes is not a whole number of {dtype} elements ({elem} bytes each): use a multiple of {elem} bytes")]
    NotDivisible { bytes: u64, dtype: Dtype, elem: u64 },
    #[error("{bytes} bytes over {devices} devices rounds down to 0 elements per device (per-device blocks are multiples of 16 bytes): use at least {min} bytes")]
    TooSmall { bytes: u64, devices: u32, min: u64 },
    #[error("{bytes} bytes needs {count} elements in one buffer, more than one MPI call can move ({max}): use a smaller size")]
    TooLarge { bytes: u64, count: u64, max: u64 },
}

/// The largest element count of one buffer (MPI's `int` counts).
pub const MAX_COUNT: u64 = i32::MAX as u64;

/// nccl-tests' counts for `workload` at `bytes` with `devices` devices.
pub fn counts(
    workload: Workload,
    bytes: u64,
    dtype: Dtype,
    devices: u32,
) -> Result<Counts, CountError> {
    let elem = dtype.size_bytes();
    if bytes % elem != 0 {
        return Err(CountError::NotDivisible { bytes, dtype, elem });
    }
    let count = bytes / elem;
    let n = u64::from(devices.max(1));
    let c = match workload {
        Workload::Allreduce | Workload::Broadcast | Workload::Reduce => Counts {
            send_count: count,
            recv_count: count,
            bytes: count * elem,
        },
        Workload::Allgather | Workload::ReduceScatter | Workload::Alltoall => {
            let align = (16 / elem).max(1);
            let base = (count / n) / align * align;
            if base == 0 {
                return Err(CountError::TooSmall {
                    bytes,
                    devices,
                    min: n * align * elem,
                });
            }
            match workload {
                Workload::Allgather => Counts {
                    send_count: base,
                    recv_count: base * n,
                    bytes: base * n * elem,
                },
                Workload::ReduceScatter => Counts {
                    send_count: base * n,
                    recv_count: base,
                    bytes: base * n * elem,
                },
                _ => Counts {
                    send_count: base * n,
                    recv_count: base * n,
                    bytes: base * n * elem,
                },
            }
        }
        Workload::Matmul | Workload::BatchMatmul | Workload::DdpStep | Workload::Replay => {
            unreachable!("not a collective")
        }
    };
    let largest = c.send_count.max(c.recv_count);
    if largest > MAX_COUNT {
        return Err(CountError::TooLarge {
            bytes,
            count: largest,
            max: MAX_COUNT,
        });
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_nccl_tests() {
        // allreduce: the buffer
        let c = counts(Workload::Allreduce, 1024, Dtype::F32, 4).unwrap();
        assert_eq!((c.send_count, c.recv_count, c.bytes), (256, 256, 1024));
        // allgather: S is the total output; per-rank block rounded down to 16 bytes
        let c = counts(Workload::Allgather, 1000, Dtype::F32, 3).unwrap();
        // 250 elements / 3 = 83 → multiple of 4 elements = 80 per rank
        assert_eq!((c.send_count, c.recv_count, c.bytes), (80, 240, 960));
        // reduce_scatter: S is the total input
        let c = counts(Workload::ReduceScatter, 1 << 20, Dtype::F64, 4).unwrap();
        assert_eq!(
            (c.send_count, c.recv_count, c.bytes),
            (131072, 32768, 1 << 20)
        );
        // alltoall: S is each rank's total send
        let c = counts(Workload::Alltoall, 4096, Dtype::I32, 2).unwrap();
        assert_eq!((c.send_count, c.recv_count, c.bytes), (1024, 1024, 4096));
        let c = counts(Workload::Broadcast, 8, Dtype::F64, 16).unwrap();
        assert_eq!((c.send_count, c.bytes), (1, 8));
    }

    #[test]
    fn count_errors() {
        assert!(matches!(
            counts(Workload::Allreduce, 6, Dtype::F32, 2),
            Err(CountError::NotDivisible { .. })
        ));
        let e = counts(Workload::Allgather, 32, Dtype::F32, 4).unwrap_err();
        assert_eq!(
            e,
            CountError::TooSmall {
                bytes: 32,
                devices: 4,
                min: 64
            }
        );
        assert!(e.to_string().contains("at least 64 bytes"));
        assert!(matches!(
            counts(Workload::Allreduce, 16 << 30, Dtype::F32, 2),
            Err(CountError::TooLarge { .. })
        ));
    }
}
