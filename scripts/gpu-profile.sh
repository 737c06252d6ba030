#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: CPU profiles of the
# call-overhead benchmarks, purego and cgo, to see where a call's time goes
# beyond the driver's own (read them here with go tool pprof; the device
# machines have no perf).
#
#   scripts/gpu-profile.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-profile.sh OUTDIR}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1
for set in tests tests-cgo; do
	for bench in StreamQuery LaunchAsync; do
		bin/$set/cuda.test -test.run '^$' -test.bench "^Benchmark$bench\$" -test.benchtime 2s \
			-test.cpuprofile "$out/$set-$bench.pprof" >"$out/$set-$bench.txt" 2>&1
	done
done
