#!/usr/bin/env python3
"""Reads the output of a Go test binary run with -test.v under
compute-sanitizer (memcheck, --leak-check full), attributes each report to
the test that was running, and fails on: any memory error; any leak outside
the tests that close a context under live allocations on purpose (the
driver frees them with the context, and memcheck reports them then); and
any driver API error outside the tests that provoke them on purpose.

Two kinds of API error are not gocuda's failures and are counted apart:
errors of the CUDA runtime API (cuda*), which gocuda never calls (NCCL does,
probing its kernels as it starts), and CUDA_ERROR_INVALID_VALUE from
cuFuncGetParamInfo, which is how the parameter list of a kernel loaded from
a cubin ends on a driver without cuFuncGetParamCount.

    memcheck_filter.py LOG 'TestA|...' 'TestB|...'   (tests allowed API errors; tests allowed teardown leaks)

Prints one summary line (and the reports that fail), exits 1 on failure."""
import re
import sys

log_path, allowed = sys.argv[1], re.compile(r"^(%s)$" % sys.argv[2])
teardown = re.compile(r"^(%s)$" % (sys.argv[3] if len(sys.argv) > 3 else "$^"))
test = "(before any test)"
api, api_allowed, others, probes, memory, leaks, teardown_leaks, bad = 0, 0, 0, 0, 0, 0, 0, []
leaked_bytes = 0
for line in open(log_path, errors="replace"):
    m = re.match(r"=== (RUN|CONT)\s+(\S+)", line)
    if m:
        test = m.group(2).split("/")[0]
        continue
    if not line.startswith("========= "):
        continue
    body = line[len("========= "):].strip()
    m = re.match(r"LEAK SUMMARY: ([\d,]+) bytes leaked", body)
    if m:
        leaked_bytes += int(m.group(1).replace(",", ""))
        continue
    if body.startswith("Program hit") and "on CUDA API call" in body:
        if re.search(r"API call to cuda[A-Z]", body):
            others += 1
        elif "CUDA_ERROR_INVALID_VALUE" in body and "call to cuFuncGetParamInfo" in body:
            probes += 1
        elif allowed.match(test):
            api_allowed += 1
        else:
            api += 1
            bad.append("%s: %s" % (test, body))
    elif body.startswith("Leaked "):
        if teardown.match(test):
            teardown_leaks += 1
        else:
            leaks += 1
            bad.append("%s: %s" % (test, body))
    elif re.match(r"(Invalid|Out-of-range|Misaligned|Malloc|Cuda|Barrier|Uninitialized|Race|Device heap|Address)", body):
        memory += 1
        bad.append("%s: %s" % (test, body))
for b in bad[:40]:
    print("  " + b)
ok = memory == 0 and leaks == 0 and api == 0
print("memcheck %s: %d memory errors, %d leaks, %d API errors outside the tests that provoke them; "
      "on purpose: %d API errors, %d allocations freed with a context closed under them (%d bytes in all); "
      "%d runtime-API errors of other libraries, %d parameter-list ends: %s"
      % (log_path, memory, leaks, api, api_allowed, teardown_leaks, leaked_bytes, others, probes, "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
