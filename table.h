/*
 * The table of node facts that `run` keeps while it follows a watch: per node only what the
 * decisions need (struct node_facts' fields, never its JSON), fed by lists and watch events
 * alike, and the whole table's summary (nodes, Unknown, Ready etcd members, nodes by Ready)
 * kept as entries change, so the storm guard and quorum count from the table, not from the
 * events that happen to arrive together.
 * Memory: an entry (64 bytes) per node, and its name and uid once in an arena;
 * both grow by doubling (never per event) and are given back by table_free. No I/O, no
 * decisions, no clock.
 */
#ifndef TABLE_H
#define TABLE_H

#include <stddef.h>
#include <stdint.h>
#include "node.h"
#include "policy.h"

#define TABLE_RV_MAX 31   /* a resourceVersion the table keeps (etcd's revisions: 19 digits at most) */

/* One node. Its fields are table.c's alone. */
struct table_entry {
	uint32_t str;          /* where "name\0uid\0" starts in the arena */
	uint8_t ready;         /* enum node_ready */
	uint8_t flags;         /* node_facts' booleans */
	uint8_t mark;          /* seen by the list being read, changed, acted on */
	int32_t oos_taint;
	int64_t ready_since;
	int64_t tainted_at;
	char rv[TABLE_RV_MAX + 1];
};

/* Zero it before use (or table_free it). */
struct table {
	struct table_entry *e;   /* sorted by name */
	size_t n, cap;
	char *arena;
	size_t used, size, garbage;
	struct policy_summary sum;
	long ready[4];           /* entries by enum node_ready */
};

/* A list starts reading into the table: every entry is marked unseen. */
void table_begin(struct table *t);

/*
 * The facts of a node from a list or an event replace its entry (a new one is added). A node
 * whose resourceVersion differs from its entry's is marked changed (and no longer acted on;
 * an action that failed on it still waits for the poll's round).
 * Returns 0, or -1 with one line in why (its resourceVersion longer than TABLE_RV_MAX bytes,
 * or out of memory); its entry, if any, is then removed, so nothing is decided on old facts.
 */
int table_put(struct table *t, const struct node_facts *f, char *why, size_t whylen);

/* A node that is gone (DELETED), or that could not be read: its entry is removed. 1 when it had one. */
int table_remove(struct table *t, const char *name);

/* The list that table_begin started was read whole: entries it did not name are removed. */
void table_end(struct table *t);

/* Entry i's facts into *f (i < t->n). */
void table_facts(const struct table *t, size_t i, struct node_facts *f);

/*
 * Whether entry i is decided in a round over the table. Never one acted on that has not
 * changed since (its facts are older than what we wrote: it waits for the event that shows
 * the write). The poll's round (all) takes every other entry; a round after events or at a
 * threshold takes those changed since they were last decided and every Unknown one, but not an
 * Unknown one whose action failed: that waits for the poll's round, as a failed action waits
 * for the next pass when polling, and is not tried again (a list each time) at every burst of
 * events, whatever changed in it.
 */
int table_in_round(const struct table *t, size_t i, int all);
/* Entry i was decided in a round (all: the poll's): no longer changed; after the poll's, no
 * longer waiting after a failure. */
void table_decided(struct table *t, size_t i, int all);
/* A write on the node named went out (ok), or failed (!ok): see table_in_round. */
void table_acted(struct table *t, const char *name, int ok);

/* How many entries it holds (entries are 0 .. table_size - 1, in name order). */
size_t table_size(const struct table *t);
/* The whole table's summary, as the storm guard and quorum count it. */
const struct policy_summary *table_summary(const struct table *t);
/* How many entries have Ready r. */
long table_count(const struct table *t, enum node_ready r);
/* Whether entry i carries an out-of-service taint (ours or not: table_facts says whose). */
int table_tainted(const struct table *t, size_t i);

/* Gives its memory back; the table is empty and may be used again. */
void table_free(struct table *t);

#endif
