#!/usr/bin/env bash
# Runs on the GPU machine what scripts/gpu-build.sh built (both sets of test
# binaries: purego and cgo), with
# GOCUDA_REQUIRE_GPU=1 so that a missing GPU fails instead of falling back to
# the fake driver. Logs go to LOGDIR, one file per test binary, packed at the
# end into LOGDIR/logs.tgz; the summary is printed last (and saved as
# LOGDIR/summary.txt).
#
#   scripts/gpu-run.sh LOGDIR [-bench REGEXP] [-run REGEXP] [-sets tests|tests-cgo] [-only REGEXP] [-for SECONDS]
#
# -only runs the test binaries whose manifest name (cuda, compute, nd,
# cublas_gonumtest, ...) the extended regular expression matches in full,
# in the manifest's order: the rest of a suite that one call cut short.
# -for stops the run SECONDS from its start: the binary running then is
# killed (reported CUT, with the tests it had passed) and the rest are
# reported NOT RUN, so that the summary and the packed logs still come
# back from a device call of bounded length.
# -sets runs one set only: the whole suite on both backends takes longer
# than one device call of 10 minutes with a cold NVRTC cache (purego
# about 8 minutes on an H100), so a session splits it into two calls.
set -uo pipefail
cd "$(dirname "$0")/.."
logdir=${1:?usage: gpu-run.sh LOGDIR [-bench REGEXP] [-run REGEXP] [-sets tests|tests-cgo] [-only REGEXP] [-for SECONDS]}
shift
bench="" run="." sets="tests tests-cgo" only=".*" deadline=""
while [ $# -gt 0 ]; do
	case $1 in
	-bench) bench=$2; shift 2 ;;
	-run) run=$2; shift 2 ;;
	-sets) sets=$2; shift 2 ;;
	-only) only=$2; shift 2 ;;
	-for) deadline=$(($(date +%s) + $2)); shift 2 ;;
	*) echo "gpu-run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
bin=$PWD/bin
mkdir -p "$logdir"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so NCCL_NVLS_ENABLE=0

{ nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv; } >"$logdir/machine.txt" 2>&1
"$bin/gocuda" info >"$logdir/info.txt" 2>&1
echo "gocuda info: exit $?" >>"$logdir/info.txt"

# The driver's occupancy answers from C, which TestOccupancyMatchesC
# compares with gocuda's (bench/cref/occupancy.c).
if nvcc -O2 -o "$logdir/occupancy" bench/cref/occupancy.c -lcuda >"$logdir/occupancy-build.log" 2>&1 &&
	"$logdir/occupancy" testdata/occupancy.ptx testdata/kernels.ptx >"$logdir/occupancy.txt"; then
	export GOCUDA_CREF_OCCUPANCY=$logdir/occupancy.txt
fi

# cuRAND's numbers from C, which TestMatchesC (package curand) compares
# with gocuda's bit for bit (bench/cref/curand.c).
if nvcc -O2 -o "$logdir/curand" bench/cref/curand.c -lcurand -lcuda >"$logdir/curand-build.log" 2>&1 &&
	LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$logdir/curand" >"$logdir/curand.txt"; then
	export GOCUDA_CREF_CURAND=$logdir/curand.txt
fi

# Hugging Face's own library reading what safetensors.Save wrote
# (TestSavePython in package safetensors, bench/pyref/safetensors_check.py): the
# first python with torch and safetensors, where there is one.
for py in /opt/torch/.venv/bin/python python3; do
	if "$py" -c 'import torch, safetensors.torch' >/dev/null 2>&1; then
		export GOCUDA_TEST_PYTHON=$(command -v "$py")
		break
	fi
done

passed=0 failed=0 cut=0 summary=()
for set in $sets; do
	while read -r name dir; do
		[[ $name =~ ^($only)$ ]] || continue
		start=$(date +%s)
		limit=()
		if [ -n "$deadline" ]; then
			if [ "$start" -ge "$deadline" ]; then
				cut=$((cut + 1))
				summary+=("NOT RUN $set/$name (-for's time was up)")
				continue
			fi
			limit=(timeout -s KILL $((deadline - start)))
		fi
		args=(-test.v -test.count=1 -test.run "$run")
		[ -n "$bench" ] && args+=(-test.bench "$bench" -test.benchmem)
		log=$logdir/$set-$name.log
		(cd "$dir" && "${limit[@]}" "$bin/$set/$name.test" "${args[@]}") >"$log" 2>&1
		rc=$?
		secs=$(($(date +%s) - start))
		if [ -n "$deadline" ] && [ $rc -eq 137 ] && [ "$(date +%s)" -ge "$deadline" ]; then
			cut=$((cut + 1))
			summary+=("CUT $set/$name (${secs}s, -for's time: $(grep -c -- '--- PASS' "$log") passed, $(grep -c -- '--- FAIL' "$log") failed so far) $(grep -m3 -- '--- FAIL' "$log" | tr '\n' ' ')")
		elif [ $rc -eq 0 ]; then
			passed=$((passed + 1))
			summary+=("PASS $set/$name (${secs}s, $(grep -c -- '--- PASS' "$log") passed, $(grep -c -- '--- SKIP' "$log") skipped)")
		else
			failed=$((failed + 1))
			summary+=("FAIL $set/$name (${secs}s): $(grep -m3 -- '--- FAIL' "$log" | tr '\n' ' ')")
		fi
	done <"$bin/$set/manifest"
done

{
	echo "== machine"
	cat "$logdir/machine.txt"
	echo "== gocuda info"
	cat "$logdir/info.txt"
	echo "== test binaries"
	printf '%s\n' "${summary[@]}"
	echo "binaries: $passed passed, $failed failed, $cut cut or not run"
} | tee "$logdir/summary.txt"
# The device tool brings back at most 8 files: the logs travel as one.
tar czf "$logdir/logs.tgz" -C "$logdir" $(cd "$logdir" && ls *.log) && rm -f "$logdir"/*.log
[ $failed -eq 0 ]
