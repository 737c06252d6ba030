#!/usr/bin/env bash
# Issue 48's check of package compute on the GPU machine, in one call:
# compute's tests on both backends (and the root package's stream tests,
# whose scratch memory compute's reductions use), then the whole grid
# (BenchmarkGrid beside bench/pyref/compute_grid.py), each step under its own
# time limit so that one slow step leaves the others' logs. Needs
# scripts/gpu-build.sh ./compute . here first; the grid's table is made
# from OUTDIR's grid-go.txt and grid-peers.json by bench/report/gridreport.py.
#
#   scripts/gpu-compute.sh OUTDIR [TESTS_S GRID_S PEERS_S]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-compute.sh OUTDIR [TESTS_S GRID_S PEERS_S]}
tests_s=${2:-210} grid_s=${3:-200} peers_s=${4:-170}
bin=$PWD/bin
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv >"$out/machine.txt" 2>&1
start=$SECONDS
for set in tests tests-cgo; do
	left=$((tests_s - (SECONDS - start)))
	(cd compute && timeout "$left" "$bin/$set/compute.test" -test.count 1) >"$out/$set-compute.log" 2>&1
	echo "$set/compute: exit $?" >>"$out/summary.txt"
done
timeout 60 "$bin/tests/cuda.test" -test.run 'Stream|Capture' -test.count 1 >"$out/tests-cuda.log" 2>&1
echo "tests/cuda (Stream|Capture): exit $?" >>"$out/summary.txt"
(cd compute && timeout "$grid_s" "$bin/tests/compute.test" -test.run '^$' -test.bench '^BenchmarkGrid$' -test.benchtime "${GRID_BENCHTIME:-0.05s}") >"$out/grid-go.txt" 2>&1
echo "BenchmarkGrid: exit $?" >>"$out/summary.txt"
timeout "$peers_s" python3 bench/pyref/compute_grid.py >"$out/grid-peers.json" 2>"$out/grid-peers.err"
echo "compute_grid.py: exit $?" >>"$out/summary.txt"
cat "$out/summary.txt"
