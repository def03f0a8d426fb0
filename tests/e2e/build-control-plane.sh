#!/bin/sh
# Build etcd, kube-apiserver and kube-controller-manager from the versions pinned in
# go.mod into a cache directory outside the checkout, keyed by version. Prints the
# directory on stdout (last line). A second call with the binaries present does nothing.
#
#   NODERECOVER_E2E_CACHE   cache root (default /var/cache/noderecover-e2e, or
#                           ~/.cache/noderecover-e2e when that is not writable)
#   NODERECOVER_E2E_BINDIR  use this directory as is (no build), e.g. prebuilt binaries
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' go.mod)
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' go.mod)
[ -n "$k8s_version" ] && [ -n "$etcd_version" ] || { echo "cannot read versions from go.mod" >&2; exit 1; }

if [ -n "${NODERECOVER_E2E_BINDIR:-}" ]; then
	dir=$NODERECOVER_E2E_BINDIR
else
	cache=${NODERECOVER_E2E_CACHE:-}
	if [ -z "$cache" ]; then
		cache=/var/cache/noderecover-e2e
		# Not root: fall back to the user's cache directory.
		if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
			cache="${XDG_CACHE_HOME:-$HOME/.cache}/noderecover-e2e"
		fi
	fi
	dir="$cache/k8s-$k8s_version-etcd-$etcd_version-$(go env GOOS)-$(go env GOARCH)"
fi
if [ -x "$dir/etcd" ] && [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kube-controller-manager" ]; then
	echo "control plane binaries cached in $dir" >&2
	echo "$dir"
	exit 0
fi
[ -z "${NODERECOVER_E2E_BINDIR:-}" ] || { echo "NODERECOVER_E2E_BINDIR=$dir lacks etcd/kube-apiserver/kube-controller-manager" >&2; exit 1; }

minor=${k8s_version#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
tmp="$dir.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "building etcd $etcd_version, kube-apiserver and kube-controller-manager $k8s_version into $dir (first time: long)" >&2
start=$(date +%s)
go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$tmp/" \
	go.etcd.io/etcd/server/v3 \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager
# The etcd main package is the module root, so go names its binary "server".
mv "$tmp/server" "$tmp/etcd"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "built in $(( $(date +%s) - start ))s" >&2
echo "$dir"
