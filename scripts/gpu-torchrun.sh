#!/usr/bin/env bash
# gocuda's ranks as torchrun starts them, on the GPU machine after
# scripts/gpu-build.sh here: torchrun's agent serves its store on
# MASTER_PORT and tells the workers so (TORCHELASTIC_USE_AGENT_STORE=True),
# and gocuda's ranks must meet in that store (nccl/internal/rendezvous,
# torchstore.go).
#
#   1. TestTorchStore against PyTorch's own store (torch.distributed.TCPStore),
#      both backends, in place of the test's fake store;
#   2. TestProcesses' steps (all-reduce, split, send and receive, all-to-all,
#      a registered buffer, the other rank's abort) in two workers started by
#      torchrun, with its c10d rendezvous (--standalone) and with its static
#      one (--master-port), sharing the GPU where there is one;
#   3. with OLDTEST, a test binary built before torchstore.go, the same under
#      torchrun --standalone: the failure the store fixed, for the record.
#
# Logs in OUTDIR; a summary is printed.
#
#   scripts/gpu-torchrun.sh OUTDIR [OLDTEST]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-torchrun.sh OUTDIR [OLDTEST]}
old=${2:-}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0
. scripts/torch-nccl.sh
python3 -c 'import torch; print("PyTorch", torch.__version__)' | tee "$out/setup.txt"
rc=0

# 1. PyTorch's store, serving until this script ends.
port=29631
python3 - "$port" >"$out/store.log" 2>&1 <<'PY' &
import sys, time
import torch.distributed as dist
store = dist.TCPStore("127.0.0.1", int(sys.argv[1]), is_master=True, wait_for_workers=False)
print("serving", flush=True)
time.sleep(600)
PY
store=$!
trap 'kill $store 2>/dev/null' EXIT
for _ in $(seq 100); do
	grep -q serving "$out/store.log" && break
	sleep 0.1
done
for set in tests tests-cgo; do
	(cd nccl/internal/rendezvous && GOCUDA_TEST_TORCHSTORE=127.0.0.1:$port ../../../bin/$set/nccl_internal_rendezvous.test -test.run '^TestTorchStore$' -test.v -test.count=1) >"$out/$set-store.log" 2>&1
	echo "$set TestTorchStore on PyTorch's store: exit $?" | tee -a "$out/summary.txt"
done

# torchrun NAME BINARY [ARGS...]: TestProcesses' ranks started by torchrun.
torchrun() {
	local name=$1 binary=$2
	shift 2
	GOCUDA_TEST_NCCL_PROC=1 timeout 240 python3 -m torch.distributed.run "$@" --nproc-per-node 2 --no-python \
		"$binary" -test.run '^TestProcesses$' -test.v -test.count=1 >"$out/$name.log" 2>&1
	local code=$?
	echo "torchrun $name: exit $code, $(grep -c -- '--- PASS: TestProcesses ' "$out/$name.log") of 2 ranks passed" | tee -a "$out/summary.txt"
	return $code
}
torchrun standalone bin/tests/nccl.test --standalone || rc=1
torchrun static bin/tests-cgo/nccl.test --nnodes 1 --master-addr 127.0.0.1 --master-port 29641 || rc=1
if [ -n "$old" ]; then
	torchrun old-standalone "$old" --standalone
	grep -m3 -E 'cannot listen|ErrRendezvous|rendezvous failed' "$out/old-standalone.log" | tee -a "$out/summary.txt"
fi
grep -E -- '--- (PASS|FAIL)' "$out"/*-store.log | grep -v -- '--- PASS: TestTorchStore/' || true
exit $rc
