#!/usr/bin/env bash
# NCCL capture overhead (issue 31 item 1): the same all-reduce run with capture off and on, alternating.
set -uo pipefail
out=${1:?}; mkdir -p "$out"
links=$(mktemp -d); nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.1[0-9] | head -n 1)
ln -s "$nccl" "$links/libnccl.so"; ln -s "$cublas" "$links/libcublas.so"
export LD_LIBRARY_PATH="$links:$(dirname "$cublas"):$LD_LIBRARY_PATH"
for r in 1 2 3; do
  for cap in 0 1; do
    echo "== round $r capture $cap"
    SCALEBENCH_NCCL_CAPTURE=$cap "$SB" run --backend cuda -w allreduce --sizes 8B:64MiB:x8 --in-place no -t pipelined,isolated -n 200 --warmup 20 -q --out "$out/cap$cap-$r" 2>&1 | tail -3
  done
done
ls -la /tmp/scalebench-nccl-* 2>/dev/null | head
