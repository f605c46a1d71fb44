#!/usr/bin/env python3
"""Applies a patch written against the old src/backend/cpu.rs to its split files.

Merge helper for the `split` branch (issue 14 item 3), which moved src/backend/cpu.rs into
src/backend/cpu/{mod,kernels,flat,hier,gemm}.rs (cpu_overlap.rs became cpu/overlap.rs).
A branch that edited cpu.rs meanwhile merges as a modify/delete conflict; this applies
each of its hunks to the one split file whose text it fits (`patch` with fuzz, since the
split added `pub(super)` to moved items; the least fuzz that fits). Usage, from the repository root after the
conflicting merge (or on a clean tree):

    git diff MERGE_BASE OTHER -- src/backend/cpu.rs > /tmp/cpu.patch
    python3 ci/retarget-cpu-patch.py /tmp/cpu.patch      # --dry-run to only report
    git rm src/backend/cpu.rs                            # the other side's copy, if left

Hunks that fit no file, or more than one, are written to /tmp/cpu-unplaced-N.patch and
reported: place those by hand. Exit 0 when every hunk was placed, 1 otherwise.
"""
import re
import subprocess
import sys

FILES = [f"src/backend/cpu/{n}.rs" for n in ("mod", "kernels", "flat", "hier", "gemm", "overlap")]


def hunks(text):
    out, cur = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("@@"):
            cur = [line]
            out.append(cur)
        elif cur is not None and not line.startswith(("diff ", "index ", "--- ", "+++ ")):
            cur.append(line)
    return ["".join(h) for h in out]


def adapt(target, hunk):
    """The hunk with its old lines spelled as in `target`, where the split only added
    `pub(super) ` to them (so they match without fuzz)."""
    spelled = {}
    for line in open(target).read().splitlines():
        spelled.setdefault(line.replace("pub(super) ", ""), line)
    present = set(spelled.values())
    out = []
    for line in hunk.splitlines(keepends=True):
        body = line[1:].rstrip("\n")
        if line[:1] in (" ", "-") and body not in present and body in spelled:
            line = line[0] + spelled[body] + "\n"
        out.append(line)
    return "".join(out)


def fits(target, hunk, fuzz, apply=False):
    patch = f"--- a/{target}\n+++ b/{target}\n{adapt(target, hunk)}"
    args = ["patch", "-p1", f"-F{fuzz}", "--no-backup-if-mismatch", "-s", "-r", "-"]
    if not apply:
        args.append("--dry-run")
    r = subprocess.run(args, input=patch, text=True, capture_output=True)
    return r.returncode == 0


def main():
    dry = "--dry-run" in sys.argv
    path = [a for a in sys.argv[1:] if a != "--dry-run"][0]
    unplaced = 0
    for k, h in enumerate(hunks(open(path).read()), 1):
        # The least fuzz at which some file takes the hunk; a pure insertion fits anywhere
        # once all its context is ignored, so more fuzz is never tried after a fit.
        where, fuzz = [], 0
        for fuzz in range(4):
            where = [f for f in FILES if fits(f, h, fuzz)]
            if where:
                break
        head = re.sub(r"\s+", " ", h.splitlines()[0])[:70]
        if len(where) == 1:
            print(f"hunk {k} ({head}) -> {where[0]} (fuzz {fuzz})")
            if not dry and not fits(where[0], h, fuzz, apply=True):
                sys.exit(f"hunk {k}: applying to {where[0]} failed after a clean dry run")
        else:
            unplaced += 1
            out = f"/tmp/cpu-unplaced-{k}.patch"
            open(out, "w").write(h)
            print(f"hunk {k} ({head}): fits {where or 'no file'}; left in {out}")
    sys.exit(1 if unplaced else 0)


if __name__ == "__main__":
    main()
