"""Prints each skipped test of the last ctest run with the reason it gave (ctest's summary lists only the names).
Usage: skip_reasons.py BUILD_DIR/Testing/Temporary/LastTest.log"""
import re
import sys

log = open(sys.argv[1], encoding="utf-8", errors="replace").read()
blocks = re.findall(r"\d+/\d+ Testing: (.*?)\n.*?Output:\n-+\n(.*?)<end of output>", log, re.S)
skipped = []
for name, output in blocks:
    if "[  SKIPPED ]" not in output:
        continue
    # gtest prints "file:line: Skipped" and the message on the next line; a test of its own may say "skipped: why".
    reason = re.search(r": Skipped\n(.+)", output) or re.search(r"(?i)skipp?ed:? (.+)", output)
    skipped.append((name.strip(), reason.group(1).strip() if reason else "(no reason given)"))
if skipped:
    print(f"{len(skipped)} tests skipped, with their reasons:")
    for name, reason in skipped:
        print(f"  {name}: {reason}")
