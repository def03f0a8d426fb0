#!/bin/sh
# tests/unit/fence_mutants.sh OUT_DIR: defects put back on purpose into a copy of fence_rules.c,
# each of which test_fence_rules (its table, its timeline, its list pace) must catch (as
# tests/sim/mutants.sh does for core.c); a mutant it passes fails this suite. The sources are never changed.
set -u
cd "$(dirname "$0")/../.."
out=${1:-build/unit}/fence-mutants
mkdir -p "$out"
passed=0 failed=0

# mutant NAME 'OLD' 'NEW': fence_rules.c with OLD (a fixed string) replaced by NEW
mutant() {
	python3 -c 'import sys; sys.stdout.write(open("fence_rules.c").read().replace(sys.argv[1], sys.argv[2], 1))' \
		"$2" "$3" > "$out/$1.c"
	if cmp -s fence_rules.c "$out/$1.c"; then
		echo "fence mutant $1: its lines are no longer in fence_rules.c"
		failed=$((failed + 1))
	elif ! gcc -std=c11 -D_DEFAULT_SOURCE -O1 -w -I. -o "$out/$1" tests/unit/test_fence_rules.c "$out/$1.c"; then
		echo "fence mutant $1: does not compile"
		failed=$((failed + 1))
	elif (cd tests/unit && "../../$out/$1" table fences_within_safe_time list_pace >/dev/null 2>&1); then
		echo "fence mutant $1: NOT caught"
		failed=$((failed + 1))
	else
		echo "fence mutant $1: caught"
		passed=$((passed + 1))
	fi
}

# half the peers taken for more than half: a partition of half the nodes carries on
mutant half-is-majority '2 * a->api_down > known' '2 * a->api_down >= known'
# the majority of the last list's peers only: a shrunken, partitioned set passes as a majority
mutant last-list-only 'int known = fence_peers(st, c) > a->known ? fence_peers(st, c) : a->known;' 'int known = a->known;'
# every list ever counted: a peer set that was larger long ago never counts less
mutant lists-never-expire 'newest - st->list_at[i] <= c->safe && ' ''
# a request served on a healthy kubelet
mutant request-kubelet-healthy 'if (o->kubelet != FENCE_KUBELET_BAD) {
			/* with' 'if (o->kubelet != FENCE_KUBELET_BAD && !o->requested) {
			/* with'
# no uptime rule: a node just rebooted fences again on the request that rebooted it
mutant no-uptime ' && now - st->started >= c->fence_after)' ')'
# a heal that does not count the next cut afresh
mutant heal-kept 'st->api_down = st->asking = st->heard = -1;' 'st->asking = st->heard = -1;'
# a minority as cut off heard as an answer
mutant minority-heard 'if (a->healthy > 0) {' 'if (a->answered > 0) {'
# isolation counted from the cut, not from asking
mutant isolated-from-cut '	if (st->asking < 0)
		st->asking = now;' '	if (st->asking < 0)
		st->asking = st->api_down;'
# a peer's request ignored
mutant peer-request-ignored 'if (a->requested > 0)' 'if (0)'
# one unhealthy check serves a request
mutant one-bad-check 'st->kubelet_bad >= FENCE_KUBELET_BAD_CHECKS' 'st->kubelet_bad >= 1'
# S's margin a fixed 5 s, as it was: the checks' rounding not counted
mutant margin-fixed 'return 3 * period + longest + 1;' 'return 5;'
# one check's rounding forgotten
mutant margin-two-periods 'return 3 * period + longest + 1;' 'return 2 * period + longest + 1;'
# the deciding check's own length forgotten
mutant margin-no-last-check 'return 3 * period + longest + 1;' 'return 3 * period + 1;'
# a failed list tried again at the next check: every agent lists at every check while the API
# server is too loaded to answer lists
mutant list-retry-at-once '	if (st->list_failures > 0) {' '	if (0) {'
# every list of a young agent fast, grown or not: 10 lists of up to 300 Leases per agent in a
# rollout, where 3 or 4 learn the same
mutant young-always-fast '(st->lists == 1 || last > before)' '1'
echo "fence mutants: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
