#!/usr/bin/env bash
# A corpus of everything scalebench writes for fixed inputs, to check that a refactoring
# changed no behaviour: reports (every format), compare in every format, plans and dry-run
# job scripts of every example, help texts and a set of refused inputs, each with its stdout,
# stderr and exit code. Nothing here measures, so two binaries of the same behaviour write
# byte-identical corpora.
#
#   bash ci/golden-corpus.sh BINARY INPUTS OUT     # INPUTS: a folder of results files (*.json)
#   diff -r OLD_OUT NEW_OUT                        # empty when the behaviour is unchanged
#
# INPUTS are results files from real runs (a sweep, the demo, a Slurm study, runs with failed
# cases, ddp); they are not in the repository, because they are large and machine-specific.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: bash ci/golden-corpus.sh BINARY INPUTS OUT" >&2; exit 2; }
bin=$(realpath "$1")
inputs=$(realpath "$2")
out=$3
cd "$(dirname "$0")/.."
repo=$(pwd)
rm -rf "$out"
mkdir -p "$out"
out=$(realpath "$out")
# Paths inside the outputs are written relative to one fixed working folder, so that two
# corpora made from different checkouts compare equal.
work=$(mktemp -d /tmp/scalebench-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r "$inputs" "$work/in"
# The binary runs from inside the work folder, so its path (in usage lines and job scripts)
# is the same for every corpus.
mkdir -p "$work/bin"
cp "$bin" "$work/bin/scalebench"
bin=$work/bin/scalebench
cp -r "$repo/examples" "$work/examples"

# One invocation: NAME, then the arguments; keeps stdout, stderr and the exit code.
case_() {
  local name=$1
  shift
  (cd "$work" && "$bin" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr" </dev/null)
  echo $? >"$out/$name.code"
  # The run's own temporary paths would differ from corpus to corpus.
  sed -i "s#$work#WORK#g" "$out/$name.stdout" "$out/$name.stderr"
}

# Reports: each input alone in every format, then several together.
for f in "$work"/in/*.json; do
  n=$(basename "$f" .json)
  case_ "report-$n" report "in/$n.json" --out "r/$n" --title corpus
done
case_ report-several report in/quick-local.json in/all-np2.json in/hybrid.json --out r/several
case_ report-unrepr report in/all-np4.json --out r/unrepr --include-unrepresentative
case_ report-only report in/all-np2.json --out r/only --only workload=allreduce --format md,csv
# Compare: every format, the gate's pair, refusals.
for fmt in text md json; do
  case_ "compare-$fmt" compare --format "$fmt" --allow-low-power in/ci-base-1.json -- in/ci-cand-1.json
done
case_ compare-all compare --all --allow-mismatch --allow-low-power in/all-np2.json -- in/all-np4.json
case_ compare-self compare in/quick-local.json -- in/quick-local.json
case_ compare-mismatch compare in/all-np2.json -- in/all-np4.json
# Plans and dry-run job scripts of every example.
for f in "$work"/examples/*.toml; do
  n=$(basename "$f" .toml)
  case_ "plan-$n" plan "examples/$n.toml" --cases
  case_ "plan-json-$n" plan "examples/$n.toml" --json
  for p in puhti lumi apocrita pbs-example local-slurm; do
    case_ "submit-$n-$p" submit "examples/$n.toml" --profile "$p" --dry-run --out "s/$n-$p"
  done
done
# Help texts.
case_ help --help
for c in run plan sweep topo submit status collect compare report; do
  case_ "help-$c" "$c" --help
done
# Refused inputs (exit 2 with a message naming the fix).
printf 'name = "x"\n[axes]\nsizes = ["8B:1MiB:x0"]\n' >"$work/bad-size.toml"
printf 'name = "x"\n[axes]\nnodes = [1\n' >"$work/bad-toml.toml"
printf 'name = "x"\n[axes]\nworkloads = ["allreduce"]\nbogus = 1\n' >"$work/bad-key.toml"
printf '{"format_version": 99}' >"$work/bad-version.json"
printf 'not json' >"$work/bad-json.json"
case_ bad-size plan bad-size.toml
case_ bad-toml plan bad-toml.toml
case_ bad-key plan bad-key.toml
case_ bad-missing plan does-not-exist.toml
case_ bad-version report bad-version.json --out r/bad
case_ bad-json compare bad-json.json -- in/all-np2.json
case_ bad-flag run --sizes 8B:1MiB --workloads nope
case_ bad-sizes run --sizes 1ZiB
case_ bad-subcommand frobnicate
# Every file the reports and dry runs wrote (charts, HTML, CSV, job scripts).
[ -d "$work/r" ] && cp -r "$work/r" "$out/reports"
[ -d "$work/s" ] && cp -r "$work/s" "$out/submits"
grep -rl "$work" "$out" 2>/dev/null | xargs -r sed -i "s#$work#WORK#g"
# The HTML's script nonce is random per report.
grep -rl "nonce" "$out" 2>/dev/null | xargs -r sed -i -E "s/nonce-?[=\"']?[0-9a-f]{32}/nonce-N/g; s/nonce=\"[0-9a-f]{32}\"/nonce=\"N\"/g"
echo "corpus: $(find "$out" -type f | wc -l) files in $out"
