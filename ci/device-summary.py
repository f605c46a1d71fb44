#!/usr/bin/env python3
"""Tables for ci/device-check.sh, read from the files its steps wrote (no GPU needed).

  device-summary.py gemm OUT   scalebench matmul against each PyTorch entry point, per round,
                               with the median SM clock and power nvidia-smi saw during each run
  device-summary.py small OUT  all-reduce per size and timing mode: each tool's median over its
                               rounds and its spread (min-max); a difference is claimed only
                               where the two spreads do not overlap

Files that are absent are said to be absent; nothing here invents a number.
"""
import csv
import glob
import json
import os
import statistics
import sys


def load_cases(path):
    try:
        with open(path) as f:
            return json.load(f).get("cases", [])
    except (OSError, ValueError):
        return []


def gpu_log(path):
    """Median SM clock (MHz) and power (W) of an nvidia-smi -lms log, and the throttle masks seen."""
    clocks, power, masks = [], [], set()
    try:
        with open(path) as f:
            for row in csv.reader(f):
                if len(row) < 6 or row[0].startswith("timestamp"):
                    continue
                try:
                    clocks.append(float(row[1].split()[0]))
                    power.append(float(row[3].split()[0]))
                    masks.add(row[5].strip())
                except (ValueError, IndexError):
                    continue
    except OSError:
        return "no clock log"
    if not clocks:
        return "no clock samples"
    return f"sm {statistics.median(clocks):.0f} MHz, {statistics.median(power):.0f} W, throttle {'/'.join(sorted(masks))}"


def gemm(out):
    print("dtype  n     round  side                          TFLOP/s  sb/side  clocks")
    for r in (1, 2):
        sb = {}
        for c in load_cases(f"{out}/gemm-sb-{r}/results.json"):
            p = c.get("params", {})
            if c.get("gflops") and p.get("shape"):
                sb[(p["dtype"], p["shape"]["m"])] = c["gflops"]
        if not sb:
            print(f"round {r}: no scalebench results (gemm-sb-{r}/results.json absent or empty)")
        for (dtype, n), g in sorted(sb.items()):
            print(f"{dtype:<6} {n:<5} {r:<6} {'scalebench matmul':<29} {g / 1e3:8.1f}  {'':7}  {gpu_log(f'{out}/gemm-sb-{r}.gpu.csv')}")
        for entry in ("mm", "bmm", "lt"):
            path = f"{out}/gemm-torch-{entry}-{r}.csv"
            try:
                rows = list(csv.DictReader(open(path)))
            except OSError:
                print(f"round {r}: {path} absent")
                continue
            for row in rows:
                try:
                    k = (row["dtype"], int(row["n"]))
                    t = float(row["gflops"])
                except (KeyError, ValueError, TypeError):
                    continue
                ratio = f"{sb[k] / t:7.3f}" if k in sb else "    n/a"
                print(f"{k[0]:<6} {k[1]:<5} {r:<6} {('torch ' + entry):<29} {t / 1e3:8.1f}  {ratio}  {gpu_log(f'{out}/gemm-torch-{entry}-{r}.gpu.csv')}")


def nccl_tests_times(path):
    """Out-of-place time (us) per size from an nccl-tests table."""
    times = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return times
    for line in lines:
        t = line.split()
        if len(t) >= 9 and t[0].isdigit():
            try:
                times[int(t[0])] = float(t[5])
            except ValueError:
                continue
    return times


def spread(values):
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def small(out):
    # (mode, bytes) -> list of us over rounds, for each tool.
    sb, nt = {}, {}
    for path in sorted(glob.glob(f"{out}/small-sb-*/results.json")):
        for c in load_cases(path):
            p, t = c.get("params", {}), c.get("timing")
            if c.get("status") != "ok" or not t or p.get("workload") != "allreduce":
                continue
            # Reused buffers only: the partner of nccl-tests run with -e at the largest size.
            if p.get("buffers", "reuse") != "reuse":
                continue
            sb.setdefault((p.get("timing"), c.get("bytes")), []).append(t["time_s"] * 1e6)
    partner = {"pipelined": "pipelined", "isolated": "blocking", "graph": "graph"}
    for mode, tag in partner.items():
        for path in sorted(glob.glob(f"{out}/small-nt-{tag}-*.txt")):
            for size, us in nccl_tests_times(path).items():
                nt.setdefault((mode, size), []).append(us)
    if not sb and not nt:
        print("no small-message results (neither tool's files are there)")
        return
    print("mode       bytes      scalebench us (min-max)     nccl-tests us (min-max)     verdict")
    for mode in partner:
        sizes = sorted({k[1] for k in list(sb) + list(nt) if k[0] == mode and k[1] is not None})
        for size in sizes:
            a, b = spread(sb.get((mode, size), [])), spread(nt.get((mode, size), []))
            fa = f"{a[0]:8.2f} ({a[1]:.2f}-{a[2]:.2f})" if a else "     not run"
            fb = f"{b[0]:8.2f} ({b[1]:.2f}-{b[2]:.2f})" if b else "     not run"
            if a and b:
                verdict = "within spread" if a[1] <= b[2] and b[1] <= a[2] else f"{a[0] / b[0]:.2f}x (spreads apart)"
            else:
                verdict = "-"
            print(f"{mode:<10} {size:<10} {fa:<27} {fb:<27} {verdict}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("gemm", "small") or not os.path.isdir(sys.argv[2]):
        sys.exit("usage: device-summary.py gemm|small OUT")
    (gemm if sys.argv[1] == "gemm" else small)(sys.argv[2])


if __name__ == "__main__":
    main()
