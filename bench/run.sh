#!/bin/sh
# bench/run.sh [BINARY]: noderecover's benchmark (see BENCHMARKS.md). Reports; never fails on a
# number. Installs what it needs (Debian 12, as root), builds the stand-in API server
# (bench/standin, Go standard library), and runs bench/bench.py, which writes build/bench/.
#
# Environment: BENCH_NS (default 100,1000,5000,20000), BENCH_RUNS (5), BENCH_RUNS_BIG (3, for the
# largest N), BENCH_OUT (build/bench), BENCH_PROFILE=0 to skip valgrind/strace/size, KUBECTL,
# BENCH_UPDATE=1 to copy the report into BENCHMARKS.md (between its bench:begin/end marks) and
# the plot to bench/results.png. BENCH_APISERVER=1 adds the real kube-apiserver's cost of polling
# against watching (tests/e2e's TestBenchAPIServer on the e2e control plane; needs what
# tests/e2e/run.sh needs; about 25 minutes more; BENCH_APISERVER_NODES (1000) and
# BENCH_APISERVER_WINDOW (3m) tune it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bin=${1:-$top/build/noderecover}
out=${BENCH_OUT:-$top/build/bench}
say() { printf '%s\n' "bench/run.sh: $*" >&2; }

[ -x "$bin" ] || { say "no binary at $bin (./build.sh first)"; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

# What the benchmark runs, from Debian: kubectl (kubernetes-client) and jq for the shell row, curl
# for the floor, gnuplot for the plot, valgrind and strace for the heap and profile, binutils for
# size and nm, openssl for the certificates, python3 for the driver, Go for the stand-in server.
missing=
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need kubectl kubernetes-client
need jq jq
need curl curl
need gnuplot gnuplot-nox
need valgrind valgrind
need strace strace
need size binutils
need openssl openssl
need python3 python3
need cc gcc
need /usr/bin/time time
gobin=
for g in go /usr/local/go/bin/go /usr/lib/go/bin/go; do
	if command -v "$g" >/dev/null 2>&1; then gobin=$(command -v "$g"); break; fi
done
[ -n "$gobin" ] || missing="$missing golang-go"
if [ -n "$missing" ]; then
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
	[ -n "$gobin" ] || gobin=$(command -v go)
fi

mkdir -p "$out"
[ -n "${HOME:-}" ] || export GOCACHE="${GOCACHE:-$out/gocache}"
say "building the stand-in API server with $($gobin version)"
(cd "$here/standin" && GOTOOLCHAIN=local CGO_ENABLED=0 "$gobin" build -o "$out/standin" .)

# The launcher that reports each child's own CPU time and peak RSS (see bench/spawn.c).
if command -v musl-gcc >/dev/null 2>&1; then
	musl-gcc -static -Os -s -o "$out/spawn" "$here/spawn.c"
else
	cc -static -O2 -s -o "$out/spawn" "$here/spawn.c" 2>/dev/null || cc -O2 -o "$out/spawn" "$here/spawn.c"
fi

# An unstripped build of the same code (the lead's command without -s, plus a link map and
# debug info, which change no code) for symbol sizes and callgrind, and a glibc build of the
# same sources for valgrind's heap profile: valgrind cannot replace the malloc of a static
# binary. Both are best effort: the benchmark runs without them.
extra=
if [ "${BENCH_PROFILE:-1}" != 0 ] && [ -f "$top/build.sh" ] && command -v musl-gcc >/dev/null 2>&1 \
	&& [ -f "$top/build/deps/bearssl/libbearssl.a" ]; then
	lib=$(sed -n 's/^LIB="\(.*\)"$/\1/p' "$top/build.sh")
	# the code-generation flags of build.sh's static link (the shared CFLAGS_BASE line and its
	# compile() function's own), without -s; -flto and -no-pie go to the link as well
	cmd="$(sed -n 's/^CFLAGS_BASE="\(.*\)"$/\1/p' "$top/build.sh") $(awk '/^compile\(\)/,/^}/' "$top/build.sh" |
		sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | grep -e '"\$cc"' | head -n 1)"
	cflags= ldflags=
	for w in $cmd; do
		case $w in
		-flto*|-fno-pie) cflags="$cflags $w"; ldflags="$ldflags $w" ;;
		-no-pie) ldflags="$ldflags $w" ;;
		-O*|-f*|-m*|-std=*|-D_*) cflags="$cflags $w" ;;
		-Wl,*) ldflags="$ldflags $w" ;;
		esac
	done
	[ -n "$cflags" ] || cflags="-std=c11 -D_DEFAULT_SOURCE -Os -ffunction-sections -fdata-sections"
	[ -n "$ldflags" ] || ldflags="-Wl,--gc-sections"
	mkdir -p "$out/include" && ln -sf /usr/include/jsmn.h "$out/include/jsmn.h"
	ver=$(cat "$top/VERSION" 2>/dev/null || echo 0)
	mkdir -p "$out/obj"
	if (cd "$top" && for c in noderecover.c $lib; do
			# shellcheck disable=SC2086
			musl-gcc $cflags -g -DNODERECOVER_VERSION="\"$ver\"" -I/usr/include/bearssl -I"$out/include" \
				-c -o "$out/obj/${c%.c}.o" "$c" || exit 1
		done && musl-gcc -static $ldflags -Wl,-Map="$out/noderecover-syms.map" \
			-o "$out/noderecover-syms" "$out"/obj/*.o build/deps/bearssl/libbearssl.a) 2>"$out/build-syms.log"; then
		extra="$extra --syms $out/noderecover-syms --map $out/noderecover-syms.map"
	else
		say "unstripped build failed (see $out/build-syms.log): no symbol sizes, no callgrind"
	fi
	if [ -f /usr/include/bearssl.h ] && (cd "$top" && gcc -std=c11 -D_DEFAULT_SOURCE -Os -g \
		-DNODERECOVER_VERSION="\"$ver-glibc\"" -o "$out/noderecover-glibc" noderecover.c $lib -lbearssl) \
		2>"$out/build-glibc.log"; then
		extra="$extra --glibc $out/noderecover-glibc"
	else
		say "glibc build failed (see $out/build-glibc.log): no massif heap profile"
	fi
fi
[ "${BENCH_PROFILE:-1}" != 0 ] || extra="--no-profile"

# shellcheck disable=SC2086
python3 "$here/bench.py" --binary "$bin" --standin "$out/standin" --spawn "$out/spawn" --out "$out" \
	--ns "${BENCH_NS:-100,1000,5000,20000}" --runs "${BENCH_RUNS:-5}" --runs-big "${BENCH_RUNS_BIG:-3}" $extra
# BENCH_APISERVER=1: the real kube-apiserver, polling every 15 s against watching, one run.
if [ "${BENCH_APISERVER:-0}" = 1 ]; then
	say "the real kube-apiserver: polling against watching (tests/e2e TestBenchAPIServer; log: $out/apiserver.log)"
	rm -f "$out/apiserver.md"
	if NODERECOVER_E2E_BENCH=1 NODERECOVER_E2E_BENCH_OUT="$out/apiserver.md" NODERECOVER_E2E_RUN='^TestBenchAPIServer$' \
		NODERECOVER_E2E_BENCH_NODES="${BENCH_APISERVER_NODES:-1000}" NODERECOVER_E2E_BENCH_WINDOW="${BENCH_APISERVER_WINDOW:-3m}" \
		NODERECOVER_E2E_TIMEOUT="${NODERECOVER_E2E_TIMEOUT:-120m}" sh "$top/tests/e2e/run.sh" "$bin" >"$out/apiserver.log" 2>&1 \
		&& [ -s "$out/apiserver.md" ]; then
		{ printf '\nOn the real kube-apiserver (`BENCH_APISERVER=1`), polling every 15 s against watching:\n\n'
		  cat "$out/apiserver.md"; } >>"$out/report.md"
	else
		say "the kube-apiserver part failed; see $out/apiserver.log"
		printf '\nOn the real kube-apiserver: not measured (the run failed; see build/bench/apiserver.log).\n' >>"$out/report.md"
	fi
fi
say "report: $out/report.md, plot: $out/results.png"
cat "$out/report.md"

# BENCH_UPDATE=1: put this run's report and plot into BENCHMARKS.md and bench/results.png.
if [ "${BENCH_UPDATE:-0}" = 1 ] && [ -f "$top/BENCHMARKS.md" ]; then
	python3 - "$top/BENCHMARKS.md" "$out/report.md" <<'PY'
import sys
doc, rep = open(sys.argv[1]).read(), open(sys.argv[2]).read()
a, b = "<!-- bench:begin -->", "<!-- bench:end -->"
if a in doc and b in doc:
    doc = doc[:doc.index(a) + len(a)] + "\n" + rep + doc[doc.index(b):]
    open(sys.argv[1], "w").write(doc)
PY
	[ -f "$out/results.png" ] && cp "$out/results.png" "$here/results.png"
	say "updated BENCHMARKS.md and bench/results.png"
fi
