#!/usr/bin/env bash
# Sensitivity of the CI gate (ci/regression.sh), measured on this machine: which slowdowns it
# catches, and how often it cries wolf. Genuine slowdowns come from real Open MPI knobs passed
# to mpirun (a slower collective algorithm, smaller fragments, no single-copy transfers, fewer
# fast boxes, a smaller eager limit, TCP instead of shared memory), never from editing
# scalebench. The study of ci/regression.sh is run ROUNDS times per knob and 2×ROUNDS times
# without one, interleaved; then gate trials are drawn from those runs:
#   - A/A: TRIALS draws of RUNS vs RUNS distinct default runs → how many flag anything;
#   - per knob: TRIALS draws of RUNS default vs RUNS knob runs → per case, how often it is
#     flagged "regressed", against the case's true slowdown (all runs pooled).
# for each noise band in BANDS. Prints a Markdown summary (also results/ci/gate-study/summary.md).
#
#   bash ci/gate-study.sh            # ROUNDS=8 RUNS=8 TRIALS=20 BANDS="0.05 0.10 0.15 0.20"
#   ANALYSE_ONLY=1 bash ci/gate-study.sh   # re-analyse the runs already measured
# Environment: SCALEBENCH_BIN (default: cargo build), ROUNDS, RUNS, TRIALS, BANDS.
# About 2 s per run here: the default settings take ≈ 3 minutes. Not part of CI (a bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

rounds=${ROUNDS:-8}
per_side=${RUNS:-8}
trials=${TRIALS:-20}
bands=${BANDS:-0.05 0.10 0.15 0.20}
work=results/ci/gate-study

if [ -z "${SCALEBENCH_BIN:-}" ]; then
  cargo build --release --locked --all-features --bin scalebench
  SCALEBENCH_BIN=${CARGO_TARGET_DIR:-target}/release/scalebench
fi
bin=$SCALEBENCH_BIN

# Same study as ci/regression.sh (kept in step by hand: the gate's cases are what is studied).
study=(-w allreduce,allgather,broadcast,matmul --sizes 4KiB,64KiB --in-place no --dims 128
  --iters 400 --batches 40 --warmup 40)
dyn=(--mca coll_tuned_use_dynamic_rules 1)
declare -A knobs=(
  [fbox_off]="--mca btl_vader_fbox_max 0"
  [frag_16k]="--mca btl_vader_max_send_size 16384"
  [allreduce_segring_16k]="${dyn[*]} --mca coll_tuned_allreduce_algorithm 5 --mca coll_tuned_allreduce_algorithm_segmentsize 16384"
  [bcast_pipeline_32k]="${dyn[*]} --mca coll_tuned_bcast_algorithm 3 --mca coll_tuned_bcast_algorithm_segmentsize 32768"
  [no_single_copy]="--mca btl_vader_single_copy_mechanism none"
  [eager_1k]="--mca btl_vader_eager_limit 1024"
  [tcp]="--mca btl tcp,self --mca btl_tcp_if_include lo"
)

measure() { # name index mpirun-args...
  local out=$work/runs/$1/$2
  shift 2
  rm -rf "$out"
  # shellcheck disable=SC2068 # the knob's words are separate mpirun arguments
  timeout -k 5 300 mpirun -np 2 $@ "$bin" run -q --out "$out" "${study[@]}" >/dev/null
}

if [ -z "${ANALYSE_ONLY:-}" ]; then
  rm -rf "$work/runs"
  echo "gate-study: $rounds rounds × (2 default + ${#knobs[@]} knob runs), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" >&2
  for ((r = 1; r <= rounds; r++)); do
    measure default "a$r"
    for k in "${!knobs[@]}"; do
      # shellcheck disable=SC2086
      measure "$k" "$r" ${knobs[$k]}
    done
    measure default "b$r"
    echo "gate-study: round $r of $rounds done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  done
fi

python3 - "$bin" "$work" "$per_side" "$trials" "$bands" <<'EOF'
import json, os, random, statistics, subprocess, sys, tempfile
bin_, work, k, trials, bands = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), [float(b) for b in sys.argv[5].split()]
runs_dir = os.path.join(work, "runs")
pools = {name: sorted(os.path.join(runs_dir, name, r) for r in os.listdir(os.path.join(runs_dir, name)))
         for name in sorted(os.listdir(runs_dir))}
default = pools.pop("default")
rng = random.Random(2026)

def medians(run):
    r = json.load(open(os.path.join(run, "results.json")))
    return {c["id"]: (c["params"], statistics.median(c["timing"]["samples_s"])) for c in r["cases"] if c.get("timing")}

def label(p):
    size = p.get("requested_bytes")
    if size is not None:
        return f'{p["workload"]} {size // 1024} KiB'
    return f'{p["workload"]} {p["shape"]["m"]}'

med = {run: medians(run) for pool in [default, *pools.values()] for run in pool}
ids = sorted(med[default[0]])
labels = {i: label(med[default[0]][i][0]) for i in ids}

def center(runs, i):
    return statistics.median(med[r][i][1] for r in runs)

def gate(a_runs, b_runs, band):
    with tempfile.TemporaryDirectory() as t:
        for side, runs in (("a", a_runs), ("b", b_runs)):
            os.makedirs(os.path.join(t, side))
            for n, r in enumerate(runs):
                os.symlink(os.path.abspath(r), os.path.join(t, side, f"{n:02d}"))
        out = subprocess.run([bin_, "compare", "--noise", str(band), "--format", "json",
                              os.path.join(t, "a"), "--", os.path.join(t, "b")],
                             capture_output=True, text=True)
        if out.returncode not in (0, 1):
            sys.exit(f"compare failed ({out.returncode}): {out.stderr}")
        rep = json.loads(out.stdout)
        return {c["id"] for c in rep["cases"] if c["verdict"] == "regressed"}

lines = []
p = lines.append
cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
p(f"CPU: {cpu}; {len(default)} default runs, {min(len(v) for v in pools.values())} per knob; "
  f"{trials} trials of {k} vs {k} runs per comparison; compare's Holm correction, α = 5 %.\n")
p("A/A (both sides default runs, distinct): comparisons that flag any case")
p("")
p("| band | flagged | of |")
p("|---|---|---|")
aa = {}
for band in bands:
    flagged = 0
    for _ in range(trials):
        draw = rng.sample(default, 2 * k)
        if gate(draw[:k], draw[k:], band):
            flagged += 1
    aa[band] = flagged
    p(f"| ±{band:.0%} | {flagged} | {trials} |")
p("")
rows = []
for knob, pool in pools.items():
    kk = min(k, len(pool))
    hits = {band: {i: 0 for i in ids} for band in bands}
    for _ in range(trials):
        a = rng.sample(default, k)
        b = rng.sample(pool, kk)
        for band in bands:
            for i in gate(a, b, band):
                hits[band][i] += 1
    for i in ids:
        slow = center(pool, i) / center(default, i) - 1
        rows.append((knob, i, slow, {band: hits[band][i] / trials for band in bands}))
p("Per knob and case: true slowdown (median time over all knob runs / over all default runs − 1) and the share of trials that flagged the case regressed")
p("")
p("| knob | case | slowdown | " + " | ".join(f"power ±{b:.0%}" for b in bands) + " |")
p("|---|---|---|" + "---|" * len(bands))
for knob, i, slow, power in sorted(rows, key=lambda r: r[2]):
    p(f"| {knob} | {labels[i]} | {slow:+.1%} | " + " | ".join(f"{power[b]:.0%}" for b in bands) + " |")
p("")
p("Smallest slowdown caught in ≥ 90 % of trials, and the largest missed (power < 90 %), per band:")
p("")
for band in bands:
    caught = [s for _, _, s, pw in rows if pw[band] >= 0.9 and s > 0]
    missed = [s for _, _, s, pw in rows if pw[band] < 0.9 and s > 0]
    false_pos = [(kn, labels[i], s) for kn, i, s, pw in rows if pw[band] > 0.05 and s <= 0.02]
    p(f"- ±{band:.0%}: caught from {min(caught):+.1%}" if caught else f"- ±{band:.0%}: nothing caught", )
    lines[-1] += (f"; largest missed {max(missed):+.1%}" if missed else "; none missed")
    lines[-1] += f"; A/A flagged {aa[band]}/{trials}"
    if false_pos:
        lines[-1] += "; flagged > 5 % without a slowdown: " + ", ".join(f"{kn} {lb} ({s:+.1%})" for kn, lb, s in false_pos)
text = "\n".join(lines) + "\n"
print(text)
open(os.path.join(work, "summary.md"), "w").write(text)
json.dump({"aa": {str(b): v for b, v in aa.items()}, "rows": [
    {"knob": kn, "case": labels[i], "slowdown": s, "power": {str(b): v for b, v in pw.items()}}
    for kn, i, s, pw in rows]}, open(os.path.join(work, "summary.json"), "w"), indent=1)
EOF
