#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: CPU profiles of the
# call-overhead benchmarks, purego and cgo, to see where a call's time goes
# beyond the driver's own. Go profiles (read here with go tool pprof) and,
# where perf is installed, perf's view including the driver library.
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
		if command -v perf >/dev/null; then
			perf record -q -g -o "/tmp/$set-$bench.perf" bin/$set/cuda.test -test.run '^$' -test.bench "^Benchmark$bench\$" -test.benchtime 2s >/dev/null 2>&1 &&
				perf report -i "/tmp/$set-$bench.perf" --no-children --stdio --percent-limit 1.5 >"$out/$set-$bench.perf.txt" 2>&1
		fi
	done
done
command -v perf >/dev/null || echo "perf: not installed" >"$out/perf-missing.txt"
