#!/usr/bin/env bash
# Builds the scalebench stand-in CUDA libraries (CPU test doubles; see standin.h) into $1
# (default: target/standin): libcuda.so.1, libcublas.so, libnccl.so, libnvidia-ml.so.1,
# libamdhip64.so, librccl.so, librocblas.so and libamd_smi.so (ROCm), and
# missing-symbol/ (a libcuda without cuMemHostAlloc, for the missing-symbol test), and
# contract-test and hip-contract-test (the contract checks' own tests).
# Use: LD_LIBRARY_PATH=$dir SCALEBENCH_STANDIN=1 scalebench run --backend cuda ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../target/standin}
mkdir -p "$out/missing-symbol"
CC=${CC:-cc}
flags=(-std=gnu11 -O2 -g -fPIC -shared -pthread -fvisibility=hidden -Wall -Wextra -Werror -I"$here")
$CC "${flags[@]}" -Wl,-soname,libcuda.so.1 -o "$out/libcuda.so.1" "$here/cuda.c"
ln -sf libcuda.so.1 "$out/libcuda.so"
$CC "${flags[@]}" -DSBS_OMIT_HOST_ALLOC -Wl,-soname,libcuda.so.1 -o "$out/missing-symbol/libcuda.so.1" "$here/cuda.c"
ln -sf libcuda.so.1 "$out/missing-symbol/libcuda.so"
# cuBLAS and NCCL use the driver's services (queues, memory table) through libcuda.so.1, which
# the dynamic loader shares with the copy cudarc opened.
$CC "${flags[@]}" -Wl,-soname,libcublas.so -o "$out/libcublas.so" "$here/cublas.c" -L"$out" -l:libcuda.so.1
if [ -f "$here/nccl.c" ]; then
  $CC "${flags[@]}" -Wl,-soname,libnccl.so -o "$out/libnccl.so" "$here/nccl.c" -L"$out" -l:libcuda.so.1 -lm
fi
if [ -f "$here/nvml.c" ]; then
  $CC "${flags[@]}" -Wl,-soname,libnvidia-ml.so.1 -o "$out/libnvidia-ml.so.1" "$here/nvml.c" -ldl
fi
# ROCm (the ROCm backend): the HIP runtime (the driver above compiled in, under HIP's names),
# RCCL (nccl.c again: RCCL keeps NCCL's API), rocBLAS (cuBLAS's arithmetic, gemm_arith.h, under
# rocBLAS's API), and rocm-missing-symbol/ (a HIP runtime without hipEventElapsedTime, for the
# missing-symbol test).
mkdir -p "$out/rocm-missing-symbol"
$CC "${flags[@]}" -Wl,-soname,libamdhip64.so -o "$out/libamdhip64.so" "$here/hip.c"
$CC "${flags[@]}" -DSBS_OMIT_HIP_ELAPSED -Wl,-soname,libamdhip64.so -o "$out/rocm-missing-symbol/libamdhip64.so" "$here/hip.c"
$CC "${flags[@]}" -DSBS_RCCL -Wl,-soname,librccl.so -o "$out/librccl.so" "$here/nccl.c" -L"$out" -l:libamdhip64.so -lm
$CC "${flags[@]}" -Wl,-soname,librocblas.so -o "$out/librocblas.so" "$here/rocblas.c" -L"$out" -l:libamdhip64.so
# AMD SMI (the ROCm backend's telemetry): reads the HIP stand-in's busy counters through dlopen.
$CC "${flags[@]}" -Wl,-soname,libamd_smi.so -o "$out/libamd_smi.so" "$here/amdsmi.c" -ldl
# The ROCm stand-ins' contract checks' own test (run by tests/integration/rocm.rs).
$CC -std=gnu11 -O1 -g -Wall -Wextra -Werror -o "$out/hip-contract-test" "$here/hip_contract_test.c" \
  -L"$out" -l:libamdhip64.so -l:librccl.so -l:librocblas.so -l:libamd_smi.so -Wl,-rpath,"$out"
# The contract checks' own test (run by tests/integration/cuda.rs): each misuse must abort naming the call.
$CC -std=gnu11 -O1 -g -Wall -Wextra -Werror -o "$out/contract-test" "$here/contract_test.c" \
  -L"$out" -l:libcuda.so.1 -l:libnccl.so -Wl,-rpath,"$out"
echo "$out"
