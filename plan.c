/*
 * `noderecover plan`'s output: the rows pass_plan decided, kept, sorted by name and printed as a
 * table or one JSON document, and the summary line. Owns the words and the JSON shape of plan;
 * never decides (pass.c and policy.c do) and never sends anything. Allocates: plan runs once.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "plan.h"
#include "say.h"
#include "text.h"

void plan_row(void *ctx, const struct pass_row *row)
{
	struct plan *pl = ctx;
	struct plan_row *r;

	if (!row->f) {
		pl->n = 0;   /* the list starts again: what came before is stale */
		return;
	}
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 64;
		struct plan_row *p = realloc(pl->rows, cap * sizeof *p);
		if (!p) {
			pl->nomem = 1;
			return;
		}
		pl->rows = p;
		pl->cap = cap;
	}
	r = &pl->rows[pl->n++];
	memset(r, 0, sizeof *r);
	if (row->v) {
		r->f = *row->f;
		r->v = *row->v;
		r->has_v = 1;
	} else {
		/* of an unreadable node only the name is known; the rest may be half-read */
		memcpy(r->f.name, row->f->name, sizeof r->f.name);
		r->f.ready_since = -1;
		r->f.oos_taint = -1;
	}
	r->next_pass = row->next_pass;
	if (row->unreadable)
		say_printable(row->unreadable, r->why, sizeof r->why);
}

void plan_free(struct plan *pl)
{
	free(pl->rows);
	memset(pl, 0, sizeof *pl);
}

const char *plan_duration(int64_t secs, char *out, size_t n)
{
	long long s = secs < 0 ? 0 : (long long)secs;

	if (s < 60)
		snprintf(out, n, "%llds", s);
	else if (s < 3600)
		snprintf(out, n, "%lldm%llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(out, n, "%lldh%lldm", s / 3600, s / 60 % 60);
	else
		snprintf(out, n, "%lldd%lldh", s / 86400, s / 3600 % 24);
	return out;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct plan_row *)a)->f.name, ((const struct plan_row *)b)->f.name);
}

static void fence_row(void *ctx, const struct json_fence *f, const char *node)
{
	struct plan *pl = ctx;
	struct plan_row key, *r;

	snprintf(key.f.name, sizeof key.f.name, "%s", node);
	if ((r = bsearch(&key, pl->rows, pl->n, sizeof *r, by_name)) != NULL)
		r->fence = f->safe <= 0 ? "unreadable" : f->fencing ? "fencing" : f->request ? "requested" : "armed";
}

void plan_fence(struct plan *pl, struct kube *k, const struct settings *s)
{
	char why[600], *body;
	int ok;

	if (s->fence == FENCE_OFF)
		return;
	body = malloc(PLAN_FENCE_BODY_MAX);
	if (pl->n > 1)
		qsort(pl->rows, pl->n, sizeof pl->rows[0], by_name);
	for (size_t i = 0; i < pl->n; i++)
		pl->rows[i].fence = "no agent";
	ok = body && lease_fence_list(k, s->fence_namespace, body, PLAN_FENCE_BODY_MAX, fence_row, pl, why, sizeof why) == 0;
	if (!ok) {
		say("The fence column is ?: %s", body ? why : "out of memory");
		for (size_t i = 0; i < pl->n; i++)
			pl->rows[i].fence = "?";
	}
	free(body);
}

static const char *verb(enum policy_action a)
{
	return a == POLICY_TAINT ? "taint" : a == POLICY_CLEAR ? "clear" : a == POLICY_DELETE ? "delete" : "none";
}

static const char *ready_word(enum node_ready r)
{
	return r == NODE_READY_TRUE ? "True" : r == NODE_READY_FALSE ? "False" : r == NODE_READY_UNKNOWN ? "Unknown" : "-";
}

static int is_self(const struct plan_row *r, const struct settings *s)
{
	return s->self_node[0] && strcmp(r->f.name, s->self_node) == 0;
}

/* The roles that matter to the rules, comma-separated ("-" for none). */
static void roles(const struct plan_row *r, const struct settings *s, char *out, size_t n)
{
	const char *role[] = {
		is_self(r, s) ? "self" : NULL,
		r->f.control_plane ? "control-plane" : NULL,
		r->f.etcd ? "etcd" : NULL,
		r->f.removable ? "removable" : NULL,
		r->f.excluded ? "excluded" : NULL,
		r->f.oos_taint >= 0 && r->f.our_annotation ? "our-taint" : NULL,
		r->f.oos_taint >= 0 && !r->f.our_annotation ? "operator-taint" : NULL,
	};
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof role / sizeof role[0]; i++)
		if (role[i] && len < n)
			len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", role[i]);
	if (!out[0])
		snprintf(out, n, "-");
}

/* Appends to out[0..n) without overflowing it. */
__attribute__((format(printf, 3, 4)))
static void add(char *out, size_t n, const char *fmt, ...)
{
	size_t len = strlen(out);
	va_list ap;

	if (len + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(out + len, n - len, fmt, ap);
	va_end(ap);
}

static void refusal(const struct plan_row *r, long etcd_ready, char *out, size_t n)
{
	switch (r->v.refusal) {
	case POLICY_REFUSED_CONTROL_PLANE:
		add(out, n, "delete refused: control-plane, never pruned");
		break;
	case POLICY_REFUSED_ETCD:
		add(out, n, "delete refused: etcd member, never pruned");
		break;
	case POLICY_REFUSED_QUORUM:
		add(out, n, "delete refused: only %ld Ready etcd members, below the floor of %d", etcd_ready, POLICY_ETCD_FLOOR);
		break;
	case POLICY_ALLOWED:
		break;
	}
}

/* Which threshold due_in is: the taint's when it is still ahead and nearest, else the prune one. */
static const char *due_what(const struct plan_row *r, const struct settings *s)
{
	return r->f.oos_taint < 0 && r->v.unknown_for < s->taint_after &&
	    s->taint_after - r->v.unknown_for == r->v.due_in ? "taint" : "delete";
}

/* Why a node needing nothing needs nothing. */
static const char *calm(const struct plan_row *r)
{
	if (r->f.oos_taint >= 0 && !r->f.our_annotation)
		return "an operator's out-of-service taint, theirs to remove";
	switch (r->f.ready) {
	case NODE_READY_TRUE:
		return "Ready";
	case NODE_READY_FALSE:
		return "Ready False: the kubelet is alive and finishes its own deletions";
	case NODE_READY_UNKNOWN:
		return r->f.ready_since < 0 ? "Unknown without a transition time" : "already tainted";
	case NODE_READY_NONE:
		break;
	}
	return "no Ready condition";
}

/*
 * The action column: what a pass would do now and why, or when it would act. *action gets the
 * action a pass takes now (for JSON).
 */
static void action_text(const struct plan_row *r, const struct pass_plan_result *res, const struct settings *s,
    char *out, size_t n, const char **action)
{
	char a[32], b[32];
	const struct policy_verdict *v = &r->v;

	out[0] = '\0';
	*action = "none";
	if (!r->has_v) {
		add(out, n, "none: unreadable (%s); nothing is done to it", r->why);
		return;
	}
	if (is_self(r, s)) {
		add(out, n, "none: the node noderecover runs on is never acted on");
		return;
	}
	if (r->next_pass) {
		add(out, n, "next pass: would %s, but more than %d nodes need action and a pass acts on %d", verb(v->action),
		    PASS_KEEP_MAX, PASS_KEEP_MAX);
		return;
	}
	plan_duration(v->unknown_for, a, sizeof a);
	if (v->action != POLICY_NONE) {
		*action = verb(v->action);
		if (v->action == POLICY_CLEAR)
			add(out, n, "clear now: Ready again, our out-of-service taint and annotation come off");
		else
			add(out, n, "%s now: not reporting for %s, %s threshold %s", *action, a,
			    v->action == POLICY_TAINT ? "taint" : "prune",
			    plan_duration(v->action == POLICY_TAINT ? s->taint_after : s->prune_after, b, sizeof b));
		if (v->action == POLICY_TAINT && r->fence)
			add(out, n, strcmp(r->fence, "no agent") ? "; once its fence is safe"
			    : s->fence == FENCE_REQUIRE ? "; never: no fence agent (--fence=require)" : "");
	} else if (v->held != POLICY_NONE) {
		add(out, n, "held by the storm guard: would %s, not reporting for %s", verb(v->held), a);
	} else if (v->excluded != POLICY_NONE) {
		add(out, n, "excluded: would %s, but it carries %s=true", verb(v->excluded), s->exclude_label);
	} else if (v->refusal == POLICY_ALLOWED && v->due_in < 0) {
		add(out, n, "none: %s", calm(r));
	}
	if (v->refusal != POLICY_ALLOWED) {
		if (out[0])
			add(out, n, "; ");
		refusal(r, res->sum.etcd_ready, out, n);
	}
	if (v->due_in >= 0 && v->excluded == POLICY_NONE) {
		if (out[0])
			add(out, n, "; then ");
		add(out, n, "%s in %s", due_what(r, s), plan_duration(v->due_in, b, sizeof b));
	}
}

static void ready_for(const struct plan_row *r, const struct pass_plan_result *res, char *out, size_t n)
{
	if (r->f.ready_since < 0)
		snprintf(out, n, "?");
	else
		plan_duration(res->now - r->f.ready_since, out, n);
}

/* The summary: one line in the table, the same facts in JSON. */
static void storm_text(const struct pass_plan_result *r, const struct settings *s, char *out, size_t n)
{
	char lim[32];

	pass_limit_text(s, lim, sizeof lim);
	if (r->limit < 0)
		snprintf(out, n, "storm guard off (--max-unknown %s)", lim);
	else
		snprintf(out, n, "storm guard %s: %ld Unknown, limit %ld (--max-unknown %s)%s",
		    r->storm ? "engaged" : "not engaged", r->sum.unknown, r->limit, lim,
		    r->storm ? ", no new taint and no delete" : "");
}

static int print_table(FILE *out, const struct plan *pl, const struct pass_plan_result *r, const struct settings *s)
{
	int wn = 4, wf = 3, wr = 5, we = s->fence != FENCE_OFF ? 10 : 0;
	char name[NODE_NAME_MAX + 1], rf[32], ro[128], act[1024], storm[256];
	const char *action;

	for (size_t i = 0; i < pl->n; i++) {
		ready_for(&pl->rows[i], r, rf, sizeof rf);
		roles(&pl->rows[i], s, ro, sizeof ro);
		wn = (int)strlen(pl->rows[i].f.name) > wn ? (int)strlen(pl->rows[i].f.name) : wn;
		wf = (int)strlen(rf) > wf ? (int)strlen(rf) : wf;
		wr = (int)strlen(ro) > wr ? (int)strlen(ro) : wr;
	}
	fprintf(out, "%-*s  %-7s  %-*s  %-*s  %-*s%s%s\n", wn, "NAME", "READY", wf, "FOR", wr, "ROLES", we, we ? "FENCE" : "",
	    we ? "  " : "", "ACTION");
	for (size_t i = 0; i < pl->n; i++) {
		const struct plan_row *row = &pl->rows[i];
		ready_for(row, r, rf, sizeof rf);
		roles(row, s, ro, sizeof ro);
		action_text(row, r, s, act, sizeof act, &action);
		fprintf(out, "%-*s  %-7s  %-*s  %-*s  %-*s%s%s\n", wn, say_printable(row->f.name, name, sizeof name),
		    ready_word(row->f.ready), wf, rf, wr, ro, we, we ? row->fence ? row->fence : "-" : "", we ? "  " : "", act);
	}
	storm_text(r, s, storm, sizeof storm);
	fprintf(out, "%ld nodes, %ld Unknown, %d unreadable; %s; %ld Ready etcd members, floor %d; times by the %s; a running watcher's storm cooldown is not known to plan\n",
	    r->sum.nodes, r->sum.unknown, r->unreadable, storm, r->sum.etcd_ready, POLICY_ETCD_FLOOR,
	    r->server_clock ? "API server's clock" : "local clock (the server sent no Date)");
	return 0;
}

static void json_num(struct json_buf *b, long long v)
{
	char n[24];

	snprintf(n, sizeof n, "%lld", v);
	json_raw(b, n);
}

static void row_member(struct json_buf *b, const char *key, const char *val)
{
	json_str(b, key);
	json_raw(b, ":");
	if (val)
		json_str(b, val);
	else
		json_raw(b, "null");
}

static int json_node(FILE *out, const struct plan_row *row, const struct pass_plan_result *r,
    const struct settings *s, int first)
{
	char buf[4096], name[NODE_NAME_MAX + 1], ro[128], act[1024];
	const char *action;
	struct json_buf b;

	json_buf_init(&b, buf, sizeof buf);
	roles(row, s, ro, sizeof ro);
	action_text(row, r, s, act, sizeof act, &action);
	json_raw(&b, first ? "\n{" : ",\n{");
	row_member(&b, "name", say_printable(row->f.name, name, sizeof name));
	json_raw(&b, ",");
	row_member(&b, "ready", row->f.ready == NODE_READY_NONE ? NULL : ready_word(row->f.ready));
	json_raw(&b, ",\"ready_for_seconds\":");
	if (row->f.ready_since < 0)
		json_raw(&b, "null");
	else
		json_num(&b, r->now > row->f.ready_since ? r->now - row->f.ready_since : 0);
	json_raw(&b, ",\"roles\":[");
	if (strcmp(ro, "-") != 0) {
		for (char *p = ro, *c; p; p = c) {
			if ((c = strchr(p, ',')))
				*c++ = '\0';
			json_str(&b, p);
			if (c)
				json_raw(&b, ",");
		}
	}
	json_raw(&b, "],");
	row_member(&b, "action", action);
	json_raw(&b, ",");
	row_member(&b, "held", row->has_v && row->v.held ? verb(row->v.held) : NULL);
	json_raw(&b, ",");
	row_member(&b, "excluded", row->has_v && row->v.excluded ? verb(row->v.excluded) : NULL);
	json_raw(&b, ",");
	row_member(&b, "delete_refused", !row->has_v ? NULL : row->v.refusal == POLICY_REFUSED_CONTROL_PLANE ? "control-plane"
	    : row->v.refusal == POLICY_REFUSED_ETCD ? "etcd" : row->v.refusal == POLICY_REFUSED_QUORUM ? "quorum" : NULL);
	json_raw(&b, ",");
	int due = row->has_v && !row->next_pass && !is_self(row, s) && row->v.due_in >= 0 && !row->v.excluded;
	row_member(&b, "due", due ? due_what(row, s) : NULL);
	json_raw(&b, ",\"due_in_seconds\":");
	if (due)
		json_num(&b, row->v.due_in);
	else
		json_raw(&b, "null");
	json_raw(&b, ",");
	row_member(&b, "unreadable", row->has_v ? NULL : row->why);
	json_raw(&b, ",");
	row_member(&b, "fence", row->fence);
	json_raw(&b, ",");
	row_member(&b, "reason", act);
	json_raw(&b, "}");
	return json_buf_end(&b) < 0 || fputs(buf, out) < 0 ? -1 : 0;
}

static int print_json(FILE *out, const struct plan *pl, const struct pass_plan_result *r, const struct settings *s)
{
	char buf[1024], lim[32], now[TEXT_TIME_LEN + 1];
	struct json_buf b;

	if (fputs("{\"nodes\":[", out) < 0)
		return -1;
	for (size_t i = 0; i < pl->n; i++)
		if (json_node(out, &pl->rows[i], r, s, i == 0) < 0)
			return -1;
	json_buf_init(&b, buf, sizeof buf);
	json_raw(&b, "\n],\n\"summary\":{\"nodes\":");
	json_num(&b, r->sum.nodes);
	json_raw(&b, ",\"unknown\":");
	json_num(&b, r->sum.unknown);
	json_raw(&b, ",\"unreadable\":");
	json_num(&b, r->unreadable);
	json_raw(&b, ",\"storm_guard\":{\"engaged\":");
	json_raw(&b, r->storm ? "true" : "false");
	json_raw(&b, ",\"limit\":");
	if (r->limit < 0)
		json_raw(&b, "null");
	else
		json_num(&b, r->limit);
	json_raw(&b, ",");
	row_member(&b, "max_unknown", pass_limit_text(s, lim, sizeof lim));
	json_raw(&b, ",\"cooldown_known\":false},\"etcd_ready\":");
	json_num(&b, r->sum.etcd_ready);
	json_raw(&b, ",\"etcd_floor\":");
	json_num(&b, POLICY_ETCD_FLOOR);
	json_raw(&b, ",");
	row_member(&b, "clock", r->server_clock ? "server" : "local");
	json_raw(&b, ",");
	text_time(now, r->now);
	row_member(&b, "now", now);
	json_raw(&b, "}}\n");
	return json_buf_end(&b) < 0 || fputs(buf, out) < 0 ? -1 : 0;
}

int plan_print(FILE *out, struct plan *pl, const struct pass_plan_result *r, const struct settings *s)
{
	int rc;

	if (pl->n > 1)
		qsort(pl->rows, pl->n, sizeof pl->rows[0], by_name);
	rc = s->output == OUTPUT_JSON ? print_json(out, pl, r, s) : print_table(out, pl, r, s);
	if (fflush(out) != 0 || ferror(out))
		rc = -1;
	return pl->nomem ? -1 : rc;
}
