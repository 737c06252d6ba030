#!/usr/bin/env bash
# Builds everything the GPU machine runs, here, since that machine has no Go:
# each package's test binary (CGO_ENABLED=0), the gocuda tool, and the fake
# driver (for the tests that ask for it explicitly). Output: bin/ (git-ignored).
#
#   scripts/gpu-build.sh          then run scripts/gpu-run.sh there (CONTRIBUTING.md)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bin
rm -rf "$out"
mkdir -p "$out/tests"
: >"$out/tests/manifest"
for pkg in $(go list ./...); do
	dir=${pkg#github.com/gocuda/cuda}
	dir=${dir#/}
	name=$(echo "${dir:-cuda}" | tr / _)
	# go test -c writes nothing for a package without tests.
	CGO_ENABLED=0 go test -c -o "$out/tests/$name.test" "$pkg"
	if [ -f "$out/tests/$name.test" ]; then
		echo "$name ${dir:-.}" >>"$out/tests/manifest"
	fi
done
CGO_ENABLED=0 go build -o "$out/gocuda" ./cmd/gocuda
CGO_ENABLED=0 go build -o "$out/quickstart" ./examples/quickstart
cc -shared -fPIC -O2 -pthread -o "$out/libfakecuda.so" internal/fakecuda/csrc/fakecuda.c
echo "built $(wc -l <"$out/tests/manifest") test binaries, gocuda and the fake driver into $out/"
