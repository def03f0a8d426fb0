#!/bin/sh
# tests/sim/mutants.sh SIM_DIR: each defect issue 22 measured, put back into a copy of core.c
# on purpose, must make the simulator fail within the seeds it runs, and each way to break the
# election's timing, put into a copy of lease.c or lease.h, must make the election's simulator
# fail; a mutant not caught fails this suite. Prints, for each, how many seeds it took. The
# sources are never changed.
set -u
cd "$(dirname "$0")/../.."
out=${1:-build/sim}
mkdir -p "$out"
WARN="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror"
SEEDS=${NODERECOVER_SIM_MUTANT_SEEDS:-2000}
passed=0 failed=0

# mutant NAME 'OLD' 'NEW': core.c with the text OLD (a fixed string) replaced by NEW, run in sim.
# election_mutant NAME FILE 'OLD' 'NEW': the same in FILE (lease.c or lease.h), run in sim_election.
# decide_mutant NAME 'OLD' 'NEW': the same in decide.c (the pass's decide step), run in sim.
SIM_SRCS="tests/sim/sim.c core.c decide.c fencewait.c table.c policy.c"
mutant() {
	try_mutant "$1" core.c "$2" "$3" sim "$SIM_SRCS"
}
decide_mutant() {
	try_mutant "$1" decide.c "$2" "$3" sim "$SIM_SRCS"
}
election_mutant() {
	try_mutant "$1" "$2" "$3" "$4" sim_election "tests/sim/sim_election.c lease.c json.c json_list.c json_scan.c json_write.c text.c"
}
try_mutant() {
	name=$1 file=$2 old=$3 new=$4 sim=$5 srcs=$6
	dir="$out/mutant-$name"
	rm -rf "$dir" && mkdir -p "$dir" && cp ./*.h ./*.c "$dir/"
	python3 -c 'import sys; sys.stdout.write(open(sys.argv[3]).read().replace(sys.argv[1], sys.argv[2], 1))' \
		"$old" "$new" "$file" > "$dir/$file"
	if cmp -s "$file" "$dir/$file"; then
		echo "mutant $name: its lines are no longer in $file"
		failed=$((failed + 1))
		return
	fi
	# the copies, headers included, so that a mutant header is the one every file sees
	set -- ; for f in $srcs; do case $f in tests/*) set -- "$@" "$f" ;; *) set -- "$@" "$dir/$f" ;; esac; done
	gcc -std=c11 -D_DEFAULT_SOURCE -O2 $WARN -Wno-unused-parameter -Wno-unused-variable -Wno-unused-function -I"$dir" \
		-o "$dir/sim" "$@" || { failed=$((failed + 1)); return; }
	n=0
	while [ $n -lt "$SEEDS" ]; do
		n=$((n + 1))
		"$dir/sim" "$n" 1 >/dev/null 2>"$dir/err"
		rc=$?
		if [ $rc -gt 1 ]; then
			echo "mutant $name: $sim crashed (exit $rc) on seed $n: a mutant must be caught by an invariant"
			failed=$((failed + 1))
			return
		fi
		if [ $rc -eq 1 ]; then
			echo "mutant $name: caught by $sim's seed $n ($(grep FAILED "$dir/err" | sed 's/.*FAILED: //'))"
			passed=$((passed + 1))
			rm -rf "$dir"
			return
		fi
	done
	echo "mutant $name: NOT caught in $SEEDS seeds of $sim"
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
# the storm guard and the confirmation rule (tests/unit/decide_mutants.sh)
. tests/unit/decide_mutants.sh
decide_mutants
# the election: may write for the Lease's whole duration, not the renew deadline: two leaders
election_mutant held-for-duration lease.h 'mono_ms - renewed_ms < LEASE_RENEW_DEADLINE * 1000L;' \
	'mono_ms - renewed_ms < LEASE_DURATION * 1000L;'
# a record read dated from when the try began: a slow read makes a fresh record look old
election_mutant seen-at-try-start lease.c '		int64_t seen_ms = clock_ms();' '		int64_t seen_ms = mono_ms;'
# a renewal counted from its answer, not from when it was sent: a slow renewal stretches the term
election_mutant renewed-at-answer lease.c '		if (write_spec(l, what, l->seen.rec.rv, &s, mono_ms) == 200) {
			l->renewed_ms = mono_ms;' '		if (write_spec(l, what, l->seen.rec.rv, &s, mono_ms) == 200) {
			l->renewed_ms = clock_ms();'
# a holder taken over before its record stood unchanged for the whole duration
election_mutant early-takeover lease.c 'mono_ms - o->since_ms < wait))' 'mono_ms - o->since_ms < wait / 2))'
# a release that leaves the holder named: the next replica waits the whole duration, not a retry
election_mutant release-keeps-holder lease.c 'struct lease_spec s = { "", 1, now, now,' 'struct lease_spec s = { l->id, 1, now, now,'
# a leader that renews only every other retry
election_mutant renew-slowly lease.c '	if (l->leader && mono_ms - l->seen.since_ms < LEASE_DURATION * 1000 &&' '	if (l->leader && mono_ms - l->renewed_ms < 3000) return LEASE_LEADING;
	if (l->leader && mono_ms - l->seen.since_ms < LEASE_DURATION * 1000 &&'
echo "mutants: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
