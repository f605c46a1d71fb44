#!/usr/bin/env bash
# Sensitivity of the CI gate (ci/regression.sh), measured on this machine: which slowdowns it
# catches, and how often it cries wolf. Genuine slowdowns come from real Open MPI knobs passed
# to mpirun (a slower collective algorithm, smaller fragments, no single-copy transfers, fewer
# fast boxes, a smaller eager limit, TCP instead of shared memory), never from editing
# scalebench. Two parts:
#   - A/A, independent: AA_ROUNDS rounds, each measuring RUNS fresh default runs a side in the
#     gate's ABBA order (so they pair like ci/regression.sh's) and comparing them once per band
#     in BANDS → how many rounds flag anything, with a one-sided 95 % upper bound on the
#     false-alarm rate (Clopper–Pearson: 0 of 20 bounds it below 13.9 %, not "0 %"). No run is
#     used in two rounds, so the rounds are independent trials.
#   - Sensitivity: the study is run ROUNDS times per knob and 2×ROUNDS times without one,
#     interleaved; TRIALS draws of RUNS default vs RUNS knob runs → per case, how often it is
#     flagged "regressed", against the case's true slowdown (all runs pooled). Draws reuse
#     runs, so these rates describe this pool of runs, not independent replications.
# Comparisons the gate refuses for too little power (exit 2) are counted as such, and judged
# anyway with --allow-low-power (what ci/regression.sh does after its NOT DECISIVE warning).
# Prints a Markdown summary (also results/ci/gate-study/summary.md).
#
#   bash ci/gate-study.sh            # AA_ROUNDS=20 ROUNDS=8 RUNS=8 TRIALS=20 BANDS="0.05 0.10 0.15 0.20"
#   ANALYSE_ONLY=1 bash ci/gate-study.sh   # re-analyse the runs already measured
#   SKIP_KNOBS=1 bash ci/gate-study.sh     # the A/A rounds only
# Environment: SCALEBENCH_BIN (default: cargo build), AA_ROUNDS, ROUNDS, RUNS, TRIALS, BANDS,
# SKIP_KNOBS. About 2 s per run here: 20 A/A rounds of 8 + 8 runs take ≈ 11 minutes, the
# knob part ≈ 3 minutes. Not part of CI (a bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh

rounds=${ROUNDS:-8}
aa_rounds=${AA_ROUNDS:-20}
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
  rm -rf "$work/runs" "$work/aa"
  echo "gate-study: $aa_rounds independent A/A rounds of $per_side + $per_side runs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" >&2
  for ((r = 1; r <= aa_rounds; r++)); do
    for ((i = 1; i <= per_side; i++)); do
      # ABBA, as ci/regression.sh collects its runs (so the gate pairs them)
      if ((i % 2)); then first=a second=b; else first=b second=a; fi
      out=$work/aa/$r/$first/$i; rm -rf "$out"
      timeout -k 5 300 mpirun -np 2 "$bin" run -q --out "$out" "${study[@]}" >/dev/null
      out=$work/aa/$r/$second/$i; rm -rf "$out"
      timeout -k 5 300 mpirun -np 2 "$bin" run -q --out "$out" "${study[@]}" >/dev/null
    done
    echo "gate-study: A/A round $r of $aa_rounds measured (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  done
  if [ -z "${SKIP_KNOBS:-}" ]; then
    echo "gate-study: $rounds rounds × (2 default + ${#knobs[@]} knob runs)" >&2
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
fi

python3 - "$bin" "$work" "$per_side" "$trials" "$bands" <<'EOF'
import json, math, os, random, statistics, subprocess, sys, tempfile
bin_, work, k, trials, bands = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), [float(b) for b in sys.argv[5].split()]
runs_dir = os.path.join(work, "runs")
pools = {name: sorted(os.path.join(runs_dir, name, r) for r in os.listdir(os.path.join(runs_dir, name)))
         for name in sorted(os.listdir(runs_dir))} if os.path.isdir(runs_dir) else {}
default = pools.pop("default", [])
aa_dir = os.path.join(work, "aa")
aa_rounds = sorted((os.path.join(aa_dir, r) for r in os.listdir(aa_dir)), key=lambda x: int(os.path.basename(x))) if os.path.isdir(aa_dir) else []
rng = random.Random(2026)
refused = {}

def upper95(k, n):
    """One-sided 95 % Clopper–Pearson upper bound of a rate seen k times in n trials."""
    if n == 0:
        return 1.0
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):  # bisection on P(X ≤ k | p) = 0.05
        mid = (lo + hi) / 2
        cdf = sum(math.comb(n, j) * mid**j * (1 - mid)**(n - j) for j in range(k + 1))
        lo, hi = (mid, hi) if cdf > 0.05 else (lo, mid)
    return hi

def medians(run):
    r = json.load(open(os.path.join(run, "results.json")))
    return {c["id"]: (c["params"], statistics.median(c["timing"]["samples_s"])) for c in r["cases"] if c.get("timing")}

def label(p):
    size = p.get("requested_bytes")
    if size is not None:
        return f'{p["workload"]} {size // 1024} KiB'
    return f'{p["workload"]} {p["shape"]["m"]}'

med = {run: medians(run) for pool in [default, *pools.values()] for run in pool}
ids = sorted(med[default[0]]) if default else []
labels = {i: label(med[default[0]][i][0]) for i in ids}

def center(runs, i):
    return statistics.median(med[r][i][1] for r in runs)

def gate(a_runs, b_runs, band, anyway=False):
    """Cases flagged regressed; None when compare refuses for too little power (unless
    `anyway`: then judged with --allow-low-power, as ci/regression.sh does after warning)."""
    with tempfile.TemporaryDirectory() as t:
        for side, runs in (("a", a_runs), ("b", b_runs)):
            os.makedirs(os.path.join(t, side))
            for n, r in enumerate(runs):
                os.symlink(os.path.abspath(r), os.path.join(t, side, f"{n:02d}"))
        args = [bin_, "compare", "--noise", str(band), "--format", "json"]
        if anyway:
            args.append("--allow-low-power")
        out = subprocess.run(args + [os.path.join(t, "a"), "--", os.path.join(t, "b")],
                             capture_output=True, text=True)
        if out.returncode == 2 and "too little power" in out.stderr:
            refused[band] = refused.get(band, 0) + 1
            return None
        if out.returncode not in (0, 1):
            sys.exit(f"compare failed ({out.returncode}): {out.stderr}")
        rep = json.loads(out.stdout)
        return {c["id"] for c in rep["cases"] if c["verdict"] == "regressed"}

lines = []
p = lines.append
cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
p(f"CPU: {cpu}; compare's Holm correction, α = 5 %, {k} runs a side.\n")
p(f"A/A, independent rounds (fresh runs each, ABBA order): rounds that flag any case")
p("")
p("| band | flagged | refused (too little power) | rounds | 95 % upper bound on the false-alarm rate | flagged when judged anyway (as ci/regression.sh) | its 95 % upper bound |")
p("|---|---|---|---|---|---|---|")
aa = {}
for band in bands:
    flagged, judged, anyway = 0, 0, 0
    for rd in aa_rounds:
        sides = [sorted((os.path.join(rd, s, r) for r in os.listdir(os.path.join(rd, s))), key=lambda x: int(os.path.basename(x))) for s in ("a", "b")]
        got = gate(sides[0], sides[1], band)
        if got is None:
            anyway += bool(gate(sides[0], sides[1], band, anyway=True))
            continue
        judged += 1
        flagged += bool(got)
        anyway += bool(got)
    aa[band] = (flagged, judged)
    n = len(aa_rounds)
    p(f"| ±{band:.0%} | {flagged} | {n - judged} | {judged} | {upper95(flagged, judged):.1%} | {anyway} of {n} | {upper95(anyway, n):.1%} |")
p("")
rows = []
knob_refused = {}
for knob, pool in pools.items():
    kk = min(k, len(pool))
    hits = {band: {i: 0 for i in ids} for band in bands}
    for _ in range(trials):
        a = rng.sample(default, k)
        b = rng.sample(pool, kk)
        for band in bands:
            got = gate(a, b, band)
            if got is None:
                # Refused for power: judged anyway, as ci/regression.sh does after its warning.
                knob_refused[band] = knob_refused.get(band, 0) + 1
                got = gate(a, b, band, anyway=True)
            for i in got:
                hits[band][i] += 1
    for i in ids:
        slow = center(pool, i) / center(default, i) - 1
        rows.append((knob, i, slow, {band: hits[band][i] / trials for band in bands}))
p(f"Sensitivity: {trials} draws of {k} default vs {k} knob runs from one pool ({len(default)} default runs); draws reuse runs, so these are not independent trials.\n")
p("Trials compare refused for too little power, per band (then judged anyway with --allow-low-power, as ci/regression.sh does): " + ", ".join(f"±{b:.0%} {knob_refused.get(b, 0)} of {trials * len(pools)}" for b in bands) + ".\n")
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
    lines[-1] += f"; A/A flagged {aa[band][0]}/{aa[band][1]} independent rounds"
    if false_pos:
        lines[-1] += "; flagged > 5 % without a slowdown: " + ", ".join(f"{kn} {lb} ({s:+.1%})" for kn, lb, s in false_pos)
text = "\n".join(lines) + "\n"
print(text)
open(os.path.join(work, "summary.md"), "w").write(text)
json.dump({"aa": {str(b): {"flagged": v[0], "rounds": v[1], "upper95": upper95(*v)} for b, v in aa.items()}, "refused": {str(b): v for b, v in refused.items()}, "rows": [
    {"knob": kn, "case": labels[i], "slowdown": s, "power": {str(b): v for b, v in pw.items()}}
    for kn, i, s, pw in rows]}, open(os.path.join(work, "summary.json"), "w"), indent=1)
EOF
