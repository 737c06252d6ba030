#!/usr/bin/env bash
# Checks that `go install github.com/gocuda/cuda/cmd/gocuda@latest` works
# as it will for a user: the command's go.mod has no replace directive, the
# library and tooling versions it requires are commits of this repository,
# its go.sum holds their sums, and it builds against them. The modules are
# served from a proxy folder written from git (internal/cmd/modproxy), the rest
# from the usual proxy; then the installed command runs `gocuda version`.
set -euo pipefail
cd "$(dirname "$0")/.."
if grep -q '^replace' cmd/gocuda/go.mod; then
	echo "cmd/gocuda/go.mod has a replace directive, which go install ...@latest refuses: run scripts/pin-command.sh"
	exit 1
fi
if [ -n "$(git status --porcelain -- cmd/gocuda)" ]; then
	echo "cmd/gocuda has uncommitted changes: go install builds the committed command; commit first"
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in github.com/gocuda/cuda:. github.com/gocuda/cuda/bench:bench; do
	path=${m%%:*} folder=${m#*:}
	version=$(awk -v p="$path" '$1 == p && $2 ~ /^v[0-9]/ { print $2; exit }' cmd/gocuda/go.mod)
	hash=${version##*-}
	if ! git cat-file -e "$hash^{commit}" 2>/dev/null; then
		if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
			echo "skipped: a shallow clone lacks commit $hash, which cmd/gocuda requires $path at"
			exit 0
		fi
		echo "cmd/gocuda/go.mod requires $path at $version, not a commit of this repository: run scripts/pin-command.sh"
		exit 1
	fi
	got=$(go run ./internal/cmd/modproxy -dir "$tmp/proxy" -rev "$hash" "$folder" | awk '{ print $2 }')
	if [ "$got" != "$version" ]; then
		echo "cmd/gocuda/go.mod requires $path at $version, but that commit's pseudo-version is $got"
		exit 1
	fi
done
go run ./internal/cmd/modproxy -dir "$tmp/proxy" -rev HEAD cmd/gocuda
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" && GOWORK=off GOFLAGS= GONOSUMDB=github.com/gocuda/cuda GOPROXY="file://$tmp/proxy,$(go env GOPROXY)" GOBIN="$tmp/bin" \
	go install github.com/gocuda/cuda/cmd/gocuda@latest)
"$tmp/bin/gocuda" version
