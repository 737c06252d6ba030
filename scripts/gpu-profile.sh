#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: CPU profiles (and,
# for staging, execution traces) of benchmarks, to see where the time goes
# beyond the driver's own (read them here with go tool pprof and go tool
# trace; the device machines have no perf).
#
#   calls     the call-overhead benchmarks, purego and cgo
#   staging   Upload and Download at 16 MiB, purego, with the CPU's model and flags
#   mid       Upload and Download at 196 KiB, 256 KiB and 1 MiB, purego
#   ordered   AllocAsync + Free (warm pool, 256 B) and graph capture, purego and cgo
#   stream    ReadFrom of a pipe, and the pipe read into Go and into page-locked memory, purego
#
#   scripts/gpu-profile.sh OUTDIR [calls] [staging] [mid] [ordered] [stream]     (default: calls)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-profile.sh OUTDIR [calls] [staging] [mid] [ordered] [stream]}
shift
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1
for section in ${*:-calls}; do
	case $section in
	calls)
		for set in tests tests-cgo; do
			for bench in StreamQuery LaunchAsync; do
				bin/$set/cuda.test -test.run '^$' -test.bench "^Benchmark$bench\$" -test.benchtime 2s \
					-test.cpuprofile "$out/$set-$bench.pprof" >"$out/$set-$bench.txt" 2>&1
			done
		done
		;;
	staging)
		grep -m1 'model name' /proc/cpuinfo >"$out/cpu.txt"
		grep -m1 '^flags' /proc/cpuinfo >>"$out/cpu.txt"
		for bench in Upload Download; do
			bin/tests/cuda.test -test.run '^$' -test.bench "^Benchmark$bench\$/^16MiB\$" -test.benchtime 2s \
				-test.cpuprofile "$out/$bench.pprof" >"$out/$bench.txt" 2>&1
			bin/tests/cuda.test -test.run '^$' -test.bench "^Benchmark$bench\$/^16MiB\$" -test.benchtime 100x \
				-test.trace "$out/$bench.trace" >>"$out/$bench.txt" 2>&1
		done
		;;
	mid)
		for bench in Upload Download; do
			for size in 196KiB 256KiB 1MiB; do
				bin/tests/cuda.test -test.run '^$' -test.bench "^Benchmark$bench\$/^$size\$" -test.benchtime 4s \
					-test.cpuprofile "$out/$bench-$size.pprof" >"$out/$bench-$size.txt" 2>&1
			done
		done
		;;
	ordered)
		for set in tests tests-cgo; do
			bin/$set/cuda.test -test.run '^$' -test.bench '^BenchmarkAllocAsync$/^async/256B$' -test.benchtime 2s \
				-test.cpuprofile "$out/$set-AllocAsync.pprof" >"$out/$set-AllocAsync.txt" 2>&1
			bin/$set/cuda.test -test.run '^$' -test.bench '^BenchmarkGraphCapture$' -test.benchtime 2s \
				-test.cpuprofile "$out/$set-GraphCapture.pprof" >"$out/$set-GraphCapture.txt" 2>&1
		done
		;;
	stream)
		# ReadFrom of a pipe beside the pipe read into Go memory and into
		# page-locked memory: where ReadFrom's time goes beyond the source's.
		for sub in 'source/^into=4MiB$' 'source/^into=pinned4MiB$' 'ReadFrom/^slots=4$/^chunk=1024KiB$'; do
			name=$(echo "${sub%%/*}-${sub##*=}" | tr -d '^$')
			bin/tests/cuda.test -test.run '^$' -test.bench "^BenchmarkReadFromStream\$/^pipe\$/^$sub" -test.benchtime 20x \
				-test.cpuprofile "$out/pipe-$name.pprof" >"$out/pipe-$name.txt" 2>&1
			bin/tests/cuda.test -test.run '^$' -test.bench "^BenchmarkReadFromStream\$/^pipe\$/^$sub" -test.benchtime 3x \
				-test.trace "$out/pipe-$name.trace" >>"$out/pipe-$name.txt" 2>&1
		done
		;;
	*)
		echo "gpu-profile.sh: unknown section $section" >&2
		exit 2
		;;
	esac
done
