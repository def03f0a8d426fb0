#!/bin/sh
# build.sh [build|test|demo|bench|unit|standin|e2e|asan|clean]
# Installs what the build needs (Debian 12, as root), builds BearSSL 0.6 from Debian's source
# package with musl, and links build/noderecover static. See README.md.
set -eu
cd "$(dirname "$0")"
top=$(pwd)

B=build
DEPS=$B/deps
BEARSSL=$DEPS/bearssl
LIB="http.c tls.c json.c kube.c kubeconfig.c policy.c settings.c target.c text.c"
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror=implicit-function-declaration -Werror"
VERSION=$(cat VERSION 2>/dev/null || echo 0.1.0)

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

# BearSSL from Debian's source package, compiled with musl-gcc: Debian's libbearssl.a is built
# against glibc's fortified string functions (__memcpy_chk, ...) that musl does not have.
bearssl() {
	[ -f "$BEARSSL/libbearssl.a" ] && return 0
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
	rm -rf "$DEPS/src" && mkdir -p "$DEPS/src" "$BEARSSL"
	(cd "$DEPS/src" && apt-get source -qq bearssl >/dev/null 2>&1) || {
		say "apt-get source bearssl failed"; exit 1; }
	src=$(ls -d "$DEPS"/src/bearssl-*/ | head -n 1)
	say "building BearSSL with musl-gcc from $src"
	make -s -C "$src" -j2 lib CC=musl-gcc BUILD="$top/$BEARSSL/out" \
		CFLAGS="-Os -ffunction-sections -fdata-sections" >/dev/null
	cp "$BEARSSL/out/libbearssl.a" "$BEARSSL/libbearssl.a"
}

# musl-gcc does not search /usr/include (glibc's); jsmn's header is linked in on its own.
deps() {
	need_packages
	bearssl
	mkdir -p $DEPS/include
	ln -sf /usr/include/jsmn.h $DEPS/include/jsmn.h
}

# The static, stripped binary: musl, BearSSL, -Os, unused sections dropped.
build() {
	deps
	mkdir -p $B
	musl-gcc -std=c11 -D_DEFAULT_SOURCE -Os $WARN -DNODERECOVER_VERSION="\"$VERSION\"" \
		-ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables -I/usr/include/bearssl -I$DEPS/include \
		-static -s -Wl,--gc-sections -o $B/noderecover noderecover.c $LIB $BEARSSL/libbearssl.a
	say "built $B/noderecover ($(wc -c < $B/noderecover) bytes)"
}

# The same code with AddressSanitizer and UBSan, on glibc with Debian's libbearssl.
build_asan() {
	deps
	mkdir -p $B
	gcc -std=c11 -D_DEFAULT_SOURCE -g -O1 $WARN -fsanitize=address,undefined -fno-sanitize-recover=all \
		-DNODERECOVER_VERSION="\"$VERSION-asan\"" -o $B/noderecover-asan noderecover.c $LIB -lbearssl
}

# Unit tests in C, built with the sanitizers against glibc and Debian's libbearssl.
unit() {
	deps
	mkdir -p $B/unit
	for t in tests/unit/test_*.c; do
		n=$(basename "$t" .c)
		gcc -std=c11 -D_DEFAULT_SOURCE -g -O1 $WARN -fsanitize=address,undefined -fno-sanitize-recover=all \
			-DSETTINGS_SA_DIR=\"sa\" -DSETTINGS_K3S_KUBECONFIG=\"kubeconfig/k3s.yaml\" \
			-I. -o $B/unit/$n "$t" $LIB -lbearssl
	done
	# json.c scans strings 16 bytes at a time with SSE2; its scalar path is tested too.
	gcc -std=c11 -D_DEFAULT_SOURCE -g -O1 $WARN -fsanitize=address,undefined -fno-sanitize-recover=all \
		-DJSON_NO_SIMD -I. -o $B/unit/test_json_scalar tests/unit/test_json.c $LIB -lbearssl
	rc=0
	for t in $B/unit/test_*; do
		(cd tests/unit && "$top/$t") || rc=1
	done
	return $rc
}

# Runs one suite, keeps its output in build/NAME.log, and adds its "N passed, N failed[, N
# skipped]" lines to the totals.
PASSED=0 FAILED=0 SKIPPED=0 BROKEN=
suite() {
	name=$1; shift
	say "running $name"
	if "$@" 2>&1 | tee $B/$name.log; then :; fi
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
	suite standin status standin sh tests/standin/run.sh $B/noderecover
	suite standin-asan status standin-asan sh tests/standin/run.sh $B/noderecover-asan
	# The Python model of the contract runs the same tests: a test that fails against it is
	# suspect, and a test that passes against a model and a binary that disagree is no test.
	suite standin-model status standin-model sh tests/standin/run.sh tests/standin/refwatcher.py
	if [ "${NODERECOVER_SKIP_E2E:-}" = 1 ]; then
		say "skipping the end-to-end tests (NODERECOVER_SKIP_E2E=1)"
	else
		suite e2e status e2e sh tests/e2e/run.sh $B/noderecover
	fi
	[ -z "$BROKEN" ] || say "suites that failed:$BROKEN"
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ -z "$BROKEN" ] && [ "$FAILED" -eq 0 ]
}

cmd=${1:-build}
case $cmd in
build) build ;;
asan) build_asan ;;
unit) unit ;;
test) test_all ;;
standin) build; sh tests/standin/run.sh $B/noderecover ;;
e2e) build; sh tests/e2e/run.sh $B/noderecover ;;
demo) build; python3 demo/demo.py $B/noderecover ;;
bench) build; sh bench/run.sh $B/noderecover ;;
clean) rm -rf $B ;;
*) say "unknown command $cmd"; exit 2 ;;
esac
