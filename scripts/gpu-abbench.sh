#!/usr/bin/env bash
# A before-and-after of one package's benchmarks on the GPU machine, in
# one call: bin/ab/NAME-before.test (an earlier commit's test binary,
# built here with go test -c into bin/ab), any other bin/ab/NAME-VARIANT.test
# (a variant's), and bin/tests/NAME.test (the working tree's,
# scripts/gpu-build.sh), run in turns, ROUNDS rounds each (default 2), so
# that all see the same machine and the same drift. The environment passes
# through (GOCUDA_GRID_OPS and its kin select cells).
# Logs: OUT/NAME-before-K.txt, OUT/NAME-VARIANT-K.txt and OUT/NAME-after-K.txt.
#
#   scripts/gpu-abbench.sh OUT NAME PKGDIR BENCH [BENCHTIME]
#   e.g. scripts/gpu-abbench.sh /tmp/o cusolver cusolver '^BenchmarkSolver$' 0.2s
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-abbench.sh OUT NAME PKGDIR BENCH [BENCHTIME]}
name=${2:?name} dir=${3:?package folder} bench=${4:?benchmark pattern} benchtime=${5:-0.1s}
bin=$PWD/bin
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so
for k in $(seq "${ROUNDS:-2}"); do
	for test in "$bin"/ab/"$name"-*.test "$bin/tests/$name.test"; do
		side=after
		[ "$test" = "$bin/tests/$name.test" ] || side=${test#"$bin/ab/$name-"} side=${side%.test}
		[ -x "$test" ] || { echo "no $test" >&2; exit 2; }
		(cd "$dir" && "$test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime") >"$out/$name-$side-$k.txt" 2>&1
		echo "$name $side round $k: exit $?" >>"$out/summary.txt"
	done
done
