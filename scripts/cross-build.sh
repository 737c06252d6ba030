#!/usr/bin/env bash
# Builds the library, the gocuda command, the examples and every package's
# test binary for another system, without cgo (purego alone), so that CI
# catches code that builds on Linux only. Nothing runs: no such machine here.
#
#   scripts/cross-build.sh [GOOS [GOARCH]]   (default: windows amd64)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOOS=${1:-windows} GOARCH=${2:-amd64} CGO_ENABLED=0
all="./... ./cmd/gocuda/... ./bench/... ./cublas/gonumtest/... ./cufft/gonumtest/... ./cusolver/gonumtest/..."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/" $all
n=0
for pkg in $(go list $all); do
	name=${pkg#github.com/gocuda/cuda}
	name=$(echo "cuda$name" | tr / _)
	# go test -c writes nothing for a package without tests.
	go test -c -o "$out/$name.test" "$pkg" >/dev/null
	[ -f "$out/$name.test" ] && n=$((n + 1))
done
echo "built for $GOOS/$GOARCH: the library, $(ls "$out" | grep -vc '\.test$') programs and $n test binaries"
