#!/bin/sh
# tests/fuzz/replay.sh: the committed fuzz corpora as a regression test, without clang.
# Builds each target with gcc, ASan and UBSan and a plain main (replay.c), feeds it every file
# of tests/fuzz/corpus/TARGET, and ends with "fuzz-replay: N passed, N failed" (N: files).
# Exits non-zero when any input fails. Needs the Debian packages ./build.sh installs.
set -u
cd "$(dirname "$0")/../.."
LIB="clock.c http.c http_parse.c tls.c json.c json_list.c json_scan.c json_write.c kube.c kubeconfig.c yaml.c listen.c metrics.c plugin.c policy.c settings.c target.c text.c"
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror=implicit-function-declaration -Werror"
B=build/fuzz-replay
mkdir -p $B
passed=0 failed=0
for t in json http kubeconfig watch; do
	if ! gcc -std=c11 -D_DEFAULT_SOURCE -pthread -g -O1 $WARN -fsanitize=address,undefined -fno-sanitize-recover=all \
	    -I. -o $B/replay_$t tests/fuzz/fuzz_$t.c tests/fuzz/replay.c $LIB -lbearssl; then
		echo "fuzz-replay: cannot build $t" >&2
		failed=$((failed + 1))
		continue
	fi
	# an empty or missing corpus folder would replay nothing and pass: it fails instead
	if [ -z "$(ls -A tests/fuzz/corpus/$t 2>/dev/null)" ]; then
		echo "fuzz-replay: no corpus in tests/fuzz/corpus/$t" >&2
		failed=$((failed + 1))
		continue
	fi
	for f in tests/fuzz/corpus/$t/*; do
		[ -f "$f" ] || continue
		# one process per input, so one crash is counted once and the rest still run
		if $B/replay_$t "$f" >$B/last.log 2>&1 </dev/null; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			echo "fuzz-replay: FAILED $t $f" >&2
			cat $B/last.log >&2
		fi
	done
done
echo "fuzz-replay: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
