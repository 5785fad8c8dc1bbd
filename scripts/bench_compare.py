#!/usr/bin/env python3
"""Compares two sets of benchmark JSON row by row (a before/after pair from one device run): the median of each row
in both, their ratio, and the rows beyond a threshold.

Usage: scripts/bench_compare.py BEFORE_DIR AFTER_DIR [THRESHOLD_PERCENT]"""
import glob
import json
import os
import sys


def rows(directory):
    found = {}
    for path in sorted(glob.glob(os.path.join(directory, "bench_*.json"))):
        with open(path) as f:
            for row in json.load(f)["results"]:
                if "skipped" in row:
                    continue
                key = (row["op"], row["backend"], row["variant"], row["batch"])
                found[key] = row["median_ms"]
    return found


before, after = rows(sys.argv[1]), rows(sys.argv[2])
threshold = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
beyond = 0
print(f"{'op':9} {'backend':9} {'variant':44} {'batch':>5} {'before_ms':>10} {'after_ms':>10} {'change':>8}")
for key in sorted(before.keys() & after.keys()):
    b, a = before[key], after[key]
    change = (a / b - 1) * 100 if b else 0.0
    flag = " *" if abs(change) > threshold else ""
    beyond += bool(flag)
    print(f"{key[0]:9} {key[1]:9} {key[2][:44]:44} {key[3]:5} {b:10.4f} {a:10.4f} {change:+7.1f}%{flag}")
for key in sorted(before.keys() ^ after.keys()):
    print("only " + ("before" if key in before else "after") + ": " + " ".join(map(str, key)))
print(f"{beyond} of {len(before.keys() & after.keys())} rows changed by more than {threshold}%")
