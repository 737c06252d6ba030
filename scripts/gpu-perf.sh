#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: builds the C reference
# with nvcc and runs it, the Go transfer benchmarks and gocuda calibrate, all
# in one run, and writes the tables docs/performance.md quotes:
# OUTDIR/copy.md (Go against C), OUTDIR/staging.md (staging against the
# plain copy) and OUTDIR/calibrate.txt. Raw outputs stay beside them.
#
#   scripts/gpu-perf.sh OUTDIR [BENCH_REGEXP]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-perf.sh OUTDIR [BENCH_REGEXP]}
pattern=${2:-'^Benchmark(Copy|Upload|Download)'}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1
machine=$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader)
nvcc -O2 -o /tmp/copybench bench/cref/copybench.c -lcuda
/tmp/copybench >"$out/cref.txt"
bin/tests/cuda.test -test.run '^$' -test.bench "$pattern" -test.benchtime 0.5s -test.benchmem >"$out/gobench.txt"
bin/gocuda calibrate >"$out/calibrate.txt"
{
	echo "Measured $(date -u +%Y-%m-%d) on $machine"
	python3 bench/copyreport.py "$out/cref.txt" "$out/gobench.txt"
} >"$out/copy.md"
{
	echo "Measured $(date -u +%Y-%m-%d) on $machine, GOMAXPROCS=$(nproc)"
	python3 bench/stagingreport.py "$out/gobench.txt"
} >"$out/staging.md"
cat "$out/copy.md" "$out/staging.md" "$out/calibrate.txt"
