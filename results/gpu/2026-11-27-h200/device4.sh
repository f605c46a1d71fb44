#!/usr/bin/env bash
# Fourth and fifth calls of 2026-11-27 (merged main; the fourth carried a binary built without
# the cuda feature and stopped at its refusal, the fifth 7660568): the pipelined loop's change seen from the
# GEMMs (cuBLAS through scalebench in automatic mode against PyTorch's own loop, ~50 ms batches,
# random operands, alternating, two rounds); the NCCL capture after its move to
# backend/capture.rs (one rank: the version, no choice line); `links --backend cuda` alone.
set -uo pipefail
W=/tmp/w4; mkdir -p "$W"
t0=$SECONDS
source .dev/env.sh
SB=$PWD/.dev/bin/scalebench
links=$(mktemp -d); nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.1[0-9] | head -n 1)
ln -s "$nccl" "$links/libnccl.so"; ln -s "$cublas" "$links/libcublas.so"
export LD_LIBRARY_PATH="$links:$(dirname "$cublas"):$LD_LIBRARY_PATH"
"$SB" --version
for r in 1 2; do
  "$SB" run --backend cuda -w matmul --dims 4096,8192 --dtype f32,f64,f16,bf16 --no-ceilings -q --out "$W/sb-$r" >"$W/sb-$r.log" 2>&1 || echo "sb rc $?"
  python3 ci/gpu-node-torch.py 4096,8192 f32,f64,f16,bf16 20 >"$W/torch-$r.csv" 2>&1 || echo "torch rc $?"
done
SCALEBENCH_NCCL_CAPTURE=1 "$SB" run --backend cuda -w allreduce --sizes 8B,64MiB --buffers reuse,rotate --no-ceilings -q --out "$W/capture" >"$W/capture.log" 2>&1; echo "capture rc $?"
"$SB" links --backend cuda --out "$W/links" >"$W/links.log" 2>&1; echo "links rc $?"; head -c 600 "$W/links.log"
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import csv, json, sys
W = sys.argv[1]
print("dtype n round sb_tflops torch_tflops sb/torch")
for r in (1, 2):
    sb = {(c["params"]["dtype"], c["params"]["shape"]["m"]): c["gflops"] for c in json.load(open(f"{W}/sb-{r}/results.json"))["cases"]}
    for row in csv.DictReader(open(f"{W}/torch-{r}.csv")):
        k = (row["dtype"], int(row["n"]))
        t = float(row["gflops"])
        print(k[0], k[1], r, f"{sb[k] / 1e3:.1f}", f"{t / 1e3:.1f}", f"{sb[k] / t:.3f}")
d = json.load(open(f"{W}/capture/results.json"))
for c in d["cases"]:
    print("capture", c["params"]["requested_bytes"], c["params"].get("buffers", "reuse"), c["status"], json.dumps(c.get("nccl"))[:200], c.get("rotation"))
PY
echo "done in $((SECONDS - t0)) s"
tar czf "$OUT/all.tgz" -C "$W" .
