#!/usr/bin/env bash
# A GEMM forced onto an older kernel is caught by its fraction of peak (issue 28): `scalebench
# run -w matmul --gemm blas` with OPENBLAS_CORETYPE unset, and forced to kernels older than this
# CPU runs (Prescott: SSE3; on an AVX-512 CPU also Haswell: AVX2), alternating each round.
# Per setting it prints the medians of GFLOP/s and of `frac_peak` (the GEMM against the launch's
# own one-CPU FMA peak of its precision, measured at the launch's start) and whether the launch
# recorded the warning naming OPENBLAS_CORETYPE. Goals: forced <= 0.6 with the warning; the
# library's own choice >= 0.8 and no warning. Not part of CI's pass/fail.
#
# Then csrc/gemm_microkernel.c (a C model, no shared code): an in-L1 GEMM-shaped inner loop
# against pure FMA chains on this core, which says how much of the peak a GEMM can reach before
# packing and cache traffic (x86-64 with AVX2 or AVX-512 only).
#
# Usage: bash ci/bench-gemm-kernel.sh [ROUNDS] [DIMS]   (defaults 5 and 2048; one thread)
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
rounds=${1:-5}
dims=${2:-2048}
target=${CARGO_TARGET_DIR:-target}
bin=${SCALEBENCH_BIN:-$target/release/scalebench}
[ -x "$bin" ] || cargo build --release --locked --bin scalebench
work=$(mktemp -d /tmp/scalebench-bench-gemm-kernel.XXXXXX)
trap 'rm -rf "$work"' EXIT

settings=(default Prescott)
grep -qw avx512f /proc/cpuinfo && settings+=(Haswell)

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; load: $(uptime | sed 's/.*load average: //')"
for r in $(seq "$rounds"); do
  for s in "${settings[@]}"; do
    if [ "$s" = default ]; then
      env -u OPENBLAS_CORETYPE "$bin" run -q --out "$work/$s-$r" -w matmul --gemm blas \
        --dtype f32,f64 --dims "$dims" --time-budget 1 > /dev/null
    else
      OPENBLAS_CORETYPE=$s "$bin" run -q --out "$work/$s-$r" -w matmul --gemm blas \
        --dtype f32,f64 --dims "$dims" --time-budget 1 > /dev/null
    fi
  done
done
echo "# load after: $(uptime | sed 's/.*load average: //')"

python3 - "$work" "$rounds" "$dims" "${settings[@]}" <<'PY'
import json, statistics, sys
work, rounds, dims, settings = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"# n = {dims}, 1 thread; medians of {rounds} alternating rounds")
print(f"{'setting':<10} {'type':<5} {'kernel':<10} {'GFLOP/s':>8} {'peak':>7} {'frac_peak':>9} {'range':>13} {'warned':>7} {'goal':>10} {'met':>4}")
missed = 0
for s in settings:
    for dt in ("f32", "f64"):
        rate, frac, bound, warned, kernel = [], [], [], [], set()
        for r in range(1, rounds + 1):
            d = json.load(open(f"{work}/{s}-{r}/results.json"))
            p = d["launches"][0]["provenance"]
            g = p.get("gemm") or {}
            kernel.add((g.get("version") or "?").split()[-3] if g.get("version") else "?")
            warned.append(any("OPENBLAS_CORETYPE" in w for w in p.get("warnings", [])))
            (c,) = [c for c in d["cases"] if c["params"]["dtype"] == dt and c["status"] == "ok"]
            (f,) = [f for f in c["peak"] if f["figure"] == "gflops"]
            rate.append(c["gflops"]); frac.append(f["frac_peak"]); bound.append(f["bound"])
        m = statistics.median(frac)
        if s == "default":
            goal, met = ">= 0.8", m >= 0.8 and not any(warned)
        else:
            goal, met = "<= 0.6", m <= 0.6 and all(warned)
        missed += not met
        w = "all" if all(warned) else ("none" if not any(warned) else "some")
        print(f"{s:<10} {dt:<5} {','.join(sorted(kernel)):<10} {statistics.median(rate):>8.1f} {statistics.median(bound):>7.1f} "
              f"{m:>9.3f} {min(frac):>6.3f}-{max(frac):.3f} {w:>7} {goal:>10} {'yes' if met else 'NO':>4}")
print("every goal met" if missed == 0 else f"{missed} goal(s) missed")
PY
if cc -O3 -march=native -o "$work/gemm_microkernel" csrc/gemm_microkernel.c 2> /dev/null; then
  echo "# the model (csrc/gemm_microkernel.c), CPU 0, 15 alternating rounds, thread CPU time:"
  taskset -c 0 "$work/gemm_microkernel" 15
else
  echo "# the model (csrc/gemm_microkernel.c) does not build here (x86-64 with AVX2 or AVX-512 only)"
fi
