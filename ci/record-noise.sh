#!/usr/bin/env bash
# Records the corpus of real noise under tests/fixtures/noise/ (docs/compare.md, issue 46):
# RUNS unchanged runs of one small study (2 ranks, pure MPI), interleaved with PLANTED runs
# of each planted true change (Open MPI knobs passed to mpirun, never an edit of
# scalebench) and, for the first SETUPS rounds, the same study in two more set-ups (hybrid:
# one rank driving 2 devices; single: one device) for the report's winners and scaling.
# Every run is a fresh mpirun of the release binary. Keeps only each run's results.json, gzipped, and
# appends one line per run to the corpus's index (tests/fixtures/noise/runs.tsv): the kind,
# the file, the UTC start, the load average when the run started, the mpirun arguments.
# Record it on the host whose noise you want (loaded: other jobs running; idle: nothing else)
# and say which in the README beside it.
#
#   bash ci/record-noise.sh                      # RUNS=32 PLANTED=8 into tests/fixtures/noise
#   RUNS=10 PLANTED=4 OUT=/tmp/noise bash ci/record-noise.sh
# Environment: SCALEBENCH_BIN (default: cargo build --release), RUNS, PLANTED, OUT, LABEL
# (a prefix for the file names, default "loaded"), SETUPS. About 1 s per run on a 2-core host.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

runs=${RUNS:-32}
planted=${PLANTED:-8}
setups=${SETUPS:-12}
out=${OUT:-tests/fixtures/noise}
label=${LABEL:-loaded}

if [ -z "${SCALEBENCH_BIN:-}" ]; then
  cargo build --release --locked --all-features --bin scalebench
  SCALEBENCH_BIN=${CARGO_TARGET_DIR:-target}/release/scalebench
fi
bin=$SCALEBENCH_BIN

# The study: two collectives over 8 B – 1 MiB (isolated calls, OSU's way), a GEMM and a
# ddp_step; few iterations so that one run takes seconds and its file stays small.
study=(-q --no-ceilings -w allreduce,broadcast,matmul,ddp_step --timing isolated
  --sizes 8B:1MiB:x4 --in-place no --dims 128 --model mlp-tiny --iters 60 --warmup 10)
declare -A knobs=(
  [no_single_copy]="--mca btl_vader_single_copy_mechanism none"
  [tcp]="--mca btl tcp,self --mca btl_tcp_if_include lo"
)

mkdir -p "$out"
index=$out/runs.tsv
[ -f "$index" ] || printf 'kind\tfile\tstarted_utc\tload_1m_5m_15m\tmpirun_args\n' >"$index"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() { # kind file ranks "run-args" mpirun-args...
  local kind=$1 file=$2 np=$3 extra=$4
  shift 4
  local started load
  started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  rm -rf "$tmp/run"
  # shellcheck disable=SC2068 # the knob's words are separate mpirun arguments
  # shellcheck disable=SC2086 # as are the extra run arguments
  timeout -k 5 300 mpirun -np "$np" $@ "$bin" run --out "$tmp/run" "${study[@]}" $extra >/dev/null
  gzip -9 -n -c "$tmp/run/results.json" >"$out/$file"
  printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$file" "$started" "$load" "-np $np $* (run $extra)" >>"$index"
  echo "record-noise: $file (load $load)" >&2
}

# Interleaved: a planted run every few unchanged ones, so both kinds see the same load.
every=$(((runs + planted - 1) / planted))
k=0
for ((i = 1; i <= runs; i++)); do
  measure unchanged "$label-aa-$i.json.gz" 2 ""
  if ((i <= setups)); then
    measure hybrid "$label-hybrid-$i.json.gz" 1 "--topology hybrid --devices-per-node 2"
    measure single "$label-single-$i.json.gz" 1 ""
  fi
  if ((i % every == 0 && k < planted)); then
    k=$((k + 1))
    for knob in "${!knobs[@]}"; do
      # shellcheck disable=SC2086
      measure "$knob" "$label-$knob-$k.json.gz" 2 "" ${knobs[$knob]}
    done
  fi
done
while ((k < planted)); do
  k=$((k + 1))
  for knob in "${!knobs[@]}"; do
    # shellcheck disable=SC2086
    measure "$knob" "$label-$knob-$k.json.gz" 2 "" ${knobs[$knob]}
  done
done
du -sh "$out" >&2
