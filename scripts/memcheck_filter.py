#!/usr/bin/env python3
"""Reads the output of a Go test binary run with -test.v under
compute-sanitizer (memcheck, --leak-check full), attributes each report to
the test that was running, and fails on: any memory error, any leak, and
any CUDA API error in a test not listed as provoking API errors on purpose.

    memcheck_filter.py LOG 'TestA|TestB|...'   (the tests allowed API errors)

Prints one summary line (and the reports that fail), exits 1 on failure."""
import re
import sys

log_path, allowed = sys.argv[1], re.compile(r"^(%s)$" % sys.argv[2])
test = "(before any test)"
api, api_allowed, memory, leaks, bad = 0, 0, 0, 0, []
leaked_bytes = 0
for line in open(log_path, errors="replace"):
    m = re.match(r"=== (RUN|CONT)\s+(\S+)", line)
    if m:
        test = m.group(2).split("/")[0]
        continue
    if not line.startswith("========= "):
        continue
    body = line[len("========= "):].strip()
    m = re.match(r"LEAK SUMMARY: (\d+) bytes leaked", body)
    if m:
        leaked_bytes += int(m.group(1))
        continue
    if body.startswith("Program hit") and "on CUDA API call" in body:
        if allowed.match(test):
            api_allowed += 1
        else:
            api += 1
            bad.append("%s: %s" % (test, body))
    elif body.startswith("Leaked "):
        leaks += 1
        bad.append("%s: %s" % (test, body))
    elif re.match(r"(Invalid|Out-of-range|Misaligned|Malloc|Cuda|Barrier|Uninitialized|Race|Device heap|Address)", body):
        memory += 1
        bad.append("%s: %s" % (test, body))
for b in bad[:40]:
    print("  " + b)
ok = memory == 0 and leaks == 0 and leaked_bytes == 0 and api == 0
print("memcheck %s: %d memory errors, %d leaks (%d bytes), %d API errors outside the tests that provoke them, %d API errors provoked on purpose: %s"
      % (log_path, memory, leaks, leaked_bytes, api, api_allowed, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
