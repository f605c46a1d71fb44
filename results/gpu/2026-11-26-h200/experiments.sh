#!/usr/bin/env bash
# The second H200 call of 2026-11-26 (see README.md here): the two causes found in the first.
# 1. GEMM inputs: PyTorch on uniform random vs on scalebench's check pattern, and scalebench
#    before (OLD: the pattern timed) and after (NEW: dense operands timed), alternating.
# 2. L2 reuse: nccl-tests rotates its buffers through the whole -e range each iteration
#    (src/common.cu startColl: "avoid cache effects"); with -e 16M there is nothing to rotate
#    at 16 MiB. scalebench reuses one buffer per case.
# Usage: OLD=... NEW=... NT=nccl-tests/src TORCH=ci/gpu-node-torch.py experiments.sh OUT
set -uo pipefail
out=${1:?}; mkdir -p "$out"
t() { local n=$1; shift; printf '\n== %s ==\n' "$n"; "$@" 2>&1 | tee "$out/$n.log" | grep -vE '^#|^$' | tail -n 20; }
links=$(mktemp -d); nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.1[0-9] | head -n 1)
ln -s "$nccl" "$links/libnccl.so"; ln -s "$cublas" "$links/libcublas.so"
export LD_LIBRARY_PATH="$links:$(dirname "$cublas"):$LD_LIBRARY_PATH"
nh=$(mktemp -d); mkdir -p "$nh/lib"; ln -s /usr/include "$nh/include"; ln -s "$nccl" "$nh/lib/libnccl.so"
(make -C "$NT" -j 12 build BUILDDIR="$out/nt" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME="$nh" \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BIN_FILES_LIST=all_reduce >"$out/nt-build.log" 2>&1; echo $? >"$out/nt-build.rc") &
for r in 1 2; do
  t torch-random-$r python3 "$TORCH" 4096,8192 f32,f64,f16,bf16 20 random
  t torch-pattern-$r python3 "$TORCH" 4096,8192 f32,f64,f16,bf16 20 pattern
  for b in OLD NEW; do
    t sb-$b-$r "${!b}" run --backend cuda -w matmul --dims 4096,8192 --dtype f32,f64,f16,bf16 -q --out "$out/sb-$b-$r"
  done
done
wait
cat "$out/nt-build.rc"
for r in 1 2; do
  t nt-e1G-$r "$out/nt/all_reduce_perf" -b 4M -e 1G -f 2 -g 1 -n 100 -w 20 -c 0
  t nt-e16M-$r "$out/nt/all_reduce_perf" -b 4M -e 16M -f 2 -g 1 -n 100 -w 20 -c 0
  t sb-coll-$r "$NEW" run --backend cuda -w allreduce --sizes 4MiB:1GiB:x2 --in-place no -n 100 --warmup 20 -q --out "$out/sb-coll-$r"
done
