#!/bin/sh
# build.sh [build|dist|chart|image|deploy|test|demo|bench|bytes|unit|standin|e2e|helm|monitoring|soak [MINUTES]|asan|image-test|clean]
# Installs what the build needs (Debian 12, as root), builds BearSSL 0.6 from Debian's source
# package with musl, and links build/noderecover static; dist cross-builds the same sources for
# amd64, arm64 and armhf, image packs them into one OCI archive. See README.md.
set -eu
cd "$(dirname "$0")"
top=$(pwd)

B=build
DEPS=$B/deps
BEARSSL=$DEPS/bearssl
LIB="access.c clock.c election.c events.c follow.c http.c http_parse.c tls.c json.c json_list.c json_scan.c json_write.c kube.c kubeconfig.c yaml.c lease.c listen.c manifests.c metrics.c pass.c plan.c policy.c say.c settings.c table.c target.c text.c"
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror=implicit-function-declaration -Werror"
VERSION=$(cat VERSION 2>/dev/null || echo 0.1.0)
# The one image reference: the OCI archive names itself so, and `noderecover manifests` puts it
# in the Deployment.
IMAGE=${NODERECOVER_IMAGE:-ghcr.io/exadev/noderecover:$VERSION}
DIST=$B/dist
CHART=deploy/helm/noderecover
ARCHES="amd64 arm64 armhf"

say() { printf '%s\n' "build.sh: $*" >&2; }

# Debian packages: musl for the static link, jsmn's header, BearSSL's headers and source
# package, and the tools the tests use.
need_packages() {
	missing=
	command -v musl-gcc >/dev/null 2>&1 || missing="$missing musl-tools"
	[ -f /usr/include/jsmn.h ] || missing="$missing libjsmn-dev"
	[ -f /usr/include/bearssl.h ] || missing="$missing libbearssl-dev"
	command -v dpkg-source >/dev/null 2>&1 || missing="$missing dpkg-dev"
	command -v gcc >/dev/null 2>&1 || missing="$missing gcc"
	command -v python3 >/dev/null 2>&1 || missing="$missing python3"
	command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
	command -v file >/dev/null 2>&1 || missing="$missing file"
	command -v xz >/dev/null 2>&1 || missing="$missing xz-utils"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# BearSSL from Debian's source package, compiled with a musl-gcc wrapper (ARCH's, or the native
# one): Debian's libbearssl.a is built against glibc's fortified string functions (__memcpy_chk,
# ...) that musl does not have. No unwind tables: C without exceptions never unwinds, and they
# were 12 KB of the binary. Never -flto here: BearSSL keeps some constant-time helpers (br_ccopy)
# in files of their own so that no compiler sees through them. A library built with other flags
# is built again. bearssl [ARCH]: the native one in $BEARSSL, others beside it.
BEARSSL_CFLAGS="-Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables"
bearssl() {
	arch=${1:-}
	lib=$BEARSSL${arch:+-$arch}
	[ -f "$lib/libbearssl.a" ] && [ "$(cat "$lib/cflags" 2>/dev/null)" = "$BEARSSL_CFLAGS" ] && return 0
	rm -rf "$lib"
	if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
		say "adding Debian's bookworm source index (deb-src) for BearSSL's source package"
		cat > /etc/apt/sources.list.d/noderecover-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		apt-get update -qq
	fi
	if ! ls -d "$DEPS"/src/bearssl-*/ >/dev/null 2>&1; then
		rm -rf "$DEPS/src" && mkdir -p "$DEPS/src"
		(cd "$DEPS/src" && apt-get source -qq bearssl >/dev/null 2>&1) || {
			say "apt-get source bearssl failed"; exit 1; }
	fi
	src=$(ls -d "$DEPS"/src/bearssl-*/ | head -n 1)
	cc=$(musl_cc "$arch")
	say "building BearSSL with $cc from $src"
	mkdir -p "$lib"
	make -s -C "$src" -j2 lib CC="$cc" AR="$(gnu_tool "$arch" ar)" BUILD="$top/$lib/out" \
		CFLAGS="$BEARSSL_CFLAGS" >/dev/null
	cp "$lib/out/libbearssl.a" "$lib/libbearssl.a"
	echo "$BEARSSL_CFLAGS" > "$lib/cflags"
}

# musl-gcc does not search /usr/include (glibc's); jsmn's header is linked in on its own.
deps() {
	need_packages
	bearssl
	mkdir -p $DEPS/include
	ln -sf /usr/include/jsmn.h $DEPS/include/jsmn.h
}

# Debian's architecture names to the musl-gcc wrapper (musl-dev:ARCH ships it) and the GNU
# triplet of its cross gcc and binutils. No argument: the native ones.
triplet() {
	case $1 in
	amd64) echo x86_64-linux-gnu ;;
	arm64) echo aarch64-linux-gnu ;;
	armhf) echo arm-linux-gnueabihf ;;
	*) say "unknown architecture $1 (want one of $ARCHES)"; exit 2 ;;
	esac
}
native_arch() { dpkg --print-architecture; }
musl_cc() {
	if [ -z "${1:-}" ] || [ "$1" = "$(native_arch)" ]; then echo musl-gcc; return; fi
	case $1 in
	armhf) echo arm-linux-musleabihf-gcc ;;
	*) echo "$(triplet "$1" | sed 's/-gnu$/-musl/')-gcc" ;;
	esac
}
gnu_tool() {
	if [ -z "${1:-}" ] || [ "$1" = "$(native_arch)" ]; then echo "$2"; else echo "$(triplet "$1")-$2"; fi
}

# Cross compilers for every architecture but the native one: Debian's gcc-TRIPLET with
# musl-dev:ARCH (whose wrapper points that gcc at musl), and qemu-user-static to run them.
need_cross() {
	missing=
	for a in $ARCHES; do
		[ "$a" = "$(native_arch)" ] && continue
		command -v "$(musl_cc "$a")" >/dev/null 2>&1 || missing="$missing musl-dev:$a"
		command -v "$(triplet "$a")-gcc" >/dev/null 2>&1 || missing="$missing gcc-$(triplet "$a" | tr _ -)"
		dpkg --print-foreign-architectures | grep -qx "$a" || { say "adding foreign architecture $a"; dpkg --add-architecture "$a"; }
	done
	command -v qemu-aarch64-static >/dev/null 2>&1 || missing="$missing qemu-user-static"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# compile CC BEARSSL_DIR OUT [FLAG...]: the static, stripped binary: musl, BearSSL, -Os, unused
# sections dropped; FLAGs are added (a link map for bench/bytes.sh). The same line for every
# architecture. For size: link-time optimization across our files (one partition: the same bytes
# every build); position-dependent code, as the binary is static and not PIE; one read-only
# executable segment for headers, code and constants (-z noseparate-code: a second one costs up
# to a page, 64 KiB on arm64); no RELRO, which musl's static start-up never applies, so its page
# alignment bought nothing, and the data segment packed after the code (common-page-size).
compile() {
	cc=$1 lib=$2 out=$3
	shift 3
	"$cc" -std=c11 -D_DEFAULT_SOURCE -pthread -Os $WARN -DNODERECOVER_VERSION="\"$VERSION\"" -DNODERECOVER_IMAGE="\"$IMAGE\"" \
		-ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables -I/usr/include/bearssl -I$DEPS/include \
		-flto -flto-partition=one -fno-pie -no-pie -static -s -Wl,--gc-sections \
		-Wl,-z,noseparate-code -Wl,-z,norelro -Wl,-z,common-page-size=64 \
		"$@" -o "$out" noderecover.c $LIB "$lib/libbearssl.a"
}

build() {
	deps
	mkdir -p $B
	compile musl-gcc $BEARSSL $B/noderecover -Wl,-Map=$B/noderecover.map
	say "built $B/noderecover ($(wc -c < $B/noderecover) bytes)"
}

# build/dist/noderecover-VERSION-linux-ARCH for each architecture, the chart and its HelmChart,
# and SHA256SUMS.
dist() {
	deps
	need_cross
	mkdir -p $DIST
	for a in $ARCHES; do
		bin=$DIST/noderecover-$VERSION-linux-$a
		if [ "$a" = "$(native_arch)" ]; then
			build
			cp $B/noderecover "$bin"
		else
			bearssl "$a"
			mkdir -p $B/maps
			compile "$(musl_cc "$a")" "$BEARSSL-$a" "$bin" -Wl,-Map=$B/maps/noderecover-linux-$a.map
		fi
		say "built $bin ($(wc -c < "$bin") bytes)"
	done
	chart
	(cd $DIST && sha256sum noderecover-$VERSION-linux-* noderecover-$VERSION.tgz noderecover-$VERSION-helmchart.yaml > SHA256SUMS)
}

# What the bytes of build/noderecover are (bench/bytes.py, from the link maps): the same line
# linked again without LTO, its objects named after their sources, for our bytes by file; the
# cross-built maps of `dist`, when there, for the other architectures. BYTES_UPDATE=1 also
# rewrites that part of BENCHMARKS.md.
bytes() {
	build
	mkdir -p $B/bytes
	(cd $B/bytes && rm -f ./*.o ./*.i ./*.s)
	# -save-temps compiles the preprocessed text, whose comments (/* fallthrough */) are gone;
	# the warnings are the real build's business
	compile musl-gcc $BEARSSL $B/bytes/noderecover-nolto -fno-lto -save-temps=obj -Wno-implicit-fallthrough \
		-Wl,-Map=$B/bytes/noderecover-nolto.map
	set -- --nolto-map $B/bytes/noderecover-nolto.map --arch "$(native_arch)=$B/noderecover:$B/noderecover.map"
	for a in $ARCHES; do
		[ "$a" = "$(native_arch)" ] || [ ! -f $B/maps/noderecover-linux-$a.map ] ||
			set -- "$@" --arch "$a=$DIST/noderecover-$VERSION-linux-$a:$B/maps/noderecover-linux-$a.map"
	done
	[ "${BYTES_UPDATE:-}" = 1 ] && set -- "$@" --update BENCHMARKS.md
	python3 bench/bytes.py $B/noderecover $B/noderecover.map "$@"
}

# OCI image layout pieces. The platform of an image (in its config and in the index).
oci_platform() {
	case $1 in
	amd64) echo '"architecture":"amd64","os":"linux"' ;;
	arm64) echo '"architecture":"arm64","os":"linux","variant":"v8"' ;;
	armhf) echo '"architecture":"arm","os":"linux","variant":"v7"' ;;
	esac
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
# blob FILE: moves FILE into the layout's blobs and prints its descriptor's digest and size.
blob() {
	d=$(sha "$1")
	n=$(wc -c < "$1")
	mv "$1" "$OCI/blobs/sha256/$d"
	echo "\"digest\":\"sha256:$d\",\"size\":$n"
}
# A tar that depends only on the files' names, bytes and modes: sorted, time 0, owner 0.
repro_tar() {
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' \
		--format=ustar "$@"
}

# build/dist/noderecover-VERSION-oci.tar from the dist binaries: an OCI image layout in one tar,
# an index over one image per architecture, each a single gzip layer holding /noderecover, run
# as 65532:65532. Only tar, gzip -n and sha256sum: two builds are byte-identical.
image() {
	dist
	OCI=$B/oci/layout
	rm -rf $B/oci && mkdir -p $OCI/blobs/sha256 $B/oci/root
	manifests=
	for a in $ARCHES; do
		cp $DIST/noderecover-$VERSION-linux-$a $B/oci/root/noderecover
		chmod 0755 $B/oci/root/noderecover
		repro_tar -C $B/oci/root -cf $B/oci/layer.tar noderecover
		gzip -n -9 < $B/oci/layer.tar > $B/oci/layer.tar.gz
		diff_id=$(sha $B/oci/layer.tar)
		layer=$(blob $B/oci/layer.tar.gz)
		printf '{%s,"created":"1970-01-01T00:00:00Z","config":{"User":"65532:65532","Entrypoint":["/noderecover"],"Cmd":["run"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
			"$(oci_platform $a)" "$diff_id" > $B/oci/config.json
		config=$(blob $B/oci/config.json)
		printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json",%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip",%s}]}' \
			"$config" "$layer" > $B/oci/manifest.json
		manifests="$manifests${manifests:+,}{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",$(blob $B/oci/manifest.json),\"platform\":{$(oci_platform $a)}}"
	done
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$manifests" > $B/oci/index.json
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json",%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$(blob $B/oci/index.json)" "$IMAGE" "$IMAGE" > $OCI/index.json
	printf '{"imageLayoutVersion":"1.0.0"}' > $OCI/oci-layout
	repro_tar -C $OCI -cf $DIST/noderecover-$VERSION-oci.tar oci-layout index.json blobs
	say "built $DIST/noderecover-$VERSION-oci.tar ($(wc -c < $DIST/noderecover-$VERSION-oci.tar) bytes, $(sha $DIST/noderecover-$VERSION-oci.tar)) named $IMAGE"
}

# build/dist/noderecover-VERSION.tgz: the Helm chart packed so that it depends only on its files'
# names, bytes and modes (helm package stamps the time: two runs differ), and
# noderecover-VERSION-helmchart.yaml: one k3s HelmChart (helm.cattle.io/v1) carrying that .tgz
# inline (spec.chartContent, base64) and the chart's values.yaml as its values, with taintAfter
# 300 (deploy/noderecover.yaml's) and the image this build names. Needs only tar, gzip, base64.
chart() {
	v=$(sed -n 's/^version: *//p' $CHART/Chart.yaml)
	[ "$v" = "$VERSION" ] || { say "$CHART/Chart.yaml has version '$v', VERSION has $VERSION"; exit 1; }
	mkdir -p $DIST
	tgz=$DIST/noderecover-$VERSION.tgz
	repro_tar -C "$(dirname $CHART)" -cf - "$(basename $CHART)" | gzip -n -9 > "$tgz.tmp"
	mv "$tgz.tmp" "$tgz"
	values=$(sed -e 's/^taintAfter: ""$/taintAfter: 300/' -e "s|^image: \"\"\$|image: \"$IMAGE\"|" $CHART/values.yaml)
	printf '%s\n' "$values" | grep -qx 'taintAfter: 300' && printf '%s\n' "$values" | grep -qx "image: \"$IMAGE\"" ||
		{ say "$CHART/values.yaml has no 'taintAfter: \"\"' or 'image: \"\"' line to set"; exit 1; }
	{
		printf '%s\n' "# noderecover $VERSION for k3s: its Helm chart inline (spec.chartContent: base64 of" \
			"# noderecover-$VERSION.tgz) and the chart's values (valuesContent). Set the values (taintAfter" \
			"# at least), then copy this file into /var/lib/rancher/k3s/server/manifests/. Written by" \
			"# ./build.sh dist; the release lives in kube-system, its objects in namespace noderecover." \
			"apiVersion: helm.cattle.io/v1" "kind: HelmChart" "metadata:" "  name: noderecover" \
			"  namespace: kube-system" "spec:" "  targetNamespace: kube-system" \
			"  chartContent: $(base64 -w0 < "$tgz")" "  valuesContent: |-"
		printf '%s\n' "$values" | sed 's/^/    /'
	} > $DIST/noderecover-$VERSION-helmchart.yaml
	say "built $tgz ($(wc -c < "$tgz") bytes, $(sha "$tgz")) and $DIST/noderecover-$VERSION-helmchart.yaml"
}

# deploy/: the output of `noderecover manifests` for the settings deploy/README.md names
# (tests/standin/test_manifests.py fails when they differ).
deploy_manifests() {
	build
	$B/noderecover manifests --taint-after 300 > deploy/noderecover.yaml
	$B/noderecover manifests --taint-after 300 --prune-after 1800 > deploy/noderecover-prune.yaml
	say "wrote deploy/noderecover.yaml and deploy/noderecover-prune.yaml for $IMAGE"
	sh deploy/prometheus/make.sh
}

# What tests/image needs: Debian's containerd and runc (the runtime k3s embeds), skopeo to read
# the archive as a registry client would, and systemd-analyze for deploy/noderecover.service.
need_image_tools() {
	missing=
	command -v containerd >/dev/null 2>&1 || missing="$missing containerd"
	command -v runc >/dev/null 2>&1 || missing="$missing runc"
	command -v skopeo >/dev/null 2>&1 || missing="$missing skopeo"
	command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# What the monitoring suite and the e2e Prometheus scenario need: Debian's prometheus (the
# server, run by the test on loopback, and promtool) and chromium (a screenshot of its graph page).
# The package's own service is not used (a container has no init to start it anyway).
need_monitoring_tools() {
	missing=
	{ command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || missing="$missing prometheus"
	command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends $missing >/dev/null
}

# The unit tests for every architecture but the native one, static with its musl wrapper and
# BearSSL (no sanitizers there), into build/unit-ARCH/ for qemu-user-static.
unit_cross() {
	for a in $ARCHES; do
		[ "$a" = "$(native_arch)" ] && continue
		mkdir -p $B/unit-$a
		for t in tests/unit/test_*.c; do
			"$(musl_cc "$a")" -std=c11 -D_DEFAULT_SOURCE -pthread -O1 $WARN -DSETTINGS_SA_DIR=\"sa\" \
				-DSETTINGS_K3S_KUBECONFIG=\"kubeconfig/k3s.yaml\" -I/usr/include/bearssl -I$DEPS/include -I. \
				-static -o $B/unit-$a/$(basename "$t" .c) "$t" $LIB "$BEARSSL-$a/libbearssl.a"
		done
	done
}

# The image suite: the archive, rebuilt elsewhere and compared, read by skopeo, run by
# containerd; the cross binaries' unit tests and stand-in subset under qemu.
image_test() {
	image
	need_image_tools
	unit_cross
	sh tests/image/run.sh "$VERSION" "$IMAGE"
}

# The same code with AddressSanitizer and UBSan, on glibc with Debian's libbearssl.
build_asan() {
	deps
	mkdir -p $B
	gcc -std=c11 -D_DEFAULT_SOURCE -pthread -g -O1 $WARN -fsanitize=address,undefined -fno-sanitize-recover=all \
		-DNODERECOVER_VERSION="\"$VERSION-asan\"" -DNODERECOVER_IMAGE="\"$IMAGE\"" -o $B/noderecover-asan noderecover.c $LIB -lbearssl
}

# Unit tests in C, built with the sanitizers against glibc and Debian's libbearssl.
unit() {
	deps
	rm -rf $B/unit
	mkdir -p $B/unit/obj
	# the sources compiled once, then linked into each test (an archive: each takes what it uses)
	ucc="gcc -std=c11 -D_DEFAULT_SOURCE -pthread -g -O1 $WARN -fsanitize=address,undefined -fno-sanitize-recover=all -I."
	ucc="$ucc -DSETTINGS_SA_DIR=\"sa\" -DSETTINGS_K3S_KUBECONFIG=\"kubeconfig/k3s.yaml\""
	for f in $LIB; do
		$ucc -c -o $B/unit/obj/${f%.c}.o $f
	done
	ar rcs $B/unit/libnr.a $B/unit/obj/*.o
	for t in tests/unit/test_*.c; do
		n=$(basename "$t" .c)
		$ucc -o $B/unit/$n "$t" $B/unit/libnr.a -lbearssl
	done
	# json_scan.c scans strings 16 bytes at a time with SSE2; its scalar path is tested too.
	$ucc -DJSON_NO_SIMD -c -o $B/unit/json_scan_scalar.o json_scan.c
	$ucc -o $B/unit/test_json_scalar tests/unit/test_json.c $B/unit/json_scan_scalar.o $B/unit/libnr.a -lbearssl
	rc=0
	for t in $B/unit/test_*; do
		(cd tests/unit && "$top/$t") || rc=1
	done
	return $rc
}

# The Helm suite: the chart against `noderecover manifests` (tests/helm/); a second binary, naming
# another image, for the chart's image value. Builds the helm CLI the first time (cached).
helm_test() {
	build
	chart
	other=registry.example:5000/ops/noderecover:v$VERSION-helm-test
	mkdir -p $B/helm
	gcc -std=c11 -D_DEFAULT_SOURCE -pthread -O0 $WARN -DNODERECOVER_VERSION="\"$VERSION\"" -DNODERECOVER_IMAGE="\"$other\"" \
		-o $B/helm/noderecover-other-image noderecover.c $LIB -lbearssl
	sh tests/helm/run.sh $B/noderecover $B/helm/noderecover-other-image "$VERSION" "$IMAGE"
}

# Runs one suite, keeps its output in build/NAME.log, and adds its "N passed, N failed[, N
# skipped]" lines to the totals.
PASSED=0 FAILED=0 SKIPPED=0 BROKEN=
suite() {
	name=$1; shift
	say "running $name"
	# Into a file, shown as it grows, and not through a pipe: a process a test left behind
	# would hold a pipe open and hang the whole run; the suite ends when its command does.
	: >$B/$name.log
	tail -n +1 -f $B/$name.log &
	tpid=$!
	trap 'kill $tpid 2>/dev/null; exit 130' INT TERM
	"$@" >>$B/$name.log 2>&1 || :
	sleep 1
	kill $tpid 2>/dev/null || :
	wait $tpid 2>/dev/null || :
	trap - INT TERM
	counts=$(grep -Eo '[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?' $B/$name.log |
		awk '{p += $1; f += $3; s += $5} END {print p+0, f+0, s+0}')
	set -- $counts
	PASSED=$((PASSED + $1)) FAILED=$((FAILED + $2)) SKIPPED=$((SKIPPED + $3))
	grep -q "^$name: exit 0$" $B/$name.status || BROKEN="$BROKEN $name"
}
# Runs a suite's command and records its exit status, since a pipe through tee hides it.
status() {
	sname=$1; shift
	if "$@"; then rc=0; else rc=$?; fi
	echo "$sname: exit $rc" > $B/$sname.status
}

test_all() {
	build
	build_asan
	suite unit status unit unit
	suite fuzz-replay status fuzz-replay sh tests/fuzz/replay.sh
	need_monitoring_tools
	suite monitoring status monitoring sh tests/monitoring/run.sh
	suite standin status standin sh tests/standin/run.sh $B/noderecover
	suite standin-asan status standin-asan sh tests/standin/run.sh $B/noderecover-asan
	# The Python model of the contract runs the same contract tests: a test that fails against
	# it is suspect, and a test that passes against a model and a binary that disagree is no
	# test. The wire's hardening (slow peers, framing, secrets, shutdown) and the manifests are
	# the binary's own and not modelled.
	suite standin-model status standin-model sh tests/standin/run.sh tests/standin/refwatcher.py \
		test_00_standin test_auth test_edges test_faults test_hostile test_paging test_prune \
		test_run test_settings test_slow_body test_slow_headers test_taint \
		test_storm test_exclude test_dryrun test_conflict test_access test_clock
	suite image status image image_test
	suite helm status helm helm_test
	if [ "${NODERECOVER_SKIP_E2E:-}" = 1 ]; then
		say "skipping the end-to-end tests (NODERECOVER_SKIP_E2E=1)"
	else
		suite e2e status e2e sh tests/e2e/run.sh $B/noderecover
		# a subset again on kine over SQLite, k3s's default datastore (tests/e2e/run.sh)
		suite e2e-kine status e2e-kine env NODERECOVER_E2E_DATASTORE=kine sh tests/e2e/run.sh $B/noderecover
		# the chaos soak's short form (tests/e2e/soak_test.go): a few minutes of faults
		suite soak status soak soak "$SOAK_SHORT" "${NODERECOVER_SOAK_NODES:-$SOAK_SHORT_NODES}"
	fi
	[ -z "$BROKEN" ] || say "suites that failed:$BROKEN"
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ -z "$BROKEN" ] && [ "$FAILED" -eq 0 ]
}

# The chaos soak on the real control plane (tests/e2e/soak_test.go): MINUTES of faults (default
# 60), then a summary; NODERECOVER_SOAK_SEED replays a run's schedule, NODERECOVER_SOAK_NODES
# sets the fleet (default 1000). The short form in test: SOAK_SHORT minutes, SOAK_SHORT_NODES nodes.
SOAK_SHORT=4 SOAK_SHORT_NODES=300
soak() {
	min=$1 nodes=$2
	NODERECOVER_SOAK_MINUTES=$min NODERECOVER_SOAK_NODES=$nodes NODERECOVER_E2E_RUN='^TestSoak' \
		NODERECOVER_E2E_TIMEOUT="$(awk -v m="$min" 'BEGIN {printf "%dm", m + 30}')" sh tests/e2e/run.sh $B/noderecover
}

cmd=${1:-build}
case $cmd in
build) build ;;
dist) dist ;;
chart) chart ;;
helm) helm_test ;;
image) image ;;
image-test) image_test ;;
deploy) deploy_manifests ;;
asan) build_asan ;;
unit) unit ;;
test) test_all ;;
standin) build; sh tests/standin/run.sh $B/noderecover ;;
e2e) build; need_monitoring_tools; sh tests/e2e/run.sh $B/noderecover ;;
monitoring) need_monitoring_tools; sh tests/monitoring/run.sh ;;
soak) build; soak "${2:-60}" "${NODERECOVER_SOAK_NODES:-1000}" ;;
demo) build; python3 demo/demo.py $B/noderecover ;;
bench) build; sh bench/run.sh $B/noderecover ;;
bytes) bytes ;;
clean) rm -rf $B ;;
*) say "unknown command $cmd"; exit 2 ;;
esac
