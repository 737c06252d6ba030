#!/usr/bin/env bash
# Issue 52's attention on the GPU machine, in one call: package nn's
# attention and KV cache tests on both backends (the real driver,
# GOCUDA_REQUIRE_GPU=1), then BenchmarkAttention
# (nn/attention_bench_test.go) from the purego test binary, then the same
# cases in PyTorch (bench/pyref/attention_peers.py:
# scaled_dot_product_attention under each backend, FlashAttention's the
# bar), then the table of both (attention_peers.py --report), each step
# under its own time limit so that one slow step leaves the others' logs.
# Needs scripts/gpu-build.sh ./nn here first (bin.tgz unpacked there).
#
#   scripts/gpu-attention.sh OUTDIR [TESTS_S GO_S PEERS_S]
#
# OUTDIR gets machine.txt, tests-attention.log and tests-cgo-attention.log,
# attention-go.txt (-test.count ATTN_COUNT rounds, default 3, of
# -test.benchtime ATTN_BENCHTIME, default 0.2s), attention-peers.json and
# .err, attention.md (the table) and summary.txt; where scripts/gpu-build.sh
# ./cudnn built cudnn's test binary too, the Go time is shared with
# cudnn's BenchmarkAttention (cuDNN's fused attention, the same case
# names): attention-cudnn-go.txt and attention-cudnn.md. nn's benchmark
# runs its own kernel unless GOCUDA_NN_ATTENTION names another backend
# (auto, cudnn). A limit of 0 skips its
# step (the table needs both benchmark files: from an earlier run into the
# same OUTDIR, too); GOCUDA_ATTN_OPS (a comma list of ops: sdpa_causal, sdpa, decode)
# selects a subset on both sides; GOCUDA_ATTN_TILES="4,1,64;4,2,64" times
# the tensor-core kernel's other tiles too (warps, m-tiles of 16 rows a
# warp, keys a tile). PYTHON names the Python with PyTorch (default
# /opt/torch/.venv/bin/python, else python3).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-attention.sh OUTDIR [TESTS_S GO_S PEERS_S]}
tests_s=${2:-180} go_s=${3:-240} peers_s=${4:-180}
bin=$PWD/bin
py=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=python3
mkdir -p "$out"
: >"$out/summary.txt"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so
# cuDNN is found as a user's program finds it: in PyTorch's wheel.
[ -d /opt/torch/.venv ] && export VIRTUAL_ENV=${VIRTUAL_ENV:-/opt/torch/.venv}
nvidia-smi --query-gpu=name,driver_version --format=csv >"$out/machine.txt" 2>&1
if [ "$tests_s" -gt 0 ]; then
	start=$SECONDS
	for set in tests tests-cgo; do
		left=$((tests_s - (SECONDS - start)))
		[ "$left" -gt 0 ] || left=1
		(cd nn && timeout "$left" "$bin/$set/nn.test" -test.run 'Attention|KVCache' -test.count 1 -test.v) >"$out/$set-attention.log" 2>&1
		echo "$set/nn Attention|KVCache: exit $? ($(grep -c -- '--- FAIL' "$out/$set-attention.log") FAIL lines)" >>"$out/summary.txt"
	done
fi
if [ "$go_s" -gt 0 ]; then
	# nn's own kernel (or what GOCUDA_NN_ATTENTION names), then, where
	# the cudnn test binary was built, cuDNN's fused attention under the
	# same case names, each in half the time.
	share=$go_s
	[ -x "$bin/tests/cudnn.test" ] && share=$((go_s / 2))
	(cd nn && GOCUDA_NN_ATTENTION=${GOCUDA_NN_ATTENTION:-own} timeout "$share" "$bin/tests/nn.test" -test.run '^$' -test.bench '^BenchmarkAttention$' \
		-test.benchtime "${ATTN_BENCHTIME:-0.2s}" -test.count "${ATTN_COUNT:-3}") >"$out/attention-go.txt" 2>&1
	echo "BenchmarkAttention (nn): exit $?" >>"$out/summary.txt"
	if [ -x "$bin/tests/cudnn.test" ]; then
		(cd cudnn && timeout "$share" "$bin/tests/cudnn.test" -test.run '^$' -test.bench '^BenchmarkAttention$' \
			-test.benchtime "${ATTN_BENCHTIME:-0.2s}" -test.count "${ATTN_COUNT:-3}") >"$out/attention-cudnn-go.txt" 2>&1
		echo "BenchmarkAttention (cudnn): exit $?" >>"$out/summary.txt"
	fi
fi
if [ "$peers_s" -gt 0 ]; then
	timeout "$peers_s" "$py" bench/pyref/attention_peers.py >"$out/attention-peers.json" 2>"$out/attention-peers.err"
	echo "attention_peers.py: exit $?" >>"$out/summary.txt"
fi
if [ -s "$out/attention-go.txt" ] && [ -s "$out/attention-peers.json" ]; then
	python3 bench/pyref/attention_peers.py --report "$out/attention-go.txt" "$out/attention-peers.json" >"$out/attention.md" 2>>"$out/summary.txt"
	echo "attention_peers.py --report: exit $?" >>"$out/summary.txt"
fi
if [ -s "$out/attention-cudnn-go.txt" ] && [ -s "$out/attention-peers.json" ]; then
	python3 bench/pyref/attention_peers.py --report "$out/attention-cudnn-go.txt" "$out/attention-peers.json" >"$out/attention-cudnn.md" 2>>"$out/summary.txt"
	echo "attention_peers.py --report (cudnn): exit $?" >>"$out/summary.txt"
fi
cat "$out/summary.txt" "$out/attention.md" "$out/attention-cudnn.md" 2>/dev/null
