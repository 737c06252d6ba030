#!/usr/bin/env bash
# Points cmd/gocuda's go.mod at the library and the benchmark tooling as
# they are at a commit (default HEAD), by pseudo-version, with no replace
# directive: `go install github.com/gocuda/cuda/cmd/gocuda@latest` refuses
# a module that has one. Run it after committing a change of the library
# that the command needs, then commit cmd/gocuda/go.mod and go.sum. Inside
# this repository go.work uses the library beside the command whatever the
# pin; scripts/check-install.sh (CI) builds the command against the pin.
#
#	scripts/pin-command.sh [REV]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run ./internal/cmd/modproxy -dir "$tmp" -rev "$rev" . bench >"$tmp/versions"
lib=$(awk '$1 == "github.com/gocuda/cuda" { print $2 }' "$tmp/versions")
tools=$(awk '$1 == "github.com/gocuda/cuda/bench" { print $2 }' "$tmp/versions")
proxy="file://$tmp,$(go env GOPROXY)"
old_lib=$(awk '$1 == "github.com/gocuda/cuda" && $2 ~ /^v[0-9]/ { print $2; exit }' cmd/gocuda/go.mod)
old_tools=$(awk '$1 == "github.com/gocuda/cuda/bench" && $2 ~ /^v[0-9]/ { print $2; exit }' cmd/gocuda/go.mod)
go work edit -dropreplace="github.com/gocuda/cuda@$old_lib" -dropreplace="github.com/gocuda/cuda/bench@$old_tools" \
	-replace="github.com/gocuda/cuda@$lib=./" -replace="github.com/gocuda/cuda/bench@$tools=./bench"
cd cmd/gocuda
go mod edit -dropreplace=github.com/gocuda/cuda -dropreplace=github.com/gocuda/cuda/bench \
	-require="github.com/gocuda/cuda@$lib" -require="github.com/gocuda/cuda/bench@$tools"
GOWORK=off GOFLAGS=-mod=mod GONOSUMDB=github.com/gocuda/cuda GOPROXY="$proxy" go mod tidy
echo "cmd/gocuda now requires github.com/gocuda/cuda $lib and github.com/gocuda/cuda/bench $tools"
