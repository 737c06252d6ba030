#!/usr/bin/env bash
# The GPU checks of an audit's fixes (after scripts/gpu-build.sh . ./nccl):
# the root package's and nccl's tests the fixes touched, on both driver
# backends, each binary under its own time limit, a log a binary in OUT.
# The tests that need two devices run themselves against the fake on one.
#
#   scripts/gpu-audit.sh OUT [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-audit.sh OUT [SECONDS]}
secs=${2:-60}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$PWD/bin/libfakecuda.so NCCL_NVLS_ENABLE=0
# Memory; streams, events and graphs; kernels and modules; Do, peers and
# IPC: the tests of each part's fixes.
root='TestCopyOverlap|TestStagingErrors|TestStagingReserve|TestManagedErrors|TestFromRaw|TestGrowableBuffer|TestPageLockedAfterContextClose|TestReadFromErrors|TestSliceAndView|TestRegister|TestEmptyBuffers|TestPinnedBuffer'
root+='|TestCaptureMisuse|TestCaptureModes|TestGraphOneInstanceWithMemory|TestAllocAsyncErrors|TestGraphNodeErrors|TestGraphConditional|TestStreamsEventsGraphsConcurrent|TestCaptureRefuses|TestCaptureAlloc|TestGraphUpdate|TestDriverFreeNodeOrder|TestGraphInstantiateFailureWords'
root+='|TestLoadModuleImages|TestModuleNames|TestLaunchErrors|TestFunctionAttributes|TestLaunchAttributeErrors|TestOccupancy|TestLibraryErrors|TestLibraryManyContexts|TestDeviceAttributes|TestLaunchConfigFor|TestPTXTextLaunchIgnores'
root+='|TestContextDo|TestStreamDo|TestDoNested|TestPeer|TestIPC'
nccl='TestOneRank|TestArgumentErrors|TestEmpty|TestInPlace|TestGroupPanic|TestCloseWhileInUse|TestAfterPeerAbort|TestNCCLErrors|TestWait'
for set in tests tests-cgo; do
	timeout "$secs" "bin/$set/cuda.test" -test.v -test.count=1 -test.run "$root" >"$out/cuda-$set.log" 2>&1
	echo "$set/cuda: exit $? ($(grep -c -- '--- PASS' "$out/cuda-$set.log") passed, $(grep -c -- '--- FAIL' "$out/cuda-$set.log") failed)" | tee -a "$out/summary.txt"
done
for set in tests tests-cgo; do
	(cd nccl && timeout "$secs" "../bin/$set/nccl.test" -test.v -test.count=1 -test.run "$nccl") >"$out/nccl-$set.log" 2>&1
	echo "$set/nccl: exit $? ($(grep -c -- '--- PASS' "$out/nccl-$set.log") passed, $(grep -c -- '--- FAIL' "$out/nccl-$set.log") failed)" | tee -a "$out/summary.txt"
done
