#!/usr/bin/env bash
# The ROCm backend end to end without an AMD GPU: builds scalebench's stand-in libraries
# (standin/: CPU test doubles; here libamdhip64.so, the HIP runtime, librccl.so, RCCL, and
# librocblas.so, rocBLAS, and libamd_smi.so, AMD SMI) and
# runs `scalebench run --backend rocm` on them under real mpirun — pure (np=2, one GCD each),
# hybrid (np=1, 2 GCDs; np=1, 8 GCDs: a LUMI node) and 2 processes x 2 GCDs (with AMD SMI
# telemetry per GCD, matched by PCI address); all six collectives x f32 f64 f16 bf16 i32 x
# sum prod min max avg x in/out-of-place x pipelined/isolated — every case validated, every
# result labelled as a stand-in's and recorded as backend rocm; then matmul and batch_matmul in
# f32 f64 f16 bf16 through rocBLAS, pure and hybrid, and ddp_step (all-reduces on a
# communication stream after HIP events), validated the same way. Then a planted RCCL defect
# (collectives and ddp_step) and a planted GEMM defect must be caught (exit 3), and a missing
# HIP runtime, a missing rocBLAS and two ranks on one GCD refused (exit 2); the stand-ins'
# contract test must pass.
#
# Uses $SCALEBENCH_BIN when set (ci/test.sh passes the binary its test step built with
# --all-features), else builds `--features rocm`.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

step() { printf '\n== rocm-standin: %s ==\n' "$*"; }

target=${CARGO_TARGET_DIR:-target}
bin=${SCALEBENCH_BIN:-}
if [ -z "$bin" ]; then
  step "build --features rocm"
  cargo build --release --locked --features rocm
  bin=$target/release/scalebench
fi
step "stand-in libraries"
libs=$(bash standin/build.sh "$target/standin")
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SCALEBENCH_STANDIN=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every case ok (in-place all-to-all skipped: RCCL has none), none wrong, at least $2 cases,
# backend rocm, and the launch labelled as a stand-in run.
validated() {
  python3 - "$1/results.json" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cases, least = r["cases"], int(sys.argv[2])
bad = [c for c in cases if c["wrong"] or not (c["status"] == "ok" or (
    c["status"] == "skipped" and c["params"]["workload"] == "alltoall"
    and c["params"]["in_place"]))]
assert not bad, f"{len(bad)} case{'' if len(bad) == 1 else 's'} not valid, first: {bad[0]['id']} {bad[0]['status']} {bad[0].get('message')}"
assert len(cases) >= least, f"{len(cases)} cases, expected at least {least}"
for c in cases:
    assert c["params"]["backend"] == "rocm", c["params"]["backend"]
for l in r["launches"]:
    b = l["provenance"]["backend"]
    assert b["kind"] == "rocm", b["kind"]
    assert b["detail"].startswith("STAND-IN: "), "launch not labelled"
print(f"  {len(cases)} case{'' if len(cases) == 1 else 's'} validated, {sum(c['status'] == 'ok' for c in cases)} measured")
PY
}

mpi=(mpirun --oversubscribe -x LD_LIBRARY_PATH -x SCALEBENCH_STANDIN)
all=(-w allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall --sizes 1KiB,64KiB
     --dtype f32,f64,f16,bf16,i32 --op sum,prod,min,max,avg --in-place both
     -t pipelined,isolated -n 3 --warmup 1 -q)

step "pure: 2 processes x 1 GCD, every collective, type, operator, placement, timing"
"${mpi[@]}" -np 2 "$bin" run --backend rocm "${all[@]}" --out "$work/pure"
validated "$work/pure" 700

step "hybrid: 1 process x 2 GCDs (one RCCL group)"
"$bin" run --backend rocm --topology hybrid --devices-per-node 2 "${all[@]}" --out "$work/hybrid"
validated "$work/hybrid" 700

step "hybrid: 1 process x 8 GCDs (a whole LUMI node, one RCCL group)"
SCALEBENCH_STANDIN_DEVICES=8 "$bin" run --backend rocm --topology hybrid --devices-per-node 8 \
  -w allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall --sizes 256 \
  --dtype f32,f64,f16,bf16,i32 --op sum,prod,min,max,avg --in-place both \
  -t pipelined,isolated -n 2 --warmup 1 -q --out "$work/hybrid8"
validated "$work/hybrid8" 350

step "2 processes x 2 GCDs (each process its own block of stand-in devices)"
SCALEBENCH_STANDIN_DEVICES=4 "${mpi[@]}" -x SCALEBENCH_STANDIN_DEVICES -np 2 standin/gpus-per-rank.sh 2 \
  "$bin" run --backend rocm --topology hybrid --devices-per-node 2 --nodes 2 --emulate-nodes \
  "${all[@]}" --out "$work/2x2"
validated "$work/2x2" 700
# AMD SMI telemetry per GCD, matched by PCI address: the stand-in reads 40 °C and 100 W (its
# socket power, in AMD SMI 24.6's layout) + the device's index, and rank 1's HIP ordinals 0
# and 1 are devices 2 and 3.
python3 - "$work/2x2/results.json" <<'PY'
import json, sys
cases = [c for c in json.load(open(sys.argv[1]))["cases"] if c["status"] == "ok"]
for c in cases:
    t = sorted(c.get("telemetry", []), key=lambda t: t["device"])
    assert [x["device"] for x in t] == [0, 1, 2, 3], (c["id"], t)
    for x in t:
        assert x.get("temperature_c_max") == 40 + x["device"], (c["id"], x)
        assert x.get("power_w_max") == 100 + x["device"], (c["id"], x)
        assert x.get("power_scope") == "socket", (c["id"], x)
print(f"  telemetry of 4 GCDs in each of {len(cases)} cases (temperature, socket power), each GCD read at its own address")
PY

step "two ranks on one GCD: refused with one sentence, exit 2"
code=0
err=$(SCALEBENCH_STANDIN_DEVICES=1 "${mpi[@]}" -x SCALEBENCH_STANDIN_DEVICES -np 2 "$bin" run --backend rocm \
  --topology hybrid --devices-per-node 1 --nodes 2 --emulate-nodes -w allreduce --sizes 4KiB -q \
  --out "$work/shared" 2>&1) || code=$?
[ "$code" = 2 ] || { echo "two ranks on one GCD exited $code, not 2: $err"; exit 1; }
grep -q "ranks 0 and 1 both drive GCD fffe:5b:00.0" <<<"$err" || { echo "not refused by address: $err"; exit 1; }

step "the ROCm stand-ins' contract checks (each misuse aborts naming the call)"
"$libs/hip-contract-test"

gemm=(-w matmul,batch_matmul --dims 64 --batch 3 --dtype f32,f64,f16,bf16 -n 3 --warmup 1 -q)

step "GEMMs through rocBLAS: 2 processes x 1 GCD"
"${mpi[@]}" -np 2 "$bin" run --backend rocm "${gemm[@]}" --out "$work/gemm-pure"
validated "$work/gemm-pure" 8

step "GEMMs through rocBLAS: 1 process x 2 GCDs (a rocBLAS handle per GCD)"
"$bin" run --backend rocm --topology hybrid --devices-per-node 2 "${gemm[@]}" --out "$work/gemm-hybrid"
validated "$work/gemm-hybrid" 8

ddp=(-w ddp_step --model 64x48x3+200x40 --bucket-size 1B,16KiB,1MiB --first-bucket 0B --batch 8
     --dtype f32,f64 -n 3 --warmup 1 -q)

step "ddp_step: 2 processes x 1 GCD, all-reduces on a communication stream"
"${mpi[@]}" -np 2 "$bin" run --backend rocm "${ddp[@]}" --out "$work/ddp-pure"
validated "$work/ddp-pure" 6

step "ddp_step: 1 process x 2 GCDs (one RCCL group on the communication streams)"
"$bin" run --backend rocm --topology hybrid --devices-per-node 2 "${ddp[@]}" --out "$work/ddp-hybrid"
validated "$work/ddp-hybrid" 6

step "a planted RCCL defect must be caught (wrong > 0, exit 3)"
code=0
SCALEBENCH_STANDIN_DEFECT=corrupt "${mpi[@]}" -x SCALEBENCH_STANDIN_DEFECT -np 2 "$bin" run --backend rocm \
  -w allreduce,reduce_scatter,alltoall --sizes 4KiB --in-place no -n 3 --warmup 1 -q --out "$work/defect" || code=$?
[ "$code" = 3 ] || { echo "the planted defect exited $code, not 3"; exit 1; }
python3 - "$work/defect/results.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
assert cases and all(c["wrong"] > 0 for c in cases), "a case missed the planted defect"
print(f"  {len(cases)} case{'' if len(cases) == 1 else 's'}, every one caught")
PY
code=0
SCALEBENCH_STANDIN_DEFECT=corrupt "${mpi[@]}" -x SCALEBENCH_STANDIN_DEFECT -np 2 "$bin" run --backend rocm \
  -w ddp_step --model 64x48x3+200x40 --bucket-size 16KiB --batch 8 -n 2 --warmup 1 -q --out "$work/defect-ddp" || code=$?
[ "$code" = 3 ] || { echo "the planted defect under ddp_step exited $code, not 3"; exit 1; }
python3 - "$work/defect-ddp/results.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
assert cases and all(c["wrong"] > 0 for c in cases), "ddp_step missed the planted defect"
print("  ddp_step: caught")
PY

step "a planted GEMM defect (one wrong element in every rocBLAS product) must be caught (exit 3)"
code=0
SCALEBENCH_STANDIN_DEFECT=gemm "${mpi[@]}" -x SCALEBENCH_STANDIN_DEFECT -np 2 "$bin" run --backend rocm \
  -w matmul,batch_matmul --dims 32 --batch 2 --dtype f32,bf16 -n 2 --warmup 1 -q --out "$work/defect-gemm" || code=$?
[ "$code" = 3 ] || { echo "the planted GEMM defect exited $code, not 3"; exit 1; }
python3 - "$work/defect-gemm/results.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
assert len(cases) == 4 and all(c["wrong"] > 0 for c in cases), "a GEMM case missed the planted defect"
print(f"  {len(cases)} cases, every one caught")
PY

step "no HIP runtime on the library path: one sentence naming libamdhip64.so, exit 2"
code=0
err=$(LD_LIBRARY_PATH= "$bin" run --backend rocm -w allreduce --sizes 4KiB -q --out "$work/nolib" 2>&1) || code=$?
[ "$code" = 2 ] || { echo "a missing HIP runtime exited $code, not 2: $err"; exit 1; }
grep -q "libamdhip64.so" <<<"$err" || { echo "libamdhip64.so not named: $err"; exit 1; }
! grep -q panicked <<<"$err" || { echo "panic: $err"; exit 1; }

step "no rocBLAS on the library path: a GEMM is one sentence naming librocblas.so, exit 2"
mkdir -p "$work/no-rocblas"
cp "$libs/libamdhip64.so" "$libs/librccl.so" "$work/no-rocblas/"
code=0
err=$(LD_LIBRARY_PATH="$work/no-rocblas" "$bin" run --backend rocm -w matmul --dims 32 -q --out "$work/norocblas" 2>&1) || code=$?
[ "$code" = 2 ] || { echo "a missing rocBLAS exited $code, not 2: $err"; exit 1; }
grep -q "no rocBLAS found: librocblas.so" <<<"$err" || { echo "librocblas.so not named: $err"; exit 1; }
! grep -q panicked <<<"$err" || { echo "panic: $err"; exit 1; }

echo "rocm-standin: all checks passed"
