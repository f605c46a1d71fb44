#!/usr/bin/env python3
"""Applies a patch written against a file that the `split` branch split into a directory.

Merge helper for issue 14 item 3, which moved src/backend/cpu.rs into src/backend/cpu/*.rs
(cpu_overlap.rs became cpu/overlap.rs), src/report/analyze.rs into src/report/analyze/*.rs
and src/report/document.rs into src/report/document/*.rs. A branch that edited one of the
old files meanwhile merges as a modify/delete conflict; this applies each of its hunks to
the one new file whose text it fits (`patch`; old lines respelled with the `pub(super)` the
split added; the least fuzz that fits). Usage, from the repository root after the
conflicting merge (or on a clean tree):

    git diff MERGE_BASE OTHER -- src/backend/cpu.rs > /tmp/old.patch
    python3 ci/retarget-patch.py /tmp/old.patch     # --dry-run to only report
    git rm src/backend/cpu.rs                       # the other side's copy, if left

The new files are those of the directory named like the patched file (src/backend/cpu/).
Hunks that fit no file, or more than one, are written to /tmp/unplaced-N.patch and
reported: place those by hand (e.g. a hunk of a function that was itself split). Exit 0
when every hunk was placed, 1 otherwise.
"""
import glob
import re
import subprocess
import sys


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


def score(target, hunk):
    """How many of the hunk's old lines (context and removed) `target` has, respelled."""
    have = set(open(target).read().splitlines())
    old = [l[1:].rstrip("\n") for l in adapt(target, hunk).splitlines(keepends=True)[1:]]
    return sum(1 for l in old if l.strip() and l in have)


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
    text = open(path).read()
    old = re.search(r"^--- a/(\S+)\.rs(\s|$)", text, re.M)
    if not old:
        sys.exit(f"{path}: no `--- a/FILE.rs` header")
    files = sorted(glob.glob(f"{old.group(1)}/*.rs"))
    if not files:
        sys.exit(f"{old.group(1)}/: no split files here (run from the repository root)")
    unplaced = 0
    for k, h in enumerate(hunks(text), 1):
        # The least fuzz at which some file takes the hunk; a pure insertion fits anywhere
        # once all its context is ignored, so more fuzz is never tried after a fit.
        # A pure insertion is placed by its context alone: past fuzz 1 it lands anywhere.
        inserts_only = not any(l.startswith("-") for l in h.splitlines()[1:])
        where, fuzz = [], 0
        for fuzz in range(2 if inserts_only else 4):
            where = [f for f in files if fits(f, h, fuzz)]
            if where:
                break
        head = re.sub(r"\s+", " ", h.splitlines()[0])[:70]
        if len(where) == 1:
            print(f"hunk {k} ({head}) -> {where[0]} (fuzz {fuzz})")
            if not dry and not fits(where[0], h, fuzz, apply=True):
                sys.exit(f"hunk {k}: applying to {where[0]} failed after a clean dry run")
        else:
            unplaced += 1
            out = f"/tmp/unplaced-{k}.patch"
            open(out, "w").write(h)
            best = max(files, key=lambda f: score(f, h))
            hint = f"; most of its context is in {best}" if score(best, h) else ""
            print(f"hunk {k} ({head}): fits {where or 'no file'}{hint}; left in {out}")
    sys.exit(1 if unplaced else 0)


if __name__ == "__main__":
    main()
