#!/usr/bin/env bash
# GEMM against the CPU's measured ceiling, with the library's own kernel and with one forced
# older (not part of CI's pass/fail): `scalebench ceilings --json` measures the FMA peak of one
# CPU at the best instruction set; `scalebench run -w matmul --gemm blas --threads-per-device 1`
# measures GEMM at n = 2048, f32 and f64, once as the library picks its kernel and once with
# OPENBLAS_CORETYPE forcing an older one (FORCED, default Sandybridge: AVX without FMA).
# ROUNDS rounds alternate the two and re-measure the ceiling each round; the table shows
# medians, each GEMM as a fraction of the ceiling measured in its round (frac_peak), and
# whether the forced run was warned about. Targets (issue 28): own kernel frac_peak >= 0.8,
# forced <= 0.6 with a warning naming the variable. Also the start-up cost of the ceilings a
# launch would measure (`--best-only`; goal <= 0.5 s).
# Usage: bash ci/bench-ceilings.sh [ROUNDS] [FORCED]   (default 3, Sandybridge)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh
rounds=${1:-3}
forced=${2:-Sandybridge}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked --bin scalebench
bin="$target/release/scalebench"
work=$(mktemp -d /tmp/scalebench-bench-ceilings.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
gemm() {  # OUT [ENV...]
  local out=$1; shift
  env "$@" "$bin" run -q --out "$work/$out" -w matmul --gemm blas --dtype f32,f64 --dims 2048 \
    --threads-per-device 1 --binding core > /dev/null
}
for r in $(seq 1 "$rounds"); do
  "$bin" ceilings --json --no-stream > "$work/ceil-$r.json"
  s=$(date +%s.%N); "$bin" ceilings --json --best-only > "$work/startup-$r.json"; e=$(date +%s.%N)
  echo "$s $e" > "$work/startup-$r.time"
  gemm "own-$r"
  gemm "forced-$r" OPENBLAS_CORETYPE="$forced"
done
python3 - "$work" "$rounds" "$forced" <<'PY'
import json, statistics, sys
work, rounds, forced = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows, startup = {}, []
for r in range(1, rounds + 1):
    ceil = json.load(open(f"{work}/ceil-{r}.json"))
    s, e = map(float, open(f"{work}/startup-{r}.time").read().split())
    startup.append(e - s)
    # the best instruction set's one-CPU peak per precision: the most one thread can do
    peak = {}
    for c in ceil["ceilings"]:
        parts = c["id"].split(".")
        if parts[:2] == ["cpu", "peak"] and parts[-1] == "one_cpu" and c["value"]:
            peak[parts[2]] = max(peak.get(parts[2], 0), c["value"])
    for side in ("own", "forced"):
        d = json.load(open(f"{work}/{side}-{r}/results.json"))
        warned = any("OPENBLAS_CORETYPE" in w for l in d["launches"] for w in (l.get("provenance") or {}).get("warnings", []))
        for c in d["cases"]:
            if c["status"] != "ok":
                continue
            dt = c["params"]["dtype"]
            rows.setdefault((side, dt), []).append((c["gflops"], c["gflops"] / peak[dt], peak[dt], warned))
print(f"# CPU: {ceil['cpu_model']}, CPUs offered {ceil['cpus']}; GEMM library: {ceil.get('gemm_library')}, kernel {ceil.get('gemm_kernel')}")
print(f"# {rounds} rounds alternating; medians. forced = OPENBLAS_CORETYPE={forced}")
print(f"{'side':8} {'dtype':5} {'GFLOP/s':>9} {'peak 1 CPU':>11} {'frac_peak':>10} {'warned':>7}")
for (side, dt), v in sorted(rows.items()):
    g = statistics.median(x[0] for x in v); f = statistics.median(x[1] for x in v); p = statistics.median(x[2] for x in v)
    print(f"{side:8} {dt:5} {g:9.1f} {p:11.1f} {f:10.2f} {str(all(x[3] for x in v)):>7}")
print(f"start-up cost of a launch's ceilings (--best-only, incl. process start): median {statistics.median(startup):.2f} s, max {max(startup):.2f} s")
PY
