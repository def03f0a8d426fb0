#!/bin/sh
# The image suite (build.sh image-test runs it after building the archive, the cross unit tests
# and installing the tools):
#   tests/image/run.sh VERSION IMAGE
# 1. the OCI archive is rebuilt from a copy of the sources at another path under another umask
#    and must be byte-identical; 2. skopeo reads it (three platforms, user, entrypoint, name), and
#    check_dist.py the SBOMs, the OCI annotations and the CHANGELOG;
# 3. Debian's containerd, started here as a daemon in a temporary directory, imports it into
#    the k8s.io namespace and runs the amd64 image as k3s would (test_container.py);
# 4. the arm64 and armhf binaries run the unit tests and a stand-in subset under qemu-user-static;
# 5. deploy/noderecover.service passes systemd-analyze verify.
# Prints "image: N passed, N failed" (and the Python parts their own lines). Needs root for
# containerd; NODERECOVER_SKIP_IMAGE=1 skips part 3 only, saying so.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
VERSION=$1 IMAGE=$2
DIST=$top/build/dist
TAR=$DIST/noderecover-$VERSION-oci.tar
# The stand-in modules the cross binaries run under qemu: taint, prune, paging, TLS and
# authentication, settings and hostile bodies. The timing-bound ones (faults, slow peers, run's
# signals) stay native: qemu's start-up slows every run, not the code under test.
QEMU_STANDIN="test_taint test_prune test_paging test_auth test_settings test_hostile"
PASS=0 FAIL=0
tmp=$(mktemp -d /tmp/noderecover-image.XXXXXX)
ctd_pid=

t0=$(date +%s)
# part N NAME: a heading with the seconds spent so far, so the suite's cost stays visible
part() { echo "== $* (at $(($(date +%s) - t0)) s)"; }
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
# check NAME COMMAND...: one counted check; its output is shown only when it fails.
check() {
	name=$1; shift
	if "$@" > "$tmp/out" 2>&1; then ok "$name"; else bad "$name"; sed 's/^/     /' "$tmp/out"; fi
}
cleanup() {
	if [ -n "$ctd_pid" ]; then
		kill -TERM "$ctd_pid" 2>/dev/null
		# containerd may take a moment; never leave it behind
		i=0; while kill -0 "$ctd_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$ctd_pid" 2>/dev/null
		ctd_pid=
	fi
	# the native snapshots may hold read-only copies; unmount anything left under tmp first
	grep -o " $tmp/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount "$m" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---------------------------------------------------------------- 1. reproducible
part "1. reproducible"
rebuild() {
	mkdir -p "$tmp/copy/build"
	(cd "$top" && tar --exclude=./build --exclude=./.git -cf - .) | (cd "$tmp/copy" && tar -xf -)
	ln -s "$top/build/deps" "$tmp/copy/build/deps"
	(cd "$tmp/copy" && umask 077 && NODERECOVER_IMAGE=$IMAGE sh ./build.sh image) || return 1
	a=$(sha256sum < "$TAR") b=$(sha256sum < "$tmp/copy/build/dist/noderecover-$VERSION-oci.tar")
	echo "first build  $a"; echo "second build $b"
	[ "$a" = "$b" ]
}
check "the archive rebuilt at another path under umask 077 is byte-identical" rebuild

# ---------------------------------------------------------------- 2. skopeo
part "2. skopeo"
platforms() {
	skopeo inspect --raw "oci-archive:$TAR" > "$tmp/index.json" || return 1
	python3 - "$tmp/index.json" <<'PY'
import json, sys
idx = json.load(open(sys.argv[1]))
got = sorted("%s/%s%s" % (m["platform"]["os"], m["platform"]["architecture"],
             "/" + m["platform"]["variant"] if m["platform"].get("variant") else "") for m in idx["manifests"])
print(got)
assert got == ["linux/amd64", "linux/arm/v7", "linux/arm64/v8"], got
PY
}
check "skopeo inspect --raw: an index over linux/amd64, linux/arm64/v8, linux/arm/v7" platforms
config() {
	skopeo inspect --config --override-arch "$1" ${2:+--override-variant "$2"} "oci-archive:$TAR" > "$tmp/config.json" || return 1
	python3 - "$tmp/config.json" "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(json.dumps(c))
assert c["architecture"] == sys.argv[2], c
assert c["config"] == {"User": "65532:65532", "Entrypoint": ["/noderecover"], "Cmd": ["run"]}, c
assert len(c["rootfs"]["diff_ids"]) == 1, c
assert c["created"] == "1970-01-01T00:00:00Z", c
PY
}
check "skopeo: amd64 config: user 65532:65532, entrypoint /noderecover, cmd run, one layer" config amd64
check "skopeo: arm64 config likewise" config arm64 v8
check "skopeo: arm/v7 config likewise" config arm v7
named() {
	tar -xOf "$TAR" index.json > "$tmp/top.json" || return 1
	python3 - "$tmp/top.json" "$IMAGE" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["manifests"][0]["annotations"]
print(a)
assert a == {"io.containerd.image.name": sys.argv[2], "org.opencontainers.image.ref.name": sys.argv[2]}, a
PY
}
check "index.json names the image $IMAGE for containerd and OCI" named
check "an SPDX 2.3 SBOM per binary (dist and the image's /noderecover.spdx.json): musl, BearSSL, jsmn at dpkg's versions, MIT" \
	python3 "$here/check_dist.py" sbom "$VERSION" "$DIST" "$TAR"
check "org.opencontainers.image.* annotations on the image index and every manifest" \
	python3 "$here/check_dist.py" annotations "$VERSION" "$TAR"
check "CHANGELOG.md in dist (and SHA256SUMS) with a section for $VERSION" \
	python3 "$here/check_dist.py" changelog "$VERSION" "$DIST"

# ---------------------------------------------------------------- 3. containerd
part "3. containerd"
start_containerd() {
	[ "$(id -u)" = 0 ] || { echo "containerd needs root here (it mounts snapshots and runs runc)"; return 1; }
	d=$tmp/ctd
	mkdir -p "$d"
	cat > "$d/config.toml" <<TOML
version = 2
root = "$d/root"
state = "$d/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[debug]
  address = "$d/debug.sock"
[metrics]
  address = ""
TOML
	containerd --config "$d/config.toml" > "$d/containerd.log" 2>&1 &
	ctd_pid=$!
	i=0
	until ctr --address "$d/containerd.sock" version > /dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$ctd_pid" 2>/dev/null; then
			echo "containerd did not start; its log:"; tail -20 "$d/containerd.log"; return 1
		fi
		sleep 0.1
	done
	# the native snapshotter works on any file system; k3s's default, overlayfs, needs more
	ctr --address "$d/containerd.sock" plugins ls | awk '$2 == "native" && $NF == "ok" { ok = 1 } END { exit !ok }' || {
		echo "containerd's native snapshotter is not usable here"; return 1; }
}
if [ "${NODERECOVER_SKIP_IMAGE:-}" = 1 ]; then
	echo "skipping the containerd part (NODERECOVER_SKIP_IMAGE=1)"
elif ! command -v containerd > /dev/null 2>&1 || ! command -v runc > /dev/null 2>&1; then
	bad "containerd and runc are not installed (build.sh image-test installs them as root; NODERECOVER_SKIP_IMAGE=1 skips this part)"
elif ! start_containerd > "$tmp/out" 2>&1; then
	bad "containerd could not run here (NODERECOVER_SKIP_IMAGE=1 skips this part):"
	sed 's/^/     /' "$tmp/out"
else
	ok "containerd $(containerd --version | awk '{print $3}') runs as a daemon in a temporary directory (pid $ctd_pid)"
	CTR="ctr --address $tmp/ctd/containerd.sock -n k8s.io"
	check "ctr -n k8s.io images import --all-platforms (as k3s imports agent/images)" \
		$CTR images import --all-platforms --snapshotter native "$TAR"
	check "the imported image is named $IMAGE" sh -c "$CTR images ls -q | grep -qxF '$IMAGE'"
	version() {
		out=$($CTR run --rm --read-only --snapshotter native "$IMAGE" nr-version /noderecover version) || return 1
		echo "$out"
		[ "$out" = "noderecover $VERSION" ]
	}
	check "ctr run (read-only root) /noderecover version prints noderecover $VERSION" version
	default_cmd() {
		$CTR run --rm --read-only --snapshotter native "$IMAGE" nr-default > "$tmp/default.out" 2>&1
		rc=$?
		cat "$tmp/default.out"
		[ $rc = 2 ] && grep -q 'taint-after (or NODE_RECOVERY_AFTER_SECONDS) is required' "$tmp/default.out"
	}
	check "ctr run with the image's own entrypoint and cmd runs 'run' (refuses: no --taint-after, exit 2)" default_cmd
	CTR=$CTR IMAGE=$IMAGE python3 "$here/test_container.py" || FAIL=$((FAIL + 1))
fi

# ---------------------------------------------------------------- 4. qemu
part "4. qemu"
for a in arm64 armhf; do
	case $a in arm64) q=qemu-aarch64-static ;; armhf) q=qemu-arm-static ;; esac
	bin=$DIST/noderecover-$VERSION-linux-$a
	if ! command -v $q > /dev/null 2>&1; then bad "$q is not installed (build.sh dist installs qemu-user-static)"; continue; fi
	check "$a: $q runs the $a binary's version" sh -c "$q '$bin' version | grep -qxF 'noderecover $VERSION'"
	for t in "$top"/build/unit-$a/test_*; do
		[ -x "$t" ] || { bad "$a: no cross-built unit tests in build/unit-$a"; break; }
		echo "$a: $(basename "$t") under $q"
		# its own "NAME: N passed, N failed" line counts; a crash without one is a failure
		(cd "$top/tests/unit" && $q "$t") > "$tmp/out" 2>&1
		sed "s/^/$a /" "$tmp/out"
		grep -Eq '[0-9]+ passed, [0-9]+ failed' "$tmp/out" || bad "$a: $(basename "$t") printed no counts"
	done
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$q" "$bin" > "$tmp/noderecover-$a"
	chmod +x "$tmp/noderecover-$a"
	echo "$a: stand-in subset under $q: $QEMU_STANDIN"
	sh "$top/tests/standin/run.sh" "$tmp/noderecover-$a" $QEMU_STANDIN > "$tmp/out" 2>&1
	sed "s/^standin:/standin-$a:/" "$tmp/out"
	grep -Eq '^standin: [0-9]+ passed, [0-9]+ failed' "$tmp/out" || bad "$a: the stand-in subset printed no counts"
done

# ---------------------------------------------------------------- 5. systemd unit
part "5. systemd unit"
unit_verify() {
	# ExecStart must name an existing file: verify a copy that points at the built binary
	u=${1:-noderecover.service}
	mkdir -p "$tmp/unit"
	sed "s|^ExecStart=/usr/local/bin/noderecover|ExecStart=$DIST/noderecover-$VERSION-linux-amd64|" \
		"$top/deploy/$u" > "$tmp/unit/$u"
	grep -q "^ExecStart=$DIST/" "$tmp/unit/$u" || { echo "no ExecStart=/usr/local/bin/noderecover line"; return 1; }
	out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$tmp/unit/$u" 2>&1)
	rc=$?
	echo "$out"
	[ $rc = 0 ] && [ -z "$out" ]
}
check "systemd-analyze verify deploy/noderecover.service: no error, no warning" unit_verify
check "systemd-analyze verify deploy/noderecover-fence.service: no error, no warning" unit_verify noderecover-fence.service

part "done"
echo "image: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
