#!/usr/bin/env bash
# ci/device-check.sh OUT [--dry-run]: the one device check for a one-GPU machine lent for
# 15 minutes in all (about 3 to start it): one call, under 8 minutes, steps ordered by the value
# of their answer. Every step runs under `timeout`; after every step OUT/summary.md (and .tsv)
# and OUT.tgz (all of OUT) are written again, so a call cut off returns all that ran.
#
#   1 facts        driver, GPU, clocks, power limit, NCCL/cuBLAS found, the binary's features
#   2 gemm         the f16/bf16 GEMM question, like-for-like: scalebench matmul against PyTorch
#                  with the same operand distribution (uniform [-1, 1)), each of torch.mm
#                  (cublasGemmEx), torch.bmm batch 1 (strided batched, scalebench's entry point)
#                  and cuBLASLt preferred; clocks, power and throttle reasons sampled by nvidia-smi
#                  beside every run; one cuBLAS/cuBLASLt-logged run per side names the kernels
#   3 small        all-reduce 8 B - 4 MiB in pipelined, isolated and graph modes against
#                  nccl-tests (-n/-w; -z 1 blocking; -G), telemetry off, both tools on one core
#                  (taskset), 3 alternating rounds; a difference is claimed only beyond either
#                  tool's own spread (small-summary.txt)
#   4 ceilings     NVML's ceilings beside nvidia-smi's, a measured HBM copy and pinned PCIe copy
#   5 ddp          ddp_step on the GPU, validated
#   6 refusals     what the real libraries must refuse: two ranks on one GPU (NCCL since 2.5),
#                  graph timing where capture is not supported
#
# A step whose needs are missing says "skipped" and why (no GPU, no PyTorch, no nccl-tests
# source, a binary without the cuda feature); with --dry-run, or on a machine without an NVIDIA
# driver, every GPU step is skipped with its reason and the script still exits 0 with the
# summary and tarball written (tests/integration/scripts.rs runs it so in CI).
#
# Environment: SCALEBENCH_BIN (default .dev/bin/scalebench from ci/device-bundle.sh, else
# target/release/scalebench); NCCL_TESTS_SRC (a checkout of NVIDIA/nccl-tests carried in the
# tree); STEP_SCALE (multiplies every step's time limit; default 1).
set -uo pipefail
usage="usage: ci/device-check.sh OUT [--dry-run]"
out=${1:?$usage}
dry=0
case "${2:-}" in
  --dry-run) dry=1 ;;
  "") ;;
  *) echo "ci/device-check.sh: unknown option '$2' ($usage)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
tarball="$out.tgz"
scale=${STEP_SCALE:-1}
t0=$SECONDS
: >"$out/summary.tsv"

bin=${SCALEBENCH_BIN:-}
if [ -z "$bin" ]; then
  if [ -x "$root/.dev/bin/scalebench" ]; then bin=$root/.dev/bin/scalebench; else bin=$root/target/release/scalebench; fi
fi
[ -f "$root/.dev/env.sh" ] && [ "$bin" = "$root/.dev/bin/scalebench" ] && source "$root/.dev/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# What the machine offers; each missing piece is the reason a step is skipped.
have_gpu="" have_bin="" have_cuda="" have_torch="" have_nt=""
if [ "$dry" = 1 ]; then
  have_gpu="dry run (--dry-run): nothing is run on a GPU"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  have_gpu="no NVIDIA driver on this machine (nvidia-smi not found)"
elif ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  have_gpu="nvidia-smi lists no GPU"
fi
if [ ! -x "$bin" ]; then
  have_bin="no scalebench binary at $bin (build it, or run ci/device-bundle.sh and carry .dev)"
  have_cuda=$have_bin
elif ! "$bin" --version 2>/dev/null | grep -q 'features.*cuda'; then
  have_cuda="$bin was built without the cuda feature ($("$bin" --version 2>/dev/null | head -n 1))"
fi
python3 -c 'import torch' >/dev/null 2>&1 || have_torch="no PyTorch for python3 (the GEMM reference)"
[ -n "${NCCL_TESTS_SRC:-}" ] && [ -d "${NCCL_TESTS_SRC:-}/src" ] ||
  have_nt="no nccl-tests source (set NCCL_TESTS_SRC to a checkout carried in the tree)"
command -v nvcc >/dev/null 2>&1 || have_nt=${have_nt:-"no nvcc to build nccl-tests"}

# need REASONS...: the first non-empty reason, or nothing when every need is met.
need() { local r; for r in "$@"; do [ -n "$r" ] && { printf '%s' "$r"; return; }; done; }

summarize() {
  {
    echo "# Device check ($(date -u +%FT%TZ), $((SECONDS - t0)) s so far)"
    echo
    echo "binary: $bin"
    [ "$dry" = 1 ] && echo "DRY RUN: no GPU step ran; every skipped step names its reason."
    echo
    echo "| step | status | seconds | note |"
    echo "|---|---|---|---|"
    awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}' "$out/summary.tsv"
    for f in "$out"/gemm-summary.txt "$out"/small-summary.txt; do
      [ -s "$f" ] && { echo; echo "## $(basename "$f")"; echo; echo '```'; cat "$f"; echo '```'; }
    done
  } >"$out/summary.md"
  # Written beside OUT under a temporary name, then renamed: a reader never sees half a tarball.
  tar czf "$tarball.part" -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null && mv -f "$tarball.part" "$tarball"
}

# step NAME LIMIT_S SKIP_REASON CMD...: CMD under `timeout` with its output in OUT/NAME.log.
step() {
  local name=$1 limit=$2 skip=$3 s=$SECONDS rc status note
  shift 3
  limit=$(awk -v l="$limit" -v k="$scale" 'BEGIN { printf "%d", l * k }')
  printf '\n== %s (t=%ss, limit %ss) ==\n' "$name" "$((SECONDS - t0))" "$limit"
  if [ -n "$skip" ]; then
    status=skipped note=$skip
    echo "skipped: $skip" | tee "$out/$name.log"
  else
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    case $rc in
      0) status=ok note="" ;;
      124 | 137) status=timeout note="ended at its limit of ${limit} s" ;;
      *) status=failed note="exit $rc" ;;
    esac
    tail -n "${TAIL:-12}" "$out/$name.log" | cut -c1-220
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - s))" "$(printf '%s' "$note" | tr '\t\n|' '   ')" >>"$out/summary.tsv"
  printf -- '-- %s: %s in %ss\n' "$name" "$status" "$((SECONDS - s))"
  summarize
}

# NCCL and cuBLAS under the names cudarc opens, found where CUDA images keep them.
find_libs() {
  local links roots=(/usr/local/cuda /usr/local/cuda-* /usr/lib/x86_64-linux-gnu /opt) p
  links=$(mktemp -d)
  while IFS= read -r p; do roots+=("$p/nvidia"); done < <(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
  nccl=$(find "${roots[@]}" -name 'libnccl.so.2' \( -type f -o -type l \) 2>/dev/null | head -n 1)
  cublas=$(find "${roots[@]}" -name 'libcublas.so.1[0-9]' \( -type f -o -type l \) 2>/dev/null | head -n 1)
  [ -n "$nccl" ] && ln -sf "$nccl" "$links/libnccl.so"
  [ -n "$cublas" ] && ln -sf "$cublas" "$links/libcublas.so"
  local dirs=$links l
  for l in "$nccl" "$cublas"; do [ -n "$l" ] && dirs+=":$(dirname "$l")"; done
  export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
nccl="" cublas=""
[ -z "$have_gpu" ] && find_libs

# nccl-tests built in the background from the start (the build is not timed; ~1-2 min).
nt=""
if [ -z "$have_gpu" ] && [ -z "$have_nt" ] && [ -n "$nccl" ]; then
  (
    home=$(mktemp -d)
    mkdir -p "$home/lib"
    ln -s "$(dirname "$(dirname "$nccl")")/include" "$home/include"
    ln -s "$nccl" "$home/lib/libnccl.so"
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
    make -C "$NCCL_TESTS_SRC/src" -j "$(nproc)" build BUILDDIR="$out/nccl-tests" MPI=0 \
      CUDA_HOME="$(dirname "$(dirname "$(command -v nvcc)")")" NCCL_HOME="$home" \
      NVCC_GENCODE="-gencode=arch=compute_$cc,code=sm_$cc" BIN_FILES_LIST="all_reduce" \
      >"$out/nccl-tests-build.log" 2>&1
    echo $? >"$out/nccl-tests-build.rc"
  ) &
  nt_builder=$!
  nt=$out/nccl-tests/all_reduce_perf
fi

facts() {
  uname -a
  grep -E '^PRETTY_NAME=' /etc/os-release
  lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|L3'
  nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id,compute_cap,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max,pcie.link.width.max --format=csv
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE | head -n 80
  echo "nccl: ${nccl:-none}"
  echo "cublas: ${cublas:-none}"
  "$bin" --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cublas via", torch.backends.cuda.preferred_blas_library())' 2>&1
}

# Clocks, power and throttle reasons every 200 ms while CMD runs, into OUT/NAME.gpu.csv.
with_gpu_log() {
  local name=$1 logger rc
  shift
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 200 >"$out/$name.gpu.csv" 2>&1 &
  logger=$!
  "$@"
  rc=$?
  kill "$logger" 2>/dev/null
  wait "$logger" 2>/dev/null
  return $rc
}

# The GEMM question: scalebench's matmul (cublasGemmStridedBatchedEx, batch 1, operands uniform
# in [-1, 1)) against PyTorch with the same operands through three entry points, alternating.
gemm() {
  local r entry
  for r in 1 2; do
    with_gpu_log "gemm-sb-$r" "$bin" run --backend cuda -w matmul --dims 4096 --dtype f16,bf16,f32 \
      --no-ceilings -q --out "$out/gemm-sb-$r" || echo "scalebench round $r: rc $?"
    for entry in mm bmm lt; do
      with_gpu_log "gemm-torch-$entry-$r" python3 "$here/gpu-node-torch.py" 4096 f16,bf16,f32 \
        --dist sym --entry "$entry" --gpu-log >"$out/gemm-torch-$entry-$r.csv" || echo "torch $entry round $r: rc $?"
    done
  done
  # One short logged run a side: cuBLAS's and cuBLASLt's own logs name the kernels each ran.
  CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG="$out/cublas-sb.log" CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$out/cublaslt-sb.log" \
    "$bin" run --backend cuda -w matmul --dims 4096 --dtype bf16 -n 3 --warmup 1 --no-ceilings -q --out "$out/gemm-sb-logged" >/dev/null 2>&1
  for entry in mm lt; do
    CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG="$out/cublas-torch-$entry.log" CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$out/cublaslt-torch-$entry.log" \
      python3 "$here/gpu-node-torch.py" 4096 bf16 --batches 2 --dist sym --entry "$entry" >/dev/null 2>&1
  done
  python3 "$here/device-summary.py" gemm "$out" | tee "$out/gemm-summary.txt"
}

# Small messages in the three timing modes, both tools pinned to one core, telemetry off.
small() {
  local r core
  core=$(($(nproc) > 1 ? 1 : 0))
  if [ -n "$nt" ]; then
    wait "$nt_builder"
    [ "$(cat "$out/nccl-tests-build.rc" 2>/dev/null)" = 0 ] || { echo "nccl-tests did not build: see nccl-tests-build.log"; nt=""; }
  fi
  local graph=pipelined
  # Graph timing where the binary has it; otherwise the row says it was not run.
  "$bin" run --help 2>/dev/null | grep -q 'graph' && graph=graph
  for r in 1 2 3; do
    SCALEBENCH_TELEMETRY=0 taskset -c "$core" "$bin" run --backend cuda -w allreduce --sizes 8B:4MiB:x4 \
      --in-place no -t pipelined,isolated -n 100 --warmup 20 --no-ceilings -q --out "$out/small-sb-$r" || echo "sb round $r: rc $?"
    if [ "$graph" = graph ]; then
      SCALEBENCH_TELEMETRY=0 taskset -c "$core" "$bin" run --backend cuda -w allreduce --sizes 8B:4MiB:x4 \
        --in-place no -t graph -n 100 --warmup 20 --no-ceilings -q --out "$out/small-sb-graph-$r" || echo "sb graph round $r: rc $?"
    fi
    if [ -n "$nt" ]; then
      taskset -c "$core" "$nt" -b 8 -e 4M -f 4 -g 1 -n 100 -w 20 -c 0 >"$out/small-nt-pipelined-$r.txt" 2>&1
      taskset -c "$core" "$nt" -b 8 -e 4M -f 4 -g 1 -n 100 -w 20 -c 0 -z 1 >"$out/small-nt-blocking-$r.txt" 2>&1
      taskset -c "$core" "$nt" -b 8 -e 4M -f 4 -g 1 -n 100 -w 20 -c 0 -G 1 >"$out/small-nt-graph-$r.txt" 2>&1
    fi
  done
  [ "$graph" = graph ] || echo "this binary has no --timing graph: graph rows are nccl-tests' alone"
  python3 "$here/device-summary.py" small "$out" | tee "$out/small-summary.txt"
}

ceilings() {
  nvidia-smi --query-gpu=name,memory.total,clocks.max.mem,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current --format=csv
  "$bin" ceilings --json
  # The measured HBM copy (a device-to-device all-gather of one rank is a copy) and the pinned
  # PCIe copies batch_matmul makes, read from their cases beside the NVML bounds they carry.
  SCALEBENCH_TELEMETRY=0 "$bin" run --backend cuda -w allgather --sizes 1GiB --in-place no -n 20 --warmup 3 -q --out "$out/ceilings-copy"
  "$bin" run --backend cuda -w batch_matmul --dims 4096 --batch 8 --dtype bf16 -q --out "$out/ceilings-pcie"
}

refusals() {
  local rc
  # NCCL refuses two ranks on one GPU (since 2.5): scalebench must say so and exit 2.
  if command -v mpirun >/dev/null 2>&1; then
    mpirun --allow-run-as-root -np 2 -x LD_LIBRARY_PATH "$bin" run --backend cuda -w allreduce --sizes 1KiB -q --out "$out/refuse-shared"
    rc=$?
    echo "two ranks on one GPU: exit $rc (expected 2)"
  else
    echo "two ranks on one GPU: not tried (no mpirun on this machine)"
  fi
  "$bin" run --backend cpu -w allreduce --sizes 1KiB -t graph -q --out "$out/refuse-graph-cpu"
  echo "graph timing on the CPU backend: exit $? (expected 2)"
}

gpu_skip=$(need "$have_gpu" "$have_cuda")
step facts 60 "$(need "$have_gpu")" facts
step gemm 170 "$(need "$gpu_skip" "$have_torch")" gemm
step small 170 "$(need "$gpu_skip")" small
step ceilings 60 "$gpu_skip" ceilings
step ddp 60 "$gpu_skip" "$bin" run --backend cuda -w ddp_step --model mlp-small -q --out "$out/ddp"
step refusals 45 "$gpu_skip" refusals
[ -n "${nt_builder:-}" ] && kill "$nt_builder" 2>/dev/null
printf '\n== done in %ss: %s ==\n' "$((SECONDS - t0))" "$out/summary.md"
summarize
exit 0
