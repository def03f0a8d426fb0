#!/bin/sh
# End-to-end test of noderecover against a real control plane (etcd, kube-apiserver,
# kube-controller-manager built from the versions in go.mod) with simulated kubelets.
#
#   tests/e2e/run.sh [NODERECOVER_BINARY]     default: build/noderecover of this checkout
#   NODERECOVER_E2E_RUN=REGEXP                only the scenarios it selects (go test -run)
#   NODERECOVER_SOAK_MINUTES=N                with NODERECOVER_E2E_RUN=TestSoak: the chaos soak
#                                             (soak_test.go; ./build.sh soak [MINUTES])
#   NODERECOVER_E2E_DATASTORE=kine            the control plane on kine over SQLite (k3s's
#                                             default datastore) in etcd's place; without
#                                             NODERECOVER_E2E_RUN, only the kine subset below
#
# Needs Go (the version go.mod names, 1.26) and the Go module proxy the first time.
# The control plane binaries come from build-tools.sh, cached in $NODERECOVER_E2E_CACHE
# (default /var/cache/noderecover-e2e), keyed by version; how long the first build and a run
# take: README.md, "How long". Exits non-zero when a scenario fails or the control plane could
# not be built.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/noderecover}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
if [ ! -x "$bin" ]; then
	echo "e2e: noderecover binary $bin not found or not executable (build it first)" >&2
	exit 1
fi
# Go keeps its module and build caches under HOME; a CI shell may come without one.
if [ -z "${HOME:-}" ]; then
	HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
	export HOME
fi
# The machines this runs on carry Go in /usr/local/go; a shell may not have it on PATH.
[ -x /usr/local/go/bin/go ] && PATH=$PATH:/usr/local/go/bin
if ! command -v go >/dev/null 2>&1; then
	echo "e2e: needs Go $(awk '$1=="go"{print $2}' "$here/go.mod") or newer on PATH" >&2
	exit 1
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOFLAGS="${GOFLAGS:-} -mod=readonly"

start=$(date +%s)
bindir=$("$here/build-tools.sh" control-plane) ||
	{ echo "e2e: no control plane: tests/e2e/build-tools.sh control-plane failed (its words above)" >&2; exit 1; }
echo "e2e: control plane binaries ready in $(( $(date +%s) - start ))s: $bindir"
# On kine, what differs from etcd where noderecover can tell: taint and clear, the storm, the
# watch resumed after an API server restart, the relist after a compaction (kine's own), and
# the Lease's take-over; the rest does not depend on the store and runs on etcd only.
kine_subset='^(TestNodeRecover|TestWatch)$/^(1-3_taint_recover_clear|9_storm_guard|13_leader_election|16_watch_apiserver_restart|17_watch_compaction_relist)$'
case ${NODERECOVER_E2E_DATASTORE:-etcd} in
etcd) ;;
kine)
	kstart=$(date +%s)
	NODERECOVER_E2E_KINEDIR=$("$here/build-tools.sh" kine) ||
		{ echo "e2e: no kine: tests/e2e/build-tools.sh kine failed (its words above)" >&2; exit 1; }
	export NODERECOVER_E2E_KINEDIR
	echo "e2e: kine ready in $(( $(date +%s) - kstart ))s: $NODERECOVER_E2E_KINEDIR"
	: "${NODERECOVER_E2E_RUN:=$kine_subset}"
	;;
*) echo "e2e: NODERECOVER_E2E_DATASTORE=$NODERECOVER_E2E_DATASTORE: want etcd or kine" >&2; exit 1 ;;
esac

cd "$here"
work=$(mktemp -d "${TMPDIR:-/tmp}/noderecover-e2e-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
# -trimpath as build-tools.sh builds: the driver's dependencies (client-go, the API types, etcd's
# client) are then the control plane's compiled packages from Go's build cache; without it, on a
# fresh machine, they were compiled again (288 s of CPU against 70 s, measured)
go test -trimpath -c -o "$work/e2e.test" .
# The test binary runs directly (not under go test) so a signal reaches it and it stops
# its control plane before exiting.
: >"$work/out"
# The soak runs only when asked for by name: the ordinary run does not grow by it.
skip='^TestSoak'
case ${NODERECOVER_E2E_RUN:-} in *Soak*) skip='' ;; esac
NODERECOVER_BIN=$bin NODERECOVER_E2E_BINDIR=$bindir \
	"$work/e2e.test" -test.count=1 -test.run="${NODERECOVER_E2E_RUN:-.}" -test.skip="$skip" -test.timeout="${NODERECOVER_E2E_TIMEOUT:-30m}" -test.v >"$work/out" 2>&1 &
pid=$!
tail -n +1 -f --pid=$pid "$work/out" &
tailpid=$!
trap 'kill -TERM $pid 2>/dev/null' INT TERM HUP
while :; do
	status=0
	wait $pid || status=$?
	kill -0 $pid 2>/dev/null || break
done
wait $tailpid 2>/dev/null || true
trap - INT TERM HUP
passed=$(grep -c -- '--- PASS' "$work/out" || true)
failed=$(grep -c -- '--- FAIL' "$work/out" || true)
skipped=$(grep -c -- '--- SKIP' "$work/out" || true)
echo "e2e: total $(( $(date +%s) - start ))s, exit status $status"
echo "e2e: $passed passed, $failed failed, $skipped skipped"
exit $status
