# tests/unit/decide_mutants.sh: the decide step's defects (decide.c) that both its unit test and
# the simulator must catch, in one list: sourced by tests/unit/mutants.sh (test_decide) and
# tests/sim/mutants.sh (the simulator), each with its own decide_mutant NAME 'OLD' 'NEW'.
decide_mutants() {
	# the storm guard counting one Unknown node too few: a fleet one over the limit is tainted
	decide_mutant storm-count-off-by-one 'policy_storm_step(st, sum->unknown, g->limit' 'policy_storm_step(st, sum->unknown - 1, g->limit'
	# the storm guard's limit from one node more than the view holds
	decide_mutant storm-limit-off-by-one 'policy_unknown_limit(&r->limit, sum->nodes)' 'policy_unknown_limit(&r->limit, sum->nodes + 2)'
	# the storm guard heeded on a list only: a confirmed round over the table taints in a storm
	decide_mutant storm-skipped-on-table 'policy_resolve(v, sum, g->holds);
	taint_before_delete(v, fence);
	/* the fence' 'policy_resolve(v, sum, g->holds && view == DECIDE_LIST);
	taint_before_delete(v, fence);
	/* the fence'
	# the guard's cooldown forgotten: held only while over the limit
	decide_mutant storm-no-cooldown '	g->holds = policy_storm_holds(st);' '	g->holds = st->phase == POLICY_STORM_ENGAGED;'
	# a round over a table that may lag decides a new taint: no confirmation first
	decide_mutant table-decides-unconfirmed '	if ((v->action == POLICY_TAINT || v->action == POLICY_DELETE) && !decide_fresh(view))' '	if (0)'
}
