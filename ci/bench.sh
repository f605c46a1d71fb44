#!/usr/bin/env bash
# Performance of the measuring core against references measured in the same run (not part of
# CI's pass/fail; machines are noisy, so it alternates runs and prints medians and ratios):
#  1. allreduce latency, 2 ranks, 8 B - 16 KiB: `scalebench run --timing isolated` divided by a
#     minimal raw rsmpi loop written the OSU way (examples/osu_allreduce.rs). Goal <= 1.05.
#     A third column runs the harness's measuring code without the job around it
#     (examples/harness_allreduce.rs), so a gap can be placed in the loop or in the job.
#  2. GEMM GFLOP/s of `scalebench run -w matmul`, f32/f64, n = 1024 and 2048, 1 and 2 threads,
#     divided by numpy/OpenBLAS (numpy from PyPI in a throw-away venv). Goal >= 0.9.
# Usage: bash ci/bench.sh [ROUNDS]   (default 5 alternations of each side)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh
rounds=${1:-5}
cargo build --release --locked --bin scalebench --example osu_allreduce --example harness_allreduce
work=$(mktemp -d /tmp/scalebench-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== allreduce latency: scalebench (isolated) / raw rsmpi OSU loop, 2 ranks, $rounds alternations"
for r in $(seq "$rounds"); do
  mpirun -np 2 target/release/examples/osu_allreduce > "$work/raw-$r.txt"
  mpirun -np 2 target/release/examples/harness_allreduce > "$work/loop-$r.txt"
  mpirun -np 2 target/release/scalebench run -q --out "$work/sb-$r" -w allreduce --dtype f32 --op sum \
    --in-place no --timing isolated --sizes 8B:16KiB:x2 --iters 1000 --warmup 100
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
raw, loop, sb = {}, {}, {}
def table(path, into):
    for line in open(path):
        if line.startswith("#"):
            continue
        size, lat = line.split()
        into.setdefault(int(size), []).append(float(lat))
for r in range(1, rounds + 1):
    table(f"{work}/raw-{r}.txt", raw)
    table(f"{work}/loop-{r}.txt", loop)
    for c in json.load(open(f"{work}/sb-{r}/results.json"))["cases"]:
        sb.setdefault(c["bytes"], []).append(c["timing"]["time_s"] * 1e6)
print(f"{'size (B)':>10} {'raw (us)':>10} {'scalebench (us)':>16} {'ratio':>7} {'loop only (us)':>15} {'ratio':>7}   (medians of {rounds} runs; ratios of medians to raw)")
ratios = []
for size in sorted(raw):
    a, b, c = (statistics.median(x[size]) for x in (raw, sb, loop))
    ratios.append(b / a)
    print(f"{size:>10} {a:>10.3f} {b:>16.3f} {b / a:>7.3f} {c:>15.3f} {c / a:>7.3f}")
print(f"scalebench run: median ratio over sizes {statistics.median(ratios):.3f} (goal <= 1.05); max {max(ratios):.3f}")
PY

echo
echo "== GEMM: scalebench matmul / numpy (OpenBLAS), GFLOP/s"
if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q numpy threadpoolctl
fi
cat > "$work/gemm.py" <<'PY'
import sys, time, numpy as np
from threadpoolctl import threadpool_info
n, dtype = int(sys.argv[1]), sys.argv[2]
a = np.random.default_rng(0).integers(-2, 3, (n, n)).astype(dtype)
b = np.random.default_rng(1).integers(-2, 3, (n, n)).astype(dtype)
c = np.empty((n, n), dtype)
for _ in range(3):
    np.matmul(a, b, out=c)
reps = max(5, int(0.5 / (2 * n**3 / 50e9)))
t0 = time.perf_counter()
for _ in range(reps):
    np.matmul(a, b, out=c)
t = (time.perf_counter() - t0) / reps
info = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
core = info[0].get("architecture", "?") if info else "?"
print(f"{2 * n**3 / t / 1e9:.2f} {core}")
PY
printf '%-5s %6s %8s %12s %10s %7s  %s\n' dtype n threads scalebench numpy ratio "openblas kernel"
for dtype in f32 f64; do
  np_dtype=$([ "$dtype" = f32 ] && echo float32 || echo float64)
  for n in 1024 2048; do
    for t in 1 2; do
      sbv=(); npv=()
      for r in $(seq "$rounds"); do
        target/release/scalebench run -q --out "$work/mm" -w matmul --dtype "$dtype" --dims "$n" --threads-per-device "$t" --time-budget 1 > /dev/null
        sbv+=("$(python3 -c "import json;print(json.load(open('$work/mm/results.json'))['cases'][0]['gflops'])")")
        # The machine sets OPENBLAS_CORETYPE for old OpenBLAS builds; numpy's own OpenBLAS is
        # fastest without it, so measure the reference at its best.
        out=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$t" "$work/venv/bin/python" "$work/gemm.py" "$n" "$np_dtype")
        npv+=("${out%% *}"); kernel="${out#* }"
      done
      python3 - "$dtype" "$n" "$t" "$kernel" "${sbv[*]}" "${npv[*]}" <<'PY'
import statistics, sys
dtype, n, t, kernel, sb, npy = sys.argv[1:7]
sb = statistics.median(map(float, sb.split())); npy = statistics.median(map(float, npy.split()))
print(f"{dtype:<5} {n:>6} {t:>8} {sb:>12.1f} {npy:>10.1f} {sb / npy:>7.3f}  {kernel}")
PY
    done
  done
done
echo "(medians of $rounds runs each; goal: ratio >= 0.9)"
