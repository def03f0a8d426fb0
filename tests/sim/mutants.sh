#!/bin/sh
# tests/sim/mutants.sh SIM_DIR: each defect issue 22 measured, put back into a copy of core.c
# on purpose, must make the simulator fail within the seeds it runs; a mutant it does not catch
# fails this suite. Prints, for each, how many seeds it took. The sources are never changed.
set -u
cd "$(dirname "$0")/../.."
out=${1:-build/sim}
mkdir -p "$out"
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror"
SEEDS=${NODERECOVER_SIM_MUTANT_SEEDS:-2000}
passed=0 failed=0

# mutant NAME 'OLD' 'NEW': core.c with the line OLD (a fixed string) replaced by NEW
mutant() {
	name=$1 old=$2 new=$3
	python3 -c 'import sys; sys.stdout.write(open("core.c").read().replace(sys.argv[1], sys.argv[2], 1))' \
		"$old" "$new" > "$out/core-$name.c"
	if cmp -s core.c "$out/core-$name.c"; then
		echo "mutant $name: its lines are no longer in core.c"
		failed=$((failed + 1))
		return
	fi
	gcc -std=c11 -D_DEFAULT_SOURCE -O2 $WARN -Wno-unused-parameter -Wno-unused-variable -Wno-unused-function -I. -o "$out/sim-$name" \
		tests/sim/sim.c "$out/core-$name.c" table.c policy.c || { failed=$((failed + 1)); return; }
	n=0
	while [ $n -lt "$SEEDS" ]; do
		n=$((n + 1))
		"$out/sim-$name" "$n" 1 >/dev/null 2>"$out/sim-$name.err"
		rc=$?
		if [ $rc -gt 1 ]; then
			echo "mutant $name: the simulator crashed (exit $rc) on seed $n: a mutant must be caught by an invariant"
			failed=$((failed + 1))
			return
		fi
		if [ $rc -eq 1 ]; then
			echo "mutant $name: caught by seed $n ($(grep FAILED "$out/sim-$name.err" | sed 's/.*FAILED: //'))"
			passed=$((passed + 1))
			return
		fi
	done
	echo "mutant $name: NOT caught in $SEEDS seeds"
	failed=$((failed + 1))
}

# 262 lists in 20 s: a 410 at once relisted at once, again and again
mutant relist-410-at-once 'if ((was_stream && c->events > 0) || !c->expired_run) {' 'if (1) {'
# an ERROR event counted as hearing from the cluster: a stream failing with ERROR looks healthy
mutant error-is-hearing '	if (ev->type == CORE_ERROR)
		return;
	c->heard = now;
	c->events++;' '	c->heard = now;
	c->events++;
	if (ev->type == CORE_ERROR)
		return;'
# a long healthy stream that is cut waits a backoff where client-go watches again at once
mutant cut-waits-backoff 'if (healthy && retry_after < 0) {' 'if (0) {'
# a Node too large to read breaks the stream: a list at each of its events
mutant big-node-relists '		if (!c->too_large_said)' '		relist(c, CORE_WHY_BROKEN);
		if (!c->too_large_said)'
# a new taint decided on the table: the confirming list dropped
mutant no-confirm '	if (!confirm || c->confirm != CORE_CONFIRM_NONE)
		return;' '	if (1)
		return;'
# the threshold's wake-up lost: a due node waits for the poll
mutant no-due-wakeup '	c->due_at = due(due_in, now);
	/* a new taint' '	c->due_at = 0;
	/* a new taint'
# a taint confirmed before the stream has passed the store's revision: a lagging table decides
mutant confirm-without-catching-up '	if (c->confirm == CORE_CONFIRM_WAIT && at_or_past(c->rv, c->confirm_rv)) {' '	if (c->confirm == CORE_CONFIRM_WAIT) {'
echo "mutants: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
