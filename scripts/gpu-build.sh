#!/usr/bin/env bash
# Builds everything the GPU machine runs, here, since that machine has no Go:
# each package's test binary, once with CGO_ENABLED=0 (purego) and once with
# cgo, the gocuda tool, the quickstart, and the fake driver (for the tests
# that ask for it explicitly). Output: bin/ (git-ignored). The test binaries
# carry the research benchmarks (-tags gocuda_research) that
# scripts/gpu-perf.sh runs, among them internal/hostcopy's.
#
#   scripts/gpu-build.sh          then run scripts/gpu-run.sh there (CONTRIBUTING.md)
#   scripts/gpu-build.sh ./cufft/... ./curand
#                                 only these packages' test binaries (a smaller
#                                 bin.tgz for a check of a few packages)
#   scripts/gpu-build.sh ./compute .   compute's and the root's, for scripts/gpu-compute.sh
#   scripts/gpu-build.sh ./nd     nd's (bin/tests/nd.test, bin/tests-cgo/nd.test),
#                                 for scripts/gpu-nd.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=bin
rm -rf "$out"
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./... ./cmd/gocuda/... ./cublas/gonumtest/... ./cufft/gonumtest/... ./cusolver/gonumtest/...)
# Two sets of test binaries: bin/tests calls the driver through purego
# (CGO_ENABLED=0), bin/tests-cgo through the cgo shim.
for set in tests:0 tests-cgo:1; do
	tests=$out/${set%:*}
	mkdir -p "$tests"
	: >"$tests/manifest"
	# The generator's tests are pure Go, with no driver to test: CI runs them.
	for pkg in $(go list "${pkgs[@]}" | grep -v /internal/driver/gen); do
		dir=${pkg#github.com/gocuda/cuda}
		dir=${dir#/}
		name=$(echo "${dir:-cuda}" | tr / _)
		# go test -c writes nothing for a package without tests.
		CGO_ENABLED=${set#*:} go test -c -tags gocuda_research -ldflags="-s -w" -o "$tests/$name.test" "$pkg"
		if [ -f "$tests/$name.test" ]; then
			echo "$name ${dir:-.}" >>"$tests/manifest"
		fi
	done
done
CGO_ENABLED=0 go build -ldflags="-s -w" -o "$out/gocuda" ./cmd/gocuda
CGO_ENABLED=0 go build -ldflags="-s -w" -o "$out/quickstart" ./examples/quickstart
CGO_ENABLED=0 go build -ldflags="-s -w" -o "$out/gpt2" ./examples/gpt2
cc -shared -fPIC -O2 -pthread -fvisibility=hidden -o "$out/libfakecuda.so" internal/fakecuda/csrc/*.c -lm
# Which calls a capture forbids, asked of the real driver (the fake's
# rule): scripts/gpu-session.sh's step capture-probe runs it.
cc -O1 -o "$out/capture_unsafe" internal/fakecuda/probes/capture_unsafe.c -ldl -lpthread
tar czf bin.tgz "$out"
echo "built $(cat "$out"/tests*/manifest | wc -l) test binaries (purego and cgo), gocuda, quickstart and the fake driver into $out/ and bin.tgz ($(du -h bin.tgz | cut -f1))"
