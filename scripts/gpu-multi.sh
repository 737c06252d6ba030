#!/usr/bin/env bash
# The multi-process and multi-GPU checks, after scripts/gpu-build.sh here:
# the nccl tests (TestProcesses starts two ranks in processes of their own)
# and, on two or more GPUs, the peer tests, on both backends, with
# GOCUDA_REQUIRE_GPU=1; then two ranks started as a launcher starts them
# (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) running BenchmarkLaunched
# (all-reduce and all-to-all bus bandwidth, 16-256 MiB) beside
# bench/pyref/torch_collectives.py in the same run, through the same NCCL library
# as PyTorch's. On one GPU the two ranks share it over NCCL's socket
# transport (they pass for two hosts: see nccl/procs_test.go); on two or
# more, over NVLink or PCIe, then again over the socket transport
# (NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1), and the one-process all-reduce
# (BenchmarkAllReduce) and peer copies are measured too. Logs and tables
# go to OUTDIR. NVLink multicast stays off (NCCL_NVLS_ENABLE=0): see
# CONTRIBUTING.md.
#
#   scripts/gpu-multi.sh OUTDIR          the tests, then the bandwidth tables
#   scripts/gpu-multi.sh OUTDIR tests    the tests alone
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-multi.sh OUTDIR [tests]}
only=${2:-}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
nvidia-smi topo -m >"$out/topology.txt" 2>&1
# PyTorch's NCCL, for both sides of the comparison.
. scripts/torch-nccl.sh
echo "GPUs: $gpus; NCCL: ${GOCUDA_LIBNCCL:-libnccl.so.2 from the loader path}" | tee "$out/setup.txt"
rc=0
for set in tests tests-cgo; do
	(cd nccl && ../bin/$set/nccl.test -test.v -test.count=1) >"$out/$set-nccl.log" 2>&1 || rc=1
	if [ "$gpus" -ge 2 ]; then
		bin/$set/cuda.test -test.v -test.count=1 -test.run 'Peer' >"$out/$set-peer.log" 2>&1 || rc=1
	fi
	grep -E -- '^(--- |ok|FAIL)' "$out/$set-nccl.log" "$out/$set-peer.log" 2>/dev/null | grep -v -- '--- PASS' || true
	grep -E -- '^\s+--- (PASS|FAIL|SKIP): TestProcesses' "$out/$set-nccl.log" || true
done
if [ "$only" = tests ]; then
	exit $rc
fi

# ranks NAME [VAR=VALUE...]: BenchmarkLaunched as two launched ranks, with
# the variables given; rank 0's lines into OUTDIR/go-NAME.txt.
port=29400
ranks() {
	local name=$1
	shift
	port=$((port + 1))
	local pids=()
	for r in 0 1; do
		env "$@" RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			bin/tests/nccl.test -test.run '^$' -test.bench '^BenchmarkLaunched$' -test.benchtime 30x >"$out/go-$name-rank$r.txt" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	cp "$out/go-$name-rank0.txt" "$out/go-$name.txt"
}

# table NAME: gocuda's rank 0 beside PyTorch's, by operation and size.
table() {
	python3 - "$out/go-$1.txt" "$out/torch-$1.txt" <<'PY'
import re, sys
go = {(m.group(1), int(m.group(2)) << 20): float(m.group(3))
      for m in re.finditer(r"BenchmarkLaunched/(\w+)/(\d+)MiB\S*\s.*?([\d.]+) busbw-GB/s", open(sys.argv[1]).read())}
torch = {(f[0], int(f[1])): float(f[3]) for f in (l.split() for l in open(sys.argv[2])) if len(f) == 4 and f[0] in ("allreduce", "alltoall")}
print("| operation | size | gocuda busbw GB/s | PyTorch busbw GB/s | ratio |")
print("|---|---|---|---|---|")
for key in sorted(go):
    t = torch.get(key)
    ratio = f"{go[key] / t:.3f}x" if t else "-"
    print(f"| {key[0]} | {key[1] >> 20} MiB | {go[key]:.3f} | {t if t is not None else '-'} | {ratio} |")
PY
}

transports=socket
if [ "$gpus" -ge 2 ]; then
	transports="p2p socket"
fi
{
	echo "Measured $(date -u +%Y-%m-%d) on $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs), two processes, $(cat "$out/setup.txt")"
	for tr in $transports; do
		vars=()
		if [ "$tr" = socket ] && [ "$gpus" -ge 2 ]; then
			vars=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
		fi
		for round in 1 2; do
			ranks "$tr$round" ${vars[@]+"${vars[@]}"}
			if [ "$tr" = socket ] && [ "$gpus" -ge 2 ]; then
				SOCKET=1 python3 bench/pyref/torch_collectives.py >"$out/torch-$tr$round.txt" 2>&1 || rc=1
			else
				python3 bench/pyref/torch_collectives.py >"$out/torch-$tr$round.txt" 2>&1 || rc=1
			fi
			echo
			echo "$tr transport, round $round (gocuda first, then PyTorch):"
			echo
			table "$tr$round"
		done
	done
	if [ "$gpus" -ge 2 ]; then
		bin/tests/nccl.test -test.run '^$' -test.bench '^BenchmarkAllReduce$' -test.benchtime 20x >"$out/go-allreduce.txt" 2>&1 || rc=1
		bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkCopyPeer$' -test.benchtime 10x >"$out/go-peer.txt" 2>&1 || rc=1
		python3 bench/pyref/torch_allreduce.py >"$out/torch-allreduce.txt" 2>&1 || rc=1
		echo
		echo "One process driving every GPU (BenchmarkAllReduce) beside bench/pyref/torch_allreduce.py:"
		echo
		echo "| size | gocuda busbw GB/s | PyTorch busbw GB/s | ratio |"
		echo "|---|---|---|---|"
		python3 - "$out/go-allreduce.txt" "$out/torch-allreduce.txt" <<'PY'
import re, sys
go = {int(m.group(1)) << 20: float(m.group(2)) for m in re.finditer(r"AllReduce/(\d+)MiB\S*\s.*?([\d.]+) busbw-GB/s", open(sys.argv[1]).read())}
torch = {int(f[1]): float(f[3]) for f in (l.split() for l in open(sys.argv[2])) if f and f[0] == "allreduce"}
for size in sorted(go):
    t = torch.get(size)
    print(f"| {size >> 20} MiB | {go[size]:.1f} | {t if t is not None else '-'} | {go[size] / t:.2f}x |" if t else f"| {size >> 20} MiB | {go[size]:.1f} | - | - |")
PY
		echo
		grep -E '^BenchmarkCopyPeer' "$out/go-peer.txt" | awk '{print "peer copy", $1, $5, $6}'
	fi
} >"$out/multi.md"
cat "$out/multi.md"
exit $rc
