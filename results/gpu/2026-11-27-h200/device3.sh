#!/usr/bin/env bash
# Third call of 2026-11-27: the same comparison with the pipelined loop that no longer synchronises
# between batches (ae72e53): scalebench at -n 100 with its default 20 batches, and in automatic
# mode (no -n), against nccl-tests 2.19.6, reuse (-e = size) and rotate (-e 1G), two rounds.
set -uo pipefail
W=/tmp/w3; mkdir -p "$W"
t0=$SECONDS
source .dev/env.sh
SB=$PWD/.dev/bin/scalebench
links=$(mktemp -d); nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.1[0-9] | head -n 1)
ln -s "$nccl" "$links/libnccl.so"; ln -s "$cublas" "$links/libcublas.so"
export LD_LIBRARY_PATH="$links:$(dirname "$cublas"):$LD_LIBRARY_PATH"
nh=$(mktemp -d); mkdir -p "$nh/lib"; ln -s /usr/include "$nh/include"; ln -s "$nccl" "$nh/lib/libnccl.so"
make -C .nt/src -j 14 build BUILDDIR="$W/nt" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME="$nh" \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BIN_FILES_LIST=all_reduce >"$W/nt-build.log" 2>&1
echo "nccl-tests build rc $? (t=$((SECONDS - t0))s)"
NT=$W/nt/all_reduce_perf
for r in 1 2; do
  for b in 20 auto; do
    "$SB" run --backend cuda -w allreduce --sizes 1MiB:1GiB:x4 --in-place no --buffers reuse,rotate $( [ $b = auto ] || echo "-n 100 --warmup 20 --batches $b") --no-ceilings -q --out "$W/sb-b$b-$r" >"$W/sb-b$b-$r.log" 2>&1 || echo "sb b$b rc $?"
  done
  "$NT" -b 1M -e 1G -f 4 -g 1 -n 100 -w 20 -c 0 >"$W/nt-e1G-$r.log" 2>&1
  for s in 1M 4M 16M 64M 256M 1G; do "$NT" -b $s -e $s -g 1 -n 100 -w 20 -c 0; done >"$W/nt-same-$r.log" 2>&1
done
python3 - "$W" <<'PY' | tee "$W/summary.txt"
import json, sys
W = sys.argv[1]
def nt(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) > 6 and f[0].isdigit() and f[2] == "float":
            out[int(f[0])] = float(f[5])
    return out
print("size round | reuse: n100/b20 auto nt(e=size) | rotate: n100/b20 auto nt(e1G) | n100/nt reuse, rotate | auto/nt reuse, rotate")
for r in (1, 2):
    sb = {}
    for b in (20, "auto"):
        for c in json.load(open(f"{W}/sb-b{b}-{r}/results.json"))["cases"]:
            p = c["params"]
            sb[(b, p["requested_bytes"], p.get("buffers", "reuse"))] = c["timing"]["time_s"] * 1e6
    a, e = nt(f"{W}/nt-same-{r}.log"), nt(f"{W}/nt-e1G-{r}.log")
    for s in sorted({k[1] for k in sb}):
        g = lambda b, m: sb.get((b, s, m))
        print(s, r, "|", f"{g(20,'reuse'):.2f} {g('auto','reuse'):.2f} {a.get(s)}", "|",
              f"{g(20,'rotate'):.2f} {g('auto','rotate'):.2f} {e.get(s)}", "|",
              f"{g(20,'reuse')/a[s]:.3f} {g(20,'rotate')/e[s]:.3f}", "|",
              f"{g('auto','reuse')/a[s]:.3f} {g('auto','rotate')/e[s]:.3f}")
PY
echo "done in $((SECONDS - t0)) s"
tar czf "$OUT/all.tgz" -C "$W" --exclude=nt . 
