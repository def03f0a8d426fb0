#!/bin/sh
# tests/fuzz/run.sh [SECONDS] [TARGET...]: builds the libFuzzer targets with clang (installed
# from Debian when missing) and runs each for SECONDS (default 60), starting from the committed
# corpus. New inputs go to build/fuzz/corpus/TARGET, crashes to build/fuzz/art/TARGET.
# Run from anywhere; needs the build's Debian packages (./build.sh unit installs them).
# FUZZ_TIMEOUT (default 10 s) is libFuzzer's per-input limit: raise it under nice on a loaded
# machine, where a starved process can pass 10 s on an input that takes a fraction of one.
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-json http kubeconfig watch}
LIB="clock.c http.c http_parse.c tls.c json.c json_list.c json_scan.c json_write.c kube.c kubeconfig.c yaml.c listen.c metrics.c plugin.c policy.c settings.c target.c text.c"
B=build/fuzz

if ! command -v clang >/dev/null 2>&1 || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
	echo "run.sh: installing clang and its fuzzer runtime" >&2
	apt-get update -qq
	v=$(apt-cache policy clang | sed -n 's/^  Candidate: 1:\([0-9]*\).*/\1/p')
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang "libclang-rt-$v-dev" >/dev/null
fi
if [ ! -f /usr/include/jsmn.h ] || [ ! -f /usr/include/bearssl.h ]; then
	echo "run.sh: jsmn and BearSSL headers missing; run ./build.sh unit once" >&2
	exit 1
fi

mkdir -p $B
rc=0
for t in $targets; do
	case $t in
	json) max=65536 ;;
	*) max=16384 ;;
	esac
	clang -std=c11 -D_DEFAULT_SOURCE -pthread -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I. -o $B/fuzz_$t tests/fuzz/fuzz_$t.c $LIB -lbearssl
	mkdir -p $B/corpus/$t $B/art/$t
	echo "run.sh: fuzzing $t for $secs s" >&2
	# stdin from /dev/null: a kubeconfig may name /dev/stdin as a file
	(cd $B/art/$t && "$OLDPWD/$B/fuzz_$t" -max_len=$max -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-10}" \
		-rss_limit_mb=2048 -dict="$OLDPWD/tests/fuzz/$t.dict" -print_final_stats=1 -artifact_prefix=./ \
		"$OLDPWD/$B/corpus/$t" "$OLDPWD/tests/fuzz/corpus/$t" </dev/null) || rc=1
done
exit $rc
