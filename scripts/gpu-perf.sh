#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: builds the C reference
# with nvcc, runs it and the Go copy benchmarks in the same run, and merges
# them into OUTDIR/copy.md (the tables docs/performance.md quotes).
#
#   scripts/gpu-perf.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-perf.sh OUTDIR}
mkdir -p "$out"
nvcc -O2 -o /tmp/copybench bench/cref/copybench.c -lcuda
/tmp/copybench >"$out/cref.txt"
GOCUDA_REQUIRE_GPU=1 bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkCopy' -test.benchtime 0.5s -test.benchmem >"$out/gobench.txt"
{
	echo "Measured $(date -u +%Y-%m-%d) on $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader)"
	python3 bench/copyreport.py "$out/cref.txt" "$out/gobench.txt"
} >"$out/copy.md"
cat "$out/copy.md"
