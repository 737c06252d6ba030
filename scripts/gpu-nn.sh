#!/usr/bin/env bash
# Issue 52's layers on the GPU machine, in one call: PyTorch's outputs on
# fixed inputs (bench/pyref/nn_ref.py, into OUTDIR/nn-ref.json), package
# nn's tests on both backends (the real driver, GOCUDA_REQUIRE_GPU=1;
# TestLayersAgainstPyTorch compares with that file), then
# BenchmarkLayers (nn/layer_bench_test.go, GPT-2's shapes in bf16 and f32)
# from the purego test binary, then the same cases in PyTorch
# (bench/pyref/nn_peers.py), then the table of both
# (bench/report/nnreport.py), each step under its own time limit so that
# one slow step leaves the others' logs. Needs scripts/gpu-build.sh ./nn
# here first (bin.tgz unpacked there).
#
#   scripts/gpu-nn.sh OUTDIR [TESTS_S GO_S PEERS_S]
#
# OUTDIR gets machine.txt, nn-ref.json and nn-ref.err, tests-nn.log and
# tests-cgo-nn.log, nn-go.txt
# (-test.count NN_COUNT rounds, default 3, of -test.benchtime
# NN_BENCHTIME, default 0.2s), nn-peers.json and nn-peers.err, nn.md (the
# table, worst ratio first) and summary.txt. The defaults' worst case is
# about 9.5 minutes, within one 10-minute device call; TESTS_S=0 skips the
# tests (and the reference file), for a call of the benchmarks alone;
# GOCUDA_NN_OPS (a comma list of ops, such as layernorm,softmax_causal)
# selects a subset of the benchmarks on both sides. PYTHON names the
# Python with PyTorch (default /opt/torch/.venv/bin/python, else python3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-nn.sh OUTDIR [TESTS_S GO_S PEERS_S]}
tests_s=${2:-200} go_s=${3:-170} peers_s=${4:-150}
bin=$PWD/bin
py=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=python3
mkdir -p "$out"
out=$(cd "$out" && pwd) # the tests run in nn/
: >"$out/summary.txt"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv >"$out/machine.txt" 2>&1
if [ "$tests_s" -gt 0 ]; then
	timeout 60 "$py" bench/pyref/nn_ref.py "$out/nn-ref.json" 2>"$out/nn-ref.err"
	echo "nn_ref.py: exit $?" >>"$out/summary.txt"
	[ -s "$out/nn-ref.json" ] && export GOCUDA_NN_TORCH_REF=$out/nn-ref.json
	start=$SECONDS
	for set in tests tests-cgo; do
		left=$((tests_s - (SECONDS - start)))
		[ "$left" -gt 0 ] || left=1
		(cd nn && timeout "$left" "$bin/$set/nn.test" -test.count 1 -test.v) >"$out/$set-nn.log" 2>&1
		echo "$set/nn: exit $? ($(grep -c -- '--- FAIL' "$out/$set-nn.log") FAIL lines)" >>"$out/summary.txt"
	done
fi
(cd nn && timeout "$go_s" "$bin/tests/nn.test" -test.run '^$' -test.bench '^BenchmarkLayers$' \
	-test.benchtime "${NN_BENCHTIME:-0.2s}" -test.count "${NN_COUNT:-3}") >"$out/nn-go.txt" 2>&1
echo "BenchmarkLayers: exit $?" >>"$out/summary.txt"
timeout "$peers_s" "$py" bench/pyref/nn_peers.py >"$out/nn-peers.json" 2>"$out/nn-peers.err"
echo "nn_peers.py: exit $?" >>"$out/summary.txt"
python3 bench/report/nnreport.py "$out/nn-go.txt" "$out/nn-peers.json" >"$out/nn.md" 2>>"$out/summary.txt"
echo "nnreport.py: exit $?" >>"$out/summary.txt"
cat "$out/summary.txt" "$out/nn.md"
