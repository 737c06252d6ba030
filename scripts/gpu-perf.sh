#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: builds the C reference
# with nvcc, then runs it and the Go copy benchmarks three times, interleaved
# (the pageable path varies from run to run, in C as in Go, so one run says
# little), the staging benchmarks once, and gocuda calibrate. Writes the
# tables docs/performance.md quotes: OUTDIR/copy.md (Go against C, medians
# of the three rounds), OUTDIR/staging.md (staging against the plain copy of
# the same run) and OUTDIR/calibrate.txt; raw outputs stay beside them.
#
#   scripts/gpu-perf.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-perf.sh OUTDIR}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1
machine=$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader)
nvcc -O2 -o /tmp/copybench bench/cref/copybench.c -lcuda
for round in 1 2 3; do
	/tmp/copybench pageable pinned >"$out/cref$round.txt"
	bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkCopy(From|To)(Host|Pinned)$' -test.benchtime 0.3s >"$out/gocopy$round.txt"
done
bin/tests/cuda.test -test.run '^$' -test.bench '^Benchmark(Copy(From|To)Host|Upload|Download)' -test.benchtime 0.5s -test.benchmem >"$out/gostaging.txt"
bin/gocuda calibrate >"$out/calibrate.txt"
{
	echo "Measured $(date -u +%Y-%m-%d) on $machine; medians of 3 interleaved rounds"
	python3 bench/copyreport.py "$out/cref1.txt,$out/cref2.txt,$out/cref3.txt" "$out/gocopy1.txt,$out/gocopy2.txt,$out/gocopy3.txt"
} >"$out/copy.md"
{
	echo "Measured $(date -u +%Y-%m-%d) on $machine, GOMAXPROCS=$(nproc)"
	python3 bench/stagingreport.py "$out/gostaging.txt"
} >"$out/staging.md"
cat "$out/copy.md" "$out/staging.md" "$out/calibrate.txt"
