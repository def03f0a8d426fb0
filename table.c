/*
 * The table of node facts (table.h): a sorted array of fixed entries and an arena of names and
 * uids, the summary kept as entries come and go. Owns that memory; never does I/O, never
 * decides, never logs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "table.h"

enum { F_TAINTS = 1, F_ANNOTATIONS = 2, F_OURS = 4, F_CONTROL_PLANE = 8, F_ETCD = 16, F_VOTER = 32,
	F_REMOVABLE = 64, F_EXCLUDED = 128 };
enum { M_SEEN = 1, M_CHANGED = 2, M_ACTED = 4, M_FAILED = 8 };

static const char *name_of(const struct table *t, size_t i)
{
	return t->arena + t->e[i].str;
}

/* Where name is, or where it would go (*found 0). */
static size_t find(const struct table *t, const char *name, int *found)
{
	size_t lo = 0, hi = t->n;

	*found = 0;
	/* lists come sorted by name: a node after the last one is the common case */
	if (t->n && strcmp(name_of(t, t->n - 1), name) < 0)
		return t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name_of(t, mid), name);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* What entry i adds to the summary, counted in (sign 1) or out (-1). */
static void count(struct table *t, size_t i, int sign)
{
	struct node_facts f;
	struct policy_summary one = { 0 };

	table_facts(t, i, &f);
	policy_summary_add(&one, &f);
	t->sum.nodes += sign * one.nodes;
	t->sum.unknown += sign * one.unknown;
	t->sum.etcd_ready += sign * one.etcd_ready;
	t->ready[t->e[i].ready & 3] += sign;
}

/* Room for k more bytes in the arena: the garbage of removed nodes is dropped first when it is
 * the larger part, else the arena doubles. 0, or -1 out of memory. */
static int arena_room(struct table *t, size_t k)
{
	if (t->used + k <= t->size)
		return 0;
	if (t->garbage > t->used / 2) {
		size_t live = t->used - t->garbage, size = t->size > live + k ? t->size : 2 * (live + k);
		char *a = malloc(size), *to = a;
		if (!a)
			return -1;
		for (size_t i = 0; i < t->n; i++) {
			const char *s = name_of(t, i);
			size_t len = strlen(s) + 1;
			len += strlen(s + len) + 1;
			memcpy(to, s, len);
			t->e[i].str = (uint32_t)(to - a);
			to += len;
		}
		free(t->arena);
		t->arena = a;
		t->size = size;
		t->used = (size_t)(to - a);
		t->garbage = 0;
		if (t->used + k <= t->size)
			return 0;
	}
	size_t size = t->size ? 2 * t->size : 64 * 1024;
	while (size < t->used + k)
		size *= 2;
	if (size > UINT32_MAX)
		return -1;
	char *a = realloc(t->arena, size);
	if (!a)
		return -1;
	t->arena = a;
	t->size = size;
	return 0;
}

static void set_facts(struct table_entry *e, const struct node_facts *f)
{
	e->ready = (uint8_t)f->ready;
	e->flags = (uint8_t)((f->has_taints ? F_TAINTS : 0) | (f->has_annotations ? F_ANNOTATIONS : 0) |
	    (f->our_annotation ? F_OURS : 0) | (f->control_plane ? F_CONTROL_PLANE : 0) | (f->etcd ? F_ETCD : 0) |
	    (f->etcd_voter ? F_VOTER : 0) | (f->removable ? F_REMOVABLE : 0) | (f->excluded ? F_EXCLUDED : 0));
	e->oos_taint = f->oos_taint;
	e->ready_since = f->ready_since;
	e->tainted_at = f->tainted_at;
	memcpy(e->rv, f->rv, strlen(f->rv) + 1);
}

int table_put(struct table *t, const struct node_facts *f, char *why, size_t whylen)
{
	size_t rvlen = strlen(f->rv), nl = strlen(f->name), ul = strlen(f->uid);
	int found;
	size_t i = find(t, f->name, &found);

	if (found && strcmp(t->arena + t->e[i].str + nl + 1, f->uid) != 0) {
		/* deleted and made again under the same name: another object */
		table_remove(t, f->name);
		i = find(t, f->name, &found);
	}
	if (rvlen > TABLE_RV_MAX) {
		if (found)
			table_remove(t, f->name);
		snprintf(why, whylen, "its resourceVersion is longer than the %d bytes noderecover keeps", TABLE_RV_MAX);
		return -1;
	}
	if (found) {
		struct table_entry *e = &t->e[i];
		int changed = strcmp(e->rv, f->rv) != 0;
		count(t, i, -1);
		set_facts(e, f);
		count(t, i, 1);
		e->mark |= M_SEEN;
		if (changed)
			e->mark = (uint8_t)((e->mark | M_CHANGED) & ~M_ACTED);
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct table_entry *e = realloc(t->e, cap * sizeof *e);
		if (!e)
			goto oom;
		t->e = e;
		t->cap = cap;
	}
	if (arena_room(t, nl + ul + 2) < 0)
		goto oom;
	memmove(&t->e[i + 1], &t->e[i], (t->n - i) * sizeof t->e[0]);
	t->n++;
	memset(&t->e[i], 0, sizeof t->e[i]);
	t->e[i].str = (uint32_t)t->used;
	memcpy(t->arena + t->used, f->name, nl + 1);
	memcpy(t->arena + t->used + nl + 1, f->uid, ul + 1);
	t->used += nl + ul + 2;
	set_facts(&t->e[i], f);
	t->e[i].mark = M_SEEN | M_CHANGED;
	count(t, i, 1);
	return 0;
oom:
	snprintf(why, whylen, "out of memory for the table of nodes (%zu nodes)", t->n);
	return -1;
}

static void remove_at(struct table *t, size_t i)
{
	const char *s = name_of(t, i);
	size_t len = strlen(s) + 1;

	count(t, i, -1);
	t->garbage += len + strlen(s + len) + 1;
	memmove(&t->e[i], &t->e[i + 1], (t->n - i - 1) * sizeof t->e[0]);
	t->n--;
}

int table_remove(struct table *t, const char *name)
{
	int found;
	size_t i = find(t, name, &found);

	if (found)
		remove_at(t, i);
	return found;
}

void table_begin(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		t->e[i].mark &= (uint8_t)~M_SEEN;
}

void table_end(struct table *t)
{
	size_t to = 0;

	for (size_t i = 0; i < t->n; i++) {
		if (t->e[i].mark & M_SEEN) {
			t->e[to++] = t->e[i];
			continue;
		}
		const char *s = name_of(t, i);
		size_t len = strlen(s) + 1;
		count(t, i, -1);
		t->garbage += len + strlen(s + len) + 1;
	}
	t->n = to;
}

void table_facts(const struct table *t, size_t i, struct node_facts *f)
{
	const struct table_entry *e = &t->e[i];
	const char *s = name_of(t, i);
	size_t nl = strlen(s);

	memset(f, 0, sizeof *f);
	memcpy(f->name, s, nl + 1);
	snprintf(f->uid, sizeof f->uid, "%s", s + nl + 1);
	memcpy(f->rv, e->rv, sizeof e->rv);
	f->ready = (enum node_ready)e->ready;
	f->ready_since = e->ready_since;
	f->tainted_at = e->tainted_at;
	f->oos_taint = e->oos_taint;
	f->has_taints = !!(e->flags & F_TAINTS);
	f->has_annotations = !!(e->flags & F_ANNOTATIONS);
	f->our_annotation = !!(e->flags & F_OURS);
	f->control_plane = !!(e->flags & F_CONTROL_PLANE);
	f->etcd = !!(e->flags & F_ETCD);
	f->etcd_voter = !!(e->flags & F_VOTER);
	f->removable = !!(e->flags & F_REMOVABLE);
	f->excluded = !!(e->flags & F_EXCLUDED);
}

int table_in_round(const struct table *t, size_t i, int all)
{
	const struct table_entry *e = &t->e[i];

	if (e->mark & M_ACTED)
		return 0;
	if (all)
		return 1;
	if (e->ready == NODE_READY_UNKNOWN)
		return !(e->mark & M_FAILED);
	return !!(e->mark & M_CHANGED);
}

void table_decided(struct table *t, size_t i, int all)
{
	t->e[i].mark &= (uint8_t)~(all ? M_CHANGED | M_FAILED : M_CHANGED);
}

void table_acted(struct table *t, const char *name, int ok)
{
	int found;
	size_t i = find(t, name, &found);

	if (found)
		t->e[i].mark |= ok ? M_ACTED : M_FAILED;
}

size_t table_size(const struct table *t)
{
	return t->n;
}

const struct policy_summary *table_summary(const struct table *t)
{
	return &t->sum;
}

long table_count(const struct table *t, enum node_ready r)
{
	return t->ready[r];
}

int table_tainted(const struct table *t, size_t i)
{
	return t->e[i].oos_taint >= 0;
}

void table_free(struct table *t)
{
	free(t->e);
	free(t->arena);
	memset(t, 0, sizeof *t);
}
