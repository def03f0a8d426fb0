#!/bin/sh
# tests/unit/mutants.sh OUT_DIR: defects put back on purpose into a copy of a pure module, each
# of which its unit test must catch (as tests/sim/mutants.sh does for core.c): the fence agent's
# rules (fence_rules.c, test_fence_rules) and the pass's decide step (decide.c, test_decide). A
# mutant its test passes fails this suite. The sources are never changed.
set -u
cd "$(dirname "$0")/../.."
out=${1:-build/unit}/mutants
mkdir -p "$out"
passed=0 failed=0

# file_mutant FILE 'OTHER SOURCES' TEST NAME 'OLD' 'NEW': FILE with OLD (a fixed string) replaced
# by NEW, linked with the other sources into tests/unit/TEST.c, whose tests must fail.
file_mutant() {
	file=$1 others=$2 test=$3 name=$4
	python3 -c 'import sys; sys.stdout.write(open(sys.argv[3]).read().replace(sys.argv[1], sys.argv[2], 1))' \
		"$5" "$6" "$file" > "$out/$name.c"
	if cmp -s "$file" "$out/$name.c"; then
		echo "mutant $name: its lines are no longer in $file"
		failed=$((failed + 1))
	elif ! gcc -std=c11 -D_DEFAULT_SOURCE -O1 -w -I. -o "$out/$name" "tests/unit/$test.c" "$out/$name.c" $others; then
		echo "mutant $name: does not compile"
		failed=$((failed + 1))
	elif (cd tests/unit && "../../$out/$name" >/dev/null 2>&1); then
		echo "mutant $name ($file): NOT caught by $test"
		failed=$((failed + 1))
	else
		echo "mutant $name ($file): caught by $test"
		passed=$((passed + 1))
	fi
}
# mutant NAME 'OLD' 'NEW': in fence_rules.c, for test_fence_rules
mutant() {
	file_mutant fence_rules.c "" test_fence_rules "$@"
}
# decide_mutant NAME 'OLD' 'NEW': in decide.c, for test_decide
decide_mutant() {
	file_mutant decide.c "fencewait.c policy.c" test_decide "$@"
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
mutant margin-fixed 'return 2 * period + asking_period + asking + 1;' 'return 5;'
# one check's rounding forgotten
mutant margin-two-periods 'return 2 * period + asking_period + asking + 1;' 'return period + asking_period + asking + 1;'
# the deciding check's own length forgotten
mutant margin-no-last-check 'return 2 * period + asking_period + asking + 1;' 'return 2 * period + asking_period + 1;'
# an asking check taken for a short one, whatever its batches (S the same for 5000 peers as for 5)
mutant margin-batches-forgotten 'asking = (fence_asking_ms(batches) + 999) / 1000;' 'asking = longest;'
# nothing settled after a batch, and the isolation rule applied before the next: a healthy peer
# in a later batch is never asked
mutant first-batch-decides '	if (a->asked < fence_batches(a->known) && a->asked < c->batches)
		return FENCE_ASK_PEERS;' ''
# more batches asked than S counts: a check that runs past the safe time the watcher waits
mutant batches-past-s ' && a->asked < c->batches)' ')'
# batches of 256 after the first counted as one: peers past the first 264 never asked
mutant batches-two 'return n <= FENCE_ASK_FIRST ? 1 : 1 + (n - FENCE_ASK_FIRST + FENCE_ASK_BATCH - 1) / FENCE_ASK_BATCH;' 'return n <= FENCE_ASK_FIRST ? 1 : 2;'
# a failed list tried again at the next check: every agent lists at every check while the API
# server is too loaded to answer lists
mutant list-retry-at-once '	if (st->list_failures > 0) {' '	if (0) {'
# every list of a young agent fast, grown or not: 10 lists of up to 300 Leases per agent in a
# rollout, where 3 or 4 learn the same
mutant young-always-fast '(st->lists == 1 || last > before)' '1'
# the decide step: the storm guard and the confirmation rule, shared with the simulator
. tests/unit/decide_mutants.sh
decide_mutants
# a write refused as changed, decided again without the guard (no sequence of the simulator's
# model reaches it: the guard holds every taint before the first write)
decide_mutant again-without-guard '	policy_node(f, rules, now, v);
	policy_resolve(v, sum, g->holds);' '	policy_node(f, rules, now, v);
	policy_resolve(v, sum, 0);'
# the fence's storm mirror at exactly half: no request with half the nodes Unknown
decide_mutant fence-storm-at-half 'd->storm = sum->unknown * 2 > sum->nodes;' 'd->storm = sum->unknown * 2 >= sum->nodes;'
# the fence's storm mirror lost: a request and a fenced taint with most nodes Unknown
decide_mutant fence-storm-lost 'd->storm = sum->unknown * 2 > sum->nodes;' 'd->storm = 0;'
# a fence request written over a table that may lag
decide_mutant fence-request-on-table 'd->kind = decide_fresh(view) ? DECIDE_FENCE_REQUEST : DECIDE_FENCE_ASK;' 'd->kind = DECIDE_FENCE_REQUEST;'
# a taint that the fence allows, written over a table that may lag
decide_mutant fence-taint-on-table 'd->kind = decide_fresh(view) ? DECIDE_FENCE_TAINT : DECIDE_FENCE_CONFIRM;' 'd->kind = DECIDE_FENCE_TAINT;'
# a node back and Unknown again keeps its old record: no Lease read before the wait goes on
decide_mutant fence-back-kept '	if (fencewait_back(w)) {' '	if (0) {'
# the fence skipped: a taint written before its agent has fenced
decide_mutant fence-skipped '	if (v->action == POLICY_TAINT && fence)' '	if (0)'
# a Node deleted, with the fence on, before it was tainted: the pod collector removes its pods unfenced
decide_mutant delete-before-fence '	if (fence && v->action == POLICY_DELETE && v->fallback == POLICY_TAINT)' '	if (0)'
# a new taint after a refused write retried at once, past the fence wait
decide_mutant again-past-the-fence '	if (fence && v->action == POLICY_TAINT && !was_taint)' '	if (0)'
# ... and a fence-approved taint sent back to a confirmation on each refusal (a changing node starves)
decide_mutant again-taint-never-retried '	if (fence && v->action == POLICY_TAINT && !was_taint)' '	if (fence && v->action == POLICY_TAINT)'
echo "unit mutants: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
