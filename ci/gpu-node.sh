#!/usr/bin/env bash
# ci/gpu-node.sh OUT: the CUDA backend on a real GPU node, beside independent references run in
# the same job, alternating (A B A B): nccl-tests (built here from NCCL_TESTS_SRC, its own
# buffers, loop and timer) for the collectives, PyTorch (ci/gpu-node-torch.py, its own
# allocator and loop) for cuBLAS GEMM. Also: every collective, type and operator validated on
# the GPU, matmul/batch_matmul/ddp_step, NVML telemetry, an NCCL INFO log, and the host CPU's
# ceilings. Everything lands in OUT (one log per step); a step that fails is recorded and the
# script goes on, so one call gives every answer it can.
#
# Needs: the NVIDIA driver, NCCL (libnccl.so.2) and cuBLAS somewhere under /usr/local/cuda*,
# /usr/lib or a Python site-packages (CUDA wheels); links cudarc looks for are made in a
# temporary directory. SCALEBENCH_BIN (default target/release/scalebench, built with
# --features cuda); NCCL_TESTS_SRC (optional: a checkout of NVIDIA/nccl-tests); python3 with
# torch (optional). VALID_SIZES, VALID_DTYPES, VALID_DIMS and DDP_MODELS shrink the validation sweep (a rehearsal on the
# stand-ins). Single node: one rank per GPU under mpirun when there are several GPUs,
# else one rank run alone (an MPI singleton).
set -uo pipefail
out=${1:?usage: ci/gpu-node.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bin=${SCALEBENCH_BIN:-$here/../target/release/scalebench}
t0=$SECONDS

# step NAME CMD...: runs CMD with its output in OUT/NAME.log, prints its exit code, time and tail.
step() {
  local name=$1 s=$SECONDS rc
  shift
  printf '\n== %s (t=%ss) ==\n' "$name" "$((SECONDS - t0))"
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  printf -- '-- %s: rc=%s in %ss\n' "$name" "$rc" "$((SECONDS - s))"
  tail -n "${TAIL:-12}" "$out/$name.log" | cut -c1-220
  return 0
}

# The facts the numbers depend on.
facts() {
  uname -a
  grep -E '^(PRETTY_NAME)=' /etc/os-release
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket|NUMA node|L3'
  printf 'avx512f: %s\n' "$(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  nvidia-smi topo -m
  command -v nvcc && nvcc --version | tail -2
}
step facts facts

# Find NCCL and cuBLAS; make the names cudarc opens (libnccl.so, libcublas.so) in one directory.
links=$(mktemp -d)
roots=(/usr/local/cuda /usr/local/cuda-* /usr/lib/x86_64-linux-gnu /opt)
while IFS= read -r p; do roots+=("$p/nvidia"); done < <(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
find_lib() { find "${roots[@]}" -name "$1" \( -type f -o -type l \) 2>/dev/null | head -n 1; }
nccl=$(find_lib 'libnccl.so.2')
cublas=$(find_lib 'libcublas.so.1[0-9]')
[ -n "$cublas" ] || cublas=$(find_lib 'libcublas.so')
{ echo "nccl: ${nccl:-none}"; echo "cublas: ${cublas:-none}"; } | tee "$out/libraries.txt"
[ -n "$nccl" ] && ln -sf "$nccl" "$links/libnccl.so"
[ -n "$cublas" ] && ln -sf "$cublas" "$links/libcublas.so"
libdirs=$links
for l in "$nccl" "$cublas"; do [ -n "$l" ] && libdirs+=":$(dirname "$l")"; done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$gpus" -gt 1 ]; then launch=(mpirun --allow-run-as-root -np "$gpus" -x LD_LIBRARY_PATH); else launch=(); fi
sb() { "${launch[@]}" "$bin" "$@"; }

# nccl-tests, built in the background while the functional checks run (they are not timed).
nt_bin=""
if [ -n "${NCCL_TESTS_SRC:-}" ] && [ -n "$nccl" ] && command -v nvcc >/dev/null; then
  nccl_home=$(mktemp -d)
  mkdir -p "$nccl_home/lib"
  ln -s "$(dirname "$(dirname "$nccl")")/include" "$nccl_home/include"
  ln -s "$nccl" "$nccl_home/lib/libnccl.so"
  cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
  (make -C "$NCCL_TESTS_SRC/src" -j "$(nproc)" build BUILDDIR="$out/nccl-tests" MPI=0 \
     CUDA_HOME="$cuda_home" NCCL_HOME="$nccl_home" \
     NVCC_GENCODE="-gencode=arch=compute_$cc,code=sm_$cc" \
     BIN_FILES_LIST="all_reduce all_gather" >"$out/nccl-tests-build.log" 2>&1
   echo $? >"$out/nccl-tests-build.rc") &
  builder=$!
  nt_bin=$out/nccl-tests
fi

step version "$bin" --version
step topo "$bin" topo
# Every collective, type and operator, in and out of place, both timing modes: validated.
step collectives-valid sb run --backend cuda \
  -w allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall --sizes "${VALID_SIZES:-8B,1MiB,64MiB}" \
  --dtype "${VALID_DTYPES:-f32,f64,f16,bf16,i32}" --op sum,max,avg -t pipelined,isolated -n 5 --warmup 2 -q \
  --out "$out/collectives-valid"
step gemm-valid sb run --backend cuda -w matmul,batch_matmul --dims "${VALID_DIMS:-1024,4096}" \
  --dtype f32,f64,f16,bf16 -q --out "$out/gemm-valid"
step ddp sb run --backend cuda -w ddp_step --model "${DDP_MODELS:-mlp-small,mlp-100m}" -q --out "$out/ddp"
step nccl-info env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,TUNING \
  NCCL_DEBUG_FILE="$out/nccl-info.%h.%p.txt" "${launch[@]}" "$bin" run --backend cuda \
  -w allreduce,allgather --sizes 8B,1MiB,64MiB -n 3 --warmup 1 -q --out "$out/nccl-info"

# GEMM against PyTorch, alternating.
dims=4096,8192
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  for round in 1 2; do
    step "gemm-sb-$round" sb run --backend cuda -w matmul --dims "$dims" --dtype f32,f64,f16,bf16 \
      -q --out "$out/gemm-sb-$round"
    step "gemm-torch-$round" python3 "$here/gpu-node-torch.py" "$dims" f32,f64,f16,bf16
  done
fi

# all-reduce and all-gather against nccl-tests, alternating (same sizes, 100 timed, 20 warm-up),
# each cache mode against its partner: scalebench's reused buffers against nccl-tests run at one
# size (-b S -e S: its buffers then span that one message), rotated buffers against -e 1G
# (nccl-tests shifts its buffers through the whole -e range, cache-cold below the L2's size).
nt_each_size() {
  local perf=$1 s
  for s in 8 64 512 4K 32K 256K 2M 16M 128M 1G; do
    "${launch[@]}" "$nt_bin/$perf" -b "$s" -e "$s" -g 1 -n 100 -w 20 -c 1 | grep -v '^#' | grep .
  done
}
if [ -n "$nt_bin" ]; then
  wait "$builder"
  step nccl-tests-build cat "$out/nccl-tests-build.rc"
  if [ "$(cat "$out/nccl-tests-build.rc")" = 0 ]; then
    for round in 1 2; do
      step "coll-sb-$round" sb run --backend cuda -w allreduce,allgather --sizes 8B:1GiB:x8 \
        --buffers reuse,rotate --in-place no -n 100 --warmup 20 -q --out "$out/coll-sb-$round"
      step "coll-nt-ar-reuse-$round" nt_each_size all_reduce_perf
      step "coll-nt-ar-rotate-$round" "${launch[@]}" "$nt_bin/all_reduce_perf" -b 8 -e 1G -f 8 -g 1 -n 100 -w 20 -c 1
      step "coll-nt-ag-reuse-$round" nt_each_size all_gather_perf
      step "coll-nt-ag-rotate-$round" "${launch[@]}" "$nt_bin/all_gather_perf" -b 8 -e 1G -f 8 -g 1 -n 100 -w 20 -c 1
    done
  fi
fi

# The host's CPU ceilings (the GPU's are not measured by `ceilings` yet), and the FMA kernels'
# unit tests where a test binary is given (SCALEBENCH_LIBTESTS: AVX-512 hosts run the asm kernels).
step ceilings "$bin" ceilings --json
if [ -n "${SCALEBENCH_LIBTESTS:-}" ]; then
  step ceilings-unit "$SCALEBENCH_LIBTESTS" --test-threads 2 ceilings::
fi
printf '\n== done in %ss ==\n' "$((SECONDS - t0))"
