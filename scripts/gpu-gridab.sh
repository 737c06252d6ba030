#!/usr/bin/env bash
# A change's effect on cells of compute's grid, on the GPU machine, in one
# call: BenchmarkGrid of bin/ab/compute-before.test (an earlier commit's
# compute test binary) and of bin/tests/compute.test (the working tree's,
# scripts/gpu-build.sh ./compute), in ROUNDS interleaved rounds (default
# 2) through scripts/gpu-abbench.sh, the same cells in PyTorch and CuPy
# (bench/pyref/compute_grid.py) once, and a table for each side
# (bench/report/gridreport.py: the median of the rounds beside the peers).
# GOCUDA_GRID_CELLS (op/dtype/shape, comma list) or GOCUDA_GRID_OPS and its
# kin pick the cells on both sides.
#
#   scripts/gpu-gridab.sh OUT [BENCHTIME]     (BENCHTIME: 0.1s)
#
# OUT gets compute-{before,after}-K.txt, peers.json and .err,
# before.md, after.md and summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-gridab.sh OUT [BENCHTIME]}
mkdir -p "$out"
scripts/gpu-abbench.sh "$out" compute compute '^BenchmarkGrid$' "${2:-0.1s}"
python3 bench/pyref/compute_grid.py >"$out/peers.json" 2>"$out/peers.err"
echo "compute_grid.py: exit $?" >>"$out/summary.txt"
for side in before after; do
	files=$(ls "$out"/compute-"$side"-*.txt | paste -sd, -)
	python3 bench/report/gridreport.py "$files" "$out/peers.json" >"$out/$side.md"
done
cat "$out/summary.txt"
for side in before after; do
	echo "== $side"
	sed -n '/^[0-9]* cells/p' "$out/$side.md"
done
