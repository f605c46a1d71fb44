#!/usr/bin/env bash
# The lead's device call of 2026-11-27 (one GPU; README.md here). Run from the repo root with
# the .dev bundle (ci/device-bundle.sh) and nccl-tests' source in .nt, both carried:
# 1. GPU ceilings read live from NVML in a CUDA launch (issue 28): `scalebench ceilings` and a
#    run's host ceilings, warnings and frac_peak of busbw and GEMM.
# 2. --buffers reuse / rotate against nccl-tests 2.19.6, alternating, two rounds: nccl-tests
#    with -e equal to the size (nothing to rotate) and with -e 1G (rotating through 1 GiB).
# Everything lands in $W, packed into $OUT/all.tgz (the tool returns at most 8 files).
set -uo pipefail
W=/tmp/w; mkdir -p "$W"
t0=$SECONDS
step() { local n=$1; shift; printf '\n== %s (t=%ss) ==\n' "$n" "$((SECONDS - t0))"; "$@" >"$W/$n.log" 2>&1; echo "-- rc=$?"; tail -n "${TAIL:-6}" "$W/$n.log" | cut -c1-200; }
source .dev/env.sh
SB=$PWD/.dev/bin/scalebench
links=$(mktemp -d); nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.1[0-9] | head -n 1)
ln -s "$nccl" "$links/libnccl.so"; ln -s "$cublas" "$links/libcublas.so"
export LD_LIBRARY_PATH="$links:$(dirname "$cublas"):$LD_LIBRARY_PATH"
nh=$(mktemp -d); mkdir -p "$nh/lib"; ln -s /usr/include "$nh/include"; ln -s "$nccl" "$nh/lib/libnccl.so"
(make -C .nt/src -j 12 build BUILDDIR="$W/nt" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME="$nh" \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BIN_FILES_LIST=all_reduce >"$W/nt-build.log" 2>&1
 echo $? >"$W/nt-build.rc") &
facts() {
  uname -r; grep PRETTY_NAME /etc/os-release; lscpu | grep -E 'Model name|^CPU\(s\)|L3'
  nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.max.sm,clocks.max.mem --format=csv
  nvidia-smi nvlink -s 2>&1 | head -5
  python3 -c 'import torch; p=torch.cuda.get_device_properties(0); print("torch L2 bytes", p.L2_cache_size)' 2>&1
  echo "nccl $nccl cublas $cublas"
}
TAIL=14 step facts facts
TAIL=40 step ceilings "$SB" ceilings
"$SB" ceilings --json >"$W/ceilings.json" 2>"$W/ceilings-json.err"
step ceil-run "$SB" run --backend cuda -w allreduce,matmul --sizes 64MiB --dims 8192 --dtype f32,bf16 --in-place no -q --out "$W/ceil-run"
python3 - "$W/ceil-run/results.json" >"$W/ceil-run.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def walk(o, path=""):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("ceilings", "host_ceilings", "warnings", "peak", "frac_peak"):
                print(path + "/" + k, json.dumps(v)[:3000])
            walk(v, path + "/" + k)
    elif isinstance(o, list):
        for i, v in enumerate(o[:8]):
            walk(v, f"{path}[{i}]")
walk(d)
for c in d["cases"]:
    print(c["params"]["workload"], c["params"]["dtype"], c["status"], "busbw", c.get("busbw_gbps"), "gflops", c.get("gflops"), "peak", json.dumps(c.get("peak")))
PY
cat "$W/ceil-run.txt" | cut -c1-400 | head -40
wait
echo "nccl-tests build rc $(cat "$W/nt-build.rc") (t=$((SECONDS - t0))s)"
NT=$W/nt/all_reduce_perf
for r in 1 2; do
  step "sb-$r" "$SB" run --backend cuda -w allreduce --sizes 1MiB:1GiB:x4 --in-place no --buffers reuse,rotate -n 100 --warmup 20 --no-ceilings -q --out "$W/sb-$r"
  step "nt-e1G-$r" "$NT" -b 1M -e 1G -f 4 -g 1 -n 100 -w 20 -c 0
  for s in 1M 4M 16M 64M 256M 1G; do "$NT" -b $s -e $s -g 1 -n 100 -w 20 -c 0; done >"$W/nt-same-$r.log" 2>&1
done
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import json, sys, os
W = sys.argv[1]
def nt(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) > 6 and f[0].isdigit() and f[2] == "float":
            out[int(f[0])] = float(f[5])
    return out
print("size_bytes round sb_reuse_us sb_rotate_us nt_e=size_us nt_e1G_us rotate/e1G reuse/e=size rotate_sets exceeds_cache")
for r in (1, 2):
    d = json.load(open(f"{W}/sb-{r}/results.json"))
    sb = {}
    for c in d["cases"]:
        p = c["params"]
        sb[(p["requested_bytes"], p.get("buffers", "reuse"))] = (c["timing"]["time_s"] * 1e6, c.get("rotation"))
    a, b = nt(f"{W}/nt-same-{r}.log"), nt(f"{W}/nt-e1G-{r}.log")
    for s in sorted({k[0] for k in sb}):
        ru, rot = sb.get((s, "reuse"), (None, None))[0], sb.get((s, "rotate"), (None, None))
        rt, rinfo = rot
        q = lambda x, y: f"{x / y:.3f}" if x and y else "-"
        print(s, r, f"{ru:.2f}", f"{rt:.2f}", a.get(s), b.get(s), q(rt, b.get(s)), q(ru, a.get(s)),
              rinfo and rinfo["sets"], rinfo and rinfo["exceeds_cache"])
PY
echo "done in $((SECONDS - t0)) s"
tar czf "$OUT/all.tgz" -C "$W" --exclude=nt . && ls -la "$OUT"
