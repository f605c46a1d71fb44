#!/usr/bin/env bash
# The CUDA backend end to end without a GPU: builds scalebench's stand-in CUDA libraries
# (standin/: CPU test doubles of libcuda, cuBLAS, NCCL and NVML) and runs `scalebench run
# --backend cuda` on them under real mpirun — pure (np=2, one device each), hybrid (np=1,
# 2 devices) and 2 processes x 2 devices; all six collectives x f32 f64 f16 bf16 i32 x
# sum prod min max avg x in/out-of-place x pipelined/isolated; matmul and batch_matmul (with
# the overlap pipeline); ddp_step (compute and communication streams ordered by events),
# pure and hybrid; NCCL's choices captured per case, NCCL_ALGO/NCCL_PROTO honoured and an
# unknown NCCL_ALGO refused; a small sweep and its report; the NCCL collectives bench once — every
# case validated, every result labelled as a stand-in's. Then a planted NCCL defect must be
# caught (exit 3).
#
# Uses $SCALEBENCH_BIN when set (ci/test.sh passes the binary its test step built with
# --all-features), else builds `--features cuda`. About 20 s on 2 busy cores (plus the build).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

step() { printf '\n== gpu-standin: %s ==\n' "$*"; }

target=${CARGO_TARGET_DIR:-target}
bin=${SCALEBENCH_BIN:-}
if [ -z "$bin" ]; then
  step "build --features cuda"
  cargo build --release --locked --features cuda
  bin=$target/release/scalebench
fi
step "stand-in libraries"
libs=$(bash standin/build.sh "$target/standin")
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SCALEBENCH_STANDIN=1
# NCCL's choices captured in every run here (opt-in: docs/nccl-capture.md).
export SCALEBENCH_NCCL_CAPTURE=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every case ok (in-place all-to-all skipped: NCCL has none), none wrong, at least $2 cases,
# and the launch labelled as a stand-in run.
validated() {
  python3 - "$1/results.json" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
cases, least = r["cases"], int(sys.argv[2])
bad = [c for c in cases if c["wrong"] or not (c["status"] == "ok" or (
    c["status"] == "skipped" and c["params"]["workload"] == "alltoall"
    and c["params"]["in_place"]))]
assert not bad, f"{len(bad)} case{'' if len(bad) == 1 else 's'} not valid, first: {bad[0]['id']} {bad[0]['status']} {bad[0].get('message')}"
assert len(cases) >= least, f"{len(cases)} cases, expected at least {least}"
for l in r["launches"]:
    assert l["provenance"]["backend"]["detail"].startswith("STAND-IN: "), "launch not labelled"
print(f"  {len(cases)} case{'' if len(cases) == 1 else 's'} validated, {sum(c['status'] == 'ok' for c in cases)} measured")
EOF
}

step "contract checks: each misuse aborts naming the call"
"$libs/contract-test"

mpi=(mpirun --oversubscribe -x LD_LIBRARY_PATH -x SCALEBENCH_STANDIN -x SCALEBENCH_NCCL_CAPTURE)
all=(-w allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall --sizes 1KiB,64KiB
     --dtype f32,f64,f16,bf16,i32 --op sum,prod,min,max,avg --in-place both
     -t pipelined,isolated -n 3 --warmup 1 -q)

step "pure: 2 processes x 1 device, every collective, type, operator, placement, timing"
"${mpi[@]}" -np 2 "$bin" run --backend cuda "${all[@]}" --out "$work/pure"
validated "$work/pure" 700

step "hybrid: 1 process x 2 devices (one NCCL group)"
"$bin" run --backend cuda --topology hybrid --devices-per-node 2 "${all[@]}" --out "$work/hybrid"
validated "$work/hybrid" 700

step "2 processes x 2 devices (each process its own block of stand-in devices)"
SCALEBENCH_STANDIN_DEVICES=4 "${mpi[@]}" -x SCALEBENCH_STANDIN_DEVICES -np 2 standin/gpus-per-rank.sh 2 \
  "$bin" run --backend cuda --topology hybrid --devices-per-node 2 --nodes 2 --emulate-nodes \
  "${all[@]}" --out "$work/2x2"
validated "$work/2x2" 700

step "NCCL capture: every collective case of the pure run records NCCL's algorithm and protocol"
python3 - "$work/pure/results.json" <<'EOF'
import json, sys
cases = [c for c in json.load(open(sys.argv[1]))["cases"] if c["status"] == "ok"]
# all-to-all is point-to-point: NCCL logs no choice for it
bad = [c["id"] for c in cases if c["params"]["workload"] != "alltoall"
       and not (c.get("nccl") and c["nccl"]["choices"])]
assert not bad, f"{len(bad)} case{'' if len(bad) == 1 else 's'} without NCCL's choice, first: {bad[0]}"
seen = {(x["algorithm"], x["protocol"]) for c in cases for x in (c.get("nccl") or {}).get("choices", [])}
print(f"  {len(cases)} case{'' if len(cases) == 1 else 's'}, choices seen: {sorted(seen)}")
EOF
NCCL_ALGO=ring NCCL_PROTO=LL128 "${mpi[@]}" -x NCCL_ALGO -x NCCL_PROTO -np 2 "$bin" run --backend cuda \
  -w allreduce --sizes 64KiB -n 3 --warmup 1 -q --out "$work/forced"
python3 - "$work/forced/results.json" <<'EOF'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
got = {(x["algorithm"], x["protocol"]) for c in cases for x in c["nccl"]["choices"]}
assert got == {("Ring", "LL128")}, got
print(f"  NCCL_ALGO=ring NCCL_PROTO=LL128 ran {sorted(got)}")
EOF
set +e
NCCL_ALGO=bogus "${mpi[@]}" -x NCCL_ALGO -np 2 "$bin" run --backend cuda -w allreduce --sizes 1KiB -n 2 -q \
  --out "$work/bogus" 2>/dev/null
code=$?
set -e
[ "$code" = 4 ] || { echo "NCCL_ALGO=bogus exited $code, not 4"; exit 1; }
echo "  NCCL_ALGO=bogus refused (exit 4)"

step "matmul and batch_matmul (copies overlapped with GEMMs), 1 and 2 processes"
gemm=(-w matmul,batch_matmul --dims 64 --batch 4 --dtype f32,f64,f16,bf16 -t pipelined,isolated -n 3 --warmup 1 -q)
"$bin" run --backend cuda "${gemm[@]}" --out "$work/gemm1"
validated "$work/gemm1" 16
"${mpi[@]}" -np 2 "$bin" run --backend cuda "${gemm[@]}" --out "$work/gemm2"
validated "$work/gemm2" 16

step "ddp_step: GEMMs on a compute stream, each bucket's all-reduce on a communication stream after an event (pure np=2, hybrid 1 x 2, 2 x 2)"
ddp=(-w ddp_step --model 64x48x3+200x40 --bucket-size 1B,16KiB,1MiB --first-bucket 0B,1MiB --batch 8
     --dtype f32,f64 -n 2 --warmup 1 -q)
"${mpi[@]}" -np 2 "$bin" run --backend cuda "${ddp[@]}" --out "$work/ddp-pure"
validated "$work/ddp-pure" 12
"$bin" run --backend cuda --topology hybrid --devices-per-node 2 "${ddp[@]}" --out "$work/ddp-hybrid"
validated "$work/ddp-hybrid" 12
SCALEBENCH_STANDIN_DEVICES=4 "${mpi[@]}" -x SCALEBENCH_STANDIN_DEVICES -np 2 standin/gpus-per-rank.sh 2 \
  "$bin" run --backend cuda --topology hybrid --devices-per-node 2 --nodes 2 --emulate-nodes \
  "${ddp[@]}" --out "$work/ddp-2x2"
validated "$work/ddp-2x2" 12

step "a small sweep and its report"
"$bin" sweep standin/sweep.toml -q --out "$work/sweep"
validated "$work/sweep" 20
"$bin" report "$work/sweep" --out "$work/report" --format html,md,csv
grep -q "Stand-in devices, not GPUs." "$work/report/report.md"
echo "  report labelled: $work/report/report.md"

step "the NCCL collectives bench (hybrid, 2 devices), each benchmark run once"
# compiles the bench profile that ci/test.sh's bench step needs next anyway
cargo bench --locked --all-features --bench collectives -- --test collectives_nccl | grep -E "STAND-IN|Success" | sort | uniq -c

step "a planted NCCL defect must be caught (wrong > 0, exit 3)"
set +e
SCALEBENCH_STANDIN_DEFECT=corrupt "${mpi[@]}" -x SCALEBENCH_STANDIN_DEFECT -np 2 "$bin" run --backend cuda \
  -w allreduce,reduce_scatter,alltoall --sizes 4KiB --in-place no -n 3 --warmup 1 -q --out "$work/defect"
code=$?
set -e
[ "$code" = 3 ] || { echo "the planted defect exited $code, not 3"; exit 1; }
set +e
SCALEBENCH_STANDIN_DEFECT=corrupt "${mpi[@]}" -x SCALEBENCH_STANDIN_DEFECT -np 2 "$bin" run --backend cuda \
  -w ddp_step --model 64x48x3+200x40 --bucket-size 16KiB --batch 8 -n 2 --warmup 1 -q --out "$work/defect-ddp"
code=$?
set -e
[ "$code" = 3 ] || { echo "the planted defect under ddp_step exited $code, not 3"; exit 1; }
python3 - "$work/defect/results.json" "$work/defect-ddp/results.json" <<'EOF'
import json, sys
cases = [c for f in sys.argv[1:] for c in json.load(open(f))["cases"]]
assert cases and all(c["wrong"] > 0 for c in cases), "a case missed the planted defect"
print(f"  caught in all {len(cases)} case{'' if len(cases) == 1 else 's'}")
EOF
step "ok"
