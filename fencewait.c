/*
 * The fence wait (fencewait.h): a state machine over (record, input, now), and the table of
 * records. No clock, no socket, no global, no allocation.
 */
#include <stdio.h>
#include <string.h>
#include "fencewait.h"

#define NEVER (INT64_MIN / 4)   /* a read_at that makes a read due at once */

void fencewait_init(struct fencewait *w, const char *node)
{
	memset(w, 0, sizeof *w);
	snprintf(w->node, sizeof w->node, "%s", node);
	w->phase = FENCEWAIT_NEW;
	w->read_at = NEVER;
	w->requested_at = -1;
}

/*
 * When the taint becomes safe (INT64_MAX: not yet known): both the request and the last change
 * seen at least S ago; or `fencing` seen the floor ago. The agent wrote `fencing` just before
 * acting, and its action and margin are not published apart from S: the floor (--fence-min-safe,
 * 45 s by default, three times the default action and margin) stands in for them.
 * Silence is a fence only with the watchdog: an agent that dies leaves the device unpetted and
 * the kernel resets the node, where an agent that reboots or runs a command and is killed
 * leaves a node that runs on. Under require such an agent's node is tainted only on `fencing`;
 * under prefer its silence is taken as a node without an agent would be (later, not worse).
 */
static int64_t safe_at(const struct fencewait *w, const struct fencewait_rules *r)
{
	int64_t t = INT64_MAX;

	if (w->requested_at >= 0 && (w->watchdog || !r->require))
		t = (w->requested_at > w->changed_at ? w->requested_at : w->changed_at) + w->safe_ms;
	if (w->phase == FENCEWAIT_FENCING && w->fencing_at + r->min_safe_ms < t)
		t = w->fencing_at + r->min_safe_ms;
	return t;
}

void fencewait_next(const struct fencewait *w, const struct fencewait_rules *r, int storm, int64_t now,
    struct fencewait_do *d)
{
	int64_t due = w->read_at + FENCEWAIT_READ_MS, t;

	d->kind = FENCEWAIT_WAIT;
	d->until = due;
	switch (w->phase) {
	case FENCEWAIT_BACK:
		d->kind = FENCEWAIT_REMOVE;
		return;
	case FENCEWAIT_NO_AGENT:
		d->kind = now >= due ? FENCEWAIT_READ : r->require ? FENCEWAIT_NEVER : FENCEWAIT_TAINT;
		return;
	case FENCEWAIT_NEW:
	case FENCEWAIT_UNREADABLE:
		break;
	case FENCEWAIT_ARMED:
		if (!storm)
			d->kind = FENCEWAIT_REQUEST;
		break;
	case FENCEWAIT_REQUESTED:
	case FENCEWAIT_FENCING:
		t = safe_at(w, r);
		/* safe only by a read sent at or after that time: a renewal we have not seen is no proof */
		if (now >= t && w->read_at >= t) {
			if (!storm)
				d->kind = FENCEWAIT_TAINT;
		} else if (now >= t) {
			d->kind = FENCEWAIT_READ;
		} else if (t < due) {
			d->until = t;
		}
		break;
	}
	if (d->kind == FENCEWAIT_WAIT && now >= due)
		d->kind = FENCEWAIT_READ;
}

void fencewait_read(struct fencewait *w, enum fencewait_got got, const struct json_fence *f,
    const struct fencewait_rules *r, int64_t sent, int64_t now)
{
	int first = w->phase == FENCEWAIT_NEW || w->phase == FENCEWAIT_NO_AGENT || w->phase == FENCEWAIT_UNREADABLE;

	w->read_at = sent;
	if (got == FENCEWAIT_GOT_FAILED) {
		if (w->phase == FENCEWAIT_REQUESTED || w->phase == FENCEWAIT_FENCING) {
			w->changed_at = now;
			w->fencing_at = now;
		} else {
			w->phase = FENCEWAIT_NEW;
		}
		return;
	}
	if (got != FENCEWAIT_GOT_LEASE || f->safe <= 0) {
		w->phase = got == FENCEWAIT_GOT_NONE || got == FENCEWAIT_GOT_FORBIDDEN ? FENCEWAIT_NO_AGENT : FENCEWAIT_UNREADABLE;
		w->requested_at = -1;
		return;
	}
	if (first || strcmp(w->rv, f->rv) != 0)
		w->changed_at = now;
	snprintf(w->rv, sizeof w->rv, "%s", f->rv);
	w->safe_ms = f->safe * 1000 > r->min_safe_ms ? f->safe * 1000 : r->min_safe_ms;
	w->watchdog = f->watchdog;
	if (f->fencing && w->phase != FENCEWAIT_FENCING)
		w->fencing_at = now;
	/* none yet, or an agent that started anew rewrote its Lease without ours: ask (again); one
	 * found at the first read (a watcher that started) counts from that read */
	if (!f->request)
		w->requested_at = -1;
	else if (w->requested_at < 0)
		w->requested_at = now;
	w->phase = f->fencing ? FENCEWAIT_FENCING : f->request ? FENCEWAIT_REQUESTED : FENCEWAIT_ARMED;
}

void fencewait_wrote(struct fencewait *w, enum fencewait_got got, const struct json_fence *f,
    const struct fencewait_rules *r, int64_t sent, int64_t now)
{
	if (got == FENCEWAIT_GOT_FAILED || got == FENCEWAIT_GOT_UNREADABLE) {
		w->phase = FENCEWAIT_NEW;
		w->read_at = NEVER;
		return;
	}
	/* stored; or a Lease gone (404) or one we may not write (403): no agent, as a read says */
	w->requested_at = -1;
	fencewait_read(w, got, f, r, sent, now);
}

void fencewait_ready(struct fencewait *w)
{
	w->phase = FENCEWAIT_BACK;
}

const char *fencewait_state(const struct fencewait *w, const struct fencewait_rules *r, int64_t now, char *out,
    size_t n)
{
	static const char *const words[] = {
		[FENCEWAIT_NEW] = "unread", [FENCEWAIT_NO_AGENT] = "no agent", [FENCEWAIT_UNREADABLE] = "unreadable",
		[FENCEWAIT_ARMED] = "armed", [FENCEWAIT_REQUESTED] = "requested", [FENCEWAIT_FENCING] = "fencing",
		[FENCEWAIT_BACK] = "back",
	};
	int64_t t = w->phase == FENCEWAIT_REQUESTED || w->phase == FENCEWAIT_FENCING ? safe_at(w, r) : INT64_MAX;

	if (t == INT64_MAX && w->phase == FENCEWAIT_REQUESTED && r->require && !w->watchdog)
		snprintf(out, n, "requested, no watchdog: waits for its fencing mark");
	else if (t == INT64_MAX)
		snprintf(out, n, "%s", words[w->phase]);
	else if (now >= t)
		snprintf(out, n, "safe");
	else
		snprintf(out, n, "%s, safe in %llds", words[w->phase], (long long)((t - now + 999) / 1000));
	return out;
}

struct fencewait *fencewait_find(struct fencewait_table *t, const char *node)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->w[i].node, node) == 0)
			return &t->w[i];
	return NULL;
}

struct fencewait *fencewait_add(struct fencewait_table *t, const char *node)
{
	if (t->n == FENCEWAIT_MAX)
		return NULL;
	fencewait_init(&t->w[t->n], node);
	t->w[t->n].seen = 1;
	return &t->w[t->n++];
}

void fencewait_forget(struct fencewait_table *t, struct fencewait *w)
{
	*w = t->w[--t->n];
}

int fencewait_back(const struct fencewait *w)
{
	return w->phase == FENCEWAIT_BACK;
}

int fencewait_count(const struct fencewait_table *t)
{
	return t->n;
}

struct fencewait *fencewait_at(struct fencewait_table *t, int i)
{
	return &t->w[i];
}

void fencewait_listed(struct fencewait_table *t, const struct node_facts *f)
{
	struct fencewait *w = fencewait_find(t, f->name);

	if (w)
		w->seen = 1;
	if (f->ready == NODE_READY_TRUE && (w || (f->oos_taint >= 0 && f->our_annotation && (w = fencewait_add(t, f->name)))))
		fencewait_ready(w);
}

void fencewait_sweep(struct fencewait_table *t)
{
	for (int i = t->n - 1; i >= 0; i--) {
		if (!t->w[i].seen)
			fencewait_forget(t, &t->w[i]);
		else
			t->w[i].seen = 0;
	}
}
