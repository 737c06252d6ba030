#!/usr/bin/env bash
# The correctness check on the GPU machine, after scripts/gpu-build.sh here:
# the whole suite on both backends (gpu-run.sh), the concurrency and
# lifetime tests again several times, the device-memory churn beside the
# same calls from C (bench/cref/memchurn.c), and compute-sanitizer's
# memcheck over the tests that move data and launch kernels. Each step has a
# time limit, so the summary is written whatever happens.
#
#   scripts/gpu-check.sh OUT [STEP...]   (steps: suite stress memchurn sanitizer memcheck soak; default all but sanitizer)
#
# memcheck runs every test binary under compute-sanitizer's memcheck with
# leak checking; scripts/memcheck_filter.py attributes each report to its
# test and fails on memory errors, leaks, and API errors outside the tests
# that provoke them on purpose (provoking, below). soak runs TestSoak with a
# million mixed operations.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-check.sh OUT [suite] [stress] [memchurn] [sanitizer]}
shift
steps=${*:-suite stress memchurn memcheck soak}
mkdir -p "$out"
bin=$PWD/bin
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$bin/libfakecuda.so NCCL_NVLS_ENABLE=0
stress=${STRESS:-'TestSyncThenAsyncOrdered|TestDeviceMemoryAfterChurn|TestCloseWhileCopying|TestCallInsideDoWhileClosing|TestGlobalsConcurrent|TestStagingConcurrentMisuse|TestZeroValues|TestContextBinding|TestHammer|TestManyGoroutines|TestBlockCacheConcurrent'}
# The tests that make the driver fail on purpose (bad sizes, bad PTX, bad
# launch shapes, faults, unknown names, closed or foreign objects).
# The tests that close a context under live allocations on purpose.
teardown='TestHammer|TestObjectsAfterContextClose|TestContextClosedUnderPins'
provoking='TestGraphUpdate|TestCaptureRefuses|TestCaptureEnds|TestCaptureAlloc|TestGraphErrors|TestGraphHoldsMemory|TestMemPoolErrors|TestMemPoolClose|TestAllocAsyncErrors|TestAllocErrors|TestModuleErrors|TestLaunchErrors|TestKernelFault|TestGlobal|TestRegister|TestPeerErrors|TestPeerUnsupported|TestDynamicSharedMemory|TestEvents|TestStreamPriority|TestFunctionAttributes|TestDeviceAttributes|TestBadOrdinal|TestObjectsAfterContextClose|TestContextClose|TestUnboundCallFails|TestStagingErrors|TestCompileError|TestNCCLErrors|TestElementTypes|FuzzAllocSizes|FuzzLaunchConfig|FuzzStagingOptions|TestLaunchTypesFromPTX|TestProcesses'

checked=${CHECKED:-'TestRoundTrip|TestUploadDownloadRoutes|TestStagingEverySize|TestReserveCoversEveryRoute|TestLaunchTypesFromPTX|TestLaunchConfigFor|TestVectorAdd|TestSyncThenAsyncOrdered'}
for step in $steps; do
	case $step in
	suite)
		timeout 420 bash scripts/gpu-run.sh "$out/suite" >"$out/suite.txt" 2>&1
		echo "suite: exit $?" >>"$out/summary.txt"
		tail -n 30 "$out/suite.txt" >>"$out/summary.txt"
		;;
	stress)
		for set in tests tests-cgo; do
			timeout 240 "$bin/$set/cuda.test" -test.run "$stress" -test.count=3 -test.v >"$out/stress-$set.log" 2>&1
			echo "stress $set: exit $? ($(grep -c -- '--- PASS' "$out/stress-$set.log") passed, $(grep -c -- '--- FAIL' "$out/stress-$set.log") failed)" >>"$out/summary.txt"
			grep -h "device memory free\|downloads returned" "$out/stress-$set.log" >>"$out/summary.txt"
		done
		;;
	memchurn)
		nvcc -O2 -o /tmp/memchurn bench/cref/memchurn.c -lcuda -lpthread >"$out/memchurn.txt" 2>&1
		for threads in 64 8 1; do
			timeout 120 /tmp/memchurn "$threads" 50 >>"$out/memchurn.txt" 2>&1
		done
		cat "$out/memchurn.txt" >>"$out/summary.txt"
		;;
	sanitizer)
		for set in tests tests-cgo; do
			timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
				"$bin/$set/cuda.test" -test.run "$checked" -test.count=1 >"$out/sanitizer-$set.log" 2>&1
			echo "compute-sanitizer memcheck $set: exit $?; $(grep -m1 'ERROR SUMMARY' "$out/sanitizer-$set.log")" >>"$out/summary.txt"
		done
		;;
	memcheck)
		for set in tests tests-cgo; do
			while read -r name dir; do
				case $name in internal_*) continue ;; esac # no GPU calls: memcheck has nothing to watch
				log=$out/memcheck-$set-$name.log
				(cd "$dir" && timeout 300 compute-sanitizer --tool memcheck --leak-check full \
					"$bin/$set/$name.test" -test.v -test.count=1 -test.timeout=280s) >"$log" 2>&1
				echo "$set/$name: exit $? ($(grep -c -- '--- PASS' "$log") passed, $(grep -c -- '--- FAIL' "$log") failed)" >>"$out/summary.txt"
				python3 scripts/memcheck_filter.py "$log" "$provoking" "$teardown" >>"$out/summary.txt" 2>&1
			done <"$bin/$set/manifest"
		done
		;;
	soak)
		GOCUDA_SOAK_OPS=1000000 timeout 400 "$bin/tests/cuda.test" -test.run '^TestSoak$' -test.v >"$out/soak.log" 2>&1
		echo "soak: exit $?" >>"$out/summary.txt"
		grep -h "soak:\|soak_test" "$out/soak.log" >>"$out/summary.txt"
		;;
	*) echo "gpu-check.sh: unknown step $step" >&2 ;;
	esac
done
cat "$out/summary.txt"
