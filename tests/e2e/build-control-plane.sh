#!/bin/sh
# Build etcd, kube-apiserver and kube-controller-manager from the versions pinned in
# go.mod into a cache directory outside the checkout, keyed by version. Prints the
# directory on stdout (last line). A second call with the binaries present does nothing.
#
#   NODERECOVER_E2E_CACHE   cache root (default /var/cache/noderecover-e2e, or
#                           ~/.cache/noderecover-e2e when that is not writable)
#   NODERECOVER_E2E_BINDIR  use this directory as is (no build), e.g. prebuilt binaries
#
#   build-control-plane.sh --kine   instead: kine (k3s's etcd shim) from the version pinned
#                           in kine/go.mod, with SQLite, into the same cache root
#                           (kine-VERSION-sqlite-OS-ARCH/kine); prints that directory.
#   NODERECOVER_E2E_KINEDIR use this directory, which holds kine, as is (no build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

cache_root() {
	cache=${NODERECOVER_E2E_CACHE:-}
	if [ -z "$cache" ]; then
		cache=/var/cache/noderecover-e2e
		# Not root: fall back to the user's cache directory.
		if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
			cache="${XDG_CACHE_HOME:-$HOME/.cache}/noderecover-e2e"
		fi
	fi
	echo "$cache"
}

# kine has its own module (kine/go.mod): its dependencies (etcd 3.7, k8s.io 0.37) would move
# the control plane's in this one. kine's SQLite driver is mattn/go-sqlite3 with cgo (the one
# k3s ships) and modernc.org/sqlite without; cgo is asked for, so a machine without a C
# compiler fails here rather than quietly testing the other driver. Tags and SQLite options
# as kine's own scripts/build, less the NATS server.
build_kine() {
	kine_version=$(awk '$1=="github.com/k3s-io/kine"{print $2; exit}' kine/go.mod)
	[ -n "$kine_version" ] || { echo "cannot read kine's version from kine/go.mod" >&2; exit 1; }
	if [ -n "${NODERECOVER_E2E_KINEDIR:-}" ]; then
		dir=$NODERECOVER_E2E_KINEDIR
		[ -x "$dir/kine" ] || { echo "NODERECOVER_E2E_KINEDIR=$dir lacks kine" >&2; exit 1; }
		echo "$dir"
		return
	fi
	dir="$(cache_root)/kine-$kine_version-sqlite-$(go env GOOS)-$(go env GOARCH)"
	if [ -x "$dir/kine" ]; then
		echo "kine cached in $dir" >&2
		echo "$dir"
		return
	fi
	command -v "$(go env CC)" >/dev/null 2>&1 || { echo "kine with SQLite needs a C compiler ($(go env CC)) for cgo" >&2; exit 1; }
	tmp="$dir.tmp.$$"
	mkdir -p "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	echo "building kine $kine_version (SQLite through cgo) into $dir (first time: a few minutes)" >&2
	start=$(date +%s)
	(cd kine && CGO_ENABLED=1 CGO_CFLAGS="-O2 -DSQLITE_DEFAULT_MEMSTATUS=0 -DSQLITE_DISABLE_INTRINSIC \
		-DSQLITE_ENABLE_COLUMN_METADATA -DSQLITE_ENABLE_DBPAGE_VTAB -DSQLITE_ENABLE_DBSTAT_VTAB \
		-DSQLITE_ENABLE_MATH_FUNCTIONS -DSQLITE_ENABLE_MEMORY_MANAGEMENT -DSQLITE_ENABLE_OFFSET_SQL_FUNC \
		-DSQLITE_ENABLE_PREUPDATE_HOOK -DSQLITE_ENABLE_RBU -DSQLITE_ENABLE_RTREE -DSQLITE_ENABLE_SESSION \
		-DSQLITE_ENABLE_SNAPSHOT -DSQLITE_ENABLE_STAT4 -DSQLITE_ENABLE_UNLOCK_NOTIFY \
		-DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_THREADSAFE=1 -DSQLITE_WITHOUT_ZONEMALLOC" \
		go build -mod=readonly -trimpath \
		-tags sqlite_unlock_notify,sqlite_vtable,sqlite_stat4,sqlite_preupdate_hook,sqlite_math_functions,sqlite_dbstat,sqlite_column_metadata \
		-ldflags "-s -w -X github.com/k3s-io/kine/pkg/version.Version=$kine_version" \
		-o "$tmp/kine" github.com/k3s-io/kine)
	rm -rf "$dir"
	mv "$tmp" "$dir"
	trap - EXIT
	echo "built kine in $(( $(date +%s) - start ))s" >&2
	echo "$dir"
}
if [ "${1:-}" = --kine ]; then
	build_kine
	exit 0
fi

k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' go.mod)
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' go.mod)
[ -n "$k8s_version" ] && [ -n "$etcd_version" ] || { echo "cannot read versions from go.mod" >&2; exit 1; }

if [ -n "${NODERECOVER_E2E_BINDIR:-}" ]; then
	dir=$NODERECOVER_E2E_BINDIR
else
	dir="$(cache_root)/k8s-$k8s_version-etcd-$etcd_version-$(go env GOOS)-$(go env GOARCH)"
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
