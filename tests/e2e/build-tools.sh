#!/bin/sh
# The Go tools the tests run, built from the Go module proxy at pinned versions, each into a
# cache directory outside the checkout keyed by its version: built into a temporary directory
# beside its entry, then renamed, so a half-built tool is never taken for a whole one. A tool
# present is not built again. One build of a tool at a time: a lock per tool in the cache root
# makes a second caller (a suite, while `./build.sh test` builds the tools in the background)
# wait for the first and then find it cached. Prints the tool's directory (control-plane, kine)
# or binary (helm) on stdout, one line and nothing else (`all` prints nothing); exits non-zero,
# saying why on stderr, when the tool could not be had. Never writes into the repository.
#
#   build-tools.sh control-plane  etcd, kube-apiserver, kube-controller-manager and kubectl at
#                                 the versions go.mod pins (its tool lines), in one `go build`:
#                                 kubectl is k8s.io/kubernetes' cmd/kubectl at the control
#                                 plane's version and shares most of its packages and modules
#                                 (k8s-VERSION-etcd-VERSION-OS-ARCH/)
#   build-tools.sh kine           kine (k3s's etcd shim) at the version kine/go.mod pins, with
#                                 SQLite through cgo (kine-VERSION-sqlite-OS-ARCH/kine)
#   build-tools.sh helm           the helm CLI at HELM_VERSION (helm-VERSION-OS-ARCH/helm)
#   build-tools.sh all            the three, in the order ./build.sh test needs them
#
#   NODERECOVER_E2E_CACHE   cache root (default /var/cache/noderecover-e2e, or
#                           ~/.cache/noderecover-e2e when that is not writable)
#   NODERECOVER_E2E_BINDIR  use this directory (etcd, kube-apiserver, kube-controller-manager;
#                           kubectl for the Helm suite) as is, no build
#   NODERECOVER_E2E_KINEDIR use this directory, which holds kine, as is (no build)
#   NODERECOVER_HELM        use this helm binary as is (no build)
set -eu
HELM_VERSION=v3.22.0
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
[ -x /usr/local/go/bin/go ] && PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null 2>&1 || { echo "building the test tools needs Go $(awk '$1=="go"{print $2}' go.mod) (go not in PATH nor /usr/local/go/bin)" >&2; exit 1; }
# Go keeps its module and build caches under HOME; a CI shell may come without one.
if [ -z "${HOME:-}" ]; then
	HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
	export HOME
fi
os_arch="$(go env GOOS)-$(go env GOARCH)"

cache=${NODERECOVER_E2E_CACHE:-}
if [ -z "$cache" ]; then
	cache=/var/cache/noderecover-e2e
	# Not root: fall back to the user's cache directory.
	if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
		cache="${XDG_CACHE_HOME:-$HOME/.cache}/noderecover-e2e"
	fi
fi
mkdir -p "$cache"

# cached DIR FILE...: DIR holds every FILE, executable.
cached() {
	d=$1; shift
	for f in "$@"; do [ -x "$d/$f" ] || return 1; done
}

# build NAME DIR WHAT COMMAND...: unless DIR is whole (cached, checked again under NAME's lock),
# runs COMMAND with $tmp, an empty directory beside DIR, to fill it, then renames it to DIR.
# The check is the caller's `whole` function, of one argument, the directory.
build() {
	name=$1 dir=$2 what=$3
	shift 3
	exec 9>"$cache/.$name.lock"
	if ! flock -n 9; then
		echo "waiting for the build of $name that another process is running (./build.sh test's logs to build/tools.log)" >&2
		flock 9
	fi
	if whole "$dir"; then
		echo "$what cached in $dir" >&2
		exec 9>&-
		return
	fi
	tmp="$dir.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# whatever ends the build early (a failed command under set -e, a signal) says so in one line
	trap 'rc=$?; rm -rf "$tmp"; echo "build-tools.sh: $what NOT built (exit $rc); nothing cached" >&2' EXIT
	trap 'exit 1' INT TERM HUP
	echo "building $what into $dir (first time: minutes)" >&2
	start=$(date +%s)
	"$@"
	whole "$tmp" || { echo "the build of $what left no whole $tmp" >&2; exit 1; }
	rm -rf "$dir"
	mv "$tmp" "$dir"
	trap - EXIT INT TERM HUP
	exec 9>&-
	echo "built $what in $(( $(date +%s) - start ))s" >&2
}

control_plane() {
	k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' go.mod)
	etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' go.mod)
	[ -n "$k8s_version" ] && [ -n "$etcd_version" ] || { echo "cannot read versions from go.mod" >&2; exit 1; }
	if [ -n "${NODERECOVER_E2E_BINDIR:-}" ]; then
		dir=$NODERECOVER_E2E_BINDIR
		cached "$dir" etcd kube-apiserver kube-controller-manager ||
			{ echo "NODERECOVER_E2E_BINDIR=$dir lacks etcd/kube-apiserver/kube-controller-manager" >&2; exit 1; }
		echo "$dir"
		return
	fi
	dir="$cache/k8s-$k8s_version-etcd-$etcd_version-$os_arch"
	whole() { cached "$1" etcd kube-apiserver kube-controller-manager kubectl; }
	build control-plane "$dir" "etcd $etcd_version, kube-apiserver, kube-controller-manager and kubectl $k8s_version" \
		build_control_plane
	echo "$dir"
}
build_control_plane() {
	minor=${k8s_version#v1.}; minor=${minor%%.*}
	# the version kube-apiserver reports and `kubectl version` prints, set as Kubernetes' own
	# build sets it (hack/lib/version.sh)
	ldflags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags="$ldflags -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	done
	go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$tmp/" \
		go.etcd.io/etcd/server/v3 \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kubectl
	# The etcd main package is the module root, so go names its binary "server".
	mv "$tmp/server" "$tmp/etcd"
	"$tmp/kubectl" version --client >&2
}

# kine has its own module (kine/go.mod): its dependencies (etcd 3.7, k8s.io 0.37) would move
# the control plane's in this one. kine's SQLite driver is mattn/go-sqlite3 with cgo (the one
# k3s ships) and modernc.org/sqlite without; cgo is asked for, so a machine without a C
# compiler fails here rather than quietly testing the other driver. Tags and SQLite options
# as kine's own scripts/build, less the NATS server.
kine() {
	kine_version=$(awk '$1=="github.com/k3s-io/kine"{print $2; exit}' kine/go.mod)
	[ -n "$kine_version" ] || { echo "cannot read kine's version from kine/go.mod" >&2; exit 1; }
	if [ -n "${NODERECOVER_E2E_KINEDIR:-}" ]; then
		dir=$NODERECOVER_E2E_KINEDIR
		cached "$dir" kine || { echo "NODERECOVER_E2E_KINEDIR=$dir lacks kine" >&2; exit 1; }
		echo "$dir"
		return
	fi
	command -v "$(go env CC)" >/dev/null 2>&1 || { echo "kine with SQLite needs a C compiler ($(go env CC)) for cgo" >&2; exit 1; }
	dir="$cache/kine-$kine_version-sqlite-$os_arch"
	whole() { cached "$1" kine; }
	build kine "$dir" "kine $kine_version (SQLite through cgo)" build_kine
	echo "$dir"
}
build_kine() {
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
}

# helm at a version is its own module: `go install` uses helm's go.mod and go.sum (checked
# against the checksum database), whose k8s.io modules are not the control plane's.
helm() {
	if [ -n "${NODERECOVER_HELM:-}" ]; then
		[ -x "$NODERECOVER_HELM" ] || { echo "NODERECOVER_HELM=$NODERECOVER_HELM is not an executable" >&2; exit 1; }
		echo "$NODERECOVER_HELM"
		return
	fi
	dir="$cache/helm-$HELM_VERSION-$os_arch"
	whole() { cached "$1" helm; }
	build helm "$dir" "helm $HELM_VERSION" build_helm
	echo "$dir/helm"
}
build_helm() {
	GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
	"$tmp/helm" version --short >&2
}

case ${1:-} in
control-plane) control_plane ;;
kine) kine ;;
helm) helm ;;
# the control plane first: the Helm suite and the e2e suite need it, kine only e2e-kine after.
# Each by a shell of its own (under set -e, which a subshell in `||` would not be), so one that
# fails does not stop the others; exit 1 if any failed, each failure said by build's line.
all)
	rc=0
	for t in control-plane helm kine; do sh "$here/build-tools.sh" "$t" >/dev/null || rc=1; done
	exit $rc
	;;
*) echo "usage: build-tools.sh control-plane|kine|helm|all" >&2; exit 2 ;;
esac
