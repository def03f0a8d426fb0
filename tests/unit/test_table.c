/*
 * table.c: the table of node facts the watch keeps. Entries replaced, added in order, removed;
 * the summary kept as they change (the storm guard counts from it: must-fail rows below); a
 * relist's sweep; the changed and acted marks; the resourceVersion bound.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "table.h"

static struct node_facts node(const char *name, const char *uid, const char *rv, enum node_ready ready)
{
	struct node_facts f;

	memset(&f, 0, sizeof f);
	snprintf(f.name, sizeof f.name, "%s", name);
	snprintf(f.uid, sizeof f.uid, "%s", uid);
	snprintf(f.rv, sizeof f.rv, "%s", rv);
	f.ready = ready;
	f.ready_since = 1000;
	f.oos_taint = -1;
	return f;
}

static int put(struct table *t, struct node_facts f)
{
	char why[200];
	return table_put(t, &f, why, sizeof why);
}

static void t_put_and_read(void)
{
	struct table t = { 0 };
	struct node_facts f = node("b", "uid-b", "7", NODE_READY_UNKNOWN), g;

	f.etcd = f.etcd_voter = f.removable = f.excluded = f.our_annotation = f.has_taints = 1;
	f.oos_taint = 3;
	check(put(&t, f) == 0);
	check(put(&t, node("a", "uid-a", "5", NODE_READY_TRUE)) == 0);
	check(put(&t, node("c", "uid-c", "9", NODE_READY_FALSE)) == 0);
	check(t.n == 3);
	table_facts(&t, 0, &g);
	check(strcmp(g.name, "a") == 0);   /* kept in name order */
	table_facts(&t, 1, &g);
	check(memcmp(&f, &g, sizeof f) == 0);   /* every fact comes back as it went in */
	table_free(&t);
	check(t.n == 0 && t.e == NULL);
}

static void t_summary(void)
{
	struct table t = { 0 };
	struct node_facts m = node("m", "u", "1", NODE_READY_TRUE);

	m.etcd = m.etcd_voter = 1;
	check(put(&t, m) == 0);
	check(put(&t, node("x", "u", "1", NODE_READY_UNKNOWN)) == 0);
	check(t.sum.nodes == 2 && t.sum.unknown == 1 && t.sum.etcd_ready == 1);
	/* must-fail: a node's change is counted out before it is counted in, never twice */
	check(put(&t, node("x", "u", "2", NODE_READY_UNKNOWN)) == 0);
	check(t.sum.nodes == 2 && t.sum.unknown == 1);
	check(put(&t, node("x", "u", "3", NODE_READY_TRUE)) == 0);
	check(t.sum.unknown == 0 && t.ready[NODE_READY_TRUE] == 2);
	m.ready = NODE_READY_UNKNOWN;
	strcpy(m.rv, "4");
	check(put(&t, m) == 0);
	check(t.sum.etcd_ready == 0 && t.sum.unknown == 1);
	check(table_remove(&t, "m") == 1 && table_remove(&t, "m") == 0);
	check(t.sum.nodes == 1 && t.sum.unknown == 0 && t.ready[NODE_READY_UNKNOWN] == 0);
	table_free(&t);
}

static void t_relist_sweep(void)
{
	struct table t = { 0 };

	check(put(&t, node("a", "u", "1", NODE_READY_TRUE)) == 0);
	check(put(&t, node("b", "u", "1", NODE_READY_UNKNOWN)) == 0);
	check(put(&t, node("c", "u", "1", NODE_READY_TRUE)) == 0);
	table_begin(&t);
	check(put(&t, node("a", "u", "1", NODE_READY_TRUE)) == 0);
	check(put(&t, node("c", "u", "2", NODE_READY_TRUE)) == 0);
	table_end(&t);
	/* must-fail: a node the new list did not name is gone, and so is its count */
	check(t.n == 2 && t.sum.nodes == 2 && t.sum.unknown == 0);
	table_free(&t);
}

static void t_marks(void)
{
	struct table t = { 0 };

	check(put(&t, node("a", "u", "1", NODE_READY_UNKNOWN)) == 0);
	check(put(&t, node("b", "u2", "1", NODE_READY_TRUE)) == 0);
	check(table_in_round(&t, 0, 0) && table_in_round(&t, 1, 0));
	table_decided(&t, 0, 0);
	table_decided(&t, 1, 0);
	/* an Unknown node is in every round (its threshold moves with time), a Ready one once changed */
	check(table_in_round(&t, 0, 0) && !table_in_round(&t, 1, 0) && table_in_round(&t, 1, 1));
	/* the same resourceVersion again (a relist) is no change */
	check(put(&t, node("b", "u2", "1", NODE_READY_TRUE)) == 0);
	check(!table_in_round(&t, 1, 0));
	table_acted(&t, "a", 1);
	check(!table_in_round(&t, 0, 0) && !table_in_round(&t, 0, 1));
	/* must-fail: the event that shows the write ends the wait */
	check(put(&t, node("a", "u", "2", NODE_READY_UNKNOWN)) == 0);
	check(table_in_round(&t, 0, 0));
	/* a failed action waits for the poll's round, even if the node changes meanwhile ... */
	table_acted(&t, "a", 0);
	check(!table_in_round(&t, 0, 0) && table_in_round(&t, 0, 1));
	check(put(&t, node("a", "u", "3", NODE_READY_UNKNOWN)) == 0);
	check(!table_in_round(&t, 0, 0));
	/* ... unless it is no longer Unknown (a clear must not wait) */
	check(put(&t, node("a", "u", "4", NODE_READY_TRUE)) == 0);
	check(table_in_round(&t, 0, 0));
	check(put(&t, node("a", "u", "5", NODE_READY_UNKNOWN)) == 0);
	table_decided(&t, 0, 0);
	check(!table_in_round(&t, 0, 0));
	/* the poll's round decides it: the wait is over */
	table_decided(&t, 0, 1);
	check(table_in_round(&t, 0, 0));
	table_free(&t);
}

static void t_same_name_new_uid(void)
{
	struct table t = { 0 };
	struct node_facts g;

	check(put(&t, node("a", "old", "1", NODE_READY_UNKNOWN)) == 0);
	table_acted(&t, "a", 1);
	check(put(&t, node("a", "new", "2", NODE_READY_TRUE)) == 0);
	table_facts(&t, 0, &g);
	/* another object under the same name: its own uid, nothing carried over */
	check(t.n == 1 && strcmp(g.uid, "new") == 0 && table_in_round(&t, 0, 0) && t.sum.unknown == 0);
	table_free(&t);
}

static void t_rv_bound(void)
{
	struct table t = { 0 };
	char why[200];
	struct node_facts f = node("a", "u", "1", NODE_READY_TRUE);

	check(put(&t, f) == 0);
	memset(f.rv, '9', TABLE_RV_MAX + 1);
	f.rv[TABLE_RV_MAX + 1] = '\0';
	/* must-fail: facts it cannot keep whole leave the table, not stay there old */
	check(table_put(&t, &f, why, sizeof why) == -1 && strstr(why, "resourceVersion") && t.n == 0);
	table_free(&t);
}

static void t_many(void)
{
	struct table t = { 0 };
	char name[32];

	/* out of order, many, removed and added again: the arena is compacted, order holds */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 5000; i++) {
			snprintf(name, sizeof name, "node-%05d", (i * 7919) % 5000);
			check(put(&t, node(name, "0123456789abcdef0123456789abcdef0123", "1", NODE_READY_TRUE)) == 0);
		}
		for (int i = 0; i < 5000; i += 2) {
			snprintf(name, sizeof name, "node-%05d", i);
			check(table_remove(&t, name) == 1);
		}
	}
	check(t.n == 2500 && t.sum.nodes == 2500);
	for (size_t i = 1; i < t.n; i++) {
		struct node_facts a, b;
		table_facts(&t, i - 1, &a);
		table_facts(&t, i, &b);
		check(strcmp(a.name, b.name) < 0);
	}
	table_free(&t);
}

static const struct test tests[] = {
	{ "put_and_read", t_put_and_read },
	{ "summary", t_summary },
	{ "relist_sweep", t_relist_sweep },
	{ "marks", t_marks },
	{ "same_name_new_uid", t_same_name_new_uid },
	{ "rv_bound", t_rv_bound },
	{ "many", t_many },
	{ 0, 0 },
};

int main(int argc, char **argv)
{
	return run_tests("table", tests, argc, argv);
}
