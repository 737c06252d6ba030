#!/usr/bin/env bash
# Issue 51's dense benchmarks (item 4) and cuSOLVER's checks on the GPU
# machine, in one call: package cusolver's tests and its checks against
# gonum (cusolver/gonumtest) on both backends, when SOLVER_TESTS_S is set
# (seconds); then BenchmarkSolver from the prebuilt test binary (purego),
# the same cases in PyTorch and CuPy (bench/pyref/solver_peers.py), and the
# table of both (bench/report/solverreport.py), each step under its own
# time limit. Needs scripts/gpu-build.sh ./cusolver/... ./cusolver/gonumtest
# here first (bin.tgz unpacked there).
#
#   scripts/gpu-solver.sh OUTDIR [GO_S PEERS_S]
#
# OUTDIR gets machine.txt, the tests' logs, solver-go.txt (-test.count
# SOLVER_COUNT rounds, default 3, of -test.benchtime SOLVER_BENCHTIME,
# default 0.2s), solver-peers.json and .err, solver.md and summary.txt.
# GOCUDA_SOLVER_OPS (a comma list of ops, such as lu_solve,svd) selects a
# subset on both sides.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-solver.sh OUTDIR [GO_S PEERS_S]}
go_s=${2:-300} peers_s=${3:-300}
bin=$PWD/bin
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv >"$out/machine.txt" 2>&1
if [ "${SOLVER_TESTS_S:-0}" -gt 0 ]; then
	start=$SECONDS
	for set in tests tests-cgo; do
		for t in cusolver:cusolver cusolver_gonumtest:cusolver/gonumtest; do
			left=$((SOLVER_TESTS_S - (SECONDS - start)))
			(cd "${t#*:}" && timeout "$left" "$bin/$set/${t%%:*}.test" -test.count 1 -test.v) >"$out/$set-${t%%:*}.log" 2>&1
			echo "$set/${t%%:*}: exit $?" >>"$out/summary.txt"
		done
	done
fi
(cd cusolver && timeout "$go_s" "$bin/tests/cusolver.test" -test.run '^$' -test.bench '^BenchmarkSolver$' \
	-test.benchtime "${SOLVER_BENCHTIME:-0.2s}" -test.count "${SOLVER_COUNT:-3}") >"$out/solver-go.txt" 2>&1
echo "BenchmarkSolver: exit $?" >>"$out/summary.txt"
timeout "$peers_s" python3 bench/pyref/solver_peers.py >"$out/solver-peers.json" 2>"$out/solver-peers.err"
echo "solver_peers.py: exit $?" >>"$out/summary.txt"
python3 bench/report/solverreport.py "$out/solver-go.txt" "$out/solver-peers.json" >"$out/solver.md" 2>>"$out/summary.txt"
echo "solverreport.py: exit $?" >>"$out/summary.txt"
cat "$out/summary.txt" "$out/solver.md"
