#!/usr/bin/env bash
# Builds, here, the root package's test binary at two commits, for an A/B
# run of a change's speed on the GPU machine (scripts/gpu-ab.sh there):
# bin/ab/before.test at REV (a commit before the change) and
# bin/ab/after.test at the working tree, both purego, with the gocuda
# command of the working tree (bin/ab/gocuda, for its fresh-slice rows).
# Run after scripts/gpu-build.sh, whose bin/ it adds to (bin.tgz is
# rewritten with both).
#
#   scripts/gpu-build-ab.sh REV      e.g. the commit before the copy engine moved
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: gpu-build-ab.sh REV}
out=$PWD/bin/ab
mkdir -p "$out"
tree=$(mktemp -d)
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
git worktree add --detach "$tree" "$rev" >/dev/null
(cd "$tree" && CGO_ENABLED=0 GOWORK=off go test -c -ldflags="-s -w" -o "$out/before.test" .)
CGO_ENABLED=0 go test -c -ldflags="-s -w" -o "$out/after.test" .
CGO_ENABLED=0 go build -ldflags="-s -w" -o "$out/gocuda" ./cmd/gocuda
git rev-parse "$rev" >"$out/before.rev"
git rev-parse HEAD >"$out/after.rev"
[ -d bin/tests ] || echo "note: bin/ has no test binaries: run scripts/gpu-build.sh first for the rest of a check" >&2
tar czf bin.tgz bin
echo "built bin/ab: before.test ($(git rev-parse --short "$rev")), after.test (working tree), gocuda; bin.tgz rewritten"
