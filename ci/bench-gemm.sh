#!/usr/bin/env bash
# CPU GEMM GFLOP/s of both providers against numpy, measured in the same session (not part of
# CI's pass/fail): `scalebench run -w matmul --gemm gemm-crate`, `--gemm blas` (the system
# CBLAS that `auto` picks when one loads) and numpy (its own OpenBLAS, from PyPI in a venv),
# n = 1024 and 2048, f32 and f64, 1 and 2 threads. Each round runs the three one after
# another (alternating), ROUNDS rounds; the table shows medians and ratios to numpy.
# Target: the provider `auto` picks >= 0.97 x numpy in every cell.
#
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for every side: a machine-wide
# OPENBLAS_CORETYPE=Haswell (set for old OpenBLAS builds) halves the rate of an AVX-512
# capable OpenBLAS, and both sides should get the kernels their library picks for this CPU.
# Usage: bash ci/bench-gemm.sh [ROUNDS]   (default 5; venv kept in target/bench-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
source ci/env.sh
rounds=${1:-5}
target=${CARGO_TARGET_DIR:-target}
cargo build --release --locked --bin scalebench
bin="$target/release/scalebench"
venv=${SCALEBENCH_BENCH_VENV:-$target/bench-venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy threadpoolctl
fi
work=$(mktemp -d /tmp/scalebench-bench-gemm.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

# numpy: dense uniform inputs in [-1, 1), as scalebench times on (its exact integer pattern is
# only for the checked iteration: src/workload/gemm_check.rs); per size and type, warm-up, then 5 batches of GEMMs
# filling about 1 s in all; GFLOP/s of the median batch.
cat > "$work/numpy_gemm.py" <<'PY'
import ctypes, json, statistics, sys, time
import numpy as np
from threadpoolctl import threadpool_info
# argv: [system BLAS path, threads]: time only the library scalebench's `blas` provider loaded,
# called directly through ctypes (no scalebench code), in its own process so numpy's BLAS
# threads stay idle; the table separates scalebench's overhead (blas / direct) from the
# difference between two BLAS builds (direct / numpy).
direct = None
if len(sys.argv) > 2:
    direct = ctypes.CDLL(sys.argv[1])
    for setter in ("openblas_set_num_threads", "bli_thread_set_num_threads", "MKL_Set_Num_Threads", "flexiblas_set_num_threads"):
        if hasattr(direct, setter):
            getattr(direct, setter)(int(sys.argv[2]))
            break
P, I = ctypes.c_void_p, ctypes.c_int
def timed(f):
    f()
    t0 = time.perf_counter(); f(); one = time.perf_counter() - t0
    per_batch = max(1, int(0.2 / one))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            f()
        times.append((time.perf_counter() - t0) / per_batch)
    return statistics.median(times)
out = {}
for dtype in ("float32", "float64"):
    for n in (1024, 2048):
        a = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype(dtype)
        b = np.random.default_rng(1).uniform(-1, 1, (n, n)).astype(dtype)
        c = np.empty((n, n), dtype)
        key = f"{'f32' if dtype == 'float32' else 'f64'}/{n}"
        if direct is None:
            out[key] = 2 * n**3 / timed(lambda: np.matmul(a, b, out=c)) / 1e9
        else:
            fn, scal = (direct.cblas_sgemm, ctypes.c_float) if dtype == "float32" else (direct.cblas_dgemm, ctypes.c_double)
            fn.argtypes = [I] * 6 + [scal, P, I, P, I, scal, P, I]
            # row-major, no transposes: C = A B
            call = lambda: fn(101, 111, 111, n, n, n, 1.0, a.ctypes.data, n, b.ctypes.data, n, 0.0, c.ctypes.data, n)
            out[key] = 2 * n**3 / timed(call) / 1e9
info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
out["lib"] = "; ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} {i.get('num_threads')} thr" for i in info)
print(json.dumps(out))
PY

sb_run() { # provider threads round
  "$bin" run -q --out "$work/$1-t$2-r$3" -w matmul --dtype f32,f64 --dims 1024,2048 \
    --threads-per-device "$2" --gemm "$1" --time-budget 1 > /dev/null
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs; load: $(uptime | sed 's/.*load average: //')"
for t in 1 2; do
  for r in $(seq "$rounds"); do
    sb_run gemm-crate "$t" "$r"
    sb_run blas "$t" "$r"
    syslib=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["launches"][0]["provenance"].get("gemm", {}).get("library") or "")' "$work/blas-t$t-r$r/results.json")
    OPENBLAS_NUM_THREADS="$t" "$venv/bin/python" "$work/numpy_gemm.py" > "$work/numpy-t$t-r$r.json"
    if [ -n "$syslib" ]; then
      OPENBLAS_NUM_THREADS="$t" "$venv/bin/python" "$work/numpy_gemm.py" "$syslib" "$t" > "$work/direct-t$t-r$r.json"
    else
      echo '{}' > "$work/direct-t$t-r$r.json"
    fi
  done
done
"$bin" run -q --out "$work/auto" -w matmul --dims 64 --iters 1 > /dev/null
echo "# load after: $(uptime | sed 's/.*load average: //')"

python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def sb(provider, t, r):
    d = json.load(open(f"{work}/{provider}-t{t}-r{r}/results.json"))
    rates = {f"{c['params']['dtype']}/{c['params']['shape']['n']}": c["gflops"] for c in d["cases"] if c["status"] == "ok"}
    return rates, d["launches"][0]["provenance"].get("gemm", {})
auto = json.load(open(f"{work}/auto/results.json"))["launches"][0]["provenance"]["gemm"]
_, blas = sb("blas", 1, 1)
_, crate = sb("gemm-crate", 1, 1)
npy_lib = json.load(open(f"{work}/numpy-t1-r1.json"))["lib"]
print(f"# gemm-crate: {crate.get('version')}")
print(f"# blas:       {blas.get('version')} ({blas.get('library')})")
print(f"# numpy:      {npy_lib}")
print(f"# auto picks: {auto['provider']}")
print(f"{'type':<5} {'n':>5} {'thr':>3} {'crate':>8} {'blas':>8} {'direct':>8} {'numpy':>8} {'crate/np':>9} {'blas/np':>8} {'auto/np':>8} {'auto/np range':>14} {'blas/direct':>12} {'direct/np':>10}")
print(f"# GFLOP/s: medians of {rounds} alternating rounds; ratios: median (and range) of the rounds' own ratios,")
print("# each round's providers measured next to its numpy, so slow phases of the machine cancel;")
print("# direct: the library `blas` loaded, called from Python through ctypes (no scalebench code):")
print("# blas/direct is scalebench's own overhead, direct/np the difference between the two BLAS builds")
worst = None
for key in ("f32/1024", "f32/2048", "f64/1024", "f64/2048"):
    for t in (1, 2):
        rates = {p: [sb(p, t, r)[0][key] for r in range(1, rounds + 1)] for p in ("gemm-crate", "blas")}
        rates["numpy"] = [json.load(open(f"{work}/numpy-t{t}-r{r}.json"))[key] for r in range(1, rounds + 1)]
        rates["direct"] = [json.load(open(f"{work}/direct-t{t}-r{r}.json")).get(key, float("nan")) for r in range(1, rounds + 1)]
        med = {p: statistics.median(v) for p, v in rates.items()}
        ratio = {p: [x / y for x, y in zip(rates[p], rates["numpy"])] for p in ("gemm-crate", "blas")}
        a_all = ratio[auto["provider"]]
        a = statistics.median(a_all)
        worst = a if worst is None else min(worst, a)
        dt, n = key.split("/")
        b_d = statistics.median(x / y for x, y in zip(rates["blas"], rates["direct"]))
        d_n = statistics.median(x / y for x, y in zip(rates["direct"], rates["numpy"]))
        print(f"{dt:<5} {n:>5} {t:>3} {med['gemm-crate']:>8.1f} {med['blas']:>8.1f} {med['direct']:>8.1f} {med['numpy']:>8.1f} "
              f"{statistics.median(ratio['gemm-crate']):>9.3f} {statistics.median(ratio['blas']):>8.3f} {a:>8.3f} "
              f"{min(a_all):>7.3f}-{max(a_all):.3f} {b_d:>12.3f} {d_n:>10.3f}")
print(f"worst auto/numpy: {worst:.3f} (target >= 0.97)")
PY
