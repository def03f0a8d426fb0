#!/bin/sh
# Build the kustomize CLI (sigs.k8s.io/kustomize/kustomize/v5 at KUSTOMIZE_VERSION below, the
# one kubectl v1.36 carries) from the Go module proxy into the helm CLI's cache directory,
# keyed by version, as build-helm.sh does: built into a temporary directory beside it, then
# renamed. Prints the kustomize binary's path on stdout (last line). Never writes into the
# repository.
#
#   NODERECOVER_HELM_CACHE  cache root (default /var/cache/noderecover-helm, or
#                           ~/.cache/noderecover-helm when that is not writable)
#   NODERECOVER_KUSTOMIZE   use this kustomize binary as is (no build)
set -eu
KUSTOMIZE_VERSION=v5.8.1
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export PATH="$PATH:/usr/local/go/bin"

if [ -n "${NODERECOVER_KUSTOMIZE:-}" ]; then
	[ -x "$NODERECOVER_KUSTOMIZE" ] || { echo "NODERECOVER_KUSTOMIZE=$NODERECOVER_KUSTOMIZE is not an executable" >&2; exit 1; }
	echo "$NODERECOVER_KUSTOMIZE"
	exit 0
fi
command -v go >/dev/null 2>&1 || { echo "building kustomize needs Go (go not in PATH nor /usr/local/go/bin)" >&2; exit 1; }
cache=${NODERECOVER_HELM_CACHE:-}
if [ -z "$cache" ]; then
	cache=/var/cache/noderecover-helm
	if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
		cache="${XDG_CACHE_HOME:-$HOME/.cache}/noderecover-helm"
	fi
fi
dir="$cache/kustomize-$KUSTOMIZE_VERSION-$(go env GOOS)-$(go env GOARCH)"
if [ -x "$dir/kustomize" ]; then
	echo "kustomize $KUSTOMIZE_VERSION cached in $dir" >&2
	echo "$dir/kustomize"
	exit 0
fi
tmp="$dir.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "building kustomize $KUSTOMIZE_VERSION into $dir (first time: a few minutes)" >&2
start=$(date +%s)
GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
"$tmp/kustomize" version >&2
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$dir/kustomize"
