#!/usr/bin/env bash
# Issue 50's benchmarks (item 8) on the GPU machine, in one call: package
# nd's BenchmarkND from its prebuilt test binary (purego), then the same
# cases in PyTorch and CuPy (bench/pyref/nd_peers.py), then the table of
# both (bench/report/ndreport.py), each step under its own time limit so
# that one slow step leaves the others' logs. With ND_TESTS_S set (seconds),
# nd's tests run first on both backends. Needs scripts/gpu-build.sh ./nd
# here first (bin.tgz unpacked there).
#
#   scripts/gpu-nd.sh OUTDIR [GO_S PEERS_S]
#
# OUTDIR gets machine.txt, nd-go.txt (-test.count ND_COUNT rounds, default
# 3, of -test.benchtime ND_BENCHTIME, default 0.1s), call.prof (a CPU
# profile of the call-cost cases, ND_PROFILE_S seconds, default 60; 0
# skips it), nd-peers.json and nd-peers.err, nd.md (the table, worst
# ratio first) and summary.txt.
# GOCUDA_ND_OPS (a comma list of ops, such as add,matmul) selects a subset
# on both sides.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-nd.sh OUTDIR [GO_S PEERS_S]}
go_s=${2:-240} peers_s=${3:-240}
bin=$PWD/bin
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv >"$out/machine.txt" 2>&1
if [ "${ND_TESTS_S:-0}" -gt 0 ]; then
	start=$SECONDS
	for set in tests tests-cgo; do
		left=$((ND_TESTS_S - (SECONDS - start)))
		(cd nd && timeout "$left" "$bin/$set/nd.test" -test.count 1) >"$out/$set-nd.log" 2>&1
		echo "$set/nd: exit $?" >>"$out/summary.txt"
	done
fi
(cd nd && timeout "$go_s" "$bin/tests/nd.test" -test.run '^$' -test.bench '^BenchmarkND$' \
	-test.benchtime "${ND_BENCHTIME:-0.1s}" -test.count "${ND_COUNT:-3}") >"$out/nd-go.txt" 2>&1
echo "BenchmarkND: exit $?" >>"$out/summary.txt"
# Where a small call's host time goes: a CPU profile of the call-cost cases
# (go tool pprof -top OUTDIR/call.prof here; Go's profiles carry their
# symbols, so the stripped binary is enough).
if [ "${ND_PROFILE_S:-60}" -gt 0 ]; then
	(cd nd && timeout "${ND_PROFILE_S:-60}" "$bin/tests/nd.test" -test.run '^$' -test.bench '^BenchmarkND$/^call_' \
		-test.benchtime 2s -test.cpuprofile "$out/call.prof") >"$out/call-profile.txt" 2>&1
	echo "call profile: exit $?" >>"$out/summary.txt"
fi
timeout "$peers_s" python3 bench/pyref/nd_peers.py >"$out/nd-peers.json" 2>"$out/nd-peers.err"
echo "nd_peers.py: exit $?" >>"$out/summary.txt"
python3 bench/report/ndreport.py "$out/nd-go.txt" "$out/nd-peers.json" >"$out/nd.md" 2>>"$out/summary.txt"
echo "ndreport.py: exit $?" >>"$out/summary.txt"
cat "$out/summary.txt" "$out/nd.md"
