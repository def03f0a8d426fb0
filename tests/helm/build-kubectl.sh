#!/bin/sh
# Build kubectl (k8s.io/kubectl's command tree at the version tests/helm/kubectl/go.mod names,
# the control plane's) from the Go module proxy into the helm CLI's cache directory, keyed by
# version, as build-helm.sh does: built into a temporary directory beside it, then renamed.
# go.sum pins every module; the build reads tests/helm/kubectl/ and writes nothing there.
# Prints the kubectl binary's path on stdout (last line).
#
#   NODERECOVER_HELM_CACHE  cache root (default /var/cache/noderecover-helm, or
#                           ~/.cache/noderecover-helm when that is not writable)
#   NODERECOVER_KUBECTL     use this kubectl binary as is (no build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export PATH="$PATH:/usr/local/go/bin"

if [ -n "${NODERECOVER_KUBECTL:-}" ]; then
	[ -x "$NODERECOVER_KUBECTL" ] || { echo "NODERECOVER_KUBECTL=$NODERECOVER_KUBECTL is not an executable" >&2; exit 1; }
	echo "$NODERECOVER_KUBECTL"
	exit 0
fi
command -v go >/dev/null 2>&1 || { echo "building kubectl needs Go (go not in PATH nor /usr/local/go/bin)" >&2; exit 1; }
version=$(sed -n 's/^require k8s.io\/kubectl \(v[0-9.]*\)$/\1/p' "$here/kubectl/go.mod")
[ -n "$version" ] || { echo "tests/helm/kubectl/go.mod names no k8s.io/kubectl version" >&2; exit 1; }
cache=${NODERECOVER_HELM_CACHE:-}
if [ -z "$cache" ]; then
	cache=/var/cache/noderecover-helm
	if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
		cache="${XDG_CACHE_HOME:-$HOME/.cache}/noderecover-helm"
	fi
fi
dir="$cache/kubectl-$version-$(go env GOOS)-$(go env GOARCH)"
if [ -x "$dir/kubectl" ]; then
	echo "kubectl $version cached in $dir" >&2
	echo "$dir/kubectl"
	exit 0
fi
tmp="$dir.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "building kubectl $version into $dir (first time: several minutes)" >&2
start=$(date +%s)
(cd "$here/kubectl" && GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$tmp/kubectl" .)
"$tmp/kubectl" version --client >&2
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$dir/kubectl"
