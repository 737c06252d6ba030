#!/usr/bin/env bash
# Issue 49's fresh-slice transfers, on the GPU machine, after
# `scripts/gpu-build.sh . ./internal/hostcopy`: the system's page settings,
# then BenchmarkFreshSlices (download and upload into and from slices made
# just before each transfer, the download's measures on and off), and the
# staging tests on the GPU. Output in OUT.
#
#   scripts/gpu-fresh.sh OUT [BENCH_REGEXP]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-fresh.sh OUT [BENCH_REGEXP]}
re=${2:-BenchmarkFreshSlices}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$PWD/bin/libfakecuda.so
{
	uname -r
	nproc
	for f in enabled defrag khugepaged/defrag; do echo "$f: $(cat /sys/kernel/mm/transparent_hugepage/$f)"; done
	grep -E 'MemTotal|MemFree|AnonHugePages' /proc/meminfo
	nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
} >"$out/system.txt" 2>&1
bin/tests/cuda.test -test.run XXX -test.bench "$re" -test.benchtime 1x >"$out/fresh.txt" 2>&1
bin/tests/cuda.test -test.run 'Staging|Download|Upload|Pipeline|Fresh|Huge' -test.count 1 >"$out/tests.txt" 2>&1
echo "staging tests: exit $?" >>"$out/tests.txt"
bin/tests/internal_hostcopy.test -test.count 1 >"$out/hostcopy.txt" 2>&1
echo "hostcopy tests: exit $?" >>"$out/hostcopy.txt"
cat "$out/system.txt"; grep -E 'Fresh|ok|FAIL' "$out/fresh.txt"; tail -n 3 "$out/tests.txt" "$out/hostcopy.txt"
