#!/bin/sh
# Build the helm CLI (helm.sh/helm/v3/cmd/helm at HELM_VERSION below) from the Go module proxy
# into a cache directory outside the checkout, keyed by version: built into a temporary
# directory beside it, then renamed, so a half-built helm is never taken for a whole one.
# Prints the helm binary's path on stdout (last line). A second call with it present does
# nothing. Never writes into the repository.
#
#   NODERECOVER_HELM_CACHE  cache root (default /var/cache/noderecover-helm, or
#                           ~/.cache/noderecover-helm when that is not writable)
#   NODERECOVER_HELM        use this helm binary as is (no build)
set -eu
HELM_VERSION=v3.22.0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export PATH="$PATH:/usr/local/go/bin"

if [ -n "${NODERECOVER_HELM:-}" ]; then
	[ -x "$NODERECOVER_HELM" ] || { echo "NODERECOVER_HELM=$NODERECOVER_HELM is not an executable" >&2; exit 1; }
	echo "$NODERECOVER_HELM"
	exit 0
fi
command -v go >/dev/null 2>&1 || { echo "building helm needs Go (go not in PATH nor /usr/local/go/bin)" >&2; exit 1; }
cache=${NODERECOVER_HELM_CACHE:-}
if [ -z "$cache" ]; then
	cache=/var/cache/noderecover-helm
	# Not root: fall back to the user's cache directory.
	if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
		cache="${XDG_CACHE_HOME:-$HOME/.cache}/noderecover-helm"
	fi
fi
dir="$cache/helm-$HELM_VERSION-$(go env GOOS)-$(go env GOARCH)"
if [ -x "$dir/helm" ]; then
	echo "helm $HELM_VERSION cached in $dir" >&2
	echo "$dir/helm"
	exit 0
fi
tmp="$dir.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "building helm $HELM_VERSION into $dir (first time: about 4 minutes)" >&2
start=$(date +%s)
# go install at a version uses helm's own go.mod and go.sum, checked against the checksum
# database; -trimpath keeps this machine's paths out of the binary.
GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$tmp/helm" version --short >&2
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$dir/helm"
