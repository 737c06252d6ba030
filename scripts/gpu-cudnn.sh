#!/usr/bin/env bash
# Package cudnn on the GPU machine, in one call: its tests on both backends
# against the real cuDNN 9 (found as a user's program finds it: here in
# PyTorch's wheel, nvidia/cudnn/lib, through VIRTUAL_ENV), then issue 52's
# convolution benchmarks: BenchmarkConv (ResNet-50's convolutions at batch
# 32, bfloat16 NHWC and NCHW, float32 NCHW) from the prebuilt test binary
# (purego), the same cases in PyTorch (bench/pyref/conv_peers.py:
# F.conv2d with cudnn.benchmark on), and the table of both, each step under
# its own time limit. Needs scripts/gpu-build.sh ./cudnn here first
# (bin.tgz unpacked there).
#
#   scripts/gpu-cudnn.sh OUTDIR [TESTS_S GO_S PEERS_S]
#
# OUTDIR gets machine.txt, tests-cudnn.log and tests-cgo-cudnn.log (TESTS_S
# seconds for both, default 240; 0 skips them), conv-go.txt (-test.count
# CONV_COUNT rounds, default 3, of -test.benchtime CONV_BENCHTIME, default
# 0.1s; GO_S seconds, default 300), conv-peers.json and .err (PEERS_S,
# default 300), conv.md and summary.txt. GOCUDA_CONV_CASES (a comma list of
# case-name prefixes, such as fwd/bf16/NHWC) selects a subset on both
# sides. PYTHON names the interpreter with PyTorch (default
# /opt/torch/.venv/bin/python, else python3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-cudnn.sh OUTDIR [TESTS_S GO_S PEERS_S]}
tests_s=${2:-240} go_s=${3:-300} peers_s=${4:-300}
bin=$PWD/bin
py=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=python3
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so
# cuDNN, cuBLAS and NVRTC in PyTorch's virtual environment's wheels.
[ -d /opt/torch/.venv ] && export VIRTUAL_ENV=${VIRTUAL_ENV:-/opt/torch/.venv}
nvidia-smi --query-gpu=name,driver_version --format=csv >"$out/machine.txt" 2>&1
ls "${VIRTUAL_ENV:-/nonexistent}"/lib/python3*/site-packages/nvidia/cudnn/lib >>"$out/machine.txt" 2>&1
: >"$out/summary.txt"
if [ "$tests_s" -gt 0 ]; then
	start=$SECONDS
	for set in tests tests-cgo; do
		left=$((tests_s - (SECONDS - start)))
		[ "$left" -gt 0 ] || left=1
		(cd cudnn && timeout "$left" "$bin/$set/cudnn.test" -test.count 1 -test.v) >"$out/$set-cudnn.log" 2>&1
		echo "$set/cudnn: exit $? ($(grep -c -- '--- FAIL' "$out/$set-cudnn.log") FAIL lines; $(grep -m1 'cuDNN .* from' "$out/$set-cudnn.log" | sed 's/^ *//'))" >>"$out/summary.txt"
	done
fi
(cd cudnn && timeout "$go_s" "$bin/tests/cudnn.test" -test.run '^$' -test.bench '^BenchmarkConv$' \
	-test.benchtime "${CONV_BENCHTIME:-0.1s}" -test.count "${CONV_COUNT:-3}") >"$out/conv-go.txt" 2>&1
echo "BenchmarkConv: exit $?" >>"$out/summary.txt"
timeout "$peers_s" "$py" bench/pyref/conv_peers.py >"$out/conv-peers.json" 2>"$out/conv-peers.err"
echo "conv_peers.py: exit $?" >>"$out/summary.txt"
"$py" bench/pyref/conv_peers.py --report "$out/conv-go.txt" "$out/conv-peers.json" >"$out/conv.md" 2>>"$out/summary.txt"
echo "conv report: exit $?" >>"$out/summary.txt"
cat "$out/summary.txt" "$out/conv.md"
